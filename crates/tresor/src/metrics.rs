//! Prometheus metrics: purchases, throws, wins paid, request latency and the
//! writer's batch sizes, rendered by `GET /metrics` on the operator listener
//! only (wins paid would tell a watcher when a top prize was found).

use crate::writer::WriterStats;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
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

type LatencyFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// Every metric the server exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub purchases: Counter,
    pub throws: Counter,
    pub wins_paid_cents: Counter,
    requests: LatencyFamily,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 18))
}

impl Metrics {
    pub fn new(writer: &WriterStats) -> Metrics {
        let mut registry = Registry::with_prefix("tresor");
        let purchases = Counter::default();
        let throws = Counter::default();
        let wins_paid_cents = Counter::default();
        let requests: LatencyFamily = Family::new_with_constructor(latency_histogram);
        registry.register("purchases", "Units bought", purchases.clone());
        registry.register("throws", "Throws revealed", throws.clone());
        registry.register(
            "wins_paid_cents",
            "Prizes credited to players, in cents",
            wins_paid_cents.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency",
            requests.clone(),
        );
        registry.register(
            "writer_batch_size",
            "Requests per committed batch",
            writer.batch_size.clone(),
        );
        registry.register(
            "writer_batch_retries",
            "Batches that failed before committing and ran again request by request",
            writer.batch_retries.clone(),
        );
        registry.register(
            "writer_dropped",
            "Requests dropped before running because their caller was gone",
            writer.dropped.clone(),
        );
        registry.register(
            "writer_commits_resolved",
            "COMMITs whose answer was lost and that were found committed",
            writer.commits_resolved.clone(),
        );
        registry.register(
            "writer_queue_depth",
            "Requests waiting for the writer now",
            writer.queue_depth.clone(),
        );
        registry.register(
            "writer_batch_seconds",
            "Seconds a committed batch took, from BEGIN to its COMMIT answered",
            writer.batch_seconds.clone(),
        );
        registry.register(
            "writer_restarts",
            "Times the writer was started again after a panic or a failed start",
            writer.restarts.clone(),
        );
        Metrics {
            registry,
            purchases,
            throws,
            wins_paid_cents,
            requests,
        }
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
