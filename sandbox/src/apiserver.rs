//! An in-process fake Kubernetes API server.
//!
//! Several clusters share one HTTP listener, each under `/clusters/<name>`: point a kube-rs
//! `Config::new("http://127.0.0.1:PORT/clusters/dev".parse()?)` or
//! `kubectl --server http://127.0.0.1:PORT/clusters/dev` at it. kube-rs keeps a base URL's path
//! prefix (its `BaseUri` layer joins the two), as it must for Rancher-style proxies, so one port
//! serves them all.
//!
//! Simulators and fixtures write through [`ClusterStore`]; clients read, write and watch over HTTP
//! with Kubernetes wire shapes: lists, watches with history and `410 Expired`, selectors, paging,
//! patches, discovery and pod logs.

mod control;
mod discovery;
mod error;
mod http;
mod logs;
mod selector;
mod store;
mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use error::{Result, StoreError};
pub use logs::{ClusterClock, ContainerLines, GeneratedLog, LogGenerator, PodLogSink};
pub use store::{ClusterStore, Retained};

/// Describes one kind of resource the store can hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    /// API group, `""` for the core group.
    pub group: String,
    /// API version within the group, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
    /// Plural resource name used in URLs, e.g. `configmaps`.
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

impl ResourceType {
    /// Reads group, version, kind and plural from a typed resource's metadata.
    pub fn of<K: kube::Resource<DynamicType = ()>>(namespaced: bool) -> Self {
        Self {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            namespaced,
        }
    }

    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The name a real apiserver uses in messages: `configmaps`, `deployments.apps`.
    pub(crate) fn resource_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The types every cluster serves, because kubectl and the portal always ask for them.
    fn builtins() -> Vec<Self> {
        use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
        use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, Service};
        vec![
            Self::of::<Namespace>(false),
            Self::of::<Pod>(true),
            Self::of::<Event>(true),
            Self::of::<ConfigMap>(true),
            Self::of::<Service>(true),
            Self::of::<Deployment>(true),
            Self::of::<ReplicaSet>(true),
        ]
    }
}

/// The resource types every cluster serves; a type's index is its identity inside a store.
#[derive(Debug)]
pub(crate) struct Registry {
    types: Vec<ResourceType>,
}

impl Registry {
    fn new(extra: Vec<ResourceType>) -> Self {
        let mut types: Vec<ResourceType> = Vec::new();
        for t in ResourceType::builtins().into_iter().chain(extra) {
            let taken = types.iter().any(|known| {
                known.group == t.group
                    && known.version == t.version
                    && (known.kind == t.kind || known.plural == t.plural)
            });
            if !taken {
                types.push(t);
            }
        }
        Self { types }
    }

    pub(crate) fn types(&self) -> &[ResourceType] {
        &self.types
    }

    pub(crate) fn get(&self, index: usize) -> &ResourceType {
        &self.types[index]
    }

    /// Finds a type by `apiVersion` and `kind`, as written in objects.
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        self.types
            .iter()
            .position(|t| t.group == group && t.version == version && t.kind == kind)
    }

    /// Finds a type by group, version and plural, as written in URLs.
    pub(crate) fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<usize> {
        self.types
            .iter()
            .position(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// Groups and their versions, core group excluded, in registration order.
    pub(crate) fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.types.iter().filter(|t| !t.group.is_empty()) {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) if !versions.contains(&t.version) => {
                    versions.push(t.version.clone())
                }
                Some(_) => {}
                None => groups.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        groups
    }
}

/// Every fake cluster, by name; cheap to clone.
#[derive(Clone)]
pub struct Clusters {
    clusters: Arc<BTreeMap<String, ClusterStore>>,
}

impl Clusters {
    /// Creates empty clusters that all serve `types` plus the built-in core and apps types.
    pub fn new(names: &[&str], types: Vec<ResourceType>) -> Self {
        let registry = Arc::new(Registry::new(types));
        let clusters = names
            .iter()
            .map(|name| {
                (
                    (*name).to_owned(),
                    ClusterStore::new(name, registry.clone()),
                )
            })
            .collect();
        Self {
            clusters: Arc::new(clusters),
        }
    }

    /// The store of one cluster, if it exists.
    pub fn cluster(&self, name: &str) -> Option<ClusterStore> {
        self.clusters.get(name).cloned()
    }

    /// Names of all clusters, sorted.
    pub fn names(&self) -> Vec<String> {
        self.clusters.keys().cloned().collect()
    }

    /// All HTTP routes, each cluster under `/clusters/{name}/…`.
    pub fn router(&self) -> axum::Router {
        http::router(self.clone())
    }

    /// The sandbox's control routes: `POST /sandbox/clusters/{name}/reachable` with `{"reachable": false}`
    /// takes a cluster down (as [`ClusterStore::set_reachable`]), `true` brings it back.
    pub fn control_router(&self) -> axum::Router {
        control::router(self.clone())
    }
}
