//! Release records: the commits of `application-repositories` that touched a Release file, newest first.
//!
//! The forge is asked once per new commit, not once per page view: the list for a path is cached with the
//! main commit it was read at and extended from the top when main moves (reading pages only until a known
//! commit turns up); each record's version is read once per commit (commits never change); main itself is
//! looked up at most every few seconds (with webhooks, until a `push` to main says it moved, and every few
//! minutes as a backup). The cursor is the last record's sha, so a page stays the same page when newer
//! records arrive.
//!
//! Each record names the service whose Release it changed and who approved the pull request that brought
//! it: a merged pull request's reviews are read once and kept. With no service chosen, the records of every
//! service come from the commits touching the environment's folder, each commit's files read once to find
//! the Release it changed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use shared::crd::{DatabaseSchema, Release};
use shared::delivery::{
    BASE_BRANCH, FileChange, RELEASES_PAGE, ReleaseDetail, ReleasePage, ReleaseRecord, ReviewState,
    ReviewView, release_path,
};
use tokio::sync::Mutex;

use super::{Error, Result, forge};
use crate::upstream::github::{CommitSummary, GithubApp};

/// How long main's commit is trusted before asking again, without webhooks.
pub const HEAD_FRESH_FOR: Duration = Duration::from_secs(3);
/// With no service chosen, at most this many commits of the environment's folder are looked through for
/// one page (most commits there change a Release; others are skipped).
const SCANNED_PER_PAGE: usize = 5 * RELEASES_PAGE;
/// Commits per forge page.
const PER_PAGE: u32 = 100;
/// At most this many forge pages are read for one path.
const MAX_PAGES: u32 = 20;

#[derive(Default)]
struct PathHistory {
    head: String,
    commits: Vec<CommitSummary>,
}

/// A Release file's path and a commit.
type VersionKey = (String, String);

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
    /// Approvals of merged pull requests, by number: read once, a merged pull request's reviews stay.
    approvals: HashMap<u64, Vec<ReviewView>>,
    /// The paths each commit changed, by sha (commits never change).
    files: HashMap<String, Vec<String>>,
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
    /// Pull requests' reviews read (for approvals).
    pub reviews: u64,
    /// Commits read for the files they changed (records of every service).
    pub commits: u64,
}

/// The release-record cache.
pub struct ReleaseHistory {
    github: GithubApp,
    repository: String,
    caches: Mutex<Caches>,
    calls: std::sync::Mutex<ForgeCalls>,
    /// How long main's commit is trusted, in milliseconds ([`HEAD_FRESH_FOR`] unless webhooks say when it
    /// moves).
    head_fresh_ms: AtomicU64,
    /// Set by [`ReleaseHistory::main_moved`]: the cached head is stale whatever its age.
    head_moved: AtomicBool,
}

impl ReleaseHistory {
    /// Records of `repository` (`owner/name`) read through `github`.
    pub fn new(github: GithubApp, repository: String) -> Self {
        Self {
            github,
            repository,
            caches: Mutex::new(Caches::default()),
            calls: std::sync::Mutex::new(ForgeCalls::default()),
            head_fresh_ms: AtomicU64::new(HEAD_FRESH_FOR.as_millis() as u64),
            head_moved: AtomicBool::new(false),
        }
    }

    /// Trusts main's commit for `fresh_for`: with webhooks a `push` says when main moves
    /// ([`ReleaseHistory::main_moved`]), and the lookup is only a backup.
    pub fn trust_head_for(&self, fresh_for: Duration) {
        self.head_fresh_ms
            .store(fresh_for.as_millis() as u64, Ordering::Relaxed);
    }

    /// Main moved (a `push` webhook): the next page looks it up again and reads what is new. A flag rather
    /// than the caches' lock, which a page being read may hold for as long as the forge takes.
    pub fn main_moved(&self) {
        self.head_moved.store(true, Ordering::Release);
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
        let fresh_for = Duration::from_millis(self.head_fresh_ms.load(Ordering::Relaxed));
        let moved = self.head_moved.swap(false, Ordering::AcqRel);
        if let Some((at, head)) = &caches.head
            && !moved
            && at.elapsed() < fresh_for
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

    /// The version the file at each (path, commit) names (a Release, or a DatabaseSchema: `version_in`
    /// reads it), read once per commit.
    async fn versions(
        &self,
        caches: &mut Caches,
        wanted: &[(String, String)],
        version_in: fn(&str) -> Option<String>,
    ) {
        let missing: Vec<(String, String)> = wanted
            .iter()
            .filter(|key| !caches.versions.contains_key(*key))
            .cloned()
            .collect();
        // Outer `None`: the read failed and is not cached, so a later view tries again.
        let read: Vec<(VersionKey, Option<Option<String>>)> = futures::stream::iter(missing)
            .map(|(path, sha)| async move {
                self.count(|c| c.files += 1);
                let result = match self.github.file(&self.repository, &path, &sha).await {
                    Ok(Some(text)) => Some(version_in(&text)),
                    Ok(None) => Some(None),
                    Err(error) => {
                        tracing::warn!(%error, %sha, %path, "could not read a platform file");
                        None
                    }
                };
                ((path, sha), result)
            })
            .buffered(8)
            .collect()
            .await;
        for (key, result) in read {
            if let Some(version) = result {
                caches.versions.insert(key, version);
            }
        }
    }

    /// The approvals of each pull request in `numbers`, read once per pull request.
    async fn approvals(&self, caches: &mut Caches, numbers: &[u64]) {
        let mut missing: Vec<u64> = numbers
            .iter()
            .filter(|n| !caches.approvals.contains_key(*n))
            .copied()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let read: Vec<(u64, Option<Vec<ReviewView>>)> = futures::stream::iter(missing)
            .map(|number| async move {
                self.count(|c| c.reviews += 1);
                match self.github.reviews(&self.repository, number).await {
                    Ok(reviews) => {
                        let approvals = super::pull::reviews_view(reviews)
                            .into_iter()
                            .filter(|r| r.state == ReviewState::Approved)
                            .collect();
                        (number, Some(approvals))
                    }
                    Err(error) => {
                        // Not cached: a later view asks again.
                        tracing::warn!(%error, number, "could not read a pull request's reviews");
                        (number, None)
                    }
                }
            })
            .buffered(4)
            .collect()
            .await;
        for (number, approvals) in read {
            if let Some(approvals) = approvals {
                caches.approvals.insert(number, approvals);
            }
        }
    }

    /// The paths each commit in `shas` changed, read once per commit; a commit that could not be read is
    /// left out (and asked again next time).
    async fn files_of(&self, caches: &mut Caches, shas: &[String]) {
        let missing: Vec<String> = shas
            .iter()
            .filter(|sha| !caches.files.contains_key(*sha))
            .cloned()
            .collect();
        let read: Vec<(String, Option<Vec<String>>)> = futures::stream::iter(missing)
            .map(|sha| async move {
                self.count(|c| c.commits += 1);
                match self.github.commit(&self.repository, &sha).await {
                    Ok(commit) => {
                        let files = commit.files.into_iter().map(|f| f.filename).collect();
                        (sha, Some(files))
                    }
                    Err(error) => {
                        tracing::warn!(%error, %sha, "could not read a commit's files");
                        (sha, None)
                    }
                }
            })
            .buffered(8)
            .collect()
            .await;
        for (sha, files) in read {
            if let Some(files) = files {
                caches.files.insert(sha, files);
            }
        }
    }

    /// The commits on main that changed the DatabaseSchema at `path`, newest first, each with the version
    /// the file names after it and the pull request that brought it. The same caches as the release
    /// records: while main stays where it was, a database's page costs no forge call.
    pub async fn schema_history(&self, path: &str) -> Result<Vec<PathCommit>> {
        let mut caches = self.caches.lock().await;
        let head = self.head(&mut caches).await?;
        self.refresh(&mut caches, path, &head).await?;
        let commits: Vec<CommitSummary> = caches
            .paths
            .get(path)
            .map(|h| h.commits.clone())
            .unwrap_or_default();
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        let pulls = self.pulls(&mut caches, &head).await?;
        let keys: Vec<VersionKey> = commits
            .iter()
            .map(|commit| (path.to_string(), commit.sha.clone()))
            .collect();
        self.versions(&mut caches, &keys, schema_version).await;
        Ok(commits
            .into_iter()
            .zip(keys)
            .map(|(commit, key)| PathCommit {
                version: caches.versions.get(&key).cloned().flatten(),
                pr_number: pr_number(&commit, pulls.get(&commit.sha).map(|p| p.0)),
                commit,
            })
            .collect())
    }

    /// The newest commit on main that changed each of `paths` (`None` for a path no commit touched), from the
    /// same caches as the release records: while main stays where it was, it costs no forge call.
    pub async fn newest_commits(
        &self,
        paths: &[String],
    ) -> Result<HashMap<String, Option<CommitSummary>>> {
        let mut caches = self.caches.lock().await;
        let head = self.head(&mut caches).await?;
        let mut newest = HashMap::new();
        for path in paths {
            self.refresh(&mut caches, path, &head).await?;
            let commit = caches
                .paths
                .get(path)
                .and_then(|h| h.commits.first().cloned());
            newest.insert(path.clone(), commit);
        }
        Ok(newest)
    }

    /// Page of records for `service` (every service when `None`) in `environment`, after `cursor` (a
    /// record's sha) when given.
    pub async fn page(
        &self,
        service: Option<&str>,
        environment: &str,
        cursor: Option<&str>,
    ) -> Result<ReleasePage> {
        let path = match service {
            Some(service) => release_path(service, environment),
            None => format!("platform/environments/{environment}"),
        };
        let mut caches = self.caches.lock().await;
        let head = self.head(&mut caches).await?;
        self.refresh(&mut caches, &path, &head).await?;
        let pulls = self.pulls(&mut caches, &head).await?;
        let commits: Vec<CommitSummary> = caches
            .paths
            .get(&path)
            .map(|h| h.commits.clone())
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
        // Each record: its commit, the Release file it changed and that file's service.
        let mut chosen: Vec<(CommitSummary, String, String)> = Vec::new();
        let mut scanned = start;
        match service {
            Some(service) => {
                for commit in commits.iter().skip(start).take(RELEASES_PAGE) {
                    chosen.push((commit.clone(), path.clone(), service.to_string()));
                    scanned += 1;
                }
            }
            None => {
                // Commits of the folder that changed no Release (a Database, a schema) are skipped; their
                // files are read a page's worth at a time, and at most SCANNED_PER_PAGE per request.
                while chosen.len() < RELEASES_PAGE
                    && scanned < commits.len()
                    && scanned - start < SCANNED_PER_PAGE
                {
                    let batch: Vec<CommitSummary> = commits
                        .iter()
                        .skip(scanned)
                        .take(RELEASES_PAGE - chosen.len())
                        .cloned()
                        .collect();
                    let shas: Vec<String> = batch.iter().map(|c| c.sha.clone()).collect();
                    self.files_of(&mut caches, &shas).await;
                    for commit in batch {
                        scanned += 1;
                        let Some(files) = caches.files.get(&commit.sha) else {
                            continue;
                        };
                        let release = files
                            .iter()
                            .filter_map(|f| {
                                let (env, service) = release_of(f)?;
                                (env == environment).then(|| (f.clone(), service))
                            })
                            .min();
                        if let Some((file, service)) = release {
                            chosen.push((commit, file, service));
                        }
                    }
                }
            }
        }
        let more = commits.len() > scanned;
        let keys: Vec<(String, String)> = chosen
            .iter()
            .map(|(commit, file, _)| (file.clone(), commit.sha.clone()))
            .collect();
        self.versions(&mut caches, &keys, release_version).await;
        let numbers: Vec<u64> = chosen
            .iter()
            .filter_map(|(commit, _, _)| pr_number(commit, pulls.get(&commit.sha).map(|p| p.0)))
            .collect();
        self.approvals(&mut caches, &numbers).await;
        let records: Vec<ReleaseRecord> = chosen
            .iter()
            .map(|(commit, file, service)| {
                let version = caches
                    .versions
                    .get(&(file.clone(), commit.sha.clone()))
                    .cloned()
                    .flatten();
                let number = pr_number(commit, pulls.get(&commit.sha).map(|p| p.0));
                let mut record = record(commit, version, number);
                record.service = Some(service.clone());
                record.approvals = number
                    .and_then(|n| caches.approvals.get(&n).cloned())
                    .unwrap_or_default();
                record
            })
            .collect();
        // The cursor is where this page stopped looking, a record or a skipped commit after it.
        let next_cursor = more
            .then(|| commits.get(scanned.checked_sub(1)?).map(|c| c.sha.clone()))
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
            let (environment, service) = release_of(&f.filename)?;
            Some((f.filename.clone(), service, environment))
        });
        let version = match &release {
            Some((path, _, _)) => {
                self.versions(
                    &mut caches,
                    &[(path.clone(), commit.summary.sha.clone())],
                    release_version,
                )
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
        let number = pr_number(&commit.summary, pull.as_ref().map(|p| p.0));
        if let Some(number) = number {
            self.approvals(&mut caches, &[number]).await;
        }
        let mut summary = record(&commit.summary, version, number);
        summary.service = release.as_ref().map(|r| r.1.clone());
        summary.approvals = number
            .and_then(|n| caches.approvals.get(&n).cloned())
            .unwrap_or_default();
        let detail = ReleaseDetail {
            record: summary,
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
            let page = self
                .page(Some(service), environment, cursor.as_deref())
                .await?;
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

/// The version a Release file names.
fn release_version(text: &str) -> Option<String> {
    serde_saphyr::from_str::<Release>(text)
        .ok()
        .map(|release| release.spec.version)
}

/// The version a DatabaseSchema file names.
fn schema_version(text: &str) -> Option<String> {
    serde_saphyr::from_str::<DatabaseSchema>(text)
        .ok()
        .map(|schema| schema.spec.version)
}

/// One commit of main that changed a file.
#[derive(Debug, Clone)]
pub struct PathCommit {
    /// The commit.
    pub commit: CommitSummary,
    /// The version the file names after it (`None`: gone, or unreadable there).
    pub version: Option<String>,
    /// The pull request that brought it.
    pub pr_number: Option<u64>,
}

/// The environment and service of a Release file's path (`platform/environments/<env>/<svc>-release.yaml`).
fn release_of(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("platform/environments/")?;
    let (environment, file) = rest.split_once('/')?;
    let service = file.strip_suffix("-release.yaml")?;
    shared::delivery::validate_label("service", service).ok()?;
    Some((environment.to_string(), service.to_string()))
}

/// The pull request that brought `commit`: the merged pull request with that head, else the one a merge
/// commit's message names ("Merge pull request #12 from …").
fn pr_number(commit: &CommitSummary, by_head: Option<u64>) -> Option<u64> {
    by_head.or_else(|| {
        commit
            .commit
            .message
            .strip_prefix("Merge pull request #")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

fn record(
    commit: &CommitSummary,
    version: Option<String>,
    pr_number: Option<u64>,
) -> ReleaseRecord {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(message: &str) -> CommitSummary {
        serde_json::from_value(serde_json::json!({
            "sha": "9eab3241", "commit": {"message": message, "author": {"name": "ada", "date": "2026-12-01T10:00:00Z"}}
        }))
        .expect("a commit as GitHub lists it")
    }

    #[test]
    fn a_commit_is_brought_by_the_pull_request_with_its_head_else_the_one_its_merge_message_names()
    {
        let merge = commit("Merge pull request #12 from acme/tower/schema/payments/prod\n\nBody");
        assert_eq!(pr_number(&merge, None), Some(12));
        assert_eq!(
            pr_number(&merge, Some(14)),
            Some(14),
            "the head's pull request wins"
        );
        assert_eq!(
            pr_number(&commit("Publish payments schema 0003"), None),
            None
        );
    }

    #[test]
    fn versions_are_read_from_each_kind_of_platform_file() {
        let schema = "apiVersion: platform.tower.dev/v1alpha1\nkind: DatabaseSchema\nmetadata: {name: payments-prod}\nspec: {database: payments, environment: prod, version: \"0004\", migrations: []}\n";
        assert_eq!(schema_version(schema).as_deref(), Some("0004"));
        assert_eq!(release_version(schema), None, "a schema is not a Release");
        assert_eq!(schema_version("not: [yaml"), None);
    }
}
