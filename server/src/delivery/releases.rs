//! Release records: the commits of `application-repositories` that touched a Release file, newest first.
//!
//! The forge is asked once per new commit, not once per page view: the list for a path is cached with the
//! main commit it was read at and extended from the top when main moves (reading pages only until a known
//! commit turns up); each record's version is read once per commit (commits never change); main itself is
//! looked up at most every few seconds. The cursor is the last record's sha, so a page stays the same page
//! when newer records arrive.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use shared::crd::Release;
use shared::delivery::{
    BASE_BRANCH, FileChange, RELEASES_PAGE, ReleaseDetail, ReleasePage, ReleaseRecord, release_path,
};
use tokio::sync::Mutex;

use super::{Error, Result, forge};
use crate::upstream::github::{CommitSummary, GithubApp};

/// How long main's commit is trusted before asking again.
const HEAD_FRESH_FOR: Duration = Duration::from_secs(3);
/// Commits per forge page.
const PER_PAGE: u32 = 100;
/// At most this many forge pages are read for one path.
const MAX_PAGES: u32 = 20;

#[derive(Default)]
struct PathHistory {
    head: String,
    commits: Vec<CommitSummary>,
}

/// Merged pull requests by head commit: (number, page).
type PullsByHead = HashMap<String, (u64, String)>;

#[derive(Default)]
struct Caches {
    head: Option<(Instant, String)>,
    paths: HashMap<String, PathHistory>,
    /// Version named by a Release file at a commit (`None`: unreadable), by (path, commit).
    versions: HashMap<(String, String), Option<String>>,
    /// Merged pull requests by head commit, read at a main commit.
    pulls: Option<(String, PullsByHead)>,
    details: HashMap<String, ReleaseDetail>,
}

/// Forge calls made, for tests and logs: how hard page views hit the forge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForgeCalls {
    /// Commit list pages read.
    pub commit_pages: u64,
    /// Release files read.
    pub files: u64,
    /// Pull request pages read.
    pub pull_pages: u64,
    /// Main's commit looked up.
    pub heads: u64,
}

/// The release-record cache.
pub struct ReleaseHistory {
    github: GithubApp,
    repository: String,
    caches: Mutex<Caches>,
    calls: std::sync::Mutex<ForgeCalls>,
}

impl ReleaseHistory {
    /// Records of `repository` (`owner/name`) read through `github`.
    pub fn new(github: GithubApp, repository: String) -> Self {
        Self {
            github,
            repository,
            caches: Mutex::new(Caches::default()),
            calls: std::sync::Mutex::new(ForgeCalls::default()),
        }
    }

    /// The forge calls made so far.
    pub fn calls(&self) -> ForgeCalls {
        *self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn count(&self, f: impl FnOnce(&mut ForgeCalls)) {
        f(&mut self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    async fn head(&self, caches: &mut Caches) -> Result<String> {
        if let Some((at, head)) = &caches.head
            && at.elapsed() < HEAD_FRESH_FOR
        {
            return Ok(head.clone());
        }
        self.count(|c| c.heads += 1);
        let head = self
            .github
            .branch_sha(&self.repository, BASE_BRANCH)
            .await
            .map_err(forge("reading main"))?
            .ok_or_else(|| Error::NotFound(format!("{BASE_BRANCH} of {}", self.repository)))?;
        caches.head = Some((Instant::now(), head.clone()));
        Ok(head)
    }

    /// Brings the commit list of `path` up to `head`, reading only what is new.
    async fn refresh(&self, caches: &mut Caches, path: &str, head: &str) -> Result<()> {
        let known = caches.paths.get(path);
        if known.is_some_and(|h| h.head == head) {
            return Ok(());
        }
        let newest_known = known.and_then(|h| h.commits.first().map(|c| c.sha.clone()));
        let mut fresh = Vec::new();
        let mut reached_known = false;
        for page in 1..=MAX_PAGES {
            self.count(|c| c.commit_pages += 1);
            let commits = self
                .github
                .commits_touching(&self.repository, path, head, PER_PAGE, page)
                .await
                .map_err(forge("listing release commits"))?;
            let full = commits.len() == PER_PAGE as usize;
            for commit in commits {
                if Some(&commit.sha) == newest_known.as_ref() {
                    reached_known = true;
                    break;
                }
                fresh.push(commit);
            }
            if reached_known || !full {
                break;
            }
        }
        let entry = caches.paths.entry(path.to_string()).or_default();
        if reached_known {
            fresh.append(&mut entry.commits);
        }
        entry.commits = fresh;
        entry.head = head.to_string();
        Ok(())
    }

    /// Merged pull requests by head commit: (number, page).
    async fn pulls(&self, caches: &mut Caches, head: &str) -> Result<PullsByHead> {
        if let Some((at, pulls)) = &caches.pulls
            && at == head
        {
            return Ok(pulls.clone());
        }
        let mut by_head = HashMap::new();
        for page in 1..=MAX_PAGES {
            self.count(|c| c.pull_pages += 1);
            let pulls = self
                .github
                .list_pulls(&self.repository, "closed", None, PER_PAGE, page)
                .await
                .map_err(forge("listing pull requests"))?;
            let full = pulls.len() == PER_PAGE as usize;
            for pull in pulls.into_iter().filter(|p| p.merged_at.is_some()) {
                by_head.insert(pull.head.sha.clone(), (pull.number, pull.html_url.clone()));
            }
            if !full {
                break;
            }
        }
        caches.pulls = Some((head.to_string(), by_head.clone()));
        Ok(by_head)
    }

    /// The version the Release at `path` names at `sha`, read once per commit.
    async fn versions(&self, caches: &mut Caches, path: &str, shas: &[String]) {
        let missing: Vec<String> = shas
            .iter()
            .filter(|sha| {
                !caches
                    .versions
                    .contains_key(&(path.to_string(), (*sha).clone()))
            })
            .cloned()
            .collect();
        // Outer `None`: the read failed and is not cached, so a later view tries again.
        let read: Vec<(String, Option<Option<String>>)> = futures::stream::iter(missing)
            .map(|sha| async move {
                self.count(|c| c.files += 1);
                let result = match self.github.file(&self.repository, path, &sha).await {
                    Ok(Some(text)) => Some(
                        serde_saphyr::from_str::<Release>(&text)
                            .ok()
                            .map(|r| r.spec.version),
                    ),
                    Ok(None) => Some(None),
                    Err(error) => {
                        tracing::warn!(%error, %sha, "could not read a Release file");
                        None
                    }
                };
                (sha, result)
            })
            .buffered(8)
            .collect()
            .await;
        for (sha, result) in read {
            if let Some(version) = result {
                caches.versions.insert((path.to_string(), sha), version);
            }
        }
    }

    /// Page of records for `service` in `environment`, after `cursor` (a record's sha) when given.
    pub async fn page(
        &self,
        service: &str,
        environment: &str,
        cursor: Option<&str>,
    ) -> Result<ReleasePage> {
        let path = release_path(service, environment);
        let mut caches = self.caches.lock().await;
        let head = self.head(&mut caches).await?;
        self.refresh(&mut caches, &path, &head).await?;
        let pulls = self.pulls(&mut caches, &head).await?;
        let commits = caches
            .paths
            .get(&path)
            .map(|h| h.commits.as_slice())
            .unwrap_or_default();
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                commits
                    .iter()
                    .position(|c| c.sha == cursor)
                    .ok_or_else(|| {
                        shared::delivery::FieldError::new(
                            "cursor",
                            "Unknown cursor; start again from the first page.",
                        )
                    })?
                    + 1
            }
        };
        let slice: Vec<CommitSummary> = commits
            .iter()
            .skip(start)
            .take(RELEASES_PAGE)
            .cloned()
            .collect();
        let more = commits.len() > start + slice.len();
        let shas: Vec<String> = slice.iter().map(|c| c.sha.clone()).collect();
        self.versions(&mut caches, &path, &shas).await;
        let records: Vec<ReleaseRecord> = slice
            .iter()
            .map(|commit| {
                let version = caches
                    .versions
                    .get(&(path.clone(), commit.sha.clone()))
                    .cloned()
                    .flatten();
                record(commit, version, pulls.get(&commit.sha).map(|p| p.0))
            })
            .collect();
        let next_cursor = more
            .then(|| records.last().map(|r| r.sha.clone()))
            .flatten();
        Ok(ReleasePage {
            records,
            next_cursor,
        })
    }

    /// One record with its diff.
    pub async fn detail(&self, sha: &str) -> Result<ReleaseDetail> {
        let mut caches = self.caches.lock().await;
        if let Some(detail) = caches.details.get(sha) {
            return Ok(detail.clone());
        }
        let commit = match self.github.commit(&self.repository, sha).await {
            Ok(commit) => commit,
            Err(error) if matches!(error.status(), Some(404 | 422)) => {
                return Err(Error::NotFound(format!("commit {sha}")));
            }
            Err(error) => return Err(forge("reading the commit")(error)),
        };
        let head = self.head(&mut caches).await?;
        let pulls = self.pulls(&mut caches, &head).await?;
        let release = commit.files.iter().find_map(|f| {
            let rest = f.filename.strip_prefix("platform/environments/")?;
            let (environment, file) = rest.split_once('/')?;
            let service = file.strip_suffix("-release.yaml")?;
            Some((
                f.filename.clone(),
                service.to_string(),
                environment.to_string(),
            ))
        });
        let version = match &release {
            Some((path, _, _)) => {
                self.versions(&mut caches, path, std::slice::from_ref(&commit.summary.sha))
                    .await;
                caches
                    .versions
                    .get(&(path.clone(), commit.summary.sha.clone()))
                    .cloned()
                    .flatten()
            }
            None => None,
        };
        let pull = pulls.get(&commit.summary.sha).cloned();
        let files: Vec<FileChange> = commit
            .files
            .iter()
            .map(|f| FileChange {
                path: f.filename.clone(),
                status: f.status.clone(),
                patch: f.patch.clone(),
            })
            .collect();
        let diff = files
            .iter()
            .map(|f| {
                let (old, new) = match f.status.as_str() {
                    "added" => ("/dev/null".to_string(), format!("b/{}", f.path)),
                    "removed" => (format!("a/{}", f.path), "/dev/null".to_string()),
                    _ => (format!("a/{}", f.path), format!("b/{}", f.path)),
                };
                format!(
                    "--- {old}\n+++ {new}\n{}\n",
                    f.patch
                        .as_deref()
                        .unwrap_or("(binary or too large to show)")
                )
            })
            .collect();
        let detail = ReleaseDetail {
            record: record(&commit.summary, version, pull.as_ref().map(|p| p.0)),
            service: release.as_ref().map(|r| r.1.clone()),
            environment: release.map(|r| r.2),
            files,
            diff,
            url: commit.summary.html_url.clone(),
            pr_url: pull.map(|p| p.1),
        };
        caches.details.insert(sha.to_string(), detail.clone());
        Ok(detail)
    }

    /// The versions the Release of `service` in `environment` named, newest first, one per change (for
    /// Rollback when Argo CD's history does not say).
    pub async fn versions_of(&self, service: &str, environment: &str) -> Result<Vec<String>> {
        let mut versions = Vec::new();
        let mut cursor: Option<String> = None;
        // Two pages are plenty to find the version before the current one.
        for _ in 0..2 {
            let page = self.page(service, environment, cursor.as_deref()).await?;
            for record in &page.records {
                if let Some(version) = &record.version
                    && versions.last() != Some(version)
                {
                    versions.push(version.clone());
                }
            }
            match page.next_cursor {
                Some(next) if versions.len() < 2 => cursor = Some(next),
                _ => break,
            }
        }
        Ok(versions)
    }
}

fn record(
    commit: &CommitSummary,
    version: Option<String>,
    pr_number: Option<u64>,
) -> ReleaseRecord {
    let pr_number = pr_number.or_else(|| {
        // A merge commit names its pull request: "Merge pull request #12 from …".
        commit
            .commit
            .message
            .strip_prefix("Merge pull request #")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    });
    let view = commit.view();
    ReleaseRecord {
        sha: commit.sha.clone(),
        version,
        author: view.author,
        at: view.at,
        pr_number,
        message: view.message,
        approvals: Vec::new(),
        service: None,
    }
}
