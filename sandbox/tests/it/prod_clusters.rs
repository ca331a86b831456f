//! Prod on two clusters (`Options::prod_clusters = 2`): `prod-eu` and `prod-us` each run prod's workloads and
//! no cluster is named `prod`; each prod service has an Application per cluster; `/argocd-us` serves only
//! what deploys to `prod-us` and `/argocd` the rest; a deploy to prod rolls out on both clusters; and a
//! browser test can take a cluster down and back over HTTP.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use sandbox::loki::TENANT;
use sandbox::world::{self, REGISTRY};
use sandbox::{ARGOCD_TOKEN, ArgoCdInstance, Options, Sandbox, Simulate};
use serde_json::{Value, json};

async fn two_prod_clusters(simulate: Simulate) -> Sandbox {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.prod_clusters = 2;
    options.simulate = simulate;
    Sandbox::start_with(options).await.unwrap()
}

/// A GET of `path` on the sandbox (with Argo CD's token, which the clusters ignore): status and JSON body.
async fn get(sandbox: &Sandbox, path: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", sandbox.url()))
        .bearer_auth(ARGOCD_TOKEN)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn post(sandbox: &Sandbox, path: &str, body: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", sandbox.url()))
        .bearer_auth(ARGOCD_TOKEN)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| text(item, "/metadata/name").to_owned())
        .collect()
}

/// The names of the services' Applications (those labelled with a component) in an Argo CD list.
fn service_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| !text(item, "/metadata/labels/platform.tower.dev~1component").is_empty())
        .map(|item| text(item, "/metadata/name").to_owned())
        .collect()
}

const TRACKING: &str = "/metadata/annotations/argocd.argoproj.io~1tracking-id";

#[tokio::test]
async fn each_prod_cluster_runs_payments_pods_of_its_own_and_there_is_no_prod_cluster() {
    let sandbox = two_prod_clusters(Simulate::Off).await;
    let pair = |environment: &str, cluster: &str| (environment.to_owned(), cluster.to_owned());
    assert_eq!(
        sandbox.workload_clusters(),
        [
            pair("dev", "dev"),
            pair("prod", "prod-eu"),
            pair("prod", "prod-us")
        ]
    );

    let (status, _) = get(&sandbox, "/clusters/prod/api/v1/namespaces").await;
    assert_eq!(status, 404, "no cluster is named prod");
    assert!(sandbox.cluster("prod").is_none());

    let mut pods_by_cluster = Vec::new();
    for cluster in ["prod-eu", "prod-us"] {
        let (status, pods) = get(
            &sandbox,
            &format!("/clusters/{cluster}/api/v1/namespaces/payments/pods"),
        )
        .await;
        assert_eq!(status, 200, "{cluster}: {pods}");
        let items = pods["items"].as_array().unwrap();
        assert_eq!(items.len(), 3, "{cluster} runs prod's three payments pods");
        for pod in items {
            assert_eq!(
                text(pod, "/metadata/labels/platform.tower.dev~1component"),
                "payments"
            );
            assert_eq!(
                text(pod, "/metadata/labels/platform.tower.dev~1environment"),
                "prod"
            );
        }
        // The Rollout's objects say which cluster's Application deploys them.
        let (_, rollout) = get(
            &sandbox,
            &format!(
                "/clusters/{cluster}/apis/argoproj.io/v1alpha1/namespaces/payments/rollouts/payments"
            ),
        )
        .await;
        assert!(
            text(&rollout, TRACKING).starts_with(&format!("payments-{cluster}:")),
            "{}",
            text(&rollout, TRACKING)
        );
        // Seeded logs follow the renamed pods.
        let pod = text(&items[0], "/metadata/name");
        let (status, _) = get(
            &sandbox,
            &format!("/clusters/{cluster}/api/v1/namespaces/payments/pods/{pod}/log?tailLines=1"),
        )
        .await;
        assert_eq!(status, 200, "{cluster} serves {pod}'s log");
        pods_by_cluster.push(names(&pods).into_iter().collect::<BTreeSet<_>>());
    }
    assert!(
        pods_by_cluster[0].is_disjoint(&pods_by_cluster[1]),
        "a pod's name tells its cluster: {pods_by_cluster:?}"
    );

    // Argo CD knows both clusters, both as prod.
    let management = sandbox.cluster("management").unwrap();
    let secrets: Vec<(String, String)> = management
        .list_namespaced("v1", "Secret", "argocd")
        .iter()
        .filter(|s| text(s, "/metadata/labels/argocd.argoproj.io~1secret-type") == "cluster")
        .map(|s| {
            (
                text(s, "/metadata/name").to_owned(),
                text(s, "/metadata/labels/environment").to_owned(),
            )
        })
        .collect();
    let wanted = [
        ("cluster-dev", "dev"),
        ("cluster-management", "management"),
        ("cluster-prod-eu", "prod"),
        ("cluster-prod-us", "prod"),
    ]
    .map(|(name, environment)| (name.to_owned(), environment.to_owned()));
    assert_eq!(secrets, wanted);
}

#[tokio::test]
async fn each_argo_cd_serves_only_the_applications_deploying_to_its_clusters() {
    let sandbox = two_prod_clusters(Simulate::Off).await;
    assert_eq!(
        sandbox.argocd_instances(),
        [
            ArgoCdInstance {
                name: "argocd".into(),
                url: format!("{}/argocd", sandbox.url()),
                clusters: vec![],
            },
            ArgoCdInstance {
                name: "argocd-us".into(),
                url: format!("{}/argocd-us", sandbox.url()),
                clusters: vec!["prod-us".into()],
            },
        ]
    );

    let (status, us) = get(&sandbox, "/argocd-us/api/v1/applications/payments-prod-us").await;
    assert_eq!(status, 200, "{us}");
    assert_eq!(us["spec"]["destination"]["name"], "prod-us");
    // Argo CD takes a destination by name or by server, never both.
    assert!(us["spec"]["destination"]["server"].is_null(), "{us}");
    assert_eq!(
        text(&us, "/metadata/labels/platform.tower.dev~1component"),
        "payments"
    );
    assert_eq!(
        text(&us, "/metadata/labels/platform.tower.dev~1environment"),
        "prod"
    );
    let (status, refused) = get(&sandbox, "/argocd/api/v1/applications/payments-prod-us").await;
    assert_eq!(
        status, 404,
        "the main Argo CD does not hold prod-us': {refused}"
    );
    assert_eq!(refused["code"], 5);

    let (status, eu) = get(&sandbox, "/argocd/api/v1/applications/payments-prod-eu").await;
    assert_eq!(status, 200, "{eu}");
    assert_eq!(eu["spec"]["destination"]["name"], "prod-eu");
    let (status, _) = get(&sandbox, "/argocd-us/api/v1/applications/payments-prod-eu").await;
    assert_eq!(status, 404);
    // The two prod Applications deploy the same commit.
    assert_eq!(
        eu["status"]["sync"]["revision"],
        us["status"]["sync"]["revision"]
    );

    // Lists split the same way; nothing is named after a `prod` cluster any more.
    let (_, us_list) = get(&sandbox, "/argocd-us/api/v1/applications").await;
    let us_names = names(&us_list);
    assert_eq!(service_names(&us_list).len(), world::SERVICES.len());
    // The platform's own Applications on prod-us (its components, packages and schemas) are its too.
    assert!(
        us_names.iter().all(|n| n.ends_with("-prod-us")),
        "{us_names:?}"
    );
    assert!(us_names.iter().any(|n| n == "infra-metrics-stack-prod-us"));
    let (_, main_list) = get(&sandbox, "/argocd/api/v1/applications").await;
    let main_names = names(&main_list);
    assert_eq!(service_names(&main_list).len(), 2 * world::SERVICES.len());
    assert!(
        main_names
            .iter()
            .any(|n| n == "infra-metrics-stack-prod-eu")
    );
    assert!(main_names.iter().any(|n| n == "release-payments-prod"));
    for wanted in ["payments-dev", "payments-prod-eu"] {
        assert!(main_names.iter().any(|n| n == wanted), "{main_names:?}");
    }
    assert!(!main_names.iter().any(|n| n.ends_with("-prod-us")));
    // No service deploys to a `prod` cluster (the platform's Release of prod is named after the
    // environment, not a cluster).
    assert!(
        !service_names(&main_list)
            .iter()
            .any(|n| n.ends_with("-prod"))
    );
    // Dev's Application is as with one prod cluster: no destination name.
    let dev = main_list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| text(a, "/metadata/name") == "payments-dev")
        .unwrap();
    assert!(dev["spec"]["destination"].get("name").is_none());

    // A resource tree comes from the instance's own cluster.
    let (status, tree) = get(
        &sandbox,
        "/argocd-us/api/v1/applications/payments-prod-us/resource-tree",
    )
    .await;
    assert_eq!(status, 200);
    let pods: Vec<&str> = tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "Pod")
        .map(|n| text(n, "/name"))
        .collect();
    let on_us: Vec<String> = sandbox
        .cluster("prod-us")
        .unwrap()
        .list_namespaced("v1", "Pod", "payments")
        .iter()
        .map(|p| text(p, "/metadata/name").to_owned())
        .collect();
    assert_eq!(pods.len(), 3);
    assert!(
        pods.iter().all(|p| on_us.iter().any(|u| u == p)),
        "{pods:?}"
    );
}

#[tokio::test]
async fn a_sync_is_recorded_only_by_the_argo_cd_holding_the_application() {
    let sandbox = two_prod_clusters(Simulate::Off).await;
    let synced = |instance: &str| -> Vec<String> {
        sandbox
            .argocd_named(instance)
            .unwrap()
            .sync_requests()
            .into_iter()
            .map(|request| request.app)
            .collect()
    };

    let (status, body) = post(
        &sandbox,
        "/argocd-us/api/v1/applications/payments-prod-us/sync",
        r#"{"prune": true}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["operationState"]["phase"], "Running");
    assert_eq!(synced("argocd-us"), ["payments-prod-us"]);
    assert!(synced("argocd").is_empty());

    // Asking the wrong instance is asking for an Application it does not have.
    let (status, _) = post(
        &sandbox,
        "/argocd/api/v1/applications/payments-prod-us/sync",
        "{}",
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = post(
        &sandbox,
        "/argocd/api/v1/applications/payments-prod-eu/sync",
        "{}",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(synced("argocd"), ["payments-prod-eu"]);
    assert_eq!(synced("argocd-us"), ["payments-prod-us"]);
    assert_eq!(
        sandbox.argocd().sync_requests().len(),
        1,
        "argocd() is the main instance"
    );
    assert!(sandbox.argocd_named("argocd-eu").is_none());
}

#[tokio::test]
async fn the_reachable_endpoint_takes_a_cluster_down_and_brings_it_back() {
    let sandbox = two_prod_clusters(Simulate::Off).await;
    let namespaces = "/api/v1/namespaces";
    let status_of = |cluster: &'static str| {
        let sandbox = &sandbox;
        async move {
            get(sandbox, &format!("/clusters/{cluster}{namespaces}"))
                .await
                .0
        }
    };
    assert_eq!(status_of("prod-us").await, 200);

    let (status, body) = post(
        &sandbox,
        "/sandbox/clusters/prod-us/reachable",
        r#"{"reachable": false}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"cluster": "prod-us", "reachable": false}));
    assert_eq!(status_of("prod-us").await, 502, "prod-us answers as down");
    assert_eq!(status_of("prod-eu").await, 200, "prod-eu keeps answering");
    assert!(!sandbox.cluster("prod-us").unwrap().is_reachable());

    let (status, _) = post(
        &sandbox,
        "/sandbox/clusters/prod-us/reachable",
        r#"{"reachable": true}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(status_of("prod-us").await, 200, "prod-us is back");

    let (status, body) = post(
        &sandbox,
        "/sandbox/clusters/prod/reachable",
        r#"{"reachable": false}"#,
    )
    .await;
    assert_eq!(status, 404, "{body}");
    for bad in ["", "{}", r#"{"reachable": "no"}"#, "[false]", "reachable"] {
        let (status, body) = post(&sandbox, "/sandbox/clusters/prod-us/reachable", bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            text(&body, "/message").contains("`reachable`"),
            "{bad}: {body}"
        );
    }
    assert!(
        sandbox.cluster("prod-us").unwrap().is_reachable(),
        "bad requests change nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deploy_to_prod_rolls_out_on_every_prod_cluster() {
    let sandbox = two_prod_clusters(Simulate::Manual).await;
    let simulator = sandbox.simulator().unwrap();
    let plan = world::service("payments").unwrap();
    let dev = sandbox
        .repositories()
        .histories()
        .running(plan, "dev")
        .unwrap()
        .clone();
    let pods_before = |cluster: &str| -> Vec<String> {
        sandbox
            .cluster(cluster)
            .unwrap()
            .list_namespaced("v1", "Pod", "payments")
            .iter()
            .map(|p| text(p, "/metadata/name").to_owned())
            .collect()
    };
    let replaced = [pods_before("prod-eu"), pods_before("prod-us")];
    let management = sandbox.cluster("management").unwrap();
    let application = |name: &str| {
        management
            .get("argoproj.io/v1alpha1", "Application", Some("argocd"), name)
            .unwrap()
    };
    let dev_revision = text(&application("payments-dev"), "/status/sync/revision").to_owned();
    let release = sandbox::platform::release(plan, "prod", &dev);
    crate::simulator::merge_change(
        &sandbox,
        &sandbox::platform::release_path("payments", "prod"),
        &serde_saphyr::to_string(&release).unwrap(),
        "Promote payments to dev's version",
        "tower/promote/payments/prod",
    )
    .await;

    let new_image = format!("{REGISTRY}/payments:{}", dev.short());
    let rolled_out = |cluster: &str| {
        let app = application(&format!("payments-{cluster}"));
        let images: Vec<String> = sandbox
            .cluster(cluster)
            .unwrap()
            .list_namespaced("v1", "Pod", "payments")
            .iter()
            .map(|p| text(p, "/spec/containers/0/image").to_owned())
            .collect();
        text(&app, "/status/sync/revision") == dev.sha
            && text(&app, "/status/health/status") == "Healthy"
            && images.len() == 3
            && images.iter().all(|image| *image == new_image)
    };
    for _ in 0..400 {
        simulator.advance(Duration::from_secs(2));
        if rolled_out("prod-eu") && rolled_out("prod-us") {
            break;
        }
    }
    for cluster in ["prod-eu", "prod-us"] {
        assert!(
            rolled_out(cluster),
            "{cluster} never rolled out: {:#?}",
            simulator.journal()
        );
        let rollout = sandbox
            .cluster(cluster)
            .unwrap()
            .get(
                "argoproj.io/v1alpha1",
                "Rollout",
                Some("payments"),
                "payments",
            )
            .unwrap();
        assert_eq!(text(&rollout, "/status/phase"), "Healthy");
        let history = application(&format!("payments-{cluster}"))["status"]["history"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(history.last().unwrap()["revision"], dev.sha.as_str());
    }
    // The prod deploy left dev alone.
    assert_eq!(
        text(&application("payments-dev"), "/status/sync/revision"),
        dev_revision
    );
    let journal = simulator.journal().join("\n");
    for cluster in ["prod-eu", "prod-us"] {
        assert!(
            journal.contains(&format!("rollouts: payments {cluster} Healthy")),
            "{journal}"
        );
    }
    // The replaced pods' last lines went to Loki, labelled with the cluster they ran on.
    for (cluster, before) in ["prod-eu", "prod-us"].iter().zip(&replaced) {
        let response = reqwest::Client::new()
            .get(format!(
                "{}/loki/api/v1/label/pod/values",
                sandbox.loki_url()
            ))
            .query(&[(
                "query",
                format!(r#"{{cluster="{cluster}",namespace="payments"}}"#),
            )])
            .header("X-Scope-OrgID", TENANT)
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        let kept: Vec<&str> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            before.iter().all(|pod| kept.contains(&pod.as_str())),
            "{cluster}: {before:?} kept {kept:?}"
        );
    }
    // Nothing went to a `prod` cluster or Application.
    assert!(
        management
            .get(
                "argoproj.io/v1alpha1",
                "Application",
                Some("argocd"),
                "payments-prod"
            )
            .is_none()
    );
}
