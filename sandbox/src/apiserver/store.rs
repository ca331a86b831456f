//! One cluster's objects, its resourceVersion counter and its watch history.

use std::collections::{BTreeMap, VecDeque};
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::error::{Cause, Result, StoreError};
use super::logs::Logs;
use super::{Registry, ResourceType};

/// Watch events kept for resuming watches at most; older ones are forgotten and resuming before them is
/// `410`, as against a real apiserver's watch cache (a watcher that falls further behind relists).
const HISTORY_LIMIT: usize = 1_000;
/// Bytes of serialized objects (new and previous states) the watch history keeps at most.
///
/// This, not [`HISTORY_LIMIT`], is what usually bounds the history. Seeding alone fills it, so a
/// long-running sandbox's memory is flat from its first minute rather than creeping up while the simulator
/// fills a larger budget. It still holds a hundred-odd changes, minutes of simulated time at ten times
/// real speed: plenty for watchers resuming after their timeout (a real apiserver's watch cache keeps
/// about a hundred events per type, then answers `410`).
const HISTORY_BYTES: usize = 256 * 1024;
/// Live events a slow watcher may fall behind by before it is told to relist (`410`); no more than the
/// history holds, since a change the history has forgotten can no longer be sent anyway.
const LIVE_CAPACITY: usize = HISTORY_LIMIT;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    /// The watch event `type` on the wire.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// An object as the store keeps it: its JSON text, parsed again only for callers that need a tree, with its
/// labels beside it so label selectors need not parse it.
///
/// A JSON tree takes about seven times its text (every small map is a B-tree node of several hundred
/// bytes): with `--scale 10000`, stored trees were most of the sandbox's 8 GB. Lists and watches send the
/// text as it is.
#[derive(Debug)]
pub(crate) struct Stored {
    /// The whole object as JSON.
    json: Box<[u8]>,
    /// `metadata.labels` with string values, in the object's order.
    labels: Box<[(Box<str>, Box<str>)]>,
}

impl Stored {
    /// Serializes an object (a tree always serializes) and takes its labels.
    pub(crate) fn new(object: &Value) -> Arc<Self> {
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|labels| {
                labels
                    .iter()
                    .filter_map(|(key, value)| Some((key.as_str().into(), value.as_str()?.into())))
                    .collect()
            })
            .unwrap_or_default();
        Arc::new(Self {
            json: serde_json::to_vec(object).unwrap_or_default().into(),
            labels,
        })
    }

    /// The object as JSON text.
    pub(crate) fn json(&self) -> &[u8] {
        &self.json
    }

    /// The object as a JSON tree.
    pub(crate) fn tree(&self) -> Value {
        // The store wrote this text from a tree, so it parses.
        serde_json::from_slice(&self.json).unwrap_or_default()
    }

    /// The value of one label, if the object has it.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, value)| &**value)
    }
}

/// One committed change, as kept in history and sent to live watchers.
///
/// States are the stored ones, shared with the store: the history costs no copy of an object still stored.
#[derive(Debug)]
pub(crate) struct Change {
    /// The cluster resourceVersion this change produced.
    pub(crate) resource_version: u64,
    /// Index of the object's type in the registry.
    pub(crate) type_index: usize,
    /// What happened.
    pub(crate) event: EventType,
    /// The object's namespace ("" when cluster-scoped) and name.
    pub(crate) key: Key,
    /// The new state; for deletions the last state, stamped with the deletion's resourceVersion.
    pub(crate) object: Arc<Stored>,
    /// The state before a modification or deletion, so selector-filtered watchers can see objects leave,
    /// and lists at an older version can show what was there.
    pub(crate) previous: Option<Arc<Stored>>,
}

impl Change {
    /// The new state as a JSON tree.
    pub(crate) fn object(&self) -> Value {
        self.object.tree()
    }

    /// Bytes of serialized states this change holds on to.
    fn size(&self) -> usize {
        self.object.json.len() + self.previous.as_ref().map_or(0, |p| p.json.len())
    }
}

/// Changes committed after a subscription, in order.
#[derive(Debug)]
pub(crate) struct LiveFeed(broadcast::Receiver<Weak<Change>>);

impl LiveFeed {
    /// The next change. `Lagged` when the watcher fell so far behind that the change is gone from the
    /// channel or from the history (a real apiserver answers that with `410`); `Closed` when the store is.
    pub(crate) async fn next(&mut self) -> Result<Arc<Change>, broadcast::error::RecvError> {
        let change = self.0.recv().await?;
        change
            .upgrade()
            .ok_or(broadcast::error::RecvError::Lagged(1))
    }
}

/// What a cluster holds on to, for tests that check a long-running sandbox stays bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retained {
    /// Objects stored, of every type.
    pub objects: usize,
    /// Changes kept in the watch history.
    pub history_changes: usize,
    /// Bytes of serialized states the watch history keeps.
    pub history_bytes: usize,
    /// Containers with a log (current or previous).
    pub log_containers: usize,
    /// Bytes of log text (with per-line framing) kept across those containers.
    pub log_bytes: usize,
}

/// Which parts of a stored object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// Everything, status included (store API, HTTP create).
    Whole,
    /// Everything but `status`, like a real apiserver's main resource endpoint.
    KeepStatus,
    /// Only `status`, like the `/status` subresource.
    StatusOnly,
}

/// Where a watch starts.
pub(crate) struct Subscription {
    /// Current objects of the type, when the watch starts from "now" (synthetic `ADDED`s).
    pub(crate) initial: Vec<(Key, Arc<Stored>)>,
    /// Retained changes of the type after the requested resourceVersion.
    pub(crate) replay: Vec<Arc<Change>>,
    /// The cluster resourceVersion at subscription; live changes all come after it.
    pub(crate) resource_version: u64,
    /// Changes committed after subscription, of every type.
    pub(crate) live: LiveFeed,
}

/// One page of a list, as [`ClusterStore::list_page`] reads it.
pub(crate) struct Page {
    /// The page's objects.
    pub(crate) items: Vec<Arc<Stored>>,
    /// The key of the page's last object, where the next page starts.
    pub(crate) last: Option<Key>,
    /// Whether any object, selected or not, follows the page.
    pub(crate) more: bool,
    /// How many objects follow the page, when the caller asked to count them.
    pub(crate) remaining: Option<usize>,
    /// The version the page is consistent with.
    pub(crate) resource_version: u64,
}

/// Objects are keyed by namespace ("" when cluster-scoped) and name, which gives lists their order.
pub(crate) type Key = (String, String);

struct State {
    resource_version: u64,
    /// One map per registered type, indexed like the registry.
    objects: Vec<BTreeMap<Key, Arc<Stored>>>,
    history: VecDeque<Arc<Change>>,
    /// [`Change::size`] summed over `history`.
    history_bytes: usize,
    /// The oldest resourceVersion a watch may resume from without missing retained events.
    oldest_resumable: u64,
}

/// One fake cluster's objects; cheap to clone, shared with the HTTP server.
#[derive(Clone)]
pub struct ClusterStore {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    registry: Arc<Registry>,
    state: Mutex<State>,
    /// Weak, so the channel's ring does not keep changes alive after the history forgets them: with strong
    /// references it held the last few thousand serialized objects of every cluster, and a long-running
    /// sandbox grew until the ring was full.
    live: broadcast::Sender<Weak<Change>>,
    logs: Logs,
    /// Seeds uids so they differ between runs, as real ones do, without an RNG dependency.
    ids: RandomState,
    /// Whether the cluster answers; tests and demos take it down to show an outage.
    reachable: tokio::sync::watch::Sender<bool>,
    /// HTTP requests received, so tests can count what a client costs the cluster.
    requests: std::sync::atomic::AtomicU64,
}

impl ClusterStore {
    pub(crate) fn new(name: &str, registry: Arc<Registry>) -> Self {
        let state = State {
            resource_version: 0,
            objects: vec![BTreeMap::new(); registry.types().len()],
            history: VecDeque::new(),
            history_bytes: 0,
            oldest_resumable: 0,
        };
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        Self {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                registry,
                state: Mutex::new(state),
                live,
                logs: Logs::default(),
                ids: RandomState::new(),
                reachable: tokio::sync::watch::channel(true).0,
                requests: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Takes the cluster down (every request answers 503 and open watches end) or brings it back.
    pub fn set_reachable(&self, reachable: bool) {
        self.inner.reachable.send_replace(reachable);
    }

    /// Whether the cluster answers.
    pub fn is_reachable(&self) -> bool {
        *self.inner.reachable.borrow()
    }

    /// Notified when reachability changes.
    pub(crate) fn reachability(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.reachable.subscribe()
    }

    /// HTTP requests this cluster has received (a watch counts once, however long it lasts).
    pub fn request_count(&self) -> u64 {
        self.inner
            .requests
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn count_request(&self) {
        self.inner
            .requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Creates an object; its type comes from `apiVersion` and `kind`.
    pub fn create(&self, obj: Value) -> Result<Value> {
        let ty = self.type_of(&obj)?;
        self.create_at(ty, None, obj, Write::Whole)
    }

    /// Replaces an existing object; a given `metadata.resourceVersion` must be the current one (else 409).
    pub fn replace(&self, obj: Value) -> Result<Value> {
        let ty = self.type_of(&obj)?;
        let (namespace, name) = self.object_key(ty, &obj, None)?;
        self.update_at(ty, &namespace, &name, Write::Whole, true, |_| Ok(obj))
    }

    /// Creates or replaces an object whatever its resourceVersion: how simulators write.
    pub fn apply(&self, obj: Value) -> Result<Value> {
        let ty = self.type_of(&obj)?;
        let (namespace, name) = self.object_key(ty, &obj, None)?;
        self.upsert_at(ty, &namespace, &name, Write::Whole, |_| Ok(obj))
    }

    /// Deletes an object and returns its last state.
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value> {
        let ty = self.type_by_kind(api_version, kind)?;
        self.delete_at(ty, namespace, name)
    }

    /// One object, if it exists.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let ty = self.inner.registry.by_kind(api_version, kind)?;
        self.get_at(ty, namespace, name)
    }

    /// The types this cluster serves, in the order of [`Self::objects`].
    pub fn resource_types(&self) -> Vec<super::ResourceType> {
        self.inner.registry.types().to_vec()
    }

    /// Every object of every type, type by type in [`Self::resource_types`]' order (namespaces first), each
    /// type ordered by namespace and name: the world a copy of this cluster needs, so the real-API-server
    /// tests can load what the fake serves into a real one.
    pub fn objects(&self) -> Vec<Value> {
        (0..self.inner.registry.types().len())
            .flat_map(|ty| self.list_at(ty, None).0)
            .collect()
    }

    /// Every object of a type across namespaces, ordered by namespace and name.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        match self.inner.registry.by_kind(api_version, kind) {
            Some(ty) => self.list_at(ty, None).0,
            None => Vec::new(),
        }
    }

    /// Every object of a type in one namespace, ordered by name (cheaper than filtering [`Self::list`]).
    pub fn list_namespaced(&self, api_version: &str, kind: &str, namespace: &str) -> Vec<Value> {
        match self.inner.registry.by_kind(api_version, kind) {
            Some(ty) => self.list_at(ty, Some(namespace)).0,
            None => Vec::new(),
        }
    }

    /// What `pick` takes from each object of a type (in `namespace`, or across namespaces), in list order,
    /// without copying the objects: the simulator looks at every pod several times a simulated minute and
    /// needs a name or two of each, and cloning whole objects for that was most of its allocation.
    ///
    /// `pick` runs under the store's lock, so it must not call back into the store.
    pub fn pick<T>(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        mut pick: impl FnMut(&Value) -> Option<T>,
    ) -> Vec<T> {
        let Some(ty) = self.inner.registry.by_kind(api_version, kind) else {
            return Vec::new();
        };
        let state = self.lock();
        in_namespace(&state.objects[ty], namespace, None)
            .filter_map(|(_, object)| pick(&object.tree()))
            .collect()
    }

    /// Creates a typed object and returns it as stored (uid, resourceVersion… filled in).
    pub fn create_typed<K>(&self, obj: &K) -> Result<K>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        from_value(self.create(to_value(obj)?)?)
    }

    /// Creates or replaces a typed object (see [`ClusterStore::apply`]).
    pub fn apply_typed<K>(&self, obj: &K) -> Result<K>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        from_value(self.apply(to_value(obj)?)?)
    }

    /// One typed object, or `NotFound`.
    pub fn get_typed<K>(&self, namespace: Option<&str>, name: &str) -> Result<K>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let (api_version, kind) = (K::api_version(&()), K::kind(&()));
        let ty = self.type_by_kind(&api_version, &kind)?;
        match self.get_at(ty, namespace, name) {
            Some(obj) => from_value(obj),
            None => Err(self.not_found(ty, name)),
        }
    }

    /// Every typed object of `K`, ordered by namespace and name.
    pub fn list_typed<K>(&self) -> Result<Vec<K>>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.list(&K::api_version(&()), &K::kind(&()))
            .into_iter()
            .map(from_value)
            .collect()
    }

    /// The cluster's latest resourceVersion.
    pub fn current_resource_version(&self) -> u64 {
        self.lock().resource_version
    }

    /// What the cluster holds on to now: objects, watch history and container logs.
    pub fn retained(&self) -> Retained {
        let (objects, history_changes, history_bytes) = {
            let state = self.lock();
            (
                state.objects.iter().map(BTreeMap::len).sum(),
                state.history.len(),
                state.history_bytes,
            )
        };
        let (log_containers, log_bytes) = self.inner.logs.retained();
        Retained {
            objects,
            history_changes,
            history_bytes,
            log_containers,
            log_bytes,
        }
    }

    /// Forget watch history at and below the current version, so a watch resuming from an older
    /// version gets 410 Gone (tests use it).
    pub fn compact(&self) {
        let mut state = self.lock();
        state.history.clear();
        state.history_bytes = 0;
        state.oldest_resumable = state.resource_version;
    }

    /// Appends one line to a container's log (timestamped now); `follow` readers see it at once.
    pub fn append_log(&self, namespace: &str, pod: &str, container: &str, line: &str) {
        self.inner.logs.append(namespace, pod, container, line);
    }

    /// Hands every pod's logs to `sink` when the pod is deleted, before the cluster forgets them (the
    /// sandbox's log store keeps them). Only the first sink set counts.
    pub fn on_pod_logs_removed(&self, sink: super::logs::PodLogSink) {
        self.inner.logs.set_sink(sink);
    }

    /// Computes the log of any container without a ring with `generator` (CI step logs); only the first
    /// generator set counts.
    pub fn set_log_generator(&self, generator: super::logs::LogGenerator) {
        self.inner.logs.set_generator(generator);
    }

    /// Reads generated logs by `clock` (the simulator's) instead of real time.
    pub fn set_clock(&self, clock: super::logs::ClusterClock) {
        self.inner.logs.set_clock(clock);
    }

    /// Moves a container's current log to its `previous` log, as a restart does, and ends `follow` streams.
    pub fn restart_container(&self, namespace: &str, pod: &str, container: &str) {
        self.inner.logs.restart(namespace, pod, container);
    }

    /// Watches one type in-process: yields `("ADDED" | "MODIFIED" | "DELETED", object)` for every change
    /// committed after this call, in commit order.
    ///
    /// For simulators and sibling fakes (Argo CD's stream) that need what a watch gives without HTTP.
    /// The stream ends if the watcher falls more than the live buffer behind, as a real watch would
    /// end with `410`: callers list again and re-watch.
    pub fn watch(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<impl futures::Stream<Item = (&'static str, Value)> + Send + use<>> {
        let ty = self.type_by_kind(api_version, kind)?;
        // Changes committed between reading the version and subscribing come back as replay.
        let subscription = self.subscribe(ty, Some(self.current_resource_version()))?;
        let after = subscription.resource_version;
        let mut live = subscription.live;
        Ok(async_stream::stream! {
            for change in subscription.replay {
                yield (change.event.as_str(), change.object());
            }
            while let Ok(change) = live.next().await {
                if change.type_index == ty && change.resource_version > after {
                    yield (change.event.as_str(), change.object());
                }
            }
        })
    }

    /// Parses a Kubernetes label selector (`a=b,c in (x,y),!d`) into a predicate on objects, so code
    /// outside the HTTP layer selects exactly as `?labelSelector=` does.
    pub fn label_matcher(
        selector: &str,
    ) -> Result<impl Fn(&Value) -> bool + Clone + Send + Sync + use<>> {
        let selector = super::selector::LabelSelector::parse(selector)?;
        Ok(move |object: &Value| selector.matches(object.pointer("/metadata/labels")))
    }

    // ---- used by the HTTP layer ----

    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    pub(crate) fn logs(&self) -> &Logs {
        &self.inner.logs
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not take every later test request down with it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn type_of(&self, obj: &Value) -> Result<usize> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        if api_version.is_empty() || kind.is_empty() {
            return Err(StoreError::BadRequest(
                "Object 'apiVersion' and 'Kind' are required".into(),
            ));
        }
        self.type_by_kind(api_version, kind)
    }

    fn type_by_kind(&self, api_version: &str, kind: &str) -> Result<usize> {
        self.inner
            .registry
            .by_kind(api_version, kind)
            .ok_or_else(|| StoreError::UnknownType {
                what: format!("no kind \"{kind}\" is registered for version \"{api_version}\""),
            })
    }

    fn not_found(&self, ty: usize, name: &str) -> StoreError {
        StoreError::NotFound {
            resource: self.inner.registry.get(ty).resource_name(),
            name: name.to_owned(),
        }
    }

    /// The namespace key an object lands in: "" for cluster-scoped types, else the object's, the
    /// URL's, or `default`.
    fn namespace_for(
        &self,
        ty: usize,
        obj: &Value,
        path_namespace: Option<&str>,
    ) -> Result<String> {
        if !self.inner.registry.get(ty).namespaced {
            return Ok(String::new());
        }
        let own = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        match (own, path_namespace) {
            (Some(own), Some(path)) if own != path => Err(StoreError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            )),
            (Some(ns), _) | (None, Some(ns)) => Ok(ns.to_owned()),
            (None, None) => Ok("default".to_owned()),
        }
    }

    fn object_key(&self, ty: usize, obj: &Value, path_namespace: Option<&str>) -> Result<Key> {
        let namespace = self.namespace_for(ty, obj, path_namespace)?;
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name.is_empty() {
            return Err(self.invalid(ty, "", name_required()));
        }
        Ok((namespace, name.to_owned()))
    }

    /// `422 Invalid` for one field of an object of type `ty`.
    fn invalid(&self, ty: usize, name: &str, cause: Cause) -> StoreError {
        StoreError::Invalid {
            kind: qualified_kind(self.inner.registry.get(ty)),
            name: name.to_owned(),
            causes: vec![cause],
        }
    }

    pub(crate) fn get_at(&self, ty: usize, namespace: Option<&str>, name: &str) -> Option<Value> {
        let namespace = self.stored_namespace(ty, namespace);
        self.lock().objects[ty]
            .get(&(namespace, name.to_owned()))
            .map(|object| object.tree())
    }

    /// Cluster-scoped objects are stored under "" whatever namespace a caller passes.
    fn stored_namespace(&self, ty: usize, namespace: Option<&str>) -> String {
        if self.inner.registry.get(ty).namespaced {
            namespace.unwrap_or("default").to_owned()
        } else {
            String::new()
        }
    }

    /// Objects of a type, in one namespace or all, with the resourceVersion they are current at.
    pub(crate) fn list_at(&self, ty: usize, namespace: Option<&str>) -> (Vec<Value>, u64) {
        let (objects, resource_version) = self.stored_at(ty, namespace);
        let items = objects.iter().map(|(_, object)| object.tree()).collect();
        (items, resource_version)
    }

    /// The stored objects of a type, in one namespace or all, with the resourceVersion they are current at;
    /// they are parsed after the lock is released.
    pub(crate) fn stored_at(
        &self,
        ty: usize,
        namespace: Option<&str>,
    ) -> (Vec<(Key, Arc<Stored>)>, u64) {
        let state = self.lock();
        let objects = in_namespace(&state.objects[ty], namespace, None)
            .map(|(key, object)| (key.clone(), object.clone()))
            .collect();
        (objects, state.resource_version)
    }

    /// One page of a list: the objects of type `ty` (in `namespace`, or in all) that `selected` accepts, after
    /// the key `after`, at most `limit` of them; then whether a full page has any object after it, selected or
    /// not (a real apiserver offers to continue then, even if no more would be selected); with `count_rest`,
    /// how many objects follow it; and the resource version the page is consistent with.
    ///
    /// A page costs its own objects, not the list's: it starts at `after` in the map, and stops at the first
    /// object past a full page unless asked to count the rest (which a paging client needs once, on its first
    /// page). Only the page's objects are shared out, never parsed: at scale a kind has a hundred thousand
    /// objects (TaskRuns).
    ///
    /// `at` lists the objects as they were at that version (a continue token's, or `resourceVersionMatch=Exact`),
    /// as a real apiserver does from its snapshots: the current objects, with those changed since put back as
    /// they were then from the watch history. `410 Expired` when the history no longer reaches back that far.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list_page(
        &self,
        ty: usize,
        namespace: Option<&str>,
        after: Option<Key>,
        limit: usize,
        at: Option<u64>,
        count_rest: bool,
        selected: impl Fn(&Key, &Stored) -> bool,
    ) -> Result<Page> {
        let state = self.lock();
        let version = at.map_or(state.resource_version, |at| at.min(state.resource_version));
        let then = states_at(&state, ty, version)?;
        let now = in_namespace(&state.objects[ty], namespace, after.as_ref())
            .map(|(key, object)| (key, Some(object)));
        let before = in_namespace(&then, namespace, after.as_ref())
            .map(|(key, object)| (key, object.as_ref()));
        let mut in_range = merge_preferring(now, before)
            .filter_map(|(key, object)| Some((key, object?)))
            .peekable();
        let (mut items, mut last) = (Vec::new(), None);
        while items.len() < limit {
            match in_range.next() {
                Some((key, object)) if selected(key, object) => {
                    items.push(object.clone());
                    last = Some(key);
                }
                Some(_) => {}
                None => break,
            }
        }
        let more = in_range.peek().is_some();
        let remaining = count_rest.then(|| in_range.count());
        Ok(Page {
            items,
            last: last.cloned(),
            more,
            remaining,
            resource_version: version,
        })
    }

    /// Fails with `410 Expired` when changes after `resource_version` are no longer retained.
    pub(crate) fn check_resumable(&self, resource_version: u64) -> Result<()> {
        let oldest = self.lock().oldest_resumable;
        if resource_version < oldest {
            return Err(StoreError::Expired(format!(
                "too old resource version: {resource_version} ({oldest})"
            )));
        }
        Ok(())
    }

    /// Starts a watch on a type: from "now" (`None`) or after a resourceVersion.
    pub(crate) fn subscribe(&self, ty: usize, after: Option<u64>) -> Result<Subscription> {
        // Subscribing under the lock means no change falls between the snapshot and the live feed.
        let state = self.lock();
        let live = LiveFeed(self.inner.live.subscribe());
        let mut subscription = Subscription {
            initial: Vec::new(),
            replay: Vec::new(),
            resource_version: state.resource_version,
            live,
        };
        match after {
            None => {
                subscription.initial = state.objects[ty]
                    .iter()
                    .map(|(key, object)| (key.clone(), object.clone()))
                    .collect();
            }
            Some(rv) if rv < state.oldest_resumable => {
                return Err(StoreError::Expired(format!(
                    "too old resource version: {rv} ({})",
                    state.oldest_resumable
                )));
            }
            Some(rv) => {
                subscription.replay = state
                    .history
                    .iter()
                    .filter(|c| c.resource_version > rv && c.type_index == ty)
                    .cloned()
                    .collect();
            }
        }
        Ok(subscription)
    }

    /// Creates an object of type `ty`; `path_namespace` is the namespace in the request URL.
    pub(crate) fn create_at(
        &self,
        ty: usize,
        path_namespace: Option<&str>,
        mut obj: Value,
        write: Write,
    ) -> Result<Value> {
        let namespace = self.namespace_for(ty, &obj, path_namespace)?;
        let mut state = self.lock();
        let rv = state.resource_version + 1;
        let name = match obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            Some(name) => name.to_owned(),
            None => match obj
                .pointer("/metadata/generateName")
                .and_then(Value::as_str)
            {
                Some(prefix) if !prefix.is_empty() => format!("{prefix}{}", self.name_suffix(rv)),
                _ => {
                    return Err(self.invalid(ty, "", name_required()));
                }
            },
        };
        if let Some(reason) = invalid_name(&name) {
            let cause = Cause {
                reason: "FieldValueInvalid",
                field: "metadata.name".into(),
                message: format!("Invalid value: \"{name}\": {reason}"),
            };
            return Err(self.invalid(ty, &name, cause));
        }
        let key = (namespace.clone(), name.clone());
        if state.objects[ty].contains_key(&key) {
            return Err(StoreError::AlreadyExists {
                resource: self.inner.registry.get(ty).resource_name(),
                name,
            });
        }
        if write != Write::Whole {
            object_map(&mut obj).remove("status");
        }
        let rt = self.inner.registry.get(ty);
        set_type(&mut obj, rt);
        let meta = metadata(&mut obj);
        meta.insert("name".into(), json!(name));
        if rt.namespaced {
            meta.insert("namespace".into(), json!(namespace));
        } else {
            meta.remove("namespace");
        }
        drop_empty_maps(meta);
        meta.insert("uid".into(), json!(self.new_uid(rv)));
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
        meta.insert("generation".into(), json!(1));
        // Fixtures may backdate objects so ages look real; otherwise the object is born now.
        if !meta.get("creationTimestamp").is_some_and(Value::is_string) {
            meta.insert("creationTimestamp".into(), json!(now()));
        }
        let stored = Stored::new(&obj);
        state.objects[ty].insert(key.clone(), stored.clone());
        self.commit(&mut state, ty, EventType::Added, key, stored, None);
        Ok(obj)
    }

    /// Updates an existing object with what `change` makes of its current state.
    ///
    /// With `check_version`, a resourceVersion in the new object must equal the stored one.
    pub(crate) fn update_at(
        &self,
        ty: usize,
        namespace: &str,
        name: &str,
        write: Write,
        check_version: bool,
        change: impl FnOnce(&Value) -> Result<Value>,
    ) -> Result<Value> {
        let mut state = self.lock();
        let key = (self.stored_namespace(ty, Some(namespace)), name.to_owned());
        let Some(stored) = state.objects[ty].get(&key).cloned() else {
            return Err(self.not_found(ty, name));
        };
        let current = stored.tree();
        let new = change(&current)?;
        self.commit_update(
            &mut state,
            ty,
            key,
            (stored, current),
            new,
            write,
            check_version,
        )
    }

    /// Updates the object if it exists, else creates it from `change(None)`; never checks versions.
    pub(crate) fn upsert_at(
        &self,
        ty: usize,
        namespace: &str,
        name: &str,
        write: Write,
        change: impl FnOnce(Option<&Value>) -> Result<Value>,
    ) -> Result<Value> {
        let mut state = self.lock();
        let key = (self.stored_namespace(ty, Some(namespace)), name.to_owned());
        match state.objects[ty].get(&key).cloned() {
            Some(stored) => {
                let current = stored.tree();
                let mut new = change(Some(&current))?;
                metadata(&mut new).remove("resourceVersion");
                self.commit_update(&mut state, ty, key, (stored, current), new, write, false)
            }
            None => {
                let new = change(None)?;
                drop(state);
                self.create_at(ty, Some(namespace), new, Write::Whole)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn commit_update(
        &self,
        state: &mut State,
        ty: usize,
        key: Key,
        (stored, current): (Arc<Stored>, Value),
        mut new: Value,
        write: Write,
        check_version: bool,
    ) -> Result<Value> {
        let rt = self.inner.registry.get(ty);
        let (namespace, name) = &key;
        let new_name = new
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(name);
        if new_name != name {
            return Err(StoreError::BadRequest(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
        if rt.namespaced
            && new
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .is_some_and(|ns| !ns.is_empty() && ns != namespace)
        {
            return Err(StoreError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
        let stored_version = current
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null);
        let given_version = new
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null);
        if check_version
            && !given_version.is_null()
            && given_version != json!("")
            && given_version != stored_version
        {
            return Err(StoreError::Conflict {
                resource: rt.resource_name(),
                name: name.clone(),
            });
        }
        match write {
            Write::Whole => {}
            Write::KeepStatus => match current.get("status") {
                Some(status) => {
                    object_map(&mut new).insert("status".into(), status.clone());
                }
                None => {
                    object_map(&mut new).remove("status");
                }
            },
            Write::StatusOnly => {
                let status = new.get("status").cloned();
                new = current.clone();
                match status {
                    Some(status) => object_map(&mut new).insert("status".into(), status),
                    None => object_map(&mut new).remove("status"),
                };
            }
        }
        set_type(&mut new, rt);
        let old_meta = current
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let meta = metadata(&mut new);
        meta.insert("name".into(), json!(name));
        if rt.namespaced {
            meta.insert("namespace".into(), json!(namespace));
        } else {
            meta.remove("namespace");
        }
        for kept in ["uid", "creationTimestamp", "generation"] {
            match old_meta.get(kept) {
                Some(v) => meta.insert(kept.into(), v.clone()),
                None => meta.remove(kept),
            };
        }
        drop_empty_maps(meta);
        meta.insert("resourceVersion".into(), stored_version);
        // A write that changes nothing is not a change: no new version, no event (as in Kubernetes).
        if new == current {
            return Ok(current);
        }
        let generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let generation = if !same_spec(&new, &current) {
            generation + 1
        } else {
            generation
        };
        let rv = state.resource_version + 1;
        let meta = metadata(&mut new);
        meta.insert("generation".into(), json!(generation));
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
        let updated = Stored::new(&new);
        state.objects[ty].insert(key.clone(), updated.clone());
        self.commit(state, ty, EventType::Modified, key, updated, Some(stored));
        Ok(new)
    }

    /// Deletes an object; deleting a namespace deletes what it holds, as the namespace controller would.
    pub(crate) fn delete_at(
        &self,
        ty: usize,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value> {
        let mut state = self.lock();
        let key = (self.stored_namespace(ty, namespace), name.to_owned());
        let Some(before) = state.objects[ty].remove(&key) else {
            return Err(self.not_found(ty, name));
        };
        if self.inner.registry.get(ty).kind == "Namespace"
            && self.inner.registry.get(ty).group.is_empty()
        {
            for inner_ty in 0..state.objects.len() {
                let doomed: Vec<Key> = state.objects[inner_ty]
                    .keys()
                    .filter(|(ns, _)| ns == name)
                    .cloned()
                    .collect();
                for inner_key in doomed {
                    if let Some(before) = state.objects[inner_ty].remove(&inner_key) {
                        let rv = state.resource_version + 1;
                        let mut inner = before.tree();
                        metadata(&mut inner)
                            .insert("resourceVersion".into(), json!(rv.to_string()));
                        self.commit(
                            &mut state,
                            inner_ty,
                            EventType::Deleted,
                            inner_key,
                            Stored::new(&inner),
                            Some(before),
                        );
                    }
                }
            }
        }
        let rv = state.resource_version + 1;
        let mut obj = before.tree();
        metadata(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let deleted = Stored::new(&obj);
        self.commit(
            &mut state,
            ty,
            EventType::Deleted,
            key.clone(),
            deleted,
            Some(before),
        );
        drop(state);
        // The kubelet removes a deleted pod's logs; keeping them would grow without bound as pods come
        // and go.
        let rt = self.inner.registry.get(ty);
        if rt.kind == "Pod" && rt.group.is_empty() {
            self.inner.logs.remove_pod(&key.0, name);
        }
        Ok(obj)
    }

    /// Records a change at the next resourceVersion (the object already carries it) and tells watchers.
    fn commit(
        &self,
        state: &mut State,
        ty: usize,
        event: EventType,
        key: Key,
        object: Arc<Stored>,
        previous: Option<Arc<Stored>>,
    ) {
        state.resource_version += 1;
        let change = Arc::new(Change {
            resource_version: state.resource_version,
            type_index: ty,
            event,
            key,
            object,
            previous,
        });
        state.history_bytes += change.size();
        state.history.push_back(change.clone());
        while state.history.len() > HISTORY_LIMIT
            || (state.history_bytes > HISTORY_BYTES && state.history.len() > 1)
        {
            let Some(dropped) = state.history.pop_front() else {
                break;
            };
            state.history_bytes -= dropped.size();
            state.oldest_resumable = state.oldest_resumable.max(dropped.resource_version);
        }
        // An error only means nobody is watching right now; history still has the change.
        let _ = self.inner.live.send(Arc::downgrade(&change));
    }

    fn new_uid(&self, rv: u64) -> String {
        let mut hasher = self.inner.ids.build_hasher();
        hasher.write_u64(rv);
        let a = hasher.finish();
        hasher.write_u64(a);
        let b = hasher.finish();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            ((b >> 48) & 0x3fff) | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }

    /// Five characters like the apiserver's `generateName` suffixes (no vowels, no look-alikes).
    fn name_suffix(&self, rv: u64) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut hasher = self.inner.ids.build_hasher();
        hasher.write_u64(rv);
        let mut bits = hasher.finish();
        (0..5)
            .map(|_| {
                let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize];
                bits /= ALPHABET.len() as u64;
                c as char
            })
            .collect()
    }
}

/// The current time as Kubernetes writes it: RFC 3339 with whole seconds.
pub(crate) fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The objects of type `ty` that changed after `version`, as they were at it (`None`: not created yet), from
/// the watch history; empty at the current version.
fn states_at(state: &State, ty: usize, version: u64) -> Result<BTreeMap<Key, Option<Arc<Stored>>>> {
    let mut then = BTreeMap::new();
    if version >= state.resource_version {
        return Ok(then);
    }
    if version < state.oldest_resumable {
        return Err(StoreError::Expired(format!(
            "too old resource version: {version} ({})",
            state.oldest_resumable
        )));
    }
    for change in state
        .history
        .iter()
        .filter(|c| c.type_index == ty && c.resource_version > version)
    {
        // The first change after `version` knows the state before it.
        then.entry(change.key.clone())
            .or_insert_with(|| match change.event {
                EventType::Added => None,
                EventType::Modified | EventType::Deleted => change.previous.clone(),
            });
    }
    Ok(then)
}

/// The entries of `objects` in `namespace` (or all), after the key `after` if given, in key order: a range of
/// the map, so a namespace's or a later page's objects cost no walk over the others.
fn in_namespace<'a, V>(
    objects: &'a BTreeMap<Key, V>,
    namespace: Option<&'a str>,
    after: Option<&Key>,
) -> impl Iterator<Item = (&'a Key, &'a V)> + 'a {
    use std::ops::Bound;
    let start = match (namespace, after) {
        (Some(wanted), Some(after)) if after.0.as_str() < wanted => {
            Bound::Included((wanted.to_owned(), String::new()))
        }
        (_, Some(after)) => Bound::Excluded(after.clone()),
        (Some(wanted), None) => Bound::Included((wanted.to_owned(), String::new())),
        (None, None) => Bound::Unbounded,
    };
    objects
        .range((start, Bound::Unbounded))
        .take_while(move |((ns, _), _)| namespace.is_none_or(|wanted| ns == wanted))
}

/// Two key-ordered sequences as one, `preferred`'s entry winning where both have a key.
fn merge_preferring<'a, T>(
    base: impl Iterator<Item = (&'a Key, T)>,
    preferred: impl Iterator<Item = (&'a Key, T)>,
) -> impl Iterator<Item = (&'a Key, T)> {
    use std::cmp::Ordering;
    let (mut base, mut preferred) = (base.peekable(), preferred.peekable());
    std::iter::from_fn(move || match (base.peek(), preferred.peek()) {
        (Some((b, _)), Some((p, _))) => match b.cmp(p) {
            Ordering::Less => base.next(),
            Ordering::Greater => preferred.next(),
            Ordering::Equal => {
                base.next();
                preferred.next()
            }
        },
        (Some(_), None) => base.next(),
        (None, _) => preferred.next(),
    })
}

/// `Kind` in the core group, `Kind.group` in others: how a real apiserver names a type in `Invalid` errors.
pub(crate) fn qualified_kind(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    }
}

/// The cause of creating an object with neither a name nor a `generateName`.
fn name_required() -> Cause {
    Cause {
        reason: "FieldValueRequired",
        field: "metadata.name".into(),
        message: "Required value: name or generateName is required".into(),
    }
}

/// Why a name is not a DNS-1123 subdomain, if it is not.
fn invalid_name(name: &str) -> Option<&'static str> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    let ok_ends = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if name.len() > 253 {
        Some("must be no more than 253 characters")
    } else if !ok_chars || !ok_ends {
        Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )
    } else {
        None
    }
}

/// Whether two objects agree on everything that is neither metadata nor status: what `generation`
/// counts changes of. Compared in place, as every update asks and objects can be large.
fn same_spec(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let spec = |key: &String| key != "metadata" && key != "status";
    a.keys().filter(|k| spec(k)).count() == b.keys().filter(|k| spec(k)).count()
        && a.iter()
            .filter(|(k, _)| spec(k))
            .all(|(k, v)| b.get(k) == Some(v))
}

fn set_type(obj: &mut Value, rt: &ResourceType) {
    let map = object_map(obj);
    map.insert("apiVersion".into(), json!(rt.api_version()));
    map.insert("kind".into(), json!(rt.kind));
}

/// The object's top-level map, turning a non-object into an empty one (which then fails validation).
fn object_map(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    match obj {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// Leaves out empty `labels` and `annotations`, as a real apiserver's `omitempty` does: a client reads
/// no labels, not an empty map.
fn drop_empty_maps(meta: &mut Map<String, Value>) {
    for field in ["labels", "annotations"] {
        if meta
            .get(field)
            .is_some_and(|v| v.is_null() || v.as_object().is_some_and(Map::is_empty))
        {
            meta.remove(field);
        }
    }
}

/// `metadata`, created empty if missing.
pub(crate) fn metadata(obj: &mut Value) -> &mut Map<String, Value> {
    let map = object_map(obj);
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    object_map(meta)
}

fn to_value<K: kube::Resource<DynamicType = ()> + Serialize>(obj: &K) -> Result<Value> {
    let mut value = serde_json::to_value(obj)
        .map_err(|e| StoreError::BadRequest(format!("cannot encode {}: {e}", K::kind(&()))))?;
    let map = object_map(&mut value);
    map.entry("apiVersion")
        .or_insert_with(|| json!(K::api_version(&())));
    map.entry("kind").or_insert_with(|| json!(K::kind(&())));
    Ok(value)
}

fn from_value<K: kube::Resource<DynamicType = ()> + DeserializeOwned>(value: Value) -> Result<K> {
    serde_json::from_value(value)
        .map_err(|e| StoreError::BadRequest(format!("cannot decode {}: {e}", K::kind(&()))))
}
