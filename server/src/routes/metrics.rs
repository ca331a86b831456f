//! A service's metrics in one environment: the fixed queries of the Metrics tab with its deploys marked
//! (`shared::api::GetMetrics`).

use axum::Json;
use axum::extract::{Path, State};
use shared::api::GetMetrics;
use shared::delivery::FieldError;
use shared::metrics::{MetricsParams, MetricsRange, MetricsView};

use crate::error::{Error, Result};
use crate::routes::{ApiQuery, ApiRoutes, ready};
use crate::state::AppState;

/// The metrics routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<GetMetrics, _, _>(get_metrics)
}

/// The guard has checked that the service exists and that both names are labels; the environment must be
/// one of the fleet's, so the PromQL only ever names what the fleet knows.
async fn get_metrics(
    State(state): State<AppState>,
    Path((name, env)): Path<(String, String)>,
    ApiQuery(params): ApiQuery<MetricsParams>,
) -> Result<Json<MetricsView>> {
    let range = match params.range.as_deref() {
        None => MetricsRange::default(),
        Some(text) => MetricsRange::parse(text).ok_or_else(|| {
            FieldError::new(
                "range",
                format!(
                    "{text:?} is not a range; use one of {}.",
                    MetricsRange::ALL.map(MetricsRange::param).join(", ")
                ),
            )
        })?,
    };
    let metrics = state
        .metrics
        .as_ref()
        .ok_or(Error::NotConfigured("Metrics"))?;
    ready(&state).await?;
    if !state.fleet.environments().contains(&env) {
        return Err(Error::NotFound(format!("environment {env}")));
    }
    let now = jiff::Timestamp::now();
    let charts = metrics.charts(&name, &env, range, now).await;
    let deploys = state
        .fleet
        .deploy_markers(&name, &env)
        .into_iter()
        .filter(|deploy| (charts.start..=charts.end).contains(&deploy.at))
        .collect();
    Ok(Json(MetricsView {
        service: name,
        environment: env,
        range,
        start: charts.start,
        end: charts.end,
        step: charts.step,
        charts: charts.charts,
        deploys,
    }))
}
