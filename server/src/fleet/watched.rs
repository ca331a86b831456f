//! Everything Tower reads from Kubernetes, in one list ([`WATCHED`]). The watches take their resources from
//! it ([`checked`] wraps every watch's `Api`, and a debug build panics on a read the list lacks, so any test
//! that starts the watches catches it), and the read-only roles in `deploy/kubernetes/` are rendered from it
//! ([`manifests`]), so a new watch cannot ship without its permission, and no permission outlives its watch.
//!
//! Regenerate the roles with `cargo xtask manifests` (it runs
//! `TOWER_WRITE_MANIFESTS=1 cargo test -p server --lib fleet::watched`); the test below fails on drift.

use std::collections::BTreeMap;

use kube::api::ApiResource;
use kube::{Api, Resource};
use serde_json::{Value, json};

use super::watch::ARGOCD_NAMESPACE;

/// Which of Tower's clusters a read goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cluster {
    /// The management cluster: the platform's resources, Argo CD's, Pyrra's objectives.
    Management,
    /// Each workload cluster: what runs there.
    Workload,
    /// CI's cluster (`pipelines.cluster`; the management cluster unless configured otherwise): Tekton's runs
    /// and their step logs.
    Ci,
}

/// One kind Tower reads, where, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchedKind {
    /// The cluster it is read on.
    pub cluster: Cluster,
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name, with its subresource after a `/` (`pods/log`).
    pub resource: &'static str,
    /// Only in this namespace (a namespaced Role), else in every namespace (the ClusterRole).
    pub namespace: Option<&'static str>,
    /// RBAC verbs: `list` + `watch` for a watch, `get` for a log.
    pub verbs: &'static [&'static str],
}

/// What a watch needs.
const LIST_WATCH: &[&str] = &["list", "watch"];
/// What reading a log needs.
const GET: &[&str] = &["get"];

const fn watch(
    cluster: Cluster,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    resource: &'static str,
) -> WatchedKind {
    WatchedKind {
        cluster,
        group,
        version,
        kind,
        resource,
        namespace: None,
        verbs: LIST_WATCH,
    }
}

const PLATFORM: &str = "platform.tower.dev";

/// `Component`s.
pub const COMPONENTS: WatchedKind = watch(
    Cluster::Management,
    PLATFORM,
    "v1alpha1",
    "Component",
    "components",
);
/// `Release`s.
pub const RELEASES: WatchedKind = watch(
    Cluster::Management,
    PLATFORM,
    "v1alpha1",
    "Release",
    "releases",
);
/// `Database`s.
pub const DATABASES: WatchedKind = watch(
    Cluster::Management,
    PLATFORM,
    "v1alpha1",
    "Database",
    "databases",
);
/// `DatabaseSchema`s.
pub const DATABASE_SCHEMAS: WatchedKind = watch(
    Cluster::Management,
    PLATFORM,
    "v1alpha1",
    "DatabaseSchema",
    "databaseschemas",
);
/// Argo CD's Applications.
pub const APPLICATIONS: WatchedKind = watch(
    Cluster::Management,
    "argoproj.io",
    "v1alpha1",
    "Application",
    "applications",
);
/// Argo CD's ApplicationSets.
pub const APPLICATION_SETS: WatchedKind = watch(
    Cluster::Management,
    "argoproj.io",
    "v1alpha1",
    "ApplicationSet",
    "applicationsets",
);
/// Argo CD's cluster secrets, in its namespace only. The watch asks for metadata only, but RBAC cannot grant
/// less than the whole Secret, so the grant is a Role in that one namespace rather than the ClusterRole.
pub const CLUSTER_SECRETS: WatchedKind = WatchedKind {
    namespace: Some(ARGOCD_NAMESPACE),
    ..watch(Cluster::Management, "", "v1", "Secret", "secrets")
};
/// Pyrra's objectives.
pub const SERVICE_LEVEL_OBJECTIVES: WatchedKind = watch(
    Cluster::Management,
    "pyrra.dev",
    "v1alpha1",
    "ServiceLevelObjective",
    "servicelevelobjectives",
);
/// Tekton's PipelineRuns.
pub const PIPELINE_RUNS: WatchedKind = watch(
    Cluster::Ci,
    "tekton.dev",
    "v1",
    "PipelineRun",
    "pipelineruns",
);
/// Tekton's TaskRuns.
pub const TASK_RUNS: WatchedKind = watch(Cluster::Ci, "tekton.dev", "v1", "TaskRun", "taskruns");
/// A step's log, read from its TaskRun's pod (`routes::pipelines`).
pub const STEP_LOGS: WatchedKind = WatchedKind {
    verbs: GET,
    ..watch(Cluster::Ci, "", "v1", "Pod", "pods/log")
};
/// Namespaces (their labels map events and managed resources to services).
pub const NAMESPACES: WatchedKind = watch(Cluster::Workload, "", "v1", "Namespace", "namespaces");
/// Deployments.
pub const DEPLOYMENTS: WatchedKind =
    watch(Cluster::Workload, "apps", "v1", "Deployment", "deployments");
/// Warning events.
pub const EVENTS: WatchedKind = watch(Cluster::Workload, "", "v1", "Event", "events");
/// Pods.
pub const PODS: WatchedKind = watch(Cluster::Workload, "", "v1", "Pod", "pods");
/// A running pod's log (`routes::logs`).
pub const POD_LOGS: WatchedKind = WatchedKind {
    verbs: GET,
    ..watch(Cluster::Workload, "", "v1", "Pod", "pods/log")
};
/// Argo Rollouts.
pub const ROLLOUTS: WatchedKind = watch(
    Cluster::Workload,
    "argoproj.io",
    "v1alpha1",
    "Rollout",
    "rollouts",
);
/// External Secrets Operator's ExternalSecrets.
pub const EXTERNAL_SECRETS: WatchedKind = watch(
    Cluster::Workload,
    "external-secrets.io",
    "v1",
    "ExternalSecret",
    "externalsecrets",
);

/// Every kind compiled into Tower. Crossplane's claim and managed resource kinds come from the configuration
/// (`crossplane_claims`, `crossplane_composed`) and are added by [`reads`].
pub const WATCHED: &[WatchedKind] = &[
    COMPONENTS,
    RELEASES,
    DATABASES,
    DATABASE_SCHEMAS,
    APPLICATIONS,
    APPLICATION_SETS,
    CLUSTER_SECRETS,
    SERVICE_LEVEL_OBJECTIVES,
    PIPELINE_RUNS,
    TASK_RUNS,
    STEP_LOGS,
    NAMESPACES,
    DEPLOYMENTS,
    EVENTS,
    PODS,
    POD_LOGS,
    ROLLOUTS,
    EXTERNAL_SECRETS,
];

impl WatchedKind {
    /// The kind as kube-rs addresses a dynamic resource.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.into(),
            version: self.version.into(),
            api_version: if self.group.is_empty() {
                self.version.into()
            } else {
                format!("{}/{}", self.group, self.version)
            },
            kind: self.kind.into(),
            plural: self.resource.into(),
        }
    }
}

/// One read as the roles grant it: the owned form of a [`WatchedKind`], so configured kinds fit too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The cluster it is read on.
    pub cluster: Cluster,
    /// API group.
    pub group: String,
    /// Resource (with subresource).
    pub resource: String,
    /// Only in this namespace, else everywhere.
    pub namespace: Option<String>,
    /// RBAC verbs.
    pub verbs: Vec<String>,
}

impl From<&WatchedKind> for Read {
    fn from(kind: &WatchedKind) -> Self {
        Self {
            cluster: kind.cluster,
            group: kind.group.into(),
            resource: kind.resource.into(),
            namespace: kind.namespace.map(str::to_string),
            verbs: kind.verbs.iter().map(|v| v.to_string()).collect(),
        }
    }
}

/// Every read Tower makes: [`WATCHED`] plus the configured Crossplane kinds, watched on workload clusters.
pub fn reads(
    claims: &[crate::config::ResourceKindConfig],
    composed: &[crate::config::ResourceKindConfig],
) -> Vec<Read> {
    let configured = claims.iter().chain(composed).map(|kind| Read {
        cluster: Cluster::Workload,
        group: kind.group.clone(),
        resource: kind.plural.clone(),
        namespace: None,
        verbs: LIST_WATCH.iter().map(|v| v.to_string()).collect(),
    });
    WATCHED.iter().map(Read::from).chain(configured).collect()
}

/// Group, resource and namespace of a list/watch URL as kube-rs builds it (`/api/v1/namespaces/ns/pods`,
/// `/apis/group/version/plural`).
fn parse_url(url: &str) -> Option<(String, String, Option<String>)> {
    let parts: Vec<&str> = url.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    match rest {
        [plural] => Some((group.into(), (*plural).into(), None)),
        ["namespaces", namespace, plural] => {
            Some((group.into(), (*plural).into(), Some((*namespace).into())))
        }
        _ => None,
    }
}

/// Whether `reads` grant list and watch of `api`'s resource on a `cluster` of that kind (CI's reads are
/// granted on the management cluster, where CI runs unless configured otherwise, and vice versa).
pub fn grants<K: Resource>(reads: &[Read], cluster: Cluster, api: &Api<K>) -> bool {
    let Some((group, resource, namespace)) = parse_url(api.resource_url()) else {
        return false;
    };
    reads.iter().any(|read| {
        (read.cluster == cluster
            || matches!(
                (read.cluster, cluster),
                (Cluster::Ci, Cluster::Management) | (Cluster::Management, Cluster::Ci)
            ))
            && read.group == group
            && read.resource == resource
            && (read.namespace.is_none() || read.namespace == namespace)
            && ["list", "watch"]
                .iter()
                .all(|verb| read.verbs.iter().any(|v| v == verb))
    })
}

/// `api` as it was, once checked against [`WATCHED`] for a watch on a `cluster` of that kind: a debug build
/// (every test) panics on a watch the generated roles would forbid; a release build says so in the log.
pub fn checked<K: Resource>(cluster: Cluster, api: Api<K>) -> Api<K> {
    let reads: Vec<Read> = WATCHED.iter().map(Read::from).collect();
    if !grants(&reads, cluster, &api) {
        debug_assert!(
            false,
            "{} on the {cluster:?} cluster is not in fleet::watched::WATCHED: add it, then run `cargo xtask manifests`",
            api.resource_url()
        );
        tracing::error!(
            url = api.resource_url(),
            ?cluster,
            "a watch the roles do not grant"
        );
    }
    api
}

/// The labels on every generated object.
fn labels() -> Value {
    json!({ "app.kubernetes.io/name": "tower", "app.kubernetes.io/part-of": "tower" })
}

/// The RBAC rules granting `reads`: one rule per group and verbs, resources sorted.
fn rules<'a>(reads: impl IntoIterator<Item = &'a Read>) -> Vec<Value> {
    let mut by: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
    for read in reads {
        let resources = by
            .entry((read.group.clone(), read.verbs.clone()))
            .or_default();
        if !resources.contains(&read.resource) {
            resources.push(read.resource.clone());
        }
    }
    by.into_iter()
        .map(|((group, verbs), mut resources)| {
            resources.sort();
            json!({ "apiGroups": [group], "resources": resources, "verbs": verbs })
        })
        .collect()
}

fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role_kind: &str,
    subject: (&str, &str),
) -> Value {
    let mut metadata = json!({ "name": name, "labels": labels() });
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name },
        "subjects": [{ "kind": "ServiceAccount", "name": subject.0, "namespace": subject.1 }],
    })
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": { "name": name, "labels": labels() },
        "rules": rules,
    })
}

/// The namespace Tower runs in on the management cluster, and its reader lives in on workload clusters.
pub const NAMESPACE: &str = "tower";
/// Tower's service account on the management cluster.
pub const SERVICE_ACCOUNT: &str = "tower";
/// The read-only service account on each workload cluster, whose token Tower's configuration holds.
pub const WORKLOAD_READER: &str = "tower-reader";

/// The management cluster's roles: a ClusterRole of every cluster-wide read (Management and CI, as CI runs
/// there by default), and a Role per namespace-bound read.
fn management(reads: &[Read]) -> Vec<Value> {
    let here = |r: &&Read| matches!(r.cluster, Cluster::Management | Cluster::Ci);
    let mut documents = vec![
        cluster_role(
            "tower-read",
            rules(reads.iter().filter(here).filter(|r| r.namespace.is_none())),
        ),
        binding(
            "ClusterRoleBinding",
            "tower-read",
            None,
            "ClusterRole",
            (SERVICE_ACCOUNT, NAMESPACE),
        ),
    ];
    let mut by_namespace: BTreeMap<&str, Vec<&Read>> = BTreeMap::new();
    for read in reads.iter().filter(here) {
        if let Some(namespace) = &read.namespace {
            by_namespace.entry(namespace).or_default().push(read);
        }
    }
    for (namespace, reads) in by_namespace {
        let name = format!("tower-read-{namespace}");
        documents.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": { "name": name, "namespace": namespace, "labels": labels() },
            "rules": rules(reads),
        }));
        documents.push(binding(
            "RoleBinding",
            &name,
            Some(namespace),
            "Role",
            (SERVICE_ACCOUNT, NAMESPACE),
        ));
    }
    documents
}

/// A workload cluster's bundle: the reader's namespace, service account, its long-lived token Secret (the
/// token Tower's `clusters[].token` holds), the ClusterRole and its binding.
fn workload(reads: &[Read]) -> Vec<Value> {
    let here: Vec<&Read> = reads
        .iter()
        .filter(|r| r.cluster == Cluster::Workload)
        .collect();
    let metadata = |name: &str| json!({ "name": name, "namespace": NAMESPACE, "labels": labels() });
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": { "name": NAMESPACE, "labels": labels() },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata(WORKLOAD_READER),
            "automountServiceAccountToken": false,
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": format!("{WORKLOAD_READER}-token"),
                "namespace": NAMESPACE,
                "labels": labels(),
                "annotations": { "kubernetes.io/service-account.name": WORKLOAD_READER },
            },
        }),
        cluster_role(WORKLOAD_READER, rules(here.iter().copied())),
        binding(
            "ClusterRoleBinding",
            WORKLOAD_READER,
            None,
            "ClusterRole",
            (WORKLOAD_READER, NAMESPACE),
        ),
    ]
}

/// The generated files under `deploy/kubernetes/`, as `(path, YAML)`. Crossplane's kinds are the
/// configuration's defaults (`config::default_claim_kinds`, `config::default_composed_kinds`): a platform
/// configuring other kinds adds them to `workload-cluster/rbac.yaml`'s role.
pub fn manifests() -> Result<Vec<(&'static str, String)>, serde_saphyr::SerializeError> {
    let reads = reads(
        &crate::config::default_claim_kinds(),
        &crate::config::default_composed_kinds(),
    );
    let render = |documents: Vec<Value>| -> Result<String, serde_saphyr::SerializeError> {
        let mut out = String::from(
            "# Generated from server/src/fleet/watched.rs (the kinds Tower reads): run `cargo xtask manifests`\n\
             # after changing them, never edit by hand.\n",
        );
        for document in documents {
            out.push_str("---\n");
            out.push_str(&serde_saphyr::to_string(&document)?);
        }
        Ok(out)
    };
    Ok(vec![
        ("base/rbac-management.yaml", render(management(&reads))?),
        ("workload-cluster/rbac.yaml", render(workload(&reads))?),
    ])
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Pod, Secret};
    use kube::api::DynamicObject;
    use shared::crd::Component;

    use super::*;

    fn client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URI"));
        kube::Client::try_from(config).expect("a client")
    }

    /// `deploy/kubernetes/` is what a platform team applies; its roles must grant exactly what the code
    /// reads. Set `TOWER_WRITE_MANIFESTS=1` (or run `cargo xtask manifests`) to regenerate.
    #[test]
    fn the_deployed_roles_are_generated_from_the_watched_kinds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes");
        let files = manifests().expect("manifests serialize");
        if std::env::var_os("TOWER_WRITE_MANIFESTS").is_some() {
            for (name, yaml) in &files {
                let path = dir.join(name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).expect("create the folder");
                }
                std::fs::write(path, yaml).expect("write the manifest");
            }
        }
        for (name, yaml) in &files {
            let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                on_disk == *yaml,
                "deploy/kubernetes/{name} drifted from server/src/fleet/watched.rs: run `cargo xtask manifests` \
                 (or `TOWER_WRITE_MANIFESTS=1 cargo test -p server --lib fleet::watched`)"
            );
        }
    }

    #[tokio::test]
    async fn every_watch_tower_starts_is_one_the_roles_grant() {
        // `checked` panics in a debug build on a watch missing from WATCHED, so starting every watch (against
        // a cluster that never answers) is the test.
        let kinds = crate::config::default_claim_kinds();
        let composed = crate::config::default_composed_kinds();
        let _ = super::super::watch::start(super::super::watch::Clusters {
            management: client(),
            workloads: vec![("dev".into(), "dev".into(), client())],
            claim_kinds: kinds.iter().map(Into::into).collect(),
            composed_kinds: composed.iter().map(Into::into).collect(),
            component_label: "platform.tower.dev/component".into(),
        });
        for namespace in [None, Some("ci".to_string())] {
            let config = crate::config::PipelinesConfig {
                namespace,
                ..Default::default()
            };
            let _ = crate::pipelines::Pipelines::start(
                client(),
                config,
                "platform.tower.dev/component".into(),
                None,
                std::future::ready(()),
            );
        }
    }

    #[tokio::test]
    async fn a_watch_outside_the_list_or_on_the_wrong_cluster_is_not_granted() {
        let reads: Vec<Read> = WATCHED.iter().map(Read::from).collect();
        let components = Api::<Component>::all(client());
        assert!(grants(&reads, Cluster::Management, &components));
        assert!(!grants(&reads, Cluster::Workload, &components));
        let pods = Api::<Pod>::all(client());
        assert!(grants(&reads, Cluster::Workload, &pods));
        assert!(!grants(&reads, Cluster::Management, &pods));
        // Secrets only in Argo CD's namespace, never everywhere.
        let argocd = Api::<Secret>::namespaced(client(), ARGOCD_NAMESPACE);
        assert!(grants(&reads, Cluster::Management, &argocd));
        assert!(!grants(
            &reads,
            Cluster::Management,
            &Api::<Secret>::all(client())
        ));
        // A log is read, never watched.
        let claim = crate::config::default_claim_kinds();
        let ar = ApiResource {
            group: claim[0].group.clone(),
            version: claim[0].version.clone(),
            api_version: format!("{}/{}", claim[0].group, claim[0].version),
            kind: claim[0].kind.clone(),
            plural: claim[0].plural.clone(),
        };
        let claims = Api::<DynamicObject>::all_with(client(), &ar);
        assert!(!grants(&reads, Cluster::Workload, &claims));
        assert!(grants(
            &super::reads(&claim, &[]),
            Cluster::Workload,
            &claims
        ));
    }

    #[tokio::test]
    async fn the_typed_kinds_are_the_ones_their_entries_name() {
        let erased = |ar: ApiResource| (ar.group, ar.version, ar.kind, ar.plural);
        for (entry, typed) in [
            (COMPONENTS, ApiResource::erase::<Component>(&())),
            (RELEASES, ApiResource::erase::<shared::crd::Release>(&())),
            (DATABASES, ApiResource::erase::<shared::crd::Database>(&())),
            (
                DATABASE_SCHEMAS,
                ApiResource::erase::<shared::crd::DatabaseSchema>(&()),
            ),
            (
                NAMESPACES,
                ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
            ),
            (
                DEPLOYMENTS,
                ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
            ),
            (
                EVENTS,
                ApiResource::erase::<k8s_openapi::api::core::v1::Event>(&()),
            ),
            (PODS, ApiResource::erase::<Pod>(&())),
            (CLUSTER_SECRETS, ApiResource::erase::<Secret>(&())),
        ] {
            assert_eq!(erased(entry.api_resource()), erased(typed));
        }
    }

    /// Logs are read by the route handlers (not a watch, so not through [`checked`]): each file that reads one
    /// must have its entry, on the cluster its client points at.
    #[test]
    fn every_log_read_has_its_grant() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for (file, entry) in [
            ("routes/logs.rs", POD_LOGS),
            ("routes/pipelines.rs", STEP_LOGS),
        ] {
            let text = std::fs::read_to_string(src.join(file)).expect("the route exists");
            assert!(
                text.contains("log_stream("),
                "{file} no longer reads a log: drop its entry"
            );
            assert!(WATCHED.contains(&entry));
        }
        // No other file reads anything from a cluster outside the watches.
        let mut readers = Vec::new();
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read src").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path)
                    && (text.contains("log_stream(")
                        || text.contains(".logs(")
                        || text.contains("Api::"))
                {
                    readers.push(
                        path.strip_prefix(&src)
                            .map(|p| p.display().to_string())
                            .unwrap_or_default(),
                    );
                }
            }
        }
        readers.sort();
        assert_eq!(
            readers,
            [
                "fleet/watch.rs",
                "fleet/watched.rs",
                "pipelines.rs",
                "routes/logs.rs",
                "routes/pipelines.rs"
            ],
            "a new file reads from Kubernetes: add what it reads to fleet::watched::WATCHED"
        );
    }
}
