//! The sandbox's integration tests, in one binary: one link instead of one per file, and their tests share
//! the test harness's threads. `heap.rs` stays a binary of its own, as it replaces the global allocator.
#![allow(clippy::unwrap_used)]

mod apiserver;
mod argocd;
mod bounded;
mod catalog;
mod contents;
mod contract;
mod contract_argocd;
mod contract_forge;
mod contract_metrics_logs;
mod contract_webhooks;
mod databases;
mod fixtures;
mod forge;
mod git;
mod issues;
mod loki;
mod metrics;
mod paging;
mod pipelines;
mod platform;
mod prod_clusters;
mod reviews;
mod scale;
mod simulator;
mod slo;
mod supervisor;
mod timeline;
mod webhooks;
