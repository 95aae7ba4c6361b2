//! The operator listener: `/metrics`, `/healthz` and the console's API
//! (`/console/api/…`, `docs/CONSOLE.md`), on an address of its own
//! (loopback by default), apart from the players' site.

use super::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The operator's router: what players must not see. Every answer, the
/// console's API included, carries the players' site's headers: no type
/// sniffing, no framing, the same content security policy.
pub fn admin_app(state: AppState) -> Router {
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .merge(super::console::routes(state.clone()))
        .merge(super::console_web::routes())
        .layer(axum::middleware::from_fn(super::gate::operator_gate));
    router.with_state(state)
}

async fn metrics(State(state): State<AppState>) -> Response {
    state.metrics.refresh(&state.service).await;
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}
