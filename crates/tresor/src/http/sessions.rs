//! The player's open sessions (`docs/ACCOUNT.md`, "Sessions"): the list,
//! ending one or all of the others, and whether this one still holds (the
//! page's poll, which does not keep an idle session alive).

use super::csrf::require_csrf_proof;
use super::player_session::{ActingPlayer, CurrentPlayer, session_token};
use super::{ApiError, AppState};
use crate::error::Error;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use tower_http::set_header::SetResponseHeaderLayer;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/session", get(check))
        .route("/api/account/sessions", get(list))
        .route("/api/account/sessions/end-others", post(end_others))
        .route("/api/account/sessions/{id}/end", post(end_one))
        .layer(middleware::from_fn(require_csrf_proof))
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}

fn token(headers: &HeaderMap) -> Result<String, ApiError> {
    Ok(session_token(headers).ok_or(Error::Unauthorized)?)
}

/// `GET /api/session`: 204 while the session holds, else 401 `unauthorized`
/// with its `reason` (`session_ended`, `session_idle`, …), read without refreshing
/// the idle timer.
async fn check(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<axum::http::StatusCode, ApiError> {
    state.service.session_check(&token(&headers)?).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    current: CurrentPlayer,
) -> Result<Json<Value>, ApiError> {
    let sessions = state
        .service
        .open_sessions(&current.player, &token(&headers)?)
        .await?;
    Ok(Json(json!({ "sessions": sessions })))
}

async fn end_others(
    State(state): State<AppState>,
    headers: HeaderMap,
    current: ActingPlayer,
) -> Result<Json<Value>, ApiError> {
    let ended = state
        .service
        .end_sessions_of(&current.player, &token(&headers)?, None)
        .await?;
    Ok(Json(json!({ "sessions_ended": ended })))
}

async fn end_one(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    current: ActingPlayer,
) -> Result<Json<Value>, ApiError> {
    let ended = state
        .service
        .end_sessions_of(&current.player, &token(&headers)?, Some(&id))
        .await?;
    Ok(Json(json!({ "sessions_ended": ended })))
}
