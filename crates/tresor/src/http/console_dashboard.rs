//! The console's read-only screens (role `dashboard`): the dashboard, with
//! the writer's queue and batch times since the previous dashboard, the
//! report, and the catalogue the emission form picks from.

use super::AppState;
use super::console_kit::{Answer, ok};
use crate::service::Dashboard;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::{Extension, Json};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// What the dashboard keeps from one showing to the next.
pub(super) struct DashboardState {
    dashboard: Dashboard,
    /// The writer's batch times alone, to read their buckets.
    batch_registry: prometheus_client::registry::Registry,
    /// The bucket counts at the previous dashboard, for the window since.
    previous_buckets: Mutex<Vec<(f64, u64)>>,
}

impl std::fmt::Debug for DashboardState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DashboardState").finish_non_exhaustive()
    }
}

impl DashboardState {
    pub(super) fn new(state: &AppState) -> DashboardState {
        let mut batch_registry = prometheus_client::registry::Registry::default();
        batch_registry.register(
            "batch_seconds",
            "Seconds a committed batch took",
            state.service.writer.stats.batch_seconds.clone(),
        );
        DashboardState {
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
        let buckets = buckets(&text);
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
        let figures = json!({
            "queue": stats.queue_depth.get().max(0),
            "batches": buckets.last().map_or(0, |(_, c)| *c),
            "batch_p50_ms": quantile_ms(chosen, 0.50),
            "batch_p99_ms": quantile_ms(chosen, 0.99),
        });
        *previous = buckets;
        figures
    }
}

/// The cumulative buckets `(upper bound in seconds, count)` of the batch
/// times, from their text encoding.
fn buckets(text: &str) -> Vec<(f64, u64)> {
    text.lines()
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
        .collect()
}

/// The `q` quantile of cumulative `buckets`, in milliseconds to the µs: the
/// upper bound of the first bucket that holds it.
fn quantile_ms(buckets: &[(f64, u64)], q: f64) -> f64 {
    let total = buckets.last().map_or(0, |(_, c)| *c);
    if total == 0 {
        return 0.0;
    }
    let wanted = (q * total as f64).ceil().max(1.0) as u64;
    let le = buckets
        .iter()
        .find(|(_, count)| *count >= wanted)
        .map_or(0.0, |(le, _)| *le);
    // The last finite bound when the answer is past every bucket.
    let le = if le.is_finite() {
        le
    } else {
        buckets
            .iter()
            .rev()
            .find(|(le, _)| le.is_finite())
            .map_or(0.0, |(le, _)| *le)
    };
    (le * 1000.0 * 1000.0).round() / 1000.0
}

pub(super) async fn dashboard(
    State(state): State<AppState>,
    Extension(shown): Extension<Arc<DashboardState>>,
) -> Answer {
    let mut answer = state.service.dashboard(&shown.dashboard).await?;
    answer["writer"] = shown.writer_figures(&state);
    ok(answer)
}

/// The catalogue, as the players' `GET /api/games` gives it: the emission
/// form picks a game and one of its stakes from it; the games screen shows
/// each game's odds sheet.
pub(super) async fn games(State(state): State<AppState>) -> Answer {
    Ok(Json(state.service.games_with_sheets().await?).into_response())
}

pub(super) async fn report(State(state): State<AppState>) -> Answer {
    let report = crate::report::build(&state.service.db.pool, None).await?;
    Ok(Json(report).into_response())
}
