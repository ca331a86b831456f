//! The contents API's file write: a real commit on the branch, and GitHub's answers to a missing or stale
//! `sha`.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use octocrab::params::repos::Reference;
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};

use crate::forge::TestForge;

const NOTE: &str = "platform/notes/contents.md";

#[tokio::test]
async fn octocrab_creates_then_updates_a_file_each_time_with_a_real_commit_on_the_branch() {
    let forge = TestForge::start().await;
    let octo = forge.installation();
    let repo = octo.repos("acme", GITOPS_REPOSITORY);
    let main = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]);
    repo.create_ref(&Reference::Branch("contents".into()), main.trim())
        .await
        .unwrap();

    let created = repo
        .create_file(NOTE, "Write a note", "first\n")
        .branch("contents")
        .send()
        .await
        .unwrap();
    assert_eq!(created.content.path, NOTE);
    assert_eq!(created.content.name, "contents.md");
    let commit = created.commit.sha.clone().unwrap();
    let log = forge.git(
        GITOPS_REPOSITORY,
        &["log", "-1", "--format=%H %P|%an|%s", "contents"],
    );
    assert_eq!(
        log.trim(),
        format!("{commit} {}|tower-app[bot]|Write a note", main.trim())
    );
    assert_eq!(
        forge.git(GITOPS_REPOSITORY, &["show", &format!("contents:{NOTE}")]),
        "first\n"
    );
    // main did not move.
    assert_eq!(forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]), main);

    let updated = repo
        .update_file(NOTE, "Rewrite the note", "second\n", &created.content.sha)
        .branch("contents")
        .send()
        .await
        .unwrap();
    assert_ne!(updated.content.sha, created.content.sha);
    assert_eq!(
        forge.git(GITOPS_REPOSITORY, &["show", &format!("contents:{NOTE}")]),
        "second\n"
    );
    let parents = forge.git(GITOPS_REPOSITORY, &["log", "-1", "--format=%P", "contents"]);
    assert_eq!(parents.trim(), commit);
}

#[tokio::test]
async fn writing_over_a_file_needs_its_current_sha_as_github_requires() {
    let forge = TestForge::start().await;
    let token = forge.token().await;
    let path = "platform/registry/payments.yaml";
    let url = forge.api(&format!("/repos/acme/{GITOPS_REPOSITORY}/contents/{path}"));
    let put = |body: Value| forge.http.put(&url).bearer_auth(&token).json(&body).send();
    let content = base64::engine::general_purpose::STANDARD.encode("kind: Component\n");

    // No sha for a file that exists: 422 naming it.
    let response = put(json!({"message": "m", "content": content}))
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["message"],
        "Invalid request.\n\n\"sha\" wasn't supplied."
    );

    // A sha that is not the file's: 409 "<path> does not match <sha>".
    let stale = "0123456789abcdef0123456789abcdef01234567";
    let response = put(json!({"message": "m", "content": content, "sha": stale}))
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], format!("{path} does not match {stale}"));
    assert!(body.get("errors").is_none());

    // A branch that does not exist: 404.
    let response = put(json!({"message": "m", "content": content, "branch": "nope"}))
        .await
        .unwrap();
    assert_eq!(response.status(), 404);

    // Required fields, and content that is not base64.
    let response = put(json!({"content": content})).await.unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["field"], "message");
    let response = put(json!({"message": "m", "content": "%%%", "sha": stale}))
        .await
        .unwrap();
    assert_eq!(response.status(), 422);

    // The right sha replaces it on main: 200.
    let current = forge.git(GITOPS_REPOSITORY, &["rev-parse", &format!("main:{path}")]);
    let before = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]);
    let response = put(json!({
        "message": "Rewrite payments' Component",
        "content": content,
        "sha": current.trim(),
        "committer": {"name": "Ada Lovelace", "email": "ada@acme.example"},
    }))
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["commit"]["parents"][0]["sha"], before.trim());
    assert_eq!(body["commit"]["author"]["name"], "Ada Lovelace");
    assert_eq!(forge.gitops_file(path), "kind: Component\n");
    // Anonymous writes are refused.
    let response = forge
        .http
        .put(&url)
        .json(&json!({"message": "m", "content": content}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}
