//! GitHub's webhook: a delivery without the right signature changes nothing; the sandbox forge's own
//! deliveries reach browsers as `pull_request_updated` within a second, and page views of Tower's pull
//! requests cost the forge nothing.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use server::delivery::Delivery;
use server::routes::webhooks::sign;
use shared::delivery::{PullRequestView, PullState, ReviewState};
use shared::fleet::FleetEvent;
use tokio::sync::broadcast;
use tower::ServiceExt as _;

use crate::delivery::send_json;
use crate::{Role, TestApp, eventually};

const SECRET: &str = sandbox::forge::DEMO_WEBHOOK_SECRET;
const WEBHOOK: &str = "/api/v1/webhooks/github";

/// A Tower with the demo webhook secret (the forge not delivering yet).
pub(crate) async fn webhook_app() -> TestApp {
    TestApp::start_with(|config| {
        if let Some(github) = config.github.as_mut() {
            github.webhook_secret = Some(SECRET.into());
        }
    })
    .await
}

/// Serves `app`'s router on a local port and points the sandbox forge's deliveries at it, as `serve
/// --sandbox` does.
pub(crate) async fn deliver_to(app: &TestApp) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app.router.clone();
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    let config = server::sandbox_cli::tower_config(&app.sandbox, addr);
    server::sandbox_cli::deliver_webhooks(&app.sandbox, &config, addr);
    server
}

fn delivery(app: &TestApp) -> &Delivery {
    app.state
        .delivery
        .as_ref()
        .expect("the sandbox configures GitHub")
}

/// POSTs a delivery of `event` with `body`, signed by `signature` when given, as GitHub does: no cookie, no
/// CSRF header.
async fn post(app: &TestApp, event: &str, body: &str, signature: Option<&str>) -> (u16, Value) {
    let mut request = Request::post(WEBHOOK)
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    if let Some(signature) = signature {
        request = request.header("x-hub-signature-256", signature);
    }
    let response = app
        .router
        .clone()
        .oneshot(request.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A `push` to the GitOps repository's main, in GitHub's shape.
fn push_to_main() -> String {
    json!({
        "ref": "refs/heads/main",
        "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
        "after": "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c",
        "repository": {
            "full_name": "acme/application-repositories",
            "name": "application-repositories",
            "default_branch": "main",
            "owner": {"login": "acme"},
        },
        "pusher": {"name": "grace"},
        "commits": [],
    })
    .to_string()
}

/// Events other than the stream's bookkeeping received within `window`.
async fn events_within(
    events: &mut broadcast::Receiver<FleetEvent>,
    window: Duration,
) -> Vec<FleetEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + window;
    while let Ok(Ok(event)) = tokio::time::timeout_at(deadline, events.recv()).await {
        if matches!(
            event,
            FleetEvent::PullRequestUpdated { .. } | FleetEvent::ReleasesChanged
        ) {
            seen.push(event);
        }
    }
    seen
}

#[tokio::test]
async fn a_delivery_without_the_right_signature_is_refused_and_changes_nothing() {
    let app = webhook_app().await;
    // Settled: the first listing of pull requests is in and the catalog has been scanned once.
    let (status, _) = app.get_json("/api/v1/pulls").await;
    assert_eq!(status, 200);
    let catalog = delivery(&app).catalog().unwrap().clone();
    assert!(
        eventually(Duration::from_secs(10), || async {
            (catalog.scans() > 0).then_some(())
        })
        .await
        .is_some(),
        "the catalog was never scanned"
    );
    let github = delivery(&app).github().clone();
    let mut events = app.fleet.subscribe();
    let before = github.requests();

    let body = push_to_main();
    let wrong_secret = sign(b"not the secret", body.as_bytes());
    let other_body = sign(SECRET.as_bytes(), b"{}");
    let refusals: [(&str, Option<&str>); 5] = [
        ("no signature", None),
        ("another secret", Some(&wrong_secret)),
        ("another body", Some(&other_body)),
        ("not hex", Some("sha256=not-hex")),
        (
            "sha1",
            Some("sha1=0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"),
        ),
    ];
    for (why, signature) in refusals {
        let (status, error) = post(&app, "push", &body, signature).await;
        assert_eq!(status, 401, "{why}: {error}");
        assert_eq!(error["code"], "unauthenticated", "{why}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("X-Hub-Signature-256")),
            "{why}: {error}"
        );
    }
    let seen = events_within(&mut events, Duration::from_millis(500)).await;
    assert!(seen.is_empty(), "refused deliveries had effects: {seen:?}");
    assert_eq!(
        github.requests() - before,
        server::upstream::github::ForgeRequests::default(),
        "refused deliveries made Tower ask the forge"
    );

    // The same delivery, signed: taken without a session or CSRF header, and browsers hear main moved.
    let signature = sign(SECRET.as_bytes(), body.as_bytes());
    let (status, _) = post(&app, "push", &body, Some(&signature)).await;
    assert_eq!(status, 204);
    let seen = events_within(&mut events, Duration::from_millis(500)).await;
    assert!(seen.contains(&FleetEvent::ReleasesChanged), "{seen:?}");

    // `ping` and events Tower does not use are taken and ignored.
    let ping = json!({"zen": "Design for failure.", "hook_id": 5550001}).to_string();
    let (status, _) = post(
        &app,
        "ping",
        &ping,
        Some(&sign(SECRET.as_bytes(), ping.as_bytes())),
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = post(
        &app,
        "star",
        &ping,
        Some(&sign(SECRET.as_bytes(), ping.as_bytes())),
    )
    .await;
    assert_eq!(status, 204);
    // A pull request number that is not one of Tower's costs nothing.
    let stranger = json!({
        "action": "synchronize",
        "number": 999_999,
        "pull_request": {"number": 999_999, "head": {"ref": "someone/typo", "sha": "0d1a26e"}, "labels": []},
        "repository": {"full_name": "acme/application-repositories"},
    })
    .to_string();
    let before = github.requests();
    let (status, _) = post(
        &app,
        "pull_request",
        &stranger,
        Some(&sign(SECRET.as_bytes(), stranger.as_bytes())),
    )
    .await;
    assert_eq!(status, 204);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        github.requests().sent,
        before.sent,
        "a stranger's pull request was read"
    );

    // A Tower without a secret refuses even a correctly signed delivery.
    let unconfigured = TestApp::start().await;
    let (status, error) = post(&unconfigured, "push", &body, Some(&signature)).await;
    assert_eq!(status, 401, "{error}");
}

#[tokio::test]
async fn page_views_of_pull_requests_never_reach_the_forge() {
    let app = webhook_app().await;
    let (status, _) = app.get_json("/api/v1/pulls").await;
    assert_eq!(status, 200);
    let github = delivery(&app).github().clone();
    let before = github.requests();
    for _ in 0..25 {
        let (status, _) = app.get_json("/api/v1/pulls").await;
        assert_eq!(status, 200);
        let (status, _) = app.get_json("/api/v1/services/payments/pulls").await;
        assert_eq!(status, 200);
    }
    let spent = github.requests() - before;
    println!(
        "forge requests for 50 page views of pull requests: {}",
        spent.sent
    );
    assert_eq!(spent.sent, 0);
}

/// The `pull_request_updated` events of one stream, read from `/api/v1/events` as a browser does.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    async fn open(base: &str, cookie: &str) -> Self {
        let response = reqwest::Client::new()
            .get(format!("{base}/api/v1/events"))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next pull request update, waiting at most `limit`.
    async fn next_pull(&mut self, limit: Duration) -> Option<PullRequestView> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let message: String = self.buffer.drain(..end + 2).collect();
                let Some(data) = message.lines().find_map(|l| l.strip_prefix("data: ")) else {
                    continue;
                };
                if let Ok(FleetEvent::PullRequestUpdated { pull }) = serde_json::from_str(data) {
                    return Some(pull);
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?
                .ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Waits for the update of pull request `number` that satisfies `wanted`.
    async fn wait_for(
        &mut self,
        number: u64,
        limit: Duration,
        wanted: impl Fn(&PullRequestView) -> bool,
    ) -> Option<PullRequestView> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let pull = self.next_pull(left).await?;
            if pull.number == number && wanted(&pull) {
                return Some(pull);
            }
        }
    }
}

fn grace(pull: &PullRequestView) -> Option<ReviewState> {
    pull.reviews
        .iter()
        .find(|r| r.reviewer == sandbox::forge::DEMO_REVIEWER)
        .map(|r| r.state)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[tokio::test]
async fn the_forges_deliveries_reach_the_event_stream_within_a_second() {
    let app = webhook_app().await;
    let server = deliver_to(&app).await;
    let target = app
        .sandbox
        .forge()
        .webhook_target()
        .expect("the forge delivers");
    let base = target.url.trim_end_matches(WEBHOOK).to_string();
    let cookie = app.session_cookie(Role::Guest.identity().unwrap());
    let mut stream = EventStream::open(&base, &cookie).await;

    // An owner's Promote opens a pull request; the forge's CI checks it and the demo reviewer reviews it,
    // each announced by webhook and on the stream.
    let (status, opened) = send_json(
        &app,
        &Role::Owner,
        axum::http::Method::POST,
        "/api/v1/services/payments/promote",
        json!({}),
    )
    .await;
    assert!(status == 201 || status == 200, "{status} {opened}");
    let number = opened["number"].as_u64().unwrap();
    let checked = stream
        .wait_for(number, Duration::from_secs(30), |p| {
            p.checks.iter().any(|c| c.status == "completed") && grace(p).is_some()
        })
        .await
        .expect("the check and the demo reviewer's review never reached the stream");
    println!(
        "#{number}: checks {:?}, reviews {:?}, blockers {:?}",
        checked.checks, checked.reviews, checked.blockers
    );
    assert_eq!(checked.state, PullState::Open);
    if checked
        .checks
        .iter()
        .all(|c| c.conclusion.as_deref() == Some("success"))
    {
        assert_eq!(grace(&checked), Some(ReviewState::Approved));
        assert!(checked.blockers.is_empty(), "{:?}", checked.blockers);
    }

    // Now each review by the demo reviewer, timed from the forge action to the browser's event.
    let client = reqwest::Client::new();
    let mut latencies = Vec::new();
    for sample in 0..20 {
        let (event, body, expected) = if sample % 2 == 0 {
            (
                "REQUEST_CHANGES",
                format!("Sample {sample}: please look again."),
                ReviewState::ChangesRequested,
            )
        } else {
            ("APPROVE", String::new(), ReviewState::Approved)
        };
        let started = Instant::now();
        let response = client
            .post(format!(
                "{}/sandbox/pulls/{number}/review",
                app.sandbox.url()
            ))
            .json(&json!({"event": event, "body": body}))
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "{}",
            response.text().await.unwrap()
        );
        let seen = stream
            .wait_for(number, Duration::from_secs(5), |p| {
                grace(p) == Some(expected)
            })
            .await;
        assert!(seen.is_some(), "sample {sample}: no update within 5 s");
        latencies.push(started.elapsed());
    }
    latencies.sort();
    let (p50, p95, max) = (
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.95),
        latencies[latencies.len() - 1],
    );
    println!(
        "forge review → pull_request_updated on /api/v1/events over {} samples: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        latencies.len(),
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    assert!(p95 < Duration::from_secs(1), "p95 {p95:?}");

    // A merge: the pull request is merged on the stream, browsers hear main moved, and the activity feed
    // has the merge long before its backup read (minutes away) would find it.
    let mut events = app.fleet.subscribe();
    app.sandbox
        .forge()
        .merge("application-repositories", number, "grace")
        .await
        .unwrap();
    stream
        .wait_for(number, Duration::from_secs(5), |p| {
            p.state == PullState::Merged
        })
        .await
        .expect("the merge never reached the stream");
    let releases_changed = eventually(Duration::from_secs(5), || {
        let found =
            std::iter::from_fn(|| events.try_recv().ok()).any(|e| e == FleetEvent::ReleasesChanged);
        async move { found.then_some(()) }
    })
    .await;
    assert!(
        releases_changed.is_some(),
        "no releases_changed after the merge"
    );
    let merged = eventually(Duration::from_secs(5), || async {
        let (_, activity) = app.get_json("/api/v1/activity").await;
        activity
            .as_array()
            .unwrap()
            .iter()
            .any(|item| {
                item["kind"] == "pull_request_merged"
                    && item["link"]
                        .as_str()
                        .is_some_and(|link| link.ends_with(&format!("/pull/{number}")))
            })
            .then_some(())
    })
    .await;
    assert!(
        merged.is_some(),
        "the merge never reached the activity feed"
    );
    server.abort();
}
