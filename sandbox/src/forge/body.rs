//! JSON request bodies with GitHub's failures: 400 "Problems parsing JSON" when the body isn't JSON, 422
//! naming the field when it doesn't fit the endpoint.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::GitHubError;

/// A request body type, named as GitHub names the resource in validation errors (`PullRequest`, `Blob`).
pub trait Resource {
    /// The resource's name.
    const NAME: &'static str;
}

/// A JSON body of type `T`.
pub struct Body<T>(pub T);

impl<T, S> FromRequest<S> for Body<T>
where
    T: DeserializeOwned + Resource,
    S: Send + Sync,
{
    type Rejection = GitHubError;

    async fn from_request(request: Request, state: &S) -> Result<Self, GitHubError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|_| GitHubError::bad_json())?;
        let value: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
            json!({})
        } else {
            serde_json::from_slice(&bytes).map_err(|_| GitHubError::bad_json())?
        };
        serde_json::from_value(value).map(Body).map_err(|error| {
            let text = error.to_string();
            match text
                .strip_prefix("missing field `")
                .and_then(|rest| rest.split('`').next())
            {
                Some(field) => GitHubError {
                    message: format!("Invalid request.\n\n\"{field}\" wasn't supplied."),
                    ..GitHubError::invalid(T::NAME, field, "missing_field")
                },
                None => GitHubError {
                    message: format!("Invalid request.\n\n{text}."),
                    ..GitHubError::validation(vec![
                        json!({"resource": T::NAME, "code": "invalid", "message": text}),
                    ])
                },
            }
        })
    }
}
