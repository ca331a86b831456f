//! The platform as Argo CD runs it: the Applications the ApplicationSets generate for platform resources
//! (`taskapp-platform`), components (`taskapp-infra`) and Crossplane packages (`taskapp-packages`), read from
//! the Applications' watch cache by the labels in [`shared::platform`].
//!
//! Bring-up order: Argo CD does not order the Applications an ApplicationSet generates, so on a fresh cluster
//! an Application whose chart holds a kind another Application's CRD defines fails until that CRD is
//! installed. Tower tells that apart from a real failure: it reads the missing kind from Argo CD's sync
//! messages ([`shared::platform::missing_kind`]) and finds which Application on the same cluster lists the
//! CRD among its resources ([`Installers`]).
//!
//! The last bump of each component's file is read from git when the Platform page is asked for, through the
//! release records' caches (by main's head, which a push webhook moves), so page views between two commits of
//! main cost no forge call.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use shared::platform::{
    Bump, CLUSTER_LABEL, ComponentCell, ComponentRow, PACKAGE_LABEL, PLATFORM_COMPONENT_LABEL,
    PlatformCluster, PlatformView, RESOURCE_KIND_LABEL, RESOURCE_NAME_LABEL, ResourceApplication,
    StandingCounts, VERSION_ANNOTATION, Waiting, crd_defines, missing_kind, skew,
};

use crate::delivery::releases::ReleaseHistory;
use crate::fleet::application::Application;
use crate::fleet::cards::application_view;

/// The cluster name Argo CD's in-cluster destination stands for: where Argo CD itself runs.
const IN_CLUSTER: &str = "https://kubernetes.default.svc";
/// The management cluster's name, for Applications deploying in-cluster without a cluster label.
const MANAGEMENT: &str = "management";

fn label<'a>(app: &'a Application, key: &str) -> Option<&'a str> {
    app.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The cluster an Application deploys to: its cluster label, else its destination's name, else the
/// management cluster for the in-cluster server.
fn destination_cluster(app: &Application) -> Option<String> {
    if let Some(cluster) = label(app, CLUSTER_LABEL) {
        return Some(cluster.to_string());
    }
    if let Some(name) = app.spec.destination_name.as_deref() {
        return Some(if name == "in-cluster" {
            MANAGEMENT.into()
        } else {
            name.to_string()
        });
    }
    (app.spec.destination_server.as_deref() == Some(IN_CLUSTER)).then(|| MANAGEMENT.to_string())
}

/// Whether an Application is one of the platform's own (a platform resource's, a component's or a
/// package's), rather than a service's deploy.
pub fn is_platform_application(app: &Application) -> bool {
    [RESOURCE_KIND_LABEL, PLATFORM_COMPONENT_LABEL, PACKAGE_LABEL]
        .iter()
        .any(|key| label(app, key).is_some())
}

/// The platform resource a `taskapp-platform` Application applies, as (kind, `metadata.name`).
pub fn resource_of(app: &Application) -> Option<(String, String)> {
    Some((
        label(app, RESOURCE_KIND_LABEL)?.to_string(),
        label(app, RESOURCE_NAME_LABEL)?.to_string(),
    ))
}

/// Which Application installs which CRD, per cluster: every Application's `status.resources` entries of
/// kind CustomResourceDefinition.
#[derive(Debug, Default)]
pub struct Installers {
    /// cluster → (CRD name, Application name).
    by_cluster: HashMap<String, Vec<(String, String)>>,
}

impl Installers {
    /// Reads `applications`.
    pub fn of<'a>(applications: impl IntoIterator<Item = &'a Application>) -> Self {
        let mut by_cluster: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for app in applications {
            let mut names: Vec<(String, String)> = app
                .status
                .resources
                .iter()
                .filter(|r| r.kind == "CustomResourceDefinition")
                .map(|crd| (crd.name.clone(), app.name()))
                .collect();
            if names.is_empty() {
                continue;
            }
            if let Some(cluster) = destination_cluster(app) {
                by_cluster.entry(cluster).or_default().append(&mut names);
            }
        }
        Self { by_cluster }
    }

    /// What `app` waits for, when the only thing keeping it from syncing is a kind whose CRD is missing.
    pub fn waiting(&self, app: &Application) -> Option<Waiting> {
        let status = &app.status;
        let operation = status.operation_state.as_ref();
        let phase = operation.and_then(|o| o.phase.as_deref());
        let synced = status.sync.status.as_deref() == Some("Synced");
        // A converged Application keeps old messages in its last result; only a failing one waits.
        if synced && !matches!(phase, Some("Failed" | "Error" | "Running")) {
            return None;
        }
        let resource_messages = operation
            .and_then(|o| o.sync_result.as_ref())
            .into_iter()
            .flat_map(|result| &result.resources)
            .filter_map(|r| r.message.as_deref());
        let condition_messages = status
            .conditions
            .iter()
            .filter_map(|c| c.message.as_deref());
        let (group, kind) = resource_messages
            .chain(condition_messages)
            .find_map(missing_kind)?;
        let installed = destination_cluster(app)
            .and_then(|cluster| self.by_cluster.get(&cluster))
            .and_then(|crds| crds.iter().find(|(crd, _)| crd_defines(crd, &group, &kind)));
        Some(Waiting {
            kind: format!("{group}/{kind}"),
            crd: installed.map(|(crd, _)| crd.clone()),
            from: installed.map(|(_, app)| app.clone()),
        })
    }
}

/// An Application's link in Argo CD's UI.
pub fn argocd_link(argocd_ui: Option<&str>, app: &Application) -> Option<String> {
    let base = argocd_ui?.trim_end_matches('/');
    let name = app.metadata.name.as_deref()?;
    let namespace = app.metadata.namespace.as_deref().unwrap_or("argocd");
    Some(format!(
        "{base}/applications/{}/{}",
        shared::url::encode_query_value(namespace),
        shared::url::encode_query_value(name)
    ))
}

/// `app` as a card, a database or the Platform page shows it.
pub fn resource_application(
    app: &Application,
    installers: &Installers,
    argocd_ui: Option<&str>,
) -> ResourceApplication {
    ResourceApplication {
        application: application_view(app),
        url: argocd_link(argocd_ui, app),
        waiting: installers.waiting(app),
    }
}

/// The Applications of platform resources, by (kind, `metadata.name`).
pub fn resource_applications(
    applications: &[Arc<Application>],
) -> HashMap<(String, String), Arc<Application>> {
    applications
        .iter()
        .filter_map(|app| {
            let kind = label(app, RESOURCE_KIND_LABEL)?;
            let name = label(app, RESOURCE_NAME_LABEL)?;
            Some(((kind.to_string(), name.to_string()), app.clone()))
        })
        .collect()
}

/// Every platform Application by standing: what the Overview counts.
pub fn standing_counts(applications: &[Arc<Application>]) -> StandingCounts {
    let platform: Vec<&Application> = applications
        .iter()
        .map(Arc::as_ref)
        .filter(|app| is_platform_application(app))
        .collect();
    let installers = Installers::of(applications.iter().map(Arc::as_ref));
    let views: Vec<ResourceApplication> = platform
        .iter()
        .map(|app| resource_application(app, &installers, None))
        .collect();
    StandingCounts::of(&views)
}

/// The Platform page from the Applications, without the last bumps (which [`Bumps::fill`] reads from git).
/// `clusters` are the clusters Tower knows, in order, with their environments: the matrix's columns start
/// with them; a cluster only Argo CD names comes after.
pub fn platform_view(
    applications: &[Arc<Application>],
    clusters: &[(String, Option<String>)],
    argocd_ui: Option<&str>,
) -> PlatformView {
    let installers = Installers::of(applications.iter().map(Arc::as_ref));
    // (row kind, name) → cluster → cell.
    let mut components: BTreeMap<String, BTreeMap<String, ComponentCell>> = BTreeMap::new();
    let mut packages: BTreeMap<String, BTreeMap<String, ComponentCell>> = BTreeMap::new();
    let mut platform_apps = Vec::new();
    for app in applications.iter().map(Arc::as_ref) {
        if !is_platform_application(app) {
            continue;
        }
        let view = resource_application(app, &installers, argocd_ui);
        platform_apps.push(view.clone());
        let cluster = label(app, CLUSTER_LABEL);
        let (rows, directory, name) = match (
            label(app, PLATFORM_COMPONENT_LABEL),
            label(app, PACKAGE_LABEL),
        ) {
            (Some(component), _) => (&mut components, "infra", component),
            (None, Some(package)) => (&mut packages, "packages", package),
            (None, None) => continue,
        };
        let Some(cluster) = cluster else { continue };
        let version = app
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(VERSION_ANNOTATION))
            .cloned();
        rows.entry(name.to_string()).or_default().insert(
            cluster.to_string(),
            ComponentCell {
                cluster: cluster.to_string(),
                version,
                application: view,
                file: format!("{directory}/{name}/{cluster}.yaml"),
                file_url: None,
                last_bump: None,
            },
        );
    }
    let mut columns: Vec<PlatformCluster> = Vec::new();
    let used: BTreeSet<&String> = components
        .values()
        .chain(packages.values())
        .flat_map(BTreeMap::keys)
        .collect();
    for (name, environment) in clusters {
        if used.contains(name) {
            columns.push(PlatformCluster {
                name: name.clone(),
                environment: environment.clone(),
            });
        }
    }
    for name in used {
        if !columns.iter().any(|c| &c.name == name) {
            columns.push(PlatformCluster {
                name: name.clone(),
                environment: None,
            });
        }
    }
    let rows = |by_name: BTreeMap<String, BTreeMap<String, ComponentCell>>| -> Vec<ComponentRow> {
        by_name
            .into_iter()
            .map(|(name, mut cells)| {
                let skew = skew(
                    &name,
                    columns.iter().filter_map(|c| {
                        let cell = cells.get(&c.name)?;
                        Some((c.name.as_str(), cell.version.as_deref()?))
                    }),
                );
                ComponentRow {
                    cells: columns.iter().map(|c| cells.remove(&c.name)).collect(),
                    name,
                    skew,
                }
            })
            .collect()
    };
    let components = rows(components);
    let packages = rows(packages);
    let counts = StandingCounts::of(&platform_apps);
    let mut waiting: Vec<ResourceApplication> = platform_apps
        .into_iter()
        .filter(|app| app.waiting.is_some())
        .collect();
    waiting.sort_by(|a, b| a.application.name.cmp(&b.application.name));
    PlatformView {
        clusters: columns,
        components,
        packages,
        serving_version: env!("CARGO_PKG_VERSION").to_string(),
        counts,
        waiting,
    }
}

/// Fills in each cell's last bump and file link from the newest commits of its file, as
/// [`ReleaseHistory::newest_commits`] reads them (cached by main's head, which a push webhook moves). A
/// failed read leaves the cells without one (logged): the matrix is the watch caches' and stands without git.
pub async fn fill_bumps(view: &mut PlatformView, history: &ReleaseHistory) {
    let files: Vec<String> = view
        .components
        .iter()
        .chain(&view.packages)
        .flat_map(|row| row.cells.iter().flatten().map(|cell| cell.file.clone()))
        .collect();
    let newest = match history.newest_commits(&files).await {
        Ok(newest) => newest,
        Err(error) => {
            tracing::warn!(%error, "reading the component files' history failed; no last bumps");
            return;
        }
    };
    for cell in view
        .components
        .iter_mut()
        .chain(view.packages.iter_mut())
        .flat_map(|row| row.cells.iter_mut().flatten())
    {
        let Some(commit) = newest.get(&cell.file).cloned().flatten() else {
            continue;
        };
        let summary = commit.view();
        // GitHub's file page is the commit's page with `blob` for `commit` and the path after the SHA.
        cell.file_url = commit.html_url.as_deref().and_then(|url| {
            let (base, _) = url.rsplit_once("/commit/")?;
            Some(format!("{base}/blob/{}/{}", commit.sha, cell.file))
        });
        cell.last_bump = Some(Bump {
            commit: commit.sha.clone(),
            author: summary.author,
            at: summary.at,
            message: summary.message,
            url: commit.html_url.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn object(value: Value) -> Arc<Application> {
        Arc::new(serde_json::from_value(value).unwrap_or_else(|error| panic!("{error}")))
    }

    fn infra(component: &str, cluster: &str, version: &str, status: Value) -> Arc<Application> {
        object(json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": format!("infra-{component}-{cluster}"),
                "namespace": "argocd",
                "labels": {PLATFORM_COMPONENT_LABEL: component, CLUSTER_LABEL: cluster},
                "annotations": {VERSION_ANNOTATION: version},
            },
            "spec": {"destination": {"name": cluster}},
            "status": status,
        }))
    }

    fn healthy(resources: Value) -> Value {
        json!({
            "sync": {"status": "Synced"},
            "health": {"status": "Healthy"},
            "operationState": {"phase": "Succeeded", "message": "successfully synced (all tasks run)"},
            "resources": resources,
        })
    }

    fn waiting_for_service_monitors() -> Value {
        json!({
            "sync": {"status": "OutOfSync"},
            "health": {"status": "Missing"},
            "operationState": {
                "phase": "Failed",
                "message": "one or more synchronization tasks are not valid (retried 2 times).",
                "syncResult": {"resources": [{
                    "kind": "ServiceMonitor", "name": "release-operator", "status": "SyncFailed",
                    "message": "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested resource release-operator/release-operator. Make sure the \"ServiceMonitor\" CRD is installed on the destination cluster.",
                }]},
            },
        })
    }

    #[test]
    fn an_app_needing_another_apps_crd_waits_for_it_by_name() {
        let apps = vec![
            infra(
                "metrics-stack",
                "dev",
                "61.3.0",
                json!({"sync": {"status": "OutOfSync"}, "health": {"status": "Progressing"},
                       "operationState": {"phase": "Running"},
                       "resources": [{"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition", "name": "servicemonitors.monitoring.coreos.com"}]}),
            ),
            infra(
                "release-operator",
                "dev",
                "1.9.0",
                waiting_for_service_monitors(),
            ),
            infra("release-operator", "prod", "1.8.2", healthy(json!([]))),
        ];
        let clusters = [
            ("management".to_string(), None),
            ("dev".to_string(), Some("dev".to_string())),
            ("prod".to_string(), Some("prod".to_string())),
        ];
        let view = platform_view(&apps, &clusters, Some("https://argocd.example/"));
        let names: Vec<&str> = view.clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["dev", "prod"], "only clusters with a component");
        let operator = &view.components[1];
        assert_eq!(operator.name, "release-operator");
        assert_eq!(
            operator.skew.as_deref(),
            Some("prod runs release-operator 1.8.2, dev 1.9.0")
        );
        let dev = operator.cells[0].as_ref().map(|c| &c.application);
        assert_eq!(
            dev.and_then(ResourceApplication::problem).as_deref(),
            Some("waiting for servicemonitors.monitoring.coreos.com from infra-metrics-stack-dev")
        );
        assert_eq!(
            dev.and_then(|a| a.url.as_deref()),
            Some("https://argocd.example/applications/argocd/infra-release-operator-dev")
        );
        assert_eq!(
            (
                view.counts.waiting,
                view.counts.failing,
                view.counts.healthy
            ),
            (1, 0, 1)
        );
        assert_eq!(view.waiting.len(), 1);
    }

    #[test]
    fn a_converged_app_no_longer_waits_and_a_plain_failure_is_failing() {
        let mut converged = waiting_for_service_monitors();
        converged["sync"]["status"] = json!("Synced");
        converged["health"]["status"] = json!("Healthy");
        converged["operationState"]["phase"] = json!("Succeeded");
        let mut broken = waiting_for_service_monitors();
        broken["operationState"]["syncResult"]["resources"][0]["message"] =
            json!("admission webhook denied the request");
        let apps = vec![
            infra("tekton", "management", "0.62.1", converged),
            infra("crossplane", "management", "1.17.1", broken),
        ];
        let view = platform_view(&apps, &[], None);
        assert_eq!((view.counts.waiting, view.counts.failing), (0, 1));
        assert_eq!(view.components[1].skew, None);
    }
}
