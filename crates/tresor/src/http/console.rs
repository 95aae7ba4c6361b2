//! The operator's console API, `/console/api/…` on the operator listener
//! (`docs/CONSOLE.md`): staff log in with a password and a TOTP code, get a
//! session of their own (cookie `tresor_console`, path `/console`), and each
//! endpoint needs one permission of their role. Every action goes through the
//! service's operator methods with the actor `staff:NAME`, so it is in the
//! trail under that name; a refusal of the role is in the trail too.

use super::api::{Body, PageQuery, Params, PathId};
use super::throttle::{ClientAddress, Throttles};
use super::{ApiError, AppState};
use crate::error::Error;
use crate::protect::ExclusionLength;
use crate::service::{
    BlockView, Dashboard, Settlement, StaffMember, os_random_32, parse_rfc3339, rfc3339,
};
use crate::staff::{self, Permission, TOTP_SECRET_LEN};
use axum::body::Body as ResponseBody;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tresor_game::Stake;

/// The console session's cookie.
pub const CONSOLE_COOKIE: &str = "tresor_console";
/// The cookie between the password and the code (5 minutes).
pub const PENDING_COOKIE: &str = "tresor_console_pending";
/// The CSRF header's value on the console (the players' is `tresor`).
pub const CONSOLE_CSRF_VALUE: &str = "tresor-console";
const PENDING_MS: i64 = 5 * 60 * 1000;
/// At most this many logins waiting for their code; the oldest go first.
const MAX_PENDING: usize = 10_000;

/// A password given right, waiting for its code.
#[derive(Debug, Clone)]
struct Pending {
    member: StaffMember,
    /// The secret shown for enrolment, kept only if its code comes.
    enrolling: Option<Vec<u8>>,
    expires_at_ms: i64,
}

/// What the console's routes share beside the [`AppState`].
pub struct Console {
    throttles: Throttles,
    pending: Mutex<HashMap<String, Pending>>,
    dashboard: Dashboard,
    /// The writer's batch times alone, to read their buckets.
    batch_registry: prometheus_client::registry::Registry,
    /// The bucket counts at the previous dashboard, for the window since.
    previous_buckets: Mutex<Vec<(f64, u64)>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").finish_non_exhaustive()
    }
}

impl Console {
    fn new(state: &AppState) -> Console {
        let mut batch_registry = prometheus_client::registry::Registry::default();
        batch_registry.register(
            "batch_seconds",
            "Seconds a committed batch took",
            state.service.writer.stats.batch_seconds.clone(),
        );
        Console {
            throttles: Throttles::new(&state.service.settings.rate_limits),
            pending: Mutex::default(),
            dashboard: Dashboard::default(),
            batch_registry,
            previous_buckets: Mutex::default(),
        }
    }

    /// The writer's queue now, its batches so far, and the median and 99th
    /// percentile of the batch times since the previous dashboard (or since
    /// the start when no batch committed since), to the upper bound of the
    /// histogram's bucket (buckets double from 50 µs).
    fn writer_figures(&self, state: &AppState) -> Value {
        let stats = &state.service.writer.stats;
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.batch_registry);
        let buckets: Vec<(f64, u64)> = text
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix("batch_seconds_bucket{le=\"")?;
                let (le, count) = rest.split_once("\"} ")?;
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((le, count.trim().parse().ok()?))
            })
            .collect();
        let mut previous = self.previous_buckets.lock().expect("buckets lock");
        let window: Vec<(f64, u64)> = buckets
            .iter()
            .enumerate()
            .map(|(i, (le, count))| {
                let before = previous.get(i).map_or(0, |(_, c)| *c);
                (*le, count.saturating_sub(before))
            })
            .collect();
        let in_window = window.last().map_or(0, |(_, c)| *c);
        let chosen = if in_window > 0 { &window } else { &buckets };
        let quantile = |q: f64| -> f64 {
            let total = chosen.last().map_or(0, |(_, c)| *c);
            if total == 0 {
                return 0.0;
            }
            let wanted = (q * total as f64).ceil().max(1.0) as u64;
            let le = chosen
                .iter()
                .find(|(_, count)| *count >= wanted)
                .map_or(0.0, |(le, _)| *le);
            // The last finite bound when the answer is past every bucket.
            let le = if le.is_finite() {
                le
            } else {
                chosen
                    .iter()
                    .rev()
                    .find(|(le, _)| le.is_finite())
                    .map_or(0.0, |(le, _)| *le)
            };
            (le * 1000.0 * 1000.0).round() / 1000.0
        };
        let figures = json!({
            "queue": stats.queue_depth.get().max(0),
            "batches": buckets.last().map_or(0, |(_, c)| *c),
            "batch_p50_ms": quantile(0.50),
            "batch_p99_ms": quantile(0.99),
        });
        *previous = buckets;
        figures
    }

    fn remember_pending(&self, token: &str, pending: Pending, now_ms: i64) {
        let mut map = self.pending.lock().expect("pending lock");
        map.retain(|_, p| p.expires_at_ms > now_ms);
        if map.len() >= MAX_PENDING {
            let mut times: Vec<i64> = map.values().map(|p| p.expires_at_ms).collect();
            let (_, median, _) = times.select_nth_unstable(map.len() / 2);
            let median = *median;
            map.retain(|_, p| p.expires_at_ms > median);
        }
        map.insert(token.to_owned(), pending);
    }

    fn pending(&self, token: &str, now_ms: i64) -> Option<Pending> {
        let map = self.pending.lock().expect("pending lock");
        map.get(token).filter(|p| p.expires_at_ms > now_ms).cloned()
    }

    fn forget_pending(&self, token: &str) {
        self.pending.lock().expect("pending lock").remove(token);
    }
}

/// The console API's routes, for the operator listener.
pub fn routes(state: AppState) -> Router<AppState> {
    let console = Arc::new(Console::new(&state));
    let guarded = |permission: Option<Permission>, router: Router<AppState>| {
        router.route_layer(middleware::from_fn_with_state(
            (state.clone(), permission),
            guard,
        ))
    };
    let any_session = guarded(None, Router::new().route("/console/api/me", get(me)));
    let dashboard = guarded(
        Some(Permission::Dashboard),
        Router::new()
            .route("/console/api/dashboard", get(dashboard))
            .route("/console/api/report", get(report))
            .route("/console/api/emissions", get(emissions))
            .route("/console/api/blocks", get(blocks))
            .route("/console/api/site", get(site)),
    );
    let emissions_routes = guarded(
        Some(Permission::Emissions),
        Router::new()
            .route("/console/api/emissions", post(create_emission))
            .route("/console/api/emissions/{id}/close", post(close_emission))
            .route("/console/api/blocks/{id}/suspend", post(suspend_block))
            .route("/console/api/blocks/{id}/resume", post(resume_block)),
    );
    let players = guarded(
        Some(Permission::Players),
        Router::new()
            .route("/console/api/players", get(search_players))
            .route("/console/api/players/{id}", get(player))
            .route("/console/api/players/{id}/statement", get(statement))
            .route("/console/api/players/{id}/credit", post(credit))
            .route("/console/api/players/{id}/exclude", post(exclude))
            .route("/console/api/players/{id}/verify", post(verify_player))
            .route("/console/api/accounts", get(accounts)),
    );
    let withdrawals = guarded(
        Some(Permission::Withdrawals),
        Router::new()
            .route("/console/api/withdrawals", get(withdrawals))
            .route("/console/api/withdrawals/{id}/approve", post(approve))
            .route("/console/api/withdrawals/{id}/reject", post(reject)),
    );
    let site_routes = guarded(
        Some(Permission::Site),
        Router::new()
            .route("/console/api/site/sales", put(set_sales))
            .route("/console/api/site/announcement", put(set_announcement)),
    );
    let trail = guarded(
        Some(Permission::Trail),
        Router::new()
            .route("/console/api/trail", get(trail_status))
            .route("/console/api/trail/verify", post(verify_trail))
            .route("/console/api/trail/export", get(export_trail))
            .route("/console/api/blocks/{id}/recheck", post(recheck)),
    );
    // A national ban list runs to megabytes: its import alone takes up to
    // BAN_LIST_LIMIT; every other request, 64 KiB.
    let ban_list = guarded(
        Some(Permission::Site),
        Router::new().route("/console/api/banlist", post(import_ban_list)),
    )
    .layer(DefaultBodyLimit::max(BAN_LIST_LIMIT))
    .layer(RequestBodyLimitLayer::new(BAN_LIST_LIMIT));
    let small = Router::new()
        .route("/console/api/login", post(login))
        .route("/console/api/login/code", post(login_code))
        .route("/console/api/logout", post(logout))
        .merge(any_session)
        .merge(dashboard)
        .merge(emissions_routes)
        .merge(players)
        .merge(withdrawals)
        .merge(site_routes)
        .merge(trail)
        .route("/console/api/{*rest}", axum::routing::any(not_found))
        .layer(RequestBodyLimitLayer::new(64 * 1024));
    Router::new()
        .merge(ban_list)
        .merge(small)
        .layer(middleware::from_fn(require_console_csrf))
        .layer(Extension(console))
        .layer(middleware::from_fn(super::json_edge_errors))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}

/// `/console/api/…` paths no route takes: a JSON 404.
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such console endpoint",
    )
}

/// State-changing requests carry `X-Requested-With: tresor-console`, and
/// the browser must not say they come from another site.
async fn require_console_csrf(request: Request, next: Next) -> Response {
    match super::api::csrf_refusal(&request, CONSOLE_CSRF_VALUE) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name && !value.is_empty()).then(|| value.to_owned())
        })
}

fn set_cookie(state: &AppState, name: &str, value: &str, max_age_s: i64) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    ))
    .expect("a cookie of hex digits is a valid header")
}

/// Resolves the console session and checks the route's permission; a
/// refusal of the role is in the trail. The account goes on to the handler.
async fn guard(
    State((state, permission)): State<(AppState, Option<Permission>)>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(token) = cookie(request.headers(), CONSOLE_COOKIE) else {
        return ApiError::from(Error::Unauthorized).into_response();
    };
    let member = match state.service.staff_session(&token).await {
        Ok(member) => member,
        Err(error) => return ApiError::from(error).into_response(),
    };
    if let Some(permission) = permission
        && !member.role.can(permission)
    {
        let what = format!("{} {}", request.method(), request.uri().path());
        if let Err(error) = state
            .service
            .record_staff_refusal(&member, permission, &what)
            .await
        {
            tracing::warn!(%error, "recording a console refusal");
        }
        return ApiError::from(Error::Forbidden {
            permission: permission.as_str(),
        })
        .into_response();
    }
    request.extensions_mut().insert(member);
    next.run(request).await
}

type Answer = Result<Response, ApiError>;

fn ok(value: Value) -> Answer {
    Ok(Json(value).into_response())
}

// -- Login ---------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    username: String,
    password: String,
}

/// The name a login is throttled by (whether or not it is an account).
fn throttle_key(username: &str) -> String {
    username
        .trim()
        .to_ascii_lowercase()
        .chars()
        .take(64)
        .collect()
}

async fn login(
    State(state): State<AppState>,
    Extension(console): Extension<Arc<Console>>,
    address: ClientAddress,
    Body(body): Body<LoginBody>,
) -> Answer {
    console.throttles.login(&address)?;
    let key = throttle_key(&body.username);
    let now_ms = state.service.now_ms();
    console.throttles.login_attempt(&key, &address, now_ms)?;
    let checked = state
        .service
        .check_staff_password(&body.username, &body.password)
        .await?;
    console.throttles.login_succeeded(&key, &address);
    let token = hex::encode(os_random_32());
    let (answer, enrolling) = if checked.enrolled {
        (json!({"step": "code"}), None)
    } else {
        let secret = os_random_32()[..TOTP_SECRET_LEN].to_vec();
        let uri = staff::otpauth_uri(&checked.member.username, &secret);
        (
            json!({
                "step": "enrol",
                "secret": staff::base32(&secret),
                "qr_svg": staff::qr_svg(&uri),
                "otpauth_uri": uri,
            }),
            Some(secret),
        )
    };
    console.remember_pending(
        &token,
        Pending {
            member: checked.member,
            enrolling,
            expires_at_ms: now_ms + PENDING_MS,
        },
        now_ms,
    );
    Ok((
        [(
            header::SET_COOKIE,
            set_cookie(&state, PENDING_COOKIE, &token, PENDING_MS / 1000),
        )],
        Json(answer),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeBody {
    code: String,
}

async fn login_code(
    State(state): State<AppState>,
    Extension(console): Extension<Arc<Console>>,
    address: ClientAddress,
    headers: HeaderMap,
    Body(body): Body<CodeBody>,
) -> Answer {
    let now_ms = state.service.now_ms();
    let token = cookie(&headers, PENDING_COOKIE).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "give your username and password first (or again: 5 minutes have passed)",
        )
    })?;
    let pending = console.pending(&token, now_ms).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "give your username and password first (or again: 5 minutes have passed)",
        )
    })?;
    let key = throttle_key(&pending.member.username);
    console.throttles.login_attempt(&key, &address, now_ms)?;
    let (session, member) = state
        .service
        .open_staff_session(&pending.member, &body.code, pending.enrolling.clone())
        .await?;
    console.throttles.login_succeeded(&key, &address);
    console.forget_pending(&token);
    // A login always opens a new session; the one this browser had ends.
    if let Some(old) = cookie(&headers, CONSOLE_COOKIE) {
        state.service.close_staff_session(&old).await?;
    }
    let mut response = Json(json!({"step": "done", "operator": member.view()})).into_response();
    let cookies = response.headers_mut();
    cookies.append(
        header::SET_COOKIE,
        set_cookie(
            &state,
            CONSOLE_COOKIE,
            &session,
            state.service.settings.session_max_s,
        ),
    );
    cookies.append(
        header::SET_COOKIE,
        set_cookie(&state, PENDING_COOKIE, "", 0),
    );
    Ok(response)
}

async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Answer {
    if let Some(token) = cookie(&headers, CONSOLE_COOKIE) {
        state.service.close_staff_session(&token).await?;
    }
    Ok((
        StatusCode::NO_CONTENT,
        [(
            header::SET_COOKIE,
            set_cookie(&state, CONSOLE_COOKIE, "", 0),
        )],
    )
        .into_response())
}

async fn me(Extension(member): Extension<StaffMember>) -> Answer {
    ok(member.view())
}

// -- Dashboard, report, emissions and blocks -----------------------------------

async fn dashboard(
    State(state): State<AppState>,
    Extension(console): Extension<Arc<Console>>,
) -> Answer {
    let mut answer = state.service.dashboard(&console.dashboard).await?;
    answer["writer"] = console.writer_figures(&state);
    ok(answer)
}

async fn report(State(state): State<AppState>) -> Answer {
    let report = crate::report::build(&state.service.db.pool, None).await?;
    Ok(Json(report).into_response())
}

fn block_json(block: &BlockView) -> Value {
    json!({
        "id": block.id,
        "emission_id": block.emission,
        "stake_cents": block.stake_cents,
        "state": block.state,
        "sold": block.units_sold,
        "size": block.units_per_block,
        "commitment": block.commitment,
        "secret": block.secret,
    })
}

async fn emission_json(state: &AppState, id: i64) -> Result<Value, ApiError> {
    let emission = state
        .service
        .emissions()
        .await?
        .into_iter()
        .find(|e| e.id == id)
        .ok_or(Error::NotFound)?;
    Ok(json!({
        "id": emission.id,
        "name": emission.name,
        "state": emission.state,
        "created_at": emission.created_at,
        "blocks": emission.blocks.iter().map(block_json).collect::<Vec<_>>(),
    }))
}

async fn emissions(State(state): State<AppState>) -> Answer {
    let mut list = Vec::new();
    for emission in state.service.emissions().await? {
        list.push(json!({
            "id": emission.id,
            "name": emission.name,
            "state": emission.state,
            "created_at": emission.created_at,
            "blocks": emission.blocks.iter().map(block_json).collect::<Vec<_>>(),
        }));
    }
    ok(json!({ "emissions": list }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmissionBody {
    stake_cents: i64,
    blocks: u32,
    name: Option<String>,
}

async fn create_emission(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    Body(body): Body<EmissionBody>,
) -> Answer {
    let stake = Stake::try_from(body.stake_cents).map_err(Error::from)?;
    let name = body.name.unwrap_or_else(|| "Emission".to_owned());
    if name.trim().is_empty() || name.chars().count() > 100 {
        return Err(Error::Validation("name: 1 to 100 characters".to_owned()).into());
    }
    let id = state
        .service
        .create_emission_as(member.actor(), &name, &[stake], body.blocks)
        .await?;
    Ok((StatusCode::CREATED, Json(emission_json(&state, id).await?)).into_response())
}

async fn close_emission(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
) -> Answer {
    state.service.close_emission_as(member.actor(), id).await?;
    ok(emission_json(&state, id).await?)
}

async fn blocks(State(state): State<AppState>) -> Answer {
    let blocks = state.service.blocks().await?;
    ok(json!({"blocks": blocks.iter().map(block_json).collect::<Vec<_>>()}))
}

async fn block_answer(state: &AppState, id: i64) -> Answer {
    let block = state
        .service
        .blocks()
        .await?
        .into_iter()
        .find(|b| b.id == id)
        .ok_or(Error::NotFound)?;
    ok(block_json(&block))
}

async fn suspend_block(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
) -> Answer {
    state.service.suspend_block_as(member.actor(), id).await?;
    block_answer(&state, id).await
}

async fn resume_block(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
) -> Answer {
    state.service.resume_block_as(member.actor(), id).await?;
    block_answer(&state, id).await
}

async fn recheck(State(state): State<AppState>, PathId(id): PathId) -> Answer {
    Ok(Json(state.service.recheck_block(id).await?).into_response())
}

// -- Players -------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchQuery {
    q: Option<String>,
    limit: Option<String>,
}

async fn search_players(
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

async fn player(State(state): State<AppState>, PathId(id): PathId) -> Answer {
    let player = state.service.player_by_id(id).await?;
    let account = state.service.account(&player).await?;
    let (limits, excluded_until_ms) = state.service.protection(&player).await?;
    ok(json!({
        "player": {"id": player.id, "username": player.username},
        "account": account,
        "limits": limits,
        "exclusion": {"excluded_until": excluded_until_ms.map(rfc3339)},
    }))
}

async fn statement(
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
struct CreditBody {
    amount_cents: i64,
}

async fn credit(
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
struct ExcludeBody {
    period: String,
}

async fn exclude(
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

async fn verify_player(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    PathId(id): PathId,
) -> Answer {
    let player = state.service.player_by_id(id).await?;
    state
        .service
        .verify_account_as(member.actor(), &player)
        .await?;
    Ok(Json(state.service.account(&player).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusQuery {
    status: Option<String>,
}

async fn accounts(State(state): State<AppState>, Params(query): Params<StatusQuery>) -> Answer {
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
    let accounts: Vec<Value> = state
        .service
        .list_accounts(status)
        .await?
        .into_iter()
        .map(|a| {
            json!({
                "player_id": a.player_id,
                "username": a.username,
                "status": a.status,
                "has_identity": a.has_identity,
                "iban": a.iban,
                "banned": a.banned,
                "opened_at": rfc3339(a.opened_at_ms),
                "provisional_until": a.provisional_until_ms.map(rfc3339),
            })
        })
        .collect();
    ok(json!({ "accounts": accounts }))
}

// -- Withdrawals ---------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateQuery {
    state: Option<String>,
}

async fn withdrawals(State(state): State<AppState>, Params(query): Params<StateQuery>) -> Answer {
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
    let rows: Vec<Value> = state
        .service
        .list_withdrawals(wanted)
        .await?
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
            })
        })
        .collect();
    ok(json!({ "withdrawals": rows }))
}

async fn approve(
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
struct RejectBody {
    reason: String,
}

async fn reject(
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

// -- The site ------------------------------------------------------------------

async fn site(State(state): State<AppState>) -> Answer {
    ok(state.service.site().await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SalesBody {
    opens_at: Option<String>,
}

async fn set_sales(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    Body(body): Body<SalesBody>,
) -> Answer {
    let opens_at_ms = body
        .opens_at
        .as_deref()
        .map(parse_rfc3339)
        .transpose()
        .map_err(|_| Error::Validation("opens_at: an RFC 3339 time, or null".to_owned()))?;
    state
        .service
        .set_sales_open_at_as(member.actor(), opens_at_ms)
        .await?;
    ok(state.service.site().await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnnouncementBody {
    message: Option<String>,
}

async fn set_announcement(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    Body(body): Body<AnnouncementBody>,
) -> Answer {
    state
        .service
        .set_announcement_as(member.actor(), body.message)
        .await?;
    ok(state.service.site().await?)
}

/// The largest ban list the console takes: 32 MiB of JSON.
const BAN_LIST_LIMIT: usize = 32 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BanListBody {
    /// The list as CSV: `birth_name,first_names,birth_date`.
    csv: String,
}

/// Replaces the national ban list in force (`tresor banlist import`).
async fn import_ban_list(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    Body(body): Body<BanListBody>,
) -> Answer {
    let import = state
        .service
        .import_ban_list_as(member.actor(), &body.csv)
        .await?;
    ok(json!({
        "version": import.version,
        "entries": import.entries,
        "sha256": import.sha256,
        "banned": import.banned,
        "lifted": import.lifted,
    }))
}

// -- The trail -----------------------------------------------------------------

async fn trail_status(State(state): State<AppState>) -> Answer {
    ok(state.service.trail_status().await?)
}

async fn verify_trail(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
) -> Answer {
    ok(state.service.verify_trail_as(member.actor()).await?)
}

/// The whole trail as JSON Lines (`tresor audit export`), streamed a page
/// at a time.
async fn export_trail(State(state): State<AppState>) -> Answer {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let pool = state.service.db.pool.clone();
    tokio::spawn(async move {
        let mut chunk = Vec::new();
        let exported = crate::trail::export(&pool, None, |record| {
            let mut line = serde_json::to_value(record).expect("a record is JSON");
            line["at"] = Value::String(rfc3339(record.at_ms));
            chunk.extend_from_slice(line.to_string().as_bytes());
            chunk.push(b'\n');
            if chunk.len() >= 64 * 1024 {
                let _ = sender.send(std::mem::take(&mut chunk));
            }
            Ok(())
        })
        .await;
        match exported {
            Ok(_) if !chunk.is_empty() => {
                let _ = sender.send(chunk);
            }
            Ok(_) => {}
            // The download ends short; the log says why.
            Err(error) => tracing::error!(%error, "exporting the trail"),
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), receiver))
    });
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"tresor-trail.jsonl\""),
            ),
        ],
        ResponseBody::from_stream(stream),
    )
        .into_response())
}
