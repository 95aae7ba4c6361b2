//! Players, purchases and the ledger's invariants, straight on the service
//! and the database.

use sqlx::{AnyPool, Row};
use tresor::service::{IdempotencyKey, Player, Purchase, Registration, Service};
use tresor::store::Db;

/// Registers a player with a valid password and the highest 7-day caps (the
/// operate and audit tests move large sums; tests/it/protect.rs tests the caps).
pub async fn player(service: &Service, username: &str) -> Player {
    super::players::player(username).in_service(service).await
}

/// Checks the ledger: balances sum to zero, every balance equals its
/// transfers, no player balance is negative, and each player's balance is
/// deposits − stakes + prizes. Returns the number of transfers.
pub async fn assert_ledger_balances(db: &Db) -> i64 {
    let pool = &db.pool;
    let sum: i64 = scalar(
        pool,
        "SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts",
    )
    .await;
    assert_eq!(sum, 0, "all balances sum to zero");
    let rows = sqlx::query(
        "SELECT a.id, a.kind, a.balance_cents, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers WHERE credit_account_id = a.id), 0) AS BIGINT) AS credits, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers WHERE debit_account_id = a.id), 0) AS BIGINT) AS debits \
         FROM accounts a",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for row in &rows {
        let id: i64 = row.get("id");
        let kind: String = row.get("kind");
        let balance: i64 = row.get("balance_cents");
        let credits: i64 = row.get("credits");
        let debits: i64 = row.get("debits");
        assert_eq!(
            balance,
            credits - debits,
            "account {id} balance equals its transfers"
        );
        if kind == "player" {
            assert!(balance >= 0, "player account {id} is not negative");
        }
    }
    // Per player: deposits − stakes + prizes, from plays and deposits
    // independently; money in (deposits, credits, withdrawals given back)
    // and out (withdrawals asked, reserves) from the transfers of those kinds.
    let players = sqlx::query(
        "SELECT p.id, a.balance_cents, \
           CAST(COALESCE((SELECT SUM(amount_cents) FROM transfers t WHERE t.credit_account_id = a.id \
             AND t.kind IN ('deposit', 'credit', 'withdrawal_rejected', 'withdrawal_cancelled')), 0) \
           - COALESCE((SELECT SUM(amount_cents) FROM transfers t WHERE t.debit_account_id = a.id \
             AND t.kind IN ('withdrawal', 'reserve')), 0) AS BIGINT) AS deposits, \
           CAST(COALESCE((SELECT SUM(stake_cents) FROM plays WHERE plays.player_id = p.id), 0) AS BIGINT) AS stakes, \
           CAST(COALESCE((SELECT SUM(prize_cents) FROM plays WHERE plays.player_id = p.id AND plays.state = 'finished'), 0) AS BIGINT) AS wins \
         FROM players p JOIN accounts a ON a.id = p.account_id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for row in &players {
        let id: i64 = row.get("id");
        let balance: i64 = row.get("balance_cents");
        let (deposits, stakes, wins): (i64, i64, i64) =
            (row.get("deposits"), row.get("stakes"), row.get("wins"));
        assert_eq!(
            balance,
            deposits - stakes + wins,
            "player {id}: balance = deposits − stakes + wins"
        );
    }
    sqlx::query_scalar("SELECT COUNT(*) FROM transfers")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The stakes and prizes accounts of `db`'s writer (made when it first
/// wrote: migration 0016, `store::writer_accounts`).
pub async fn writer_accounts(db: &Db) -> tresor::store::writer_accounts::WriterAccounts {
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT id, kind FROM accounts WHERE writer = $1")
            .bind(&*db.writer)
            .fetch_all(&db.pool)
            .await
            .expect("the writer's accounts");
    let find = |kind: &str| {
        rows.iter()
            .find(|(_, k)| k == kind)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("writer {}: no {kind} account: {rows:?}", db.writer))
    };
    tresor::store::writer_accounts::WriterAccounts {
        stakes: find("stakes"),
        prizes: find("prizes"),
    }
}

/// A purchase of one unit at `stake_cents` under the idempotency key `key`.
pub fn purchase(stake_cents: i64, key: &str) -> Purchase {
    Purchase {
        game: tresor_game::ile_au_tresor(),
        stake_cents,
        idempotency_key: IdempotencyKey::parse(key).expect("a key"),
    }
}

/// The one number `sql` (no parameters) answers, such as a `COUNT(*)`.
pub async fn scalar(pool: &AnyPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

/// The one text column every row the database answers holds (`SELECT
/// name FROM …`), in its order.
pub async fn texts(pool: &AnyPool, sql: &str) -> Vec<String> {
    sqlx::query_scalar(sql)
        .fetch_all(pool)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

/// Runs each of `statements` on `pool` (a test's own edits, made as an
/// intruder or an old version would), which must succeed.
pub async fn execute(pool: &AnyPool, statements: &[&str]) {
    for sql in statements {
        sqlx::query(sql)
            .execute(pool)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }
}

/// Each block's id and secret, opened from its sealed secret with `db`'s
/// key (the database keeps no secret in clear).
pub async fn block_secrets(db: &Db) -> Vec<(i64, tresor_game::BlockSecret)> {
    let key = db.secrets_key.as_ref().expect("a secrets key");
    let rows: Vec<(i64, Vec<u8>)> =
        sqlx::query_as("SELECT id, sealed_secret FROM blocks ORDER BY id")
            .fetch_all(&db.pool)
            .await
            .expect("the sealed secrets");
    rows.iter()
        .map(|(id, sealed)| (*id, key.open(*id, sealed).expect("the secret opens")))
        .collect()
}
