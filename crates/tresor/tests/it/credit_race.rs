//! Issue 32, finding 4: one console account's credits on two servers of
//! one PostgreSQL database stay under its daily limit. The reproduction:
//! two real `tresor serve` processes, a limit of 1,000 € per operator and
//! 24 hours, and the same operator sending an 800 € credit to each server at
//! once: both passed (3 rounds of 8). Now one actor's credits are taken one
//! after the other across servers (an advisory lock held to COMMIT), so in
//! every round exactly one passes and the other is refused
//! `credit_limit_reached`, having changed nothing.

use crate::common::opening::{CONSOLE_PASSWORD, base32_decode};
use crate::common::{
    Harness, Server, cookie_client, describe, register_and_deposit, tresor_command,
    unthrottled_flags,
};
use serde_json::{Value, json};
use std::io::Write;
use std::process::Stdio;

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

/// `tresor operator add NAME --role operator`, the password on stdin.
fn add_operator(h: &Harness, name: &str) {
    let mut command = tresor_command();
    command
        .args(["operator", "add", "--username", name, "--role", "operator"])
        .arg("--password-stdin")
        .args(h.db_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    h.env(&mut command);
    let mut child = command.spawn().unwrap();
    writeln!(child.stdin.take().unwrap(), "{CONSOLE_PASSWORD}").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", describe(&output));
}

async fn console_post(client: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let response = client
        .post(url)
        .header("x-requested-with", "tresor-console")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// `name` logs in to the console (password, then its first TOTP code, at
/// the real clock the servers read): a client whose session every server
/// of the database knows (cookies go by host, not by port).
async fn console_login(admin_base: &str, name: &str) -> reqwest::Client {
    let client = cookie_client();
    let (status, body) = console_post(
        &client,
        &format!("{admin_base}/console/api/login"),
        &json!({"username": name, "password": CONSOLE_PASSWORD}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let secret = base32_decode(body["secret"].as_str().unwrap());
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let code = tresor::staff::totp_code(&secret, now_s);
    let (status, body) = console_post(
        &client,
        &format!("{admin_base}/console/api/login/code"),
        &json!({"code": code}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    client
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
        add_operator(h, &name);
        let operator = console_login(&servers[0].admin_base, &name).await;
        let player = format!("credited{round}");
        register_and_deposit(&cookie_client(), &servers[round % 2].base, &player, 100).await;
        let id: i64 = sqlx::query_scalar("SELECT id FROM players WHERE username = $1")
            .bind(&player)
            .fetch_one(pool)
            .await
            .unwrap();
        let credit = |server: &Server| {
            let url = format!("{}/console/api/players/{id}/credit", server.admin_base);
            let operator = operator.clone();
            async move { console_post(&operator, &url, &json!({"amount_cents": CREDIT_CENTS})).await }
        };
        let (first, second) = tokio::join!(credit(&servers[0]), credit(&servers[1]));
        let passed: Vec<&(u16, Value)> = [&first, &second]
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
