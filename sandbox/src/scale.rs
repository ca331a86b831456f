//! Scale mode: `N` generated services (`svc-0001`…) on top of the plan's eight, each with its Component,
//! Releases, an Application per environment, a Rollout with ReplicaSets and Pods, ExternalSecrets and a
//! couple of PipelineRuns, so Tower's lists, reflectors and pages can be benchmarked at fleet size.
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
    Histories { services }
}

/// Seeds `count` generated services into the clusters, with timestamps relative to `base`.
pub fn seed(clusters: &Clusters, count: usize, base: Timestamp) -> anyhow::Result<()> {
    let plans = plans(count);
    let histories = histories(&plans);
    let management = clusters
        .cluster("management")
        .context("the management cluster is always defined")?;
    let mut objects: Vec<Value> = Vec::new();
    for plan in &plans {
        objects.push(fixtures::platform::to_json(&crate::platform::component(
            plan,
        )));
        for env in ENVIRONMENTS {
            if let Some(release) = fixtures::platform::released(plan, env, &histories, base) {
                objects.push(fixtures::platform::to_json(&release));
            }
            objects.extend(argocd::application(plan, env, &histories, base));
        }
        // The builds of what runs in dev and prod.
        for index in [plan.prod, plan.dev] {
            if let Some((run, task_runs)) = tekton::pipeline_run(plan, index, &histories, base) {
                objects.push(run);
                objects.extend(task_runs);
            }
        }
    }
    fixtures::apply_all(&management, objects).context("seeding the management cluster")?;
    for env in ENVIRONMENTS {
        let cluster = clusters
            .cluster(env)
            .with_context(|| format!("the {env} cluster is always defined"))?;
        let mut objects = Vec::new();
        for plan in &plans {
            objects.push(workloads::namespace(plan.name, Some(env), base));
            // Events would triple the object count for no benchmark's benefit.
            objects.extend(
                workloads::objects(plan, env, &histories, base)
                    .into_iter()
                    .filter(|o| o["kind"] != "Event"),
            );
            objects.extend(secrets::external_secrets(plan, env, base));
        }
        fixtures::apply_all(&cluster, objects)
            .with_context(|| format!("seeding the {env} cluster"))?;
    }
    Ok(())
}
