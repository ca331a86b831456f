//! The watch caches: one kube-rs reflector per kind per cluster, each marking the services it touches dirty,
//! and the per-cluster connection state (connected, relisting, unreachable since …) they report.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace, Secret};
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;
use shared::crd::{Component, Database, DatabaseSchema, Release};
use shared::fleet::{FleetEvent, SourceState, SourceStatus};
use tokio::sync::{broadcast, mpsc};

use super::application::Application;
use super::cards::CLAIM_NAMESPACE_LABEL;
use super::external_secret::ExternalSecret;
use super::pod::Pod;
use super::rollout::Rollout;
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
    let first_lists = sources.first_lists.clone();
    let stores = Stores {
        components: spawn_listing(
            checked(Cluster::Management, Api::<Component>::all(m.clone())),
            (),
            watcher::Config::default(),
            |_| {},
            management.clone(),
            dirty_tx.clone(),
            |c: &Component| Some(c.name_any()),
            {
                let first_lists = first_lists.clone();
                move |_: &Component| first_lists.component_listed()
            },
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
            spawn_listing(
                checked(Cluster::Management, Api::<Application>::all(m.clone())),
                (),
                watcher::Config::default(),
                trim_application,
                management.clone(),
                dirty_tx.clone(),
                {
                    let service = by_label(label.clone());
                    // A service's deploy marks its service; one of the platform's own marks the platform
                    // (and, for a platform resource's, the services showing that resource).
                    move |app: &Application| {
                        service(app).map(Dirty::Service).or_else(|| {
                            crate::platform::is_platform_application(app)
                                .then(|| Dirty::Platform(crate::platform::resource_of(app)))
                        })
                    }
                },
                {
                    let service = by_label(label.clone());
                    move |app: &Application| {
                        if let Some(service) = service(app) {
                            first_lists.application_listed(service);
                        }
                    }
                },
            )
        },
        application_sets: {
            let ar = watched::APPLICATION_SETS.api_resource();
            // No service is marked: the `/config` page reads the store when asked.
            spawn_with(
                checked(Cluster::Management, Api::all_with(m.clone(), &ar)),
                ar,
                watcher::Config::default(),
                trim_application_set,
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
                let dynamic = |ar: ApiResource, trim: fn(&mut DynamicObject)| {
                    spawn_with(
                        Api::<DynamicObject>::all_with(client.clone(), &ar),
                        ar,
                        watcher::Config::default(),
                        trim,
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
                    pods: spawn_with(
                        checked(Cluster::Workload, Api::<Pod>::all(client.clone())),
                        (),
                        watcher::Config::default(),
                        trim_pod,
                        source.clone(),
                        dirty_tx.clone(),
                        by_label(label.clone()),
                    ),
                    rollouts: spawn_with(
                        Api::<Rollout>::all(client.clone()),
                        (),
                        watcher::Config::default(),
                        trim_rollout,
                        source.clone(),
                        dirty_tx.clone(),
                        by_label(label.clone()),
                    ),
                    secrets: spawn_with(
                        Api::<ExternalSecret>::all(client.clone()),
                        (),
                        watcher::Config::default(),
                        trim_external_secret,
                        source.clone(),
                        dirty_tx.clone(),
                        by_label(label.clone()),
                    ),
                    claims: clusters
                        .claim_kinds
                        .iter()
                        .map(|c| dynamic(c.api_resource(), trim_last_applied))
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
    /// No whole answer in time: refused, timed out or cut short.
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
                Readiness::Ready => {}
                // Usually the watches fail too and say so; but a watch cut short is a normal end to kube
                // (it watches again, no error), so answers cut midway would otherwise never be reported.
                Readiness::Unanswered => {
                    source.failed(probe, "the API server did not answer its readiness check");
                }
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
    K: Resource + Clone + DeserializeOwned + serde::Serialize + Debug + Send + Sync + 'static,
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

/// Drops from every watched object's metadata what nobody reads: managed fields (a large share of each
/// object), and the uid, resourceVersion and generateName (the watcher keeps its own place), each a string
/// in every cached object, the first two again in the store's key of it.
fn trim_meta(meta: &mut kube::api::ObjectMeta) {
    meta.managed_fields = None;
    meta.uid = None;
    meta.resource_version = None;
    meta.generate_name = None;
}

/// `config`, listing whole from the API server's watch cache (`resourceVersion=0`, as client-go's informers
/// list) rather than in pages from etcd: a page's continue token expires once the server has moved on, and
/// at ten thousand services a list of many pages outlived its token, failed with 410 Expired and started
/// over, again and again (the first picture came after 77 s; the TaskRuns never listed under a profiler).
/// The watch that follows brings anything newer. Without a page size: kube leaves `resourceVersion=0` out
/// of a list that has a limit.
pub fn listed_whole(config: watcher::Config) -> watcher::Config {
    watcher::Config {
        page_size: None,
        ..config.any_semantic()
    }
}

/// Drops what no card reads from a Deployment: the pod template (the pods themselves are watched) and the
/// annotations (`last-applied-configuration` alone repeats the whole object).
fn trim_deployment(deployment: &mut Deployment) {
    deployment.metadata.annotations = None;
    deployment.spec.template = Default::default();
}

/// Drops an ApplicationSet's `status.resources`: it lists every Application the set generated (10,000
/// entries for a fleet of 10,000 services, about 29 MB in the cache), and the `/config` page lists them from
/// the Applications' own cache instead, with their sync and health.
fn trim_application_set(set: &mut DynamicObject) {
    if let Some(status) = set.data.get_mut("status").and_then(|s| s.as_object_mut()) {
        status.remove("resources");
    }
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

/// Keeps a Pod's name, namespace and labels. The rest of what a card reads (each container's name and image;
/// the phase, start time, and each container's readiness, restarts and waiting reason) is all that
/// [`Pod`] reads from the API server in the first place.
fn trim_pod(pod: &mut Pod) {
    let metadata = &mut pod.metadata;
    metadata.annotations = None;
    metadata.owner_references = None;
    metadata.finalizers = None;
}

/// Drops kubectl's `last-applied-configuration`, which repeats the whole object (and the Config tab hides).
fn trim_last_applied<K: Resource>(object: &mut K) {
    let metadata = object.meta_mut();
    if let Some(annotations) = metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            metadata.annotations = None;
        }
    }
}

/// kubectl's copy of what it applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no view of an Argo CD Application reads. [`Application`] itself keeps only the spec (the
/// Config tab shows it) and of the status the sync and health, the summary's URLs, conditions, each history
/// entry's revision and time, the last operation's phase, times, message and per-resource messages, and its
/// resources' kinds and names; the rest of the status repeats the source in every history entry, the
/// operation and the comparison. Of the resources, only the CRDs are kept (which Application installs which
/// kind): an Application lists every resource it manages.
fn trim_application(application: &mut Application) {
    trim_last_applied(application);
    application
        .status
        .resources
        .retain(|resource| resource.kind == "CustomResourceDefinition");
}

/// Keeps a Rollout's name, namespace and labels. What a card reads besides (its canary steps and replicas, and
/// its status's phase, message, step and replica counts) is all that [`Rollout`] reads from the API server;
/// its pod template was most of it, and the pods themselves are watched.
fn trim_rollout(rollout: &mut Rollout) {
    let metadata = &mut rollout.metadata;
    metadata.annotations = None;
    metadata.owner_references = None;
    metadata.finalizers = None;
}

/// Drops what no view of an ExternalSecret reads from its metadata. [`ExternalSecret`] itself keeps only the
/// spec (the Config tab shows it) and of the status the conditions and the last refresh.
fn trim_external_secret(secret: &mut ExternalSecret) {
    trim_last_applied(secret);
    let metadata = &mut secret.metadata;
    metadata.owner_references = None;
    metadata.finalizers = None;
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
    K: Resource + Clone + DeserializeOwned + serde::Serialize + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync + 'static,
{
    spawn_listing(api, dyntype, config, trim, source, dirty, key, |_: &K| {})
}

/// As [`spawn_with`], showing each object of the first list to `first_listed` as it arrives (the reflector
/// keeps a list's objects out of its store until the list is complete; the progress of a starting Tower
/// counts them before that).
#[allow(clippy::too_many_arguments)]
fn spawn_listing<K, D>(
    api: Api<K>,
    dyntype: K::DynamicType,
    config: watcher::Config,
    trim: impl Fn(&mut K) + Send + 'static,
    source: SourceHandle,
    dirty: mpsc::UnboundedSender<Dirty>,
    key: impl Fn(&K) -> Option<D> + Send + 'static,
    first_listed: impl Fn(&K) + Send + 'static,
) -> Store<K>
where
    D: Into<Dirty>,
    K: Resource + Clone + DeserializeOwned + serde::Serialize + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync + 'static,
{
    let kind = K::kind(&dyntype).to_string();
    let writer = reflector::store::Writer::new(dyntype);
    let reader = writer.as_reader();
    let watch_id = source.add_watch_of(&kind);
    source.add_cache(&kind, reader.clone());
    let config = listed_whole(config);
    let stream = watcher(api, config)
        .backoff(SpacedBackoff::default())
        .modify(move |object: &mut K| {
            trim_meta(object.meta_mut());
            trim(object);
        })
        .reflect(writer);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut not_served_logged = false;
        // While a kind is not served, each backoff retry starts a list that fails at once: that retry is not
        // a relist of anything shown, so the cluster must not flicker to "relisting" with it.
        let mut not_served = false;
        let mut listed_once = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Apply(object) | watcher::Event::Delete(object)) => {
                    source.healthy(watch_id, SourceState::Connected);
                    if let Some(marked) = key(&object) {
                        let _ = dirty.send(marked.into());
                    }
                }
                Ok(watcher::Event::Init) => {
                    if !not_served {
                        source.healthy(watch_id, SourceState::Relisting);
                    }
                }
                Ok(watcher::Event::InitApply(object)) => {
                    if !listed_once {
                        first_listed(&object);
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    listed_once = true;
                    // Listing works (again): the kind is served and the role allows it (now).
                    not_served = false;
                    source.forbidden(watch_id, false);
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
                    not_served = true;
                    // Not installed is normal; not allowed is a role missing a rule, which the cards say
                    // rather than showing a blank where the kind would be.
                    source.forbidden(watch_id, is_forbidden(&error));
                    source.healthy(watch_id, SourceState::Connected);
                }
                // The API server no longer holds the history this watch resumes from (`410 Expired` inside
                // the stream, after a compaction or a watcher falling behind): the watcher lists again. The
                // cluster answers; what is shown may be behind until the list completes.
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    tracing::info!(cluster = %source.cluster, kind = %kind, "watch expired; relisting");
                    source.healthy(watch_id, SourceState::Relisting);
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

/// kube's default watcher backoff (800 ms doubling to 30 s, jittered, started over once two minutes pass
/// without a retry), except that an event does not start it over. kube's stream resets its backoff on every
/// `Ok`, and a retry's list yields events before the watch that fails again: an API server answering every
/// watch with `410 Expired`, or a kind not served whose every retry starts with `Init`, had each watch
/// relist (or retry) about every second for as long as it lasted. Now those retries space out like any
/// other failure's.
#[derive(Default)]
struct SpacedBackoff(watcher::DefaultBackoff);

impl Iterator for SpacedBackoff {
    type Item = std::time::Duration;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

impl kube::runtime::utils::Backoff for SpacedBackoff {
    /// Left to the inner backoff's own timer: two quiet minutes start it over.
    fn reset(&mut self) {}
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
    /// Every watch cache, by cluster and kind, with how to measure it.
    caches: Vec<(String, String, MeasureCache)>,
}

/// Measures one watch cache when asked: its objects and their approximate size.
type MeasureCache = Arc<dyn Fn() -> (usize, usize) + Send + Sync>;

/// What one watch cache holds, for Tower's own metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSize {
    /// The cluster it watches.
    pub cluster: String,
    /// The kind it holds.
    pub kind: String,
    /// Objects held.
    pub objects: usize,
    /// Approximately the bytes they take: their JSON size ([`json_size`]), estimated from a sample in a large
    /// cache ([`estimated_bytes`]).
    pub bytes: usize,
}

/// An object's size as JSON, counted without writing it anywhere: the measure of a watch cache's bytes.
/// The objects live in memory as structs and `serde_json::Value` trees, which take from about as much
/// (typed objects) to about twice as much (`Value` maps) as their JSON; the ratio per kind is in
/// ARCHITECTURE.md.
pub fn json_size<K: serde::Serialize>(object: &K) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, object) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}

/// Objects a cache's bytes are estimated from: at ten thousand services a cache holds tens of thousands, and
/// writing them all out on every scrape of `/metrics` would cost a second of CPU each time.
const SIZE_SAMPLE: usize = 256;

/// The JSON size of `objects`, measured whole when there are at most [`SIZE_SAMPLE`] of them, else estimated
/// from that many evenly spaced ones.
fn estimated_bytes<K: serde::Serialize>(objects: &[Arc<K>]) -> usize {
    if objects.len() <= SIZE_SAMPLE {
        return objects.iter().map(|o| json_size(o.as_ref())).sum();
    }
    let step = objects.len() / SIZE_SAMPLE;
    let sampled: usize = objects
        .iter()
        .step_by(step)
        .take(SIZE_SAMPLE)
        .map(|o| json_size(o.as_ref()))
        .sum();
    sampled * objects.len() / SIZE_SAMPLE
}

/// The connection state of every cluster, rolled up from its watches.
#[derive(Clone)]
pub struct Sources {
    inner: Arc<Mutex<SourcesInner>>,
    /// Ticks whenever any watch's state changes, for [`Sources::settled`].
    changed: Arc<tokio::sync::watch::Sender<()>>,
    /// How far the first lists of Components and Applications have come.
    first_lists: Arc<FirstLists>,
}

impl Default for Sources {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            changed: Arc::new(tokio::sync::watch::Sender::new(())),
            first_lists: Arc::default(),
        }
    }
}

/// How far the first lists have come, counted as their pages arrive (the reflector stores show a list only
/// once it is complete): for the progress a starting Tower answers with.
#[derive(Debug, Default)]
pub struct FirstLists {
    /// Components listed so far.
    components: AtomicUsize,
    /// The services among the Applications listed so far; emptied once the first picture is out.
    services_with_applications: Mutex<HashSet<String>>,
    /// Set once the first picture is out: nothing is counted after.
    over: AtomicBool,
}

impl FirstLists {
    fn component_listed(&self) {
        self.components.fetch_add(1, Ordering::Relaxed);
    }

    fn application_listed(&self, service: String) {
        if !self.over.load(Ordering::Relaxed) {
            self.services().insert(service);
        }
    }

    fn services(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.services_with_applications
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Components listed so far.
    pub fn components(&self) -> usize {
        self.components.load(Ordering::Relaxed)
    }

    /// Services with at least one Application listed so far.
    pub fn services_with_applications(&self) -> usize {
        self.services().len()
    }

    /// The first picture is out: the counts are not asked for again, so their memory goes.
    pub fn finish(&self) {
        self.over.store(true, Ordering::Relaxed);
        *self.services() = HashSet::new();
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

    /// How far the first lists of Components and Applications have come.
    pub fn first_lists(&self) -> &FirstLists {
        &self.first_lists
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

    /// Every watch cache's objects and approximate bytes, by cluster and kind (measured now: walks every
    /// object, so for a scrape, not a request path).
    pub fn cache_sizes(&self) -> Vec<CacheSize> {
        // Measured outside the lock, which the watches take on every event.
        let caches = self.lock().caches.clone();
        // Two watches of one kind on one cluster (a claim kind also configured as composed) are one series.
        let mut sizes = BTreeMap::<(String, String), (usize, usize)>::new();
        for (cluster, kind, measure) in caches {
            let (objects, bytes) = measure();
            let size = sizes.entry((cluster, kind)).or_default();
            *size = (size.0 + objects, size.1 + bytes);
        }
        sizes
            .into_iter()
            .map(|((cluster, kind), (objects, bytes))| CacheSize {
                cluster,
                kind,
                objects,
                bytes,
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
    /// Registers the cache of a watch of `kind` on this cluster for [`Sources::cache_sizes`].
    fn add_cache<K>(&self, kind: &str, store: Store<K>)
    where
        K: Resource + Clone + serde::Serialize + Send + Sync + 'static,
        K::DynamicType: Clone + Eq + Hash + Send + Sync,
    {
        let measure: MeasureCache = Arc::new(move || {
            let objects = store.state();
            (objects.len(), estimated_bytes(&objects))
        });
        self.sources
            .lock()
            .caches
            .push((self.cluster.clone(), kind.to_string(), measure));
    }

    /// Adds a watch of `kind` to the cluster's roll-up, as syncing; returns its id for
    /// [`SourceHandle::healthy`] and [`SourceHandle::failed`].
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

    /// An Argo CD Application as Argo CD writes it, everything the status carries.
    fn full_application() -> serde_json::Value {
        let source = |revision: &str| {
            serde_json::json!({
                "repoURL": "https://git.example/acme/payments", "path": "chart", "targetRevision": revision,
                "helm": {"releaseName": "payments", "valueFiles": ["values-prod.yaml"]},
            })
        };
        serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": "payments-prod",
                "namespace": "argocd",
                "labels": {"platform.tower.dev/component": "payments"},
                "annotations": {LAST_APPLIED: "{\"a\":\"whole copy\"}", "tower.dev/version": "1.2.0"},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                    "name": "catalog", "uid": "1"}],
            },
            "spec": {"project": "services", "source": source("bbbbbbb"),
                "destination": {"name": "prod-eu", "namespace": "payments"}},
            "status": {
                "controllerNamespace": "argocd",
                "sourceType": "Helm",
                "reconciledAt": "2025-05-01T10:00:00Z",
                "sync": {"status": "OutOfSync", "revision": "bbbbbbb",
                    "comparedTo": {"source": source("bbbbbbb")}},
                "health": {"status": "Degraded", "message": "canary failed",
                    "lastTransitionTime": "2025-05-01T09:00:00Z"},
                "conditions": [{"type": "SyncError", "message": "the server could not find the requested resource (monitoring.coreos.com/ServiceMonitor)"}],
                "history": [
                    {"id": 1, "revision": "aaaaaaa", "deployedAt": "2025-04-30T10:00:00Z",
                        "deployStartedAt": "2025-04-30T09:59:00Z", "source": source("aaaaaaa"),
                        "initiatedBy": {"automated": true}},
                    {"id": 2, "revision": "bbbbbbb", "deployedAt": "2025-05-01T08:00:00Z",
                        "deployStartedAt": "2025-05-01T07:59:00Z", "source": source("bbbbbbb"),
                        "initiatedBy": {"automated": true}},
                ],
                "operationState": {
                    "operation": {"sync": {"revision": "bbbbbbb"}, "initiatedBy": {"automated": true}},
                    "phase": "Failed",
                    "message": "one or more objects failed to apply",
                    "startedAt": "2025-05-01T07:59:00Z",
                    "finishedAt": "2025-05-01T08:00:00Z",
                    "syncResult": {"revision": "bbbbbbb", "source": source("bbbbbbb"), "resources": [
                        {"group": "monitoring.coreos.com", "version": "v1", "kind": "ServiceMonitor",
                            "namespace": "payments", "name": "payments", "status": "SyncFailed",
                            "message": "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested resource payments/payments. Make sure the \"ServiceMonitor\" CRD is installed on the destination cluster.",
                            "hookPhase": "Failed", "syncPhase": "Sync"},
                    ]},
                },
                "resources": [
                    {"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout",
                        "namespace": "payments", "name": "payments", "status": "Synced",
                        "health": {"status": "Healthy"}},
                    {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                        "name": "servicemonitors.monitoring.coreos.com", "status": "Synced"},
                ],
                "summary": {"externalURLs": ["https://payments.acme.example"], "images": ["payments:bbbbbbb"]},
            },
        })
    }

    #[test]
    fn an_application_keeps_exactly_what_cards_and_the_platform_page_read() {
        // Read as the watch reads it: into `fleet::application::Application`, which takes only what is read.
        let sent = full_application();
        let full: Application = serde_json::from_value(sent.clone()).expect("an application");
        let mut trimmed = full.clone();
        trim_application(&mut trimmed);
        let installers = |app: &Application| crate::platform::Installers::of([app]);
        // Everything read from it reads the same.
        assert_eq!(
            super::super::cards::application_view(&trimmed),
            super::super::cards::application_view(&full)
        );
        assert_eq!(
            super::super::cards::previous_version(&trimmed),
            super::super::cards::previous_version(&full)
        );
        assert_eq!(
            super::super::cards::deploys(&trimmed),
            super::super::cards::deploys(&full)
        );
        assert_eq!(
            installers(&trimmed).waiting(&trimmed),
            installers(&full).waiting(&full)
        );
        assert_eq!(
            installers(&full)
                .waiting(&full)
                .and_then(|waiting| waiting.from),
            Some("payments-prod".to_string())
        );
        // And nothing else is kept of the status.
        assert_eq!(
            serde_json::to_value(&trimmed.status).expect("json"),
            serde_json::json!({
                "reconciledAt": "2025-05-01T10:00:00Z",
                "sync": {"status": "OutOfSync", "revision": "bbbbbbb"},
                "health": {"status": "Degraded", "message": "canary failed"},
                "conditions": [{"type": "SyncError", "message": "the server could not find the requested resource (monitoring.coreos.com/ServiceMonitor)"}],
                "history": [
                    {"revision": "aaaaaaa", "deployedAt": "2025-04-30T10:00:00Z"},
                    {"revision": "bbbbbbb", "deployedAt": "2025-05-01T08:00:00Z"},
                ],
                "operationState": {
                    "phase": "Failed",
                    "message": "one or more objects failed to apply",
                    "startedAt": "2025-05-01T07:59:00Z",
                    "finishedAt": "2025-05-01T08:00:00Z",
                    "syncResult": {"resources": [{"kind": "ServiceMonitor", "name": "payments",
                        "message": "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested resource payments/payments. Make sure the \"ServiceMonitor\" CRD is installed on the destination cluster."}]},
                },
                "resources": [{"kind": "CustomResourceDefinition", "name": "servicemonitors.monitoring.coreos.com"}],
                "summary": {"externalURLs": ["https://payments.acme.example"]},
            })
        );
        // The spec, labels, owner and other annotations stay: the Config tab and the `/config` page show them.
        assert_eq!(trimmed.spec.to_value(), sent["spec"]);
        assert_eq!(
            trimmed.metadata.owner_references,
            full.metadata.owner_references
        );
        assert_eq!(trimmed.metadata.labels, full.metadata.labels);
        let annotations = trimmed.metadata.annotations.expect("annotations");
        assert_eq!(
            annotations.keys().collect::<Vec<_>>(),
            ["tower.dev/version"]
        );
    }

    #[test]
    fn an_application_set_keeps_its_spec_and_conditions_but_not_the_list_of_what_it_generated() {
        let mut set: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "taskapp-catalog", "namespace": "argocd"},
            "spec": {"generators": [{"git": {"files": [{"path": "components/*/environments/*.yaml"}]}}]},
            "status": {
                "conditions": [{"type": "ResourcesUpToDate", "status": "True"}],
                "resources": [{"kind": "Application", "name": "cart-dev", "status": "Synced"}],
            },
        }))
        .expect("an ApplicationSet");
        let spec = set.data["spec"].clone();
        trim_application_set(&mut set);
        assert_eq!(set.data["spec"], spec);
        assert_eq!(
            set.data["status"],
            serde_json::json!({"conditions": [{"type": "ResourcesUpToDate", "status": "True"}]})
        );
    }

    #[test]
    fn a_pod_keeps_exactly_what_its_card_row_reads() {
        // Read as the watch reads it: into `fleet::pod::Pod`, which takes only what the card reads.
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "payments-7d9f-abcde", "namespace": "payments", "generateName": "payments-7d9f-",
                "labels": {"platform.tower.dev/component": "payments", "pod-template-hash": "7d9f"},
                "annotations": {"kubectl.kubernetes.io/restartedAt": "2025-05-01T08:00:00Z"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "payments-7d9f", "uid": "1"}],
            },
            "spec": {
                "containers": [
                    {"name": "app", "image": "registry.example/payments:bbbbbbb",
                        "env": [{"name": "DATABASE_URL", "value": "postgres://payments"}],
                        "ports": [{"containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}}},
                    {"name": "proxy", "image": "envoy:1.30"},
                ],
                "volumes": [{"name": "config", "configMap": {"name": "payments"}}],
                "nodeName": "node-1",
            },
            "status": {
                "phase": "Running",
                "startTime": "2025-05-01T08:00:00Z",
                "podIP": "10.0.0.7",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"name": "app", "ready": false, "restartCount": 4, "image": "registry.example/payments:bbbbbbb",
                        "imageID": "sha256:1", "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
                        "lastState": {"terminated": {"exitCode": 1}}},
                    {"name": "proxy", "ready": true, "restartCount": 1, "image": "envoy:1.30", "imageID": "sha256:2",
                        "state": {"running": {"startedAt": "2025-05-01T08:00:00Z"}}},
                ],
            },
        }))
        .expect("a pod");
        trim_meta(&mut pod.metadata);
        trim_pod(&mut pod);
        assert_eq!(
            super::super::cards::pod_view("prod", &pod),
            shared::fleet::PodView {
                name: "payments-7d9f-abcde".into(),
                cluster: "prod".into(),
                phase: "Running".into(),
                ready: false,
                restarts: 5,
                image: "registry.example/payments:bbbbbbb".into(),
                waiting_reason: Some("CrashLoopBackOff".into()),
                containers: vec!["app".into(), "proxy".into()],
                started_at: Some("2025-05-01T08:00:00Z".into()),
            }
        );
        assert_eq!(
            serde_json::to_value(&pod).expect("json"),
            serde_json::json!({
                "metadata": {
                    "name": "payments-7d9f-abcde", "namespace": "payments",
                    "labels": {"platform.tower.dev/component": "payments", "pod-template-hash": "7d9f"},
                },
                "spec": {"containers": [
                    {"name": "app", "image": "registry.example/payments:bbbbbbb"},
                    {"name": "proxy", "image": "envoy:1.30"},
                ]},
                "status": {
                    "phase": "Running",
                    "startTime": "2025-05-01T08:00:00Z",
                    "containerStatuses": [
                        {"name": "app", "ready": false, "restartCount": 4,
                            "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                        {"name": "proxy", "ready": true, "restartCount": 1, "state": {}},
                    ],
                },
            })
        );
    }

    #[test]
    fn a_rollout_keeps_its_steps_and_counts_and_a_secret_its_refresh() {
        // Read as the watch reads it: into `fleet::rollout::Rollout`.
        let mut rollout: Rollout = serde_json::from_value(serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "payments", "namespace": "payments",
                "annotations": {"rollout.argoproj.io/revision": "2"}},
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [{"name": "app", "image": "payments:bbbbbbb"}]}},
                "strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {"duration": "30s"}}, {"analysis": {}}],
                    "canaryService": "payments-canary"}},
            },
            "status": {"phase": "Paused", "message": "CanaryPauseStep", "currentStepIndex": 1, "replicas": 4,
                "readyReplicas": 4, "updatedReplicas": 1, "conditions": [{"type": "Progressing"}],
                "currentPodHash": "7d9f"},
        }))
        .expect("a rollout");
        trim_rollout(&mut rollout);
        assert_eq!(
            super::super::cards::rollout_view(&rollout),
            shared::fleet::RolloutView {
                name: "payments".into(),
                phase: "Paused".into(),
                message: Some("CanaryPauseStep".into()),
                steps: vec![
                    shared::fleet::RolloutStep::SetWeight { weight: 20 },
                    shared::fleet::RolloutStep::Pause {
                        duration: Some("30s".into())
                    },
                    shared::fleet::RolloutStep::Other {
                        name: "analysis".into()
                    },
                ],
                current_step: Some(1),
                replicas: 4,
                ready_replicas: 4,
                updated_replicas: 1,
            }
        );
        assert_eq!(
            serde_json::to_value(&rollout).expect("json"),
            serde_json::json!({
                "metadata": {"name": "payments", "namespace": "payments"},
                "spec": {"replicas": 3, "strategy": {"canary": {"steps": [
                    {"setWeight": 20}, {"pause": {"duration": "30s"}}, {"analysis": {}}]}}},
                "status": {"phase": "Paused", "message": "CanaryPauseStep", "currentStepIndex": 1,
                    "replicas": 4, "readyReplicas": 4, "updatedReplicas": 1},
            })
        );

        let mut secret: ExternalSecret = serde_json::from_value(serde_json::json!({
            "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
            "metadata": {"name": "payments-db", "namespace": "payments"},
            "spec": {"refreshInterval": "1h", "secretStoreRef": {"name": "vault"}},
            "status": {"refreshTime": "2025-05-01T08:00:00Z", "syncedResourceVersion": "1-abc",
                "binding": {"name": "payments-db"},
                "conditions": [{"type": "Ready", "status": "False", "message": "vault sealed"}]},
        }))
        .expect("an external secret");
        let full = secret.clone();
        trim_external_secret(&mut secret);
        let now = "2025-05-01T10:00:00Z".parse().ok();
        assert_eq!(
            super::super::cards::secret_view(&secret, now),
            super::super::cards::secret_view(&full, now)
        );
        assert_eq!(secret.spec, full.spec);
        assert!(secret.to_dynamic().data["status"].get("binding").is_none());
    }

    #[test]
    fn a_cache_size_is_its_objects_json() {
        let sources = Sources::default();
        let handle = sources.register("prod", Some("prod".into()));
        let mut writer = reflector::store::Writer::<Namespace>::default();
        handle.add_cache("Namespace", writer.as_reader());
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "payments"}}))
                .expect("a namespace");
        let size = json_size(&namespace);
        writer.apply_watcher_event(&watcher::Event::Apply(namespace));
        assert_eq!(
            sources.cache_sizes(),
            [CacheSize {
                cluster: "prod".into(),
                kind: "Namespace".into(),
                objects: 1,
                bytes: size,
            }]
        );
        assert_eq!(
            size,
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"payments"}}"#.len()
        );
    }

    #[test]
    fn a_large_cache_is_sized_from_a_sample_that_is_exact_for_alike_objects() {
        let named = |name: String| {
            Arc::new(serde_json::json!({"metadata": {"name": name}, "spec": "x".repeat(90)}))
        };
        let alike: Vec<_> = (0..10_000).map(|n| named(format!("svc-{n:05}"))).collect();
        let whole: usize = alike.iter().map(|o| json_size(o.as_ref())).sum();
        assert_eq!(estimated_bytes(&alike), whole);
        let few: Vec<_> = (0..3).map(|n| named("s".repeat(n))).collect();
        assert_eq!(
            estimated_bytes(&few),
            few.iter().map(|o| json_size(o.as_ref())).sum::<usize>(),
            "a small cache is measured whole"
        );
        assert_eq!(estimated_bytes::<serde_json::Value>(&[]), 0);
    }

    #[test]
    fn the_first_lists_count_components_and_services_with_applications_until_the_picture_is_out() {
        let lists = FirstLists::default();
        lists.component_listed();
        lists.component_listed();
        lists.application_listed("payments".into());
        lists.application_listed("payments".into());
        assert_eq!(
            (lists.components(), lists.services_with_applications()),
            (2, 1)
        );
        lists.finish();
        lists.application_listed("ledger".into());
        assert_eq!(lists.services_with_applications(), 0);
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
