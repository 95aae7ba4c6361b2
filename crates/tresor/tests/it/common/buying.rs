//! One purchase as the edge answers it, headers and time included: what the
//! fault tests (a held writer, a full disk) read of each answer.

use super::maybe_header;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A purchase's answer: its status, `Retry-After`, JSON body, and how long
/// it took.
#[derive(Debug, Clone)]
pub struct Bought {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Value,
    pub took: Duration,
}

/// A 50-cent purchase under `key` as `client`'s player on `base`.
pub async fn timed_purchase(client: &reqwest::Client, base: &str, key: &str) -> Bought {
    let sent = Instant::now();
    let response = client
        .post(format!("{base}/api/plays"))
        .header("x-requested-with", "tresor")
        .header("idempotency-key", key)
        .json(&json!({"stake_cents": 50}))
        .send()
        .await
        .expect("the purchase is answered");
    let status = response.status().as_u16();
    let retry_after = maybe_header(&response, "retry-after");
    let body = response.json().await.unwrap_or(Value::Null);
    Bought {
        status,
        retry_after,
        body,
        took: sent.elapsed(),
    }
}

/// The plays in `db`.
pub async fn count_plays(db: &tresor::store::Db) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM plays")
        .fetch_one(&db.pool)
        .await
        .expect("count the plays")
}
