//! Browsing the trail (the console's trail screen): records newest first, a
//! page at a time, by actor, action and time. Read-only.

use super::{COLUMNS, Record};
use crate::error::Error;
use sqlx::AnyPool;

/// What the records searched must match; `None`: anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// An actor label (`staff:alice`, `operator`), or its beginning up to a
    /// colon (`staff` for every console account, `player:12` for player 12).
    pub actor: Option<String>,
    /// An action (`account_verified`), exactly. `settle` also finds the
    /// purchases that settled the player's previous play: that settlement
    /// is written in the purchase's record, its `settled` (migration 0022).
    pub action: Option<String>,
    /// `from_ms <= at_ms`.
    pub from_ms: Option<i64>,
    /// `at_ms < to_ms`.
    pub to_ms: Option<i64>,
    /// Records before this sequence number (the previous page's last).
    pub before_seq: Option<i64>,
}

/// Up to `limit` records matching `filter`, newest (highest `seq`) first.
pub async fn search(pool: &AnyPool, filter: &Filter, limit: i64) -> Result<Vec<Record>, Error> {
    let actor = filter.actor.clone().unwrap_or_default();
    let actor_prefix = format!("{actor}:");
    let sql = format!(
        "SELECT {COLUMNS} FROM trail WHERE \
         ($1 = '' OR actor = $1 OR substr(actor, 1, CAST($2 AS INTEGER)) = $3) \
         AND ($4 = '' OR action = $4 \
              OR ($4 = 'settle' AND action = 'buy' AND result LIKE '%\"settled\":[%')) \
         AND at_ms >= $5 AND at_ms < $6 AND seq < $7 \
         ORDER BY seq DESC LIMIT $8"
    );
    let rows = sqlx::query(&sql)
        .bind(actor.clone())
        .bind(actor_prefix.chars().count() as i64)
        .bind(actor_prefix)
        .bind(filter.action.clone().unwrap_or_default())
        .bind(filter.from_ms.unwrap_or(i64::MIN))
        .bind(filter.to_ms.unwrap_or(i64::MAX))
        .bind(filter.before_seq.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(pool)
        .await?;
    Ok(Record::from_rows(&rows)?)
}
