//! Pipeline runs: the fleet's and a service's run lists, one run's detail, and a step's log, streamed or
//! downloaded (the endpoints `shared::api` declares as `ListPipelineRuns`, `ListServicePipelineRuns`,
//! `GetPipelineRun`, `StepLog` and `DownloadStepLog`).
//!
//! Lists come from the pipeline caches. A run's page reaches the CI cluster for its finished TaskRuns (the
//! caches keep only what the rows count of those), and a step's log for a pod that the run's TaskRun names
//! for that step of that run of that service (the request's names are compared, never sent).

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use axum::response::{IntoResponse as _, Response};
use futures::stream::BoxStream;
use futures::{AsyncBufRead, AsyncBufReadExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use serde::Deserialize;
use shared::api::{
    DownloadStepLog, GetPipelineRun, ListPipelineRuns, ListServicePipelineRuns, StepLog,
};
use shared::auth::Permission;
use shared::delivery::FieldError;
use shared::pipelines::{
    Cursor, LOG_CHUNK_EVENT, LogChunk, PipelineQuery, PipelineRunDetail, PipelineRunPage,
    RunStatus, StepLogQuery, TaskStatus, TaskView,
};

use crate::auth::CurrentUser;
use crate::error::{Error, Result};
use crate::pipelines::index::Filter;
use crate::pipelines::{Pipelines, step_started};
use crate::routes::logs::end_event;
use crate::routes::{ApiQuery, ApiRoutes, READY_WAIT};
use crate::state::AppState;

/// Lines sent in one message at most.
const CHUNK_LINES: usize = 1_000;
/// How long a line waits for others to share its message.
const CHUNK_WAIT: Duration = Duration::from_millis(50);
/// How often a followed step that has not started is looked at again.
const START_POLL: Duration = Duration::from_millis(250);
/// Longest a filter value may be: a branch name, a commit or a trigger's name.
const MAX_FILTER: usize = 255;

/// The pipeline routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<ListPipelineRuns, _, _>(list_runs)
        .serve::<ListServicePipelineRuns, _, _>(list_service_runs)
        .serve::<GetPipelineRun, _, _>(get_run)
        .serve::<StepLog, _, _>(step_log)
        .serve::<DownloadStepLog, _, _>(download_step_log)
}

/// Waits for the caches' first list, at most [`READY_WAIT`].
async fn ready(pipelines: &Pipelines) -> Result<()> {
    if pipelines.wait_until_ready(READY_WAIT).await {
        Ok(())
    } else {
        Err(Error::Syncing("pipeline runs"))
    }
}

/// The filters and cursor of `query`, each checked; empty values count as absent.
fn parse(query: PipelineQuery) -> Result<(Filter, Option<Cursor>)> {
    let given = |value: Option<String>| value.filter(|v| !v.is_empty());
    let text = |field: &'static str, value: Option<String>| -> Result<Option<String>> {
        match given(value) {
            Some(value) if value.len() > MAX_FILTER || value.chars().any(char::is_control) => {
                Err(FieldError::new(
                    field,
                    format!("At most {MAX_FILTER} characters, on one line."),
                )
                .into())
            }
            value => Ok(value),
        }
    };
    let status = match given(query.status) {
        None => None,
        Some(status) => Some(RunStatus::from_param(&status).ok_or_else(|| {
            FieldError::new(
                "status",
                format!(
                    "{status:?} is not a status; use one of {}.",
                    RunStatus::ALL.map(RunStatus::param).join(", ")
                ),
            )
        })?),
    };
    let service = given(query.service);
    if let Some(service) = &service {
        shared::delivery::validate_label("service", service)?;
    }
    let cursor = match given(query.cursor) {
        None => None,
        Some(token) => Some(Cursor::decode(&token).map_err(|_| {
            FieldError::new(
                "cursor",
                "This page link is not one Tower gave out; start again from the first page.",
            )
        })?),
    };
    Ok((
        Filter {
            service,
            status,
            revision: text("revision", query.revision)?,
            trigger: text("trigger", query.trigger)?,
        },
        cursor,
    ))
}

/// Every service's runs, newest first; `?service=` narrows it to one known service.
async fn list_runs(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<PipelineQuery>,
) -> Result<Json<PipelineRunPage>> {
    let (filter, cursor) = parse(query)?;
    ready(&state.pipelines).await?;
    if let Some(service) = &filter.service
        && state.fleet.service(service).is_none()
        && !state.pipelines.knows_service(service)
    {
        return Err(Error::NotFound(format!("service {service}")));
    }
    Ok(Json(state.pipelines.page(&filter, cursor.as_ref())))
}

/// One service's runs, newest first; the guard has found the service.
async fn list_service_runs(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ApiQuery(query): ApiQuery<PipelineQuery>,
) -> Result<Json<PipelineRunPage>> {
    let (mut filter, cursor) = parse(PipelineQuery {
        service: None,
        ..query
    })?;
    filter.service = Some(name);
    ready(&state.pipelines).await?;
    Ok(Json(state.pipelines.page(&filter, cursor.as_ref())))
}

/// One run, whole; it says whether the viewer may read its steps' logs.
async fn get_run(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path((namespace, run)): Path<(String, String)>,
) -> Result<Json<PipelineRunDetail>> {
    ready(&state.pipelines).await?;
    let mut detail = state
        .pipelines
        .detail(&namespace, &run, false)
        .await
        .map_err(|error| Error::upstream("the CI cluster", error))?
        .ok_or_else(|| Error::NotFound(format!("pipeline run {namespace}/{run}")))?;
    // As the step log routes decide it: by the owner of the run's service, which must be in the fleet.
    detail.can_read_logs = state
        .fleet
        .service(&detail.summary.service)
        .is_some_and(|service| {
            state
                .auth
                .policy
                .decide(user.as_ref(), Permission::ReadLogs, Some(&service.owner))
                .allowed()
        });
    Ok(Json(detail))
}

#[derive(Deserialize)]
struct StepPath {
    name: String,
    namespace: String,
    run: String,
    task: String,
    step: String,
}

/// One step of one run of a service, as the cache knows it.
struct Located {
    namespace: String,
    run: String,
    task: TaskView,
    step: String,
    /// When the run (else the task) finished.
    finished_at: Option<String>,
}

impl Located {
    fn container(&self) -> String {
        self.task
            .steps
            .iter()
            .find(|s| s.name == self.step)
            .map(|s| s.container.clone())
            .unwrap_or_else(|| format!("step-{}", self.step))
    }

    /// Said when the log is not to be had: the step's pod is gone.
    fn gone(&self) -> Error {
        let finished = self
            .finished_at
            .as_deref()
            .map(|at| format!(" The run finished at {at}."))
            .unwrap_or_default();
        Error::Gone(format!(
            "The pod that ran step {} of task {} is gone, and its log is no longer kept.{finished}",
            self.step, self.task.name
        ))
    }

    fn not_started(&self) -> String {
        format!(
            "Step {} of task {} has not started yet.",
            self.step, self.task.name
        )
    }
}

/// The step the path names, which must belong to a run of the service the path names.
async fn locate(pipelines: &Pipelines, path: &StepPath) -> Result<Located> {
    let detail = pipelines
        .detail(&path.namespace, &path.run, true)
        .await
        .map_err(|error| Error::upstream("the CI cluster", error))?
        .filter(|d| d.summary.service == path.name)
        .ok_or_else(|| {
            Error::NotFound(format!(
                "pipeline run {}/{} of {}",
                path.namespace, path.run, path.name
            ))
        })?;
    let task = detail
        .tasks
        .iter()
        .find(|t| t.name == path.task)
        .cloned()
        .ok_or_else(|| Error::NotFound(format!("task {} in run {}", path.task, path.run)))?;
    if task.status == TaskStatus::Skipped {
        let why = task
            .skip_reason
            .as_deref()
            .map(|reason| format!(" ({reason})"))
            .unwrap_or_default();
        return Err(FieldError::new(
            "task",
            format!("Task {} was skipped{why}, so it has no log.", task.name),
        )
        .into());
    }
    // A task that has not started has no steps listed yet; any step name may still be one of its.
    if task.task_run.is_some()
        && !task.steps.is_empty()
        && !task.steps.iter().any(|s| s.name == path.step)
    {
        return Err(Error::NotFound(format!(
            "step {} in task {}",
            path.step, path.task
        )));
    }
    Ok(Located {
        namespace: path.namespace.clone(),
        run: path.run.clone(),
        finished_at: detail
            .summary
            .finished_at
            .clone()
            .or_else(|| task.finished_at.clone()),
        step: path.step.clone(),
        task,
    })
}

type LogReader = Pin<Box<dyn AsyncBufRead + Send>>;

/// Opens the step's container log on the CI cluster; a pod the cluster no longer has is [`Located::gone`].
async fn open_log(
    pipelines: &Pipelines,
    located: &Located,
    follow: bool,
    timestamps: bool,
) -> Result<LogReader> {
    let client = pipelines
        .client()
        .cloned()
        .ok_or(Error::NotConfigured("The CI cluster"))?;
    let pod = located.task.pod.clone().ok_or_else(|| located.gone())?;
    let pods: Api<Pod> = Api::namespaced(client, &located.namespace);
    let params = LogParams {
        container: Some(located.container()),
        follow,
        timestamps,
        ..LogParams::default()
    };
    match pods.log_stream(&pod, &params).await {
        Ok(reader) => Ok(Box::pin(reader)),
        Err(kube::Error::Api(status)) if status.is_not_found() => Err(located.gone()),
        Err(error) => Err(Error::upstream("the CI cluster", error)),
    }
}

fn chunk_event(chunk: &LogChunk) -> Event {
    // Serializing our own type cannot fail; an empty object is a harmless fallback all the same.
    let data = serde_json::to_string(chunk).unwrap_or_else(|_| "{}".into());
    Event::default().event(LOG_CHUNK_EVENT).data(data)
}

fn note_event(note: String) -> Event {
    chunk_event(&LogChunk {
        lines: Vec::new(),
        note: Some(note),
    })
}

/// The log's lines in messages of up to [`CHUNK_LINES`], each sent within [`CHUNK_WAIT`] of its first line,
/// then the end event if the log ended (not if reading it failed: the browser then tries again).
fn chunks(reader: LogReader) -> BoxStream<'static, Event> {
    let lines = reader.lines();
    let batches = tokio_stream::StreamExt::chunks_timeout(lines, CHUNK_LINES, CHUNK_WAIT);
    async_stream::stream! {
        let mut batches = std::pin::pin!(batches);
        while let Some(batch) = batches.next().await {
            let mut lines = Vec::with_capacity(batch.len());
            let mut failed = None;
            for line in batch {
                match line {
                    Ok(line) => lines.push(line),
                    Err(error) => {
                        failed = Some(error);
                        break;
                    }
                }
            }
            if !lines.is_empty() {
                yield chunk_event(&LogChunk { lines, note: None });
            }
            if let Some(error) = failed {
                tracing::warn!(%error, "a step's log stopped before its end");
                return;
            }
        }
        yield end_event();
    }
    .boxed()
}

type StepStream = Sse<KeepAliveStream<BoxStream<'static, Result<Event, Infallible>>>>;

/// Streams a step's log as SSE: batches of lines, then the end. A step that has not started is waited for
/// when following, else said so; a step whose pod is gone answers 410.
async fn step_log(
    State(state): State<AppState>,
    Path(path): Path<StepPath>,
    ApiQuery(query): ApiQuery<StepLogQuery>,
) -> Result<StepStream> {
    ready(&state.pipelines).await?;
    let located = locate(&state.pipelines, &path).await?;
    let started = step_started(&located.task, &located.step);
    let events: BoxStream<'static, Event> = if started {
        let reader = open_log(&state.pipelines, &located, query.follow, true).await?;
        chunks(reader)
    } else if !query.follow {
        futures::stream::iter([note_event(located.not_started()), end_event()]).boxed()
    } else {
        let pipelines = state.pipelines.clone();
        async_stream::stream! {
            yield note_event(format!("{} Waiting for it…", located.not_started()));
            // The caches see the step start as the cluster reports it; the keep-alive holds the line open.
            let located = loop {
                tokio::time::sleep(START_POLL).await;
                match locate(&pipelines, &path).await {
                    Ok(now) if step_started(&now.task, &now.step) => break now,
                    Ok(_) => {}
                    Err(error) => {
                        yield note_event(format!("{error}"));
                        yield end_event();
                        return;
                    }
                }
            };
            match open_log(&pipelines, &located, true, true).await {
                Ok(reader) => {
                    let mut chunks = chunks(reader);
                    while let Some(event) = chunks.next().await {
                        yield event;
                    }
                }
                Err(Error::Gone(message)) => {
                    yield note_event(message);
                    yield end_event();
                }
                Err(error) => {
                    tracing::warn!(error = %crate::error::cause_chain(&error), "a followed step's log could not be opened");
                    yield note_event(format!("The log of step {} could not be read; try again.", located.step));
                }
            }
        }
        .boxed()
    };
    Ok(Sse::new(events.map(Ok).boxed()).keep_alive(KeepAlive::default()))
}

/// The step's whole log as a file, streamed as the cluster sends it.
async fn download_step_log(
    State(state): State<AppState>,
    Path(path): Path<StepPath>,
) -> Result<Response> {
    ready(&state.pipelines).await?;
    let located = locate(&state.pipelines, &path).await?;
    if !step_started(&located.task, &located.step) {
        return Err(FieldError::new(
            "step",
            format!("{} There is no log to download yet.", located.not_started()),
        )
        .into());
    }
    let reader = open_log(&state.pipelines, &located, false, false).await?;
    // The bytes as the cluster sends them, a buffer at a time; a failure ends the body (and the download).
    let body = futures::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        match reader.fill_buf().await {
            Ok([]) => None,
            Ok(buffer) => {
                let bytes = Bytes::copy_from_slice(buffer);
                reader.as_mut().consume(bytes.len());
                Some((Ok::<_, std::io::Error>(bytes), Some(reader)))
            }
            Err(error) => Some((Err(error), None)),
        }
    });
    // Every name was checked as a DNS name by the route guard: nothing in them can end the quoted string.
    let filename = format!("{}-{}-{}.log", located.run, located.task.name, located.step);
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response())
}
