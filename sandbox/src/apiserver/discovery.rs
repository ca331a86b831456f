//! Discovery documents: what kubectl and kube-rs `Discovery` read to map kinds to URLs.
//!
//! Only the legacy (unaggregated) shapes are served. kubectl asks for aggregated discovery first
//! (`Accept: …;as=APIGroupDiscoveryList`) and falls back to these when the answer's Content-Type is
//! plain `application/json`.

use serde_json::{Value, json};

use super::{Registry, ResourceType};

/// Types whose status is not written through a `/status` subresource, by group and kind: built-ins that
/// have no status, and custom types whose CRD declares no status subresource
/// (`deploy/crds/components.platform.tower.dev.yaml`, Argo CD's
/// `sandbox/tests/reference/argocd/application-crd.yaml`); `true` where the status is then an ordinary
/// field written with the rest (the Application's), `false` where there is none to write (a real apiserver
/// drops or prunes it).
const WITHOUT_STATUS_SUBRESOURCE: &[(&str, &str, bool)] = &[
    ("", "ConfigMap", false),
    ("", "Secret", false),
    ("", "Event", false),
    ("platform.tower.dev", "Component", false),
    ("argoproj.io", "Application", true),
];

/// Short names (`kubectl get po`) and categories (`kubectl get all`) by group and plural, as Kubernetes and
/// the CRDs the platform installs declare them (`deploy/crds/`, `sandbox/tests/reference/`).
const SHORT_NAMES_AND_CATEGORIES: &[(&str, &str, &[&str], &[&str])] = &[
    ("", "pods", &["po"], &["all"]),
    ("", "services", &["svc"], &["all"]),
    ("", "configmaps", &["cm"], &[]),
    ("", "namespaces", &["ns"], &[]),
    ("", "events", &["ev"], &[]),
    ("apps", "deployments", &["deploy"], &["all"]),
    ("apps", "replicasets", &["rs"], &["all"]),
    ("platform.tower.dev", "components", &["comp"], &[]),
    ("platform.tower.dev", "releases", &["rel"], &[]),
    ("platform.tower.dev", "databases", &["db"], &[]),
    ("platform.tower.dev", "databaseschemas", &["dbschema"], &[]),
    ("argoproj.io", "applications", &["app", "apps"], &[]),
    ("argoproj.io", "rollouts", &["ro"], &[]),
    (
        "external-secrets.io",
        "externalsecrets",
        &["es"],
        &["external-secrets"],
    ),
    ("pyrra.dev", "servicelevelobjectives", &["slo"], &[]),
    (
        "tekton.dev",
        "pipelines",
        &[],
        &["tekton", "tekton-pipelines"],
    ),
    (
        "tekton.dev",
        "pipelineruns",
        &["pr", "prs"],
        &["tekton", "tekton-pipelines"],
    ),
    (
        "tekton.dev",
        "taskruns",
        &["tr", "trs"],
        &["tekton", "tekton-pipelines"],
    ),
];

/// How objects of a type have their status written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusField {
    /// Through the `/status` subresource only.
    Subresource,
    /// With the rest of the object: status is an ordinary field.
    Plain,
    /// Not at all: the type has no status.
    Absent,
}

/// How objects of type `t` have their status written.
pub(crate) fn status_field(t: &ResourceType) -> StatusField {
    match WITHOUT_STATUS_SUBRESOURCE
        .iter()
        .find(|(group, kind, _)| t.group == *group && t.kind == *kind)
    {
        None => StatusField::Subresource,
        Some((_, _, true)) => StatusField::Plain,
        Some((_, _, false)) => StatusField::Absent,
    }
}

/// `/version`: a recent Kubernetes, so clients don't warn about skew.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-tower-sandbox",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`: the core group's versions.
pub(crate) fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    })
}

fn group_document(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis`: every named group.
pub(crate) fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(g, versions)| group_document(g, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if the group exists.
pub(crate) fn group(registry: &Registry, group: &str) -> Option<Value> {
    let groups = registry.groups();
    let (name, versions) = groups.iter().find(|(g, _)| g == group)?;
    let mut document = group_document(name, versions);
    document["kind"] = json!("APIGroup");
    document["apiVersion"] = json!("v1");
    Some(document)
}

/// `/api/v1` or `/apis/{group}/{version}`, if any type lives there.
pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for t in registry
        .types()
        .iter()
        .filter(|t| t.group == group && t.version == version)
    {
        // Namespaces go one by one: the apiserver has no `deletecollection` for them.
        let verbs: &[&str] = if t.group.is_empty() && t.kind == "Namespace" {
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        };
        let mut resource = json!({
            "name": t.plural,
            "singularName": t.kind.to_lowercase(),
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": verbs,
        });
        if let Some((_, _, short_names, categories)) = SHORT_NAMES_AND_CATEGORIES
            .iter()
            .find(|(group, plural, ..)| t.group == *group && t.plural == *plural)
        {
            // Go leaves empty lists out.
            if !short_names.is_empty() {
                resource["shortNames"] = json!(short_names);
            }
            if !categories.is_empty() {
                resource["categories"] = json!(categories);
            }
        }
        resources.push(resource);
        if status_field(t) == StatusField::Subresource {
            resources.push(json!({
                "name": format!("{}/status", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if group.is_empty() && t.kind == "Pod" {
            resources.push(json!({
                "name": "pods/log",
                "singularName": "",
                "namespaced": true,
                "kind": "Pod",
                "verbs": ["get"],
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}
