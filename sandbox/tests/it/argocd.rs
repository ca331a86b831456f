//! The fake Argo CD, driven over real TCP with reqwest as Tower drives the real one.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use sandbox::apiserver::{ClusterStore, Clusters, ResourceType};
use sandbox::argocd::{self, ArgoCd};
use serde_json::{Value, json};

const TOKEN: &str = "sandbox-argocd-token";

fn rollout_type() -> ResourceType {
    ResourceType {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        kind: "Rollout".into(),
        plural: "rollouts".into(),
        namespaced: true,
    }
}

/// An Application shaped like `reference/argocd/application.yaml`, as the ApplicationSet makes them.
fn application(component: &str, environment: &str) -> Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": format!("{component}-{environment}"),
            "namespace": "argocd",
            "labels": {
                "platform.tower.dev/component": component,
                "platform.tower.dev/environment": environment,
            },
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": {
            "project": "default",
            "source": {
                "repoURL": "https://github.com/acme/application-repositories.git",
                "targetRevision": "main",
                "path": format!("components/{component}/environments"),
            },
            "destination": {"name": environment, "namespace": component},
            "syncPolicy": {"automated": {"prune": true, "selfHeal": true}},
        },
        "status": {
            "sync": {"status": "Synced", "revision": "0123456789abcdef0123456789abcdef01234567"},
            "health": {"status": "Healthy"},
        },
    })
}

/// A Rollout with one ReplicaSet and two Pods, plus a Service, for `payments` on prod.
fn seed_payments_workload(prod: &ClusterStore) {
    let labels = json!({"platform.tower.dev/component": "payments", "platform.tower.dev/environment": "prod"});
    let image = "ghcr.io/acme/payments:abc1234";
    let rollout = prod
        .create(json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "payments", "namespace": "payments", "labels": labels},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "payments", "image": image}]}}},
            "status": {"phase": "Healthy"},
        }))
        .unwrap();
    let owner = |o: &Value| {
        json!([{
            "apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"], "controller": true,
        }])
    };
    let replica_set = prod
        .create(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": "payments-7d9f8b6c5d", "namespace": "payments",
                "ownerReferences": owner(&rollout),
                "annotations": {"rollout.argoproj.io/revision": "3"},
            },
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "payments", "image": image}]}}},
            "status": {"replicas": 2, "availableReplicas": 2},
        }))
        .unwrap();
    for suffix in ["x2k8p", "q7m4z"] {
        prod.create(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("payments-7d9f8b6c5d-{suffix}"), "namespace": "payments",
                "ownerReferences": owner(&replica_set),
            },
            "spec": {"nodeName": "prod-node-1", "containers": [{"name": "payments", "image": image}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "payments", "ready": true, "restartCount": 0}]},
        }))
        .unwrap();
    }
    prod.create(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "payments", "namespace": "payments", "labels": labels},
        "spec": {"selector": {"app": "payments"}},
    }))
    .unwrap();
    // Another component's pod in another namespace stays out of the tree.
    prod.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "ledger-1", "namespace": "ledger", "labels": {"platform.tower.dev/component": "ledger"}},
    }))
    .unwrap();
}

struct Fixture {
    clusters: Clusters,
    argo: ArgoCd,
    base: String,
    client: reqwest::Client,
}

impl Fixture {
    async fn start() -> Self {
        let clusters = Clusters::new(
            &["management", "dev", "prod"],
            vec![argocd::application_type(), rollout_type()],
        );
        let management = clusters.cluster("management").unwrap();
        for (component, environment) in [
            ("payments", "prod"),
            ("payments", "dev"),
            ("ledger", "prod"),
            ("ledger", "dev"),
        ] {
            management
                .create(application(component, environment))
                .unwrap();
        }
        seed_payments_workload(&clusters.cluster("prod").unwrap());
        let destinations: BTreeMap<String, ClusterStore> = ["dev", "prod"]
            .into_iter()
            .map(|name| (name.to_owned(), clusters.cluster(name).unwrap()))
            .collect();
        let argo = ArgoCd::new(management, destinations, TOKEN);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new().nest("/argocd", argo.router());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            clusters,
            argo,
            base: format!("http://{addr}/argocd"),
            client: reqwest::Client::new(),
        }
    }

    fn management(&self) -> ClusterStore {
        self.clusters.cluster("management").unwrap()
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    async fn sync(&self, app: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}/api/v1/applications/{app}/sync", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["metadata"]["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn lists_applications_by_label_selector() {
    let f = Fixture::start().await;
    let (status, list) = f
        .get("/api/v1/applications?selector=platform.tower.dev/environment%3Dprod")
        .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(names(&list), ["ledger-prod", "payments-prod"]);
    assert!(list["metadata"]["resourceVersion"].is_string());
    assert_eq!(list["items"][0]["status"]["sync"]["status"], "Synced");

    let (_, all) = f.get("/api/v1/applications").await;
    assert_eq!(names(&all).len(), 4);
    let (_, none) = f.get("/api/v1/applications?projects=other").await;
    assert!(names(&none).is_empty());

    let (status, error) = f.get("/api/v1/applications?selector=a%20in%20(b").await;
    assert_eq!(status, 400);
    assert_eq!(error["code"], 3, "{error}");
}

#[tokio::test]
async fn gets_one_application_and_answers_argo_cds_not_found_shape() {
    let f = Fixture::start().await;
    let (status, app) = f.get("/api/v1/applications/payments-prod").await;
    assert_eq!(status, 200);
    assert_eq!(app["metadata"]["name"], "payments-prod");
    assert_eq!(app["spec"]["destination"]["name"], "prod");

    let (status, error) = f.get("/api/v1/applications/x").await;
    assert_eq!(status, 404);
    let message = "applications.argoproj.io \"x\" not found";
    assert_eq!(
        error,
        json!({"error": message, "code": 5, "message": message})
    );
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_unauthenticated() {
    let f = Fixture::start().await;
    let url = format!("{}/api/v1/applications", f.base);
    let missing = f.client.get(&url).send().await.unwrap();
    assert_eq!(missing.status().as_u16(), 401);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["code"], 16);
    assert!(body["error"].is_string() && body["message"].is_string());

    let wrong = f.client.get(&url).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 401);

    let cookie = f
        .client
        .get(&url)
        .header("Cookie", format!("argocd.token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(cookie.status().as_u16(), 200);
    assert_eq!(f.argo.request_count(), 3);
}

#[tokio::test]
async fn a_sync_is_recorded_once_and_starts_a_running_operation() {
    let f = Fixture::start().await;
    let (status, app) = f
        .sync(
            "payments-prod",
            json!({"revision": "main", "prune": true, "strategy": {"apply": {"force": true}}}),
        )
        .await;
    assert_eq!(status, 200, "{app}");
    assert_eq!(app["status"]["operationState"]["phase"], "Running");
    assert!(app["status"]["operationState"]["startedAt"].is_string());
    assert_eq!(app["operation"]["sync"]["revision"], "main");
    assert_eq!(app["operation"]["sync"]["prune"], true);
    assert_eq!(app["operation"]["initiatedBy"]["username"], argocd::ACCOUNT);

    let stored = f
        .management()
        .get(
            "argoproj.io/v1alpha1",
            "Application",
            Some("argocd"),
            "payments-prod",
        )
        .unwrap();
    assert_eq!(stored["status"]["operationState"]["phase"], "Running");

    let requests = f.argo.sync_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].app, "payments-prod");
    assert_eq!(requests[0].revision.as_deref(), Some("main"));
    assert!(requests[0].prune && requests[0].force && !requests[0].dry_run);

    // A second sync while the first runs is refused, as Argo CD refuses it.
    let (status, error) = f.sync("payments-prod", json!({})).await;
    assert_eq!(status, 400);
    assert_eq!(error["code"], 9, "{error}");

    let (status, error) = f.sync("x", json!({})).await;
    assert_eq!(status, 404, "{error}");
    let bad = f
        .client
        .post(format!("{}/api/v1/applications/ledger-dev/sync", f.base))
        .bearer_auth(TOKEN)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    assert_eq!(bad.json::<Value>().await.unwrap()["code"], 3);
}

#[tokio::test]
async fn a_dry_run_changes_nothing() {
    let f = Fixture::start().await;
    let before = f.management().current_resource_version();
    let (status, app) = f.sync("ledger-dev", json!({"dryRun": true})).await;
    assert_eq!(status, 200);
    assert!(app.get("operation").is_none());
    assert_eq!(f.management().current_resource_version(), before);
    assert!(f.argo.sync_requests()[0].dry_run);
}

#[tokio::test]
async fn the_resource_tree_lists_the_rollout_its_replica_sets_and_pods() {
    let f = Fixture::start().await;
    let (status, tree) = f
        .get("/api/v1/applications/payments-prod/resource-tree")
        .await;
    assert_eq!(status, 200, "{tree}");
    let nodes = tree["nodes"].as_array().unwrap();
    let kinds: Vec<&str> = nodes.iter().map(|n| n["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["Pod", "Pod", "Service", "ReplicaSet", "Rollout"],
        "{tree}"
    );
    let node = |kind: &str| nodes.iter().find(|n| n["kind"] == kind).unwrap();
    let rollout = node("Rollout");
    assert_eq!(rollout["group"], "argoproj.io");
    assert_eq!(rollout["health"]["status"], "Healthy");
    assert!(rollout.get("parentRefs").is_none());
    let replica_set = node("ReplicaSet");
    assert_eq!(replica_set["parentRefs"][0]["kind"], "Rollout");
    assert_eq!(replica_set["parentRefs"][0]["uid"], rollout["uid"]);
    let pod = node("Pod");
    assert_eq!(pod["parentRefs"][0]["name"], "payments-7d9f8b6c5d");
    assert_eq!(pod["health"]["status"], "Healthy");
    assert_eq!(pod["images"][0], "ghcr.io/acme/payments:abc1234");
    assert!(
        pod["info"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == "Containers" && i["value"] == "1/1")
    );
    for node in nodes {
        for field in [
            "namespace",
            "name",
            "version",
            "uid",
            "resourceVersion",
            "createdAt",
        ] {
            assert!(node[field].is_string(), "{field} missing in {node}");
        }
    }

    let (_, empty) = f.get("/api/v1/applications/ledger-dev/resource-tree").await;
    assert_eq!(empty["nodes"], json!([]));
}

#[tokio::test]
async fn the_stream_sends_matching_applications_then_their_changes() {
    let f = Fixture::start().await;
    let response = f
        .client
        .get(format!(
            "{}/api/v1/stream/applications?selector=platform.tower.dev/environment%3Dprod",
            f.base
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events: Vec<Value> = Vec::new();
    let mut changed = false;
    while events.len() < 3 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("timed out waiting for stream events")
            .unwrap()
            .unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if let Some(data) = frame.trim().strip_prefix("data: ") {
                events.push(serde_json::from_str(data).unwrap());
            }
        }
        if events.len() == 2 && !changed {
            changed = true;
            // A change outside the selection is not sent; one inside it is.
            let mut dev = f
                .management()
                .get(
                    "argoproj.io/v1alpha1",
                    "Application",
                    Some("argocd"),
                    "ledger-dev",
                )
                .unwrap();
            dev["status"]["health"]["status"] = json!("Degraded");
            f.management().apply(dev).unwrap();
            let mut prod = f
                .management()
                .get(
                    "argoproj.io/v1alpha1",
                    "Application",
                    Some("argocd"),
                    "payments-prod",
                )
                .unwrap();
            prod["status"]["health"]["status"] = json!("Progressing");
            f.management().apply(prod).unwrap();
        }
    }
    let summary: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["result"]["type"].as_str().unwrap().to_owned(),
                e["result"]["application"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ADDED".to_owned(), "ledger-prod".to_owned()),
            ("ADDED".to_owned(), "payments-prod".to_owned()),
            ("MODIFIED".to_owned(), "payments-prod".to_owned()),
        ]
    );
    assert_eq!(
        events[2]["result"]["application"]["status"]["health"]["status"],
        "Progressing"
    );
}
