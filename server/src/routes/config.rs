//! Config: a service's platform resources as git intent beside live state, an owner's edit of one
//! `platform/` file, previewed and proposed as a pull request, and the platform's own configuration (see
//! [`crate::config_view`]).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use shared::api::{GetPlatformConfig, GetServiceConfig, PreviewConfigEdit, SubmitConfigEdit};
use shared::config::{EditFile, PlatformConfig, ServiceConfig};
use shared::delivery::ChangePreview;

use crate::auth::CurrentUser;
use crate::config_view::{edit_change, platform_config, service_config};
use crate::error::Result;
use crate::routes::delivery::{form, propose, signed_in};
use crate::routes::{ApiRoutes, ready};
use crate::state::AppState;

/// Config's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<GetServiceConfig, _, _>(get_service_config)
        .serve::<PreviewConfigEdit, _, _>(preview_edit)
        .serve::<SubmitConfigEdit, _, _>(submit_edit)
        .serve::<GetPlatformConfig, _, _>(get_platform_config)
}

async fn get_platform_config(State(state): State<AppState>) -> Result<Json<PlatformConfig>> {
    ready(&state).await?;
    Ok(Json(platform_config(&state)))
}

async fn get_service_config(
    State(state): State<AppState>,
    Path(service): Path<String>,
) -> Result<Json<ServiceConfig>> {
    ready(&state).await?;
    Ok(Json(service_config(&state, &service).await?))
}

async fn preview_edit(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(service): Path<String>,
    body: Bytes,
) -> Result<Json<ChangePreview>> {
    let user = signed_in(user)?;
    ready(&state).await?;
    let edit: EditFile = form(&body)?;
    Ok(Json(
        edit_change(&state, &user, &service, &edit).await?.preview(),
    ))
}

async fn submit_edit(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(service): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let user = signed_in(user)?;
    ready(&state).await?;
    let edit: EditFile = form(&body)?;
    let change = edit_change(&state, &user, &service, &edit).await?;
    propose(&state, &change, &user).await
}
