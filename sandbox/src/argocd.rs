//! A fake Argo CD API server: the slice of `/api/v1` Tower calls, with Argo CD's wire shapes.
//!
//! As in a real install, the Applications are `argoproj.io/v1alpha1` objects on the management
//! cluster; this server reads and writes them through [`ClusterStore`], and builds resource trees from
//! the destination clusters' live objects. A sync request only records the operation (`operation`,
//! `status.operationState.phase = Running`): moving it on to `Succeeded` is the simulator's job, as it
//! is the application controller's in a real install.
//!
//! Several instances may share the management cluster, each holding the Applications that deploy to its
//! clusters ([`Scope`]): an instance answers for another's Application as Argo CD answers for one it does
//! not have, 404.
//!
//! Errors use Argo CD's grpc-gateway body, `{"error", "code", "message"}`, with the gRPC code mapped
//! to HTTP the way grpc-gateway maps it.

mod tree;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use axum::{Json, Router};
use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::apiserver::{ClusterStore, ResourceType, StoreError};

/// The Application's `apiVersion`.
pub const API_VERSION: &str = "argoproj.io/v1alpha1";
/// The Application's `kind`.
pub const KIND: &str = "Application";
/// Where Applications live on the management cluster unless a request names another `appNamespace`.
pub const NAMESPACE: &str = "argocd";
/// The local account the bearer token belongs to: what `operation.initiatedBy.username` records.
pub const ACCOUNT: &str = "tower";
/// Sync requests remembered for [`ArgoCd::sync_requests`], oldest forgotten first.
pub const SYNCS_KEPT: usize = 1_000;

/// The `Application` resource type, to register with [`crate::apiserver::Clusters::new`].
pub fn application_type() -> ResourceType {
    ResourceType {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        kind: KIND.into(),
        plural: "applications".into(),
        namespaced: true,
    }
}

/// One sync request as the server received it, for tests asserting what Tower asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncRequestRecord {
    /// The Application's name.
    pub app: String,
    /// The revision asked for, if any (`None` syncs to the app's target revision).
    pub revision: Option<String>,
    /// Whether resources no longer in git are to be deleted.
    pub prune: bool,
    /// `strategy.apply.force` (or `strategy.hook.syncStrategyApply.force`).
    pub force: bool,
    /// Whether this was a dry run, which changes nothing.
    pub dry_run: bool,
    /// When it arrived.
    pub at: jiff::Timestamp,
}

/// Which Applications an Argo CD instance holds, by the cluster they deploy to (`spec.destination.name`,
/// else their environment label, as [`tree`] reads it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every Application on the management cluster: the one Argo CD of the platform.
    #[default]
    Everything,
    /// Only Applications deploying to one of these clusters.
    Only(BTreeSet<String>),
    /// Every Application but those deploying to one of these clusters, which other instances hold.
    AllBut(BTreeSet<String>),
}

impl Scope {
    /// Whether an instance with this scope holds `app`.
    pub fn holds(&self, app: &Value) -> bool {
        self.deploys_to(tree::destination(app).cluster.as_deref())
    }

    /// Whether an instance with this scope deploys to `cluster` (`None`: a destination nobody can tell,
    /// which only an instance serving everything else holds).
    pub fn deploys_to(&self, cluster: Option<&str>) -> bool {
        match self {
            Self::Everything => true,
            Self::Only(clusters) => cluster.is_some_and(|c| clusters.contains(c)),
            Self::AllBut(clusters) => cluster.is_none_or(|c| !clusters.contains(c)),
        }
    }
}

/// One operation of Argo CD's API this server answers. The router is built from [`Operation::ALL`], so a
/// route added here is one the contract tests (which check every operation against Argo CD's swagger)
/// must cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// `GET /api/v1/applications`: `ApplicationService_List`.
    ListApplications,
    /// `GET /api/v1/applications/{name}`: `ApplicationService_Get`.
    GetApplication,
    /// `GET /api/v1/applications/{applicationName}/resource-tree`: `ApplicationService_ResourceTree`.
    ResourceTree,
    /// `POST /api/v1/applications/{name}/sync`: `ApplicationService_Sync`.
    Sync,
    /// `GET /api/v1/stream/applications`: `ApplicationService_Watch`, as server-sent events.
    WatchApplications,
}

impl Operation {
    /// Every operation the server answers, in the order the router registers them.
    pub const ALL: [Self; 5] = [
        Self::ListApplications,
        Self::GetApplication,
        Self::ResourceTree,
        Self::Sync,
        Self::WatchApplications,
    ];

    /// The HTTP method.
    pub fn method(self) -> Method {
        match self {
            Self::Sync => Method::POST,
            Self::ListApplications
            | Self::GetApplication
            | Self::ResourceTree
            | Self::WatchApplications => Method::GET,
        }
    }

    /// The path as the router matches it, its one parameter written `{name}` (the swagger names it
    /// `{name}` or `{applicationName}`, depending on the operation).
    pub fn path(self) -> &'static str {
        match self {
            Self::ListApplications => "/api/v1/applications",
            Self::GetApplication => "/api/v1/applications/{name}",
            Self::ResourceTree => "/api/v1/applications/{name}/resource-tree",
            Self::Sync => "/api/v1/applications/{name}/sync",
            Self::WatchApplications => "/api/v1/stream/applications",
        }
    }

    fn handler(self) -> MethodRouter<ArgoCd> {
        match self {
            Self::ListApplications => get(list),
            Self::GetApplication => get(get_one),
            Self::ResourceTree => get(resource_tree),
            Self::Sync => post(sync),
            Self::WatchApplications => get(stream),
        }
    }
}

/// The fake Argo CD; cheap to clone, every clone sharing state.
#[derive(Clone)]
pub struct ArgoCd {
    inner: Arc<Inner>,
}

struct Inner {
    /// Holds the Applications.
    management: ClusterStore,
    /// Destination clusters by Argo CD cluster name (`dev`, `prod`).
    destinations: BTreeMap<String, ClusterStore>,
    /// The Applications this instance holds; the others do not exist for it.
    scope: Scope,
    /// The one bearer token accepted.
    token: String,
    /// Every HTTP request received, authorised or not.
    requests: AtomicU64,
    /// Well-formed sync requests for existing Applications, in arrival order: the last
    /// [`SYNCS_KEPT`].
    syncs: Mutex<VecDeque<SyncRequestRecord>>,
}

impl ArgoCd {
    /// An Argo CD reading Applications from `management`, resource trees from `destinations` (by the
    /// cluster name Applications use in `spec.destination.name`), and accepting only `token`.
    pub fn new(
        management: ClusterStore,
        destinations: BTreeMap<String, ClusterStore>,
        token: impl Into<String>,
    ) -> Self {
        Self::scoped(management, destinations, token, Scope::Everything)
    }

    /// An Argo CD like [`ArgoCd::new`] that only serves and syncs the Applications `scope` holds.
    pub fn scoped(
        management: ClusterStore,
        destinations: BTreeMap<String, ClusterStore>,
        token: impl Into<String>,
        scope: Scope,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                management,
                destinations,
                scope,
                token: token.into(),
                requests: AtomicU64::new(0),
                syncs: Mutex::new(VecDeque::new()),
            }),
        }
    }

    /// The routes under `/api/v1/…`; the sandbox nests them under `/argocd`.
    pub fn router(&self) -> Router {
        // Routes come only from `Operation::ALL`, so the contract tests' list of operations is the router's.
        let authenticated = Operation::ALL
            .into_iter()
            .fold(Router::new(), |router, operation| {
                router.route(operation.path(), operation.handler())
            })
            // grpc-gateway (v1, as Argo CD uses it) routes a method a path does not serve like a path it
            // does not have: Not Found in the error shape, never an empty 405.
            .fallback(not_routed)
            .method_not_allowed_fallback(not_routed)
            .route_layer(middleware::from_fn_with_state(self.clone(), authenticate));
        authenticated
            .layer(middleware::from_fn_with_state(self.clone(), count))
            .with_state(self.clone())
    }

    /// The sync requests received so far (the last [`SYNCS_KEPT`]), oldest first.
    pub fn sync_requests(&self) -> Vec<SyncRequestRecord> {
        self.inner
            .syncs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// How many HTTP requests this server has received, rejected ones included.
    pub fn request_count(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    fn application(&self, namespace: &str, name: &str) -> Result<Value, ArgoError> {
        self.inner
            .management
            .get(API_VERSION, KIND, Some(namespace), name)
            .filter(|app| self.inner.scope.holds(app))
            .ok_or_else(|| not_found(name))
    }

    /// A predicate for the Applications `query` selects among those this instance holds.
    fn selection(
        &self,
        query: &AppQuery,
    ) -> Result<impl Fn(&Value) -> bool + Send + Sync + use<>, ArgoError> {
        let selected = query.matcher()?;
        let scope = self.inner.scope.clone();
        Ok(move |app: &Value| scope.holds(app) && selected(app))
    }
}

// ---- errors ----

/// The gRPC codes this server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidArgument = 3,
    NotFound = 5,
    FailedPrecondition = 9,
    Internal = 13,
    Unauthenticated = 16,
}

impl Code {
    /// grpc-gateway's `HTTPStatusFromCode`.
    fn status(self) -> StatusCode {
        match self {
            Self::InvalidArgument | Self::FailedPrecondition => StatusCode::BAD_REQUEST,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
        }
    }
}

/// An error in Argo CD's wire shape.
#[derive(Debug)]
struct ArgoError {
    code: Code,
    message: String,
}

impl ArgoError {
    fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl IntoResponse for ArgoError {
    fn into_response(self) -> Response {
        let body =
            json!({"error": self.message, "code": self.code as i32, "message": self.message});
        (self.code.status(), Json(body)).into_response()
    }
}

impl From<StoreError> for ArgoError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { .. } => Self::new(Code::NotFound, err.to_string()),
            StoreError::BadRequest(_) | StoreError::Invalid { .. } => {
                Self::new(Code::InvalidArgument, err.to_string())
            }
            other => {
                tracing::error!(error = %other, "argocd: store write failed");
                Self::new(Code::Internal, "internal error")
            }
        }
    }
}

/// The answer to a request no operation serves.
async fn not_routed() -> ArgoError {
    ArgoError::new(Code::NotFound, "Not Found")
}

fn not_found(name: &str) -> ArgoError {
    ArgoError::new(
        Code::NotFound,
        format!("applications.argoproj.io \"{name}\" not found"),
    )
}

// ---- middleware ----

async fn count(State(argo): State<ArgoCd>, request: Request, next: Next) -> Response {
    argo.inner.requests.fetch_add(1, Ordering::Relaxed);
    next.run(request).await
}

/// Accepts `Authorization: Bearer <token>` (API clients) or the `argocd.token` cookie (the UI).
async fn authenticate(State(argo): State<ArgoCd>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix("argocd.token="))
        .next();
    match bearer.or(cookie) {
        // Argo CD's own messages, so a client's error handling sees what it would in production.
        None => ArgoError::new(Code::Unauthenticated, "no session information").into_response(),
        Some(token) if token != argo.inner.token => ArgoError::new(
            Code::Unauthenticated,
            "invalid session: token signature is invalid",
        )
        .into_response(),
        Some(_) => next.run(request).await,
    }
}

// ---- queries ----

/// The query parameters Application reads share; `projects` may repeat, so they arrive as pairs.
#[derive(Debug, Default)]
struct AppQuery {
    name: Option<String>,
    selector: Option<String>,
    projects: Vec<String>,
    app_namespace: Option<String>,
    repo: Option<String>,
}

impl AppQuery {
    fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        let mut query = Self::default();
        for (key, value) in pairs {
            match key.as_str() {
                "name" if !value.is_empty() => query.name = Some(value),
                "selector" if !value.is_empty() => query.selector = Some(value),
                "projects" | "project" if !value.is_empty() => query.projects.push(value),
                "appNamespace" if !value.is_empty() => query.app_namespace = Some(value),
                "repo" if !value.is_empty() => query.repo = Some(value),
                _ => {}
            }
        }
        query
    }

    fn namespace(&self) -> &str {
        self.app_namespace.as_deref().unwrap_or(NAMESPACE)
    }

    /// A predicate for Applications this query selects; fails on a malformed selector.
    fn matcher(&self) -> Result<impl Fn(&Value) -> bool + Send + Sync + use<>, ArgoError> {
        let labels = ClusterStore::label_matcher(self.selector.as_deref().unwrap_or(""))
            .map_err(|err| ArgoError::new(Code::InvalidArgument, err.to_string()))?;
        let namespace = self.namespace().to_owned();
        let name = self.name.clone();
        let projects = self.projects.clone();
        let repo = self.repo.clone();
        Ok(move |app: &Value| {
            let text = |pointer: &str| app.pointer(pointer).and_then(Value::as_str);
            text("/metadata/namespace") == Some(namespace.as_str())
                && name
                    .as_deref()
                    .is_none_or(|n| text("/metadata/name") == Some(n))
                && (projects.is_empty()
                    || projects
                        .iter()
                        .any(|p| text("/spec/project") == Some(p.as_str())))
                && repo.as_deref().is_none_or(|r| {
                    text("/spec/source/repoURL") == Some(r)
                        || app
                            .pointer("/spec/sources")
                            .and_then(Value::as_array)
                            .is_some_and(|sources| {
                                sources
                                    .iter()
                                    .any(|s| s.get("repoURL").and_then(Value::as_str) == Some(r))
                            })
                })
                && labels(app)
        })
    }
}

// ---- handlers ----

async fn list(
    State(argo): State<ArgoCd>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ArgoError> {
    let query = AppQuery::from_pairs(pairs);
    let selected = argo.selection(&query)?;
    let management = &argo.inner.management;
    let resource_version = management.current_resource_version();
    let items: Vec<Value> = management
        .list(API_VERSION, KIND)
        .into_iter()
        .filter(|app| selected(app))
        .collect();
    Ok(Json(json!({
        "metadata": {"resourceVersion": resource_version.to_string()},
        "items": items,
    })))
}

async fn get_one(
    State(argo): State<ArgoCd>,
    Path(name): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ArgoError> {
    let query = AppQuery::from_pairs(pairs);
    argo.application(query.namespace(), &name).map(Json)
}

async fn resource_tree(
    State(argo): State<ArgoCd>,
    Path(name): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ArgoError> {
    let query = AppQuery::from_pairs(pairs);
    let app = argo.application(query.namespace(), &name)?;
    let destination = tree::destination(&app);
    let nodes = destination
        .cluster
        .as_deref()
        .and_then(|cluster| argo.inner.destinations.get(cluster))
        .map(|store| tree::nodes(store, &destination.namespace, &destination.component))
        .unwrap_or_default();
    Ok(Json(json!({"nodes": nodes})))
}

/// `applicationApplicationSyncRequest`, the parts this server reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct SyncRequest {
    revision: Option<String>,
    prune: bool,
    dry_run: bool,
    strategy: Option<Value>,
    resources: Option<Vec<Value>>,
    sync_options: Option<SyncOptions>,
    infos: Option<Vec<Value>>,
    app_namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SyncOptions {
    items: Vec<String>,
}

impl SyncRequest {
    fn force(&self) -> bool {
        let flag = |pointer: &str| {
            self.strategy
                .as_ref()
                .and_then(|s| s.pointer(pointer))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        flag("/apply/force") || flag("/hook/syncStrategyApply/force")
    }
}

/// How often a sync retries writing the Application when something else wrote it in between.
const WRITE_ATTEMPTS: usize = 5;

async fn sync(
    State(argo): State<ArgoCd>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<Value>, ArgoError> {
    let request: SyncRequest = if body.iter().all(u8::is_ascii_whitespace) {
        SyncRequest::default()
    } else {
        // Argo CD's gateway is not strict about the content type; it decodes the body as JSON.
        serde_json::from_slice(&body).map_err(|err| {
            ArgoError::new(
                Code::InvalidArgument,
                format!("invalid sync request body: {err}"),
            )
        })?
    };
    let namespace = request
        .app_namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| NAMESPACE.to_owned());
    let app = argo.application(&namespace, &name)?;
    {
        let mut syncs = argo
            .inner
            .syncs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        syncs.push_back(SyncRequestRecord {
            app: name.clone(),
            revision: request.revision.clone().filter(|r| !r.is_empty()),
            prune: request.prune,
            force: request.force(),
            dry_run: request.dry_run,
            at: jiff::Timestamp::now(),
        });
        if syncs.len() > SYNCS_KEPT {
            syncs.pop_front();
        }
    }
    if request.dry_run {
        return Ok(Json(app));
    }
    let mut current = app;
    for _ in 0..WRITE_ATTEMPTS {
        let running = current
            .pointer("/status/operationState/phase")
            .and_then(Value::as_str)
            == Some("Running")
            && current.get("operation").is_some_and(|op| !op.is_null());
        if running {
            return Err(ArgoError::new(
                Code::FailedPrecondition,
                "another operation is already in progress",
            ));
        }
        let updated = with_operation(current.clone(), &request);
        match argo.inner.management.replace(updated) {
            Ok(stored) => return Ok(Json(stored)),
            Err(StoreError::Conflict { .. }) => {
                current = argo.application(&namespace, &name)?;
            }
            Err(err) => return Err(err.into()),
        }
    }
    Err(ArgoError::new(
        Code::Internal,
        "the application kept changing; try again",
    ))
}

/// The Application with a sync `operation` requested and its `operationState` Running. A multi-source
/// Application's operation names a revision per source (`revisions`), a single source's one `revision`.
fn with_operation(mut app: Value, request: &SyncRequest) -> Value {
    let target = |source: &Value| {
        source
            .get("targetRevision")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            .unwrap_or("HEAD")
            .to_owned()
    };
    let mut sync = json!({
        "prune": request.prune,
        "syncStrategy": request.strategy.clone().unwrap_or_else(|| json!({"hook": {}})),
    });
    match app.pointer("/spec/sources").and_then(Value::as_array) {
        Some(sources) => {
            sync["revisions"] = json!(sources.iter().map(target).collect::<Vec<_>>());
        }
        None => {
            sync["revision"] = json!(
                request
                    .revision
                    .clone()
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| app
                        .pointer("/spec/source")
                        .map_or_else(|| "HEAD".to_owned(), target))
            );
        }
    }
    if let Some(resources) = request.resources.as_ref().filter(|r| !r.is_empty()) {
        sync["resources"] = json!(resources);
    }
    if let Some(options) = request
        .sync_options
        .as_ref()
        .filter(|o| !o.items.is_empty())
    {
        sync["syncOptions"] = json!(options.items);
    }
    let mut operation = json!({
        "sync": sync,
        "initiatedBy": {"username": ACCOUNT},
        "retry": {},
    });
    if let Some(infos) = request.infos.as_ref().filter(|i| !i.is_empty()) {
        operation["info"] = json!(infos);
    }
    let started = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let state = json!({
        "operation": operation,
        "phase": "Running",
        "message": "waiting for sync to start",
        "startedAt": started,
    });
    if let Some(map) = app.as_object_mut() {
        map.insert("operation".into(), operation);
        let status = map.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("operationState".into(), state);
        }
    }
    app
}

/// How often an idle stream sends an SSE comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

async fn stream(
    State(argo): State<ArgoCd>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<impl IntoResponse, ArgoError> {
    let query = AppQuery::from_pairs(pairs);
    let selected = argo.selection(&query)?;
    let management = argo.inner.management.clone();
    // Watch before listing so no change falls between the two; a duplicate MODIFIED is harmless.
    let changes = management.watch(API_VERSION, KIND)?;
    let initial: Vec<Value> = management
        .list(API_VERSION, KIND)
        .into_iter()
        .filter(|app| selected(app))
        .collect();
    let events = futures::stream::iter(initial.into_iter().map(|app| ("ADDED", app)))
        .chain(changes.filter(move |(_, app)| std::future::ready(selected(app))))
        .map(|(kind, app)| {
            let data = json!({"result": {"type": kind, "application": app}});
            Ok::<_, Infallible>(Event::default().data(data.to_string()))
        });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
