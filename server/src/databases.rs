//! Databases as entities of their own: every Database on the platform (the Databases page) and one database
//! with its schema checks and the history of its DatabaseSchema in the GitOps repository (its page).
//!
//! The rows come from the fleet model ([`crate::fleet::FleetModel::database_views`], the same function a
//! service's Databases tab is built by), never from an upstream per request. Only the history reads git,
//! through the GitHub App, when a database's page opens.
//!
//! A failed check's database error text may name tables, columns and data, so it goes only to the owners of
//! a fleet service bound to that database (and admins); everyone else learns that there is one.

use futures::StreamExt as _;
use shared::auth::{AccountKind, Identity, Permission, Policy};
use shared::crd::DatabaseSchema;
use shared::databases::{DatabaseDetail, SchemaChange};
use shared::delivery::{BASE_BRANCH, schema_path};
use shared::fleet::DatabaseView;

use crate::delivery::{Delivery, forge};
use crate::error::{Error, Result};
use crate::fleet::FleetModel;
use crate::upstream::github::CommitSummary;

/// Commits per forge page.
const PER_PAGE: u32 = 100;
/// At most this many forge pages are read for one list (a schema file changes a few times a month).
const MAX_PAGES: u32 = 10;
/// Files read from the forge at once.
const CONCURRENT_READS: usize = 8;

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
/// after it and the pull request that brought it.
///
/// Release records (`delivery::releases`) answer the same question for Release files from a cache; that
/// cache reads its files as Releases and keeps its forge calls private, so this reads the same forge calls
/// through `GithubApp`'s public API, uncached: a database's page is opened far less often than the
/// Releases page.
pub async fn schema_history(
    delivery: &Delivery,
    environment: &str,
    database: &str,
) -> Result<Vec<SchemaChange>> {
    let github = delivery.github();
    let repository = delivery.repository();
    let path = schema_path(database, environment);
    let head = github
        .branch_sha(&repository, BASE_BRANCH)
        .await
        .map_err(forge("reading main"))?
        // A GitOps repository without main is Tower's configuration pointing somewhere wrong, not an unknown
        // database: a 500 whose cause goes to the log.
        .ok_or_else(|| {
            Error::Internal(anyhow::anyhow!(
                "the GitOps repository {repository} has no {BASE_BRANCH}"
            ))
        })?;
    let mut commits: Vec<CommitSummary> = Vec::new();
    for page in 1..=MAX_PAGES {
        let listed = github
            .commits_touching(&repository, &path, &head, PER_PAGE, page)
            .await
            .map_err(forge("listing schema commits"))?;
        let full = listed.len() == PER_PAGE as usize;
        commits.extend(listed);
        if !full {
            break;
        }
    }
    if commits.is_empty() {
        return Ok(Vec::new());
    }
    let pulls = merged_pulls_by_head(delivery).await?;
    let (repository_name, file) = (repository.as_str(), path.as_str());
    let shas: Vec<String> = commits.iter().map(|c| c.sha.clone()).collect();
    let versions: Vec<Option<String>> = futures::stream::iter(shas)
        .map(|sha| async move { version_at(delivery, repository_name, file, &sha).await })
        .buffered(CONCURRENT_READS)
        .collect()
        .await;
    Ok(commits
        .iter()
        .zip(versions)
        .map(|(commit, version)| {
            let view = commit.view();
            SchemaChange {
                sha: commit.sha.clone(),
                version,
                message: view.message,
                author: view.author,
                at: view.at,
                pr_number: pulls
                    .get(&commit.sha)
                    .copied()
                    .or_else(|| pull_in_merge_message(&commit.commit.message)),
            }
        })
        .collect())
}

/// The version the DatabaseSchema at `path` names at commit `sha`; `None` when the file is gone there or
/// cannot be read (logged: one unreadable commit does not hide the rest of the history).
async fn version_at(
    delivery: &Delivery,
    repository: &str,
    path: &str,
    sha: &str,
) -> Option<String> {
    match delivery.github().file(repository, path, sha).await {
        Ok(Some(text)) => match serde_saphyr::from_str::<DatabaseSchema>(&text) {
            Ok(schema) => Some(schema.spec.version),
            Err(error) => {
                tracing::warn!(%error, %sha, path, "a DatabaseSchema file does not parse");
                None
            }
        },
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(%error, %sha, path, "could not read a DatabaseSchema file");
            None
        }
    }
}

/// Merged pull requests of the GitOps repository by their head commit: the commit that touched a file is
/// the pull request's head, not the merge.
async fn merged_pulls_by_head(
    delivery: &Delivery,
) -> Result<std::collections::HashMap<String, u64>> {
    let repository = delivery.repository();
    let mut by_head = std::collections::HashMap::new();
    for page in 1..=MAX_PAGES {
        let pulls = delivery
            .github()
            .list_pulls(&repository, "closed", None, PER_PAGE, page)
            .await
            .map_err(forge("listing pull requests"))?;
        let full = pulls.len() == PER_PAGE as usize;
        for pull in pulls.into_iter().filter(|p| p.merged_at.is_some()) {
            by_head.insert(pull.head.sha, pull.number);
        }
        if !full {
            break;
        }
    }
    Ok(by_head)
}

/// The pull request a merge commit names: "Merge pull request #12 from …".
fn pull_in_merge_message(message: &str) -> Option<u64> {
    message
        .strip_prefix("Merge pull request #")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
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

    #[test]
    fn a_merge_commit_names_its_pull_request() {
        assert_eq!(
            pull_in_merge_message(
                "Merge pull request #12 from acme/tower/schema/payments/prod\n\nBody"
            ),
            Some(12)
        );
        assert_eq!(pull_in_merge_message("Publish payments schema 0003"), None);
    }
}
