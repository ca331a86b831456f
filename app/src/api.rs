//! Tower's JSON API, one function per call. Every non-2xx answer becomes a typed [`ApiError`].

use gloo_net::http::{Request, Response};
use serde::de::DeserializeOwned;
use shared::fleet::ServiceSummary;
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

async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T> {
    let response = Request::get(path)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|error| {
            ApiError::new(
                ErrorCode::Unavailable,
                format!("Tower could not be reached ({error})."),
            )
        })?;
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
