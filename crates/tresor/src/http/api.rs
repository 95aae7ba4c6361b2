//! The JSON API under `/api` (SPEC §6) and `/healthz`.

pub(super) use super::body::Body;
use super::origin::Origin;
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::model::Username;
use crate::protect::{ExclusionLength, LimitChange, Limits, LimitsView};
use crate::service::{
    IdempotencyKey, MAX_DEMO_DEPOSIT_CENTS, Me, Player, Purchase, Registration, rfc3339,
};
use crate::trail::Actor;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use std::sync::Arc;
use tower_http::set_header::SetResponseHeaderLayer;
use tresor_game::{Square, island};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tresor_session";
/// The header every state-changing request must carry (CSRF proof): a
/// cross-site form cannot set it, and a cross-site script may not without a
/// CORS preflight this server never grants.
pub const CSRF_HEADER: &str = "x-requested-with";
pub const CSRF_VALUE: &str = "tresor";

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

pub(super) async fn require_csrf_proof(request: Request, next: Next) -> Response {
    match csrf_refusal(&request, CSRF_VALUE) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

/// Why a state-changing `request` is refused as cross-site, or `None`: it
/// must carry `X-Requested-With: {value}` (the game's `tresor`, the
/// console's `tresor-console`), which a cross-site form cannot set.
pub(super) fn csrf_refusal(request: &Request, value: &str) -> Option<Response> {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if safe {
        return None;
    }
    let headers = request.headers();
    let proven = headers
        .get(CSRF_HEADER)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(value.as_bytes()));
    if !proven {
        return Some(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "csrf",
                format!("state-changing requests must carry the header {CSRF_HEADER}: {value}"),
            )
            .into_response(),
        );
    }
    // A second line of defence: what the browser itself says of where the
    // request comes from (clients that send neither header are not browsers).
    cross_site(headers).map(|why| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            format!("cross-site requests are refused: {why}"),
        )
        .into_response()
    })
}

/// Why a request's `Sec-Fetch-Site` or `Origin` says it comes from another
/// site, if either does.
pub(super) fn cross_site(headers: &HeaderMap) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Some(format!("Sec-Fetch-Site is {site}"));
    }
    let origin = headers.get(header::ORIGIN)?.to_str().unwrap_or("null");
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    // The origin's authority (scheme://host[:port]) must be the host asked.
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    match (authority, host) {
        (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host) => None,
        (Some(_), None) => None,
        _ => Some(format!("Origin is {origin}")),
    }
}

/// `Query` whose rejections are API errors (an unknown or malformed
/// parameter is a validation error naming it).
pub(super) struct Params<T>(pub(super) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Params(value))
            .map_err(|rejection: QueryRejection| {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "validation",
                    rejection.body_text(),
                )
            })
    }
}

/// An id in the path (a play's, a withdrawal's, a console's player or
/// block); anything that is not one is not found.
pub(super) struct PathId(pub(super) i64);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(text) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::from(Error::NotFound))?;
        text.parse::<i64>()
            .map(PathId)
            .map_err(|_| Error::NotFound.into())
    }
}

pub(super) fn session_token(headers: &HeaderMap) -> Option<String> {
    super::console_kit::cookie(headers, SESSION_COOKIE)
}

/// The logged-in player of a request; 401 without a live session.
pub(super) struct CurrentPlayer {
    pub(super) player: Player,
}

impl FromRequestParts<AppState> for CurrentPlayer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = session_token(&parts.headers).ok_or(Error::Unauthorized)?;
        let player = state.service.session_player(&token).await?;
        Ok(CurrentPlayer { player })
    }
}

/// The logged-in player of a request that reaches the writer (a throw, a
/// deposit, a cap change, an exclusion): throttled per address before the
/// session is read, then per player.
pub(super) struct ActingPlayer {
    pub(super) player: Player,
}

impl FromRequestParts<AppState> for ActingPlayer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let throttles = throttles_of(parts);
        let Ok(address) = ClientAddress::from_request_parts(parts, state).await;
        throttles.action_by_address(&address)?;
        let CurrentPlayer { player } = CurrentPlayer::from_request_parts(parts, state).await?;
        throttles.action_by_player(player.id)?;
        Ok(ActingPlayer { player })
    }
}

fn throttles_of(parts: &Parts) -> Arc<Throttles> {
    parts
        .extensions
        .get::<Arc<Throttles>>()
        .expect("the router carries its throttles")
        .clone()
}

pub(super) fn session_cookie(state: &AppState, token: &str, max_age_s: i64) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    ))
    .expect("a cookie of hex digits is a valid header")
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

/// `?limit=&cursor=` of a paged list (the history, the statement).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PageQuery {
    pub(super) limit: Option<String>,
    pub(super) cursor: Option<String>,
}

impl PageQuery {
    /// The page size (`default` when not given, at most `max`) and the cursor.
    pub(super) fn parse(&self, default: i64, max: i64) -> Result<(i64, Option<i64>), Error> {
        let limit = match self.limit.as_deref() {
            None => default,
            Some(text) => text
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| Error::Validation(format!("limit: a number from 1 to {max}")))?,
        };
        let cursor = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(text) => Some(
                text.parse::<i64>()
                    .map_err(|_| Error::Validation("cursor: not a cursor".to_owned()))?,
            ),
        };
        Ok((limit, cursor))
    }
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
