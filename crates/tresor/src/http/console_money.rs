//! The console's players and money (`docs/CONSOLE.md`): searching players,
//! an account with what its verification reviews, its statement, credits,
//! exclusions, verification (naming the IBAN reviewed), the verification
//! queue, and the withdrawal queue (paged, pending ones oldest first) with
//! its approvals (four eyes: the service refuses an approver who credited
//! or verified the account) and rejections.

use super::AppState;
use super::body::Body;
use super::console_kit::{Answer, ok};
use super::extract::{PageQuery, Params, PathId};
use crate::account::Iban;
use crate::error::Error;
use crate::protect::ExclusionLength;
use crate::service::{Settlement, StaffMember, rfc3339};
use axum::extract::State;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchQuery {
    q: Option<String>,
    limit: Option<String>,
}

pub(super) async fn search_players(
    State(state): State<AppState>,
    Params(query): Params<SearchQuery>,
) -> Answer {
    let limit = match query.limit.as_deref() {
        None => 50,
        Some(text) => text
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=500).contains(n))
            .ok_or_else(|| Error::Validation("limit: a number from 1 to 500".to_owned()))?,
    };
    let players = state
        .service
        .search_players(query.q.as_deref().unwrap_or(""), limit)
        .await?;
    ok(json!({ "players": players }))
}

pub(super) async fn player(State(state): State<AppState>, PathId(id): PathId) -> Answer {
    let player = state.service.player_by_id(id).await?;
    let account = state.service.account(&player).await?;
    let row = state.service.account_row(&player).await?;
    let (limits, excluded_until_ms) = state.service.protection(&player).await?;
    let suspension = state.service.suspension(&player).await?;
    // Newest first: the console offers the verification once the latest
    // of each kind is verified.
    let documents = state.service.staff_documents(player.id).await?;
    ok(json!({
        "player": {"id": player.id, "username": player.username},
        "account": account,
        // What the operator reviews before verifying: the whole IBAN
        // (sent back with the verification), when it was given, how many
        // times it changed; who verified; a person's second account.
        "review": {
            "iban": row.iban,
            "iban_set_at": row.iban_set_at_ms.map(rfc3339),
            "iban_changes": row.iban_changes,
            "verified_by": row.verified_by,
            "duplicate_of": row.duplicate_of,
        },
        "limits": limits,
        "exclusion": {"excluded_until": excluded_until_ms.map(rfc3339)},
        // The staff's only: the player is told neutrally.
        "suspension": suspension,
        "documents": documents,
    }))
}

pub(super) async fn statement(
    State(state): State<AppState>,
    PathId(id): PathId,
    Params(query): Params<PageQuery>,
) -> Answer {
    let (limit, cursor) = query.parse(20, 100)?;
    let player = state.service.player_by_id(id).await?;
    Ok(Json(state.service.statement(&player, limit, cursor).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CreditBody {
    amount_cents: i64,
}

pub(super) async fn credit(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
    Body(body): Body<CreditBody>,
) -> Answer {
    let player = state.service.player_by_id(id).await?;
    let balance_cents = state
        .service
        .credit_as(member.actor(), &player, body.amount_cents)
        .await?;
    ok(json!({ "balance_cents": balance_cents }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExcludeBody {
    period: String,
}

pub(super) async fn exclude(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
    Body(body): Body<ExcludeBody>,
) -> Answer {
    let length = ExclusionLength::parse_period(&body.period)?;
    let player = state.service.player_by_id(id).await?;
    let until_ms = state
        .service
        .exclude(&player, member.actor(), length)
        .await?;
    ok(json!({"excluded_until": rfc3339(until_ms), "period": body.period}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReasonBody {
    reason: String,
}

/// Suspends the player's account (a reason required, for the staff).
pub(super) async fn suspend_player(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
    Body(body): Body<ReasonBody>,
) -> Answer {
    let player = state.service.player_by_id(id).await?;
    let suspension = state
        .service
        .suspend_account(member.actor(), &player, &body.reason)
        .await?;
    ok(json!({ "suspension": suspension }))
}

/// Lifts the suspension of the player's account (a reason required).
pub(super) async fn unsuspend_player(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
    Body(body): Body<ReasonBody>,
) -> Answer {
    let player = state.service.player_by_id(id).await?;
    state
        .service
        .unsuspend_account(member.actor(), &player, &body.reason)
        .await?;
    ok(json!({ "suspension": null }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VerifyBody {
    /// The IBAN the operator reviewed (the queue's `iban`).
    iban: String,
}

pub(super) async fn verify_player(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
    Body(body): Body<VerifyBody>,
) -> Answer {
    let reviewed = Iban::parse(&body.iban)?;
    let player = state.service.player_by_id(id).await?;
    state
        .service
        .verify_account_as(member.actor(), &player, &reviewed)
        .await?;
    Ok(Json(state.service.account(&player).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StatusQuery {
    status: Option<String>,
}

pub(super) async fn accounts(
    State(state): State<AppState>,
    Params(query): Params<StatusQuery>,
) -> Answer {
    use crate::account::Status;
    let status = match query.status.as_deref() {
        None | Some("") => None,
        Some(text @ ("provisional" | "verified" | "closed")) => Some(Status::parse(text)),
        Some(_) => {
            return Err(
                Error::Validation("status: provisional, verified or closed".to_owned()).into(),
            );
        }
    };
    let (identities, mut documents) = state
        .service
        .queue_details(status.map_or("", Status::as_str))
        .await?;
    // Accounts without an identity (the demo's) have nothing to verify.
    let accounts: Vec<Value> = state
        .service
        .list_accounts(status)
        .await?
        .into_iter()
        .filter(|a| a.has_identity)
        .map(|a| {
            let identity = identities.get(&a.player_id).map(|i| {
                json!({"birth_name": i.birth_name, "first_names": i.first_names,
                       "birth_date": i.birth_date, "birth_place": i.birth_place,
                       "address": i.address})
            });
            let documents = documents.remove(&a.player_id).unwrap_or_default();
            json!({
                "identity": identity,
                "documents": documents,
                "player_id": a.player_id,
                "username": a.username,
                "status": a.status,
                "has_identity": a.has_identity,
                "iban": a.iban,
                "banned": a.banned,
                "opened_at": rfc3339(a.opened_at_ms),
                "provisional_until": a.provisional_until_ms.map(rfc3339),
                "iban_set_at": a.iban_set_at_ms.map(rfc3339),
                "iban_changes": a.iban_changes,
                "duplicate_of": a.duplicate_of,
            })
        })
        .collect();
    ok(json!({ "accounts": accounts }))
}

// -- Withdrawals ---------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QueueQuery {
    state: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// A page of the withdrawals (100 by default, at most 500): pending ones
/// oldest first, so that the one waiting longest is always on the first
/// page and paging on reaches every one; `next_cursor` for the next page.
pub(super) async fn withdrawals(
    State(state): State<AppState>,
    Params(query): Params<QueueQuery>,
) -> Answer {
    let page = PageQuery {
        limit: query.limit.clone(),
        cursor: query.cursor.clone(),
    };
    let (limit, cursor) = page.parse(100, 500)?;
    let wanted = match query.state.as_deref() {
        None | Some("") => None,
        Some(text @ ("pending" | "paid" | "rejected" | "cancelled")) => Some(text),
        Some(_) => {
            return Err(Error::Validation(
                "state: pending, paid, rejected or cancelled".to_owned(),
            )
            .into());
        }
    };
    let (rows, next_cursor) = state
        .service
        .list_withdrawals(wanted, cursor, limit)
        .await?;
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|w| {
            json!({
                "id": w.id,
                "player_id": w.player_id,
                "username": w.username,
                "amount_cents": w.amount_cents,
                // The operator pays it: the whole IBAN.
                "iban": w.iban,
                "state": w.state,
                "reason": w.reason,
                "closing": w.closing,
                "requested_at": rfc3339(w.requested_at_ms),
                "settled_at": w.settled_at_ms.map(rfc3339),
                // Approving is refused while the account is suspended.
                "suspended": w.suspended_at_ms.is_some(),
                "suspended_at": w.suspended_at_ms.map(rfc3339),
            })
        })
        .collect();
    ok(json!({ "withdrawals": rows, "next_cursor": next_cursor }))
}

pub(super) async fn approve(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
) -> Answer {
    let view = state
        .service
        .decide_withdrawal_as(member.actor(), id, Settlement::Paid, None)
        .await?;
    Ok(Json(view).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RejectBody {
    reason: String,
}

pub(super) async fn reject(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
    Body(body): Body<RejectBody>,
) -> Answer {
    let reason = body.reason.trim().to_owned();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(Error::Validation("reason: 1 to 500 characters".to_owned()).into());
    }
    let view = state
        .service
        .decide_withdrawal_as(member.actor(), id, Settlement::Rejected, Some(reason))
        .await?;
    Ok(Json(view).into_response())
}
