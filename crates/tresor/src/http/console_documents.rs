//! Identity documents on the console (role `players`, the operator
//! listener only): a player's list, a document opened (`inline`, its own
//! type from its bytes, `nosniff`, a CSP that runs nothing), verified, or
//! refused with a reason the player reads. `docs/CONSOLE.md`, "Identity
//! documents".

use super::AppState;
use super::body::Body;
use super::console_kit::{Answer, Desk, ReasonBody, ok};
use super::extract::PathId;
use crate::service::Review;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use serde_json::json;

/// A document opened in the browser runs nothing and loads nothing but
/// itself; the PDF viewer and an image need no more.
pub const DOCUMENT_CSP: &str = "default-src 'none'; img-src 'self'; object-src 'self'; \
     style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /console/api/players/{id}/documents`: the player's documents.
pub(super) async fn player_documents(State(state): State<AppState>, PathId(id): PathId) -> Answer {
    let player = state.service.player_by_id(id).await?;
    let documents = state.service.staff_documents(player.id).await?;
    ok(json!({ "documents": documents }))
}

/// `GET /console/api/documents/{id}`: the document's bytes, to look at.
pub(super) async fn open_document(State(state): State<AppState>, PathId(id): PathId) -> Answer {
    let (document, bytes) = state.service.document_file(id).await?;
    let extension = match document.content_type.as_str() {
        "image/jpeg" => "jpg",
        "image/png" => "png",
        _ => "pdf",
    };
    let disposition = format!(
        "inline; filename=\"{}-{}.{extension}\"",
        document.document.kind, document.document.id
    );
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_str(&document.content_type).expect("a known content type"),
        ),
        (
            header::CONTENT_DISPOSITION,
            HeaderValue::from_str(&disposition).expect("an ASCII file name"),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(DOCUMENT_CSP),
        ),
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store, private"),
        ),
    ];
    Ok((headers, bytes).into_response())
}

/// `POST /console/api/documents/{id}/verify`.
pub(super) async fn verify_document(desk: Desk, PathId(id): PathId) -> Answer {
    review(desk, id, Review::Verify).await
}

/// `POST /console/api/documents/{id}/refuse` with `{"reason": …}`, which
/// the player reads.
pub(super) async fn refuse_document(
    desk: Desk,
    PathId(id): PathId,
    Body(b): Body<ReasonBody>,
) -> Answer {
    review(desk, id, Review::refuse(&b.reason)?).await
}

/// A document verified or refused, answered with its view.
async fn review(desk: Desk, id: i64, review: Review) -> Answer {
    let view = desk
        .service()
        .review_document_as(desk.actor(), id, review)
        .await?;
    ok(json!({ "document": view }))
}
