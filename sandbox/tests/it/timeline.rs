//! The sandbox's world is laid out from the moment it starts: its history ends minutes before, every object
//! is older than the start, and each service's times follow the order git gives them (commit, build,
//! Release change, Argo CD's sync, pods).
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use jiff::Timestamp;
use sandbox::fixtures::tekton::COMMIT_ANNOTATION;
use sandbox::git::{Repositories, git_log};
use sandbox::platform::release_path;
use sandbox::world::{ENVIRONMENTS, GITOPS_REPOSITORY, SERVICES, Timeline};
use sandbox::{Options, Sandbox};
use serde_json::Value;

fn epoch() -> Timestamp {
    "2027-03-14T15:09:26Z".parse().unwrap()
}

fn time(value: &Value, pointer: &str) -> Timestamp {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} missing in {value}"))
        .parse()
        .unwrap()
}

fn name(value: &Value) -> &str {
    value["metadata"]["name"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn every_service_is_committed_built_released_synced_and_started_in_that_order() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.epoch = Some(epoch());
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let start = epoch();
    let management = sandbox.cluster("management").unwrap();
    let runs = management.list("tekton.dev/v1", "PipelineRun");
    let apps = management.list("argoproj.io/v1alpha1", "Application");
    let gitops = sandbox.repositories().path(GITOPS_REPOSITORY);
    let histories = sandbox.repositories().histories();

    for plan in &SERVICES {
        for environment in ENVIRONMENTS {
            let at = format!("{} in {environment}", plan.name);
            let commit = histories.running(plan, environment).unwrap();
            let committed: Timestamp = commit.time.parse().unwrap();

            let run = runs
                .iter()
                .find(|r| r["metadata"]["annotations"][COMMIT_ANNOTATION] == commit.sha.as_str())
                .unwrap_or_else(|| panic!("{at}: no build of {}", commit.short()));
            let built = time(run, "/status/completionTime");
            assert!(
                committed < time(run, "/status/startTime"),
                "{at}: built before its commit"
            );

            // The newest change of the Release file is what moved the environment to this commit.
            let release =
                git_log(&gitops, "main", Some(&release_path(plan.name, environment))).unwrap();
            let released: Timestamp = release[0].committer.date.parse().unwrap();
            assert!(
                built < released,
                "{at}: released {released} before built {built}"
            );

            let app = apps
                .iter()
                .find(|a| name(a) == format!("{}-{environment}", plan.name))
                .unwrap_or_else(|| panic!("{at}: no Application"));
            let synced = time(app, "/status/operationState/finishedAt");
            assert!(
                released < synced,
                "{at}: synced {synced} before released {released}"
            );
            let created = time(app, "/metadata/creationTimestamp");
            for entry in app["status"]["history"].as_array().unwrap() {
                assert!(
                    created < time(entry, "/deployedAt"),
                    "{at}: synced before it existed"
                );
            }

            let cluster = sandbox.cluster(environment).unwrap();
            let pods = cluster.list_namespaced("v1", "Pod", plan.name);
            assert!(!pods.is_empty(), "{at}: no pods");
            for pod in &pods {
                let started = time(pod, "/metadata/creationTimestamp");
                assert!(
                    synced <= started,
                    "{at}: pod {} predates its deploy",
                    name(pod)
                );
                assert!(
                    started < start,
                    "{at}: pod {} is newer than the start",
                    name(pod)
                );
            }
        }
    }

    // The last planned commit is minutes old, not days: the world ends now.
    let newest = histories
        .services
        .values()
        .flatten()
        .map(|c| c.time.parse::<Timestamp>().unwrap())
        .max()
        .unwrap();
    let lead = start.as_second() - newest.as_second();
    assert!(
        (60..=30 * 60).contains(&lead),
        "last commit {lead} s before the start"
    );
    for object in management
        .list("platform.tower.dev/v1alpha1", "Release")
        .iter()
        .chain(&apps)
    {
        assert!(
            time(object, "/metadata/creationTimestamp") < start,
            "{} was created after the start",
            name(object)
        );
    }
}

#[test]
fn the_same_start_gives_the_same_world_and_a_later_one_the_same_world_shifted() {
    let build = |start: Timestamp| {
        Repositories::builder()
            .timeline(Timeline::ending_at(start))
            .build()
            .unwrap()
    };
    let first = build(epoch());
    let again = build(epoch());
    let later = build(epoch() + jiff::SignedDuration::from_hours(5));
    assert_eq!(first.histories(), again.histories());
    for (name, commits) in &first.histories().services {
        let shifted = &later.histories().services[name];
        for (commit, moved) in commits.iter().zip(shifted) {
            assert_eq!(commit.message, moved.message);
            let by = moved.time.parse::<Timestamp>().unwrap().as_second()
                - commit.time.parse::<Timestamp>().unwrap().as_second();
            assert_eq!(by, 5 * 3_600, "{name}: {} moved by {by} s", commit.message);
            assert_ne!(commit.sha, moved.sha, "commit ids follow commit times");
        }
    }
}

#[tokio::test]
async fn the_demo_rolls_a_build_of_main_out_to_dev_within_half_a_minute() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.simulate = sandbox::Simulate::Manual;
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let simulator = sandbox.simulator().unwrap();
    let start = simulator.now();
    simulator.start_demo(sandbox::simulator::Pace::Calm);
    simulator.advance(std::time::Duration::from_secs(60));
    let (service, _) = sandbox::simulator::WARM_UP;
    let (red, _) = sandbox::simulator::WARM_UP_RED;
    let journal = simulator.journal();
    let within = |seconds: i64| -> Vec<&String> {
        journal
            .iter()
            .filter(|line| {
                let at = line
                    .split(' ')
                    .next()
                    .unwrap()
                    .parse::<Timestamp>()
                    .unwrap();
                at >= start && at.as_second() - start.as_second() <= seconds
            })
            .collect()
    };
    let after_start = within(30);
    println!("{}", journal.join("\n"));
    assert!(
        after_start
            .iter()
            .any(|line| line.contains(&format!("{service}-dev")) && line.contains("sync")),
        "no sync of {service} in dev within 30 s"
    );
    assert!(
        after_start
            .iter()
            .any(|line| line.contains(&format!("rollouts: {service} dev"))),
        "no canary of {service} in dev within 30 s"
    );
    // A red build fails in the first minute too, so the feed has a second thing to show early.
    assert!(
        within(60)
            .iter()
            .any(|line| line.contains(&format!("{red}-build")) && line.contains("Failed")),
        "no red build of {red} within a minute"
    );
}
