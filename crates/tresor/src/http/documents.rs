//! The player's identity documents on the players' listener
//! (`docs/ACCOUNT.md`, "Identity documents"): `POST
//! /api/account/documents?kind=&name=` takes the file as the request's
//! body (up to the installation's limit, outside the site's 64 KiB), `GET
//! /api/account/documents` lists them. A document's bytes are never served
//! here: the console's listener alone opens them (`console_documents.rs`).

use super::api::{ActingPlayer, CurrentPlayer, Params, require_csrf_proof};
use super::{ApiError, AppState};
use crate::account::documents::{DocumentKind, too_large};
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/account/documents", post(upload).get(list))
        // The handler reads the body up to the installation's limit itself.
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn(require_csrf_proof))
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
    State(state): State<AppState>,
    acting: ActingPlayer,
    Params(query): Params<UploadQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    let kind = DocumentKind::parse(&query.kind)?;
    let max = state.service.max_document_bytes();
    let bytes = axum::body::to_bytes(body, max.saturating_add(1))
        .await
        .map_err(|_| too_large(max))?;
    let view = state
        .service
        .upload_document(
            &acting.player,
            kind,
            query.name.as_deref().unwrap_or(""),
            bytes.to_vec(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

async fn list(
    State(state): State<AppState>,
    current: CurrentPlayer,
) -> Result<Json<serde_json::Value>, ApiError> {
    let documents = state.service.documents(&current.player).await?;
    Ok(Json(json!({
        "documents": documents,
        "max_bytes": state.service.max_document_bytes(),
    })))
}
