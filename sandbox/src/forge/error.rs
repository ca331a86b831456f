//! GitHub's error bodies: `{"message", "errors"?, "documentation_url", "status"}`, so clients parse the
//! forge's failures exactly as they parse GitHub's.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Where GitHub's REST documentation starts; every error names a page under it.
pub const DOCS: &str = "https://docs.github.com/rest";

/// A 4xx or 5xx in GitHub's shape.
#[derive(Debug, Clone)]
pub struct GitHubError {
    /// The HTTP status.
    pub status: StatusCode,
    /// GitHub's `message`.
    pub message: String,
    /// GitHub's `errors` (validation details), omitted when empty.
    pub errors: Vec<Value>,
    /// GitHub's `documentation_url`.
    pub documentation_url: String,
}

/// The result of a forge operation.
pub type Result<T, E = GitHubError> = std::result::Result<T, E>;

impl GitHubError {
    /// Any status and message, documented at the REST root.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            errors: Vec::new(),
            documentation_url: DOCS.into(),
        }
    }

    /// Points the error at a page of GitHub's docs (`/git/refs#create-a-reference`).
    pub fn docs(mut self, page: &str) -> Self {
        self.documentation_url = format!("{DOCS}{page}");
        self
    }

    /// 404 Not Found, as GitHub answers for anything missing or hidden.
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not Found")
    }

    /// 401 Bad credentials: a missing, unknown or expired token.
    pub fn bad_credentials() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Bad credentials")
    }

    /// 401 for an App JWT that fails verification, with GitHub's wording for the reason.
    pub fn bad_jwt(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 403 for a call the caller's kind of token may not make.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }

    /// 400 for a body that is not JSON.
    pub fn bad_json() -> Self {
        Self::new(StatusCode::BAD_REQUEST, "Problems parsing JSON")
    }

    /// 422 Validation Failed naming the resource, field and GitHub's error code (`missing_field`,
    /// `invalid`, `already_exists`…).
    pub fn invalid(resource: &str, field: &str, code: &str) -> Self {
        Self::validation(vec![
            json!({"resource": resource, "field": field, "code": code}),
        ])
    }

    /// 422 Validation Failed with a `custom` error carrying a sentence, as GitHub reports e.g. an existing
    /// pull request for a branch.
    pub fn custom(resource: &str, field: Option<&str>, message: &str) -> Self {
        let mut error = json!({"resource": resource, "code": "custom", "message": message});
        if let (Some(field), Some(object)) = (field, error.as_object_mut()) {
            object.insert("field".into(), field.into());
        }
        Self::validation(vec![error])
    }

    /// 422 Validation Failed with the given `errors`.
    pub fn validation(errors: Vec<Value>) -> Self {
        Self {
            errors,
            ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed")
        }
    }

    /// 422 with only a message, as the git data API answers (`Reference already exists`).
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// 500: something failed inside the forge; the cause is logged, never sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(%cause, "forge request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Server Error")
    }
}

impl std::fmt::Display for GitHubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for GitHubError {}

impl From<crate::git::Error> for GitHubError {
    fn from(error: crate::git::Error) -> Self {
        Self::internal(&error)
    }
}

impl IntoResponse for GitHubError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "message": self.message,
            "documentation_url": self.documentation_url,
            "status": self.status.as_str(),
        });
        if !self.errors.is_empty()
            && let Some(object) = body.as_object_mut()
        {
            object.insert("errors".into(), Value::Array(self.errors));
        }
        (self.status, axum::Json(body)).into_response()
    }
}
