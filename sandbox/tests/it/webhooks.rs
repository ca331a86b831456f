//! The forge's signed webhooks, received by a small axum receiver as an App's webhook URL receives them:
//! GitHub's headers, a signature that verifies with the secret, GitHub's payload shapes, in the order
//! things happened; a refused delivery is tried again.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use sandbox::forge::{DEMO_REVIEWER, DEMO_WEBHOOK_SECRET, WebhookTarget};
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::mpsc;

use crate::forge::{TestForge, within};

/// One delivery as the receiver saw it.
#[derive(Debug)]
struct Received {
    headers: HeaderMap,
    body: Bytes,
}

impl Received {
    fn event(&self) -> &str {
        self.headers["x-github-event"].to_str().unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// `event/action`, or the event alone when it has no action.
    fn kind(&self) -> String {
        match self.json()["action"].as_str() {
            Some(action) => format!("{}/{action}", self.event()),
            None => self.event().to_string(),
        }
    }
}

/// A receiver on a free port that answers the first `refuse` deliveries with 500, two seconds late, and
/// takes the rest at once.
async fn receiver(refuse: usize) -> (String, mpsc::UnboundedReceiver<Received>) {
    let (sender, received) = mpsc::unbounded_channel();
    let refused = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let sender = sender.clone();
            let refused = refused.clone();
            async move {
                let _ = sender.send(Received { headers, body });
                if refused.fetch_add(1, Ordering::SeqCst) < refuse {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    StatusCode::INTERNAL_SERVER_ERROR
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hooks"), received)
}

fn verifies(received: &Received, secret: &str) -> bool {
    let header = received.headers["x-hub-signature-256"].to_str().unwrap();
    let Some(hex) = header.strip_prefix("sha256=") else {
        return false;
    };
    let expected: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(&received.body);
    mac.verify_slice(&expected).is_ok()
}

/// The next `count` deliveries.
async fn next(received: &mut mpsc::UnboundedReceiver<Received>, count: usize) -> Vec<Received> {
    let mut out = Vec::new();
    for _ in 0..count {
        out.push(within(received.recv()).await.unwrap());
    }
    out
}

#[tokio::test]
async fn a_pull_requests_life_arrives_signed_in_order_and_a_merge_is_a_closed_pull_request_and_a_push()
 {
    let forge = TestForge::start().await;
    let (url, mut received) = receiver(0).await;
    forge.forge.deliver_webhooks_to(Some(WebhookTarget {
        url,
        secret: DEMO_WEBHOOK_SECRET.into(),
    }));
    let release = "platform/environments/dev/payments-release.yaml";
    let paused = forge
        .gitops_file(release)
        .replace("autoDeploy: true", "autoDeploy: false");
    let (number, head) = forge
        .open_pull("hooks", "Pause payments in dev", &[(release, &paused)])
        .await;
    let token = forge.token().await;
    forge
        .http
        .post(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/labels"
        )))
        .bearer_auth(&token)
        .json(&json!({"labels": ["pause"]}))
        .send()
        .await
        .unwrap();
    forge.tick_in(8);
    let main_before = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]);
    let merge = forge
        .forge
        .merge(GITOPS_REPOSITORY, number, "root")
        .await
        .unwrap();

    let deliveries = next(&mut received, 8).await;
    let kinds: Vec<String> = deliveries.iter().map(Received::kind).collect();
    assert_eq!(
        kinds,
        [
            "push",
            "pull_request/opened",
            "check_run/created",
            "pull_request/labeled",
            "check_run/completed",
            "pull_request_review/submitted",
            "push",
            "pull_request/closed",
        ]
    );
    let mut ids = std::collections::BTreeSet::new();
    for delivery in &deliveries {
        assert!(
            verifies(delivery, DEMO_WEBHOOK_SECRET),
            "{}",
            delivery.kind()
        );
        assert!(!verifies(delivery, "another secret"));
        assert_eq!(
            delivery.headers["user-agent"].to_str().unwrap(),
            "GitHub-Hookshot/sandbox"
        );
        assert_eq!(delivery.headers["content-type"], "application/json");
        let id = delivery.headers["x-github-delivery"].to_str().unwrap();
        assert_eq!(id.len(), 36, "{id}");
        assert!(ids.insert(id.to_string()), "delivery id {id} twice");
        let payload = delivery.json();
        assert_eq!(
            payload["repository"]["full_name"],
            "acme/application-repositories"
        );
        assert_eq!(payload["repository"]["name"], GITOPS_REPOSITORY);
        assert_eq!(payload["repository"]["owner"]["login"], "acme");
        assert_eq!(payload["repository"]["default_branch"], "main");
        assert_eq!(payload["repository"]["private"], false);
        assert!(payload["repository"]["id"].is_u64());
        assert_eq!(
            payload["installation"]["id"],
            sandbox::forge::DEMO_INSTALLATION_ID
        );
        assert!(payload["sender"]["login"].is_string());
    }

    // The branch created for the pull request: one new commit, the file it modified.
    let created = deliveries[0].json();
    assert_eq!(created["ref"], "refs/heads/hooks");
    assert_eq!(created["created"], true);
    assert_eq!(created["before"], "0".repeat(40));
    assert_eq!(created["after"], head.as_str());
    assert_eq!(created["commits"].as_array().unwrap().len(), 1);
    assert_eq!(created["commits"][0]["modified"], json!([release]));
    assert_eq!(created["head_commit"]["id"], head.as_str());
    assert_eq!(created["sender"]["login"], "tower-app[bot]");

    let opened = deliveries[1].json();
    assert_eq!(opened["number"], number);
    assert_eq!(opened["pull_request"]["number"], number);
    assert_eq!(opened["pull_request"]["state"], "open");
    assert_eq!(opened["pull_request"]["head"]["sha"], head.as_str());
    assert_eq!(opened["pull_request"]["head"]["ref"], "hooks");

    let run = deliveries[2].json();
    assert_eq!(run["check_run"]["name"], "tower-ci / validate");
    assert_eq!(run["check_run"]["status"], "in_progress");
    assert_eq!(run["check_run"]["head_sha"], head.as_str());
    assert!(run["check_run"]["html_url"].is_string());
    assert_eq!(run["check_run"]["pull_requests"][0]["number"], number);
    assert_eq!(run["check_run"]["pull_requests"][0]["head"]["ref"], "hooks");
    assert_eq!(
        run["check_run"]["pull_requests"][0]["head"]["sha"],
        head.as_str()
    );
    assert_eq!(run["check_run"]["pull_requests"][0]["base"]["ref"], "main");

    let labeled = deliveries[3].json();
    assert_eq!(labeled["label"]["name"], "pause");

    let completed = deliveries[4].json();
    assert_eq!(completed["check_run"]["status"], "completed");
    assert_eq!(completed["check_run"]["conclusion"], "success");

    let review = deliveries[5].json();
    assert_eq!(review["review"]["user"]["login"], DEMO_REVIEWER);
    assert_eq!(review["review"]["state"], "approved");
    assert_eq!(review["review"]["commit_id"], head.as_str());
    assert!(review["review"]["submitted_at"].is_string());
    assert!(review["review"]["id"].is_u64());
    assert_eq!(review["pull_request"]["number"], number);
    assert_eq!(review["sender"]["login"], DEMO_REVIEWER);

    let pushed = deliveries[6].json();
    assert_eq!(pushed["ref"], "refs/heads/main");
    assert_eq!(pushed["before"], main_before.trim());
    assert_eq!(pushed["after"], merge.merge_sha.as_str());
    assert_eq!(pushed["created"], false);
    assert_eq!(pushed["forced"], false);
    assert_eq!(pushed["pusher"]["name"], "root");
    let commits: Vec<&str> = pushed["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(commits, [head.as_str(), merge.merge_sha.as_str()]);
    assert_eq!(pushed["head_commit"]["id"], merge.merge_sha.as_str());
    assert_eq!(pushed["head_commit"]["modified"], json!([release]));
    assert!(pushed["head_commit"]["author"]["username"].is_string());

    let closed = deliveries[7].json();
    assert_eq!(closed["pull_request"]["merged"], true);
    assert_eq!(closed["pull_request"]["state"], "closed");
    assert_eq!(
        closed["pull_request"]["merge_commit_sha"],
        merge.merge_sha.as_str()
    );
    assert_eq!(closed["sender"]["login"], "root");

    // Nothing else was sent.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(received.try_recv().is_err());
}

#[tokio::test]
async fn a_refused_delivery_is_tried_again_with_the_same_id_without_holding_up_the_api() {
    let forge = TestForge::start().await;
    let (url, mut received) = receiver(1).await;
    forge.forge.deliver_webhooks_to(Some(WebhookTarget {
        url,
        secret: "s3cret".into(),
    }));
    let token = forge.token().await;
    let main = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]);
    let started = std::time::Instant::now();
    let response = forge
        .http
        .post(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/git/refs")))
        .bearer_auth(&token)
        .json(&json!({"ref": "refs/heads/retried", "sha": main.trim()}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    // The receiver takes two seconds to refuse; the API answered without waiting for it.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    let tries = next(&mut received, 2).await;
    assert_eq!(
        tries[0].headers["x-github-delivery"],
        tries[1].headers["x-github-delivery"]
    );
    assert_eq!(tries[0].body, tries[1].body);
    assert!(verifies(&tries[1], "s3cret"));
    let push = tries[1].json();
    assert_eq!(push["ref"], "refs/heads/retried");
    assert_eq!(push["created"], true);
    assert_eq!(push["commits"], json!([]));
    assert_eq!(push["head_commit"]["id"], main.trim());

    // Deleting the branch is a push too; and after unsubscribing, nothing is sent.
    forge
        .http
        .delete(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/git/refs/heads/retried"
        )))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let deleted = next(&mut received, 1).await.remove(0).json();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(deleted["after"], "0".repeat(40));
    assert_eq!(deleted["head_commit"], Value::Null);
    forge.forge.deliver_webhooks_to(None);
    forge
        .http
        .post(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/git/refs")))
        .bearer_auth(&token)
        .json(&json!({"ref": "refs/heads/unheard", "sha": main.trim()}))
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(received.try_recv().is_err());
}

#[tokio::test]
async fn commits_the_simulator_makes_and_contents_writes_are_pushes_too() {
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.simulate = sandbox::Simulate::Manual;
    let sandbox = sandbox::Sandbox::start_with(options).await.unwrap();
    let (url, mut received) = receiver(0).await;
    sandbox.forge().deliver_webhooks_to(Some(WebhookTarget {
        url,
        secret: DEMO_WEBHOOK_SECRET.into(),
    }));
    let simulator = sandbox.simulator().unwrap();
    let sha = simulator
        .push_commit("cart", "Remember the last viewed product", true)
        .unwrap();
    let push = next(&mut received, 1).await.remove(0);
    assert!(verifies(&push, DEMO_WEBHOOK_SECRET));
    let push = push.json();
    assert_eq!(push["repository"]["full_name"], "acme/cart");
    assert_eq!(push["ref"], "refs/heads/main");
    assert_eq!(push["after"], sha.as_str());
    assert_eq!(push["commits"][0]["id"], sha.as_str());
    assert_eq!(
        push["commits"][0]["message"],
        "Remember the last viewed product"
    );
    assert_eq!(push["commits"][0]["modified"], json!(["CHANGELOG.md"]));
    // Its URLs point at the sandbox's forge.
    assert!(
        push["repository"]["url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/github/repos/acme/cart", sandbox.url())),
        "{}",
        push["repository"]["url"]
    );

    // A file written through the contents API.
    let token = sandbox.forge().user_token("ada");
    use base64::Engine as _;
    let response = reqwest::Client::new()
        .put(format!(
            "{}/github/repos/acme/cart/contents/docs/notes.md",
            sandbox.url()
        ))
        .bearer_auth(token)
        .json(&json!({
            "message": "Add notes",
            "content": base64::engine::general_purpose::STANDARD.encode("notes\n"),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let push = next(&mut received, 1).await.remove(0).json();
    assert_eq!(push["commits"][0]["added"], json!(["docs/notes.md"]));
    assert_eq!(push["pusher"]["name"], "ada");
}
