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
pub mod tracking;

use std::sync::{Arc, OnceLock};

use secrecy::SecretString;
use shared::delivery::{PullRequestView, RenderContext};
use tokio::sync::Notify;

use self::builds::Builds;
use self::releases::ReleaseHistory;
use self::tracking::PullTracker;
use crate::fleet::catalog::Catalog;
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
    /// The secret GitHub's webhook deliveries are signed with (`github.webhook_secret`); without one the
    /// webhook answers 401 and Tower polls.
    pub webhook_secret: Option<SecretString>,
}

struct Inner {
    github: GithubApp,
    config: DeliveryConfig,
    builds: Builds,
    releases: ReleaseHistory,
    /// Tower's pull requests, for the PRs tab and the cards' pending PRs, kept current in the background.
    tracker: PullTracker,
    /// Wakes the merged-pull-request poll of the activity feed ([`merges::spawn`]) when a webhook says one
    /// merged.
    merges: Arc<Notify>,
    /// The catalog, which GitHub's `push` webhooks keep current; set once at start (the catalog belongs to
    /// the fleet model, which is built beside Delivery).
    catalog: OnceLock<Catalog>,
}

/// Delivery's state: the forge client, the green-build cache, the release-record cache, the cache of Tower's
/// pull requests, and where GitHub's webhooks land. Cheap to clone.
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
                tracker: PullTracker::default(),
                merges: Arc::new(Notify::new()),
                catalog: OnceLock::new(),
            }),
        }
    }

    /// Lets `push` webhooks reach `catalog`.
    pub fn follow_catalog(&self, catalog: Catalog) {
        // Set once by `serve`; a second call would be a wiring mistake, and the first catalog stays.
        let _ = self.inner.catalog.set(catalog);
    }

    /// The catalog `push` webhooks update, once set.
    pub fn catalog(&self) -> Option<&Catalog> {
        self.inner.catalog.get()
    }

    /// The secret webhook deliveries must be signed with, when webhooks are configured.
    pub fn webhook_secret(&self) -> Option<&SecretString> {
        self.inner.config.webhook_secret.as_ref()
    }

    /// The cache of Tower's pull requests.
    pub fn tracker(&self) -> &PullTracker {
        &self.inner.tracker
    }

    /// What wakes the activity feed's merge poll.
    pub fn merges_wake(&self) -> Arc<Notify> {
        self.inner.merges.clone()
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

    /// Tower's pull requests (open, and the most recently merged) from the cache the background task keeps
    /// current ([`tracking`]).
    pub async fn pulls(&self) -> Result<Vec<PullRequestView>> {
        self.inner.tracker.list(self).await
    }
}
