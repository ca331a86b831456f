//! The git data API (refs, blobs, trees, commits), implemented with git's plumbing on the bare repository.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{Authed, Reader};
use super::body::{Body, Resource};
use super::repos::{commit_info, parse_ls_tree};
use super::{ApiBase, Caller, Forge, GitHubError, Result, blocking, shapes};
use crate::git::{Git, people};
use crate::world::ORGANISATION;

/// The all-zero object id: a ref's "before" when it is created, its "after" when it is deleted.
pub(super) const ZERO: &str = "0000000000000000000000000000000000000000";

fn is_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The type of object `sha` names (`blob`, `tree`, `commit`), if it exists.
fn object_type(git: &Git, sha: &str) -> Result<Option<String>> {
    if !is_sha(sha) {
        return Ok(None);
    }
    Ok(git
        .try_run(&["cat-file", "-t", sha])?
        .map(|t| t.trim().to_string()))
}

fn ref_json(base: &ApiBase, repo: &str, name: &str, sha: &str, kind: &str) -> Value {
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    let plural = match kind {
        "tag" => "tags",
        "tree" => "trees",
        "blob" => "blobs",
        _ => "commits",
    };
    let number = name
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    json!({
        "ref": name,
        "node_id": shapes::node_id("Ref", number),
        "url": format!("{api}/git/{name}"),
        "object": {"sha": sha, "type": kind, "url": format!("{api}/git/{plural}/{sha}")},
    })
}

/// Every ref under `prefix` (e.g. `refs/heads/`), with its object id and type.
fn refs(git: &Git, prefix: &str) -> Result<Vec<(String, String, String)>> {
    let out = git.run(&[
        "for-each-ref",
        "--format=%(refname) %(objectname) %(objecttype)",
        prefix,
    ])?;
    Ok(out
        .lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            Some((f.next()?.into(), f.next()?.into(), f.next()?.into()))
        })
        .collect())
}

/// `GET /repos/{owner}/{repo}/git/refs`.
pub async fn list_refs(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        Ok(Json(Value::Array(
            refs(&git, "refs/")?
                .iter()
                .map(|(name, sha, kind)| ref_json(&base, &repo, name, sha, kind))
                .collect(),
        )))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/git/matching-refs/{prefix}`.
pub async fn matching_refs(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, prefix)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let full = format!("refs/{prefix}");
        Ok(Json(Value::Array(
            refs(&git, "refs/")?
                .iter()
                .filter(|(name, _, _)| name.starts_with(&full))
                .map(|(name, sha, kind)| ref_json(&base, &repo, name, sha, kind))
                .collect(),
        )))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/git/ref/{ref}` (and the older `git/refs/{ref}`), e.g. `heads/main`.
pub async fn get_ref(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let full = format!("refs/{}", reference.trim_start_matches("refs/"));
        refs(&git, &full)?
            .into_iter()
            .find(|(name, _, _)| *name == full)
            .map(|(name, sha, kind)| Json(ref_json(&base, &repo, &name, &sha, &kind)))
            .ok_or_else(|| GitHubError::not_found().docs("/git/refs#get-a-reference"))
    })
    .await
}

/// Body of `POST /git/refs`.
#[derive(Debug, Deserialize)]
pub struct CreateRef {
    #[serde(rename = "ref")]
    reference: String,
    sha: String,
}

impl Resource for CreateRef {
    const NAME: &'static str = "Reference";
}

fn valid_ref_name(git: &Git, name: &str) -> Result<bool> {
    if !name.starts_with("refs/") || name.matches('/').count() < 2 {
        return Ok(false);
    }
    Ok(git.try_run(&["check-ref-format", name])?.is_some())
}

/// `POST /repos/{owner}/{repo}/git/refs` {ref, sha}: 201, or 422 when it exists already; a `push`
/// webhook (`created`).
pub async fn create_ref(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(body): Body<CreateRef>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let docs = "/git/refs#create-a-reference";
        if !valid_ref_name(&git, &body.reference)? {
            return Err(GitHubError::unprocessable(format!(
                "{} is not a valid ref name.",
                body.reference
            ))
            .docs(docs));
        }
        let Some(kind) = object_type(&git, &body.sha)? else {
            return Err(GitHubError::unprocessable("Object does not exist").docs(docs));
        };
        // The all-zero old value makes git refuse, atomically, when the ref exists.
        if git
            .try_run(&["update-ref", &body.reference, &body.sha, ZERO])?
            .is_none()
        {
            return Err(GitHubError::unprocessable("Reference already exists").docs(docs));
        }
        forge.announce_push(&repo, &body.reference, ZERO, &body.sha, &caller.login());
        Ok((
            StatusCode::CREATED,
            Json(ref_json(&base, &repo, &body.reference, &body.sha, &kind)),
        ))
    })
    .await
}

/// Body of `PATCH /git/refs/{ref}`.
#[derive(Debug, Deserialize)]
pub struct UpdateRef {
    sha: String,
    #[serde(default)]
    force: bool,
}

impl Resource for UpdateRef {
    const NAME: &'static str = "Reference";
}

/// `PATCH /repos/{owner}/{repo}/git/refs/{ref}` {sha, force}: 422 unless a fast-forward or forced; a
/// `push` webhook, and for a pull request's head branch its `synchronize` and a new CI run.
pub async fn update_ref(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
    Body(body): Body<UpdateRef>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let docs = "/git/refs#update-a-reference";
        let full = format!("refs/{}", reference.trim_start_matches("refs/"));
        let Some(current) = git.resolve(&full)? else {
            return Err(GitHubError::unprocessable("Reference does not exist").docs(docs));
        };
        let Some(kind) = object_type(&git, &body.sha)? else {
            return Err(GitHubError::unprocessable("Object does not exist").docs(docs));
        };
        if !body.force
            && git
                .try_run(&["merge-base", "--is-ancestor", &current, &body.sha])?
                .is_none()
        {
            return Err(GitHubError::unprocessable("Update is not a fast forward").docs(docs));
        }
        if git
            .try_run(&["update-ref", &full, &body.sha, &current])?
            .is_none()
        {
            return Err(GitHubError::unprocessable("Reference cannot be updated").docs(docs));
        }
        if current != body.sha {
            forge.announce_push(&repo, &full, &current, &body.sha, &caller.login());
        }
        Ok(Json(ref_json(&base, &repo, &full, &body.sha, &kind)))
    })
    .await
}

/// `DELETE /repos/{owner}/{repo}/git/refs/{ref}`: 204, or 422 when it doesn't exist; a `push` webhook
/// (`deleted`).
pub async fn delete_ref(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<StatusCode> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let full = format!("refs/{}", reference.trim_start_matches("refs/"));
        let Some(current) = git.resolve(&full)? else {
            return Err(GitHubError::unprocessable("Reference does not exist")
                .docs("/git/refs#delete-a-reference"));
        };
        git.run(&["update-ref", "-d", &full, &current])?;
        forge.announce_push(&repo, &full, &current, ZERO, &caller.login());
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// Body of `POST /git/blobs`.
#[derive(Debug, Deserialize)]
pub struct CreateBlob {
    content: String,
    encoding: Option<String>,
}

impl Resource for CreateBlob {
    const NAME: &'static str = "Blob";
}

fn write_blob(git: &Git, content: &[u8]) -> Result<String> {
    let out = git.run_with(&["hash-object", "-w", "--stdin"], Some(content), &[])?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// `POST /repos/{owner}/{repo}/git/blobs` {content, encoding}: 201 {sha, url}.
pub async fn create_blob(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(body): Body<CreateBlob>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let docs = "/git/blobs#create-a-blob";
        let content = match body.encoding.as_deref().unwrap_or("utf-8") {
            "utf-8" | "utf8" => body.content.into_bytes(),
            "base64" => base64::engine::general_purpose::STANDARD
                .decode(body.content.replace(['\n', '\r'], ""))
                .map_err(|_| GitHubError::invalid("Blob", "content", "invalid").docs(docs))?,
            _ => return Err(GitHubError::invalid("Blob", "encoding", "invalid").docs(docs)),
        };
        let sha = write_blob(&git, &content)?;
        Ok((
            StatusCode::CREATED,
            Json(json!({
                "url": format!("{}/repos/{ORGANISATION}/{repo}/git/blobs/{sha}", base.url),
                "sha": sha,
            })),
        ))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/git/blobs/{sha}`.
pub async fn get_blob(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        if object_type(&git, &sha)?.as_deref() != Some("blob") {
            return Err(GitHubError::not_found().docs("/git/blobs#get-a-blob"));
        }
        let content = git.run_with(&["cat-file", "blob", &sha], None, &[])?;
        Ok(Json(json!({
            "sha": sha,
            "node_id": shapes::node_id("Blob", u64::from_str_radix(sha.get(..12).unwrap_or("0"), 16).unwrap_or(0)),
            "size": content.len(),
            "url": format!("{}/repos/{ORGANISATION}/{repo}/git/blobs/{sha}", base.url),
            "content": base64::engine::general_purpose::STANDARD.encode(&content),
            "encoding": "base64",
        })))
    })
    .await
}

/// One entry of `POST /git/trees`.
#[derive(Debug, Deserialize)]
pub struct TreeItem {
    path: Option<String>,
    mode: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    /// `Some(None)` is an explicit `"sha": null`, which deletes the path from the base tree.
    #[serde(default, deserialize_with = "explicit_null")]
    sha: Option<Option<String>>,
    content: Option<String>,
}

/// Tells `"sha": null` (delete) from a missing `sha`.
fn explicit_null<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::deserialize(deserializer)?))
}

/// Body of `POST /git/trees`.
#[derive(Debug, Deserialize)]
pub struct CreateTree {
    tree: Vec<TreeItem>,
    base_tree: Option<String>,
}

impl Resource for CreateTree {
    const NAME: &'static str = "Tree";
}

fn tree_json(git: &Git, base: &ApiBase, repo: &str, sha: &str, recursive: bool) -> Result<Value> {
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    let mut args = vec!["ls-tree", "-l"];
    if recursive {
        args.extend(["-r", "-t"]);
    }
    args.push(sha);
    let entries = parse_ls_tree(&git.run(&args)?);
    let tree: Vec<Value> = entries
        .iter()
        .map(|e| {
            let plural = if e.kind == "tree" { "trees" } else { "blobs" };
            let mut entry = json!({
                "path": e.path,
                "mode": e.mode,
                "type": e.kind,
                "sha": e.sha,
                "url": format!("{api}/git/{plural}/{}", e.sha),
            });
            if let (Some(size), Some(object)) = (e.size, entry.as_object_mut()) {
                object.insert("size".into(), size.into());
            }
            entry
        })
        .collect();
    Ok(json!({
        "sha": sha,
        "url": format!("{api}/git/trees/{sha}"),
        "tree": tree,
        "truncated": false,
    }))
}

/// `POST /repos/{owner}/{repo}/git/trees` {base_tree, tree}: paths may be nested; `sha: null` deletes.
pub async fn create_tree(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(body): Body<CreateTree>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        let docs = "/git/trees#create-a-tree";
        let invalid =
            |field: &str, code: &str| GitHubError::invalid("Tree", field, code).docs(docs);
        let mut lines = Vec::new();
        for item in &body.tree {
            let path = item
                .path
                .as_deref()
                .map(|p| p.trim_matches('/'))
                .filter(|p| !p.is_empty())
                .ok_or_else(|| invalid("tree.path", "missing_field"))?;
            let mode = item
                .mode
                .as_deref()
                .ok_or_else(|| invalid("tree.mode", "missing_field"))?;
            if !["100644", "100755", "120000", "160000"].contains(&mode) {
                return Err(invalid("tree.mode", "invalid"));
            }
            let kind = item.kind.as_deref().unwrap_or("blob");
            if !["blob", "commit"].contains(&kind) {
                return Err(invalid("tree.type", "invalid"));
            }
            let sha = match (&item.sha, &item.content) {
                (Some(_), Some(_)) => return Err(invalid("tree.sha", "invalid")),
                (None, None) => return Err(invalid("tree.sha", "missing_field")),
                (Some(None), None) => None,
                (Some(Some(sha)), None) => {
                    if kind == "blob" && object_type(&git, sha)?.as_deref() != Some("blob") {
                        return Err(GitHubError::custom(
                            "Tree",
                            Some("tree.sha"),
                            &format!("tree.sha {sha} is not a valid blob"),
                        )
                        .docs(docs));
                    }
                    Some(sha.clone())
                }
                (None, Some(content)) => Some(write_blob(&git, content.as_bytes())?),
            };
            lines.push(match sha {
                Some(sha) => format!("{mode} {sha}\t{path}\n"),
                None => format!("0 {ZERO}\t{path}\n"),
            });
        }
        // A throwaway index: read the base tree, apply the entries, write the result.
        let scratch = tempfile::tempdir().map_err(|e| GitHubError::internal(&e))?;
        let index = scratch.path().join("index").to_string_lossy().into_owned();
        let env = [("GIT_INDEX_FILE", index)];
        match &body.base_tree {
            Some(tree) => {
                let spec = format!("{tree}^{{tree}}");
                let Some(resolved) = git.try_run(&["rev-parse", "--verify", "--quiet", &spec])?
                else {
                    return Err(invalid("base_tree", "invalid"));
                };
                git.run_with(&["read-tree", resolved.trim()], None, &env)?;
            }
            None => {
                git.run_with(&["read-tree", "--empty"], None, &env)?;
            }
        }
        git.run_with(
            &["update-index", "--index-info"],
            Some(lines.concat().as_bytes()),
            &env,
        )?;
        let out = git.run_with(&["write-tree"], None, &env)?;
        let sha = String::from_utf8_lossy(&out).trim().to_string();
        Ok((
            StatusCode::CREATED,
            Json(tree_json(&git, &base, &repo, &sha, false)?),
        ))
    })
    .await
}

/// `?recursive=` of `GET /git/trees/{sha}`.
#[derive(Debug, Deserialize)]
pub struct TreeQuery {
    recursive: Option<String>,
}

/// `GET /repos/{owner}/{repo}/git/trees/{sha}?recursive=1`.
pub async fn get_tree(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    Query(query): Query<TreeQuery>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    blocking(move || {
        if sha.starts_with('-') {
            return Err(GitHubError::not_found().docs("/git/trees#get-a-tree"));
        }
        let tree = git
            .try_run(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{sha}^{{tree}}"),
            ])?
            .map(|s| s.trim().to_string())
            .ok_or_else(|| GitHubError::not_found().docs("/git/trees#get-a-tree"))?;
        let recursive = query
            .recursive
            .is_some_and(|r| !r.is_empty() && r != "0" && r != "false");
        Ok(Json(tree_json(&git, &base, &repo, &tree, recursive)?))
    })
    .await
}

/// An author or committer of `POST /git/commits`.
#[derive(Debug, Deserialize)]
pub struct Signature {
    name: Option<String>,
    email: Option<String>,
    date: Option<String>,
}

/// Body of `POST /git/commits`.
#[derive(Debug, Deserialize)]
pub struct CreateCommit {
    message: String,
    tree: String,
    #[serde(default)]
    parents: Vec<String>,
    author: Option<Signature>,
    committer: Option<Signature>,
}

impl Resource for CreateCommit {
    const NAME: &'static str = "Commit";
}

/// `POST /repos/{owner}/{repo}/git/commits` {message, tree, parents, author?}: the author defaults to
/// the caller (the App's bot for an installation token).
pub async fn create_commit(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(body): Body<CreateCommit>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let docs = "/git/commits#create-a-commit";
        if object_type(&git, &body.tree)?.as_deref() != Some("tree") {
            return Err(GitHubError::invalid("Commit", "tree", "invalid").docs(docs));
        }
        for parent in &body.parents {
            if object_type(&git, parent)?.as_deref() != Some("commit") {
                return Err(GitHubError::invalid("Commit", "parents", "invalid").docs(docs));
            }
        }
        let me = people::identity(&match &caller {
            Caller::Installation => people::APP_BOT.to_string(),
            Caller::User(login) => login.clone(),
        });
        let now = jiff::Timestamp::now();
        let side = |signature: Option<&Signature>, field: &str| -> Result<[String; 3]> {
            let name = signature
                .and_then(|s| s.name.clone())
                .unwrap_or_else(|| me.name.clone());
            let email = signature
                .and_then(|s| s.email.clone())
                .unwrap_or_else(|| me.email.clone());
            let date = match signature.and_then(|s| s.date.as_deref()) {
                Some(date) => date.parse::<jiff::Timestamp>().map_err(|_| {
                    GitHubError::invalid("Commit", &format!("{field}.date"), "invalid").docs(docs)
                })?,
                None => now,
            };
            Ok([name, email, format!("{} +0000", date.as_second())])
        };
        let [an, ae, ad] = side(body.author.as_ref(), "author")?;
        let [cn, ce, cd] = match body.committer.as_ref() {
            Some(committer) => side(Some(committer), "committer")?,
            None if body.author.is_some() => [an.clone(), ae.clone(), ad.clone()],
            None => side(None, "committer")?,
        };
        let mut args = vec!["commit-tree".to_string(), body.tree.clone()];
        for parent in &body.parents {
            args.push("-p".into());
            args.push(parent.clone());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env = [
            ("GIT_AUTHOR_NAME", an),
            ("GIT_AUTHOR_EMAIL", ae),
            ("GIT_AUTHOR_DATE", ad),
            ("GIT_COMMITTER_NAME", cn),
            ("GIT_COMMITTER_EMAIL", ce),
            ("GIT_COMMITTER_DATE", cd),
        ];
        let out = git.run_with(&args, Some(body.message.as_bytes()), &env)?;
        let sha = String::from_utf8_lossy(&out).trim().to_string();
        let info = commit_info(&git, &sha)?;
        Ok((
            StatusCode::CREATED,
            Json(shapes::git_commit(&base, &html, &repo, &info)),
        ))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/git/commits/{sha}`.
pub async fn get_git_commit(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        if object_type(&git, &sha)?.as_deref() != Some("commit") {
            return Err(GitHubError::not_found().docs("/git/commits#get-a-commit-object"));
        }
        let info = commit_info(&git, &sha)?;
        Ok(Json(shapes::git_commit(&base, &html, &repo, &info)))
    })
    .await
}
