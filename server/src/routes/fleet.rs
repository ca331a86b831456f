//! The fleet: services, environments, activity, the event stream and an owner's Sync (the endpoints
//! `shared::api` declares from `ListServices` to `Events`; pod logs are `routes::logs`').

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use serde::Deserialize;
use shared::api::{
    Events, FLEET_EVENT, GetService, ListActivity, ListDatabases, ListEnvironments, ListServices,
    SyncEnvironment,
};
use shared::auth::Permission;
use shared::fleet::{
    ActivityItem, DatabaseView, EnvironmentView, FleetEvent, ServiceDetail, SyncRequest,
    SyncResponse,
};
use tokio::sync::broadcast::error::RecvError;

use crate::auth::CurrentUser;
use crate::error::{Error, Result};
use crate::routes::{ApiRoutes, READY_WAIT, Serving, loaded, ready};
use crate::state::AppState;
use crate::upstream::argocd::ArgoCdError;

/// The fleet's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<ListServices, _, _>(list_services)
        .serve::<GetService, _, _>(get_service)
        .serve::<ListDatabases, _, _>(list_databases)
        .serve::<SyncEnvironment, _, _>(sync)
        .serve::<ListEnvironments, _, _>(list_environments)
        .serve::<ListActivity, _, _>(list_activity)
        .serve::<Events, _, _>(events)
}

/// Served from the list the model serialized (and gzipped) when it last changed: no work per request. Until
/// the first picture is complete it answers at once with how far it is, which the page shows and retries.
async fn list_services(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    loaded(&state)?;
    let gzip_ok = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let gzipped = state.fleet.services_json_gzip();
    if gzip_ok && !gzipped.is_empty() {
        return Ok((
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONTENT_ENCODING, "gzip"),
                (header::VARY, "accept-encoding"),
            ],
            gzipped,
        )
            .into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::VARY, "accept-encoding"),
        ],
        state.fleet.services_json(),
    )
        .into_response())
}

async fn get_service(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<ServiceDetail>> {
    ready(&state).await?;
    state
        .fleet
        .service_detail(&name)
        .map(Json)
        .ok_or_else(|| Error::NotFound(format!("service {name}")))
}

/// Database error texts only go to those who may read them (the service's owners).
async fn list_databases(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Json<Vec<DatabaseView>>> {
    ready(&state).await?;
    let owner = state.fleet.service(&name).map(|s| s.owner);
    let with_errors = state
        .auth
        .policy
        .decide(
            user.as_ref(),
            Permission::ReadDatabaseErrors,
            owner.as_deref(),
        )
        .allowed();
    Ok(Json(state.fleet.databases(&name, with_errors)))
}

async fn list_environments(State(state): State<AppState>) -> Json<Vec<EnvironmentView>> {
    let sources = state.fleet.sources();
    Json(
        sources
            .into_iter()
            .filter_map(|source| {
                Some(EnvironmentView {
                    name: source.environment.clone()?,
                    source,
                })
            })
            .collect(),
    )
}

async fn list_activity(State(state): State<AppState>) -> Json<Vec<ActivityItem>> {
    Json(state.fleet.activity())
}

#[derive(Deserialize)]
struct ServiceEnvironment {
    name: String,
    env: String,
}

async fn sync(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(ServiceEnvironment { name, env }): Path<ServiceEnvironment>,
    body: Option<Json<SyncRequest>>,
) -> Result<Json<SyncResponse>> {
    let request = body.map(|Json(b)| b).unwrap_or_default();
    let card = state
        .fleet
        .service_detail(&name)
        .and_then(|d| d.cards.into_iter().find(|c| c.environment == env))
        .ok_or_else(|| Error::NotFound(format!("service {name} in {env}")))?;
    // Each cluster's Application, through the Argo CD instance deploying there.
    let applications: Vec<(String, String)> = card
        .clusters
        .iter()
        .filter_map(|c| Some((c.name.clone(), c.application.clone()?)))
        .collect();
    if applications.is_empty() {
        return Err(Error::NotFound(format!(
            "an Argo CD application for {name} in {env}"
        )));
    }
    let login = user.map(|u| u.login).unwrap_or_default();
    let mut messages = Vec::new();
    for (cluster, application) in &applications {
        let argocd = state
            .argocd
            .get(cluster)
            .ok_or(Error::NotConfigured("Argo CD"))?;
        let message =
            argocd
                .sync(application, request.force)
                .await
                .map_err(|error| match error {
                    ArgoCdError::OperationInProgress => {
                        Error::Conflict(format!("Argo CD is already syncing {application}"))
                    }
                    error => Error::upstream("Argo CD", error),
                })?;
        tracing::info!(target: "audit", user = %login, action = "sync", target = %application, %cluster, force = request.force, "sync requested");
        messages.push(message);
    }
    Ok(Json(SyncResponse {
        application: applications
            .iter()
            .map(|(_, application)| application.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        message: messages.join(" "),
    }))
}

/// How long a browser waits before reconnecting to a Tower that is stopping: by then the listener has
/// stopped, and the load balancer sends the new connection to a replica that runs (or to this one restarted).
pub const RECONNECT_AFTER: Duration = Duration::from_secs(3);

/// One Server-Sent-Events stream per browser: a snapshot first, then deltas. A browser that falls too far
/// behind gets a new snapshot rather than a gap. When Tower stops, the stream ends cleanly after a `retry:`
/// hint, so the browser reconnects (and gets a fresh snapshot) rather than seeing a broken connection.
async fn events(
    State(state): State<AppState>,
    Extension(serving): Extension<Serving>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut deltas = state.fleet.subscribe();
    let fleet = state.fleet.clone();
    let client = serving.telemetry.sse_client();
    let shutdown = serving.shutdown;
    let stream = async_stream::stream! {
        // Counted in `tower_sse_clients` for as long as the stream lives.
        let _client = client;
        let ready = shutdown.unless_requested(fleet.wait_until_ready(READY_WAIT)).await;
        if ready == Some(true) {
            yield Ok(fleet_event(&fleet.snapshot()));
        }
        loop {
            let next = shutdown.unless_requested(deltas.recv()).await;
            match next {
                None => break,
                Some(Ok(delta)) => yield Ok(fleet_event(&delta)),
                Some(Err(RecvError::Lagged(_))) => yield Ok(fleet_event(&fleet.snapshot())),
                Some(Err(RecvError::Closed)) => break,
            }
        }
        if shutdown.is_requested() {
            yield Ok(Event::default()
                .retry(RECONNECT_AFTER)
                .comment("Tower is stopping; reconnect"));
        }
    };
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn fleet_event(delta: &FleetEvent) -> Event {
    // Serializing our own types cannot fail; an empty object is a harmless fallback all the same.
    let data = serde_json::to_string(delta).unwrap_or_else(|_| "{}".into());
    Event::default().event(FLEET_EVENT).data(data)
}
