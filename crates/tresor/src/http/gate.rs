//! The players' site's one layer (issue 46): every request goes through
//! [`gate`] once, which does in one boxed future what eleven layers did each
//! with its own (control characters, the body's size, the CSRF proof, the
//! throttles handed to the handlers, the request's metrics, the 30-second
//! limit, the edge's refusals in the API's JSON shape, `no-store`, the
//! security headers). axum clones a route's whole stack of layers at every
//! level on every request, so each layer cost a few allocations and a boxed
//! future: about a tenth of a purchase's CPU (BENCHMARKS.md, "The purchase's
//! CPU, fourth step"). The order of the checks, their refusals and the
//! headers are those the layers gave (docs/RELIABILITY.md, "Hostile input";
//! docs/ACCOUNT.md).

use super::csrf::{CSRF_VALUE, csrf_refusal};
use super::throttle::Throttles;
use super::{ApiError, controls, web};
use crate::metrics::Metrics;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest body a request of the site may send, but an identity
/// document's upload, whose handler reads it up to the installation's own
/// limit (`documents.rs`).
const BODY_LIMIT: usize = 64 * 1024;

/// The route whose body is not held to [`BODY_LIMIT`] (`documents.rs`).
const DOCUMENTS_ROUTE: &str = "/api/account/documents";

/// The one route under `/api/` that does not ask the CSRF proof: the
/// payment provider is no browser, its proof is its signature.
const WEBHOOK_ROUTE: &str = "/api/payments/webhook";

/// How long a request may take before it is answered 408 `timeout`.
const REQUEST_TIME: Duration = Duration::from_secs(30);

/// What the gate holds: one reference count cloned per request.
#[derive(Debug)]
pub(super) struct Gate {
    pub(super) throttles: Arc<Throttles>,
    pub(super) metrics: Arc<Metrics>,
    /// Browsers that have seen the site over https refuse plain http to it
    /// for a year (`Strict-Transport-Security`), when the site is https.
    pub(super) hsts: bool,
}

/// The players' site's layer: refusals first, then the handler within
/// [`REQUEST_TIME`], then the answer's headers.
pub(super) async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let api = path.starts_with("/api/");
    let any_api = is_api(path);
    let route = request.extensions().get::<MatchedPath>().cloned();
    // A player's API (the game's, the account's, sessions, documents) and
    // the API's fallback, where unknown paths land: the CSRF proof on every
    // state-changing request, and no answer in any cache.
    let players_api = route.is_none() || api;
    let proof = players_api && route.as_ref().is_none_or(|r| r.as_str() != WEBHOOK_ROUTE);
    let method = request.method().clone();
    let started = Instant::now();
    let answered = async {
        let response = refused_or_run(&gate, request, route.as_ref(), proof, next).await;
        let label = route.as_ref().map_or("other", MatchedPath::as_str);
        let status = response.status().as_u16();
        gate.metrics
            .observe_request(&method, label, status, started.elapsed());
        response
    };
    let response = match tokio::time::timeout(REQUEST_TIME, answered).await {
        Ok(response) => response,
        Err(_) => StatusCode::REQUEST_TIMEOUT.into_response(),
    };
    let mut response = as_json(response, any_api);
    let headers = response.headers_mut();
    if players_api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if gate.hsts {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    security_headers(headers);
    response
}

/// A control character in the path or query, a body announced too large, a
/// missing CSRF proof: refused before the handler; else the handler, with
/// the throttles it takes and its body held to [`BODY_LIMIT`].
async fn refused_or_run(
    gate: &Gate,
    mut request: Request,
    route: Option<&MatchedPath>,
    proof: bool,
    next: Next,
) -> Response {
    if let Some(refusal) = controls::uri_refusal(request.uri()) {
        return refusal;
    }
    if route.is_none_or(|r| r.as_str() != DOCUMENTS_ROUTE) {
        let announced = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
        let limit = match announced {
            Some(length) if length > BODY_LIMIT => {
                return StatusCode::PAYLOAD_TOO_LARGE.into_response();
            }
            Some(length) => length,
            None => BODY_LIMIT,
        };
        request = request.map(|body| Body::new(http_body_util::Limited::new(body, limit)));
    }
    if proof && let Some(refusal) = csrf_refusal(&request, CSRF_VALUE) {
        return refusal;
    }
    request.extensions_mut().insert(gate.throttles.clone());
    next.run(request).await
}

/// The operator's listener's one layer: control characters in the path or
/// query refused, and the security headers every answer carries.
pub(super) async fn operator_gate(request: Request, next: Next) -> Response {
    let mut response = match controls::uri_refusal(request.uri()) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    };
    security_headers(response.headers_mut());
    response
}

/// The headers every answer of both listeners carries: the site's content
/// security policy (unless a route set its own), no type sniffing, no
/// framing, the referrer kept to the site.
pub(super) fn security_headers(headers: &mut HeaderMap) {
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(web::CONTENT_SECURITY_POLICY),
        );
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

/// [`as_json`] as a layer of its own (the console's API).
pub(super) async fn json_edge_errors(request: Request, next: Next) -> Response {
    let api = is_api(request.uri().path());
    as_json(next.run(request).await, api)
}

/// Whether `path` is one of an API (the players' or the console's), where a
/// refused method is answered in JSON too.
fn is_api(path: &str) -> bool {
    path.starts_with("/api/") || path.starts_with("/console/api/")
}

/// The body-size and time limits answer before any handler, and axum's own
/// refusals (a method an API path does not take) with an empty or plain-text
/// body: give them the API's JSON error shape.
fn as_json(response: Response, api: bool) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return response;
    }
    match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is too large (64 KiB at most; a ban list import, 32 MiB)",
        )
        .into_response(),
        StatusCode::REQUEST_TIMEOUT => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            "the request took longer than 30 seconds",
        )
        .into_response(),
        StatusCode::METHOD_NOT_ALLOWED if api => {
            let allow = response.headers().get(header::ALLOW).cloned();
            let mut answer = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this API endpoint does not take this method",
            )
            .into_response();
            if let Some(allow) = allow {
                answer.headers_mut().insert(header::ALLOW, allow);
            }
            answer
        }
        _ => response,
    }
}
