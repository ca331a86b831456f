//! Log history: the logs of pods that are gone (crashed, replaced by a rollout, rolled back), read from
//! Loki.
//!
//! Loki is asked only with selectors built here: the cluster is the configured name of the environment's
//! cluster, the namespace the fleet model's, and a pod and container are named only as the store itself
//! listed them for that namespace (the request's text is compared, never sent).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use shared::logs::{GONE_PODS_LISTED, LogLine, LogSource, RecentPod};

use crate::config::LokiConfig;
use crate::upstream::loki::{Direction, Loki, LokiError, Selector};

/// How far back gone pods are looked for and read.
const LOOKBACK_NANOS: i128 = 24 * 3_600 * 1_000_000_000;

/// Gone pods whose newest line is asked for at most, before the newest [`GONE_PODS_LISTED`] are kept.
const GONE_PODS_ASKED: usize = 3 * GONE_PODS_LISTED;

/// The log store and how to name each environment's streams in it.
#[derive(Debug, Clone)]
pub struct LogHistory {
    loki: Loki,
    /// Environment → the `cluster` labels of its workload clusters' streams.
    clusters: Arc<BTreeMap<String, Vec<String>>>,
    /// Since when listing gone pods has failed, while it does (the log panel says so).
    failing_since: Arc<std::sync::Mutex<Option<jiff::Timestamp>>>,
}

/// The pods of one namespace the store has lines of, with their containers.
pub type StoredPods = BTreeMap<String, BTreeSet<String>>;

impl LogHistory {
    /// Loki as configured, for the workload clusters named by environment in `clusters`.
    pub fn new(
        config: &LokiConfig,
        clusters: BTreeMap<String, Vec<String>>,
    ) -> Result<Self, LokiError> {
        Ok(Self {
            loki: Loki::new(config)?,
            clusters: Arc::new(clusters),
            failing_since: Arc::default(),
        })
    }

    fn clusters(&self, environment: &str) -> &[String] {
        self.clusters
            .get(environment)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The pods of `namespace` in `environment` the store has lines of (within the lookback), on any of
    /// its clusters.
    pub async fn stored_pods(
        &self,
        environment: &str,
        namespace: &str,
    ) -> Result<StoredPods, LokiError> {
        Ok(self
            .stored_pods_by_cluster(environment, namespace)
            .await?
            .into_iter()
            .map(|(pod, (_, containers))| (pod, containers))
            .collect())
    }

    /// As [`Self::stored_pods`], each pod with the cluster it ran on.
    async fn stored_pods_by_cluster(
        &self,
        environment: &str,
        namespace: &str,
    ) -> Result<BTreeMap<String, (&str, BTreeSet<String>)>, LokiError> {
        let mut pods = BTreeMap::new();
        for cluster in self.clusters(environment) {
            for (pod, containers) in self.stored_pods_on(cluster, namespace).await? {
                pods.insert(pod, (cluster.as_str(), containers));
            }
        }
        Ok(pods)
    }

    /// The pods of `namespace` on `cluster` the store has lines of.
    async fn stored_pods_on(
        &self,
        cluster: &str,
        namespace: &str,
    ) -> Result<StoredPods, LokiError> {
        let end = now();
        let series = self
            .loki
            .series(
                &Selector {
                    cluster,
                    namespace,
                    pod: None,
                    container: None,
                },
                end - LOOKBACK_NANOS,
                end,
            )
            .await?;
        let mut pods = StoredPods::new();
        for labels in series {
            if let (Some(pod), Some(container)) = (labels.get("pod"), labels.get("container")) {
                pods.entry(pod.clone())
                    .or_default()
                    .insert(container.clone());
            }
        }
        Ok(pods)
    }

    /// The gone pods of `namespace` (those the store has that are not in `live`), newest first, at most
    /// [`GONE_PODS_LISTED`].
    pub async fn gone_pods(
        &self,
        environment: &str,
        namespace: &str,
        live: &BTreeSet<&str>,
    ) -> Result<Vec<RecentPod>, LokiError> {
        let answer = self.ask_gone_pods(environment, namespace, live).await;
        let mut since = self
            .failing_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &answer {
            Ok(_) => *since = None,
            Err(_) => {
                since.get_or_insert_with(jiff::Timestamp::now);
            }
        }
        answer
    }

    /// Since when listing gone pods has failed, while it does.
    pub fn failing_since(&self) -> Option<jiff::Timestamp> {
        *self
            .failing_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn ask_gone_pods(
        &self,
        environment: &str,
        namespace: &str,
        live: &BTreeSet<&str>,
    ) -> Result<Vec<RecentPod>, LokiError> {
        let stored = self.stored_pods_by_cluster(environment, namespace).await?;
        let candidates: Vec<(String, (&str, BTreeSet<String>))> = stored
            .into_iter()
            .filter(|(pod, _)| !live.contains(pod.as_str()))
            .take(GONE_PODS_ASKED)
            .collect();
        let end = now();
        let newest =
            futures::future::join_all(candidates.iter().map(|(pod, (cluster, _))| async move {
                let selector = Selector {
                    cluster,
                    namespace,
                    pod: Some(pod),
                    container: None,
                };
                self.loki
                    .query_range(&selector, end - LOOKBACK_NANOS, end, 1, Direction::Backward)
                    .await
            }))
            .await;
        let mut gone = Vec::with_capacity(candidates.len());
        for ((pod, (_, containers)), answer) in candidates.into_iter().zip(newest) {
            let at = answer?
                .iter()
                .flat_map(|s| s.values.iter().map(|(at, _)| *at))
                .max();
            gone.push((at, pod, containers));
        }
        gone.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(gone
            .into_iter()
            .take(GONE_PODS_LISTED)
            .map(|(at, name, containers)| RecentPod {
                name,
                containers: containers.into_iter().collect(),
                gone: true,
                last_line_at: at.and_then(timestamp).map(|t| t.to_string()),
            })
            .collect())
    }

    /// The last `tail` lines of one container of a gone pod, oldest first, each marked as from the store.
    /// `pod` and `container` must be names [`Self::stored_pods`] returned.
    pub async fn tail(
        &self,
        environment: &str,
        namespace: &str,
        pod: &str,
        container: &str,
        tail: usize,
    ) -> Result<Vec<LogLine>, LokiError> {
        // The pod ran on one of the environment's clusters; asking each is one query per cluster, where
        // looking up which would cost a series listing the caller has just made.
        let end = now();
        let answers = futures::future::join_all(self.clusters(environment).iter().map(
            |cluster| async move {
                let selector = Selector {
                    cluster,
                    namespace,
                    pod: Some(pod),
                    container: Some(container),
                };
                self.loki
                    .query_range(
                        &selector,
                        end - LOOKBACK_NANOS,
                        end,
                        tail,
                        Direction::Backward,
                    )
                    .await
            },
        ))
        .await;
        let mut streams = Vec::new();
        for answer in answers {
            streams.extend(answer?);
        }
        let mut lines: Vec<(i128, String)> = streams.into_iter().flat_map(|s| s.values).collect();
        lines.sort_by_key(|(at, _)| *at);
        let surplus = lines.len().saturating_sub(tail);
        lines.drain(..surplus);
        Ok(lines
            .into_iter()
            .map(|(at, line)| LogLine {
                source: LogSource::Store,
                text: match timestamp(at) {
                    Some(at) => format!("{at} {line}"),
                    None => line,
                },
            })
            .collect())
    }
}

/// Now, in nanoseconds since the epoch, a second ahead: Loki's `end` is exclusive and a line written this
/// instant counts.
fn now() -> i128 {
    jiff::Timestamp::now().as_nanosecond() + 1_000_000_000
}

fn timestamp(nanos: i128) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_nanosecond(nanos).ok()
}
