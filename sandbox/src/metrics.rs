//! Metrics for the sandbox's services, answering under Mimir's Prometheus path (`…/prometheus`).
//!
//! When `prometheus` and `promtool` are on `PATH` (Debian's `prometheus` package), hours of history
//! are backfilled with promtool and a private Prometheus runs on loopback, scraping a live exposition
//! that continues that history. Otherwise the sandbox answers `query` and `query_range` itself for the
//! PromQL subset described in `promql.rs`. Both read one deterministic
//! [`Generator`](crate::metrics::Generator), so the same query gives the same series either way.
//!
//! The series follow the world's [`Timeline`](crate::world::Timeline) ending at
//! [`Options::now`](crate::metrics::Options::now): from its
//! [`bad_deploy`](crate::world::Timeline::bad_deploy) (`payments` in prod, the deploy Argo CD's
//! history records a few hours before the start)
//! [`BAD_DEPLOY_ERRORS`](crate::metrics::BAD_DEPLOY_ERRORS) of that service's requests fail, so the
//! Metrics tab shows the error ratio jumping at the deploy marker.
//!
//! Debian's package also tries to start a system service on `0.0.0.0:9090`; nothing here uses it.

mod api;
mod prometheus;
pub mod promql;
mod series;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;

pub use api::Route;
pub use prometheus::PrometheusServer;
#[cfg(test)]
pub(crate) use series::BUCKETS;
pub(crate) use series::format_value;
pub use series::{BAD_DEPLOY_ERRORS, Generator, SLOW_LATENCY_TAIL, Series};

use crate::supervisor::Supervisor;
use crate::world::{ServicePlan, Timeline};

/// How much history is backfilled, and at what resolution.
#[derive(Debug, Clone)]
pub struct Options {
    /// Seeds the generator: the same seed gives the same series.
    pub seed: u64,
    /// The sandbox's "now": history ends here and live samples continue from it. Also the start of the
    /// world's [`Timeline`], whose bad deploy the series show (the sandbox passes its timeline's start).
    pub now: jiff::Timestamp,
    /// How far back history goes.
    pub history: Duration,
    /// Seconds between backfilled samples.
    pub step: Duration,
    /// How long before `history` the counters start, so `rate` and `increase` at the start of
    /// history have earlier samples to compare with.
    pub warmup: Duration,
}

impl Options {
    /// Six hours at 30-second steps: enough for the Metrics tab's ranges, a backfill of a few seconds.
    pub fn new(seed: u64, now: jiff::Timestamp) -> Self {
        Self {
            seed,
            now,
            history: Duration::from_secs(6 * 3600),
            step: Duration::from_secs(30),
            warmup: Duration::from_secs(24 * 3600),
        }
    }

    fn generator(&self, services: &[ServicePlan]) -> Generator {
        let now = self.now.as_millisecond() as f64 / 1000.0;
        let origin = now - self.history.as_secs_f64() - self.warmup.as_secs_f64();
        let deploy = Timeline::ending_at(self.now).bad_deploy();
        // A whole minute, so the same `now` within a minute gives identical values (but for the bad
        // deploy, which moves with `now` to stay on Argo CD's deploy marker).
        Generator::new(self.seed, (origin / 60.0).floor() * 60.0, services).with_bad_deploy(
            deploy.service,
            deploy.environment,
            deploy.at.as_second() as f64,
        )
    }
}

/// The metrics backend and whatever it needs served.
pub enum Metrics {
    /// A real Prometheus with backfilled history, scraping the sandbox's `/metrics`.
    Prometheus(Box<Running<PrometheusServer>>),
    /// The sandbox answers the PromQL subset itself.
    Fallback(Box<Running<()>>),
}

/// A backend with its generator and the loopback server for what the sandbox serves itself.
pub struct Running<B> {
    /// The real Prometheus, or `()` in fallback mode.
    pub backend: B,
    generator: Arc<Generator>,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl<B> Drop for Running<B> {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Metrics {
    /// Starts a real Prometheus under `supervisor` when `prometheus` and `promtool` are on `PATH`, else the
    /// fallback; six hours of history at 30-second steps.
    pub async fn start(
        seed: u64,
        now: jiff::Timestamp,
        services: &[ServicePlan],
        supervisor: &Supervisor,
    ) -> anyhow::Result<Self> {
        Self::start_with(Options::new(seed, now), services, supervisor).await
    }

    /// [`Metrics::start`] with explicit history options. A Prometheus that fails to start is logged
    /// and replaced by the fallback, so the sandbox always has metrics.
    pub async fn start_with(
        options: Options,
        services: &[ServicePlan],
        supervisor: &Supervisor,
    ) -> anyhow::Result<Self> {
        if Self::prometheus_installed() {
            match Self::prometheus(options.clone(), services, supervisor).await {
                Ok(metrics) => return Ok(metrics),
                Err(error) => {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "prometheus failed; using the built-in PromQL subset"
                    );
                }
            }
        }
        Self::fallback(options, services).await
    }

    /// Whether `prometheus` and `promtool` are both on `PATH`.
    pub fn prometheus_installed() -> bool {
        prometheus::on_path("prometheus").is_some() && prometheus::on_path("promtool").is_some()
    }

    /// Backfills and starts a real Prometheus under `supervisor`, which must outlive it; fails if it is not
    /// installed or does not come up.
    pub async fn prometheus(
        options: Options,
        services: &[ServicePlan],
        supervisor: &Supervisor,
    ) -> anyhow::Result<Self> {
        let generator = Arc::new(options.generator(services));
        let (addr, server) = serve(api::router(generator.clone(), false)).await?;
        let now = options.now.as_millisecond() as f64 / 1000.0;
        let backend = prometheus::start(
            &generator,
            now,
            options.history,
            options.step,
            &addr.to_string(),
            supervisor,
        )
        .await;
        let backend = match backend {
            Ok(backend) => backend,
            Err(error) => {
                server.abort();
                return Err(error);
            }
        };
        tracing::info!(
            url = backend.url(),
            backfill_ms = backend.backfill.as_millis() as u64,
            startup_ms = backend.startup.as_millis() as u64,
            "prometheus ready"
        );
        Ok(Self::Prometheus(Box::new(Running {
            backend,
            generator,
            addr,
            server,
        })))
    }

    /// The built-in PromQL subset, whatever is installed.
    pub async fn fallback(options: Options, services: &[ServicePlan]) -> anyhow::Result<Self> {
        let generator = Arc::new(options.generator(services));
        let (addr, server) = serve(api::router(generator.clone(), true)).await?;
        Ok(Self::Fallback(Box::new(Running {
            backend: (),
            generator,
            addr,
            server,
        })))
    }

    /// The base URL a Prometheus/Mimir client uses, ending in `/prometheus` (append `/api/v1/query`).
    pub fn base_url(&self) -> String {
        match self {
            Self::Prometheus(running) => running.backend.url().to_owned(),
            Self::Fallback(running) => format!("http://{}/prometheus", running.addr),
        }
    }

    /// What the sandbox serves itself: the fallback's `/prometheus/api/v1/…` (fallback mode only) and
    /// the `/metrics` exposition. Already served on its own loopback port; mount it elsewhere too if
    /// one port should serve everything.
    pub fn router(&self) -> Router {
        match self {
            Self::Prometheus(running) => api::router(running.generator.clone(), false),
            Self::Fallback(running) => api::router(running.generator.clone(), true),
        }
    }

    /// Has the real Prometheus scrape Tower's own `/metrics` at `target` (`host:port`), job `tower`. Returns
    /// `false` in fallback mode, which has no Prometheus to scrape anything.
    pub fn scrape_tower(&self, target: SocketAddr) -> anyhow::Result<bool> {
        match self {
            Self::Prometheus(running) => {
                running.backend.scrape_tower(&[target.to_string()])?;
                Ok(true)
            }
            Self::Fallback(_) => Ok(false),
        }
    }

    /// The generator behind every value, for tests comparing answers with it.
    pub fn generator(&self) -> &Generator {
        match self {
            Self::Prometheus(running) => &running.generator,
            Self::Fallback(running) => &running.generator,
        }
    }

    /// How long the backfill and Prometheus' startup took (zero in fallback mode).
    pub fn timings(&self) -> (Duration, Duration) {
        match self {
            Self::Prometheus(running) => (running.backend.backfill, running.backend.startup),
            Self::Fallback(_) => (Duration::ZERO, Duration::ZERO),
        }
    }
}

/// Has the real Prometheus of this process answering at `prometheus_url` (a [`Metrics::base_url`], which is
/// what the sandbox hands Tower as Mimir's URL) scrape Tower's own `/metrics` at `target` (`host:port`), in
/// the job `tower`. Returns `false` when no such Prometheus runs here (fallback mode has none).
pub fn scrape_tower_at(prometheus_url: &str, target: SocketAddr) -> anyhow::Result<bool> {
    prometheus::scrape_tower_at(prometheus_url, &[target.to_string()])
}

/// Serves `router` on a fresh loopback port.
async fn serve(router: Router) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("binding the metrics listener")?;
    let addr = listener.local_addr().context("metrics listener address")?;
    let server = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "metrics server stopped");
        }
    });
    Ok((addr, server))
}
