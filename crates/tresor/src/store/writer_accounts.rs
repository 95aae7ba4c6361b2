//! Each writer's own stakes and prizes accounts (migration 0016). A
//! purchase moves its stake to the stakes account of the writer that sold
//! it, a win is paid from that writer's prizes account: two servers' batches
//! never update one ledger row (docs/SCALING.md, "Hot rows"). Whoever reads
//! "the" stakes or prizes figure sums every account of the kind
//! ([`STAKES_KIND`], [`PRIZES_KIND`]), the accounts 2 and 3 of databases made
//! before included.

use super::sql::{self, Conn};
use crate::error::Error;

/// The ledger kind of every stakes account (the writers' and account 2).
pub const STAKES_KIND: &str = "stakes";
/// The ledger kind of every prizes account (the writers' and account 3).
pub const PRIZES_KIND: &str = "prizes";

/// A writer's two accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterAccounts {
    /// Credited with the stake of every purchase the writer decides.
    pub stakes: i64,
    /// Debited with every win the writer credits.
    pub prizes: i64,
}

impl WriterAccounts {
    /// The ids the accounts of the log `log_id` take: below the fixed
    /// system accounts (−1 to −5) and every player's (positive), and one
    /// pair per log, so two writers creating theirs at once never collide.
    pub fn ids_for_log(log_id: i64) -> WriterAccounts {
        let stakes = -1000 - 2 * log_id;
        WriterAccounts {
            stakes,
            prizes: stakes - 1,
        }
    }
}

/// Finds the accounts of `writer` (whose log is `log_id`), creating them
/// the first time, inside the writer's transaction. Two statements, run when
/// the writer opens its log (not in every batch).
pub async fn find_or_create(
    conn: &mut Conn,
    writer: &str,
    log_id: i64,
) -> Result<WriterAccounts, Error> {
    let ids = WriterAccounts::ids_for_log(log_id);
    sql::query(
        "INSERT INTO accounts (id, kind, writer) VALUES ($1, $3, $5), ($2, $4, $5) \
         ON CONFLICT DO NOTHING",
    )
    .bind(ids.stakes)
    .bind(ids.prizes)
    .bind(STAKES_KIND)
    .bind(PRIZES_KIND)
    .bind(writer)
    .execute(&mut *conn)
    .await?;
    let rows: Vec<(i64, String)> =
        sql::query_as("SELECT id, kind FROM accounts WHERE writer = $1 ORDER BY id")
            .bind(writer)
            .fetch_all(conn)
            .await?;
    let find = |kind: &str| rows.iter().find(|(_, k)| k == kind).map(|(id, _)| *id);
    match (find(STAKES_KIND), find(PRIZES_KIND)) {
        (Some(stakes), Some(prizes)) => Ok(WriterAccounts { stakes, prizes }),
        _ => Err(Error::Unavailable(
            "the writer's stakes and prizes accounts are missing and could not be made \
             (another account holds their ids): run tresor audit verify",
        )),
    }
}
