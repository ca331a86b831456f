//! `/api/v1/services` and `/api/v1/events`.

use std::time::Duration;

use futures::StreamExt as _;
use shared::crd::{Component, ComponentSpec, TemplateRef};
use shared::fleet::{FleetEvent, ServiceSummary};

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

#[tokio::test]
async fn services_lists_the_sandbox_components_in_name_order() {
    let app = TestApp::start().await;
    let (status, body) = app.get_json("/api/v1/services").await;
    assert_eq!(status, 200);
    let services: Vec<ServiceSummary> = serde_json::from_value(body).unwrap();
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
    assert_eq!(body["owner"], "payments");

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
        FleetEvent::Snapshot { services } => assert_eq!(services.len(), 8),
        other => panic!("expected a snapshot first, got {other:?}"),
    }

    let management = app.sandbox.cluster("management").unwrap();
    management.create_typed(&inventory()).unwrap();
    match next_event().await {
        FleetEvent::ServiceUpserted { service } => {
            assert_eq!(service.name, "inventory");
            assert_eq!(service.template, "go-service@1.4.0");
        }
        other => panic!("expected the new service, got {other:?}"),
    }

    management
        .delete(
            "platform.tower.dev/v1alpha1",
            "Component",
            Some("platform"),
            "inventory",
        )
        .unwrap();
    assert_eq!(
        next_event().await,
        FleetEvent::ServiceRemoved {
            name: "inventory".into()
        }
    );
    assert!(app.fleet.service("inventory").is_none());
}
