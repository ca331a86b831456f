//! The one error body the browser ever sees.

use serde::{Deserialize, Serialize};

/// What kind of failure an [`ApiError`] reports; the browser decides how to present it from this alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request was malformed or a field was invalid; `field` names it.
    BadRequest,
    /// Nobody is signed in.
    Unauthenticated,
    /// Signed in, but not allowed.
    Forbidden,
    /// The thing asked for does not exist.
    NotFound,
    /// Nothing to do: what was asked for is already so (already on main, already proposed).
    Conflict,
    /// Too many writes in a short time.
    TooManyRequests,
    /// Something failed on our side or upstream; the message carries no internal detail.
    Internal,
    /// An upstream (a cluster, Argo CD, the forge) could not be reached.
    Unavailable,
}

/// The error body of every non-2xx API response: 4xx explain what to change, 5xx only say that something
/// failed and carry a request id to find the cause in the logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The kind of failure.
    pub code: ErrorCode,
    /// A sentence for a person.
    pub message: String,
    /// The input field at fault, when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Everything wrong with a file, with lines and columns (a Config edit that does not pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<crate::config::Diagnostic>,
    /// The id under which the server logged the cause (5xx only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ApiError {
    /// An error of `code` with `message` and no field.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            field: None,
            diagnostics: Vec::new(),
            request_id: None,
        }
    }

    /// A 404 for `what`.
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, what)
    }

    /// Names the input field at fault.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
}
