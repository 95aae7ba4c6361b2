//! The HTTP edge: the players' site (the JSON API under `/api`, liveness
//! `/healthz`, readiness `/readyz`, the web page) and the operator's listener
//! (`admin`: metrics and the console's API, `console`). [`app`] and [`admin_app`] build the routers; [`serve`] adds the listeners, background
//! tasks and graceful shutdown, so tests can drive [`app`] in-process.

mod account;
mod admin;
mod api;
mod body;
mod console;
mod console_dashboard;
mod console_documents;
mod console_emissions;
mod console_guard;
mod console_kit;
mod console_login;
mod console_money;
mod console_site;
mod console_trail;
mod console_web;
mod controls;
mod csrf;
mod documents;
pub mod edge;
mod error;
mod extract;
mod log;
mod origin;
mod password;
mod player_session;
mod reauth;
mod sessions;
pub mod throttle;
pub mod web;

pub use admin::admin_app;
pub use edge::{ConnectionCaps, EdgeSettings};
pub use error::ApiError;
pub use throttle::Throttles;

use crate::metrics::Metrics;
use crate::service::Service;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;

/// What every request handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    pub service: Service,
    pub metrics: Arc<Metrics>,
    /// Mark cookies `Secure` (the site is served over https).
    pub secure_cookies: bool,
}

/// The whole site as a router, with throttles of its own.
pub fn app(state: AppState) -> Router {
    let throttles = Arc::new(Throttles::new(&state.service.settings.rate_limits));
    app_with(state, throttles)
}

fn app_with(state: AppState, throttles: Arc<Throttles>) -> Router {
    // Browsers that have seen the site over https refuse plain http to it
    // for a year.
    let hsts = state.secure_cookies.then(|| {
        SetResponseHeaderLayer::overriding(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        )
    });
    let router = Router::new()
        .route("/readyz", get(readyz))
        // The console lives on the operator listener only.
        .route("/console", axum::routing::any(not_on_this_site))
        .route("/console/{*rest}", axum::routing::any(not_on_this_site))
        .merge(api::routes())
        .merge(account::routes())
        .merge(log::routes())
        .merge(password::routes())
        .merge(sessions::routes())
        .merge(web::routes())
        .layer(RequestBodyLimitLayer::new(64 * 1024))
        // An identity document's upload takes more: its handler reads the
        // body up to the installation's own limit.
        .merge(documents::routes())
        // Once for every route, before any handler: a path or query string
        // holding a control character (a NUL…) goes no further.
        .layer(middleware::from_fn(controls::refuse_controls))
        .layer(Extension(throttles))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .layer(middleware::from_fn(json_edge_errors))
        .layer(middleware::from_fn(no_store_api))
        .layer(tower::util::option_layer(hsts));
    with_security_headers(router).with_state(state)
}

/// The headers every answer of both listeners carries: the site's content
/// security policy (unless a route set its own), no type sniffing, no
/// framing, the referrer kept to the site.
fn with_security_headers<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(web::CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ))
}

/// `GET /readyz`: 200 `{"status":"ready"}` when the writer and the
/// database answer, else 503 `not_ready` saying which did not
/// ([`Service::readiness`]). `/healthz` only says the process lives.
async fn readyz(State(state): State<AppState>) -> Response {
    let answer = state.service.readiness().await;
    state.metrics.observe_readiness(&answer);
    match answer {
        Ok(()) => Json(serde_json::json!({"status": "ready"})).into_response(),
        Err(error) => ApiError::from(error).into_response(),
    }
}

/// `/console…` on the players' site: it is not there.
async fn not_on_this_site() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "not found")
}

/// The body-size and time limits answer before any handler, and axum's own
/// refusals (a method an API path does not take) with an empty or plain-text
/// body: give them the API's JSON error shape.
pub(super) async fn json_edge_errors(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let api = path.starts_with("/api/") || path.starts_with("/console/api/");
    let response = next.run(request).await;
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

/// Every answer under `/api/` (a player's account, plays, documents, and
/// the refusals at the edge: too large, too slow, no such endpoint) is
/// `Cache-Control: no-store` unless its route said otherwise: none lingers
/// in a browser's or a proxy's cache (docs/ACCOUNT.md).
async fn no_store_api(request: Request, next: Next) -> Response {
    let api = request.uri().path().starts_with("/api/");
    let mut response = next.run(request).await;
    if api && !response.headers().contains_key(header::CACHE_CONTROL) {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Counts requests and their latency by route (the matched pattern, or
/// `other`) and method (bounded, see [`crate::metrics::method_label`]).
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "other".to_owned());
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.observe_request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// Serves the site on `listener` and the operator's routes on `admin`, each
/// with the connection limits of `edge` ([`edge`] says which), until Ctrl-C
/// or SIGTERM, and settles abandoned plays in the background.
pub async fn serve(
    listener: tokio::net::TcpListener,
    admin: tokio::net::TcpListener,
    state: AppState,
    edge: EdgeSettings,
) -> anyhow::Result<()> {
    let settler = tokio::spawn(settle_abandoned_forever(state.service.clone()));
    let throttles = Arc::new(Throttles::new(&state.service.settings.rate_limits));
    let forgetter = tokio::spawn(throttle::forget_idle_forever(
        throttles.clone(),
        state.service.clock.clone(),
    ));
    let admin_router = admin_app(state.clone());
    let router = app_with(state, throttles);
    let (stop_players, players_stopped) = tokio::sync::watch::channel(false);
    let (stop_admin, admin_stopped) = tokio::sync::watch::channel(false);
    let admin_server = tokio::spawn(edge::serve_listener(
        admin,
        admin_router,
        edge,
        edge.operator,
        admin_stopped,
    ));
    let signal = tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop_players.send(true);
    });
    edge::serve_listener(listener, router, edge, edge.players, players_stopped).await;
    // The operator's listener answers until the players' requests are done.
    let _ = stop_admin.send(true);
    let _ = admin_server.await;
    signal.abort();
    settler.abort();
    forgetter.abort();
    Ok(())
}

async fn settle_abandoned_forever(service: Service) {
    let every =
        Duration::from_secs((service.settings.auto_settle_after_s as u64 / 10).clamp(1, 60));
    loop {
        match service.settle_abandoned().await {
            Ok(0) => {}
            Ok(settled) => tracing::info!(settled, "settled abandoned plays"),
            Err(error) => tracing::error!(error = %error, "settling abandoned plays failed"),
        }
        tokio::time::sleep(every).await;
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
