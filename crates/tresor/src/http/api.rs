//! The JSON API under `/api` (SPEC §6) and `/healthz`.

use super::body::Body;
use super::csrf::require_csrf_proof;
use super::extract::{PageQuery, Params, PathId};
use super::origin::Origin;
use super::player_session::{ActingPlayer, CurrentPlayer, session_cookie, session_token};
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::model::Username;
use crate::protect::{ExclusionLength, LimitChange, Limits, LimitsView};
use crate::service::{
    IdempotencyKey, MAX_DEMO_DEPOSIT_CENTS, Me, Player, Purchase, Registration, rfc3339,
};
use crate::trail::Actor;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use tower_http::set_header::SetResponseHeaderLayer;
use tresor_game::{Square, island};

pub fn routes() -> Router<AppState> {
    let api = Router::new()
        .route("/api/status", get(status))
        .route("/api/island", get(island_map))
        .route("/api/games", get(games))
        .route("/api/register", post(register))
        .route("/api/login", post(login))
        .route("/api/logout", post(logout))
        .route("/api/me", get(me))
        .route("/api/demo/deposit", post(demo_deposit))
        .route("/api/plays", post(buy_within_budget).get(history))
        .route("/api/plays/{id}", get(play))
        .route("/api/plays/{id}/throws", post(throw))
        .route("/api/plays/{id}/receipt", get(receipt))
        .route("/api/blocks", get(blocks))
        .route(
            "/api/limits",
            get(limits).put(change_limits).post(change_limits),
        )
        .route("/api/exclusion", post(exclude))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such API endpoint")
        })
        .layer(middleware::from_fn(require_csrf_proof))
        // Answers about a player's account must not linger in any cache.
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(api)
}

async fn status(State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(state.service.status().await?).into_response())
}

async fn island_map() -> Response {
    let map = island();
    // The idle screen shows the totem on the land square nearest the centre.
    let centre = (map.width / 2, map.height / 2);
    let start = map
        .land
        .iter()
        .min_by_key(|Square(x, y)| (x - centre.0).pow(2) + (y - centre.1).pow(2))
        .copied();
    Json(json!({"width": map.width, "height": map.height, "land": map.land, "start": start}))
        .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegisterBody {
    username: String,
    password: String,
    #[serde(default)]
    adult: bool,
    #[serde(default)]
    accept_rules: bool,
    /// The 7-day caps; absent, the defaults (500 € each).
    deposit_limit_cents: Option<i64>,
    stake_limit_cents: Option<i64>,
}

pub(super) async fn logged_in(
    state: &AppState,
    player: &Player,
    origin: Origin,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let token = state.service.open_session_from(player.id, origin.0).await?;
    let me = state.service.me(player).await?;
    let cookie = session_cookie(state, &token, state.service.settings.session_max_s);
    Ok((status, [(header::SET_COOKIE, cookie)], Json(me)).into_response())
}

async fn register(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    origin: Origin,
    Body(body): Body<RegisterBody>,
) -> Result<Response, ApiError> {
    throttles.registration(&address)?;
    // Outside demo mode an account is opened with an identity (/api/account/open).
    if !state.service.is_demo().await? {
        return Err(Error::IdentityRequired.into());
    }
    let registration = Registration::parse(
        &body.username,
        &body.password,
        body.adult,
        body.accept_rules,
    )?
    .with_limits(Limits::parse(
        body.deposit_limit_cents,
        body.stake_limit_cents,
    )?);
    let player = state.service.register(registration).await?;
    logged_in(&state, &player, origin, StatusCode::CREATED).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    username: String,
    password: String,
}

async fn login(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    origin: Origin,
    headers: HeaderMap,
    Body(body): Body<LoginBody>,
) -> Result<Response, ApiError> {
    let failed = |error: &Error| state.metrics.failed_login(error);
    throttles.login(&address).inspect_err(failed)?;
    // Failures are throttled by the name typed (its skeleton) and the
    // address, whether or not the name is an account: the same answers, the
    // same waits, and an owner elsewhere is never kept out.
    let name = Username::normalise(&body.username);
    throttles
        .login_attempt(name.skeleton(), &address, state.service.now_ms())
        .inspect_err(failed)?;
    let player = state
        .service
        .authenticate(&body.username, &body.password)
        .await
        .inspect_err(failed)?;
    throttles.login_succeeded(name.skeleton(), &address);
    // A login always opens a new session; the one this browser had ends.
    if let Some(token) = session_token(&headers) {
        state.service.close_session(&token).await?;
    }
    logged_in(&state, &player, origin, StatusCode::OK).await
}

/// Ends the browser's session. Only a live session reaches the writer: an
/// unknown, ended or garbage cookie is answered after a read, like a live one.
async fn logout(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    throttles.action_by_address(&address)?;
    if let Some(token) = session_token(&headers)
        && let Some(player_id) = state.service.live_session(&token).await?
    {
        throttles.action_by_player(player_id)?;
        state.service.close_session(&token).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, session_cookie(&state, "", 0))],
    )
        .into_response())
}

async fn me(State(state): State<AppState>, current: CurrentPlayer) -> Result<Json<Me>, ApiError> {
    Ok(Json(state.service.me(&current.player).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DepositBody {
    amount_cents: i64,
}

async fn demo_deposit(
    State(state): State<AppState>,
    current: ActingPlayer,
    Body(body): Body<DepositBody>,
) -> Result<Json<Me>, ApiError> {
    if !state.service.is_demo().await? {
        return Err(Error::DemoOnly.into());
    }
    if !(1..=MAX_DEMO_DEPOSIT_CENTS).contains(&body.amount_cents) {
        return Err(Error::Validation(format!(
            "amount_cents: between 1 and {MAX_DEMO_DEPOSIT_CENTS}"
        ))
        .into());
    }
    state
        .service
        .deposit(&current.player, body.amount_cents)
        .await?;
    Ok(Json(state.service.me(&current.player).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuyBody {
    stake_cents: i64,
    /// The game's id (`GET /api/games`); « L'Ile au Trésor » when absent.
    game: Option<String>,
}

/// `GET /api/games`: the catalogue, island first (no login needed).
async fn games(State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(state.service.games().await?).into_response())
}

/// `POST /api/plays` answered within the outage budget, whatever happens
/// behind it (the session's read and refresh, the pool, the writer): past it
/// 503 `unavailable` with `Retry-After: 1`, and the retry under the same
/// `Idempotency-Key` buys once.
async fn buy_within_budget(State(state): State<AppState>, request: Request) -> Response {
    let budget = state.service.settings.outage_budget;
    let answer = axum::handler::Handler::call(buy, request, state.clone());
    match tokio::time::timeout(budget, answer).await {
        Ok(response) => response,
        Err(_) => {
            state.service.writer.stats.over_budget.inc();
            ApiError::from(Error::Unavailable(
                "no answer within the outage budget; try again shortly with the same \
                 Idempotency-Key (the purchase is bought once)",
            ))
            .into_response()
        }
    }
}

async fn buy(
    State(state): State<AppState>,
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    current: CurrentPlayer,
    headers: HeaderMap,
    Body(body): Body<BuyBody>,
) -> Result<Response, ApiError> {
    throttles.purchase(&address, current.player.id)?;
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .ok_or(Error::InvalidIdempotencyKey)?;
    let game = state.service.game(body.game.as_deref())?;
    let purchase = Purchase {
        game,
        stake_cents: state.service.sold_stake(game, body.stake_cents)?,
        idempotency_key: IdempotencyKey::parse(key).map_err(Error::from)?,
    };
    let bought = state.service.buy(&current.player, purchase).await?;
    if !bought.replayed {
        state.metrics.purchases.inc();
    }
    // The purchase knows its play: no need to read it back.
    let play = state.service.bought_view(&current.player, &bought).await?;
    Ok((StatusCode::CREATED, Json(play)).into_response())
}

async fn play(
    State(state): State<AppState>,
    current: CurrentPlayer,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    Ok(Json(state.service.play(&current.player, id).await?).into_response())
}

/// The receipt of a play's purchase in the signed log, against its log's
/// latest checkpoint (docs/AUDIT.md, "Receipts"); 404 when it has none.
async fn receipt(
    State(state): State<AppState>,
    current: CurrentPlayer,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    match state.service.play_receipt(&current.player, id).await? {
        Some(receipt) => Ok(Json(receipt).into_response()),
        None => Err(Error::NotFound.into()),
    }
}

async fn throw(
    State(state): State<AppState>,
    current: ActingPlayer,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let play = state.service.throw(&current.player, id).await?;
    state.metrics.throws.inc();
    if play.throws_left == 0 && play.outcome.prize_cents > 0 {
        state
            .metrics
            .wins_paid_cents
            .inc_by(play.outcome.prize_cents as u64);
    }
    Ok(Json(play).into_response())
}

async fn history(
    State(state): State<AppState>,
    current: CurrentPlayer,
    Params(query): Params<PageQuery>,
) -> Result<Response, ApiError> {
    let (limit, cursor) = query.parse(20, 100)?;
    Ok(Json(
        state
            .service
            .history(&current.player, limit, cursor)
            .await?,
    )
    .into_response())
}

async fn limits(
    State(state): State<AppState>,
    current: CurrentPlayer,
) -> Result<Json<LimitsView>, ApiError> {
    Ok(Json(state.service.protection(&current.player).await?.0))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsBody {
    deposit_limit_cents: Option<i64>,
    stake_limit_cents: Option<i64>,
}

async fn change_limits(
    State(state): State<AppState>,
    current: ActingPlayer,
    Body(body): Body<LimitsBody>,
) -> Result<Json<LimitsView>, ApiError> {
    let change = LimitChange::parse(body.deposit_limit_cents, body.stake_limit_cents)?;
    Ok(Json(
        state.service.change_limits(&current.player, change).await?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExclusionBody {
    period: String,
}

async fn exclude(
    State(state): State<AppState>,
    current: ActingPlayer,
    Body(body): Body<ExclusionBody>,
) -> Result<Response, ApiError> {
    let length = ExclusionLength::parse_period(&body.period)?;
    let player = &current.player;
    let until_ms = state
        .service
        .exclude(player, Actor::player(player.id, &player.username), length)
        .await?;
    // Every session of the player has ended: the cookie goes too.
    Ok((
        [(header::SET_COOKIE, session_cookie(&state, "", 0))],
        Json(json!({"excluded_until": rfc3339(until_ms), "period": body.period})),
    )
        .into_response())
}

async fn blocks(State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(json!({"blocks": state.service.public_blocks().await?})).into_response())
}
