//! A long-running sandbox keeps its memory flat: hours of simulated demo work on the manual clock leave
//! every cluster's objects, watch history and container logs, and the simulator's own queues, under
//! fixed bounds. Cheap stand-in for watching `tower sandbox --speed 10` for ten minutes.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use sandbox::apiserver::Retained;
use sandbox::{CLUSTERS, Options, Sandbox, Simulate};
use serde_json::json;

/// The kinds the simulator creates and deletes, which would pile up if it forgot to.
const CHURNING: [(&str, &str); 5] = [
    ("v1", "Pod"),
    ("v1", "Event"),
    ("apps/v1", "ReplicaSet"),
    ("tekton.dev/v1", "PipelineRun"),
    ("tekton.dev/v1", "TaskRun"),
];

/// Per-cluster history bounds the apiserver promises: its count and byte budgets, plus one change that
/// may straddle the byte budget.
const HISTORY_CHANGES: usize = 1_000;
const HISTORY_BYTES: usize = 256 * 1024 + 64 * 1024;
/// Log bytes one container may hold: current and previous rings of 64 KiB.
const LOG_BYTES_PER_CONTAINER: usize = 2 * 64 * 1024;

/// Objects of each churning kind per cluster, and what each cluster retains.
fn census(sandbox: &Sandbox) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for cluster in CLUSTERS {
        let store = sandbox.cluster(cluster).unwrap();
        for (api_version, kind) in CHURNING {
            counts.insert(
                format!("{cluster} {kind}"),
                store.list(api_version, kind).len(),
            );
        }
        counts.insert(format!("{cluster} objects"), store.retained().objects);
    }
    counts
}

fn assert_within_bounds(cluster: &str, retained: Retained) {
    assert!(
        retained.history_changes <= HISTORY_CHANGES,
        "{cluster} keeps {} watch changes",
        retained.history_changes
    );
    assert!(
        retained.history_bytes <= HISTORY_BYTES,
        "{cluster} keeps {} bytes of watch history",
        retained.history_bytes
    );
    assert!(
        retained.log_bytes <= retained.log_containers * LOG_BYTES_PER_CONTAINER,
        "{cluster} keeps {} log bytes for {} containers",
        retained.log_bytes,
        retained.log_containers
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hours_of_demo_work_leave_objects_history_logs_and_queues_bounded() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.simulate = Simulate::Manual;
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let simulator = sandbox.simulator().unwrap();
    simulator.start_demo_commits();
    let advance = |minutes: u64| {
        for _ in 0..minutes / 5 {
            simulator.advance(Duration::from_secs(5 * 60));
        }
    };

    // Two simulated hours: events reach their one-hour TTL, runs their pruning, buffers their bounds.
    advance(120);
    let warm = census(&sandbox);
    let mut peak = warm.clone();
    let mut pending_peak = 0;
    // Four more hours, about fifty more demo commits with their builds, deploys and canaries.
    for _ in 0..8 {
        advance(30);
        for (what, count) in census(&sandbox) {
            let highest = peak.entry(what).or_default();
            *highest = (*highest).max(count);
        }
        pending_peak = pending_peak.max(simulator.pending());
        for cluster in CLUSTERS {
            assert_within_bounds(cluster, sandbox.cluster(cluster).unwrap().retained());
        }
    }

    // Flat, not merely slow: after the warm-up nothing grows beyond a flow or two in progress.
    for (what, &highest) in &peak {
        let before = warm[what];
        assert!(
            highest <= before + before / 4 + 12,
            "{what} grew from {before} to {highest} after the warm-up"
        );
    }
    assert!(
        pending_peak < 200,
        "{pending_peak} simulator actions queued"
    );
    assert!(simulator.journal().len() <= 2_000);
    // Pruning keeps the newest runs: the simulator's own builds outlive the seeded history.
    let epoch = sandbox::simulator::MANUAL_EPOCH.to_string();
    let built = sandbox
        .cluster("management")
        .unwrap()
        .list("tekton.dev/v1", "PipelineRun")
        .iter()
        .filter(|run| run["metadata"]["creationTimestamp"].as_str() > Some(epoch.as_str()))
        .count();
    assert!(
        built >= 8,
        "only {built} of the simulator's builds are left"
    );
    let logs = sandbox.cluster("prod").unwrap().retained();
    assert!(
        logs.log_bytes > 0,
        "the simulator writes logs, so the check above means something"
    );
}

#[tokio::test]
async fn a_chatty_container_and_a_busy_cluster_keep_only_their_byte_budgets() {
    let sandbox = Sandbox::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let store = sandbox.cluster("dev").unwrap();
    let pod = store.list("v1", "Pod").into_iter().next().unwrap();
    let (namespace, name) = (
        pod["metadata"]["namespace"].as_str().unwrap(),
        pod["metadata"]["name"].as_str().unwrap(),
    );
    let container = pod["spec"]["containers"][0]["name"].as_str().unwrap();
    for i in 0..20_000 {
        store.append_log(
            namespace,
            name,
            container,
            &format!("request {i:05} {}", "x".repeat(150)),
        );
    }
    let tail = |lines: usize| {
        let url = format!(
            "{}/api/v1/namespaces/{namespace}/pods/{name}/log?container={container}&tailLines={lines}",
            sandbox.cluster_url("dev")
        );
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    assert!(tail(1).await.starts_with("request 19999 "));
    let retained = store.retained();
    assert!(
        retained.log_bytes <= retained.log_containers * LOG_BYTES_PER_CONTAINER,
        "{} log bytes for {} containers",
        retained.log_bytes,
        retained.log_containers
    );
    // A line longer than the whole ring keeps its start rather than emptying the log for good.
    store.append_log(namespace, name, container, &"y".repeat(100_000));
    let long = tail(5).await;
    assert!(long.starts_with("yyyy") && long.len() < 64 * 1024);
    store.append_log(namespace, name, container, "request 20000 the last");
    assert_eq!(tail(5).await, "request 20000 the last\n");

    // Thousands of large modifications: the watch history keeps its byte budget, not every change.
    let mut config = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "churn", "namespace": namespace},
        "data": {},
    });
    for i in 0..2_000 {
        config["data"]["blob"] = json!(format!("{i:05}{}", "z".repeat(4_000)));
        store.apply(config.clone()).unwrap();
    }
    assert_within_bounds("dev", store.retained());
    assert!(store.retained().history_changes < 1_000);
}
