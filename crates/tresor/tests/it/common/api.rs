//! The HTTP router driven in-process, one request at a time (`oneshot`):
//! no socket, no cookie jar.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;
use tresor::metrics::Metrics;
use tresor::service::Service;

/// The application's router on `service`, as `tresor serve` builds it.
pub fn router(service: &Service) -> axum::Router {
    tresor::http::app(state(service))
}

/// What the players' and the operator's routers on `service` share.
pub fn state(service: &Service) -> tresor::http::AppState {
    tresor::http::AppState {
        service: service.clone(),
        metrics: Arc::new(Metrics::new(&service.writer.stats)),
        secure_cookies: false,
    }
}

/// The HTTP router on `service`, driven in-process.
#[derive(Debug, Clone)]
pub struct Api {
    router: axum::Router,
}

/// An answer of the API.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    pub text: String,
    pub cookie: Option<String>,
}

impl Api {
    pub fn new(service: &Service) -> Api {
        Api {
            router: router(service),
        }
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        cookie: Option<&str>,
        idempotency_key: Option<&str>,
    ) -> Answer {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("x-requested-with", "tresor");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        if let Some(key) = idempotency_key {
            request = request.header("idempotency-key", key);
        }
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        }
        .expect("a valid request");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let cookie = response
            .headers()
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .expect("a body");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            body,
            text,
            cookie,
        }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.call("GET", path, None, None, None).await
    }

    /// Opens an account through the API, with an identity (outside demo
    /// mode `/api/register` is refused); returns the session cookie.
    pub async fn register(&self, username: &str) -> String {
        super::players::player(username)
            .real_money()
            .through(self)
            .await
    }

    /// Buys a unit at `stake_cents` as the player of `cookie`.
    pub async fn buy(&self, cookie: &str, stake_cents: i64, idempotency_key: &str) -> Answer {
        self.call(
            "POST",
            "/api/plays",
            Some(json!({ "stake_cents": stake_cents })),
            Some(cookie),
            Some(idempotency_key),
        )
        .await
    }
}
