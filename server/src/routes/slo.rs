//! Service level objectives: a service's, evaluated, and the Overview's summary (`shared::api::ListSlos`,
//! `shared::api::ListSloSummaries`). Both read what the background evaluation last computed.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use shared::api::{ListSloSummaries, ListSlos};
use shared::slo::{SloSummary, SloView};

use crate::error::{Error, Result};
use crate::routes::{ApiRoutes, ready};
use crate::slo::Slos;
use crate::state::AppState;

/// How long a request to a Tower that just started waits for the first evaluation.
const FIRST_EVALUATION_WAIT: Duration = Duration::from_secs(10);

/// The SLO routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<ListSlos, _, _>(list_slos)
        .serve::<ListSloSummaries, _, _>(list_summaries)
}

async fn evaluated(state: &AppState) -> Result<&Slos> {
    let slos = state.slos.as_ref().ok_or(Error::NotConfigured("Metrics"))?;
    ready(state).await?;
    if slos.wait_until_evaluated(FIRST_EVALUATION_WAIT).await {
        Ok(slos)
    } else {
        Err(Error::Syncing("service level objectives"))
    }
}

async fn list_slos(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Vec<SloView>>> {
    Ok(Json(evaluated(&state).await?.of_service(&name)))
}

async fn list_summaries(State(state): State<AppState>) -> Result<Json<Vec<SloSummary>>> {
    Ok(Json(evaluated(&state).await?.summaries()))
}
