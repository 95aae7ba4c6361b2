//! Identity documents (issue 22): the player sends an identity document and
//! a proof that the IBAN is theirs, each a JPEG, PNG or PDF (judged by its
//! bytes), sealed at rest under the secrets key with the document's id as
//! associated data; the console's operator opens, verifies or refuses it
//! with a reason the player reads; a refused document is sent again. The
//! account is verified only once both are verified. Each step is a writer
//! job with its trail record; the bytes never leave through the players'
//! listener.

use super::{Service, rfc3339, sha256_hex};
use crate::account::Status;
use crate::account::documents::{self, DocumentKind, DocumentStatus};
use crate::error::Error;
use crate::model::Player;
use crate::store::Conn;
use crate::store::accounts as accounts_store;
use crate::store::documents::{self as store, DocumentRow, NewDocument};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// What the seal of a document is bound to, beside its id.
const SEAL_PURPOSE: &[u8] = b"identity document";

/// A document as its player sees it: never its bytes.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentView {
    pub id: i64,
    pub kind: String,
    pub name: String,
    pub size_bytes: i64,
    pub uploaded_at: String,
    /// `pending`, `verified` or `refused`.
    pub status: String,
    /// Why it was refused (the operator's words).
    pub reason: Option<String>,
    pub decided_at: Option<String>,
}

impl From<&DocumentRow> for DocumentView {
    fn from(d: &DocumentRow) -> Self {
        DocumentView {
            id: d.id,
            kind: d.kind.clone(),
            // Cleaned again: names stored before format characters were.
            name: documents::display_name(&d.name),
            size_bytes: d.size_bytes,
            uploaded_at: rfc3339(d.uploaded_at_ms),
            status: d.status.clone(),
            reason: d.reason.clone(),
            decided_at: d.decided_at_ms.map(rfc3339),
        }
    }
}

/// A document as the console lists it: the player's view, its type, its
/// SHA-256 and who reviewed it.
#[derive(Debug, Clone, Serialize)]
pub struct StaffDocumentView {
    #[serde(flatten)]
    pub document: DocumentView,
    pub player_id: i64,
    pub content_type: String,
    pub sha256: String,
    pub decided_by: Option<String>,
}

impl From<&DocumentRow> for StaffDocumentView {
    fn from(d: &DocumentRow) -> Self {
        StaffDocumentView {
            document: DocumentView::from(d),
            player_id: d.player_id,
            content_type: d.content_type.clone(),
            sha256: d.sha256.clone(),
            decided_by: d.decided_by.clone(),
        }
    }
}

/// An operator's review of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    Verify,
    /// Refused, for this reason (3 to 500 characters; the player reads it).
    Refuse(String),
}

impl Review {
    pub fn refuse(reason: &str) -> Result<Review, Error> {
        let text = reason.trim();
        if !(3..=500).contains(&text.chars().count()) || text.chars().any(char::is_control) {
            return Err(Error::Validation(
                "reason: 3 to 500 characters, on one line (the player reads it)".to_owned(),
            ));
        }
        Ok(Review::Refuse(text.to_owned()))
    }
}

/// Re-seals document `id` from `key` to `new_key` (a rotation of the
/// secrets key, inside its job).
pub(super) async fn reseal(
    conn: &mut Conn,
    id: i64,
    key: &crate::seal::SecretsKey,
    new_key: &crate::seal::SecretsKey,
) -> Result<(), Error> {
    let (_, sealed) = store::get(conn, id).await?.ok_or(Error::NotFound)?;
    let bytes = key.open_for(SEAL_PURPOSE, id, &sealed)?;
    store::set_sealed(conn, id, new_key.seal_for(SEAL_PURPOSE, id, &bytes)).await
}

/// Whether the latest document of each kind the player sent is verified.
pub(super) async fn all_verified(conn: &mut Conn, player_id: i64) -> Result<bool, Error> {
    for kind in DocumentKind::ALL {
        let latest = store::latest(conn, player_id, kind.as_str()).await?;
        if latest.map(|d| DocumentStatus::parse(&d.status)) != Some(DocumentStatus::Verified) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Refuses (`iban_proof_outdated`) a proof of IBAN checked before the IBAN
/// on file was given (at `iban_set_at_ms`): it proves another IBAN.
pub(super) async fn check_iban_proof_current(
    conn: &mut Conn,
    player_id: i64,
    iban_set_at_ms: i64,
) -> Result<(), Error> {
    let proof = store::latest(conn, player_id, DocumentKind::IbanProof.as_str()).await?;
    let checked_at = proof.as_ref().and_then(|d| d.decided_at_ms);
    match checked_at {
        Some(at) if at >= iban_set_at_ms => Ok(()),
        _ => Err(Error::Document {
            code: "iban_proof_outdated",
            message: format!(
                "the proof of IBAN was checked{} before the IBAN on file was given ({}): it proves another IBAN; review a proof of this one",
                checked_at
                    .map(|at| format!(" at {}", rfc3339(at)))
                    .unwrap_or_default(),
                rfc3339(iban_set_at_ms)
            ),
        }),
    }
}

/// A proof of IBAN sent before the IBAN on file was given is replaced by a
/// new one: refused (if still pending) with a reason the player reads, in
/// the trail as the system's.
async fn replace_outdated_proof(
    conn: &mut Conn,
    player: &Player,
    old: &DocumentRow,
    now_ms: i64,
) -> Result<(), Error> {
    const REASON: &str = "replaced by a proof of the IBAN given since";
    if store::decide(conn, old.id, "refused", "system", Some(REASON), now_ms).await? {
        trail::append(
            conn,
            now_ms,
            &Actor::System,
            "document_refused",
            json!({"document_id": old.id, "player_id": player.id,
                   "username": player.username, "kind": old.kind, "sha256": old.sha256}),
            json!({"status": "refused", "reason": REASON}),
        )
        .await?;
    }
    Ok(())
}

/// Refuses a document of `kind` the account may not send (nothing
/// stored): an account without identity, closed or suspended, or one whose
/// document of this kind waits for review or is verified. A proof of IBAN
/// sent before the IBAN on file was given is replaced.
async fn may_send(
    conn: &mut Conn,
    player: &Player,
    kind: DocumentKind,
    now_ms: i64,
) -> Result<(), Error> {
    crate::store::suspension::refuse_changes(conn, player.id).await?;
    let account = accounts_store::account(conn, player.id).await?;
    if !account.has_identity {
        return Err(Error::Validation(
            "documents are for accounts opened with an identity (not a demo account)".to_owned(),
        ));
    }
    if account.status == Status::Closed {
        return Err(Error::AccountClosed);
    }
    let latest = store::latest(conn, player.id, kind.as_str()).await?;
    // A proof of IBAN sent before the IBAN on file was given
    // proves another: a proof of this one replaces it.
    let outdated = latest.as_ref().filter(|latest| {
        kind == DocumentKind::IbanProof
            && account
                .iban_set_at_ms
                .is_some_and(|set_at| latest.uploaded_at_ms < set_at)
            && DocumentStatus::parse(&latest.status) != DocumentStatus::Refused
    });
    if let Some(old) = outdated {
        replace_outdated_proof(conn, player, old, now_ms).await?;
    } else if let Some(latest) = latest {
        let message = match DocumentStatus::parse(&latest.status) {
            DocumentStatus::Refused => None,
            DocumentStatus::Pending => Some(format!(
                "your {} ({}) is waiting for review: send it again only if it is refused",
                kind_words(kind),
                latest.name
            )),
            DocumentStatus::Verified => {
                Some(format!("your {} is already verified", kind_words(kind)))
            }
        };
        if let Some(message) = message {
            return Err(Error::Document {
                code: "document_already_sent",
                message,
            });
        }
    }
    Ok(())
}

/// The IBAN changed: its proof, if verified, goes back to review (a
/// trail record says so); its id.
pub(super) async fn iban_proof_back_to_review(
    conn: &mut Conn,
    player: &Player,
    now_ms: i64,
) -> Result<Option<i64>, Error> {
    let id = store::back_to_review(conn, player.id, DocumentKind::IbanProof.as_str()).await?;
    if let Some(id) = id {
        trail::append(
            conn,
            now_ms,
            &Actor::System,
            "document_back_to_review",
            json!({"document_id": id, "player_id": player.id, "username": player.username,
                   "kind": DocumentKind::IbanProof.as_str(), "why": "iban_changed"}),
            json!({"status": "pending"}),
        )
        .await?;
    }
    Ok(id)
}

impl Service {
    /// The largest document taken, in bytes.
    pub fn max_document_bytes(&self) -> usize {
        self.settings.max_document_bytes
    }

    /// The player sends a document of `kind`: refused (nothing stored) when
    /// empty, too large, not a JPEG, PNG or PDF by its bytes, when the
    /// account has no identity, is closed or suspended, or while a
    /// document of the same kind waits for review or is verified.
    pub async fn upload_document(
        &self,
        player: &Player,
        kind: DocumentKind,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<DocumentView, Error> {
        let content_type = documents::check_file(&bytes, self.max_document_bytes())?;
        let key = self.secrets_key()?.clone();
        let name = documents::display_name(name);
        let sha256 = sha256_hex(&bytes);
        let bytes = Arc::new(bytes);
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let (player, key, name, sha256, bytes) = (
                player.clone(),
                key.clone(),
                name.clone(),
                sha256.clone(),
                bytes.clone(),
            );
            Box::pin(async move {
                may_send(conn, &player, kind, now_ms).await?;
                let new = NewDocument {
                    player_id: player.id,
                    kind: kind.as_str(),
                    name: &name,
                    content_type,
                    size_bytes: bytes.len() as i64,
                    sha256: &sha256,
                    uploaded_at_ms: now_ms,
                };
                let id = store::insert(conn, &new).await?;
                store::set_sealed(conn, id, key.seal_for(SEAL_PURPOSE, id, &bytes)).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(player.id, &player.username),
                    "document_uploaded",
                    json!({"player_id": player.id, "username": player.username,
                           "kind": kind.as_str(), "name": name,
                           "size_bytes": bytes.len(), "sha256": sha256}),
                    json!({"document_id": id, "content_type": content_type,
                           "status": "pending"}),
                )
                .await?;
                let row = store::latest(conn, player.id, kind.as_str())
                    .await?
                    .ok_or(Error::NotFound)?;
                Ok(DocumentView::from(&row))
            })
        })
        .await
    }

    /// The player's documents, newest first.
    pub async fn documents(&self, player: &Player) -> Result<Vec<DocumentView>, Error> {
        let rows = store::of_player(&mut *self.db.conn().await?, player.id).await?;
        Ok(rows.iter().map(DocumentView::from).collect())
    }

    /// A player's documents as the console lists them, newest first.
    pub async fn staff_documents(&self, player_id: i64) -> Result<Vec<StaffDocumentView>, Error> {
        let rows = store::of_player(&mut *self.db.conn().await?, player_id).await?;
        Ok(rows.iter().map(StaffDocumentView::from).collect())
    }

    /// A document and its bytes, opened with the secrets key (the console
    /// only serves them).
    pub async fn document_file(&self, id: i64) -> Result<(StaffDocumentView, Vec<u8>), Error> {
        let (row, sealed) = store::get(&mut *self.db.conn().await?, id)
            .await?
            .ok_or(Error::NotFound)?;
        let bytes = self.secrets_key()?.open_for(SEAL_PURPOSE, id, &sealed)?;
        Ok((StaffDocumentView::from(&row), bytes))
    }

    /// The operator verifies or refuses a pending document (refused
    /// `document_decided` when it is not pending any more).
    pub async fn review_document_as(
        &self,
        actor: Actor,
        id: i64,
        review: Review,
    ) -> Result<StaffDocumentView, Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let (actor, review) = (actor.clone(), review.clone());
            Box::pin(async move {
                let row = store::of_id(conn, id).await?.ok_or(Error::NotFound)?;
                let (status, reason, action) = match &review {
                    Review::Verify => ("verified", None, "document_verified"),
                    Review::Refuse(reason) => {
                        ("refused", Some(reason.as_str()), "document_refused")
                    }
                };
                if !store::decide(conn, id, status, &actor.label(), reason, now_ms).await? {
                    return Err(Error::Document {
                        code: "document_decided",
                        message: format!(
                            "this document is {} already: only a pending document is reviewed",
                            row.status
                        ),
                    });
                }
                let username = store::username(conn, row.player_id).await?;
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    action,
                    json!({"document_id": id, "player_id": row.player_id,
                           "username": username, "kind": row.kind, "sha256": row.sha256}),
                    json!({"status": status, "reason": reason}),
                )
                .await?;
                let row = store::of_id(conn, id).await?.ok_or(Error::NotFound)?;
                Ok(StaffDocumentView::from(&row))
            })
        })
        .await
    }
}

fn kind_words(kind: DocumentKind) -> &'static str {
    match kind {
        DocumentKind::Identity => "identity document",
        DocumentKind::IbanProof => "proof of IBAN",
    }
}

impl Service {
    /// The identities and the documents of the accounts of `status` (every
    /// account for `""`), by player: the verification queue shows them.
    #[allow(clippy::type_complexity)]
    pub async fn queue_details(
        &self,
        status: &str,
    ) -> Result<
        (
            HashMap<i64, store::IdentityRow>,
            HashMap<i64, Vec<StaffDocumentView>>,
        ),
        Error,
    > {
        let (identities, documents) =
            store::queue_details(&mut *self.db.conn().await?, status).await?;
        let documents = documents
            .into_iter()
            .map(|(player, rows)| (player, rows.iter().map(StaffDocumentView::from).collect()))
            .collect();
        Ok((identities, documents))
    }
}
