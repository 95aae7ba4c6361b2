//! Issue 32, finding 4: one console account's credits on two servers of
//! one PostgreSQL database stay under its daily limit. The reproduction:
//! two real `tresor serve` processes, a limit of 1,000 € per operator and
//! 24 hours, and the same operator sending an 800 € credit to each server at
//! once: both passed (3 rounds of 8). Now one actor's credits are taken one
//! after the other across servers (an advisory lock held to COMMIT), so in
//! every round exactly one passes and the other is refused
//! `credit_limit_reached`, having changed nothing.

use crate::common::staff::{Console, add_operator};
use crate::common::{Harness, Server, cookie_client, register_and_deposit, unthrottled_flags};
use reqwest::StatusCode;
use serde_json::{Value, json};

const ROUNDS: usize = 10;
const LIMIT_CENTS: i64 = 100_000;
const CREDIT_CENTS: i64 = 80_000;

async fn start_server(h: &Harness, n: u32) -> Server {
    let mut flags = vec![
        "--block-offset".to_owned(),
        n.to_string(),
        "--writer".to_owned(),
        format!("credits{n}"),
        "--credit-max-per-day-cents".to_owned(),
        LIMIT_CENTS.to_string(),
    ];
    flags.extend(unthrottled_flags());
    h.server(&flags).await
}

on_postgres!(one_operators_credits_on_two_servers_stay_under_its_daily_limit);

async fn one_operators_credits_on_two_servers_stay_under_its_daily_limit(h: &Harness) {
    // The first server creates the database; the second finds it.
    let servers = [start_server(h, 0).await, start_server(h, 1).await];
    let db = h.connect().await;
    let pool = &db.pool;
    for round in 0..ROUNDS {
        // An operator of its own per round: each starts at zero.
        let name = format!("cap{round}");
        add_operator(h, &name, "operator");
        let operator = Console::enrolled_at(&servers[0].admin_base, &name).await;
        let player = format!("credited{round}");
        register_and_deposit(&cookie_client(), &servers[round % 2].base, &player, 100).await;
        let id: i64 = sqlx::query_scalar("SELECT id FROM players WHERE username = $1")
            .bind(&player)
            .fetch_one(pool)
            .await
            .unwrap();
        let credit = |server: &Server| {
            let operator = operator.with_base(&server.admin_base);
            let credit = format!("/console/api/players/{id}/credit");
            async move {
                operator
                    .post(&credit, json!({"amount_cents": CREDIT_CENTS}))
                    .await
            }
        };
        let (first, second) = tokio::join!(credit(&servers[0]), credit(&servers[1]));
        let passed: Vec<&(StatusCode, Value)> = [&first, &second]
            .into_iter()
            .filter(|(status, _)| *status == 200)
            .collect();
        assert_eq!(
            passed.len(),
            1,
            "round {round}: exactly one credit of the two passes: {first:?} {second:?}"
        );
        let refused = if first.0 == 200 { &second } else { &first };
        assert_eq!(refused.0, 403, "round {round}: {refused:?}");
        assert_eq!(
            refused.1["error"]["code"], "credit_limit_reached",
            "round {round}: {refused:?}"
        );
        // What the operator credited, and what the player holds.
        let credited: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM operator_credits \
             WHERE actor = $1",
        )
        .bind(format!("staff:{name}"))
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(credited, CREDIT_CENTS, "round {round}");
        let balance: i64 = sqlx::query_scalar(
            "SELECT a.balance_cents FROM accounts a JOIN players p ON p.account_id = a.id \
             WHERE p.id = $1",
        )
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(balance, 100 + CREDIT_CENTS, "round {round}");
    }
    // Every round's refused credit left nothing: one credit per round in
    // all, each by its own operator.
    let credits: Vec<(String, i64)> = sqlx::query_as(
        "SELECT actor, CAST(amount_cents AS BIGINT) FROM operator_credits ORDER BY actor",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut expected: Vec<(String, i64)> = (0..ROUNDS)
        .map(|round| (format!("staff:cap{round}"), CREDIT_CENTS))
        .collect();
    expected.sort();
    assert_eq!(credits, expected);
    crate::common::assert_ledger_balances(&db).await;
}
