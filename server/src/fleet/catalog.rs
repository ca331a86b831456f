//! The catalog nobody registers into: every repository of the organisation with a `catalog-info.yaml`
//! (Backstage format) describes its service. Read through the GitHub App in the background; cards and the
//! Overview read the cached result.
//!
//! Re-reads are conditional: each page of the organisation's repository list and each repository's
//! `catalog-info.yaml` is asked for with the `ETag` of its last answer, and a `304 Not Modified` reuses what
//! was parsed then (such answers cost nothing of the App's rate limit). With webhooks, the organisation is
//! scanned once at start and afterwards only a repository whose default branch was pushed to is read again
//! ([`Catalog::repository_pushed`]); without, the whole organisation is scanned every few minutes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use shared::fleet::{CatalogAnnotation, CatalogInfo, CatalogLink};
use tokio::sync::{Notify, mpsc};

use super::Dirty;
use crate::upstream::github::{
    self, Conditional, ForgeRequests, GithubApp, organisation_repositories_route,
};

/// How often the organisation is scanned again when no webhook says what changed.
pub const RESCAN_EVERY: Duration = Duration::from_secs(300);
/// How long a failed first scan waits before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(10);
/// How long pushes are gathered before their repositories are read, so a burst costs one read each.
const PUSH_DEBOUNCE: Duration = Duration::from_millis(200);
/// Repositories waiting to be read after pushes, at most: more than this many distinct repositories pushed
/// within one debounce window is a flood, and the next scan will catch up instead.
const PUSHES_PENDING_MAX: usize = 1_000;
/// Pages of the organisation's repositories read at most (100 a page).
const MAX_PAGES: usize = 50;
/// `catalog-info.yaml` files read at once.
const READS_AT_ONCE: usize = 4;
/// The file every service repository describes itself in.
pub const CATALOG_FILE: &str = "catalog-info.yaml";

/// The annotations that name who is on call, in the order they are preferred when a file has several.
const ON_CALL_KEYS: [&str; 3] = [
    "tower.dev/oncall",
    "pagerduty.com/service-id",
    "opsgenie.com/team",
];
/// The annotations Tower shows besides the on-call ones.
const SHOWN_KEYS: [&str; 3] = [
    "backstage.io/techdocs-ref",
    "github.com/project-slug",
    "backstage.io/source-location",
];

/// `catalog-info.yaml`, the fields Tower reads.
#[derive(Debug, Default, Deserialize)]
struct Entity {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    spec: Spec,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    links: Vec<Link>,
    #[serde(default)]
    annotations: Annotations,
}

#[derive(Debug, Default, Deserialize)]
struct Link {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Spec {
    #[serde(rename = "type")]
    kind: Option<String>,
    lifecycle: Option<String>,
    system: Option<String>,
    owner: Option<String>,
}

/// `metadata.annotations` in file order (a map type would sort them), scalar values as text.
#[derive(Debug, Default)]
struct Annotations(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Annotations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Annotations;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of annotations")
            }

            fn visit_unit<E>(self) -> Result<Annotations, E> {
                Ok(Annotations::default())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Annotations, A::Error> {
                let mut pairs = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                    let text = match value {
                        serde_json::Value::String(text) => text,
                        serde_json::Value::Number(n) => n.to_string(),
                        serde_json::Value::Bool(b) => b.to_string(),
                        // Backstage annotations are strings; anything nested says nothing Tower shows.
                        _ => continue,
                    };
                    pairs.push((key, text));
                }
                Ok(Annotations(pairs))
            }
        }
        deserializer.deserialize_any(Pairs)
    }
}

/// Whether `text` is an absolute http(s) URL: the page renders links and some annotations as hrefs, so
/// `javascript:` and friends never get that far.
fn is_web_url(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|url| matches!(url.scheme(), "http" | "https"))
}

/// `spec.owner` as a team name: `group:payments` and `group:default/payments` are the team `payments`.
fn owner_team(owner: &str) -> String {
    let name = owner.strip_prefix("group:").unwrap_or(owner);
    name.rsplit('/').next().unwrap_or(name).to_string()
}

/// Parses a `catalog-info.yaml`; `None` when it is not a Backstage entity Tower can read.
pub fn parse(text: &str) -> Option<CatalogInfo> {
    // A file may hold several documents; the first is the service's Component.
    let first = text.split("\n---").next().unwrap_or(text);
    let entity: Entity = serde_saphyr::from_str(first).ok()?;
    let non_empty =
        |text: Option<String>| text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    let annotations: Vec<CatalogAnnotation> = entity
        .metadata
        .annotations
        .0
        .into_iter()
        .filter(|(key, _)| {
            ON_CALL_KEYS.contains(&key.as_str()) || SHOWN_KEYS.contains(&key.as_str())
        })
        .filter_map(|(key, value)| {
            let value = value.trim().to_string();
            // The source location is a link (`url:https://…`): kept only when it is a web one.
            if key == "backstage.io/source-location" {
                let target = value.strip_prefix("url:").unwrap_or(&value);
                if !is_web_url(target) {
                    return None;
                }
            }
            (!value.is_empty()).then_some(CatalogAnnotation { key, value })
        })
        .collect();
    let on_call = ON_CALL_KEYS
        .iter()
        .find_map(|key| annotations.iter().find(|a| a.key == *key))
        .cloned();
    Some(CatalogInfo {
        kind: entity.spec.kind,
        lifecycle: entity.spec.lifecycle,
        system: entity.spec.system,
        tags: entity.metadata.tags,
        links: entity
            .metadata
            .links
            .into_iter()
            .filter(|l| is_web_url(&l.url))
            .map(|l| CatalogLink {
                title: l.title.unwrap_or_else(|| l.url.clone()),
                url: l.url,
            })
            .collect(),
        name: non_empty(entity.metadata.name),
        description: non_empty(entity.metadata.description),
        owner: non_empty(entity.spec.owner.as_deref().map(owner_team)),
        on_call,
        annotations,
    })
}

/// What the catalog knows of one repository.
// A lookup lives for one summary's computation; boxing its entry would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Not scanned yet, or its file could not be read.
    Unread,
    /// Scanned, and it has no readable `catalog-info.yaml`.
    Missing,
    /// Its `catalog-info.yaml`.
    Found(CatalogInfo),
}

/// What one read of a repository's file found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileRead {
    Found(Box<CatalogInfo>),
    Missing,
    /// The forge failed: the last answer (if any) stands.
    Unreadable,
}

/// How much one scan cost and what it found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Requests sent by the App client while the scan ran (a dedicated client counts the scan alone).
    pub requests: ForgeRequests,
    /// Repositories listed.
    pub repositories: usize,
    /// Of those, with a readable `catalog-info.yaml`.
    pub found: usize,
}

/// The last answer for a URL, with its validator.
#[derive(Debug, Clone)]
struct Validated<T> {
    etag: String,
    value: T,
}

#[derive(Debug, Default)]
struct Entries {
    /// By repository in lowercase (GitHub names are case-insensitive): the repository as GitHub spells it
    /// and its entry.
    found: BTreeMap<String, (String, CatalogInfo)>,
    /// Repositories whose file could not be read and that have no earlier entry.
    unreadable: BTreeSet<String>,
}

/// One page of the organisation's repositories and the route of the next.
type RepositoryPage = (Vec<github::Repository>, Option<String>);

#[derive(Debug, Default)]
struct Validators {
    /// Pages of the organisation's repository list, by route: the repositories and the next page's route.
    pages: HashMap<String, Validated<RepositoryPage>>,
    /// Each repository's file, by repository in lowercase: the branch it was read on, and what it said.
    files: HashMap<String, (String, Validated<Option<CatalogInfo>>)>,
}

#[derive(Default)]
struct Inner {
    entries: RwLock<Entries>,
    /// Whether the organisation has been scanned once: before that, a missing entry says nothing.
    scanned: AtomicBool,
    validators: Mutex<Validators>,
    /// Repositories pushed to and not read yet, with the branch to read.
    pushed: Mutex<BTreeMap<String, (String, String)>>,
    wake: Notify,
    scans: AtomicU64,
    pushes_read: AtomicU64,
    last_scan: Mutex<Option<ScanReport>>,
}

/// Catalog entries by repository (`org/name`). Cheap to clone: clones share everything.
#[derive(Clone, Default)]
pub struct Catalog {
    inner: Arc<Inner>,
}

/// When the catalog reads the organisation again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// Webhooks say which repository changed: scan once, then read only pushed repositories.
    OnPush,
    /// No webhooks: scan the whole organisation (conditionally) this often, and read pushes too.
    Every(Duration),
}

impl Catalog {
    fn entries_read(&self) -> std::sync::RwLockReadGuard<'_, Entries> {
        self.inner
            .entries
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn entries_write(&self) -> std::sync::RwLockWriteGuard<'_, Entries> {
        self.inner
            .entries
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn validators(&self) -> std::sync::MutexGuard<'_, Validators> {
        self.inner
            .validators
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The entry of `repository`, if it has one.
    pub fn get(&self, repository: &str) -> Option<CatalogInfo> {
        self.entries_read()
            .found
            .get(&repository.to_lowercase())
            .map(|(_, info)| info.clone())
    }

    /// What the catalog says of `repository`.
    pub fn lookup(&self, repository: &str) -> Lookup {
        let key = repository.to_lowercase();
        let entries = self.entries_read();
        match entries.found.get(&key) {
            Some((_, info)) => Lookup::Found(info.clone()),
            None if entries.unreadable.contains(&key) => Lookup::Unread,
            None if self.inner.scanned.load(Ordering::Acquire) => Lookup::Missing,
            None => Lookup::Unread,
        }
    }

    /// Every repository with a `catalog-info.yaml`, by `org/name`: the services the catalog knows, onboarded
    /// or not.
    pub fn entries(&self) -> Vec<(String, CatalogInfo)> {
        self.entries_read()
            .found
            .values()
            .map(|(repository, info)| (repository.clone(), info.clone()))
            .collect()
    }

    /// Scans completed so far.
    pub fn scans(&self) -> u64 {
        self.inner.scans.load(Ordering::Acquire)
    }

    /// Pushed repositories read so far.
    pub fn pushes_read(&self) -> u64 {
        self.inner.pushes_read.load(Ordering::Acquire)
    }

    /// What the last completed scan cost and found.
    pub fn last_scan(&self) -> Option<ScanReport> {
        *self
            .inner
            .last_scan
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes that `repository`'s default branch `branch` was pushed to: its file is read again (once, after
    /// a short wait gathering a burst) by the task [`Catalog::spawn_refresh`] started.
    pub fn repository_pushed(&self, repository: &str, branch: &str) {
        let mut pushed = self
            .inner
            .pushed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = repository.to_lowercase();
        if pushed.len() >= PUSHES_PENDING_MAX && !pushed.contains_key(&key) {
            tracing::warn!(%repository, "too many repositories pushed at once; the next scan reads it");
            return;
        }
        pushed.insert(key, (repository.to_string(), branch.to_string()));
        drop(pushed);
        self.inner.wake.notify_one();
    }

    /// Notes that `repository` is gone (deleted or archived): its entry goes.
    pub fn repository_removed(&self, repository: &str) -> bool {
        let key = repository.to_lowercase();
        self.validators().files.remove(&key);
        let mut entries = self.entries_write();
        entries.unreadable.remove(&key);
        entries.found.remove(&key).is_some()
    }

    /// Scans `organisation` now and then as `refresh` says, reading pushed repositories as they come, and
    /// marks everything dirty when something changed.
    pub fn spawn_refresh(
        &self,
        github: GithubApp,
        organisation: String,
        refresh: Refresh,
        dirty: mpsc::UnboundedSender<Dirty>,
    ) {
        let catalog = self.clone();
        tokio::spawn(async move {
            // The first scan is retried until it succeeds: before it, every service's catalog is unread.
            loop {
                match catalog.scan(&github, &organisation).await {
                    Ok(changed) => {
                        if changed {
                            let _ = dirty.send(Dirty::All);
                        }
                        break;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "catalog scan failed; trying again");
                        tokio::time::sleep(RETRY_AFTER).await;
                    }
                }
            }
            let mut next_scan = match refresh {
                Refresh::Every(every) => Some(tokio::time::Instant::now() + every),
                Refresh::OnPush => None,
            };
            loop {
                let rescan = async {
                    match next_scan {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = rescan => {
                        match catalog.scan(&github, &organisation).await {
                            Ok(true) => { let _ = dirty.send(Dirty::All); }
                            Ok(false) => {}
                            Err(error) => tracing::warn!(%error, "catalog scan failed; keeping the last one"),
                        }
                        if let Refresh::Every(every) = refresh {
                            next_scan = Some(tokio::time::Instant::now() + every);
                        }
                    }
                    () = catalog.inner.wake.notified() => {
                        tokio::time::sleep(PUSH_DEBOUNCE).await;
                        if catalog.read_pushed(&github).await {
                            let _ = dirty.send(Dirty::All);
                        }
                    }
                }
            }
        });
    }

    /// Reads the repositories pushed to since the last call; true when an entry changed.
    async fn read_pushed(&self, github: &GithubApp) -> bool {
        let pushed = std::mem::take(
            &mut *self
                .inner
                .pushed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let reads: Vec<(String, FileRead)> = futures::stream::iter(pushed.into_values())
            .map(|(repository, branch)| async move {
                let read = self.read_file(github, &repository, &branch).await;
                (repository, read)
            })
            .buffer_unordered(READS_AT_ONCE)
            .collect()
            .await;
        let mut changed = false;
        for (repository, read) in reads {
            self.inner.pushes_read.fetch_add(1, Ordering::AcqRel);
            changed |= self.apply(&repository, read);
        }
        if changed {
            tracing::info!("catalog changed by a push");
        }
        changed
    }

    /// Records what a read of `repository`'s file found; true when its entry changed.
    fn apply(&self, repository: &str, read: FileRead) -> bool {
        let key = repository.to_lowercase();
        let mut entries = self.entries_write();
        match read {
            FileRead::Found(info) => {
                let info = *info;
                entries.unreadable.remove(&key);
                let changed = entries.found.get(&key).map(|(_, i)| i) != Some(&info);
                entries.found.insert(key, (repository.to_string(), info));
                changed
            }
            FileRead::Missing => {
                let was_unreadable = entries.unreadable.remove(&key);
                entries.found.remove(&key).is_some() || was_unreadable
            }
            FileRead::Unreadable => {
                !entries.found.contains_key(&key) && entries.unreadable.insert(key)
            }
        }
    }

    /// Reads `repository`'s `catalog-info.yaml` on `branch`, conditionally when it was read there before.
    async fn read_file(&self, github: &GithubApp, repository: &str, branch: &str) -> FileRead {
        let key = repository.to_lowercase();
        let known = self
            .validators()
            .files
            .get(&key)
            .filter(|(read_on, _)| read_on == branch)
            .map(|(_, validated)| validated.clone());
        let answer = github
            .file_conditional(
                repository,
                CATALOG_FILE,
                branch,
                known.as_ref().map(|v| v.etag.as_str()),
            )
            .await;
        let info = match answer {
            Ok(Conditional::NotModified) => match known {
                Some(validated) => validated.value,
                None => return FileRead::Unreadable,
            },
            Ok(Conditional::Fresh { value, etag, .. }) => {
                let info = value.as_deref().and_then(parse);
                let mut validators = self.validators();
                match etag {
                    Some(etag) => {
                        validators.files.insert(
                            key,
                            (
                                branch.to_string(),
                                Validated {
                                    etag,
                                    value: info.clone(),
                                },
                            ),
                        );
                    }
                    None => {
                        validators.files.remove(&key);
                    }
                }
                info
            }
            Err(error) => {
                // One unreadable file must not hide the rest of the catalog.
                tracing::warn!(%repository, %error, "could not read a catalog-info.yaml");
                return FileRead::Unreadable;
            }
        };
        match info {
            Some(info) => FileRead::Found(Box::new(info)),
            None => FileRead::Missing,
        }
    }

    /// Every repository of `organisation` with its default branch, each page read conditionally.
    async fn repositories(
        &self,
        github: &GithubApp,
        organisation: &str,
    ) -> github::Result<Vec<(String, String)>> {
        let mut repositories = Vec::new();
        let mut route = Some(organisation_repositories_route(organisation));
        for _ in 0..MAX_PAGES {
            let Some(current) = route.take() else { break };
            let known = self.validators().pages.get(&current).cloned();
            let answer = github
                .organisation_repositories_page(&current, known.as_ref().map(|v| v.etag.as_str()))
                .await?;
            let (page, next) = match answer {
                Conditional::NotModified => match known {
                    Some(validated) => validated.value,
                    None => {
                        return Err(github::GithubError::Shape("a 304 to an unconditional read"));
                    }
                },
                Conditional::Fresh { value, etag, next } => {
                    let mut validators = self.validators();
                    match etag {
                        Some(etag) => {
                            validators.pages.insert(
                                current,
                                Validated {
                                    etag,
                                    value: (value.clone(), next.clone()),
                                },
                            );
                        }
                        None => {
                            validators.pages.remove(&current);
                        }
                    }
                    (value, next)
                }
            };
            repositories.extend(page.into_iter().map(|r| {
                let branch = r.default_branch.unwrap_or_else(|| "main".into());
                (r.full_name, branch)
            }));
            route = next;
        }
        Ok(repositories)
    }

    /// Scans `organisation` once; true when an entry changed (or this was the first scan).
    pub async fn scan(&self, github: &GithubApp, organisation: &str) -> github::Result<bool> {
        let before = github.requests();
        let repositories = self.repositories(github, organisation).await?;
        let reads: Vec<(String, FileRead)> = futures::stream::iter(repositories.iter().cloned())
            .map(|(repository, branch)| async move {
                let read = self.read_file(github, &repository, &branch).await;
                (repository, read)
            })
            .buffer_unordered(READS_AT_ONCE)
            .collect()
            .await;
        let listed: BTreeSet<String> = repositories.iter().map(|(r, _)| r.to_lowercase()).collect();
        let mut changed = false;
        {
            // Repositories that left the organisation leave the catalog.
            let mut entries = self.entries_write();
            let before = entries.found.len();
            entries.found.retain(|key, _| listed.contains(key));
            entries.unreadable.retain(|key| listed.contains(key));
            changed |= entries.found.len() != before;
        }
        self.validators()
            .files
            .retain(|key, _| listed.contains(key));
        for (repository, read) in reads {
            changed |= self.apply(&repository, read);
        }
        let first = !self.inner.scanned.swap(true, Ordering::AcqRel);
        let report = ScanReport {
            requests: github.requests() - before,
            repositories: repositories.len(),
            found: self.entries_read().found.len(),
        };
        tracing::info!(
            repositories = report.repositories,
            found = report.found,
            requests = report.requests.sent,
            not_modified = report.requests.not_modified,
            changed,
            "catalog scanned"
        );
        *self
            .inner
            .last_scan
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(report);
        self.inner.scans.fetch_add(1, Ordering::AcqRel);
        Ok(first || changed)
    }
}

/// The name a catalog entry without a Component is listed under: its `metadata.name`, else its repository's
/// name, when that is a DNS label (a service's page and routes take nothing else).
pub fn service_name(repository: &str, info: &CatalogInfo) -> Option<String> {
    let from_repository = repository
        .rsplit('/')
        .next()
        .map(str::to_lowercase)
        .unwrap_or_default();
    [info.name.clone().unwrap_or_default(), from_repository]
        .into_iter()
        .find(|name| shared::delivery::validate_label("name", name).is_ok())
}

/// The summary of a service the catalog knows and no Component names: in the catalog, not on the platform
/// yet, so no environments and no template.
pub fn not_onboarded(
    name: String,
    repository: &str,
    info: &CatalogInfo,
) -> shared::fleet::ServiceSummary {
    shared::fleet::ServiceSummary {
        name,
        owner: info.owner.clone().unwrap_or_default(),
        description: info.description.clone().unwrap_or_default(),
        repository: repository.to_string(),
        template: String::new(),
        depends_on: Vec::new(),
        environments: Vec::new(),
        catalog: Some(info.clone()),
        catalog_state: shared::fleet::CatalogState::NotOnboarded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backstage_component_reads_back() {
        let info = parse(
            "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: payments\n  tags: [go, payments]\n  links:\n    - url: https://grafana.example/d/payments\n      title: Dashboard\n    - url: javascript:alert(1)\nspec:\n  type: service\n  lifecycle: production\n  owner: group:payments\n",
        )
        .expect("parses");
        assert_eq!(info.kind.as_deref(), Some("service"));
        assert_eq!(info.lifecycle.as_deref(), Some("production"));
        assert_eq!(info.tags, ["go", "payments"]);
        // Only web links are kept: the page renders them as hrefs.
        assert_eq!(info.links.len(), 1);
        assert_eq!(info.links[0].title, "Dashboard");
        assert_eq!(info.name.as_deref(), Some("payments"));
        assert_eq!(info.owner.as_deref(), Some("payments"));
    }

    #[test]
    fn annotations_that_matter_are_kept_in_file_order_with_who_is_on_call() {
        let info = parse(
            "apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: search
  description: '  Finds things.  '
  annotations:
    github.com/project-slug: acme/search
    backstage.io/kubernetes-label-selector: platform.tower.dev/component=search
    opsgenie.com/team: search-team
    backstage.io/source-location: url:https://github.com/acme/search/tree/main/
    pagerduty.com/service-id: PSEARCH1
    backstage.io/techdocs-ref: dir:.
  links:
    - url: ftp://files.example/search
    - url: http://runbooks.example/search
spec:
  type: service
  owner: group:default/search
",
        )
        .expect("parses");
        let keys: Vec<&str> = info.annotations.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "github.com/project-slug",
                "opsgenie.com/team",
                "backstage.io/source-location",
                "pagerduty.com/service-id",
                "backstage.io/techdocs-ref",
            ],
            "only the annotations Tower knows, in file order"
        );
        // PagerDuty is preferred to Opsgenie whatever the file's order.
        assert_eq!(
            info.on_call,
            Some(CatalogAnnotation {
                key: "pagerduty.com/service-id".into(),
                value: "PSEARCH1".into()
            })
        );
        assert_eq!(info.owner.as_deref(), Some("search"));
        assert_eq!(info.description.as_deref(), Some("Finds things."));
        assert_eq!(info.links.len(), 1);
        assert_eq!(info.links[0].title, "http://runbooks.example/search");

        let sneaky = parse(
            "metadata:\n  annotations:\n    backstage.io/source-location: 'url:javascript:alert(1)'\n    tower.dev/oncall: '@ada'\n",
        )
        .expect("parses");
        assert_eq!(
            sneaky.annotations,
            [CatalogAnnotation {
                key: "tower.dev/oncall".into(),
                value: "@ada".into()
            }]
        );
        assert_eq!(sneaky.on_call.map(|a| a.value).as_deref(), Some("@ada"));
    }

    #[test]
    fn something_else_is_ignored() {
        assert_eq!(parse("just: [a, list"), None);
    }

    #[test]
    fn a_catalog_entry_is_listed_under_a_dns_label() {
        let named = |name: &str| CatalogInfo {
            name: Some(name.into()),
            ..CatalogInfo::default()
        };
        assert_eq!(
            service_name("acme/search", &named("search")).as_deref(),
            Some("search")
        );
        assert_eq!(
            service_name("acme/Search-API", &named("Search API")).as_deref(),
            Some("search-api")
        );
        assert_eq!(service_name("acme/Search_API", &named("x y")), None);
    }

    #[test]
    fn lookups_say_unread_until_a_scan_then_found_or_missing() {
        let catalog = Catalog::default();
        assert_eq!(catalog.lookup("acme/payments"), Lookup::Unread);
        let info = CatalogInfo {
            name: Some("payments".into()),
            ..CatalogInfo::default()
        };
        assert!(catalog.apply("acme/payments", FileRead::Found(Box::new(info.clone()))));
        assert!(!catalog.apply("acme/payments", FileRead::Found(Box::new(info.clone()))));
        catalog.inner.scanned.store(true, Ordering::Release);
        assert_eq!(catalog.lookup("acme/Payments"), Lookup::Found(info.clone()));
        assert_eq!(catalog.lookup("acme/ledger"), Lookup::Missing);
        // A failed read keeps an earlier entry and makes an unknown one unread rather than missing.
        assert!(!catalog.apply("acme/payments", FileRead::Unreadable));
        assert_eq!(catalog.lookup("acme/payments"), Lookup::Found(info));
        assert!(catalog.apply("acme/ledger", FileRead::Unreadable));
        assert_eq!(catalog.lookup("acme/ledger"), Lookup::Unread);
        assert!(catalog.apply("acme/ledger", FileRead::Missing));
        assert_eq!(catalog.lookup("acme/ledger"), Lookup::Missing);
        assert!(catalog.apply("acme/payments", FileRead::Missing));
        assert_eq!(catalog.entries(), vec![]);
    }
}
