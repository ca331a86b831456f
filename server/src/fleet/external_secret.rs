//! An ExternalSecret as the watch cache keeps it: the status fields a card reads, typed, and the spec as the
//! JSON text the API server sent, because the Config tab shows it whole. As a `DynamicObject` its spec and
//! status were a tree of about ten small maps, each a whole B-tree node of about 600 bytes however few keys
//! it held; as text the spec costs its length.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::typed::{self, ReadOut, SpecText};
use super::watched::EXTERNAL_SECRETS;

/// An ExternalSecret: its metadata, its spec as sent, and the status a card reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ExternalSecret {
    /// Name, namespace and labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The spec, whole.
    #[serde(default)]
    pub spec: SecretSpec,
    /// Whether it synced, and when it last did.
    #[serde(default)]
    pub status: SecretStatus,
}

/// An ExternalSecret's spec: the JSON text as the API server sent it, with the one field a card reads.
pub type SecretSpec = SpecText<Refresh>;

/// What a card reads of an ExternalSecret's spec.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Refresh {
    /// `refreshInterval` (`1h`, `15m`…), read for every card, so not parsed out of the text each time.
    pub refresh_interval: Option<String>,
}

impl ReadOut for Refresh {
    fn read_out(spec: &Value) -> Self {
        Self {
            refresh_interval: spec
                .get("refreshInterval")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

/// The part of an ExternalSecret's status a card and the Config tab read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretStatus {
    /// `Ready` and any other conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// When the operator last refreshed the secret (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_time: Option<String>,
}

/// One status condition.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `Deleted`…
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// A word on why (`SecretSynced`, `SecretSyncedError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the operator says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Since when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl ExternalSecret {
    /// The condition of `kind`, if the operator set it.
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.kind == kind)
    }

    /// As a `DynamicObject`, for the Config tab.
    pub fn to_dynamic(&self) -> DynamicObject {
        typed::dynamic(
            &EXTERNAL_SECRETS,
            &self.metadata,
            self.spec.to_value(),
            &self.status,
        )
    }
}

typed::watched_resource!(ExternalSecret, EXTERNAL_SECRETS);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_spec_reads_back_whole_and_the_status_keeps_what_is_shown() {
        let sent = serde_json::json!({
            "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
            "metadata": {"name": "payments-db", "namespace": "payments", "labels": {"app": "payments"}},
            "spec": {"refreshInterval": "1h", "secretStoreRef": {"name": "vault", "kind": "ClusterSecretStore"},
                "data": [{"secretKey": "password", "remoteRef": {"key": "payments/db"}}]},
            "status": {"refreshTime": "2025-05-01T08:00:00Z", "syncedResourceVersion": "1-abc",
                "binding": {"name": "payments-db"},
                "conditions": [{"type": "Ready", "status": "False", "reason": "SecretSyncedError",
                    "message": "vault sealed", "lastTransitionTime": "2025-05-01T08:00:00Z"}]},
        });
        let secret: ExternalSecret = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(secret.spec.refresh_interval.as_deref(), Some("1h"));
        assert_eq!(secret.spec.to_value(), sent["spec"]);
        let ready = secret.condition("Ready").unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.message.as_deref()),
            ("False", Some("vault sealed"))
        );

        let shown = secret.to_dynamic();
        assert_eq!(shown.types.unwrap().api_version, "external-secrets.io/v1");
        assert_eq!(shown.data["spec"], sent["spec"]);
        assert_eq!(
            shown.data["status"]["conditions"],
            sent["status"]["conditions"]
        );
        assert_eq!(
            shown.data["status"]["refreshTime"],
            sent["status"]["refreshTime"]
        );
        // What no view reads is not kept.
        assert!(shown.data["status"].get("binding").is_none());
    }

    #[test]
    fn a_secret_without_spec_or_status_reads_as_empty() {
        let secret: ExternalSecret =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
        assert_eq!(secret.spec.refresh_interval, None);
        assert_eq!(secret.spec.to_value(), Value::Null);
        assert!(secret.condition("Ready").is_none());
    }
}
