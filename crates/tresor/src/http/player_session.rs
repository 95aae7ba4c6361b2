//! A player's session at the edge: its cookie, and the extractors of the
//! logged-in player (`CurrentPlayer`) and of one who acts through the writer
//! (`ActingPlayer`, throttled per address and per player).

use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::service::{AccountView, Buyer, Player, Service};
use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use std::ops::Deref;
use std::sync::Arc;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tresor_session";

/// The session token a request's cookie carries, if any.
pub(super) fn session_token(headers: &HeaderMap) -> Option<String> {
    super::console_kit::cookie(headers, SESSION_COOKIE)
}

/// The logged-in player of a request (401 without a live session), with
/// the session's token and the app the request asks: what every handler of
/// a player's own things starts from.
pub(super) struct CurrentPlayer {
    pub(super) player: Player,
    pub(super) token: String,
    pub(super) state: AppState,
}

impl CurrentPlayer {
    pub(super) fn service(&self) -> &Service {
        &self.state.service
    }

    /// The player's account view, as a change to it answers.
    pub(super) async fn account(&self) -> Result<Json<AccountView>, ApiError> {
        Ok(Json(self.service().account(&self.player).await?))
    }
}

impl FromRequestParts<AppState> for CurrentPlayer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = session_token(&parts.headers).ok_or(Error::Unauthorized)?;
        let player = state.service.session_player(&token).await?;
        let state = state.clone();
        Ok(CurrentPlayer {
            player,
            token,
            state,
        })
    }
}

/// The player of a purchase: the session resolved from the server's cache
/// when it was seen within the last minute, its end checked by the batch
/// that sells (`service::session_cache`); otherwise read as
/// [`CurrentPlayer`]'s.
pub(super) struct BuyingPlayer {
    pub(super) buyer: Buyer,
    pub(super) state: AppState,
}

impl FromRequestParts<AppState> for BuyingPlayer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = session_token(&parts.headers).ok_or(Error::Unauthorized)?;
        let buyer = state.service.buyer(&token).await?;
        Ok(BuyingPlayer {
            buyer,
            state: state.clone(),
        })
    }
}

/// The logged-in player of a request that reaches the writer (a throw, a
/// deposit, a cap change, an exclusion): throttled per address before the
/// session is read, then per player.
pub(super) struct ActingPlayer(CurrentPlayer);

impl Deref for ActingPlayer {
    type Target = CurrentPlayer;

    fn deref(&self) -> &CurrentPlayer {
        &self.0
    }
}

impl FromRequestParts<AppState> for ActingPlayer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let throttles = throttles_of(parts);
        let Ok(address) = ClientAddress::from_request_parts(parts, state).await;
        throttles.action_by_address(&address)?;
        let current = CurrentPlayer::from_request_parts(parts, state).await?;
        throttles.action_by_player(current.player.id)?;
        Ok(ActingPlayer(current))
    }
}

fn throttles_of(parts: &Parts) -> Arc<Throttles> {
    parts
        .extensions
        .get::<Arc<Throttles>>()
        .expect("the router carries its throttles")
        .clone()
}

pub(super) fn session_cookie(state: &AppState, token: &str, max_age_s: i64) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    ))
    .expect("a cookie of hex digits is a valid header")
}
