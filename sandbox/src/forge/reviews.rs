//! Pull request reviews: list, read, create (`APPROVE`, `REQUEST_CHANGES`, `COMMENT`, or a pending review
//! submitted later), each submission a `pull_request_review` webhook; the demo reviewer who reviews every
//! pull request of `application-repositories` once its CI completes; and the sandbox's review button.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::{Authed, Reader};
use super::body::{Body, Resource};
use super::pulls::{find, refresh};
use super::webhooks::Hook;
use super::{
    ApiBase, CI_CHECK_NAME, Caller, DEMO_REVIEWER, Forge, GitHubError, Paging, Result, Review,
    Verdict, blocking, now, paged, shapes,
};
use crate::git::people;
use crate::world::{GITOPS_REPOSITORY, ORGANISATION};

const DOCS_CREATE: &str = "/pulls/reviews#create-a-review-for-a-pull-request";
const DOCS_SUBMIT: &str = "/pulls/reviews#submit-a-review-for-a-pull-request";

/// What a review says, as `POST /pulls/{n}/reviews` spells its `event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewEvent {
    /// Approve the pull request.
    Approve,
    /// Ask for changes before it merges.
    RequestChanges,
    /// Comment without approving or blocking.
    Comment,
}

impl ReviewEvent {
    /// The review's `state` once submitted.
    fn state(self) -> &'static str {
        match self {
            ReviewEvent::Approve => "APPROVED",
            ReviewEvent::RequestChanges => "CHANGES_REQUESTED",
            ReviewEvent::Comment => "COMMENTED",
        }
    }

    fn parse(text: &str, docs: &str) -> Result<Self> {
        match text {
            "APPROVE" => Ok(ReviewEvent::Approve),
            "REQUEST_CHANGES" => Ok(ReviewEvent::RequestChanges),
            "COMMENT" => Ok(ReviewEvent::Comment),
            // GitHub answers with its simple validation error, the reason a bare string.
            _ => Err(refused(
                &format!(
                    "Variable $event of type PullRequestReviewEvent was provided invalid value {text:?}"
                ),
                docs,
            )),
        }
    }
}

/// GitHub's 422 for reviews: `Unprocessable Entity` with the reason as a bare string in `errors`.
fn refused(reason: &str, docs: &str) -> GitHubError {
    GitHubError {
        message: "Unprocessable Entity".into(),
        ..GitHubError::validation(vec![Value::String(reason.into())]).docs(docs)
    }
}

/// The review object; `for_webhook` writes its state in lower case, as the `pull_request_review` event
/// does.
pub fn review_json(
    forge: &Forge,
    base: &ApiBase,
    repo: &str,
    review: &Review,
    for_webhook: bool,
) -> Value {
    let html_base = &forge.inner.config.html_base;
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    let html = format!(
        "{html_base}/{ORGANISATION}/{repo}/pull/{}#pullrequestreview-{}",
        review.number, review.id
    );
    let pull_request_url = format!("{api}/pulls/{}", review.number);
    let state = if for_webhook {
        review.state.to_ascii_lowercase()
    } else {
        review.state.clone()
    };
    let mut value = json!({
        "id": review.id,
        "node_id": shapes::node_id("PullRequestReview", review.id),
        "user": shapes::user(base, html_base, &review.user),
        "body": review.body,
        "state": state,
        "html_url": html,
        "pull_request_url": pull_request_url,
        "author_association": if people::identity(&review.user).bot { "NONE" } else { "MEMBER" },
        "_links": {
            "html": {"href": html},
            "pull_request": {"href": pull_request_url},
        },
        "commit_id": review.commit_id,
    });
    if let (Some(at), Some(object)) = (&review.submitted_at, value.as_object_mut()) {
        object.insert("submitted_at".into(), at.clone().into());
    }
    value
}

/// Refuses what GitHub refuses: approving or requesting changes on one's own pull request, and asking for
/// changes or commenting without a word.
fn allowed(
    pull: &super::Pull,
    reviewer: &str,
    event: Option<ReviewEvent>,
    body: &str,
    docs: &str,
) -> Result<()> {
    if pull.user == reviewer {
        match event {
            Some(ReviewEvent::Approve) => {
                return Err(refused("Can not approve your own pull request", docs));
            }
            Some(ReviewEvent::RequestChanges) => {
                return Err(refused(
                    "Can not request changes on your own pull request",
                    docs,
                ));
            }
            _ => {}
        }
    }
    if matches!(
        event,
        Some(ReviewEvent::RequestChanges | ReviewEvent::Comment)
    ) && body.trim().is_empty()
    {
        return Err(refused(
            "Body is required when requesting changes or commenting",
            docs,
        ));
    }
    Ok(())
}

/// Records a review of pull request `number` by `reviewer` at `commit_id` (its head when `None`):
/// submitted when `event` is given, else pending. Sends `pull_request_review` `submitted` for a submitted
/// one.
pub fn submit(
    forge: &Forge,
    repo: &str,
    number: u64,
    reviewer: &str,
    event: Option<ReviewEvent>,
    body: &str,
    commit_id: Option<String>,
) -> Result<Review> {
    let pull = find(forge, repo, number).map_err(|_| GitHubError::not_found().docs(DOCS_CREATE))?;
    allowed(&pull, reviewer, event, body, DOCS_CREATE)?;
    let review = Review {
        id: forge.next_id(),
        number,
        user: reviewer.into(),
        state: event.map_or("PENDING", ReviewEvent::state).into(),
        body: body.into(),
        commit_id: commit_id.unwrap_or_else(|| pull.head_sha.clone()),
        submitted_at: event.map(|_| now()),
    };
    {
        let mut state = forge.state();
        let reviews = state.reviews.entry((repo.to_string(), number)).or_default();
        if event.is_none()
            && reviews
                .iter()
                .any(|r| r.user == reviewer && r.state == "PENDING")
        {
            return Err(refused(
                "User can only have one pending review per pull request",
                DOCS_CREATE,
            ));
        }
        reviews.push(review.clone());
    }
    if event.is_some() {
        forge.hook(Hook::Review {
            repo: repo.into(),
            pull,
            review: review.clone(),
        });
    }
    Ok(review)
}

/// The demo reviewer's review once the forge's CI finished on pull request `number`'s head `sha`: an
/// approval when it passed, changes requested naming what failed otherwise. Nothing when the pull request
/// closed or moved on meanwhile, or is hers.
pub fn review_for_ci(forge: &Forge, repo: &str, number: u64, sha: &str, verdict: &Verdict) {
    let Ok(pull) = find(forge, repo, number) else {
        return;
    };
    if !pull.open || pull.head_sha != sha || pull.user == DEMO_REVIEWER {
        return;
    }
    let (event, body) = if verdict.passes {
        (
            ReviewEvent::Approve,
            format!("{CI_CHECK_NAME} passed ({}). Approved.", verdict.title),
        )
    } else {
        (
            ReviewEvent::RequestChanges,
            format!(
                "{CI_CHECK_NAME} failed: {}.\n\n{}\n\nPlease fix these and push again.",
                verdict.title, verdict.summary
            ),
        )
    };
    if let Err(error) = submit(
        forge,
        repo,
        number,
        DEMO_REVIEWER,
        Some(event),
        &body,
        Some(sha.into()),
    ) {
        tracing::warn!(%repo, number, %error, "the demo reviewer could not review");
    }
}

/// Reviews of pull request `number` that `viewer` may see: every submitted one, and their own pending one.
fn visible(forge: &Forge, repo: &str, number: u64, viewer: Option<&Caller>) -> Vec<Review> {
    let viewer = viewer.map(Caller::login);
    forge
        .state()
        .reviews
        .get(&(repo.to_string(), number))
        .map(|reviews| {
            reviews
                .iter()
                .filter(|r| r.state != "PENDING" || viewer.as_deref() == Some(r.user.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// `GET /repos/{owner}/{repo}/pulls/{number}/reviews`: oldest first, paginated.
pub async fn list(
    Reader(viewer): Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    axum::extract::Query(paging): axum::extract::Query<Paging>,
) -> Result<Response> {
    forge.repo(&owner, &repo)?;
    find(&forge, &repo, number)?;
    let reviews = visible(&forge, &repo, number, viewer.as_ref());
    let items = reviews
        .iter()
        .skip(paging.skip())
        .take(paging.per_page())
        .map(|r| review_json(&forge, &base, &repo, r, false))
        .collect();
    Ok(paged(items, paging.link(&base, reviews.len())))
}

/// `GET /repos/{owner}/{repo}/pulls/{number}/reviews/{id}`.
pub async fn get(
    Reader(viewer): Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number, id)): Path<(String, String, u64, u64)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let review = visible(&forge, &repo, number, viewer.as_ref())
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| {
            GitHubError::not_found().docs("/pulls/reviews#get-a-review-for-a-pull-request")
        })?;
    Ok(Json(review_json(&forge, &base, &repo, &review, false)))
}

/// Body of `POST /pulls/{number}/reviews`.
#[derive(Debug, Deserialize)]
pub struct CreateReview {
    commit_id: Option<String>,
    body: Option<String>,
    event: Option<String>,
}

impl Resource for CreateReview {
    const NAME: &'static str = "PullRequestReview";
}

/// `POST /repos/{owner}/{repo}/pulls/{number}/reviews` {event, body, commit_id}: 200 with the review, as
/// GitHub answers; without `event` the review stays pending.
pub async fn create(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Body(body): Body<CreateReview>,
) -> Result<Json<Value>> {
    let git = forge.repo(&owner, &repo)?;
    let event = body
        .event
        .as_deref()
        .map(|e| ReviewEvent::parse(e, DOCS_CREATE))
        .transpose()?;
    // The head as git has it now, in case a push reached the branch without passing through the forge.
    let mut pull = find(&forge, &repo, number)?;
    let head = blocking(move || {
        refresh(&git, &mut pull)?;
        Ok(pull.head_sha)
    })
    .await?;
    let review = submit(
        &forge,
        &repo,
        number,
        &caller.login(),
        event,
        body.body.as_deref().unwrap_or_default(),
        Some(body.commit_id.unwrap_or(head)),
    )?;
    Ok(Json(review_json(&forge, &base, &repo, &review, false)))
}

/// Body of `POST /pulls/{number}/reviews/{id}/events`.
#[derive(Debug, Deserialize)]
pub struct SubmitReview {
    event: String,
    body: Option<String>,
}

impl Resource for SubmitReview {
    const NAME: &'static str = "PullRequestReview";
}

/// `POST /repos/{owner}/{repo}/pulls/{number}/reviews/{id}/events` {event, body}: submits the caller's
/// pending review.
pub async fn submit_pending(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo, number, id)): Path<(String, String, u64, u64)>,
    Body(body): Body<SubmitReview>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    let event = ReviewEvent::parse(&body.event, DOCS_SUBMIT)?;
    let login = caller.login();
    let pull = find(&forge, &repo, number)?;
    let pending = visible(&forge, &repo, number, Some(&caller))
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| GitHubError::not_found().docs(DOCS_SUBMIT))?;
    if pending.state != "PENDING" || pending.user != login {
        return Err(refused("Can not submit a non-pending review", DOCS_SUBMIT));
    }
    let text = body.body.unwrap_or(pending.body);
    allowed(&pull, &login, Some(event), &text, DOCS_SUBMIT)?;
    let review = Review {
        state: event.state().into(),
        body: text,
        submitted_at: Some(now()),
        ..pending
    };
    if let Some(slot) = forge
        .state()
        .reviews
        .get_mut(&(repo.clone(), number))
        .and_then(|reviews| reviews.iter_mut().find(|r| r.id == id))
    {
        *slot = review.clone();
    }
    forge.hook(Hook::Review {
        repo: repo.clone(),
        pull,
        review: review.clone(),
    });
    Ok(Json(review_json(&forge, &base, &repo, &review, false)))
}

/// Body of the sandbox's review button.
#[derive(Debug, Deserialize)]
pub struct SandboxReview {
    event: ReviewEvent,
    #[serde(default)]
    body: String,
    /// Who reviews; the demo reviewer by default.
    reviewer: Option<String>,
}

impl Resource for SandboxReview {
    const NAME: &'static str = "PullRequestReview";
}

/// `POST /sandbox/pulls/{number}/review` {event, body, reviewer?}: the demo reviewer reviews a pull
/// request of `application-repositories` now.
pub async fn sandbox_review(
    state: State<Forge>,
    Path(number): Path<u64>,
    body: Body<SandboxReview>,
) -> Result<(StatusCode, Json<Value>)> {
    sandbox_review_in(state, Path((GITOPS_REPOSITORY.to_string(), number)), body).await
}

/// `POST /sandbox/repos/{repo}/pulls/{number}/review`: the same for any repository.
pub async fn sandbox_review_in(
    State(forge): State<Forge>,
    Path((repo, number)): Path<(String, u64)>,
    Body(body): Body<SandboxReview>,
) -> Result<(StatusCode, Json<Value>)> {
    let git = forge.repo(ORGANISATION, &repo)?;
    let mut pull = find(&forge, &repo, number)?;
    let head = blocking(move || {
        refresh(&git, &mut pull)?;
        Ok(pull.head_sha)
    })
    .await?;
    let reviewer = body.reviewer.unwrap_or_else(|| DEMO_REVIEWER.into());
    let review = submit(
        &forge,
        &repo,
        number,
        &reviewer,
        Some(body.event),
        &body.body,
        Some(head),
    )?;
    Ok((
        StatusCode::CREATED,
        Json(review_json(
            &forge,
            &forge.api_base(),
            &repo,
            &review,
            false,
        )),
    ))
}
