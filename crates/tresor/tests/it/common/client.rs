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

/// GETs `url`: the response, whatever its status (the server must answer).
pub async fn get_response(client: &reqwest::Client, url: &str) -> reqwest::Response {
    client.get(url).send().await.expect("the server answers")
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

/// Sends `bytes` as `client`'s document of `kind` named `name` to the
/// server at `base`, as the page does, which must take it (201): the
/// document's id.
pub async fn upload_document(
    client: &reqwest::Client,
    base: &str,
    kind: &str,
    name: &str,
    bytes: &[u8],
) -> i64 {
    let response = client
        .post(format!("{base}/api/account/documents"))
        .query(&[("kind", kind), ("name", name)])
        .header("x-requested-with", "tresor")
        .body(bytes.to_vec())
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), 201);
    let document: Value = response.json().await.expect("a JSON answer");
    document["id"].as_i64().expect("the document's id")
}

/// GETs `url` with a client of its own and parses its JSON answer.
pub async fn fetch_json(url: &str) -> Value {
    get_json(&reqwest::Client::new(), url).await
}

/// Registers `username` on the server at `base` as `client`'s player, with
/// high 7-day caps, and deposits `cents` (the short form of
/// [`super::players::player`]).
pub async fn register_and_deposit(
    client: &reqwest::Client,
    base: &str,
    username: &str,
    cents: i64,
) {
    super::players::player(username)
        .high_limits()
        .deposit(cents)
        .at(client, base)
        .await;
}

/// Buys a unit at `stake_cents` on the server at `base` as `client`'s
/// player, with the idempotency `key`: as [`post`] answers.
pub async fn buy_at(
    client: &reqwest::Client,
    base: &str,
    stake_cents: i64,
    key: &str,
) -> Option<(u16, Value)> {
    let body = json!({ "stake_cents": stake_cents });
    post(client, &format!("{base}/api/plays"), &body, Some(key)).await
}

/// Throws once in play `id` on the server at `base` as `client`'s player:
/// as [`post`] answers.
pub async fn throw_at(client: &reqwest::Client, base: &str, id: i64) -> Option<(u16, Value)> {
    let url = format!("{base}/api/plays/{id}/throws");
    post(client, &url, &json!({}), None).await
}

/// `count` players (`player0`, `player1`…) registered on the server at
/// `base` with high caps, each with `cents` deposited: their clients.
pub async fn players_at(base: &str, count: usize, cents: i64) -> Vec<reqwest::Client> {
    let mut clients = Vec::new();
    for p in 0..count {
        let client = cookie_client();
        register_and_deposit(&client, base, &format!("player{p}"), cents).await;
        clients.push(client);
    }
    clients
}

/// Buys a unit at `stake_cents` as `client`'s player and plays its four
/// throws: the purchase's answer (with its receipt).
pub async fn buy_and_play(client: &reqwest::Client, base: &str, stake_cents: i64) -> Value {
    let mut key = [0u8; 16];
    getrandom::fill(&mut key).expect("random bytes");
    let (status, play) = buy_at(client, base, stake_cents, &hex::encode(key))
        .await
        .expect("the server answers the purchase");
    assert!(status < 300, "{status} {play}");
    let id = play["id"].as_i64().expect("a play id");
    for _ in 0..4 {
        let (status, body) = throw_at(client, base, id)
            .await
            .expect("the server answers the throw");
        assert!(status < 300, "{status} {body}");
    }
    play
}

/// The value of the header `name` of `response`, as text (there must be
/// one).
pub fn header<'r>(response: &'r reqwest::Response, name: &str) -> &'r str {
    response.headers()[name].to_str().unwrap()
}

/// The value of the header `name` of `response`, as text, if there is one.
pub fn maybe_header(response: &reqwest::Response, name: &str) -> Option<String> {
    let value = response.headers().get(name)?;
    Some(value.to_str().unwrap().to_owned())
}
