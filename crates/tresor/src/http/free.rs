//! `POST /api/free/plays`: a free try of any game (issue 45; docs/GAMES.md,
//! "Free tries"). Free because of this route, never because of anything
//! the client sends; throttled per address on a budget of its own (apart
//! from purchases and actions); open to visitors; refused to a player
//! whose session cookie it is (live, or ended since, as an exclusion ends
//! them) while excluded or whose stake cap is reached. It reads the session
//! without refreshing it: a free try writes nothing at all.

use super::body::Body;
use super::player_session::session_token;
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FreeBody {
    stake_cents: i64,
    /// The game's id (`GET /api/games`); « L'Ile au Trésor » when absent.
    game: Option<String>,
}

pub(super) async fn free_play(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    headers: HeaderMap,
    Body(body): Body<FreeBody>,
) -> Result<Response, ApiError> {
    throttles.free_try(&address)?;
    // A session ended since (an exclusion ends them all) still names its
    // player: only to refuse, never to grant anything.
    let player_id = match session_token(&headers) {
        Some(token) => state.service.free_try_player(&token).await?,
        None => None,
    };
    let free = state
        .service
        .free_play(player_id, body.game.as_deref(), body.stake_cents)
        .await?;
    Ok(Json(free).into_response())
}
