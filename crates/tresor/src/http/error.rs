//! The one error type at the HTTP edge: each refusal maps to a status and a
//! stable `code`; internal failures are logged with their cause and never
//! shown to the client.

use crate::error::Error;
use crate::protect::LimitKind;
use crate::service::rfc3339;
use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// An error as the API answers it: `{"error": {"code", "message"}}`, plus
/// fields a page can act on for some codes (a cap's figures, an exclusion's
/// end, why a session ended) and `Retry-After` when throttled.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub detail: Map<String, Value>,
    pub retry_after_s: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            detail: Map::new(),
            retry_after_s: None,
        }
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let code = code(&error);
        let (detail, retry_after_s) = detail(&error);
        ApiError {
            status: status(code),
            code,
            message: message(&error),
            detail,
            retry_after_s,
        }
    }
}

/// The stable `code` a refusal answers with: pages and scripts act on it.
fn code(error: &Error) -> &'static str {
    match error {
        Error::Validation(_) => "validation",
        // The code stays `unauthorized` for every missing session; the
        // `reason` field says why, so the page can say so.
        Error::Unauthorized | Error::SessionEnded(_) => "unauthorized",
        Error::NotFound | Error::DemoOnly => "not_found",
        Error::UsernameTaken => "username_taken",
        Error::InvalidCredentials => "invalid_credentials",
        Error::UnknownStake(_) | Error::StakeNotSold { .. } => "unknown_stake",
        Error::UnknownGame(_) => "unknown_game",
        Error::InsufficientFunds { .. } => "insufficient_funds",
        Error::SalesClosed { .. } => "sales_closed",
        Error::SalesHeldAfterRestore => "sales_closed_after_restore",
        Error::SoldOut => "sold_out",
        Error::PlayFinished => "play_finished",
        Error::IdempotencyConflict => "idempotency_conflict",
        Error::InvalidIdempotencyKey => "invalid_idempotency_key",
        Error::LimitReached {
            kind: LimitKind::Deposit,
            ..
        } => "deposit_limit_reached",
        Error::LimitReached {
            kind: LimitKind::Stake,
            ..
        } => "stake_limit_reached",
        Error::Excluded { .. } => "excluded",
        Error::ExclusionShorter { .. } => "exclusion_cannot_be_shortened",
        Error::RateLimited { .. } => "rate_limited",
        Error::CosignatureNotNewer { .. } => "cosignature_not_newer",
        // The code pages already show for a wrong field.
        Error::WrongPassword => "validation",
        Error::MailQuota { .. } => "mail_quota",
        Error::IdentityRequired => "identity_required",
        Error::Minor => "minor",
        Error::Banned => "banned",
        Error::VerificationRequired { .. } => "verification_required",
        Error::NotVerified => "not_verified",
        Error::RulesNotAccepted { .. } => "rules_not_accepted",
        Error::AccountClosed => "account_closed",
        Error::Document { code, .. } => code,
        Error::DocumentsRequired => "documents_required",
        Error::AccountSuspended => "account_suspended",
        Error::InvalidToken => "invalid_token",
        Error::PersonHasAccount => "person_has_account",
        Error::DuplicateAccount => "duplicate_account",
        Error::IbanChanged { .. } => "iban_changed",
        Error::FourEyes { .. } => "four_eyes",
        Error::CreditLimit { .. } => "credit_limit_reached",
        Error::InvalidSignature => "invalid_signature",
        Error::StaleSignature => "stale_signature",
        Error::WithdrawalNotPending { .. } => "withdrawal_not_pending",
        Error::InvalidCode => "invalid_code",
        Error::Forbidden { .. } => "forbidden",
        Error::Unavailable(_) => "unavailable",
        Error::StorageFull => "storage_full",
        Error::LogDoesNotHold(_) => "log_does_not_hold",
        Error::NotReady(_) => "not_ready",
        // The database is down or failing over: nothing was changed.
        Error::Database(_) | Error::Sqlite(_) if error.is_outage() => "unavailable",
        Error::Database(_) | Error::Sqlite(_) | Error::Secrets(_) | Error::Definition(_) => {
            "internal"
        }
    }
}

/// The status of each code: one table, so that a code always answers with
/// the same status. A document's refusal not named here is a 422.
fn status(code: &str) -> StatusCode {
    match code {
        "unauthorized"
        | "invalid_credentials"
        | "invalid_signature"
        | "stale_signature"
        | "invalid_code" => StatusCode::UNAUTHORIZED,
        "not_found" | "unknown_game" => StatusCode::NOT_FOUND,
        "insufficient_funds" => StatusCode::PAYMENT_REQUIRED,
        "sales_closed"
        | "sales_closed_after_restore"
        | "deposit_limit_reached"
        | "stake_limit_reached"
        | "excluded"
        | "minor"
        | "banned"
        | "verification_required"
        | "not_verified"
        | "account_closed"
        | "account_suspended"
        | "duplicate_account"
        | "four_eyes"
        | "credit_limit_reached"
        | "forbidden" => StatusCode::FORBIDDEN,
        "username_taken"
        | "sold_out"
        | "play_finished"
        | "idempotency_conflict"
        | "exclusion_cannot_be_shortened"
        | "cosignature_not_newer"
        | "rules_not_accepted"
        | "documents_required"
        | "person_has_account"
        | "iban_changed"
        | "withdrawal_not_pending"
        | "document_already_sent"
        | "document_decided"
        | "iban_proof_outdated" => StatusCode::CONFLICT,
        "invalid_idempotency_key" | "invalid_token" | "document_empty" => StatusCode::BAD_REQUEST,
        "rate_limited" | "mail_quota" => StatusCode::TOO_MANY_REQUESTS,
        "document_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "document_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unavailable" | "storage_full" | "log_does_not_hold" | "not_ready" => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        "internal" => StatusCode::INTERNAL_SERVER_ERROR,
        // `validation`, `unknown_stake`, `identity_required` and the other
        // refusals of a document.
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

/// The message shown: an internal failure is logged with its cause here and
/// shown as no more than what the client can do about it.
fn message(error: &Error) -> String {
    let internal = |cause: &dyn std::fmt::Display, what: &str| {
        tracing::error!(error = %cause, "{what}");
        "internal error".to_owned()
    };
    match error {
        Error::Database(_) | Error::Sqlite(_) if error.is_outage() => {
            tracing::warn!(error = %error, "the database is unavailable");
            "service unavailable: the database cannot be reached; nothing was changed, try again shortly".to_owned()
        }
        Error::Database(cause) => internal(cause, "database error"),
        Error::Sqlite(cause) => internal(cause, "database error"),
        Error::Secrets(cause) => internal(cause, "block secrets"),
        Error::Definition(cause) => internal(cause, "a pinned game definition"),
        Error::LogDoesNotHold(why) => {
            tracing::error!(error = %why, "the trail's log does not hold");
            "service unavailable: the trail cannot be extended; nothing was changed".to_owned()
        }
        Error::SalesClosed {
            opens_at_ms: Some(t),
        } => format!("sales are closed until {}", rfc3339(*t)),
        Error::DemoOnly => "not found".to_owned(),
        other => other.to_string(),
    }
}

/// The fields a page can act on for some refusals, and the `Retry-After`
/// of those worth retrying.
fn detail(error: &Error) -> (Map<String, Value>, Option<u64>) {
    let fields = |pairs: &[(&str, Value)]| -> Map<String, Value> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect()
    };
    let detail = match error {
        Error::SessionEnded(end) => fields(&[("reason", json!(end.code()))]),
        Error::LimitReached {
            amount_cents,
            limit_cents,
            left_cents,
            resets_at_ms,
            ..
        } => fields(&[
            ("amount_cents", json!(amount_cents)),
            ("limit_cents", json!(limit_cents)),
            ("left_cents", json!(left_cents)),
            ("resets_at", json!(resets_at_ms.map(rfc3339))),
        ]),
        Error::Excluded { until_ms } | Error::ExclusionShorter { until_ms, .. } => {
            fields(&[("excluded_until", json!(rfc3339(*until_ms)))])
        }
        Error::VerificationRequired { since_ms, until_ms } => fields(&[
            ("provisional_since", json!(rfc3339(*since_ms))),
            ("provisional_until", json!(rfc3339(*until_ms))),
        ]),
        Error::RulesNotAccepted { version } => fields(&[("rules_version", json!(version))]),
        Error::WithdrawalNotPending { state } => fields(&[("state", json!(state))]),
        Error::Forbidden { permission } => fields(&[("permission", json!(permission))]),
        Error::IbanChanged { current, set_at_ms } => fields(&[
            ("iban", json!(current)),
            ("iban_set_at", json!(rfc3339(*set_at_ms))),
        ]),
        Error::CreditLimit { setting, .. } => fields(&[("setting", json!(setting))]),
        _ => Map::new(),
    };
    let retry_after_s = match error {
        Error::RateLimited { retry_after_s } | Error::MailQuota { retry_after_s, .. } => {
            Some(*retry_after_s)
        }
        // Space comes back when an operator frees it: not in a second.
        Error::StorageFull => Some(30),
        Error::Unavailable(_) => Some(1),
        _ => None,
    };
    (detail, retry_after_s)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = self.detail;
        error.insert("code".to_owned(), json!(self.code));
        error.insert("message".to_owned(), json!(self.message));
        let mut response = (self.status, Json(json!({ "error": error }))).into_response();
        if let Some(seconds) = self.retry_after_s {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, seconds.max(1).into());
        }
        response
    }
}
