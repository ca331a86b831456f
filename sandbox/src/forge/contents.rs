//! The contents API's file write: `PUT /repos/{owner}/{repo}/contents/{path}` makes one real commit on the
//! branch, refusing a stale or missing `sha` of a file that exists as GitHub does (409 and 422).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Authed;
use super::body::{Body, Resource};
use super::repos::{commit_info, parse_ls_tree};
use super::{ApiBase, Forge, GitHubError, Result, blocking, shapes};
use crate::git::people;
use crate::world::ORGANISATION;

const DOCS: &str = "/repos/contents#create-or-update-file-contents";

/// The author or committer of a file write: both fields, or neither.
#[derive(Debug, Deserialize)]
pub struct Person {
    name: String,
    email: String,
}

/// Body of `PUT /contents/{path}`.
#[derive(Debug, Deserialize)]
pub struct PutContents {
    message: String,
    /// The new content, base64-encoded.
    content: String,
    /// The blob id of the file being replaced; required when it exists.
    sha: Option<String>,
    /// The branch to commit to; the default branch when absent.
    branch: Option<String>,
    committer: Option<Person>,
    author: Option<Person>,
}

impl Resource for PutContents {
    const NAME: &'static str = "Content";
}

/// `PUT /repos/{owner}/{repo}/contents/{path}` {message, content, sha, branch, committer, author}: a commit
/// on `branch` writing the file, 201 when it creates it and 200 when it replaces it, each with the file's
/// `content` object and the `commit`; then a `push` webhook (and a `synchronize` for pull requests whose
/// head the branch is).
pub async fn put_contents(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, path)): Path<(String, String, String)>,
    Body(body): Body<PutContents>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let path = path.trim_matches('/').to_string();
        if path.is_empty()
            || path
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(GitHubError::invalid("Content", "path", "invalid").docs(DOCS));
        }
        let branch = body.branch.clone().unwrap_or_else(|| "main".into());
        let parent = git
            .resolve(&format!("refs/heads/{branch}"))?
            .ok_or_else(|| {
                GitHubError::new(StatusCode::NOT_FOUND, format!("Branch {branch} not found"))
                    .docs(DOCS)
            })?;
        let content = base64::engine::general_purpose::STANDARD
            .decode(body.content.replace(['\n', '\r'], ""))
            .map_err(|_| GitHubError {
                message: "content is not valid Base64".into(),
                ..GitHubError::invalid("Content", "content", "invalid").docs(DOCS)
            })?;
        let existing = parse_ls_tree(&git.run(&["ls-tree", "-l", &parent, "--", &path])?)
            .into_iter()
            .find(|entry| entry.path == path);
        match (&existing, body.sha.as_deref()) {
            (Some(entry), _) if entry.kind != "blob" => {
                return Err(GitHubError::invalid("Content", "path", "invalid").docs(DOCS));
            }
            (Some(_), None) => {
                return Err(GitHubError::unprocessable(
                    "Invalid request.\n\n\"sha\" wasn't supplied.",
                )
                .docs(DOCS));
            }
            (Some(entry), Some(sha)) if entry.sha != sha => {
                return Err(GitHubError::new(
                    StatusCode::CONFLICT,
                    format!("{path} does not match {sha}"),
                )
                .docs(DOCS));
            }
            // A new file: GitHub ignores a `sha` given for it.
            _ => {}
        }
        let me = people::identity(&caller.login());
        let who = match body.author.as_ref().or(body.committer.as_ref()) {
            Some(person) => people::Identity {
                name: person.name.clone(),
                email: person.email.clone(),
                login: people::login_of_email(&person.email),
                ..me
            },
            None => me,
        };
        let files: BTreeMap<String, Vec<u8>> = [(path.clone(), content.clone())].into();
        let time = jiff::Timestamp::now().as_second();
        let sha = match git.commit_files(&branch, &parent, &who, time, &body.message, files) {
            Ok(sha) => sha,
            Err(error) => {
                let now_at = git.resolve(&format!("refs/heads/{branch}"))?;
                return Err(match now_at {
                    Some(current) if current != parent => GitHubError::new(
                        StatusCode::CONFLICT,
                        format!("is at {current} but expected {parent}"),
                    )
                    .docs(DOCS),
                    _ => GitHubError::internal(&error),
                });
            }
        };
        forge.announce_push(
            &repo,
            &format!("refs/heads/{branch}"),
            &parent,
            &sha,
            &caller.login(),
        );
        let info = commit_info(&git, &sha)?;
        let blob = git
            .run(&["rev-parse", &format!("{sha}:{path}")])?
            .trim()
            .to_string();
        let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
        let name = path.rsplit('/').next().unwrap_or(&path);
        let url = format!("{api}/contents/{path}?ref={branch}");
        let git_url = format!("{api}/git/blobs/{blob}");
        let html_url = format!("{html}/{ORGANISATION}/{repo}/blob/{branch}/{path}");
        let status = if existing.is_some() {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        };
        Ok((
            status,
            Json(json!({
                "content": {
                    "type": "file",
                    "name": name,
                    "path": path,
                    "sha": blob,
                    "size": content.len(),
                    "url": url,
                    "html_url": html_url,
                    "git_url": git_url,
                    "download_url": format!("{html}/{ORGANISATION}/{repo}/raw/{branch}/{path}"),
                    "_links": {"self": url, "git": git_url, "html": html_url},
                },
                "commit": shapes::git_commit(&base, &html, &repo, &info),
            })),
        ))
    })
    .await
}
