//! The offline platform Tower's demo and tests run against: faithful on the wire, so Tower talks to it with
//! the same clients it uses in production.

/// A fake Kubernetes API server that real kube-rs clients and kubectl talk to.
pub mod apiserver;
/// A fake Argo CD API server over the management cluster's Applications.
pub mod argocd;
/// A fault-injecting reverse proxy to put in front of any upstream: down, slow, 500, truncated, 410, rate limited.
pub mod faults;
pub mod fixtures;
/// The GitHub-compatible forge serving the git repositories: App auth, contents, git data, pulls, checks, OAuth.
pub mod forge;
/// Real git repositories built from the plan: the service repositories and `application-repositories`.
pub mod git;
/// A Loki-compatible store of the logs of deleted pods, bounded in time and bytes.
pub mod loki;
/// Metrics history and live series: a real Prometheus when installed, else a built-in PromQL subset.
pub mod metrics;
pub mod platform;
/// Scale mode: generated services by the thousand, for benchmarks.
pub mod scale;
/// The platform's controllers, moving the world on: release and schema operators, Argo CD, Argo Rollouts,
/// Tekton, External Secrets and Crossplane, on a real-time or manual clock.
pub mod simulator;
/// The one place child processes start, and the run's temporary root: nothing outlives the sandbox.
pub mod supervisor;
/// Which clusters the sandbox runs (prod on one cluster or on several) and which Argo CD deploys to each.
pub mod topology;
pub mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use anyhow::Context as _;
use apiserver::{ClusterStore, Clusters, ResourceType};

/// The clusters of a sandbox with one prod cluster (the default): the management cluster and one workload
/// cluster per environment. With [`Options::prod_clusters`] above one there is no `prod` cluster: ask
/// [`Sandbox::workload_clusters`].
pub const CLUSTERS: [&str; 3] = ["management", "dev", "prod"];

/// The bearer token every Argo CD instance of the sandbox accepts.
pub const ARGOCD_TOKEN: &str = "sandbox-argocd-token";

/// How a sandbox starts.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where to listen (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Start metrics: a real Prometheus when installed (a couple of seconds to backfill), else the built-in
    /// answers. Tests that do not read metrics leave it off.
    pub metrics: bool,
    /// Seed of everything random-looking (metrics noise, simulator choices).
    pub seed: u64,
    /// Whether and how the platform's controllers run (off: the fixtures stay as seeded).
    pub simulate: Simulate,
    /// How much faster than real time simulated time runs in [`Simulate::RealTime`] (10: a 30 s canary
    /// pause takes 3 s).
    pub speed: f64,
    /// Generate this many extra services (`svc-0001`…) with their objects, for benchmarks.
    pub scale: Option<usize>,
    /// PipelineRuns (with their TaskRuns) across the generated services in scale mode.
    pub scale_runs: usize,
    /// Where the world starts (its history ends just before): now when unset. A manual clock always
    /// starts at [`simulator::MANUAL_EPOCH`].
    pub epoch: Option<jiff::Timestamp>,
    /// How busy the demo's developers are in [`Simulate::RealTime`].
    pub pace: simulator::Pace,
    /// How many clusters run prod (1 to [`topology::MAX_PROD_CLUSTERS`]): one is named `prod`; two or more
    /// are `prod-eu`, `prod-us`, …, with `prod-us` deployed by an Argo CD of its own at `/argocd-us`.
    pub prod_clusters: usize,
    /// A workload cluster (`dev`, `prod`, `prod-eu`…) that comes up from nothing: its components' and
    /// packages' Applications start never synced, and the simulator has Argo CD sync them in no declared
    /// order, those needing another one's CRDs failing and retrying until it is Healthy
    /// ([`simulator::Simulator::bring_up`]).
    pub fresh: Option<String>,
}

/// Whether and how the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Simulate {
    /// No simulator: the clusters keep the seeded fixture state (what most tests want).
    #[default]
    Off,
    /// Simulated time follows the wall clock times `speed`, with demo commits now and then.
    RealTime,
    /// Simulated time only moves when a test calls [`simulator::Simulator::advance`]; it starts at
    /// [`simulator::MANUAL_EPOCH`], so two runs with the same seed see the same world.
    Manual,
}

impl Options {
    /// Defaults: loopback on a free port, no metrics, seed 42, no simulation, speed 1, no scale.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            metrics: false,
            seed: 42,
            simulate: Simulate::Off,
            speed: 1.0,
            scale: None,
            scale_runs: scale::PIPELINE_RUNS,
            epoch: None,
            pace: simulator::Pace::default(),
            prod_clusters: 1,
            fresh: None,
        }
    }
}

/// An Argo CD instance the sandbox serves, as Tower's configuration lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgoCdInstance {
    /// Its name (`argocd`, `argocd-us`), also the path it is served under.
    pub name: String,
    /// Its API's base URL (`http://127.0.0.1:8181/argocd`).
    pub url: String,
    /// The workload clusters it deploys to; empty: every cluster no other instance names.
    pub clusters: Vec<String>,
}

/// An Argo CD instance and what it serves.
struct ServedArgoCd {
    name: String,
    clusters: Vec<String>,
    server: argocd::ArgoCd,
}

/// A running sandbox: the clusters' Kubernetes APIs, Argo CD, the forge and metrics on one loopback listener.
pub struct Sandbox {
    timeline: world::Timeline,
    topology: topology::Topology,
    clusters: Clusters,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
    ticker: tokio::task::JoinHandle<()>,
    repositories: git::Repositories,
    forge: forge::Forge,
    /// The main Argo CD, at `/argocd`.
    argocd: argocd::ArgoCd,
    /// Every Argo CD instance, the main one first.
    argocds: Vec<ServedArgoCd>,
    metrics: Option<metrics::Metrics>,
    logs: loki::LogStore,
    simulator: Option<simulator::Simulator>,
    /// Runs the real-time simulator; dropping it stops the loop.
    _simulation: Option<simulator::Running>,
    /// Owns the children (Prometheus) and the temporary root holding the repositories and their data.
    /// Last, so it drops after everything that uses them.
    supervisor: supervisor::Supervisor,
}

impl Sandbox {
    /// Builds the repositories, seeds the clusters and starts serving on `listen`, without metrics.
    pub async fn start(listen: SocketAddr) -> anyhow::Result<Self> {
        Self::start_with(Options::new(listen)).await
    }

    /// Starts a sandbox as `options` say.
    pub async fn start_with(options: Options) -> anyhow::Result<Self> {
        let topology = topology::Topology::with_prod_clusters(options.prod_clusters)?;
        if let Some(fresh) = &options.fresh
            && topology.workload_cluster(fresh).is_none()
        {
            let names: Vec<&str> = topology
                .workload_clusters()
                .iter()
                .map(|cluster| cluster.name.as_str())
                .collect();
            anyhow::bail!(
                "only a workload cluster can come up fresh ({}), not `{fresh}`",
                names.join(", ")
            );
        }
        let supervisor = supervisor::Supervisor::new()?;
        let clock = match options.simulate {
            Simulate::Manual => simulator::Clock::manual(simulator::MANUAL_EPOCH),
            Simulate::Off | Simulate::RealTime => simulator::Clock::real_from(
                options.epoch.unwrap_or_else(jiff::Timestamp::now),
                options.speed,
            ),
        };
        // The one start every part of the world is laid out from (whole seconds, as Kubernetes writes
        // timestamps): the history ends just before it.
        let timeline = world::Timeline::ending_at(clock.now());
        let base = timeline.start();
        let repositories = git::Repositories::builder()
            .root(supervisor.folder("git")?)
            .timeline(timeline)
            .topology(topology.clone())
            .build()
            .context("building the git repositories")?;
        let clusters = Clusters::new(&topology.cluster_names(), platform_types());
        fixtures::seed_at(&clusters, &topology, repositories.histories(), base)
            .context("seeding the fixtures")?;
        let management = clusters
            .cluster(topology::MANAGEMENT)
            .context("the management cluster is always defined")?;
        if let Some(fresh) = &options.fresh {
            let apps = fixtures::argocd::fresh_cluster(&management, fresh, base)
                .with_context(|| format!("making {fresh} fresh"))?;
            tracing::info!(
                cluster = fresh,
                applications = apps.len(),
                "a cluster comes up from nothing"
            );
        }
        if let Some(count) = options.scale {
            let started = std::time::Instant::now();
            scale::seed(&clusters, &topology, count, options.scale_runs, base)
                .context("seeding scale mode")?;
            tracing::info!(
                services = count,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "scale mode seeded"
            );
        }

        let forge = forge::Forge::new(repositories.clone(), forge::ForgeConfig::default())
            .context("starting the forge")?;
        let argocds = argo_cd_instances(&clusters, &topology)?;
        let argocd = argocds
            .first()
            .map(|main| main.server.clone())
            .context("the main Argo CD is always defined")?;
        let metrics = if options.metrics {
            Some(
                metrics::Metrics::start(options.seed, base, &world::SERVICES, &supervisor)
                    .await
                    .context("starting metrics")?,
            )
        } else {
            None
        };

        // Every cluster's deleted pods leave their lines here, labelled with the cluster.
        let logs = loki::LogStore::default();
        for name in topology.cluster_names() {
            if let Some(cluster) = clusters.cluster(name) {
                let store = logs.clone();
                let label = name.to_owned();
                cluster.on_pod_logs_removed(std::sync::Arc::new(move |namespace, pod, lines| {
                    store.keep(&label, namespace, pod, lines);
                }));
            }
        }

        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .with_context(|| format!("binding the sandbox to {}", options.listen))?;
        let addr = listener.local_addr().context("sandbox listener address")?;
        // Webhook payloads carry API URLs, and no request tells the forge where it is reached before one.
        forge.set_api_url(format!("http://{addr}/github"));
        let simulator = match options.simulate {
            Simulate::Off => None,
            Simulate::RealTime | Simulate::Manual => Some(simulator::Simulator::new(
                simulator::World {
                    clusters: clusters.clone(),
                    topology: topology.clone(),
                    repositories: repositories.clone(),
                    forge: forge.clone(),
                },
                clock,
                options.seed,
            )),
        };
        if let (Some(simulator), Some(fresh)) = (&simulator, &options.fresh) {
            simulator.bring_up(fresh);
        }
        let mut router = clusters
            .router()
            .merge(clusters.control_router())
            .merge(simulator::control::router(
                management.clone(),
                simulator.clone(),
            ))
            .nest("/github", forge::router(forge.clone()))
            .merge(forge::sandbox_routes(forge.clone()))
            .nest("/loki", logs.router());
        for instance in &argocds {
            router = router.nest(&format!("/{}", instance.name), instance.server.router());
        }
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "sandbox server stopped");
            }
        });
        let ticker = forge.spawn_ticker();
        let simulation = match (&simulator, options.simulate) {
            (Some(simulator), Simulate::RealTime) => {
                simulator.start_demo(options.pace);
                Some(simulator.spawn())
            }
            _ => None,
        };
        Ok(Self {
            timeline,
            topology,
            clusters,
            addr,
            server,
            ticker,
            repositories,
            forge,
            argocd,
            argocds,
            metrics,
            logs,
            simulator,
            _simulation: simulation,
            supervisor,
        })
    }

    /// The timeline the world was laid out from: its start is the sandbox's "now" at startup, and
    /// `timeline().bad_deploy()` says which service's error ratio jumps, where and when (Argo CD's
    /// `deployedAt` of that deploy).
    pub fn timeline(&self) -> world::Timeline {
        self.timeline
    }

    /// The sandbox's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The Kubernetes API base URL of `cluster` (`management`, `dev`, `prod` or `prod-eu`…).
    pub fn cluster_url(&self, cluster: &str) -> String {
        format!("http://{}/clusters/{cluster}", self.addr)
    }

    /// The workload clusters as `(environment, cluster)`, environment by environment: `("prod", "prod")`
    /// with one prod cluster, `("prod", "prod-eu")` and `("prod", "prod-us")` with two.
    pub fn workload_clusters(&self) -> Vec<(String, String)> {
        self.topology
            .workload_clusters()
            .iter()
            .map(|cluster| (cluster.environment.to_owned(), cluster.name.clone()))
            .collect()
    }

    /// Which clusters this sandbox runs.
    pub fn topology(&self) -> &topology::Topology {
        &self.topology
    }

    /// Direct access to a cluster's objects, for the simulator and tests.
    pub fn cluster(&self, name: &str) -> Option<ClusterStore> {
        self.clusters.cluster(name)
    }

    /// The git repositories behind the forge.
    pub fn repositories(&self) -> &git::Repositories {
        &self.repositories
    }

    /// The forge.
    pub fn forge(&self) -> &forge::Forge {
        &self.forge
    }

    /// The main Argo CD, at `/argocd`: with one prod cluster the only one.
    pub fn argocd(&self) -> &argocd::ArgoCd {
        &self.argocd
    }

    /// Every Argo CD instance, the main one first, with the clusters each deploys to.
    pub fn argocd_instances(&self) -> Vec<ArgoCdInstance> {
        self.argocds
            .iter()
            .map(|instance| ArgoCdInstance {
                name: instance.name.clone(),
                url: format!("{}/{}", self.url(), instance.name),
                clusters: instance.clusters.clone(),
            })
            .collect()
    }

    /// The Argo CD instance named `name` (`argocd`, `argocd-us`), to read its sync requests.
    pub fn argocd_named(&self, name: &str) -> Option<&argocd::ArgoCd> {
        self.argocds
            .iter()
            .find(|instance| instance.name == name)
            .map(|instance| &instance.server)
    }

    /// The simulator, when the sandbox runs one (tests drive its manual clock and push commits).
    pub fn simulator(&self) -> Option<&simulator::Simulator> {
        self.simulator.as_ref()
    }

    /// The temporary root holding everything this sandbox wrote; removed when it drops.
    pub fn temp_root(&self) -> &std::path::Path {
        self.supervisor.root()
    }

    /// The base URL of the Loki-compatible log store: Loki's API lives under its `/loki/api/v1/`.
    pub fn loki_url(&self) -> String {
        self.url()
    }

    /// The log store keeping deleted pods' lines.
    pub fn log_store(&self) -> &loki::LogStore {
        &self.logs
    }

    /// The Prometheus API base (Mimir's path), when metrics run.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics.as_ref().map(metrics::Metrics::base_url)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.server.abort();
        self.ticker.abort();
    }
}

/// The Argo CD instances `topology` plans, the main one first, each holding the Applications of the clusters
/// it deploys to: the named ones, or, for the instance naming none, every cluster no other names.
fn argo_cd_instances(
    clusters: &Clusters,
    topology: &topology::Topology,
) -> anyhow::Result<Vec<ServedArgoCd>> {
    let plans = topology.argocd_instances();
    // The instance naming no cluster serves every cluster the others do not name.
    let named_clusters: BTreeSet<String> = plans
        .iter()
        .flat_map(|plan| plan.clusters.iter().cloned())
        .collect();
    let mut instances = Vec::new();
    for plan in plans {
        let scope = if !plan.clusters.is_empty() {
            argocd::Scope::Only(plan.clusters.iter().cloned().collect())
        } else if named_clusters.is_empty() {
            argocd::Scope::Everything
        } else {
            argocd::Scope::AllBut(named_clusters.clone())
        };
        let destinations: BTreeMap<String, ClusterStore> = topology
            .workload_clusters()
            .iter()
            .filter(|cluster| scope.deploys_to(Some(&cluster.name)))
            .filter_map(|cluster| {
                clusters
                    .cluster(&cluster.name)
                    .map(|store| (cluster.name.clone(), store))
            })
            .collect();
        let management = clusters
            .cluster(topology::MANAGEMENT)
            .context("the management cluster is always defined")?;
        instances.push(ServedArgoCd {
            server: argocd::ArgoCd::scoped(management, destinations, ARGOCD_TOKEN, scope),
            name: plan.name,
            clusters: plan.clusters,
        });
    }
    Ok(instances)
}

/// Every kind the sandbox's clusters serve besides the apiserver's built-ins.
fn platform_types() -> Vec<ResourceType> {
    let mut types = fixtures::resource_types();
    types.push(argocd::application_type());
    types
}
