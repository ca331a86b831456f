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

use futures::StreamExt as _;
use shared::delivery::{
    BASE_BRANCH, BRANCH_PREFIX, ChangePreview, CheckView, CiState, Intent, PullRequestView,
    PullState, RenderedFile, TOWER_LABEL, diff_files, is_tower_branch, is_writable_path,
    merge_blockers, parse_branch, roll_up_checks,
};

use super::{Delivery, Error, Result, forge};
use crate::upstream::github::Pull;

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
const RECENTLY_MERGED: usize = 20;

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
    match github
        .branch_sha(&repo, &branch)
        .await
        .map_err(forge("reading the branch"))?
    {
        Some(existing) => {
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
        }
        None => {
            let sha = github
                .create_commit(&repo, &message, &tree, &main)
                .await
                .map_err(forge("committing the files"))?;
            github
                .create_branch(&repo, &branch, &sha)
                .await
                .map_err(forge("creating the branch"))?;
        }
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
    let open = github
        .list_pulls(&repo, "open", Some(&branch), 10, 1)
        .await
        .map_err(incomplete("looking for its pull request"))?;
    let existing = open.into_iter().find(|p| p.head.reference == branch);
    let reused = existing.is_some();
    let pull = match existing {
        Some(pull)
            if pull.title == change.title
                && pull.body.as_deref().unwrap_or_default() == change.body =>
        {
            pull
        }
        Some(pull) => github
            .update_pull(&repo, pull.number, &change.title, &change.body)
            .await
            .map_err(incomplete("updating its pull request"))?,
        None => github
            .create_pull(&repo, &branch, BASE_BRANCH, &change.title, &change.body)
            .await
            .map_err(incomplete("opening its pull request"))?,
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
    delivery.forget_pulls().await;
    tracing::info!(target: "audit", user = requested_by, branch = %branch, number = pull.number, reused, "pull request proposed");
    let mut view = view(&pull, Vec::new(), reused);
    view.labels = have;
    Ok(view)
}

/// The view of `pull` with its `checks`.
pub fn view(pull: &Pull, checks: Vec<CheckView>, reused: bool) -> PullRequestView {
    let parsed = parse_branch(&pull.head.reference);
    let state = match (pull.state.as_str(), &pull.merged_at) {
        (_, Some(_)) => PullState::Merged,
        ("open", None) => PullState::Open,
        _ => PullState::Closed,
    };
    let checks_for_blockers = checks.clone();
    PullRequestView {
        number: pull.number,
        url: pull.html_url.clone(),
        branch: pull.head.reference.clone(),
        title: pull.title.clone(),
        state,
        ci: if state == PullState::Open {
            roll_up_checks(&checks)
        } else {
            CiState::None
        },
        checks,
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
        blockers: merge_blockers(state, pull.mergeable, &checks_for_blockers, &[]),
        reviews: Vec::new(),
    }
}

fn is_towers(pull: &Pull) -> bool {
    pull.head.reference.starts_with(BRANCH_PREFIX)
        || pull.labels.iter().any(|l| l.name == TOWER_LABEL)
}

/// Tower's open pull requests with their checks and mergeability, then the most recently merged ones.
pub async fn list_tower_pulls(delivery: &Delivery) -> Result<Vec<PullRequestView>> {
    let github = delivery.github();
    let repo = delivery.repository();
    let listed = github
        .list_pulls(&repo, "all", None, 100, 1)
        .await
        .map_err(forge("listing pull requests"))?;
    let (open, closed): (Vec<Pull>, Vec<Pull>) = listed
        .into_iter()
        .filter(is_towers)
        .partition(|p| p.state == "open");
    // Each open pull request costs two reads (mergeability, checks); a few at a time.
    let mut views: Vec<PullRequestView> = futures::stream::iter(open)
        .map(|listed| {
            let repo = repo.clone();
            async move {
                let (detail, runs) = tokio::join!(
                    github.pull(&repo, listed.number),
                    github.check_runs(&repo, &listed.head.sha)
                );
                let pull = detail.unwrap_or(listed);
                let checks = runs
                    .map_err(|error| {
                        tracing::warn!(%error, number = pull.number, "could not read check runs");
                    })
                    .unwrap_or_default()
                    .into_iter()
                    .map(|run| CheckView {
                        name: run.name,
                        status: run.status,
                        conclusion: run.conclusion,
                        url: run.html_url,
                    })
                    .collect();
                view(&pull, checks, false)
            }
        })
        .buffered(4)
        .collect()
        .await;
    let mut merged: Vec<PullRequestView> = closed
        .iter()
        .filter(|p| p.merged_at.is_some())
        .map(|p| view(p, Vec::new(), false))
        .collect();
    merged.sort_by(|a, b| b.merged_at.cmp(&a.merged_at));
    merged.truncate(RECENTLY_MERGED);
    views.extend(merged);
    Ok(views)
}
