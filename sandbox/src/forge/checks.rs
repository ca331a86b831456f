//! Commit statuses and check runs, and the forge's own CI: a `tower-ci / validate` check run on every new
//! pull request head that goes queued → in_progress → completed as [`tick`] advances time.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Authed;
use super::body::{Body, Resource};
use super::{
    ApiBase, CI_CHECK_NAME, CheckRun, Forge, GitHubError, Result, Status, blocking, now, shapes,
};
use crate::world::ORGANISATION;

/// Seconds after queueing that the forge's CI starts, and completes.
const CI_START: i64 = 2;
const CI_DONE: i64 = 5;

fn stamp(time: jiff::Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Queues the forge's CI check run on `sha`; it will conclude `success` when `passes`.
pub fn queue_ci(forge: &Forge, repo: &str, sha: &str, passes: bool) {
    let id = forge.next_id();
    forge.state().add_check_run(CheckRun {
        id,
        repo: repo.into(),
        name: CI_CHECK_NAME.into(),
        head_sha: sha.into(),
        status: "queued".into(),
        conclusion: None,
        started_at: None,
        completed_at: None,
        details_url: None,
        external_id: Some(format!("pipelinerun-{id}")),
        title: None,
        summary: None,
        ci: Some((jiff::Timestamp::now(), passes)),
    });
}

/// Moves the forge's CI check runs along to `now`.
pub fn tick(forge: &Forge, now: jiff::Timestamp) {
    let mut state = forge.state();
    for run in state.check_runs.iter_mut() {
        let Some((queued, passes)) = run.ci else {
            continue;
        };
        let elapsed = now.as_second() - queued.as_second();
        if elapsed >= CI_START && run.status == "queued" {
            run.status = "in_progress".into();
            run.started_at = Some(stamp(now));
            run.title = Some("Validating the change".into());
        }
        if elapsed >= CI_DONE && run.status == "in_progress" {
            run.status = "completed".into();
            run.completed_at = Some(stamp(now));
            if passes {
                run.conclusion = Some("success".into());
                run.title = Some("Manifests are valid".into());
                run.summary =
                    Some("Every changed file under platform/ parses and validates.".into());
            } else {
                run.conclusion = Some("failure".into());
                run.title = Some("Changes outside platform/".into());
                run.summary = Some("Pull requests may only change files under platform/; components/, infra/, values/ and packages/ have their own writers.".into());
            }
        }
    }
}

fn check_run_json(forge: &Forge, base: &ApiBase, run: &CheckRun) -> Value {
    let html = &forge.inner.config.html_base;
    let api = format!("{}/repos/{ORGANISATION}/{}", base.url, run.repo);
    json!({
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": shapes::node_id("CheckRun", run.id),
        "external_id": run.external_id,
        "url": format!("{api}/check-runs/{}", run.id),
        "html_url": format!("{html}/{ORGANISATION}/{}/runs/{}", run.repo, run.id),
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": null,
            "annotations_count": 0,
            "annotations_url": format!("{api}/check-runs/{}/annotations", run.id),
        },
        "name": run.name,
        "check_suite": {"id": run.id + 500_000},
        "app": {
            "id": forge.inner.config.app_id,
            "slug": forge.inner.config.app_slug,
            "name": "Tower",
        },
        "pull_requests": [],
    })
}

fn status_json(base: &ApiBase, html: &str, status: &Status) -> Value {
    json!({
        "url": format!("{}/repos/{ORGANISATION}/statuses/{}", base.url, status.id),
        "avatar_url": null,
        "id": status.id,
        "node_id": shapes::node_id("StatusContext", status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "created_at": status.created_at,
        "updated_at": status.created_at,
        "creator": shapes::user(base, html, &status.creator),
    })
}

/// Body of `POST /statuses/{sha}`.
#[derive(Debug, Deserialize)]
pub struct CreateStatus {
    state: String,
    target_url: Option<String>,
    description: Option<String>,
    context: Option<String>,
}

impl Resource for CreateStatus {
    const NAME: &'static str = "Status";
}

/// `POST /repos/{owner}/{repo}/statuses/{sha}` {state, target_url, description, context}.
pub async fn create_status(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    Body(body): Body<CreateStatus>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    let docs = "/commits/statuses#create-a-commit-status";
    if !["error", "failure", "pending", "success"].contains(&body.state.as_str()) {
        return Err(GitHubError::invalid("Status", "state", "custom").docs(docs));
    }
    let resolved = blocking(move || Ok(git.resolve(&sha)?)).await?;
    let Some(sha) = resolved else {
        return Err(GitHubError::unprocessable("No commit found for SHA").docs(docs));
    };
    let status = Status {
        id: forge.next_id(),
        state: body.state,
        target_url: body.target_url,
        description: body.description,
        context: body.context.unwrap_or_else(|| "default".into()),
        created_at: now(),
        creator: caller.login(),
    };
    forge.state().add_status(repo, sha, status.clone());
    Ok((
        StatusCode::CREATED,
        Json(status_json(&base, &forge.inner.config.html_base, &status)),
    ))
}

async fn statuses_for(
    forge: &Forge,
    owner: &str,
    repo: &str,
    reference: &str,
) -> Result<(String, Vec<Status>)> {
    let git = forge.repo(owner, repo)?;
    let reference = reference.to_string();
    let sha = blocking(move || Ok(git.resolve(&reference)?))
        .await?
        .ok_or_else(|| GitHubError::not_found().docs("/commits/statuses"))?;
    let mut statuses = forge
        .state()
        .statuses
        .get(&(repo.to_string(), sha.clone()))
        .cloned()
        .unwrap_or_default();
    statuses.reverse();
    Ok((sha, statuses))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/statuses` (and `GET /statuses/{ref}`), newest first.
pub async fn list_statuses(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let (_, statuses) = statuses_for(&forge, &owner, &repo, &reference).await?;
    let html = &forge.inner.config.html_base;
    Ok(Json(Value::Array(
        statuses
            .iter()
            .map(|s| status_json(&base, html, s))
            .collect(),
    )))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/status`: the latest status per context, combined.
pub async fn combined_status(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let (sha, statuses) = statuses_for(&forge, &owner, &repo, &reference).await?;
    let mut latest: Vec<Status> = Vec::new();
    for status in statuses {
        if !latest.iter().any(|s| s.context == status.context) {
            latest.push(status);
        }
    }
    let state = if latest
        .iter()
        .any(|s| s.state == "error" || s.state == "failure")
    {
        "failure"
    } else if latest.is_empty() || latest.iter().any(|s| s.state == "pending") {
        "pending"
    } else {
        "success"
    };
    let html = &forge.inner.config.html_base;
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    Ok(Json(json!({
        "state": state,
        "statuses": latest.iter().map(|s| status_json(&base, html, s)).collect::<Vec<_>>(),
        "sha": sha,
        "total_count": latest.len(),
        "repository": shapes::repository(&base, html, &repo, ""),
        "commit_url": format!("{api}/commits/{sha}"),
        "url": format!("{api}/commits/{sha}/status"),
    })))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/check-runs`.
pub async fn list_check_runs(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let sha = blocking(move || Ok(git.resolve(&reference)?))
        .await?
        .ok_or_else(|| {
            GitHubError::not_found().docs("/checks/runs#list-check-runs-for-a-git-reference")
        })?;
    let runs: Vec<Value> = forge
        .state()
        .check_runs
        .iter()
        .rev()
        .filter(|r| r.repo == repo && r.head_sha == sha)
        .cloned()
        .collect::<Vec<_>>()
        .iter()
        .map(|r| check_run_json(&forge, &base, r))
        .collect();
    Ok(Json(json!({"total_count": runs.len(), "check_runs": runs})))
}

/// Output of a check run.
#[derive(Debug, Deserialize)]
pub struct Output {
    title: Option<String>,
    summary: Option<String>,
}

/// Body of `POST /check-runs` and `PATCH /check-runs/{id}`.
#[derive(Debug, Deserialize)]
pub struct CheckRunBody {
    name: Option<String>,
    head_sha: Option<String>,
    status: Option<String>,
    conclusion: Option<String>,
    details_url: Option<String>,
    external_id: Option<String>,
    started_at: Option<String>,
    completed_at: Option<String>,
    output: Option<Output>,
}

impl Resource for CheckRunBody {
    const NAME: &'static str = "CheckRun";
}

fn apply(run: &mut CheckRun, body: CheckRunBody) -> Result<()> {
    let docs = "/checks/runs#create-a-check-run";
    if let Some(status) = body.status {
        if ![
            "queued",
            "in_progress",
            "completed",
            "waiting",
            "requested",
            "pending",
        ]
        .contains(&status.as_str())
        {
            return Err(GitHubError::invalid("CheckRun", "status", "invalid").docs(docs));
        }
        run.status = status;
    }
    if let Some(conclusion) = body.conclusion {
        if ![
            "action_required",
            "cancelled",
            "failure",
            "neutral",
            "success",
            "skipped",
            "stale",
            "timed_out",
        ]
        .contains(&conclusion.as_str())
        {
            return Err(GitHubError::invalid("CheckRun", "conclusion", "invalid").docs(docs));
        }
        run.conclusion = Some(conclusion);
        run.status = "completed".into();
        run.completed_at = run.completed_at.take().or_else(|| Some(now()));
    }
    if run.status == "completed" && run.conclusion.is_none() {
        return Err(GitHubError::invalid("CheckRun", "conclusion", "missing_field").docs(docs));
    }
    run.details_url = body.details_url.or(run.details_url.take());
    run.external_id = body.external_id.or(run.external_id.take());
    run.started_at = body.started_at.or(run.started_at.take());
    run.completed_at = body.completed_at.or(run.completed_at.take());
    if let Some(output) = body.output {
        run.title = output.title.or(run.title.take());
        run.summary = output.summary.or(run.summary.take());
    }
    Ok(())
}

/// `POST /repos/{owner}/{repo}/check-runs` {name, head_sha, status, conclusion, output}.
pub async fn create_check_run(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
    Body(mut body): Body<CheckRunBody>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(&owner, &repo)?;
    let docs = "/checks/runs#create-a-check-run";
    let name = body
        .name
        .take()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| GitHubError::invalid("CheckRun", "name", "missing_field").docs(docs))?;
    let head = body
        .head_sha
        .take()
        .ok_or_else(|| GitHubError::invalid("CheckRun", "head_sha", "missing_field").docs(docs))?;
    let sha = blocking(move || Ok(git.resolve(&head)?))
        .await?
        .ok_or_else(|| GitHubError::invalid("CheckRun", "head_sha", "invalid").docs(docs))?;
    let mut run = CheckRun {
        id: forge.next_id(),
        repo,
        name,
        head_sha: sha,
        status: "queued".into(),
        conclusion: None,
        started_at: Some(now()),
        completed_at: None,
        details_url: None,
        external_id: None,
        title: None,
        summary: None,
        ci: None,
    };
    apply(&mut run, body)?;
    forge.state().add_check_run(run.clone());
    Ok((
        StatusCode::CREATED,
        Json(check_run_json(&forge, &base, &run)),
    ))
}

/// `GET /repos/{owner}/{repo}/check-runs/{id}`.
pub async fn get_check_run(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, id)): Path<(String, String, u64)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let run = forge
        .state()
        .check_runs
        .iter()
        .find(|r| r.id == id && r.repo == repo)
        .cloned()
        .ok_or_else(|| GitHubError::not_found().docs("/checks/runs#get-a-check-run"))?;
    Ok(Json(check_run_json(&forge, &base, &run)))
}

/// `PATCH /repos/{owner}/{repo}/check-runs/{id}`.
pub async fn update_check_run(
    _: Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, id)): Path<(String, String, u64)>,
    Body(body): Body<CheckRunBody>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let mut state = forge.state();
    let run = state
        .check_runs
        .iter_mut()
        .find(|r| r.id == id && r.repo == repo)
        .ok_or_else(|| GitHubError::not_found().docs("/checks/runs#update-a-check-run"))?;
    if let Some(name) = &body.name {
        run.name = name.clone();
    }
    apply(run, body)?;
    let run = run.clone();
    drop(state);
    Ok(Json(check_run_json(&forge, &base, &run)))
}
