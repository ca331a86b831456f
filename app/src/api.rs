//! Tower's JSON API, one function per call. Every non-2xx answer becomes a typed [`ApiError`].

use gloo_net::http::{Request, Response};
use serde::de::DeserializeOwned;
use shared::fleet::ServiceSummary;
use shared::session::SessionInfo;
use shared::{ApiError, ErrorCode};

/// `Result` of an API call.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// Every service of the fleet.
pub async fn list_services() -> Result<Vec<ServiceSummary>> {
    get_json("/api/v1/services").await
}

/// One service by name.
pub async fn get_service(name: &str) -> Result<ServiceSummary> {
    get_json(&format!("/api/v1/services/{name}")).await
}

/// Who is signed in, and the access policy.
pub async fn get_session() -> Result<SessionInfo> {
    get_json("/api/v1/session").await
}

/// Starts a guest session.
pub async fn continue_as_guest() -> Result<SessionInfo> {
    post_json("/api/v1/session/guest", &serde_json::json!({})).await
}

/// Ends the session.
pub async fn sign_out() -> Result<()> {
    let response = post("/api/v1/session/sign-out", &serde_json::json!({})).await?;
    if response.ok() {
        Ok(())
    } else {
        decode::<()>(response).await
    }
}

/// The header Tower's server requires on every state-changing request (its CSRF defence).
const CSRF_HEADER: &str = "x-tower-csrf";

async fn post(path: &str, body: &serde_json::Value) -> Result<Response> {
    Request::post(path)
        .header("Accept", "application/json")
        .header(CSRF_HEADER, "1")
        .json(body)
        .map_err(|error| {
            ApiError::new(
                ErrorCode::BadRequest,
                format!("Could not encode the request ({error})."),
            )
        })?
        .send()
        .await
        .map_err(unreachable_tower)
}

async fn post_json<T: DeserializeOwned>(path: &str, body: &serde_json::Value) -> Result<T> {
    decode(post(path, body).await?).await
}

fn unreachable_tower(error: gloo_net::Error) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!("Tower could not be reached ({error})."),
    )
}

async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T> {
    let response = Request::get(path)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(unreachable_tower)?;
    decode(response).await
}

async fn decode<T: DeserializeOwned>(response: Response) -> Result<T> {
    if response.ok() {
        return response.json::<T>().await.map_err(|error| {
            ApiError::new(
                ErrorCode::Internal,
                format!("Tower answered with something unexpected ({error})."),
            )
        });
    }
    let status = response.status();
    match response.json::<ApiError>().await {
        Ok(error) => Err(error),
        Err(_) => Err(ApiError::new(
            if status >= 500 {
                ErrorCode::Internal
            } else {
                ErrorCode::BadRequest
            },
            format!("Tower answered {status}."),
        )),
    }
}
