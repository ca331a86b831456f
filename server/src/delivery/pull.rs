//! One change, one commit, one pull request: the write path, and Tower's pull requests as the PRs tab lists
//! them.
//!
//! The request sequence for a new pull request (9 calls, plus one token mint per hour):
//! 1. `GET  /repos/{o}/{r}/git/ref/heads/main`           main's commit
//! 2. `GET  /repos/{o}/{r}/git/commits/{main}`           main's tree
//! 3. `POST /repos/{o}/{r}/git/trees`                    main's tree with the files (same files, same tree)
//! 4. `GET  /repos/{o}/{r}/git/ref/heads/{branch}`       404: no branch yet
//! 5. `POST /repos/{o}/{r}/git/commits`                  one commit on main
//! 6. `POST /repos/{o}/{r}/git/refs`                     the branch
//! 7. `GET  /repos/{o}/{r}/pulls?state=open&head=o:branch` none open
//! 8. `POST /repos/{o}/{r}/pulls`                        the pull request
//! 9. `POST /repos/{o}/{r}/issues/{n}/labels`            `tower`, `tower:<kind>`
//!
//! When the branch exists with exactly this commit (a retry, or asking twice), steps 5–6 are replaced by a
//! read of that commit and nothing is pushed; when an open pull request exists, step 8 becomes an update
//! (only if its text changed) and step 9 is skipped when the labels are there.
//! Two replicas (or requests) racing on one intent: the forge refuses the second branch and the second pull
//! request with 422, and the loser reads again and reuses the winner's (`server/tests/it/replicas.rs`).

use futures::StreamExt as _;
use shared::delivery::{
    BASE_BRANCH, BRANCH_PREFIX, ChangePreview, CheckView, CiState, Intent, PullRequestView,
    PullState, RenderedFile, ReviewState, ReviewView, TOWER_LABEL, diff_files, is_tower_branch,
    is_writable_path, latest_reviews, merge_blockers, parse_branch, roll_up_checks,
};

use super::{Delivery, Error, Result, forge};
use crate::upstream::github::{CheckRun, GithubApp, Pull, Review};

/// A change ready to be proposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What it is for; decides the branch.
    pub intent: Intent,
    /// The pull request's title, and the commit's first line.
    pub title: String,
    /// The pull request's body.
    pub body: String,
    /// The files, all under `platform/`.
    pub files: Vec<RenderedFile>,
}

impl Change {
    /// What the browser shows before submitting.
    pub fn preview(&self) -> ChangePreview {
        ChangePreview {
            files: self.files.clone(),
            diff: diff_files(&self.files),
            branch: self.intent.branch(),
            title: self.title.clone(),
            body: self.body.clone(),
        }
    }
}

/// How many merged pull requests the PRs tab shows.
pub const RECENTLY_MERGED: usize = 20;

/// Pushes `change` as one commit on main to its intent's branch and opens (or updates) its pull request.
pub async fn submit(
    delivery: &Delivery,
    change: &Change,
    requested_by: &str,
) -> Result<PullRequestView> {
    // Rendering only produces platform/ paths; this is the last line of defence if that ever changes.
    if let Some(file) = change.files.iter().find(|f| !is_writable_path(&f.path)) {
        return Err(Error::Internal(anyhow::anyhow!(
            "refusing to write {} outside platform/",
            file.path
        )));
    }
    // Branches come from the intent's labels, which the forms validated; checked again where they meet git.
    if !is_tower_branch(&change.intent.branch()) {
        return Err(Error::Internal(anyhow::anyhow!(
            "refusing to push branch {:?}",
            change.intent.branch()
        )));
    }
    if change.files.is_empty() {
        return Err(Error::Conflict("the change has no files".into()));
    }
    let github = delivery.github();
    let repo = delivery.repository();
    let branch = change.intent.branch();

    let main = github
        .branch_sha(&repo, BASE_BRANCH)
        .await
        .map_err(forge("reading main"))?
        .ok_or_else(|| Error::Internal(anyhow::anyhow!("{repo} has no {BASE_BRANCH}")))?;
    let main_commit = github
        .git_commit(&repo, &main)
        .await
        .map_err(forge("reading main"))?;
    let files: Vec<(String, String)> = change
        .files
        .iter()
        .map(|f| (f.path.clone(), f.content.clone()))
        .collect();
    let tree = github
        .create_tree(&repo, &main_commit.tree.sha, &files)
        .await
        .map_err(forge("writing the files"))?;
    if tree == main_commit.tree.sha {
        return Err(Error::Conflict(format!(
            "{BASE_BRANCH} already has exactly these files"
        )));
    }
    let message = format!("{}\n\nRequested in Tower by @{requested_by}.", change.title);
    // Another replica (or request) submitting the same intent may create the branch between our read and our
    // push; the forge refuses the second creation (422), and the loser reads the branch again as existing.
    let mut raced = false;
    loop {
        let Some(existing) = github
            .branch_sha(&repo, &branch)
            .await
            .map_err(forge("reading the branch"))?
        else {
            let sha = github
                .create_commit(&repo, &message, &tree, &main)
                .await
                .map_err(forge("committing the files"))?;
            match github.create_branch(&repo, &branch, &sha).await {
                Err(error) if error.status() == Some(422) && !raced => {
                    raced = true;
                    continue;
                }
                created => created.map_err(forge("creating the branch"))?,
            }
            break;
        };
        let commit = github
            .git_commit(&repo, &existing)
            .await
            .map_err(forge("reading the branch"))?;
        let same = commit.tree.sha == tree
            && commit.parents.len() == 1
            && commit.parents.first().is_some_and(|p| p.sha == main);
        if !same {
            // Main moved or the change did: one fresh commit on main replaces the branch's.
            let sha = github
                .create_commit(&repo, &message, &tree, &main)
                .await
                .map_err(forge("committing the files"))?;
            github
                .move_branch(&repo, &branch, &sha)
                .await
                .map_err(forge("updating the branch"))?;
        }
        break;
    }
    // From here on the branch exists: a failure says so, and a retry picks up from it.
    let incomplete = |step: &'static str| {
        let branch = branch.clone();
        move |source| Error::Incomplete {
            step,
            branch: branch.clone(),
            source: Box::new(source),
        }
    };
    // As with the branch: when another replica opened the pull request since we looked (422 "A pull request
    // already exists"), look again and reuse it.
    let mut raced = false;
    let (pull, reused) = loop {
        let open = github
            .list_pulls(&repo, "open", Some(&branch), 10, 1)
            .await
            .map_err(incomplete("looking for its pull request"))?;
        break match open.into_iter().find(|p| p.head.reference == branch) {
            Some(pull)
                if pull.title == change.title
                    && pull.body.as_deref().unwrap_or_default() == change.body =>
            {
                (pull, true)
            }
            Some(pull) => (
                github
                    .update_pull(&repo, pull.number, &change.title, &change.body)
                    .await
                    .map_err(incomplete("updating its pull request"))?,
                true,
            ),
            None => match github
                .create_pull(&repo, &branch, BASE_BRANCH, &change.title, &change.body)
                .await
            {
                Err(error) if error.status() == Some(422) && !raced => {
                    raced = true;
                    continue;
                }
                created => (
                    created.map_err(incomplete("opening its pull request"))?,
                    false,
                ),
            },
        };
    };
    let labels = change.intent.labels();
    let mut have: Vec<String> = pull.labels.iter().map(|l| l.name.clone()).collect();
    if labels.iter().any(|l| !have.contains(l)) {
        github
            .add_labels(&repo, pull.number, &labels)
            .await
            .map_err(incomplete("labelling its pull request"))?;
        for label in labels {
            if !have.contains(&label) {
                have.push(label);
            }
        }
    }
    tracing::info!(target: "audit", user = requested_by, branch = %branch, number = pull.number, reused, "pull request proposed");
    crate::telemetry::pull_request_proposed(reused);
    let mut view = view(&pull, Vec::new(), Vec::new(), reused);
    view.labels = have;
    // The list shows it at once; its checks and reviews follow from the forge's events (or a re-read).
    delivery.tracker().proposed(view.clone());
    Ok(view)
}

/// The state of `pull` as the PRs page names it.
pub fn state_of(pull: &Pull) -> PullState {
    match (pull.state.as_str(), &pull.merged_at) {
        (_, Some(_)) => PullState::Merged,
        ("open", None) => PullState::Open,
        _ => PullState::Closed,
    }
}

/// The view of `pull` with its `checks` and `reviews` (each reviewer's latest).
pub fn view(
    pull: &Pull,
    checks: Vec<CheckView>,
    reviews: Vec<ReviewView>,
    reused: bool,
) -> PullRequestView {
    let parsed = parse_branch(&pull.head.reference);
    let state = state_of(pull);
    PullRequestView {
        number: pull.number,
        url: pull.html_url.clone(),
        branch: pull.head.reference.clone(),
        title: pull.title.clone(),
        state,
        // A merged pull request keeps the checks it merged with; a closed one was never read for them.
        ci: if state == PullState::Closed {
            CiState::None
        } else {
            roll_up_checks(&checks)
        },
        blockers: merge_blockers(state, pull.mergeable, &checks, &reviews),
        checks,
        reviews,
        mergeable: pull.mergeable,
        reused,
        intent: parsed.as_ref().map(|(kind, _, _)| *kind),
        service: parsed.as_ref().map(|(_, service, _)| service.clone()),
        environment: parsed.and_then(|(_, _, environment)| environment),
        author: pull
            .user
            .as_ref()
            .map(|u| u.login.clone())
            .unwrap_or_default(),
        created_at: pull.created_at.clone(),
        merged_at: pull.merged_at.clone(),
        labels: pull.labels.iter().map(|l| l.name.clone()).collect(),
    }
}

/// Whether Tower opened `pull`: its branch or its label says so.
pub fn is_towers(pull: &Pull) -> bool {
    is_tower_pull(
        &pull.head.reference,
        pull.labels.iter().map(|l| l.name.as_str()),
    )
}

/// Whether a pull request from `branch` carrying `labels` is one of Tower's.
pub fn is_tower_pull<'a>(branch: &str, mut labels: impl Iterator<Item = &'a str>) -> bool {
    branch.starts_with(BRANCH_PREFIX) || labels.any(|l| l == TOWER_LABEL)
}

/// Check runs as the PRs page shows them: the newest run of each name (a re-run replaces the run before).
pub fn checks_view(runs: Vec<CheckRun>) -> Vec<CheckView> {
    let mut newest: Vec<CheckRun> = Vec::new();
    for run in runs {
        match newest.iter_mut().find(|r| r.name == run.name) {
            Some(kept) if kept.id < run.id => *kept = run,
            Some(_) => {}
            None => newest.push(run),
        }
    }
    newest
        .into_iter()
        .map(|run| CheckView {
            name: run.name,
            status: run.status,
            conclusion: run.conclusion,
            url: run.html_url,
        })
        .collect()
}

/// Each reviewer's latest review that counts, from everything GitHub lists (pending drafts left out).
pub fn reviews_view(reviews: Vec<Review>) -> Vec<ReviewView> {
    latest_reviews(reviews.into_iter().filter_map(|review| {
        Some(ReviewView {
            reviewer: review.user?.login,
            state: ReviewState::parse(&review.state)?,
            at: review.submitted_at,
        })
    }))
}

/// The checks on a pull request's head and its reviews, as read together.
#[derive(Debug, Clone, Default)]
pub struct Reviewed {
    /// The checks, newest run of each name.
    pub checks: Vec<CheckView>,
    /// Each reviewer's latest review.
    pub reviews: Vec<ReviewView>,
    /// Whether both reads succeeded (a failed one reads as empty, which must not be kept for good).
    pub complete: bool,
}

/// The checks on `head` and the reviews of pull request `number`, read together.
pub async fn checks_and_reviews(
    github: &GithubApp,
    repo: &str,
    number: u64,
    head: &str,
) -> Reviewed {
    let (runs, reviews) = tokio::join!(github.check_runs(repo, head), github.reviews(repo, number));
    let complete = runs.is_ok() && reviews.is_ok();
    let checks = runs
        .map_err(|error| tracing::warn!(%error, number, "could not read check runs"))
        .unwrap_or_default();
    let reviews = reviews
        .map_err(|error| tracing::warn!(%error, number, "could not read reviews"))
        .unwrap_or_default();
    Reviewed {
        checks: checks_view(checks),
        reviews: reviews_view(reviews),
        complete,
    }
}

/// One pull request as it is now, with its mergeability, checks and reviews (and whether those were read
/// whole); `None` when it is not Tower's.
pub async fn read_pull(
    github: &GithubApp,
    repo: &str,
    number: u64,
) -> Result<Option<(Pull, PullRequestView, bool)>> {
    let pull = github
        .pull(repo, number)
        .await
        .map_err(forge("reading a pull request"))?;
    if !is_towers(&pull) {
        return Ok(None);
    }
    let read = checks_and_reviews(github, repo, number, &pull.head.sha).await;
    let view = view(&pull, read.checks, read.reviews, false);
    Ok(Some((pull, view, read.complete)))
}

/// What one listing of the GitOps repository's pull requests found.
pub struct Listing {
    /// Tower's open pull requests, each read with its mergeability, checks and reviews, newest first.
    pub open: Vec<(Pull, PullRequestView)>,
    /// Tower's most recently merged pull requests as listed (checks and reviews not read), newest merge
    /// first, with their head commits.
    pub merged: Vec<(Pull, PullRequestView)>,
    /// Tower's pull requests closed without merging.
    pub closed: Vec<PullRequestView>,
}

/// Tower's open pull requests with their checks, reviews and mergeability, then the most recently merged
/// ones (without theirs: they do not change once merged, so the caller reads them once).
pub async fn list_tower_pulls(github: &GithubApp, repo: &str) -> Result<Listing> {
    let listed = github
        .list_pulls(repo, "all", None, 100, 1)
        .await
        .map_err(forge("listing pull requests"))?;
    let towers: Vec<Pull> = listed.into_iter().filter(is_towers).collect();
    let open: Vec<Pull> = towers
        .iter()
        .filter(|p| state_of(p) == PullState::Open)
        .cloned()
        .collect();
    // Each open pull request costs three reads (mergeability, checks, reviews); a few at a time.
    let open: Vec<(Pull, PullRequestView)> = futures::stream::iter(open)
        .map(|listed| async move {
            let number = listed.number;
            let pull = match github.pull(repo, number).await {
                Ok(pull) => pull,
                Err(error) => {
                    tracing::warn!(%error, number, "could not read a pull request; using the list's");
                    listed
                }
            };
            let read = checks_and_reviews(github, repo, number, &pull.head.sha).await;
            let view = view(&pull, read.checks, read.reviews, false);
            (pull, view)
        })
        .buffered(4)
        .collect()
        .await;
    let mut merged: Vec<(Pull, PullRequestView)> = towers
        .iter()
        .filter(|p| state_of(p) == PullState::Merged)
        .map(|p| (p.clone(), view(p, Vec::new(), Vec::new(), false)))
        .collect();
    merged.sort_by(|a, b| b.1.merged_at.cmp(&a.1.merged_at));
    merged.truncate(RECENTLY_MERGED);
    let closed = towers
        .iter()
        .filter(|p| state_of(p) == PullState::Closed)
        .map(|p| view(p, Vec::new(), Vec::new(), false))
        .collect();
    Ok(Listing {
        open,
        merged,
        closed,
    })
}
