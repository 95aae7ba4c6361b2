//! The console's players and money (`docs/CONSOLE.md`): searching players,
//! an account with what its verification reviews, its statement, credits,
//! exclusions, verification (naming the IBAN reviewed), the verification
//! queue, and the withdrawal queue (paged, pending ones oldest first) with
//! its approvals (four eyes: the service refuses an approver who credited
//! or verified the account) and rejections.

use super::AppState;
use super::body::Body;
use super::console_kit::{Answer, Desk, ReasonBody, ok};
use super::extract::{PageQuery, Params, PathId, one_of, page_size};
use crate::account::Iban;
use crate::error::Error;
use crate::protect::ExclusionLength;
use crate::service::{Settlement, rfc3339};
use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchQuery {
    q: Option<String>,
    limit: Option<String>,
}

pub(super) async fn search_players(desk: Desk, Params(query): Params<SearchQuery>) -> Answer {
    let limit = page_size(query.limit.as_deref(), 50, 500)?;
    let name = query.q.as_deref().unwrap_or("");
    let players = desk.service().search_players(name, limit).await?;
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

pub(super) async fn credit(desk: Desk, PathId(id): PathId, Body(b): Body<CreditBody>) -> Answer {
    let player = desk.player(id).await?;
    let balance_cents = desk
        .service()
        .credit_as(desk.actor(), &player, b.amount_cents)
        .await?;
    ok(json!({ "balance_cents": balance_cents }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExcludeBody {
    period: String,
}

pub(super) async fn exclude(desk: Desk, PathId(id): PathId, Body(b): Body<ExcludeBody>) -> Answer {
    let length = ExclusionLength::parse_period(&b.period)?;
    let until_ms = desk
        .service()
        .exclude(&desk.player(id).await?, desk.actor(), length)
        .await?;
    ok(json!({"excluded_until": rfc3339(until_ms), "period": b.period}))
}

/// Suspends the player's account (a reason required, for the staff).
pub(super) async fn suspend_player(
    desk: Desk,
    PathId(id): PathId,
    Body(b): Body<ReasonBody>,
) -> Answer {
    let player = desk.player(id).await?;
    let suspension = desk
        .service()
        .suspend_account(desk.actor(), &player, &b.reason)
        .await?;
    ok(json!({ "suspension": suspension }))
}

/// Lifts the suspension of the player's account (a reason required).
pub(super) async fn unsuspend_player(
    desk: Desk,
    PathId(id): PathId,
    Body(b): Body<ReasonBody>,
) -> Answer {
    let player = desk.player(id).await?;
    desk.service()
        .unsuspend_account(desk.actor(), &player, &b.reason)
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
    desk: Desk,
    PathId(id): PathId,
    Body(b): Body<VerifyBody>,
) -> Answer {
    let reviewed = Iban::parse(&b.iban)?;
    let player = desk.player(id).await?;
    desk.service()
        .verify_account_as(desk.actor(), &player, &reviewed)
        .await?;
    Ok(Json(desk.service().account(&player).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StatusQuery {
    status: Option<String>,
}

pub(super) async fn accounts(desk: Desk, Params(query): Params<StatusQuery>) -> Answer {
    use crate::account::Status;
    let status = one_of(
        query.status.as_deref(),
        &["provisional", "verified", "closed"],
        "status: provisional, verified or closed",
    )?
    .map(Status::parse);
    let (identities, mut documents) = desk
        .service()
        .queue_details(status.map_or("", Status::as_str))
        .await?;
    // Accounts without an identity (the demo's) have nothing to verify.
    let accounts: Vec<Value> = desk
        .service()
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
pub(super) async fn withdrawals(desk: Desk, Params(query): Params<QueueQuery>) -> Answer {
    let page = PageQuery {
        limit: query.limit.clone(),
        cursor: query.cursor.clone(),
    };
    let (limit, cursor) = page.parse(100, 500)?;
    let wanted = one_of(
        query.state.as_deref(),
        &["pending", "paid", "rejected", "cancelled"],
        "state: pending, paid, rejected or cancelled",
    )?;
    let (rows, next_cursor) = desk
        .service()
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

pub(super) async fn approve(desk: Desk, PathId(id): PathId) -> Answer {
    decide(desk, id, Settlement::Paid, None).await
}

pub(super) async fn reject(desk: Desk, PathId(id): PathId, Body(b): Body<ReasonBody>) -> Answer {
    let reason = b.reason.trim().to_owned();
    if reason.is_empty() || reason.chars().count() > 500 {
        return Err(Error::Validation("reason: 1 to 500 characters".to_owned()).into());
    }
    decide(desk, id, Settlement::Rejected, Some(reason)).await
}

/// A withdrawal paid or rejected, answered with its view.
async fn decide(desk: Desk, id: i64, settlement: Settlement, reason: Option<String>) -> Answer {
    let view = desk
        .service()
        .decide_withdrawal_as(desk.actor(), id, settlement, reason)
        .await?;
    Ok(Json(view).into_response())
}
