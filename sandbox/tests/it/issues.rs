//! Issue comments and labels on the forge's pull requests, through octocrab and in GitHub's shapes.
#![allow(clippy::unwrap_used)]

use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};

use crate::forge::TestForge;

#[tokio::test]
async fn octocrab_comments_on_a_pull_request_and_reads_the_comments_back() {
    let forge = TestForge::start().await;
    let (number, _) = forge
        .open_pull("comments", "Comments", &[("platform/notes.txt", "x\n")])
        .await;
    let octo = forge.installation();
    let issues = octo.issues("acme", GITOPS_REPOSITORY);
    let first = issues
        .create_comment(number, "Opened by Tower.")
        .await
        .unwrap();
    assert_eq!(first.user.login, "tower-app[bot]");
    assert_eq!(first.body.as_deref(), Some("Opened by Tower."));
    assert!(
        first
            .html_url
            .as_str()
            .ends_with(&format!("/pull/{number}#issuecomment-{}", first.id)),
        "{}",
        first.html_url
    );
    // A person comments too, with their own token.
    let ada = forge.forge.user_token("ada");
    let response = forge
        .http
        .post(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/comments"
        )))
        .bearer_auth(&ada)
        .json(&json!({"body": "Looks right."}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);

    let comments = issues
        .list_comments(number)
        .per_page(1)
        .send()
        .await
        .unwrap();
    assert_eq!(comments.items.len(), 1);
    let rest = octo
        .get_page::<octocrab::models::issues::Comment>(&comments.next)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rest.items[0].user.login, "ada");
    assert_eq!(rest.items[0].body.as_deref(), Some("Looks right."));

    let pull: Value = forge
        .http
        .get(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(pull["comments"], 2);
}

#[tokio::test]
async fn a_comment_without_a_body_or_on_no_pull_request_is_refused_as_github_refuses_it() {
    let forge = TestForge::start().await;
    let (number, _) = forge
        .open_pull(
            "bad-comments",
            "Bad comments",
            &[("platform/notes.txt", "x\n")],
        )
        .await;
    let token = forge.token().await;
    let post = |number: u64, body: Value| {
        forge
            .http
            .post(forge.api(&format!(
                "/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/comments"
            )))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let response = post(number, json!({})).await.unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["field"], "body");
    assert_eq!(body["errors"][0]["code"], "missing_field");
    let response = post(99_999, json!({"body": "hello"})).await.unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Not Found");
}

#[tokio::test]
async fn labels_come_with_githubs_defaults_and_adding_one_to_a_pull_request_creates_it() {
    let forge = TestForge::start().await;
    let (number, _) = forge
        .open_pull("labels", "Labels", &[("platform/notes.txt", "x\n")])
        .await;
    let octo = forge.installation();
    let issues = octo.issues("acme", GITOPS_REPOSITORY);
    let defaults = issues
        .list_labels_for_repo()
        .per_page(100)
        .send()
        .await
        .unwrap();
    let names: Vec<&str> = defaults.items.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names.len(), 9, "{names:?}");
    assert!(names.contains(&"bug") && names.contains(&"good first issue"));

    let labels = issues
        .add_labels(number, &["promote".to_string(), "bug".to_string()])
        .await
        .unwrap();
    let names: Vec<&str> = labels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["promote", "bug"]);
    let promote = issues.get_label("promote").await.unwrap();
    assert_eq!(promote.color, "ededed");
    assert!(!promote.default);
    let pull = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .get(number)
        .await
        .unwrap();
    let on_pull: Vec<String> = pull.labels.unwrap().into_iter().map(|l| l.name).collect();
    assert_eq!(on_pull, ["promote", "bug"]);

    let token = forge.token().await;
    let labels_url = forge.api(&format!(
        "/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/labels"
    ));
    // PUT replaces them all.
    let replaced: Value = forge
        .http
        .put(&labels_url)
        .bearer_auth(&token)
        .json(&json!({"labels": ["release"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(replaced.as_array().unwrap().len(), 1);
    assert_eq!(replaced[0]["name"], "release");
    // DELETE one that is not there: GitHub's 404.
    let response = forge
        .http
        .delete(format!("{labels_url}/bug"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Label does not exist");
    let left: Value = forge
        .http
        .delete(format!("{labels_url}/release"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(left, json!([]));

    // A label the repository already has cannot be created again.
    let response = forge
        .http
        .post(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/labels")))
        .bearer_auth(&token)
        .json(&json!({"name": "Promote", "color": "0e8a16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["errors"][0],
        json!({"resource": "Label", "field": "name", "code": "already_exists"})
    );
    let created = forge
        .http
        .post(forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/labels")))
        .bearer_auth(&token)
        .json(&json!({"name": "rollback", "color": "#B60205", "description": "Puts the previous version back"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["color"], "b60205");
    assert_eq!(created["description"], "Puts the previous version back");
}
