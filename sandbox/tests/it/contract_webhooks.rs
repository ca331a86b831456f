//! Every webhook the forge delivers validated against GitHub's webhook payload schemas, and delivered with
//! GitHub's headers.
//!
//! The schemas are `sandbox/contracts/github-webhooks/schema.json`, cut from the published
//! `@octokit/webhooks-schemas` by `update.mjs` beside it. Together with the unit test in
//! `sandbox/src/forge/webhooks.rs` (the forge delivers only the kinds it lists, and each has a vendored
//! schema), the scenario below closes the loop: every kind the forge can deliver is triggered here, and a
//! delivery of a kind without a schema fails the test.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use jsonschema::Draft;
use sandbox::forge::{DEMO_WEBHOOK_SECRET, WebhookTarget};
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::mpsc;

use crate::contract::Contract;
use crate::forge::{TestForge, within};

/// Every kind of delivery the forge makes, `event/action` (`push` has no action), each triggered by the
/// scenario below: the forge refuses to send a kind not on its list, and the scenario fails on a listed kind it
/// never received.
const KINDS: [&str; 11] = sandbox::forge::DELIVERED_WEBHOOKS;

/// The schema definition a kind's payload must match: `push$event`, `pull_request$opened`, ….
fn definition(kind: &str) -> String {
    match kind.split_once('/') {
        Some((event, action)) => format!("{event}${action}"),
        None => format!("{kind}$event"),
    }
}

/// One validator per kind, from the vendored subset of GitHub's webhook payload schemas (draft 7, whose
/// `format`s are assertions: a `uri` must be one).
fn validators() -> BTreeMap<&'static str, jsonschema::Validator> {
    let contract = Contract::load("contracts/github-webhooks/schema.json", Draft::Draft7);
    KINDS
        .iter()
        .map(|kind| {
            let pointer = format!("/definitions/{}", definition(kind));
            (*kind, contract.validator(&pointer))
        })
        .collect()
}

/// Every schema error of `payload`, one a line, with where in the payload and in the schema it is. Unlike
/// `contract::violations`, the required properties missing from one object share a line: a repository
/// object short of twenty URLs is one problem, not twenty.
fn violations(validator: &jsonschema::Validator, payload: &Value) -> Vec<String> {
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut lines = Vec::new();
    for error in validator.iter_errors(payload) {
        let place = format!(
            "at {} (schema {})",
            error.instance_path(),
            error.schema_path()
        );
        match error.kind() {
            jsonschema::error::ValidationErrorKind::Required { property } => missing
                .entry(place)
                .or_default()
                .push(property.as_str().unwrap_or_default().to_string()),
            _ => lines.push(format!(
                "{place}: {}",
                error.to_string().chars().take(160).collect::<String>()
            )),
        }
    }
    lines.extend(
        missing
            .into_iter()
            .map(|(place, properties)| format!("{place}: missing {}", properties.join(", "))),
    );
    lines
}

/// One delivery as the receiver saw it.
#[derive(Debug)]
struct Received {
    headers: HeaderMap,
    body: Bytes,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// `event/action`, or the event alone when the payload has no action.
    fn kind(&self) -> String {
        let event = self.header("x-github-event");
        match self.json()["action"].as_str() {
            Some(action) => format!("{event}/{action}"),
            None => event.to_string(),
        }
    }
}

/// A receiver on a free port taking every delivery with 204.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Received>) {
    let (sender, received) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let _ = sender.send(Received { headers, body });
            async { StatusCode::NO_CONTENT }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hooks"), received)
}

/// The problems with a delivery's headers, checked as GitHub documents them ("Webhook events and
/// payloads": delivery headers) and as a receiver verifies them ("Validating webhook deliveries").
fn header_problems(delivery: &Received, secret: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let event = delivery.header("x-github-event");
    if event.is_empty() {
        problems.push("X-GitHub-Event is empty".to_string());
    }
    let id = delivery.header("x-github-delivery");
    if uuid_shape(id).is_none() {
        problems.push(format!("X-GitHub-Delivery {id:?} is not a GUID"));
    }
    let signature = delivery.header("x-hub-signature-256");
    match signature.strip_prefix("sha256=").and_then(lower_hex) {
        Some(digest) => {
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
            mac.update(&delivery.body);
            if mac.verify_slice(&digest).is_err() {
                problems.push(format!(
                    "X-Hub-Signature-256 {signature} is not the body's HMAC-SHA256 with the secret"
                ));
            }
        }
        None => problems.push(format!(
            "X-Hub-Signature-256 {signature:?} is not sha256= and 64 lower-case hex digits"
        )),
    }
    let content_type = delivery.header("content-type");
    if content_type != "application/json" {
        problems.push(format!("Content-Type is {content_type:?}"));
    }
    let agent = delivery.header("user-agent");
    if !agent.starts_with("GitHub-Hookshot/") || agent.len() == "GitHub-Hookshot/".len() {
        problems.push(format!("User-Agent {agent:?} is not GitHub-Hookshot/…"));
    }
    problems
}

/// `Some` when `id` is a GUID as GitHub writes it: 8-4-4-4-12 lower-case hex digits.
fn uuid_shape(id: &str) -> Option<()> {
    let groups: Vec<&str> = id.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    (lengths == [8, 4, 4, 4, 12] && groups.iter().all(|g| lower_hex(g).is_some())).then_some(())
}

/// The bytes of an even-length string of lower-case hex digits (a whole SHA-256 when 64 long).
fn lower_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[test]
fn the_header_checks_catch_what_a_receiver_would_reject() {
    let body = br#"{"zen":"Keep it logically awesome."}"#;
    let good = || {
        let mut headers = HeaderMap::new();
        headers.insert("x-github-event", "ping".parse().unwrap());
        headers.insert(
            "x-github-delivery",
            "72d3162e-cc78-11e3-81ab-4c9367dc0958".parse().unwrap(),
        );
        headers.insert(
            "x-hub-signature-256",
            sandbox::forge::webhook_signature("s3cret", body)
                .parse()
                .unwrap(),
        );
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("user-agent", "GitHub-Hookshot/044aadd".parse().unwrap());
        headers
    };
    let delivery = |headers| Received {
        headers,
        body: Bytes::from_static(body),
    };
    assert_eq!(
        header_problems(&delivery(good()), "s3cret"),
        Vec::<String>::new()
    );
    assert_eq!(header_problems(&delivery(good()), "other").len(), 1);
    for (name, bad) in [
        ("x-github-delivery", "42"),
        ("x-hub-signature-256", "sha1=0123"),
        ("content-type", "application/x-www-form-urlencoded"),
        ("user-agent", "reqwest/0.12"),
    ] {
        let mut headers = good();
        headers.insert(name, bad.parse().unwrap());
        assert_eq!(
            header_problems(&delivery(headers), "s3cret").len(),
            1,
            "{name}"
        );
    }
}

#[test]
fn the_payload_schemas_reject_what_github_would_never_send() {
    let validators = validators();
    // A validator that took anything (a wrong pointer, a `$ref` resolving to nothing) would let the contract
    // test pass without checking: payloads short of what GitHub always sends must fail.
    let push = &validators["push"];
    assert!(!violations(push, &json!({"ref": "refs/heads/main"})).is_empty());
    let labeled = &validators["pull_request/labeled"];
    assert!(!violations(labeled, &json!({"action": "labeled", "number": 1})).is_empty());
}

#[tokio::test]
async fn every_webhook_the_forge_delivers_has_githubs_payload_shape_and_headers() {
    let validators = validators();
    let forge = TestForge::start().await;
    let (url, mut received) = receiver().await;
    forge.forge.deliver_webhooks_to(Some(WebhookTarget {
        url,
        secret: DEMO_WEBHOOK_SECRET.into(),
    }));
    let token = forge.token().await;
    let ada = forge.forge.user_token("ada");
    let pulls = format!("/repos/acme/{GITOPS_REPOSITORY}/pulls");
    let issues = format!("/repos/acme/{GITOPS_REPOSITORY}/issues");

    // push (a branch created), pull_request/opened, check_run/created (the forge's CI).
    let release = "platform/environments/dev/payments-release.yaml";
    let paused = forge
        .gitops_file(release)
        .replace("autoDeploy: true", "autoDeploy: false");
    let (number, head) = forge
        .open_pull("contract", "Pause payments in dev", &[(release, &paused)])
        .await;
    let send = |request: reqwest::RequestBuilder, token: &str| {
        let request = request.bearer_auth(token);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            assert!(
                status.is_success(),
                "{status}: {}",
                response.text().await.unwrap()
            );
        }
    };
    // pull_request/labeled, pull_request/unlabeled.
    send(
        forge
            .http
            .post(forge.api(&format!("{issues}/{number}/labels")))
            .json(&json!({"labels": ["pause"]})),
        &token,
    )
    .await;
    send(
        forge
            .http
            .delete(forge.api(&format!("{issues}/{number}/labels/pause"))),
        &token,
    )
    .await;
    // pull_request/edited, then closed and reopened.
    for change in [
        json!({"title": "Pause payments in dev for the migration"}),
        json!({"state": "closed"}),
        json!({"state": "open"}),
    ] {
        send(
            forge
                .http
                .patch(forge.api(&format!("{pulls}/{number}")))
                .json(&change),
            &token,
        )
        .await;
    }
    // push and pull_request/synchronize: a commit onto the pull request's branch (and a new CI run).
    let notes = base64::engine::general_purpose::STANDARD.encode("Paused for the migration.\n");
    send(
        forge
            .http
            .put(forge.api(&format!(
                "/repos/acme/{GITOPS_REPOSITORY}/contents/platform/NOTES.md"
            )))
            .json(&json!({"message": "Say why", "content": notes, "branch": "contract"})),
        &ada,
    )
    .await;
    // check_run/created and check_run/completed from a client's own check run.
    let response = forge
        .http
        .post(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/check-runs")))
        .bearer_auth(&token)
        .json(&json!({"name": "contract / lint", "head_sha": head, "status": "in_progress"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let run: Value = response.json().await.unwrap();
    send(
        forge
            .http
            .patch(forge.api(&format!(
                "/repos/acme/{GITOPS_REPOSITORY}/check-runs/{}",
                run["id"]
            )))
            .json(&json!({"status": "completed", "conclusion": "neutral"})),
        &token,
    )
    .await;
    // The forge's CI completes; the demo reviewer reviews (pull_request_review/submitted), as does ada.
    forge.tick_in(8);
    send(
        forge
            .http
            .post(forge.api(&format!("{pulls}/{number}/reviews")))
            .json(&json!({"event": "COMMENT", "body": "Noted."})),
        &ada,
    )
    .await;
    // push and pull_request/closed from the merge; a push deleting the branch.
    forge
        .forge
        .merge(GITOPS_REPOSITORY, number, "root")
        .await
        .unwrap();
    send(
        forge.http.delete(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/git/refs/heads/contract"
        ))),
        &token,
    )
    .await;

    // Every delivery, in order, up to the branch's deletion (the last thing done), and any stragglers.
    let mut deliveries = Vec::new();
    loop {
        let delivery = within(received.recv()).await.unwrap();
        let last = delivery.kind() == "push" && delivery.json()["deleted"] == true;
        deliveries.push(delivery);
        if last {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    while let Ok(delivery) = received.try_recv() {
        deliveries.push(delivery);
    }

    // Each problem once, with the kinds it was found in: one wrong shared object fails many payloads.
    let mut failures: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for delivery in &deliveries {
        let kind = delivery.kind();
        let mut problems = header_problems(delivery, DEMO_WEBHOOK_SECRET);
        if !ids.insert(delivery.header("x-github-delivery").to_string()) {
            problems.push("a delivery id sent twice".to_string());
        }
        match validators.get(kind.as_str()) {
            Some(validator) => problems.extend(violations(validator, &delivery.json())),
            None => problems.push(
                "delivered, but no vendored schema covers it (add it to the forge's DELIVERED and update.mjs)"
                    .into(),
            ),
        }
        for problem in problems {
            failures.entry(problem).or_default().insert(kind.clone());
        }
        seen.insert(kind);
    }
    // `edited` says what changed from what, as a receiver reads it: the title, from the one it had.
    for edited in deliveries
        .iter()
        .filter(|d| d.kind() == "pull_request/edited")
    {
        let from = &edited.json()["changes"]["title"]["from"];
        if from != "Pause payments in dev" {
            failures
                .entry(format!(
                    "changes.title.from is {from}, not the title before the edit"
                ))
                .or_default()
                .insert("pull_request/edited".into());
        }
    }
    let missing: Vec<&&str> = KINDS.iter().filter(|k| !seen.contains(**k)).collect();
    assert!(missing.is_empty(), "never delivered: {missing:?}");
    // The scenario's pushes include a deletion (no head commit) and a merge (two commits).
    let pushes: Vec<Value> = deliveries
        .iter()
        .filter(|d| d.kind() == "push")
        .map(Received::json)
        .collect();
    assert!(
        pushes
            .iter()
            .any(|p| p["deleted"] == true && p["head_commit"].is_null())
    );
    assert!(
        pushes
            .iter()
            .any(|p| p["commits"].as_array().unwrap().len() >= 2)
    );
    let report: Vec<String> = failures
        .iter()
        .map(|(problem, kinds)| {
            format!(
                "{problem}  [{}]",
                Vec::from_iter(kinds.iter().map(String::as_str)).join(", ")
            )
        })
        .collect();
    assert!(
        report.is_empty(),
        "{} problems:\n{}",
        report.len(),
        report.join("\n")
    );
}
