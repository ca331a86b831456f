//! One room per upstream Tower reads from.

pub mod argocd;
pub mod github;
pub mod github_oauth;
pub mod kube;
pub mod loki;
pub mod mimir;
