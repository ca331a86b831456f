//! The runs in memory, kept sorted as they change: a page of a list is a range of a `BTreeMap`, so it costs
//! O(log n + page) however many runs there are, and nothing is sorted per request.
//!
//! Every watch event updates the index in place and says what changed ([`Change`]), so the caller can tell
//! browsers. The bounded history lives here too: each service keeps its newest runs, and a run pushed out is
//! forgotten (with its TaskRuns) but counted, by a hash of its name, until the cluster deletes it.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash as _, Hasher as _};
use std::ops::Bound;
use std::sync::{Arc, Weak};

use shared::pipelines::{
    Cursor, Direction, PAGE_SIZE, PipelineRunPage, PipelineRunSummary, PipelineSpecView, RunKey,
    RunStatus, TaskCounts, TaskStatus,
};

use super::tekton::{Child, Run, RunId, Skipped, TaskRunEntry, run_status, task_status};

/// A run as the index holds it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The run.
    pub run: Arc<Run>,
    /// The Pipeline spec it ran, shared by every run of an equal spec.
    pub spec: Option<Arc<PipelineSpecView>>,
    /// [`Entry::spec`]'s key.
    pub spec_key: String,
    /// Its row.
    pub summary: Arc<PipelineRunSummary>,
    /// Whether [`Entry::run`] keeps only what its row counts (see [`Run::keep_row_only`]).
    pub row_only: bool,
    /// The list it was last seen in (see [`Index::begin_runs`]).
    generation: u64,
}

/// One service's runs.
#[derive(Debug, Default)]
struct ServiceRuns {
    /// The kept runs, newest first.
    runs: BTreeMap<RunKey, Arc<PipelineRunSummary>>,
    /// Runs pushed out of the bounded history that the cluster still has: a hash of each name, with the
    /// list it was last seen in.
    dropped: HashMap<u64, u64>,
    /// How many kept runs each trigger started.
    triggers: BTreeMap<String, usize>,
}

/// What an update changed, for the event stream, the activity feed and the cards.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A run appeared or its row changed.
    Updated {
        /// Its row now.
        summary: Arc<PipelineRunSummary>,
        /// Its status before, if it was known.
        before: Option<RunStatus>,
    },
    /// A run went away (deleted, or pushed out of the bounded history).
    Removed {
        /// Its row when it went.
        summary: Arc<PipelineRunSummary>,
    },
}

/// A TaskRun as the index holds it. A fleet of 10,000 services has some 140,000, nearly all finished, and
/// only their run's page reads more of a finished one than its row counts.
#[derive(Debug, Clone)]
pub enum HeldTaskRun {
    /// Whole: while it runs (its page follows it), or where no cluster can give it back.
    Whole(Arc<TaskRunEntry>),
    /// What its run's row counts, once finished; its page reads the rest from the CI cluster.
    Row(TaskRow),
}

/// A finished TaskRun's part in its run's row.
#[derive(Debug, Clone)]
pub struct TaskRow {
    pipeline_task: Option<Box<str>>,
    finally: bool,
    status: TaskStatus,
    started_at: Option<Box<str>>,
}

/// What a run's tasks are matched to their TaskRuns and counted by, whether held whole or as a row.
#[derive(Debug, Clone, Copy)]
pub struct TaskRunFacts<'a> {
    /// The TaskRun's name.
    pub name: &'a str,
    /// Its pipeline task.
    pub pipeline_task: Option<&'a str>,
    /// Whether it is one of `finally`.
    pub finally: bool,
    /// Where it stands.
    pub status: TaskStatus,
    /// Start time.
    pub started_at: Option<&'a str>,
    /// The whole TaskRun, when it is at hand.
    pub whole: Option<&'a TaskRunEntry>,
}

impl<'a> TaskRunFacts<'a> {
    /// The facts of a whole TaskRun.
    pub fn of(task_run: &'a TaskRunEntry) -> Self {
        Self {
            name: &task_run.id.name,
            pipeline_task: task_run.pipeline_task.as_deref(),
            finally: task_run.finally,
            status: task_status(task_run.condition.as_ref()),
            started_at: task_run.started_at.as_deref(),
            whole: Some(task_run),
        }
    }

    /// The facts of the TaskRun `name` as held.
    pub fn held(name: &'a str, held: &'a HeldTaskRun) -> Self {
        match held {
            HeldTaskRun::Whole(task_run) => Self::of(task_run),
            HeldTaskRun::Row(row) => Self {
                name,
                pipeline_task: row.pipeline_task.as_deref(),
                finally: row.finally,
                status: row.status,
                started_at: row.started_at.as_deref(),
                whole: None,
            },
        }
    }
}

impl HeldTaskRun {
    /// How the index holds `task_run`: a finished one as its row, unless `keep_whole`.
    fn of(task_run: TaskRunEntry, keep_whole: bool) -> Self {
        let status = task_status(task_run.condition.as_ref());
        let finished = matches!(
            status,
            TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Cancelled
        );
        if keep_whole || !finished {
            return HeldTaskRun::Whole(Arc::new(task_run));
        }
        HeldTaskRun::Row(TaskRow {
            pipeline_task: task_run.pipeline_task.map(String::into_boxed_str),
            finally: task_run.finally,
            status,
            started_at: task_run.started_at.map(String::into_boxed_str),
        })
    }
}

/// A run's TaskRuns by name, each with the list it was last seen in.
pub type HeldTaskRuns = BTreeMap<Box<str>, (HeldTaskRun, u64)>;

/// The filters of a list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// One service's runs.
    pub service: Option<String>,
    /// Runs in this status.
    pub status: Option<RunStatus>,
    /// Runs of this branch, or of a commit starting with this (when it is 4 or more hex digits).
    pub revision: Option<String>,
    /// Runs started by this trigger.
    pub trigger: Option<String>,
}

impl Filter {
    fn narrows(&self) -> bool {
        self.status.is_some() || self.revision.is_some() || self.trigger.is_some()
    }

    fn matches(&self, run: &PipelineRunSummary) -> bool {
        if self.status.is_some_and(|s| s != run.status) {
            return false;
        }
        if let Some(trigger) = &self.trigger
            && &run.trigger != trigger
        {
            return false;
        }
        self.revision
            .as_deref()
            .is_none_or(|revision| shared::pipelines::revision_matches(revision, run))
    }
}

/// Whether a run of `branch` counts as a build of main: no branch annotation, or `main`.
pub fn is_main(branch: Option<&str>) -> bool {
    branch.is_none_or(|b| b == "main")
}

/// Every run and TaskRun in memory.
#[derive(Debug)]
pub struct Index {
    history_per_service: usize,
    /// Whether finished TaskRuns are held whole: when no cluster can give them back.
    keep_whole: bool,
    runs: HashMap<RunId, Entry>,
    /// Every kept run, newest first.
    all: BTreeMap<RunKey, Arc<PipelineRunSummary>>,
    services: HashMap<String, ServiceRuns>,
    /// TaskRuns by their PipelineRun.
    task_runs: HashMap<RunId, HeldTaskRuns>,
    /// Runs by (service, full commit), for the cards' build links.
    commits: BTreeMap<(String, String), Vec<RunId>>,
    /// How many kept runs each trigger started, fleet-wide.
    triggers: BTreeMap<String, usize>,
    /// Dropped runs, all services together.
    dropped_total: usize,
    /// Specs by content hash: equal specs share one allocation.
    specs: HashMap<u64, Weak<PipelineSpecView>>,
    /// Live entries of `specs` when it was last swept.
    specs_swept_at: usize,
    run_generation: u64,
    task_run_generation: u64,
}

impl Index {
    /// An empty index keeping `history_per_service` runs per service; `keep_whole` keeps finished TaskRuns
    /// whole, for when no cluster can give them back.
    pub fn new(history_per_service: usize, keep_whole: bool) -> Self {
        Self {
            history_per_service: history_per_service.max(1),
            keep_whole,
            runs: HashMap::new(),
            all: BTreeMap::new(),
            services: HashMap::new(),
            task_runs: HashMap::new(),
            commits: BTreeMap::new(),
            triggers: BTreeMap::new(),
            dropped_total: 0,
            specs: HashMap::new(),
            specs_swept_at: 0,
            run_generation: 1,
            task_run_generation: 1,
        }
    }

    /// The newest runs kept per service.
    pub fn history_per_service(&self) -> usize {
        self.history_per_service
    }

    /// A PipelineRun (re)listed or changed.
    pub fn apply_run(&mut self, mut run: Run) -> Vec<Change> {
        let mut changes = Vec::new();
        let generation = self.run_generation;
        if let Some(existing) = self.runs.get(&run.id)
            && existing.run.service != run.service
        {
            // Relabelled to another service: it leaves one list and joins the other.
            let id = run.id.clone();
            changes.extend(self.forget(&id));
        }
        let hash = id_hash(&run.id);
        let service = self.services.entry(run.service.clone()).or_default();
        if let Some(seen) = service.dropped.get_mut(&hash) {
            *seen = generation;
            return changes;
        }
        // The run keeps its spec only through the shared copy: a copy of its own was one per run.
        let (spec, spec_key) = match run.spec.take() {
            Some(spec) => {
                let (spec, key) = self.intern(spec);
                (Some(spec), key)
            }
            None => (None, String::new()),
        };
        let row_only = !self.keep_whole && run.is_finished();
        if row_only {
            run.keep_row_only();
        }
        let run = Arc::new(run);
        let summary = Arc::new(summarize(
            &run,
            spec.as_deref(),
            self.task_runs.get(&run.id),
        ));
        let before = self.runs.get(&run.id).cloned();
        if let Some(old) = &before {
            self.unlink(old);
        }
        self.link(&run, &summary);
        self.runs.insert(
            run.id.clone(),
            Entry {
                run: run.clone(),
                spec,
                spec_key,
                summary: summary.clone(),
                row_only,
                generation,
            },
        );
        let mut pushed_itself = false;
        for oldest in self.enforce_history(&run.service) {
            if oldest.namespace == run.id.namespace && oldest.name == run.id.name {
                pushed_itself = true;
                if before.is_none() {
                    // Too old to keep from the start: nobody was told it existed.
                    continue;
                }
            }
            changes.push(Change::Removed { summary: oldest });
        }
        if !pushed_itself && before.as_ref().is_none_or(|b| b.summary != summary) {
            changes.push(Change::Updated {
                summary,
                before: before.map(|b| b.summary.status),
            });
        }
        changes
    }

    /// A PipelineRun was deleted.
    pub fn remove_run(&mut self, id: &RunId, service: &str) -> Vec<Change> {
        if self.runs.contains_key(id) {
            return self.forget(id);
        }
        let hash = id_hash(id);
        if let Some(runs) = self.services.get_mut(service)
            && runs.dropped.remove(&hash).is_some()
        {
            self.dropped_total = self.dropped_total.saturating_sub(1);
        }
        self.task_runs.remove(id);
        Vec::new()
    }

    /// A TaskRun (re)listed or changed.
    pub fn apply_task_run(&mut self, task_run: TaskRunEntry) -> Vec<Change> {
        let parent = RunId {
            namespace: task_run.id.namespace.clone(),
            name: task_run.pipeline_run.clone(),
        };
        // The TaskRuns of a run pushed out of the history are not kept either.
        if self
            .services
            .get(&task_run.service)
            .is_some_and(|s| s.dropped.contains_key(&id_hash(&parent)))
        {
            return Vec::new();
        }
        let generation = self.task_run_generation;
        let name = task_run.id.name.clone().into_boxed_str();
        let held = HeldTaskRun::of(task_run, self.keep_whole);
        self.task_runs
            .entry(parent.clone())
            .or_default()
            .insert(name, (held, generation));
        self.resummarize(&parent)
    }

    /// A TaskRun was deleted.
    pub fn remove_task_run(&mut self, id: &RunId, pipeline_run: &str) -> Vec<Change> {
        let parent = RunId {
            namespace: id.namespace.clone(),
            name: pipeline_run.to_string(),
        };
        if let Some(children) = self.task_runs.get_mut(&parent) {
            children.remove(id.name.as_str());
            if children.is_empty() {
                self.task_runs.remove(&parent);
            }
        }
        self.resummarize(&parent)
    }

    /// A new list of PipelineRuns starts: runs it does not list again are gone when it ends.
    pub fn begin_runs(&mut self) {
        self.run_generation += 1;
    }

    /// The list of PipelineRuns ended: runs (and dropped runs) it did not list are gone.
    pub fn end_runs(&mut self) -> Vec<Change> {
        let generation = self.run_generation;
        let gone: Vec<RunId> = self
            .runs
            .iter()
            .filter(|(_, e)| e.generation < generation)
            .map(|(id, _)| id.clone())
            .collect();
        let mut changes = Vec::new();
        for id in gone {
            changes.extend(self.forget(&id));
        }
        let mut forgotten = 0;
        for runs in self.services.values_mut() {
            let before = runs.dropped.len();
            runs.dropped.retain(|_, seen| *seen >= generation);
            forgotten += before - runs.dropped.len();
        }
        self.dropped_total = self.dropped_total.saturating_sub(forgotten);
        self.services
            .retain(|_, runs| !runs.runs.is_empty() || !runs.dropped.is_empty());
        changes
    }

    /// A new list of TaskRuns starts.
    pub fn begin_task_runs(&mut self) {
        self.task_run_generation += 1;
    }

    /// The list of TaskRuns ended: TaskRuns it did not list are gone.
    pub fn end_task_runs(&mut self) -> Vec<Change> {
        let generation = self.task_run_generation;
        let mut touched = Vec::new();
        self.task_runs.retain(|parent, children| {
            let before = children.len();
            children.retain(|_, (_, seen)| *seen >= generation);
            if children.len() != before {
                touched.push(parent.clone());
            }
            !children.is_empty()
        });
        touched
            .iter()
            .flat_map(|parent| self.resummarize(parent))
            .collect()
    }

    /// Recomputes a run's row after one of its TaskRuns changed.
    fn resummarize(&mut self, id: &RunId) -> Vec<Change> {
        let Some(entry) = self.runs.get(id) else {
            return Vec::new();
        };
        let summary = Arc::new(summarize(
            &entry.run,
            entry.spec.as_deref(),
            self.task_runs.get(id),
        ));
        if summary == entry.summary {
            return Vec::new();
        }
        let before = entry.summary.status;
        let old = entry.clone();
        self.unlink(&old);
        self.link(&old.run, &summary);
        if let Some(entry) = self.runs.get_mut(id) {
            entry.summary = summary.clone();
        }
        vec![Change::Updated {
            summary,
            before: Some(before),
        }]
    }

    /// Adds a run's row to the sorted lists and the counts.
    fn link(&mut self, run: &Run, summary: &Arc<PipelineRunSummary>) {
        let key = summary.key();
        self.all.insert(key.clone(), summary.clone());
        let service = self.services.entry(run.service.clone()).or_default();
        service.runs.insert(key, summary.clone());
        *service.triggers.entry(run.trigger.clone()).or_default() += 1;
        *self.triggers.entry(run.trigger.clone()).or_default() += 1;
        if let Some(commit) = &run.commit {
            let runs = self
                .commits
                .entry((run.service.clone(), commit.clone()))
                .or_default();
            if !runs.contains(&run.id) {
                runs.push(run.id.clone());
            }
        }
    }

    /// Takes a run's row out of the sorted lists and the counts.
    fn unlink(&mut self, entry: &Entry) {
        let run = &entry.run;
        let key = entry.summary.key();
        self.all.remove(&key);
        if let Some(service) = self.services.get_mut(&run.service) {
            service.runs.remove(&key);
            decrement(&mut service.triggers, &run.trigger);
        }
        decrement(&mut self.triggers, &run.trigger);
        if let Some(commit) = &run.commit {
            let key = (run.service.clone(), commit.clone());
            if let Some(runs) = self.commits.get_mut(&key) {
                runs.retain(|id| id != &run.id);
                if runs.is_empty() {
                    self.commits.remove(&key);
                }
            }
        }
    }

    /// Forgets a run and its TaskRuns.
    fn forget(&mut self, id: &RunId) -> Vec<Change> {
        let Some(entry) = self.runs.remove(id) else {
            return Vec::new();
        };
        self.unlink(&entry);
        self.task_runs.remove(id);
        vec![Change::Removed {
            summary: entry.summary,
        }]
    }

    /// Pushes the oldest runs of `service` out while it keeps more than its history; returns their rows.
    fn enforce_history(&mut self, service: &str) -> Vec<Arc<PipelineRunSummary>> {
        let mut pushed_out = Vec::new();
        while let Some(runs) = self.services.get_mut(service)
            && runs.runs.len() > self.history_per_service
            && let Some((key, oldest)) = runs.runs.last_key_value()
        {
            let (key, oldest) = (key.clone(), oldest.clone());
            let id = RunId {
                namespace: oldest.namespace.clone(),
                name: oldest.name.clone(),
            };
            runs.dropped.insert(id_hash(&id), self.run_generation);
            self.dropped_total += 1;
            match self.runs.remove(&id) {
                Some(entry) => self.unlink(&entry),
                // Not indexed as a run: take the row alone out, or this would never end.
                None => {
                    runs.runs.remove(&key);
                }
            }
            self.task_runs.remove(&id);
            pushed_out.push(oldest);
        }
        pushed_out
    }

    /// The shared copy of `spec` and its key.
    fn intern(&mut self, spec: PipelineSpecView) -> (Arc<PipelineSpecView>, String) {
        let hash = spec_hash(&spec);
        let key = format!("{hash:016x}");
        if let Some(shared) = self.specs.get(&hash).and_then(Weak::upgrade)
            && *shared == spec
        {
            return (shared, key);
        }
        let shared = Arc::new(spec);
        self.specs.insert(hash, Arc::downgrade(&shared));
        // Specs no run uses any more go now and then, not on every insert.
        if self.specs.len() > 2 * self.specs_swept_at.max(64) {
            self.specs.retain(|_, spec| spec.strong_count() > 0);
            self.specs_swept_at = self.specs.len();
        }
        (shared, key)
    }

    /// One page of runs matching `filter`, from `cursor`.
    pub fn page(&self, filter: &Filter, cursor: Option<&Cursor>) -> PipelineRunPage {
        let empty = BTreeMap::new();
        let scope = match &filter.service {
            Some(service) => self.services.get(service).map_or(&empty, |s| &s.runs),
            None => &self.all,
        };
        let matching = |entry: &(&RunKey, &Arc<PipelineRunSummary>)| filter.matches(entry.1);
        let runs: Vec<&Arc<PipelineRunSummary>> = match cursor {
            None => scope
                .iter()
                .filter(matching)
                .take(PAGE_SIZE)
                .map(|(_, s)| s)
                .collect(),
            Some(Cursor {
                direction: Direction::After,
                key,
            }) => scope
                .range((Bound::Excluded(key), Bound::Unbounded))
                .filter(matching)
                .take(PAGE_SIZE)
                .map(|(_, s)| s)
                .collect(),
            Some(Cursor {
                direction: Direction::Before,
                key,
            }) => {
                let mut runs: Vec<_> = scope
                    .range((Bound::Unbounded, Bound::Excluded(key)))
                    .rev()
                    .filter(matching)
                    .take(PAGE_SIZE)
                    .map(|(_, s)| s)
                    .collect();
                runs.reverse();
                runs
            }
        };
        // The bounds of what to look past: the page's own runs, or the cursor's key for an empty page.
        let (first, last) = match (runs.first(), runs.last(), cursor) {
            (Some(first), Some(last), _) => (Some(first.key()), Some(last.key())),
            (_, _, Some(cursor)) => (Some(cursor.key.clone()), Some(cursor.key.clone())),
            _ => (None, None),
        };
        let any_after = last.as_ref().is_some_and(|last| {
            scope
                .range((Bound::Excluded(last), Bound::Unbounded))
                .any(|e| matching(&e))
        });
        let any_before = first.as_ref().is_some_and(|first| {
            scope
                .range((Bound::Unbounded, Bound::Excluded(first)))
                .rev()
                .any(|e| matching(&e))
        });
        let next = last.filter(|_| any_after).map(|key| {
            Cursor {
                direction: Direction::After,
                key,
            }
            .encode()
        });
        let previous = first.filter(|_| any_before).map(|key| {
            Cursor {
                direction: Direction::Before,
                key,
            }
            .encode()
        });
        let total = if filter.narrows() {
            scope.values().filter(|s| filter.matches(s)).count()
        } else {
            scope.len()
        };
        let (dropped, triggers) = match &filter.service {
            Some(service) => self.services.get(service).map_or((0, Vec::new()), |s| {
                (s.dropped.len(), s.triggers.keys().cloned().collect())
            }),
            None => (self.dropped_total, self.triggers.keys().cloned().collect()),
        };
        PipelineRunPage {
            runs: runs
                .into_iter()
                .map(|s| PipelineRunSummary::clone(s))
                .collect(),
            next,
            previous,
            total,
            dropped: dropped as u64,
            history_per_service: self.history_per_service,
            triggers,
        }
    }

    /// Whether any run of `service` is kept or counted.
    pub fn knows_service(&self, service: &str) -> bool {
        self.services.contains_key(service)
    }

    /// A run, its spec and its TaskRuns as held.
    pub fn run(&self, id: &RunId) -> Option<(Entry, HeldTaskRuns)> {
        let entry = self.runs.get(id)?.clone();
        let task_runs = self.task_runs.get(id).cloned().unwrap_or_default();
        Some((entry, task_runs))
    }

    /// Every kept run of `service`, newest first.
    pub fn service_runs(&self, service: &str) -> Vec<Arc<PipelineRunSummary>> {
        self.services
            .get(service)
            .map(|s| s.runs.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The run that built `version` (a commit or its prefix) of `service`: a green build of main first,
    /// then any green build, then the newest run.
    pub fn build_of(&self, service: &str, version: &str) -> Option<RunId> {
        if version.is_empty() {
            return None;
        }
        let start = (service.to_string(), version.to_string());
        self.commits
            .range(start..)
            .take_while(|((s, commit), _)| s == service && commit.starts_with(version))
            .flat_map(|(_, ids)| ids)
            .filter_map(|id| self.runs.get(id))
            .max_by_key(|entry| {
                let run = &entry.summary;
                let green = run.status == RunStatus::Succeeded;
                (
                    green && is_main(run.branch.as_deref()),
                    green,
                    run.created_at.clone(),
                )
            })
            .map(|entry| entry.run.id.clone())
    }

    /// Kept runs, all services together.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Whether no run is kept.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

fn decrement(counts: &mut BTreeMap<String, usize>, key: &str) {
    if let Some(count) = counts.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(key);
        }
    }
}

/// A stable hash of a run's namespace and name.
fn id_hash(id: &RunId) -> u64 {
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish()
}

/// A hash of a spec's content: equal specs hash equal within a build of Tower.
pub fn spec_hash(spec: &PipelineSpecView) -> u64 {
    let mut hasher = DefaultHasher::new();
    // Serializing our own type cannot fail; an empty body would only make specs share a key, and the
    // interning compares contents before sharing.
    hasher.write(&serde_json::to_vec(spec).unwrap_or_default());
    hasher.finish()
}

/// One pipeline task of a run and how it stands.
#[derive(Debug, Clone)]
pub struct TaskState<'a> {
    /// The pipeline task's name.
    pub name: &'a str,
    /// Whether it is one of `finally`.
    pub finally: bool,
    /// Its TaskRun, if it has one.
    pub task_run: Option<TaskRunFacts<'a>>,
    /// The run's reference to it, if it ran.
    pub child: Option<&'a Child>,
    /// Why it was skipped, if it was.
    pub skipped: Option<&'a Skipped>,
    /// Where it stands.
    pub status: TaskStatus,
}

/// Every pipeline task of `run`, `tasks` then `finally`, in spec order; without a spec, in the order the run
/// names them.
pub fn task_states<'a>(
    run: &'a Run,
    spec: Option<&'a PipelineSpecView>,
    task_runs: impl IntoIterator<Item = TaskRunFacts<'a>>,
) -> Vec<TaskState<'a>> {
    let task_runs: Vec<TaskRunFacts<'a>> = task_runs.into_iter().collect();
    let mut names: Vec<(&str, bool)> = match spec {
        Some(spec) => spec
            .tasks
            .iter()
            .map(|t| (t.name.as_str(), false))
            .chain(spec.finally.iter().map(|t| (t.name.as_str(), true)))
            .collect(),
        None => Vec::new(),
    };
    if spec.is_none() {
        let mut add = |name: &'a str, finally: bool| {
            if !names.iter().any(|(n, _)| *n == name) {
                names.push((name, finally));
            }
        };
        let finally_of = |name: &str| {
            task_runs
                .iter()
                .any(|t| t.pipeline_task == Some(name) && t.finally)
        };
        for child in &run.children {
            add(&child.pipeline_task, finally_of(&child.pipeline_task));
        }
        for skipped in &run.skipped {
            add(&skipped.name, false);
        }
        for task_run in &task_runs {
            if let Some(task) = task_run.pipeline_task {
                add(task, task_run.finally);
            }
        }
        // `finally` tasks after the others, as Tekton runs them.
        names.sort_by_key(|(_, finally)| *finally);
    }
    names
        .into_iter()
        .map(|(name, finally)| {
            let child = run.children.iter().find(|c| c.pipeline_task == name);
            let task_run = child
                .and_then(|c| task_runs.iter().find(|t| t.name == c.task_run))
                .or_else(|| {
                    task_runs
                        .iter()
                        .filter(|t| t.pipeline_task == Some(name))
                        .max_by_key(|t| t.started_at)
                })
                .copied();
            let skipped = run.skipped.iter().find(|s| s.name == name);
            let status = match (task_run, skipped) {
                (Some(task_run), _) => task_run.status,
                (None, Some(_)) => TaskStatus::Skipped,
                (None, None) => TaskStatus::Pending,
            };
            TaskState {
                name,
                finally,
                task_run,
                child,
                skipped,
                status,
            }
        })
        .collect()
}

/// A run's row.
pub fn summarize(
    run: &Run,
    spec: Option<&PipelineSpecView>,
    task_runs: Option<&HeldTaskRuns>,
) -> PipelineRunSummary {
    let states = task_states(
        run,
        spec,
        task_runs.into_iter().flat_map(|children| {
            children
                .iter()
                .map(|(name, (held, _))| TaskRunFacts::held(name, held))
        }),
    );
    let mut tasks = TaskCounts {
        total: u32::try_from(states.len()).unwrap_or(u32::MAX),
        ..TaskCounts::default()
    };
    for state in &states {
        match state.status {
            TaskStatus::Succeeded => tasks.succeeded += 1,
            TaskStatus::Failed | TaskStatus::Cancelled => tasks.failed += 1,
            TaskStatus::Skipped => tasks.skipped += 1,
            TaskStatus::Running => tasks.running += 1,
            TaskStatus::Pending => {}
        }
    }
    PipelineRunSummary {
        namespace: run.id.namespace.clone(),
        name: run.id.name.clone(),
        service: run.service.clone(),
        pipeline: run.pipeline.clone(),
        status: run_status(run.condition.as_ref()),
        reason: run.condition.as_ref().and_then(|c| c.reason.clone()),
        commit: run.commit.clone(),
        message: run.message.clone(),
        branch: run.branch.clone(),
        trigger: run.trigger.clone(),
        author: run.author.clone(),
        created_at: run.created_at.clone(),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        tasks,
    }
}
