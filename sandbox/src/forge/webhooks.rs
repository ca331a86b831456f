//! Webhooks as GitHub delivers them to an App: `push`, `pull_request`, `pull_request_review` and
//! `check_run`, in GitHub's documented payload shapes, signed with the target's secret
//! (`X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`), one at a time and in the order things
//! happened, from one queue drained by a background task.
//!
//! What happened is queued as a [`Hook`] (a snapshot of the pull request, review or check run); its payload
//! is written when it leaves, off the request that caused it, since a payload may need git (a push's
//! commits and files, a pull request's size and mergeability). A delivery the receiver does not take
//! (no answer, or not a 2xx) is logged and tried again twice, a little later each time, keeping its
//! `X-GitHub-Delivery` id as GitHub's redeliveries do.

use std::sync::{Arc, Weak};
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;
use tokio::sync::mpsc;

use super::checks::check_run_json;
use super::gitdata::ZERO;
use super::pulls::{details, pull_json};
use super::repos::{EMPTY_TREE, commit_info, description};
use super::reviews::review_json;
use super::{
    ApiBase, CheckRun, Forge, GitHubError, Inner, Label, Pull, Result, Review, WebhookTarget,
    shapes,
};
use crate::git::{CommitInfo, Git, people};
use crate::world::ORGANISATION;

/// How many times a delivery is tried.
const ATTEMPTS: u32 = 3;
/// The wait before the second try; each later one waits twice as long.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// How long a receiver has to answer (GitHub gives it 10 s).
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most commits a `push` payload lists, as GitHub caps it.
const PUSH_COMMITS: usize = 2048;
/// The id of the App's webhook (`X-GitHub-Hook-ID`).
const HOOK_ID: u64 = 5_550_001;

/// Every kind of delivery the forge makes, `event` or `event/action`; a hook of any other kind is not
/// delivered. Each has GitHub's payload schema vendored in `sandbox/contracts/github-webhooks/` and is
/// triggered and checked against it by `tests/it/contract_webhooks.rs`, so a new kind is added here, to
/// `update.mjs`'s list and to that test together: until then it is refused here, loudly, rather than sent
/// in a shape nothing checked.
pub const DELIVERED: [&str; 11] = [
    "push",
    "pull_request/opened",
    "pull_request/edited",
    "pull_request/closed",
    "pull_request/reopened",
    "pull_request/labeled",
    "pull_request/unlabeled",
    "pull_request/synchronize",
    "pull_request_review/submitted",
    "check_run/created",
    "check_run/completed",
];

/// Something that happened, to be delivered as a webhook.
#[derive(Debug, Clone)]
pub enum Hook {
    /// A ref moved, was created or deleted (40 zeros on the missing side).
    Push {
        /// The repository's name.
        repo: String,
        /// The full ref, `refs/heads/main`.
        reference: String,
        /// The commit it pointed at.
        before: String,
        /// The commit it points at now.
        after: String,
        /// Who pushed.
        pusher: String,
    },
    /// A pull request was opened, edited, closed, reopened, labeled, unlabeled or synchronized.
    PullRequest {
        /// The repository's name.
        repo: String,
        /// GitHub's `action`.
        action: &'static str,
        /// The pull request as it was then.
        pull: Pull,
        /// Who did it.
        sender: String,
        /// The label added or removed, for `labeled` and `unlabeled`.
        label: Option<Label>,
        /// More top-level fields (`before` and `after` of `synchronize`).
        extra: Value,
    },
    /// A review was submitted.
    Review {
        /// The repository's name.
        repo: String,
        /// The pull request reviewed, as it was then.
        pull: Pull,
        /// The review.
        review: Review,
    },
    /// A check run was created or completed.
    CheckRun {
        /// The repository's name.
        repo: String,
        /// `created` or `completed`.
        action: &'static str,
        /// The run as it was then.
        run: CheckRun,
        /// The open pull requests whose head it ran on.
        pulls: Vec<Pull>,
        /// Who created or completed it.
        sender: String,
    },
}

impl Hook {
    /// A `pull_request` hook with nothing beyond the pull request.
    pub fn pull_request(repo: &str, action: &'static str, pull: &Pull, sender: &str) -> Self {
        Hook::PullRequest {
            repo: repo.into(),
            action,
            pull: pull.clone(),
            sender: sender.into(),
            label: None,
            extra: Value::Null,
        }
    }
}

/// One delivery waiting in the queue.
#[derive(Debug)]
struct Delivery {
    /// `X-GitHub-Delivery`, kept across retries.
    id: String,
    target: WebhookTarget,
    hook: Hook,
}

/// The sending side of the delivery task's queue.
#[derive(Debug)]
pub struct Queue(mpsc::UnboundedSender<Delivery>);

/// Starts the delivery task unless it runs.
pub fn ensure_running(forge: &Forge) {
    let mut slot = forge
        .inner
        .deliveries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if slot.as_ref().is_none_or(|queue| queue.0.is_closed()) {
        *slot = Some(start(forge));
    }
}

/// Queues `hook` for the current target, if there is one.
pub fn enqueue(forge: &Forge, hook: Hook) {
    let Some(target) = forge.webhook_target() else {
        return;
    };
    let delivery = Delivery {
        id: uuid::Uuid::new_v4().to_string(),
        target,
        hook,
    };
    let mut slot = forge
        .inner
        .deliveries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let delivery = match slot.as_ref() {
        Some(queue) => match queue.0.send(delivery) {
            Ok(()) => return,
            // The task is gone (the runtime it ran on ended): a new one takes over.
            Err(mpsc::error::SendError(delivery)) => delivery,
        },
        None => delivery,
    };
    let queue = start(forge);
    if queue.0.send(delivery).is_err() {
        tracing::warn!("the webhook delivery task did not start; a delivery is lost");
    }
    *slot = Some(queue);
}

/// Spawns the delivery task on the current Tokio runtime, or on a thread of its own outside one (the
/// simulator commits from its own thread). It holds the forge weakly, so it ends when the forge goes.
fn start(forge: &Forge) -> Queue {
    let (sender, receiver) = mpsc::unbounded_channel();
    let work = deliver_all(Arc::downgrade(&forge.inner), receiver);
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(work);
        }
        Err(_) => {
            let started = std::thread::Builder::new()
                .name("forge-webhooks".into())
                .spawn(move || {
                    match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(runtime) => runtime.block_on(work),
                        Err(error) => {
                            tracing::warn!(%error, "no runtime for webhook deliveries")
                        }
                    }
                });
            if let Err(error) = started {
                tracing::warn!(%error, "could not start the webhook delivery thread");
            }
        }
    }
    Queue(sender)
}

async fn deliver_all(forge: Weak<Inner>, mut queue: mpsc::UnboundedReceiver<Delivery>) {
    let client = match reqwest::Client::builder().timeout(TIMEOUT).build() {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(%error, "no HTTP client for webhook deliveries");
            return;
        }
    };
    while let Some(Delivery { id, target, hook }) = queue.recv().await {
        let Some(inner) = forge.upgrade() else {
            break;
        };
        let forge = Forge { inner };
        let app_id = forge.inner.config.app_id;
        let rendered = tokio::task::spawn_blocking(move || render(&forge, hook)).await;
        let (event, body) = match rendered {
            Ok(Ok(Some(rendered))) => rendered,
            Ok(Ok(None)) => continue,
            Ok(Err(error)) => {
                tracing::warn!(%error, delivery = %id, "could not write a webhook payload; skipped");
                continue;
            }
            Err(error) => {
                tracing::warn!(%error, delivery = %id, "writing a webhook payload failed; skipped");
                continue;
            }
        };
        send(&client, &id, app_id, &target, event, body).await;
    }
}

/// Posts one delivery, retrying a refused or failed one.
async fn send(
    client: &reqwest::Client,
    id: &str,
    app_id: u64,
    target: &WebhookTarget,
    event: &'static str,
    body: Vec<u8>,
) {
    let signature = signature(&target.secret, &body);
    let mut wait = FIRST_RETRY;
    for attempt in 1..=ATTEMPTS {
        let sent = client
            .post(&target.url)
            .header("X-GitHub-Event", event)
            .header("X-GitHub-Delivery", id)
            .header("X-GitHub-Hook-ID", HOOK_ID.to_string())
            .header("X-GitHub-Hook-Installation-Target-ID", app_id.to_string())
            .header("X-GitHub-Hook-Installation-Target-Type", "integration")
            .header("X-Hub-Signature-256", &signature)
            .header(reqwest::header::USER_AGENT, "GitHub-Hookshot/sandbox")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone())
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => return,
            Ok(response) => tracing::warn!(
                url = %target.url, event, delivery = %id, attempt, status = %response.status(),
                "webhook delivery refused"
            ),
            Err(error) => tracing::warn!(
                url = %target.url, event, delivery = %id, attempt, %error,
                "webhook delivery failed"
            ),
        }
        if attempt < ATTEMPTS {
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }
    tracing::warn!(url = %target.url, event, delivery = %id, "webhook delivery given up");
}

/// `X-Hub-Signature-256` of `body` with `secret`: `sha256=` and the HMAC-SHA256 in lower-case hex.
pub fn signature(secret: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let digest = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mut mac) => {
            mac.update(body);
            mac.finalize().into_bytes()
        }
        Err(_) => return "sha256=".into(),
    };
    format!("sha256={}", hex::encode(digest))
}

/// The event name and JSON body of `hook`, or `None` for a kind the forge does not deliver
/// ([`DELIVERED`]). Runs git.
fn render(forge: &Forge, hook: Hook) -> Result<Option<(&'static str, Vec<u8>)>> {
    let base = forge.api_base();
    let (event, mut payload) = match hook {
        Hook::Push {
            repo,
            reference,
            before,
            after,
            pusher,
        } => (
            "push",
            push(forge, &base, &repo, &reference, &before, &after, &pusher)?,
        ),
        Hook::PullRequest {
            repo,
            action,
            pull,
            sender,
            label,
            extra,
        } => {
            let git = forge.repo(ORGANISATION, &repo)?;
            let details = details(&git, &pull)?;
            let mut payload = envelope(forge, &base, &repo, &sender);
            payload.insert("action".into(), action.into());
            payload.insert("number".into(), pull.number.into());
            payload.insert(
                "pull_request".into(),
                pull_json(forge, &base, &repo, &pull, Some(&details)),
            );
            if let Some(label) = label {
                payload.insert(
                    "label".into(),
                    super::issues::label_json(&base, &repo, &label),
                );
            }
            if let Value::Object(extra) = extra {
                payload.extend(extra);
            }
            ("pull_request", payload)
        }
        Hook::Review { repo, pull, review } => {
            let mut payload = envelope(forge, &base, &repo, &review.user);
            payload.insert("action".into(), "submitted".into());
            payload.insert(
                "review".into(),
                review_json(forge, &base, &repo, &review, true),
            );
            payload.insert(
                "pull_request".into(),
                pull_json(forge, &base, &repo, &pull, None),
            );
            ("pull_request_review", payload)
        }
        Hook::CheckRun {
            repo,
            action,
            run,
            pulls,
            sender,
        } => {
            let mut payload = envelope(forge, &base, &repo, &sender);
            payload.insert("action".into(), action.into());
            let mut check_run = check_run_json(forge, &base, &run, &pulls);
            if let Value::Object(fields) = &mut check_run {
                let suite = check_suite(&base, &repo, &run, &pulls, fields);
                fields.insert("check_suite".into(), suite);
            }
            payload.insert("check_run".into(), check_run);
            ("check_run", payload)
        }
    };
    webhook_form(&mut payload);
    let kind = match payload.get("action").and_then(Value::as_str) {
        Some(action) => format!("{event}/{action}"),
        None => event.to_string(),
    };
    if !DELIVERED.contains(&kind.as_str()) {
        tracing::warn!(
            %kind,
            "not delivering a webhook of a kind the forge has no payload contract for; \
             list it in webhooks::DELIVERED and cover it in tests/it/contract_webhooks.rs"
        );
        return Ok(None);
    }
    let body =
        serde_json::to_vec(&Value::Object(payload)).map_err(|e| GitHubError::internal(&e))?;
    Ok(Some((event, body)))
}

/// Turns the objects a payload shares with the REST API into the forms webhooks carry them in, as GitHub's
/// webhook payload schemas describe them: repositories (the payload's own, a pull request's base and head)
/// and a check run's App. The REST shapes stay as they are; only what a delivery embeds changes.
fn webhook_form(payload: &mut Map<String, Value>) {
    if let Some(Value::Object(repository)) = payload.get_mut("repository") {
        webhook_repository(repository);
    }
    if let Some(Value::Object(pull)) = payload.get_mut("pull_request") {
        for side in ["base", "head"] {
            if let Some(Value::Object(repository)) =
                pull.get_mut(side).and_then(|side| side.get_mut("repo"))
            {
                webhook_repository(repository);
            }
        }
    }
    if let Some(Value::Object(run)) = payload.get_mut("check_run") {
        if let Some(Value::Object(app)) = run.get_mut("app") {
            webhook_app(app);
        }
        if let Some(Value::Object(app)) = run
            .get_mut("check_suite")
            .and_then(|suite| suite.get_mut("app"))
        {
            webhook_app(app);
        }
    }
}

/// A repository as a webhook carries it: without the counts only `GET /repos/{owner}/{repo}` answers
/// (`network_count`, `subscribers_count`), with the settings every delivery states (web commit sign-off
/// not required, no custom properties) when the REST shape has not already said them.
fn webhook_repository(repository: &mut Map<String, Value>) {
    repository.remove("network_count");
    repository.remove("subscribers_count");
    repository
        .entry("web_commit_signoff_required")
        .or_insert(Value::Bool(false));
    repository
        .entry("custom_properties")
        .or_insert_with(|| json!({}));
}

/// The App as a webhook names it: `installations_count` is only for an App asking about itself, and the
/// payload schema's App has no `client_id`.
fn webhook_app(app: &mut Map<String, Value>) {
    app.remove("installations_count");
    app.remove("client_id");
}

/// The check suite of a `check_run` payload's run. A webhook carries it whole, where the REST answer has
/// only its id: GitHub's schema requires its state, head, URL, pull requests and App. The forge makes one
/// suite per run, so the suite's state and times are the run's.
fn check_suite(
    base: &ApiBase,
    repo: &str,
    run: &CheckRun,
    pulls: &[Pull],
    check_run: &Map<String, Value>,
) -> Value {
    let id = check_run
        .get("check_suite")
        .and_then(|suite| suite.get("id"))
        .and_then(Value::as_u64)
        .unwrap_or(run.id);
    let created_at = run
        .started_at
        .clone()
        .or_else(|| run.completed_at.clone())
        .unwrap_or_else(super::now);
    let updated_at = run
        .completed_at
        .clone()
        .unwrap_or_else(|| created_at.clone());
    json!({
        "id": id,
        "node_id": shapes::node_id("CheckSuite", id),
        // The branch is known when the run is on a pull request's head; GitHub sends null otherwise too
        // (a suite for a commit no branch points at).
        "head_branch": pulls.first().map(|pull| pull.head_ref.clone()),
        "head_sha": run.head_sha,
        "status": run.status,
        "conclusion": run.conclusion,
        "url": format!("{}/repos/{ORGANISATION}/{repo}/check-suites/{id}", base.url),
        // The push that made the suite is not kept; GitHub's schema allows null.
        "before": null,
        "after": run.head_sha,
        "pull_requests": check_run.get("pull_requests").cloned().unwrap_or_else(|| json!([])),
        "app": check_run.get("app").cloned().unwrap_or(Value::Null),
        "created_at": created_at,
        "updated_at": updated_at,
    })
}

/// What every payload carries: the repository, the organisation, the App's installation and who did it.
fn envelope(forge: &Forge, base: &ApiBase, repo: &str, sender: &str) -> Map<String, Value> {
    let html = &forge.inner.config.html_base;
    let installation = forge.inner.config.installation_id;
    let mut payload = Map::new();
    payload.insert(
        "repository".into(),
        shapes::repository(base, html, repo, &description(repo)),
    );
    payload.insert("organization".into(), shapes::organization(base));
    payload.insert(
        "installation".into(),
        json!({
            "id": installation,
            "node_id": shapes::node_id("Installation", installation),
        }),
    );
    payload.insert("sender".into(), shapes::user(base, html, sender));
    payload
}

/// The `push` payload: the ref, both sides, and the commits it brought with the files each added,
/// modified and removed.
fn push(
    forge: &Forge,
    base: &ApiBase,
    repo: &str,
    reference: &str,
    before: &str,
    after: &str,
    pusher: &str,
) -> Result<Map<String, Value>> {
    let git = forge.repo(ORGANISATION, repo)?;
    let html = &forge.inner.config.html_base;
    let created = before == ZERO;
    let deleted = after == ZERO;
    let shas: Vec<String> = if deleted {
        Vec::new()
    } else if created {
        // A new ref brings the commits no other branch has.
        let others: Vec<String> = git
            .run(&["for-each-ref", "--format=%(refname)", "refs/heads/"])?
            .lines()
            .filter(|name| *name != reference)
            .map(String::from)
            .collect();
        let limit = format!("--max-count={PUSH_COMMITS}");
        let mut args = vec!["rev-list", "--reverse", &limit, after, "--not"];
        args.extend(others.iter().map(String::as_str));
        args.push("--");
        git.run(&args)?.lines().map(String::from).collect()
    } else {
        let mut commits = git.log(&format!("{before}..{after}"), None, 0, PUSH_COMMITS)?;
        commits.reverse();
        commits.into_iter().map(|c| c.sha).collect()
    };
    let forced = !created
        && !deleted
        && git
            .try_run(&["merge-base", "--is-ancestor", before, after])?
            .is_none();
    let commits = shas
        .iter()
        .map(|sha| push_commit(&git, html, repo, &commit_info(&git, sha)?))
        .collect::<Result<Vec<_>>>()?;
    let head_commit = if deleted {
        Value::Null
    } else {
        push_commit(&git, html, repo, &commit_info(&git, after)?)?
    };
    let who = people::identity(pusher);
    let short = |sha: &str| sha.get(..12).unwrap_or(sha).to_string();
    let mut payload = envelope(forge, base, repo, pusher);
    let fields = json!({
        "ref": reference,
        "before": before,
        "after": after,
        "created": created,
        "deleted": deleted,
        "forced": forced,
        "base_ref": null,
        "compare": format!("{html}/{ORGANISATION}/{repo}/compare/{}...{}", short(before), short(after)),
        "commits": commits,
        "head_commit": head_commit,
        "pusher": {"name": pusher, "email": who.email},
    });
    if let Value::Object(fields) = fields {
        payload.extend(fields);
    }
    Ok(payload)
}

/// One commit of a `push` payload.
fn push_commit(git: &Git, html: &str, repo: &str, commit: &CommitInfo) -> Result<Value> {
    let parent = commit
        .parents
        .first()
        .map(String::as_str)
        .unwrap_or(EMPTY_TREE);
    let changes = git.run(&["diff", "--name-status", "--no-renames", parent, &commit.sha])?;
    let (mut added, mut modified, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for line in changes.lines() {
        match line.split_once('\t') {
            Some(("A", path)) => added.push(path.to_string()),
            Some(("D", path)) => removed.push(path.to_string()),
            Some((_, path)) => modified.push(path.to_string()),
            None => {}
        }
    }
    let person =
        |p: &crate::git::Person| json!({"name": p.name, "email": p.email, "username": p.login});
    Ok(json!({
        "id": commit.sha,
        "tree_id": commit.tree,
        "distinct": true,
        "message": commit.message,
        "timestamp": commit.author.date,
        "url": format!("{html}/{ORGANISATION}/{repo}/commit/{}", commit.sha),
        "author": person(&commit.author),
        "committer": person(&commit.committer),
        "added": added,
        "removed": removed,
        "modified": modified,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// GitHub's webhook payload schemas as vendored for the contract test.
    const SCHEMA: &str = include_str!("../../contracts/github-webhooks/schema.json");

    #[test]
    fn every_kind_the_forge_delivers_has_a_vendored_payload_schema_and_no_other_is_vendored() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let vendored: std::collections::BTreeSet<String> = schema["definitions"]
            .as_object()
            .unwrap()
            .keys()
            .filter_map(|name| name.split_once('$'))
            .map(|(event, action)| match action {
                "event" => event.to_string(),
                action => format!("{event}/{action}"),
            })
            .collect();
        let delivered: std::collections::BTreeSet<String> =
            DELIVERED.iter().map(|kind| kind.to_string()).collect();
        assert_eq!(delivered, vendored);
    }

    #[test]
    fn the_signature_is_githubs_documented_example() {
        // docs.github.com, "Validating webhook deliveries": secret "It's a Secret to Everybody",
        // payload "Hello, World!".
        assert_eq!(
            signature("It's a Secret to Everybody", b"Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}
