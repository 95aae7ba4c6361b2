//! The JSON body every handler reads ([`Body`]): `Json` whose refusals are
//! API errors, and whose strings hold no control character (refused 422
//! `control_character` before the handler runs: `controls.rs`).

use super::ApiError;
use super::controls::{control_path, json_holds_control, refusal};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection};
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

/// `Json` whose rejections are API errors. Every body type denies unknown
/// fields: a misspelt field (`deposit_limit`) is refused with its name rather
/// than silently replaced by a default. A string holding a control
/// character (a NUL, say), nested or a key, is refused whatever the field.
pub(super) struct Body<T>(pub(super) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        // Read as `Json` reads it (the same refusals, in the same order but
        // that a body that cannot be read is told first), without copying
        // the request's head to give `Json` a request of its own.
        let json = json_content_type(request.headers());
        let bytes = Bytes::from_request(request, state).await.map_err(unread)?;
        if !json {
            return Err(not_json());
        }
        let Json(value) = Json::<T>::from_bytes(&bytes).map_err(refused)?;
        // Once, on the raw bytes: a refusal alone parses them again to say
        // where the control character is.
        if json_holds_control(&bytes) {
            let path = serde_json::from_slice(&bytes)
                .ok()
                .and_then(|value| control_path(&value));
            return Err(refusal(path.as_deref().unwrap_or("the body")));
        }
        Ok(Body(value))
    }
}

/// Whether the request says its body is JSON, as axum's `Json` decides it:
/// `application/json`, or `application/…+json`, with any parameters.
fn json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<mime::Mime>().ok())
        .is_some_and(|mime| {
            mime.type_() == "application"
                && (mime.subtype() == "json" || mime.suffix().is_some_and(|name| name == "json"))
        })
}

fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_json",
        "the body must be JSON, with Content-Type: application/json",
    )
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        "the request body is too large (64 KiB at most; a ban list import, 32 MiB)",
    )
}

/// A body that could not be read (too large, cut).
fn unread(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large();
    }
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_json",
        rejection.body_text(),
    )
}

fn refused(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(error) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            error.body_text(),
        ),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        JsonRejection::MissingJsonContentType(_) => not_json(),
        other => ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", other.body_text()),
    }
}
