//! The transparency log, published on the players' listener for anyone to
//! keep (docs/AUDIT.md, "The log"): `GET /log/` (the keys and the logs),
//! `GET /log/<writer>/checkpoint` (the latest signed checkpoint, never
//! cached) and `GET /log/<writer>/tile/<L>/<N>[.p/<W>]` (C2SP tlog-tiles
//! hash tiles: a full tile never changes, a partial one is replaced as the
//! log grows), `GET /log/<writer>/cosigned` (the latest checkpoint with its
//! witnesses' cosignature lines) and `POST /log/<writer>/cosignature` (a
//! witness sends one: C2SP tlog-cosignature). Never the entries: they hold
//! personal data.

use super::body::Body;
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/log", get(index))
        .route("/log/", get(index))
        .route("/log/{writer}/checkpoint", get(checkpoint))
        .route("/log/{writer}/cosigned", get(cosigned))
        .route("/log/{writer}/cosignature", post(cosignature))
        .route("/log/{writer}/tile/{*path}", get(tile))
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))],
        format!("{what}\n"),
    )
        .into_response()
}

/// Anyone may read the log from any page: it is public by design.
fn public(mut response: Response, cache: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

async fn index(State(state): State<AppState>) -> Response {
    match state.service.log_index().await {
        Ok(index) => public(Json(index).into_response(), "no-cache"),
        Err(error) => ApiError::from(error).into_response(),
    }
}

async fn checkpoint(State(state): State<AppState>, Path(writer): Path<String>) -> Response {
    let note = state.service.log_checkpoint(&writer).await;
    public_note(note, "no such log")
}

async fn cosigned(State(state): State<AppState>, Path(writer): Path<String>) -> Response {
    let note = state.service.log_cosigned(&writer).await;
    public_note(note, "no cosigned checkpoint of this log")
}

/// A signed note of a log (its checkpoint, cosigned or not) as plain text,
/// revalidated at each read; `missing` when the log has none.
fn public_note(note: Result<Option<String>, Error>, missing: &str) -> Response {
    match note {
        Ok(Some(note)) => {
            let text = HeaderValue::from_static("text/plain; charset=utf-8");
            public(
                ([(header::CONTENT_TYPE, text)], note).into_response(),
                "no-cache",
            )
        }
        Ok(None) => not_found(missing),
        Err(error) => ApiError::from(error).into_response(),
    }
}

/// A witness's cosignature: its line and the size of the checkpoint it
/// cosigned.
#[derive(Debug, serde::Deserialize)]
struct Cosignature {
    size: u64,
    cosignature: String,
}

/// Throttled per address before the body is even parsed: anyone may post.
async fn cosignature(
    State(state): State<AppState>,
    Extension(throttles): Extension<std::sync::Arc<Throttles>>,
    address: ClientAddress,
    Path(writer): Path<String>,
    body: Result<Body<Cosignature>, ApiError>,
) -> Response {
    if let Err(error) = throttles.cosignature(&address) {
        return ApiError::from(error).into_response();
    }
    let body = match body {
        Ok(Body(body)) => body,
        Err(rejection) => return rejection.into_response(),
    };
    match state
        .service
        .log_cosign(&writer, body.size, &body.cosignature)
        .await
    {
        Ok(()) => (
            StatusCode::NO_CONTENT,
            [(header::CACHE_CONTROL, "no-store")],
        )
            .into_response(),
        Err(error) => ApiError::from(error).into_response(),
    }
}

async fn tile(
    State(state): State<AppState>,
    Path((writer, path)): Path<(String, String)>,
) -> Response {
    match state
        .service
        .log_tile(&writer, &format!("tile/{path}"))
        .await
    {
        Ok(Some(tile)) => public(
            (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                )],
                tile.data,
            )
                .into_response(),
            if tile.full {
                "public, max-age=31536000, immutable"
            } else {
                "public, max-age=5"
            },
        ),
        Ok(None) => not_found("no such tile: a hash tile within the log's latest checkpoint"),
        Err(error) => ApiError::from(error).into_response(),
    }
}
