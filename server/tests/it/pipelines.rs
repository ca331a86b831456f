//! Pipelines against the sandbox's Tekton runs: lists newest first a page at a time, whose cursors stay
//! correct while runs arrive; filters and the fields their errors name; a run's detail (skips, failures,
//! `finally`); the bounded history; step logs for owners only, streamed or downloaded, and a gone pod's
//! plain 410; a pushed commit's run arriving on the event stream task by task.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use futures::StreamExt as _;
use sandbox::faults::{Fault, FaultProxy};
use serde_json::{Value, json};
use shared::api::{
    DownloadStepLog, GetPipelineRun, GetPlatformConfig, LOG_END_EVENT, ListPipelineRuns,
    ListServicePipelineRuns, StepLog,
};
use shared::config::PlatformConfig;
use shared::fleet::{FleetEvent, SourceState};
use shared::pipelines::{
    LOG_CHUNK_EVENT, LogChunk, PAGE_SIZE, PipelineQuery, PipelineRunDetail, PipelineRunPage,
    PipelineRunSummary, RunStatus, StepLogQuery, TaskStatus,
};

use crate::{Role, TestApp, body_text, eventually};

/// The line a failing `unit` step ends with (the sandbox's step logs).
const FAILURE_LINE: &str = sandbox::fixtures::tekton::step_logs::FAILURE_LINE;

/// As [`manual_app`], with the CI cluster (management) behind a fault proxy starting with `fault`.
async fn behind_a_ci_proxy(fault: Fault) -> (TestApp, FaultProxy) {
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.simulate = sandbox::Simulate::Manual;
    let sandbox = sandbox::Sandbox::start_with(options).await.unwrap();
    let proxy = FaultProxy::start(&sandbox.cluster_url("management"))
        .await
        .unwrap();
    proxy.set(fault);
    let url = proxy.url();
    let app = TestApp::start_over(sandbox, |config| {
        let management = config
            .clusters
            .iter_mut()
            .find(|c| c.name == "management")
            .unwrap();
        management.url = Some(url);
    })
    .await;
    (app, proxy)
}

/// A sandbox whose simulator moves only when a test advances it, so no run arrives by itself.
async fn manual_app(adjust: impl FnOnce(&mut server::config::TowerConfig)) -> TestApp {
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.simulate = sandbox::Simulate::Manual;
    TestApp::start_on(options, adjust).await
}

async fn get_as<T: serde::de::DeserializeOwned>(app: &TestApp, who: &Role, url: &str) -> T {
    let response = app.send_as(who, Method::GET, url).await;
    let status = response.status();
    let text = body_text(response).await;
    assert_eq!(status, StatusCode::OK, "{url}: {text}");
    serde_json::from_str(&text).unwrap()
}

async fn page(app: &TestApp, url: &str) -> PipelineRunPage {
    get_as(app, &Role::Guest, url).await
}

async fn detail(app: &TestApp, run: &PipelineRunSummary, who: &Role) -> PipelineRunDetail {
    get_as(app, who, &GetPipelineRun::url(&run.namespace, &run.name)).await
}

fn service_query(service: &str, query: PipelineQuery) -> String {
    ListServicePipelineRuns::with_query(service, &query)
}

/// Every run of `service`, page after page.
async fn every_run(app: &TestApp, service: &str) -> Vec<PipelineRunSummary> {
    let mut runs = Vec::new();
    let mut cursor = None;
    loop {
        let page = page(
            app,
            &service_query(
                service,
                PipelineQuery {
                    cursor: cursor.clone(),
                    ..PipelineQuery::default()
                },
            ),
        )
        .await;
        runs.extend(page.runs);
        match page.next {
            Some(next) => cursor = Some(next),
            None => return runs,
        }
    }
}

fn names(runs: &[PipelineRunSummary]) -> Vec<String> {
    runs.iter().map(|r| r.name.clone()).collect()
}

/// The (event, data) pairs of an SSE body.
fn messages(body: &str) -> Vec<(String, String)> {
    body.split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim_start().to_string())
            };
            Some((field("event:")?, field("data:").unwrap_or_default()))
        })
        .collect()
}

/// The lines of a step log stream that ended by itself (it must close with the end event).
fn log_lines(body: &str) -> Vec<String> {
    let messages = messages(body);
    assert_eq!(
        messages.last().map(|(e, d)| (e.as_str(), d.as_str())),
        Some((LOG_END_EVENT, LOG_END_EVENT)),
        "{body:.2000}"
    );
    messages
        .iter()
        .filter(|(event, _)| event == LOG_CHUNK_EVENT)
        .flat_map(|(_, data)| serde_json::from_str::<LogChunk>(data).unwrap().lines)
        .collect()
}

#[tokio::test]
async fn the_ci_cluster_says_syncing_until_its_runs_are_listed_then_stays_connected() {
    // The runs list after the fleet's first picture: until they have, the CI cluster (management here)
    // must not read connected, and their first list must not make it flicker to "relisting" either.
    // Management answers slowly here, so the runs cannot have listed by the time the picture is ready.
    let (app, proxy) = behind_a_ci_proxy(Fault::Slow(Duration::from_millis(500))).await;
    let management_state = || async {
        let (status, body) = app.get_json(&GetPlatformConfig::url()).await;
        assert_eq!(status, 200, "{body}");
        let config: PlatformConfig = serde_json::from_value(body).unwrap();
        config
            .clusters
            .into_iter()
            .find(|c| c.name == "management")
            .map(|c| c.state)
            .unwrap()
    };
    let mut seen = Vec::new();
    let connected_within = std::time::Instant::now();
    loop {
        let state = management_state().await;
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        if state == SourceState::Connected {
            break;
        }
        assert!(
            connected_within.elapsed() < Duration::from_secs(20),
            "{seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seen,
        [SourceState::Syncing, SourceState::Connected],
        "syncing from the first picture until the runs are listed"
    );
    proxy.set(Fault::None);
    assert!(
        !every_run(&app, "payments").await.is_empty(),
        "connected means the runs are there"
    );
    for _ in 0..20 {
        assert_eq!(management_state().await, SourceState::Connected);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_finished_run_page_reads_its_task_runs_from_the_ci_cluster_and_says_when_it_cannot() {
    // The caches keep only what a row counts of a finished run and its TaskRuns; its page asks the cluster
    // for the rest.
    let (app, proxy) = behind_a_ci_proxy(Fault::None).await;
    assert!(
        app.state
            .pipelines
            .wait_until_ready(Duration::from_secs(20))
            .await
    );
    let run = page(&app, &service_query("payments", PipelineQuery::default()))
        .await
        .runs
        .into_iter()
        .find(|run| run.status == RunStatus::Succeeded)
        .expect("payments has a green run");
    let asked_from = proxy.received().len();
    let green = detail(&app, &run, &Role::Guest).await;
    assert!(
        proxy.received()[asked_from..]
            .iter()
            .any(|r| r.path.contains("/taskruns?") && r.path.contains("labelSelector")),
        "the page read the run's TaskRuns"
    );
    assert!(
        proxy.received()[asked_from..]
            .iter()
            .any(|r| r.path.contains("/pipelineruns?")
                && r.path.contains(&format!("metadata.name%3D{}", run.name))),
        "and the run itself"
    );
    assert!(!green.params.is_empty(), "{green:?}");
    assert!(!green.tasks.is_empty());
    for task in green
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Succeeded)
    {
        assert!(task.pod.is_some(), "{task:?}");
        assert!(!task.steps.is_empty(), "{task:?}");
        assert_eq!(
            task.message.as_deref(),
            Some("All Steps have completed executing"),
            "{task:?}"
        );
    }

    // The cluster fails: the page says which upstream, the lists still answer from the caches.
    proxy.set(Fault::ServerError);
    let response = app
        .send_as(
            &Role::Guest,
            Method::GET,
            &GetPipelineRun::url(&run.namespace, &run.name),
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let body = body_text(response).await;
    assert!(body.contains("the CI cluster"), "{body}");
    let rows = page(&app, &service_query("payments", PipelineQuery::default())).await;
    assert!(rows.runs.iter().any(|r| r.name == run.name));
    proxy.set(Fault::None);
    assert_eq!(detail(&app, &run, &Role::Guest).await.tasks, green.tasks);
}

#[tokio::test]
async fn runs_list_newest_first_twenty_a_page_with_next_and_previous_pages() {
    let app = manual_app(|_| {}).await;
    let first = page(&app, &service_query("payments", PipelineQuery::default())).await;
    assert_eq!(first.runs.len(), PAGE_SIZE);
    assert!(
        first.total > PAGE_SIZE,
        "payments has more than a page of runs"
    );
    assert_eq!(first.previous, None);
    assert!(first.runs.iter().all(|r| r.service == "payments"));
    let created: Vec<&String> = first.runs.iter().map(|r| &r.created_at).collect();
    let mut newest_first = created.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(created, newest_first);
    assert!(first.triggers.contains(&"github-push".to_string()));

    let second = page(
        &app,
        &service_query(
            "payments",
            PipelineQuery {
                cursor: first.next.clone(),
                ..PipelineQuery::default()
            },
        ),
    )
    .await;
    assert_eq!(second.runs.len(), first.total - PAGE_SIZE);
    assert!(second.runs[0].created_at <= first.runs[PAGE_SIZE - 1].created_at);
    let back = page(
        &app,
        &service_query(
            "payments",
            PipelineQuery {
                cursor: second.previous.clone(),
                ..PipelineQuery::default()
            },
        ),
    )
    .await;
    assert_eq!(names(&back.runs), names(&first.runs));

    // The fleet-wide list has every service's runs, and the same order.
    let fleet = page(
        &app,
        &ListPipelineRuns::with_query(&PipelineQuery::default()),
    )
    .await;
    assert_eq!(fleet.runs.len(), PAGE_SIZE);
    assert!(fleet.total > first.total);
    let services: std::collections::BTreeSet<&str> =
        fleet.runs.iter().map(|r| r.service.as_str()).collect();
    assert!(services.len() > 1, "{services:?}");
    let narrowed = page(
        &app,
        &ListPipelineRuns::with_query(&PipelineQuery {
            service: Some("payments".into()),
            ..PipelineQuery::default()
        }),
    )
    .await;
    assert_eq!(names(&narrowed.runs), names(&first.runs));
}

#[tokio::test]
async fn filters_narrow_the_list_and_a_bad_filter_names_its_field() {
    let app = manual_app(|_| {}).await;
    let all = every_run(&app, "payments").await;
    let query = |f: fn(&mut PipelineQuery)| {
        let mut query = PipelineQuery::default();
        f(&mut query);
        service_query("payments", query)
    };
    let failed = page(&app, &query(|q| q.status = Some("failed".into()))).await;
    assert!(!failed.runs.is_empty());
    assert!(failed.runs.iter().all(|r| r.status == RunStatus::Failed));
    assert_eq!(
        failed.total,
        all.iter().filter(|r| r.status == RunStatus::Failed).count()
    );

    let main = page(&app, &query(|q| q.revision = Some("main".into()))).await;
    assert!(main.total > 0);
    assert!(
        main.runs
            .iter()
            .all(|r| r.branch.as_deref() == Some("main"))
    );
    let pull_requests = page(
        &app,
        &query(|q| q.trigger = Some("github-pull-request".into())),
    )
    .await;
    assert!(pull_requests.total > 0);
    assert!(
        pull_requests
            .runs
            .iter()
            .all(|r| r.trigger == "github-pull-request" && r.branch.as_deref() != Some("main"))
    );
    assert_eq!(main.total + pull_requests.total, all.len());

    // A branch by its name, a run by the start of its commit.
    let branch = pull_requests.runs[0].branch.clone().unwrap();
    let on_branch = page(
        &app,
        &service_query(
            "payments",
            PipelineQuery {
                revision: Some(branch.clone()),
                ..PipelineQuery::default()
            },
        ),
    )
    .await;
    assert!(
        on_branch
            .runs
            .iter()
            .all(|r| r.branch.as_ref() == Some(&branch))
    );
    let target = &all[all.len() / 2];
    let prefix = target.commit.as_deref().unwrap()[..8].to_string();
    let by_commit = page(
        &app,
        &service_query(
            "payments",
            PipelineQuery {
                revision: Some(prefix.clone()),
                ..PipelineQuery::default()
            },
        ),
    )
    .await;
    assert!(names(&by_commit.runs).contains(&target.name));
    assert!(
        by_commit
            .runs
            .iter()
            .all(|r| r.commit.as_deref().unwrap().starts_with(&prefix))
    );

    for (url, field) in [
        (query(|q| q.status = Some("green".into())), "status"),
        (query(|q| q.cursor = Some("zz".into())), "cursor"),
        (
            query(|q| q.cursor = Some("6100".repeat(3).chars().rev().collect())),
            "cursor",
        ),
        (
            ListPipelineRuns::with_query(&PipelineQuery {
                service: Some("Not A Label".into()),
                ..PipelineQuery::default()
            }),
            "service",
        ),
        (GetPipelineRun::url("Tekton CI", "x"), "namespace"),
        (GetPipelineRun::url("tekton-ci", "-x"), "run"),
    ] {
        let (status, body) = app.get_json(&url).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["field"], field, "{url}: {body}");
    }
    for url in [
        service_query("nope", PipelineQuery::default()),
        ListPipelineRuns::with_query(&PipelineQuery {
            service: Some("nope".into()),
            ..PipelineQuery::default()
        }),
        GetPipelineRun::url("tekton-ci", "nope-build-0000000"),
    ] {
        let (status, body) = app.get_json(&url).await;
        assert_eq!(status, 404, "{url}: {body}");
    }
}

/// A PipelineRun of payments created `seconds` after now, as a trigger would create one.
fn new_run(n: usize, seconds: i64) -> Value {
    let created = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap();
    let created = jiff::Timestamp::from_second(created.as_second()).unwrap();
    json!({
        "apiVersion": "tekton.dev/v1",
        "kind": "PipelineRun",
        "metadata": {
            "name": format!("payments-build-new-{n}"),
            "namespace": sandbox::world::CI_NAMESPACE,
            "creationTimestamp": created.to_string(),
            "labels": {
                "platform.tower.dev/component": "payments",
                "tekton.dev/pipeline": "service-build",
                "triggers.tekton.dev/eventlistener": "github-push",
            },
            "annotations": {
                "platform.tower.dev/commit": format!("{n:040x}"),
                "platform.tower.dev/branch": "main",
            },
        },
        "spec": {"pipelineRef": {"name": "service-build"}},
        "status": {"conditions": [{"type": "Succeeded", "status": "Unknown", "reason": "Running"}]},
    })
}

#[tokio::test]
async fn five_runs_arriving_between_page_one_and_page_two_cause_no_duplicate_and_no_gap() {
    let app = manual_app(|_| {}).await;
    let before = every_run(&app, "payments").await;
    assert!(before.len() > PAGE_SIZE, "{}", before.len());
    let first = page(&app, &service_query("payments", PipelineQuery::default())).await;

    let management = app.sandbox.cluster("management").unwrap();
    for n in 0..5 {
        management.apply(new_run(n, 60 + n as i64)).unwrap();
    }
    let total = before.len() + 5;
    eventually(Duration::from_secs(10), || async {
        let page = page(&app, &service_query("payments", PipelineQuery::default())).await;
        (page.total == total).then_some(())
    })
    .await
    .expect("the five new runs reach the cache");

    let second = page(
        &app,
        &service_query(
            "payments",
            PipelineQuery {
                cursor: first.next.clone(),
                ..PipelineQuery::default()
            },
        ),
    )
    .await;
    let mut read = names(&first.runs);
    read.extend(names(&second.runs));
    let expected = names(&before);
    assert_eq!(
        read[..],
        expected[..read.len()],
        "page 2 follows page 1 exactly"
    );
    assert_eq!(read.len(), (2 * PAGE_SIZE).min(before.len()));

    // The new runs are on top of a fresh first page, and page 1's previous page.
    let fresh = page(&app, &service_query("payments", PipelineQuery::default())).await;
    assert_eq!(
        names(&fresh.runs[..5]),
        (0..5)
            .rev()
            .map(|n| format!("payments-build-new-{n}"))
            .collect::<Vec<_>>()
    );
    let newer = page(
        &app,
        &service_query(
            "payments",
            PipelineQuery {
                cursor: Some(
                    shared::pipelines::Cursor {
                        direction: shared::pipelines::Direction::Before,
                        key: first.runs[0].key(),
                    }
                    .encode(),
                ),
                ..PipelineQuery::default()
            },
        ),
    )
    .await;
    assert_eq!(names(&newer.runs), names(&fresh.runs[..5]));
}

#[tokio::test]
async fn a_run_page_shows_a_when_skip_a_failed_test_and_the_finally_task() {
    let app = manual_app(|_| {}).await;
    // ledger's toolchain bump ran with scan-image=false.
    let mut skip = None;
    for run in every_run(&app, "ledger").await {
        let detail = detail(&app, &run, &Role::Guest).await;
        if detail
            .tasks
            .iter()
            .any(|t| t.name == "scan" && t.status == TaskStatus::Skipped)
            && detail.summary.status == RunStatus::Succeeded
        {
            skip = Some(detail);
        }
    }
    let skip = skip.expect("ledger has a run that skipped its scan");
    let scan = skip.tasks.iter().find(|t| t.name == "scan").unwrap();
    assert_eq!(
        scan.skip_reason.as_deref(),
        Some("When Expressions evaluated to false")
    );
    assert_eq!(scan.when.len(), 1, "{scan:?}");
    assert!(!scan.when[0].passed);
    assert_eq!(scan.when[0].expression.input, "false");
    let spec_scan = skip.spec.tasks.iter().find(|t| t.name == "scan").unwrap();
    assert_eq!(spec_scan.when[0].input, "$(params.scan-image)");
    assert_eq!(skip.summary.tasks.skipped, 1);

    // A red build of main fails in `test`, skips what follows, and still notifies.
    let reds = page(
        &app,
        &ListPipelineRuns::with_query(&PipelineQuery {
            status: Some("failed".into()),
            revision: Some("main".into()),
            ..PipelineQuery::default()
        }),
    )
    .await;
    let red = reds
        .runs
        .first()
        .expect("a service has a red build of main");
    let red = detail(&app, red, &Role::Admin).await;
    assert!(red.can_read_logs);
    let test = red.tasks.iter().find(|t| t.name == "test").unwrap();
    assert_eq!(test.status, TaskStatus::Failed);
    assert_eq!(
        test.message.as_deref(),
        Some("\"step-unit\" exited with code 1")
    );
    let steps: Vec<(&str, Option<i32>)> = test
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.exit_code))
        .collect();
    assert_eq!(steps, [("install", Some(0)), ("unit", Some(1))]);
    assert!(test.pod.is_some());
    let build = red.tasks.iter().find(|t| t.name == "build-image").unwrap();
    assert_eq!(build.status, TaskStatus::Skipped);
    assert_eq!(
        build.skip_reason.as_deref(),
        Some("PipelineRun was stopping")
    );
    let last = red.tasks.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.finally, last.status),
        ("notify", true, TaskStatus::Succeeded)
    );
    assert_eq!(red.spec.finally.len(), 1);
    // Every task of the spec, in its order, then `finally`.
    let order: Vec<&str> = red.tasks.iter().map(|t| t.name.as_str()).collect();
    let spec: Vec<&str> = red
        .spec
        .tasks
        .iter()
        .chain(&red.spec.finally)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(order, spec);
    // Runs of one spec share its key.
    assert_eq!(red.spec_key, skip.spec_key);
}

#[tokio::test]
async fn a_bounded_history_keeps_the_newest_runs_and_says_how_many_it_dropped() {
    let full = {
        let app = manual_app(|_| {}).await;
        page(&app, &service_query("payments", PipelineQuery::default())).await
    };
    let app = manual_app(|config| config.pipelines.history_per_service = 3).await;
    let kept = page(&app, &service_query("payments", PipelineQuery::default())).await;
    assert_eq!(kept.history_per_service, 3);
    assert_eq!(names(&kept.runs), names(&full.runs[..3]));
    assert_eq!((kept.total, kept.dropped as usize), (3, full.total - 3));
    assert_eq!(kept.next, None);
}

/// A failed run whose `test` pod the sandbox's cluster no longer has.
async fn red_run_without_pods(app: &TestApp) -> PipelineRunSummary {
    let management = app.sandbox.cluster("management").unwrap();
    let mut cursor = None;
    loop {
        let page = page(
            app,
            &ListPipelineRuns::with_query(&PipelineQuery {
                status: Some("failed".into()),
                cursor: cursor.clone(),
                ..PipelineQuery::default()
            }),
        )
        .await;
        let mut gone = None;
        for run in page.runs {
            let detail = app
                .state
                .pipelines
                .detail(&run.namespace, &run.name, true)
                .await
                .unwrap();
            let pod = detail
                .and_then(|d| d.tasks.into_iter().find(|t| t.name == "test"))
                .and_then(|t| t.pod);
            if pod.is_some_and(|pod| {
                management
                    .get("v1", "Pod", Some(&run.namespace), &pod)
                    .is_none()
            }) {
                gone = Some(run);
                break;
            }
        }
        match (gone, page.next) {
            (Some(run), _) => return run,
            (None, Some(next)) => cursor = Some(next),
            (None, None) => panic!("no red run whose pods are gone"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_streams_a_failing_step_a_guest_is_refused_and_a_gone_pod_says_so() {
    let app = manual_app(|_| {}).await;
    // A red commit, built task by task as the clock moves.
    let simulator = app.sandbox.simulator().unwrap();
    let sha = simulator
        .push_commit("payments", "Round refunds half-up (tests fail)", false)
        .unwrap();
    let name = format!("payments-build-{}", &sha[..7]);
    let red = eventually(Duration::from_secs(60), || {
        simulator.advance(Duration::from_secs(10));
        let name = name.clone();
        let app = &app;
        async move {
            let run = app
                .state
                .pipelines
                .detail("tekton-ci", &name, true)
                .await
                .ok()??;
            (run.summary.status == RunStatus::Failed).then_some(run.summary)
        }
    })
    .await
    .expect("the red build fails");

    let url = |run: &PipelineRunSummary, follow: bool| {
        StepLog::with_query(
            "payments",
            &run.namespace,
            &run.name,
            "test",
            "unit",
            StepLogQuery { follow },
        )
    };
    let response = app
        .send_as(&Role::Owner, Method::GET, &url(&red, false))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let lines = log_lines(&body_text(response).await);
    let last = lines.last().expect("the step wrote lines");
    assert!(last.ends_with(FAILURE_LINE), "{last}");
    // Each line starts with when it was written.
    let stamp = last.split(' ').next().unwrap();
    assert!(stamp.parse::<jiff::Timestamp>().is_ok(), "{last}");

    // Guests see the run but not its logs.
    let guest = detail(&app, &red, &Role::Guest).await;
    assert!(!guest.can_read_logs);
    let response = app
        .send_as(&Role::Guest, Method::GET, &url(&red, false))
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);

    // The whole log, as a file.
    let response = app
        .send_as(
            &Role::Owner,
            Method::GET,
            &DownloadStepLog::url("payments", &red.namespace, &red.name, "test", "unit"),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(
        response.headers()["content-disposition"],
        format!("attachment; filename=\"{}-test-unit.log\"", red.name).as_str()
    );
    let text = body_text(response).await;
    assert!(text.trim_end().ends_with(FAILURE_LINE), "{text:.500}");

    // The run belongs to payments, not to ledger; its steps are what they are.
    for (url, status) in [
        (
            StepLog::url("ledger", &red.namespace, &red.name, "test", "unit"),
            StatusCode::NOT_FOUND,
        ),
        (
            StepLog::url("payments", &red.namespace, &red.name, "test", "nope"),
            StatusCode::NOT_FOUND,
        ),
        (
            StepLog::url("payments", &red.namespace, &red.name, "nope", "unit"),
            StatusCode::NOT_FOUND,
        ),
        (
            StepLog::url("payments", &red.namespace, &red.name, "scan", "scan"),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let response = app.send_as(&Role::Admin, Method::GET, &url).await;
        assert_eq!(response.status(), status, "{url}");
    }

    // An old red run's pods are gone, and its log with them: said plainly.
    let old = red_run_without_pods(&app).await;
    let response = app
        .send_as(
            &Role::Admin,
            Method::GET,
            &StepLog::url(&old.service, &old.namespace, &old.name, "test", "unit"),
        )
        .await;
    assert_eq!(response.status(), StatusCode::GONE);
    let body: Value = serde_json::from_str(&body_text(response).await).unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("is gone, and its log is no longer kept"),
        "{message}"
    );
    assert!(
        message.contains(old.finished_at.as_deref().unwrap()),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_commits_run_arrives_on_the_event_stream_and_finishes_task_by_task() {
    let app = manual_app(|_| {}).await;
    let response = app
        .send_as(&Role::Guest, Method::GET, "/api/v1/events")
        .await;
    assert_eq!(response.status(), 200);
    let mut frames = response.into_body().into_data_stream();

    let simulator = app.sandbox.simulator().unwrap();
    let sha = simulator
        .push_commit("ledger", "Name the ledger's partitions", true)
        .unwrap();
    let name = format!("ledger-build-{}", &sha[..7]);
    let mut seen: Vec<PipelineRunSummary> = Vec::new();
    let mut buffer = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while seen.last().is_none_or(|r| r.status != RunStatus::Succeeded) {
        assert!(tokio::time::Instant::now() < deadline, "{seen:?}");
        simulator.advance(Duration::from_secs(5));
        // Whatever arrived meanwhile.
        while let Ok(Some(frame)) =
            tokio::time::timeout(Duration::from_millis(50), frames.next()).await
        {
            buffer.push_str(&String::from_utf8_lossy(&frame.unwrap()));
        }
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            if let Ok(FleetEvent::PipelineRunUpdated { run }) = serde_json::from_str(data)
                && run.name == name
            {
                seen.push(run);
            }
        }
    }
    let first = &seen[0];
    assert!(
        matches!(first.status, RunStatus::Running | RunStatus::Pending),
        "{first:?}"
    );
    assert_eq!(first.tasks.succeeded, 0);
    // Tasks finish one after another: the count of succeeded tasks never goes back, and moves in steps.
    let succeeded: Vec<u32> = seen.iter().map(|r| r.tasks.succeeded).collect();
    assert!(succeeded.windows(2).all(|w| w[0] <= w[1]), "{succeeded:?}");
    let distinct: std::collections::BTreeSet<u32> = succeeded.iter().copied().collect();
    assert!(distinct.len() >= 4, "{succeeded:?}");
    let last = seen.last().unwrap();
    assert_eq!(last.tasks.succeeded, last.tasks.total);
    assert_eq!(last.commit.as_deref(), Some(sha.as_str()));
}
