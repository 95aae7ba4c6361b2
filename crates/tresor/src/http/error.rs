//! The one error type at the HTTP edge: each refusal maps to a status and a
//! stable `code`; internal failures are logged with their cause and never
//! shown to the client.

use crate::error::Error;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error as the API answers it: `{"error": {"code", "message"}}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
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
            Error::InsufficientFunds { .. } => (StatusCode::PAYMENT_REQUIRED, "insufficient_funds"),
            Error::SalesClosed { .. } => (StatusCode::FORBIDDEN, "sales_closed"),
            Error::SoldOut => (StatusCode::CONFLICT, "sold_out"),
            Error::PlayFinished => (StatusCode::CONFLICT, "play_finished"),
            Error::IdempotencyConflict => (StatusCode::CONFLICT, "idempotency_conflict"),
            Error::InvalidIdempotencyKey => (StatusCode::BAD_REQUEST, "invalid_idempotency_key"),
            Error::DemoOnly => (StatusCode::NOT_FOUND, "not_found"),
            Error::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Error::Database(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        let message = match &error {
            Error::Database(cause) => {
                tracing::error!(error = %cause, "database error");
                "internal error".to_owned()
            }
            Error::SalesClosed {
                opens_at_ms: Some(t),
            } => {
                format!("sales are closed until {}", crate::service::rfc3339(*t))
            }
            Error::DemoOnly => "not found".to_owned(),
            other => other.to_string(),
        };
        ApiError {
            status,
            code,
            message,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response()
    }
}
