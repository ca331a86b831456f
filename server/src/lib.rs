//! Tower's backend-for-frontend: watch caches over the platform's clusters, a JSON API and one event stream
//! for the browser, and the SPA itself.

pub mod auth;
pub mod config;
pub mod config_view;
pub mod databases;
pub mod delivery;
pub mod error;
pub mod fleet;
pub mod logs;
pub mod metrics;
pub mod pipelines;
pub mod platform;
pub mod routes;
#[cfg(feature = "sandbox")]
pub mod sandbox_cli;
pub mod serve;
pub mod shutdown;
pub mod sinks;
pub mod slo;
pub mod state;
pub mod telemetry;
pub mod upstream;
