//! The period report's rollup (migration 0026): the plays and the ledger's
//! transfers already read, kept summed by UTC hour, so that a report reads
//! the whole tables once and afterwards only the rows added since.
//!
//! `report_rollup` holds two marks, the last play and the last transfer
//! whose sums `report_play_hours` and `report_transfer_hours` hold. A report
//! first extends each to the highest id of a row stamped more than
//! `SETTLED_MS` ago (read by primary key, from the old mark on), then reads
//! the sums and the rows after the marks live. Each row is in exactly one of the two, whatever its
//! time: a late row of a past hour has a higher id and is read live, so the
//! figures are the tables' exactly, and the report is still reconciled with
//! the ledger (`check`). The margin is for PostgreSQL, where a transaction
//! may commit a row of a lower id than one already visible: no purchase's
//! transaction stays open for an hour.
//!
//! Only the report and the server's background task ([`keep_extended`])
//! write here (never a purchase: no trigger, no new index on `plays` or
//! `transfers`). The server extends it every few minutes, so that a report
//! reads at most those minutes' rows live and the hour before the cutoff,
//! whatever the history: a first report over years of plays costs no more
//! than the next. The extension goes `ROWS_PER_STEP` rows a transaction, so
//! a long history is rolled up in short steps beside the sales. Two
//! extending at once: the second's mark no longer matches, it writes
//! nothing and reads its rows live. A database the report may not write (a
//! read-only role) is read live from the marks it has.

use crate::error::Error;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

/// The side of a transfer: 0 for a player's account, the id of a system
/// account, -1000 for every writer's stakes and prizes accounts.
pub(super) const SIDE: &str = "CASE WHEN {c} > 3 THEN 0 WHEN {c} < -5 THEN -1000 ELSE {c} END";

/// How old a row must be before it goes into the rollup.
pub(super) const SETTLED_MS: i64 = 3_600_000;

/// Rows inserted per statement.
const ROWS_PER_INSERT: usize = 100;

/// Plays (and transfers) summed a step, each step its own transaction.
const ROWS_PER_STEP: i64 = 200_000;

/// The last play and transfer in the rollup's sums (0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    pub plays: i64,
    pub transfers: i64,
}

/// The marks as they stand.
pub(super) async fn marks(pool: &AnyPool) -> Result<Marks, Error> {
    let row =
        sqlx::query("SELECT plays_through, transfers_through FROM report_rollup WHERE id = 1")
            .fetch_one(pool)
            .await?;
    Ok(Marks {
        plays: row.try_get("plays_through")?,
        transfers: row.try_get("transfers_through")?,
    })
}

/// Extends the rollup up to the last rows stamped before `now_ms -
/// SETTLED_MS` (and every row of a lower id), `ROWS_PER_STEP` rows a step;
/// the marks to read from. When it cannot write, the marks it has.
pub(super) async fn extend(pool: &AnyPool, now_ms: i64) -> Result<Marks, Error> {
    extend_by(pool, now_ms, ROWS_PER_STEP).await
}

/// [`extend`], `step` rows a transaction.
pub async fn extend_by(pool: &AnyPool, now_ms: i64, step: i64) -> Result<Marks, Error> {
    let mut marks = marks(pool).await?;
    loop {
        match try_extend(pool, marks, now_ms - SETTLED_MS, step).await {
            Ok(next) if next == marks => return Ok(marks),
            Ok(next) => marks = next,
            Err(error) => {
                tracing::warn!(%error, "the period report's rollup was not extended; reading live");
                return Ok(marks);
            }
        }
    }
}

/// Extends the rollup every `every` for as long as the server runs (the
/// first time `every` after the start, when the blocks are loaded and the
/// sales have begun).
pub fn keep_extended(pool: AnyPool, every: std::time::Duration) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
            match extend(&pool, now).await {
                Ok(marks) => {
                    tracing::debug!(plays = marks.plays, "the period report's rollup extended")
                }
                Err(error) => tracing::warn!(%error, "cannot read the period report's rollup"),
            }
        }
    });
}

/// One step: at most `step` more plays and `step` more transfers.
async fn try_extend(pool: &AnyPool, old: Marks, cutoff_ms: i64, step: i64) -> Result<Marks, Error> {
    let new = Marks {
        plays: last_before(pool, "plays", old.plays, cutoff_ms, step).await?,
        transfers: last_before(pool, "transfers", old.transfers, cutoff_ms, step).await?,
    };
    if new == old {
        return Ok(old);
    }
    let plays = sqlx::query(
        "SELECT created_at_ms / 3600000 AS hour, block_id, COUNT(*) AS units, \
         CAST(SUM(stake_cents) AS BIGINT) AS stakes, CAST(SUM(prize_cents) AS BIGINT) AS prizes \
         FROM plays WHERE id > $1 AND id <= $2 GROUP BY created_at_ms / 3600000, block_id",
    )
    .bind(old.plays)
    .bind(new.plays)
    .fetch_all(pool)
    .await?;
    let transfers = sqlx::query(&format!(
        "SELECT created_at_ms / 3600000 AS hour, kind, {} AS debit, {} AS credit, \
         CAST(SUM(amount_cents) AS BIGINT) AS amount FROM transfers \
         WHERE id > $1 AND id <= $2 GROUP BY 1, 2, 3, 4",
        SIDE.replace("{c}", "debit_account_id"),
        SIDE.replace("{c}", "credit_account_id"),
    ))
    .bind(old.transfers)
    .bind(new.transfers)
    .fetch_all(pool)
    .await?;
    let mut tx = pool.begin().await?;
    let moved = sqlx::query(
        "UPDATE report_rollup SET plays_through = $1, transfers_through = $2 \
         WHERE id = 1 AND plays_through = $3 AND transfers_through = $4",
    )
    .bind(new.plays)
    .bind(new.transfers)
    .bind(old.plays)
    .bind(old.transfers)
    .execute(&mut *tx)
    .await?;
    if moved.rows_affected() != 1 {
        // Another report extended it meanwhile: ours are read live.
        tx.rollback().await?;
        return Ok(old);
    }
    insert(&mut tx, PLAY_HOURS, &plays).await?;
    insert(&mut tx, TRANSFER_HOURS, &transfers).await?;
    tx.commit().await?;
    Ok(new)
}

/// The highest id of the first `step` rows of `table` after `from` created
/// before `cutoff_ms` (read by primary key), or `from`.
async fn last_before(
    pool: &AnyPool,
    table: &str,
    from: i64,
    cutoff_ms: i64,
    step: i64,
) -> Result<i64, Error> {
    let sql = format!(
        "SELECT CAST(COALESCE(MAX(id), $1) AS BIGINT) FROM (SELECT id FROM {table} \
         WHERE id > $1 AND created_at_ms < $2 ORDER BY id LIMIT $3) AS settled"
    );
    Ok(sqlx::query_scalar(&sql)
        .bind(from)
        .bind(cutoff_ms)
        .bind(step)
        .fetch_one(pool)
        .await?)
}

/// A rollup table and the columns of its rows, as the extension reads them.
struct Table {
    insert: &'static str,
    columns: &'static [&'static str],
}

const PLAY_HOURS: Table = Table {
    insert: "INSERT INTO report_play_hours (hour, block_id, units, stakes_cents, prizes_cents) VALUES ",
    columns: &["hour", "block_id", "units", "stakes", "prizes"],
};

const TRANSFER_HOURS: Table = Table {
    insert: "INSERT INTO report_transfer_hours (hour, kind, debit, credit, amount_cents) VALUES ",
    columns: &["hour", "kind", "debit", "credit", "amount"],
};

/// Inserts `rows` into `table`, `ROWS_PER_INSERT` a statement.
async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: Table,
    rows: &[AnyRow],
) -> Result<(), Error> {
    let width = table.columns.len();
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                let marks: Vec<String> =
                    (1..=width).map(|c| format!("${}", r * width + c)).collect();
                format!("({})", marks.join(", "))
            })
            .collect();
        let sql = format!("{}{}", table.insert, values.join(", "));
        let mut query = sqlx::query(&sql);
        for row in chunk {
            for &column in table.columns {
                query = match column {
                    "kind" => query.bind(row.try_get::<String, _>(column)?),
                    _ => query.bind(row.try_get::<i64, _>(column)?),
                };
            }
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}
