//! Protecting players and accounts (issue 6), on SQLite and PostgreSQL: the
//! 7-day caps on deposits and stakes, self-exclusion, session expiry,
//! throttles, cross-site refusals and the security headers.

use crate::common::cookie::set_cookie as session_cookie;
use crate::common::expect;
use crate::common::opening::assert_invalid;
use crate::common::players::{player, session_cookie as login_cookie};
use crate::common::{TestApp, scalar, texts};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tresor::error::Error;
use tresor::protect::{ExclusionLength, RateLimits};
use tresor::service::{Clock, IdempotencyKey, Purchase, Settings, rfc3339};
use tresor::trail::Actor;

mod browser;
mod caps;
mod exclusion;
mod logins;
mod sessions;
mod throttling;
mod web;

const MINUTE_MS: i64 = 60 * 1000;

const HOUR_MS: i64 = 60 * MINUTE_MS;

const DAY_MS: i64 = 24 * HOUR_MS;

/// Settings with no throttle but the ones a test sets.
fn throttled(rate_limits: RateLimits) -> Settings {
    Settings {
        rate_limits,
        ..Settings::default()
    }
}

/// A request (`"POST /api/login"`) outside the cookie jar, with its
/// answer's headers.
async fn raw(
    app: &TestApp,
    call: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let (method, path) = call.split_once(' ').expect("a method and a path");
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let client = reqwest::Client::new();
    let mut request = client.request(method, format!("{}{path}", app.address));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let text = response.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn trail_actions(app: &TestApp, action: &str) -> Vec<(String, String)> {
    sqlx::query_as("SELECT request, result FROM trail WHERE action = $1 ORDER BY seq")
        .bind(action)
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap()
}

fn retry_after(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

/// Requests queued to the writer so far.
fn queued(app: &TestApp) -> u64 {
    app.service.writer.stats.queued.get()
}
