//! The catalog nobody registers into: every repository of the organisation with a `catalog-info.yaml`
//! (Backstage format) describes its service. Read through the GitHub App in the background and refreshed
//! periodically; cards and the Overview read the cached result.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use shared::fleet::{CatalogInfo, CatalogLink};
use tokio::sync::mpsc;

use super::Dirty;
use crate::upstream::github::{self, GithubApp};

/// How often the organisation is scanned again.
const REFRESH_EVERY: Duration = Duration::from_secs(300);

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
    tags: Vec<String>,
    #[serde(default)]
    links: Vec<Link>,
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
}

/// Parses a `catalog-info.yaml`; `None` when it is not a Backstage entity Tower can read.
pub fn parse(text: &str) -> Option<CatalogInfo> {
    // A file may hold several documents; the first is the service's Component.
    let first = text.split("\n---").next().unwrap_or(text);
    let entity: Entity = serde_saphyr::from_str(first).ok()?;
    Some(CatalogInfo {
        kind: entity.spec.kind,
        lifecycle: entity.spec.lifecycle,
        system: entity.spec.system,
        tags: entity.metadata.tags,
        links: entity
            .metadata
            .links
            .into_iter()
            .filter(|l| l.url.starts_with("https://") || l.url.starts_with("http://"))
            .map(|l| CatalogLink {
                title: l.title.unwrap_or_else(|| l.url.clone()),
                url: l.url,
            })
            .collect(),
        ..CatalogInfo::default()
    })
}

/// Catalog entries by repository (`org/name`).
#[derive(Clone, Default)]
pub struct Catalog {
    entries: Arc<RwLock<BTreeMap<String, CatalogInfo>>>,
    /// Whether the organisation has been scanned once: before that, a missing entry says nothing.
    scanned: Arc<std::sync::atomic::AtomicBool>,
}

/// What the catalog knows of one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Not scanned yet.
    Unread,
    /// Scanned, and it has no readable `catalog-info.yaml`.
    Missing,
    /// Its `catalog-info.yaml`.
    Found(CatalogInfo),
}

impl Catalog {
    /// The entry of `repository`, if it has one.
    pub fn get(&self, repository: &str) -> Option<CatalogInfo> {
        self.entries
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(repository)
            .cloned()
    }

    /// What the catalog says of `repository`.
    pub fn lookup(&self, repository: &str) -> Lookup {
        match self.get(repository) {
            Some(info) => Lookup::Found(info),
            None if self.scanned.load(std::sync::atomic::Ordering::Acquire) => Lookup::Missing,
            None => Lookup::Unread,
        }
    }

    /// Every repository with a `catalog-info.yaml`, by `org/name`: the services the catalog knows, onboarded
    /// or not.
    pub fn entries(&self) -> Vec<(String, CatalogInfo)> {
        self.entries
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(repository, info)| (repository.clone(), info.clone()))
            .collect()
    }

    /// Scans `organisation` now and then every few minutes, marking everything dirty when something changed.
    pub fn spawn_refresh(
        &self,
        github: GithubApp,
        organisation: String,
        dirty: mpsc::UnboundedSender<Dirty>,
    ) {
        let catalog = self.clone();
        tokio::spawn(async move {
            loop {
                match scan(&github, &organisation).await {
                    Ok(found) => {
                        let mut entries = catalog
                            .entries
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        let first = !catalog
                            .scanned
                            .swap(true, std::sync::atomic::Ordering::AcqRel);
                        if first || *entries != found {
                            tracing::info!(repositories = found.len(), "catalog refreshed");
                            *entries = found;
                            drop(entries);
                            let _ = dirty.send(Dirty::All);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "catalog scan failed; keeping the last one")
                    }
                }
                tokio::time::sleep(REFRESH_EVERY).await;
            }
        });
    }
}

async fn scan(
    github: &GithubApp,
    organisation: &str,
) -> github::Result<BTreeMap<String, CatalogInfo>> {
    let mut found = BTreeMap::new();
    for (repository, branch) in organisation_repositories(github, organisation).await? {
        match github.file(&repository, "catalog-info.yaml", &branch).await {
            Ok(Some(text)) => {
                if let Some(info) = parse(&text) {
                    found.insert(repository, info);
                }
            }
            Ok(None) => {}
            // One unreadable file must not hide the rest of the catalog.
            Err(error) => {
                tracing::warn!(%repository, %error, "skipping an unreadable catalog-info.yaml")
            }
        }
    }
    Ok(found)
}

/// Every repository of `organisation`, as `org/name` with its default branch.
async fn organisation_repositories(
    github: &GithubApp,
    organisation: &str,
) -> github::Result<Vec<(String, String)>> {
    let client = github.client().await?;
    let mut names = Vec::new();
    for page in 1..=50u32 {
        let repositories: Value = client
            .get(
                format!("/orgs/{organisation}/repos?per_page=100&page={page}"),
                None::<&()>,
            )
            .await?;
        let items = repositories
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        names.extend(items.iter().filter_map(|r| {
            let name = r.get("full_name").and_then(Value::as_str)?;
            let branch = r
                .get("default_branch")
                .and_then(Value::as_str)
                .unwrap_or("main");
            Some((name.to_string(), branch.to_string()))
        }));
        if items.len() < 100 {
            break;
        }
    }
    Ok(names)
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
    }

    #[test]
    fn something_else_is_ignored() {
        assert_eq!(parse("just: [a, list"), None);
    }
}
