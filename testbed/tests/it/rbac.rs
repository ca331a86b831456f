//! Tower's generated roles on real API servers: they let every watch work (`both` reads the whole fleet with
//! them), they refuse every write, and a rule missing from them shows on the card as forbidden, not as a blank.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use testbed::world;

use crate::Tower;

/// The `Status` a refused call answers with.
fn refusal(result: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected a Kubernetes Status, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn towers_tokens_read_but_every_write_is_refused_with_a_status() {
    if !testbed::binaries_present() {
        return;
    }
    let testbed = testbed::Testbed::start(&["management", "dev"])
        .await
        .unwrap();
    let management = testbed.admin("management").unwrap();
    world::install_crds(&management, &world::documents_in(&["deploy/crds"]).unwrap())
        .await
        .unwrap();
    // Argo CD's namespace, where the management role reads cluster secrets, is the platform's.
    let argocd =
        json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "argocd" } });
    let mut documents = vec![argocd];
    documents.extend(world::management_rbac().unwrap());
    world::apply_documents(&management, &documents)
        .await
        .unwrap();
    let dev = testbed.admin("dev").unwrap();
    world::apply_documents(&dev, &world::workload_rbac().unwrap())
        .await
        .unwrap();
    let (namespace, account) = world::WORKLOAD_ACCOUNT;
    let workload_token = world::token_for(&dev, namespace, account).await.unwrap();
    let (namespace, account) = world::MANAGEMENT_ACCOUNT;
    let management_token = world::token_for(&management, namespace, account)
        .await
        .unwrap();

    // The workload role reads pods everywhere…
    let as_tower = testbed.client("dev", &workload_token).unwrap();
    let pods: Api<Pod> = Api::all(as_tower.clone());
    pods.list(&ListParams::default()).await.unwrap();
    // …and may not create one, answered with a Status naming who and what.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": "intruder", "namespace": "default" },
        "spec": { "containers": [{ "name": "shell", "image": "busybox" }] },
    }))
    .unwrap();
    let status = refusal(
        Api::<Pod>::namespaced(as_tower, "default")
            .create(&PostParams::default(), &pod)
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(
        status
            .message
            .contains("system:serviceaccount:tower:tower-reader")
            && status.message.contains("cannot create resource \"pods\""),
        "{}",
        status.message
    );

    // The management role reads Components and may not write one: Tower changes intent only by pull request.
    let as_tower = testbed.client("management", &management_token).unwrap();
    let components = kube::api::ApiResource {
        group: "platform.tower.dev".into(),
        version: "v1alpha1".into(),
        api_version: "platform.tower.dev/v1alpha1".into(),
        kind: "Component".into(),
        plural: "components".into(),
    };
    Api::<DynamicObject>::all_with(as_tower.clone(), &components)
        .list(&ListParams::default())
        .await
        .unwrap();
    let component: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "platform.tower.dev/v1alpha1",
        "kind": "Component",
        "metadata": { "name": "intruder", "namespace": "default" },
        "spec": { "owner": "nobody", "repository": "acme/intruder" },
    }))
    .unwrap();
    let status = refusal(
        Api::<DynamicObject>::namespaced_with(as_tower, "default", &components)
            .create(&PostParams::default(), &component)
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(
        status.message.contains("system:serviceaccount:tower:tower"),
        "{}",
        status.message
    );
}

/// The prod card of `payments`, once `ready` holds for it.
async fn prod_card_when(tower: &Tower, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    tower
        .card_when("payments", "prod", what, Duration::from_secs(60), ready)
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_missing_from_towers_role_shows_on_the_card_as_forbidden() {
    if !testbed::binaries_present() {
        return;
    }
    let (sandbox, platform) = crate::sandbox_and_copy().await;
    let prod = platform.testbed.admin("prod").unwrap();
    let roles: Api<ClusterRole> = Api::all(prod);
    let generated = roles.get("tower-reader").await.unwrap();
    let mut without_rollouts = generated.clone();
    if let Some(rules) = without_rollouts.rules.as_mut() {
        rules.retain(|rule| {
            !rule
                .resources
                .iter()
                .flatten()
                .any(|resource| resource == "rollouts")
        });
    }
    roles
        .replace("tower-reader", &PostParams::default(), &without_rollouts)
        .await
        .unwrap();

    let tower = Tower::start(
        &platform
            .tower_config(&sandbox, "127.0.0.1:0".parse().unwrap())
            .unwrap(),
    )
    .await;
    let card = prod_card_when(&tower, "the forbidden Rollouts", |card| {
        card["clusters"][0]["forbidden_kinds"] == json!(["Rollout"])
    })
    .await;
    // The rest of the card still shows: only the Rollout is missing, and the card says why.
    assert!(card["rollout"].is_null(), "{card:#}");
    assert!(
        !card["pods"].as_array().unwrap().is_empty(),
        "the pods still show: {card:#}"
    );
    assert!(card["unreachable_since"].is_null());
    let (_, detail) = tower.get_json("/api/v1/services/payments").await;
    let dev = &detail["cards"][0];
    assert_eq!(dev["environment"], "dev");
    assert!(
        dev["clusters"][0].get("forbidden_kinds").is_none(),
        "{dev:#}"
    );

    // The rule back: the watcher's retry lists Rollouts, and the card shows the Rollout without a restart.
    let mut restored = generated;
    restored.metadata.resource_version = None;
    roles
        .replace("tower-reader", &PostParams::default(), &restored)
        .await
        .unwrap();
    let card = prod_card_when(&tower, "the Rollout after the rule came back", |card| {
        !card["rollout"].is_null()
    })
    .await;
    assert!(
        card["clusters"][0].get("forbidden_kinds").is_none(),
        "{card:#}"
    );
}
