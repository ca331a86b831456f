//! Resource trees: an Application's live objects on its destination cluster, each as a
//! `v1alpha1ResourceNode` with parents, health, info and images as Argo CD computes them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::apiserver::ClusterStore;

/// Where an Application deploys to, and which component's objects are its own.
pub(super) struct Destination {
    /// The Argo CD cluster name (`dev`, `prod`), if one can be told.
    pub(super) cluster: Option<String>,
    /// The destination namespace.
    pub(super) namespace: String,
    /// The component whose labelled objects the Application manages.
    pub(super) component: String,
}

/// Reads the destination from `spec.destination`, falling back to the platform's discovery labels.
pub(super) fn destination(app: &Value) -> Destination {
    let text = |pointer: &str| {
        app.pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let label = |key: &str| text(&format!("/metadata/labels/{}", key.replace('/', "~1")));
    let component = label(shared::crd::COMPONENT_LABEL)
        .or_else(|| text("/metadata/name"))
        .unwrap_or_default();
    Destination {
        cluster: text("/spec/destination/name").or_else(|| label(shared::crd::ENVIRONMENT_LABEL)),
        namespace: text("/spec/destination/namespace").unwrap_or_else(|| component.clone()),
        component,
    }
}

/// Kinds that are never part of an Application's tree.
const SKIPPED_KINDS: [&str; 2] = ["Event", "Namespace"];

/// The tree's nodes: objects in `namespace` labelled with `component`, then everything they own,
/// transitively (a Rollout's ReplicaSets and their Pods), ordered as Argo CD orders them.
pub(super) fn nodes(store: &ClusterStore, namespace: &str, component: &str) -> Vec<Value> {
    let mut candidates = Vec::new();
    for rt in store.registry().types() {
        if SKIPPED_KINDS.contains(&rt.kind.as_str()) && rt.group.is_empty() {
            continue;
        }
        // The namespace's objects only: at scale a cluster holds tens of thousands of others.
        candidates.extend(store.list_namespaced(&rt.api_version(), &rt.kind, namespace));
    }
    let labelled = |o: &Value| {
        o.pointer("/metadata/labels")
            .and_then(|l| l.get(shared::crd::COMPONENT_LABEL))
            .and_then(Value::as_str)
            == Some(component)
    };
    let uid = |o: &Value| {
        o.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // Objects labelled directly are the managed ones; owned objects join in rounds until none do.
    let mut members: BTreeSet<String> =
        candidates.iter().filter(|o| labelled(o)).map(uid).collect();
    loop {
        let before = members.len();
        for object in &candidates {
            if owners(object).any(|owner| members.contains(&owner)) {
                members.insert(uid(object));
            }
        }
        if members.len() == before {
            break;
        }
    }
    let included: Vec<&Value> = candidates
        .iter()
        .filter(|o| members.contains(&uid(o)))
        .collect();
    let by_uid: BTreeMap<String, &Value> = included.iter().map(|o| (uid(o), *o)).collect();
    let mut nodes: Vec<Value> = included.iter().map(|o| node(o, &by_uid)).collect();
    nodes.sort_by_key(|n| {
        let field = |k: &str| {
            n.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        (
            field("group"),
            field("kind"),
            field("namespace"),
            field("name"),
        )
    });
    nodes
}

/// The uids of an object's owners.
fn owners(object: &Value) -> impl Iterator<Item = String> + '_ {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_owned))
}

fn group_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// One `v1alpha1ResourceNode`.
fn node(object: &Value, by_uid: &BTreeMap<String, &Value>) -> Value {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let kind = text("/kind");
    let (group, version) = group_version(text("/apiVersion"));
    let mut node = Map::new();
    node.insert("group".into(), json!(group));
    node.insert("version".into(), json!(version));
    node.insert("kind".into(), json!(kind));
    node.insert("namespace".into(), json!(text("/metadata/namespace")));
    node.insert("name".into(), json!(text("/metadata/name")));
    node.insert("uid".into(), json!(text("/metadata/uid")));
    node.insert(
        "resourceVersion".into(),
        json!(text("/metadata/resourceVersion")),
    );
    let parents: Vec<Value> = owners(object)
        .filter_map(|owner| by_uid.get(&owner).copied())
        .map(|parent| {
            let parent_text = |pointer: &str| {
                parent
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            let (group, version) = group_version(parent_text("/apiVersion"));
            json!({
                "group": group,
                "version": version,
                "kind": parent_text("/kind"),
                "namespace": parent_text("/metadata/namespace"),
                "name": parent_text("/metadata/name"),
                "uid": parent_text("/metadata/uid"),
            })
        })
        .collect();
    if !parents.is_empty() {
        node.insert("parentRefs".into(), json!(parents));
    }
    if let Some((status, message)) = health(kind, object) {
        let mut health = json!({"status": status});
        if !message.is_empty() {
            health["message"] = json!(message);
        }
        node.insert("health".into(), health);
    }
    let info = info(kind, object);
    if !info.is_empty() {
        node.insert("info".into(), json!(info));
    }
    let images = images(kind, object);
    if !images.is_empty() {
        node.insert("images".into(), json!(images));
    }
    let networking = match kind {
        "Service" => object
            .pointer("/spec/selector")
            .map(|selector| json!({"targetLabels": selector})),
        "Pod" => object
            .pointer("/metadata/labels")
            .map(|labels| json!({"labels": labels})),
        _ => None,
    };
    if let Some(networking) = networking {
        node.insert("networkingInfo".into(), networking);
    }
    let created = text("/metadata/creationTimestamp");
    if !created.is_empty() {
        node.insert("createdAt".into(), json!(created));
    }
    Value::Object(node)
}

fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Argo CD's built-in health checks for the kinds the platform deploys; `None` for kinds without
/// one (ConfigMaps, Secrets), which Argo CD shows without health.
fn health(kind: &str, object: &Value) -> Option<(String, String)> {
    let status = |s: &str, m: String| Some((s.to_owned(), m));
    match kind {
        "Pod" => pod_health(object),
        "ReplicaSet" | "Deployment" | "StatefulSet" => {
            let desired = object
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let available = int(object, "/status/availableReplicas");
            let stalled = conditions(object).any(|c| {
                c.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded")
            });
            if stalled {
                status(
                    "Degraded",
                    format!(
                        "{kind} \"{}\" has timed out progressing.",
                        object
                            .pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                    ),
                )
            } else if available < desired {
                status(
                    "Progressing",
                    format!(
                        "Waiting for rollout to finish: {available} of {desired} updated replicas are available..."
                    ),
                )
            } else {
                status("Healthy", String::new())
            }
        }
        "Rollout" => {
            // Argo Rollouts reports its own phase; Argo CD's health check passes it through.
            let phase = object
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("Progressing");
            let message = object
                .pointer("/status/message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            status(phase, message.to_owned())
        }
        "Service" => {
            let balancer =
                object.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
            let ingress = object
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .is_some_and(|i| !i.is_empty());
            if balancer && !ingress {
                status("Progressing", String::new())
            } else {
                status("Healthy", String::new())
            }
        }
        "ConfigMap" | "Secret" | "ServiceAccount" => None,
        _ => condition_health(object),
    }
}

fn conditions(object: &Value) -> impl Iterator<Item = &Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// ExternalSecrets, Crossplane claims and most operators: the `Ready` condition decides.
fn condition_health(object: &Value) -> Option<(String, String)> {
    let ready = conditions(object).find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let message = |c: &Value| {
        c.get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match ready {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => {
            Some(("Healthy".into(), message(c)))
        }
        Some(c) if c.get("status").and_then(Value::as_str) == Some("False") => {
            Some(("Degraded".into(), message(c)))
        }
        Some(c) => Some(("Progressing".into(), message(c))),
        None if object.get("status").is_some() => Some(("Progressing".into(), String::new())),
        None => None,
    }
}

fn pod_health(pod: &Value) -> Option<(String, String)> {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    let statuses: Vec<&Value> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    // A waiting reason like CrashLoopBackOff makes the pod Degraded whatever its phase says.
    for container in &statuses {
        if let Some(waiting) = container.pointer("/state/waiting") {
            let reason = waiting
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if matches!(
                reason,
                "CrashLoopBackOff"
                    | "ErrImagePull"
                    | "ImagePullBackOff"
                    | "CreateContainerConfigError"
            ) {
                let message = waiting
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or(reason);
                return Some(("Degraded".into(), message.to_owned()));
            }
        }
    }
    let message = pod
        .pointer("/status/message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let ready = !statuses.is_empty()
        && statuses
            .iter()
            .all(|c| c.get("ready").and_then(Value::as_bool) == Some(true));
    match phase {
        "Succeeded" => Some(("Healthy".into(), message)),
        "Failed" => Some(("Degraded".into(), message)),
        "Running" if ready => Some(("Healthy".into(), message)),
        _ => Some(("Progressing".into(), message)),
    }
}

/// The info items Argo CD's UI shows under a node.
fn info(kind: &str, object: &Value) -> Vec<Value> {
    let item = |name: &str, value: String| json!({"name": name, "value": value});
    match kind {
        "Pod" => {
            let statuses: Vec<&Value> = object
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            let total = object
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(statuses.len(), Vec::len);
            let ready = statuses
                .iter()
                .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                .count();
            let restarts: i64 = statuses.iter().map(|c| int(c, "/restartCount")).sum();
            let reason = statuses
                .iter()
                .find_map(|c| c.pointer("/state/waiting/reason").and_then(Value::as_str))
                .or_else(|| object.pointer("/status/phase").and_then(Value::as_str))
                .unwrap_or("Pending");
            let mut items = vec![item("Status Reason", reason.to_owned())];
            if let Some(node) = object.pointer("/spec/nodeName").and_then(Value::as_str) {
                items.push(item("Node", node.to_owned()));
            }
            items.push(item("Containers", format!("{ready}/{total}")));
            if restarts > 0 {
                items.push(item("Restart Count", restarts.to_string()));
            }
            items
        }
        "ReplicaSet" | "Deployment" | "Rollout" => object
            .pointer("/metadata/annotations")
            .and_then(|a| {
                a.get("deployment.kubernetes.io/revision")
                    .or_else(|| a.get("rollout.argoproj.io/revision"))
            })
            .and_then(Value::as_str)
            .map(|rev| vec![item("Revision", format!("Rev:{rev}"))])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Container images: a Pod's own, or its template's for workloads.
fn images(kind: &str, object: &Value) -> Vec<String> {
    let containers = match kind {
        "Pod" => object.pointer("/spec/containers"),
        "ReplicaSet" | "Deployment" | "Rollout" | "StatefulSet" | "DaemonSet" | "Job" => {
            object.pointer("/spec/template/spec/containers")
        }
        _ => None,
    };
    containers
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("image").and_then(Value::as_str).map(str::to_owned))
        .collect()
}
