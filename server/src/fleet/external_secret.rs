//! An ExternalSecret as the watch cache keeps it: the status fields a card reads, typed, and the spec as the
//! JSON text the API server sent, because the Config tab shows it whole. As a `DynamicObject` its spec and
//! status were a tree of about ten small maps, each a whole B-tree node of about 600 bytes however few keys
//! it held; as text the spec costs its length.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, TypeMeta};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecretSpec {
    /// `refreshInterval` (`1h`, `15m`…), read for every card, so not parsed out of the text each time.
    pub refresh_interval: Option<String>,
    /// The whole spec as compact JSON.
    json: Box<str>,
}

impl SecretSpec {
    /// The whole spec as JSON (`null` when there was none).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

impl<'de> Deserialize<'de> for SecretSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spec = Value::deserialize(deserializer)?;
        Ok(Self {
            refresh_interval: spec
                .get("refreshInterval")
                .and_then(Value::as_str)
                .map(str::to_string),
            json: spec.to_string().into_boxed_str(),
        })
    }
}

impl Serialize for SecretSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
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

    /// As a `DynamicObject`, for the Config tab's read-only view of what runs (built per request, for one
    /// service's few objects).
    pub fn to_dynamic(&self) -> DynamicObject {
        DynamicObject {
            types: Some(TypeMeta {
                api_version: format!("{}/{}", EXTERNAL_SECRETS.group, EXTERNAL_SECRETS.version),
                kind: EXTERNAL_SECRETS.kind.to_string(),
            }),
            metadata: self.metadata.clone(),
            data: serde_json::json!({
                "spec": self.spec.to_value(),
                "status": self.status,
            }),
        }
    }
}

impl kube::Resource for ExternalSecret {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind((): &()) -> Cow<'_, str> {
        EXTERNAL_SECRETS.kind.into()
    }

    fn group((): &()) -> Cow<'_, str> {
        EXTERNAL_SECRETS.group.into()
    }

    fn version((): &()) -> Cow<'_, str> {
        EXTERNAL_SECRETS.version.into()
    }

    fn plural((): &()) -> Cow<'_, str> {
        EXTERNAL_SECRETS.resource.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

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
