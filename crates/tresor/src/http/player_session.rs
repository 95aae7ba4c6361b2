//! A player's session at the edge: its cookie, and the extractors of the
//! logged-in player (`CurrentPlayer`) and of one who acts through the writer
//! (`ActingPlayer`, throttled per address and per player).

use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::service::Player;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use std::sync::Arc;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tresor_session";

/// The session token a request's cookie carries, if any.
pub(super) fn session_token(headers: &HeaderMap) -> Option<String> {
    super::console_kit::cookie(headers, SESSION_COOKIE)
}

/// The logged-in player of a request; 401 without a live session.
pub(super) struct CurrentPlayer {
    pub(super) player: Player,
}

impl FromRequestParts<AppState> for CurrentPlayer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = session_token(&parts.headers).ok_or(Error::Unauthorized)?;
        let player = state.service.session_player(&token).await?;
        Ok(CurrentPlayer { player })
    }
}

/// The logged-in player of a request that reaches the writer (a throw, a
/// deposit, a cap change, an exclusion): throttled per address before the
/// session is read, then per player.
pub(super) struct ActingPlayer {
    pub(super) player: Player,
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
        let CurrentPlayer { player } = CurrentPlayer::from_request_parts(parts, state).await?;
        throttles.action_by_player(player.id)?;
        Ok(ActingPlayer { player })
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
