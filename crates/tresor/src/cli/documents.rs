//! The operator's commands for the identity documents players send:
//! `document list|show|verify|refuse`, the command line's side of the
//! console's verification queue (an installation run from the command line
//! verifies accounts too, and `account verify` needs both documents
//! verified). Every review is recorded in the trail as the operator's.

use super::Usage;
use super::accounts::{refusal, service};
use super::db::{DbArgs, ListArgs};
use crate::service::Review;
use crate::trail::Actor;
use anyhow::Context;
use clap::Subcommand;
use std::io::Write;
use std::path::PathBuf;

/// `tresor document`.
#[derive(Debug, Subcommand)]
pub enum DocumentCommand {
    /// List a player's documents, newest first.
    List {
        /// The player's username.
        #[arg(long)]
        username: String,
        #[command(flatten)]
        list: ListArgs,
    },
    /// Write a document's file, opened with the secrets key, to a new file
    /// (made 0600; never overwritten), to look at it before reviewing.
    Show {
        /// The document's id (`document list` shows it).
        id: i64,
        /// Where to write it.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Verify a pending document.
    Verify {
        /// The document's id.
        id: i64,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Refuse a pending document; the player reads the reason and may send
    /// another.
    Refuse {
        /// The document's id.
        id: i64,
        /// Why (3 to 500 characters, shown to the player).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        db: DbArgs,
    },
}

pub async fn run_document(command: DocumentCommand) -> anyhow::Result<()> {
    match command {
        DocumentCommand::List {
            username,
            list: ListArgs { json, db },
        } => {
            let service = service(&db).await?;
            let player = service
                .player_by_username(&username)
                .await
                .map_err(|_| Usage(format!("no player named {username}")))?;
            let documents = service.staff_documents(player.id).await.map_err(refusal)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&documents)?);
                return Ok(());
            }
            if documents.is_empty() {
                println!("{username} has sent no document");
            }
            for d in &documents {
                let view = &d.document;
                println!(
                    "{:>6}  {:<10} {:<9} {:>9} B  {}  {}{}",
                    view.id,
                    view.kind,
                    view.status,
                    view.size_bytes,
                    view.uploaded_at,
                    view.name,
                    view.reason
                        .as_deref()
                        .map(|r| format!("  (refused: {r})"))
                        .unwrap_or_default()
                );
            }
        }
        DocumentCommand::Show { id, out, db } => {
            let service = service(&db).await?;
            let (view, bytes) = service.document_file(id).await.map_err(refusal)?;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options
                .open(&out)
                .with_context(|| format!("cannot create {} (it must not exist)", out.display()))?;
            file.write_all(&bytes)
                .with_context(|| format!("cannot write {}", out.display()))?;
            println!(
                "document {id} ({}, {}, {} bytes, SHA-256 {}) written to {}",
                view.document.kind,
                view.content_type,
                bytes.len(),
                view.sha256,
                out.display()
            );
        }
        DocumentCommand::Verify { id, db } => {
            let service = service(&db).await?;
            let view = service
                .review_document_as(Actor::Operator, id, Review::Verify)
                .await
                .map_err(refusal)?;
            println!("document {id} ({}) is verified", view.document.kind);
        }
        DocumentCommand::Refuse { id, reason, db } => {
            let review = Review::refuse(&reason).map_err(|e| Usage(format!("--{e}")))?;
            let service = service(&db).await?;
            let view = service
                .review_document_as(Actor::Operator, id, review)
                .await
                .map_err(refusal)?;
            println!(
                "document {id} ({}) is refused; the player may send another",
                view.document.kind
            );
        }
    }
    Ok(())
}
