//! Players' passwords and e-mail (`docs/ACCOUNT.md`, "Passwords and
//! e-mail"): changing the password, a reset by mail, the address on file
//! and its confirmation, the undoing of an address change. A change asks
//! the current password (`reauth`). Every route takes the API's CSRF header.

use super::body::Body;
use super::console_kit::Answer;
use super::player_session::ActingPlayer;
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::model::Username;
use crate::service::{AccountView, PasswordConfirmed, PasswordOf, Service};
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{post, put};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/account/password", post(change_password))
        .route("/api/account/email", put(set_email))
        .route("/api/password/reset", post(ask_reset))
        .route("/api/password/reset/confirm", post(reset))
        .route("/api/email/confirm", post(confirm_email))
        .route("/api/email/undo", post(undo_email))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeBody {
    current_password: String,
    new_password: String,
}

/// A player's change to what the current password guards (the password,
/// the address, the IBAN): the player acting, and what checking that
/// password at the edge needs (`reauth`).
#[derive(FromRequestParts)]
#[from_request(state(AppState))]
pub(super) struct Guarded {
    #[from_request(via(Extension))]
    throttles: Arc<Throttles>,
    address: ClientAddress,
    pub(super) me: ActingPlayer,
}

impl Guarded {
    /// The current password of the request's player, checked and counted
    /// (`reauth`) in the request's session.
    pub(super) async fn confirm(
        &self,
        current_password: &str,
    ) -> Result<PasswordConfirmed, ApiError> {
        let (me, throttles, address) = (&self.me, &self.throttles, &self.address);
        let name = Username::normalise(&me.player.username);
        let of = PasswordOf::Player(me.player.id);
        super::reauth::confirm(
            &me.state,
            throttles,
            address,
            name.skeleton(),
            of,
            &me.token,
            current_password,
        )
        .await
    }
}

async fn change_password(guarded: Guarded, Body(body): Body<ChangeBody>) -> Answer {
    let confirmed = guarded.confirm(&body.current_password).await?;
    let (me, new) = (&guarded.me, &body.new_password);
    let ended = me
        .service()
        .change_password(&me.player, confirmed, &me.token, new)
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
    guarded: Guarded,
    Body(body): Body<EmailChangeBody>,
) -> Result<Json<AccountView>, ApiError> {
    let confirmed = guarded.confirm(&body.current_password).await?;
    let me = &guarded.me;
    me.service()
        .set_email(&me.player, confirmed, &body.email)
        .await?;
    me.account().await
}

/// Answered alike whether or not an account has the address.
async fn ask_reset(link: Link, Body(body): Body<EmailBody>) -> Answer {
    link.throttles.registration(&link.address)?;
    link.state.service.ask_password_reset(&body.email).await?;
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

async fn reset(link: Link, Body(body): Body<ResetBody>) -> Answer {
    let service = link.spend()?;
    service
        .reset_password(&body.token, &body.new_password)
        .await?;
    Ok(Json(json!({"reset": true})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenBody {
    token: String,
}

async fn confirm_email(link: Link, Body(body): Body<TokenBody>) -> Answer {
    link.spend()?.confirm_email(&body.token).await?;
    Ok(Json(json!({"confirmed": true})).into_response())
}

/// The link mailed to the old address when the address changed: the old
/// address is back, every session ends (this browser's too).
async fn undo_email(link: Link, Body(body): Body<TokenBody>) -> Answer {
    link.spend()?.undo_email_change(&body.token).await?;
    Ok(Json(json!({"undone": true})).into_response())
}

/// A mailed link followed (a reset, an address confirmed or undone): its
/// token is tried under the login throttle of the client's address.
#[derive(FromRequestParts)]
#[from_request(state(AppState))]
struct Link {
    #[from_request(via(State))]
    state: AppState,
    #[from_request(via(Extension))]
    throttles: Arc<Throttles>,
    address: ClientAddress,
}

impl Link {
    /// The service, once the address may try one more token.
    fn spend(&self) -> Result<&Service, ApiError> {
        self.throttles.login(&self.address)?;
        Ok(&self.state.service)
    }
}
