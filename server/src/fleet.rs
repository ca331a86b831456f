//! The fleet model: the watch caches turned into what the pages show, and the deltas pushed to browsers.
//!
//! Data flows one way: upstream → watch cache (reflector stores) → this model → JSON API / SSE. Every watch
//! event marks its service dirty; a single task recomputes dirty services in small batches, keeps the result
//! (and the serialized service list) ready for handlers, and broadcasts what changed. Request handlers only
//! read from here; nothing in a handler lists from an upstream.

pub mod application;
pub mod cards;
pub mod catalog;
pub mod code;
pub mod external_secret;
pub mod pod;
pub mod rollout;
pub mod typed;
pub mod watch;
pub mod watched;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Namespace};
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use kube::runtime::reflector::Store;
use shared::crd::{Component, Database, DatabaseSchema, Release};
use shared::fleet::{
    ActivityItem, ActivityKind, CatalogState, DatabaseView, DeploymentCard, FleetEvent, Health,
    SchemaCheckView, ServiceDetail, ServiceSummary, SourceState, SourceStatus,
};
use shared::metrics::DeployMarker;
use tokio::sync::{broadcast, mpsc, watch as tokio_watch};

use self::application::Application;
use self::cards::{CardInputs, ClusterInput, card, cell};
use self::code::CodeCache;
use self::external_secret::ExternalSecret;
use self::pod::Pod;
use self::watch::Sources;

/// How many deltas a slow browser may fall behind before it is sent a fresh snapshot instead.
const EVENT_BUFFER: usize = 4096;
/// How long dirty marks are gathered before a recompute, so a burst of watch events costs one pass.
const BATCH_WINDOW: Duration = Duration::from_millis(25);
/// The longest a change waits to be gathered, however long recomputes take.
const LONGEST_BATCH_WINDOW: Duration = Duration::from_secs(2);

/// How long to gather dirty marks after a recompute that took `took`: at least as long as it took, so
/// recomputing uses at most about half a core. A pass indexes every store, so at ten thousand services one
/// costs tens of milliseconds; a stream of small changes (the forge answering each service's lookups after
/// a start) in 25 ms windows would otherwise keep a core busy and queue requests behind it.
fn batch_window_after(took: Duration) -> Duration {
    took.clamp(BATCH_WINDOW, LONGEST_BATCH_WINDOW)
}
/// How many activity items are kept.
const ACTIVITY_KEPT: usize = 50;

/// How far a starting Tower is with its first picture of the fleet: what the service list answers (503)
/// until the picture is complete.
///
/// `total` is the Components listed so far; `loaded` is those of them whose Applications are listed too
/// (a service's deploys in every environment, what its row on the Overview is mostly made of). The first
/// picture also waits for the workload clusters' lists (at most a few seconds each), so `loaded` can reach
/// `total` shortly before the list answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loading {
    /// No Component has arrived yet.
    Listing,
    /// `loaded` of `total` services loaded.
    Services {
        /// Services whose Component and Applications are in.
        loaded: usize,
        /// Components listed so far.
        total: usize,
    },
}

impl std::fmt::Display for Loading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The words are the app's too: it shows them as progress rather than as an error.
        f.write_str(&shared::fleet::loading_message(match self {
            Loading::Listing => None,
            Loading::Services { loaded, total } => Some((*loaded, *total)),
        }))
    }
}

/// What needs recomputing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dirty {
    /// One service, every environment.
    Service(String),
    /// One of the platform's own Applications changed; for a platform resource's, its (kind, name), whose
    /// services show it.
    Platform(Option<(String, String)>),
    /// Everything (a cluster's state changed, or a first list completed).
    All,
}

impl From<String> for Dirty {
    fn from(service: String) -> Self {
        Dirty::Service(service)
    }
}

/// The caches of one workload cluster.
#[derive(Clone)]
pub struct WorkloadStores {
    /// The cluster's name.
    pub cluster: String,
    /// Pods.
    pub pods: Store<Pod>,
    /// Argo Rollouts.
    pub rollouts: Store<rollout::Rollout>,
    /// External Secrets.
    pub secrets: Store<ExternalSecret>,
    /// Crossplane claims, one store per claim kind.
    pub claims: Vec<Store<DynamicObject>>,
    /// Crossplane managed resources, one store per composed kind: cluster-scoped, trimmed to labels and
    /// conditions, mapped to services through their claim's namespace.
    pub composed: Vec<Store<DynamicObject>>,
    /// Plain Deployments (workers and the like beside a service's Rollout), pod templates trimmed.
    pub deployments: Store<Deployment>,
    /// Namespaces, names and labels only: a service's namespace carries the platform labels its Events lack.
    pub namespaces: Store<Namespace>,
    /// Warning Events only (the watch selects them), mapped to services through their namespace.
    pub events: Store<Event>,
}

/// Every watch cache the model reads.
#[derive(Clone)]
pub struct Stores {
    /// Components (management).
    pub components: Store<Component>,
    /// Releases (management).
    pub releases: Store<Release>,
    /// Databases (management).
    pub databases: Store<Database>,
    /// DatabaseSchemas (management).
    pub schemas: Store<DatabaseSchema>,
    /// Argo CD Applications (management).
    pub applications: Store<Application>,
    /// Argo CD ApplicationSets (management), for the `/config` page.
    pub application_sets: Store<DynamicObject>,
    /// Argo CD's cluster secrets (management), metadata only: their labels, never their credentials.
    pub cluster_secrets: Store<kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::Secret>>,
    /// Pyrra's ServiceLevelObjectives (management), found by the component label.
    pub slos: Store<DynamicObject>,
    /// Workload clusters by environment, each environment's in configuration order.
    pub workloads: BTreeMap<String, Vec<WorkloadStores>>,
}

/// One service's objects in the watch caches (see [`FleetModel::platform_objects`]).
#[derive(Debug, Clone, Default)]
pub struct PlatformObjects {
    /// Its Component.
    pub component: Option<Arc<Component>>,
    /// Its Releases, one per environment.
    pub releases: Vec<Arc<Release>>,
    /// Databases it is bound to or named after.
    pub databases: Vec<Arc<Database>>,
    /// Those databases' DatabaseSchemas.
    pub schemas: Vec<Arc<DatabaseSchema>>,
    /// Its Argo CD Applications, by environment.
    pub applications: Vec<(String, Arc<Application>)>,
    /// Its ExternalSecrets, by environment.
    pub secrets: Vec<(String, Arc<ExternalSecret>)>,
    /// Its Crossplane claims, by environment.
    pub claims: Vec<(String, Arc<DynamicObject>)>,
}

/// What handlers read: computed, ready to serve. Replaced whole after each recompute, so a reader never waits
/// for a recompute (serializing a thousand services takes milliseconds) and never sees half of one.
#[derive(Default, Clone)]
struct View {
    services: BTreeMap<String, Arc<ServiceDetail>>,
    /// `shared::api::ListServices`, serialized once per change rather than once per request.
    services_json: Bytes,
    /// The same, gzipped once per change: at a thousand services the list is large and sent often.
    services_json_gzip: Bytes,
    /// The platform's own Applications by standing, for the Overview.
    platform_counts: shared::platform::StandingCounts,
}

struct Inner {
    stores: Stores,
    labels: crate::config::LabelsConfig,
    view: RwLock<Arc<View>>,
    events: broadcast::Sender<FleetEvent>,
    sources: Sources,
    code: Option<CodeCache>,
    catalog: catalog::Catalog,
    /// The newest activity last; bounded.
    activity: std::sync::Mutex<VecDeque<ActivityItem>>,
    ready: tokio_watch::Receiver<bool>,
    /// The pipeline caches, for the cards' build links.
    pipelines: Option<crate::pipelines::Pipelines>,
    /// Argo CD's web UI, for links to Applications.
    argocd_ui: Option<String>,
}

/// The fleet as the server knows it, shared by every request.
#[derive(Clone)]
pub struct FleetModel {
    inner: Arc<Inner>,
}

impl FleetModel {
    /// Starts the model over `stores`: the recompute task runs until the process ends. `dirty` is the receiving
    /// end of the channel the watches mark services on. `pipelines` link each card to the run that built its
    /// version, and tell their changes through the model.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        stores: Stores,
        labels: crate::config::LabelsConfig,
        sources: Sources,
        code: Option<CodeCache>,
        catalog: catalog::Catalog,
        pipelines: Option<crate::pipelines::Pipelines>,
        argocd_ui: Option<String>,
        dirty_tx: mpsc::UnboundedSender<Dirty>,
        dirty: mpsc::UnboundedReceiver<Dirty>,
    ) -> Self {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let (ready_tx, ready) = tokio_watch::channel(false);
        let model = Self {
            inner: Arc::new(Inner {
                stores,
                labels,
                view: RwLock::new(Arc::new(View::default())),
                events,
                sources,
                code,
                catalog,
                activity: std::sync::Mutex::default(),
                ready,
                pipelines,
                argocd_ui,
            }),
        };
        if let Some(pipelines) = &model.inner.pipelines {
            pipelines.attach(model.clone(), dirty_tx.clone());
        }
        if let Some(code) = &model.inner.code {
            code.set_dirty_sender(dirty_tx.clone());
        }
        model
            .inner
            .sources
            .set_listener(model.inner.events.clone(), dirty_tx);
        tokio::spawn(model.clone().recompute_loop(dirty, ready_tx));
        model
    }

    /// Every service, in name order.
    pub fn services(&self) -> Vec<ServiceSummary> {
        self.read(|view| view.services.values().map(|d| d.summary.clone()).collect())
    }

    /// The serialized service list, as `shared::api::ListServices` returns it.
    pub fn services_json(&self) -> Bytes {
        self.read(|view| view.services_json.clone())
    }

    /// The serialized service list, gzipped.
    pub fn services_json_gzip(&self) -> Bytes {
        self.read(|view| view.services_json_gzip.clone())
    }

    /// One service's summary.
    pub fn service(&self, name: &str) -> Option<ServiceSummary> {
        self.read(|view| view.services.get(name).map(|d| d.summary.clone()))
    }

    /// One service with its cards.
    pub fn service_detail(&self, name: &str) -> Option<ServiceDetail> {
        self.read(|view| view.services.get(name).map(|d| ServiceDetail::clone(d)))
    }

    /// The newest activity first.
    pub fn activity(&self) -> Vec<ActivityItem> {
        self.activity_feed().iter().rev().cloned().collect()
    }

    /// Records something that happened outside the cards (a failed pipeline, a merged pull request) and
    /// announces it to browsers.
    pub fn record(&self, item: ActivityItem) {
        push_activity(&mut self.activity_feed(), item.clone());
        let _ = self.inner.events.send(FleetEvent::Activity { item });
    }

    /// Sends `event` to every browser on the event stream (a pipeline run that changed).
    pub fn announce(&self, event: FleetEvent) {
        // No receivers just means no browser is connected.
        let _ = self.inner.events.send(event);
    }

    fn activity_feed(&self) -> std::sync::MutexGuard<'_, VecDeque<ActivityItem>> {
        self.inner
            .activity
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every cluster's connection.
    pub fn sources(&self) -> Vec<SourceStatus> {
        self.inner.sources.statuses()
    }

    /// The namespace of pod `name` on workload cluster `cluster`, from the watch cache.
    pub fn pod_namespace(&self, cluster: &str, name: &str) -> Option<String> {
        self.inner
            .stores
            .workloads
            .values()
            .flatten()
            .find(|w| w.cluster == cluster)?
            .pods
            .state()
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .and_then(|p| p.metadata.namespace.clone())
    }

    /// The deploys Argo CD remembers for `service` in `environment`, oldest first, as chart markers.
    pub fn deploy_markers(&self, service: &str, environment: &str) -> Vec<DeployMarker> {
        let labels = &self.inner.labels;
        let is_this = |app: &Application| {
            let Some(map) = app.metadata.labels.as_ref() else {
                return false;
            };
            map.get(&labels.component).map(String::as_str) == Some(service)
                && map.get(&labels.environment).map(String::as_str) == Some(environment)
        };
        let Some(app) = self
            .inner
            .stores
            .applications
            .state()
            .into_iter()
            .find(|a| is_this(a))
        else {
            return Vec::new();
        };
        cards::deploys(&app)
            .into_iter()
            .filter_map(|deploy| {
                Some(DeployMarker {
                    at: deploy.at.parse::<jiff::Timestamp>().ok()?.as_second(),
                    version: cards::short(deploy.revision),
                    previous: deploy.previous.map(cards::short),
                })
            })
            .collect()
    }

    /// The service's objects on the management cluster and what runs it, as the Config tab shows them: its
    /// Component, Releases, the Databases and DatabaseSchemas it is bound to or named after, and per
    /// environment its Argo CD Application, ExternalSecrets and Crossplane claims.
    pub fn platform_objects(&self, service: &str) -> PlatformObjects {
        let stores = &self.inner.stores;
        let index = Index::build(stores, &self.inner.labels, |component| component == service);
        let releases: Vec<Arc<Release>> = index.releases.into_values().collect();
        let bound = |database: &Database| {
            database.spec.name == service
                || database
                    .status
                    .as_ref()
                    .is_some_and(|s| s.bound_components.iter().any(|c| c == service))
                || releases.iter().any(|r| {
                    r.spec.environment == database.spec.environment
                        && r.spec
                            .databases
                            .iter()
                            .any(|b| b.database == database.spec.name)
                })
        };
        let databases: Vec<Arc<Database>> = stores
            .databases
            .state()
            .into_iter()
            .filter(|d| bound(d))
            .collect();
        let schemas = index
            .schemas
            .into_iter()
            .filter(|s| {
                databases.iter().any(|d| {
                    d.spec.name == s.spec.database && d.spec.environment == s.spec.environment
                })
            })
            .collect();
        PlatformObjects {
            component: stores
                .components
                .state()
                .into_iter()
                .find(|c| c.name_any() == service),
            releases,
            databases,
            schemas,
            applications: by_environment(index.applications),
            secrets: by_environment(index.secrets),
            claims: by_environment(index.claims),
        }
    }

    /// Argo CD's ApplicationSets and Applications in the watch caches, for the `/config` page.
    pub fn argo_objects(&self) -> (Vec<Arc<DynamicObject>>, Vec<Arc<Application>>) {
        (
            self.inner.stores.application_sets.state(),
            self.inner.stores.applications.state(),
        )
    }

    /// The services whose pages show the platform resource `kind`/`name`: a Release's component, a
    /// Database's or DatabaseSchema's bound services (and the one it is named after), a Component itself.
    fn services_showing(&self, kind: &str, name: &str) -> Vec<String> {
        let stores = &self.inner.stores;
        match kind {
            "Component" => vec![name.to_string()],
            "Release" => stores
                .releases
                .state()
                .iter()
                .filter(|r| r.name_any() == name)
                .map(|r| r.spec.component.clone())
                .collect(),
            "Database" | "DatabaseSchema" => {
                let database = match kind {
                    "Database" => stores
                        .databases
                        .state()
                        .iter()
                        .find(|d| d.name_any() == name)
                        .map(|d| (d.spec.name.clone(), d.spec.environment.clone())),
                    _ => stores
                        .schemas
                        .state()
                        .iter()
                        .find(|s| s.name_any() == name)
                        .map(|s| (s.spec.database.clone(), s.spec.environment.clone())),
                };
                let Some((database, environment)) = database else {
                    return Vec::new();
                };
                let bound = stores
                    .databases
                    .state()
                    .iter()
                    .filter(|d| d.spec.name == database && d.spec.environment == environment)
                    .flat_map(|d| d.status.clone().unwrap_or_default().bound_components)
                    .collect::<Vec<_>>();
                std::iter::once(database).chain(bound).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The platform's Applications as the `/platform` page shows them (without git's last bumps).
    pub fn platform_view(
        &self,
        clusters: &[(String, Option<String>)],
    ) -> shared::platform::PlatformView {
        crate::platform::platform_view(
            &self.inner.stores.applications.state(),
            clusters,
            self.inner.argocd_ui.as_deref(),
        )
    }

    /// The labels Argo CD knows each workload cluster by, from its cluster secret's metadata, by the
    /// secret's `environment` label (the label the platform's ApplicationSets select clusters with).
    pub fn cluster_labels(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.inner
            .stores
            .cluster_secrets
            .state()
            .iter()
            .filter_map(|secret| {
                let mut labels = secret.metadata.labels.clone().unwrap_or_default();
                labels.remove(watch::CLUSTER_SECRET_LABEL);
                Some((labels.get("environment")?.clone(), labels))
            })
            .collect()
    }

    /// Every Database on the management cluster, as (environment, name).
    pub fn database_names(&self) -> Vec<(String, String)> {
        self.inner
            .stores
            .databases
            .state()
            .iter()
            .map(|d| (d.spec.environment.clone(), d.spec.name.clone()))
            .collect()
    }

    /// Every ServiceLevelObjective in the watch cache, as the SLO evaluator reads them.
    pub fn slo_objects(&self) -> Vec<Arc<DynamicObject>> {
        self.inner.stores.slos.state()
    }

    /// The labels platform objects are found by.
    pub fn labels(&self) -> &crate::config::LabelsConfig {
        &self.inner.labels
    }

    /// The workload environments, in order.
    pub fn environments(&self) -> Vec<String> {
        self.inner.stores.workloads.keys().cloned().collect()
    }

    /// The service's databases (bound to it, or named after it) with their schema state; database error texts
    /// only when `with_errors`.
    pub fn databases(&self, service: &str, with_errors: bool) -> Vec<DatabaseView> {
        self.database_views(
            |db| {
                db.spec.name == service
                    || db
                        .status
                        .as_ref()
                        .is_some_and(|s| s.bound_components.iter().any(|c| c == service))
            },
            |_| with_errors,
        )
    }

    /// The Databases `wanted` picks, by environment then name, each with its schema state: the one place a
    /// Database becomes a [`DatabaseView`], for a service's Databases tab and the Databases page alike.
    /// `errors_visible` is asked per database with the owner teams of the fleet services bound to it (empty
    /// when none is), and the schema operator's error texts are kept only where it says yes.
    pub fn database_views(
        &self,
        wanted: impl Fn(&Database) -> bool,
        errors_visible: impl Fn(&[String]) -> bool,
    ) -> Vec<DatabaseView> {
        let view = self.current_view();
        // What the code running in each environment needs of each database, from the cards of the services
        // using it (a card's schema is its Release's database against the migrations its code ships).
        let mut in_code: HashMap<(&str, &str), Vec<&shared::fleet::SchemaView>> = HashMap::new();
        for card in view.services.values().flat_map(|detail| &detail.cards) {
            if let Some(schema) = &card.schema {
                in_code
                    .entry((card.environment.as_str(), schema.database.as_str()))
                    .or_default()
                    .push(schema);
            }
        }
        let schemas = self.inner.stores.schemas.state();
        let applications = self.inner.stores.applications.state();
        let installers = crate::platform::Installers::of(applications.iter().map(Arc::as_ref));
        let resource_applications = crate::platform::resource_applications(&applications);
        let own_application = |kind: &str, name: String| {
            resource_applications
                .get(&(kind.to_string(), name))
                .map(|app| {
                    crate::platform::resource_application(
                        app,
                        &installers,
                        self.inner.argocd_ui.as_deref(),
                    )
                })
        };
        let mut views: Vec<DatabaseView> = self
            .inner
            .stores
            .databases
            .state()
            .iter()
            .filter(|db| wanted(db))
            .map(|db| {
                let (name, environment) = (&db.spec.name, &db.spec.environment);
                let status = db.status.clone().unwrap_or_default();
                let schema_object = schemas
                    .iter()
                    .find(|s| &s.spec.database == name && &s.spec.environment == environment);
                let schema = schema_object.and_then(|s| s.status.as_ref());
                let code = in_code
                    .get(&(environment.as_str(), name.as_str()))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                // Code that is ahead of the database is what makes it not up to date, so its version is the
                // one to show; otherwise whichever code knows its version.
                let code_version = code
                    .iter()
                    .find(|s| s.behind)
                    .or_else(|| code.iter().find(|s| s.code_version.is_some()))
                    .and_then(|s| s.code_version.clone());
                let owners: Vec<String> = status
                    .bound_components
                    .iter()
                    .filter_map(|component| view.services.get(component))
                    .map(|detail| detail.summary.owner.clone())
                    .collect();
                let with_errors = errors_visible(&owners);
                DatabaseView {
                    name: name.clone(),
                    environment: environment.clone(),
                    size: format!("{:?}", db.spec.size).to_lowercase(),
                    engine: format!("{:?}", db.spec.engine).to_lowercase(),
                    available: status.available,
                    endpoint: status.endpoint.clone(),
                    up_to_date: !code.iter().any(|s| s.behind),
                    applied_version: schema
                        .and_then(|s| s.applied_version.clone())
                        .or(status.schema_version.clone()),
                    code_version,
                    bound_components: status.bound_components.clone(),
                    checks: schema
                        .map(|s| {
                            s.checks
                                .iter()
                                .map(|check| SchemaCheckView {
                                    name: check.name.clone(),
                                    state: format!("{:?}", check.state),
                                    error: check.error.clone().filter(|_| with_errors),
                                    error_hidden: check.error.is_some() && !with_errors,
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                    application: own_application("Database", db.name_any()),
                    schema_application: schema_object
                        .and_then(|s| own_application("DatabaseSchema", s.name_any())),
                }
            })
            .collect();
        views.sort_by(|a, b| {
            (a.environment.as_str(), a.name.as_str())
                .cmp(&(b.environment.as_str(), b.name.as_str()))
        });
        views
    }

    /// The DatabaseSchema of database `name` in `environment`, from the watch cache.
    pub fn database_schema(&self, environment: &str, name: &str) -> Option<Arc<DatabaseSchema>> {
        self.inner
            .stores
            .schemas
            .state()
            .into_iter()
            .find(|s| s.spec.database == name && s.spec.environment == environment)
    }

    /// Waits until the first picture of the fleet is computed, at most `limit`; false if it is not.
    pub async fn wait_until_ready(&self, limit: Duration) -> bool {
        let mut ready = self.inner.ready.clone();
        tokio::time::timeout(limit, ready.wait_for(|r| *r))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// How far the first picture is, while it is not complete; `None` once it is.
    pub fn loading(&self) -> Option<Loading> {
        if *self.inner.ready.borrow() {
            return None;
        }
        let first_lists = self.inner.sources.first_lists();
        let total = first_lists
            .components()
            .max(self.inner.stores.components.state().len());
        if total == 0 {
            return Some(Loading::Listing);
        }
        Some(Loading::Services {
            loaded: first_lists.services_with_applications().min(total),
            total,
        })
    }

    /// Subscribes to deltas. Subscribe before taking a snapshot so nothing falls between the two.
    pub fn subscribe(&self) -> broadcast::Receiver<FleetEvent> {
        self.inner.events.subscribe()
    }

    /// A snapshot event of everything.
    pub fn snapshot(&self) -> FleetEvent {
        FleetEvent::Snapshot {
            services: self.services(),
            sources: self.sources(),
            platform: self.read(|view| view.platform_counts.clone()),
        }
    }

    fn read<T>(&self, f: impl FnOnce(&View) -> T) -> T {
        f(&self.current_view())
    }

    fn current_view(&self) -> Arc<View> {
        // A poisoned lock means a recompute panicked mid-swap; the view it left is still the best we have.
        self.inner
            .view
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn recompute_loop(
        self,
        mut dirty: mpsc::UnboundedReceiver<Dirty>,
        ready: tokio_watch::Sender<bool>,
    ) {
        // The first picture waits for the management cluster, and for each workload cluster a little while:
        // one that is down must not hold up the rest, its cards say so instead.
        let stores = &self.inner.stores;
        if stores.components.wait_until_ready().await.is_err() {
            return;
        }
        let _ = tokio::join!(
            stores.releases.wait_until_ready(),
            stores.applications.wait_until_ready(),
            stores.schemas.wait_until_ready(),
        );
        // Settled: every watch of the cluster has listed, found its kind not installed, or failed.
        let workload_clusters: Vec<&str> = stores
            .workloads
            .values()
            .flatten()
            .map(|w| w.cluster.as_str())
            .collect();
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            futures::future::join_all(
                workload_clusters
                    .iter()
                    .map(|cluster| self.inner.sources.settled(cluster)),
            ),
        )
        .await;
        self.recompute_off_the_workers(BTreeSet::from([Dirty::All]))
            .await;
        let _ = ready.send(true);
        self.inner.sources.first_lists().finish();
        let mut window = BATCH_WINDOW;
        while let Some(first) = dirty.recv().await {
            tokio::time::sleep(window).await;
            let mut batch = BTreeSet::from([first]);
            while let Ok(more) = dirty.try_recv() {
                batch.insert(more);
            }
            let started = std::time::Instant::now();
            self.recompute_off_the_workers(batch).await;
            window = batch_window_after(started.elapsed());
        }
    }

    /// A batch at a thousand services takes milliseconds of CPU (indexing the stores, serializing and
    /// gzipping the list); on a runtime worker it would stall the requests queued behind it, which is
    /// what the p99 of `shared::api::ListServices` is made of.
    async fn recompute_off_the_workers(&self, batch: BTreeSet<Dirty>) {
        let model = self.clone();
        if let Err(error) = tokio::task::spawn_blocking(move || model.recompute(&batch)).await {
            tracing::error!(%error, "recomputing the fleet view failed; the previous view stays");
        }
    }

    /// Recomputes the services in `batch` and publishes what changed.
    fn recompute(&self, batch: &BTreeSet<Dirty>) {
        let stores = &self.inner.stores;
        let components = stores.components.state();
        let all = batch.contains(&Dirty::All);
        let platform_changed = all || batch.iter().any(|d| matches!(d, Dirty::Platform(_)));
        // A platform resource's own Application shows on the cards and databases of its services.
        let resource_services: Vec<String> = batch
            .iter()
            .filter_map(|d| match d {
                Dirty::Platform(Some((kind, name))) => Some((kind.as_str(), name.as_str())),
                _ => None,
            })
            .flat_map(|(kind, name)| self.services_showing(kind, name))
            .collect();
        let wanted: BTreeSet<&str> = batch
            .iter()
            .filter_map(|d| match d {
                Dirty::Service(name) => Some(name.as_str()),
                Dirty::All | Dirty::Platform(_) => None,
            })
            .chain(resource_services.iter().map(String::as_str))
            .collect();
        let index = Index::build(stores, &self.inner.labels, |name| {
            all || wanted.contains(name)
        });
        let now = jiff::Timestamp::now();
        let unreachable = self.inner.sources.unreachable_since();
        let forbidden = self.inner.sources.forbidden_kinds();
        // The first picture is the only one never serialized.
        if self.current_view().services_json.is_empty() {
            self.seed_activity_from_history(&index);
        }

        let mut computed = BTreeMap::new();
        for component in components.iter() {
            let name = component.name_any();
            if !all && !wanted.contains(name.as_str()) {
                continue;
            }
            let cards: Vec<DeploymentCard> = stores
                .workloads
                .iter()
                .filter(|(env, _)| index.present(&name, env))
                .map(|(env, workloads)| {
                    let clusters = workloads
                        .iter()
                        .map(|w| ClusterInput {
                            name: &w.cluster,
                            unreachable_since: unreachable.get(&w.cluster).cloned(),
                            forbidden_kinds: forbidden.get(&w.cluster).cloned().unwrap_or_default(),
                        })
                        .collect();
                    self.compute_card(component, env, clusters, &index, now)
                })
                .collect();
            let mut summary = summarize(component, &cards);
            (summary.catalog, summary.catalog_state) =
                match self.inner.catalog.lookup(&component.spec.repository) {
                    catalog::Lookup::Found(info) => (Some(info), CatalogState::Found),
                    catalog::Lookup::Missing => (None, CatalogState::Missing),
                    catalog::Lookup::Unread => (None, CatalogState::Unread),
                };
            computed.insert(name, ServiceDetail { summary, cards });
        }
        let mut existing: BTreeSet<String> = components.iter().map(|c| c.name_any()).collect();
        // Services are the union of the platform and the catalog: a repository with a catalog-info.yaml that
        // no Component names is a service not onboarded yet. A Component of the same name wins, and the
        // entry goes as soon as a Component names its repository or its file goes away.
        let onboarded: BTreeSet<String> = components
            .iter()
            .map(|c| c.spec.repository.to_lowercase())
            .collect();
        for (repository, info) in self.inner.catalog.entries() {
            if onboarded.contains(&repository.to_lowercase()) {
                continue;
            }
            let Some(name) = catalog::service_name(&repository, &info) else {
                continue;
            };
            if !existing.insert(name.clone()) || !(all || wanted.contains(name.as_str())) {
                continue;
            }
            let summary = catalog::not_onboarded(name.clone(), &repository, &info);
            computed.insert(
                name,
                ServiceDetail {
                    summary,
                    cards: Vec::new(),
                },
            );
        }

        let mut deltas = Vec::new();
        // Only this task writes the view, so working on a copy and swapping it in loses nothing.
        let mut view = View::clone(&self.current_view());
        let removed: Vec<String> = view
            .services
            .keys()
            .filter(|name| !existing.contains(*name))
            .cloned()
            .collect();
        for name in removed {
            view.services.remove(&name);
            deltas.push(FleetEvent::ServiceRemoved { name });
        }
        for (name, detail) in computed {
            let previous = view.services.remove(&name);
            for card in &detail.cards {
                let old = previous
                    .as_ref()
                    .and_then(|p| p.cards.iter().find(|c| c.environment == card.environment));
                if old != Some(card) {
                    if let Some(old) = old {
                        activity(old, card, &mut self.activity_feed(), &mut deltas, now);
                    }
                    deltas.push(FleetEvent::CardUpdated { card: card.clone() });
                }
            }
            if previous.as_ref().map(|p| &p.summary) != Some(&detail.summary) {
                deltas.push(FleetEvent::ServiceUpserted {
                    service: detail.summary.clone(),
                });
            }
            view.services.insert(name, Arc::new(detail));
        }
        if deltas.iter().any(|d| {
            matches!(
                d,
                FleetEvent::ServiceUpserted { .. } | FleetEvent::ServiceRemoved { .. }
            )
        }) || view.services_json.is_empty()
        {
            let list: Vec<&ServiceSummary> = view.services.values().map(|d| &d.summary).collect();
            let json = serde_json::to_vec(&list).unwrap_or_default();
            view.services_json_gzip = gzip(&json);
            view.services_json = Bytes::from(json);
        }
        if platform_changed {
            view.platform_counts =
                crate::platform::standing_counts(&self.inner.stores.applications.state());
            deltas.push(FleetEvent::PlatformChanged {
                counts: view.platform_counts.clone(),
            });
        }
        *self
            .inner
            .view
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(view);
        for delta in deltas {
            // No receivers just means no browser is connected.
            let _ = self.inner.events.send(delta);
        }
    }

    /// The first picture's feed begins with the deploys Argo CD remembers, merged by time with anything
    /// recorded while the watches were still listing (a merge the forge reported first).
    fn seed_activity_from_history(&self, index: &Index) {
        let history = index
            .applications
            .iter()
            .flat_map(|((service, environment), apps)| {
                // Every cluster's Application remembers the same deploys: one is enough.
                apps.first()
                    .map(|app| cards::deploy_history(app, service, environment))
                    .unwrap_or_default()
            });
        let mut feed = self.activity_feed();
        let mut items: Vec<(jiff::Timestamp, ActivityItem)> = feed
            .drain(..)
            .chain(history)
            .filter_map(|item| Some((item.at.parse().ok()?, item)))
            .collect();
        items.sort_by_key(|(at, _)| *at);
        for (_, item) in items {
            push_activity(&mut feed, item);
        }
    }

    fn compute_card(
        &self,
        component: &Component,
        environment: &str,
        clusters: Vec<ClusterInput<'_>>,
        index: &Index,
        now: jiff::Timestamp,
    ) -> DeploymentCard {
        let name = component.name_any();
        let key = (name.clone(), environment.to_string());
        let release = index.releases.get(&key).map(Arc::as_ref);
        let applications = borrowed(&index.applications, &key);
        let application = cards::shown_application(&applications);
        // One Rollout shows: with several clusters, a reachable one's, so the steps are live.
        let rollouts = index
            .rollouts
            .get(&key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let reachable = |cluster: &str| {
            clusters
                .iter()
                .any(|c| c.name == cluster && c.unreachable_since.is_none())
        };
        let rollout = rollouts
            .iter()
            .find(|(cluster, _)| reachable(cluster))
            .or_else(|| rollouts.first())
            .map(|(_, rollout)| rollout.as_ref());
        let running_tag = index.pods.get(&key).and_then(|pods| {
            pods.first()
                .and_then(|(_, p)| p.spec.as_ref()?.containers.first()?.image.clone())
                .and_then(|image| cards::image_tag(&image).map(str::to_string))
        });
        let database = release
            .and_then(|r| r.spec.databases.first())
            .map(|b| b.database.clone());
        let schema = database.as_ref().and_then(|db| {
            index
                .schemas
                .iter()
                .find(|s| &s.spec.database == db && s.spec.environment == environment)
        });
        let previous = application.and_then(cards::previous_version);
        let (changes, migrations_in_code) = match &self.inner.code {
            Some(code) => {
                let repository = &component.spec.repository;
                let changes = match (&previous, &running_tag) {
                    (Some(base), Some(head)) => code
                        .changes(&name, repository, base, head)
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                let migrations = match (&schema, &running_tag) {
                    (Some(_), Some(head)) => code.migrations(&name, repository, head),
                    _ => None,
                };
                (changes, migrations)
            }
            None => (Vec::new(), None),
        };
        let mut card = card(CardInputs {
            service: &name,
            environment,
            release,
            applications,
            clusters,
            rollout,
            pods: index
                .pods
                .get(&key)
                .map(|pods| {
                    pods.iter()
                        .map(|(cluster, pod)| (cluster.as_ref(), pod.as_ref()))
                        .collect()
                })
                .unwrap_or_default(),
            schema: schema.map(Arc::as_ref),
            secrets: borrowed(&index.secrets, &key),
            claims: borrowed(&index.claims, &key),
            composed: borrowed(&index.composed, &key),
            deployments: borrowed(&index.deployments, &key),
            events: borrowed(&index.events, &key),
            changes,
            migrations_in_code,
            now: Some(now),
        });
        card.release_application = release.and_then(|release| {
            let app = index
                .resource_applications
                .get(&("Release".to_string(), release.name_any()))?;
            Some(crate::platform::resource_application(
                app,
                &index.installers,
                self.inner.argocd_ui.as_deref(),
            ))
        });
        // The run that built what runs here (or what the Release asks for, before anything runs).
        card.build = self.inner.pipelines.as_ref().and_then(|pipelines| {
            let version = card
                .running_version
                .as_deref()
                .or_else(|| card.release.as_ref().map(|r| r.version.as_str()))?;
            pipelines.build_of(&name, version)
        });
        card
    }
}

type Key = (String, String);

/// An object and the name of the workload cluster it was read from.
type OnCluster<K> = (Arc<str>, Arc<K>);

/// The objects indexed under `key`, borrowed for one card.
fn borrowed<'a, K>(index: &'a HashMap<Key, Vec<Arc<K>>>, key: &Key) -> Vec<&'a K> {
    index
        .get(key)
        .map(|objects| objects.iter().map(Arc::as_ref).collect())
        .unwrap_or_default()
}

/// The watch caches grouped by (component, environment), built once per recompute batch.
struct Index {
    releases: HashMap<Key, Arc<Release>>,
    /// One per cluster of the environment.
    applications: HashMap<Key, Vec<Arc<Application>>>,
    /// One per cluster of the environment that runs one, in configuration order.
    rollouts: HashMap<Key, Vec<OnCluster<rollout::Rollout>>>,
    /// Each with the cluster it runs on.
    pods: HashMap<Key, Vec<OnCluster<Pod>>>,
    secrets: HashMap<Key, Vec<Arc<ExternalSecret>>>,
    claims: HashMap<Key, Vec<Arc<DynamicObject>>>,
    composed: HashMap<Key, Vec<Arc<DynamicObject>>>,
    deployments: HashMap<Key, Vec<Arc<Deployment>>>,
    events: HashMap<Key, Vec<Arc<Event>>>,
    schemas: Vec<Arc<DatabaseSchema>>,
    /// Platform resources' own Applications by (kind, name).
    resource_applications: HashMap<(String, String), Arc<Application>>,
    /// Which Application installs which CRD, for telling waiting apps from failing ones.
    installers: crate::platform::Installers,
}

impl Index {
    fn build(
        stores: &Stores,
        labels: &crate::config::LabelsConfig,
        wanted: impl Fn(&str) -> bool,
    ) -> Self {
        let label_key = |meta: &kube::api::ObjectMeta, environment: Option<&str>| -> Option<Key> {
            let labels_map = meta.labels.as_ref()?;
            let component = labels_map.get(&labels.component)?;
            if !wanted(component) {
                return None;
            }
            let environment = environment
                .map(str::to_string)
                .or_else(|| labels_map.get(&labels.environment).cloned())?;
            Some((component.clone(), environment))
        };
        let mut index = Self {
            releases: HashMap::new(),
            applications: HashMap::new(),
            rollouts: HashMap::new(),
            pods: HashMap::new(),
            secrets: HashMap::new(),
            claims: HashMap::new(),
            composed: HashMap::new(),
            deployments: HashMap::new(),
            events: HashMap::new(),
            schemas: stores.schemas.state(),
            resource_applications: HashMap::new(),
            installers: crate::platform::Installers::default(),
        };
        let applications = stores.applications.state();
        index.installers = crate::platform::Installers::of(applications.iter().map(Arc::as_ref));
        index.resource_applications = crate::platform::resource_applications(&applications);
        for release in stores.releases.state() {
            if wanted(&release.spec.component) {
                let key = (
                    release.spec.component.clone(),
                    release.spec.environment.clone(),
                );
                index.releases.insert(key, release);
            }
        }
        for app in applications {
            if let Some(key) = label_key(&app.metadata, None) {
                index.applications.entry(key).or_default().push(app);
            }
        }
        for (environment, workload) in stores
            .workloads
            .iter()
            .flat_map(|(environment, workloads)| workloads.iter().map(move |w| (environment, w)))
        {
            let env = Some(environment.as_str());
            let cluster: Arc<str> = Arc::from(workload.cluster.as_str());
            for rollout in workload.rollouts.state() {
                if let Some(key) = label_key(&rollout.metadata, env) {
                    index
                        .rollouts
                        .entry(key)
                        .or_default()
                        .push((cluster.clone(), rollout));
                }
            }
            for pod in workload.pods.state() {
                if let Some(key) = label_key(&pod.metadata, env) {
                    index
                        .pods
                        .entry(key)
                        .or_default()
                        .push((cluster.clone(), pod));
                }
            }
            for secret in workload.secrets.state() {
                if let Some(key) = label_key(&secret.metadata, env) {
                    index.secrets.entry(key).or_default().push(secret);
                }
            }
            for store in &workload.claims {
                for claim in store.state() {
                    if let Some(key) = label_key(&claim.metadata, env) {
                        index.claims.entry(key).or_default().push(claim);
                    }
                }
            }
            for deployment in workload.deployments.state() {
                if let Some(key) = label_key(&deployment.metadata, env) {
                    index.deployments.entry(key).or_default().push(deployment);
                }
            }
            // Events and composed resources carry no platform labels: they belong to the service whose
            // namespace they are in (for composed resources, the namespace of the claim they serve).
            let services_by_namespace: HashMap<String, Key> = workload
                .namespaces
                .state()
                .iter()
                .filter_map(|ns| Some((ns.metadata.name.clone()?, label_key(&ns.metadata, env)?)))
                .collect();
            for store in &workload.composed {
                for resource in store.state() {
                    let key = resource
                        .labels()
                        .get(cards::CLAIM_NAMESPACE_LABEL)
                        .and_then(|ns| services_by_namespace.get(ns));
                    if let Some(key) = key {
                        index
                            .composed
                            .entry(key.clone())
                            .or_default()
                            .push(resource);
                    }
                }
            }
            for event in workload.events.state() {
                let key = event
                    .metadata
                    .namespace
                    .as_ref()
                    .and_then(|ns| services_by_namespace.get(ns));
                if let Some(key) = key {
                    index.events.entry(key.clone()).or_default().push(event);
                }
            }
        }
        index
    }

    /// Whether the service has anything in `environment` (a card is shown only then).
    fn present(&self, service: &str, environment: &str) -> bool {
        let key = (service.to_string(), environment.to_string());
        self.releases.contains_key(&key)
            || self.applications.contains_key(&key)
            || self.pods.contains_key(&key)
            || self.deployments.contains_key(&key)
    }
}

/// Gzips `bytes` at a fast level: the list is recompressed on every change.
fn gzip(bytes: &[u8]) -> Bytes {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    if encoder.write_all(bytes).is_err() {
        return Bytes::new();
    }
    encoder.finish().map(Bytes::from).unwrap_or_default()
}

/// The summary the Overview lists for one Component with its cards.
pub fn summarize(component: &Component, cards: &[DeploymentCard]) -> ServiceSummary {
    let spec = &component.spec;
    ServiceSummary {
        name: component.name_any(),
        owner: spec.owner.clone(),
        description: spec.description.clone(),
        repository: spec.repository.clone(),
        template: format!("{}@{}", spec.template.name, spec.template.version),
        depends_on: spec.depends_on.clone(),
        environments: cards.iter().map(cell).collect(),
        catalog: None,
        catalog_state: CatalogState::Unread,
    }
}

/// Adds `item` to `feed` (oldest first) where its time belongs. Almost everything happens now and goes at the
/// back; merges remembered on start are older than the deploys Argo CD's history already put there, and
/// appending them would show yesterday's merge above this minute's deploy.
fn push_activity(feed: &mut VecDeque<ActivityItem>, item: ActivityItem) {
    let at = |item: &ActivityItem| item.at.parse::<jiff::Timestamp>().ok();
    let position = match at(&item) {
        Some(when) => feed
            .iter()
            .rposition(|older| at(older).is_none_or(|then| then <= when))
            .map_or(0, |i| i + 1),
        None => feed.len(),
    };
    feed.insert(position, item);
    while feed.len() > ACTIVITY_KEPT {
        feed.pop_front();
    }
}

/// Notes what a card change means to a person: a deploy, a finished sync, a degradation.
fn activity(
    old: &DeploymentCard,
    new: &DeploymentCard,
    feed: &mut VecDeque<ActivityItem>,
    deltas: &mut Vec<FleetEvent>,
    now: jiff::Timestamp,
) {
    let mut push = |kind, message: String| {
        let item = ActivityItem {
            at: now.to_string(),
            service: new.service.clone(),
            environment: Some(new.environment.clone()),
            kind,
            message,
            link: None,
        };
        push_activity(feed, item.clone());
        deltas.push(FleetEvent::Activity { item });
    };
    if let (Some(before), Some(after)) = (&old.running_version, &new.running_version)
        && before != after
    {
        push(
            ActivityKind::Deploy,
            format!("now runs {after} (was {before})"),
        );
    }
    let finished = |card: &DeploymentCard| {
        card.application
            .as_ref()
            .and_then(|a| a.operation.as_ref())
            .filter(|op| op.phase == "Succeeded")
            .and_then(|op| op.finished_at.clone())
    };
    if let Some(at) = finished(new)
        && finished(old).as_ref() != Some(&at)
    {
        push(ActivityKind::Sync, "sync finished".to_string());
    }
    let health = |card: &DeploymentCard| card.application.as_ref().map(|a| a.health);
    if health(new) == Some(Health::Degraded) && health(old) != Some(Health::Degraded) {
        push(ActivityKind::Degraded, "became degraded".to_string());
    }
}

/// The state of a cluster as the card shows it: `Some(since)` while unreachable.
pub fn unreachable_since(state: &SourceState) -> Option<String> {
    match state {
        SourceState::Unreachable { since, .. } => Some(since.clone()),
        _ => None,
    }
}

/// A service's objects of one kind from the index, each with its environment.
fn by_environment<K>(map: HashMap<Key, Vec<Arc<K>>>) -> Vec<(String, Arc<K>)> {
    map.into_iter()
        .flat_map(|((_, environment), objects)| {
            objects.into_iter().map(move |o| (environment.clone(), o))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_wait_as_long_as_the_last_recompute_took_within_bounds() {
        assert_eq!(batch_window_after(Duration::from_millis(3)), BATCH_WINDOW);
        assert_eq!(
            batch_window_after(Duration::from_millis(80)),
            Duration::from_millis(80)
        );
        assert_eq!(
            batch_window_after(Duration::from_secs(9)),
            LONGEST_BATCH_WINDOW
        );
    }

    #[test]
    fn loading_says_how_many_services_are_in_as_the_app_recognises_it() {
        for loading in [
            Loading::Listing,
            Loading::Services {
                loaded: 6_200,
                total: 10_000,
            },
        ] {
            let error = shared::ApiError::new(shared::ErrorCode::Unavailable, loading.to_string());
            assert!(shared::fleet::is_loading(&error), "{loading}");
        }
        assert_eq!(
            Loading::Services {
                loaded: 6_200,
                total: 10_000
            }
            .to_string(),
            "Loading the fleet: 6,200 of 10,000 services loaded."
        );
    }
}
