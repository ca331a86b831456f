//! What every request handler can reach.

use std::sync::Arc;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::auth::AuthState;
use crate::fleet::FleetModel;

/// Limits write attempts per user.
pub type WriteLimiter = Arc<DefaultKeyedRateLimiter<String>>;

/// A limiter allowing each user a burst of ten writes, refilled at one every six seconds.
pub fn write_limiter() -> WriteLimiter {
    let quota = Quota::per_minute(std::num::NonZeroU32::MIN.saturating_add(9));
    Arc::new(RateLimiter::keyed(quota))
}

/// Shared, cheaply cloned state of the server.
#[derive(Clone)]
pub struct AppState {
    /// The fleet model, fed by the watch caches.
    pub fleet: FleetModel,
    /// Where the built SPA (`index.html`, `assets/`) is served from.
    pub assets: crate::routes::spa::Spa,
    /// Sessions, sign-in and the access policy.
    pub auth: AuthState,
    /// Per-user limit on write attempts.
    pub write_limiter: WriteLimiter,
    /// Argo CD, for owners' Sync.
    pub argocd: crate::upstream::argocd::Instances,
    /// The log store (Loki) keeping gone pods' logs, for owners' log history; absent when no Loki is
    /// configured, and the log panel then reads running pods only.
    pub log_history: Option<crate::logs::LogHistory>,
    /// Workload cluster clients by cluster name, for owners' pod logs (a pod is read where it runs).
    pub workload_clients: std::collections::BTreeMap<String, kube::Client>,
    /// Pull requests to `application-repositories` through the GitHub App, green builds and release
    /// records; absent when no GitHub App is configured.
    pub delivery: Option<crate::delivery::Delivery>,
    /// The Metrics tab's fixed queries against Mimir; absent when no Mimir is configured.
    pub metrics: Option<crate::metrics::Metrics>,
    /// Service level objectives, evaluated against Mimir in the background; absent without Mimir.
    pub slos: Option<crate::slo::Slos>,
    /// Tower's own configuration as the `/config` page shows it, secrets masked; computed at start.
    pub platform_settings: std::sync::Arc<crate::config_view::PlatformSettings>,
    /// CI's Tekton runs in watch caches, and the client of the cluster they run on for their steps' logs.
    pub pipelines: crate::pipelines::Pipelines,
}
