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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use shared::delivery::{FieldError, PullRequestView, RenderContext};
use shared::{ApiError, ErrorCode};
use tokio::sync::Mutex;

use self::builds::Builds;
use self::releases::ReleaseHistory;
use crate::upstream::github::{GithubApp, GithubError};

/// Failures of a delivery request, each answered as a [`shared::ApiError`].
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// A form field is invalid: 400 naming it. Nothing was written.
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The user may not do this (e.g. onboard for a team they are not in).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Something named does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The change asked for is already what main says: 409, nothing written.
    #[error("nothing to change: {0}")]
    NothingToChange(String),
    /// A watch cache is still loading.
    #[error("{0} is still syncing")]
    Syncing(&'static str),
    /// The forge failed before anything was written; a retry starts over.
    #[error("the forge failed while {step}: {source}")]
    Forge {
        /// What Tower was doing, in words.
        step: &'static str,
        /// The cause (logged, never sent).
        #[source]
        source: Box<GithubError>,
    },
    /// The forge failed after the branch was pushed; a retry finds the branch and finishes the same pull
    /// request.
    #[error("the forge failed while {step} after pushing {branch}: {source}")]
    Incomplete {
        /// What Tower was doing.
        step: &'static str,
        /// The branch already pushed.
        branch: String,
        /// The cause (logged, never sent).
        #[source]
        source: Box<GithubError>,
    },
    /// Anything unexpected (logged, never sent).
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// A forge failure while doing `step`, before anything was written.
pub fn forge(step: &'static str) -> impl Fn(GithubError) -> DeliveryError {
    move |source| DeliveryError::Forge {
        step,
        source: Box::new(source),
    }
}

/// `Result` for delivery requests.
pub type Result<T, E = DeliveryError> = std::result::Result<T, E>;

/// Ids tying a 5xx body to its log line.
fn request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let started = jiff::Timestamp::now().as_second();
    format!(
        "delivery-{started:x}-{:x}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl IntoResponse for DeliveryError {
    fn into_response(self) -> Response {
        let logged = |body: ApiError, status: StatusCode, error: &DeliveryError| {
            let id = request_id();
            tracing::error!(request_id = %id, error = %error, "delivery request failed");
            let mut body = body;
            body.request_id = Some(id);
            (status, body)
        };
        let (status, body) = match &self {
            DeliveryError::Invalid(error) => (
                StatusCode::BAD_REQUEST,
                ApiError::new(ErrorCode::BadRequest, error.message.clone()).with_field(error.field),
            ),
            DeliveryError::Forbidden(reason) => (
                StatusCode::FORBIDDEN,
                ApiError::new(ErrorCode::Forbidden, reason.clone()),
            ),
            DeliveryError::NotFound(what) => (
                StatusCode::NOT_FOUND,
                ApiError::not_found(format!("{what} not found")),
            ),
            DeliveryError::NothingToChange(what) => (
                StatusCode::CONFLICT,
                ApiError::new(ErrorCode::BadRequest, format!("Nothing to change: {what}.")),
            ),
            DeliveryError::Syncing(what) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!("Tower is still loading {what}; try again in a moment."),
                ),
            ),
            DeliveryError::Forge { step, .. } => logged(
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!(
                        "The forge failed while {step}. Nothing was written; try again in a moment."
                    ),
                ),
                StatusCode::BAD_GATEWAY,
                &self,
            ),
            DeliveryError::Incomplete { step, branch, .. } => logged(
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!(
                        "The change is pushed to branch {branch}, but the forge failed while {step}. \
                         Submitting again is safe: it finishes the same pull request and opens no other."
                    ),
                ),
                StatusCode::BAD_GATEWAY,
                &self,
            ),
            DeliveryError::Internal(_) => logged(
                ApiError::new(ErrorCode::Internal, "Something went wrong on Tower's side."),
                StatusCode::INTERNAL_SERVER_ERROR,
                &self,
            ),
        };
        (status, Json(body)).into_response()
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
