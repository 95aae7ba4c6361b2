//! The sessions a purchase is resolved from without a read (issue 46).
//!
//! A purchase's session is found here when this server saw it within the
//! last minute (its idle timer then needs no refresh); otherwise it is read
//! as any other request's ([`Service::session_player`]) and kept. What is
//! kept can be stale — a session ended by a logout on another server, a
//! password change, a suspension or an exclusion — so the cache never has
//! the last word: the purchase carries its token's hash to the writer, whose
//! batch reads which of its sessions are still live in the transaction that
//! would sell (`batch::prefetch`, one set read for the whole batch, in the
//! same round trip as its other reads on PostgreSQL) and refuses the
//! purchase of an ended one, `session_ended`, as the read would have. A
//! session that ended is thus never served, on any server, from the next
//! request after the end committed. The age and idle limits are checked here
//! from the times read with the session.

use super::{Service, sha256_hex};
use crate::error::Error;
use crate::model::Player;
use std::collections::HashMap;
use std::sync::Mutex;

/// The most sessions kept; past it the cache starts again empty (a session
/// missing is read, never refused).
const MAX_KEPT: usize = 100_000;

/// How long after it was last seen (as stored) a session is served from
/// the cache: a minute, the idle timer's refresh interval
/// ([`Service::refresh_session`]).
const FRESH_MS: i64 = 60_000;

#[derive(Debug, Clone)]
struct Kept {
    player: Player,
    created_at_ms: i64,
    last_seen_at_ms: i64,
}

/// Players' sessions by their token's hash.
#[derive(Debug, Default)]
pub struct SessionCache {
    kept: Mutex<HashMap<String, Kept>>,
}

impl SessionCache {
    fn get(&self, token_hash: &str) -> Option<Kept> {
        self.kept.lock().ok()?.get(token_hash).cloned()
    }

    pub(super) fn keep(
        &self,
        token_hash: &str,
        player: &Player,
        created_at_ms: i64,
        last_seen_at_ms: i64,
    ) {
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        if kept.len() >= MAX_KEPT && !kept.contains_key(token_hash) {
            kept.clear();
        }
        kept.insert(
            token_hash.to_owned(),
            Kept {
                player: player.clone(),
                created_at_ms,
                last_seen_at_ms,
            },
        );
    }

    /// Forgets a session (ended here, or refused by a batch).
    pub(super) fn forget(&self, token_hash: &str) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.remove(token_hash);
        }
    }
}

/// A purchase's player and the hash of the session it comes in, which the
/// batch checks is still live ([`crate::batch::BuyCommand::session`]).
#[derive(Debug, Clone)]
pub struct Buyer {
    pub player: Player,
    pub token_hash: String,
}

impl Service {
    /// The player of the session of `token` for a purchase: from the cache
    /// when this server saw the session within the last minute, else read
    /// (and refreshed) as [`Service::session_player`] does. The session's
    /// end is checked by the purchase's batch (this module's opening).
    pub async fn buyer(&self, token: &str) -> Result<Buyer, Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let now_ms = self.now_ms();
        if let Some(kept) = self.sessions.get(&token_hash)
            && now_ms - kept.last_seen_at_ms <= FRESH_MS
            && self
                .session_still_open(false, kept.created_at_ms, kept.last_seen_at_ms, now_ms)
                .is_ok()
        {
            return Ok(Buyer {
                player: kept.player,
                token_hash,
            });
        }
        let player = self.session_player(token).await?;
        Ok(Buyer { player, token_hash })
    }
}
