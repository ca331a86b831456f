//! Config: a service's platform files beside the live objects, drift, and an owner's edit through the same
//! pull request path as the golden paths, checked again on the server.

use std::time::Duration;

use axum::http::Method;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use shared::api::{GetPlatformConfig, GetServiceConfig, PreviewConfigEdit, SubmitConfigEdit};
use shared::config::{ConfigResource, PlatformConfig, PlatformKind, ServiceConfig};
use shared::crd::Release;
use shared::delivery::{PullRequestView, release_path};
use shared::fleet::SourceState;

use crate::delivery::{file_on, send_json, tower_branches};
use crate::{Role, TestApp, eventually};

async fn config_of(app: &TestApp, service: &str) -> ServiceConfig {
    let (status, body) = app.get_json(&GetServiceConfig::url(service)).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_value(body).unwrap()
}

fn release_in<'a>(config: &'a ServiceConfig, environment: &str) -> &'a ConfigResource {
    config
        .environments
        .iter()
        .find(|e| e.environment == environment)
        .and_then(|e| e.resources.iter().find(|r| r.kind == PlatformKind::Release))
        .unwrap_or_else(|| panic!("a Release in {environment}"))
}

#[tokio::test]
async fn the_tab_shows_git_intent_beside_the_live_object_derived_files_and_what_runs() {
    let app = TestApp::start().await;
    let config = config_of(&app, "payments").await;
    assert!(config.git_configured);
    let environments: Vec<&str> = config
        .environments
        .iter()
        .map(|e| e.environment.as_str())
        .collect();
    assert_eq!(environments, ["dev", "prod"]);

    let component = config.registry.as_ref().expect("the Component");
    let intent = component.intent.as_ref().expect("its file in git");
    assert_eq!(intent.path, "platform/registry/payments.yaml");
    assert!(
        intent.content.contains("kind: Component"),
        "{}",
        intent.content
    );

    let prod = release_in(&config, "prod");
    let intent = prod.intent.as_ref().expect("prod's Release in git");
    assert_eq!(intent.path, release_path("payments", "prod"));
    let commit = intent.commit.as_ref().expect("the file's last commit");
    assert_eq!(commit.sha.len(), 7);
    let applied = prod.applied.as_deref().expect("the live Release");
    assert!(applied.contains("kind: Release"), "{applied}");
    assert!(
        applied.contains("observedVersion"),
        "the operator's status is shown: {applied}"
    );
    for noise in ["managedFields", "resourceVersion", "uid:"] {
        assert!(!applied.contains(noise), "{noise} stripped: {applied}");
    }
    assert!(
        prod.drift.is_empty(),
        "payments' prod is as git says: {:?}",
        prod.drift
    );

    let section = config
        .environments
        .iter()
        .find(|e| e.environment == "prod")
        .unwrap();
    // payments has a database in every environment: its Database and DatabaseSchema files.
    let kinds: Vec<PlatformKind> = section.resources.iter().map(|r| r.kind).collect();
    assert!(kinds.contains(&PlatformKind::Database), "{kinds:?}");
    assert!(kinds.contains(&PlatformKind::DatabaseSchema), "{kinds:?}");
    let derived: Vec<&str> = section.derived.iter().map(|f| f.path.as_str()).collect();
    assert!(
        derived.contains(&"components/payments/environments/prod.yaml"),
        "{derived:?}"
    );
    let running: Vec<(&str, Option<&str>)> = section
        .running
        .iter()
        .map(|o| (o.kind.as_str(), o.state.as_deref()))
        .collect();
    assert_eq!(
        running.first().map(|r| r.0),
        Some("Application"),
        "{running:?}"
    );
    assert!(
        running.iter().any(|(kind, _)| *kind == "ExternalSecret"),
        "{running:?}"
    );
    assert!(
        running
            .iter()
            .any(|(_, state)| state.is_some_and(|s| s.contains("Synced"))),
        "{running:?}"
    );

    // What the editor's rules need comes with it.
    assert!(
        config
            .rules
            .green_builds
            .as_ref()
            .is_some_and(|b| !b.is_empty())
    );
    assert!(
        config
            .rules
            .databases
            .as_ref()
            .is_some_and(|d| !d.is_empty())
    );

    let (status, _) = app
        .get_json(&GetServiceConfig::url("no-such-service"))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_release_changed_on_the_cluster_only_shows_as_drifted_with_the_field_named() {
    let app = TestApp::start().await;
    // The sandbox's own drift: cart's prod Release had auto-deploy turned on by hand.
    let (service, environment) = sandbox::world::DRIFTED_RELEASE;
    let config = config_of(&app, service).await;
    let drifted = release_in(&config, environment);
    assert_eq!(drifted.drift, ["spec.autoDeploy"]);
    let diff = drifted.drift_diff.as_deref().expect("a diff");
    assert!(
        diff.contains("-autoDeploy: false") && diff.contains("+autoDeploy: true"),
        "{diff}"
    );

    // A change made now on the cluster is seen through the watch.
    let client =
        server::upstream::kube::client_for_url(&app.sandbox.cluster_url("management"), None, None)
            .unwrap();
    let releases: Api<Release> = Api::namespaced(client, "platform");
    releases
        .patch(
            "ledger-prod",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"chart": {"path": "charts/ledger"}}})),
        )
        .await
        .unwrap();
    let drift = eventually(Duration::from_secs(10), || async {
        let config = config_of(&app, "ledger").await;
        let drift = release_in(&config, "prod").drift.clone();
        (!drift.is_empty()).then_some(drift)
    })
    .await
    .expect("the patched Release drifts");
    assert_eq!(drift, ["spec.chart.path"]);
    assert!(
        release_in(&config_of(&app, "ledger").await, "dev")
            .drift
            .is_empty()
    );
}

/// payments' prod Release on main, as the Config tab shows it.
async fn prod_release_file(app: &TestApp) -> String {
    let config = config_of(app, "payments").await;
    release_in(&config, "prod")
        .intent
        .as_ref()
        .unwrap()
        .content
        .clone()
}

#[tokio::test]
async fn an_owners_edit_opens_one_pull_request_changing_exactly_that_file() {
    let app = TestApp::start().await;
    let path = release_path("payments", "prod");
    let original = prod_release_file(&app).await;
    let edited = original.replace("autoDeploy: false", "autoDeploy: true");
    assert_ne!(
        edited, original,
        "the fixture's prod Release says autoDeploy: false"
    );
    let edit = json!({"path": path, "content": edited});

    let (status, preview) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        &PreviewConfigEdit::url("payments"),
        edit.clone(),
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["files"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        preview["branch"],
        "tower/config/payments/prod/payments-release"
    );
    let diff = preview["diff"].as_str().unwrap();
    assert!(
        diff.contains("-  autoDeploy: false") && diff.contains("+  autoDeploy: true"),
        "{diff}"
    );
    assert!(tower_branches(&app).is_empty(), "a preview writes nothing");

    let (status, pull) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        &SubmitConfigEdit::url("payments"),
        edit.clone(),
    )
    .await;
    assert_eq!(status, 201, "{pull}");
    let pull: PullRequestView = serde_json::from_value(pull).unwrap();
    assert_eq!(pull.branch, "tower/config/payments/prod/payments-release");
    // Exactly the owner's text, comments and all, and nothing else on the branch.
    assert_eq!(
        file_on(&app, &pull.branch, &path).as_deref(),
        Some(edited.as_str())
    );
    let git = app.sandbox.repositories().git("application-repositories");
    let changed = git
        .run(&["diff", "--name-only", "main", &pull.branch])
        .unwrap();
    assert_eq!(changed.trim(), path);

    // Asking again reuses the pull request.
    let (status, again) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        &SubmitConfigEdit::url("payments"),
        edit,
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["number"].as_u64(), Some(pull.number));
}

#[tokio::test]
async fn a_file_the_validator_rejects_never_becomes_a_pull_request() {
    let app = TestApp::start().await;
    let path = release_path("payments", "prod");
    let original = prod_release_file(&app).await;
    let cases: Vec<(String, &str)> = vec![
        (
            original.replace("spec:\n", "spec:\n  replicas: 3\n"),
            "spec.replicas",
        ),
        (
            original.replace("autoDeploy: false", "autoDeploy: maybe"),
            "spec.autoDeploy",
        ),
        (original.replace("kind: Release", "kind: Releas"), "kind"),
        (format!("{original}\n  : [\n"), ""),
        (
            original.replace("environment: prod", "environment: dev"),
            "spec.environment",
        ),
    ];
    for (content, field) in cases {
        for url in [
            PreviewConfigEdit::url("payments"),
            SubmitConfigEdit::url("payments"),
        ] {
            let (status, body) = send_json(
                &app,
                &Role::Owner,
                Method::POST,
                &url,
                json!({"path": path, "content": content}),
            )
            .await;
            assert_eq!(status, 422, "{url}: {body}");
            let diagnostics = body["diagnostics"].as_array().expect("diagnostics");
            assert!(!diagnostics.is_empty());
            assert_eq!(diagnostics[0]["field"], Value::from(field), "{body}");
            assert!(
                diagnostics[0]["line"].as_u64().is_some_and(|l| l >= 1),
                "{body}"
            );
        }
    }
    // Another service's file, or one outside platform/, is not the owner's to edit here.
    for other in [
        release_path("ledger", "prod"),
        "components/payments/values/prod.yaml".into(),
    ] {
        let (status, body) = send_json(
            &app,
            &Role::Owner,
            Method::POST,
            &SubmitConfigEdit::url("payments"),
            json!({"path": other, "content": original}),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["field"], "path", "{body}");
    }
    // Unchanged: nothing to propose.
    let (status, body) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        &SubmitConfigEdit::url("payments"),
        json!({"path": path, "content": original}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(tower_branches(&app).is_empty(), "nothing was pushed");
}

#[tokio::test]
async fn the_config_page_lists_application_sets_with_what_they_generated_clusters_and_masked_settings()
 {
    let app = TestApp::start().await;
    // The runs list once the fleet's first picture is complete; the CI cluster (management here) says it is
    // syncing until they have.
    let config = eventually(Duration::from_secs(10), || async {
        let (status, body) = app.get_json(&GetPlatformConfig::url()).await;
        assert_eq!(status, 200, "{body}");
        let config: PlatformConfig = serde_json::from_value(body).unwrap();
        let connected = config
            .clusters
            .iter()
            .all(|c| c.state == SourceState::Connected);
        connected.then_some(config)
    })
    .await
    .expect("every cluster connected within 10 s");

    let catalog = config
        .application_sets
        .iter()
        .find(|s| s.name == sandbox::fixtures::argocd::CATALOG_APPLICATION_SET)
        .expect("taskapp-catalog");
    assert!(
        catalog
            .generators
            .iter()
            .any(|g| g.contains("components/*/environments/*.yaml")),
        "{:?}",
        catalog.generators
    );
    let generated: Vec<&str> = catalog
        .applications
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert!(
        generated.contains(&"payments-prod") && generated.contains(&"payments-dev"),
        "{generated:?}"
    );
    let out_of_sync = catalog
        .applications
        .iter()
        .find(|a| a.name == sandbox::fixtures::argocd::OUT_OF_SYNC)
        .expect("catalog-prod");
    assert_eq!(out_of_sync.sync.as_deref(), Some("OutOfSync"));
    assert!(
        config.application_sets.len() >= 2,
        "the platform's other ApplicationSets too"
    );

    let clusters: Vec<(&str, Option<&str>)> = config
        .clusters
        .iter()
        .map(|c| (c.name.as_str(), c.environment.as_deref()))
        .collect();
    assert_eq!(
        clusters,
        [
            ("management", None),
            ("dev", Some("dev")),
            ("prod", Some("prod"))
        ]
    );
    // Argo CD's labels, read from its cluster secrets' metadata only.
    assert_eq!(
        config.clusters[1]
            .labels
            .get("environment")
            .map(String::as_str),
        Some("dev")
    );
    assert!(
        config.clusters[0].labels.is_empty(),
        "no secret for the management cluster"
    );
    for cluster in &config.clusters {
        assert_eq!(cluster.state, SourceState::Connected, "{cluster:?}");
        assert!(
            cluster.connection.starts_with("http://127.0.0.1:"),
            "{cluster:?}"
        );
    }

    let setting = |key: &str| config.settings.iter().find(|s| s.key == key);
    let key = setting("github.app_private_key").expect("the App's key is listed");
    assert_eq!((key.value.as_str(), key.secret), ("set", true));
    assert_eq!(
        setting("organisation").map(|s| s.value.as_str()),
        Some("acme")
    );
    // The App's private key is a PEM: nothing of it is in the answer.
    let text = serde_json::to_string(&config.settings).unwrap();
    assert!(!text.contains("PRIVATE KEY"), "{text}");
}
