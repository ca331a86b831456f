//! The issues API where it touches pull requests (every issue here is a pull request: they share one
//! sequence of numbers, as on GitHub): issue comments, a repository's labels, and an issue's labels with
//! their `labeled` / `unlabeled` webhooks.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{Authed, Reader};
use super::body::{Body, Resource};
use super::pulls::{find, store};
use super::webhooks::Hook;
use super::{ApiBase, Comment, Forge, GitHubError, Label, Paging, Result, now, paged, shapes};
use crate::git::people;
use crate::world::ORGANISATION;

const DOCS_LABELS: &str = "/issues/labels";
/// The colour GitHub gives a label created by adding it to an issue.
const NEW_LABEL_COLOR: &str = "ededed";

/// The labels GitHub gives a new repository.
pub fn default_labels() -> Vec<Label> {
    [
        ("bug", "d73a4a", "Something isn't working"),
        (
            "documentation",
            "0075ca",
            "Improvements or additions to documentation",
        ),
        (
            "duplicate",
            "cfd3d7",
            "This issue or pull request already exists",
        ),
        ("enhancement", "a2eeef", "New feature or request"),
        ("good first issue", "7057ff", "Good for newcomers"),
        ("help wanted", "008672", "Extra attention is needed"),
        ("invalid", "e4e669", "This doesn't seem right"),
        ("question", "d876e3", "Further information is requested"),
        ("wontfix", "ffffff", "This will not be worked on"),
    ]
    .into_iter()
    .map(|(name, color, description)| Label {
        name: name.into(),
        color: color.into(),
        description: Some(description.into()),
        default: true,
    })
    .collect()
}

/// The label object.
pub fn label_json(base: &ApiBase, repo: &str, label: &Label) -> Value {
    let id = 600_000
        + label
            .name
            .bytes()
            .fold(0u64, |h, b| (h * 31 + u64::from(b)) % 100_000);
    json!({
        "id": id,
        "node_id": shapes::node_id("Label", id),
        "url": format!(
            "{}/repos/{ORGANISATION}/{repo}/labels/{}",
            base.url,
            shared::url::encode_query_value(&label.name)
        ),
        "name": label.name,
        "description": label.description,
        "color": label.color,
        "default": label.default,
    })
}

fn comment_json(
    forge: &Forge,
    base: &ApiBase,
    repo: &str,
    number: u64,
    comment: &Comment,
) -> Value {
    let html = &forge.inner.config.html_base;
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    json!({
        "id": comment.id,
        "node_id": shapes::node_id("IssueComment", comment.id),
        "url": format!("{api}/issues/comments/{}", comment.id),
        "html_url": format!("{html}/{ORGANISATION}/{repo}/pull/{number}#issuecomment-{}", comment.id),
        "issue_url": format!("{api}/issues/{number}"),
        "body": comment.body,
        "user": shapes::user(base, html, &comment.user),
        "created_at": comment.created_at,
        "updated_at": comment.updated_at,
        "author_association": if people::identity(&comment.user).bot { "NONE" } else { "MEMBER" },
        "performed_via_github_app": null,
        "reactions": {
            "url": format!("{api}/issues/comments/{}/reactions", comment.id),
            "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0,
            "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
        },
    })
}

/// Query of `GET /issues/{number}/comments`.
#[derive(Debug, Deserialize)]
pub struct CommentsQuery {
    since: Option<String>,
    per_page: Option<usize>,
    page: Option<usize>,
}

/// `GET /repos/{owner}/{repo}/issues/{number}/comments?since=`: oldest first, paginated.
pub async fn list_comments(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(query): Query<CommentsQuery>,
) -> Result<Response> {
    forge.repo(&owner, &repo)?;
    find(&forge, &repo, number)
        .map_err(|_| GitHubError::not_found().docs("/issues/comments#list-issue-comments"))?;
    let since = match query.since.as_deref() {
        Some(text) => Some(text.parse::<jiff::Timestamp>().map_err(|_| {
            GitHubError::invalid("IssueComment", "since", "invalid")
                .docs("/issues/comments#list-issue-comments")
        })?),
        None => None,
    };
    let comments: Vec<Comment> = forge
        .state()
        .comments
        .get(&(repo.clone(), number))
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            since.is_none_or(|since| {
                c.updated_at
                    .parse::<jiff::Timestamp>()
                    .is_ok_and(|at| at >= since)
            })
        })
        .collect();
    let paging = Paging {
        per_page: query.per_page,
        page: query.page,
    };
    let items = comments
        .iter()
        .skip(paging.skip())
        .take(paging.per_page())
        .map(|c| comment_json(&forge, &base, &repo, number, c))
        .collect();
    Ok(paged(items, paging.link(&base, comments.len())))
}

/// Body of `POST /issues/{number}/comments`.
#[derive(Debug, Deserialize)]
pub struct CreateComment {
    body: String,
}

impl Resource for CreateComment {
    const NAME: &'static str = "IssueComment";
}

/// `POST /repos/{owner}/{repo}/issues/{number}/comments` {body}: 201 with the comment.
pub async fn create_comment(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Body(body): Body<CreateComment>,
) -> Result<(StatusCode, Json<Value>)> {
    forge.repo(&owner, &repo)?;
    let docs = "/issues/comments#create-an-issue-comment";
    find(&forge, &repo, number).map_err(|_| GitHubError::not_found().docs(docs))?;
    if body.body.trim().is_empty() {
        return Err(GitHubError::invalid("IssueComment", "body", "missing_field").docs(docs));
    }
    let at = now();
    let comment = Comment {
        id: forge.next_id(),
        user: caller.login(),
        body: body.body,
        created_at: at.clone(),
        updated_at: at,
    };
    forge
        .state()
        .comments
        .entry((repo.clone(), number))
        .or_default()
        .push(comment.clone());
    Ok((
        StatusCode::CREATED,
        Json(comment_json(&forge, &base, &repo, number, &comment)),
    ))
}

/// `GET /repos/{owner}/{repo}/labels`, paginated.
pub async fn list_labels(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Query(paging): Query<Paging>,
) -> Result<Response> {
    forge.repo(&owner, &repo)?;
    let labels = forge.state().labels_of(&repo).clone();
    let items = labels
        .iter()
        .skip(paging.skip())
        .take(paging.per_page())
        .map(|l| label_json(&base, &repo, l))
        .collect();
    Ok(paged(items, paging.link(&base, labels.len())))
}

/// `GET /repos/{owner}/{repo}/labels/{name}`.
pub async fn get_label(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, name)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let label = forge
        .state()
        .labels_of(&repo)
        .iter()
        .find(|l| l.name.eq_ignore_ascii_case(&name))
        .cloned()
        .ok_or_else(|| GitHubError::not_found().docs("/issues/labels#get-a-label"))?;
    Ok(Json(label_json(&base, &repo, &label)))
}

/// Body of `POST /labels`.
#[derive(Debug, Deserialize)]
pub struct CreateLabel {
    name: String,
    color: Option<String>,
    description: Option<String>,
}

impl Resource for CreateLabel {
    const NAME: &'static str = "Label";
}

/// `POST /repos/{owner}/{repo}/labels` {name, color, description}: 201, or 422 `already_exists`.
pub async fn create_label(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(body): Body<CreateLabel>,
) -> Result<(StatusCode, Json<Value>)> {
    forge.repo(&owner, &repo)?;
    let docs = "/issues/labels#create-a-label";
    let name = body.name.trim().to_string();
    if name.is_empty() {
        return Err(GitHubError::invalid("Label", "name", "missing_field").docs(docs));
    }
    let color = body
        .color
        .unwrap_or_else(|| NEW_LABEL_COLOR.into())
        .trim_start_matches('#')
        .to_ascii_lowercase();
    if color.len() != 6 || !color.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(GitHubError::invalid("Label", "color", "invalid").docs(docs));
    }
    let label = Label {
        name,
        color,
        description: body.description,
        default: false,
    };
    {
        let mut state = forge.state();
        let labels = state.labels_of(&repo);
        if labels
            .iter()
            .any(|l| l.name.eq_ignore_ascii_case(&label.name))
        {
            return Err(GitHubError::invalid("Label", "name", "already_exists").docs(docs));
        }
        labels.push(label.clone());
    }
    Ok((StatusCode::CREATED, Json(label_json(&base, &repo, &label))))
}

/// Body of `POST` / `PUT /issues/{number}/labels`: `{"labels": [...]}` or a bare array.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Labels {
    /// `{"labels": ["promote"]}`.
    Wrapped {
        /// Label names.
        labels: Vec<String>,
    },
    /// `["promote"]`.
    Bare(Vec<String>),
}

impl Resource for Labels {
    const NAME: &'static str = "Label";
}

impl Labels {
    fn names(self) -> Vec<String> {
        match self {
            Labels::Wrapped { labels } | Labels::Bare(labels) => labels,
        }
    }
}

/// The labels of pull request `number` as objects.
fn issue_labels_json(forge: &Forge, base: &ApiBase, repo: &str, number: u64) -> Result<Value> {
    let pull = find(forge, repo, number)?;
    let defined = forge.state().labels_of(repo).clone();
    Ok(Value::Array(
        pull.labels
            .iter()
            .filter_map(|name| defined.iter().find(|l| l.name == *name))
            .map(|l| label_json(base, repo, l))
            .collect(),
    ))
}

/// Sets pull request `number`'s labels to `wanted` (creating labels the repository lacks, as GitHub does)
/// and sends a `labeled` or `unlabeled` webhook for each one that came or went.
fn set_labels(
    forge: &Forge,
    repo: &str,
    number: u64,
    wanted: Vec<String>,
    sender: &str,
) -> Result<()> {
    let mut pull = find(forge, repo, number)?;
    let (added, removed) = {
        let mut state = forge.state();
        let defined = state.labels_of(repo);
        let mut names = Vec::new();
        let mut added = Vec::new();
        for name in wanted {
            let label = match defined.iter().find(|l| l.name.eq_ignore_ascii_case(&name)) {
                Some(label) => label.clone(),
                None => {
                    let label = Label {
                        name: name.clone(),
                        color: NEW_LABEL_COLOR.into(),
                        description: None,
                        default: false,
                    };
                    defined.push(label.clone());
                    label
                }
            };
            if names.contains(&label.name) {
                continue;
            }
            if !pull.labels.contains(&label.name) {
                added.push(label.clone());
            }
            names.push(label.name);
        }
        let removed: Vec<Label> = pull
            .labels
            .iter()
            .filter(|name| !names.contains(name))
            .filter_map(|name| defined.iter().find(|l| l.name == **name).cloned())
            .collect();
        pull.labels = names;
        (added, removed)
    };
    if added.is_empty() && removed.is_empty() {
        return Ok(());
    }
    pull.updated_at = now();
    store(forge, repo, &pull);
    for (action, label) in removed
        .into_iter()
        .map(|l| ("unlabeled", l))
        .chain(added.into_iter().map(|l| ("labeled", l)))
    {
        let mut hook = Hook::pull_request(repo, action, &pull, sender);
        if let Hook::PullRequest { label: slot, .. } = &mut hook {
            *slot = Some(label);
        }
        forge.hook(hook);
    }
    Ok(())
}

fn no_blank_names(names: &[String], docs: &str) -> Result<()> {
    if names.iter().any(|l| l.trim().is_empty()) {
        return Err(GitHubError::invalid("Label", "name", "missing_field").docs(docs));
    }
    Ok(())
}

/// `GET /repos/{owner}/{repo}/issues/{number}/labels`.
pub async fn list_issue_labels(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    Ok(Json(issue_labels_json(&forge, &base, &repo, number)?))
}

/// `POST /repos/{owner}/{repo}/issues/{number}/labels`: adds labels, returns all of them.
pub async fn add_issue_labels(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Body(body): Body<Labels>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let added = body.names();
    no_blank_names(&added, &format!("{DOCS_LABELS}#add-labels-to-an-issue"))?;
    let mut wanted = find(&forge, &repo, number)?.labels;
    wanted.extend(added);
    set_labels(&forge, &repo, number, wanted, &caller.login())?;
    Ok(Json(issue_labels_json(&forge, &base, &repo, number)?))
}

/// `PUT /repos/{owner}/{repo}/issues/{number}/labels`: replaces the labels, returns them.
pub async fn set_issue_labels(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Body(body): Body<Labels>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let wanted = body.names();
    no_blank_names(&wanted, &format!("{DOCS_LABELS}#set-labels-for-an-issue"))?;
    set_labels(&forge, &repo, number, wanted, &caller.login())?;
    Ok(Json(issue_labels_json(&forge, &base, &repo, number)?))
}

/// `DELETE /repos/{owner}/{repo}/issues/{number}/labels`: 204.
pub async fn clear_issue_labels(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
) -> Result<StatusCode> {
    forge.repo(&owner, &repo)?;
    set_labels(&forge, &repo, number, Vec::new(), &caller.login())?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}`: the labels left, or 404 `Label does not
/// exist` when the issue does not carry it.
pub async fn remove_issue_label(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number, name)): Path<(String, String, u64, String)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let labels = find(&forge, &repo, number)?.labels;
    if !labels.iter().any(|l| l.eq_ignore_ascii_case(&name)) {
        return Err(
            GitHubError::new(StatusCode::NOT_FOUND, "Label does not exist")
                .docs(&format!("{DOCS_LABELS}#remove-a-label-from-an-issue")),
        );
    }
    let wanted = labels
        .into_iter()
        .filter(|l| !l.eq_ignore_ascii_case(&name))
        .collect();
    set_labels(&forge, &repo, number, wanted, &caller.login())?;
    Ok(Json(issue_labels_json(&forge, &base, &repo, number)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_repository_has_githubs_nine_default_labels() {
        let labels = default_labels();
        assert_eq!(labels.len(), 9);
        assert!(labels.iter().all(|l| l.default && l.color.len() == 6));
    }
}
