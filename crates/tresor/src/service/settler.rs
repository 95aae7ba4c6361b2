//! The settler of abandoned plays: every play left in progress for longer
//! than `Settings::auto_settle_after_s` is settled by the server (reason
//! `abandoned`).
//!
//! No index finds the plays in progress (migration 0022 dropped
//! `plays_in_progress`: every purchase wrote it twice, in and then out at
//! settlement; issue 34). The settler walks the plays by id instead (their
//! primary key) from a mark below which none is in progress, up to the
//! first play too young to be due, and moves the mark once the walk is
//! settled. Each play is read about once in its life, when it comes due;
//! the first walk of a process starts from a read of the whole table.
//!
//! Ids are not given in the order transactions commit (PostgreSQL's
//! sequence, several servers): a play may still be committing under an id
//! below one already seen. Its purchase is recent, so the mark never passes
//! a play bought within [`COMMIT_MARGIN_MS`] of now: a purchase whose
//! transaction lasts longer than that (far past the outage budget), or
//! servers' clocks further apart, could leave a play behind the mark, to be
//! found by the next process's first walk.

use super::Service;
use crate::batch::{Command, Reply, SettleCommand};
use crate::error::Error;
use crate::store::plays;
use tokio::sync::Mutex;

/// How long a purchase may take to commit, as far as the mark is concerned.
pub const COMMIT_MARGIN_MS: i64 = 60_000;

/// Plays read per statement of the walk.
const PAGE: i64 = 1_000;

/// The settler's mark: no play below it is in progress (`None`: not known
/// yet in this process). Held for the whole of a run, so runs take turns.
#[derive(Debug, Default)]
pub struct Mark(Mutex<Option<i64>>);

impl Service {
    /// Settles every play left unfinished for longer than the configured
    /// delay. Returns how many were settled.
    pub async fn settle_abandoned(&self) -> Result<usize, Error> {
        let now_ms = self.now_ms();
        let due_ms = now_ms - self.settings.auto_settle_after_s * 1000;
        let settled_ms = due_ms.min(now_ms - COMMIT_MARGIN_MS);
        let mut mark = self.settler.0.lock().await;
        let mut conn = self.db.conn().await?;
        let mut from = match *mark {
            Some(from) => from,
            None => plays::walk_start(&mut conn, now_ms - COMMIT_MARGIN_MS).await?,
        };
        // The walk: the due plays in progress, and how far the mark may go
        // once they are settled (past plays finished or settled here, and
        // bought before the margin).
        let mut due = Vec::new();
        let mut next_mark = from;
        let mut moving = true;
        'walk: loop {
            let page = plays::walk(&mut conn, from, PAGE).await?;
            for play in &page {
                if play.created_at_ms > due_ms {
                    break 'walk;
                }
                if play.in_progress {
                    due.push(play.id);
                }
                moving &= play.created_at_ms <= settled_ms;
                if moving {
                    next_mark = play.id + 1;
                }
            }
            match page.last() {
                Some(last) if page.len() as i64 == PAGE => from = last.id + 1,
                _ => break,
            }
        }
        drop(conn);
        let mut settled = 0;
        for chunk in due.chunks(100) {
            let command = Command::Settle(SettleCommand {
                play_ids: chunk.to_vec(),
                now_ms,
            });
            match self.writer.hot(command).await? {
                Reply::Settled(count) => settled += count,
                other => unreachable!("a settlement is answered as one: {other:?}"),
            }
        }
        *mark = Some(next_mark);
        Ok(settled)
    }
}
