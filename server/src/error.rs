//! The server's error boundary: every handler error becomes a [`shared::ApiError`] body. 5xx bodies never
//! carry internal text; the cause is logged under a request id that the body repeats.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use shared::{ApiError, ErrorCode};

/// `Result` for handlers.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a request handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The named thing does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// A watch cache has not finished its first list yet.
    #[error("{0} is still syncing")]
    Syncing(&'static str),
    /// An input was invalid; names the field.
    #[error("{field}: {message}")]
    BadRequest {
        /// The field at fault.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The feature needs an upstream this installation does not configure.
    #[error("{0} is not configured")]
    NotConfigured(&'static str),
    /// An upstream failed; the detail goes to the log only.
    #[error("{0} failed: {1}")]
    Upstream(&'static str, String),
    /// Anything unexpected; its text goes to the log only.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
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

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            Error::NotFound(what) => (
                StatusCode::NOT_FOUND,
                ApiError::not_found(format!("{what} not found")),
            ),
            Error::Syncing(source) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!("Tower is still loading {source}; try again in a moment."),
                ),
            ),
            Error::BadRequest { field, message } => (
                StatusCode::BAD_REQUEST,
                ApiError::new(ErrorCode::BadRequest, message.clone()).with_field(*field),
            ),
            Error::NotConfigured(what) => (
                StatusCode::NOT_FOUND,
                ApiError::new(
                    ErrorCode::NotFound,
                    format!("{what} is not configured in this Tower."),
                ),
            ),
            Error::Upstream(what, detail) => {
                let request_id = next_request_id();
                tracing::error!(%request_id, upstream = what, %detail, "upstream call failed");
                let mut body = ApiError::new(
                    ErrorCode::Unavailable,
                    format!("{what} did not answer as expected; try again."),
                );
                body.request_id = Some(request_id);
                (StatusCode::BAD_GATEWAY, body)
            }
            Error::Internal(cause) => {
                let request_id = next_request_id();
                tracing::error!(%request_id, error = ?cause, "request failed");
                let mut body =
                    ApiError::new(ErrorCode::Internal, "Something went wrong on Tower's side.");
                body.request_id = Some(request_id);
                (StatusCode::INTERNAL_SERVER_ERROR, body)
            }
        };
        (status, Json(body)).into_response()
    }
}
