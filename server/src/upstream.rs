//! One room per upstream Tower reads from.

pub mod github_oauth;
pub mod kube;
