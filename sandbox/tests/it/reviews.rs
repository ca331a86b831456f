//! The forge's CI validates what a pull request changes under `platform/` with the validator Tower's Config
//! editor uses, shows itself running, then completes; the demo reviewer approves what passed and asks for
//! changes to what failed, and reviews on demand through the sandbox's button.
#![allow(clippy::unwrap_used)]

use sandbox::forge::{CI_CHECK_NAME, DEMO_REVIEWER, ReviewEvent};
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};

use crate::forge::TestForge;

const DEV_RELEASE: &str = "platform/environments/dev/payments-release.yaml";

async fn check_run(forge: &TestForge, sha: &str) -> Value {
    let runs: Value = forge
        .http
        .get(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/commits/{sha}/check-runs"
        )))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["total_count"], 1, "{runs}");
    runs["check_runs"][0].clone()
}

async fn reviews(forge: &TestForge, number: u64) -> Vec<Value> {
    let reviews: Value = forge
        .http
        .get(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}/reviews"
        )))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    reviews.as_array().unwrap().clone()
}

#[tokio::test]
async fn every_platform_file_on_main_passes_the_validation() {
    // The fixtures' own files are what Tower's edits start from: the check must take them as they are.
    let forge = TestForge::start().await;
    let git = forge.forge.repositories().git(GITOPS_REPOSITORY);
    let files = git
        .run(&["ls-tree", "-r", "--name-only", "main", "platform/"])
        .unwrap();
    let environments: Vec<String> = sandbox::world::ENVIRONMENTS
        .iter()
        .map(|e| e.to_string())
        .collect();
    for path in files.lines() {
        let text = forge.gitops_file(path);
        let context = shared::config::RuleContext {
            service: shared::config::parse_platform_path(path).unwrap().name,
            environments: environments.clone(),
            green_builds: None,
            databases: None,
        };
        let problems = shared::config::validate(path, &text, &context);
        assert!(problems.is_empty(), "{path}: {problems:?}");
    }
}

#[tokio::test]
async fn a_broken_file_fails_the_check_naming_it_and_the_demo_reviewer_asks_for_changes() {
    let forge = TestForge::start().await;
    let broken = format!("{}replicas: 3\n", forge.gitops_file(DEV_RELEASE));
    let (number, head) = forge
        .open_pull(
            "broken-release",
            "Scale payments by hand",
            &[(DEV_RELEASE, &broken)],
        )
        .await;

    // Running from the start, and still running a second later.
    let run = check_run(&forge, &head).await;
    assert_eq!(run["name"], CI_CHECK_NAME);
    assert_eq!(run["status"], "in_progress");
    assert!(run["started_at"].is_string());
    forge.tick_in(1);
    assert_eq!(check_run(&forge, &head).await["status"], "in_progress");
    assert!(reviews(&forge, number).await.is_empty());

    forge.tick_in(5);
    let run = check_run(&forge, &head).await;
    assert_eq!(run["status"], "completed");
    assert_eq!(run["conclusion"], "failure");
    let title = run["output"]["title"].as_str().unwrap();
    assert!(title.contains(DEV_RELEASE), "{title}");
    let summary = run["output"]["summary"].as_str().unwrap();
    assert!(summary.contains(DEV_RELEASE), "{summary}");
    assert!(summary.contains("Unknown field `replicas`"), "{summary}");
    assert!(summary.contains("line "), "{summary}");
    // Not yet reviewed: she reviews a couple of seconds after the check completes.
    assert!(reviews(&forge, number).await.is_empty());

    forge.tick_in(8);
    let reviews = reviews(&forge, number).await;
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let review = &reviews[0];
    assert_eq!(review["user"]["login"], DEMO_REVIEWER);
    assert_eq!(review["state"], "CHANGES_REQUESTED");
    assert_eq!(review["commit_id"], head.as_str());
    assert!(review["submitted_at"].is_string());
    let body = review["body"].as_str().unwrap();
    assert!(
        body.contains(DEV_RELEASE) && body.contains("replicas"),
        "{body}"
    );
    // Once only.
    forge.tick_in(20);
    assert_eq!(
        forge
            .http
            .get(forge.api(&format!(
                "/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}/reviews"
            )))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_good_change_passes_and_is_approved_and_octocrab_reads_the_review() {
    let forge = TestForge::start().await;
    let fixed = forge
        .gitops_file(DEV_RELEASE)
        .replace("autoDeploy: true", "autoDeploy: false");
    let (number, head) = forge
        .open_pull(
            "pause-payments",
            "Pause payments' auto-deploy in dev",
            &[(DEV_RELEASE, &fixed)],
        )
        .await;
    forge.tick_in(5);
    let run = check_run(&forge, &head).await;
    assert_eq!(run["conclusion"], "success", "{run}");
    assert_eq!(run["output"]["title"], "Manifests are valid");
    forge.tick_in(8);

    let octo = forge.installation();
    let listed = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .list_reviews(number)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let review = &listed.items[0];
    assert_eq!(review.user.as_ref().unwrap().login, DEMO_REVIEWER);
    assert_eq!(
        review.state,
        Some(octocrab::models::pulls::ReviewState::Approved)
    );
    assert_eq!(review.commit_id.as_deref(), Some(head.as_str()));
    assert!(review.submitted_at.is_some());
}

#[tokio::test]
async fn a_new_head_runs_the_check_again_and_gets_a_new_review() {
    let forge = TestForge::start().await;
    let broken = format!("{}replicas: 3\n", forge.gitops_file(DEV_RELEASE));
    let (number, first) = forge
        .open_pull("fix-later", "Fix later", &[(DEV_RELEASE, &broken)])
        .await;
    forge.tick_in(8);
    assert_eq!(
        reviews(&forge, number).await[0]["state"],
        "CHANGES_REQUESTED"
    );

    // Push a fix onto the branch through the contents API: a new head, checked and reviewed again.
    let token = forge.token().await;
    let blob = forge.git(
        GITOPS_REPOSITORY,
        &["rev-parse", &format!("fix-later:{DEV_RELEASE}")],
    );
    use base64::Engine as _;
    let response = forge
        .http
        .put(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/contents/{DEV_RELEASE}"
        )))
        .bearer_auth(&token)
        .json(&json!({
            "message": "Drop the hand-set replicas",
            "content": base64::engine::general_purpose::STANDARD.encode(forge.gitops_file(DEV_RELEASE)),
            "sha": blob.trim(),
            "branch": "fix-later",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let second = forge.git(GITOPS_REPOSITORY, &["rev-parse", "fix-later"]);
    let second = second.trim();
    assert_ne!(second, first);
    let pull: Value = forge
        .http
        .get(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pull["head"]["sha"], second);
    assert_eq!(check_run(&forge, second).await["status"], "in_progress");
    forge.tick_in(8);
    assert_eq!(check_run(&forge, second).await["conclusion"], "success");
    let reviews = reviews(&forge, number).await;
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[1]["state"], "APPROVED");
    assert_eq!(reviews[1]["commit_id"], second);
}

#[tokio::test]
async fn the_sandbox_button_makes_the_demo_reviewer_review_now() {
    let forge = TestForge::start().await;
    let (number, head) = forge
        .open_pull("on-demand", "On demand", &[("platform/notes.txt", "x\n")])
        .await;
    let button = format!("http://{}/sandbox/pulls/{number}/review", forge.addr);
    let response = forge
        .http
        .post(&button)
        .json(&json!({"event": "COMMENT", "body": "Why now?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let review: Value = response.json().await.unwrap();
    assert_eq!(review["user"]["login"], DEMO_REVIEWER);
    assert_eq!(review["state"], "COMMENTED");
    assert_eq!(review["body"], "Why now?");
    assert_eq!(review["commit_id"], head.as_str());

    let response = forge
        .http
        .post(&button)
        .json(&json!({"event": "REQUEST_CHANGES"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422, "changes without a word");
    let response = forge
        .http
        .post(&button)
        .json(&json!({"event": "MERGE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let response = forge
        .http
        .post(&button)
        .json(&json!({"event": "APPROVE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let states: Vec<Value> = reviews(&forge, number)
        .await
        .iter()
        .map(|r| r["state"].clone())
        .collect();
    assert_eq!(states, [json!("COMMENTED"), json!("APPROVED")]);

    let response = forge
        .http
        .post(format!("http://{}/sandbox/pulls/99999/review", forge.addr))
        .json(&json!({"event": "APPROVE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn nobody_approves_their_own_pull_request_and_a_pending_review_is_submitted_later() {
    let forge = TestForge::start().await;
    let (number, _) = forge
        .open_pull("own", "Own", &[("platform/notes.txt", "x\n")])
        .await;
    let refused = forge
        .forge
        .review(
            GITOPS_REPOSITORY,
            number,
            "tower-app[bot]",
            ReviewEvent::Approve,
            "",
        )
        .unwrap_err();
    assert_eq!(refused.status, 422);
    assert_eq!(
        refused.errors,
        [json!("Can not approve your own pull request")]
    );

    // ada starts a review without an event: pending, seen by her only, until she submits it.
    let ada = forge.forge.user_token("ada");
    let reviews_url = forge.api(&format!(
        "/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}/reviews"
    ));
    let pending: Value = forge
        .http
        .post(&reviews_url)
        .bearer_auth(&ada)
        .json(&json!({"body": "Reading it."}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pending["state"], "PENDING");
    assert!(pending.get("submitted_at").is_none());
    assert!(reviews(&forge, number).await.is_empty());
    let hers: Value = forge
        .http
        .get(&reviews_url)
        .bearer_auth(&ada)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(hers.as_array().unwrap().len(), 1);
    let submitted: Value = forge
        .http
        .post(format!("{reviews_url}/{}/events", pending["id"]))
        .bearer_auth(&ada)
        .json(&json!({"event": "APPROVE"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(submitted["state"], "APPROVED");
    assert_eq!(submitted["id"], pending["id"]);
    let all = reviews(&forge, number).await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["user"]["login"], "ada");
}
