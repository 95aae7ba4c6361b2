//! The extractors of the JSON API's requests, whose rejections are API
//! errors: query parameters, an id in the path, a paged list's query (the
//! body's is `body.rs`).

use super::ApiError;
use crate::error::Error;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// `Query` whose rejections are API errors (an unknown or malformed
/// parameter is a validation error naming it).
pub(super) struct Params<T>(pub(super) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Params(value))
            .map_err(|rejection: QueryRejection| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "validation",
                    rejection.body_text(),
                )
            })
    }
}

/// An id in the path (a play's, a withdrawal's, a console's player or
/// block); anything that is not one is not found.
pub(super) struct PathId(pub(super) i64);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(text) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::from(Error::NotFound))?;
        text.parse::<i64>()
            .map(PathId)
            .map_err(|_| Error::NotFound.into())
    }
}

/// The `Idempotency-Key` header of a purchase, if it has one: the handler
/// refuses its absence in its turn (after the throttles). Taken alone, not
/// by copying every header of the request (issue 46).
pub(super) struct IdempotencyHeader(pub(super) Option<HeaderValue>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(IdempotencyHeader(
            parts.headers.get("idempotency-key").cloned(),
        ))
    }
}

/// `?limit=&cursor=` of a paged list (the history, the statement).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PageQuery {
    pub(super) limit: Option<String>,
    pub(super) cursor: Option<String>,
}

impl PageQuery {
    /// The page size (`default` when not given, at most `max`) and the cursor.
    pub(super) fn parse(&self, default: i64, max: i64) -> Result<(i64, Option<i64>), Error> {
        let limit = page_size(self.limit.as_deref(), default, max)?;
        let cursor = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(text) => Some(
                text.parse::<i64>()
                    .map_err(|_| Error::Validation("cursor: not a cursor".to_owned()))?,
            ),
        };
        Ok((limit, cursor))
    }
}

/// A list's `limit`: `default` when not given, else a number from 1 to `max`.
pub(super) fn page_size(text: Option<&str>, default: i64, max: i64) -> Result<i64, Error> {
    let Some(text) = text else {
        return Ok(default);
    };
    text.parse::<i64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| Error::Validation(format!("limit: a number from 1 to {max}")))
}

/// A list's filter: none when absent or empty, else one of `allowed`
/// (`refusal` says which otherwise).
pub(super) fn one_of<'a>(
    text: Option<&'a str>,
    allowed: &[&str],
    refusal: &str,
) -> Result<Option<&'a str>, Error> {
    match text {
        None | Some("") => Ok(None),
        Some(text) if allowed.contains(&text) => Ok(Some(text)),
        Some(_) => Err(Error::Validation(refusal.to_owned())),
    }
}
