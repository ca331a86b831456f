//! Pipelines: CI's Tekton PipelineRuns and TaskRuns, watched on the cluster CI runs on and kept in memory as
//! the run lists, the run pages and the cards' build links need them.
//!
//! Two watches (one per kind, selected by the component label) feed one [`index::Index`], updated in place
//! on every event: the lists are kept sorted, so a page is a range read, and each change is announced on the
//! fleet's event stream as it happens (`PipelineRunUpdated`, `PipelineRunRemoved`). Each service keeps its
//! newest `pipelines.history_per_service` runs; older ones are dropped from memory and counted.
//!
//! A run's Pipeline spec (`status.pipelineSpec`) is kept once per distinct spec, shared by every run that
//! used it. Failed runs of main enter the activity feed, linking to their run page.

pub mod index;
pub mod tekton;

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use kube::Client;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde::de::DeserializeOwned;
use shared::fleet::{ActivityItem, ActivityKind, FleetEvent, SourceState};
use shared::pipelines::{
    Cursor, PipelineRunDetail, PipelineRunPage, PipelineRunSummary, PipelineSpecView, RunRef,
    RunStatus, SpecTask, TaskStatus, TaskView, WhenOutcome,
};
use tokio::sync::mpsc;

use self::index::{Change, Entry, Filter, HeldTaskRun, Index, TaskRunFacts, is_main, task_states};
use self::tekton::{
    Names, PIPELINE_RUN_LABEL, PipelineRunObject, Run, RunId, TaskRunEntry, TaskRunObject,
};
use crate::config::PipelinesConfig;
use crate::fleet::watch::SourceHandle;
use crate::fleet::watched::{Cluster, checked};
use crate::fleet::{Dirty, FleetModel};

/// Sends one event to every browser.
type Announce = Box<dyn Fn(FleetEvent) + Send + Sync>;
/// Adds one item to the activity feed.
type Record = Box<dyn Fn(ActivityItem) + Send + Sync>;

/// Where changes are told: the fleet model's event stream, its activity feed and its dirty marks.
struct Listener {
    announce: Announce,
    record: Record,
    dirty: mpsc::UnboundedSender<Dirty>,
}

/// Which kinds have completed their first list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Listed {
    runs: bool,
    task_runs: bool,
}

struct Inner {
    names: Names,
    index: RwLock<Index>,
    /// The cluster CI runs on, for finished TaskRuns and step logs; none when the caches are filled directly
    /// (tests), which then keep every TaskRun whole.
    client: Option<Client>,
    listener: OnceLock<Listener>,
    listed: tokio::sync::watch::Sender<Listed>,
}

/// The pipeline caches, shared by every request. Cheap to clone.
#[derive(Clone)]
pub struct Pipelines {
    inner: Arc<Inner>,
}

impl Debug for Pipelines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipelines")
            .field("runs", &self.read().len())
            .finish_non_exhaustive()
    }
}

impl Pipelines {
    /// Empty caches reading runs by `component_label` as `config` says, with nothing watching: the watches
    /// are started by [`Pipelines::start`]; tests fill the caches with [`Pipelines::apply_json`].
    pub fn new(config: PipelinesConfig, component_label: String, client: Option<Client>) -> Self {
        Self {
            inner: Arc::new(Inner {
                index: RwLock::new(Index::new(config.history_per_service, client.is_none())),
                names: Names {
                    component: component_label,
                    config,
                },
                client,
                listener: OnceLock::new(),
                listed: tokio::sync::watch::Sender::new(Listed::default()),
            }),
        }
    }

    /// Starts watching PipelineRuns and TaskRuns on `client`'s cluster once `after` completes, reporting the
    /// watches' state to `source` (that cluster's connection, as the UI shows it).
    ///
    /// `serve` waits for the fleet's first picture: listed at the same time, the runs took CPU from the
    /// lists the Overview waits for (Tower's and the API server's) and put the first picture off by seconds
    /// at ten thousand services.
    pub fn start(
        client: Client,
        config: PipelinesConfig,
        component_label: String,
        source: Option<SourceHandle>,
        after: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Self {
        let pipelines = Self::new(config, component_label, Some(client.clone()));
        let names = &pipelines.inner.names;
        let (runs, task_runs): (Api<PipelineRunObject>, Api<TaskRunObject>) =
            match &names.config.namespace {
                Some(namespace) => (
                    Api::namespaced_with(client.clone(), namespace, &tekton::pipeline_runs()),
                    Api::namespaced_with(client, namespace, &tekton::task_runs()),
                ),
                None => (
                    Api::all_with(client.clone(), &tekton::pipeline_runs()),
                    Api::all_with(client, &tekton::task_runs()),
                ),
            };
        let (runs, task_runs) = (checked(Cluster::Ci, runs), checked(Cluster::Ci, task_runs));
        // "Has the label": only the runs of services, not every run on a shared CI cluster.
        let selector =
            crate::fleet::watch::listed_whole(watcher::Config::default().labels(&names.component));
        // Each watch joins the cluster's state now, as syncing, rather than when it starts listing: a
        // cluster must not read connected, then syncing again, when the deferred runs begin (see `after`).
        let (watch_runs, watch_task_runs) = (
            pipelines.clone().watch(
                runs,
                selector.clone(),
                source
                    .as_ref()
                    .map(|s| (s.clone(), s.add_watch_of("PipelineRun"))),
            ),
            pipelines.clone().watch(
                task_runs,
                selector,
                source
                    .as_ref()
                    .map(|s| (s.clone(), s.add_watch_of("TaskRun"))),
            ),
        );
        tokio::spawn(async move {
            after.await;
            tokio::spawn(watch_runs);
            tokio::spawn(watch_task_runs);
        });
        pipelines
    }

    /// Tells `fleet` of every change from now on, and marks services whose build links may have changed.
    pub fn attach(&self, fleet: FleetModel, dirty: mpsc::UnboundedSender<Dirty>) {
        let recorder = fleet.clone();
        self.listen(
            Box::new(move |event| fleet.announce(event)),
            Box::new(move |item| recorder.record(item)),
            dirty,
        );
    }

    /// As [`Pipelines::attach`], to any event stream and feed.
    fn listen(&self, announce: Announce, record: Record, dirty: mpsc::UnboundedSender<Dirty>) {
        let _ = self.inner.listener.set(Listener {
            announce,
            record,
            dirty,
        });
        // The first list may have ended before anyone listened: the cards' build links need it either way.
        if self.inner.listed.borrow().runs
            && let Some(listener) = self.inner.listener.get()
        {
            let _ = listener.dirty.send(Dirty::All);
        }
    }

    /// Waits for both kinds' first list, at most `limit`; false if they have not completed.
    pub async fn wait_until_ready(&self, limit: Duration) -> bool {
        let mut listed = self.inner.listed.subscribe();
        tokio::time::timeout(limit, listed.wait_for(|l| l.runs && l.task_runs))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Marks both kinds listed: for caches filled directly.
    pub fn mark_listed(&self) {
        self.inner.listed.send_replace(Listed {
            runs: true,
            task_runs: true,
        });
    }

    /// The client of the cluster CI runs on.
    pub fn client(&self) -> Option<&Client> {
        self.inner.client.as_ref()
    }

    /// The newest runs kept per service.
    pub fn history_per_service(&self) -> usize {
        self.inner.names.config.history_per_service
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        // A poisoned lock means an update panicked half-way; what it left is still the best there is.
        self.inner
            .index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.inner
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One page of runs matching `filter`, from `cursor`.
    pub fn page(&self, filter: &Filter, cursor: Option<&Cursor>) -> PipelineRunPage {
        self.read().page(filter, cursor)
    }

    /// Whether any run of `service` is in memory or was dropped from it.
    pub fn knows_service(&self, service: &str) -> bool {
        self.read().knows_service(service)
    }

    /// Every kept run of `service`, newest first.
    pub fn service_runs(&self, service: &str) -> Vec<Arc<PipelineRunSummary>> {
        self.read().service_runs(service)
    }

    /// The run that built `version` (a commit, or its start) of `service`.
    pub fn build_of(&self, service: &str, version: &str) -> Option<RunRef> {
        self.read().build_of(service, version).map(|id| RunRef {
            namespace: id.namespace,
            name: id.name,
        })
    }

    /// Runs in memory, all services together.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no run is in memory.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// One run, whole; `can_read_logs` says whether the viewer may read its steps' logs. The caches hold
    /// only the row's part of a finished TaskRun, so a run with any reads its TaskRuns from the CI cluster.
    pub async fn detail(
        &self,
        namespace: &str,
        name: &str,
        can_read_logs: bool,
    ) -> Result<Option<PipelineRunDetail>, kube::Error> {
        let id = RunId {
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        // Copied out under the lock, built outside it.
        let Some((entry, held)) = self.read().run(&id) else {
            return Ok(None);
        };
        let Some(client) = &self.inner.client else {
            let facts = held
                .iter()
                .map(|(name, (held, _))| TaskRunFacts::held(name, held));
            return Ok(Some(detail_of(&entry, &entry.run, facts, can_read_logs)));
        };
        let any_row = held
            .values()
            .any(|(held, _)| matches!(held, HeldTaskRun::Row(_)));
        let (run, task_runs) = tokio::try_join!(
            async {
                if entry.row_only {
                    self.run_of(client.clone(), &id).await
                } else {
                    Ok(None)
                }
            },
            async {
                if any_row {
                    self.task_runs_of(client.clone(), &id).await.map(Some)
                } else {
                    Ok(None)
                }
            },
        )?;
        // The cluster no longer has it (or it left the service's label): what the caches hold will do.
        let run = run.map_or_else(|| entry.run.clone(), Arc::new);
        let detail = match &task_runs {
            Some(task_runs) => {
                let facts = task_runs.iter().map(TaskRunFacts::of);
                detail_of(&entry, &run, facts, can_read_logs)
            }
            None => {
                let facts = held
                    .iter()
                    .map(|(name, (held, _))| TaskRunFacts::held(name, held));
                detail_of(&entry, &run, facts, can_read_logs)
            }
        };
        Ok(Some(detail))
    }

    /// Run `id` whole, from the CI cluster; `None` if it is gone or no longer a service's. Listed by name
    /// rather than got: the role Tower runs as may list and watch runs, nothing more.
    async fn run_of(&self, client: Client, id: &RunId) -> Result<Option<Run>, kube::Error> {
        let api: Api<PipelineRunObject> = checked(
            Cluster::Ci,
            Api::namespaced_with(client, &id.namespace, &tekton::pipeline_runs()),
        );
        let by_name = ListParams::default().fields(&format!("metadata.name={}", id.name));
        let list = api.list(&by_name).await?;
        Ok(list
            .items
            .iter()
            .filter_map(|object| tekton::run(object, &self.inner.names))
            .find(|run| run.id == *id))
    }

    /// The TaskRuns of run `id`, whole, from the CI cluster.
    async fn task_runs_of(
        &self,
        client: Client,
        id: &RunId,
    ) -> Result<Vec<TaskRunEntry>, kube::Error> {
        let api: Api<TaskRunObject> = checked(
            Cluster::Ci,
            Api::namespaced_with(client, &id.namespace, &tekton::task_runs()),
        );
        let selector = format!("{PIPELINE_RUN_LABEL}={}", id.name);
        let list = api.list(&ListParams::default().labels(&selector)).await?;
        let names = &self.inner.names;
        Ok(list
            .items
            .iter()
            .filter_map(|object| tekton::task_run(object, names))
            .filter(|task_run| task_run.pipeline_run == id.name)
            .collect())
    }
}

/// The page of run `entry`, read whole as `run`, with its TaskRuns' `facts`.
fn detail_of<'a>(
    entry: &'a Entry,
    run: &'a Run,
    facts: impl IntoIterator<Item = TaskRunFacts<'a>>,
    can_read_logs: bool,
) -> PipelineRunDetail {
    let states = task_states(run, entry.spec.as_deref(), facts);
    let tasks: Vec<TaskView> = states
        .iter()
        .map(|state| {
            let task_run = state.task_run.and_then(|t| t.whole);
            let details = task_run.map(|t| t.details.unpack()).unwrap_or_default();
            let condition = task_run.and_then(|t| t.condition.as_ref());
            let when = match (state.skipped, state.child) {
                (Some(skipped), _) => outcomes(&skipped.when, false),
                (None, Some(child)) => outcomes(&child.when, true),
                (None, None) => Vec::new(),
            };
            TaskView {
                name: state.name.to_string(),
                display_name: state.child.and_then(|c| c.display_name.clone()),
                finally: state.finally,
                status: state.status,
                reason: condition.and_then(|c| c.reason.clone()),
                message: condition.and_then(|c| c.message.clone()),
                skip_reason: state.skipped.and_then(|s| s.reason.clone()),
                when,
                task_run: task_run
                    .map(|t| t.id.name.clone())
                    .or_else(|| state.child.map(|c| c.task_run.clone())),
                pod: details.pod,
                started_at: task_run.and_then(|t| t.started_at.clone()),
                finished_at: details.finished_at,
                steps: details.steps,
                results: details.results,
            }
        })
        .collect();
    let (spec, spec_key) = match &entry.spec {
        Some(spec) => (PipelineSpecView::clone(spec), entry.spec_key.clone()),
        // Without the spec the run used, the tasks it names stand in for it, unconnected.
        None => {
            let spec = spec_of_tasks(&tasks);
            let key = format!("{:016x}", index::spec_hash(&spec));
            (spec, key)
        }
    };
    PipelineRunDetail {
        summary: PipelineRunSummary::clone(&entry.summary),
        message: run.condition.as_ref().and_then(|c| c.message.clone()),
        params: run.params.clone(),
        spec,
        spec_key,
        tasks,
        results: run.results.clone(),
        can_read_logs,
    }
}

impl Pipelines {
    /// Applies a PipelineRun or TaskRun (`kind` says which) as a watch would see it change, announcing what
    /// changed: how tests fill the caches without a cluster.
    pub fn apply_json(&self, object: serde_json::Value) -> anyhow::Result<()> {
        match object.get("kind").and_then(serde_json::Value::as_str) {
            Some("PipelineRun") => {
                let run: PipelineRunObject = serde_json::from_value(object)?;
                let changes = PipelineRunObject::apply(&mut self.write(), &run, &self.inner.names);
                self.publish(changes, true);
            }
            Some("TaskRun") => {
                let task_run: TaskRunObject = serde_json::from_value(object)?;
                let changes = TaskRunObject::apply(&mut self.write(), &task_run, &self.inner.names);
                self.publish(changes, true);
            }
            other => anyhow::bail!("not a PipelineRun or TaskRun: {other:?}"),
        }
        Ok(())
    }

    /// Runs one watch until the process ends, reporting to `source` as its watch number.
    async fn watch<K: Watched>(
        self,
        api: Api<K>,
        config: watcher::Config,
        source: Option<(SourceHandle, usize)>,
    ) {
        let report = |state: SourceState| {
            if let Some((source, id)) = &source {
                source.healthy(*id, state);
            }
        };
        let names = &self.inner.names;
        let keep = annotations_kept(&names.config);
        let stream = watcher(api, config)
            .default_backoff()
            // Managed fields, owner references and annotations such as kubectl's last-applied
            // configuration are a large share of a run, and nothing here reads them.
            .modify(move |object: &mut K| {
                let meta = object.meta_mut();
                meta.managed_fields = None;
                meta.owner_references = None;
                meta.finalizers = None;
                if let Some(annotations) = meta.annotations.as_mut() {
                    annotations.retain(|key, _| keep.contains(key));
                }
            });
        let mut stream = std::pin::pin!(stream);
        let mut listed = false;
        let mut not_served_logged = false;
        // A retry of a kind that is not served is not a relist of anything shown (see fleet::watch).
        let mut not_served = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Init) => {
                    K::begin(&mut self.write());
                    // The first list is still syncing; a later one relists what is shown.
                    if listed && !not_served {
                        report(SourceState::Relisting);
                    }
                }
                Ok(watcher::Event::InitApply(object)) => {
                    let changes = K::apply(&mut self.write(), &object, names);
                    // The first list is the starting picture, not news; a relist tells what moved.
                    if listed {
                        self.publish(changes, false);
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    let changes = K::end(&mut self.write());
                    if listed {
                        self.publish(changes, false);
                    }
                    self.listed::<K>();
                    listed = true;
                    not_served = false;
                    report(SourceState::Connected);
                }
                Ok(watcher::Event::Apply(object)) => {
                    let changes = K::apply(&mut self.write(), &object, names);
                    self.publish(changes, listed);
                    report(SourceState::Connected);
                }
                Ok(watcher::Event::Delete(object)) => {
                    let changes = K::delete(&mut self.write(), &object, names);
                    self.publish(changes, listed);
                    report(SourceState::Connected);
                }
                // Tekton is not installed there: no runs to show, and no reason to call the cluster down.
                // The watcher keeps retrying, so runs show up once Tekton is installed.
                Err(error) if crate::fleet::watch::is_kind_not_served(&error) => {
                    if !not_served_logged {
                        tracing::info!(kind = K::KIND, %error, "Tekton is not served on the CI cluster; showing no runs");
                        not_served_logged = true;
                    }
                    not_served = true;
                    self.listed::<K>();
                    report(SourceState::Connected);
                }
                Err(error) => {
                    tracing::warn!(kind = K::KIND, %error, "Tekton watch failed; retrying with backoff");
                    if let Some((source, id)) = &source {
                        source.failed(*id, &error.to_string());
                    }
                }
            }
        }
    }

    /// Marks `K` listed; the cards' build links are recomputed once the runs are.
    fn listed<K: Watched>(&self) {
        let mut first = false;
        self.inner.listed.send_modify(|listed| {
            let flag = if K::IS_RUN {
                &mut listed.runs
            } else {
                &mut listed.task_runs
            };
            first = !*flag;
            *flag = true;
        });
        if first
            && K::IS_RUN
            && let Some(listener) = self.inner.listener.get()
        {
            let _ = listener.dirty.send(Dirty::All);
        }
    }

    /// Tells browsers what changed; a run of main that just failed enters the activity feed when `live` (a
    /// change seen as it happened, not one found by a relist).
    fn publish(&self, changes: Vec<Change>, live: bool) {
        let Some(listener) = self.inner.listener.get() else {
            return;
        };
        let mut dirty = BTreeSet::new();
        for change in changes {
            match change {
                Change::Updated { summary, before } => {
                    if live
                        && summary.status == RunStatus::Failed
                        && before != Some(RunStatus::Failed)
                        && is_main(summary.branch.as_deref())
                    {
                        (listener.record)(failed_activity(&summary));
                    }
                    let green = |status: Option<RunStatus>| status == Some(RunStatus::Succeeded);
                    // A card links the run that built its version, preferring a green one.
                    if summary.commit.is_some()
                        && (before.is_none() || green(before) != green(Some(summary.status)))
                    {
                        dirty.insert(summary.service.clone());
                    }
                    (listener.announce)(FleetEvent::PipelineRunUpdated {
                        run: PipelineRunSummary::clone(&summary),
                    });
                }
                Change::Removed { summary } => {
                    if summary.commit.is_some() {
                        dirty.insert(summary.service.clone());
                    }
                    (listener.announce)(FleetEvent::PipelineRunRemoved {
                        namespace: summary.namespace.clone(),
                        name: summary.name.clone(),
                    });
                }
            }
        }
        for service in dirty {
            let _ = listener.dirty.send(Dirty::Service(service));
        }
    }
}

/// The activity item of a run of main that failed, linking to its run page.
fn failed_activity(run: &PipelineRunSummary) -> ActivityItem {
    let commit: String = run
        .commit
        .as_deref()
        .unwrap_or_default()
        .chars()
        .take(7)
        .collect();
    ActivityItem {
        at: run
            .finished_at
            .clone()
            .unwrap_or_else(|| jiff::Timestamp::now().to_string()),
        service: run.service.clone(),
        environment: None,
        kind: ActivityKind::PipelineFailed,
        message: format!("build of {commit} failed ({})", run.name),
        link: Some(run.page_path()),
    }
}

/// The annotations a run's facts are read from; the watch keeps no others.
fn annotations_kept(config: &PipelinesConfig) -> BTreeSet<String> {
    [
        &config.commit_annotation,
        &config.message_annotation,
        &config.author_annotation,
        &config.branch_annotation,
        &config.started_by_annotation,
    ]
    .into_iter()
    .cloned()
    .collect()
}

/// `when` expressions as a run evaluated them.
fn outcomes(expressions: &[shared::pipelines::WhenExpression], ran: bool) -> Vec<WhenOutcome> {
    expressions
        .iter()
        .map(|expression| WhenOutcome {
            passed: tekton::held(expression, ran),
            expression: expression.clone(),
        })
        .collect()
}

/// A spec naming only `tasks`, for a run whose own spec is not known.
fn spec_of_tasks(tasks: &[TaskView]) -> PipelineSpecView {
    let task = |t: &TaskView| SpecTask {
        name: t.name.clone(),
        display_name: t.display_name.clone(),
        task_ref: None,
        run_after: Vec::new(),
        params: Vec::new(),
        when: t.when.iter().map(|w| w.expression.clone()).collect(),
    };
    PipelineSpecView {
        display_name: None,
        tasks: tasks.iter().filter(|t| !t.finally).map(task).collect(),
        finally: tasks.iter().filter(|t| t.finally).map(task).collect(),
    }
}

/// One watched kind: how its objects enter and leave the index.
trait Watched:
    kube::Resource<DynamicType = kube::api::ApiResource>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    /// For logs.
    const KIND: &'static str;
    /// Whether this is the PipelineRun watch.
    const IS_RUN: bool;
    /// A list starts.
    fn begin(index: &mut Index);
    /// An object was listed or changed.
    fn apply(index: &mut Index, object: &Self, names: &Names) -> Vec<Change>;
    /// An object was deleted.
    fn delete(index: &mut Index, object: &Self, names: &Names) -> Vec<Change>;
    /// A list ended.
    fn end(index: &mut Index) -> Vec<Change>;
}

impl Watched for PipelineRunObject {
    const KIND: &'static str = "PipelineRun";
    const IS_RUN: bool = true;

    fn begin(index: &mut Index) {
        index.begin_runs();
    }

    fn apply(index: &mut Index, object: &Self, names: &Names) -> Vec<Change> {
        match tekton::run(object, names) {
            Some(run) => index.apply_run(run),
            None => Vec::new(),
        }
    }

    fn delete(index: &mut Index, object: &Self, names: &Names) -> Vec<Change> {
        match tekton::run(object, names) {
            Some(run) => index.remove_run(&run.id, &run.service),
            None => Vec::new(),
        }
    }

    fn end(index: &mut Index) -> Vec<Change> {
        index.end_runs()
    }
}

impl Watched for TaskRunObject {
    const KIND: &'static str = "TaskRun";
    const IS_RUN: bool = false;

    fn begin(index: &mut Index) {
        index.begin_task_runs();
    }

    fn apply(index: &mut Index, object: &Self, names: &Names) -> Vec<Change> {
        match tekton::task_run(object, names) {
            Some(task_run) => index.apply_task_run(task_run),
            None => Vec::new(),
        }
    }

    fn delete(index: &mut Index, object: &Self, names: &Names) -> Vec<Change> {
        match tekton::task_run(object, names) {
            Some(task_run) => index.remove_task_run(&task_run.id, &task_run.pipeline_run),
            None => Vec::new(),
        }
    }

    fn end(index: &mut Index) -> Vec<Change> {
        index.end_task_runs()
    }
}

/// Whether a task's step has started: it has a pod and the step's container is no longer waiting.
pub fn step_started(task: &TaskView, step: &str) -> bool {
    task.pod.is_some()
        && task
            .steps
            .iter()
            .find(|s| s.name == step)
            .is_some_and(|s| s.status != TaskStatus::Pending || s.started_at.is_some())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use shared::pipelines::PAGE_SIZE;

    use super::*;

    const LABEL: &str = "platform.tower.dev/component";

    fn pipelines(history_per_service: usize) -> Pipelines {
        Pipelines::new(
            PipelinesConfig {
                history_per_service,
                ..PipelinesConfig::default()
            },
            LABEL.into(),
            None,
        )
    }

    /// `minute` minutes after 10:00 on a December day, as Kubernetes writes times.
    fn at(minute: u32) -> String {
        format!("2026-12-01T{:02}:{:02}:00Z", 10 + minute / 60, minute % 60)
    }

    /// A commit id per `n`, their starts all different.
    fn commit(n: u32) -> String {
        format!(
            "{:08x}{}",
            (n + 1).wrapping_mul(2_654_435_761),
            "a".repeat(32)
        )
    }

    fn spec() -> Value {
        json!({
            "displayName": "Build a service",
            "tasks": [
                {"name": "clone", "taskRef": {"name": "git-clone"}},
                {"name": "test", "displayName": "Run the unit tests", "taskRef": {"name": "run-tests"}, "runAfter": ["clone"]},
                {"name": "scan", "taskRef": {"name": "scan-image"}, "runAfter": ["test"],
                 "when": [{"input": "$(params.scan-image)", "operator": "in", "values": ["true"]}]},
            ],
            "finally": [{"name": "notify", "taskRef": {"name": "github-set-status"}}],
        })
    }

    /// A finished run of main by the push listener: `status` is the `Succeeded` condition's.
    fn run(service: &str, n: u32, status: &str) -> Value {
        json!({
            "apiVersion": "tekton.dev/v1",
            "kind": "PipelineRun",
            "metadata": {
                "name": format!("{service}-build-{n:03}"),
                "namespace": "tekton-ci",
                "creationTimestamp": at(n),
                "managedFields": [{"manager": "tekton"}],
                "labels": {
                    LABEL: service,
                    "tekton.dev/pipeline": "service-build",
                    "triggers.tekton.dev/eventlistener": "github-push",
                },
                "annotations": {
                    "platform.tower.dev/commit": commit(n),
                    "platform.tower.dev/commit-message": format!("Change {n}\n\nWith a body."),
                    "platform.tower.dev/author": "ada",
                    "platform.tower.dev/branch": "main",
                },
            },
            "spec": {"pipelineRef": {"name": "service-build"}, "params": [{"name": "scan-image", "value": "true"}]},
            "status": {
                "startTime": at(n),
                "completionTime": at(n + 1),
                "conditions": [{"type": "Succeeded", "status": status, "reason": match status {
                    "True" => "Succeeded", "False" => "Failed", _ => "Running" }}],
                "pipelineSpec": spec(),
            },
        })
    }

    fn task_run(run: &str, task: &str, status: &str, steps: Value) -> Value {
        json!({
            "apiVersion": "tekton.dev/v1",
            "kind": "TaskRun",
            "metadata": {
                "name": format!("{run}-{task}"),
                "namespace": "tekton-ci",
                "creationTimestamp": at(1),
                "labels": {
                    LABEL: "payments",
                    "tekton.dev/pipelineRun": run,
                    "tekton.dev/pipelineTask": task,
                    "tekton.dev/memberOf": if task == "notify" { "finally" } else { "tasks" },
                },
            },
            "status": {
                "podName": format!("{run}-{task}-pod"),
                "startTime": at(1),
                "conditions": [{"type": "Succeeded", "status": status, "reason": if status == "True" { "Succeeded" } else { "Failed" },
                    "message": if status == "True" { "All Steps have completed executing" } else { "\"step-unit\" exited with code 1" }}],
                "steps": steps,
                "taskSpec": {"steps": [{"name": "install"}, {"name": "unit", "displayName": "Unit tests"}]},
            },
        })
    }

    /// A run's page from caches filled directly: they hold every TaskRun whole, so nothing is fetched.
    fn detail(pipelines: &Pipelines, name: &str, can_read_logs: bool) -> Option<PipelineRunDetail> {
        futures::executor::block_on(pipelines.detail("tekton-ci", name, can_read_logs))
            .expect("no cluster to fail")
    }

    fn apply(pipelines: &Pipelines, object: Value) {
        pipelines.apply_json(object).expect("a Tekton object");
    }

    fn names(page: &PipelineRunPage) -> Vec<String> {
        page.runs.iter().map(|r| r.name.clone()).collect()
    }

    fn filter(service: Option<&str>) -> Filter {
        Filter {
            service: service.map(str::to_string),
            ..Filter::default()
        }
    }

    fn cursor(token: &str) -> Cursor {
        Cursor::decode(token).expect("a cursor the list gave out")
    }

    #[test]
    fn runs_list_newest_first_a_page_at_a_time_both_ways() {
        let pipelines = pipelines(200);
        for n in 0..45 {
            apply(&pipelines, run("payments", n, "True"));
        }
        let first = pipelines.page(&filter(Some("payments")), None);
        assert_eq!(first.runs.len(), PAGE_SIZE);
        assert_eq!(first.runs[0].name, "payments-build-044");
        assert_eq!((first.total, first.previous.as_deref()), (45, None));
        let second = pipelines.page(
            &filter(None),
            Some(&cursor(first.next.as_deref().unwrap_or_default())),
        );
        assert_eq!(second.runs[0].name, "payments-build-024");
        let third = pipelines.page(
            &filter(None),
            Some(&cursor(second.next.as_deref().unwrap_or_default())),
        );
        assert_eq!(
            names(&third),
            [
                "payments-build-004",
                "payments-build-003",
                "payments-build-002",
                "payments-build-001",
                "payments-build-000"
            ]
        );
        assert_eq!(third.next, None);
        let back = pipelines.page(
            &filter(None),
            Some(&cursor(third.previous.as_deref().unwrap_or_default())),
        );
        assert_eq!(names(&back), names(&second));
        let top = pipelines.page(
            &filter(None),
            Some(&cursor(back.previous.as_deref().unwrap_or_default())),
        );
        assert_eq!(names(&top), names(&first));
        assert_eq!(top.previous, None);
        assert_eq!(first.triggers, ["github-push"]);
        // The row reads what the run carries.
        let row = &first.runs[0];
        assert_eq!(row.message.as_deref(), Some("Change 44"));
        assert_eq!(
            (row.branch.as_deref(), row.author.as_deref()),
            (Some("main"), Some("ada"))
        );
        assert_eq!(row.pipeline.as_deref(), Some("service-build"));
        assert_eq!(row.tasks.total, 4);
    }

    #[test]
    fn runs_arriving_between_two_pages_cause_no_duplicate_and_no_gap() {
        let pipelines = pipelines(200);
        for n in 100..150 {
            apply(&pipelines, run("payments", n, "True"));
        }
        let everything = |p: &Pipelines| {
            let mut all = Vec::new();
            let mut page = p.page(&filter(None), None);
            loop {
                all.extend(names(&page));
                match &page.next {
                    Some(next) => page = p.page(&filter(None), Some(&cursor(next))),
                    None => return all,
                }
            }
        };
        let before = everything(&pipelines);
        let first = pipelines.page(&filter(None), None);
        // Five newer runs, and one as old as the page's last row (a tie broken by name).
        for n in 150..155 {
            apply(&pipelines, run("payments", n, "Unknown"));
        }
        let second = pipelines.page(
            &filter(None),
            Some(&cursor(first.next.as_deref().unwrap_or_default())),
        );
        let mut read = names(&first);
        read.extend(names(&second));
        assert_eq!(read, before[..2 * PAGE_SIZE]);
        // The previous page of page 2 is still page 1: the new runs are before it.
        let back = pipelines.page(
            &filter(None),
            Some(&cursor(second.previous.as_deref().unwrap_or_default())),
        );
        assert_eq!(names(&back), names(&first));
        assert!(back.previous.is_some(), "the new runs are a page before");
    }

    #[test]
    fn filters_narrow_by_status_branch_commit_and_trigger() {
        let pipelines = pipelines(200);
        for n in 0..10 {
            apply(
                &pipelines,
                run("payments", n, if n % 3 == 0 { "False" } else { "True" }),
            );
        }
        let mut pr = run("checkout", 20, "True");
        pr["metadata"]["annotations"]["platform.tower.dev/branch"] = json!("feature/x");
        pr["metadata"]["labels"]["triggers.tekton.dev/eventlistener"] =
            json!("github-pull-request");
        apply(&pipelines, pr);
        let page = |f: Filter| pipelines.page(&f, None);
        let failed = page(Filter {
            status: Some(RunStatus::Failed),
            ..Filter::default()
        });
        assert_eq!(
            names(&failed),
            [
                "payments-build-009",
                "payments-build-006",
                "payments-build-003",
                "payments-build-000"
            ]
        );
        assert_eq!(failed.total, 4);
        let branch = page(Filter {
            revision: Some("feature/x".into()),
            ..Filter::default()
        });
        assert_eq!(names(&branch), ["checkout-build-020"]);
        let main = page(Filter {
            revision: Some("main".into()),
            ..Filter::default()
        });
        assert_eq!(main.total, 10);
        let by_commit = page(Filter {
            revision: Some(commit(7)[..5].to_string()),
            ..Filter::default()
        });
        assert_eq!(names(&by_commit), ["payments-build-007"]);
        // Three digits could be anything: not a commit prefix.
        let short = page(Filter {
            revision: Some(commit(7)[..3].to_string()),
            ..Filter::default()
        });
        assert_eq!(short.total, 0);
        let trigger = page(Filter {
            trigger: Some("github-pull-request".into()),
            ..Filter::default()
        });
        assert_eq!(names(&trigger), ["checkout-build-020"]);
        assert_eq!(
            page(Filter::default()).triggers,
            ["github-pull-request", "github-push"]
        );
        assert_eq!(
            page(filter(Some("checkout"))).triggers,
            ["github-pull-request"]
        );
        // Paging through a filtered list keeps to the filter.
        let first = pipelines.page(
            &Filter {
                status: Some(RunStatus::Succeeded),
                service: Some("payments".into()),
                ..Filter::default()
            },
            None,
        );
        assert_eq!((first.total, first.next.as_deref()), (6, None));
    }

    #[test]
    fn a_bounded_history_drops_the_oldest_runs_and_counts_them_once() {
        let pipelines = pipelines(5);
        let (_, mut events, _) = listening(&pipelines);
        for n in 0..8 {
            apply(&pipelines, run("payments", n, "True"));
        }
        apply(&pipelines, run("ledger", 0, "True"));
        let page = pipelines.page(&filter(Some("payments")), None);
        assert_eq!(
            names(&page),
            [
                "payments-build-007",
                "payments-build-006",
                "payments-build-005",
                "payments-build-004",
                "payments-build-003"
            ]
        );
        assert_eq!(
            (page.total, page.dropped, page.history_per_service),
            (5, 3, 5)
        );
        assert_eq!(pipelines.page(&filter(None), None).dropped, 3);
        // A dropped run seen again (a relist, an update) stays dropped and is not counted twice; so do its
        // TaskRuns.
        apply(&pipelines, run("payments", 1, "False"));
        apply(
            &pipelines,
            task_run("payments-build-001", "test", "False", json!([])),
        );
        assert_eq!(pipelines.page(&filter(Some("payments")), None).dropped, 3);
        assert!(detail(&pipelines, "payments-build-001", false).is_none());
        // An older run arriving late is dropped as it comes, and nobody hears of it.
        while events.try_recv().is_ok() {}
        let mut late = run("payments", 2, "True");
        late["metadata"]["name"] = json!("payments-build-late");
        apply(&pipelines, late);
        assert_eq!(pipelines.page(&filter(Some("payments")), None).dropped, 4);
        assert!(
            events.try_recv().is_err(),
            "a run dropped on arrival is not announced"
        );
    }

    #[test]
    fn runs_of_one_spec_share_it_and_its_key() {
        let pipelines = pipelines(200);
        apply(&pipelines, run("payments", 1, "True"));
        apply(&pipelines, run("ledger", 2, "True"));
        let mut other = run("ledger", 3, "True");
        other["status"]["pipelineSpec"]["displayName"] = json!("Build it differently");
        apply(&pipelines, other);
        let entry = |name: &str| {
            pipelines
                .read()
                .run(&RunId {
                    namespace: "tekton-ci".into(),
                    name: name.into(),
                })
                .expect("kept")
                .0
        };
        let (a, b, c) = (
            entry("payments-build-001"),
            entry("ledger-build-002"),
            entry("ledger-build-003"),
        );
        let (a, b, c) = (
            a.spec.expect("a spec"),
            b.spec.expect("a spec"),
            c.spec.expect("a spec"),
        );
        assert!(Arc::ptr_eq(&a, &b), "equal specs are stored once");
        assert!(!Arc::ptr_eq(&a, &c));
        let key = |name: &str| {
            detail(&pipelines, name, false)
                .map(|d| d.spec_key)
                .unwrap_or_default()
        };
        assert_eq!(key("payments-build-001"), key("ledger-build-002"));
        assert_ne!(key("payments-build-001"), key("ledger-build-003"));
        assert_eq!(key("payments-build-001").len(), 16);
    }

    #[test]
    fn a_run_detail_says_how_each_task_went() {
        let pipelines = pipelines(200);
        let name = "payments-build-005";
        let mut red = run("payments", 5, "False");
        red["status"]["childReferences"] = json!([
            {"name": format!("{name}-clone"), "pipelineTaskName": "clone", "kind": "TaskRun"},
            {"name": format!("{name}-test"), "pipelineTaskName": "test", "displayName": "Run the unit tests", "kind": "TaskRun"},
            {"name": format!("{name}-notify"), "pipelineTaskName": "notify", "kind": "TaskRun"},
        ]);
        red["status"]["skippedTasks"] = json!([
            {"name": "scan", "reason": "When Expressions evaluated to false",
             "whenExpressions": [{"input": "false", "operator": "in", "values": ["true"]}]},
        ]);
        // A TaskRun seen before its run still counts once the run arrives.
        apply(&pipelines, task_run(name, "clone", "True", json!([])));
        apply(&pipelines, red);
        apply(
            &pipelines,
            task_run(
                name,
                "test",
                "False",
                json!([
                    {"name": "install", "container": "step-install", "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": at(2), "finishedAt": at(3)}},
                    {"name": "unit", "container": "step-unit", "terminated": {"exitCode": 1, "reason": "Error", "startedAt": at(3), "finishedAt": at(4)}},
                ]),
            ),
        );
        apply(&pipelines, task_run(name, "notify", "True", json!([])));
        let detail = detail(&pipelines, name, true).expect("the run");
        let tasks: Vec<(&str, TaskStatus, bool)> = detail
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), t.status, t.finally))
            .collect();
        assert_eq!(
            tasks,
            [
                ("clone", TaskStatus::Succeeded, false),
                ("test", TaskStatus::Failed, false),
                ("scan", TaskStatus::Skipped, false),
                ("notify", TaskStatus::Succeeded, true),
            ]
        );
        let test = &detail.tasks[1];
        assert_eq!(
            test.message.as_deref(),
            Some("\"step-unit\" exited with code 1")
        );
        assert_eq!(test.display_name.as_deref(), Some("Run the unit tests"));
        assert_eq!(test.pod.as_deref(), Some("payments-build-005-test-pod"));
        let unit = &test.steps[1];
        assert_eq!(
            (unit.name.as_str(), unit.status, unit.exit_code),
            ("unit", TaskStatus::Failed, Some(1))
        );
        assert_eq!(unit.display_name.as_deref(), Some("Unit tests"));
        let scan = &detail.tasks[2];
        assert_eq!(
            scan.skip_reason.as_deref(),
            Some("When Expressions evaluated to false")
        );
        assert_eq!(scan.when.len(), 1);
        assert!(!scan.when[0].passed);
        assert_eq!(detail.spec.tasks[2].when[0].input, "$(params.scan-image)");
        assert_eq!(
            detail.summary.tasks,
            shared::pipelines::TaskCounts {
                total: 4,
                succeeded: 2,
                failed: 1,
                skipped: 1,
                running: 0
            }
        );
        assert!(detail.can_read_logs);
        assert!(step_started(test, "unit"));
    }

    #[test]
    fn a_card_links_the_green_build_of_main_of_its_version() {
        let pipelines = pipelines(200);
        let mut rerun = run("payments", 3, "False");
        rerun["metadata"]["name"] = json!("payments-build-003-rerun");
        rerun["metadata"]["creationTimestamp"] = json!(at(30));
        apply(&pipelines, run("payments", 3, "True"));
        apply(&pipelines, rerun);
        let short = &commit(3)[..7];
        assert_eq!(
            pipelines.build_of("payments", short).map(|r| r.name),
            Some("payments-build-003".to_string())
        );
        assert_eq!(pipelines.build_of("ledger", short), None);
        assert_eq!(pipelines.build_of("payments", &commit(4)[..7]), None);
    }

    #[test]
    fn a_relist_forgets_runs_the_cluster_no_longer_has() {
        let pipelines = pipelines(2);
        for n in 0..4 {
            apply(&pipelines, run("payments", n, "True"));
        }
        assert_eq!(pipelines.page(&filter(None), None).dropped, 2);
        {
            let mut index = pipelines.write();
            index.begin_runs();
        }
        // The relist finds only runs 1 and 3: run 2 was deleted, run 0 (dropped) too.
        for n in [1, 3] {
            apply(&pipelines, run("payments", n, "True"));
        }
        let changes = pipelines.write().end_runs();
        assert_eq!(changes.len(), 1, "{changes:?}");
        let page = pipelines.page(&filter(None), None);
        assert_eq!(names(&page), ["payments-build-003"]);
        assert_eq!(page.dropped, 1);
    }

    #[test]
    fn a_failed_run_of_main_enters_the_feed_with_a_link_to_its_page_and_a_pull_request_does_not() {
        let pipelines = pipelines(200);
        let (listened, mut events, mut dirty) = listening(&pipelines);
        apply(&pipelines, run("payments", 7, "Unknown"));
        let mut pr = run("payments", 8, "Unknown");
        pr["metadata"]["annotations"]["platform.tower.dev/branch"] = json!("feature/x");
        apply(&pipelines, pr.clone());
        apply(&pipelines, run("payments", 7, "False"));
        pr["status"]["conditions"][0]["status"] = json!("False");
        apply(&pipelines, pr);
        // Told again, it is no news.
        apply(&pipelines, run("payments", 7, "False"));
        let feed = listened.lock().map(|f| f.clone()).unwrap_or_default();
        assert_eq!(feed.len(), 1, "{feed:?}");
        assert_eq!(feed[0].kind, ActivityKind::PipelineFailed);
        assert_eq!(
            feed[0].link.as_deref(),
            Some("/pipelines/tekton-ci/payments-build-007")
        );
        assert_eq!(
            feed[0].message,
            format!("build of {} failed (payments-build-007)", &commit(7)[..7])
        );
        let mut updated = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let FleetEvent::PipelineRunUpdated { run } = event {
                updated.push((run.name, run.status));
            }
        }
        assert_eq!(
            updated,
            [
                ("payments-build-007".to_string(), RunStatus::Running),
                ("payments-build-008".to_string(), RunStatus::Running),
                ("payments-build-007".to_string(), RunStatus::Failed),
                ("payments-build-008".to_string(), RunStatus::Failed),
            ]
        );
        assert_eq!(
            dirty.try_recv().ok(),
            Some(Dirty::Service("payments".into()))
        );
    }

    /// Listens to `pipelines`: the activity feed, the event stream and the dirty marks.
    fn listening(
        pipelines: &Pipelines,
    ) -> (
        Arc<std::sync::Mutex<Vec<ActivityItem>>>,
        tokio::sync::broadcast::Receiver<FleetEvent>,
        mpsc::UnboundedReceiver<Dirty>,
    ) {
        let feed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (events, receiver) = tokio::sync::broadcast::channel(1024);
        let (dirty, marks) = mpsc::unbounded_channel();
        let recorded = feed.clone();
        pipelines.listen(
            Box::new(move |event| {
                let _ = events.send(event);
            }),
            Box::new(move |item| {
                if let Ok(mut feed) = recorded.lock() {
                    feed.push(item);
                }
            }),
            dirty,
        );
        (feed, receiver, marks)
    }
}
