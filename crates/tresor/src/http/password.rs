//! Players' passwords and e-mail (`docs/ACCOUNT.md`, "Passwords and
//! e-mail"): changing the password, a reset by mail, the address on file
//! and its confirmation, the undoing of an address change. A change asks
//! the current password (`reauth`). Every route takes the API's CSRF header.

use super::body::Body;
use super::csrf::require_csrf_proof;
use super::player_session::{ActingPlayer, session_token};
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::model::{Player, Username};
use crate::service::{AccountView, PasswordConfirmed, PasswordOf};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use tower_http::set_header::SetResponseHeaderLayer;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/account/password", post(change_password))
        .route("/api/account/email", put(set_email))
        .route("/api/password/reset", post(ask_reset))
        .route("/api/password/reset/confirm", post(reset))
        .route("/api/email/confirm", post(confirm_email))
        .route("/api/email/undo", post(undo_email))
        .layer(middleware::from_fn(require_csrf_proof))
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeBody {
    current_password: String,
    new_password: String,
}

/// The current password of the request's player, checked and counted
/// (`reauth`); the session's token with it.
pub(super) async fn confirmed(
    state: &AppState,
    throttles: &Throttles,
    address: &ClientAddress,
    headers: &HeaderMap,
    player: &Player,
    current_password: &str,
) -> Result<(PasswordConfirmed, String), ApiError> {
    let token = session_token(headers).ok_or(Error::Unauthorized)?;
    let name = Username::normalise(&player.username);
    let confirmed = super::reauth::confirm(
        state,
        throttles,
        address,
        name.skeleton(),
        PasswordOf::Player(player.id),
        &token,
        current_password,
    )
    .await?;
    Ok((confirmed, token))
}

async fn change_password(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    headers: HeaderMap,
    current: ActingPlayer,
    Body(body): Body<ChangeBody>,
) -> Result<Response, ApiError> {
    let (confirmed, token) = confirmed(
        &state,
        &throttles,
        &address,
        &headers,
        &current.player,
        &body.current_password,
    )
    .await?;
    let ended = state
        .service
        .change_password(&current.player, confirmed, &token, &body.new_password)
        .await?;
    Ok(Json(json!({"changed": true, "sessions_ended": ended})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailBody {
    email: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailChangeBody {
    email: String,
    current_password: String,
}

async fn set_email(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    headers: HeaderMap,
    current: ActingPlayer,
    Body(body): Body<EmailChangeBody>,
) -> Result<Json<AccountView>, ApiError> {
    let (confirmed, _) = confirmed(
        &state,
        &throttles,
        &address,
        &headers,
        &current.player,
        &body.current_password,
    )
    .await?;
    state
        .service
        .set_email(&current.player, confirmed, &body.email)
        .await?;
    Ok(Json(state.service.account(&current.player).await?))
}

/// Answered alike whether or not an account has the address.
async fn ask_reset(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    Body(body): Body<EmailBody>,
) -> Result<Response, ApiError> {
    throttles.registration(&address)?;
    state.service.ask_password_reset(&body.email).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "status": "sent_if_known",
            "message": "if an account has this address, a link to choose a new password is on its way; it is valid for one hour, once",
        })),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetBody {
    token: String,
    new_password: String,
}

async fn reset(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    Body(body): Body<ResetBody>,
) -> Result<Response, ApiError> {
    throttles.login(&address)?;
    state
        .service
        .reset_password(&body.token, &body.new_password)
        .await?;
    Ok(Json(json!({"reset": true})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenBody {
    token: String,
}

async fn confirm_email(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    Body(body): Body<TokenBody>,
) -> Result<Response, ApiError> {
    throttles.login(&address)?;
    state.service.confirm_email(&body.token).await?;
    Ok(Json(json!({"confirmed": true})).into_response())
}

/// The link mailed to the old address when the address changed: the old
/// address is back, every session ends (this browser's too).
async fn undo_email(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    Body(body): Body<TokenBody>,
) -> Result<Response, ApiError> {
    throttles.login(&address)?;
    state.service.undo_email_change(&body.token).await?;
    Ok(Json(json!({"undone": true})).into_response())
}
