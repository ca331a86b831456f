//! Pull requests: open, list, read, edit, merge (a real merge commit on the base branch), what a push to
//! a head branch does to them, and the demo reviewer's merge button.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{Authed, Reader};
use super::body::{Body, Resource};
use super::repos::diff_files;
use super::webhooks::Hook;
use super::{
    ApiBase, Forge, GitHubError, MergeEvent, Paging, Pull, Result, blocking, now, paged, shapes,
};
use crate::git::{Git, people};
use crate::world::{GITOPS_REPOSITORY, ORGANISATION};

const DOCS_CREATE: &str = "/pulls/pulls#create-a-pull-request";
const DOCS_MERGE: &str = "/pulls/pulls#merge-a-pull-request";

/// Facts about a pull request that need git: whether it merges cleanly and its size.
#[derive(Debug, Clone, Default)]
pub(super) struct Details {
    mergeable: Option<bool>,
    commits: usize,
    additions: u64,
    deletions: u64,
    changed_files: usize,
}

/// Where `a` and `b` forked (`a` itself when they share nothing).
pub(super) fn merge_base(git: &Git, a: &str, b: &str) -> Result<String> {
    Ok(git
        .try_run(&["merge-base", a, b])?
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| a.to_string()))
}

/// Whether `pull` merges cleanly (when open), and its size. Runs git.
pub(super) fn details(git: &Git, pull: &Pull) -> Result<Details> {
    let fork_point = merge_base(git, &pull.base_sha, &pull.head_sha)?;
    let numstat = git.run(&[
        "diff",
        "--numstat",
        "--no-renames",
        &fork_point,
        &pull.head_sha,
    ])?;
    let (mut additions, mut deletions, mut changed_files) = (0, 0, 0);
    for line in numstat.lines() {
        let mut fields = line.split('\t');
        additions += fields
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        deletions += fields
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        changed_files += 1;
    }
    let mergeable = if pull.open {
        Some(
            git.try_run(&["merge-tree", "--write-tree", &pull.base_sha, &pull.head_sha])?
                .is_some(),
        )
    } else {
        None
    };
    Ok(Details {
        mergeable,
        commits: git.count(&format!("{fork_point}..{}", pull.head_sha), None)?,
        additions,
        deletions,
        changed_files,
    })
}

/// The pull request object; `details` adds the fields only single-pull responses carry. Reads the forge's
/// state (labels, comments), so never call it holding the state's lock.
pub(super) fn pull_json(
    forge: &Forge,
    base: &ApiBase,
    repo: &str,
    pull: &Pull,
    details: Option<&Details>,
) -> Value {
    let html_base = &forge.inner.config.html_base;
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    let html = format!("{html_base}/{ORGANISATION}/{repo}/pull/{}", pull.number);
    let issue = format!("{api}/issues/{}", pull.number);
    let id = shapes::repository_id(repo) * 1000 + pull.number;
    let (labels, comments) = {
        let mut state = forge.state();
        let comments = state
            .comments
            .get(&(repo.to_string(), pull.number))
            .map_or(0, Vec::len);
        let defined = state.labels_of(repo).clone();
        let labels: Vec<Value> = pull
            .labels
            .iter()
            .filter_map(|name| defined.iter().find(|l| l.name == *name))
            .map(|label| super::issues::label_json(base, repo, label))
            .collect();
        (labels, comments)
    };
    let side = |reference: &str, sha: &str| {
        json!({
            "label": format!("{ORGANISATION}:{reference}"),
            "ref": reference,
            "sha": sha,
            "user": shapes::org_owner(base, html_base),
            "repo": shapes::repository(base, html_base, repo, ""),
        })
    };
    let links = json!({
    "self": {"href": format!("{api}/pulls/{}", pull.number)},
    "html": {"href": html},
    "issue": {"href": issue},
    "comments": {"href": format!("{issue}/comments")},
    "review_comments": {"href": format!("{api}/pulls/{}/comments", pull.number)},
    "review_comment": {"href": format!("{api}/pulls/comments{{/number}}")},
    "commits": {"href": format!("{api}/pulls/{}/commits", pull.number)},
    "statuses": {"href": format!("{api}/statuses/{}", pull.head_sha)},
    });
    let mut value = json!({
        "url": format!("{api}/pulls/{}", pull.number),
        "id": id,
        "node_id": shapes::node_id("PullRequest", id),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": issue,
        "commits_url": format!("{api}/pulls/{}/commits", pull.number),
        "review_comments_url": format!("{api}/pulls/{}/comments", pull.number),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{issue}/comments"),
        "statuses_url": format!("{api}/statuses/{}", pull.head_sha),
        "number": pull.number,
        "state": if pull.open { "open" } else { "closed" },
        "locked": false,
        "title": pull.title,
        "user": shapes::user(base, html_base, &pull.user),
        "body": pull.body,
        "labels": labels,
        "milestone": null,
        "active_lock_reason": null,
        "created_at": pull.created_at,
        "updated_at": pull.updated_at,
        "closed_at": pull.closed_at,
        "merged_at": pull.merged_at,
        "merge_commit_sha": pull.merge_commit_sha,
        "assignee": null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": side(&pull.head_ref, &pull.head_sha),
        "base": side(&pull.base_ref, &pull.base_sha),
        "_links": links,
        "author_association": if people::identity(&pull.user).bot { "NONE" } else { "MEMBER" },
        "auto_merge": null,
        "draft": pull.draft,
    });
    if let (Some(details), Some(object)) = (details, value.as_object_mut()) {
        let extra = json!({
            "merged": pull.merged_at.is_some(),
            "mergeable": details.mergeable,
            "rebaseable": details.mergeable,
            "mergeable_state": match details.mergeable {
                Some(true) => "clean",
                Some(false) => "dirty",
                None => "unknown",
            },
            "merged_by": pull.merged_by.as_deref().map(|l| shapes::user(base, html_base, l)),
            "comments": comments,
            "review_comments": 0,
            "maintainer_can_modify": false,
            "commits": details.commits,
            "additions": details.additions,
            "deletions": details.deletions,
            "changed_files": details.changed_files,
        });
        if let Some(extra) = extra.as_object() {
            object.extend(extra.clone());
        }
    }
    value
}

/// Brings an open pull request's head and base up to date with their branches.
pub(super) fn refresh(git: &Git, pull: &mut Pull) -> Result<()> {
    if pull.open {
        if let Some(head) = git.resolve(&format!("refs/heads/{}", pull.head_ref))? {
            pull.head_sha = head;
        }
        if let Some(base) = git.resolve(&format!("refs/heads/{}", pull.base_ref))? {
            pull.base_sha = base;
        }
    }
    Ok(())
}

/// A pull request by number, or 404.
pub(super) fn find(forge: &Forge, repo: &str, number: u64) -> Result<Pull> {
    forge
        .state()
        .pulls
        .get(repo)
        .and_then(|pulls| pulls.iter().find(|p| p.number == number).cloned())
        .ok_or_else(|| GitHubError::not_found().docs("/pulls/pulls#get-a-pull-request"))
}

/// Writes `pull` back over the stored pull request of the same number.
pub(super) fn store(forge: &Forge, repo: &str, pull: &Pull) {
    if let Some(slot) = forge
        .state()
        .pulls
        .get_mut(repo)
        .and_then(|pulls| pulls.iter_mut().find(|p| p.number == pull.number))
    {
        *slot = pull.clone();
    }
}

/// Body of `POST /pulls`.
#[derive(Debug, Deserialize)]
pub struct CreatePull {
    title: Option<String>,
    head: Option<String>,
    base: Option<String>,
    body: Option<String>,
    #[serde(default)]
    draft: bool,
}

impl Resource for CreatePull {
    const NAME: &'static str = "PullRequest";
}

/// `POST /repos/{owner}/{repo}/pulls` {title, head, base, body, draft}: 201 with the pull request.
pub async fn create(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(body): Body<CreatePull>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    let missing =
        |field: &str| GitHubError::invalid("PullRequest", field, "missing_field").docs(DOCS_CREATE);
    let invalid =
        |field: &str| GitHubError::invalid("PullRequest", field, "invalid").docs(DOCS_CREATE);
    let title = body
        .title
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| missing("title"))?;
    let head = body
        .head
        .filter(|h| !h.is_empty())
        .ok_or_else(|| missing("head"))?;
    let base_ref = body
        .base
        .filter(|b| !b.is_empty())
        .ok_or_else(|| missing("base"))?;
    // `head` may name the branch as `owner:branch`; only branches of this repository exist here.
    let head_ref = match head.split_once(':') {
        Some((head_owner, branch)) if head_owner.eq_ignore_ascii_case(ORGANISATION) => {
            branch.to_string()
        }
        Some(_) => return Err(invalid("head")),
        None => head.clone(),
    };
    let (head_sha, base_sha, verdict) = {
        let (git, repo, head_ref, base_ref) = (
            git.clone(),
            repo.clone(),
            head_ref.clone(),
            base_ref.clone(),
        );
        blocking(move || {
            let head_sha = git
                .resolve(&format!("refs/heads/{head_ref}"))?
                .ok_or_else(|| invalid("head"))?;
            let base_sha = git
                .resolve(&format!("refs/heads/{base_ref}"))?
                .ok_or_else(|| invalid("base"))?;
            if git.count(&format!("{base_sha}..{head_sha}"), None)? == 0 {
                return Err(GitHubError::custom(
                    "PullRequest",
                    None,
                    &format!("No commits between {base_ref} and {head_ref}"),
                )
                .docs(DOCS_CREATE));
            }
            let verdict = super::checks::verdict(&git, &repo, &base_sha, &head_sha)?;
            Ok((head_sha, base_sha, verdict))
        })
        .await?
    };
    let created = now();
    let pull = {
        let mut state = forge.state();
        let exists = state.pulls.get(&repo).is_some_and(|pulls| {
            pulls
                .iter()
                .any(|p| p.open && p.head_ref == head_ref && p.base_ref == base_ref)
        });
        if exists {
            return Err(GitHubError::custom(
                "PullRequest",
                None,
                &format!("A pull request already exists for {ORGANISATION}:{head_ref}."),
            )
            .docs(DOCS_CREATE));
        }
        let number = state.next_number.get(&repo).copied().unwrap_or(1);
        state.next_number.insert(repo.clone(), number + 1);
        let pull = Pull {
            number,
            title,
            body: body.body.unwrap_or_default(),
            open: true,
            draft: body.draft,
            head_ref,
            head_sha: head_sha.clone(),
            base_ref,
            base_sha,
            user: caller.login(),
            created_at: created.clone(),
            updated_at: created,
            closed_at: None,
            merged_at: None,
            merge_commit_sha: None,
            merged_by: None,
            labels: Vec::new(),
        };
        state
            .pulls
            .entry(repo.clone())
            .or_default()
            .push(pull.clone());
        pull
    };
    forge.hook(Hook::pull_request(&repo, "opened", &pull, &caller.login()));
    super::checks::start_ci(&forge, &repo, &head_sha, Some(pull.number), verdict);
    let details = {
        let pull = pull.clone();
        blocking(move || details(&git, &pull)).await?
    };
    Ok((
        StatusCode::CREATED,
        Json(pull_json(&forge, &base, &repo, &pull, Some(&details))),
    ))
}

/// What follows a push to `branch` of `repo`: every open pull request whose head it is gets its new head
/// `after`, a `synchronize` webhook and a new CI run on it. Runs git.
pub(super) fn head_moved(
    forge: &Forge,
    repo: &str,
    branch: &str,
    after: &str,
    pusher: &str,
) -> Result<()> {
    let moved: Vec<Pull> = forge
        .state()
        .pulls
        .get(repo)
        .map(|pulls| {
            pulls
                .iter()
                .filter(|p| p.open && p.head_ref == branch && p.head_sha != after)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if moved.is_empty() {
        return Ok(());
    }
    let git = forge.repo(ORGANISATION, repo)?;
    for mut pull in moved {
        let before = std::mem::replace(&mut pull.head_sha, after.to_string());
        if let Some(base) = git.resolve(&format!("refs/heads/{}", pull.base_ref))? {
            pull.base_sha = base;
        }
        pull.updated_at = now();
        let verdict = super::checks::verdict(&git, repo, &pull.base_sha, after)?;
        store(forge, repo, &pull);
        let mut hook = Hook::pull_request(repo, "synchronize", &pull, pusher);
        if let Hook::PullRequest { extra, .. } = &mut hook {
            *extra = json!({"before": before, "after": after});
        }
        forge.hook(hook);
        super::checks::start_ci(forge, repo, after, Some(pull.number), verdict);
    }
    Ok(())
}

/// Query of `GET /pulls`.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    state: Option<String>,
    head: Option<String>,
    base: Option<String>,
    sort: Option<String>,
    direction: Option<String>,
    per_page: Option<usize>,
    page: Option<usize>,
}

/// `GET /repos/{owner}/{repo}/pulls?state=&head=org:branch&base=&sort=created|updated&direction=`, newest
/// first.
pub async fn list(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<ListQuery>,
) -> Result<Response> {
    let git = forge.repo(&owner, &repo)?;
    let state = query.state.as_deref().unwrap_or("open");
    if !["open", "closed", "all"].contains(&state) {
        return Err(GitHubError::invalid("PullRequest", "state", "invalid")
            .docs("/pulls/pulls#list-pull-requests"));
    }
    let head = query
        .head
        .as_deref()
        .map(|h| h.split_once(':').map(|(_, b)| b).unwrap_or(h).to_string());
    let mut pulls: Vec<Pull> = forge
        .state()
        .pulls
        .get(&repo)
        .map(|pulls| {
            pulls
                .iter()
                .filter(|p| match state {
                    "open" => p.open,
                    "closed" => !p.open,
                    _ => true,
                })
                .filter(|p| head.as_ref().is_none_or(|h| &p.head_ref == h))
                .filter(|p| query.base.as_ref().is_none_or(|b| &p.base_ref == b))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    match query.sort.as_deref().unwrap_or("created") {
        "created" => {}
        // RFC 3339 in one zone sorts as text; stable, so ties keep their creation order.
        "updated" => pulls.sort_by(|a, b| a.updated_at.cmp(&b.updated_at)),
        _ => {
            return Err(GitHubError::invalid("PullRequest", "sort", "invalid")
                .docs("/pulls/pulls#list-pull-requests"));
        }
    }
    if query.direction.as_deref() != Some("asc") {
        pulls.reverse();
    }
    let paging = Paging {
        per_page: query.per_page,
        page: query.page,
    };
    let total = pulls.len();
    let mut page: Vec<Pull> = pulls
        .into_iter()
        .skip(paging.skip())
        .take(paging.per_page())
        .collect();
    let page = blocking(move || {
        for pull in &mut page {
            refresh(&git, pull)?;
        }
        Ok(page)
    })
    .await?;
    let items = page
        .iter()
        .map(|p| pull_json(&forge, &base, &repo, p, None))
        .collect();
    Ok(paged(items, paging.link(&base, total)))
}

/// `GET /repos/{owner}/{repo}/pulls/{number}`.
pub async fn get(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let mut pull = find(&forge, &repo, number)?;
    let (pull, details) = blocking(move || {
        refresh(&git, &mut pull)?;
        let details = details(&git, &pull)?;
        Ok((pull, details))
    })
    .await?;
    Ok(Json(pull_json(&forge, &base, &repo, &pull, Some(&details))))
}

/// Body of `PATCH /pulls/{number}`.
#[derive(Debug, Deserialize)]
pub struct UpdatePull {
    title: Option<String>,
    body: Option<String>,
    state: Option<String>,
}

impl Resource for UpdatePull {
    const NAME: &'static str = "PullRequest";
}

/// `PATCH /repos/{owner}/{repo}/pulls/{number}` {title, body, state}: `edited`, `closed` or `reopened`
/// webhooks as the change was.
pub async fn update(
    Authed(caller): Authed,
    state: State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Body(body): Body<UpdatePull>,
) -> Result<Json<Value>> {
    let forge = state.0.clone();
    forge.repo(&owner, &repo)?;
    let docs = "/pulls/pulls#update-a-pull-request";
    let mut pull = find(&forge, &repo, number)?;
    let was_open = pull.open;
    // What an `edited` delivery's `changes` names: each edited field with what it was before.
    let mut changes = serde_json::Map::new();
    if body.title.as_ref().is_some_and(|t| *t != pull.title) {
        changes.insert("title".into(), json!({"from": pull.title}));
    }
    if body.body.as_ref().is_some_and(|b| *b != pull.body) {
        changes.insert("body".into(), json!({"from": pull.body}));
    }
    if let Some(title) = body.title {
        if title.trim().is_empty() {
            return Err(GitHubError::invalid("PullRequest", "title", "missing_field").docs(docs));
        }
        pull.title = title;
    }
    if let Some(text) = body.body {
        pull.body = text;
    }
    match body.state.as_deref() {
        None => {}
        Some("closed") if pull.merged_at.is_none() => {
            pull.open = false;
            pull.closed_at = Some(now());
        }
        Some("open") if pull.merged_at.is_none() => {
            pull.open = true;
            pull.closed_at = None;
        }
        Some("open" | "closed") => {
            return Err(GitHubError::custom(
                "PullRequest",
                Some("state"),
                "state cannot be changed. The pull request has been merged.",
            )
            .docs(docs));
        }
        Some(_) => {
            return Err(GitHubError::invalid("PullRequest", "state", "invalid").docs(docs));
        }
    }
    pull.updated_at = now();
    store(&forge, &repo, &pull);
    let sender = caller.login();
    if !changes.is_empty() {
        let mut hook = Hook::pull_request(&repo, "edited", &pull, &sender);
        if let Hook::PullRequest { extra, .. } = &mut hook {
            *extra = json!({"changes": changes});
        }
        forge.hook(hook);
    }
    match (was_open, pull.open) {
        (true, false) => forge.hook(Hook::pull_request(&repo, "closed", &pull, &sender)),
        (false, true) => forge.hook(Hook::pull_request(&repo, "reopened", &pull, &sender)),
        _ => {}
    }
    get(
        Reader(Some(caller)),
        state,
        base,
        Path((owner, repo, number)),
    )
    .await
}

/// `GET /repos/{owner}/{repo}/pulls/{number}/merge`: 204 when merged, 404 otherwise.
pub async fn is_merged(
    _: Reader,
    State(forge): State<Forge>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Result<StatusCode> {
    forge.repo(&owner, &repo)?;
    match find(&forge, &repo, number)?.merged_at {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => {
            Err(GitHubError::not_found()
                .docs("/pulls/pulls#check-if-a-pull-request-has-been-merged"))
        }
    }
}

/// Body of `PUT /pulls/{number}/merge`.
#[derive(Debug, Deserialize)]
pub struct MergeBody {
    commit_title: Option<String>,
    commit_message: Option<String>,
    sha: Option<String>,
    merge_method: Option<String>,
}

impl Resource for MergeBody {
    const NAME: &'static str = "PullRequest";
}

/// `PUT /repos/{owner}/{repo}/pulls/{number}/merge`: a merge commit on the base branch.
pub async fn merge_route(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Body(body): Body<MergeBody>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    match body.merge_method.as_deref() {
        None | Some("merge") => {}
        Some("squash" | "rebase") => {
            return Err(GitHubError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "Only merge commits are allowed on this repository.",
            )
            .docs(DOCS_MERGE));
        }
        Some(_) => {
            return Err(
                GitHubError::invalid("PullRequest", "merge_method", "invalid").docs(DOCS_MERGE),
            );
        }
    }
    let message = match (body.commit_title, body.commit_message) {
        (Some(title), Some(text)) => Some(format!("{title}\n\n{text}")),
        (Some(title), None) => Some(title),
        (None, Some(text)) => Some(text),
        (None, None) => None,
    };
    let event = merge(&forge, &repo, number, &caller.login(), body.sha, message).await?;
    Ok(Json(json!({
        "sha": event.merge_sha,
        "merged": true,
        "message": "Pull Request successfully merged",
    })))
}

/// Merges pull request `number` of `repo` as `merger`: `git merge-tree` then a two-parent commit on the
/// base branch, moved with a compare-and-swap so a concurrent push is noticed.
pub async fn merge(
    forge: &Forge,
    repo: &str,
    number: u64,
    merger: &str,
    expected_head: Option<String>,
    message: Option<String>,
) -> Result<MergeEvent> {
    let git = forge.repo(ORGANISATION, repo)?;
    let pull = find(forge, repo, number)?;
    let not_mergeable = || {
        GitHubError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "Pull Request is not mergeable",
        )
        .docs(DOCS_MERGE)
    };
    if !pull.open {
        return Err(not_mergeable());
    }
    let who = people::identity(merger);
    let message = message.unwrap_or_else(|| {
        format!(
            "Merge pull request #{number} from {ORGANISATION}/{}\n\n{}",
            pull.head_ref, pull.title
        )
    });
    let (merge_sha, head_sha, base_sha, files) = {
        let pull = pull.clone();
        let forge = forge.clone();
        let (repo, merger) = (repo.to_string(), merger.to_string());
        blocking(move || {
            let head = git
                .resolve(&format!("refs/heads/{}", pull.head_ref))?
                .unwrap_or_else(|| pull.head_sha.clone());
            if expected_head.as_ref().is_some_and(|sha| *sha != head) {
                return Err(GitHubError::new(
                    StatusCode::CONFLICT,
                    "Head branch was modified. Review and try the merge again.",
                )
                .docs(DOCS_MERGE));
            }
            let base_ref = format!("refs/heads/{}", pull.base_ref);
            let base = git.resolve(&base_ref)?.ok_or_else(not_mergeable)?;
            let tree = git
                .try_run(&["merge-tree", "--write-tree", &base, &head])?
                .and_then(|out| out.lines().next().map(String::from))
                .ok_or_else(not_mergeable)?;
            let time = format!("{} +0000", jiff::Timestamp::now().as_second());
            let env = [
                ("GIT_AUTHOR_NAME", who.name.clone()),
                ("GIT_AUTHOR_EMAIL", who.email.clone()),
                ("GIT_AUTHOR_DATE", time.clone()),
                ("GIT_COMMITTER_NAME", who.name.clone()),
                ("GIT_COMMITTER_EMAIL", who.email.clone()),
                ("GIT_COMMITTER_DATE", time),
            ];
            let out = git.run_with(
                &["commit-tree", &tree, "-p", &base, "-p", &head],
                Some(message.as_bytes()),
                &env,
            )?;
            let merge_sha = String::from_utf8_lossy(&out).trim().to_string();
            if git
                .try_run(&["update-ref", &base_ref, &merge_sha, &base])?
                .is_none()
            {
                return Err(GitHubError::new(
                    StatusCode::CONFLICT,
                    "Base branch was modified. Review and try the merge again.",
                )
                .docs(DOCS_MERGE));
            }
            let files = git
                .run(&["diff", "--name-only", "--no-renames", &base, &merge_sha])?
                .lines()
                .map(String::from)
                .collect();
            forge.announce_push(&repo, &base_ref, &base, &merge_sha, &merger);
            Ok((merge_sha, head, base, files))
        })
        .await?
    };
    let merged_at = now();
    let mut updated = pull;
    updated.open = false;
    updated.head_sha = head_sha;
    updated.base_sha = base_sha;
    updated.merged_at = Some(merged_at.clone());
    updated.closed_at = Some(merged_at.clone());
    updated.updated_at = merged_at;
    updated.merge_commit_sha = Some(merge_sha.clone());
    updated.merged_by = Some(merger.into());
    store(forge, repo, &updated);
    forge.hook(Hook::pull_request(repo, "closed", &updated, merger));
    let event = MergeEvent {
        repo: repo.into(),
        number,
        merge_sha,
        files_changed: files,
    };
    // Nobody listening is fine: the simulator may not be running.
    let _ = forge.inner.merges.send(event.clone());
    Ok(event)
}

/// `GET /repos/{owner}/{repo}/pulls/{number}/files`.
pub async fn files(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let mut pull = find(&forge, &repo, number)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        refresh(&git, &mut pull)?;
        let fork_point = merge_base(&git, &pull.base_sha, &pull.head_sha)?;
        let (files, _) = diff_files(&git, &base, &html, &repo, &fork_point, &pull.head_sha)?;
        Ok(Json(Value::Array(files)))
    })
    .await
}

/// `GET /repos/{owner}/{repo}/pulls/{number}/commits`, oldest first.
pub async fn commits(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let mut pull = find(&forge, &repo, number)?;
    let html = forge.inner.config.html_base.clone();
    blocking(move || {
        refresh(&git, &mut pull)?;
        let range = format!("{}..{}", pull.base_sha, pull.head_sha);
        let mut commits = git.log(&range, None, 0, 250)?;
        commits.reverse();
        Ok(Json(Value::Array(
            commits
                .iter()
                .map(|c| shapes::commit(&base, &html, &repo, c))
                .collect(),
        )))
    })
    .await
}

/// `?merger=` of the sandbox's merge button.
#[derive(Debug, Deserialize)]
pub struct MergerQuery {
    merger: Option<String>,
}

/// `POST /sandbox/pulls/{number}/merge`: a demo reviewer merges a pull request of
/// `application-repositories`.
pub async fn sandbox_merge(
    State(forge): State<Forge>,
    Path(number): Path<u64>,
    Query(query): Query<MergerQuery>,
) -> Result<Json<MergeEvent>> {
    let merger = query.merger.unwrap_or_else(|| "root".into());
    Ok(Json(
        merge(&forge, GITOPS_REPOSITORY, number, &merger, None, None).await?,
    ))
}

/// `POST /sandbox/repos/{repo}/pulls/{number}/merge`: the same for any repository.
pub async fn sandbox_merge_in(
    State(forge): State<Forge>,
    Path((repo, number)): Path<(String, u64)>,
    Query(query): Query<MergerQuery>,
) -> Result<Json<MergeEvent>> {
    let merger = query.merger.unwrap_or_else(|| "root".into());
    Ok(Json(
        merge(&forge, &repo, number, &merger, None, None).await?,
    ))
}
