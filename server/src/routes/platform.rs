//! The Platform page's route: the platform's own components and Crossplane packages per cluster, read from
//! the Applications' watch cache, with each component file's last bump from git (see [`crate::platform`]).

use axum::Json;
use axum::extract::State;
use shared::api::GetPlatform;
use shared::platform::PlatformView;

use crate::error::Result;
use crate::routes::{ApiRoutes, ready};
use crate::state::AppState;

/// The Platform page's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<GetPlatform, _, _>(get_platform)
}

async fn get_platform(State(state): State<AppState>) -> Result<Json<PlatformView>> {
    ready(&state).await?;
    // The columns follow the configuration's order (management first), with each cluster's environment.
    let sources = state.fleet.sources();
    let clusters: Vec<(String, Option<String>)> = state
        .platform_settings
        .connections
        .iter()
        .map(|(name, _)| {
            let environment = sources
                .iter()
                .find(|s| &s.cluster == name)
                .and_then(|s| s.environment.clone());
            (name.clone(), environment)
        })
        .collect();
    let mut view = state.fleet.platform_view(&clusters);
    if let Some(delivery) = &state.delivery {
        crate::platform::fill_bumps(&mut view, delivery.releases()).await;
    }
    Ok(Json(view))
}
