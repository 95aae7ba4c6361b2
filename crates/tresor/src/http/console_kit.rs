//! What the console's screens share, below all of them: its cookie and CSRF
//! value, reading and setting a cookie scoped to `/console`, and the
//! handlers' answer type. The router (`console.rs`) and every screen's room
//! (`console_*.rs`) use it; it uses none of them. The players' session
//! cookie is read with its `cookie` too (`player_session.rs`).

use super::{ApiError, AppState};
use crate::error::Error;
use crate::model::Player;
use crate::service::{Service, StaffMember};
use crate::trail::Actor;
use axum::Json;
use axum::extract::{Extension, FromRequestParts, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

/// The console session's cookie.
pub const CONSOLE_COOKIE: &str = "tresor_console";
/// The CSRF header's value on the console (the players' is `tresor`).
pub const CONSOLE_CSRF_VALUE: &str = "tresor-console";

pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name && !value.is_empty()).then(|| value.to_owned())
        })
}

pub(super) fn set_cookie(state: &AppState, name: &str, value: &str, max_age_s: i64) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    ))
    .expect("a cookie of hex digits is a valid header")
}

pub(super) type Answer = Result<Response, ApiError>;

pub(super) fn ok(value: Value) -> Answer {
    Ok(Json(value).into_response())
}

/// The staff member a guarded console request acts as (`staff:NAME` in the
/// trail, set by `console_guard.rs`) and the service they act through: what
/// every console action starts from.
#[derive(FromRequestParts)]
pub(super) struct Desk {
    #[from_request(via(State))]
    state: AppState,
    #[from_request(via(Extension))]
    member: StaffMember,
}

impl Desk {
    pub(super) fn service(&self) -> &Service {
        &self.state.service
    }

    /// `staff:NAME`, the trail's name of the member.
    pub(super) fn actor(&self) -> Actor {
        self.member.actor()
    }

    /// The player of a console path's id (not found otherwise).
    pub(super) async fn player(&self, id: i64) -> Result<Player, Error> {
        self.state.service.player_by_id(id).await
    }
}

/// `{"reason": …}`: why a staff member rejects a withdrawal, refuses a
/// document, suspends an account or lifts its suspension.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReasonBody {
    pub(super) reason: String,
}
