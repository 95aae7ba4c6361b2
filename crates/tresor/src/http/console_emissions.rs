//! The console's emissions and blocks: listing them (role `dashboard`),
//! creating and closing an emission, suspending and resuming a block (role
//! `emissions`), re-checking a block against its commitment (role `trail`).

use super::body::Body;
use super::console_kit::{Answer, Desk, ok};
use super::extract::PathId;
use super::{ApiError, AppState};
use crate::error::Error;
use crate::service::{BlockView, EmissionView, Service};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::{Value, json};

fn block_json(block: &BlockView) -> Value {
    json!({
        "id": block.id,
        "emission_id": block.emission,
        "game": block.game,
        "stake_cents": block.stake_cents,
        "state": block.state,
        "sold": block.units_sold,
        "size": block.units_per_block,
        "commitment": block.commitment,
        "secret": block.secret,
    })
}

async fn emission_json(service: &Service, id: i64) -> Result<Value, ApiError> {
    Ok(emission_value(&service.emission(id).await?))
}

fn emission_value(emission: &EmissionView) -> Value {
    json!({
        "id": emission.id,
        "name": emission.name,
        "game": emission.game,
        "game_sha256": emission.game_sha256,
        "state": emission.state,
        "created_at": emission.created_at,
        "blocks": emission.blocks.iter().map(block_json).collect::<Vec<_>>(),
    })
}

pub(super) async fn emissions(State(state): State<AppState>) -> Answer {
    let emissions = state.service.emissions().await?;
    let list: Vec<Value> = emissions.iter().map(emission_value).collect();
    ok(json!({ "emissions": list }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EmissionBody {
    stake_cents: i64,
    blocks: u32,
    name: Option<String>,
    /// The game's id in the catalogue; « L'Ile au Trésor » when absent.
    game: Option<String>,
}

pub(super) async fn create_emission(desk: Desk, Body(body): Body<EmissionBody>) -> Answer {
    let service = desk.service();
    let game = service.game(body.game.as_deref())?;
    let stake_cents = service.sold_stake(game, body.stake_cents)?;
    let name = body.name.unwrap_or_else(|| "Emission".to_owned());
    if name.trim().is_empty() || name.chars().count() > 100 {
        return Err(Error::Validation("name: 1 to 100 characters".to_owned()).into());
    }
    let (actor, stakes) = (desk.actor(), [stake_cents]);
    let id = service
        .create_game_emission(actor, &name, game.id(), &stakes, body.blocks)
        .await?;
    Ok((StatusCode::CREATED, Json(emission_json(service, id).await?)).into_response())
}

pub(super) async fn close_emission(desk: Desk, PathId(id): PathId) -> Answer {
    desk.service().close_emission_as(desk.actor(), id).await?;
    ok(emission_json(desk.service(), id).await?)
}

pub(super) async fn blocks(State(state): State<AppState>) -> Answer {
    let blocks = state.service.blocks().await?;
    ok(json!({"blocks": blocks.iter().map(block_json).collect::<Vec<_>>()}))
}

async fn block_answer(service: &Service, id: i64) -> Answer {
    ok(block_json(&service.block(id).await?))
}

pub(super) async fn suspend_block(desk: Desk, PathId(id): PathId) -> Answer {
    desk.service().suspend_block_as(desk.actor(), id).await?;
    block_answer(desk.service(), id).await
}

pub(super) async fn resume_block(desk: Desk, PathId(id): PathId) -> Answer {
    desk.service().resume_block_as(desk.actor(), id).await?;
    block_answer(desk.service(), id).await
}

pub(super) async fn recheck(State(state): State<AppState>, PathId(id): PathId) -> Answer {
    Ok(Json(state.service.recheck_block(id).await?).into_response())
}
