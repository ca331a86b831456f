//! One room per upstream Tower reads from.

pub mod kube;
