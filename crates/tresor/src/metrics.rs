//! Prometheus metrics: purchases, throws, wins paid, failed logins (and the
//! console's wrong codes), request
//! latency, the writer's queue and batches, readiness and whether sales are
//! open, rendered by `GET /metrics` on the operator listener only (wins paid
//! would tell a watcher when a top prize was found). `docs/ops/README.md`
//! says what each means; `docs/ops/alerts.yml` and
//! `docs/ops/grafana-dashboard.json` use them (`tests/it/ops.rs` holds them to
//! the names exported here).
//!
//! The hot path only increments atomics: labelled series that requests add
//! to are created once, here, and kept.

use crate::error::Error;
use crate::service::Service;
use crate::writer::WriterStats;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

/// The label of a request's method: one of the methods the site answers, or
/// `other`, so a client inventing methods cannot grow the metrics without end.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoginLabels {
    outcome: &'static str,
}

/// How long a scrape waits for readiness and the sales window.
const REFRESH_WITHIN: Duration = Duration::from_millis(500);

type LatencyFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// Every metric the server exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub purchases: Counter,
    pub throws: Counter,
    pub wins_paid_cents: Counter,
    /// Players' logins refused for a wrong name or password
    /// (`outcome="invalid_credentials"`).
    pub failed_logins_invalid: Counter,
    /// Players' logins refused unchecked because the name or the address
    /// must wait after failures, or the address tried too often
    /// (`outcome="rate_limited"`).
    pub failed_logins_rate_limited: Counter,
    /// Wrong TOTP codes given at the console's login (a guessing run once
    /// a password is known).
    pub console_code_failures: Counter,
    /// 1 when `/readyz` answered ready at its last reading (by a load
    /// balancer or by a scrape, see [`Metrics::refresh`]), else 0.
    pub ready: Gauge,
    /// 1 when units can be bought now (an open block in an open emission,
    /// and the sales' opening time passed), else 0.
    pub sales_open: Gauge,
    requests: LatencyFamily,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 18))
}

/// Each metric's help, by its name (after the registry's prefix `tresor_`):
/// what `docs/ops/README.md` explains at length.
const HELP: &[(&str, &str)] = &[
    ("purchases", "Units bought"),
    ("throws", "Throws revealed"),
    ("wins_paid_cents", "Prizes credited to players, in cents"),
    (
        "failed_logins",
        "Players' logins refused, by outcome: invalid_credentials, rate_limited",
    ),
    (
        "console_code_failures",
        "Wrong TOTP codes given at the console's login",
    ),
    (
        "ready",
        "1 when /readyz answered ready at its last reading, else 0",
    ),
    (
        "sales_open",
        "1 when units can be bought now (an open block, the opening time passed), else 0",
    ),
    ("http_request_duration_seconds", "HTTP request latency"),
    ("writer_batch_size", "Requests per committed batch"),
    (
        "writer_batch_retries",
        "Batches that failed before committing and ran again request by request",
    ),
    (
        "writer_dropped",
        "Requests dropped before running because their caller was gone",
    ),
    (
        "writer_commits_resolved",
        "COMMITs whose answer was lost and that were found committed",
    ),
    ("writer_queue_depth", "Requests waiting for the writer now"),
    (
        "writer_batch_seconds",
        "Seconds a committed batch took, from BEGIN to its COMMIT answered",
    ),
    (
        "writer_over_budget",
        "Requests answered unavailable at the outage budget, still waiting for the writer",
    ),
    (
        "writer_restarts",
        "Times the writer was started again after a panic or a failed start",
    ),
];

/// Registers `metric` as `name`, with its help from [`HELP`]: the one place
/// a metric is registered.
fn register(registry: &mut Registry, name: &'static str, metric: impl Metric) {
    let help = HELP
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, help)| *help)
        .unwrap_or_else(|| panic!("the metric {name} has its help in HELP"));
    registry.register(name, help, metric);
}

/// Registers each of `source`'s `fields` under its own name after
/// `prefix`, so that a metric's name is written once.
macro_rules! register_each {
    ($registry:expr, $source:expr, $prefix:literal, [$($field:ident),* $(,)?]) => {
        $(register($registry, concat!($prefix, stringify!($field)), $source.$field.clone());)*
    };
}

impl Metrics {
    pub fn new(writer: &WriterStats) -> Metrics {
        let mut registry = Registry::with_prefix("tresor");
        let failed_logins = Family::<LoginLabels, Counter>::default();
        let failed_login = |outcome| {
            failed_logins
                .get_or_create(&LoginLabels { outcome })
                .clone()
        };
        let metrics = Metrics {
            purchases: Counter::default(),
            throws: Counter::default(),
            wins_paid_cents: Counter::default(),
            failed_logins_invalid: failed_login("invalid_credentials"),
            failed_logins_rate_limited: failed_login("rate_limited"),
            console_code_failures: Counter::default(),
            ready: Gauge::default(),
            sales_open: Gauge::default(),
            requests: Family::new_with_constructor(latency_histogram),
            registry: Registry::default(),
        };
        let r = &mut registry;
        register_each!(r, metrics, "", [purchases, throws, wins_paid_cents]);
        register(r, "failed_logins", failed_logins);
        register_each!(r, metrics, "", [console_code_failures, ready, sales_open]);
        register(r, "http_request_duration_seconds", metrics.requests.clone());
        register_each!(
            r,
            writer,
            "writer_",
            [
                batch_size,
                batch_retries,
                dropped,
                commits_resolved,
                queue_depth,
                batch_seconds,
                over_budget,
                restarts,
            ]
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// Counts a player's login refused with `error`; refusals that are not
    /// the player's doing (the database unavailable…) are not failed logins.
    pub fn failed_login(&self, error: &Error) {
        let counter = match error {
            Error::InvalidCredentials => &self.failed_logins_invalid,
            Error::RateLimited { .. } => &self.failed_logins_rate_limited,
            _ => return,
        };
        counter.inc();
    }

    /// Records what `/readyz` answered.
    pub fn observe_readiness(&self, answer: &Result<(), Error>) {
        self.ready.set(i64::from(answer.is_ok()));
    }

    /// Reads readiness and the sales window again (each within 500 ms), for
    /// a scrape: a probe through the writer and three reads by key, cheap
    /// at a scrape's pace. Sales a server cannot read count as closed.
    pub async fn refresh(&self, service: &Service) {
        let (readiness, status) = tokio::join!(
            service.readiness(),
            tokio::time::timeout(REFRESH_WITHIN, service.status())
        );
        self.observe_readiness(&readiness);
        let open = matches!(status, Ok(Ok(status)) if status.sales_open);
        self.sales_open.set(i64::from(open));
    }

    /// Counts a request under its method's label ([`method_label`]) and its
    /// matched route (the router's pattern, never the path a client typed).
    pub fn observe_request(
        &self,
        method: &axum::http::Method,
        route: &str,
        status: u16,
        elapsed: Duration,
    ) {
        let labels = RequestLabels {
            method: method_label(method),
            route: route.to_owned(),
            status,
        };
        self.requests
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// The metrics in the Prometheus/OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_with_a_help_is_exported_once() {
        let metrics = Metrics::new(&WriterStats::default());
        // A family is shown once it has a series.
        metrics.observe_request(&axum::http::Method::GET, "/", 200, Duration::ZERO);
        let text = metrics.render();
        for (name, help) in HELP {
            let line = format!("# HELP tresor_{name} {help}.");
            assert_eq!(text.matches(&line).count(), 1, "{line}\n{text}");
        }
        assert_eq!(text.matches("# HELP ").count(), HELP.len(), "{text}");
    }
}
