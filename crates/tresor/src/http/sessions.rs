//! The player's open sessions (`docs/ACCOUNT.md`, "Sessions"): the list,
//! and ending one or all of the others.

use super::api::{ActingPlayer, CurrentPlayer, require_csrf_proof, session_token};
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
