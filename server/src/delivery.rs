//! Delivery: Tower's one write, a pull request to `application-repositories`, and the reads around it (green
//! builds, release records, Tower's open pull requests).
//!
//! A change is a set of files under `platform/` rendered from the platform's resource types
//! ([`shared::delivery`]). It is pushed as one commit on main, on a branch that is a pure function of what
//! the change is for ([`shared::delivery::Intent`]), and proposed as one pull request. Every step is
//! idempotent, so asking twice updates the same pull request and a retry after a forge failure finishes what
//! the first attempt started instead of leaving an orphan branch.

pub mod builds;
pub mod merges;
pub mod plans;
pub mod pull;
pub mod releases;

use std::sync::Arc;
use std::time::{Duration, Instant};

use shared::delivery::{PullRequestView, RenderContext};
use tokio::sync::Mutex;

use self::builds::Builds;
use self::releases::ReleaseHistory;
use crate::upstream::github::{GithubApp, GithubError};

pub use crate::error::{Error, Result};

/// A forge failure while doing `step`, before anything was written.
pub fn forge(step: &'static str) -> impl Fn(GithubError) -> Error {
    move |source| Error::Forge {
        step,
        source: Box::new(source),
    }
}

/// How Delivery is set up.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// The forge organisation (`acme`): service repositories are `<organisation>/<service>`.
    pub organisation: String,
    /// The GitOps repository's name (`application-repositories`).
    pub repository: String,
    /// Where people reach Tower, for links in pull request bodies.
    pub public_url: String,
    /// The label naming a PipelineRun's component.
    pub component_label: String,
    /// The scaffold templates onboarding offers (see `TowerConfig::scaffolds`).
    pub scaffolds: Vec<shared::delivery::Scaffold>,
}

/// How long the list of Tower's pull requests is reused before asking the forge again.
const PULLS_FRESH_FOR: Duration = Duration::from_secs(5);

struct Inner {
    github: GithubApp,
    config: DeliveryConfig,
    builds: Builds,
    releases: ReleaseHistory,
    /// Tower's pull requests as last listed, for the PRs tab and the cards' pending PRs.
    pulls: Mutex<Option<(Instant, Vec<PullRequestView>)>>,
}

/// Delivery's state: the forge client, the green-build cache and the release-record cache. Cheap to clone.
#[derive(Clone)]
pub struct Delivery {
    inner: Arc<Inner>,
}

impl Delivery {
    /// Delivery through `github`, reading green builds from `builds`.
    pub fn new(github: GithubApp, builds: Builds, config: DeliveryConfig) -> Self {
        let repository = format!("{}/{}", config.organisation, config.repository);
        Self {
            inner: Arc::new(Inner {
                releases: ReleaseHistory::new(github.clone(), repository),
                github,
                config,
                builds,
                pulls: Mutex::new(None),
            }),
        }
    }

    /// The forge client.
    pub fn github(&self) -> &GithubApp {
        &self.inner.github
    }

    /// The configuration.
    pub fn config(&self) -> &DeliveryConfig {
        &self.inner.config
    }

    /// `owner/name` of the GitOps repository.
    pub fn repository(&self) -> String {
        format!(
            "{}/{}",
            self.inner.config.organisation, self.inner.config.repository
        )
    }

    /// The green builds.
    pub fn builds(&self) -> &Builds {
        &self.inner.builds
    }

    /// The release records.
    pub fn releases(&self) -> &ReleaseHistory {
        &self.inner.releases
    }

    /// What rendering needs, with the registry as `registry` (derived from Releases that exist).
    pub fn render_context(&self, registry: Option<String>) -> RenderContext {
        let organisation = self.inner.config.organisation.clone();
        RenderContext {
            registry: registry.unwrap_or_else(|| format!("ghcr.io/{organisation}")),
            organisation,
        }
    }

    /// Tower's pull requests (open, and the most recently merged), listed at most every few seconds.
    pub async fn pulls(&self) -> Result<Vec<PullRequestView>> {
        let mut cached = self.inner.pulls.lock().await;
        if let Some((at, pulls)) = cached.as_ref()
            && at.elapsed() < PULLS_FRESH_FOR
        {
            return Ok(pulls.clone());
        }
        let pulls = pull::list_tower_pulls(self).await?;
        *cached = Some((Instant::now(), pulls.clone()));
        Ok(pulls)
    }

    /// Forgets the listed pull requests, after Tower changed one.
    pub async fn forget_pulls(&self) {
        *self.inner.pulls.lock().await = None;
    }
}
