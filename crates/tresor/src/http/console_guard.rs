//! The console's gate: the CSRF proof of its state-changing requests, and
//! the guard of every route behind a login — the staff session resolved,
//! the route's permission checked against the role, a refusal in the trail.

use super::console_kit::{CONSOLE_COOKIE, CONSOLE_CSRF_VALUE, cookie};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::staff::Permission;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};

/// State-changing requests carry `X-Requested-With: tresor-console`, and
/// the browser must not say they come from another site.
pub(super) async fn require_console_csrf(request: Request, next: Next) -> Response {
    match super::csrf::csrf_refusal(&request, CONSOLE_CSRF_VALUE) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

/// How often a console account's refusals are written to the trail: the
/// first of each window, with the count of those left out since the last
/// record; a viewer refused again and again cannot flood the trail.
const REFUSAL_WINDOW_MS: i64 = 60_000;

/// When each console account's refusal was last recorded, and how many
/// were left out since (one entry per console account that was refused).
#[derive(Debug, Default)]
pub(super) struct RefusalTrail {
    recorded: Mutex<std::collections::HashMap<i64, (i64, u64)>>,
}

impl RefusalTrail {
    /// `Some(left out since the last record)` when this refusal of staff
    /// `id` is recorded, `None` when it only counts.
    fn admit(&self, id: i64, now_ms: i64) -> Option<u64> {
        let mut recorded = self.recorded.lock().expect("not poisoned");
        match recorded.get_mut(&id) {
            Some((at_ms, left_out)) if now_ms.saturating_sub(*at_ms) < REFUSAL_WINDOW_MS => {
                *left_out += 1;
                None
            }
            Some(entry) => {
                let left_out = entry.1;
                *entry = (now_ms, 0);
                Some(left_out)
            }
            None => {
                recorded.insert(id, (now_ms, 0));
                Some(0)
            }
        }
    }
}

/// Resolves the console session and checks the route's permission; a
/// refusal of the role is in the trail (at most one record per console
/// account and minute, counting the others). The account goes on to the
/// handler.
pub(super) async fn guard(
    State((state, permission, refusals)): State<(AppState, Option<Permission>, Arc<RefusalTrail>)>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = cookie(request.headers(), CONSOLE_COOKIE) else {
        return ApiError::from(Error::Unauthorized).into_response();
    };
    let member = match state.service.staff_session(&token).await {
        Ok(member) => member,
        Err(error) => return ApiError::from(error).into_response(),
    };
    if let Some(permission) = permission
        && !member.role.can(permission)
    {
        let what = format!("{} {}", request.method(), request.uri().path());
        if let Some(left_out) = refusals.admit(member.id, state.service.now_ms())
            && let Err(error) = state
                .service
                .record_staff_refusal(&member, permission, &what, left_out)
                .await
        {
            tracing::warn!(%error, "recording a console refusal");
        }
        return ApiError::from(Error::Forbidden {
            permission: permission.as_str(),
        })
        .into_response();
    }
    request.extensions_mut().insert(member);
    next.run(request).await
}
