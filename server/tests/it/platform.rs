//! The platform as Argo CD runs it, read from the sandbox: `/platform`'s matrix of components × clusters,
//! the skew, last bumps from git, and each platform resource's own Application on its card and database.

use std::time::Duration;

use shared::api::{GetPlatform, GetService, ListDatabases};
use shared::fleet::{DatabaseView, ServiceDetail, SyncStatus};
use shared::platform::{PlatformView, TOWER_COMPONENT};

use crate::{TestApp, eventually};

async fn platform(app: &TestApp) -> PlatformView {
    let (status, body) = app.get_json(&GetPlatform::url()).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_value(body).unwrap()
}

#[tokio::test]
async fn the_platform_page_shows_each_component_per_cluster_with_its_skew_and_last_bump() {
    let app = TestApp::start().await;
    let view = platform(&app).await;

    let columns: Vec<&str> = view.clusters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(columns, ["management", "dev", "prod"]);
    let row = |name: &str| {
        view.components
            .iter()
            .find(|row| row.name == name)
            .unwrap_or_else(|| panic!("no row {name} in {:?}", view.components))
    };
    let operator = row("release-operator");
    let version = |column: usize| {
        operator.cells[column]
            .as_ref()
            .and_then(|cell| cell.version.clone())
            .unwrap()
    };
    let (dev, prod) = (version(1), version(2));
    assert_ne!(dev, prod, "prod lags one version");
    assert_eq!(
        operator.skew.as_deref(),
        Some(format!("prod runs release-operator {prod}, management and dev {dev}").as_str())
    );
    assert_eq!(row("crossplane").skew, None, "agrees everywhere");
    // Installed only where its files are.
    let tekton = row("tekton");
    assert!(tekton.cells[0].is_some() && tekton.cells[1].is_none() && tekton.cells[2].is_none());
    // Tower's own row, beside the version serving this answer.
    assert!(row(TOWER_COMPONENT).cells[0].is_some());
    assert_eq!(view.serving_version, env!("CARGO_PKG_VERSION"));

    // Every cell: its Application Synced and Healthy, a link to its file, and the commit that last changed it.
    for row in view.components.iter().chain(&view.packages) {
        for cell in row.cells.iter().flatten() {
            let what = format!("{} on {}", row.name, cell.cluster);
            assert_eq!(cell.application.problem(), None, "{what}");
            let bump = cell
                .last_bump
                .as_ref()
                .unwrap_or_else(|| panic!("{what}: no last bump"));
            assert_eq!(bump.commit.len(), 40, "{what}");
            assert!(
                cell.file_url
                    .as_deref()
                    .is_some_and(|url| url.ends_with(&cell.file)),
                "{what}: {:?}",
                cell.file_url
            );
        }
    }
    let bump = operator.cells[1]
        .as_ref()
        .and_then(|c| c.last_bump.as_ref())
        .unwrap();
    assert!(
        bump.author.ends_with("[bot]"),
        "CI bumps its own version: {bump:?}"
    );
    assert!(!view.packages.is_empty(), "Crossplane packages per cluster");
    assert_eq!(
        (view.counts.waiting, view.counts.failing),
        (0, 0),
        "{:?}",
        view.counts
    );
    assert!(view.counts.healthy > 0);
}

#[tokio::test]
async fn a_release_and_a_database_show_their_own_applications() {
    let app = TestApp::start().await;
    let (status, body) = app.get_json(&GetService::url("payments")).await;
    assert_eq!(status, 200, "{body}");
    let detail: ServiceDetail = serde_json::from_value(body).unwrap();
    for card in &detail.cards {
        let own = card
            .release_application
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no Application of its Release", card.environment));
        assert_eq!(
            own.application.name,
            format!("release-payments-{}", card.environment)
        );
        assert_eq!(own.application.sync, SyncStatus::Synced);
        assert!(own.url.is_some());
    }

    let (status, body) = app.get_json(&ListDatabases::url("payments")).await;
    assert_eq!(status, 200, "{body}");
    let databases: Vec<DatabaseView> = serde_json::from_value(body).unwrap();
    assert!(!databases.is_empty());
    for database in &databases {
        let own = database.application.as_ref().unwrap();
        assert!(own.application.name.starts_with("database-"), "{own:?}");
        assert!(database.schema_application.is_some(), "{database:?}");
    }

    // A Database's Application made OutOfSync shows on its database, in words.
    let name = databases[0]
        .application
        .as_ref()
        .unwrap()
        .application
        .name
        .clone();
    let response = reqwest::Client::new()
        .post(format!(
            "{}/sandbox/applications/{name}/out-of-sync",
            app.sandbox.url()
        ))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let problem = eventually(Duration::from_secs(10), || async {
        let (_, body) = app.get_json(&ListDatabases::url("payments")).await;
        let databases: Vec<DatabaseView> = serde_json::from_value(body).ok()?;
        databases
            .iter()
            .find_map(|d| d.application.as_ref()?.problem())
    })
    .await;
    assert_eq!(problem, Some(format!("Application {name} is OutOfSync")));
}
