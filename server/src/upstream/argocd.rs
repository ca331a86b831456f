//! Argo CD's REST API, for the one non-PR action Tower takes: an owner's Sync. Reads of Applications come from
//! the management cluster's watch cache, not from here.

use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

/// Where Argo CD's own REST API lives (not Tower's, whose paths are declared in `shared::api`), as path
/// segments for [`crate::sinks::upstream_url`].
const ARGOCD_API: [&str; 2] = ["api", "v1"];

/// Failures talking to Argo CD. Their text goes to logs only.
#[derive(Debug, thiserror::Error)]
pub enum ArgoCdError {
    /// Argo CD could not be reached.
    #[error("Argo CD request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// A sync or another operation is already running on the Application (gRPC `FailedPrecondition`).
    #[error("Argo CD is already running an operation on the application")]
    OperationInProgress,
    /// Argo CD refused (`{"error","code","message"}`).
    #[error("Argo CD refused ({status}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// Argo CD's message.
        message: String,
    },
    /// The configured URL cannot carry the API's path.
    #[error("Argo CD URL: {0}")]
    Url(#[from] crate::sinks::UrlError),
}

/// The Argo CD instance deploying to each workload cluster, by cluster name (several clusters share a
/// client when one instance serves them).
pub type Instances = std::collections::BTreeMap<String, ArgoCd>;

/// An Argo CD instance.
#[derive(Clone)]
pub struct ArgoCd {
    http: reqwest::Client,
    url: String,
    token: SecretString,
}

impl std::fmt::Debug for ArgoCd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgoCd")
            .field("url", &self.url)
            .field("token", &"[redacted]")
            .finish()
    }
}

impl ArgoCd {
    /// A client for the instance at `url` with an API `token`.
    pub fn new(url: &str, token: SecretString) -> Result<Self, ArgoCdError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(20))
            .build()?;
        Ok(Self {
            http,
            url: url.trim_end_matches('/').to_string(),
            token,
        })
    }

    /// Asks Argo CD to sync `application` to its target revision; `force` replaces what cannot be patched.
    /// Returns Argo CD's message.
    pub async fn sync(&self, application: &str, force: bool) -> Result<String, ArgoCdError> {
        // The one request Tower sends Argo CD: counted in Tower's own metrics by outcome.
        crate::telemetry::counted(
            crate::telemetry::Upstream::ArgoCd,
            self.sync_uncounted(application, force).await,
        )
    }

    async fn sync_uncounted(&self, application: &str, force: bool) -> Result<String, ArgoCdError> {
        let body = json!({
            "prune": false,
            "dryRun": false,
            "strategy": {"apply": {"force": force}},
        });
        let response = self
            .http
            .post(crate::sinks::upstream_url(
                &self.url,
                ARGOCD_API
                    .into_iter()
                    .chain(["applications", application, "sync"]),
            )?)
            .bearer_auth(self.token.expose_secret())
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        // gRPC's FailedPrecondition, which Argo CD answers while an operation runs.
        const FAILED_PRECONDITION: u64 = 9;
        if !status.is_success()
            && answer.get("code").and_then(Value::as_u64) == Some(FAILED_PRECONDITION)
        {
            return Err(ArgoCdError::OperationInProgress);
        }
        if !status.is_success() {
            return Err(ArgoCdError::Refused {
                status: status.as_u16(),
                message: answer
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message")
                    .to_string(),
            });
        }
        let phase = answer
            .pointer("/status/operationState/phase")
            .and_then(Value::as_str)
            .unwrap_or("Running");
        Ok(format!("Sync requested ({phase})"))
    }
}
