//! Tekton in the sandbox as Tower's Pipelines pages read it: runs with their resolved specs, TaskRun pods
//! for each service's newest runs only, and step logs read over HTTP exactly as kubectl reads them
//! (`/api/v1/namespaces/tekton-ci/pods/{pod}/log?container=step-…&timestamps=true`).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt as _;
use jiff::Timestamp;
use sandbox::fixtures::tekton::{self, monorepo, step_logs};
use sandbox::world::{CI_NAMESPACE, SERVICES};
use sandbox::{Options, Sandbox, Simulate};
use serde_json::Value;

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Every PipelineRun of `service`, newest first.
fn runs_of(sandbox: &Sandbox, service: &str) -> Vec<Value> {
    let mut runs: Vec<Value> = sandbox
        .cluster("management")
        .unwrap()
        .list_namespaced("tekton.dev/v1", "PipelineRun", CI_NAMESPACE)
        .into_iter()
        .filter(|r| text(r, "/metadata/labels/platform.tower.dev~1component") == service)
        .collect();
    runs.sort_by(|a, b| {
        (
            text(b, "/metadata/creationTimestamp"),
            text(b, "/metadata/name"),
        )
            .cmp(&(
                text(a, "/metadata/creationTimestamp"),
                text(a, "/metadata/name"),
            ))
    });
    runs
}

/// The TaskRun of `task` in `run`.
fn task_run(sandbox: &Sandbox, run: &Value, task: &str) -> Value {
    sandbox
        .cluster("management")
        .unwrap()
        .get(
            "tekton.dev/v1",
            "TaskRun",
            Some(CI_NAMESPACE),
            &format!("{}-{task}", text(run, "/metadata/name")),
        )
        .unwrap_or_else(|| panic!("no {task} in {}", text(run, "/metadata/name")))
}

fn log_url(sandbox: &Sandbox, pod: &str, step: &str, query: &str) -> String {
    format!(
        "{}/api/v1/namespaces/{CI_NAMESPACE}/pods/{pod}/log?container=step-{step}{query}",
        sandbox.cluster_url("management")
    )
}

/// A step's log as kubectl reads it, with its status code.
async fn step_log(sandbox: &Sandbox, pod: &str, step: &str, query: &str) -> (u16, String) {
    let response = reqwest::get(log_url(sandbox, pod, step, query))
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn the_newest_three_runs_of_each_service_have_pods_and_older_runs_pods_are_gone() {
    let sandbox = Sandbox::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let management = sandbox.cluster("management").unwrap();
    let mut gone = 0;
    for plan in &SERVICES {
        let runs = runs_of(&sandbox, plan.name);
        assert!(runs.len() >= tekton::RUNS_WITH_PODS, "{}", plan.name);
        for (position, run) in runs.iter().enumerate() {
            for child in run["status"]["childReferences"].as_array().unwrap() {
                let task = text(child, "/pipelineTaskName");
                let task_run = task_run(&sandbox, run, task);
                let pod_name = text(&task_run, "/status/podName");
                assert_eq!(
                    pod_name,
                    format!("{}-pod", text(&task_run, "/metadata/name"))
                );
                let pod = management.get("v1", "Pod", Some(CI_NAMESPACE), pod_name);
                if position >= tekton::RUNS_WITH_PODS {
                    assert!(pod.is_none(), "{pod_name} of an old run still exists");
                    continue;
                }
                let pod = pod.unwrap_or_else(|| panic!("{pod_name} is missing"));
                let labels = &pod["metadata"]["labels"];
                assert_eq!(
                    labels["tekton.dev/taskRun"],
                    text(&task_run, "/metadata/name")
                );
                assert_eq!(
                    labels["tekton.dev/pipelineRun"],
                    text(run, "/metadata/name")
                );
                assert_eq!(labels["tekton.dev/pipelineTask"], task);
                assert_eq!(labels["platform.tower.dev/component"], plan.name);
                let containers: Vec<&str> = pod["spec"]["containers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| text(c, "/name"))
                    .collect();
                let steps: Vec<String> = task_run["status"]["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| text(s, "/container").to_string())
                    .collect();
                assert_eq!(containers, steps, "containers in step order");
                let failed = task_run["status"]["conditions"][0]["status"] == "False";
                assert_eq!(
                    text(&pod, "/status/phase"),
                    if failed { "Failed" } else { "Succeeded" }
                );
                for step in task_run["status"]["steps"].as_array().unwrap() {
                    let status = pod["status"]["containerStatuses"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|s| s["name"] == step["container"])
                        .unwrap();
                    assert_eq!(status["state"]["terminated"], step["terminated"]);
                }
            }
        }
        // A gone pod answers as a real apiserver does: 404 with a NotFound status, its log too.
        let Some(old) = runs.get(tekton::RUNS_WITH_PODS) else {
            continue;
        };
        gone += 1;
        let pod = text(&task_run(&sandbox, old, "clone"), "/status/podName").to_string();
        let response = reqwest::get(format!(
            "{}/api/v1/namespaces/{CI_NAMESPACE}/pods/{pod}",
            sandbox.cluster_url("management")
        ))
        .await
        .unwrap();
        assert_eq!(response.status(), 404);
        let response = reqwest::get(log_url(&sandbox, &pod, "clone", "&timestamps=true"))
            .await
            .unwrap();
        assert_eq!(response.status(), 404);
        let status: Value = response.json().await.unwrap();
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["message"], format!("pods \"{pod}\" not found"));
    }
    assert!(
        gone >= 6,
        "only {gone} services have runs older than their pods"
    );
}

#[tokio::test]
async fn a_red_runs_unit_step_log_ends_with_the_failing_test() {
    let sandbox = Sandbox::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    // catalog's newest build of main is red ("Switch image CDN (breaks thumbnails)").
    let run = runs_of(&sandbox, "catalog").remove(0);
    assert_eq!(run["status"]["conditions"][0]["reason"], "Failed");
    let test = task_run(&sandbox, &run, "test");
    let pod = text(&test, "/status/podName");
    let (status, log) = step_log(&sandbox, pod, "unit", "").await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.last(), Some(&step_logs::FAILURE_LINE));
    assert!(
        log.contains("--- FAIL\x1b[0m: TestThumbnailURL (0.02s)"),
        "{log}"
    );
    assert!(log.contains("expected: \"https://img.acme.example/t/sku-1042.webp\""));
    assert_eq!(
        log.matches(step_logs::FAILURE_LINE).count(),
        1,
        "the failure is said once"
    );
    // Passing packages print green, the failure red.
    assert!(log.contains("\x1b[32mok\x1b[0m"));
    assert!(log.contains("\x1b[31mFAIL\x1b[0m"));
    // The step before it passed, and a green run's unit step passes.
    let (_, install) = step_log(&sandbox, pod, "install", "").await;
    assert!(install.ends_with("all modules verified\n"), "{install}");
    let green = runs_of(&sandbox, "ledger").remove(0);
    let green_test = task_run(&sandbox, &green, "test");
    let (_, passing) = step_log(&sandbox, text(&green_test, "/status/podName"), "unit", "").await;
    assert!(!passing.contains(step_logs::FAILURE_LINE));
    assert!(passing.contains("DONE"));
    // A previous instance of a step never exists.
    let (status, _) = step_log(&sandbox, pod, "unit", "&previous=true").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn the_long_build_log_has_a_hundred_thousand_lines_with_its_mark_on_line_ninety_thousand_only()
 {
    let sandbox = Sandbox::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let run = runs_of(&sandbox, tekton::LONG_LOG_SERVICE).remove(0);
    assert_eq!(
        Some(text(&run, "/metadata/name").to_string()),
        tekton::long_log_run(sandbox.repositories().histories())
    );
    let build = task_run(&sandbox, &run, "build-image");
    let pod = text(&build, "/status/podName");
    let started = std::time::Instant::now();
    let (status, log) = step_log(&sandbox, pod, "build", "&timestamps=true").await;
    let elapsed = started.elapsed();
    assert_eq!(status, 200);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), step_logs::LONG_LOG_LINES);
    let mark = step_logs::long_log_mark();
    let marked: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains(&mark))
        .map(|(n, _)| n + 1)
        .collect();
    assert_eq!(marked, [step_logs::LONG_LOG_MARK_LINE]);
    // So is a shorter search for it, as a person would type.
    let short = &mark[..19];
    assert_eq!(lines.iter().filter(|l| l.contains(short)).count(), 1);
    println!(
        "long log: {} lines, {} bytes, in {elapsed:?}; line {} carries {mark}",
        lines.len(),
        log.len(),
        step_logs::LONG_LOG_MARK_LINE
    );
    // Other builds' logs are short.
    let other = runs_of(&sandbox, "ledger").remove(0);
    let (_, short_log) = step_log(
        &sandbox,
        text(
            &task_run(&sandbox, &other, "build-image"),
            "/status/podName",
        ),
        "build",
        "",
    )
    .await;
    assert!(short_log.lines().count() < 100);
}

#[tokio::test]
async fn timestamps_are_the_kubelets_nanosecond_times_in_order_within_the_step() {
    let sandbox = Sandbox::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let run = runs_of(&sandbox, "search").remove(0);
    for (task, step) in [("clone", "clone"), ("test", "unit"), ("scan", "scan")] {
        let task_run = task_run(&sandbox, &run, task);
        let state = task_run["status"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == step)
            .unwrap()["terminated"]
            .clone();
        let started: Timestamp = text(&state, "/startedAt").parse().unwrap();
        let finished: Timestamp = text(&state, "/finishedAt").parse().unwrap();
        let (_, log) = step_log(
            &sandbox,
            text(&task_run, "/status/podName"),
            step,
            "&timestamps=true",
        )
        .await;
        let (_, plain) = step_log(&sandbox, text(&task_run, "/status/podName"), step, "").await;
        assert!(log.lines().count() > 5, "{task}/{step}");
        let mut last = started;
        for (line, plain) in log.lines().zip(plain.lines()) {
            let (time, rest) = line.split_once(' ').unwrap();
            assert_eq!(rest, plain);
            // 2026-11-20T08:40:12.123456789Z: whole seconds, a dot, nine digits.
            assert_eq!(time.len(), 30, "{time}");
            assert_eq!(&time[19..20], ".");
            let at: Timestamp = time.parse().unwrap();
            assert!(at >= last, "{time} is before the line above it");
            assert!(at <= finished, "{time} is after the step finished");
            last = at;
        }
        // The kubelet's options work here too.
        let (_, tail) = step_log(
            &sandbox,
            text(&task_run, "/status/podName"),
            step,
            "&tailLines=2",
        )
        .await;
        let expected: Vec<&str> = plain
            .lines()
            .rev()
            .take(2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert_eq!(tail.lines().collect::<Vec<_>>(), expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_steps_log_grows_with_the_simulated_clock_and_follow_ends_with_the_step() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.simulate = Simulate::Manual;
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let simulator = sandbox.simulator().unwrap();
    let management = sandbox.cluster("management").unwrap();
    let seeded = runs_of(&sandbox, "cart");
    let sha = simulator
        .push_commit("cart", "Keep carts across devices (tests fail)", false)
        .unwrap();
    let name = format!("cart-build-{}", &sha[..7]);
    // The build starts ten seconds after the push: the run carries its spec from the start.
    simulator.advance(Duration::from_secs(15));
    let run = management
        .get("tekton.dev/v1", "PipelineRun", Some(CI_NAMESPACE), &name)
        .unwrap();
    assert_eq!(run["status"]["pipelineSpec"], tekton::pipeline_spec());
    // Only the newest three runs keep pods: the oldest of the seeded three lost its pods.
    let pods_of = |run: &str| {
        management
            .list_namespaced("v1", "Pod", CI_NAMESPACE)
            .into_iter()
            .filter(|p| text(p, "/metadata/labels/tekton.dev~1pipelineRun") == run)
            .count()
    };
    assert!(pods_of(text(&seeded[1], "/metadata/name")) > 0);
    assert_eq!(pods_of(text(&seeded[2], "/metadata/name")), 0);
    // Clone runs for a dozen seconds from three seconds in; then test starts, its pod Running.
    let pod = format!("{name}-test-pod");
    let mut waited = 0;
    while management
        .get("v1", "Pod", Some(CI_NAMESPACE), &pod)
        .is_none()
    {
        simulator.advance(Duration::from_secs(1));
        waited += 1;
        assert!(waited < 60, "the test task never started");
    }
    let running = management
        .get("v1", "Pod", Some(CI_NAMESPACE), &pod)
        .unwrap();
    assert_eq!(running["status"]["phase"], "Running");
    assert!(pods_of(&name) >= 2, "clone's pod stays after it finished");
    let install = |query: &'static str| step_log(&sandbox, &pod, "install", query);
    simulator.advance(Duration::from_secs(10));
    let (status, early) = install("").await;
    assert_eq!(status, 200);
    simulator.advance(Duration::from_secs(10));
    let (_, later) = install("").await;
    assert!(
        later.lines().count() > early.lines().count() && later.starts_with(&early),
        "the log grew from {} to {} lines",
        early.lines().count(),
        later.lines().count()
    );
    assert!(
        !later.contains("all modules verified"),
        "the step has not ended"
    );

    // Following the unit step: it streams as the clock moves and ends when the step does.
    let url = log_url(&sandbox, &pod, "unit", "&follow=true&timestamps=true");
    let follower = tokio::spawn(async move {
        let response = reqwest::get(url).await.unwrap();
        let mut body = response.bytes_stream();
        let mut text = String::new();
        let mut pieces = 0;
        while let Some(chunk) = body.next().await {
            text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
            pieces += 1;
        }
        (text, pieces)
    });
    for _ in 0..120 {
        simulator.advance(Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(40)).await;
        if follower.is_finished() {
            break;
        }
    }
    let (followed, pieces) = tokio::time::timeout(Duration::from_secs(10), follower)
        .await
        .expect("the follow stream ends with the step")
        .unwrap();
    assert!(
        pieces > 3,
        "the log came in {pieces} pieces, not as it was written"
    );
    assert!(
        followed.trim_end().ends_with(step_logs::FAILURE_LINE),
        "{followed}"
    );
    let (_, finished) = step_log(&sandbox, &pod, "unit", "&timestamps=true").await;
    assert_eq!(
        followed, finished,
        "following wrote the same lines as reading afterwards"
    );
    let done = management
        .get("v1", "Pod", Some(CI_NAMESPACE), &pod)
        .unwrap();
    assert_eq!(done["status"]["phase"], "Failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_runs_take_their_pods_with_them() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.simulate = Simulate::Manual;
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let simulator = sandbox.simulator().unwrap();
    let management = sandbox.cluster("management").unwrap();
    // The pruner keeps as many runs per service as were seeded, and at least five.
    let kept = runs_of(&sandbox, "cart").len().max(5);
    for n in 0..6 {
        simulator
            .push_commit("cart", &format!("Tidy carts, part {n}"), true)
            .unwrap();
        simulator.advance(Duration::from_secs(8 * 60));
    }
    // The pruner runs every ten simulated minutes.
    simulator.advance(Duration::from_secs(10 * 60));
    let runs: Vec<String> = runs_of(&sandbox, "cart")
        .iter()
        .map(|r| text(r, "/metadata/name").to_string())
        .collect();
    assert_eq!(runs.len(), kept, "runs are pruned");
    let mut pods: BTreeMap<String, usize> = BTreeMap::new();
    for pod in management.list_namespaced("v1", "Pod", CI_NAMESPACE) {
        if text(&pod, "/metadata/labels/platform.tower.dev~1component") == "cart" {
            *pods
                .entry(text(&pod, "/metadata/labels/tekton.dev~1pipelineRun").to_string())
                .or_default() += 1;
        }
    }
    let with_pods: Vec<&String> = pods.keys().collect();
    let newest: Vec<&String> = runs.iter().take(tekton::RUNS_WITH_PODS).collect();
    assert_eq!(
        with_pods.len(),
        tekton::RUNS_WITH_PODS,
        "pods of {with_pods:?}"
    );
    for run in newest {
        assert!(pods.contains_key(run), "{run} has no pods");
    }
}

#[tokio::test]
async fn runs_carry_their_spec_branch_and_trigger_and_payments_fills_two_pages() {
    let sandbox = Sandbox::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let runs = sandbox.cluster("management").unwrap().list_namespaced(
        "tekton.dev/v1",
        "PipelineRun",
        CI_NAMESPACE,
    );
    let mut triggers: BTreeMap<String, usize> = BTreeMap::new();
    for run in &runs {
        assert!(
            run["status"]["pipelineSpec"]["tasks"].is_array(),
            "{}",
            text(run, "/metadata/name")
        );
        assert!(!text(run, "/metadata/annotations/platform.tower.dev~1branch").is_empty());
        let trigger = match text(run, "/metadata/labels/triggers.tekton.dev~1eventlistener") {
            "" => format!(
                "manual by {}",
                text(run, "/metadata/annotations/platform.tower.dev~1started-by")
            ),
            listener => listener.to_string(),
        };
        *triggers.entry(trigger).or_default() += 1;
    }
    assert_eq!(triggers["manual by grace"], 1);
    assert!(triggers[tekton::PULL_REQUEST_LISTENER] >= 15);
    assert!(runs_of(&sandbox, "payments").len() > 20);
    // The DAG has `lint` beside `test`, both after `clone`.
    let spec = tekton::pipeline_spec();
    let lint = spec["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "lint")
        .unwrap();
    assert_eq!(lint["runAfter"], serde_json::json!(["clone"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_mode_seeds_the_runs_asked_for_and_one_of_three_hundred_tasks() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.scale = Some(50);
    // Fewer than the default 10,000 (`cargo xtask bench pipelines` seeds those): the share per service and
    // the big run are what is checked here.
    options.scale_runs = 1_000;
    let started = std::time::Instant::now();
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let seeded = started.elapsed();
    let management = sandbox.cluster("management").unwrap();
    let runs = management.list_namespaced("tekton.dev/v1", "PipelineRun", CI_NAMESPACE);
    let generated: Vec<&Value> = runs
        .iter()
        .filter(|r| text(r, "/metadata/labels/platform.tower.dev~1component").starts_with("svc-"))
        .collect();
    assert_eq!(generated.len(), 1_000);
    assert!(
        generated
            .iter()
            .all(|r| r["status"]["pipelineSpec"].is_object())
    );
    let task_runs = management.list_namespaced("tekton.dev/v1", "TaskRun", CI_NAMESPACE);
    assert!(
        task_runs
            .iter()
            .all(|t| t["status"]["taskSpec"]["steps"].is_array())
    );
    let big = management
        .get(
            "tekton.dev/v1",
            "PipelineRun",
            Some(CI_NAMESPACE),
            monorepo::RUN,
        )
        .unwrap();
    let spec = &big["status"]["pipelineSpec"];
    let tasks = spec["tasks"].as_array().unwrap().len();
    let finally = spec["finally"].as_array().unwrap().len();
    assert_eq!((tasks, finally), (298, 2));
    let skipped = big["status"]["skippedTasks"].as_array().unwrap().len();
    let children = big["status"]["childReferences"].as_array().unwrap().len();
    assert_eq!(children + skipped, 300);
    let own = task_runs
        .iter()
        .filter(|t| text(t, "/metadata/labels/tekton.dev~1pipelineRun") == monorepo::RUN)
        .count();
    assert_eq!(own, children);
    println!(
        "scale 50: {} runs, {} TaskRuns, seeded in {seeded:?}",
        runs.len(),
        task_runs.len()
    );
}
