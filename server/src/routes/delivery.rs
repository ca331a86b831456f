//! Delivery: the golden paths' previews and submits, Promote and Rollback, green builds, published schema
//! versions, release records and Tower's pull requests. Every write is a pull request.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use shared::api::{
    GetRelease, ListBuilds, ListPulls, ListReleases, ListScaffolds, ListSchemaVersions,
    PreviewOnboard, PreviewPromote, PreviewRollback, PreviewTemplate, Promote, ReleaseQuery,
    Rollback, ServicePulls, SubmitOnboard, SubmitTemplate,
};
use shared::auth::Identity;
use shared::delivery::{
    AddDatabaseForm, ApplySchemaForm, BuildView, ChangePreview, CreateDeploymentForm, FieldError,
    MovePreview, OnboardForm, PROD, PullRequestView, PullState, ReleaseDetail, ReleasePage,
    Scaffold, SchemaVersionView, Template, validate_build_id, validate_environment, validate_label,
};

use crate::auth::CurrentUser;
use crate::delivery::plans::Planner;
use crate::delivery::pull::{Change, submit};
use crate::delivery::{Delivery, Error, Result};
use crate::routes::{ApiQuery, ApiRoutes, READY_WAIT, ready};
use crate::state::AppState;

/// Delivery's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<PreviewOnboard, _, _>(preview_onboard)
        .serve::<ListScaffolds, _, _>(list_scaffolds)
        .serve::<SubmitOnboard, _, _>(submit_onboard)
        .serve::<PreviewTemplate, _, _>(preview_template)
        .serve::<SubmitTemplate, _, _>(submit_template)
        .serve::<ListBuilds, _, _>(list_builds)
        .serve::<ListSchemaVersions, _, _>(list_schema_versions)
        .serve::<PreviewPromote, _, _>(preview_move::<false>)
        .serve::<Promote, _, _>(open_move::<false>)
        .serve::<PreviewRollback, _, _>(preview_move::<true>)
        .serve::<Rollback, _, _>(open_move::<true>)
        .serve::<ServicePulls, _, _>(service_pulls)
        .serve::<ListPulls, _, _>(list_pulls)
        .serve::<ListReleases, _, _>(list_releases)
        .serve::<GetRelease, _, _>(get_release)
}

fn delivery(state: &AppState) -> Result<&Delivery> {
    state
        .delivery
        .as_ref()
        .ok_or(Error::NotConfigured("Delivery (a GitHub App)"))
}

pub(crate) fn signed_in(user: Option<Identity>) -> Result<Identity> {
    // The guard lets nobody anonymous this far; say so plainly if that ever changes.
    user.ok_or(Error::Unauthenticated)
}

/// Every form field has a default, so a body missing fields parses and validation names the first one
/// at fault; only a body that is not a JSON object of the right shape is refused as a whole.
pub(crate) fn form<T: DeserializeOwned>(body: &Bytes) -> Result<T> {
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
    Template::from_slug(slug).ok_or_else(|| Error::NotFound(format!("template {slug}")))
}

/// Proposes `change` as `user`'s pull request: 201 when created, 200 when an open one of the same intent
/// was reused.
pub(crate) async fn propose(
    state: &AppState,
    change: &Change,
    user: &Identity,
) -> Result<Response> {
    let view = submit(delivery(state)?, change, &user.login).await?;
    let status = if view.reused {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(view)).into_response())
}

async fn onboard_change(
    state: &AppState,
    user: &Identity,
    slug: &str,
    body: &Bytes,
) -> Result<Change> {
    if template(slug)? != Template::OnboardService {
        return Err(Error::NotFound(format!(
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

/// The scaffold templates and versions the platform offers, as configured.
async fn list_scaffolds(State(state): State<AppState>) -> Result<Json<Vec<Scaffold>>> {
    Ok(Json(delivery(&state)?.config().scaffolds.clone()))
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
    propose(&state, &change, &user).await
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
        Template::OnboardService => Err(Error::NotFound(
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
    propose(&state, &change, &user).await
}

/// Green builds, newest first, from the PipelineRun watch cache.
async fn list_builds(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Vec<BuildView>>> {
    let delivery = delivery(&state)?;
    if !delivery.builds().wait_until_ready(READY_WAIT).await {
        return Err(Error::Syncing("pipeline runs"));
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

/// What Promote (`ROLLBACK == false`) or Rollback of prod would change, and the change itself.
async fn move_change<const ROLLBACK: bool>(
    state: &AppState,
    user: &Identity,
    name: &str,
) -> Result<(Change, MovePreview)> {
    ready(state).await?;
    let planner = Planner {
        delivery: delivery(state)?,
        fleet: &state.fleet,
        user,
    };
    if ROLLBACK {
        planner.rollback(name).await
    } else {
        planner.promote(name).await
    }
}

/// The preview of Promote or Rollback.
async fn preview_move<const ROLLBACK: bool>(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Json<MovePreview>> {
    let user = signed_in(user)?;
    Ok(Json(move_change::<ROLLBACK>(&state, &user, &name).await?.1))
}

/// Opens (or reuses) the pull request of Promote or Rollback.
async fn open_move<const ROLLBACK: bool>(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(name): Path<String>,
) -> Result<Response> {
    let user = signed_in(user)?;
    let (change, _) = move_change::<ROLLBACK>(&state, &user, &name).await?;
    propose(&state, &change, &user).await
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

/// Release records of one service (every service when none is named) in one environment (prod unless
/// named), 20 per page, newest first.
async fn list_releases(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ReleaseQuery>,
) -> Result<Json<ReleasePage>> {
    let service = query.service.filter(|s| !s.is_empty());
    if let Some(service) = &service {
        validate_label("service", service)?;
    }
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
            .page(service.as_deref(), &environment, query.cursor.as_deref())
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
