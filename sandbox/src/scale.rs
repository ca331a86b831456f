//! Scale mode: `N` generated services (`svc-0001`…) on top of the plan's eight, each with its Component,
//! Releases, an Application per workload cluster, a Rollout with ReplicaSets and Pods, ExternalSecrets and
//! PipelineRuns with their TaskRuns ([`PIPELINE_RUNS`] across them: the builds of what dev and prod run, and
//! older runs of pull requests), so Tower's lists, reflectors and pages can be benchmarked at fleet size.
//! `svc-0001` also has one run of a 300-task pipeline ([`crate::fixtures::tekton::monorepo`]).
//!
//! Only the eight plan services have git repositories; generated services' histories are synthetic (commit
//! ids derived from name and position), and the simulator leaves them as seeded (no logs, no builds) so a
//! thousand of them cost memory once, not every tick. Every object comes from the same fixture builders as
//! the plan's, so shapes are identical.

use anyhow::Context as _;
use jiff::Timestamp;
use serde_json::Value;

use crate::apiserver::Clusters;
use crate::fixtures::{self, argocd, hex, secrets, tekton, workloads};
use crate::topology::Topology;
use crate::world::{Commit, CommitPlan, ENVIRONMENTS, Histories, ServicePlan, TEAMS};

/// The history every generated service has: a scaffold and two features; prod runs the middle one.
static COMMITS: [CommitPlan; 3] = [
    CommitPlan {
        message: "Scaffold from go-service 1.4.0",
        green: true,
        migration: None,
    },
    CommitPlan {
        message: "First feature",
        green: true,
        migration: None,
    },
    CommitPlan {
        message: "Second feature",
        green: true,
        migration: None,
    },
];

/// PipelineRuns scale mode seeds across its generated services by default (each has at least its two
/// builds). Tests ask for fewer: with their TaskRuns, 10,000 runs are most of scale mode's seeding time.
pub const PIPELINE_RUNS: usize = 10_000;

/// PipelineRuns of the `index`-th (0-based) of `count` generated services when `total` are seeded: an even
/// share, the first few one more so the shares add up, and never fewer than its two builds.
pub fn runs_of(index: usize, count: usize, total: usize) -> usize {
    let count = count.max(1);
    (total / count + usize::from(index < total % count)).max(2)
}

/// The name of the `index`-th generated service (1-based): `svc-0001`.
pub fn service_name(index: usize) -> String {
    format!("svc-{index:04}")
}

/// The plans of `count` generated services.
///
/// [`ServicePlan`] holds `&'static str`s (the plan is otherwise compile-time data), so the generated names
/// are leaked: once per service at start-up, which a benchmark mode can afford.
pub fn plans(count: usize) -> Vec<&'static ServicePlan> {
    fn leak(text: String) -> &'static str {
        Box::leak(text.into_boxed_str())
    }
    (1..=count)
        .map(|index| {
            let name = leak(service_name(index));
            let plan = ServicePlan {
                name,
                team: TEAMS[index % TEAMS.len()].slug,
                description: "A generated service for scale tests.",
                template: "go-service",
                depends_on: &[],
                database: false,
                commits: &COMMITS,
                dev: 2,
                prod: 1,
                prod_previous: Some(0),
                prod_schema_behind: None,
                host: leak(format!("{name}.acme.example")),
            };
            &*Box::leak(Box::new(plan))
        })
        .collect()
}

/// Synthetic histories of the generated services: ids derived from name and position, a day apart.
pub fn histories(plans: &[&ServicePlan]) -> Histories {
    let services = plans
        .iter()
        .map(|plan| {
            let author = crate::world::team(plan.team)
                .map(|t| t.members[0])
                .unwrap_or("root");
            let commits = plan
                .commits
                .iter()
                .enumerate()
                .map(|(index, commit)| Commit {
                    sha: hex(&[plan.name, &index.to_string(), "scale"], 40),
                    message: commit.message.to_string(),
                    author: author.to_string(),
                    time: format!("2026-11-{:02}T09:00:00Z", 10 + index),
                    green: commit.green,
                    migrations: Vec::new(),
                })
                .collect();
            (plan.name.to_string(), commits)
        })
        .collect();
    Histories {
        services,
        ..Histories::default()
    }
}

/// Seeds `count` generated services with `runs` PipelineRuns across them into `topology`'s clusters, with
/// timestamps relative to `base`.
pub fn seed(
    clusters: &Clusters,
    topology: &Topology,
    count: usize,
    runs: usize,
    base: Timestamp,
) -> anyhow::Result<()> {
    let total_runs = runs;
    let plans = plans(count);
    let histories = histories(&plans);
    let management = clusters
        .cluster("management")
        .context("the management cluster is always defined")?;
    for (position, plan) in plans.iter().enumerate() {
        // One service at a time: its runs are most of scale mode's objects, and holding every one built
        // besides every one stored would double the seeding's peak memory.
        let mut objects: Vec<Value> = Vec::new();
        objects.push(fixtures::platform::to_json(&crate::platform::component(
            plan,
        )));
        for env in ENVIRONMENTS {
            if let Some(release) = fixtures::platform::released(plan, env, &histories, base) {
                objects.push(fixtures::platform::to_json(&release));
            }
            for cluster in topology.clusters_of(env) {
                objects.extend(argocd::application_on(
                    plan,
                    env,
                    &cluster.name,
                    &histories,
                    base,
                ));
            }
        }
        // The builds of what runs in dev and prod.
        let mut runs = 0;
        for index in [plan.prod, plan.dev] {
            if let Some((run, task_runs)) = tekton::pipeline_run(plan, index, &histories, base) {
                objects.push(run);
                objects.extend(task_runs);
                runs += 1;
            }
        }
        if plan.name == tekton::monorepo::SERVICE
            && let Some(commit) = histories.commit(plan.name, plan.dev)
        {
            let (run, task_runs) = tekton::monorepo::run(plan, commit, base);
            objects.push(run);
            objects.extend(task_runs);
            runs += 1;
        }
        // Older runs of pull requests make up the service's share.
        let scaffolded = histories
            .commit(plan.name, 0)
            .map_or(base, |c| fixtures::commit_time(c, base));
        for n in 0..runs_of(position, count, total_runs).saturating_sub(runs) {
            let number = (n / 3 + 1) as u32;
            let branch = format!("feature/change-{number}");
            let started = fixtures::before(scaffolded, (n as i64 + 1) * 20 * crate::world::MINUTE);
            let commit = Commit {
                sha: hex(&[plan.name, &branch, &n.to_string()], 40),
                message: format!("Change {number}, push {}", n % 3 + 1),
                author: crate::world::team(plan.team)
                    .map_or("root", |t| t.members[n % t.members.len()])
                    .to_string(),
                time: fixtures::stamp(fixtures::before(started, 45)),
                // One run in seven fails its tests.
                green: n % 7 != 3,
                migrations: Vec::new(),
            };
            let (run, task_runs) =
                tekton::pull_request_run(plan, number, &branch, &commit, started);
            objects.push(run);
            objects.extend(task_runs);
        }
        fixtures::apply_all(&management, objects).context("seeding the management cluster")?;
    }
    for workload in topology.workload_clusters() {
        let (env, name) = (workload.environment, &workload.name);
        let cluster = clusters
            .cluster(name)
            .with_context(|| format!("the {name} cluster is defined by the topology"))?;
        // One service at a time, as on the management cluster: built trees of every service at once were
        // most of the seeding's peak memory.
        for plan in &plans {
            let mut objects = vec![workloads::namespace(plan.name, Some(env), base)];
            // Events would triple the object count for no benchmark's benefit.
            objects.extend(
                workloads::objects(plan, env, &histories, base)
                    .into_iter()
                    .filter(|o| o["kind"] != "Event"),
            );
            objects.extend(secrets::external_secrets(plan, env, base));
            fixtures::apply_all(&cluster, fixtures::placed_on(objects, workload))
                .with_context(|| format!("seeding the {name} cluster"))?;
        }
    }
    Ok(())
}
