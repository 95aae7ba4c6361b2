//! The operator's console API's router, `/console/api/…` on the operator
//! listener (`docs/CONSOLE.md`). Each screen has its room: the login
//! (`console_login.rs`), the guard of every other route (`console_guard.rs`),
//! the dashboard (`console_dashboard.rs`), emissions and blocks
//! (`console_emissions.rs`), players and money (`console_money.rs`), their
//! documents (`console_documents.rs`), the site (`console_site.rs`) and the
//! trail (`console_trail.rs`). Staff log in with a password and a TOTP code, get a
//! session of their own (cookie `tresor_console`, path `/console`), and each
//! endpoint needs one permission of their role. Every action goes through the
//! service's operator methods with the actor `staff:NAME`, so it is in the
//! trail under that name; a refusal of the role is in the trail too.

use super::console_dashboard::{DashboardState, dashboard, games, report};
use super::console_documents::{open_document, player_documents, refuse_document, verify_document};
use super::console_emissions::{
    blocks, close_emission, create_emission, emissions, recheck, resume_block, suspend_block,
};
use super::console_guard::{RefusalTrail, guard, require_console_csrf};
use super::console_kit::{Answer, ok};
use super::console_login::{ConsoleLogins, change_password, login, login_code, logout};
use super::console_money::{
    accounts, approve, credit, exclude, player, reject, search_players, statement, suspend_player,
    unsuspend_player, verify_player, withdrawals,
};
use super::console_reports::periods;
use super::console_site::{BAN_LIST_LIMIT, import_ban_list, set_announcement, set_sales, site};
use super::console_trail::{export_trail, records, trail_status, verify_trail};
use super::throttle::Throttles;
use super::{ApiError, AppState};
use crate::service::StaffMember;
use crate::staff::Permission;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware;
use axum::routing::{any, get, post, put};
use axum::{Extension, Router};
use std::sync::Arc;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;

/// The console API's routes, for the operator listener: each group behind
/// the guard of its permission (`console_guard.rs`).
pub fn routes(state: AppState) -> Router<AppState> {
    let logins = Arc::new(ConsoleLogins::new(Throttles::new(
        &state.service.settings.rate_limits,
    )));
    let refusals = Arc::new(RefusalTrail::default());
    let guarded = |permission: Option<Permission>, router: Router<AppState>| {
        router.route_layer(middleware::from_fn_with_state(
            (state.clone(), permission, refusals.clone()),
            guard,
        ))
    };
    // A national ban list runs to megabytes: its import alone takes up to
    // BAN_LIST_LIMIT; every other request, 64 KiB.
    let ban_list = guarded(
        Some(Permission::Site),
        Router::new().route("/console/api/banlist", post(import_ban_list)),
    )
    .layer(DefaultBodyLimit::max(BAN_LIST_LIMIT))
    .layer(RequestBodyLimitLayer::new(BAN_LIST_LIMIT));
    let mut small = Router::new()
        .route("/console/api/login", post(login))
        .route("/console/api/login/code", post(login_code))
        .route("/console/api/logout", post(logout));
    for (permission, group) in groups() {
        small = small.merge(guarded(permission, group));
    }
    let small = small
        .route("/console/api/{*rest}", any(not_found))
        .layer(RequestBodyLimitLayer::new(64 * 1024));
    Router::new()
        .merge(ban_list)
        .merge(small)
        .layer(middleware::from_fn(require_console_csrf))
        .layer(Extension(logins))
        .layer(Extension(Arc::new(DashboardState::new(&state))))
        .layer(middleware::from_fn(super::gate::json_edge_errors))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}

/// The routes behind a login, by the permission they need (`None`: any
/// console session).
fn groups() -> [(Option<Permission>, Router<AppState>); 7] {
    [
        (
            None,
            Router::new()
                .route("/console/api/me", get(me))
                .route("/console/api/password", post(change_password)),
        ),
        (
            Some(Permission::Dashboard),
            Router::new()
                .route("/console/api/dashboard", get(dashboard))
                .route("/console/api/report", get(report))
                .route("/console/api/report/periods", get(periods))
                .route("/console/api/games", get(games))
                .route("/console/api/emissions", get(emissions))
                .route("/console/api/blocks", get(blocks))
                .route("/console/api/site", get(site)),
        ),
        (
            Some(Permission::Emissions),
            Router::new()
                .route("/console/api/emissions", post(create_emission))
                .route("/console/api/emissions/{id}/close", post(close_emission))
                .route("/console/api/blocks/{id}/suspend", post(suspend_block))
                .route("/console/api/blocks/{id}/resume", post(resume_block)),
        ),
        (Some(Permission::Players), player_routes()),
        (
            Some(Permission::Withdrawals),
            Router::new()
                .route("/console/api/withdrawals", get(withdrawals))
                .route("/console/api/withdrawals/{id}/approve", post(approve))
                .route("/console/api/withdrawals/{id}/reject", post(reject)),
        ),
        (
            Some(Permission::Site),
            Router::new()
                .route("/console/api/site/sales", put(set_sales))
                .route("/console/api/site/announcement", put(set_announcement)),
        ),
        (
            Some(Permission::Trail),
            Router::new()
                .route("/console/api/trail", get(trail_status))
                .route("/console/api/trail/verify", post(verify_trail))
                .route("/console/api/trail/export", get(export_trail))
                .route("/console/api/trail/records", get(records))
                .route("/console/api/blocks/{id}/recheck", post(recheck)),
        ),
    ]
}

/// The players and their documents (role `players`).
fn player_routes() -> Router<AppState> {
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
        .route("/console/api/documents/{id}/refuse", post(refuse_document))
}

/// `/console/api/…` paths no route takes: a JSON 404.
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such console endpoint",
    )
}

async fn me(Extension(member): Extension<StaffMember>) -> Answer {
    ok(member.view())
}
