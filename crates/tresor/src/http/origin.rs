//! [`Origin`]: where a player's session is opened from, as the account's
//! sessions list shows it (its User-Agent and the client's address). Used
//! by `api.rs` (login, registration) and `sessions.rs`.

use super::throttle::ClientAddress;
use super::{ApiError, AppState};
use crate::service::SessionOrigin;
use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

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
