//! The player's open sessions (`docs/ACCOUNT.md`, "Sessions"): the list,
//! ending one or all of the others, and whether this one still holds (the
//! page's poll, which does not keep an idle session alive).

use super::player_session::{ActingPlayer, CurrentPlayer, session_token};
use super::{ApiError, AppState};
use crate::error::Error;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/session", get(check))
        .route("/api/account/sessions", get(list))
        .route("/api/account/sessions/end-others", post(end_others))
        .route("/api/account/sessions/{id}/end", post(end_one))
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

async fn list(me: CurrentPlayer) -> Result<Json<Value>, ApiError> {
    let sessions = me.service().open_sessions(&me.player, &me.token).await?;
    Ok(Json(json!({ "sessions": sessions })))
}

async fn end_others(me: ActingPlayer) -> Result<Json<Value>, ApiError> {
    end_sessions(&me, None).await
}

async fn end_one(Path(id): Path<String>, me: ActingPlayer) -> Result<Json<Value>, ApiError> {
    end_sessions(&me, Some(&id)).await
}

/// Ends the player's other sessions, or the one of `id`; never the request's.
async fn end_sessions(me: &ActingPlayer, id: Option<&str>) -> Result<Json<Value>, ApiError> {
    let ended = me
        .service()
        .end_sessions_of(&me.player, &me.token, id)
        .await?;
    Ok(Json(json!({ "sessions_ended": ended })))
}
