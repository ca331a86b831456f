//! Log history: an owner reads the last lines of a pod a rollout replaced from the log store, each line
//! marked as from the store; guests read no logs, live or stored; a pod name that could break LogQL never
//! reaches the store; without a store the panel's listing says logs are live only.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use shared::api::{ListLogPods, LogQuery, Logs};
use shared::logs::{LogLine, LogSource, RecentPods};

use crate::{Role, TestApp, body_text, eventually};

async fn manual_app(adjust: impl FnOnce(&mut server::config::TowerConfig)) -> TestApp {
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.simulate = sandbox::Simulate::Manual;
    TestApp::start_on(options, adjust).await
}

/// The names of `service`'s running pods in `env`, as the fleet model has them.
fn running(app: &TestApp, service: &str, env: &str) -> BTreeSet<String> {
    app.fleet
        .service_detail(service)
        .and_then(|d| d.cards.into_iter().find(|c| c.environment == env))
        .map(|c| c.pods.into_iter().map(|p| p.name).collect())
        .unwrap_or_default()
}

async fn log_pods(app: &TestApp, who: &Role, env: &str) -> (StatusCode, Option<RecentPods>) {
    let response = app
        .send_as(who, Method::GET, &ListLogPods::url("payments", env))
        .await;
    let status = response.status();
    let text = body_text(response).await;
    (status, serde_json::from_str(&text).ok())
}

/// The log lines of an SSE body that ended by itself, parsed; the body must close with the end event,
/// which tells the browser not to reconnect for the same tail.
pub(crate) fn lines(body: &str) -> Vec<LogLine> {
    let messages: Vec<(&str, &str)> = body
        .split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(str::trim_start)
            };
            Some((field("event:")?, field("data:").unwrap_or_default()))
        })
        .collect();
    // With data: a browser would not dispatch an event without any.
    assert_eq!(
        messages.last().copied(),
        Some((shared::api::LOG_END_EVENT, shared::api::LOG_END_EVENT)),
        "{body}"
    );
    messages
        .iter()
        .filter(|(event, _)| *event == shared::api::LOG_EVENT)
        .map(|(_, data)| serde_json::from_str(data).unwrap())
        .collect()
}

pub(crate) fn tail_of(pod: &str, lines: i64) -> LogQuery {
    LogQuery {
        pod: pod.into(),
        tail: Some(lines),
        ..LogQuery::default()
    }
}

/// Pushes a green commit of payments and lets the simulator roll it out to dev until every pod running
/// before is gone from the fleet model; returns those pods.
async fn replace_payments_pods_in_dev(app: &TestApp) -> BTreeSet<String> {
    let before = running(app, "payments", "dev");
    assert!(!before.is_empty(), "payments runs in dev");
    let simulator = app.sandbox.simulator().unwrap();
    simulator
        .push_commit("payments", "Log capture ids", true)
        .unwrap();
    for _ in 0..240 {
        simulator.advance(Duration::from_secs(5));
        let now = running(app, "payments", "dev");
        if !now.is_empty() && now.is_disjoint(&before) {
            return before;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the rollout never replaced {before:?}: {:?}",
        running(app, "payments", "dev")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_reads_the_last_lines_of_a_pod_a_rollout_replaced_marked_as_from_the_store() {
    let app = manual_app(|_| {}).await;
    let before = replace_payments_pods_in_dev(&app).await;
    let old = before.iter().next().unwrap().clone();

    // The owner's picker lists the running pods first, then the gone one.
    let listing = eventually(Duration::from_secs(10), || async {
        let (status, pods) = log_pods(&app, &Role::Owner, "dev").await;
        assert_eq!(status, StatusCode::OK);
        pods.filter(|p| p.pods.iter().any(|p| p.gone && p.name == old))
    })
    .await
    .expect("the replaced pod is listed as gone");
    assert!(listing.store);
    assert!(!listing.store_unavailable);
    let first_gone = listing.pods.iter().position(|p| p.gone).unwrap();
    assert!(listing.pods[..first_gone].iter().all(|p| !p.gone));
    assert!(listing.pods[first_gone..].iter().all(|p| p.gone));
    let gone = listing.pods.iter().find(|p| p.name == old).unwrap();
    assert!(!gone.containers.is_empty());
    assert!(gone.last_line_at.is_some());
    // Newest first.
    let times: Vec<&String> = listing.pods[first_gone..]
        .iter()
        .filter_map(|p| p.last_line_at.as_ref())
        .collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted);

    // Its last lines come from the store and say so.
    let response = app
        .send_as(
            &Role::Owner,
            Method::GET,
            &Logs::with_query("payments", "dev", &tail_of(&old, 5)),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let stored = lines(&body_text(response).await);
    assert!(!stored.is_empty() && stored.len() <= 5, "{stored:?}");
    assert!(stored.iter().all(|l| l.source == LogSource::Store));
    // Each line starts with when it was written, as a live line does.
    assert!(
        stored.iter().all(|l| l
            .text
            .split(' ')
            .next()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok()),
        "{stored:?}"
    );

    // A running pod's lines are marked live.
    let live = running(&app, "payments", "dev").into_iter().next().unwrap();
    let response = app
        .send_as(
            &Role::Owner,
            Method::GET,
            &Logs::with_query("payments", "dev", &tail_of(&live, 5)),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let read = lines(&body_text(response).await);
    assert!(read.iter().all(|l| l.source == LogSource::Live), "{read:?}");

    // Guests read neither, nor the listing.
    for path in [
        Logs::with_query("payments", "dev", &tail_of(&old, 5)),
        Logs::with_query("payments", "dev", &tail_of(&live, 5)),
        ListLogPods::url("payments", "dev"),
    ] {
        let response = app.send_as(&Role::Guest, Method::GET, &path).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{path}");
    }

    // Another service's namespace does not hold payments' gone pod.
    let response = app
        .send_as(
            &Role::Admin,
            Method::GET,
            &Logs::with_query("ledger", "dev", &tail_of(&old, 5)),
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_pod_name_that_could_break_logql_is_refused_before_the_store_hears_of_it() {
    let app = TestApp::start().await;
    let store = app.sandbox.log_store();
    let before = store.requests();
    for pod in [
        r#"x"} or {pod=~".+"#,
        r#"payments-1",container=~".+"#,
        "payments-1\n",
        "Payments-1",
        "",
    ] {
        let response = app
            .send_as(
                &Role::Owner,
                Method::GET,
                &Logs::with_query("payments", "prod", &tail_of(pod, 5)),
            )
            .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{pod:?}");
        let body: serde_json::Value = serde_json::from_str(&body_text(response).await).unwrap();
        assert_eq!(body["field"], "pod", "{pod:?}: {body}");
    }
    assert_eq!(store.requests(), before, "the store heard nothing");

    // A well-formed name the store does not list is refused too, after the store listed the namespace.
    let response = app
        .send_as(
            &Role::Owner,
            Method::GET,
            &Logs::with_query("payments", "prod", &tail_of("payments-gone-1", 5)),
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn without_a_log_store_only_running_pods_are_offered() {
    let app = TestApp::start_with(|config| config.loki = None).await;
    let (status, listing) = log_pods(&app, &Role::Owner, "dev").await;
    assert_eq!(status, StatusCode::OK);
    let listing = listing.unwrap();
    assert!(!listing.store);
    assert!(!listing.pods.is_empty());
    assert!(listing.pods.iter().all(|p| !p.gone));
    let (status, _) = log_pods(&app, &Role::Guest, "dev").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let response = app
        .send_as(
            &Role::Owner,
            Method::GET,
            &Logs::with_query("payments", "dev", &tail_of("payments-gone-1", 5)),
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}
