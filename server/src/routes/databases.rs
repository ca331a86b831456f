//! Databases as entities: every Database on the platform, and one database's page (the endpoints
//! `shared::api` declares as `ListAllDatabases` and `GetDatabase`). A service's own Databases tab is
//! `routes::fleet`'s `ListDatabases`; both are built by the same fleet function.

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use shared::api::{GetDatabase, ListAllDatabases};
use shared::databases::DatabaseDetail;
use shared::fleet::DatabaseView;

use crate::auth::CurrentUser;
use crate::databases;
use crate::error::{Error, Result};
use crate::routes::{ApiRoutes, ready};
use crate::state::AppState;

/// The databases' routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<ListAllDatabases, _, _>(list_all_databases)
        .serve::<GetDatabase, _, _>(get_database)
}

/// From the watch cache: listing costs the clusters nothing.
async fn list_all_databases(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<Json<Vec<DatabaseView>>> {
    ready(&state).await?;
    Ok(Json(databases::list(
        &state.fleet,
        &state.auth.policy,
        user.as_ref(),
    )))
}

/// `{env}` and `{database}` are DNS labels by now: the route guard refused anything else before this runs.
#[derive(Deserialize)]
struct DatabasePath {
    env: String,
    database: String,
}

async fn get_database(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(DatabasePath { env, database }): Path<DatabasePath>,
) -> Result<Json<DatabaseDetail>> {
    ready(&state).await?;
    databases::detail(
        &state.fleet,
        &state.auth.policy,
        user.as_ref(),
        state.delivery.as_ref(),
        &env,
        &database,
    )
    .await?
    .map(Json)
    .ok_or_else(|| Error::NotFound(format!("database {database} in {env}")))
}
