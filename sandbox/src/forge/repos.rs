//! Organisation and repository reads: repository listing, contents, commits and comparisons.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{Authed, Reader};
use super::{ApiBase, Forge, GitHubError, Paging, Result, blocking, paged, shapes};
use crate::git::Git;
use crate::world::{CATALOG_ONLY, GITOPS_REPOSITORY, ORGANISATION, service};

/// git's id of the empty tree, the "parent" of a root commit when diffing.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// A repository's description: the plan's words for a service.
pub fn description(name: &str) -> String {
    if name == GITOPS_REPOSITORY {
        "Every change to what runs is a commit here: platform/, components/, infra/, values/, packages/."
            .into()
    } else if name == CATALOG_ONLY.name {
        CATALOG_ONLY.description.into()
    } else {
        service(name)
            .map(|s| s.description.to_string())
            .unwrap_or_default()
    }
}

/// `GET /orgs/{org}`.
pub async fn get_org(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path(org): Path<String>,
) -> Result<Json<Value>> {
    if !org.eq_ignore_ascii_case(ORGANISATION) {
        return Err(GitHubError::not_found().docs("/orgs/orgs#get-an-organization"));
    }
    Ok(Json(shapes::organization_full(
        &base,
        &forge.inner.config.html_base,
        forge.repository_names().len(),
    )))
}

/// `GET /orgs/{org}/repos`, paginated.
pub async fn list_org_repos(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path(org): Path<String>,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    if !org.eq_ignore_ascii_case(ORGANISATION) {
        return Err(GitHubError::not_found().docs("/repos/repos#list-organization-repositories"));
    }
    let names = forge.repository_names();
    let html = &forge.inner.config.html_base;
    let items = names
        .iter()
        .skip(paging.skip())
        .take(paging.per_page())
        .map(|name| shapes::repository(&base, html, name, &description(name)))
        .collect();
    Ok(paged(items, paging.link(&base, names.len())))
}

/// `GET /installation/repositories`: what the installation token can see.
pub async fn installation_repositories(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Query(paging): Query<Paging>,
) -> Response {
    let names = forge.repository_names();
    let html = &forge.inner.config.html_base;
    let repositories: Vec<Value> = names
        .iter()
        .skip(paging.skip())
        .take(paging.per_page())
        .map(|name| shapes::repository(&base, html, name, &description(name)))
        .collect();
    let mut response = Json(json!({
        "total_count": names.len(),
        "repository_selection": "all",
        "repositories": repositories,
    }))
    .into_response();
    if let Some(link) = paging.link(&base, names.len())
        && let Ok(value) = axum::http::HeaderValue::from_str(&link)
    {
        response
            .headers_mut()
            .insert(axum::http::header::LINK, value);
    }
    response
}

/// `GET /repos/{owner}/{repo}`.
pub async fn get_repo(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    Ok(Json(shapes::repository(
        &base,
        &forge.inner.config.html_base,
        &repo,
        &description(&repo),
    )))
}

/// `?ref=` of the contents API.
#[derive(Debug, Deserialize)]
pub struct RefQuery {
    #[serde(rename = "ref")]
    reference: Option<String>,
}

/// `GET /repos/{owner}/{repo}/contents`: the root folder.
pub async fn get_root_contents(
    reader: Reader,
    state: State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    query: Query<RefQuery>,
) -> Result<Json<Value>> {
    get_contents(
        reader,
        state,
        base,
        Path((owner, repo, String::new())),
        query,
    )
    .await
}

/// One entry of `git ls-tree -l`.
pub struct TreeEntry {
    /// e.g. `100644`.
    pub mode: String,
    /// `blob`, `tree` or `commit`.
    pub kind: String,
    /// Object id.
    pub sha: String,
    /// Blob size.
    pub size: Option<u64>,
    /// Path as listed.
    pub path: String,
}

/// Reads `git ls-tree -l` output.
pub fn parse_ls_tree(text: &str) -> Vec<TreeEntry> {
    text.lines()
        .filter_map(|line| {
            let (meta, path) = line.split_once('\t')?;
            let mut fields = meta.split_whitespace();
            Some(TreeEntry {
                mode: fields.next()?.into(),
                kind: fields.next()?.into(),
                sha: fields.next()?.into(),
                size: fields.next().and_then(|s| s.parse().ok()),
                path: path.into(),
            })
        })
        .collect()
}

fn no_commit(rev: &str) -> GitHubError {
    GitHubError::new(
        axum::http::StatusCode::NOT_FOUND,
        format!("No commit found for the ref {rev}"),
    )
    .docs("/repos/contents#get-repository-content")
}

/// `GET /repos/{owner}/{repo}/contents/{path}?ref=`: a file (base64) or a folder's entries.
pub async fn get_contents(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, path)): Path<(String, String, String)>,
    Query(query): Query<RefQuery>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let rev = query.reference.unwrap_or_else(|| "main".into());
        let commit = git.resolve(&rev)?.ok_or_else(|| no_commit(&rev))?;
        let path = path.trim_matches('/').to_string();
        let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
        let entry_json = |entry: &TreeEntry, full: &str, content: Option<&[u8]>| {
            let name = full.rsplit('/').next().unwrap_or(full);
            let kind = match entry.kind.as_str() {
                "tree" => "dir",
                "commit" => "submodule",
                _ if entry.mode == "120000" => "symlink",
                _ => "file",
            };
            let url = format!("{api}/contents/{full}?ref={rev}");
            let git_url = format!(
                "{api}/git/{}/{}",
                if kind == "dir" { "trees" } else { "blobs" },
                entry.sha
            );
            let html_url = format!(
                "{html}/{ORGANISATION}/{repo}/{}/{rev}/{full}",
                if kind == "dir" { "tree" } else { "blob" }
            );
            let download = if kind == "file" {
                Value::String(format!("{html}/{ORGANISATION}/{repo}/raw/{rev}/{full}"))
            } else {
                Value::Null
            };
            let mut value = json!({
                "type": kind,
                "size": entry.size.unwrap_or(0),
                "name": name,
                "path": full,
                "sha": entry.sha,
                "url": url,
                "git_url": git_url,
                "html_url": html_url,
                "download_url": download,
                "_links": {"self": url, "git": git_url, "html": html_url},
            });
            if let (Some(content), Some(object)) = (content, value.as_object_mut()) {
                let encoded = base64::engine::general_purpose::STANDARD.encode(content);
                // GitHub wraps base64 content at 60 characters per line.
                let wrapped = encoded
                    .as_bytes()
                    .chunks(60)
                    .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
                    .collect::<Vec<_>>()
                    .join("\n");
                object.insert("content".into(), format!("{wrapped}\n").into());
                object.insert("encoding".into(), "base64".into());
            }
            value
        };
        let list = |treeish: &str, prefix: &str| -> Result<Json<Value>> {
            let listing = git.run(&["ls-tree", "-l", treeish])?;
            Ok(Json(Value::Array(
                parse_ls_tree(&listing)
                    .iter()
                    .map(|e| {
                        let full = if prefix.is_empty() {
                            e.path.clone()
                        } else {
                            format!("{prefix}/{}", e.path)
                        };
                        entry_json(e, &full, None)
                    })
                    .collect(),
            )))
        };
        if path.is_empty() {
            return list(&commit, "");
        }
        let listing = git.run(&["ls-tree", "-l", &commit, "--", &path])?;
        let entry = parse_ls_tree(&listing)
            .into_iter()
            .find(|e| e.path == path)
            .ok_or_else(|| {
                GitHubError::not_found().docs("/repos/contents#get-repository-content")
            })?;
        if entry.kind == "tree" {
            return list(&format!("{commit}:{path}"), &path);
        }
        let content = git.run_with(&["cat-file", "blob", &entry.sha], None, &[])?;
        Ok(Json(entry_json(&entry, &path, Some(&content))))
    })
    .await
}

/// Query of `GET /repos/{owner}/{repo}/commits`.
#[derive(Debug, Deserialize)]
pub struct CommitsQuery {
    sha: Option<String>,
    path: Option<String>,
    per_page: Option<usize>,
    page: Option<usize>,
}

/// `GET /repos/{owner}/{repo}/commits?sha=&path=`: commits reachable from `sha` touching `path`, newest
/// first, paginated with a `Link` header.
pub async fn list_commits(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<CommitsQuery>,
) -> Result<Response> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let paging = Paging {
            per_page: query.per_page,
            page: query.page,
        };
        let rev = query.sha.unwrap_or_else(|| "main".into());
        let commit = git
            .resolve(&rev)?
            .ok_or_else(|| GitHubError::not_found().docs("/commits/commits#list-commits"))?;
        let path = query.path.filter(|p| !p.trim_matches('/').is_empty());
        let path = path.as_deref().map(|p| p.trim_matches('/'));
        let total = git.count(&commit, path)?;
        let commits = git.log(&commit, path, paging.skip(), paging.per_page())?;
        let items = commits
            .iter()
            .map(|c| shapes::commit(&base, &html, &repo, c))
            .collect();
        Ok(paged(items, paging.link(&base, total)))
    })
    .await
}

/// The changed files between two commits as the commits and compare APIs list them, with totals.
pub fn diff_files(
    git: &Git,
    base: &ApiBase,
    html: &str,
    repo: &str,
    from: &str,
    to: &str,
) -> Result<(Vec<Value>, Value)> {
    let raw = git.run(&["diff", "--raw", "--no-abbrev", "--no-renames", from, to])?;
    let numstat = git.run(&["diff", "--numstat", "--no-renames", from, to])?;
    let patch = git.run(&["diff", "--no-renames", "--no-color", from, to])?;
    let mut patches = std::collections::HashMap::new();
    for section in patch.split("diff --git a/").skip(1) {
        let path = section
            .split_once(" b/")
            .map(|(p, _)| p.to_string())
            .unwrap_or_default();
        let hunk = section
            .find("\n@@")
            .map(|at| section[at + 1..].trim_end().to_string());
        patches.insert(path, hunk);
    }
    let counts: std::collections::HashMap<String, (u64, u64)> = numstat
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, '\t');
            let add = fields.next()?.parse().unwrap_or(0);
            let del = fields.next()?.parse().unwrap_or(0);
            Some((fields.next()?.to_string(), (add, del)))
        })
        .collect();
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    let (mut total_add, mut total_del) = (0, 0);
    let files = raw
        .lines()
        .filter_map(|line| {
            let (meta, path) = line.split_once('\t')?;
            let fields: Vec<&str> = meta.split_whitespace().collect();
            let (old_sha, new_sha, letter) = (fields.get(2)?, fields.get(3)?, fields.get(4)?);
            let status = match *letter {
                "A" => "added",
                "D" => "removed",
                _ => "modified",
            };
            let sha = if status == "removed" {
                old_sha
            } else {
                new_sha
            };
            let (additions, deletions) = counts.get(path).copied().unwrap_or((0, 0));
            total_add += additions;
            total_del += deletions;
            let mut file = json!({
                "sha": sha,
                "filename": path,
                "status": status,
                "additions": additions,
                "deletions": deletions,
                "changes": additions + deletions,
                "blob_url": format!("{html}/{ORGANISATION}/{repo}/blob/{to}/{path}"),
                "raw_url": format!("{html}/{ORGANISATION}/{repo}/raw/{to}/{path}"),
                "contents_url": format!("{api}/contents/{path}?ref={to}"),
            });
            if let (Some(Some(patch)), Some(object)) = (patches.get(path), file.as_object_mut()) {
                object.insert("patch".into(), patch.clone().into());
            }
            Some(file)
        })
        .collect();
    let stats =
        json!({"total": total_add + total_del, "additions": total_add, "deletions": total_del});
    Ok((files, stats))
}

/// The one commit `sha` names, as `git log` reports it.
pub fn commit_info(git: &Git, sha: &str) -> Result<crate::git::CommitInfo> {
    git.log(sha, None, 0, 1)?
        .into_iter()
        .next()
        .ok_or_else(GitHubError::not_found)
}

/// `GET /repos/{owner}/{repo}/commits/{ref}`: one commit with its `files` and `stats`.
pub async fn get_commit(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let sha = git.resolve(&reference)?.ok_or_else(|| {
            GitHubError::unprocessable(format!("No commit found for SHA: {reference}"))
                .docs("/commits/commits#get-a-commit")
        })?;
        let info = commit_info(&git, &sha)?;
        let parent = info
            .parents
            .first()
            .cloned()
            .unwrap_or_else(|| EMPTY_TREE.into());
        let (files, stats) = diff_files(&git, &base, &html, &repo, &parent, &sha)?;
        let mut value = shapes::commit(&base, &html, &repo, &info);
        if let Some(object) = value.as_object_mut() {
            object.insert("stats".into(), stats);
            object.insert("files".into(), Value::Array(files));
        }
        Ok(Json(value))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/compare/{base}...{head}`: commits on head since the merge base, and files.
pub async fn compare(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, range)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let missing = || GitHubError::not_found().docs("/commits/commits#compare-two-commits");
        let (from, to) = range
            .split_once("...")
            .or_else(|| range.split_once(".."))
            .ok_or_else(missing)?;
        let from_sha = git.resolve(from)?.ok_or_else(missing)?;
        let to_sha = git.resolve(to)?.ok_or_else(missing)?;
        let merge_base = git
            .try_run(&["merge-base", &from_sha, &to_sha])?
            .map(|s| s.trim().to_string())
            .ok_or_else(missing)?;
        let ahead = git.count(&format!("{from_sha}..{to_sha}"), None)?;
        let behind = git.count(&format!("{to_sha}..{from_sha}"), None)?;
        let mut commits = git.log(&format!("{from_sha}..{to_sha}"), None, 0, 250)?;
        commits.reverse();
        let (files, _) = diff_files(&git, &base, &html, &repo, &merge_base, &to_sha)?;
        let status = match (ahead, behind) {
            (0, 0) => "identical",
            (_, 0) => "ahead",
            (0, _) => "behind",
            _ => "diverged",
        };
        let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
        let web = format!("{html}/{ORGANISATION}/{repo}/compare");
        Ok(Json(json!({
            "url": format!("{api}/compare/{range}"),
            "html_url": format!("{web}/{range}"),
            "permalink_url": format!("{web}/{from_sha}...{to_sha}"),
            "diff_url": format!("{web}/{range}.diff"),
            "patch_url": format!("{web}/{range}.patch"),
            "base_commit": shapes::commit(&base, &html, &repo, &commit_info(&git, &from_sha)?),
            "merge_base_commit": shapes::commit(&base, &html, &repo, &commit_info(&git, &merge_base)?),
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": ahead,
            "commits": commits.iter().map(|c| shapes::commit(&base, &html, &repo, c)).collect::<Vec<_>>(),
            "files": files,
        })))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/branches/{branch}`.
pub async fn get_branch(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, branch)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        let sha = git
            .resolve(&format!("refs/heads/{branch}"))?
            .ok_or_else(|| {
                GitHubError::new(axum::http::StatusCode::NOT_FOUND, "Branch not found")
                    .docs("/branches/branches#get-a-branch")
            })?;
        let info = commit_info(&git, &sha)?;
        let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
        let protected = branch == "main";
        Ok(Json(json!({
            "name": branch,
            "commit": shapes::commit(&base, &html, &repo, &info),
            "_links": {
                "self": format!("{api}/branches/{branch}"),
                "html": format!("{html}/{ORGANISATION}/{repo}/tree/{branch}"),
            },
            "protected": protected,
            // The forge enforces no rule on its branches: GitHub's summary of a branch without any.
            "protection": {
                "enabled": protected,
                "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []},
            },
            "protection_url": format!("{api}/branches/{branch}/protection"),
        })))
    })
    .await
}
