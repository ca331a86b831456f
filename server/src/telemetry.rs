//! Tower's own telemetry: `GET /metrics` in Prometheus' text exposition format.
//!
//! Built on `prometheus-client`, the Prometheus project's own Rust client: it speaks the exposition format
//! (text and OpenMetrics) exactly, its counters and histograms are lock-free atomics, and a custom
//! [`Collector`] lets gauges that already live elsewhere (the watch caches' states, the fleet model's sizes)
//! be read when Prometheus scrapes instead of being copied on every change.
//!
//! Two kinds of series:
//! - per server ([`Telemetry`], one per router): HTTP requests and latency by route template and status, the
//!   event stream's clients, and what the state holds (clusters and watches by state, cache sizes, readiness);
//! - per process (statics here, as upstream clients and the pull-request path have no router to reach): the
//!   requests sent to each upstream by outcome, pull requests opened and reused, GitHub's rate-limit remaining.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use shared::fleet::SourceState;

use crate::fleet::watch::{CacheSize, Sources};
use crate::state::AppState;

/// The content type of the text exposition format, version 0.0.4 (what every Prometheus scrapes).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// An upstream Tower sends requests to, as its `upstream` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Upstream {
    /// The GitHub App's installation client (reads, pull requests, tokens).
    Github,
    /// Argo CD's REST API (an owner's Sync).
    ArgoCd,
    /// Mimir's Prometheus HTTP API (the Metrics tab, SLOs).
    Mimir,
    /// Loki (a gone pod's log).
    Loki,
}

impl Upstream {
    fn label(self) -> &'static str {
        match self {
            Upstream::Github => "github",
            Upstream::ArgoCd => "argocd",
            Upstream::Mimir => "mimir",
            Upstream::Loki => "loki",
        }
    }
}

/// How an upstream request ended, as its `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered with success.
    Ok,
    /// Answered `304 Not Modified` to a conditional read (GitHub does not count these against the limit).
    NotModified,
    /// Refused, failed or never answered.
    Error,
}

impl Outcome {
    /// `Ok` for `Ok(_)`, else `Error`.
    pub fn of<T, E>(result: &Result<T, E>) -> Self {
        if result.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        }
    }

    fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotModified => "not_modified",
            Outcome::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PullLabels {
    /// `opened` or `reused`.
    result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

/// Requests sent to upstreams, by upstream and outcome (process-wide).
static UPSTREAM_REQUESTS: LazyLock<Family<UpstreamLabels, Counter>> =
    LazyLock::new(Family::default);
/// Pull requests proposed, opened or reused (process-wide).
static PULL_REQUESTS: LazyLock<Family<PullLabels, Counter>> = LazyLock::new(Family::default);
/// GitHub's `x-ratelimit-remaining` as last answered; negative until an answer carried it.
static GITHUB_RATE_LIMIT_REMAINING: AtomicI64 = AtomicI64::new(-1);

/// Counts one request to `upstream` that ended with `outcome`.
pub fn upstream_request(upstream: Upstream, outcome: Outcome) {
    UPSTREAM_REQUESTS
        .get_or_create(&UpstreamLabels {
            upstream: upstream.label(),
            outcome: outcome.label(),
        })
        .inc();
}

/// Counts one request to `upstream` by its result, and hands the result back.
pub fn counted<T, E>(upstream: Upstream, result: Result<T, E>) -> Result<T, E> {
    upstream_request(upstream, Outcome::of(&result));
    result
}

/// Counts a pull request proposed: `reused` when an open one for the same intent was found.
pub fn pull_request_proposed(reused: bool) {
    PULL_REQUESTS
        .get_or_create(&PullLabels {
            result: if reused { "reused" } else { "opened" },
        })
        .inc();
}

/// Records GitHub's `x-ratelimit-remaining` from an answer's headers, when it carries one.
pub fn github_rate_limit(headers: &http::HeaderMap) {
    if let Some(remaining) = headers
        .get("x-ratelimit-remaining")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        GITHUB_RATE_LIMIT_REMAINING.store(remaining, Ordering::Relaxed);
    }
}

/// One server's metrics; cheap to clone (clones share the registry).
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_seconds: Family<RouteLabels, Histogram>,
    sse_clients: Gauge,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

impl Telemetry {
    /// The metrics of a server over `state`; `watches` (when the caller has the watch caches' sources) adds
    /// the state of every watch by cluster and kind beside each cluster's rolled-up state.
    pub fn new(state: &AppState, watches: Option<Sources>) -> Self {
        let mut registry = Registry::default();
        let http_requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "tower_http_requests",
            "HTTP requests answered, by method, matched route template (\"unmatched\" for none) and status",
            http_requests.clone(),
        );
        let http_seconds = Family::<RouteLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "tower_http_request_duration_seconds",
            "Time to answer an HTTP request (to its response head), by method and route template",
            http_seconds.clone(),
        );
        let sse_clients = Gauge::default();
        registry.register(
            "tower_sse_clients",
            "Browsers connected to the event stream",
            sse_clients.clone(),
        );
        registry.register(
            "tower_upstream_requests",
            "Requests sent to upstreams, by upstream and outcome (counted per process)",
            UPSTREAM_REQUESTS.clone(),
        );
        registry.register(
            "tower_pull_requests",
            "Pull requests proposed by Tower: opened, or an open one for the same intent reused",
            PULL_REQUESTS.clone(),
        );
        registry.register_collector(Box::new(StateCollector {
            state: state.clone(),
            watches,
        }));
        Self {
            inner: Arc::new(Inner {
                registry,
                http_requests,
                http_seconds,
                sse_clients,
            }),
        }
    }

    /// Records one answered request to `route` (a route template, never a raw path).
    pub fn observe(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        self.inner
            .http_requests
            .get_or_create(&HttpLabels {
                method: method.to_string(),
                route: route.to_string(),
                status,
            })
            .inc();
        self.inner
            .http_seconds
            .get_or_create(&RouteLabels {
                method: method.to_string(),
                route: route.to_string(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts an event-stream client for as long as the returned value lives.
    pub fn sse_client(&self) -> SseClient {
        self.inner.sse_clients.inc();
        SseClient(self.inner.sse_clients.clone())
    }

    /// Every series in the text exposition format.
    pub fn encode(&self) -> Result<String, fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.inner.registry)?;
        Ok(text)
    }
}

/// An event-stream client, counted in `tower_sse_clients` until dropped.
#[derive(Debug)]
pub struct SseClient(Gauge);

impl Drop for SseClient {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// 5 ms to about 10 s, doubling: a cached list answers in the first buckets, a PR submission in the last.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
}

/// Reads what the state already holds when Prometheus scrapes.
struct StateCollector {
    state: AppState,
    watches: Option<Sources>,
}

impl fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateCollector").finish_non_exhaustive()
    }
}

/// Every state a cluster or watch can be in, as its `state` label says it.
const STATES: [&str; 4] = ["syncing", "connected", "relisting", "unreachable"];

fn state_label(state: &SourceState) -> &'static str {
    match state {
        SourceState::Syncing => "syncing",
        SourceState::Connected => "connected",
        SourceState::Relisting => "relisting",
        SourceState::Unreachable { .. } => "unreachable",
    }
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Vec<(&str, &str)>, i64)],
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        ConstGauge::new(*value).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let fleet = &self.state.fleet;
        // Each cluster in each state, 1 for the one it is in, so `== 1` selects and `sum by (state)` counts.
        let clusters = fleet.sources();
        let mut series = Vec::new();
        for source in &clusters {
            let current = state_label(&source.state);
            for state in STATES {
                series.push((
                    vec![("cluster", source.cluster.as_str()), ("state", state)],
                    i64::from(state == current),
                ));
            }
        }
        gauge(
            &mut encoder,
            "tower_cluster_state",
            "Each cluster's connection state rolled up from its watches (1 for the state it is in).",
            &series,
        )?;
        if let Some(watches) = &self.watches {
            let mut counts = std::collections::BTreeMap::<(String, String, &str), i64>::new();
            for (cluster, kind, state) in watches.watch_states() {
                for label in STATES {
                    *counts
                        .entry((cluster.clone(), kind.clone(), label))
                        .or_default() += i64::from(label == state_label(&state));
                }
            }
            let series: Vec<_> = counts
                .iter()
                .map(|((cluster, kind, state), count)| {
                    (
                        vec![
                            ("cluster", cluster.as_str()),
                            ("kind", kind.as_str()),
                            ("state", *state),
                        ],
                        *count,
                    )
                })
                .collect();
            gauge(
                &mut encoder,
                "tower_watches",
                "Watch caches by cluster, kind and state.",
                &series,
            )?;
            let sizes = watches.cache_sizes();
            let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            for (name, help, value) in [
                (
                    "tower_watch_cache_objects",
                    "Objects held in each watch cache, by cluster and kind.",
                    (|size: &CacheSize| size.objects) as fn(&CacheSize) -> usize,
                ),
                (
                    "tower_watch_cache_bytes",
                    "Approximate bytes of the objects held in each watch cache (their JSON size, estimated \
                     from 256 of them in a larger cache), by cluster and kind.",
                    |size: &CacheSize| size.bytes,
                ),
            ] {
                let series: Vec<_> = sizes
                    .iter()
                    .map(|size| {
                        (
                            vec![
                                ("cluster", size.cluster.as_str()),
                                ("kind", size.kind.as_str()),
                            ],
                            count(value(size)),
                        )
                    })
                    .collect();
                gauge(&mut encoder, name, help, &series)?;
            }
        }
        let services = fleet.services();
        let cards: usize = services.iter().map(|s| s.environments.len()).sum();
        let sizes = [
            ("services", services.len()),
            ("cards", cards),
            ("pipeline_runs", self.state.pipelines.len()),
        ];
        let series: Vec<_> = sizes
            .iter()
            .map(|(cache, size)| {
                (
                    vec![("cache", *cache)],
                    i64::try_from(*size).unwrap_or(i64::MAX),
                )
            })
            .collect();
        gauge(
            &mut encoder,
            "tower_cache_entries",
            "What the fleet model holds: services, deployment cards, pipeline runs.",
            &series,
        )?;
        let remaining = GITHUB_RATE_LIMIT_REMAINING.load(Ordering::Relaxed);
        if remaining >= 0 {
            gauge(
                &mut encoder,
                "tower_github_rate_limit_remaining",
                "GitHub's x-ratelimit-remaining as last answered (read on conditional reads).",
                &[(Vec::new(), remaining)],
            )?;
        }
        Ok(())
    }
}
