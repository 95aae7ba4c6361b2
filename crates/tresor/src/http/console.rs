//! The operator's console API, `/console/api/…` on the operator listener
//! (`docs/CONSOLE.md`; the login is `console_login.rs`, the players and the
//! money `console_money.rs`): staff log in with a password and a TOTP code, get a
//! session of their own (cookie `tresor_console`, path `/console`), and each
//! endpoint needs one permission of their role. Every action goes through the
//! service's operator methods with the actor `staff:NAME`, so it is in the
//! trail under that name; a refusal of the role is in the trail too.

use super::api::{Body, PathId};
use super::throttle::Throttles;
use super::{ApiError, AppState};
use crate::error::Error;
use crate::service::{BlockView, Dashboard, StaffMember, parse_rfc3339, rfc3339};
use crate::staff::Permission;
use axum::body::Body as ResponseBody;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use super::console_documents::{open_document, player_documents, refuse_document, verify_document};
use super::console_kit::{Answer, CONSOLE_COOKIE, CONSOLE_CSRF_VALUE, cookie, ok};
use super::console_login::{ConsoleLogins, change_password, login, login_code, logout};
use super::console_money::{
    accounts, approve, credit, exclude, player, reject, search_players, statement, suspend_player,
    unsuspend_player, verify_player, withdrawals,
};

/// What the console's routes share beside the [`AppState`].
pub struct Console {
    /// The login's throttles and pending logins (`console_login.rs`).
    logins: Arc<ConsoleLogins>,
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
            logins: Arc::new(ConsoleLogins::new(Throttles::new(
                &state.service.settings.rate_limits,
            ))),
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
}

/// The console API's routes, for the operator listener.
pub fn routes(state: AppState) -> Router<AppState> {
    let console = Arc::new(Console::new(&state));
    let refusals = Arc::new(RefusalTrail::default());
    let guarded = |permission: Option<Permission>, router: Router<AppState>| {
        router.route_layer(middleware::from_fn_with_state(
            (state.clone(), permission, refusals.clone()),
            guard,
        ))
    };
    let any_session = guarded(
        None,
        Router::new()
            .route("/console/api/me", get(me))
            .route("/console/api/password", post(change_password)),
    );
    let dashboard = guarded(
        Some(Permission::Dashboard),
        Router::new()
            .route("/console/api/dashboard", get(dashboard))
            .route("/console/api/report", get(report))
            .route("/console/api/games", get(games))
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
            .route("/console/api/players/{id}/suspend", post(suspend_player))
            .route(
                "/console/api/players/{id}/unsuspend",
                post(unsuspend_player),
            )
            .route("/console/api/players/{id}/verify", post(verify_player))
            .route("/console/api/accounts", get(accounts))
            .route("/console/api/players/{id}/documents", get(player_documents))
            .route("/console/api/documents/{id}", get(open_document))
            .route("/console/api/documents/{id}/verify", post(verify_document))
            .route("/console/api/documents/{id}/refuse", post(refuse_document)),
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
            .route(
                "/console/api/trail/records",
                get(super::console_trail::records),
            )
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
        .layer(Extension(console.logins.clone()))
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

/// How often a console account's refusals are written to the trail: the
/// first of each window, with the count of those left out since the last
/// record; a viewer refused again and again cannot flood the trail.
const REFUSAL_WINDOW_MS: i64 = 60_000;

/// When each console account's refusal was last recorded, and how many
/// were left out since (one entry per console account that was refused).
#[derive(Debug, Default)]
struct RefusalTrail {
    recorded: Mutex<std::collections::HashMap<i64, (i64, u64)>>,
}

impl RefusalTrail {
    /// `Some(left out since the last record)` when this refusal of staff
    /// `id` is recorded, `None` when it only counts.
    fn admit(&self, id: i64, now_ms: i64) -> Option<u64> {
        let mut recorded = self.recorded.lock().expect("not poisoned");
        match recorded.get_mut(&id) {
            Some((at_ms, left_out)) if now_ms.saturating_sub(*at_ms) < REFUSAL_WINDOW_MS => {
                *left_out += 1;
                None
            }
            Some(entry) => {
                let left_out = entry.1;
                *entry = (now_ms, 0);
                Some(left_out)
            }
            None => {
                recorded.insert(id, (now_ms, 0));
                Some(0)
            }
        }
    }
}

/// Resolves the console session and checks the route's permission; a
/// refusal of the role is in the trail (at most one record per console
/// account and minute, counting the others). The account goes on to the
/// handler.
async fn guard(
    State((state, permission, refusals)): State<(AppState, Option<Permission>, Arc<RefusalTrail>)>,
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
        if let Some(left_out) = refusals.admit(member.id, state.service.now_ms())
            && let Err(error) = state
                .service
                .record_staff_refusal(&member, permission, &what, left_out)
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

/// The catalogue, as the players' `GET /api/games` gives it: the emission
/// form picks a game and one of its stakes from it.
async fn games(State(state): State<AppState>) -> Answer {
    Ok(Json(state.service.games().await?).into_response())
}

async fn report(State(state): State<AppState>) -> Answer {
    let report = crate::report::build(&state.service.db.pool, None).await?;
    Ok(Json(report).into_response())
}

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
        "game": emission.game,
        "game_sha256": emission.game_sha256,
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
            "game": emission.game,
            "game_sha256": emission.game_sha256,
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
    /// The game's id in the catalogue; « L'Ile au Trésor » when absent.
    game: Option<String>,
}

async fn create_emission(
    State(state): State<AppState>,
    Extension(member): Extension<StaffMember>,
    Body(body): Body<EmissionBody>,
) -> Answer {
    let game = state.service.game(body.game.as_deref())?;
    let stake_cents = state.service.sold_stake(game, body.stake_cents)?;
    let name = body.name.unwrap_or_else(|| "Emission".to_owned());
    if name.trim().is_empty() || name.chars().count() > 100 {
        return Err(Error::Validation("name: 1 to 100 characters".to_owned()).into());
    }
    let id = state
        .service
        .create_game_emission(
            member.actor(),
            &name,
            game.id(),
            &[stake_cents],
            body.blocks,
        )
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
/// at a time as the client takes it: the next page is read only when the
/// last is sent (one page in memory, whatever the trail's length), and none
/// once the client has gone (the body is dropped with its connection).
async fn export_trail(State(state): State<AppState>) -> Answer {
    let pool = state.service.db.pool.clone();
    let stream = futures_util::stream::unfold(Some((pool, 0)), |next| async move {
        let (pool, after_seq) = next?;
        match crate::trail::page(&pool, after_seq, None).await {
            Ok(records) => {
                let last = records.last()?.seq;
                let mut chunk = Vec::new();
                for record in &records {
                    let mut line = serde_json::to_value(record).expect("a record is JSON");
                    line["at"] = Value::String(rfc3339(record.at_ms));
                    chunk.extend_from_slice(line.to_string().as_bytes());
                    chunk.push(b'\n');
                }
                Some((Ok(chunk), Some((pool, last))))
            }
            Err(error) => {
                // The download ends short (the body fails); the log says why.
                tracing::error!(%error, "exporting the trail");
                Some((Err(std::io::Error::other(error.to_string())), None))
            }
        }
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
