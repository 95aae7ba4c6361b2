//! The hot jobs — purchases, throws and settlements — run as one set per
//! batch, in three steps read top to bottom: **prefetch** what the batch
//! needs in a few multi-row statements (`batch/prefetch.rs`), **decide**
//! every command in memory (`batch/decide.rs`: a refusal is a result, never
//! a rollback), then **write** every effect with multi-row statements
//! (`batch/writes.rs`). The number of statements a batch runs does not
//! grow with the number of commands in it (TigerBeetle's state machine: a
//! cost per batch, not per request).
//!
//! The writer runs this inside its transaction, after locking its own log's
//! row. On PostgreSQL the prefetch's reads go in one round trip, with
//! `BEGIN` and the log's lock in front of them when the writer kept the
//! log's edge (`trail::log::lock_ahead`; the head is settled before
//! anything decides), and the writes are held back, to go with the log's
//! in one more before COMMIT (`store::deferred`). The prefetch first locks the buyers' rows (in id
//! order), so a player's purchases on two servers decide one after the
//! other; what other players do cannot change a buyer's decision. The
//! updates still check what they overwrite (units sold, throws made,
//! balances never below zero), as a guard.

use crate::error::Error;
use crate::store::Conn;
pub use crate::store::batch::PlayState;
use crate::store::batch::Product;
use crate::trail;

mod commands;
mod decide;
mod prefetch;
mod writes;

pub use commands::{BuyCommand, Command, Context, Reply, SettleCommand, ThrowCommand};
use decide::Decided;

/// Runs the hot commands of one batch inside the writer's transaction.
/// Returns one result per command, in order, and whether anything was
/// written; an `Err` of the whole means the transaction must be rolled back
/// (a database failure, never a refusal).
pub async fn run(
    conn: &mut Conn,
    context: &Context,
    commands: &[&Command],
) -> Result<(Vec<Result<Reply, Error>>, bool), Error> {
    let sqlite = conn.is_sqlite();
    let mut window = context.block_offset + 4;
    loop {
        let state = prefetch::prefetch(conn, sqlite, context, commands, window).await?;
        // The log's lock went with the reads: the head is known now.
        trail::settle_batch_head(conn).await?;
        let head = trail::batch_head().expect("inside the writer's batch");
        match decide::decide(state, context, commands, head) {
            Decided::Done(results, book) => {
                let writes = book.into_writes();
                // Every accepted command leaves a trail record; refusals none.
                let wrote = !writes.records.is_empty();
                writes::write(conn, sqlite, &writes).await?;
                trail::reset_batch_head(writes.head);
                return Ok((results, wrote));
            }
            // More blocks sold out in this batch than were read: read more.
            Decided::NeedMoreBlocks => window *= 4,
        }
    }
}

/// The (game, stake) a purchase buys.
fn product(buy: &BuyCommand) -> Product {
    (buy.game.id().to_owned(), buy.stake_cents)
}
