//! Tower's JSON API, one function per call, each through its endpoint in [`shared::api`]: the URL, the
//! method and the answer's type come from there. Every non-2xx answer becomes a typed [`ApiError`].

use gloo_net::http::{Request, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use shared::api::{self, Endpoint};
use shared::config::{EditFile, PlatformConfig, ServiceConfig};
use shared::delivery::{
    BuildView, ChangePreview, MovePreview, PullRequestView, ReleaseDetail, ReleasePage, Scaffold,
    SchemaVersionView,
};
use shared::fleet::{
    ActivityItem, DatabaseView, EnvironmentView, ServiceDetail, ServiceSummary, SyncRequest,
    SyncResponse,
};
use shared::metrics::{MetricsRange, MetricsView};
use shared::pipelines::{PipelineQuery, PipelineRunDetail, PipelineRunPage, StepLogQuery};
use shared::session::SessionInfo;
use shared::{ApiError, ErrorCode};

pub use shared::api::{LogQuery, ReleaseQuery, TemplateForm};

/// `Result` of an API call.
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// Every service of the fleet.
pub async fn list_services() -> Result<Vec<ServiceSummary>> {
    call::<api::ListServices>(&api::ListServices::url(), None).await
}

/// One service by name, with a deployment card per environment.
pub async fn get_service(name: &str) -> Result<ServiceDetail> {
    call::<api::GetService>(&api::GetService::url(name), None).await
}

/// The databases a service is bound to, in every environment.
pub async fn list_databases(service: &str) -> Result<Vec<DatabaseView>> {
    call::<api::ListDatabases>(&api::ListDatabases::url(service), None).await
}

/// Every Database in every environment, by environment then name.
pub async fn list_all_databases() -> Result<Vec<DatabaseView>> {
    call::<api::ListAllDatabases>(&api::ListAllDatabases::url(), None).await
}

/// One database: its checks (error texts only for owners of a bound service) and its schema's history.
pub async fn get_database(
    environment: &str,
    name: &str,
) -> Result<shared::databases::DatabaseDetail> {
    call::<api::GetDatabase>(&api::GetDatabase::url(environment, name), None).await
}

/// The Metrics tab of a service in one environment over `range`: every fixed query's chart and the deploys.
pub async fn get_metrics(
    service: &str,
    environment: &str,
    range: MetricsRange,
) -> Result<MetricsView> {
    call::<api::GetMetrics>(
        &api::GetMetrics::with_range(service, environment, range),
        None,
    )
    .await
}

/// A service's service level objectives in every environment, evaluated.
pub async fn list_slos(service: &str) -> Result<Vec<shared::slo::SloView>> {
    call::<api::ListSlos>(&api::ListSlos::url(service), None).await
}

/// Every service with objectives, by its worst budget: the Overview's SLO column.
pub async fn list_slo_summaries() -> Result<Vec<shared::slo::SloSummary>> {
    call::<api::ListSloSummaries>(&api::ListSloSummaries::url(), None).await
}

/// A service's Config tab: per environment, its platform files in git beside the live objects, the drift
/// between them, the operators' derived files and what runs; and the rules an edit is checked against.
pub async fn get_service_config(service: &str) -> Result<ServiceConfig> {
    call::<api::GetServiceConfig>(&api::GetServiceConfig::url(service), None).await
}

/// What an edit of one of the service's `platform/` files would write (owners only). A file that does not
/// pass is refused with 422 and its diagnostics in [`ApiError::diagnostics`].
pub async fn preview_config_edit(service: &str, edit: &EditFile) -> Result<ChangePreview> {
    let body = json(edit)?;
    call::<api::PreviewConfigEdit>(&api::PreviewConfigEdit::url(service), Some(body)).await
}

/// Opens the edit's pull request, or updates the open one of the same file (then `reused`); refused like
/// the preview.
pub async fn submit_config_edit(service: &str, edit: &EditFile) -> Result<PullRequestView> {
    let body = json(edit)?;
    call::<api::SubmitConfigEdit>(&api::SubmitConfigEdit::url(service), Some(body)).await
}

/// The platform's own configuration: Argo CD's ApplicationSets and the Applications each generated, the
/// clusters Tower reads and how their watches stand, and Tower's settings (a secret only says whether it is
/// set).
pub async fn get_platform_config() -> Result<PlatformConfig> {
    call::<api::GetPlatformConfig>(&api::GetPlatformConfig::url(), None).await
}

/// The platform as Argo CD runs it: every component and Crossplane package per cluster with its Application,
/// version, skew and last bump, the counts by standing and the Applications waiting for a CRD.
pub async fn get_platform() -> Result<shared::platform::PlatformView> {
    call::<api::GetPlatform>(&api::GetPlatform::url(), None).await
}

/// The environments and their clusters' connections.
pub async fn list_environments() -> Result<Vec<EnvironmentView>> {
    call::<api::ListEnvironments>(&api::ListEnvironments::url(), None).await
}

/// The newest things that happened, newest first.
pub async fn list_activity() -> Result<Vec<ActivityItem>> {
    call::<api::ListActivity>(&api::ListActivity::url(), None).await
}

/// Asks Argo CD to sync a service's Application in one environment (owners only; audited by the server).
pub async fn sync(service: &str, environment: &str, force: bool) -> Result<SyncResponse> {
    let body = json(&SyncRequest { force })?;
    call::<api::SyncEnvironment>(&api::SyncEnvironment::url(service, environment), Some(body)).await
}

/// What a golden path would write, without writing it: onboarding is fleet-wide, the rest per service.
pub async fn preview_template(
    service: Option<&str>,
    template: &str,
    form: &TemplateForm,
) -> Result<ChangePreview> {
    golden_path::<api::PreviewTemplate, api::PreviewOnboard>(
        service.map(|s| api::PreviewTemplate::url(s, template)),
        || api::PreviewOnboard::url(template),
        form,
    )
    .await
}

/// Opens (or updates) a golden path's pull request.
pub async fn submit_template(
    service: Option<&str>,
    template: &str,
    form: &TemplateForm,
) -> Result<PullRequestView> {
    golden_path::<api::SubmitTemplate, api::SubmitOnboard>(
        service.map(|s| api::SubmitTemplate::url(s, template)),
        || api::SubmitOnboard::url(template),
        form,
    )
    .await
}

/// Calls a golden path's step on a service (`on_service`, the URL given) or, for onboarding, fleet-wide.
async fn golden_path<OnService, Fleetwide>(
    on_service: Option<String>,
    fleetwide: impl FnOnce() -> String,
    form: &TemplateForm,
) -> Result<OnService::Response>
where
    OnService: Endpoint,
    Fleetwide: Endpoint<Response = OnService::Response>,
    OnService::Response: DeserializeOwned,
{
    let body = Some(json(form)?);
    match on_service {
        Some(url) => call::<OnService>(&url, body).await,
        None => call::<Fleetwide>(&fleetwide(), body).await,
    }
}

/// The scaffold templates and versions the platform offers for new services.
pub async fn list_scaffolds() -> Result<Vec<Scaffold>> {
    call::<api::ListScaffolds>(&api::ListScaffolds::url(), None).await
}

/// The service's green builds, newest first.
pub async fn list_builds(service: &str) -> Result<Vec<BuildView>> {
    call::<api::ListBuilds>(&api::ListBuilds::url(service), None).await
}

/// The schema versions published from the service's migrations.
pub async fn list_schema_versions(service: &str) -> Result<Vec<SchemaVersionView>> {
    call::<api::ListSchemaVersions>(&api::ListSchemaVersions::url(service), None).await
}

/// What Promote (`rollback == false`) or Rollback of prod would change.
pub async fn preview_move(service: &str, rollback: bool) -> Result<MovePreview> {
    if rollback {
        call::<api::PreviewRollback>(&api::PreviewRollback::url(service), None).await
    } else {
        call::<api::PreviewPromote>(&api::PreviewPromote::url(service), None).await
    }
}

/// Opens (or updates) the Promote (`rollback == false`) or Rollback pull request of prod.
pub async fn open_move(service: &str, rollback: bool) -> Result<PullRequestView> {
    if rollback {
        call::<api::Rollback>(&api::Rollback::url(service), None).await
    } else {
        call::<api::Promote>(&api::Promote::url(service), None).await
    }
}

/// Tower's open pull requests for one service.
pub async fn service_pulls(service: &str) -> Result<Vec<PullRequestView>> {
    call::<api::ServicePulls>(&api::ServicePulls::url(service), None).await
}

/// Tower's pull requests: open, then recently merged.
pub async fn list_pulls() -> Result<Vec<PullRequestView>> {
    call::<api::ListPulls>(&api::ListPulls::url(), None).await
}

/// One page of release records.
pub async fn list_releases(query: &ReleaseQuery) -> Result<ReleasePage> {
    call::<api::ListReleases>(&api::ListReleases::with_query(query), None).await
}

/// One release record with its diff.
pub async fn get_release(sha: &str) -> Result<ReleaseDetail> {
    call::<api::GetRelease>(&api::GetRelease::url(sha), None).await
}

/// Where the log stream of one container lives (`text/event-stream`, one
/// [`shared::logs::LogLine`] per [`api::LOG_EVENT`]).
pub fn logs_url(service: &str, environment: &str, query: &LogQuery) -> String {
    api::Logs::with_query(service, environment, query)
}

/// The pods whose logs can be read: running ones, and gone ones the log store keeps.
pub async fn list_log_pods(service: &str, environment: &str) -> Result<shared::logs::RecentPods> {
    call::<api::ListLogPods>(&api::ListLogPods::url(service, environment), None).await
}

/// One page of every service's pipeline runs, newest first.
pub async fn list_pipeline_runs(query: &PipelineQuery) -> Result<PipelineRunPage> {
    call::<api::ListPipelineRuns>(&api::ListPipelineRuns::with_query(query), None).await
}

/// One page of `service`'s pipeline runs, newest first.
pub async fn list_service_pipeline_runs(
    service: &str,
    query: &PipelineQuery,
) -> Result<PipelineRunPage> {
    call::<api::ListServicePipelineRuns>(
        &api::ListServicePipelineRuns::with_query(service, query),
        None,
    )
    .await
}

/// One pipeline run, whole: spec, tasks, steps, results.
pub async fn get_pipeline_run(namespace: &str, name: &str) -> Result<PipelineRunDetail> {
    call::<api::GetPipelineRun>(&api::GetPipelineRun::url(namespace, name), None).await
}

/// One step of a pipeline run: which service, run, task and step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRef {
    /// The service the run builds (whose owners may read its logs).
    pub service: String,
    /// The run's namespace.
    pub namespace: String,
    /// The run's name.
    pub run: String,
    /// The pipeline task.
    pub task: String,
    /// The step.
    pub step: String,
}

/// Where a step's log streams (`text/event-stream`: a [`shared::pipelines::LogChunk`] per
/// [`shared::pipelines::LOG_CHUNK_EVENT`], then [`api::LOG_END_EVENT`]).
pub fn step_log_url(step: &StepRef, follow: bool) -> String {
    api::StepLog::with_query(
        &step.service,
        &step.namespace,
        &step.run,
        &step.task,
        &step.step,
        StepLogQuery { follow },
    )
}

/// Where a step's whole log downloads as plain text.
pub fn download_step_log_url(step: &StepRef) -> String {
    api::DownloadStepLog::url(
        &step.service,
        &step.namespace,
        &step.run,
        &step.task,
        &step.step,
    )
}

/// Why a log stream could not be opened, learned by asking its URL once more as a plain request: an
/// `EventSource` reports every failure alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamRefusal {
    /// 403: the viewer may not read it.
    Forbidden(String),
    /// 410: the log is gone (the pod was deleted and nothing stored it); the server's words.
    Gone(String),
    /// Any other answer Tower gave, in words.
    Refused(String),
    /// The stream answers now: the earlier failure was the connection's.
    Available,
    /// Tower could not be reached.
    Unreachable(String),
}

/// Asks `url` (a stream) why it failed, reading only the status and an error body; a stream that answers
/// is aborted at once.
pub async fn probe_stream(url: &str) -> StreamRefusal {
    let controller = web_sys::AbortController::new().ok();
    let request = Request::get(url)
        .header("Accept", "application/json")
        .abort_signal(controller.as_ref().map(|c| c.signal()).as_ref());
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => return StreamRefusal::Unreachable(unreachable_tower(error).message),
    };
    if response.ok() {
        if let Some(controller) = controller {
            controller.abort();
        }
        return StreamRefusal::Available;
    }
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    // Errors come as `ApiError` JSON; a plain-text body is shown as it is.
    let message = serde_json::from_str::<ApiError>(&text)
        .map(|error| error.message)
        .unwrap_or_else(|_| {
            let text = text.trim();
            if text.is_empty() {
                format!("Tower answered {status}.")
            } else {
                text.to_string()
            }
        });
    match status {
        403 => StreamRefusal::Forbidden(message),
        410 => StreamRefusal::Gone(message),
        _ => StreamRefusal::Refused(message),
    }
}

/// Who is signed in, and the access policy.
pub async fn get_session() -> Result<SessionInfo> {
    call::<api::GetSession>(&api::GetSession::url(), None).await
}

/// Starts a guest session.
pub async fn continue_as_guest() -> Result<SessionInfo> {
    call::<api::ContinueAsGuest>(&api::ContinueAsGuest::url(), None).await
}

/// Ends the session.
pub async fn sign_out() -> Result<()> {
    let response = send(api::SignOut::ROUTE.method, &api::SignOut::url(), None).await?;
    if response.ok() {
        Ok(())
    } else {
        decode::<()>(response).await
    }
}

/// `value` as the JSON body of a request.
fn json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|error| {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("Could not encode the request ({error})."),
        )
    })
}

/// Calls `E` at `url` (built by `E`'s own URL function) and reads its answer as `E` declares it.
async fn call<E>(url: &str, body: Option<String>) -> Result<E::Response>
where
    E: Endpoint,
    E::Response: DeserializeOwned,
{
    decode(send(E::ROUTE.method, url, body).await?).await
}

/// Sends one request; every state-changing one carries the CSRF header.
async fn send(method: api::Method, url: &str, body: Option<String>) -> Result<Response> {
    let request = match method {
        api::Method::Get => Request::get(url),
        api::Method::Post => Request::post(url).header(api::CSRF_HEADER, "1"),
    }
    .header("Accept", "application/json");
    let request = match body {
        Some(body) => request
            .header("Content-Type", "application/json")
            .body(body),
        None => request.build(),
    };
    request
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

fn unreachable_tower(error: gloo_net::Error) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!("Tower could not be reached ({error})."),
    )
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
