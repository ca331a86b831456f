//! The watch caches: one kube-rs reflector per kind per cluster, each marking the services it touches dirty,
//! and the per-cluster connection state (connected, relisting, unreachable since …) they report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod, Secret};
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use shared::crd::{Component, Database, DatabaseSchema, Release};
use shared::fleet::{FleetEvent, SourceState, SourceStatus};
use tokio::sync::{broadcast, mpsc};

use super::cards::CLAIM_NAMESPACE_LABEL;
use super::watched::{self, Cluster, checked};
use super::{Dirty, Stores, WorkloadStores};

/// Argo CD's namespace on the management cluster, where its cluster secrets live.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// The label marking a Secret as one of Argo CD's clusters (`…=cluster`).
pub const CLUSTER_SECRET_LABEL: &str = "argocd.argoproj.io/secret-type";

/// A kind watched by name rather than by a compiled-in type: a Crossplane claim or managed resource kind.
#[derive(Debug, Clone)]
pub struct ResourceKind {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
}

impl From<&crate::config::ResourceKindConfig> for ResourceKind {
    fn from(config: &crate::config::ResourceKindConfig) -> Self {
        Self {
            group: config.group.clone(),
            version: config.version.clone(),
            kind: config.kind.clone(),
            plural: config.plural.clone(),
        }
    }
}

impl ResourceKind {
    fn api_resource(&self) -> ApiResource {
        argo_resource(&self.group, &self.version, &self.kind, &self.plural)
    }
}

/// The Kubernetes side of the fleet: the management cluster and the workload clusters.
pub struct Clusters {
    /// The management cluster's client.
    pub management: Client,
    /// `(environment, cluster name, client)` of each workload cluster.
    pub workloads: Vec<(String, String, Client)>,
    /// Claim kinds to watch on workload clusters.
    pub claim_kinds: Vec<ResourceKind>,
    /// Managed resource kinds to watch on workload clusters, shown under the claims they were composed for.
    pub composed_kinds: Vec<ResourceKind>,
    /// The component label, the only thing a watch needs to know to mark a service.
    pub component_label: String,
}

fn argo_resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Starts every watch; returns the stores, the per-cluster states and the dirty channel's receiver.
pub fn start(
    clusters: Clusters,
) -> (
    Stores,
    Sources,
    mpsc::UnboundedSender<Dirty>,
    mpsc::UnboundedReceiver<Dirty>,
) {
    let (dirty_tx, dirty_rx) = mpsc::unbounded_channel();
    let sources = Sources::default();
    let label = Arc::new(clusters.component_label.clone());
    let mark_by_label = {
        let label = label.clone();
        move |meta: &kube::api::ObjectMeta| {
            meta.labels
                .as_ref()
                .and_then(|l| l.get(label.as_str()).cloned())
        }
    };

    let management = sources.register("management", None);
    spawn_recovery_probe(management.clone(), clusters.management.clone());
    let m = &clusters.management;
    let stores = Stores {
        components: spawn(
            checked(Cluster::Management, Api::<Component>::all(m.clone())),
            (),
            management.clone(),
            dirty_tx.clone(),
            |c: &Component| Some(c.name_any()),
        ),
        releases: spawn(
            checked(Cluster::Management, Api::<Release>::all(m.clone())),
            (),
            management.clone(),
            dirty_tx.clone(),
            |r: &Release| Some(r.spec.component.clone()),
        ),
        databases: spawn(
            checked(Cluster::Management, Api::<Database>::all(m.clone())),
            (),
            management.clone(),
            dirty_tx.clone(),
            |d: &Database| Some(d.spec.name.clone()),
        ),
        schemas: spawn(
            checked(Cluster::Management, Api::<DatabaseSchema>::all(m.clone())),
            (),
            management.clone(),
            dirty_tx.clone(),
            {
                let mark = mark_by_label.clone();
                move |s: &DatabaseSchema| {
                    mark(&s.metadata).or_else(|| Some(s.spec.database.clone()))
                }
            },
        ),
        applications: {
            let ar = watched::APPLICATIONS.api_resource();
            spawn(
                checked(Cluster::Management, Api::all_with(m.clone(), &ar)),
                ar,
                management.clone(),
                dirty_tx.clone(),
                {
                    let service = by_label(label.clone());
                    // A service's deploy marks its service; one of the platform's own marks the platform
                    // (and, for a platform resource's, the services showing that resource).
                    move |app: &DynamicObject| {
                        service(app).map(Dirty::Service).or_else(|| {
                            crate::platform::is_platform_application(app)
                                .then(|| Dirty::Platform(crate::platform::resource_of(app)))
                        })
                    }
                },
            )
        },
        application_sets: {
            let ar = watched::APPLICATION_SETS.api_resource();
            // No service is marked: the `/config` page reads the store when asked.
            spawn(
                checked(Cluster::Management, Api::all_with(m.clone(), &ar)),
                ar,
                management.clone(),
                dirty_tx.clone(),
                |_: &DynamicObject| None::<String>,
            )
        },
        // Metadata only (`PartialObjectMetadata`): the clusters' labels, never their credentials.
        cluster_secrets: spawn_with(
            checked(
                Cluster::Management,
                Api::<PartialObjectMeta<Secret>>::namespaced(m.clone(), ARGOCD_NAMESPACE),
            ),
            (),
            watcher::Config::default().labels(&format!("{CLUSTER_SECRET_LABEL}=cluster")),
            |_| {},
            management.clone(),
            dirty_tx.clone(),
            |_: &PartialObjectMeta<Secret>| None::<String>,
        ),
        slos: {
            let ar = watched::SERVICE_LEVEL_OBJECTIVES.api_resource();
            spawn(
                checked(Cluster::Management, Api::all_with(m.clone(), &ar)),
                ar,
                management.clone(),
                dirty_tx.clone(),
                by_label(label.clone()),
            )
        },
        workloads: clusters.workloads.iter().fold(
            BTreeMap::<String, Vec<WorkloadStores>>::new(),
            |mut by_environment, (environment, cluster, client)| {
                let source = sources.register(cluster, Some(environment.clone()));
                spawn_recovery_probe(source.clone(), client.clone());
                // Rollouts and ExternalSecrets (from `watched::WATCHED`) and the configured Crossplane kinds.
                let dynamic = |ar: ApiResource| {
                    spawn(
                        Api::<DynamicObject>::all_with(client.clone(), &ar),
                        ar,
                        source.clone(),
                        dirty_tx.clone(),
                        by_label(label.clone()),
                    )
                };
                // Created first: the events and composed watches map each object to a service through it.
                let namespaces = spawn_with(
                    checked(Cluster::Workload, Api::<Namespace>::all(client.clone())),
                    (),
                    watcher::Config::default(),
                    trim_namespace,
                    source.clone(),
                    dirty_tx.clone(),
                    // A namespace that gains its labels late makes its events count from then on.
                    by_label(label.clone()),
                );
                let stores = WorkloadStores {
                    cluster: cluster.clone(),
                    deployments: spawn_with(
                        checked(Cluster::Workload, Api::<Deployment>::all(client.clone())),
                        (),
                        watcher::Config::default(),
                        trim_deployment,
                        source.clone(),
                        dirty_tx.clone(),
                        by_label(label.clone()),
                    ),
                    events: spawn_with(
                        checked(Cluster::Workload, Api::<Event>::all(client.clone())),
                        (),
                        // Cards show only warnings; Normal events are most of a cluster's events and
                        // would cost memory and recomputes for nothing.
                        watcher::Config::default().fields("type=Warning"),
                        trim_event,
                        source.clone(),
                        dirty_tx.clone(),
                        {
                            let mark = mark_by_label.clone();
                            let namespaces = namespaces.clone();
                            move |e: &Event| {
                                let namespace = e.metadata.namespace.as_deref()?;
                                mark(&namespaces.get(&ObjectRef::new(namespace))?.metadata)
                            }
                        },
                    ),
                    namespaces: namespaces.clone(),
                    pods: spawn(
                        checked(Cluster::Workload, Api::<Pod>::all(client.clone())),
                        (),
                        source.clone(),
                        dirty_tx.clone(),
                        by_label(label.clone()),
                    ),
                    rollouts: dynamic(watched::ROLLOUTS.api_resource()),
                    secrets: dynamic(watched::EXTERNAL_SECRETS.api_resource()),
                    claims: clusters
                        .claim_kinds
                        .iter()
                        .map(|c| dynamic(c.api_resource()))
                        .collect(),
                    composed: clusters
                        .composed_kinds
                        .iter()
                        .map(|c| {
                            let ar = c.api_resource();
                            spawn_with(
                                Api::<DynamicObject>::all_with(client.clone(), &ar),
                                ar.clone(),
                                watcher::Config::default(),
                                move |o: &mut DynamicObject| trim_composed(o, &ar),
                                source.clone(),
                                dirty_tx.clone(),
                                {
                                    // Managed resources are cluster-scoped and carry no platform labels;
                                    // the namespace of the claim they serve does.
                                    let mark = mark_by_label.clone();
                                    let namespaces = namespaces.clone();
                                    move |o: &DynamicObject| {
                                        let namespace = o.labels().get(CLAIM_NAMESPACE_LABEL)?;
                                        mark(&namespaces.get(&ObjectRef::new(namespace))?.metadata)
                                    }
                                },
                            )
                        })
                        .collect(),
                };
                by_environment
                    .entry(environment.clone())
                    .or_default()
                    .push(stores);
                by_environment
            },
        ),
    };
    (stores, sources, dirty_tx, dirty_rx)
}

/// How often an unreachable cluster is asked whether it is back.
const RECOVERY_PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// How often a cluster that is fine is asked whether it is still ready.
const READINESS_PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// How long `/readyz` may take: an API server asks etcd with a timeout of its own (two seconds by default)
/// before it answers that etcd fails.
const READINESS_ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);

/// What a cluster's `/readyz` says.
#[derive(Debug, PartialEq, Eq)]
enum Readiness {
    /// Ready, or not Tower's to ask (a `403` or `404`: some clusters keep `/readyz` from their readers).
    Ready,
    /// The API server answers but is not ready (its etcd lost, say): its open watches go silent rather than
    /// fail, so without this the cards would show the last picture as if it were current.
    NotReady(String),
    /// No answer: the watches fail by themselves and say so.
    Unanswered,
}

async fn readiness(client: &Client) -> Readiness {
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return Readiness::Unanswered;
    };
    match tokio::time::timeout(READINESS_ANSWER_WITHIN, client.request_text(request)).await {
        Ok(Ok(_)) => Readiness::Ready,
        Ok(Err(kube::Error::Api(status))) if status.code >= 500 => {
            // The body lists each check, `[-]etcd failed: reason withheld` for the failing ones.
            let failing: Vec<&str> = status
                .message
                .lines()
                .filter_map(|line| line.strip_prefix("[-]"))
                .map(|check| check.split(' ').next().unwrap_or(check))
                .collect();
            Readiness::NotReady(if failing.is_empty() {
                format!("the API server is not ready ({})", status.code)
            } else {
                format!(
                    "the API server is not ready: {} failing",
                    failing.join(", ")
                )
            })
        }
        Ok(Err(kube::Error::Api(_))) => Readiness::Ready,
        Ok(Err(_)) | Err(_) => Readiness::Unanswered,
    }
}

/// Asks each cluster's API server whether it is ready: now and then while the cluster is fine, since an API
/// server that lost its etcd keeps its watches open and silent; often while it is unreachable, since watches
/// only say a cluster is back when something changes there, which may be never.
fn spawn_recovery_probe(source: SourceHandle, client: Client) {
    let probe = source.add_watch_of("readiness");
    // Fine until it says otherwise: the first picture does not wait for it.
    source.healthy(probe, SourceState::Connected);
    tokio::spawn(async move {
        loop {
            let unreachable = source.is_unreachable();
            tokio::time::sleep(if unreachable {
                RECOVERY_PROBE_EVERY
            } else {
                READINESS_PROBE_EVERY
            })
            .await;
            match readiness(&client).await {
                Readiness::Ready if source.is_unreachable() => source.recovered(),
                Readiness::Ready | Readiness::Unanswered => {}
                Readiness::NotReady(reason) => {
                    tracing::warn!(cluster = %source.cluster, %reason, "cluster not ready");
                    source.failed(probe, &reason);
                }
            }
        }
    });
}

/// Starts one reflector whose events mark `key(object)` dirty and report to `source`.
fn spawn<K, D>(
    api: Api<K>,
    dyntype: K::DynamicType,
    source: SourceHandle,
    dirty: mpsc::UnboundedSender<Dirty>,
    key: impl Fn(&K) -> Option<D> + Send + 'static,
) -> Store<K>
where
    D: Into<Dirty>,
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync + 'static,
{
    spawn_with(
        api,
        dyntype,
        watcher::Config::default(),
        |_: &mut K| {},
        source,
        dirty,
        key,
    )
}

/// Drops what no card reads from a Deployment: the pod template (the pods themselves are watched) and the
/// annotations (`last-applied-configuration` alone repeats the whole object).
fn trim_deployment(deployment: &mut Deployment) {
    deployment.metadata.annotations = None;
    deployment.spec.template = Default::default();
}

/// Keeps a Namespace's name and labels: all the events watch needs to find the service.
fn trim_namespace(namespace: &mut Namespace) {
    namespace.metadata.annotations = None;
    namespace.spec = None;
    namespace.status = None;
}

/// Keeps what a card reads from a managed resource: name, kind, labels (which claim it serves) and the
/// status conditions. Its spec and `status.atProvider` repeat the cloud resource's whole configuration, and
/// its annotations hold Crossplane's bookkeeping; a fleet has many of them.
fn trim_composed(resource: &mut DynamicObject, kind: &ApiResource) {
    let metadata = &mut resource.metadata;
    metadata.annotations = None;
    metadata.owner_references = None;
    metadata.finalizers = None;
    // Items of a list may come without their type; the card shows the kind.
    resource.types.get_or_insert_with(|| kube::api::TypeMeta {
        api_version: kind.api_version.clone(),
        kind: kind.kind.clone(),
    });
    let conditions = resource
        .data
        .pointer_mut("/status/conditions")
        .map(serde_json::Value::take);
    resource.data = match conditions {
        Some(conditions) => serde_json::json!({"status": {"conditions": conditions}}),
        None => serde_json::json!({}),
    };
}

/// Drops the parts of an Event no card shows.
fn trim_event(event: &mut Event) {
    event.metadata.annotations = None;
    event.metadata.labels = None;
    event.related = None;
}

/// As [`spawn`], watching with `config` and trimming each object with `trim` before it is stored.
fn spawn_with<K, D>(
    api: Api<K>,
    dyntype: K::DynamicType,
    config: watcher::Config,
    trim: impl Fn(&mut K) + Send + 'static,
    source: SourceHandle,
    dirty: mpsc::UnboundedSender<Dirty>,
    key: impl Fn(&K) -> Option<D> + Send + 'static,
) -> Store<K>
where
    D: Into<Dirty>,
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync + 'static,
{
    let kind = K::kind(&dyntype).to_string();
    let writer = reflector::store::Writer::new(dyntype);
    let reader = writer.as_reader();
    let watch_id = source.add_watch_of(&kind);
    let stream = watcher(api, config)
        .default_backoff()
        // Nobody reads managed fields, and they are a large share of each object.
        .modify(move |object: &mut K| {
            object.meta_mut().managed_fields = None;
            trim(object);
        })
        .reflect(writer);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut not_served_logged = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Apply(object) | watcher::Event::Delete(object)) => {
                    source.healthy(watch_id, SourceState::Connected);
                    if let Some(marked) = key(&object) {
                        let _ = dirty.send(marked.into());
                    }
                }
                Ok(watcher::Event::Init) => {
                    // Listing works again: the role allows the kind (now).
                    source.forbidden(watch_id, false);
                    source.healthy(watch_id, SourceState::Relisting);
                }
                Ok(watcher::Event::InitApply(_)) => {}
                Ok(watcher::Event::InitDone) => {
                    source.healthy(watch_id, SourceState::Connected);
                    let _ = dirty.send(Dirty::All);
                }
                // An optional kind (Rollouts, claims, composed resources…) whose CRD is not installed on
                // this cluster, or one Tower's role may not list (Argo CD's cluster secrets): nothing of it
                // to show, and no reason to call the whole cluster down. The watcher keeps retrying with
                // backoff, so the kind shows up once it is installed or allowed.
                Err(error) if is_kind_not_served(&error) => {
                    if !not_served_logged {
                        tracing::info!(cluster = %source.cluster, %error, "this kind is not served here; showing none");
                        not_served_logged = true;
                    }
                    // Not installed is normal; not allowed is a role missing a rule, which the cards say
                    // rather than showing a blank where the kind would be.
                    source.forbidden(watch_id, is_forbidden(&error));
                    source.healthy(watch_id, SourceState::Connected);
                }
                Err(error) => {
                    tracing::warn!(cluster = %source.cluster, %error, "watch failed; retrying with backoff");
                    source.failed(watch_id, &error.to_string());
                }
            }
        }
    });
    reader
}

/// The service an object belongs to by its component `label`.
fn by_label<K: Resource>(label: Arc<String>) -> impl Fn(&K) -> Option<String> + Send + 'static {
    move |object| {
        object
            .meta()
            .labels
            .as_ref()
            .and_then(|labels| labels.get(label.as_str()).cloned())
    }
}

/// Whether listing failed because the cluster does not serve the kind at all (`404` on the list).
pub(crate) fn is_kind_not_served(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        // By code: a real API server answers a group or version it does not serve with a bare
        // `404 page not found`, no Status, and kube's `is_not_found` looks only at the reason then.
        | watcher::Error::WatchStartFailed(kube::Error::Api(status)) => {
            status.code == 404 || status.code == 403
        }
        _ => false,
    }
}

/// Whether listing or watching failed because Tower's role may not (`403`).
fn is_forbidden(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status)) => status.code == 403,
        _ => false,
    }
}

#[derive(Debug, Clone)]
struct ClusterState {
    environment: Option<String>,
    /// Each watch's state, by id.
    watches: Vec<SourceState>,
    /// Each watch's kind, by id (for Tower's own metrics and the cards' forbidden kinds).
    kinds: Vec<String>,
    /// The watches whose kind Tower's role may not list, by id.
    forbidden: BTreeSet<usize>,
}

#[derive(Default)]
struct SourcesInner {
    clusters: BTreeMap<String, ClusterState>,
    listener: Option<(broadcast::Sender<FleetEvent>, mpsc::UnboundedSender<Dirty>)>,
}

/// The connection state of every cluster, rolled up from its watches.
#[derive(Clone)]
pub struct Sources {
    inner: Arc<Mutex<SourcesInner>>,
    /// Ticks whenever any watch's state changes, for [`Sources::settled`].
    changed: Arc<tokio::sync::watch::Sender<()>>,
}

impl Default for Sources {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            changed: Arc::new(tokio::sync::watch::Sender::new(())),
        }
    }
}

/// A cluster's handle for its watches to report through.
#[derive(Clone)]
pub struct SourceHandle {
    sources: Sources,
    cluster: String,
}

fn roll_up(watches: &[SourceState]) -> SourceState {
    // Unreachable wins (earliest since); then syncing; then relisting; else connected.
    if let Some(unreachable) = watches
        .iter()
        .filter(|w| matches!(w, SourceState::Unreachable { .. }))
        .min_by_key(|w| match w {
            SourceState::Unreachable { since, .. } => since.clone(),
            _ => String::new(),
        })
    {
        return unreachable.clone();
    }
    if watches.contains(&SourceState::Syncing) {
        return SourceState::Syncing;
    }
    if watches.contains(&SourceState::Relisting) {
        return SourceState::Relisting;
    }
    SourceState::Connected
}

impl Sources {
    fn lock(&self) -> std::sync::MutexGuard<'_, SourcesInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a cluster.
    pub fn register(&self, cluster: &str, environment: Option<String>) -> SourceHandle {
        self.lock().clusters.insert(
            cluster.to_string(),
            ClusterState {
                environment,
                watches: Vec::new(),
                kinds: Vec::new(),
                forbidden: BTreeSet::new(),
            },
        );
        SourceHandle {
            sources: self.clone(),
            cluster: cluster.to_string(),
        }
    }

    /// The handle of a registered cluster, for watches started elsewhere (the pipeline caches).
    pub fn handle(&self, cluster: &str) -> Option<SourceHandle> {
        self.lock()
            .clusters
            .contains_key(cluster)
            .then(|| SourceHandle {
                sources: self.clone(),
                cluster: cluster.to_string(),
            })
    }

    /// Where changes are announced.
    pub fn set_listener(
        &self,
        events: broadcast::Sender<FleetEvent>,
        dirty: mpsc::UnboundedSender<Dirty>,
    ) {
        self.lock().listener = Some((events, dirty));
    }

    /// Every cluster's rolled-up state.
    pub fn statuses(&self) -> Vec<SourceStatus> {
        self.lock()
            .clusters
            .iter()
            .map(|(cluster, state)| SourceStatus {
                cluster: cluster.clone(),
                environment: state.environment.clone(),
                state: roll_up(&state.watches),
            })
            .collect()
    }

    /// Every watch's state by cluster and kind, for Tower's own metrics (read when scraped).
    pub fn watch_states(&self) -> Vec<(String, String, SourceState)> {
        let inner = self.lock();
        inner
            .clusters
            .iter()
            .flat_map(|(cluster, state)| {
                state.watches.iter().enumerate().map(|(id, watch)| {
                    let kind = state.kinds.get(id).map_or("other", String::as_str);
                    (cluster.clone(), kind.to_string(), watch.clone())
                })
            })
            .collect()
    }

    /// Workload clusters that are unreachable, by name, with since when.
    pub fn unreachable_since(&self) -> BTreeMap<String, String> {
        self.statuses()
            .into_iter()
            .filter(|s| s.environment.is_some())
            .filter_map(|s| Some((s.cluster, super::unreachable_since(&s.state)?)))
            .collect()
    }

    /// The kinds Tower's role may not list, by cluster (clusters with none left out), each list sorted.
    pub fn forbidden_kinds(&self) -> BTreeMap<String, Vec<String>> {
        self.lock()
            .clusters
            .iter()
            .filter(|(_, state)| !state.forbidden.is_empty())
            .map(|(cluster, state)| {
                let kinds: BTreeSet<String> = state
                    .forbidden
                    .iter()
                    .filter_map(|id| state.kinds.get(*id).cloned())
                    .collect();
                (cluster.clone(), kinds.into_iter().collect())
            })
            .collect()
    }

    /// Returns once every watch of `cluster` has listed (or found its kind not served) or failed, so the
    /// first picture neither waits for a cluster that is down nor misses one that is merely slower.
    pub async fn settled(&self, cluster: &str) {
        let mut changes = self.changed.subscribe();
        loop {
            let settled = self.lock().clusters.get(cluster).is_none_or(|c| {
                c.watches
                    .iter()
                    .all(|w| matches!(w, SourceState::Connected | SourceState::Unreachable { .. }))
            });
            if settled || changes.changed().await.is_err() {
                return;
            }
        }
    }

    fn update(&self, cluster: &str, watch: usize, state: SourceState) {
        let mut inner = self.lock();
        let Some(entry) = inner.clusters.get_mut(cluster) else {
            return;
        };
        let before = roll_up(&entry.watches);
        if let Some(slot) = entry.watches.get_mut(watch) {
            *slot = state;
        }
        self.changed.send_replace(());
        let after = roll_up(&entry.watches);
        if before == after {
            return;
        }
        let status = SourceStatus {
            cluster: cluster.to_string(),
            environment: entry.environment.clone(),
            state: after,
        };
        tracing::info!(cluster, state = ?status.state, "cluster connection changed");
        if let Some((events, dirty)) = &inner.listener {
            let _ = events.send(FleetEvent::SourceChanged { source: status });
            // Cards show their cluster's state: recompute them.
            let _ = dirty.send(Dirty::All);
        }
    }
}

impl SourceHandle {
    /// Adds a watch to the cluster's roll-up; returns its id for [`SourceHandle::healthy`] and
    /// [`SourceHandle::failed`].
    pub(crate) fn add_watch(&self) -> usize {
        self.add_watch_of("other")
    }

    /// As [`SourceHandle::add_watch`], naming the watched kind for Tower's own metrics.
    pub(crate) fn add_watch_of(&self, kind: &str) -> usize {
        let mut inner = self.sources.lock();
        let Some(entry) = inner.clusters.get_mut(&self.cluster) else {
            return usize::MAX;
        };
        entry.watches.push(SourceState::Syncing);
        entry.kinds.push(kind.to_string());
        entry.watches.len() - 1
    }

    fn is_unreachable(&self) -> bool {
        let inner = self.sources.lock();
        inner.clusters.get(&self.cluster).is_some_and(|c| {
            c.watches
                .iter()
                .any(|w| matches!(w, SourceState::Unreachable { .. }))
        })
    }

    /// The cluster answers again: its watches are (re)connecting; one that still fails will say so.
    fn recovered(&self) {
        let count = self
            .sources
            .lock()
            .clusters
            .get(&self.cluster)
            .map(|c| c.watches.len())
            .unwrap_or_default();
        for watch in 0..count {
            self.sources
                .update(&self.cluster, watch, SourceState::Connected);
        }
    }

    /// Whether watch `watch`'s kind is one Tower's role may not list; the cards are recomputed when that
    /// changes.
    pub(crate) fn forbidden(&self, watch: usize, forbidden: bool) {
        let mut inner = self.sources.lock();
        let Some(entry) = inner.clusters.get_mut(&self.cluster) else {
            return;
        };
        let changed = if forbidden {
            entry.forbidden.insert(watch)
        } else {
            entry.forbidden.remove(&watch)
        };
        if changed && let Some((_, dirty)) = &inner.listener {
            let _ = dirty.send(Dirty::All);
        }
    }

    /// Watch `watch` is fine, in `state`.
    pub(crate) fn healthy(&self, watch: usize, state: SourceState) {
        self.sources.update(&self.cluster, watch, state);
    }

    /// Watch `watch` failed with `reason`: the cluster is unreachable since the first failure.
    pub(crate) fn failed(&self, watch: usize, reason: &str) {
        // Keep the first failure time while the outage lasts.
        let since = {
            let inner = self.sources.lock();
            inner
                .clusters
                .get(&self.cluster)
                .and_then(|c| c.watches.get(watch))
                .and_then(|w| match w {
                    SourceState::Unreachable { since, .. } => Some(since.clone()),
                    _ => None,
                })
        };
        let since = since.unwrap_or_else(|| jiff::Timestamp::now().to_string());
        self.sources.update(
            &self.cluster,
            watch,
            SourceState::Unreachable {
                since,
                reason: reason.chars().take(200).collect(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forbidden_kind_is_listed_by_cluster_until_a_list_succeeds() {
        let sources = Sources::default();
        let prod = sources.register("prod", Some("prod".into()));
        let _pods = prod.add_watch_of("Pod");
        let rollouts = prod.add_watch_of("Rollout");
        let dev = sources.register("dev", Some("dev".into()));
        let dev_rollouts = dev.add_watch_of("Rollout");
        prod.forbidden(rollouts, true);
        dev.forbidden(dev_rollouts, false);
        assert_eq!(
            sources.forbidden_kinds(),
            BTreeMap::from([("prod".to_string(), vec!["Rollout".to_string()])])
        );
        prod.forbidden(rollouts, false);
        assert!(sources.forbidden_kinds().is_empty());
    }

    #[test]
    fn a_composed_resource_keeps_its_labels_and_conditions_only() {
        let kind = ResourceKind {
            group: "rds.aws.upbound.io".into(),
            version: "v1beta1".into(),
            kind: "Instance".into(),
            plural: "instances".into(),
        };
        let mut instance: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "payments-x7k2p-9fz4q",
                "labels": {CLAIM_NAMESPACE_LABEL: "payments"},
                "annotations": {"crossplane.io/external-name": "payments-x7k2p-9fz4q"},
                "finalizers": ["finalizer.managedresource.crossplane.io"],
            },
            "spec": {"forProvider": {"instanceClass": "db.t4g.small"}},
            "status": {
                "atProvider": {"address": "payments.rds.amazonaws.com"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }))
        .expect("a managed resource");
        trim_composed(&mut instance, &kind.api_resource());
        assert_eq!(
            instance.data,
            serde_json::json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        );
        assert_eq!(
            instance
                .labels()
                .get(CLAIM_NAMESPACE_LABEL)
                .map(String::as_str),
            Some("payments")
        );
        assert_eq!(
            (instance.metadata.annotations, instance.metadata.finalizers),
            (None, None)
        );
        // A list item without its type still says what it is.
        let types = instance.types.expect("a type");
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("rds.aws.upbound.io/v1beta1", "Instance")
        );
    }
}
