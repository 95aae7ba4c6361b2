//! The HTTP edge: the JSON API under `/api`, health and metrics, and the web
//! page. [`app`] builds the router; [`serve`] adds the listener, background
//! tasks and graceful shutdown, so tests can drive [`app`] in-process.

mod api;
mod error;
pub mod web;

pub use error::ApiError;

use crate::metrics::Metrics;
use crate::service::Service;
use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
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

/// The whole site as a router.
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(api::routes())
        .merge(web::routes())
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(RequestBodyLimitLayer::new(64 * 1024))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
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
        .with_state(state)
}

/// Counts requests and their latency by route.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "other".to_owned());
    let method = request.method().to_string();
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

/// Serves the site on `listener` until Ctrl-C or SIGTERM, and settles
/// abandoned plays in the background.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> anyhow::Result<()> {
    let settler = tokio::spawn(settle_abandoned_forever(state.service.clone()));
    let router = app(state);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    settler.abort();
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
