//! The player's open sessions (`docs/ACCOUNT.md`, "Sessions"): the list,
//! and ending one or all of the others; and [`Origin`], where a session is
//! opened from (its User-Agent and the client's address).

use super::api::{ActingPlayer, CurrentPlayer, require_csrf_proof, session_token};
use super::throttle::ClientAddress;
use super::{ApiError, AppState};
use crate::error::Error;
use crate::service::SessionOrigin;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
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

/// Where a session is opened from: the request's User-Agent (at most 300
/// characters kept) and the client's address (as the throttles see it).
pub(super) struct Origin(pub SessionOrigin);

impl FromRequestParts<AppState> for Origin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Ok(address) = ClientAddress::from_request_parts(parts, state).await;
        let user_agent = parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(300).collect());
        Ok(Origin(SessionOrigin {
            user_agent,
            address: Some(address.0.to_string()),
        }))
    }
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
