//! The period report's rollup kept by the server: extended in steps of a
//! few rows, with the same sums as in one step, and in the background by a
//! running server, without any report asking.

use crate::common::wait::until;
use crate::common::{Server, TestDb, scalar};
use crate::report_periods::{play_one, played_at};
use sqlx::AnyPool;
use std::time::Duration;
use tresor::clock::{Clock, SystemClock};
use tresor::report::period::extend_by;

const DAY: i64 = 86_400_000;
const ROLLED_UP: &str = "SELECT CAST(COALESCE(SUM(units), 0) AS BIGINT) FROM report_play_hours";
const MARK: &str = "SELECT plays_through FROM report_rollup";

crate::on_both!(
    a_rollup_in_steps_of_one_row_sums_what_one_step_sums,
    a_running_server_rolls_up_the_settled_plays_without_a_report,
);

/// Four plays two days ago and one ten minutes ago, written through the
/// service on a clock set back; the service is dropped (its writer with it).
/// The highest id of the settled plays.
async fn history(db: &TestDb) -> i64 {
    let (service, clock) = db.service().await;
    let now = SystemClock.now_ms();
    let at = |ms: i64| clock.advance_ms(ms - clock.now_ms());
    let times: Vec<i64> = (0..4).map(|i| now - 2 * DAY + i * 3_600_000).collect();
    let alice = played_at(&service, &clock, &times, &[100, 50, 200, 100]).await;
    at(now - 600_000);
    play_one(&service, &alice, 100, "recent").await;
    let settled = format!(
        "SELECT CAST(MAX(id) AS BIGINT) FROM plays WHERE created_at_ms < {}",
        now - 3_600_000
    );
    scalar(&service.db.pool, &settled).await
}

async fn a_rollup_in_steps_of_one_row_sums_what_one_step_sums(db: &TestDb) {
    let settled = history(db).await;
    let pool: AnyPool = db.connect().await.pool;
    let now = SystemClock.now_ms();
    let marks = extend_by(&pool, now, 1).await.expect("extend");
    assert_eq!(marks.plays, settled, "every settled play, one a step");
    assert_eq!(scalar(&pool, MARK).await, settled);
    assert_eq!(
        scalar(&pool, ROLLED_UP).await,
        4,
        "the recent play stays live"
    );
    let stepped = sums(&pool).await;
    // The same history rolled up in one step: the same sums.
    for table in ["report_play_hours", "report_transfer_hours"] {
        sqlx::query(&format!("DELETE FROM {table}"))
            .execute(&pool)
            .await
            .unwrap();
    }
    sqlx::query("UPDATE report_rollup SET plays_through = 0, transfers_through = 0")
        .execute(&pool)
        .await
        .unwrap();
    let again = extend_by(&pool, now, 1_000_000).await.expect("extend");
    assert_eq!(again, marks);
    assert_eq!(sums(&pool).await, stepped);
}

/// Every sum of both rollup tables.
async fn sums(pool: &AnyPool) -> [i64; 4] {
    let mut found = [0; 4];
    let queries = [
        ROLLED_UP,
        "SELECT CAST(COALESCE(SUM(stakes_cents), 0) AS BIGINT) FROM report_play_hours",
        "SELECT CAST(COALESCE(SUM(prizes_cents), 0) AS BIGINT) FROM report_play_hours",
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM report_transfer_hours",
    ];
    for (sum, sql) in found.iter_mut().zip(queries) {
        *sum = scalar(pool, sql).await;
    }
    found
}

async fn a_running_server_rolls_up_the_settled_plays_without_a_report(db: &TestDb) {
    // A demo database (the demo server made it), then the history.
    drop(Server::start(db, &[]).await);
    let settled = history(db).await;
    let pool: AnyPool = db.connect().await.pool;
    assert_eq!(scalar(&pool, MARK).await, 0, "nothing rolled up yet");
    let every = ["--report-rollup-every-s".to_owned(), "1".to_owned()];
    let server = Server::start(db, &every).await;
    until(
        "the server rolling up the settled plays",
        Duration::from_secs(30),
        || {
            let pool = pool.clone();
            async move { (scalar(&pool, MARK).await == settled).then_some(()) }
        },
    )
    .await;
    assert_eq!(scalar(&pool, ROLLED_UP).await, 4);
    drop(server);
}
