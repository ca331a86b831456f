//! Tower's JSON API, one function per call. Every non-2xx answer becomes a typed [`ApiError`].

use gloo_net::http::{Request, Response};
use serde::de::DeserializeOwned;
use shared::delivery::{
    BuildView, ChangePreview, MovePreview, PullRequestView, ReleaseDetail, ReleasePage,
    SchemaVersionView,
};
use shared::fleet::{
    ActivityItem, DatabaseView, EnvironmentView, ServiceDetail, ServiceSummary, SyncResponse,
};
use shared::session::SessionInfo;
use shared::{ApiError, ErrorCode};

/// `Result` of an API call.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// Every service of the fleet.
pub async fn list_services() -> Result<Vec<ServiceSummary>> {
    get_json("/api/v1/services").await
}

/// One service by name, with a deployment card per environment.
pub async fn get_service(name: &str) -> Result<ServiceDetail> {
    get_json(&format!("/api/v1/services/{}", encode(name))).await
}

/// The databases a service is bound to, in every environment.
pub async fn list_databases(service: &str) -> Result<Vec<DatabaseView>> {
    get_json(&format!("/api/v1/services/{}/databases", encode(service))).await
}

/// The environments and their clusters' connections.
pub async fn list_environments() -> Result<Vec<EnvironmentView>> {
    get_json("/api/v1/environments").await
}

/// The newest things that happened, newest first.
pub async fn list_activity() -> Result<Vec<ActivityItem>> {
    get_json("/api/v1/activity").await
}

/// Asks Argo CD to sync a service's Application in one environment (owners only; audited by the server).
pub async fn sync(service: &str, environment: &str, force: bool) -> Result<SyncResponse> {
    // `SyncRequest { force }` as JSON, written out: one boolean needs no serializer in the first load.
    let body = if force {
        r#"{"force":true}"#
    } else {
        r#"{"force":false}"#
    };
    post_json(
        &format!(
            "/api/v1/services/{}/environments/{}/sync",
            encode(service),
            encode(environment)
        ),
        body.into(),
    )
    .await
}

/// Where a golden path's `preview` or `submit` lives: onboarding is fleet-wide, the rest per service.
pub fn template_url(service: Option<&str>, template: &str, step: &str) -> String {
    match service {
        Some(service) => format!(
            "/api/v1/services/{}/templates/{template}/{step}",
            encode(service)
        ),
        None => format!("/api/v1/templates/{template}/{step}"),
    }
}

/// What a golden path would write, without writing it.
pub async fn preview_template(url: &str, form: String) -> Result<ChangePreview> {
    post_json(url, form).await
}

/// Opens (or updates) a pull request: golden-path submits, Promote and Rollback.
pub async fn open_pull(url: &str, form: String) -> Result<PullRequestView> {
    post_json(url, form).await
}

/// The service's green builds, newest first.
pub async fn list_builds(service: &str) -> Result<Vec<BuildView>> {
    get_json(&format!("/api/v1/services/{}/builds", encode(service))).await
}

/// The schema versions published from the service's migrations.
pub async fn list_schema_versions(service: &str) -> Result<Vec<SchemaVersionView>> {
    get_json(&format!(
        "/api/v1/services/{}/schema-versions",
        encode(service)
    ))
    .await
}

/// Where Promote (`rollback == false`) or Rollback of prod lives; `/preview` is appended for its preview.
pub fn move_url(service: &str, rollback: bool) -> String {
    format!(
        "/api/v1/services/{}/{}",
        encode(service),
        if rollback { "rollback" } else { "promote" }
    )
}

/// What Promote or Rollback would change.
pub async fn preview_move(service: &str, rollback: bool) -> Result<MovePreview> {
    get_json(&format!("{}/preview", move_url(service, rollback))).await
}

/// Tower's open pull requests for one service.
pub async fn service_pulls(service: &str) -> Result<Vec<PullRequestView>> {
    get_json(&format!("/api/v1/services/{}/pulls", encode(service))).await
}

/// Tower's pull requests: open, then recently merged.
pub async fn list_pulls() -> Result<Vec<PullRequestView>> {
    get_json("/api/v1/pulls").await
}

/// One page of release records; `query` is the page's own query string (`service=…&environment=…`).
pub async fn list_releases(query: &str) -> Result<ReleasePage> {
    get_json(&format!("/api/v1/releases?{query}")).await
}

/// One release record with its diff.
pub async fn get_release(sha: &str) -> Result<ReleaseDetail> {
    get_json(&format!("/api/v1/releases/{}", encode(sha))).await
}

/// Where the log stream of one container lives (`text/event-stream`, one line per `log` event).
pub fn logs_url(service: &str, environment: &str, options: &LogOptions) -> String {
    format!(
        "/api/v1/services/{}/environments/{}/logs?pod={}&container={}&follow={}&previous={}&tail=200",
        encode(service),
        encode(environment),
        encode(&options.pod),
        encode(&options.container),
        options.follow,
        options.previous,
    )
}

/// What the log panel streams.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogOptions {
    /// The pod.
    pub pod: String,
    /// The container in it.
    pub container: String,
    /// Keep streaming new lines.
    pub follow: bool,
    /// The previous (crashed) instance of the container.
    pub previous: bool,
}

fn encode(segment: &str) -> String {
    shared::url::encode_query_value(segment)
}

/// Who is signed in, and the access policy.
pub async fn get_session() -> Result<SessionInfo> {
    get_json("/api/v1/session").await
}

/// Starts a guest session.
pub async fn continue_as_guest() -> Result<SessionInfo> {
    post_json("/api/v1/session/guest", "{}".into()).await
}

/// Ends the session.
pub async fn sign_out() -> Result<()> {
    let response = post("/api/v1/session/sign-out", "{}".into()).await?;
    if response.ok() {
        Ok(())
    } else {
        decode::<()>(response).await
    }
}

/// The header Tower's server requires on every state-changing request (its CSRF defence).
const CSRF_HEADER: &str = "x-tower-csrf";

/// POSTs `body`, a JSON document.
async fn post(path: &str, body: String) -> Result<Response> {
    Request::post(path)
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .header(CSRF_HEADER, "1")
        .body(body)
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

async fn post_json<T: DeserializeOwned>(path: &str, body: String) -> Result<T> {
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
