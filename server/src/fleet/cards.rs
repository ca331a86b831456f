//! Deployment cards from the objects the watch caches hold. Pure functions over upstream shapes (Argo CD
//! Applications, Argo Rollouts, Pods, Deployments, Events, External Secrets, Crossplane claims and the
//! managed resources composed for them, platform resources), so every rule a user sees — drift, stale secrets, a schema behind its code — is tested here
//! without a cluster.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event;
use kube::ResourceExt as _;
use kube::api::DynamicObject;
use serde_json::Value;
use shared::crd::{DatabaseSchema, Release};
use shared::fleet::{
    ActivityItem, ActivityKind, ApplicationView, CellProblem, CloudResourceView, ClusterView,
    CommitView, ComposedResourceView, DeploymentCard, EVENTS_SHOWN, EnvironmentCell, EventView,
    Health, OperationView, PodView, ReleaseView, RolloutStep, RolloutView, SchemaView, SecretView,
    SyncStatus, WorkloadView,
};

use super::application::Application;
use super::external_secret::ExternalSecret;
use super::pod::Pod;
use super::rollout::{Rollout, Step};

/// Everything known about one service in one environment.
#[derive(Debug, Default)]
pub struct CardInputs<'a> {
    /// The service.
    pub service: &'a str,
    /// The environment.
    pub environment: &'a str,
    /// Its Release here.
    pub release: Option<&'a Release>,
    /// Its Argo CD Applications here (`argoproj.io/v1alpha1`), one per cluster of the environment.
    pub applications: Vec<&'a Application>,
    /// The environment's workload clusters, in configuration order.
    pub clusters: Vec<ClusterInput<'a>>,
    /// Its Argo Rollout.
    pub rollout: Option<&'a Rollout>,
    /// Its pods, each with the cluster it runs on.
    pub pods: Vec<(&'a str, &'a Pod)>,
    /// The DatabaseSchema of its bound database here.
    pub schema: Option<&'a DatabaseSchema>,
    /// Its External Secrets.
    pub secrets: Vec<&'a ExternalSecret>,
    /// Its Crossplane claims.
    pub claims: Vec<&'a DynamicObject>,
    /// Managed resources composed for claims in its namespace; each shows under the claim it was composed
    /// for (by Crossplane's claim labels), the others nowhere.
    pub composed: Vec<&'a DynamicObject>,
    /// Its plain Deployments.
    pub deployments: Vec<&'a Deployment>,
    /// The events in its namespace here (only Warnings are shown).
    pub events: Vec<&'a Event>,
    /// Commits between the previous and the running version, when fetched.
    pub changes: Vec<CommitView>,
    /// Migration files in the running version's code, when fetched.
    pub migrations_in_code: Option<Vec<String>>,
    /// Now, for staleness.
    pub now: Option<jiff::Timestamp>,
}

/// One workload cluster of a card's environment.
#[derive(Debug, Default)]
pub struct ClusterInput<'a> {
    /// Its name in the configuration.
    pub name: &'a str,
    /// Since when it is unreachable, if it is.
    pub unreachable_since: Option<String>,
    /// Kinds Tower's role there may not list.
    pub forbidden_kinds: Vec<String>,
}

fn text<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
}

fn list<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The condition of `kind` in `status.conditions`, as (status == "True", message).
fn condition(object: &Value, kind: &str) -> Option<(bool, Option<String>)> {
    list(object, &["status", "conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == Some(kind))
        .map(|c| {
            (
                text(c, &["status"]) == Some("True"),
                text(c, &["message"]).map(str::to_string),
            )
        })
}

/// The short (7-hex) form of a commit id, which versions and image tags use.
pub fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

/// The tag of an image reference (`repo:tag`), ignoring a digest.
pub fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last_segment = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last_segment.split_once(':').map(|(_, tag)| tag)
}

/// Parses a Go duration (`1h0m0s`, `30s`, `2m`) into seconds.
pub fn go_duration_seconds(text: &str) -> Option<i64> {
    let mut total = 0i64;
    let mut digits = String::new();
    for ch in text.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
            continue;
        }
        let value: i64 = digits.parse().ok()?;
        digits.clear();
        total += value
            * match ch {
                'h' => 3600,
                'm' => 60,
                's' => 1,
                _ => return None,
            };
    }
    digits.is_empty().then_some(total)
}

fn release_view(release: &Release) -> ReleaseView {
    let spec = &release.spec;
    ReleaseView {
        version: spec.version.clone(),
        image: format!("{}:{}", spec.image.repository, spec.image.tag),
        chart_revision: spec.chart.revision.clone(),
        auto_deploy: spec.auto_deploy,
        databases: spec.databases.iter().map(|b| b.database.clone()).collect(),
    }
}

fn name_of<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// An Application's sync status and health.
fn standing(app: &Application) -> (SyncStatus, Health) {
    (
        SyncStatus::parse(app.status.sync.status.as_deref().unwrap_or_default()),
        Health::parse(app.status.health.status.as_deref().unwrap_or_default()),
    )
}

pub(crate) fn application_view(app: &Application) -> ApplicationView {
    let status = &app.status;
    let operation = status.operation_state.as_ref().map(|op| OperationView {
        phase: op.phase.clone().unwrap_or_else(|| "Unknown".into()),
        message: op.message.clone(),
        started_at: op.started_at.clone(),
        finished_at: op.finished_at.clone(),
    });
    let (sync, health) = standing(app);
    ApplicationView {
        name: app.name(),
        sync,
        revision: status.sync.revision.clone(),
        health,
        health_message: status.health.message.clone(),
        operation,
        external_urls: status.summary.external_urls.clone(),
        reconciled_at: status.reconciled_at.clone(),
    }
}

/// The version that ran before the current one: the newest history entry with another revision.
pub fn previous_version(app: &Application) -> Option<String> {
    let history = &app.status.history;
    let current = history.last().and_then(|h| h.revision.as_deref())?;
    history
        .iter()
        .rev()
        .filter_map(|h| h.revision.as_deref())
        .find(|revision| *revision != current)
        .map(short)
}

/// One deploy Argo CD remembers: a history entry whose revision differs from the one before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deploy<'a> {
    /// `deployedAt`, RFC 3339.
    pub at: &'a str,
    /// The revision deployed (full).
    pub revision: &'a str,
    /// The revision it replaced, when history has one.
    pub previous: Option<&'a str>,
}

/// The deploys in an Application's `status.history`, oldest first; re-syncs of the same revision are not
/// deploys.
pub fn deploys(app: &Application) -> Vec<Deploy<'_>> {
    let mut deploys = Vec::new();
    let mut before: Option<&str> = None;
    for entry in &app.status.history {
        let (Some(revision), Some(at)) = (entry.revision.as_deref(), entry.deployed_at.as_deref())
        else {
            continue;
        };
        if before == Some(revision) {
            continue;
        }
        deploys.push(Deploy {
            at,
            revision,
            previous: before,
        });
        before = Some(revision);
    }
    deploys
}

/// The deploys Argo CD remembers for a service's Application (`status.history`), oldest first, as
/// activity: what the Overview's feed starts with, so it is not empty until something happens.
pub fn deploy_history(app: &Application, service: &str, environment: &str) -> Vec<ActivityItem> {
    deploys(app)
        .into_iter()
        .map(|deploy| ActivityItem {
            at: deploy.at.to_string(),
            service: service.to_string(),
            environment: Some(environment.to_string()),
            kind: ActivityKind::Deploy,
            // The feed's row names the service and environment already.
            message: match deploy.previous {
                Some(previous) => format!(
                    "now runs {} (was {})",
                    short(deploy.revision),
                    short(previous)
                ),
                None => format!("deployed {}", short(deploy.revision)),
            },
            link: None,
        })
        .collect()
}

pub(crate) fn rollout_view(rollout: &Rollout) -> RolloutView {
    let steps = rollout
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.canary.as_ref())
        .map(|canary| canary.steps.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|step| match step {
            Step::SetWeight(weight) => RolloutStep::SetWeight {
                weight: u32::try_from(*weight).unwrap_or_default(),
            },
            Step::Pause(duration) => RolloutStep::Pause {
                duration: duration.as_ref().map(|d| match d {
                    Value::String(s) => s.clone(),
                    other => format!("{other}s"),
                }),
            },
            Step::Other(name) => RolloutStep::Other { name: name.clone() },
        })
        .collect();
    let count = |n: Option<i64>| u32::try_from(n.unwrap_or_default()).unwrap_or_default();
    let status = &rollout.status;
    RolloutView {
        name: rollout.metadata.name.clone().unwrap_or_default(),
        phase: status.phase.as_deref().unwrap_or("Unknown").to_string(),
        message: status.message.clone(),
        steps,
        current_step: status
            .current_step_index
            .and_then(|i| usize::try_from(i).ok()),
        replicas: count(rollout.spec.replicas).max(count(status.replicas)),
        ready_replicas: count(status.ready_replicas),
        updated_replicas: count(status.updated_replicas),
    }
}

pub(crate) fn pod_view(cluster: &str, pod: &Pod) -> PodView {
    let status = pod.status.as_ref();
    let containers = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    PodView {
        name: pod.metadata.name.clone().unwrap_or_default(),
        cluster: cluster.to_string(),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".into()),
        ready: !containers.is_empty() && containers.iter().all(|c| c.ready),
        restarts: containers
            .iter()
            .map(|c| u32::try_from(c.restart_count).unwrap_or_default())
            .sum(),
        image: pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default(),
        waiting_reason: containers
            .iter()
            .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone()),
        containers: pod
            .spec
            .as_ref()
            .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default(),
        started_at: status
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0.to_string()),
    }
}

/// The version the pods run, when they all run the same image tag.
fn running_version<'a>(pods: impl IntoIterator<Item = &'a PodView>) -> Option<String> {
    let mut tags = pods.into_iter().filter_map(|p| image_tag(&p.image));
    let first = tags.next()?;
    tags.all(|t| t == first).then(|| first.to_string())
}

/// The schema version of a migration file (`0004_add_x.sql` → `0004`).
pub fn migration_version(file: &str) -> &str {
    file.split('_').next().unwrap_or(file)
}

fn schema_view(schema: &DatabaseSchema, migrations_in_code: Option<&[String]>) -> SchemaView {
    let status = schema.status.as_ref();
    let applied = status.and_then(|s| s.applied_version.clone());
    let code_version = migrations_in_code
        .and_then(|m| m.iter().map(|f| migration_version(f)).max())
        .map(str::to_string);
    let missing: Vec<String> = migrations_in_code
        .unwrap_or_default()
        .iter()
        .filter(|f| applied.as_deref().is_none_or(|a| migration_version(f) > a))
        .cloned()
        .collect();
    SchemaView {
        database: schema.spec.database.clone(),
        applied_version: applied,
        code_version,
        behind: !missing.is_empty(),
        missing_migrations: missing,
        failed_check: status.and_then(|s| {
            s.checks
                .iter()
                .find(|c| c.state == shared::crd::CheckState::Failed)
                .map(|c| c.name.clone())
        }),
    }
}

pub(crate) fn secret_view(secret: &ExternalSecret, now: Option<jiff::Timestamp>) -> SecretView {
    let (ready, message) = secret
        .condition("Ready")
        .map_or((false, None), |c| (c.status == "True", c.message.clone()));
    let refreshed_at = secret.status.refresh_time.clone();
    let refresh_interval = secret.spec.refresh_interval.clone();
    let stale = match (
        now,
        refreshed_at.as_deref(),
        refresh_interval.as_deref().and_then(go_duration_seconds),
    ) {
        (Some(now), Some(at), Some(interval)) if interval > 0 => at
            .parse::<jiff::Timestamp>()
            .is_ok_and(|at| now.as_second() - at.as_second() > interval),
        _ => false,
    };
    SecretView {
        name: secret.metadata.name.clone().unwrap_or_default(),
        ready,
        refreshed_at,
        refresh_interval,
        stale,
        message: if ready { None } else { message },
    }
}

/// The label Crossplane puts on a composite and everything it composes, naming the claim it serves.
pub const CLAIM_NAME_LABEL: &str = "crossplane.io/claim-name";
/// The label naming that claim's namespace: composed resources are cluster-scoped, so it is what ties them
/// to a service (through the namespace's component label).
pub const CLAIM_NAMESPACE_LABEL: &str = "crossplane.io/claim-namespace";
/// The label naming the composite a resource was composed by.
pub const COMPOSITE_LABEL: &str = "crossplane.io/composite";

/// Crossplane's `Ready` and `Synced` conditions, with the message of the failing one; `Synced` first, since
/// a failed reconcile usually explains why a resource is not ready. A missing condition counts as false.
fn crossplane_conditions(object: &Value) -> (bool, bool, Option<String>) {
    let (ready, ready_message) = condition(object, "Ready").unwrap_or((false, None));
    let (synced, synced_message) = condition(object, "Synced").unwrap_or((false, None));
    let message = if !synced {
        synced_message
    } else if !ready {
        ready_message
    } else {
        None
    };
    (ready, synced, message)
}

fn kind_of(object: &DynamicObject) -> String {
    object
        .types
        .as_ref()
        .map(|t| t.kind.clone())
        .unwrap_or_default()
}

/// Whether `resource` was composed for `claim`: Crossplane labels it with the claim's name and namespace.
/// When the claim names its composite and the resource names the composite that composed it, those must
/// agree too, which tells apart two claims of different kinds that share a name.
fn composed_for(claim: &DynamicObject, resource: &DynamicObject) -> bool {
    let labels = resource.labels();
    let label = |key: &str| labels.get(key).map(String::as_str);
    let (Some(name), Some(namespace)) = (
        claim.metadata.name.as_deref(),
        claim.metadata.namespace.as_deref(),
    ) else {
        return false;
    };
    let composite = text(&claim.data, &["spec", "resourceRef", "name"]);
    label(CLAIM_NAME_LABEL) == Some(name)
        && label(CLAIM_NAMESPACE_LABEL) == Some(namespace)
        && match (composite, label(COMPOSITE_LABEL)) {
            (Some(wanted), Some(actual)) => wanted == actual,
            _ => true,
        }
}

fn composed_view(object: &DynamicObject) -> ComposedResourceView {
    let (ready, synced, message) = crossplane_conditions(&object.data);
    ComposedResourceView {
        kind: kind_of(object),
        name: name_of(object),
        ready,
        synced,
        message,
    }
}

/// A claim with what was composed for it out of `composed`, by kind then name (the cache hands objects over
/// in no particular order, and cards are compared to decide what to send).
fn claim_view(object: &DynamicObject, composed: &[&DynamicObject]) -> CloudResourceView {
    let (ready, synced, message) = crossplane_conditions(&object.data);
    let mut composed: Vec<ComposedResourceView> = composed
        .iter()
        .filter(|resource| composed_for(object, resource))
        .map(|resource| composed_view(resource))
        .collect();
    composed.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    CloudResourceView {
        kind: kind_of(object),
        name: name_of(object),
        ready,
        synced,
        message,
        composed,
    }
}

/// The Deployment condition reasons that mean a rollout has finished rather than is under way.
const SETTLED_REASONS: [&str; 1] = ["NewReplicaSetAvailable"];

fn workload_view(deployment: &Deployment) -> WorkloadView {
    let status = deployment.status.as_ref();
    let conditions = status
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    // The condition of `kind`, when its status is `status`.
    let find = |kind: &str, status: &str| {
        conditions
            .iter()
            .find(|c| c.type_.as_deref() == Some(kind) && c.status.as_deref() == Some(status))
    };
    let message = |c: &k8s_openapi::api::apps::v1::DeploymentCondition| {
        c.message
            .clone()
            .or_else(|| c.reason.clone())
            .unwrap_or_else(|| {
                format!(
                    "{} is {}",
                    c.type_.as_deref().unwrap_or("a condition"),
                    c.status.as_deref().unwrap_or("unknown")
                )
            })
    };
    // The first failure that explains the others: a stuck rollout usually also leaves too few available.
    let problem = find("Progressing", "False")
        .or_else(|| find("ReplicaFailure", "True"))
        .or_else(|| find("Available", "False"))
        .map(message);
    let progressing = find("Progressing", "True")
        .filter(|c| {
            c.reason
                .as_deref()
                .is_none_or(|r| !SETTLED_REASONS.contains(&r))
        })
        .map(message);
    let count = |n: Option<i32>| u32::try_from(n.unwrap_or_default()).unwrap_or_default();
    WorkloadView {
        name: deployment.metadata.name.clone().unwrap_or_default(),
        // The apiserver defaults a missing `spec.replicas` to 1.
        replicas: u32::try_from(deployment.spec.replicas.unwrap_or(1)).unwrap_or_default(),
        ready_replicas: count(status.and_then(|s| s.ready_replicas)),
        updated_replicas: count(status.and_then(|s| s.updated_replicas)),
        available_replicas: count(status.and_then(|s| s.available_replicas)),
        progressing,
        problem,
    }
}

/// When an event last happened: a series' last observation, else the last timestamp, else when it was
/// first recorded (newer reporters fill `eventTime` only).
fn event_last_seen(event: &Event) -> Option<jiff::Timestamp> {
    event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref())
        .map(|t| t.0)
        .or_else(|| event.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The newest Warning events, newest first, at most [`EVENTS_SHOWN`]. Ties are broken on the text so the
/// same events always make the same card (cards are compared to decide what to send).
fn event_views(events: &[&Event]) -> Vec<EventView> {
    let mut warnings: Vec<(Option<jiff::Timestamp>, EventView)> = events
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|event| {
            let at = event_last_seen(event);
            let involved = &event.involved_object;
            let count = event
                .series
                .as_ref()
                .and_then(|s| s.count)
                .or(event.count)
                .unwrap_or(1);
            let view = EventView {
                reason: event.reason.clone().unwrap_or_default(),
                message: event.message.clone().unwrap_or_default(),
                object_kind: involved.kind.clone().unwrap_or_default(),
                object_name: involved.name.clone().unwrap_or_default(),
                count: u32::try_from(count).unwrap_or_default().max(1),
                last_seen: at.map(|t| t.to_string()),
            };
            (at, view)
        })
        .collect();
    warnings.sort_by(|(a_at, a), (b_at, b)| {
        b_at.cmp(a_at).then_with(|| {
            (&a.object_kind, &a.object_name, &a.reason, &a.message).cmp(&(
                &b.object_kind,
                &b.object_name,
                &b.reason,
                &b.message,
            ))
        })
    });
    warnings
        .into_iter()
        .take(EVENTS_SHOWN)
        .map(|(_, view)| view)
        .collect()
}

/// The Argo CD cluster an Application deploys to, by name (`spec.destination.name`).
fn destination_name(application: &Application) -> Option<&str> {
    application.spec.destination_name.as_deref()
}

/// The Application of `applications` deploying to `cluster`: the one naming it as its destination, or, when
/// the environment has this one cluster, the only one there is.
fn application_on<'a>(
    cluster: &str,
    applications: &[&'a Application],
    only_cluster: bool,
) -> Option<&'a Application> {
    applications
        .iter()
        .find(|a| destination_name(a) == Some(cluster))
        .or_else(|| only_cluster.then(|| applications.first()).flatten())
        .copied()
}

/// The Application a card shows (its operation, history and links): with several clusters, the one standing
/// worst, so a failing region is what the card opens on.
pub fn shown_application<'a>(applications: &[&'a Application]) -> Option<&'a Application> {
    applications
        .iter()
        .rev()
        .max_by_key(|a| {
            let (sync, health) = standing(a);
            (health.severity(), sync.severity())
        })
        .copied()
}

/// How the service stands on one cluster of its environment.
fn cluster_view(
    cluster: &ClusterInput<'_>,
    pods: &[PodView],
    applications: &[&Application],
    only_cluster: bool,
) -> ClusterView {
    let here: Vec<&PodView> = pods.iter().filter(|p| p.cluster == cluster.name).collect();
    let application = application_on(cluster.name, applications, only_cluster);
    let (sync, health) = application.map(standing).unwrap_or_default();
    ClusterView {
        name: cluster.name.to_string(),
        unreachable_since: cluster.unreachable_since.clone(),
        running_version: running_version(here.iter().copied()),
        sync,
        health,
        application: application.map(name_of),
        pods_ready: u32::try_from(here.iter().filter(|p| p.ready).count()).unwrap_or(u32::MAX),
        pods_total: u32::try_from(here.len()).unwrap_or(u32::MAX),
        forbidden_kinds: cluster.forbidden_kinds.clone(),
    }
}

/// The card for one service in one environment.
pub fn card(inputs: CardInputs<'_>) -> DeploymentCard {
    let mut pods: Vec<PodView> = inputs
        .pods
        .iter()
        .map(|(cluster, pod)| pod_view(cluster, pod))
        .collect();
    pods.sort_by(|a, b| (&a.name, &a.cluster).cmp(&(&b.name, &b.cluster)));
    let only_cluster = inputs.clusters.len() == 1;
    let clusters: Vec<ClusterView> = inputs
        .clusters
        .iter()
        .map(|cluster| cluster_view(cluster, &pods, &inputs.applications, only_cluster))
        .collect();
    // The card's data is as of the first cluster lost.
    let unreachable_since = clusters
        .iter()
        .filter_map(|c| c.unreachable_since.clone())
        .min();
    let application = shown_application(&inputs.applications);
    let mut secrets: Vec<SecretView> = inputs
        .secrets
        .iter()
        .map(|s| secret_view(s, inputs.now))
        .collect();
    secrets.sort_by(|a, b| a.name.cmp(&b.name));
    let mut cloud_resources: Vec<CloudResourceView> = inputs
        .claims
        .iter()
        .map(|c| claim_view(c, &inputs.composed))
        .collect();
    // Two claim kinds may use the same name.
    cloud_resources.sort_by(|a, b| (&a.name, &a.kind).cmp(&(&b.name, &b.kind)));
    let mut deployments: Vec<WorkloadView> = inputs
        .deployments
        .iter()
        .map(|d| workload_view(d))
        .collect();
    deployments.sort_by(|a, b| a.name.cmp(&b.name));
    DeploymentCard {
        service: inputs.service.to_string(),
        environment: inputs.environment.to_string(),
        unreachable_since,
        clusters,
        release: inputs.release.map(release_view),
        running_version: running_version(&pods),
        previous_version: application.and_then(previous_version),
        changes: inputs.changes,
        application: application.map(application_view),
        rollout: inputs.rollout.map(rollout_view),
        schema: inputs
            .schema
            .map(|s| schema_view(s, inputs.migrations_in_code.as_deref())),
        pods,
        secrets,
        cloud_resources,
        deployments,
        events: event_views(&inputs.events),
        // Filled by the fleet model, which holds the pipeline caches.
        build: None,
        release_application: None,
    }
}

/// The Overview cell summarising a card: with several clusters, the worst of them.
pub fn cell(card: &DeploymentCard) -> EnvironmentCell {
    let deployed: Vec<&ClusterView> = card
        .clusters
        .iter()
        .filter(|c| c.application.is_some())
        .collect();
    let (sync, health) = if deployed.is_empty() {
        card.application
            .as_ref()
            .map(|a| (a.sync, a.health))
            .unwrap_or_default()
    } else {
        (
            deployed
                .iter()
                .map(|c| c.sync)
                .max_by_key(|s| s.severity())
                .unwrap_or_default(),
            deployed
                .iter()
                .map(|c| c.health)
                .max_by_key(|h| h.severity())
                .unwrap_or_default(),
        )
    };
    let wanted = card.release.as_ref().map(|r| r.version.as_str());
    let differs = |running: Option<&str>| matches!((wanted, running), (Some(w), Some(r)) if w != r);
    let version_drift = differs(card.running_version.as_deref())
        || card
            .clusters
            .iter()
            .any(|c| differs(c.running_version.as_deref()));
    let unreachable_clusters = if card.clusters.len() > 1 {
        card.clusters
            .iter()
            .filter(|c| c.unreachable_since.is_some())
            .map(|c| c.name.clone())
            .collect()
    } else {
        Vec::new()
    };
    EnvironmentCell {
        environment: card.environment.clone(),
        version: card
            .running_version
            .clone()
            .or_else(|| wanted.map(str::to_string)),
        sync,
        health,
        drift: version_drift || sync == SyncStatus::OutOfSync,
        unreachable_since: card.unreachable_since.clone(),
        unreachable_clusters,
        problems: problems(card),
    }
}

/// What is wrong in `card` beyond sync and health, in [`CellProblem::ALL`]'s order.
pub fn problems(card: &DeploymentCard) -> Vec<CellProblem> {
    let stale_secret = card.secrets.iter().any(|s| s.stale || !s.ready);
    let composition_error = card.cloud_resources.iter().any(|claim| {
        !claim.ready || !claim.synced || claim.composed.iter().any(|c| !c.ready || !c.synced)
    });
    let schema_behind = card.schema.as_ref().is_some_and(|s| s.behind);
    let schema_check_failed = card
        .schema
        .as_ref()
        .is_some_and(|s| s.failed_check.is_some());
    CellProblem::ALL
        .into_iter()
        .zip([
            stale_secret,
            composition_error,
            schema_behind,
            schema_check_failed,
        ])
        .filter_map(|(problem, present)| present.then_some(problem))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Prod's two clusters, prod-us lost since `us_lost_since` if given.
    fn prod_eu_and_us(us_lost_since: Option<String>) -> Vec<ClusterInput<'static>> {
        vec![
            ClusterInput {
                name: "prod-eu",
                unreachable_since: None,
                forbidden_kinds: Vec::new(),
            },
            ClusterInput {
                name: "prod-us",
                unreachable_since: us_lost_since,
                forbidden_kinds: Vec::new(),
            },
        ]
    }

    /// A Release asking for `version`.
    fn release_asking_for(version: &str) -> ReleaseView {
        ReleaseView {
            version: version.into(),
            image: format!("x:{version}"),
            chart_revision: version.into(),
            auto_deploy: false,
            databases: vec![],
        }
    }

    /// payments' Application on `cluster`, as an ApplicationSet's cluster generator writes it.
    fn application_on_cluster(cluster: &str, sync: &str, health: &str) -> Application {
        application(json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": format!("payments-{cluster}"), "namespace": "argocd"},
            "spec": {"destination": {"name": cluster, "namespace": "payments"}},
            "status": {"sync": {"status": sync}, "health": {"status": health}}
        }))
    }

    fn pod_running(name: &str, tag: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "payments"},
            "spec": {"containers": [{"name": "app", "image": format!("ghcr.io/acme/payments:{tag}")}]},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "app", "ready": ready, "restartCount": 0, "image": "x", "imageID": ""}]}
        }))
        .expect("a pod")
    }

    #[test]
    fn an_environment_on_two_clusters_shows_each_and_its_cell_the_worst() {
        let eu = application_on_cluster("prod-eu", "Synced", "Healthy");
        let us = application_on_cluster("prod-us", "OutOfSync", "Degraded");
        let (eu_pod, us_pod, us_old) = (
            pod_running("payments-a", "9eab324", true),
            pod_running("payments-b", "9eab324", false),
            pod_running("payments-c", "1111111", true),
        );
        let since = "2026-12-04T10:00:00Z".to_string();
        let card = card(CardInputs {
            service: "payments",
            environment: "prod",
            // Listed in the other order: each Application is matched by its destination, not its place.
            applications: vec![&us, &eu],
            clusters: prod_eu_and_us(Some(since.clone())),
            pods: vec![
                ("prod-eu", &eu_pod),
                ("prod-us", &us_pod),
                ("prod-us", &us_old),
            ],
            ..Default::default()
        });
        let [eu_view, us_view] = card.clusters.as_slice() else {
            panic!("two clusters: {:?}", card.clusters);
        };
        assert_eq!(
            (
                eu_view.name.as_str(),
                eu_view.application.as_deref(),
                eu_view.sync,
                eu_view.health
            ),
            (
                "prod-eu",
                Some("payments-prod-eu"),
                SyncStatus::Synced,
                Health::Healthy
            )
        );
        assert_eq!((eu_view.pods_ready, eu_view.pods_total), (1, 1));
        assert_eq!(eu_view.running_version.as_deref(), Some("9eab324"));
        assert!(eu_view.unreachable_since.is_none());
        assert_eq!(us_view.application.as_deref(), Some("payments-prod-us"));
        assert_eq!((us_view.pods_ready, us_view.pods_total), (1, 2));
        assert_eq!(us_view.running_version, None, "its pods disagree");
        assert_eq!(us_view.unreachable_since.as_deref(), Some(since.as_str()));
        // The card opens on the cluster standing worst, and its data is as of the first cluster lost.
        assert_eq!(
            card.application.as_ref().map(|a| a.name.as_str()),
            Some("payments-prod-us")
        );
        assert_eq!(card.unreachable_since.as_deref(), Some(since.as_str()));
        assert_eq!(
            card.pods
                .iter()
                .map(|p| p.cluster.as_str())
                .collect::<Vec<_>>(),
            ["prod-eu", "prod-us", "prod-us"]
        );

        let cell = cell(&card);
        assert_eq!(
            (cell.sync, cell.health),
            (SyncStatus::OutOfSync, Health::Degraded)
        );
        assert_eq!(cell.unreachable_clusters, ["prod-us"]);
        assert!(
            cell.drift,
            "out of sync on one cluster is drift for the environment"
        );
    }

    #[test]
    fn one_cluster_behind_its_release_is_drift_even_when_the_other_matches() {
        let (eu, us) = (
            application_on_cluster("prod-eu", "Synced", "Healthy"),
            application_on_cluster("prod-us", "Synced", "Healthy"),
        );
        let (new, old) = (
            pod_running("a", "bbbbbbb", true),
            pod_running("b", "aaaaaaa", true),
        );
        let mut card = card(CardInputs {
            service: "payments",
            environment: "prod",
            applications: vec![&eu, &us],
            clusters: prod_eu_and_us(None),
            pods: vec![("prod-eu", &new), ("prod-us", &old)],
            ..Default::default()
        });
        card.release = Some(release_asking_for("bbbbbbb"));
        let cell = cell(&card);
        assert!(cell.drift);
        assert!(cell.unreachable_since.is_none() && cell.unreachable_clusters.is_empty());
        assert_eq!(
            (cell.sync, cell.health),
            (SyncStatus::Synced, Health::Healthy)
        );
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration_seconds("1h0m0s"), Some(3600));
        assert_eq!(go_duration_seconds("30s"), Some(30));
        assert_eq!(go_duration_seconds("2m"), Some(120));
        assert_eq!(go_duration_seconds("soon"), None);
    }

    #[test]
    fn image_tags_ignore_registry_ports_and_digests() {
        assert_eq!(image_tag("ghcr.io/acme/payments:9eab324"), Some("9eab324"));
        assert_eq!(image_tag("registry:5000/acme/x:abc@sha256:ff"), Some("abc"));
        assert_eq!(image_tag("registry:5000/acme/x"), None);
    }

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).expect("a Kubernetes object")
    }

    #[test]
    fn a_secret_refreshed_longer_ago_than_its_interval_is_stale() {
        let secret: ExternalSecret = serde_json::from_value(json!({
            "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
            "metadata": {"name": "checkout-app"},
            "spec": {"refreshInterval": "1h0m0s"},
            "status": {"refreshTime": "2026-11-30T04:00:00Z",
                       "conditions": [{"type": "Ready", "status": "False", "message": "AccessDenied"}]}
        }))
        .expect("an ExternalSecret");
        let now: jiff::Timestamp = "2026-11-30T09:00:00Z".parse().expect("time");
        let view = secret_view(&secret, Some(now));
        assert!(view.stale);
        assert!(!view.ready);
        assert_eq!(view.message.as_deref(), Some("AccessDenied"));
        let fresh: jiff::Timestamp = "2026-11-30T04:30:00Z".parse().expect("time");
        assert!(!secret_view(&secret, Some(fresh)).stale);
    }

    #[test]
    fn a_claim_that_cannot_compose_says_why() {
        let claim = object(
            json!({"apiVersion": "database.acme.example/v1alpha1", "kind": "PostgreSQLInstance",
            "metadata": {"name": "catalog"}, "status": {"conditions": [
            {"type": "Synced", "status": "False", "message": "cannot compose resources"},
            {"type": "Ready", "status": "True"}]}}),
        );
        let view = claim_view(&claim, &[]);
        assert!(view.ready && !view.synced);
        assert_eq!(
            (view.kind.as_str(), view.name.as_str()),
            ("PostgreSQLInstance", "catalog")
        );
        assert_eq!(view.message.as_deref(), Some("cannot compose resources"));
    }

    /// A managed resource Crossplane composed for the `payments` claim through composite `composite`.
    fn managed(kind: &str, name: &str, composite: &str, ready: Value) -> DynamicObject {
        object(json!({
            "apiVersion": "rds.aws.upbound.io/v1beta1", "kind": kind,
            "metadata": {"name": name, "labels": {
                CLAIM_NAME_LABEL: "payments", CLAIM_NAMESPACE_LABEL: "payments", COMPOSITE_LABEL: composite}},
            "status": {"conditions": [ready, {"type": "Synced", "status": "True"}]}
        }))
    }

    #[test]
    fn a_claim_lists_what_was_composed_for_it_in_a_stable_order() {
        let claim = object(json!({
            "apiVersion": "database.acme.example/v1alpha1", "kind": "PostgreSQLInstance",
            "metadata": {"name": "payments", "namespace": "payments"},
            "spec": {"resourceRef": {"name": "payments-x7k2p"}},
            "status": {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "True"}]}
        }));
        let ready = json!({"type": "Ready", "status": "True"});
        let instance = managed(
            "Instance",
            "payments-x7k2p-b",
            "payments-x7k2p",
            json!({"type": "Ready", "status": "False", "reason": "Unavailable",
                   "message": "DB instance is not available: storage-full"}),
        );
        let subnets = managed(
            "SubnetGroup",
            "payments-x7k2p-a",
            "payments-x7k2p",
            ready.clone(),
        );
        // Another claim of the same name, in another namespace or through another composite, is not this one.
        let mut elsewhere = managed(
            "Instance",
            "payments-other",
            "payments-x7k2p",
            ready.clone(),
        );
        elsewhere
            .labels_mut()
            .insert(CLAIM_NAMESPACE_LABEL.into(), "shop".into());
        let other_kind = managed("Instance", "payments-bucket", "payments-q9r8s", ready);

        let all = [&subnets, &other_kind, &instance, &elsewhere];
        let view = claim_view(&claim, &all);
        let listed: Vec<_> = view
            .composed
            .iter()
            .map(|c| (c.kind.as_str(), c.name.as_str(), c.ready, c.synced))
            .collect();
        assert_eq!(
            listed,
            [
                ("Instance", "payments-x7k2p-b", false, true),
                ("SubnetGroup", "payments-x7k2p-a", true, true)
            ]
        );
        assert_eq!(
            view.composed[0].message.as_deref(),
            Some("DB instance is not available: storage-full")
        );
        assert_eq!(view.composed[1].message, None);
        // The order does not depend on the order the cache hands them over.
        let reversed = [&elsewhere, &instance, &other_kind, &subnets];
        assert_eq!(claim_view(&claim, &reversed), view);
    }

    fn schema(applied: &str) -> DatabaseSchema {
        let mut schema = DatabaseSchema::new(
            "payments-prod",
            shared::crd::DatabaseSchemaSpec {
                database: "payments".into(),
                environment: "prod".into(),
                version: applied.into(),
                migrations: vec![],
            },
        );
        schema.status = Some(shared::crd::DatabaseSchemaStatus {
            applied_version: Some(applied.into()),
            checks: vec![],
        });
        schema
    }

    #[test]
    fn card_warns_when_code_ships_a_migration_the_database_lacks() {
        let code = vec![
            "0003_index_merchant.sql".to_string(),
            "0004_add_refund_reference.sql".to_string(),
        ];
        let view = schema_view(&schema("0003"), Some(&code));
        assert!(view.behind);
        assert_eq!(view.code_version.as_deref(), Some("0004"));
        assert_eq!(view.missing_migrations, ["0004_add_refund_reference.sql"]);
        assert!(!schema_view(&schema("0004"), Some(&code)).behind);
        // Without the code's migrations nothing is claimed.
        assert!(!schema_view(&schema("0003"), None).behind);
    }

    #[test]
    fn argo_history_becomes_deploys_skipping_resyncs_of_the_same_revision() {
        let app = json!({"status": {"history": [
            {"id": 1, "revision": "aaaaaaa111", "deployedAt": "2026-11-01T10:00:00Z"},
            {"id": 2, "revision": "aaaaaaa111", "deployedAt": "2026-11-02T10:00:00Z"},
            {"id": 3, "revision": "bbbbbbb222", "deployedAt": "2026-11-03T10:00:00Z"},
            {"id": 4, "deployedAt": "2026-11-04T10:00:00Z"},
        ]}});
        let items = deploy_history(&application(app), "cart", "prod");
        let messages: Vec<&str> = items.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(
            messages,
            ["deployed aaaaaaa", "now runs bbbbbbb (was aaaaaaa)"]
        );
        assert_eq!(items[1].at, "2026-11-03T10:00:00Z");
        assert_eq!(items[1].kind, ActivityKind::Deploy);
        assert!(deploy_history(&Application::default(), "cart", "prod").is_empty());
    }

    #[test]
    fn the_previous_version_is_the_last_other_revision_in_history() {
        let app = json!({"status": {"history": [
            {"revision": "aaaaaaaaaa"}, {"revision": "bbbbbbbbbb"}, {"revision": "bbbbbbbbbb"}]}});
        assert_eq!(
            previous_version(&application(app)).as_deref(),
            Some("aaaaaaa")
        );
    }

    fn application(value: Value) -> Application {
        serde_json::from_value(value).expect("an Application")
    }

    fn deployment(value: Value) -> Deployment {
        serde_json::from_value(value).expect("a Deployment")
    }

    #[test]
    fn a_deployment_says_when_its_rollout_is_stuck_and_not_when_it_finished() {
        let settled = deployment(json!({
            "metadata": {"name": "ledger-worker"},
            "spec": {"replicas": 2, "selector": {}, "template": {}},
            "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                     "message": "ReplicaSet \"ledger-worker-1\" has successfully progressed."}]}
        }));
        let view = workload_view(&settled);
        assert_eq!(
            (
                view.replicas,
                view.ready_replicas,
                view.updated_replicas,
                view.available_replicas
            ),
            (2, 2, 2, 2)
        );
        assert_eq!((view.progressing, view.problem), (None, None));

        let stuck = deployment(json!({
            "metadata": {"name": "ledger-worker"},
            "spec": {"selector": {}, "template": {}},
            "status": {"replicas": 2, "updatedReplicas": 1, "conditions": [
                {"type": "Available", "status": "False", "message": "Deployment does not have minimum availability."},
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                 "message": "ReplicaSet \"ledger-worker-2\" has timed out progressing."}]}
        }));
        let view = workload_view(&stuck);
        // A missing spec.replicas is the apiserver's default of one.
        assert_eq!((view.replicas, view.ready_replicas), (1, 0));
        assert_eq!(
            view.problem.as_deref(),
            Some("ReplicaSet \"ledger-worker-2\" has timed out progressing.")
        );
        assert_eq!(view.progressing, None);
    }

    fn event(name: &str, kind: &str, reason: &str, last: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{name}.{reason}"), "namespace": "shop"},
            "involvedObject": {"kind": "Pod", "name": name},
            "reason": reason, "message": format!("{reason} on {name}"), "type": kind,
            "count": 3, "lastTimestamp": last,
        }))
        .expect("an Event")
    }

    #[test]
    fn a_card_keeps_the_newest_warnings_only() {
        let mut events: Vec<Event> = (0..7)
            .map(|n| {
                event(
                    &format!("web-{n}"),
                    "Warning",
                    "BackOff",
                    &format!("2026-11-30T09:0{n}:00Z"),
                )
            })
            .collect();
        events.push(event("web-9", "Normal", "Started", "2026-11-30T10:00:00Z"));
        let refs: Vec<&Event> = events.iter().collect();
        let views = event_views(&refs);
        let names: Vec<_> = views.iter().map(|v| v.object_name.as_str()).collect();
        assert_eq!(names, ["web-6", "web-5", "web-4", "web-3", "web-2"]);
        assert_eq!(views[0].last_seen.as_deref(), Some("2026-11-30T09:06:00Z"));
        assert_eq!((views[0].object_kind.as_str(), views[0].count), ("Pod", 3));
        // The order does not depend on the order the cache hands them over.
        let reversed: Vec<&Event> = events.iter().rev().collect();
        assert_eq!(event_views(&reversed), views);
    }

    #[test]
    fn a_cell_shows_drift_when_pods_do_not_run_what_the_release_asks() {
        let mut card = card(CardInputs {
            service: "payments",
            environment: "prod",
            ..Default::default()
        });
        card.release = Some(release_asking_for("bbbbbbb"));
        card.running_version = Some("aaaaaaa".into());
        assert!(cell(&card).drift);
        card.running_version = Some("bbbbbbb".into());
        assert!(!cell(&card).drift);
    }

    fn secret(stale: bool, ready: bool) -> SecretView {
        SecretView {
            name: "payments-app".into(),
            ready,
            refreshed_at: Some("2026-11-30T04:00:00Z".into()),
            refresh_interval: Some("1h0m0s".into()),
            stale,
            message: None,
        }
    }

    fn claim(ready: bool, synced: bool, composed: Vec<ComposedResourceView>) -> CloudResourceView {
        CloudResourceView {
            kind: "PostgreSQLInstance".into(),
            name: "payments".into(),
            ready,
            synced,
            message: None,
            composed,
        }
    }

    fn composed(ready: bool, synced: bool) -> ComposedResourceView {
        ComposedResourceView {
            kind: "Instance".into(),
            name: "payments-x7k2p".into(),
            ready,
            synced,
            message: None,
        }
    }

    fn schema_state(behind: bool, failed_check: Option<&str>) -> SchemaView {
        SchemaView {
            database: "payments".into(),
            applied_version: Some("0003".into()),
            code_version: Some(if behind { "0004" } else { "0003" }.into()),
            missing_migrations: if behind {
                vec!["0004_add_refund_reference.sql".into()]
            } else {
                vec![]
            },
            behind,
            failed_check: failed_check.map(str::to_string),
        }
    }

    #[test]
    fn a_card_with_fresh_secrets_ready_claims_and_a_current_schema_has_no_problems() {
        let mut card = DeploymentCard::empty("payments", "prod");
        assert_eq!(problems(&card), []);
        card.secrets = vec![secret(false, true)];
        card.cloud_resources = vec![claim(true, true, vec![composed(true, true)])];
        card.schema = Some(schema_state(false, None));
        assert_eq!(problems(&card), []);
        assert_eq!(cell(&card).problems, []);
    }

    #[test]
    fn a_secret_that_is_stale_or_not_ready_is_a_stale_secret() {
        let mut card = DeploymentCard::empty("checkout", "prod");
        card.secrets = vec![secret(false, true), secret(true, true)];
        assert_eq!(problems(&card), [CellProblem::StaleSecret]);
        // A secret that never synced has no refresh to be late for, and is as useless as a stale one.
        card.secrets = vec![secret(false, false)];
        assert_eq!(problems(&card), [CellProblem::StaleSecret]);
    }

    #[test]
    fn a_claim_or_a_resource_composed_for_it_that_is_not_ready_or_not_synced_is_a_composition_error()
     {
        let mut card = DeploymentCard::empty("catalog", "dev");
        for (claim_ready, claim_synced) in [(false, true), (true, false)] {
            card.cloud_resources = vec![claim(claim_ready, claim_synced, vec![])];
            assert_eq!(problems(&card), [CellProblem::CompositionError]);
        }
        // The claim says it is fine, but the cloud provider's error is on what it composed.
        for (ready, synced) in [(false, true), (true, false)] {
            card.cloud_resources = vec![claim(
                true,
                true,
                vec![composed(true, true), composed(ready, synced)],
            )];
            assert_eq!(problems(&card), [CellProblem::CompositionError]);
        }
    }

    #[test]
    fn a_schema_behind_the_code_and_a_failed_check_are_problems_of_their_own() {
        let mut card = DeploymentCard::empty("payments", "prod");
        card.schema = Some(schema_state(true, None));
        assert_eq!(problems(&card), [CellProblem::SchemaBehind]);
        card.schema = Some(schema_state(
            false,
            Some("migrate 0004_add_refund_reference"),
        ));
        assert_eq!(problems(&card), [CellProblem::SchemaCheckFailed]);
        card.schema = Some(schema_state(
            true,
            Some("migrate 0004_add_refund_reference"),
        ));
        assert_eq!(
            problems(&card),
            [CellProblem::SchemaBehind, CellProblem::SchemaCheckFailed]
        );
    }

    #[test]
    fn every_problem_at_once_comes_in_the_order_chips_show_them() {
        let mut card = DeploymentCard::empty("payments", "prod");
        // Listed in reverse order of `CellProblem::ALL` on the card.
        card.schema = Some(schema_state(
            true,
            Some("migrate 0004_add_refund_reference"),
        ));
        card.cloud_resources = vec![claim(false, false, vec![])];
        card.secrets = vec![secret(true, false)];
        assert_eq!(problems(&card), CellProblem::ALL);
        assert_eq!(cell(&card).problems, CellProblem::ALL);
    }

    #[test]
    fn a_failed_check_of_the_database_schema_reaches_the_cell() {
        let mut failing = schema("0003");
        failing.status = Some(shared::crd::DatabaseSchemaStatus {
            applied_version: Some("0003".into()),
            checks: vec![
                shared::crd::SchemaCheck {
                    name: "migrate 0003_index_merchant".into(),
                    state: shared::crd::CheckState::Succeeded,
                    error: None,
                },
                shared::crd::SchemaCheck {
                    name: "migrate 0004_add_refund_reference".into(),
                    state: shared::crd::CheckState::Failed,
                    error: Some("ERROR: column \"refund_id\" already exists".into()),
                },
            ],
        });
        let failed = card(CardInputs {
            service: "payments",
            environment: "prod",
            schema: Some(&failing),
            ..Default::default()
        });
        assert_eq!(cell(&failed).problems, [CellProblem::SchemaCheckFailed]);
        // Pending and running checks are not failures.
        let mut applying = failing.clone();
        if let Some(status) = applying.status.as_mut() {
            status.checks[1].state = shared::crd::CheckState::Running;
            status.checks[1].error = None;
        }
        let running = card(CardInputs {
            service: "payments",
            environment: "prod",
            schema: Some(&applying),
            ..Default::default()
        });
        assert_eq!(cell(&running).problems, []);
    }
}
