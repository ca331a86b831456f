//! The Databases page and a database's page: every Database from the watch cache, one database's checks and
//! the history of its schema in git, error texts by role, and the cell problems the fixtures produce.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::Method;
use shared::api as contract;
use shared::auth::{AccountKind, Identity};
use shared::databases::DatabaseDetail;
use shared::fleet::{CellProblem, DatabaseView, ServiceSummary};

use crate::{Role, TestApp, body_text, eventually};

/// `GET path` as `who` (anonymous for `None`): the status and the body as sent.
async fn get_as(app: &TestApp, who: Option<&Identity>, path: &str) -> (u16, String) {
    let cookie = who.map(|identity| app.session_cookie(identity.clone()));
    let headers: Vec<(&str, &str)> = cookie
        .as_deref()
        .map(|c| vec![("cookie", c)])
        .unwrap_or_default();
    let response = app.get(path, &headers).await;
    let status = response.status().as_u16();
    (status, body_text(response).await)
}

fn member(login: &str, team: &str) -> Identity {
    Identity {
        login: login.into(),
        name: login.into(),
        kind: AccountKind::Member,
        teams: vec![team.into()],
        avatar_url: None,
    }
}

fn admin() -> Identity {
    Identity {
        login: "root".into(),
        name: "root".into(),
        kind: AccountKind::Admin,
        teams: Vec::new(),
        avatar_url: None,
    }
}

async fn list_as(app: &TestApp, who: &Identity) -> (Vec<DatabaseView>, String) {
    let (status, body) = get_as(app, Some(who), &contract::ListAllDatabases::url()).await;
    assert_eq!(status, 200, "{body}");
    (serde_json::from_str(&body).unwrap(), body)
}

async fn detail_as(
    app: &TestApp,
    who: &Identity,
    environment: &str,
    name: &str,
) -> (DatabaseDetail, String) {
    let (status, body) = get_as(
        app,
        Some(who),
        &contract::GetDatabase::url(environment, name),
    )
    .await;
    assert_eq!(status, 200, "{environment}/{name}: {body}");
    (serde_json::from_str(&body).unwrap(), body)
}

/// The Databases the sandbox's plan gives its services: (environment, name).
fn planned_databases() -> BTreeSet<(String, String)> {
    sandbox::world::SERVICES
        .iter()
        .filter(|plan| plan.database)
        .flat_map(|plan| {
            sandbox::world::ENVIRONMENTS
                .iter()
                .map(|env| ((*env).to_string(), plan.name.to_string()))
        })
        .collect()
}

#[tokio::test]
async fn every_database_is_listed_by_environment_then_name_as_its_services_tab_shows_it() {
    let app = TestApp::start().await;
    let guest = Identity::guest();
    // The code's migrations are read in the background; payments prod knows it is behind once they are in.
    let databases = eventually(Duration::from_secs(15), || async {
        let (databases, _) = list_as(&app, &guest).await;
        databases
            .iter()
            .any(|d| d.environment == "prod" && d.name == "payments" && d.code_version.is_some())
            .then_some(databases)
    })
    .await
    .expect("payments prod's code version arrives");

    let keys: Vec<(String, String)> = databases
        .iter()
        .map(|d| (d.environment.clone(), d.name.clone()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "by environment, then name");
    // Exactly what the management cluster holds, which is at least what the plan gives the services.
    let mut on_the_cluster = app.fleet.database_names();
    on_the_cluster.sort();
    assert_eq!(keys, on_the_cluster);
    let listed: BTreeSet<(String, String)> = keys.into_iter().collect();
    let missing: Vec<_> = planned_databases().difference(&listed).cloned().collect();
    assert!(
        missing.is_empty(),
        "fixtures missing from the list: {missing:?}"
    );

    let find = |environment: &str, name: &str| {
        databases
            .iter()
            .find(|d| d.environment == environment && d.name == name)
            .unwrap_or_else(|| panic!("{environment}/{name} is listed"))
    };
    let payments_prod = find("prod", "payments");
    assert!(payments_prod.available);
    assert!(
        payments_prod
            .endpoint
            .as_deref()
            .is_some_and(|e| e.ends_with(":5432")),
        "{payments_prod:?}"
    );
    assert_eq!(payments_prod.engine, "postgres");
    assert_eq!(payments_prod.size, "medium");
    assert_eq!(payments_prod.bound_components, ["payments"]);
    // Prod runs code that ships 0004 against a database at 0003.
    assert_eq!(payments_prod.applied_version.as_deref(), Some("0003"));
    assert_eq!(payments_prod.code_version.as_deref(), Some("0004"));
    assert!(!payments_prod.up_to_date);
    assert!(!payments_prod.checks.is_empty());
    let ledger_dev = find("dev", "ledger");
    assert_eq!(ledger_dev.size, "small");
    assert!(ledger_dev.up_to_date, "{ledger_dev:?}");

    // One function builds both lists: each service's Databases tab shows its rows exactly as the page does.
    for plan in sandbox::world::SERVICES.iter().filter(|p| p.database) {
        let (status, body) =
            get_as(&app, Some(&guest), &contract::ListDatabases::url(plan.name)).await;
        assert_eq!(status, 200, "{body}");
        let tab: Vec<DatabaseView> = serde_json::from_str(&body).unwrap();
        assert!(!tab.is_empty(), "{} has databases", plan.name);
        for row in &tab {
            let on_the_page = find(&row.environment, &row.name);
            // The code's facts may have moved between the two reads; everything else is the same row.
            assert_eq!(
                (&row.checks, &row.bound_components, &row.endpoint),
                (
                    &on_the_page.checks,
                    &on_the_page.bound_components,
                    &on_the_page.endpoint
                ),
                "{}/{}",
                row.environment,
                row.name
            );
        }
    }
}

#[tokio::test]
async fn a_database_page_shows_every_check_its_published_schema_and_the_history_of_its_schema_file()
{
    let app = TestApp::start().await;
    let guest = Identity::guest();
    let (detail, _) = detail_as(&app, &guest, "prod", "payments").await;

    // The checks and the published version are the DatabaseSchema's, as the watch cache has it.
    let schema = app
        .fleet
        .database_schema("prod", "payments")
        .expect("payments prod has a DatabaseSchema");
    assert_eq!(
        detail.published_version.as_deref(),
        Some(schema.spec.version.as_str())
    );
    assert_eq!(detail.migrations, schema.spec.migrations);
    let checks: Vec<(String, String)> = schema
        .status
        .as_ref()
        .map(|s| {
            s.checks
                .iter()
                .map(|c| (c.name.clone(), format!("{:?}", c.state)))
                .collect()
        })
        .unwrap_or_default();
    let shown: Vec<(String, String)> = detail
        .database
        .checks
        .iter()
        .map(|c| (c.name.clone(), c.state.clone()))
        .collect();
    assert!(!shown.is_empty());
    assert_eq!(shown, checks, "every check with its state");
    assert_eq!(detail.services, ["payments"]);
    assert_eq!(
        (
            detail.database.environment.as_str(),
            detail.database.name.as_str()
        ),
        ("prod", "payments")
    );

    // The history: the commits that changed platform/environments/prod/payments-schema.yaml, newest first.
    let history = &detail.history;
    assert!(
        history.len() >= 2,
        "onboarding and at least one publish: {history:?}"
    );
    assert_eq!(
        history[0].version, detail.published_version,
        "the newest change set what is published"
    );
    for change in history {
        assert_eq!(change.sha.len(), 40, "{change:?}");
        assert!(
            !change.message.is_empty() && !change.author.is_empty(),
            "{change:?}"
        );
        assert!(
            change.version.is_some(),
            "every version is readable: {change:?}"
        );
        assert!(
            change.pr_number.is_some(),
            "schemas change through pull requests: {change:?}"
        );
    }
    let times: Vec<jiff::Timestamp> = history.iter().map(|c| c.at.parse().unwrap()).collect();
    assert!(
        times.windows(2).all(|pair| pair[0] >= pair[1]),
        "newest first: {times:?}"
    );
    let versions: Vec<&str> = history
        .iter()
        .filter_map(|c| c.version.as_deref())
        .collect();
    assert!(
        versions.windows(2).all(|pair| pair[0] >= pair[1]),
        "the prod schema only moved forward: {versions:?}"
    );
    assert!(
        history
            .iter()
            .any(|c| c.message.contains("Onboard payments")),
        "{history:?}"
    );
    // The same commits, in the same order, as git's own log of the file, each with the version the file
    // names at that commit.
    let path = shared::delivery::schema_path("payments", "prod");
    let git = app.sandbox.repositories().git("application-repositories");
    let log = git
        .run(&["log", "--format=%H", "main", "--", &path])
        .unwrap();
    let shas: Vec<&str> = history.iter().map(|c| c.sha.as_str()).collect();
    assert_eq!(shas, log.lines().collect::<Vec<_>>());
    for change in history {
        let text = git
            .run(&["show", &format!("{}:{path}", change.sha)])
            .unwrap();
        let file: shared::crd::DatabaseSchema = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(change.version.as_deref(), Some(file.spec.version.as_str()));
    }
}

/// Where the fixtures put a failed schema check with a database error: (environment, database, check,
/// error text), read as an admin, who sees every error text.
async fn failed_check(app: &TestApp) -> (String, String, String, String) {
    eventually(Duration::from_secs(20), || async {
        let (databases, _) = list_as(app, &admin()).await;
        databases.into_iter().find_map(|db| {
            let check = db
                .checks
                .iter()
                .find(|c| c.state == "Failed" && c.error.is_some())?;
            Some((
                db.environment.clone(),
                db.name.clone(),
                check.name.clone(),
                check.error.clone()?,
            ))
        })
    })
    .await
    .expect("the fixtures have a DatabaseSchema with a Failed check and its error text")
}

#[tokio::test]
async fn a_failed_checks_error_text_goes_only_to_owners_of_a_service_bound_to_its_database() {
    let app = TestApp::start().await;
    let (environment, database, check, error) = failed_check(&app).await;

    // Who owns the services bound to it.
    let (_, detail_body) = detail_as(&app, &admin(), &environment, &database).await;
    let detail: DatabaseDetail = serde_json::from_str(&detail_body).unwrap();
    assert!(
        !detail.services.is_empty(),
        "{environment}/{database} is bound to a fleet service"
    );
    let services: Vec<ServiceSummary> = {
        let (status, body) = get_as(&app, Some(&admin()), &contract::ListServices::url()).await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };
    let owner_teams: BTreeSet<String> = services
        .iter()
        .filter(|s| detail.services.contains(&s.name))
        .map(|s| s.owner.clone())
        .collect();
    let owner_team = owner_teams.first().expect("a bound service has an owner");
    let other_team = sandbox::world::TEAMS
        .iter()
        .map(|t| t.slug)
        .find(|t| !owner_teams.contains(*t))
        .expect("a team that owns none of the bound services");

    let owner = member("owner", owner_team);
    let other = member("other", other_team);
    let guest = Identity::guest();
    println!(
        "{environment}/{database}: '{check}' failed; owners {owner_teams:?}, another team {other_team}"
    );

    let admin = admin();
    for (who, sees) in [
        (&owner, true),
        (&admin, true),
        (&guest, false),
        (&other, false),
    ] {
        let label = format!("{} of {:?}", who.login, who.teams);
        let (databases, list_body) = list_as(&app, who).await;
        let (detail, detail_body) = detail_as(&app, who, &environment, &database).await;
        let in_list = databases
            .iter()
            .find(|d| d.environment == environment && d.name == database)
            .expect("listed");
        for (endpoint, view, body) in [
            ("list", in_list, &list_body),
            ("page", &detail.database, &detail_body),
        ] {
            let shown = view
                .checks
                .iter()
                .find(|c| c.name == check)
                .expect("the failed check is there for everyone");
            assert_eq!(shown.state, "Failed", "{label}, {endpoint}");
            if sees {
                assert_eq!(
                    shown.error.as_deref(),
                    Some(error.as_str()),
                    "{label}, {endpoint}"
                );
                assert!(!shown.error_hidden, "{label}, {endpoint}");
            } else {
                assert_eq!(shown.error, None, "{label}, {endpoint}");
                assert!(shown.error_hidden, "{label}, {endpoint}");
                assert!(
                    !body.contains(&error),
                    "{label}, {endpoint}: the error text is nowhere in the body"
                );
                // No database's error text reaches them, on the list or the page.
                assert!(
                    view.checks.iter().all(|c| c.error.is_none()),
                    "{label}, {endpoint}"
                );
            }
        }
        // Whatever they may see of this database, they see no error text of a database whose services are
        // owned by others.
        for db in &databases {
            let owned_here = services
                .iter()
                .filter(|s| db.bound_components.contains(&s.name))
                .any(|s| who.in_team(&s.owner));
            if !owned_here && who.kind != AccountKind::Admin {
                assert!(
                    db.checks.iter().all(|c| c.error.is_none()),
                    "{label}: {}/{}",
                    db.environment,
                    db.name
                );
            }
        }
    }

    // Nobody signed in learns anything.
    for path in [
        contract::ListAllDatabases::url(),
        contract::GetDatabase::url(&environment, &database),
    ] {
        let (status, body) = get_as(&app, None, &path).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert!(!body.contains(&error));
    }
}

#[tokio::test]
async fn an_unknown_database_is_not_found_and_a_name_that_is_not_a_label_never_reaches_a_lookup() {
    let app = TestApp::start().await;
    let guest = Identity::guest();
    for (environment, name) in [("prod", "no-such-database"), ("staging", "payments")] {
        let path = contract::GetDatabase::url(environment, name);
        let (status, body) = get_as(&app, Some(&guest), &path).await;
        assert_eq!(status, 404, "{path}: {body}");
        let error: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["code"], "not_found", "{body}");
        assert!(
            error["message"].as_str().is_some_and(|m| m.contains(name)),
            "{body}"
        );
    }
    for (environment, name, field) in [
        ("prod", "Payments", "database"),
        ("prod", "pay_ments", "database"),
        ("prod", "-payments", "database"),
        ("prod", "payments\"}", "database"),
        ("prod", "../payments", "database"),
        ("PROD", "payments", "env"),
        ("prod env", "payments", "env"),
    ] {
        let path = contract::GetDatabase::url(environment, name);
        let (status, body) = get_as(&app, Some(&guest), &path).await;
        assert_eq!(status, 400, "{path}: {body}");
        let error: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["field"], field, "{path}: {body}");
    }
}

#[tokio::test]
async fn database_pages_cost_the_clusters_and_argo_cd_nothing() {
    let app = TestApp::start().await;
    let guest = Identity::guest();
    // The first picture, with the code's facts, is in.
    eventually(Duration::from_secs(15), || async {
        let (databases, _) = list_as(&app, &guest).await;
        databases
            .iter()
            .any(|d| d.code_version.is_some())
            .then_some(())
    })
    .await
    .expect("code versions arrive");
    let before = crate::settled_upstream_requests(&app).await;
    let planned: Vec<(String, String)> = planned_databases().into_iter().collect();
    for view in 0..20 {
        let (environment, name) = &planned[view % planned.len()];
        list_as(&app, &guest).await;
        detail_as(&app, &guest, environment, name).await;
    }
    assert_eq!(
        crate::upstream_requests(&app),
        before,
        "database pages reached a cluster or Argo CD"
    );
}

#[tokio::test]
async fn the_fixtures_show_every_cell_problem_in_the_service_list() {
    let app = TestApp::start().await;
    let cell_problems = |services: &[ServiceSummary], service: &str, environment: &str| {
        services
            .iter()
            .find(|s| s.name == service)
            .and_then(|s| s.environments.iter().find(|c| c.environment == environment))
            .map(|c| c.problems.clone())
            .unwrap_or_default()
    };
    // Schema behind needs the code's migrations, which are read in the background.
    let services = eventually(Duration::from_secs(15), || async {
        let response = app
            .send_as(&Role::Guest, Method::GET, &contract::ListServices::url())
            .await;
        assert_eq!(response.status(), 200);
        let services: Vec<ServiceSummary> =
            serde_json::from_str(&body_text(response).await).unwrap();
        cell_problems(&services, "payments", "prod")
            .contains(&CellProblem::SchemaBehind)
            .then_some(services)
    })
    .await
    .expect("payments prod's schema is behind its code");

    assert!(
        cell_problems(&services, "checkout", "prod").contains(&CellProblem::StaleSecret),
        "{:?}",
        cell_problems(&services, "checkout", "prod")
    );
    assert!(
        cell_problems(&services, "catalog", "dev").contains(&CellProblem::CompositionError),
        "{:?}",
        cell_problems(&services, "catalog", "dev")
    );
    // Every problem shows somewhere, the failed check wherever the fixtures put it.
    let seen: BTreeSet<CellProblem> = services
        .iter()
        .flat_map(|s| s.environments.iter())
        .flat_map(|c| c.problems.iter().copied())
        .collect();
    for problem in CellProblem::ALL {
        assert!(
            seen.contains(&problem),
            "{problem:?} shows nowhere: {seen:?}"
        );
    }
}
