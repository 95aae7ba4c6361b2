//! The player's identity documents on the players' listener
//! (`docs/ACCOUNT.md`, "Identity documents"): `POST
//! /api/account/documents?kind=&name=` takes the file as the request's
//! body (up to the installation's limit, outside the site's 64 KiB), `GET
//! /api/account/documents` lists them. A document's bytes are never served
//! here: the console's listener alone opens them (`console_documents.rs`).
//! Every answer is `Cache-Control: no-store`; a body announced over the
//! limit is refused at once (413), before any of it is read.

use super::extract::Params;
use super::player_session::{ActingPlayer, CurrentPlayer};
use super::{ApiError, AppState};
use crate::account::documents::{DocumentKind, too_large};
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

pub fn routes() -> Router<AppState> {
    // The CSRF proof and `no-store` (a player's documents, names, refusal
    // reasons, are no cache's) are the gate's, as for every `/api/` route.
    Router::new()
        .route("/api/account/documents", post(upload).get(list))
        // The handler reads the body up to the installation's limit itself
        // (the gate's 64 KiB spares this route).
        .layer(DefaultBodyLimit::disable())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadQuery {
    kind: String,
    name: Option<String>,
}

/// The file is the body, whatever its `Content-Type`: its type is read
/// from its bytes. Refused, with nothing stored: an unknown kind (422
/// `document_kind`), an empty file (400 `document_empty`), a file over the
/// limit (413 `document_too_large`), neither JPEG, PNG nor PDF (415
/// `document_type`), a kind already waiting or verified (409
/// `document_already_sent`).
async fn upload(
    acting: ActingPlayer,
    Params(query): Params<UploadQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let kind = DocumentKind::parse(&query.kind)?;
    let max = acting.service().max_document_bytes();
    // A length announced over the limit is refused at once, before any of
    // the body is waited for (issue 32: it waited for the 30 s timeout).
    if announced_length(&headers).is_some_and(|length| length > max as u64) {
        return Err(too_large(max).into());
    }
    let bytes = axum::body::to_bytes(body, max.saturating_add(1))
        .await
        .map_err(|_| too_large(max))?;
    let name = query.name.as_deref().unwrap_or("");
    let view = acting
        .service()
        .upload_document(&acting.player, kind, name, bytes.to_vec())
        .await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// The body's length as the request announces it (`Content-Length`), if
/// it does in digits.
fn announced_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

async fn list(me: CurrentPlayer) -> Result<Json<serde_json::Value>, ApiError> {
    let documents = me.service().documents(&me.player).await?;
    let max_bytes = me.service().max_document_bytes();
    Ok(Json(
        json!({ "documents": documents, "max_bytes": max_bytes }),
    ))
}
