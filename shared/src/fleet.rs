//! The fleet as the browser sees it: services and the live deltas that keep them current, and the pure logic
//! of the pages that show it.

pub mod cards;
pub mod dependency_graph;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod overview;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One service of the platform, as listed on the Overview. Built from its `Component`, with one cell per
/// environment from its deployment cards.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServiceSummary {
    /// The Component's name, which is the service's name everywhere on the platform.
    pub name: String,
    /// The team that owns it (`spec.owner`).
    pub owner: String,
    /// What it does, in a sentence.
    pub description: String,
    /// Its source repository, `org/name`.
    pub repository: String,
    /// The scaffold template it was created from, `name@version`.
    pub template: String,
    /// Services it calls.
    pub depends_on: Vec<String>,
    /// One cell per environment the service runs in, in environment order.
    #[serde(default)]
    pub environments: Vec<EnvironmentCell>,
    /// What the repository's `catalog-info.yaml` says, once read.
    #[serde(default)]
    pub catalog: Option<CatalogInfo>,
    /// Where the service stands in the catalog: found, missing its file, not onboarded, or not read yet.
    #[serde(default)]
    pub catalog_state: CatalogState,
}

/// How a service relates to the catalog (`catalog-info.yaml` in its repository) and to the platform (its
/// `Component`). Services are the union of both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatalogState {
    /// The organisation has not been scanned yet, or the file could not be read: nothing to say.
    #[default]
    Unread,
    /// A Component whose repository has a `catalog-info.yaml`: the normal case.
    Found,
    /// A Component whose repository has no `catalog-info.yaml` (a warning on its page).
    Missing,
    /// A repository with a `catalog-info.yaml` and no Component: in the catalog, not on the platform yet.
    /// It has no environments; its page offers Onboard.
    NotOnboarded,
}

/// The parts of a service's `catalog-info.yaml` (Backstage format) Tower shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CatalogInfo {
    /// `spec.type`, e.g. `service`.
    pub kind: Option<String>,
    /// `spec.lifecycle`, e.g. `production`.
    pub lifecycle: Option<String>,
    /// `spec.system`.
    pub system: Option<String>,
    /// `metadata.tags`.
    pub tags: Vec<String>,
    /// `metadata.links`.
    pub links: Vec<CatalogLink>,
    /// `metadata.name`.
    #[serde(default)]
    pub name: Option<String>,
    /// `metadata.description`.
    #[serde(default)]
    pub description: Option<String>,
    /// `spec.owner` without its `group:` prefix.
    #[serde(default)]
    pub owner: Option<String>,
    /// Who is on call, from the on-call annotation (`pagerduty.com/service-id`, `opsgenie.com/team`, …) as
    /// `(provider, value)`.
    #[serde(default)]
    pub on_call: Option<CatalogAnnotation>,
    /// The annotations Tower knows the meaning of (source location, TechDocs, on-call, project slug), in file
    /// order; others are not shown.
    #[serde(default)]
    pub annotations: Vec<CatalogAnnotation>,
}

/// One annotation of `catalog-info.yaml` Tower shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CatalogAnnotation {
    /// The key, e.g. `backstage.io/techdocs-ref`.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// A link from `catalog-info.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CatalogLink {
    /// Its title.
    pub title: String,
    /// Where it goes.
    pub url: String,
}

/// A service in one environment, at a glance: the Overview matrix cell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EnvironmentCell {
    /// `dev`, `prod`, …
    pub environment: String,
    /// The version running (short commit), if known.
    pub version: Option<String>,
    /// Argo CD sync status.
    pub sync: SyncStatus,
    /// Argo CD health.
    pub health: Health,
    /// Whether what runs differs from what the Release asks for, or the app is out of sync.
    pub drift: bool,
    /// When the environment's cluster became unreachable (RFC 3339), if it is; with several clusters, when
    /// the first of those unreachable became so.
    pub unreachable_since: Option<String>,
    /// With several clusters in the environment, the ones unreachable (by name), so the cell can say which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable_clusters: Vec<String>,
    /// What else is wrong beyond sync and health, each its own chip and fleet count.
    #[serde(default)]
    pub problems: Vec<CellProblem>,
}

/// A problem of a service in one environment that Argo CD's sync and health do not show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellProblem {
    /// An ExternalSecret has not refreshed within its interval (or is not ready).
    StaleSecret,
    /// A Crossplane claim or one of its composed resources is not ready or not synced.
    CompositionError,
    /// The code running ships a migration the database does not have.
    SchemaBehind,
    /// A schema check of the environment's database failed.
    SchemaCheckFailed,
}

impl CellProblem {
    /// Every problem, in the order chips and counts show them.
    pub const ALL: [CellProblem; 4] = [
        CellProblem::StaleSecret,
        CellProblem::CompositionError,
        CellProblem::SchemaBehind,
        CellProblem::SchemaCheckFailed,
    ];

    /// As the URL and `data-` attributes spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            CellProblem::StaleSecret => "stale-secret",
            CellProblem::CompositionError => "composition-error",
            CellProblem::SchemaBehind => "schema-behind",
            CellProblem::SchemaCheckFailed => "schema-check-failed",
        }
    }

    /// The chip's words.
    pub fn label(self) -> &'static str {
        match self {
            CellProblem::StaleSecret => "Stale secret",
            CellProblem::CompositionError => "Composition error",
            CellProblem::SchemaBehind => "Schema behind",
            CellProblem::SchemaCheckFailed => "Schema check failed",
        }
    }
}

/// Argo CD's sync status vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum SyncStatus {
    /// Live state matches the target revision.
    Synced,
    /// Live state differs from the target.
    OutOfSync,
    /// Not known (no Application, or Argo CD could not tell).
    #[default]
    Unknown,
}

/// Argo CD's health vocabulary.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
pub enum Health {
    /// All good.
    Healthy,
    /// Rolling out or starting.
    Progressing,
    /// Paused on purpose (e.g. a canary pause).
    Suspended,
    /// Failing.
    Degraded,
    /// Expected but absent.
    Missing,
    /// Not known.
    #[default]
    Unknown,
}

impl SyncStatus {
    /// Parses Argo CD's string.
    pub fn parse(value: &str) -> Self {
        match value {
            "Synced" => SyncStatus::Synced,
            "OutOfSync" => SyncStatus::OutOfSync,
            _ => SyncStatus::Unknown,
        }
    }

    /// How bad it is, for showing the worst of several clusters: out of sync beats not knowing.
    pub fn severity(self) -> u8 {
        match self {
            SyncStatus::Synced => 0,
            SyncStatus::Unknown => 1,
            SyncStatus::OutOfSync => 2,
        }
    }

    /// The word shown beside its colour.
    pub fn label(self) -> &'static str {
        match self {
            SyncStatus::Synced => "Synced",
            SyncStatus::OutOfSync => "OutOfSync",
            SyncStatus::Unknown => "Unknown",
        }
    }
}

impl Health {
    /// Parses Argo CD's (and Argo Rollouts') string.
    pub fn parse(value: &str) -> Self {
        match value {
            "Healthy" => Health::Healthy,
            "Progressing" => Health::Progressing,
            "Suspended" | "Paused" => Health::Suspended,
            "Degraded" => Health::Degraded,
            "Missing" => Health::Missing,
            _ => Health::Unknown,
        }
    }

    /// How bad it is, for showing the worst of several clusters: a failure beats anything unknown or
    /// under way.
    pub fn severity(self) -> u8 {
        match self {
            Health::Healthy => 0,
            Health::Suspended => 1,
            Health::Progressing => 2,
            Health::Unknown => 3,
            Health::Missing => 4,
            Health::Degraded => 5,
        }
    }

    /// The word shown beside its colour.
    pub fn label(self) -> &'static str {
        match self {
            Health::Healthy => "Healthy",
            Health::Progressing => "Progressing",
            Health::Suspended => "Suspended",
            Health::Degraded => "Degraded",
            Health::Missing => "Missing",
            Health::Unknown => "Unknown",
        }
    }
}

/// Where the server's knowledge of one cluster stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SourceState {
    /// The first list has not completed yet.
    Syncing,
    /// Watching and current.
    Connected,
    /// Listing again after a gap (values shown may be behind).
    Relisting,
    /// Cannot be reached.
    Unreachable {
        /// Since when (RFC 3339).
        since: String,
        /// What failed, for the UI.
        reason: String,
    },
}

/// One cluster's connection, as the UI shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStatus {
    /// The cluster's name.
    pub cluster: String,
    /// Its environment (none for the management cluster).
    pub environment: Option<String>,
    /// Where it stands.
    pub state: SourceState,
}

/// Everything Tower shows about a service in one environment: the deployment card.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentCard {
    /// The service.
    pub service: String,
    /// The environment.
    pub environment: String,
    /// When the environment's cluster became unreachable, if it is: the card's data is then as of that time.
    /// With several clusters, the earliest of those unreachable ([`DeploymentCard::clusters`] says which).
    pub unreachable_since: Option<String>,
    /// Each workload cluster running the environment, by name: one for most environments, several when it
    /// spans regions. The card's other fields gather all of them; these say how each stands.
    #[serde(default)]
    pub clusters: Vec<ClusterView>,
    /// What the Release asks for.
    pub release: Option<ReleaseView>,
    /// The version the pods run (short commit), if they agree on one.
    pub running_version: Option<String>,
    /// The version that ran before, from Argo CD's history.
    pub previous_version: Option<String>,
    /// Commits between the previous and the running version, newest first.
    pub changes: Vec<CommitView>,
    /// Argo CD's view.
    pub application: Option<ApplicationView>,
    /// The Argo Rollout, when the service rolls out with one.
    pub rollout: Option<RolloutView>,
    /// Pods, by name.
    pub pods: Vec<PodView>,
    /// The database schema against the code, when the service has a database here.
    pub schema: Option<SchemaView>,
    /// External Secrets.
    pub secrets: Vec<SecretView>,
    /// Crossplane claims.
    pub cloud_resources: Vec<CloudResourceView>,
    /// Plain Deployments beside the Rollout (a worker, say), by name.
    #[serde(default)]
    pub deployments: Vec<WorkloadView>,
    /// The most recent Warning events in the service's namespace here, newest first, at most
    /// [`EVENTS_SHOWN`].
    #[serde(default)]
    pub events: Vec<EventView>,
    /// The pipeline run that built the version it runs (or, before a pod runs, the version its Release asks
    /// for), when Tower has that run in memory: the card links its version to the run page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::pipelines::RunRef>,
    /// The Release's own Application (`taskapp-platform` applies each Release as-is), found by label: whether
    /// the Release itself is applied, apart from whether what it asks for runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_application: Option<crate::platform::ResourceApplication>,
}

impl DeploymentCard {
    /// The card of `service` in `environment` before anything about it is known.
    pub fn empty(service: &str, environment: &str) -> Self {
        Self {
            service: service.into(),
            environment: environment.into(),
            ..Self::default()
        }
    }
}

/// How many Warning events a card carries: the newest few say what is wrong; the rest is `kubectl`'s job.
pub const EVENTS_SHOWN: usize = 5;

/// The Release's spec, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseView {
    /// The build's commit (short).
    pub version: String,
    /// `repository:tag`.
    pub image: String,
    /// The chart's revision (pinned to the same commit).
    pub chart_revision: String,
    /// Dev follows every green build of main.
    pub auto_deploy: bool,
    /// Bound databases.
    pub databases: Vec<String>,
}

/// A commit of the service repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitView {
    /// Short id.
    pub sha: String,
    /// First line of the message.
    pub message: String,
    /// Author login or name.
    pub author: String,
    /// RFC 3339.
    pub at: String,
}

/// Argo CD's state of the service's Application here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplicationView {
    /// The Application's name.
    pub name: String,
    /// Sync status.
    pub sync: SyncStatus,
    /// The revision it is synced (or syncing) to.
    pub revision: Option<String>,
    /// Health.
    pub health: Health,
    /// Health message, if any.
    pub health_message: Option<String>,
    /// The last (or current) sync operation.
    pub operation: Option<OperationView>,
    /// Public URLs (`status.summary.externalURLs`).
    pub external_urls: Vec<String>,
    /// When Argo CD last compared live and target state (RFC 3339).
    pub reconciled_at: Option<String>,
}

/// A sync operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationView {
    /// `Running`, `Succeeded`, `Failed`, `Error`, `Terminating`.
    pub phase: String,
    /// Argo CD's message.
    pub message: Option<String>,
    /// RFC 3339.
    pub started_at: Option<String>,
    /// RFC 3339.
    pub finished_at: Option<String>,
}

/// One step of a canary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RolloutStep {
    /// Send this percentage of traffic to the canary.
    SetWeight {
        /// Percent.
        weight: u32,
    },
    /// Wait, for a duration or until promoted.
    Pause {
        /// e.g. `30s`; none means until someone promotes.
        duration: Option<String>,
    },
    /// Anything else (analysis, experiments).
    Other {
        /// The step's kind.
        name: String,
    },
}

/// An Argo Rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutView {
    /// Its name.
    pub name: String,
    /// `Healthy`, `Progressing`, `Paused`, `Degraded`.
    pub phase: String,
    /// The controller's message.
    pub message: Option<String>,
    /// The canary steps.
    pub steps: Vec<RolloutStep>,
    /// Index of the current step; equal to the step count when done.
    pub current_step: Option<usize>,
    /// Desired replicas.
    pub replicas: u32,
    /// Ready replicas.
    pub ready_replicas: u32,
    /// Replicas on the new version.
    pub updated_replicas: u32,
}

/// A pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodView {
    /// Its name.
    pub name: String,
    /// The cluster it runs on (its logs are read there).
    #[serde(default)]
    pub cluster: String,
    /// `Running`, `Pending`, …
    pub phase: String,
    /// All containers ready.
    pub ready: bool,
    /// Restarts summed over containers.
    pub restarts: u32,
    /// The main container's image.
    pub image: String,
    /// Why a container is waiting (`CrashLoopBackOff`, `ImagePullBackOff`), if one is.
    pub waiting_reason: Option<String>,
    /// Containers, for the log panel.
    pub containers: Vec<String>,
    /// RFC 3339.
    pub started_at: Option<String>,
}

/// How one service stands on one of its environment's clusters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterView {
    /// The cluster's name (`prod-eu`).
    pub name: String,
    /// When Tower lost the cluster (RFC 3339), if it has: what follows is as of then.
    pub unreachable_since: Option<String>,
    /// The version its pods run (short commit), if they agree on one.
    pub running_version: Option<String>,
    /// The Argo CD Application deploying the service there, by name.
    pub application: Option<String>,
    /// That Application's sync status.
    pub sync: SyncStatus,
    /// That Application's health.
    pub health: Health,
    /// Pods ready there.
    pub pods_ready: u32,
    /// Pods there.
    pub pods_total: u32,
    /// Kinds Tower's role on the cluster may not list (`Rollout`): the card lacks them there, and says so
    /// rather than showing nothing where they would be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden_kinds: Vec<String>,
}

/// The database schema compared with the code that runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaView {
    /// The database.
    pub database: String,
    /// Schema version applied to the database.
    pub applied_version: Option<String>,
    /// The newest migration in the running code, as a version.
    pub code_version: Option<String>,
    /// Migrations the code ships that the database does not have.
    pub missing_migrations: Vec<String>,
    /// Whether the database is behind the code.
    pub behind: bool,
    /// The failed check's name, when applying failed (its database error is owner-only, see the databases tab).
    pub failed_check: Option<String>,
}

/// An External Secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretView {
    /// Its name.
    pub name: String,
    /// Ready condition.
    pub ready: bool,
    /// Last refresh (RFC 3339).
    pub refreshed_at: Option<String>,
    /// e.g. `1h0m0s`.
    pub refresh_interval: Option<String>,
    /// Last refresh older than the interval.
    pub stale: bool,
    /// The provider's message when not ready.
    pub message: Option<String>,
}

/// A Crossplane claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudResourceView {
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Ready condition.
    pub ready: bool,
    /// Synced condition.
    pub synced: bool,
    /// The failing condition's message (a composition error), if any.
    pub message: Option<String>,
    /// The managed resources composed for it, by kind then name: a claim is only as ready as these, and
    /// the cloud provider's error is on them, not on the claim.
    #[serde(default)]
    pub composed: Vec<ComposedResourceView>,
}

/// A managed resource a claim's composite composed (e.g. an RDS `Instance`), cluster-scoped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComposedResourceView {
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Ready condition: the external resource exists and is available.
    pub ready: bool,
    /// Synced condition: the provider's last reconcile with the cloud API succeeded.
    pub synced: bool,
    /// The failing condition's message (the provider's error), if any.
    pub message: Option<String>,
}

/// A Kubernetes Deployment of the service (`apps/v1`), for workloads that do not roll out with Argo Rollouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadView {
    /// Its name.
    pub name: String,
    /// Desired replicas (`spec.replicas`).
    pub replicas: u32,
    /// Replicas whose pods are ready.
    pub ready_replicas: u32,
    /// Replicas on the current pod template.
    pub updated_replicas: u32,
    /// Replicas available for at least `minReadySeconds`.
    pub available_replicas: u32,
    /// The controller's message while a new ReplicaSet is rolling out (`Progressing` for a reason other
    /// than having finished).
    pub progressing: Option<String>,
    /// What failed, from the conditions: the progress deadline passed, a replica could not be created, or
    /// too few replicas are available.
    pub problem: Option<String>,
}

/// A Warning event about one of the service's objects (`core/v1` Event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventView {
    /// Machine-readable reason, e.g. `BackOff`.
    pub reason: String,
    /// What the reporting component said.
    pub message: String,
    /// The kind of the object it is about, e.g. `Pod`.
    pub object_kind: String,
    /// That object's name.
    pub object_name: String,
    /// How many times it happened.
    pub count: u32,
    /// When it last happened (RFC 3339), if the event says.
    pub last_seen: Option<String>,
}

/// A service with all its cards: `GET /api/v1/services/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceDetail {
    /// The summary.
    pub summary: ServiceSummary,
    /// One card per environment, in environment order.
    pub cards: Vec<DeploymentCard>,
}

/// Something that happened, for the Overview's activity feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityItem {
    /// RFC 3339.
    pub at: String,
    /// The service.
    pub service: String,
    /// The environment, when it concerns one.
    pub environment: Option<String>,
    /// What kind of thing.
    pub kind: ActivityKind,
    /// A sentence.
    pub message: String,
    /// Where to read more: an absolute URL outside Tower (a pull request's page), or a path inside Tower's
    /// app starting with `/` (a run page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// Kinds of activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    /// A new version started rolling out.
    Deploy,
    /// Argo CD synced.
    Sync,
    /// A pipeline run failed.
    PipelineFailed,
    /// A pull request was merged.
    PullRequestMerged,
    /// An application became degraded.
    Degraded,
    /// A service level objective started burning its error budget too fast.
    SloBurning,
}

/// A typed delta on the event stream (`GET /api/v1/events`), applied by the browser to its signals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// Events live for one send; keeping cards inline keeps the wire type and its users simple.
#[allow(clippy::large_enum_variant)]
pub enum FleetEvent {
    /// The whole set of services and cluster states, sent first on every (re)connection so the client never
    /// works from a partial picture.
    Snapshot {
        /// Every service, by name.
        services: Vec<ServiceSummary>,
        /// Every cluster's connection.
        #[serde(default)]
        sources: Vec<SourceStatus>,
        /// The platform's own Applications by standing.
        #[serde(default)]
        platform: crate::platform::StandingCounts,
    },
    /// A service appeared or changed.
    ServiceUpserted {
        /// Its new summary.
        service: ServiceSummary,
    },
    /// A service went away.
    ServiceRemoved {
        /// Its name.
        name: String,
    },
    /// A deployment card changed.
    CardUpdated {
        /// The card as it is now.
        card: DeploymentCard,
    },
    /// A cluster's connection changed.
    SourceChanged {
        /// The cluster's state.
        source: SourceStatus,
    },
    /// Something happened.
    Activity {
        /// What.
        item: ActivityItem,
    },
    /// A pipeline run appeared or changed (a task started or finished).
    PipelineRunUpdated {
        /// The run as it is now.
        run: crate::pipelines::PipelineRunSummary,
    },
    /// One of Tower's pull requests changed (opened, a check or review arrived, merged, closed): sent when
    /// the forge's webhook says so, or the slow backup poll notices.
    PullRequestUpdated {
        /// The pull request as it is now.
        pull: crate::delivery::PullRequestView,
    },
    /// The GitOps repository's main moved: release records (and the Releases page) are stale.
    ReleasesChanged,
    /// One of the platform's own Applications changed (a component's version bump, a sync, a resource's
    /// Application): the Platform page reads `/platform` again; the counts are the Overview's.
    PlatformChanged {
        /// The platform's Applications by standing, now.
        counts: crate::platform::StandingCounts,
    },
    /// A pipeline run went away (pruned, or dropped from Tower's bounded history).
    PipelineRunRemoved {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl FleetEvent {
    /// Reads one event as the server serializes it; `None` for a kind this build does not know (a newer
    /// server), so the stream goes on rather than fails.
    ///
    /// It goes through one flat envelope: deriving through serde's internally tagged enum would buffer every
    /// event and compile a second deserializer for every type inside it, which costs the browser's first
    /// load tens of kilobytes. The tests round-trip every variant through the derived serializer.
    pub fn decode(text: &str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Envelope {
            #[serde(rename = "type")]
            kind: String,
            services: Option<Vec<ServiceSummary>>,
            sources: Option<Vec<SourceStatus>>,
            service: Option<ServiceSummary>,
            name: Option<String>,
            card: Option<DeploymentCard>,
            source: Option<SourceStatus>,
            item: Option<ActivityItem>,
            run: Option<crate::pipelines::PipelineRunSummary>,
            namespace: Option<String>,
            pull: Option<crate::delivery::PullRequestView>,
            platform: Option<crate::platform::StandingCounts>,
            counts: Option<crate::platform::StandingCounts>,
        }
        let e: Envelope = serde_json::from_str(text).ok()?;
        Some(match e.kind.as_str() {
            "snapshot" => FleetEvent::Snapshot {
                services: e.services?,
                sources: e.sources.unwrap_or_default(),
                platform: e.platform.unwrap_or_default(),
            },
            "service_upserted" => FleetEvent::ServiceUpserted {
                service: e.service?,
            },
            "service_removed" => FleetEvent::ServiceRemoved { name: e.name? },
            "card_updated" => FleetEvent::CardUpdated { card: e.card? },
            "source_changed" => FleetEvent::SourceChanged { source: e.source? },
            "activity" => FleetEvent::Activity { item: e.item? },
            "pipeline_run_updated" => FleetEvent::PipelineRunUpdated { run: e.run? },
            "pipeline_run_removed" => FleetEvent::PipelineRunRemoved {
                namespace: e.namespace?,
                name: e.name?,
            },
            "pull_request_updated" => FleetEvent::PullRequestUpdated { pull: e.pull? },
            "releases_changed" => FleetEvent::ReleasesChanged,
            "platform_changed" => FleetEvent::PlatformChanged { counts: e.counts? },
            _ => return None,
        })
    }
}

/// How a 503 from a Tower still building its first picture of the fleet begins (see [`loading_message`]).
const LOADING: &str = "Loading the fleet: ";

/// What a Tower that has just started answers for the service list until its first picture is complete:
/// how many services are in (of how many Components there are), or that it is still listing them.
pub fn loading_message(progress: Option<(usize, usize)>) -> String {
    match progress {
        Some((loaded, total)) => format!(
            "{LOADING}{} of {} services loaded.",
            group_thousands(loaded),
            group_thousands(total)
        ),
        None => format!("{LOADING}listing services."),
    }
}

/// Whether `error` is a Tower still loading the fleet ([`loading_message`]) rather than one that failed.
pub fn is_loading(error: &crate::ApiError) -> bool {
    error.code == crate::ErrorCode::Unavailable && error.message.starts_with(LOADING)
}

/// `6200` as `6,200`.
fn group_thousands(number: usize) -> String {
    let digits = number.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// The fleet as a client holds it: services by name, kept current by applying [`FleetEvent`]s, each with
/// the text a search looks in, lowercased once when the service arrives rather than on every keystroke (at
/// ten thousand services, lowercasing them all per keystroke is what a search would spend its time on).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fleet {
    services: BTreeMap<String, Listed>,
}

/// A service and its search text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    summary: ServiceSummary,
    /// Name, owner and description, lowercased, apart so that no match spans two of them.
    search_text: String,
}

impl Listed {
    fn new(summary: ServiceSummary) -> Self {
        let search_text = format!(
            "{}\n{}\n{}",
            summary.name, summary.owner, summary.description
        )
        .to_lowercase();
        Self {
            summary,
            search_text,
        }
    }
}

/// What a search looks for: `query` trimmed and lowercased, `None` when that leaves nothing.
pub fn search_needle(query: &str) -> Option<String> {
    let needle = query.trim().to_lowercase();
    (!needle.is_empty()).then_some(needle)
}

impl Fleet {
    /// A fleet holding exactly `services`.
    pub fn from_services(services: impl IntoIterator<Item = ServiceSummary>) -> Self {
        Self {
            services: services
                .into_iter()
                .map(|s| (s.name.clone(), Listed::new(s)))
                .collect(),
        }
    }

    /// Applies one delta; applying the same delta twice is harmless.
    pub fn apply(&mut self, event: FleetEvent) {
        match event {
            FleetEvent::Snapshot { services, .. } => *self = Self::from_services(services),
            FleetEvent::ServiceUpserted { service } => {
                self.services
                    .insert(service.name.clone(), Listed::new(service));
            }
            FleetEvent::ServiceRemoved { name } => {
                self.services.remove(&name);
            }
            // Cards, sources, activity and runs are kept by the pages that show them.
            FleetEvent::CardUpdated { .. }
            | FleetEvent::SourceChanged { .. }
            | FleetEvent::Activity { .. }
            | FleetEvent::PipelineRunUpdated { .. }
            | FleetEvent::PipelineRunRemoved { .. }
            | FleetEvent::PullRequestUpdated { .. }
            | FleetEvent::ReleasesChanged
            | FleetEvent::PlatformChanged { .. } => {}
        }
    }

    /// Services in name order.
    pub fn services(&self) -> impl Iterator<Item = &ServiceSummary> {
        self.services.values().map(|listed| &listed.summary)
    }

    /// Services in name order, each with its lowercased search text (see [`search_needle`]).
    pub fn searchable(&self) -> impl Iterator<Item = (&ServiceSummary, &str)> {
        self.services
            .values()
            .map(|listed| (&listed.summary, listed.search_text.as_str()))
    }

    /// One service by name.
    pub fn service(&self, name: &str) -> Option<&ServiceSummary> {
        self.services.get(name).map(|listed| &listed.summary)
    }

    /// How many services there are.
    pub fn len(&self) -> usize {
        self.services.len()
    }

    /// How many distinct teams own the services.
    pub fn team_count(&self) -> usize {
        self.services()
            .map(|s| s.owner.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starting_tower_says_how_far_its_first_picture_has_got() {
        assert_eq!(
            loading_message(Some((6_200, 10_000))),
            "Loading the fleet: 6,200 of 10,000 services loaded."
        );
        assert_eq!(
            loading_message(Some((0, 999))),
            "Loading the fleet: 0 of 999 services loaded."
        );
        assert_eq!(
            loading_message(Some((1_234_567, 1_000_000_000))),
            "Loading the fleet: 1,234,567 of 1,000,000,000 services loaded."
        );
        assert_eq!(
            loading_message(None),
            "Loading the fleet: listing services."
        );
        let starting = crate::ApiError::new(crate::ErrorCode::Unavailable, loading_message(None));
        assert!(is_loading(&starting));
        let down = crate::ApiError::new(
            crate::ErrorCode::Unavailable,
            "Tower could not be reached (network).",
        );
        assert!(
            !is_loading(&down),
            "a Tower that cannot be reached is an error, not progress"
        );
    }

    #[test]
    fn a_snapshot_replaces_whatever_the_client_held() {
        let mut fleet = Fleet::from_services([service("old", "a")]);
        fleet.apply(FleetEvent::Snapshot {
            services: vec![service("payments", "payments"), service("checkout", "shop")],
            sources: vec![],
            platform: Default::default(),
        });
        let names: Vec<_> = fleet.services().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["checkout", "payments"]);
    }

    #[test]
    fn upserts_add_and_change_services_and_removals_drop_them() {
        let mut fleet = Fleet::default();
        fleet.apply(FleetEvent::ServiceUpserted {
            service: service("payments", "payments"),
        });
        fleet.apply(FleetEvent::ServiceUpserted {
            service: service("payments", "billing"),
        });
        assert_eq!(fleet.len(), 1);
        assert_eq!(
            fleet.service("payments").map(|s| s.owner.as_str()),
            Some("billing")
        );
        fleet.apply(FleetEvent::ServiceRemoved {
            name: "payments".into(),
        });
        assert!(fleet.is_empty());
        // A removal of something unknown (a duplicate delivery) changes nothing.
        fleet.apply(FleetEvent::ServiceRemoved {
            name: "payments".into(),
        });
        assert!(fleet.is_empty());
    }

    fn service(name: &str, owner: &str) -> ServiceSummary {
        fixtures::service(name, owner, vec![])
    }

    /// One event of every kind. The match makes a new variant fail to compile here until it has a sample.
    fn one_of_each() -> Vec<FleetEvent> {
        let source = SourceStatus {
            cluster: "prod".into(),
            environment: Some("prod".into()),
            state: SourceState::Unreachable {
                since: "2026-01-01T00:00:00Z".into(),
                reason: "connection refused".into(),
            },
        };
        let events = vec![
            FleetEvent::Snapshot {
                services: vec![service("payments", "payments")],
                sources: vec![source.clone()],
                platform: crate::platform::StandingCounts {
                    healthy: 30,
                    waiting: 2,
                    ..Default::default()
                },
            },
            FleetEvent::ServiceUpserted {
                service: service("ledger", "payments"),
            },
            FleetEvent::ServiceRemoved {
                name: "refunds".into(),
            },
            FleetEvent::CardUpdated {
                card: DeploymentCard {
                    running_version: Some("abc1234".into()),
                    ..DeploymentCard::empty("payments", "dev")
                },
            },
            FleetEvent::SourceChanged { source },
            FleetEvent::Activity {
                item: ActivityItem {
                    at: "2026-01-01T00:00:00Z".into(),
                    service: "payments".into(),
                    environment: Some("prod".into()),
                    kind: ActivityKind::PullRequestMerged,
                    message: "Promote payments to prod merged".into(),
                    link: Some("https://forge.test/acme/pull/1".into()),
                },
            },
            FleetEvent::PipelineRunUpdated {
                run: crate::pipelines::PipelineRunSummary {
                    namespace: "tekton-ci".into(),
                    name: "payments-build-abc1234".into(),
                    service: "payments".into(),
                    pipeline: Some("service-build".into()),
                    status: crate::pipelines::RunStatus::Running,
                    reason: Some("Running".into()),
                    commit: Some("abc1234".into()),
                    message: Some("Tidy logging".into()),
                    branch: Some("main".into()),
                    trigger: "github-push".into(),
                    author: Some("ada".into()),
                    created_at: "2026-01-01T00:00:00Z".into(),
                    started_at: Some("2026-01-01T00:00:01Z".into()),
                    finished_at: None,
                    tasks: crate::pipelines::TaskCounts {
                        total: 6,
                        succeeded: 1,
                        running: 1,
                        ..Default::default()
                    },
                },
            },
            FleetEvent::PipelineRunRemoved {
                namespace: "tekton-ci".into(),
                name: "payments-build-abc1234".into(),
            },
            FleetEvent::PullRequestUpdated {
                pull: crate::delivery::PullRequestView {
                    number: 7,
                    url: "https://github.example/acme/application-repositories/pull/7".into(),
                    branch: "tower/promote/payments".into(),
                    title: "Promote payments to prod".into(),
                    state: crate::delivery::PullState::Open,
                    checks: vec![],
                    ci: crate::delivery::CiState::None,
                    mergeable: Some(true),
                    reused: false,
                    intent: None,
                    service: Some("payments".into()),
                    environment: Some("prod".into()),
                    author: "tower[bot]".into(),
                    created_at: "2026-12-02T10:00:00Z".into(),
                    merged_at: None,
                    labels: vec![],
                    reviews: vec![crate::delivery::ReviewView {
                        reviewer: "grace".into(),
                        state: crate::delivery::ReviewState::Approved,
                        at: Some("2026-12-02T10:01:00Z".into()),
                    }],
                    blockers: vec![],
                },
            },
            FleetEvent::ReleasesChanged,
            FleetEvent::PlatformChanged {
                counts: crate::platform::StandingCounts {
                    failing: 1,
                    ..Default::default()
                },
            },
        ];
        for event in &events {
            match event {
                FleetEvent::Snapshot { .. }
                | FleetEvent::ServiceUpserted { .. }
                | FleetEvent::ServiceRemoved { .. }
                | FleetEvent::CardUpdated { .. }
                | FleetEvent::SourceChanged { .. }
                | FleetEvent::Activity { .. }
                | FleetEvent::PipelineRunUpdated { .. }
                | FleetEvent::PipelineRunRemoved { .. }
                | FleetEvent::PullRequestUpdated { .. }
                | FleetEvent::ReleasesChanged
                | FleetEvent::PlatformChanged { .. } => {}
            }
        }
        events
    }

    #[test]
    fn every_event_the_server_sends_decodes_to_itself() {
        let events = one_of_each();
        let kinds: std::collections::HashSet<_> =
            events.iter().map(std::mem::discriminant).collect();
        assert_eq!(kinds.len(), 11, "one sample per variant");
        for event in events {
            let wire = serde_json::to_string(&event).unwrap_or_default();
            assert_eq!(FleetEvent::decode(&wire), Some(event), "{wire}");
        }
    }

    #[test]
    fn a_snapshot_without_sources_and_an_unknown_kind_are_tolerated() {
        assert_eq!(
            FleetEvent::decode(r#"{"type":"snapshot","services":[]}"#),
            Some(FleetEvent::Snapshot {
                services: vec![],
                sources: vec![],
                platform: Default::default(),
            })
        );
        assert_eq!(FleetEvent::decode(r#"{"type":"metrics_updated"}"#), None);
        assert_eq!(FleetEvent::decode(r#"{"type":"service_removed"}"#), None);
        assert_eq!(FleetEvent::decode("not json"), None);
    }

    #[test]
    fn events_have_a_stable_wire_shape() {
        let json = serde_json::to_value(FleetEvent::ServiceRemoved { name: "x".into() }).ok();
        assert_eq!(
            json,
            Some(serde_json::json!({"type": "service_removed", "name": "x"}))
        );
    }
}

/// A database of a service, for the Databases tab: `GET /api/v1/services/{name}/databases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseView {
    /// The database's name.
    pub name: String,
    /// Its environment.
    pub environment: String,
    /// `small`, `medium`, `large`.
    pub size: String,
    /// `postgres`.
    #[serde(default)]
    pub engine: String,
    /// Accepts connections.
    pub available: bool,
    /// `host:port`, when available.
    pub endpoint: Option<String>,
    /// Schema version applied.
    pub applied_version: Option<String>,
    /// The newest schema version in the code running in this environment.
    pub code_version: Option<String>,
    /// Whether the database has the newest schema.
    pub up_to_date: bool,
    /// Components bound to it.
    pub bound_components: Vec<String>,
    /// The schema operator's checks.
    pub checks: Vec<SchemaCheckView>,
    /// The Database's own Application, found by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<crate::platform::ResourceApplication>,
    /// Its DatabaseSchema's own Application, found by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_application: Option<crate::platform::ResourceApplication>,
}

/// One check of applying a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaCheckView {
    /// e.g. `migrate 0004_add_refund_reference.sql`.
    pub name: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed`.
    pub state: String,
    /// The database's error text: only sent to the service's owners.
    pub error: Option<String>,
    /// True when there is an error text the requester may not see.
    pub error_hidden: bool,
}

/// A workload cluster and the environment it runs: `GET /api/v1/environments` (an environment spanning
/// several clusters has an entry per cluster).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentView {
    /// `dev`, `prod`.
    pub name: String,
    /// The workload cluster's connection.
    pub source: SourceStatus,
}

/// Body of `POST /api/v1/services/{name}/environments/{env}/sync`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncRequest {
    /// Force: replace resources that cannot be patched.
    #[serde(default)]
    pub force: bool,
}

/// Answer to a sync request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncResponse {
    /// The Application synced; with several clusters in the environment, each one's name, comma-separated.
    pub application: String,
    /// What Argo CD said (each instance asked, one after the other).
    pub message: String,
}
