//! Pod logs: where a line came from (the pod itself, or the log store keeping pods that are gone), and the
//! recent pods whose logs can be read.

use serde::{Deserialize, Serialize};

/// Where a log line was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogSource {
    /// From the running pod, through its cluster.
    Live,
    /// From the log store (Loki): the pod is gone.
    Store,
}

impl LogSource {
    /// As the wire and the page's `data-source` attribute spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogSource::Live => "live",
            LogSource::Store => "store",
        }
    }
}

/// One log line, the data of each `log` event on the log stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// Where it was read.
    pub source: LogSource,
    /// The line, starting with the RFC 3339 time it was written and a space.
    pub text: String,
}

/// A pod whose log can be read: running now, or gone and kept by the log store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentPod {
    /// The pod's name.
    pub name: String,
    /// Its containers (for a gone pod, those the store has lines of), sorted.
    pub containers: Vec<String>,
    /// Whether the pod no longer exists, so its log comes from the store.
    pub gone: bool,
    /// For a gone pod, when its newest kept line was written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_line_at: Option<String>,
}

/// The pods of one service in one environment whose logs can be read: running ones first, then gone ones,
/// newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentPods {
    /// Whether a log store is configured; without one only running pods' logs can be read ("Logs are live
    /// only").
    pub store: bool,
    /// Whether the store could not be asked just now (the gone pods are then missing from `pods`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub store_unavailable: bool,
    /// Since when the store has failed to answer (RFC 3339), while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_unavailable_since: Option<String>,
    /// The pods.
    pub pods: Vec<RecentPod>,
}

/// Gone pods listed at most, so a busy namespace's history cannot grow the picker without bound.
pub const GONE_PODS_LISTED: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_says_where_it_came_from_on_the_wire() {
        let line = LogLine {
            source: LogSource::Store,
            text: "2024-05-01T10:00:00Z started".into(),
        };
        assert_eq!(
            serde_json::to_value(&line).ok(),
            Some(serde_json::json!({"source": "store", "text": "2024-05-01T10:00:00Z started"}))
        );
        assert_eq!(LogSource::Live.as_str(), "live");
    }
}
