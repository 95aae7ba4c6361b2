//! The console's login (`docs/CONSOLE.md`): the password step, then the
//! TOTP code (or its enrolment), then the session cookie; and logout.
//! Password failures are throttled per (name typed, address), as the
//! players' are; code failures per console account apart from them (giving
//! the password again clears nothing), and a pending login ends after
//! [`WRONG_CODES_PER_LOGIN`] wrong codes.

use super::body::Body;
use super::console_kit::{Answer, CONSOLE_COOKIE, cookie, set_cookie};
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::protect::FailedLogins;
use crate::service::{PasswordOf, StaffMember, os_random_32};
use crate::staff::{self, TOTP_SECRET_LEN};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The cookie between the password and the code (5 minutes).
pub const PENDING_COOKIE: &str = "tresor_console_pending";
const PENDING_MS: i64 = 5 * 60 * 1000;
/// At most this many logins waiting for their code; the oldest go first.
const MAX_PENDING: usize = 10_000;
/// A pending login ends after this many wrong codes: the password again.
pub const WRONG_CODES_PER_LOGIN: u32 = 5;
/// Wrong codes per console account (whatever the logins and addresses)
/// before each further code waits: 1 s, doubling, up to 15 minutes, until
/// a right code; forgotten an hour after the last.
pub const FREE_CODE_FAILURES: u32 = 5;

/// A password given right, waiting for its code.
#[derive(Debug, Clone)]
struct Pending {
    member: StaffMember,
    /// The secret shown for enrolment, kept only if its code comes.
    enrolling: Option<Vec<u8>>,
    expires_at_ms: i64,
    /// Wrong codes given for this login.
    wrong_codes: u32,
}

/// What the console's login keeps between requests: the password step's
/// throttles (per name typed and address), and the logins between their
/// password and their code.
#[derive(Debug)]
pub struct ConsoleLogins {
    throttles: Throttles,
    logins: PendingLogins,
}

impl ConsoleLogins {
    pub fn new(throttles: Throttles) -> ConsoleLogins {
        ConsoleLogins {
            throttles,
            logins: PendingLogins::default(),
        }
    }
}

/// Logins between their password and their code, and the code failures
/// per console account (in memory, per server, as the players' throttles).
#[derive(Debug)]
struct PendingLogins {
    pending: Mutex<HashMap<String, Pending>>,
    code_failures: FailedLogins,
}

impl Default for PendingLogins {
    fn default() -> Self {
        PendingLogins {
            pending: Mutex::default(),
            code_failures: FailedLogins::new(FREE_CODE_FAILURES, u32::MAX),
        }
    }
}

impl PendingLogins {
    fn remember(&self, token: &str, pending: Pending, now_ms: i64) {
        let mut map = self.pending.lock().expect("pending lock");
        map.retain(|_, p| p.expires_at_ms > now_ms);
        if map.len() >= MAX_PENDING {
            let mut times: Vec<i64> = map.values().map(|p| p.expires_at_ms).collect();
            let (_, median, _) = times.select_nth_unstable(map.len() / 2);
            let median = *median;
            map.retain(|_, p| p.expires_at_ms > median);
        }
        map.insert(token.to_owned(), pending);
    }

    fn get(&self, token: &str, now_ms: i64) -> Option<Pending> {
        let map = self.pending.lock().expect("pending lock");
        map.get(token).filter(|p| p.expires_at_ms > now_ms).cloned()
    }

    fn forget(&self, token: &str) {
        self.pending.lock().expect("pending lock").remove(token);
    }

    /// Counts a wrong code for the login `token`; true when that was its
    /// last (the login is forgotten: the password again).
    fn wrong_code(&self, token: &str) -> bool {
        let mut map = self.pending.lock().expect("pending lock");
        let Some(pending) = map.get_mut(token) else {
            return true;
        };
        pending.wrong_codes += 1;
        if pending.wrong_codes >= WRONG_CODES_PER_LOGIN {
            map.remove(token);
            return true;
        }
        false
    }
}

/// The key of a console account's code failures.
fn code_key(member: &StaffMember) -> String {
    format!("staff:{}", member.id)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoginBody {
    username: String,
    password: String,
}

/// The name a login is throttled by (whether or not it is an account).
fn throttle_key(username: &str) -> String {
    username
        .trim()
        .to_ascii_lowercase()
        .chars()
        .take(64)
        .collect()
}

pub(super) async fn login(
    State(state): State<AppState>,
    Extension(console): Extension<Arc<ConsoleLogins>>,
    address: ClientAddress,
    Body(body): Body<LoginBody>,
) -> Answer {
    console.throttles.login(&address)?;
    let key = throttle_key(&body.username);
    let now_ms = state.service.now_ms();
    console.throttles.login_attempt(&key, &address, now_ms)?;
    let checked = state
        .service
        .check_staff_password(&body.username, &body.password)
        .await?;
    console.throttles.login_succeeded(&key, &address);
    let token = hex::encode(os_random_32());
    let (answer, enrolling) = if checked.enrolled {
        (json!({"step": "code"}), None)
    } else {
        let secret = os_random_32()[..TOTP_SECRET_LEN].to_vec();
        let uri = staff::otpauth_uri(&checked.member.username, &secret);
        (
            json!({
                "step": "enrol",
                "secret": staff::base32(&secret),
                "qr_svg": staff::qr_svg(&uri),
                "otpauth_uri": uri,
            }),
            Some(secret),
        )
    };
    console.logins.remember(
        &token,
        Pending {
            member: checked.member,
            enrolling,
            expires_at_ms: now_ms + PENDING_MS,
            wrong_codes: 0,
        },
        now_ms,
    );
    Ok((
        [(
            header::SET_COOKIE,
            set_cookie(&state, PENDING_COOKIE, &token, PENDING_MS / 1000),
        )],
        Json(answer),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CodeBody {
    code: String,
}

pub(super) async fn login_code(
    State(state): State<AppState>,
    Extension(console): Extension<Arc<ConsoleLogins>>,
    headers: HeaderMap,
    Body(body): Body<CodeBody>,
) -> Answer {
    let now_ms = state.service.now_ms();
    let token = cookie(&headers, PENDING_COOKIE).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "give your username and password first (or again: 5 minutes have passed)",
        )
    })?;
    let pending = console.logins.get(&token, now_ms).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "give your username and password first (or again: 5 minutes have passed)",
        )
    })?;
    // Counted per console account before the code is checked, so parallel
    // guesses cannot all pass; the password step never clears it.
    let key = code_key(&pending.member);
    console.logins.code_failures.attempt_alone(&key, now_ms)?;
    let opened = state
        .service
        .open_staff_session(&pending.member, &body.code, pending.enrolling.clone())
        .await;
    let (session, member) = match opened {
        Ok(opened) => opened,
        Err(Error::InvalidCode) => {
            state.metrics.console_code_failures.inc();
            if console.logins.wrong_code(&token) {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "invalid_code",
                    format!(
                        "{}; after {WRONG_CODES_PER_LOGIN} wrong codes this login has ended: \
                         give your username and password again",
                        Error::InvalidCode
                    ),
                ));
            }
            return Err(Error::InvalidCode.into());
        }
        Err(other) => return Err(other.into()),
    };
    console.logins.code_failures.succeeded_alone(&key);
    console.logins.forget(&token);
    // A login always opens a new session; the one this browser had ends.
    if let Some(old) = cookie(&headers, CONSOLE_COOKIE) {
        state.service.close_staff_session(&old).await?;
    }
    let mut response = Json(json!({"step": "done", "operator": member.view()})).into_response();
    let cookies = response.headers_mut();
    cookies.append(
        header::SET_COOKIE,
        set_cookie(
            &state,
            CONSOLE_COOKIE,
            &session,
            state.service.settings.session_max_s,
        ),
    );
    cookies.append(
        header::SET_COOKIE,
        set_cookie(&state, PENDING_COOKIE, "", 0),
    );
    Ok(response)
}

pub(super) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Answer {
    if let Some(token) = cookie(&headers, CONSOLE_COOKIE) {
        state.service.close_staff_session(&token).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(
            header::SET_COOKIE,
            set_cookie(&state, CONSOLE_COOKIE, "", 0),
        )],
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PasswordBody {
    current_password: String,
    new_password: String,
}

/// The console account changes its own password (the current one asked);
/// its other console sessions end.
pub(super) async fn change_password(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    Extension(console): Extension<Arc<ConsoleLogins>>,
    address: ClientAddress,
    headers: HeaderMap,
    Body(body): Body<PasswordBody>,
) -> Answer {
    let token = cookie(&headers, CONSOLE_COOKIE).ok_or(Error::Unauthorized)?;
    let confirmed = super::reauth::confirm(
        &state,
        &console.throttles,
        &address,
        &throttle_key(&member.username),
        PasswordOf::Staff(member.id),
        &token,
        &body.current_password,
    )
    .await?;
    let ended = state
        .service
        .change_staff_password(&member, confirmed, &token, &body.new_password)
        .await?;
    Ok(Json(json!({"changed": true, "sessions_ended": ended})).into_response())
}
