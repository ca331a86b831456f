//! An Argo CD Application as the watch cache keeps it: the status fields cards, the Platform page and the
//! Config tab read, typed, and the spec as the JSON text the API server sent (the Config tab shows it whole).
//! As a `DynamicObject` a trimmed Application kept about two dozen small JSON maps — the destination, the
//! source, each history entry, each sync result — each a whole B-tree node of about 600 bytes however few
//! keys it held; with two Applications per service they were the largest cache of all.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::typed::{self, ReadOut, SpecText};
use super::watched::APPLICATIONS;

/// An Application: metadata, its spec as sent, and the status Tower reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Application {
    /// Name, namespace, labels, annotations, owners.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The spec, whole, with the destination read out.
    #[serde(default)]
    pub spec: ApplicationSpec,
    /// Sync, health, the last operation and the history.
    #[serde(default)]
    pub status: ApplicationStatus,
}

/// An Application's spec: the JSON text as the API server sent it, and the destination, which every card
/// reads.
pub type ApplicationSpec = SpecText<Destination>;

/// Where an Application deploys (`spec.destination`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Destination {
    /// `destination.name`: the Argo CD cluster it deploys to, by name.
    pub destination_name: Option<String>,
    /// `destination.server`: the same by API server URL.
    pub destination_server: Option<String>,
}

impl ReadOut for Destination {
    fn read_out(spec: &Value) -> Self {
        let destination = |key: &str| {
            spec.get("destination")
                .and_then(|d| d.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Self {
            destination_name: destination("name"),
            destination_server: destination("server"),
        }
    }
}

/// The part of an Application's status Tower reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationStatus {
    /// Synced or not, and to which revision.
    #[serde(default)]
    pub sync: SyncState,
    /// Health, with Argo CD's message.
    #[serde(default)]
    pub health: HealthState,
    /// Public URLs.
    #[serde(default, skip_serializing_if = "Summary::is_empty")]
    pub summary: Summary,
    /// When Argo CD last compared live and target state (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<String>,
    /// Argo CD's conditions (errors and warnings about the Application itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The last (or current) sync operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_state: Option<OperationState>,
    /// Deploys, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEntry>,
    /// The resources it manages; the cache keeps only CustomResourceDefinitions (which Application installs
    /// which kind).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceRef>,
}

/// `status.sync`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct SyncState {
    /// `Synced`, `OutOfSync`, `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The revision compared against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// `status.health`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct HealthState {
    /// `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing`, `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why, when Argo CD says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `status.summary`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Summary {
    /// `externalURLs`.
    #[serde(
        rename = "externalURLs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub external_urls: Vec<String>,
}

impl Summary {
    fn is_empty(&self) -> bool {
        self.external_urls.is_empty()
    }
}

/// One of `status.conditions`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `SyncError`, `ComparisonError`…
    #[serde(rename = "type", default)]
    pub kind: String,
    /// What Argo CD says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Since when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// `status.operationState`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationState {
    /// `Running`, `Succeeded`, `Failed`, `Error`, `Terminating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Argo CD's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it finished (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Each resource's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_result: Option<SyncResult>,
}

/// `status.operationState.syncResult`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct SyncResult {
    /// One entry per resource synced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceResult>,
}

/// One resource's sync outcome.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ResourceResult {
    /// Its kind.
    #[serde(default)]
    pub kind: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// What happened to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One of `status.history`: a sync of a revision.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The revision synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_at: Option<String>,
}

/// One of `status.resources`, by kind and name.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ResourceRef {
    /// Its kind.
    #[serde(default)]
    pub kind: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

impl Application {
    /// Its name.
    pub fn name(&self) -> String {
        self.metadata.name.clone().unwrap_or_default()
    }

    /// As a `DynamicObject`, for the Config tab.
    pub fn to_dynamic(&self) -> DynamicObject {
        typed::dynamic(
            &APPLICATIONS,
            &self.metadata,
            self.spec.to_value(),
            &self.status,
        )
    }
}

typed::watched_resource!(Application, APPLICATIONS);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn what_the_views_read_is_kept_and_the_spec_reads_back_whole() {
        let sent = serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "payments-prod", "namespace": "argocd"},
            "spec": {"project": "default", "destination": {"name": "prod", "namespace": "payments"},
                "source": {"repoURL": "https://example/repo", "path": "components/payments", "targetRevision": "main"},
                "syncPolicy": {"automated": {"prune": true}}},
            "status": {
                "sync": {"status": "OutOfSync", "revision": "abc", "comparedTo": {"source": {}}},
                "health": {"status": "Degraded", "message": "crash"},
                "summary": {"externalURLs": ["https://payments.example"], "images": ["x"]},
                "reconciledAt": "2026-01-01T00:00:00Z",
                "conditions": [{"type": "SyncError", "message": "boom", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "operationState": {"phase": "Failed", "message": "one failed", "startedAt": "a", "finishedAt": "b",
                    "operation": {"sync": {}},
                    "syncResult": {"revision": "abc", "resources": [{"kind": "Deployment", "name": "payments", "message": "bad", "status": "SyncFailed"}]}},
                "history": [{"revision": "aaa", "deployedAt": "t1", "id": 1, "source": {}}],
                "resources": [{"kind": "CustomResourceDefinition", "name": "x.example", "group": "apiextensions.k8s.io", "status": "Synced"}]
            }
        });
        let app: Application = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(app.spec.destination_name.as_deref(), Some("prod"));
        assert_eq!(app.spec.to_value(), sent["spec"]);
        assert_eq!(app.status.sync.status.as_deref(), Some("OutOfSync"));
        assert_eq!(
            app.status.summary.external_urls,
            ["https://payments.example"]
        );
        let operation = app.status.operation_state.as_ref().unwrap();
        assert_eq!(
            operation.sync_result.as_ref().unwrap().resources[0]
                .message
                .as_deref(),
            Some("bad")
        );
        assert_eq!(app.status.history[0].deployed_at.as_deref(), Some("t1"));
        assert_eq!(app.status.resources[0].name, "x.example");

        let shown = app.to_dynamic();
        assert_eq!(shown.types.unwrap().kind, "Application");
        assert_eq!(shown.data["spec"], sent["spec"]);
        assert_eq!(shown.data["status"]["health"], sent["status"]["health"]);
        assert_eq!(
            shown.data["status"]["conditions"],
            sent["status"]["conditions"]
        );
        // What no view reads is not kept.
        assert!(shown.data["status"]["sync"].get("comparedTo").is_none());
        assert!(
            shown.data["status"]["operationState"]
                .get("operation")
                .is_none()
        );
    }

    #[test]
    fn an_application_without_spec_or_status_reads_as_empty() {
        let app: Application =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
        assert_eq!(app.spec.destination_name, None);
        assert_eq!(app.spec.to_value(), Value::Null);
        assert_eq!(app.status, ApplicationStatus::default());
    }
}
