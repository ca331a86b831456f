//! Commit statuses and check runs, and the forge's own CI: a `tower-ci / validate` check run on every new
//! pull request head, created in progress and completed [`CI_DURATION`] later as [`tick`] advances time.
//! It validates each changed `platform/` file at the head with [`shared::config::validate`], the same check
//! Tower's Config editor runs, so a broken file fails it and its output names the file and the problems.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use shared::config::{DatabaseRef, Diagnostic, PlatformKind, RuleContext};

use super::auth::{Authed, Reader};
use super::body::{Body, Resource};
use super::webhooks::Hook;
use super::{
    ApiBase, CI_CHECK_NAME, CheckRun, Ci, Forge, GitHubError, Pull, Result, Status, Verdict,
    blocking, now, shapes,
};
use crate::git::{Git, people};
use crate::world::{ENVIRONMENTS, GITOPS_REPOSITORY, ORGANISATION};

/// How long the forge's CI runs: long enough for a page to show it in progress.
pub const CI_DURATION: jiff::SignedDuration = jiff::SignedDuration::from_secs(4);
/// How long after the CI completes the demo reviewer reviews.
pub const REVIEW_DELAY: jiff::SignedDuration = jiff::SignedDuration::from_secs(2);
/// Files named in a failed check's summary; the rest are in its text.
const FILES_SUMMARISED: usize = 5;
/// Problems named per file in a failed check's summary.
const PROBLEMS_SUMMARISED: usize = 3;

fn stamp(time: jiff::Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Starts the forge's CI check run on `sha` (the head of pull request `pull`), in progress from now, as
/// GitHub Actions creates its runs; it will conclude as `verdict` says.
pub fn start_ci(forge: &Forge, repo: &str, sha: &str, pull: Option<u64>, verdict: Verdict) {
    let id = forge.next_id();
    let started = jiff::Timestamp::now();
    let run = CheckRun {
        id,
        repo: repo.into(),
        name: CI_CHECK_NAME.into(),
        head_sha: sha.into(),
        status: "in_progress".into(),
        conclusion: None,
        started_at: Some(stamp(started)),
        completed_at: None,
        details_url: None,
        external_id: Some(format!("pipelinerun-{id}")),
        title: Some("Validating the change".into()),
        summary: Some("Checking every changed file under platform/.".into()),
        text: None,
        ci: Some(Ci {
            started,
            verdict,
            pull,
            completed: None,
            reviewed: false,
        }),
    };
    let pulls = {
        let mut state = forge.state();
        state.add_check_run(run.clone());
        state.pulls_with_head(repo, sha)
    };
    forge.hook(Hook::CheckRun {
        repo: repo.into(),
        action: "created",
        run,
        pulls,
        sender: people::CI_BOT.into(),
    });
}

/// Moves the forge's CI along to `now`: runs [`CI_DURATION`] old complete with their verdict, and
/// [`REVIEW_DELAY`] after that the demo reviewer reviews their pull request.
pub fn tick(forge: &Forge, now: jiff::Timestamp) {
    let mut completed_ids = Vec::new();
    let mut to_review: Vec<(String, u64, String, Verdict)> = Vec::new();
    {
        let mut state = forge.state();
        for run in state.check_runs.iter_mut() {
            let CheckRun {
                id,
                repo,
                head_sha,
                status,
                conclusion,
                completed_at,
                title,
                summary,
                text,
                ci: Some(ci),
                ..
            } = run
            else {
                continue;
            };
            let done_at = ci.started + CI_DURATION;
            if *status == "in_progress" && now >= done_at {
                *status = "completed".into();
                *completed_at = Some(stamp(done_at));
                *conclusion = Some(
                    if ci.verdict.passes {
                        "success"
                    } else {
                        "failure"
                    }
                    .into(),
                );
                *title = Some(ci.verdict.title.clone());
                *summary = Some(ci.verdict.summary.clone());
                *text = ci.verdict.text.clone();
                ci.completed = Some(done_at);
                completed_ids.push(*id);
            }
            if let (Some(done), Some(number)) = (ci.completed, ci.pull)
                && !ci.reviewed
                && now >= done + REVIEW_DELAY
            {
                ci.reviewed = true;
                if repo == GITOPS_REPOSITORY {
                    to_review.push((repo.clone(), number, head_sha.clone(), ci.verdict.clone()));
                }
            }
        }
        let completed: Vec<(CheckRun, Vec<Pull>)> = state
            .check_runs
            .iter()
            .filter(|run| completed_ids.contains(&run.id))
            .map(|run| (run.clone(), state.pulls_with_head(&run.repo, &run.head_sha)))
            .collect();
        drop(state);
        for (run, pulls) in completed {
            forge.hook(Hook::CheckRun {
                repo: run.repo.clone(),
                action: "completed",
                run,
                pulls,
                sender: people::CI_BOT.into(),
            });
        }
    }
    for (repo, number, sha, verdict) in to_review {
        super::reviews::review_for_ci(forge, &repo, number, &sha, &verdict);
    }
}

/// What the forge's CI concludes of `head` against `base` in `repo`. Only `application-repositories` is
/// validated: a change outside `platform/` fails (the other folders have their own writers), and every
/// changed `platform/…yaml` file must pass [`shared::config::validate`] as it is at `head`, with the
/// platform's environments and the databases `head` declares as context. Runs git.
pub fn verdict(git: &Git, repo: &str, base: &str, head: &str) -> Result<Verdict> {
    if repo != GITOPS_REPOSITORY {
        return Ok(Verdict {
            passes: true,
            title: "Nothing to validate".into(),
            summary: "Only application-repositories' platform/ files are validated.".into(),
            text: None,
        });
    }
    let fork_point = super::pulls::merge_base(git, base, head)?;
    let changes = git.run(&["diff", "--name-status", "--no-renames", &fork_point, head])?;
    let mut outside = Vec::new();
    let mut files = Vec::new();
    for line in changes.lines() {
        let Some((status, path)) = line.split_once('\t') else {
            continue;
        };
        if !path.starts_with("platform/") {
            outside.push(path.to_string());
        } else if status != "D" && (path.ends_with(".yaml") || path.ends_with(".yml")) {
            files.push(path.to_string());
        }
    }
    if !outside.is_empty() {
        return Ok(Verdict {
            passes: false,
            title: "Changes outside platform/".into(),
            summary: format!(
                "Pull requests may only change files under platform/; components/, infra/, values/ and packages/ have their own writers. This one changes {}.",
                outside.join(", ")
            ),
            text: None,
        });
    }
    let context = RuleContext {
        service: String::new(),
        environments: ENVIRONMENTS.iter().map(|e| e.to_string()).collect(),
        green_builds: None,
        databases: Some(databases_at(git, head)?),
    };
    let mut problems: Vec<(String, Vec<Diagnostic>)> = Vec::new();
    for path in &files {
        let bytes = git.run_with(&["cat-file", "blob", &format!("{head}:{path}")], None, &[])?;
        let text = String::from_utf8_lossy(&bytes);
        let service = shared::config::parse_platform_path(path)
            .map(|target| target.name)
            .unwrap_or_default();
        let context = RuleContext {
            service,
            ..context.clone()
        };
        let diagnostics = shared::config::validate(path, &text, &context);
        if !diagnostics.is_empty() {
            problems.push((path.clone(), diagnostics));
        }
    }
    Ok(describe(&files, &problems))
}

/// The databases `head` declares (`platform/environments/<env>/<name>-database.yaml`).
fn databases_at(git: &Git, head: &str) -> Result<Vec<DatabaseRef>> {
    let listing = git.run(&[
        "ls-tree",
        "-r",
        "--name-only",
        head,
        "--",
        "platform/environments",
    ])?;
    Ok(listing
        .lines()
        .filter_map(shared::config::parse_platform_path)
        .filter(|target| target.kind == PlatformKind::Database)
        .filter_map(|target| {
            Some(DatabaseRef {
                environment: target.environment?,
                name: target.name,
            })
        })
        .collect())
}

/// The check run's output for what validation found.
fn describe(files: &[String], problems: &[(String, Vec<Diagnostic>)]) -> Verdict {
    if problems.is_empty() {
        return Verdict {
            passes: true,
            title: "Manifests are valid".into(),
            summary: match files.len() {
                0 => "No platform/ file to validate changed.".into(),
                1 => format!("{} parses and validates.", files[0]),
                n => format!("All {n} changed files under platform/ parse and validate."),
            },
            text: None,
        };
    }
    let count = |n: usize| {
        if n == 1 {
            "1 problem".to_string()
        } else {
            format!("{n} problems")
        }
    };
    let title = match problems {
        [(path, diagnostics)] => format!("{path}: {}", count(diagnostics.len())),
        _ => format!("{} files have problems", problems.len()),
    };
    let mut summary = String::new();
    for (path, diagnostics) in problems.iter().take(FILES_SUMMARISED) {
        summary.push_str(&format!("{path}\n"));
        for diagnostic in diagnostics.iter().take(PROBLEMS_SUMMARISED) {
            summary.push_str(&format!("- {diagnostic}\n"));
        }
        if diagnostics.len() > PROBLEMS_SUMMARISED {
            summary.push_str(&format!(
                "- and {} more\n",
                diagnostics.len() - PROBLEMS_SUMMARISED
            ));
        }
    }
    if problems.len() > FILES_SUMMARISED {
        summary.push_str(&format!(
            "and {} more files\n",
            problems.len() - FILES_SUMMARISED
        ));
    }
    let text = problems
        .iter()
        .flat_map(|(path, diagnostics)| diagnostics.iter().map(move |d| format!("{path}: {d}")))
        .collect::<Vec<_>>()
        .join("\n");
    Verdict {
        passes: false,
        title,
        summary: summary.trim_end().to_string(),
        text: Some(text),
    }
}

/// The `pull_requests` of a check run: the open pull requests whose head it ran on.
pub fn pull_refs(base: &ApiBase, repo: &str, pulls: &[Pull]) -> Vec<Value> {
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    let repo_ref = json!({
        "id": shapes::repository_id(repo),
        "url": api,
        "name": repo,
    });
    pulls
        .iter()
        .map(|pull| {
            json!({
                "url": format!("{api}/pulls/{}", pull.number),
                "id": shapes::repository_id(repo) * 1000 + pull.number,
                "number": pull.number,
                "head": {"ref": pull.head_ref, "sha": pull.head_sha, "repo": repo_ref},
                "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": repo_ref},
            })
        })
        .collect()
}

/// The check run object; `pulls` are the open pull requests whose head it ran on.
pub fn check_run_json(forge: &Forge, base: &ApiBase, run: &CheckRun, pulls: &[Pull]) -> Value {
    let html = &forge.inner.config.html_base;
    let api = format!("{}/repos/{ORGANISATION}/{}", base.url, run.repo);
    json!({
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": shapes::node_id("CheckRun", run.id),
        // GitHub answers `""` and the App's homepage for a run created without them.
        "external_id": run.external_id.clone().unwrap_or_default(),
        "url": format!("{api}/check-runs/{}", run.id),
        "html_url": format!("{html}/{ORGANISATION}/{}/runs/{}", run.repo, run.id),
        "details_url": run.details_url.clone().unwrap_or_else(|| super::auth::HOMEPAGE.into()),
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": run.text,
            "annotations_count": 0,
            "annotations_url": format!("{api}/check-runs/{}/annotations", run.id),
        },
        "name": run.name,
        "check_suite": {"id": run.id + 500_000},
        "app": super::auth::app(forge, base),
        "pull_requests": pull_refs(base, &run.repo, pulls),
    })
}

/// A status posted on commit `sha` of `repo`.
fn status_json(base: &ApiBase, html: &str, repo: &str, sha: &str, status: &Status) -> Value {
    json!({
        // GitHub's status URL names the repository and the commit, not the status's id.
        "url": format!("{}/repos/{ORGANISATION}/{}/statuses/{}", base.url, repo, sha),
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
    let answer = status_json(&base, &forge.inner.config.html_base, &repo, &sha, &status);
    forge.state().add_status(repo, sha, status);
    Ok((StatusCode::CREATED, Json(answer)))
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
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, reference)): Path<(String, String, String)>,
) -> Result<Json<Value>> {
    let (sha, statuses) = statuses_for(&forge, &owner, &repo, &reference).await?;
    let html = &forge.inner.config.html_base;
    Ok(Json(Value::Array(
        statuses
            .iter()
            .map(|s| status_json(&base, html, &repo, &sha, s))
            .collect(),
    )))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/status`: the latest status per context, combined.
pub async fn combined_status(
    _: Reader,
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
        "statuses": latest.iter().map(|s| status_json(&base, html, &repo, &sha, s)).collect::<Vec<_>>(),
        "sha": sha,
        "total_count": latest.len(),
        "repository": shapes::repository(&base, html, &repo, ""),
        "commit_url": format!("{api}/commits/{sha}"),
        "url": format!("{api}/commits/{sha}/status"),
    })))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/check-runs`.
pub async fn list_check_runs(
    _: Reader,
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
    let (runs, pulls) = {
        let state = forge.state();
        let runs: Vec<CheckRun> = state
            .check_runs
            .iter()
            .rev()
            .filter(|r| r.repo == repo && r.head_sha == sha)
            .cloned()
            .collect();
        (runs, state.pulls_with_head(&repo, &sha))
    };
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| check_run_json(&forge, &base, r, &pulls))
        .collect();
    Ok(Json(json!({"total_count": runs.len(), "check_runs": runs})))
}

/// Output of a check run.
#[derive(Debug, Deserialize)]
pub struct Output {
    title: Option<String>,
    summary: Option<String>,
    text: Option<String>,
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
        run.text = output.text.or(run.text.take());
    }
    Ok(())
}

/// `POST /repos/{owner}/{repo}/check-runs` {name, head_sha, status, conclusion, output}: 201, and a
/// `check_run` `created` webhook.
pub async fn create_check_run(
    Authed(caller): Authed,
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
        text: None,
        ci: None,
    };
    apply(&mut run, body)?;
    let pulls = {
        let mut state = forge.state();
        state.add_check_run(run.clone());
        state.pulls_with_head(&run.repo, &run.head_sha)
    };
    forge.hook(Hook::CheckRun {
        repo: run.repo.clone(),
        action: "created",
        run: run.clone(),
        pulls: pulls.clone(),
        sender: caller.login(),
    });
    Ok((
        StatusCode::CREATED,
        Json(check_run_json(&forge, &base, &run, &pulls)),
    ))
}

/// `GET /repos/{owner}/{repo}/check-runs/{id}`.
pub async fn get_check_run(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, id)): Path<(String, String, u64)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let (run, pulls) = {
        let state = forge.state();
        let run = state
            .check_runs
            .iter()
            .find(|r| r.id == id && r.repo == repo)
            .cloned()
            .ok_or_else(|| GitHubError::not_found().docs("/checks/runs#get-a-check-run"))?;
        let pulls = state.pulls_with_head(&repo, &run.head_sha);
        (run, pulls)
    };
    Ok(Json(check_run_json(&forge, &base, &run, &pulls)))
}

/// `PATCH /repos/{owner}/{repo}/check-runs/{id}`: a `check_run` `completed` webhook when it completes.
pub async fn update_check_run(
    Authed(caller): Authed,
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
    let was_completed = run.status == "completed";
    apply(run, body)?;
    let run = run.clone();
    let pulls = state.pulls_with_head(&repo, &run.head_sha);
    drop(state);
    if run.status == "completed" && !was_completed {
        forge.hook(Hook::CheckRun {
            repo: repo.clone(),
            action: "completed",
            run: run.clone(),
            pulls: pulls.clone(),
            sender: caller.login(),
        });
    }
    Ok(Json(check_run_json(&forge, &base, &run, &pulls)))
}
