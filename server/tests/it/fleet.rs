//! `/api/v1/services` and `/api/v1/events`.

use std::time::Duration;

use futures::StreamExt as _;
use shared::crd::{Component, ComponentSpec, TemplateRef};
use shared::fleet::{
    CatalogState, DeploymentCard, FleetEvent, Health, ServiceDetail, ServiceSummary, SyncStatus,
};

use axum::http::Method;

use crate::{Role, TestApp};

fn inventory() -> Component {
    let mut component = Component::new(
        "inventory",
        ComponentSpec {
            owner: "shop".into(),
            repository: "acme/inventory".into(),
            template: TemplateRef {
                name: "go-service".into(),
                version: "1.4.0".into(),
            },
            description: "Stock per warehouse.".into(),
            depends_on: vec!["catalog".into()],
        },
    );
    component.metadata.namespace = Some("platform".into());
    component
}

/// The services backed by a Component: what a test that counts the sandbox's Components compares.
fn onboarded(services: Vec<ServiceSummary>) -> Vec<ServiceSummary> {
    services
        .into_iter()
        .filter(|s| s.catalog_state != CatalogState::NotOnboarded)
        .collect()
}

#[tokio::test]
async fn services_lists_the_sandbox_components_in_name_order() {
    let app = TestApp::start().await;
    let (status, body) = app.get_json("/api/v1/services").await;
    assert_eq!(status, 200);
    let services: Vec<ServiceSummary> = serde_json::from_value(body).unwrap();
    // The catalog scan may already have added the catalog-only repository; the Components are what is listed here.
    let services = onboarded(services);
    let names: Vec<_> = services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cart",
            "catalog",
            "checkout",
            "ledger",
            "payments",
            "recommendations",
            "refunds",
            "search"
        ]
    );
    let checkout = &services[2];
    assert_eq!(checkout.owner, "shop");
    assert_eq!(checkout.depends_on, ["cart", "payments", "catalog"]);
}

#[tokio::test]
async fn one_service_by_name_or_a_404_naming_it() {
    let app = TestApp::start().await;
    let (status, body) = app.get_json("/api/v1/services/ledger").await;
    assert_eq!(status, 200);
    assert_eq!(body["summary"]["owner"], "payments");

    let (status, body) = app.get_json("/api/v1/services/nope").await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "not_found");
    assert_eq!(body["message"], "service nope not found");
}

#[tokio::test]
async fn the_event_stream_starts_with_a_snapshot_then_carries_changes_from_the_cluster() {
    let app = TestApp::start().await;
    let response = app
        .send_as(&Role::Guest, Method::GET, "/api/v1/events")
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut frames = response.into_body().into_data_stream();
    let mut next_event = async || -> FleetEvent {
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(5), frames.next())
                .await
                .expect("an event within 5 s")
                .expect("the stream stays open")
                .unwrap();
            let text = String::from_utf8_lossy(&frame).into_owned();
            if let Some(data) = text.lines().find_map(|l| l.strip_prefix("data: ")) {
                return serde_json::from_str(data).unwrap();
            }
        }
    };

    match next_event().await {
        FleetEvent::Snapshot { services, .. } => assert_eq!(onboarded(services).len(), 8),
        other => panic!("expected a snapshot first, got {other:?}"),
    }

    let management = app.sandbox.cluster("management").unwrap();
    management.create_typed(&inventory()).unwrap();
    // Other deltas (cards completing as repository facts arrive) may come first.
    let service = loop {
        if let FleetEvent::ServiceUpserted { service } = next_event().await
            && service.name == "inventory"
        {
            break service;
        }
    };
    assert_eq!(service.template, "go-service@1.4.0");

    management
        .delete(
            "platform.tower.dev/v1alpha1",
            "Component",
            Some("platform"),
            "inventory",
        )
        .unwrap();
    loop {
        if next_event().await
            == (FleetEvent::ServiceRemoved {
                name: "inventory".into(),
            })
        {
            break;
        }
    }
    assert!(app.fleet.service("inventory").is_none());
}

/// Reads one card of `service` in `env` as a guest, waiting for facts fetched in the background (the
/// repository's commits and migrations) to arrive.
pub(crate) async fn card_eventually(
    app: &TestApp,
    service: &str,
    env: &str,
    ready: impl Fn(&DeploymentCard) -> bool,
) -> DeploymentCard {
    card_within(app, service, env, Duration::from_secs(10), ready).await
}

/// As [`card_eventually`], waiting at most `limit`.
pub(crate) async fn card_within(
    app: &TestApp,
    service: &str,
    env: &str,
    limit: Duration,
    ready: impl Fn(&DeploymentCard) -> bool,
) -> DeploymentCard {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let (status, body) = app.get_json(&format!("/api/v1/services/{service}")).await;
        assert_eq!(status, 200);
        let detail: ServiceDetail = serde_json::from_value(body).unwrap();
        let card = detail.cards.into_iter().find(|c| c.environment == env);
        match card {
            Some(card) if ready(&card) || tokio::time::Instant::now() > deadline => return card,
            None if tokio::time::Instant::now() > deadline => panic!("no {env} card for {service}"),
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn card_warns_when_code_ships_a_migration_the_database_lacks() {
    let app = TestApp::start().await;
    let card = card_eventually(&app, "payments", "prod", |c| {
        c.schema.as_ref().is_some_and(|s| s.code_version.is_some())
    })
    .await;
    let schema = card.schema.expect("payments has a database");
    assert_eq!(schema.applied_version.as_deref(), Some("0003"));
    assert_eq!(schema.code_version.as_deref(), Some("0004"));
    assert!(schema.behind);
    assert_eq!(schema.missing_migrations, ["0004_add_refund_reference.sql"]);
    // Dev runs the same migrations it ships.
    let dev = card_eventually(&app, "payments", "dev", |c| {
        c.schema.as_ref().is_some_and(|s| s.code_version.is_some())
    })
    .await;
    assert!(!dev.schema.expect("dev database").behind);
}

#[tokio::test]
async fn cards_show_the_fixture_problems_where_they_are() {
    let app = TestApp::start().await;
    let stale = card_eventually(&app, "checkout", "prod", |_| true).await;
    assert!(
        stale.secrets.iter().any(|s| s.stale && !s.ready),
        "{:?}",
        stale.secrets
    );

    let composition = card_eventually(&app, "catalog", "dev", |_| true).await;
    let claim = composition.cloud_resources.first().expect("a claim");
    assert!(!claim.synced);
    assert!(
        claim
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("cannot compose")
    );

    let crash = card_eventually(&app, "recommendations", "dev", |_| true).await;
    assert!(
        crash
            .pods
            .iter()
            .any(|p| p.waiting_reason.as_deref() == Some("CrashLoopBackOff") && p.restarts >= 7)
    );
    assert_eq!(crash.application.expect("app").health, Health::Degraded);

    let out_of_sync = card_eventually(&app, "catalog", "prod", |_| true).await;
    assert_eq!(
        out_of_sync.application.expect("app").sync,
        SyncStatus::OutOfSync
    );
}

#[tokio::test]
async fn a_card_says_what_changed_since_the_previous_version() {
    let app = TestApp::start().await;
    let card = card_eventually(&app, "payments", "prod", |c| !c.changes.is_empty()).await;
    let release = card.release.expect("a release");
    assert_eq!(
        card.running_version.as_deref(),
        Some(release.version.as_str())
    );
    assert!(card.previous_version.is_some());
    assert_eq!(
        card.changes.first().map(|c| c.sha.as_str()),
        Some(release.version.as_str())
    );
    assert_eq!(card.changes.len(), 1, "{:?}", card.changes);
    let rollout = card.rollout.expect("a rollout");
    assert_eq!(rollout.steps.len(), 5);
    assert_eq!(
        card.application.expect("app").external_urls,
        ["https://payments.acme.example"]
    );
}

#[tokio::test]
async fn a_crash_looping_card_carries_its_back_off_warnings_naming_the_pod() {
    use sandbox::fixtures::workloads::{CRASH_LOOPING_ENVIRONMENT, CRASH_LOOPING_SERVICE};
    let app = TestApp::start().await;
    let card = card_eventually(
        &app,
        CRASH_LOOPING_SERVICE,
        CRASH_LOOPING_ENVIRONMENT,
        |c| !c.events.is_empty(),
    )
    .await;
    let crashing: Vec<&str> = card
        .pods
        .iter()
        .filter(|p| p.waiting_reason.as_deref() == Some("CrashLoopBackOff"))
        .map(|p| p.name.as_str())
        .collect();
    assert!(!crashing.is_empty(), "{:?}", card.pods);
    let back_off = card
        .events
        .iter()
        .find(|e| e.reason == "BackOff")
        .unwrap_or_else(|| panic!("no BackOff warning in {:?}", card.events));
    assert_eq!(back_off.object_kind, "Pod");
    assert!(
        crashing.contains(&back_off.object_name.as_str()),
        "{back_off:?}"
    );
    assert!(back_off.message.contains(&back_off.object_name));
    assert!(back_off.count > 1);
    let last_seen = back_off.last_seen.as_deref().expect("a last-seen time");
    assert!(last_seen.parse::<jiff::Timestamp>().is_ok(), "{last_seen}");
    // Only warnings: the pods' Scheduled/Started and the Rollout's steps are Normal events.
    assert!(
        card.events.iter().all(|e| e.reason == "BackOff"),
        "{:?}",
        card.events
    );

    // A healthy service has nothing to warn about.
    let healthy = card_eventually(&app, "payments", CRASH_LOOPING_ENVIRONMENT, |_| true).await;
    assert!(healthy.events.is_empty(), "{:?}", healthy.events);
}

#[tokio::test]
async fn a_worker_deployment_shows_on_its_card_with_its_replica_counts() {
    let (service, worker) = sandbox::fixtures::workloads::WORKER;
    let app = TestApp::start().await;
    for environment in ["dev", "prod"] {
        let card = card_eventually(&app, service, environment, |c| !c.deployments.is_empty()).await;
        let names: Vec<_> = card.deployments.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, [worker], "{environment}");
        let deployment = &card.deployments[0];
        assert_eq!(
            (
                deployment.replicas,
                deployment.ready_replicas,
                deployment.updated_replicas,
                deployment.available_replicas
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (&deployment.progressing, &deployment.problem),
            (&None, &None)
        );
        // The Rollout is not a Deployment.
        let other = card_eventually(&app, "payments", environment, |_| true).await;
        assert!(other.deployments.is_empty(), "{:?}", other.deployments);
    }

    // A worker that loses its pod says so.
    let dev = app.sandbox.cluster("dev").unwrap();
    let mut deployment = dev
        .get("apps/v1", "Deployment", Some(service), worker)
        .expect("the worker deployment");
    deployment["status"]["readyReplicas"] = 0.into();
    deployment["status"]["availableReplicas"] = 0.into();
    deployment["status"]["conditions"][0] = serde_json::json!({
        "type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
        "message": "Deployment does not have minimum availability.",
    });
    dev.apply(deployment).unwrap();
    let card = card_eventually(&app, service, "dev", |c| {
        c.deployments.first().is_some_and(|d| d.ready_replicas == 0)
    })
    .await;
    let deployment = &card.deployments[0];
    assert_eq!((deployment.replicas, deployment.ready_replicas), (1, 0));
    assert_eq!(
        deployment.problem.as_deref(),
        Some("Deployment does not have minimum availability.")
    );
}

#[tokio::test]
async fn a_claim_lists_its_managed_resources_and_says_when_one_is_not_ready() {
    use sandbox::fixtures::crossplane::{CLAIM_KIND, RDS_GROUP, RDS_VERSION};
    let app = TestApp::start().await;
    let two_composed = |c: &DeploymentCard| {
        c.cloud_resources
            .first()
            .is_some_and(|claim| claim.composed.len() == 2)
    };
    let card = card_eventually(&app, "payments", "dev", two_composed).await;
    let claim = card
        .cloud_resources
        .first()
        .expect("payments claims a database");
    assert_eq!(
        (claim.kind.as_str(), claim.name.as_str()),
        (CLAIM_KIND, "payments")
    );
    let composed: Vec<_> = claim
        .composed
        .iter()
        .map(|c| (c.kind.as_str(), c.ready, c.synced, c.message.as_deref()))
        .collect();
    assert_eq!(
        composed,
        [
            ("Instance", true, true, None),
            ("SubnetGroup", true, true, None)
        ]
    );

    // The RDS instance Crossplane composed for payments in dev, as the cluster holds it.
    let dev = app.sandbox.cluster("dev").unwrap();
    let rds = format!("{RDS_GROUP}/{RDS_VERSION}");
    let mut instance = dev
        .list(&rds, "Instance")
        .into_iter()
        .find(|i| i["metadata"]["labels"]["crossplane.io/claim-name"] == "payments")
        .expect("the payments instance");
    assert_eq!(
        instance["metadata"]["name"],
        claim.composed[0].name.as_str()
    );

    // The provider loses the instance: the card says so under the claim, whose own conditions lag.
    let message = "DB instance payments is in state storage-full";
    for condition in instance["status"]["conditions"].as_array_mut().unwrap() {
        if condition["type"] == "Ready" {
            *condition = serde_json::json!({
                "type": "Ready", "status": "False", "reason": "Unavailable", "message": message,
            });
        }
    }
    dev.apply(instance).unwrap();
    let card = card_eventually(&app, "payments", "dev", |c| {
        c.cloud_resources
            .first()
            .and_then(|claim| claim.composed.first())
            .is_some_and(|instance| !instance.ready)
    })
    .await;
    let claim = &card.cloud_resources[0];
    let instance = &claim.composed[0];
    assert_eq!(instance.kind, "Instance");
    assert!(!instance.ready && instance.synced);
    assert_eq!(instance.message.as_deref(), Some(message));
    assert!(claim.composed[1].ready, "{:?}", claim.composed);
    assert!(shared::fleet::cards::resource_has_problem(claim));

    // Prod's instance of the same claim is another object.
    let prod = card_eventually(&app, "payments", "prod", two_composed).await;
    assert!(
        prod.cloud_resources[0].composed.iter().all(|c| c.ready),
        "{:?}",
        prod.cloud_resources
    );
    // A claim that fails to compose still lists what it composed before.
    let catalog = card_eventually(&app, "catalog", "dev", two_composed).await;
    assert!(!catalog.cloud_resources[0].synced);
    // A service without a database has no claim and nothing composed.
    let cart = card_eventually(&app, "cart", "dev", |_| true).await;
    assert!(
        cart.cloud_resources.is_empty(),
        "{:?}",
        cart.cloud_resources
    );
}

#[tokio::test]
async fn a_new_warning_event_appears_on_its_services_card() {
    let app = TestApp::start().await;
    let before = card_eventually(&app, "cart", "dev", |_| true).await;
    assert!(before.events.is_empty(), "{:?}", before.events);
    let pod = before.pods.first().expect("cart runs pods").name.clone();
    let dev = app.sandbox.cluster("dev").unwrap();
    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .unwrap()
        .to_string();
    let event = |name: &str, kind: &str, reason: &str, message: &str| {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{pod}.{name}"), "namespace": "cart"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": pod, "namespace": "cart"},
            "reason": reason,
            "message": message,
            "type": kind,
            "count": 2,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": "kubelet"},
        })
    };
    // A Normal event first: it must not show, and the warning after it proves the card was recomputed.
    dev.apply(event(
        "started",
        "Normal",
        "Started",
        "Started container cart",
    ))
    .unwrap();
    dev.apply(event(
        "unhealthy",
        "Warning",
        "Unhealthy",
        "Readiness probe failed: HTTP probe failed with statuscode: 503",
    ))
    .unwrap();
    let card = card_eventually(&app, "cart", "dev", |c| !c.events.is_empty()).await;
    assert_eq!(card.events.len(), 1, "{:?}", card.events);
    let warning = &card.events[0];
    assert_eq!(warning.reason, "Unhealthy");
    assert_eq!(
        (warning.object_kind.as_str(), warning.object_name.as_str()),
        ("Pod", pod.as_str())
    );
    assert_eq!(warning.count, 2);
    assert_eq!(warning.last_seen.as_deref(), Some(now.as_str()));
    assert!(warning.message.starts_with("Readiness probe failed"));
    // The same service in the other environment knows nothing of it.
    let prod = card_eventually(&app, "cart", "prod", |_| true).await;
    assert!(prod.events.is_empty(), "{:?}", prod.events);
}

#[tokio::test]
async fn page_views_cost_the_upstreams_nothing() {
    let app = TestApp::start().await;
    // Let the first picture complete, including repository facts.
    card_eventually(&app, "payments", "prod", |c| !c.changes.is_empty()).await;
    let before = crate::settled_upstream_requests(&app).await;
    for view in 0..50 {
        let service = ["payments", "checkout", "search", "ledger", "cart"][view % 5];
        assert_eq!(app.get_json("/api/v1/services").await.0, 200);
        assert_eq!(
            app.get_json(&format!("/api/v1/services/{service}")).await.0,
            200
        );
        assert_eq!(
            app.get_json(&format!("/api/v1/services/{service}/databases"))
                .await
                .0,
            200
        );
        assert_eq!(app.get_json("/api/v1/environments").await.0, 200);
    }
    let after = crate::upstream_requests(&app);
    println!("upstream requests: {before} for the long-lived watches, {after} after 50 page views");
    assert_eq!(after, before, "page views reached the upstreams");
}

#[tokio::test]
async fn the_activity_feed_starts_with_the_deploys_argo_cd_remembers_newest_first() {
    let app = TestApp::start().await;
    let (status, activity) = app.get_json("/api/v1/activity").await;
    assert_eq!(status, 200);
    let items = activity.as_array().unwrap();
    assert!(!items.is_empty(), "the feed starts empty");
    // Besides the deploys, the last day's merges (the sandbox's history ends minutes before it starts), which
    // the merge reader may or may not have recorded yet: either way in time order.
    assert!(
        items
            .iter()
            .all(|i| i["kind"] == "deploy" || i["kind"] == "pull_request_merged"),
        "{activity}"
    );
    assert!(items.iter().any(|i| i["kind"] == "deploy"), "{activity}");
    let times: Vec<jiff::Timestamp> = items
        .iter()
        .map(|i| i["at"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    // Each item is a service's real deploy: its newest one says what runs there now.
    let detail = app.fleet.service_detail("payments").unwrap();
    let prod = detail
        .cards
        .iter()
        .find(|c| c.environment == "prod")
        .unwrap();
    let running = prod.running_version.clone().unwrap();
    let newest_payments_prod = items
        .iter()
        .find(|i| i["kind"] == "deploy" && i["service"] == "payments" && i["environment"] == "prod")
        .expect("payments prod deploys");
    assert!(
        newest_payments_prod["message"]
            .as_str()
            .unwrap()
            .contains(&running),
        "{newest_payments_prod} vs {running}"
    );
}

#[tokio::test]
async fn a_kind_a_cluster_does_not_serve_shows_nothing_rather_than_an_outage() {
    // A platform whose clusters lack one configured CRD (no S3 buckets composed anywhere here).
    let app = TestApp::start_with(|config| {
        config
            .crossplane_composed
            .push(server::config::ResourceKindConfig {
                group: "s3.aws.upbound.io".into(),
                version: "v1beta1".into(),
                kind: "Bucket".into(),
                plural: "buckets".into(),
            });
    })
    .await;
    // The missing kind's watcher retries with backoff (first after about a second): across those retries
    // no cluster may show as down, nor flicker to "relisting" as if what it shows were stale.
    let watching_from = std::time::Instant::now();
    while watching_from.elapsed() < Duration::from_secs(4) {
        let (_, environments) = app.get_json("/api/v1/environments").await;
        for environment in environments.as_array().unwrap() {
            assert_eq!(
                environment["source"]["state"]["state"],
                "connected",
                "{environment} after {:?}",
                watching_from.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let detail = app.fleet.service_detail("payments").unwrap();
    for card in &detail.cards {
        assert!(card.unreachable_since.is_none(), "{}", card.environment);
        assert!(
            !card.cloud_resources.is_empty(),
            "the served kinds still show"
        );
    }
}

#[tokio::test]
async fn an_unreachable_cluster_marks_its_cards_while_the_others_keep_updating() {
    let app = TestApp::start().await;
    let prod = app.sandbox.cluster("prod").unwrap();
    let dev = app.sandbox.cluster("dev").unwrap();
    prod.set_reachable(false);
    let down = card_eventually(&app, "payments", "prod", |c| c.unreachable_since.is_some()).await;
    let since = down.unreachable_since.expect("prod is unreachable");
    assert!(since.parse::<jiff::Timestamp>().is_ok(), "{since}");
    let (_, environments) = app.get_json("/api/v1/environments").await;
    let prod_state = environments
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "prod")
        .unwrap()["source"]["state"]["state"]
        .clone();
    assert_eq!(prod_state, "unreachable");

    // Dev still updates: a pod's restart count moves on the dev card.
    let pods = dev.list("v1", "Pod");
    let mut pod = pods
        .into_iter()
        .find(|p| p["metadata"]["labels"]["platform.tower.dev/component"] == "cart")
        .unwrap();
    pod["status"]["containerStatuses"][0]["restartCount"] = 3.into();
    dev.apply(pod).unwrap();
    let cart = card_eventually(&app, "cart", "dev", |c| {
        c.pods.iter().any(|p| p.restarts == 3)
    })
    .await;
    assert!(cart.unreachable_since.is_none());
    assert!(cart.pods.iter().any(|p| p.restarts == 3));

    // Back up: the cards recover without restarting Tower.
    prod.set_reachable(true);
    // The watches retry with exponential backoff (at most 30 s between tries).
    let started = std::time::Instant::now();
    let recovered = card_within(&app, "payments", "prod", Duration::from_secs(40), |c| {
        c.unreachable_since.is_none()
    })
    .await;
    assert!(
        recovered.unreachable_since.is_none(),
        "prod never recovered"
    );
    println!(
        "prod recovered {:.1} s after coming back",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test]
async fn an_owner_sync_reaches_argo_cd_exactly_once_and_a_guest_sync_is_refused() {
    let app = TestApp::start().await;
    let path = "/api/v1/services/payments/environments/prod/sync";
    let guest = app.send_as(&Role::Guest, Method::POST, path).await;
    assert_eq!(guest.status(), 403);
    let other_team = app.send_as(&Role::OtherTeam, Method::POST, path).await;
    assert_eq!(other_team.status(), 403);
    assert!(app.sandbox.argocd().sync_requests().is_empty());

    let owner = app.send_as(&Role::Owner, Method::POST, path).await;
    assert_eq!(owner.status(), 200);
    let requests = app.sandbox.argocd().sync_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].app, "payments-prod");
    assert!(!requests[0].force && !requests[0].dry_run);
}

#[tokio::test]
async fn the_service_list_is_sent_gzipped_to_clients_that_accept_it() {
    use std::io::Read as _;
    let app = TestApp::start().await;
    let cookie = app.session_cookie(Role::Guest.identity().unwrap());
    let response = app
        .get(
            "/api/v1/services",
            &[("cookie", &cookie), ("accept-encoding", "gzip, br")],
        )
        .await;
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let mut json = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut json)
        .unwrap();
    let services: Vec<ServiceSummary> = serde_json::from_str(&json).unwrap();
    assert_eq!(onboarded(services).len(), 8);
}

#[tokio::test]
async fn the_header_reads_the_repositorys_catalog_info() {
    let app = TestApp::start().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let catalog = loop {
        let (_, body) = app.get_json("/api/v1/services/payments").await;
        let detail: ServiceDetail = serde_json::from_value(body).unwrap();
        if let Some(catalog) = detail.summary.catalog {
            break catalog;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the catalog was never read"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(catalog.kind.as_deref(), Some("service"));
    assert!(catalog.lifecycle.is_some());
}
