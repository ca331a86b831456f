//! Tower's API types and the pure logic both the server and the browser use.
//!
//! Everything here compiles natively and to wasm32. The platform's custom resources live behind the `crd`
//! feature because they pull in kube, which the browser never needs.

pub mod api;
pub mod auth;
pub mod config;
pub mod databases;
pub mod delivery;
pub mod error;
pub mod fleet;
pub mod logs;
pub mod metrics;
pub mod pipelines;
pub mod platform;
pub mod random;
pub mod rows;
pub mod session;
pub mod slo;
pub mod status;
pub mod time;
pub mod url;

#[cfg(feature = "crd")]
pub mod crd;

pub use error::{ApiError, ErrorCode};
