//! A believable platform in the sandbox's clusters: eight services owned by three teams, running in dev
//! and prod (on every prod cluster alike when prod spans several, see [`crate::topology`]), with the
//! situations a portal must show (a crash loop, a stale secret, a database behind the code, a Crossplane
//! composition error, failed and skipped CI tasks, an out-of-sync Application).
//!
//! Every object is built by a pure function of the plan ([`crate::world`]), the service histories and a base
//! time, so the simulator can rebuild any of them as the world moves on. Shapes follow the upstream CRDs and
//! examples in `sandbox/tests/reference/` (Argo CD, Argo Rollouts, External Secrets `v1`, Crossplane, Tekton
//! `v1`, Pyrra);
//! `sandbox/tests/fixtures.rs` validates every object against them.
//!
//! - [`platform`]: Components, Releases, Databases and DatabaseSchemas with their operators' statuses.
//! - [`argocd`]: ApplicationSets, the Applications they generate, AppProjects and cluster secrets.
//! - [`workloads`]: namespaces, Rollouts, Deployments, ReplicaSets, Pods, Services, Events and pod logs.
//! - [`secrets`]: ExternalSecrets and their ClusterSecretStore.
//! - [`crossplane`]: the PostgreSQL XRD and Composition, claims, composites and managed resources.
//! - [`tekton`]: the `service-build` Pipeline, its Tasks, and a PipelineRun with TaskRuns per commit.
//! - [`slo`]: Pyrra ServiceLevelObjectives, one burning fast, one slowly, the rest healthy.

pub mod argocd;
pub mod crossplane;
pub mod platform;
pub mod secrets;
pub mod slo;
pub mod tekton;
pub mod workloads;

use std::collections::BTreeMap;

use anyhow::Context as _;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::apiserver::{ClusterStore, Clusters, ResourceType};
use crate::topology::{MANAGEMENT, Topology, WorkloadCluster};
use crate::world::{
    self, ARGOCD_NAMESPACE, CI_NAMESPACE, Commit, DAY, Histories, MINUTE, PLATFORM_NAMESPACE,
    ServicePlan, Timeline,
};

/// Every kind the fixtures use beyond the apiserver's built-in core and apps types, at the version the
/// upstream CRDs in `shared/reference/` serve as their storage version.
pub fn resource_types() -> Vec<ResourceType> {
    use k8s_openapi::api::core::v1::Secret;
    use shared::crd::{Component, Database, DatabaseSchema, Release};
    vec![
        ResourceType::of::<Secret>(true),
        ResourceType::of::<Component>(true),
        ResourceType::of::<Release>(true),
        ResourceType::of::<Database>(true),
        ResourceType::of::<DatabaseSchema>(true),
        custom(
            "argoproj.io",
            "v1alpha1",
            "Application",
            "applications",
            true,
        ),
        custom(
            "argoproj.io",
            "v1alpha1",
            "ApplicationSet",
            "applicationsets",
            true,
        ),
        custom("argoproj.io", "v1alpha1", "AppProject", "appprojects", true),
        custom("argoproj.io", "v1alpha1", "Rollout", "rollouts", true),
        custom(
            "external-secrets.io",
            "v1",
            "ExternalSecret",
            "externalsecrets",
            true,
        ),
        custom(
            "external-secrets.io",
            "v1",
            "SecretStore",
            "secretstores",
            true,
        ),
        custom(
            "external-secrets.io",
            "v1",
            "ClusterSecretStore",
            "clustersecretstores",
            false,
        ),
        custom(
            "apiextensions.crossplane.io",
            "v1",
            "CompositeResourceDefinition",
            "compositeresourcedefinitions",
            false,
        ),
        custom(
            "apiextensions.crossplane.io",
            "v1",
            "Composition",
            "compositions",
            false,
        ),
        custom(
            crossplane::GROUP,
            crossplane::VERSION,
            crossplane::CLAIM_KIND,
            "postgresqlinstances",
            true,
        ),
        custom(
            crossplane::GROUP,
            crossplane::VERSION,
            crossplane::COMPOSITE_KIND,
            "xpostgresqlinstances",
            false,
        ),
        custom(
            crossplane::RDS_GROUP,
            crossplane::RDS_VERSION,
            "Instance",
            "instances",
            false,
        ),
        custom(
            crossplane::RDS_GROUP,
            crossplane::RDS_VERSION,
            "SubnetGroup",
            "subnetgroups",
            false,
        ),
        custom("tekton.dev", "v1", "Task", "tasks", true),
        custom("tekton.dev", "v1", "Pipeline", "pipelines", true),
        custom("tekton.dev", "v1", "PipelineRun", "pipelineruns", true),
        custom("tekton.dev", "v1", "TaskRun", "taskruns", true),
        slo::resource_type(),
    ]
}

fn custom(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
    }
}

/// Seeds the management cluster and one workload cluster per environment with objects that look minutes to
/// days old as of now.
pub fn seed(clusters: &Clusters, histories: &Histories) -> anyhow::Result<()> {
    // Whole seconds, as Kubernetes writes timestamps.
    let now = Timestamp::now();
    let base = Timestamp::from_second(now.as_second()).unwrap_or(now);
    seed_at(clusters, &Topology::default(), histories, base)
}

/// Seeds the management cluster and every workload cluster of `topology` with objects whose timestamps are
/// relative to `base`. Every cluster of an environment gets that environment's workloads: two prod
/// clusters run the same services at the same commits, each deployed by its own Application.
pub fn seed_at(
    clusters: &Clusters,
    topology: &Topology,
    histories: &Histories,
    base: Timestamp,
) -> anyhow::Result<()> {
    let management = clusters
        .cluster(MANAGEMENT)
        .context("the management cluster is always defined")?;
    apply_all(
        &management,
        management_objects_for(topology, histories, base),
    )
    .context("seeding the management cluster")?;
    management.set_log_generator(tekton::step_logs::generator(tekton::long_log_run(
        histories,
    )));
    for workload in topology.workload_clusters() {
        let name = &workload.name;
        let cluster = clusters
            .cluster(name)
            .with_context(|| format!("the {name} cluster is defined by the topology"))?;
        apply_all(&cluster, workload_objects_on(workload, histories, base))
            .with_context(|| format!("seeding the {name} cluster"))?;
        workloads::seed_logs(&cluster, workload.environment, histories, base);
    }
    Ok(())
}

/// Everything on the management cluster of a world with one workload cluster per environment, owners
/// before what they own.
pub fn management_objects(histories: &Histories, base: Timestamp) -> Vec<Value> {
    management_objects_for(&Topology::default(), histories, base)
}

/// Everything on the management cluster of a world with `topology`'s workload clusters (their Argo CD
/// cluster secrets and one Application per service and cluster), owners before what they own.
pub fn management_objects_for(
    topology: &Topology,
    histories: &Histories,
    base: Timestamp,
) -> Vec<Value> {
    let mut objects: Vec<Value> = [PLATFORM_NAMESPACE, ARGOCD_NAMESPACE, CI_NAMESPACE]
        .into_iter()
        .map(|name| workloads::namespace(name, None, base))
        .collect();
    objects.extend(platform::objects(histories, base));
    objects.extend(slo::objects(base));
    objects.extend(argocd::objects_for(topology, histories, base));
    objects.extend(tekton::objects(histories, base));
    objects
}

/// Everything on the workload cluster of `environment`, owners before what they own.
pub fn workload_objects(environment: &str, histories: &Histories, base: Timestamp) -> Vec<Value> {
    let mut objects = vec![workloads::namespace(
        crossplane::SYSTEM_NAMESPACE,
        None,
        base,
    )];
    objects.extend(crossplane::cluster_objects(base));
    objects.push(secrets::cluster_secret_store(base));
    for plan in &crate::world::SERVICES {
        objects.push(workloads::namespace(plan.name, Some(environment), base));
        objects.extend(workloads::objects(plan, environment, histories, base));
        objects.extend(secrets::external_secrets(plan, environment, base));
        objects.extend(crossplane::objects(plan, environment, base));
    }
    objects
}

/// Everything on `cluster`: its environment's workloads, as they are on that cluster (see [`placed_on`]).
pub fn workload_objects_on(
    cluster: &WorkloadCluster,
    histories: &Histories,
    base: Timestamp,
) -> Vec<Value> {
    placed_on(
        workload_objects(cluster.environment, histories, base),
        cluster,
    )
}

/// `objects` built for `cluster`'s environment, as they are on `cluster` when it is one of several running
/// that environment (a cluster alone in its environment keeps them as built):
///
/// - Argo CD's tracking ids name the Application deploying to the cluster (`payments-prod-eu`), not the
///   environment's (`payments-prod`);
/// - pods get names of their own, as each cluster's ReplicaSet controller draws its own random suffixes
///   (the pod-template hash, and so the ReplicaSet's name, is the same everywhere): a pod's name tells its
///   cluster, and whatever mentions it (its Events, their messages) follows.
///
/// Deterministic, so the simulator placing the pods it builds gets the names seeding gave.
pub(crate) fn placed_on(mut objects: Vec<Value>, cluster: &WorkloadCluster) -> Vec<Value> {
    if cluster.is_alone() {
        return objects;
    }
    let environment_suffix = format!("-{}", cluster.environment);
    let tracking_pointer = format!(
        "/metadata/annotations/{}",
        workloads::TRACKING_ANNOTATION.replace('/', "~1")
    );
    let mut renamed_pods: Vec<(String, String)> = Vec::new();
    for object in &mut objects {
        if let Some(tracking) = object.pointer_mut(&tracking_pointer) {
            // `<application>:<group>/<kind>:<namespace>/<name>`, the Application being
            // `<service>-<environment>`.
            let retargeted = tracking.as_str().and_then(|id| {
                let (application, rest) = id.split_once(':')?;
                let service = application.strip_suffix(&environment_suffix)?;
                Some(format!(
                    "{}:{rest}",
                    argocd::application_name(service, &cluster.name)
                ))
            });
            if let Some(id) = retargeted {
                *tracking = json!(id);
            }
        }
        if str_at(object, "/kind") == "Pod" {
            let name = str_at(object, "/metadata/name");
            // `<replica set>-<suffix>`: only the suffix is the pod's own.
            if let Some((replica_set, _)) = name.rsplit_once('-') {
                let placed = format!(
                    "{replica_set}-{}",
                    suffix(&[name, cluster.name.as_str()], 5)
                );
                renamed_pods.push((name.to_owned(), placed));
            }
        }
    }
    if !renamed_pods.is_empty() {
        for object in &mut objects {
            rename_in_strings(object, &renamed_pods);
        }
    }
    objects
}

/// Replaces every occurrence of each `from` with its `to` in the string values of `value` (not its keys).
fn rename_in_strings(value: &mut Value, renames: &[(String, String)]) {
    match value {
        Value::String(text) => {
            for (from, to) in renames {
                if text.contains(from.as_str()) {
                    *text = text.replace(from.as_str(), to);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_in_strings(item, renames);
            }
        }
        Value::Object(fields) => {
            for field in fields.values_mut() {
                rename_in_strings(field, renames);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Applies objects in order, pointing owner references and events at the uids the store gave their
/// targets: builders cannot know uids, which the store assigns.
pub(crate) fn apply_all(store: &ClusterStore, objects: Vec<Value>) -> anyhow::Result<()> {
    let mut uids: BTreeMap<(String, String, String), String> = BTreeMap::new();
    for mut object in objects {
        let namespace = str_at(&object, "/metadata/namespace").to_owned();
        if let Some(owners) = object
            .pointer_mut("/metadata/ownerReferences")
            .and_then(Value::as_array_mut)
        {
            for owner in owners {
                let key = (
                    str_at(owner, "/kind").to_owned(),
                    namespace.clone(),
                    str_at(owner, "/name").to_owned(),
                );
                if let Some(uid) = uids.get(&key) {
                    owner["uid"] = json!(uid);
                }
            }
        }
        if let Some(involved) = object.get_mut("involvedObject") {
            let key = (
                str_at(involved, "/kind").to_owned(),
                str_at(involved, "/namespace").to_owned(),
                str_at(involved, "/name").to_owned(),
            );
            if let Some(uid) = uids.get(&key) {
                involved["uid"] = json!(uid);
            }
        }
        let name = format!(
            "{} {}/{}",
            str_at(&object, "/kind"),
            namespace,
            str_at(&object, "/metadata/name")
        );
        let stored = store
            .apply(object)
            .with_context(|| format!("applying {name}"))?;
        uids.insert(
            (
                str_at(&stored, "/kind").to_owned(),
                str_at(&stored, "/metadata/namespace").to_owned(),
                str_at(&stored, "/metadata/name").to_owned(),
            ),
            str_at(&stored, "/metadata/uid").to_owned(),
        );
    }
    Ok(())
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

// ---- shared by the builders ----

/// A timestamp as Kubernetes writes it: RFC 3339, whole seconds, UTC.
pub fn stamp(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `seconds` before `at`.
pub(crate) fn before(at: Timestamp, seconds: i64) -> Timestamp {
    at.checked_sub(SignedDuration::from_secs(seconds))
        .unwrap_or(at)
}

/// `seconds` after `at`.
pub(crate) fn after(at: Timestamp, seconds: i64) -> Timestamp {
    at.checked_add(SignedDuration::from_secs(seconds))
        .unwrap_or(at)
}

/// When a commit was made; a history without parseable times gets them a day before `base`, and nothing is
/// later than a minute before `base` (the moment the objects are built for).
pub(crate) fn commit_time(commit: &Commit, base: Timestamp) -> Timestamp {
    commit
        .time
        .parse::<Timestamp>()
        .unwrap_or_else(|_| before(base, DAY))
        .min(before(base, MINUTE))
}

/// When the platform itself was installed in a world seeded at `base`: what existed before every service
/// (the platform's namespaces, Argo CD's projects and ApplicationSets, Tekton's Tasks, stores, XRDs).
pub(crate) fn installed(base: Timestamp) -> Timestamp {
    let timeline = Timeline::ending_at(base);
    timeline.at(timeline.bootstrapped())
}

/// When `service`'s onboarding pull request was merged in a world seeded at `base`: when its Component,
/// Releases, Databases and schemas appeared on the management cluster (`base` for a service outside the
/// plan).
pub(crate) fn merged_onboarding(service: &str, base: Timestamp) -> Timestamp {
    let timeline = Timeline::ending_at(base);
    world::service_index(service)
        .map(|index| timeline.at(timeline.onboarded(index) + world::REVIEW_DELAY))
        .unwrap_or(base)
}

/// When the ApplicationSet created `service`'s Applications (and Argo CD its namespaces, charts' objects,
/// claims and secrets) in a world seeded at `base`; `base` itself for a service outside the plan, which
/// was created just now.
pub(crate) fn onboarded(service: &str, base: Timestamp) -> Timestamp {
    let timeline = Timeline::ending_at(base);
    world::service_index(service)
        .map(|index| timeline.at(timeline.applications_created(index)))
        .unwrap_or(base)
}

/// FNV-1a over the parts: stable ids, hashes and suffixes without an RNG.
pub(crate) fn fnv(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// `len` hex digits derived from the parts (container ids, digests, commit-like ids).
pub(crate) fn hex(parts: &[&str], len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    let mut round = 0u32;
    while out.len() < len {
        let salt = round.to_string();
        let mut all: Vec<&str> = parts.to_vec();
        all.push(&salt);
        out.push_str(&format!("{:016x}", fnv(&all)));
        round += 1;
    }
    out.truncate(len);
    out
}

/// A name suffix in the alphabet Kubernetes uses for generated names and pod-template hashes.
pub(crate) fn suffix(parts: &[&str], len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bits = fnv(parts);
    (0..len)
        .map(|i| {
            if i > 0 && i % 12 == 0 {
                bits = fnv(&[&bits.to_string()]);
            }
            let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize];
            bits /= ALPHABET.len() as u64;
            c as char
        })
        .collect()
}

/// A UUID-shaped id derived from the parts.
pub(crate) fn uuid(parts: &[&str]) -> String {
    let h = hex(parts, 32);
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// The platform's discovery labels as JSON.
pub(crate) fn labels(component: &str, environment: &str) -> Value {
    json!(crate::platform::labels(component, environment))
}

/// Commit positions of `plan` that ran in `environment`, oldest first; the last is what runs now.
///
/// Dev followed every green build of main up to what it runs; prod moved by promotion, from what ran
/// before (the Rollback target) to what runs now.
pub fn deploy_history(plan: &ServicePlan, environment: &str) -> Vec<usize> {
    if environment == "prod" {
        plan.prod_previous
            .into_iter()
            .filter(|previous| *previous != plan.prod)
            .chain([plan.prod])
            .collect()
    } else {
        plan.commits
            .iter()
            .enumerate()
            .take(plan.dev + 1)
            .filter(|(_, commit)| commit.green)
            .map(|(index, _)| index)
            .collect()
    }
}

/// When commit `index` of `plan` was deployed to `environment`: dev minutes after its build, prod the next
/// working day, never before the service's Applications existed (after its scaffold's onboarding), and
/// never later than a minute before `base`.
pub fn deployed_at(
    plan: &ServicePlan,
    environment: &str,
    index: usize,
    histories: &Histories,
    base: Timestamp,
) -> Timestamp {
    let built = histories
        .commit(plan.name, index)
        .map(|commit| commit_time(commit, base))
        .unwrap_or_else(|| before(base, DAY));
    let scaffolded = histories
        .commit(plan.name, 0)
        .map(|scaffold| commit_time(scaffold, base))
        .unwrap_or(built);
    // The same rule the timeline uses for the metrics' bad deploy, so its marker and its jump line up.
    let at = world::deploy_time(
        environment,
        built.as_second(),
        scaffolded.as_second(),
        base.as_second(),
    );
    Timestamp::from_second(at).unwrap_or(base)
}

/// The URL of the workload cluster named `cluster` (`prod`, `prod-eu`), as Argo CD's cluster secret names
/// it.
pub fn cluster_server(cluster: &str) -> String {
    format!("https://{cluster}.clusters.acme.example")
}

/// The public URL of `plan` in `environment`.
pub fn external_url(plan: &ServicePlan, environment: &str) -> String {
    if environment == "prod" {
        format!("https://{}", plan.host)
    } else {
        format!("https://{}.{environment}.acme.example", plan.name)
    }
}
