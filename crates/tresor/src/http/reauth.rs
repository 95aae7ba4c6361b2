//! The current password a change asks (a player's password, address or
//! IBAN; a console account's password), checked at the edge: counted as a
//! failed login of the account's name from the client's address before it
//! is checked (the login throttle's growing waits), cleared when right,
//! and counted on the session by the service (the fifth wrong value ends
//! it). Issue 32, finding 7.

use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::service::{PasswordConfirmed, PasswordOf};

/// Checks `current` for `of`, asked in the session `session_token`, with
/// `name` (the key the login throttle counts the account's failures by).
pub(super) async fn confirm(
    state: &AppState,
    throttles: &Throttles,
    address: &ClientAddress,
    name: &str,
    of: PasswordOf,
    session_token: &str,
    current: &str,
) -> Result<PasswordConfirmed, ApiError> {
    throttles.login_attempt(name, address, state.service.now_ms())?;
    let confirmed = state
        .service
        .confirm_password(of, session_token, current)
        .await?;
    throttles.login_succeeded(name, address);
    Ok(confirmed)
}
