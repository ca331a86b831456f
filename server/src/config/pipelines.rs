//! The `pipelines:` key: where CI's Tekton runs are read, how much of their history is kept, and the names of
//! the labels and annotations a run carries its commit, branch and trigger in.

use serde::{Deserialize, Serialize};

use super::{ConfigError, error};

/// Where CI runs and how its runs are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PipelinesConfig {
    /// The cluster (a `name` in `clusters`) whose `tekton.dev/v1` PipelineRuns and TaskRuns are read; absent,
    /// the management cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Only runs in this namespace; absent, every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The newest runs kept in memory per service; older ones are dropped, and run lists say how many.
    #[serde(default = "default_history_per_service")]
    pub history_per_service: usize,
    /// The annotation carrying the full commit a run builds.
    #[serde(default = "default_commit_annotation")]
    pub commit_annotation: String,
    /// The annotation carrying the commit message's first line.
    #[serde(default = "default_message_annotation")]
    pub message_annotation: String,
    /// The annotation carrying the commit's author.
    #[serde(default = "default_author_annotation")]
    pub author_annotation: String,
    /// The annotation carrying the branch a run builds; a run without it counts as built from main.
    #[serde(default = "default_branch_annotation")]
    pub branch_annotation: String,
    /// The annotation naming whoever started a run by hand.
    #[serde(default = "default_started_by_annotation")]
    pub started_by_annotation: String,
    /// The label naming the Tekton Triggers EventListener that started a run; a run without it was started
    /// by hand.
    #[serde(default = "default_trigger_label")]
    pub trigger_label: String,
}

impl Default for PipelinesConfig {
    fn default() -> Self {
        Self {
            cluster: None,
            namespace: None,
            history_per_service: default_history_per_service(),
            commit_annotation: default_commit_annotation(),
            message_annotation: default_message_annotation(),
            author_annotation: default_author_annotation(),
            branch_annotation: default_branch_annotation(),
            started_by_annotation: default_started_by_annotation(),
            trigger_label: default_trigger_label(),
        }
    }
}

/// The most runs per service a configuration may keep: beyond it a service's runs would be most of Tower's
/// memory, and the cluster's own pruning should do the job.
pub const MAX_HISTORY_PER_SERVICE: usize = 100_000;

fn default_history_per_service() -> usize {
    200
}

fn default_commit_annotation() -> String {
    "platform.tower.dev/commit".into()
}

fn default_message_annotation() -> String {
    "platform.tower.dev/commit-message".into()
}

fn default_author_annotation() -> String {
    "platform.tower.dev/author".into()
}

fn default_branch_annotation() -> String {
    "platform.tower.dev/branch".into()
}

fn default_started_by_annotation() -> String {
    "platform.tower.dev/started-by".into()
}

fn default_trigger_label() -> String {
    "triggers.tekton.dev/eventlistener".into()
}

impl PipelinesConfig {
    /// The problems of the key, each named; `clusters` are the configured cluster names.
    pub(super) fn validate<'a>(
        &self,
        clusters: impl IntoIterator<Item = &'a str>,
    ) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        if let Some(cluster) = &self.cluster {
            let names: Vec<&str> = clusters.into_iter().collect();
            if !names.contains(&cluster.as_str()) {
                errors.push(error(
                    "pipelines.cluster",
                    format!(
                        "`{cluster}` is not a cluster in `clusters` (they are: {})",
                        names.join(", ")
                    ),
                ));
            }
        }
        if let Some(namespace) = &self.namespace
            && let Err(problem) = shared::delivery::validate_label("namespace", namespace)
        {
            errors.push(error(
                "pipelines.namespace",
                format!("must be a namespace name. {}", problem.message),
            ));
        }
        if !(1..=MAX_HISTORY_PER_SERVICE).contains(&self.history_per_service) {
            errors.push(error(
                "pipelines.history_per_service",
                format!("must be from 1 to {MAX_HISTORY_PER_SERVICE}"),
            ));
        }
        for (key, name) in [
            ("pipelines.commit_annotation", &self.commit_annotation),
            ("pipelines.message_annotation", &self.message_annotation),
            ("pipelines.author_annotation", &self.author_annotation),
            ("pipelines.branch_annotation", &self.branch_annotation),
            (
                "pipelines.started_by_annotation",
                &self.started_by_annotation,
            ),
            ("pipelines.trigger_label", &self.trigger_label),
        ] {
            if !is_qualified_name(name) {
                errors.push(error(
                    key,
                    "must be a Kubernetes label or annotation key, such as `platform.tower.dev/commit`",
                ));
            }
        }
        errors
    }
}

/// Whether `key` is a Kubernetes label or annotation key: an optional DNS subdomain prefix and `/`, then a
/// name of at most 63 letters, digits, `-`, `_` and `.` that starts and ends with a letter or digit. A label
/// key goes into the watch's label selector, so anything else would change what is selected.
fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let alphanumeric = |b: &u8| b.is_ascii_alphanumeric();
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.as_bytes().first().is_some_and(alphanumeric)
        && name.as_bytes().last().is_some_and(alphanumeric)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let prefix_ok = prefix.is_none_or(|prefix| {
        prefix.len() <= 253
            && prefix.split('.').all(|part| {
                shared::delivery::validate_label("prefix", part).is_ok() && part.len() <= 63
            })
    });
    name_ok && prefix_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_and_annotation_keys_are_qualified_names() {
        for good in [
            "platform.tower.dev/commit",
            "triggers.tekton.dev/eventlistener",
            "commit",
            "a_b.c",
        ] {
            assert!(is_qualified_name(good), "{good}");
        }
        for bad in [
            "",
            "/commit",
            "platform.tower.dev/",
            "Platform.Tower.dev/commit",
            "a/b/c",
            "commit,other",
            "x in (a)",
            &"a".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn each_bad_pipelines_key_is_named() {
        let config = PipelinesConfig {
            cluster: Some("ci".into()),
            namespace: Some("Tekton CI".into()),
            history_per_service: 0,
            trigger_label: "triggers, evil".into(),
            ..PipelinesConfig::default()
        };
        let errors = config.validate(["management", "dev"]);
        let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "pipelines.cluster",
                "pipelines.namespace",
                "pipelines.history_per_service",
                "pipelines.trigger_label"
            ]
        );
        assert!(
            errors[0].message.contains("management, dev"),
            "{}",
            errors[0]
        );
        assert!(
            PipelinesConfig::default()
                .validate(["management"])
                .is_empty()
        );
    }
}
