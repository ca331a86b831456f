//! A Pod as the watch cache keeps it: only the fields a card's pod row reads, read straight from the API
//! server's JSON. Pods outnumber every other watched kind (five per service in the scale sandbox), and
//! `k8s_openapi`'s `Pod` costs several kilobytes each even once trimmed: its spec, status and every container
//! are structs of a hundred optional fields each, allocated whether set or not. Reading into this type also
//! spares the first list the whole pods it would otherwise build and then trim.
//!
//! The fields keep `Pod`'s names and shapes, so the code reading them reads like the code reading a `Pod`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};

/// A Pod: its metadata, its containers' names and images, and the status a card shows.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Pod {
    /// Name, namespace and labels (the watch drops the rest).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpec>,
    /// Phase, start and each container's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

/// A Pod's spec: its containers.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct PodSpec {
    /// The containers, in the order the spec lists them (the first is the service's own).
    #[serde(default)]
    pub containers: Vec<Container>,
}

/// A container of the spec.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Container {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// A Pod's status.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// When the kubelet accepted the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Each container's readiness, restarts and state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Vec<ContainerStatus>>,
}

/// A container's status.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatus {
    /// The container's name.
    #[serde(default)]
    pub name: String,
    /// Whether it passes its readiness probe.
    #[serde(default)]
    pub ready: bool,
    /// How often it restarted.
    #[serde(default)]
    pub restart_count: i32,
    /// Its state, kept only while it waits (the card shows the reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
}

/// A container's state; of it only waiting is read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ContainerState {
    /// Set while the container waits to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<ContainerStateWaiting>,
}

/// Why a container waits.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ContainerStateWaiting {
    /// `CrashLoopBackOff`, `ImagePullBackOff`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl k8s_openapi::Resource for Pod {
    const API_VERSION: &'static str =
        <k8s_openapi::api::core::v1::Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <k8s_openapi::api::core::v1::Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <k8s_openapi::api::core::v1::Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str =
        <k8s_openapi::api::core::v1::Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str =
        <k8s_openapi::api::core::v1::Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for Pod {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_reads_its_containers_and_status_and_nothing_else() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "cart-1", "namespace": "cart", "labels": {"app": "cart"}},
            "spec": {
                "containers": [{"name": "app", "image": "ghcr.io/acme/cart:abc", "env": [{"name": "A"}]}],
                "volumes": [{"name": "config"}],
            },
            "status": {
                "phase": "Pending",
                "podIP": "10.0.0.1",
                "containerStatuses": [{"name": "app", "ready": false, "restartCount": 2, "image": "x",
                    "imageID": "", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "m"}}}],
            },
        }))
        .expect("a pod");
        assert_eq!(
            serde_json::to_value(&pod).expect("json"),
            serde_json::json!({
                "metadata": {"name": "cart-1", "namespace": "cart", "labels": {"app": "cart"}},
                "spec": {"containers": [{"name": "app", "image": "ghcr.io/acme/cart:abc"}]},
                "status": {
                    "phase": "Pending",
                    "containerStatuses": [{"name": "app", "ready": false, "restartCount": 2,
                        "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
                },
            })
        );
        let kind = <Pod as kube::Resource>::kind(&());
        assert_eq!(
            (kind.as_ref(), <Pod as kube::Resource>::plural(&()).as_ref()),
            ("Pod", "pods")
        );
    }
}
