//! The JSON API under `/api` (SPEC §6) and `/healthz`.

use super::body::Body;
use super::console_kit::Answer;
use super::extract::{IdempotencyHeader, PageQuery, Params, PathId};
use super::origin::Origin;
use super::player_session::{
    ActingPlayer, BuyingPlayer, CurrentPlayer, session_cookie, session_token,
};
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::model::Username;
use crate::protect::{ExclusionLength, LimitChange, Limits, LimitsView};
use crate::service::{
    IdempotencyKey, MAX_DEMO_DEPOSIT_CENTS, Me, Player, Purchase, Registration, Service, rfc3339,
};
use crate::trail::Actor;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
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
        .route("/api/free/plays", post(super::free::free_play))
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
        });
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

/// A new player's request (a demo player registered, an account opened):
/// the client's address under the registration throttle, and where the new
/// player's first session opens from.
#[derive(FromRequestParts)]
#[from_request(state(AppState))]
pub(super) struct Newcomer {
    #[from_request(via(State))]
    state: AppState,
    #[from_request(via(Extension))]
    throttles: Arc<Throttles>,
    address: ClientAddress,
    origin: Origin,
}

impl Newcomer {
    /// The service, once the address may register one more player.
    pub(super) fn admit(&self) -> Result<&Service, ApiError> {
        self.throttles.registration(&self.address)?;
        Ok(&self.state.service)
    }

    /// The new `player` logged in: its first session's cookie and `me`, 201.
    pub(super) async fn logged_in(self, player: &Player) -> Result<Response, ApiError> {
        logged_in(&self.state, player, self.origin, StatusCode::CREATED).await
    }
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
    newcomer: Newcomer,
    Body(body): Body<RegisterBody>,
) -> Result<Response, ApiError> {
    let service = newcomer.admit()?;
    // Outside demo mode an account is opened with an identity (/api/account/open).
    if !service.is_demo().await? {
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
    let player = service.register(registration).await?;
    newcomer.logged_in(&player).await
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

async fn me(me: CurrentPlayer) -> Result<Json<Me>, ApiError> {
    Ok(Json(me.service().me(&me.player).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DepositBody {
    amount_cents: i64,
}

async fn demo_deposit(
    me: ActingPlayer,
    Body(body): Body<DepositBody>,
) -> Result<Json<Me>, ApiError> {
    let service = me.service();
    if !service.is_demo().await? {
        return Err(Error::DemoOnly.into());
    }
    if !(1..=MAX_DEMO_DEPOSIT_CENTS).contains(&body.amount_cents) {
        return Err(Error::Validation(format!(
            "amount_cents: between 1 and {MAX_DEMO_DEPOSIT_CENTS}"
        ))
        .into());
    }
    service.deposit(&me.player, body.amount_cents).await?;
    Ok(Json(service.me(&me.player).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuyBody {
    stake_cents: i64,
    /// The game's id (`GET /api/games`); « L'Ile au Trésor » when absent.
    game: Option<String>,
}

/// `GET /api/games`: the catalogue, island first (no login needed), each
/// game with its odds sheet (`service/sheets.rs`).
async fn games(State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(state.service.games_with_sheets().await?).into_response())
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
    Extension(throttles): Extension<Arc<Throttles>>,
    address: ClientAddress,
    current: BuyingPlayer,
    IdempotencyHeader(key): IdempotencyHeader,
    Body(body): Body<BuyBody>,
) -> Answer {
    let state = &current.state;
    let player = &current.buyer.player;
    throttles.purchase(&address, player.id)?;
    let key = key
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .ok_or(Error::InvalidIdempotencyKey)?;
    let game = state.service.game(body.game.as_deref())?;
    let purchase = Purchase {
        game,
        stake_cents: state.service.sold_stake(game, body.stake_cents)?,
        idempotency_key: IdempotencyKey::parse(key).map_err(Error::from)?,
    };
    let bought = state
        .service
        .buy_in_session(&current.buyer, purchase)
        .await?;
    if !bought.replayed {
        state.metrics.purchases.inc();
    }
    // The purchase knows its play: no need to read it back.
    let play = state.service.bought_view(player, &bought).await?;
    Ok((StatusCode::CREATED, Json(play)).into_response())
}

async fn play(me: CurrentPlayer, PathId(id): PathId) -> Answer {
    Ok(Json(me.service().play(&me.player, id).await?).into_response())
}

/// The receipt of a play's purchase in the signed log, against its log's
/// latest checkpoint (docs/AUDIT.md, "Receipts"); 404 when it has none.
async fn receipt(me: CurrentPlayer, PathId(id): PathId) -> Answer {
    match me.service().play_receipt(&me.player, id).await? {
        Some(receipt) => Ok(Json(receipt).into_response()),
        None => Err(Error::NotFound.into()),
    }
}

async fn throw(me: ActingPlayer, PathId(id): PathId) -> Answer {
    let play = me.service().throw(&me.player, id).await?;
    let metrics = &me.state.metrics;
    metrics.throws.inc();
    if play.throws_left == 0 && play.outcome.prize_cents > 0 {
        metrics
            .wins_paid_cents
            .inc_by(play.outcome.prize_cents as u64);
    }
    Ok(Json(play).into_response())
}

async fn history(me: CurrentPlayer, Params(query): Params<PageQuery>) -> Answer {
    let (limit, cursor) = query.parse(20, 100)?;
    Ok(Json(me.service().history(&me.player, limit, cursor).await?).into_response())
}

async fn limits(me: CurrentPlayer) -> Result<Json<LimitsView>, ApiError> {
    Ok(Json(me.service().protection(&me.player).await?.0))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsBody {
    deposit_limit_cents: Option<i64>,
    stake_limit_cents: Option<i64>,
}

async fn change_limits(
    me: ActingPlayer,
    Body(body): Body<LimitsBody>,
) -> Result<Json<LimitsView>, ApiError> {
    let change = LimitChange::parse(body.deposit_limit_cents, body.stake_limit_cents)?;
    Ok(Json(me.service().change_limits(&me.player, change).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExclusionBody {
    period: String,
}

async fn exclude(me: ActingPlayer, Body(body): Body<ExclusionBody>) -> Answer {
    let length = ExclusionLength::parse_period(&body.period)?;
    let player = &me.player;
    let actor = Actor::player(player.id, &player.username);
    let until_ms = me.service().exclude(player, actor, length).await?;
    // Every session of the player has ended: the cookie goes too.
    Ok((
        [(header::SET_COOKIE, session_cookie(&me.state, "", 0))],
        Json(json!({"excluded_until": rfc3339(until_ms), "period": body.period})),
    )
        .into_response())
}

async fn blocks(State(state): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(json!({"blocks": state.service.public_blocks().await?})).into_response())
}
