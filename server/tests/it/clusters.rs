//! An environment on several clusters: prod on `prod-eu` and `prod-us`, each deployed by its own Argo CD.
//! One card per environment shows each cluster; losing one leaves the other live on the card and marks only
//! it; Sync goes to each cluster's Argo CD; a pod's logs are read on the cluster it runs on.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use shared::api::Logs;
use shared::fleet::{Health, ServiceSummary};
use shared::logs::LogSource;

use crate::fleet::{card_eventually, card_within};
use crate::logs::{lines, tail_of};
use crate::{Role, TestApp, body_text};

async fn two_prod_clusters() -> TestApp {
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.prod_clusters = 2;
    TestApp::start_on(options, |_| {}).await
}

#[tokio::test]
async fn a_card_shows_each_cluster_of_its_environment_and_one_lost_leaves_the_other_live() {
    let app = two_prod_clusters().await;
    let names = |card: &shared::fleet::DeploymentCard| -> Vec<String> {
        card.clusters.iter().map(|c| c.name.clone()).collect()
    };
    let card = card_eventually(&app, "payments", "prod", |c| c.clusters.len() == 2).await;
    assert_eq!(names(&card), ["prod-eu", "prod-us"]);
    for cluster in &card.clusters {
        assert_eq!(
            cluster.application.as_deref(),
            Some(format!("payments-{}", cluster.name).as_str()),
            "each cluster's Application is matched by its destination"
        );
        assert!(cluster.pods_total > 0, "{} runs payments", cluster.name);
        assert!(cluster.unreachable_since.is_none());
        assert_ne!(cluster.health, Health::Unknown);
    }
    let per_cluster = |cluster: &str| card.pods.iter().filter(|p| p.cluster == cluster).count();
    assert_eq!(
        per_cluster("prod-eu") + per_cluster("prod-us"),
        card.pods.len()
    );
    assert!(per_cluster("prod-eu") > 0 && per_cluster("prod-us") > 0);
    // Dev stays one cluster.
    let dev = card_eventually(&app, "payments", "dev", |c| !c.clusters.is_empty()).await;
    assert_eq!(names(&dev), ["dev"]);

    app.sandbox.cluster("prod-us").unwrap().set_reachable(false);
    let down = card_eventually(&app, "payments", "prod", |c| {
        c.clusters.iter().any(|c| c.unreachable_since.is_some())
    })
    .await;
    let state: Vec<(&str, bool)> = down
        .clusters
        .iter()
        .map(|c| (c.name.as_str(), c.unreachable_since.is_some()))
        .collect();
    assert_eq!(state, [("prod-eu", false), ("prod-us", true)]);
    assert_eq!(down.unreachable_since, down.clusters[1].unreachable_since);
    // The Overview's cell shows the worst, and says which cluster.
    let (_, list) = app.get_json("/api/v1/services").await;
    let services: Vec<ServiceSummary> = serde_json::from_value(list).unwrap();
    let cell = services
        .iter()
        .find(|s| s.name == "payments")
        .and_then(|s| s.environments.iter().find(|e| e.environment == "prod"))
        .cloned()
        .unwrap();
    assert!(cell.unreachable_since.is_some());
    assert_eq!(cell.unreachable_clusters, ["prod-us"]);

    // prod-eu keeps updating while prod-us is down: a restart there reaches the card.
    let eu = app.sandbox.cluster("prod-eu").unwrap();
    let mut pod = eu
        .list("v1", "Pod")
        .into_iter()
        .find(|p| p["metadata"]["labels"]["platform.tower.dev/component"] == "payments")
        .unwrap();
    pod["status"]["containerStatuses"][0]["restartCount"] = 7.into();
    let restarted = pod["metadata"]["name"].as_str().unwrap().to_string();
    eu.apply(pod).unwrap();
    let updated = card_eventually(&app, "payments", "prod", |c| {
        c.pods
            .iter()
            .any(|p| p.name == restarted && p.cluster == "prod-eu" && p.restarts == 7)
    })
    .await;
    assert!(
        updated
            .pods
            .iter()
            .any(|p| p.name == restarted && p.restarts == 7)
    );

    app.sandbox.cluster("prod-us").unwrap().set_reachable(true);
    let back = card_within(&app, "payments", "prod", Duration::from_secs(40), |c| {
        c.unreachable_since.is_none()
    })
    .await;
    assert!(
        back.clusters.iter().all(|c| c.unreachable_since.is_none()),
        "prod-us never recovered"
    );
}

#[tokio::test]
async fn sync_goes_to_the_argo_cd_deploying_each_cluster_and_logs_to_the_cluster_a_pod_runs_on() {
    let app = two_prod_clusters().await;
    let card = card_eventually(&app, "payments", "prod", |c| c.clusters.len() == 2).await;

    let owner = app
        .send_as(
            &Role::Owner,
            Method::POST,
            "/api/v1/services/payments/environments/prod/sync",
        )
        .await;
    assert_eq!(owner.status(), StatusCode::OK);
    let synced = |instance: &str| -> Vec<String> {
        app.sandbox
            .argocd_named(instance)
            .unwrap()
            .sync_requests()
            .into_iter()
            .map(|r| r.app)
            .collect()
    };
    assert_eq!(synced("argocd"), ["payments-prod-eu"]);
    assert_eq!(synced("argocd-us"), ["payments-prod-us"]);

    // A pod on prod-us is read there: the other cluster has no pod of that name.
    let pod = card
        .pods
        .iter()
        .find(|p| p.cluster == "prod-us")
        .map(|p| p.name.clone())
        .unwrap();
    let response = app
        .send_as(
            &Role::Owner,
            Method::GET,
            &Logs::with_query("payments", "prod", &tail_of(&pod, 5)),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let read = lines(&body_text(response).await);
    assert!(!read.is_empty(), "prod-us served the pod's log");
    assert!(read.iter().all(|l| l.source == LogSource::Live), "{read:?}");
}

#[tokio::test]
async fn with_the_first_cluster_lost_the_card_shows_a_reachable_clusters_rollout() {
    let app = two_prod_clusters().await;
    card_eventually(&app, "payments", "prod", |c| {
        c.clusters.len() == 2 && c.rollout.is_some()
    })
    .await;
    app.sandbox.cluster("prod-eu").unwrap().set_reachable(false);
    card_eventually(&app, "payments", "prod", |c| {
        c.clusters[0].unreachable_since.is_some()
    })
    .await;

    // A message only prod-us's Rollout carries reaches the card: its steps are the live ones.
    let us = app.sandbox.cluster("prod-us").unwrap();
    let mut rollout = us
        .list("argoproj.io/v1alpha1", "Rollout")
        .into_iter()
        .find(|r| r["metadata"]["labels"]["platform.tower.dev/component"] == "payments")
        .unwrap();
    rollout["status"]["message"] = "prod-us is stepping".into();
    us.apply(rollout).unwrap();
    let card = card_eventually(&app, "payments", "prod", |c| {
        c.rollout.as_ref().and_then(|r| r.message.as_deref()) == Some("prod-us is stepping")
    })
    .await;
    assert_eq!(
        card.rollout.and_then(|r| r.message).as_deref(),
        Some("prod-us is stepping"),
        "the lost cluster's frozen Rollout would hide what moves"
    );
}
