//! The console's site settings (role `site`): when sales open, the
//! announcement shown to players, and the national ban list's import.

use super::AppState;
use super::body::Body;
use super::console_kit::{Answer, Desk, ok};
use crate::error::Error;
use crate::service::parse_rfc3339;
use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

pub(super) async fn site(State(state): State<AppState>) -> Answer {
    ok(state.service.site().await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SalesBody {
    opens_at: Option<String>,
}

pub(super) async fn set_sales(desk: Desk, Body(body): Body<SalesBody>) -> Answer {
    let opens_at_ms = body
        .opens_at
        .as_deref()
        .map(parse_rfc3339)
        .transpose()
        .map_err(|_| Error::Validation("opens_at: an RFC 3339 time, or null".to_owned()))?;
    let service = desk.service();
    service
        .set_sales_open_at_as(desk.actor(), opens_at_ms)
        .await?;
    ok(service.site().await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnnouncementBody {
    message: Option<String>,
}

pub(super) async fn set_announcement(desk: Desk, Body(b): Body<AnnouncementBody>) -> Answer {
    let service = desk.service();
    service.set_announcement_as(desk.actor(), b.message).await?;
    ok(service.site().await?)
}

/// The largest ban list the console takes: 32 MiB of JSON.
pub(super) const BAN_LIST_LIMIT: usize = 32 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BanListBody {
    /// The list as CSV: `birth_name,first_names,birth_date`.
    csv: String,
}

/// Replaces the national ban list in force (`tresor banlist import`).
pub(super) async fn import_ban_list(desk: Desk, Body(body): Body<BanListBody>) -> Answer {
    let import = desk
        .service()
        .import_ban_list_as(desk.actor(), &body.csv)
        .await?;
    ok(json!({
        "version": import.version,
        "entries": import.entries,
        "sha256": import.sha256,
        "banned": import.banned,
        "lifted": import.lifted,
    }))
}
