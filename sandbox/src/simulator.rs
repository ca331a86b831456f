//! The platform's controllers, moving the sandbox's world on as seed 004 describes: every commit to
//! `application-repositories` (a merged pull request, an operator's or a CI bot's) reaches the
//! ApplicationSet controller, which creates, changes and deletes the Applications its files generate
//! ([`crate::fixtures::argocd::generators`]); Argo CD syncs them (a platform resource's Application applies
//! it to the management cluster, and the operators react); the release operator derives `components/` files
//! from changed Releases; Argo Rollouts steps canaries, pods roll and log, Tekton builds new commits (dev
//! follows every green build), the schema operator applies migrations, External Secrets refresh and
//! Crossplane claims become Ready. In the demo the in-house platform components get green builds too, and
//! their CI bots bump them in `infra/` (dev and management first, prod later and one version behind).
//!
//! A sync fails, as Argo CD's does, when a resource's kind needs a CustomResourceDefinition the destination
//! cluster does not have yet; it retries with the set's backoff until the Application installing that CRD
//! is Healthy. With [`crate::Options::fresh`] a workload cluster's components and packages come up that way
//! ([`Simulator::bring_up`]).
//!
//! The simulator is a scheduler: a queue of timed [`Action`]s ordered by (simulated time, insertion
//! order), processed by [`Simulator::step`] (real time, from a background thread every ~100 ms) or
//! [`Simulator::advance`] (a test moving the manual clock). Its inputs — forge merges, Argo CD sync
//! requests, pushed commits — are polled at those moments, so with a manual clock the same calls give the
//! same world. Randomness only comes from a SplitMix64 seeded with [`crate::Options::seed`], and every
//! timestamp written into an object comes from the simulated [`Clock`].
//!
//! Memory stays bounded: the queue holds a fixed number of periodic actions plus the steps of flows in
//! progress, Argo CD histories keep the last ten syncs, the simulator garbage-collects the Events and
//! ReplicaSets it creates and prunes PipelineRuns to as many per service as were seeded, and the
//! apiserver bounds watch history and container logs by bytes. `tests/bounded.rs` holds it to that.

mod appsets;
mod argo;
mod bumps;
mod ci;
pub mod control;
mod operators;

pub use bumps::{BumpError, Bumped};

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use futures::{FutureExt as _, Stream, StreamExt as _};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::apiserver::{ClusterStore, Clusters, StoreError};
use crate::fixtures::argocd::Set;
use crate::forge::{Forge, MergeEvent};
use crate::git::Repositories;
use crate::topology::{Topology, WorkloadCluster};
use crate::world::Commit;

/// Where a manual clock starts: the fixed world's start, 2026-11-20T09:00:00Z, so two manual runs seed the
/// same fixtures and write the same commits.
pub const MANUAL_EPOCH: Timestamp = crate::world::FIXED_START;

/// How long the real-time loop sleeps between steps (wall time).
const TICK: Duration = Duration::from_millis(100);
/// Journal lines kept: enough to read a few flows back, never more.
const JOURNAL_LIMIT: usize = 2_000;
/// Actions queued at most; beyond this, new actions are dropped with a warning (a bug, not a workload).
const QUEUE_LIMIT: usize = 100_000;

/// How busy the demo's developers are: how often one of them pushes to main.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pace {
    /// A push every one and a half to three and a half minutes: with each build's result, Argo CD's sync and
    /// the canary's steps, about one visible event a minute across the fleet.
    #[default]
    Calm,
    /// A push every half minute to a minute and a half, for a demo that should never be quiet.
    Busy,
}

impl Pace {
    /// Seconds between two demo pushes, as a range to draw from.
    fn interval(self) -> (u64, u64) {
        match self {
            Pace::Calm => (90, 210),
            Pace::Busy => (30, 90),
        }
    }
}

impl std::str::FromStr for Pace {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "calm" => Ok(Pace::Calm),
            "busy" => Ok(Pace::Busy),
            other => Err(format!("unknown pace {other:?}: calm or busy")),
        }
    }
}

/// The service whose build of main is running when a demo starts, and what it builds: it finishes and rolls
/// out to dev (Argo CD's sync about 20 s after the start, then the canary's steps).
pub const WARM_UP: (&str, &str) = ("search", "Rank exact matches first");
/// How long before the demo starts [`WARM_UP`] was pushed: its build takes about five and a half minutes,
/// then dev's Release moves and its Application applies it (about ten seconds) before the release operator
/// derives the files Argo CD syncs.
const WARM_UP_LEAD: i64 = 6 * 60 + 5;
/// A teammate's push whose tests fail about 45 s after the start: the demo's first red build.
pub const WARM_UP_RED: (&str, &str) = ("cart", "Keep carts across devices (tests fail)");
/// How long before the demo starts [`WARM_UP_RED`] was pushed: its tests fail 141 s after the push.
const WARM_UP_RED_LEAD: i64 = 96;

/// Simulated time: the wall clock sped up, or a clock only a test moves.
#[derive(Debug)]
pub struct Clock {
    kind: ClockKind,
}

#[derive(Debug)]
enum ClockKind {
    Real {
        started: std::time::Instant,
        origin: Timestamp,
        speed: f64,
    },
    Manual(Mutex<Timestamp>),
}

impl Clock {
    /// Real time scaled by `speed` (10: ten simulated seconds per wall second), starting at `origin` (now, or
    /// a pinned `--epoch`) and moving from there.
    pub fn real_from(origin: Timestamp, speed: f64) -> Self {
        let speed = if speed.is_finite() && speed > 0.0 {
            speed
        } else {
            1.0
        };
        Self {
            kind: ClockKind::Real {
                started: std::time::Instant::now(),
                origin,
                speed,
            },
        }
    }

    /// A clock standing at `start` until [`Clock::advance`] moves it.
    pub fn manual(start: Timestamp) -> Self {
        Self {
            kind: ClockKind::Manual(Mutex::new(start)),
        }
    }

    /// The simulated time now.
    pub fn now(&self) -> Timestamp {
        match &self.kind {
            ClockKind::Real {
                started,
                origin,
                speed,
            } => {
                let elapsed = started.elapsed().as_secs_f64() * speed;
                SignedDuration::try_from_secs_f64(elapsed)
                    .ok()
                    .and_then(|d| origin.checked_add(d).ok())
                    .unwrap_or(*origin)
            }
            ClockKind::Manual(at) => *at.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Whether only [`Clock::advance`] moves this clock.
    pub fn is_manual(&self) -> bool {
        matches!(self.kind, ClockKind::Manual(_))
    }

    /// Moves a manual clock forward by `by` (a real clock ignores this: it moves by itself).
    pub fn advance(&self, by: Duration) {
        let target = later(self.now(), by);
        self.set(target);
    }

    /// Sets a manual clock to `at`, never backwards.
    fn set(&self, at: Timestamp) {
        if let ClockKind::Manual(now) = &self.kind {
            let mut now = now.lock().unwrap_or_else(PoisonError::into_inner);
            if at > *now {
                *now = at;
            }
        }
    }
}

/// `by` after `at`.
fn later(at: Timestamp, by: Duration) -> Timestamp {
    SignedDuration::try_from(by)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(at)
}

/// `seconds` after `at`.
fn secs(at: Timestamp, seconds: i64) -> Timestamp {
    at.checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(at)
}

/// `at` truncated to whole seconds, as Kubernetes writes times.
fn whole(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

/// The simulator's randomness: [`shared::random::SplitMix64`], the same sequence for the same seed on every
/// platform.
#[derive(Debug, Clone)]
struct Rng(shared::random::SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `low..high` (`low` when the range is empty).
    fn range(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            low
        } else {
            low + self.0.below(high - low)
        }
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.0.below(100) < percent
    }
}

/// What the simulator works on: the clusters, the git repositories and the forge.
#[derive(Clone)]
pub struct World {
    /// The management and workload clusters.
    pub clusters: Clusters,
    /// Which workload clusters run each environment: a deploy to prod rolls out on every prod cluster.
    pub topology: Topology,
    /// The bare repositories behind the forge.
    pub repositories: Repositories,
    /// The forge, whose merges the simulator reacts to.
    pub forge: Forge,
}

/// One thing a controller does at a simulated time.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// The release operator derives `components/<svc>/…/<env>.yaml` from the Release.
    DeriveRelease { service: String, env: String },
    /// The ApplicationSet controller, woken by a push to `application-repositories`: the Applications of
    /// the files changed since it last looked are created, pointed at what changed, or deleted.
    Generate,
    /// Argo CD's automated sync starts on an OutOfSync Application (or retries a failed one).
    SyncStart { app: String },
    /// Argo CD finishes the sync operation running on an Application.
    SyncFinish { app: String },
    /// A platform Application's workloads are ready after a sync to `revisions`: Healthy, and the CRDs it
    /// installs count as on its cluster. Ignored when it synced something else since.
    Settled { app: String, revisions: String },
    /// An in-house platform component gets a green build: its CI bot bumps it on dev (management when it
    /// runs only there) and schedules the other clusters' bumps.
    ComponentBuild { component: String },
    /// A CI bot moves `component` to `version` on `cluster`, unless it runs that version already.
    ComponentBump {
        component: String,
        cluster: String,
        version: String,
    },
    /// Argo Rollouts on workload cluster `cluster` sees a new pod template.
    RolloutStart { service: String, cluster: String },
    /// Argo Rollouts runs (or finishes pausing on) the current canary step.
    RolloutStep {
        service: String,
        cluster: String,
        generation: u64,
    },
    /// Argo Rollouts gives up on a canary whose pods crash.
    RolloutAbort {
        service: String,
        cluster: String,
        generation: u64,
    },
    /// Argo CD reassesses the health of the Application deploying `service` to `cluster` from its Rollout.
    AppHealth { service: String, cluster: String },
    /// A Tekton trigger starts the build of a pushed commit.
    PipelineStart { service: String, sha: String },
    /// A TaskRun of a build starts.
    TaskStart {
        service: String,
        sha: String,
        task: usize,
    },
    /// A TaskRun of a build finishes.
    TaskFinish {
        service: String,
        sha: String,
        task: usize,
    },
    /// A build's PipelineRun completes.
    PipelineFinish { service: String, sha: String },
    /// The release operator moves dev's Release to a green build (autoDeploy).
    AutoDeploy { service: String, sha: String },
    /// The schema operator runs the next migration of a DatabaseSchema.
    SchemaStep { name: String, env: String },
    /// Crossplane finishes composing a database claim.
    ClaimReady { service: String, env: String },
    /// Running pods write a log line each.
    Logs,
    /// Crash-looping containers restart once more.
    CrashLoops,
    /// External Secrets refreshes what is due.
    SecretsRefresh,
    /// A developer pushes a commit to a random service (demo mode).
    DemoCommit,
    /// Forget what the simulator created and a real cluster would have pruned by now.
    Collect,
}

/// A canary in progress.
#[derive(Debug, Clone)]
struct RolloutRun {
    generation: u64,
    commit: Commit,
    new_hash: String,
    old_hash: String,
    revision: u64,
    /// Index of the canary step to run next.
    step: usize,
    /// Whether the current (pause) step has started.
    paused: bool,
    /// Whether the image crashes (its commit message says it breaks something).
    bad: bool,
}

type AppChanges = Pin<Box<dyn Stream<Item = (&'static str, Value)> + Send>>;

/// Everything the simulator remembers between steps; all of it bounded.
struct State {
    queue: BTreeMap<(Timestamp, u64), Action>,
    sequence: u64,
    rng: Rng,
    merges: broadcast::Receiver<MergeEvent>,
    apps: Option<AppChanges>,
    /// Applications with a sync operation the simulator is running.
    syncing: BTreeSet<String>,
    /// Canaries in progress by `<svc>/<cluster>`.
    rollouts: BTreeMap<String, RolloutRun>,
    generation: u64,
    /// Builds in progress by PipelineRun name.
    builds: BTreeMap<String, ci::Build>,
    /// Whether a pushed commit's build is green (by commit id), newest last.
    verdicts: VecDeque<(String, bool)>,
    /// Events the simulator created: (when, cluster, namespace, name), oldest first.
    events: VecDeque<(Timestamp, String, String, String)>,
    /// PipelineRuns kept per service when pruning: as many as were seeded, and at least a few, so the
    /// count stays flat from the first build on.
    runs_kept: BTreeMap<String, usize>,
    journal: VecDeque<String>,
    demo: bool,
    /// The demo's pace; `None` for the even pace of [`Simulator::start_demo_commits`].
    pace: Option<Pace>,
    /// The commit of `application-repositories` the Applications were last generated from.
    gitops_seen: String,
    /// Whether an [`Action::Generate`] is queued (a burst of commits wakes the controller once).
    generate_queued: bool,
    /// Retries of failed syncs in progress, by Application: Argo CD's `retryCount`.
    retries: BTreeMap<String, u32>,
    /// CustomResourceDefinitions on each cluster, as (cluster, CRD name): those of every Application that
    /// was Healthy when the simulator started or became Healthy since.
    installed: BTreeSet<(String, String)>,
}

struct Inner {
    world: World,
    clock: Clock,
    state: Mutex<State>,
}

/// The simulator; cheap to clone, clones share everything.
#[derive(Clone)]
pub struct Simulator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("clock", &self.inner.clock)
            .finish_non_exhaustive()
    }
}

/// The real-time loop; dropping it stops the loop.
#[derive(Debug)]
pub struct Running {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // A panicked loop has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

impl Simulator {
    /// A simulator over `world` on `clock`, with its periodic controllers scheduled. Nothing moves until
    /// [`Simulator::step`], [`Simulator::advance`] or [`Simulator::spawn`].
    pub fn new(world: World, clock: Clock, seed: u64) -> Self {
        let merges = world.forge.subscribe_merges();
        let now = clock.now();
        let mut state = State {
            queue: BTreeMap::new(),
            sequence: 0,
            rng: Rng(shared::random::SplitMix64::new(seed)),
            merges,
            apps: None,
            syncing: BTreeSet::new(),
            rollouts: BTreeMap::new(),
            generation: 0,
            builds: BTreeMap::new(),
            verdicts: VecDeque::new(),
            events: VecDeque::new(),
            runs_kept: BTreeMap::new(),
            journal: VecDeque::new(),
            demo: false,
            pace: None,
            gitops_seen: String::new(),
            generate_queued: false,
            retries: BTreeMap::new(),
            installed: BTreeSet::new(),
        };
        state.schedule(secs(now, 5), Action::Logs);
        state.schedule(secs(now, 60), Action::CrashLoops);
        state.schedule(secs(now, 30), Action::SecretsRefresh);
        state.schedule(secs(now, 600), Action::Collect);
        let simulator = Self {
            inner: Arc::new(Inner {
                world,
                clock,
                state: Mutex::new(state),
            }),
        };
        // Subscribe to Application changes now, so sync requests made before the first step count.
        {
            let mut state = simulator.inner.lock();
            simulator.inner.watch_apps(&mut state);
            state.runs_kept = simulator.inner.seeded_runs();
            state.gitops_seen = simulator.inner.gitops_head().unwrap_or_default();
            state.installed = simulator.inner.installed_crds();
        }
        ci::serve_step_logs(&simulator.inner);
        simulator
    }

    /// The simulated clock.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The simulated time now.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// Starts pushing a believable commit to a random service every few simulated minutes (some red,
    /// now and then one that breaks its image), as a team at work would.
    pub fn start_demo_commits(&self) {
        let mut state = self.inner.lock();
        if !state.demo {
            state.demo = true;
            let now = self.now();
            state.schedule(secs(now, 90), Action::DemoCommit);
            bumps::schedule_builds(&mut state, now);
        }
    }

    /// Starts the demo: a build of main that began a few minutes before now finishes within seconds and
    /// rolls out to dev (so something visibly happens in the first half minute), then the developers push
    /// at `pace`.
    pub fn start_demo(&self, pace: Pace) {
        let mut state = self.inner.lock();
        if state.demo {
            return;
        }
        state.demo = true;
        state.pace = Some(pace);
        let now = whole(self.now());
        // Pushed in the past: the steps of their builds that are already due run at their own (past) times
        // on the first step, the rest as the clock reaches them.
        for ((service, message), lead, green) in [
            (WARM_UP, WARM_UP_LEAD, true),
            (WARM_UP_RED, WARM_UP_RED_LEAD, false),
        ] {
            let pushed = secs(now, -lead);
            if let Err(error) = self
                .inner
                .push_commit(&mut state, pushed, service, message, green)
            {
                tracing::warn!(error = format!("{error:#}"), "a demo's first commit failed");
            }
        }
        let (low, high) = pace.interval();
        let first = state.rng.range(low / 2, high / 2) as i64;
        state.schedule(secs(now, first), Action::DemoCommit);
        bumps::schedule_builds(&mut state, now);
    }

    /// Processes every action due at the clock's current time, in order; returns how many ran.
    pub fn step(&self) -> usize {
        let now = self.now();
        self.inner.run_until(now, false)
    }

    /// Moves a manual clock forward by `by`, processing every action that falls due on the way at its
    /// own time; returns how many ran. On a real clock this is [`Simulator::step`].
    pub fn advance(&self, by: Duration) -> usize {
        if !self.inner.clock.is_manual() {
            return self.step();
        }
        let target = later(self.now(), by);
        let ran = self.inner.run_until(target, true);
        self.inner.clock.set(target);
        ran
    }

    /// Pushes a commit titled `message` onto main of `service`'s repository, as its team would; its
    /// Tekton build starts a few seconds later and succeeds when `green`. Returns the commit id.
    pub fn push_commit(&self, service: &str, message: &str, green: bool) -> anyhow::Result<String> {
        let mut state = self.inner.lock();
        let at = self.now();
        self.inner
            .push_commit(&mut state, at, service, message, green)
    }

    /// Bumps `component` on `cluster` now, as its CI bot does after a green build (the platform admin, for a
    /// third-party component): to `version`, or the next patch version. The ApplicationSet controller and
    /// Argo CD pick the commit up as the clock moves on.
    pub fn bump(
        &self,
        component: &str,
        cluster: &str,
        version: Option<&str>,
    ) -> Result<Bumped, BumpError> {
        let mut state = self.inner.lock();
        let at = whole(self.now());
        self.inner.bump(&mut state, at, component, cluster, version)
    }

    /// Brings workload cluster `cluster` up from nothing: Argo CD syncs its components' and packages'
    /// Applications (which [`crate::fixtures::argocd::fresh_cluster`] left never synced) in no declared
    /// order over the next seconds, and those needing another one's CRDs fail and retry until it is
    /// Healthy. Returns how many Applications it syncs.
    pub fn bring_up(&self, cluster: &str) -> usize {
        let mut state = self.inner.lock();
        let now = whole(self.now());
        self.inner.bring_up(&mut state, now, cluster)
    }

    /// How many actions are waiting.
    pub fn pending(&self) -> usize {
        self.inner.lock().queue.len()
    }

    /// The last things the simulator did, oldest first, each `<time> <what>`: for tests and debugging.
    pub fn journal(&self) -> Vec<String> {
        self.inner.lock().journal.iter().cloned().collect()
    }

    /// Runs [`Simulator::step`] every ~100 ms on a background thread until the handle is dropped.
    pub fn spawn(&self) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let simulator = self.clone();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tower-simulator".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    simulator.step();
                    std::thread::sleep(TICK);
                }
            })
            .map_err(|error| tracing::error!(%error, "could not start the simulator thread"))
            .ok();
        Running { stop, thread }
    }
}

impl State {
    /// A push reached `application-repositories`: its webhook wakes the ApplicationSet controller within
    /// seconds (once for a burst of pushes).
    fn wake_application_sets(&mut self, now: Timestamp) {
        if !self.generate_queued {
            self.generate_queued = true;
            self.schedule(secs(now, 3), Action::Generate);
        }
    }

    fn schedule(&mut self, at: Timestamp, action: Action) {
        if self.queue.len() >= QUEUE_LIMIT {
            tracing::warn!(?action, "simulator queue full; dropping an action");
            return;
        }
        self.sequence += 1;
        self.queue.insert((at, self.sequence), action);
    }

    fn note(&mut self, at: Timestamp, what: String) {
        tracing::debug!(target: "sandbox::simulator", "{what}");
        self.journal
            .push_back(format!("{} {what}", crate::fixtures::stamp(at)));
        while self.journal.len() > JOURNAL_LIMIT {
            self.journal.pop_front();
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs actions due up to `target`; with `move_clock` (manual), the clock follows each action.
    fn run_until(&self, target: Timestamp, move_clock: bool) -> usize {
        let mut state = self.lock();
        let mut ran = 0;
        loop {
            let now = self.clock.now();
            self.poll_inputs(&mut state, now);
            let Some(entry) = state.queue.first_entry() else {
                break;
            };
            if entry.key().0 > target {
                break;
            }
            let ((at, _), action) = entry.remove_entry();
            if move_clock {
                self.clock.set(at);
            }
            self.run(&mut state, at, action);
            ran += 1;
        }
        ran
    }

    fn cluster(&self, name: &str) -> Option<ClusterStore> {
        self.world.clusters.cluster(name)
    }

    fn management(&self) -> Option<ClusterStore> {
        self.cluster(crate::topology::MANAGEMENT)
    }

    /// The workload clusters running `env`; an error when none does.
    fn clusters_of(&self, env: &str) -> anyhow::Result<Vec<WorkloadCluster>> {
        let clusters: Vec<WorkloadCluster> =
            self.world.topology.clusters_of(env).cloned().collect();
        if clusters.is_empty() {
            anyhow::bail!("no workload cluster runs {env}");
        }
        Ok(clusters)
    }

    /// The store of workload cluster `name`, and the cluster with the environment it runs.
    fn workload(&self, name: &str) -> anyhow::Result<(ClusterStore, WorkloadCluster)> {
        let workload = self
            .world
            .topology
            .workload_cluster(name)
            .cloned()
            .with_context(|| format!("no workload cluster named {name}"))?;
        let store = self
            .cluster(name)
            .with_context(|| format!("the {name} cluster has no store"))?;
        Ok((store, workload))
    }

    /// Turns merges and sync requests that arrived since the last poll into actions.
    fn poll_inputs(&self, state: &mut State, now: Timestamp) {
        loop {
            match state.merges.try_recv() {
                Ok(merge) => self.on_merge(state, now, merge),
                Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the simulator missed merges");
                }
                Err(_) => break,
            }
        }
        let mut ended = false;
        let mut requested = Vec::new();
        if let Some(apps) = state.apps.as_mut() {
            loop {
                match apps.next().now_or_never() {
                    Some(Some((kind, app))) => {
                        if kind != "DELETED" && app.get("operation").is_some_and(|op| !op.is_null())
                        {
                            requested.push(app);
                        }
                    }
                    Some(None) => {
                        ended = true;
                        break;
                    }
                    None => break,
                }
            }
        }
        if ended {
            // The watch fell behind and ended, as a real one ends with 410: list again and re-watch.
            self.watch_apps(state);
            if let Some(management) = self.management() {
                // Picked rather than listed: at scale there are tens of thousands of Applications, and
                // a burst of changes (a secrets refresh) ends the watch.
                requested.extend(management.pick(
                    crate::argocd::API_VERSION,
                    crate::argocd::KIND,
                    None,
                    |app| {
                        app.get("operation")
                            .is_some_and(|op| !op.is_null())
                            .then(|| app.clone())
                    },
                ));
            }
        }
        for app in requested {
            let name = str_at(&app, "/metadata/name").to_string();
            if state.syncing.insert(name.clone()) {
                state.note(now, format!("argocd: sync of {name} requested"));
                state.schedule(secs(now, 3), Action::SyncFinish { app: name });
            }
        }
    }

    fn watch_apps(&self, state: &mut State) {
        state.apps = self.management().and_then(|management| {
            management
                .watch(crate::argocd::API_VERSION, crate::argocd::KIND)
                .map(|stream| Box::pin(stream) as AppChanges)
                .ok()
        });
    }

    fn on_merge(&self, state: &mut State, now: Timestamp, merge: MergeEvent) {
        if merge.repo != crate::world::GITOPS_REPOSITORY {
            return;
        }
        let platform_files = merge
            .files_changed
            .iter()
            .filter(|f| f.starts_with("platform/"))
            .count();
        state.note(
            now,
            format!(
                "forge: #{} merged ({} files, {platform_files} platform files)",
                merge.number,
                merge.files_changed.len(),
            ),
        );
        state.wake_application_sets(now);
    }

    fn run(&self, state: &mut State, at: Timestamp, action: Action) {
        let at = whole(at);
        let result = match action {
            Action::DeriveRelease { service, env } => {
                self.derive_release(state, at, &service, &env)
            }
            Action::Generate => self.generate(state, at),
            Action::SyncStart { app } => self.sync_start(state, at, &app),
            Action::SyncFinish { app } => self.sync_finish(state, at, &app),
            Action::Settled { app, revisions } => self.settled(state, at, &app, &revisions),
            Action::ComponentBuild { component } => {
                let result = self.component_build(state, at, &component);
                let next = state
                    .rng
                    .range(bumps::BUILD_INTERVAL.0, bumps::BUILD_INTERVAL.1)
                    as i64;
                state.schedule(secs(at, next), Action::ComponentBuild { component });
                result
            }
            Action::ComponentBump {
                component,
                cluster,
                version,
            } => self.component_bump(state, at, &component, &cluster, &version),
            Action::RolloutStart { service, cluster } => {
                self.rollout_start(state, at, &service, &cluster)
            }
            Action::RolloutStep {
                service,
                cluster,
                generation,
            } => self.rollout_step(state, at, &service, &cluster, generation),
            Action::RolloutAbort {
                service,
                cluster,
                generation,
            } => self.rollout_abort(state, at, &service, &cluster, generation),
            Action::AppHealth { service, cluster } => {
                self.app_health(state, at, &service, &cluster)
            }
            Action::PipelineStart { service, sha } => {
                self.pipeline_start(state, at, &service, &sha)
            }
            Action::TaskStart { service, sha, task } => {
                self.task_start(state, at, &service, &sha, task)
            }
            Action::TaskFinish { service, sha, task } => {
                self.task_finish(state, at, &service, &sha, task)
            }
            Action::PipelineFinish { service, sha } => {
                self.pipeline_finish(state, at, &service, &sha)
            }
            Action::AutoDeploy { service, sha } => self.auto_deploy(state, at, &service, &sha),
            Action::SchemaStep { name, env } => self.schema_step(state, at, &name, &env),
            Action::ClaimReady { service, env } => self.claim_ready(state, at, &service, &env),
            Action::Logs => {
                self.write_logs(state, at);
                state.schedule(secs(at, 5), Action::Logs);
                Ok(())
            }
            Action::CrashLoops => {
                self.crash_loops(state, at);
                state.schedule(secs(at, 60), Action::CrashLoops);
                Ok(())
            }
            Action::SecretsRefresh => {
                self.refresh_secrets(state, at);
                state.schedule(secs(at, 60), Action::SecretsRefresh);
                Ok(())
            }
            Action::DemoCommit => {
                let result = self.demo_commit(state, at);
                let (low, high) = state.pace.map_or((180, 480), Pace::interval);
                let next = state.rng.range(low, high) as i64;
                state.schedule(secs(at, next), Action::DemoCommit);
                result
            }
            Action::Collect => {
                self.collect(state, at);
                state.schedule(secs(at, 600), Action::Collect);
                Ok(())
            }
        };
        if let Err(error) = result {
            tracing::warn!(
                error = format!("{error:#}"),
                "a simulated controller failed"
            );
            state.note(at, format!("error: {error:#}"));
        }
    }

    /// Reads, changes and writes back an object, retrying when someone else wrote it in between.
    fn update(
        &self,
        store: &ClusterStore,
        (api_version, kind): (&str, &str),
        namespace: Option<&str>,
        name: &str,
        change: impl Fn(&mut Value),
    ) -> anyhow::Result<Option<Value>> {
        for _ in 0..5 {
            let Some(mut object) = store.get(api_version, kind, namespace, name) else {
                return Ok(None);
            };
            change(&mut object);
            match store.replace(object) {
                Ok(stored) => return Ok(Some(stored)),
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        anyhow::bail!("{kind} {name} kept changing")
    }

    /// Creates or replaces an object the simulator owns, and remembers Events for collection.
    fn put(
        &self,
        state: &mut State,
        at: Timestamp,
        store: &ClusterStore,
        object: Value,
    ) -> anyhow::Result<Value> {
        let event = object.get("kind").and_then(Value::as_str) == Some("Event");
        let stored = store.apply(object)?;
        if event {
            state.events.push_back((
                at,
                store.name().to_string(),
                str_at(&stored, "/metadata/namespace").to_string(),
                str_at(&stored, "/metadata/name").to_string(),
            ));
        }
        Ok(stored)
    }
}

/// The string at `pointer`, or "".
fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The time at `pointer`, if it parses.
fn time_at(value: &Value, pointer: &str) -> Option<Timestamp> {
    value.pointer(pointer)?.as_str()?.parse().ok()
}
