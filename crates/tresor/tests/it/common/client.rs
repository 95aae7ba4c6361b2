//! HTTP clients for a real [`Server`](super::Server): one cookie jar per
//! player, JSON in and out.

use serde_json::{Value, json};
use std::time::Duration;

/// A client for a [`Server`] with a cookie jar of its own (one player).
pub fn cookie_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client")
}

/// POSTs `body` as JSON with the CSRF header and, if given, an idempotency
/// key. The status and the JSON answer, or `None` when no JSON answer came
/// (the server was killed, say).
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    idempotency_key: Option<&str>,
) -> Option<(u16, Value)> {
    let mut request = client
        .post(url)
        .header("x-requested-with", "tresor")
        .json(body);
    if let Some(key) = idempotency_key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.ok()?))
}

/// GETs `url` and parses its JSON answer.
pub async fn get_json(client: &reqwest::Client, url: &str) -> Value {
    client
        .get(url)
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("a JSON answer")
}

/// Registers `username` on the server at `base` as `client`'s player, with
/// high 7-day caps, and deposits `cents`.
pub async fn register_and_deposit(
    client: &reqwest::Client,
    base: &str,
    username: &str,
    cents: i64,
) {
    let body = json!({
        "username": username, "password": "a long password", "adult": true, "accept_rules": true,
        "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
    });
    let (status, body) = post(client, &format!("{base}/api/register"), &body, None)
        .await
        .expect("the server answers the registration");
    assert_eq!(status, 201, "{body}");
    let deposit = json!({ "amount_cents": cents });
    let (status, body) = post(client, &format!("{base}/api/demo/deposit"), &deposit, None)
        .await
        .expect("the server answers the deposit");
    assert_eq!(status, 200, "{body}");
}

/// Buys a unit at `stake_cents` as `client`'s player and plays its four
/// throws: the purchase's answer (with its receipt).
pub async fn buy_and_play(client: &reqwest::Client, base: &str, stake_cents: i64) -> Value {
    let mut key = [0u8; 16];
    getrandom::fill(&mut key).expect("random bytes");
    let (status, play) = post(
        client,
        &format!("{base}/api/plays"),
        &json!({ "stake_cents": stake_cents }),
        Some(&hex::encode(key)),
    )
    .await
    .expect("the server answers the purchase");
    assert!(status < 300, "{status} {play}");
    let id = play["id"].as_i64().expect("a play id");
    for _ in 0..4 {
        let (status, body) = post(
            client,
            &format!("{base}/api/plays/{id}/throws"),
            &json!({}),
            None,
        )
        .await
        .expect("the server answers the throw");
        assert!(status < 300, "{status} {body}");
    }
    play
}
