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
        let (status, code) = match &error {
            Error::Validation(_) => (StatusCode::UNPROCESSABLE_ENTITY, "validation"),
            Error::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Error::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            Error::UsernameTaken => (StatusCode::CONFLICT, "username_taken"),
            Error::InvalidCredentials => (StatusCode::UNAUTHORIZED, "invalid_credentials"),
            Error::UnknownStake(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_stake"),
            Error::StakeNotSold { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_stake"),
            Error::UnknownGame(_) => (StatusCode::NOT_FOUND, "unknown_game"),
            Error::InsufficientFunds { .. } => (StatusCode::PAYMENT_REQUIRED, "insufficient_funds"),
            Error::SalesClosed { .. } => (StatusCode::FORBIDDEN, "sales_closed"),
            Error::SalesHeldAfterRestore => (StatusCode::FORBIDDEN, "sales_closed_after_restore"),
            Error::SoldOut => (StatusCode::CONFLICT, "sold_out"),
            Error::PlayFinished => (StatusCode::CONFLICT, "play_finished"),
            Error::IdempotencyConflict => (StatusCode::CONFLICT, "idempotency_conflict"),
            Error::InvalidIdempotencyKey => (StatusCode::BAD_REQUEST, "invalid_idempotency_key"),
            Error::DemoOnly => (StatusCode::NOT_FOUND, "not_found"),
            // The code stays `unauthorized` for every missing session; the
            // `reason` field says why, so the page can say so.
            Error::SessionEnded(_) => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Error::LimitReached {
                kind: LimitKind::Deposit,
                ..
            } => (StatusCode::FORBIDDEN, "deposit_limit_reached"),
            Error::LimitReached {
                kind: LimitKind::Stake,
                ..
            } => (StatusCode::FORBIDDEN, "stake_limit_reached"),
            Error::Excluded { .. } => (StatusCode::FORBIDDEN, "excluded"),
            Error::ExclusionShorter { .. } => {
                (StatusCode::CONFLICT, "exclusion_cannot_be_shortened")
            }
            Error::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            Error::CosignatureNotNewer { .. } => (StatusCode::CONFLICT, "cosignature_not_newer"),
            // The code pages already show for a wrong field.
            Error::WrongPassword => (StatusCode::UNPROCESSABLE_ENTITY, "validation"),
            Error::MailQuota { .. } => (StatusCode::TOO_MANY_REQUESTS, "mail_quota"),
            Error::IdentityRequired => (StatusCode::UNPROCESSABLE_ENTITY, "identity_required"),
            Error::Minor => (StatusCode::FORBIDDEN, "minor"),
            Error::Banned => (StatusCode::FORBIDDEN, "banned"),
            Error::VerificationRequired { .. } => (StatusCode::FORBIDDEN, "verification_required"),
            Error::NotVerified => (StatusCode::FORBIDDEN, "not_verified"),
            Error::RulesNotAccepted { .. } => (StatusCode::CONFLICT, "rules_not_accepted"),
            Error::AccountClosed => (StatusCode::FORBIDDEN, "account_closed"),
            Error::Document { code, .. } => (
                match *code {
                    "document_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
                    "document_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "document_empty" => StatusCode::BAD_REQUEST,
                    "document_already_sent" | "document_decided" | "iban_proof_outdated" => {
                        StatusCode::CONFLICT
                    }
                    _ => StatusCode::UNPROCESSABLE_ENTITY,
                },
                *code,
            ),
            Error::DocumentsRequired => (StatusCode::CONFLICT, "documents_required"),
            Error::AccountSuspended => (StatusCode::FORBIDDEN, "account_suspended"),
            Error::InvalidToken => (StatusCode::BAD_REQUEST, "invalid_token"),
            Error::PersonHasAccount => (StatusCode::CONFLICT, "person_has_account"),
            Error::DuplicateAccount => (StatusCode::FORBIDDEN, "duplicate_account"),
            Error::IbanChanged { .. } => (StatusCode::CONFLICT, "iban_changed"),
            Error::FourEyes { .. } => (StatusCode::FORBIDDEN, "four_eyes"),
            Error::CreditLimit { .. } => (StatusCode::FORBIDDEN, "credit_limit_reached"),
            Error::InvalidSignature => (StatusCode::UNAUTHORIZED, "invalid_signature"),
            Error::StaleSignature => (StatusCode::UNAUTHORIZED, "stale_signature"),
            Error::WithdrawalNotPending { .. } => (StatusCode::CONFLICT, "withdrawal_not_pending"),
            Error::InvalidCode => (StatusCode::UNAUTHORIZED, "invalid_code"),
            Error::Forbidden { .. } => (StatusCode::FORBIDDEN, "forbidden"),
            Error::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Error::StorageFull => (StatusCode::SERVICE_UNAVAILABLE, "storage_full"),
            Error::LogDoesNotHold(_) => (StatusCode::SERVICE_UNAVAILABLE, "log_does_not_hold"),
            Error::NotReady(_) => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
            // The database is down or failing over: nothing was changed.
            Error::Database(_) | Error::Sqlite(_) if error.is_outage() => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
            }
            Error::Database(_) | Error::Sqlite(_) | Error::Secrets(_) | Error::Definition(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        };
        let message = match &error {
            Error::Database(_) | Error::Sqlite(_) if error.is_outage() => {
                tracing::warn!(error = %error, "the database is unavailable");
                "service unavailable: the database cannot be reached; nothing was changed, try again shortly".to_owned()
            }
            Error::Database(cause) => {
                tracing::error!(error = %cause, "database error");
                "internal error".to_owned()
            }
            Error::Sqlite(cause) => {
                tracing::error!(error = %cause, "database error");
                "internal error".to_owned()
            }
            Error::Secrets(cause) => {
                tracing::error!(error = %cause, "block secrets");
                "internal error".to_owned()
            }
            Error::Definition(cause) => {
                tracing::error!(error = %cause, "a pinned game definition");
                "internal error".to_owned()
            }
            Error::LogDoesNotHold(why) => {
                tracing::error!(error = %why, "the trail's log does not hold");
                "service unavailable: the trail cannot be extended; nothing was changed".to_owned()
            }
            Error::SalesClosed {
                opens_at_ms: Some(t),
            } => {
                format!("sales are closed until {}", crate::service::rfc3339(*t))
            }
            Error::DemoOnly => "not found".to_owned(),
            other => other.to_string(),
        };
        let mut detail = Map::new();
        let mut retry_after_s = None;
        match &error {
            Error::SessionEnded(end) => {
                detail.insert("reason".to_owned(), json!(end.code()));
            }
            Error::LimitReached {
                amount_cents,
                limit_cents,
                left_cents,
                resets_at_ms,
                ..
            } => {
                detail.insert("amount_cents".to_owned(), json!(amount_cents));
                detail.insert("limit_cents".to_owned(), json!(limit_cents));
                detail.insert("left_cents".to_owned(), json!(left_cents));
                detail.insert("resets_at".to_owned(), json!(resets_at_ms.map(rfc3339)));
            }
            Error::Excluded { until_ms } | Error::ExclusionShorter { until_ms, .. } => {
                detail.insert("excluded_until".to_owned(), json!(rfc3339(*until_ms)));
            }
            Error::VerificationRequired { since_ms, until_ms } => {
                detail.insert("provisional_since".to_owned(), json!(rfc3339(*since_ms)));
                detail.insert("provisional_until".to_owned(), json!(rfc3339(*until_ms)));
            }
            Error::RulesNotAccepted { version } => {
                detail.insert("rules_version".to_owned(), json!(version));
            }
            Error::WithdrawalNotPending { state } => {
                detail.insert("state".to_owned(), json!(state));
            }
            Error::Forbidden { permission } => {
                detail.insert("permission".to_owned(), json!(permission));
            }
            Error::IbanChanged { current, set_at_ms } => {
                detail.insert("iban".to_owned(), json!(current));
                detail.insert("iban_set_at".to_owned(), json!(rfc3339(*set_at_ms)));
            }
            Error::CreditLimit { setting, .. } => {
                detail.insert("setting".to_owned(), json!(setting));
            }
            Error::RateLimited { retry_after_s: s } => retry_after_s = Some(*s),
            Error::MailQuota {
                retry_after_s: s, ..
            } => retry_after_s = Some(*s),
            // Space comes back when an operator frees it: not in a second.
            Error::StorageFull => retry_after_s = Some(30),
            Error::Unavailable(_) => retry_after_s = Some(1),
            _ => {}
        }
        ApiError {
            status,
            code,
            message,
            detail,
            retry_after_s,
        }
    }
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
