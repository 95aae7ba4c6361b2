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
mod console_reports;
mod console_site;
mod console_trail;
mod console_web;
mod controls;
mod csrf;
mod documents;
pub mod edge;
mod error;
mod extract;
mod free;
mod gate;
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
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use gate::Gate;
use std::sync::Arc;
use std::time::Duration;

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
    let gate = Arc::new(Gate {
        throttles,
        metrics: state.metrics.clone(),
        hsts: state.secure_cookies,
    });
    Router::new()
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
        .merge(documents::routes())
        // Once for every route, before any handler, in one layer (`gate.rs`):
        // control characters, the body's size, the CSRF proof, the metrics,
        // the time limit, the edge's refusals as JSON, the headers.
        .layer(middleware::from_fn_with_state(gate, gate::gate))
        .with_state(state)
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
