//! Delivery: the golden paths' previews and submits, Promote and Rollback, green builds, published schema
//! versions, release records and Tower's pull requests. Every write is a pull request.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use shared::auth::{Identity, Permission};
use shared::delivery::{
    AddDatabaseForm, ApplySchemaForm, BuildView, ChangePreview, CreateDeploymentForm, FieldError,
    MovePreview, OnboardForm, PROD, PullRequestView, PullState, ReleaseDetail, ReleasePage,
    SchemaVersionView, Template, validate_build_id, validate_environment, validate_label,
};

use crate::auth::CurrentUser;
use crate::delivery::plans::Planner;
use crate::delivery::pull::{Change, submit};
use crate::delivery::{Delivery, DeliveryError, Result};
use crate::routes::{Access, ApiRoutes};
use crate::state::AppState;

/// How long a request waits for a cold cache before answering 503.
const READY_WAIT: Duration = Duration::from_secs(10);

/// Delivery's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.post(
        "/templates/{template}/preview",
        Access::Fleet(Permission::RunTemplates),
        preview_onboard,
    )
    .post(
        "/templates/{template}/submit",
        Access::Fleet(Permission::RunTemplates),
        submit_onboard,
    )
    .post(
        "/services/{name}/templates/{template}/preview",
        Access::Service(Permission::RunTemplates),
        preview_template,
    )
    .post(
        "/services/{name}/templates/{template}/submit",
        Access::Service(Permission::RunTemplates),
        submit_template,
    )
    .get(
        "/services/{name}/builds",
        Access::Service(Permission::ReadReleases),
        list_builds,
    )
    .get(
        "/services/{name}/schema-versions",
        Access::Service(Permission::ReadReleases),
        list_schema_versions,
    )
    .get(
        "/services/{name}/promote/preview",
        Access::Service(Permission::Promote),
        preview_promote,
    )
    .post(
        "/services/{name}/promote",
        Access::Service(Permission::Promote),
        promote,
    )
    .get(
        "/services/{name}/rollback/preview",
        Access::Service(Permission::Rollback),
        preview_rollback,
    )
    .post(
        "/services/{name}/rollback",
        Access::Service(Permission::Rollback),
        rollback,
    )
    .get(
        "/services/{name}/pulls",
        Access::Service(Permission::ReadPullRequests),
        service_pulls,
    )
    .get(
        "/pulls",
        Access::Fleet(Permission::ReadPullRequests),
        list_pulls,
    )
    .get(
        "/releases",
        Access::Fleet(Permission::ReadReleases),
        list_releases,
    )
    .get(
        "/releases/{sha}",
        Access::Fleet(Permission::ReadReleases),
        get_release,
    )
}

fn delivery(state: &AppState) -> Result<&Delivery> {
    state.delivery.as_ref().ok_or_else(|| {
        DeliveryError::NotFound("delivery (this Tower has no GitHub App configured)".into())
    })
}

async fn ready(state: &AppState) -> Result<()> {
    if state.fleet.wait_until_ready(READY_WAIT).await {
        Ok(())
    } else {
        Err(DeliveryError::Syncing("services"))
    }
}

fn signed_in(user: Option<Identity>) -> Result<Identity> {
    // The guard lets nobody anonymous this far; say so plainly if that ever changes.
    user.ok_or_else(|| DeliveryError::Forbidden("Sign in first.".into()))
}

/// Every form field has a default, so a body missing fields parses and validation names the first one
/// at fault; only a body that is not a JSON object of the right shape is refused as a whole.
fn form<T: DeserializeOwned>(body: &Bytes) -> Result<T> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|error| {
        FieldError::new(
            "body",
            format!("The request body is not the form's JSON ({error})."),
        )
        .into()
    })
}

fn template(slug: &str) -> Result<Template> {
    Template::from_slug(slug).ok_or_else(|| DeliveryError::NotFound(format!("template {slug}")))
}

/// A created pull request answers 201; an open one of the same intent that was reused answers 200.
fn proposed(view: PullRequestView) -> Response {
    let status = if view.reused {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    (status, Json(view)).into_response()
}

async fn onboard_change(
    state: &AppState,
    user: &Identity,
    slug: &str,
    body: &Bytes,
) -> Result<Change> {
    if template(slug)? != Template::OnboardService {
        return Err(DeliveryError::NotFound(format!(
            "template {slug} outside a service (use /services/{{name}}/templates/{slug})"
        )));
    }
    ready(state).await?;
    let planner = Planner {
        delivery: delivery(state)?,
        fleet: &state.fleet,
        user,
    };
    planner.onboard(&form::<OnboardForm>(body)?).await
}

async fn preview_onboard(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Json<ChangePreview>> {
    let user = signed_in(user)?;
    Ok(Json(
        onboard_change(&state, &user, &slug, &body).await?.preview(),
    ))
}

async fn submit_onboard(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let user = signed_in(user)?;
    let change = onboard_change(&state, &user, &slug, &body).await?;
    Ok(proposed(
        submit(delivery(&state)?, &change, &user.login).await?,
    ))
}

#[derive(Deserialize)]
struct ServiceTemplate {
    name: String,
    template: String,
}

async fn service_change(
    state: &AppState,
    user: &Identity,
    service: &str,
    slug: &str,
    body: &Bytes,
) -> Result<Change> {
    ready(state).await?;
    let planner = Planner {
        delivery: delivery(state)?,
        fleet: &state.fleet,
        user,
    };
    match template(slug)? {
        Template::OnboardService => Err(DeliveryError::NotFound(
            "template onboard-service for an existing service (use /templates/onboard-service)"
                .into(),
        )),
        Template::CreateDeployment => {
            planner
                .create_deployment(service, &form::<CreateDeploymentForm>(body)?)
                .await
        }
        Template::AddDatabase => {
            planner
                .add_database(service, &form::<AddDatabaseForm>(body)?)
                .await
        }
        Template::ApplySchema => {
            planner
                .apply_schema(service, &form::<ApplySchemaForm>(body)?)
                .await
        }
    }
}

async fn preview_template(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(ServiceTemplate { name, template }): Path<ServiceTemplate>,
    body: Bytes,
) -> Result<Json<ChangePreview>> {
    let user = signed_in(user)?;
    Ok(Json(
        service_change(&state, &user, &name, &template, &body)
            .await?
            .preview(),
    ))
}

async fn submit_template(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(ServiceTemplate { name, template }): Path<ServiceTemplate>,
    body: Bytes,
) -> Result<Response> {
    let user = signed_in(user)?;
    let change = service_change(&state, &user, &name, &template, &body).await?;
    Ok(proposed(
        submit(delivery(&state)?, &change, &user.login).await?,
    ))
}

/// Green builds, newest first, from the PipelineRun watch cache.
async fn list_builds(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Vec<BuildView>>> {
    let delivery = delivery(&state)?;
    if !delivery.builds().wait_until_ready(READY_WAIT).await {
        return Err(DeliveryError::Syncing("pipeline runs"));
    }
    Ok(Json(delivery.builds().green(&name)))
}

/// The schema versions published from the service's migrations on main.
async fn list_schema_versions(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Json<Vec<SchemaVersionView>>> {
    ready(&state).await?;
    let user = signed_in(user)?;
    let planner = Planner {
        delivery: delivery(&state)?,
        fleet: &state.fleet,
        user: &user,
    };
    let migrations = planner.published_migrations(&name).await?;
    Ok(Json(
        migrations
            .iter()
            .enumerate()
            .filter_map(|(index, migration)| {
                Some(SchemaVersionView {
                    version: shared::delivery::schema_version_of(migration)?.to_string(),
                    migrations: migrations[..=index].to_vec(),
                })
            })
            .collect(),
    ))
}

async fn move_change(
    state: &AppState,
    user: &Identity,
    name: &str,
    rollback: bool,
) -> Result<(Change, MovePreview)> {
    ready(state).await?;
    let planner = Planner {
        delivery: delivery(state)?,
        fleet: &state.fleet,
        user,
    };
    if rollback {
        planner.rollback(name).await
    } else {
        planner.promote(name).await
    }
}

async fn preview_promote(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Json<MovePreview>> {
    let user = signed_in(user)?;
    Ok(Json(move_change(&state, &user, &name, false).await?.1))
}

async fn promote(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Response> {
    let user = signed_in(user)?;
    let (change, _) = move_change(&state, &user, &name, false).await?;
    Ok(proposed(
        submit(delivery(&state)?, &change, &user.login).await?,
    ))
}

async fn preview_rollback(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Json<MovePreview>> {
    let user = signed_in(user)?;
    Ok(Json(move_change(&state, &user, &name, true).await?.1))
}

async fn rollback(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Response> {
    let user = signed_in(user)?;
    let (change, _) = move_change(&state, &user, &name, true).await?;
    Ok(proposed(
        submit(delivery(&state)?, &change, &user.login).await?,
    ))
}

/// Tower's open pull requests for this service (each card shows those for its environment).
async fn service_pulls(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Vec<PullRequestView>>> {
    let pulls = delivery(&state)?.pulls().await?;
    Ok(Json(
        pulls
            .into_iter()
            .filter(|p| p.state == PullState::Open && p.service.as_deref() == Some(name.as_str()))
            .collect(),
    ))
}

/// The PRs tab: Tower's open pull requests with checks and mergeability, then the recently merged.
async fn list_pulls(State(state): State<AppState>) -> Result<Json<Vec<PullRequestView>>> {
    Ok(Json(delivery(&state)?.pulls().await?))
}

#[derive(Deserialize)]
struct ReleaseQuery {
    service: Option<String>,
    environment: Option<String>,
    cursor: Option<String>,
}

/// Release records of one service in one environment (prod unless named), 20 per page, newest first.
async fn list_releases(
    State(state): State<AppState>,
    Query(query): Query<ReleaseQuery>,
) -> Result<Json<ReleasePage>> {
    let service = query.service.unwrap_or_default();
    validate_label("service", &service)?;
    let environment = query.environment.unwrap_or_else(|| PROD.to_string());
    let environments = state.fleet.environments();
    validate_environment("environment", &environment, &environments)?;
    if let Some(cursor) = &query.cursor {
        validate_build_id("cursor", cursor)?;
    }
    let delivery = delivery(&state)?;
    Ok(Json(
        delivery
            .releases()
            .page(&service, &environment, query.cursor.as_deref())
            .await?,
    ))
}

/// One release record with its diff.
async fn get_release(
    State(state): State<AppState>,
    Path(sha): Path<String>,
) -> Result<Json<ReleaseDetail>> {
    validate_build_id("sha", &sha)?;
    Ok(Json(delivery(&state)?.releases().detail(&sha).await?))
}
