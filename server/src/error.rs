//! The server's one error boundary: everything a request can fail with, from a handler, the permission
//! guard or the CSRF check, becomes a [`shared::ApiError`] body here and nowhere else.
//!
//! 4xx bodies say what to change. 5xx bodies never carry internal text: the cause, with its whole chain, is
//! logged under a request id that the body repeats.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use shared::delivery::FieldError;
use shared::{ApiError, ErrorCode};

use crate::upstream::github::GithubError;

/// `Result` for handlers.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nobody is signed in and the route needs someone: 401.
    #[error("sign-in required")]
    Unauthenticated,
    /// Signed in, but not allowed; the reason says who is: 403.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The named thing does not exist: 404.
    #[error("{0} not found")]
    NotFound(String),
    /// The thing existed but is gone for good (a finished step's pod, and its log with it); the sentence
    /// says so plainly: 410.
    #[error("gone: {0}")]
    Gone(String),
    /// The feature needs an upstream this installation does not configure: 404.
    #[error("{0} is not configured")]
    NotConfigured(&'static str),
    /// An input is invalid; names the field: 400. Nothing was written.
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// A file does not pass the Config check; every diagnostic goes back with its line: 422. Nothing was
    /// written.
    #[error("the file does not pass: {}", .0.first().map(ToString::to_string).unwrap_or_default())]
    Rejected(Vec<shared::config::Diagnostic>),
    /// The change asked for is already what main says, or already proposed: 409, nothing written.
    #[error("nothing to change: {0}")]
    Conflict(String),
    /// Too many writes by one user in a short time: 429, with `Retry-After` saying when the next is allowed.
    #[error("too many writes")]
    TooManyRequests {
        /// Whole seconds until the user's next write is allowed (at least 1).
        retry_after_secs: u64,
    },
    /// A watch cache has not finished its first list yet: 503.
    #[error("{0} is still syncing")]
    Syncing(&'static str),
    /// The fleet's first picture is not complete yet; the body says how far it is, and `Retry-After: 1`
    /// asks for the next look in a second: 503.
    #[error("{0}")]
    Loading(crate::fleet::Loading),
    /// An upstream (a cluster, Argo CD) failed: 502. The cause is logged, never sent.
    #[error("{upstream} failed")]
    Upstream {
        /// Which upstream, in words ("Argo CD").
        upstream: &'static str,
        /// What it said.
        #[source]
        source: anyhow::Error,
    },
    /// The forge failed before anything was written; a retry starts over: 502.
    #[error("the forge failed while {step}")]
    Forge {
        /// What Tower was doing, in words.
        step: &'static str,
        /// The cause (logged, never sent).
        #[source]
        source: Box<GithubError>,
    },
    /// The forge failed after the branch was pushed; a retry finds the branch and finishes the same pull
    /// request: 502.
    #[error("the forge failed while {step} after pushing {branch}")]
    Incomplete {
        /// What Tower was doing.
        step: &'static str,
        /// The branch already pushed.
        branch: String,
        /// The cause (logged, never sent).
        #[source]
        source: Box<GithubError>,
    },
    /// Anything unexpected: 500. Its text goes to the log only.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl Error {
    /// `upstream` failed with `source`, whose chain is kept for the log.
    pub fn upstream(
        upstream: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Upstream {
            upstream,
            source: anyhow::Error::new(source),
        }
    }

    /// The status and the body the browser sees, without logging.
    fn status_and_body(&self) -> (StatusCode, ApiError) {
        match self {
            Error::Unauthenticated => (
                StatusCode::UNAUTHORIZED,
                ApiError::new(
                    ErrorCode::Unauthenticated,
                    "Sign in first: continue as a guest or with GitHub.",
                ),
            ),
            Error::Forbidden(reason) => (
                StatusCode::FORBIDDEN,
                ApiError::new(ErrorCode::Forbidden, reason.clone()),
            ),
            Error::NotFound(what) => (
                StatusCode::NOT_FOUND,
                ApiError::not_found(format!("{what} not found")),
            ),
            Error::Gone(what) => (
                StatusCode::GONE,
                ApiError::new(ErrorCode::NotFound, what.clone()),
            ),
            Error::NotConfigured(what) => (
                StatusCode::NOT_FOUND,
                ApiError::not_found(format!("{what} is not configured in this Tower.")),
            ),
            Error::Invalid(error) => (
                StatusCode::BAD_REQUEST,
                ApiError::new(ErrorCode::BadRequest, error.message.clone()).with_field(error.field),
            ),
            Error::Rejected(diagnostics) => {
                let first = diagnostics.first();
                let mut body = ApiError::new(
                    ErrorCode::BadRequest,
                    first.map_or_else(
                        || "The file does not pass.".to_string(),
                        ToString::to_string,
                    ),
                );
                body.field = first.map(|d| d.field.clone()).filter(|f| !f.is_empty());
                body.diagnostics = diagnostics.clone();
                (StatusCode::UNPROCESSABLE_ENTITY, body)
            }
            Error::Conflict(what) => (
                StatusCode::CONFLICT,
                ApiError::new(ErrorCode::Conflict, format!("Nothing to change: {what}.")),
            ),
            Error::TooManyRequests { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                ApiError::new(
                    ErrorCode::TooManyRequests,
                    format!(
                        "Too many changes in a short time; try again in {retry_after_secs} s. Nothing was written."
                    ),
                ),
            ),
            Error::Syncing(what) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!("Tower is still loading {what}; try again in a moment."),
                ),
            ),
            Error::Loading(loading) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::new(ErrorCode::Unavailable, loading.to_string()),
            ),
            Error::Upstream { upstream, .. } => (
                StatusCode::BAD_GATEWAY,
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!("{upstream} did not answer as expected; try again."),
                ),
            ),
            Error::Forge { source, .. } | Error::Incomplete { source, .. }
                if let Some(seconds) = rate_limit_seconds(source) =>
            {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    ApiError::new(
                        ErrorCode::Unavailable,
                        match self {
                            Error::Incomplete { branch, .. } => format!(
                                "The change is pushed to branch {branch}, but GitHub's rate limit for Tower is \
                                 spent. Submit again in {seconds} s: it finishes the same pull request."
                            ),
                            _ => format!(
                                "GitHub's rate limit for Tower is spent, so nothing was written. Try again in \
                                 {seconds} s."
                            ),
                        },
                    ),
                )
            }
            Error::Forge { step, .. } => (
                StatusCode::BAD_GATEWAY,
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!(
                        "The forge failed while {step}. Nothing was written; try again in a moment."
                    ),
                ),
            ),
            Error::Incomplete { step, branch, .. } => (
                StatusCode::BAD_GATEWAY,
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!(
                        "The change is pushed to branch {branch}, but the forge failed while {step}. \
                         Submitting again is safe: it finishes the same pull request and opens no other."
                    ),
                ),
            ),
            Error::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                ApiError::new(ErrorCode::Internal, "Something went wrong on Tower's side."),
            ),
        }
    }
}

/// Ids that tie a 5xx body to its log line without revealing anything about the server.
fn next_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static STARTED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let started = *STARTED.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default()
    });
    format!("{started:x}-{:x}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The error and every cause below it, outermost first: what an operator needs and the browser never sees.
pub(crate) fn cause_chain(error: &dyn std::error::Error) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

/// `wait` as a `Retry-After` in whole seconds: rounded up and at least 1, since a client asked to come back
/// in 0 s would retry at once and be refused again.
pub(crate) fn retry_after_seconds(wait: std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// Whole seconds until GitHub lets Tower send again, when `error` is its rate limit.
fn rate_limit_seconds(error: &GithubError) -> Option<u64> {
    match error {
        GithubError::RateLimited { retry_in } => Some(retry_after_seconds(*retry_in)),
        _ => None,
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, mut body) = self.status_and_body();
        // A starting Tower is expected, not a failure: nothing to log or to look up.
        let loading = matches!(self, Error::Loading(_));
        let retry_after = match &self {
            Error::Loading(_) => Some(1),
            Error::TooManyRequests { retry_after_secs } => Some(*retry_after_secs),
            Error::Forge { source, .. } | Error::Incomplete { source, .. } => {
                rate_limit_seconds(source)
            }
            _ => None,
        };
        if status.is_server_error() && !loading {
            let request_id = next_request_id();
            tracing::error!(%request_id, error = %cause_chain(&self), "request failed");
            body.request_id = Some(request_id);
        }
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_after_is_whole_seconds_rounded_up_and_never_zero() {
        use std::time::Duration;
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(300)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(4)), 4);
        assert_eq!(retry_after_seconds(Duration::from_millis(4_001)), 5);
    }

    #[test]
    fn a_5xx_body_carries_a_request_id_and_none_of_the_cause() {
        let error = Error::upstream(
            "Argo CD",
            std::io::Error::other("token abc123 rejected by argocd-server.internal:8080"),
        );
        let (status, body) = error.status_and_body();
        assert_eq!(status, StatusCode::BAD_GATEWAY);
        assert!(!body.message.contains("abc123"));
        assert!(cause_chain(&error).contains("token abc123 rejected"));
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    }

    #[test]
    fn a_starting_fleet_answers_503_with_its_progress_and_a_retry_in_a_second() {
        let error = Error::Loading(crate::fleet::Loading::Services {
            loaded: 6_200,
            total: 10_000,
        });
        let (status, body) = error.status_and_body();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body.code, ErrorCode::Unavailable);
        assert_eq!(
            body.message,
            "Loading the fleet: 6,200 of 10,000 services loaded."
        );
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
            Some("1")
        );
    }

    #[test]
    fn nothing_to_change_is_a_conflict() {
        let (status, body) = Error::Conflict("prod already runs abc1234".into()).status_and_body();
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(body.code, ErrorCode::Conflict);
        assert!(body.request_id.is_none());
    }
}
