//! `/api/v1/services…` and the event stream `/api/v1/events`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use shared::auth::Permission;
use shared::fleet::{FLEET_EVENT_NAME, FleetEvent, ServiceSummary};
use tokio::sync::broadcast::error::RecvError;

use crate::error::{Error, Result};
use crate::routes::{Access, ApiRoutes};
use crate::state::AppState;

/// How long a request waits for the first list of a cold watch cache before answering 503.
const READY_WAIT: Duration = Duration::from_secs(5);

/// The fleet's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.get(
        "/services",
        Access::Fleet(Permission::ReadCatalog),
        list_services,
    )
    .get(
        "/services/{name}",
        Access::Service(Permission::ReadCatalog),
        get_service,
    )
    .get("/events", Access::Fleet(Permission::ReadCatalog), events)
}

async fn list_services(State(state): State<AppState>) -> Result<Json<Vec<ServiceSummary>>> {
    if !state.fleet.wait_until_ready(READY_WAIT).await {
        return Err(Error::Syncing("services"));
    }
    Ok(Json(state.fleet.services()))
}

async fn get_service(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<ServiceSummary>> {
    if !state.fleet.wait_until_ready(READY_WAIT).await {
        return Err(Error::Syncing("services"));
    }
    state
        .fleet
        .service(&name)
        .map(Json)
        .ok_or_else(|| Error::NotFound(format!("service {name}")))
}

/// One Server-Sent-Events stream per browser: a snapshot first, then deltas. A browser that falls too far
/// behind gets a new snapshot rather than a gap.
async fn events(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut deltas = state.fleet.subscribe();
    let fleet = state.fleet.clone();
    let stream = async_stream::stream! {
        if fleet.wait_until_ready(READY_WAIT).await {
            yield Ok(fleet_event(&FleetEvent::Snapshot { services: fleet.services() }));
        }
        loop {
            match deltas.recv().await {
                Ok(delta) => yield Ok(fleet_event(&delta)),
                Err(RecvError::Lagged(_)) => {
                    yield Ok(fleet_event(&FleetEvent::Snapshot { services: fleet.services() }));
                }
                Err(RecvError::Closed) => break,
            }
        }
    };
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn fleet_event(delta: &FleetEvent) -> Event {
    // Serializing our own enum of strings cannot fail; an empty object is a harmless fallback all the same.
    let data = serde_json::to_string(delta).unwrap_or_else(|_| "{}".into());
    Event::default().event(FLEET_EVENT_NAME).data(data)
}
