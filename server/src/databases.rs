//! Databases as entities of their own: every Database on the platform (the Databases page) and one database
//! with its schema checks and the history of its DatabaseSchema in the GitOps repository (its page).
//!
//! The rows come from the fleet model ([`crate::fleet::FleetModel::database_views`], the same function a
//! service's Databases tab is built by), never from an upstream per request. Only the history reads git,
//! through the GitHub App, when a database's page opens.
//!
//! A failed check's database error text may name tables, columns and data, so it goes only to the owners of
//! a fleet service bound to that database (and admins); everyone else learns that there is one.

use shared::auth::{AccountKind, Identity, Permission, Policy};
use shared::databases::{DatabaseDetail, SchemaChange};
use shared::delivery::schema_path;
use shared::fleet::DatabaseView;

use crate::delivery::Delivery;
use crate::error::Result;
use crate::fleet::FleetModel;

/// Whether `user` may read the database error texts of a database whose bound fleet services are owned by
/// `owner_teams`: the owners of any of those services may, decided by the policy per service. A database no
/// fleet service is bound to has no owners, and the policy's rule for an owner-only permission asked
/// without a service (any member of any team, meant for acting for one's own team) would show its errors to
/// everyone signed in with a team; so there only admins, who may do everything, see them.
pub fn may_read_errors(policy: &Policy, user: Option<&Identity>, owner_teams: &[String]) -> bool {
    if owner_teams.is_empty() {
        return user.is_some_and(|u| u.kind == AccountKind::Admin);
    }
    owner_teams.iter().any(|team| {
        policy
            .decide(user, Permission::ReadDatabaseErrors, Some(team))
            .allowed()
    })
}

/// Every Database on the management cluster, by environment then name, error texts as `user` may see them.
pub fn list(fleet: &FleetModel, policy: &Policy, user: Option<&Identity>) -> Vec<DatabaseView> {
    fleet.database_views(
        |_| true,
        |owner_teams| may_read_errors(policy, user, owner_teams),
    )
}

/// Database `name` in `environment` with its schema and the services bound to it, error texts as `user` may
/// see them, and its schema's history read from the GitOps repository through `delivery` (none without a
/// GitHub App). `None` when there is no such Database.
pub async fn detail(
    fleet: &FleetModel,
    policy: &Policy,
    user: Option<&Identity>,
    delivery: Option<&Delivery>,
    environment: &str,
    name: &str,
) -> Result<Option<DatabaseDetail>> {
    let Some(database) = fleet
        .database_views(
            |db| db.spec.environment == environment && db.spec.name == name,
            |owner_teams| may_read_errors(policy, user, owner_teams),
        )
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    let schema = fleet.database_schema(environment, name);
    let (published_version, migrations) = match schema.as_deref() {
        Some(schema) => (
            Some(schema.spec.version.clone()),
            schema.spec.migrations.clone(),
        ),
        None => (None, Vec::new()),
    };
    let services = database
        .bound_components
        .iter()
        .filter(|component| fleet.service(component).is_some())
        .cloned()
        .collect();
    let history = match delivery {
        Some(delivery) => schema_history(delivery, environment, name).await?,
        None => Vec::new(),
    };
    Ok(Some(DatabaseDetail {
        database,
        published_version,
        migrations,
        services,
        history,
    }))
}

/// The commits on main that changed the DatabaseSchema of `database` in `environment`
/// (`platform/environments/<env>/<db>-schema.yaml`), newest first, each with the version the file named
/// after it and the pull request that brought it, from the release records' caches.
pub async fn schema_history(
    delivery: &Delivery,
    environment: &str,
    database: &str,
) -> Result<Vec<SchemaChange>> {
    let changes = delivery
        .releases()
        .schema_history(&schema_path(database, environment))
        .await?;
    Ok(changes
        .into_iter()
        .map(|change| {
            let view = change.commit.view();
            SchemaChange {
                sha: change.commit.sha,
                version: change.version,
                message: view.message,
                author: view.author,
                at: view.at,
                pr_number: change.pr_number,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(teams: &[&str]) -> Identity {
        Identity {
            login: "ada".into(),
            name: "Ada".into(),
            kind: AccountKind::Member,
            teams: teams.iter().map(|t| (*t).to_string()).collect(),
            avatar_url: None,
        }
    }

    #[test]
    fn error_texts_go_to_owners_of_a_bound_service_and_admins_only() {
        let policy = Policy::default();
        let owners = ["payments".to_string()];
        let admin = Identity {
            kind: AccountKind::Admin,
            ..member(&[])
        };
        assert!(may_read_errors(
            &policy,
            Some(&member(&["payments"])),
            &owners
        ));
        assert!(may_read_errors(&policy, Some(&admin), &owners));
        assert!(!may_read_errors(&policy, Some(&member(&["shop"])), &owners));
        assert!(!may_read_errors(&policy, Some(&Identity::guest()), &owners));
        assert!(!may_read_errors(&policy, None, &owners));
        // Shared by two services: an owner of either may.
        let shared = ["payments".to_string(), "shop".to_string()];
        assert!(may_read_errors(&policy, Some(&member(&["shop"])), &shared));
    }

    #[test]
    fn a_database_no_fleet_service_is_bound_to_shows_its_errors_to_admins_only() {
        let policy = Policy::default();
        let admin = Identity {
            kind: AccountKind::Admin,
            ..member(&[])
        };
        assert!(!may_read_errors(&policy, Some(&member(&["payments"])), &[]));
        assert!(!may_read_errors(&policy, Some(&Identity::guest()), &[]));
        assert!(may_read_errors(&policy, Some(&admin), &[]));
    }
}
