//! The platform as Argo CD runs it (`/platform`): the Applications the five ApplicationSets generate from the
//! four directories of `application-repositories`, read by label.
//!
//! - `taskapp-platform` makes one Application per file of `platform/` (a Component, Release, Database or
//!   DatabaseSchema, applied as-is to the management cluster), labelled with the resource's kind and name, so
//!   each resource has its own sync and health ([`RESOURCE_KIND_LABEL`], [`RESOURCE_NAME_LABEL`]).
//! - `taskapp-infra` makes one Application per `infra/<component>/<cluster>.yaml`, labelled with the
//!   platform component and the cluster ([`PLATFORM_COMPONENT_LABEL`], [`CLUSTER_LABEL`]); its chart version
//!   is the component's version there.
//! - `taskapp-packages` makes one per `packages/<package>/<cluster>.yaml` ([`PACKAGE_LABEL`]).
//!
//! The pure logic here: version skew between clusters in words, and telling an Application that only waits
//! for another one's CustomResourceDefinition (the bring-up order Argo CD does not declare) from a real
//! failure.

use serde::{Deserialize, Serialize};

use crate::fleet::{ApplicationView, Health, SyncStatus};

/// On a `taskapp-platform` Application: the kind of the platform resource it applies
/// (`Component`, `Release`, `Database`, `DatabaseSchema`).
pub const RESOURCE_KIND_LABEL: &str = "platform.tower.dev/resource-kind";
/// On a `taskapp-platform` Application: the `metadata.name` of the platform resource it applies.
pub const RESOURCE_NAME_LABEL: &str = "platform.tower.dev/resource-name";
/// On a `taskapp-infra` Application: the platform component it installs (`release-operator`, `tower`, …).
pub const PLATFORM_COMPONENT_LABEL: &str = "platform.tower.dev/platform-component";
/// On a `taskapp-packages` Application: the Crossplane package it installs.
pub const PACKAGE_LABEL: &str = "platform.tower.dev/package";
/// On `taskapp-infra` and `taskapp-packages` Applications: the cluster (Argo CD's cluster name) it deploys to.
pub const CLUSTER_LABEL: &str = "platform.tower.dev/cluster";
/// On `taskapp-infra` and `taskapp-packages` Applications: the version the file asks for (the chart's, or the
/// package's tag), which the generator copies from the file.
pub const VERSION_ANNOTATION: &str = "platform.tower.dev/version";
/// Tower's own platform component: its row says which version serves the page.
pub const TOWER_COMPONENT: &str = "tower";

/// One platform resource's own Application (or an infra component's), as a card, the databases tab and the
/// Platform page show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceApplication {
    /// Argo CD's view: sync, health, the last sync's result.
    pub application: ApplicationView,
    /// The Application in Argo CD's UI, when Tower knows Argo CD's address.
    pub url: Option<String>,
    /// Set when it fails only because a CustomResourceDefinition it needs is not installed yet.
    pub waiting: Option<Waiting>,
}

/// An Application waiting for a CustomResourceDefinition another Application installs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// What is missing, as `group/Kind` (`monitoring.coreos.com/ServiceMonitor`).
    pub kind: String,
    /// The CRD by name (`servicemonitors.monitoring.coreos.com`), when an Application on the same cluster
    /// lists it among its resources.
    pub crd: Option<String>,
    /// The Application that installs it, when known.
    pub from: Option<String>,
}

impl ResourceApplication {
    /// How it stands, in one word for counting.
    pub fn standing(&self) -> Standing {
        let app = &self.application;
        // Missing alone is an Application not synced yet (a fresh cluster), not a failure.
        if self.waiting.is_some() {
            Standing::Waiting
        } else if app.health == Health::Degraded
            || app
                .operation
                .as_ref()
                .is_some_and(|op| matches!(op.phase.as_str(), "Failed" | "Error"))
        {
            Standing::Failing
        } else if app.sync == SyncStatus::OutOfSync {
            Standing::OutOfSync
        } else if matches!(app.health, Health::Progressing)
            || app
                .operation
                .as_ref()
                .is_some_and(|op| op.phase == "Running")
        {
            Standing::Progressing
        } else if app.health == Health::Healthy && app.sync == SyncStatus::Synced {
            Standing::Healthy
        } else {
            Standing::Unknown
        }
    }

    /// What is wrong with it in words, for a card or a row; `None` when it is Synced and Healthy (or still
    /// settling).
    pub fn problem(&self) -> Option<String> {
        let app = &self.application;
        if let Some(waiting) = &self.waiting {
            return Some(waiting.words());
        }
        let mut parts = Vec::new();
        if app.sync == SyncStatus::OutOfSync {
            parts.push("OutOfSync".to_string());
        }
        if matches!(app.health, Health::Degraded | Health::Missing) {
            parts.push(format!("{:?}", app.health));
        }
        let failed = app
            .operation
            .as_ref()
            .filter(|op| matches!(op.phase.as_str(), "Failed" | "Error"));
        if parts.is_empty() && failed.is_none() {
            return None;
        }
        let mut words = format!("Application {}", app.name);
        if parts.is_empty() {
            words.push_str(": its last sync failed");
        } else {
            words.push_str(" is ");
            words.push_str(&parts.join(" and "));
        }
        if let Some(message) = failed
            .and_then(|op| op.message.as_deref())
            .or(app.health_message.as_deref())
        {
            words.push_str(": ");
            words.push_str(message);
        }
        Some(words)
    }
}

impl Waiting {
    /// `waiting for servicemonitors.monitoring.coreos.com from infra-metrics-stack-dev`.
    pub fn words(&self) -> String {
        let what = self.crd.as_deref().unwrap_or(&self.kind);
        match &self.from {
            Some(app) => format!("waiting for {what} from {app}"),
            None => format!("waiting for {what}, which no Application installs yet"),
        }
    }
}

/// How an Application stands, for the Platform page's counts: waiting apps are kept apart from failures.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Synced and Healthy.
    Healthy,
    /// Syncing or rolling out.
    Progressing,
    /// Live differs from git, nothing failing.
    OutOfSync,
    /// Only waiting for another Application's CRD: converges by retry.
    Waiting,
    /// Degraded, missing, or its sync failed for another reason.
    Failing,
    /// Not known yet.
    #[default]
    Unknown,
}

/// Counts of platform Applications by [`Standing`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandingCounts {
    /// Synced and Healthy.
    pub healthy: u32,
    /// Syncing or rolling out.
    pub progressing: u32,
    /// OutOfSync, nothing failing.
    pub out_of_sync: u32,
    /// Waiting for another app's CRD.
    pub waiting: u32,
    /// Real failures.
    pub failing: u32,
    /// Not known.
    pub unknown: u32,
}

impl StandingCounts {
    /// Counts `applications`.
    pub fn of<'a>(applications: impl IntoIterator<Item = &'a ResourceApplication>) -> Self {
        let mut counts = Self::default();
        for app in applications {
            let slot = match app.standing() {
                Standing::Healthy => &mut counts.healthy,
                Standing::Progressing => &mut counts.progressing,
                Standing::OutOfSync => &mut counts.out_of_sync,
                Standing::Waiting => &mut counts.waiting,
                Standing::Failing => &mut counts.failing,
                Standing::Unknown => &mut counts.unknown,
            };
            *slot += 1;
        }
        counts
    }
}

/// `GET /api/v1/platform`: the platform's own components and Crossplane packages per cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformView {
    /// The matrix's columns: every cluster Argo CD deploys to, management first.
    pub clusters: Vec<PlatformCluster>,
    /// One row per platform component (`infra/<component>/`), by name.
    pub components: Vec<ComponentRow>,
    /// One row per Crossplane package (`packages/<package>/`), by name.
    pub packages: Vec<ComponentRow>,
    /// The version of the Tower serving this answer.
    pub serving_version: String,
    /// Every platform Application (components, packages and platform resources) by standing.
    pub counts: StandingCounts,
    /// The platform Applications that wait for another one's CRD, by name.
    pub waiting: Vec<ResourceApplication>,
}

/// A column of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformCluster {
    /// Argo CD's name for it.
    pub name: String,
    /// Its `environment` label.
    pub environment: Option<String>,
}

/// A row: one component (or package) on each cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentRow {
    /// `release-operator`, `provider-aws-rds`, …
    pub name: String,
    /// One per [`PlatformView::clusters`], in that order; `None` where it is not installed.
    pub cells: Vec<Option<ComponentCell>>,
    /// The version skew between clusters in words, when the clusters run different versions.
    pub skew: Option<String>,
}

/// A component on a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentCell {
    /// The cluster.
    pub cluster: String,
    /// The version `infra/` asks for there (the Application's chart version or package version).
    pub version: Option<String>,
    /// Its Application.
    pub application: ResourceApplication,
    /// Its file in `application-repositories` (`infra/release-operator/dev.yaml`).
    pub file: String,
    /// That file on the forge's web UI.
    pub file_url: Option<String>,
    /// The newest commit that changed the file, when read.
    pub last_bump: Option<Bump>,
}

/// A commit that changed a component's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bump {
    /// Full SHA.
    pub commit: String,
    /// Its author's login or name (a bot's for CI bumps).
    pub author: String,
    /// RFC 3339.
    pub at: String,
    /// Its message's first line.
    pub message: String,
    /// The commit on the forge.
    pub url: Option<String>,
}

/// Versions compared as dotted numbers (`v1.10.0` after `v1.9.2`), falling back to text.
fn version_key(version: &str) -> Vec<Result<u64, String>> {
    version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u64>().map_err(|_| part.to_string()))
        .collect()
}

/// The skew between clusters running `component` in words, oldest version first: `prod runs
/// release-operator 1.8.2, dev 1.9.0`, or `None` when every cluster that has a version runs the same one.
pub fn skew<'a>(
    component: &str,
    versions: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let mut by_version: Vec<(&str, Vec<&str>)> = Vec::new();
    for (cluster, version) in versions {
        match by_version.iter_mut().find(|(v, _)| *v == version) {
            Some((_, clusters)) => clusters.push(cluster),
            None => by_version.push((version, vec![cluster])),
        }
    }
    if by_version.len() < 2 {
        return None;
    }
    by_version.sort_by_key(|(version, _)| version_key(version));
    let group = |clusters: &[&str]| match clusters {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    let mut words = Vec::new();
    for (index, (version, clusters)) in by_version.iter().enumerate() {
        if index == 0 {
            let verb = if clusters.len() == 1 { "runs" } else { "run" };
            words.push(format!("{} {verb} {component} {version}", group(clusters)));
        } else {
            words.push(format!("{} {version}", group(clusters)));
        }
    }
    Some(words.join(", "))
}

/// The kind Argo CD could not find, from its sync message: `The Kubernetes API could not find
/// monitoring.coreos.com/ServiceMonitor for requested resource ns/name. Make sure the "ServiceMonitor" CRD
/// is installed on the destination cluster.` gives `("monitoring.coreos.com", "ServiceMonitor")`.
pub fn missing_kind(message: &str) -> Option<(String, String)> {
    const LEAD: &str = "could not find ";
    let start = message.find(LEAD)? + LEAD.len();
    let rest = &message[start..];
    let gvk = rest.split_whitespace().next()?;
    if !rest.contains("CRD is installed") {
        return None;
    }
    let (group, kind) = gvk.rsplit_once('/')?;
    // A core kind (`/ConfigMap`) is never a CRD.
    (!kind.is_empty() && !group.is_empty()).then(|| (group.to_string(), kind.to_string()))
}

/// Whether a CRD named `crd` (`servicemonitors.monitoring.coreos.com`) defines `kind` of `group`: its name is
/// the plural and the group, and a plural starts with the kind in lower case (`servicemonitors`,
/// `policies` being the exception the `y` covers).
pub fn crd_defines(crd: &str, group: &str, kind: &str) -> bool {
    let Some((plural, crd_group)) = crd.split_once('.') else {
        return false;
    };
    let kind = kind.to_ascii_lowercase();
    crd_group == group
        && (plural.starts_with(&kind)
            || kind
                .strip_suffix('y')
                .is_some_and(|stem| plural == format!("{stem}ies")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::OperationView;

    fn app(sync: SyncStatus, health: Health, phase: Option<&str>) -> ResourceApplication {
        ResourceApplication {
            application: ApplicationView {
                name: "release-payments-prod".into(),
                sync,
                revision: None,
                health,
                health_message: None,
                operation: phase.map(|phase| OperationView {
                    phase: phase.into(),
                    message: Some("one or more objects failed to apply".into()),
                    started_at: None,
                    finished_at: None,
                }),
                external_urls: vec![],
                reconciled_at: None,
            },
            url: None,
            waiting: None,
        }
    }

    #[test]
    fn skew_names_the_lagging_cluster_first() {
        assert_eq!(
            skew(
                "release-operator",
                [("management", "1.9.0"), ("dev", "1.9.0"), ("prod", "1.8.2")]
            ),
            Some("prod runs release-operator 1.8.2, management and dev 1.9.0".into())
        );
        assert_eq!(
            skew("tekton", [("dev", "v0.62.0"), ("prod", "v0.62.0")]),
            None
        );
        // Ten after nine, not before.
        assert_eq!(
            skew("crossplane", [("dev", "1.10.0"), ("prod", "1.9.3")]),
            Some("prod runs crossplane 1.9.3, dev 1.10.0".into())
        );
    }

    #[test]
    fn a_missing_crd_is_read_from_argo_cds_message() {
        let message = "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested \
            resource release-operator/release-operator. Make sure the \"ServiceMonitor\" CRD is installed on \
            the destination cluster.";
        assert_eq!(
            missing_kind(message),
            Some(("monitoring.coreos.com".into(), "ServiceMonitor".into()))
        );
        assert_eq!(missing_kind("one or more objects failed to apply"), None);
        assert!(crd_defines(
            "servicemonitors.monitoring.coreos.com",
            "monitoring.coreos.com",
            "ServiceMonitor"
        ));
        assert!(crd_defines(
            "networkpolicies.crd.projectcalico.org",
            "crd.projectcalico.org",
            "NetworkPolicy"
        ));
        assert!(!crd_defines(
            "prometheusrules.monitoring.coreos.com",
            "monitoring.coreos.com",
            "ServiceMonitor"
        ));
    }

    #[test]
    fn waiting_is_counted_apart_from_failing() {
        let mut waiting = app(SyncStatus::OutOfSync, Health::Missing, Some("Failed"));
        waiting.waiting = Some(Waiting {
            kind: "argoproj.io/Rollout".into(),
            crd: Some("rollouts.argoproj.io".into()),
            from: Some("infra-argo-rollouts-dev".into()),
        });
        let failing = app(SyncStatus::Synced, Health::Degraded, None);
        let fine = app(SyncStatus::Synced, Health::Healthy, Some("Succeeded"));
        let counts = StandingCounts::of([&waiting, &failing, &fine]);
        assert_eq!((counts.waiting, counts.failing, counts.healthy), (1, 1, 1));
        assert_eq!(
            waiting.problem().as_deref(),
            Some("waiting for rollouts.argoproj.io from infra-argo-rollouts-dev")
        );
        assert_eq!(fine.problem(), None);
    }

    #[test]
    fn an_out_of_sync_or_degraded_application_says_so_in_words() {
        assert_eq!(
            app(SyncStatus::OutOfSync, Health::Healthy, Some("Succeeded"))
                .problem()
                .as_deref(),
            Some("Application release-payments-prod is OutOfSync")
        );
        assert_eq!(
            app(SyncStatus::Synced, Health::Degraded, Some("Failed"))
                .problem()
                .as_deref(),
            Some(
                "Application release-payments-prod is Degraded: one or more objects failed to apply"
            )
        );
    }
}
