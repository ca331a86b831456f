//! The platform as Argo CD runs it: the five ApplicationSets generate exactly one Application per file of
//! `application-repositories` and matching cluster (checked against the repository's files and the cluster
//! secrets, read here without the sandbox's generators), before and after an onboarding; components move by
//! their CI bots' bumps (also on demand over HTTP) and Argo CD syncs them; an Application can be made
//! OutOfSync over HTTP; and a fresh cluster's components wait for each other's CRDs, then converge.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use sandbox::world::GITOPS_REPOSITORY;
use sandbox::{Options, Sandbox, Simulate};
use serde_json::{Value, json};
use shared::platform::{
    CLUSTER_LABEL, PACKAGE_LABEL, PLATFORM_COMPONENT_LABEL, RESOURCE_KIND_LABEL,
    RESOURCE_NAME_LABEL, VERSION_ANNOTATION,
};

const SETS: [&str; 5] = [
    "taskapp-platform",
    "taskapp-catalog",
    "taskapp-schemas",
    "taskapp-infra",
    "taskapp-packages",
];

async fn start(prod_clusters: usize, simulate: Simulate, fresh: Option<&str>) -> Sandbox {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.prod_clusters = prod_clusters;
    options.simulate = simulate;
    options.fresh = fresh.map(str::to_owned);
    Sandbox::start_with(options).await.unwrap()
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn label<'a>(value: &'a Value, key: &str) -> &'a str {
    value["metadata"]["labels"][key]
        .as_str()
        .unwrap_or_default()
}

/// Every YAML file at the head of main of `application-repositories`, parsed, by path.
fn main_files(sandbox: &Sandbox) -> BTreeMap<String, Value> {
    let git = sandbox.repositories().git(GITOPS_REPOSITORY);
    git.run(&["ls-tree", "-r", "--name-only", "main"])
        .unwrap()
        .lines()
        .filter(|path| path.ends_with(".yaml"))
        .map(|path| {
            let content = git.run(&["show", &format!("main:{path}")]).unwrap();
            let parsed: Value = serde_saphyr::from_str(&content)
                .unwrap_or_else(|e| panic!("{path} is not YAML: {e}"));
            (path.to_owned(), parsed)
        })
        .collect()
}

/// The clusters Argo CD's secrets register, as (name, environment label).
fn registered_clusters(sandbox: &Sandbox) -> Vec<(String, String)> {
    sandbox
        .cluster("management")
        .unwrap()
        .list_namespaced("v1", "Secret", "argocd")
        .into_iter()
        .filter(|s| label(s, "argocd.argoproj.io/secret-type") == "cluster")
        .map(|s| {
            let environment = label(&s, "environment").to_owned();
            let secret: Secret = serde_json::from_value(s).unwrap();
            let name = String::from_utf8(secret.data.unwrap()["name"].0.clone()).unwrap();
            (name, environment)
        })
        .collect()
}

/// What `set` must generate: its files at the head of main crossed with the clusters its generator selects,
/// named as its template names them.
fn expected(
    set: &str,
    files: &BTreeMap<String, Value>,
    clusters: &[(String, String)],
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (path, file) in files {
        let parts: Vec<&str> = path.trim_end_matches(".yaml").split('/').collect();
        let param = |pointer: &str| text(file, pointer).to_owned();
        let of_environment = |environment: String| {
            clusters
                .iter()
                .filter(move |(_, e)| *e == environment)
                .map(|(name, _)| name.clone())
        };
        let registered = |cluster: &str| clusters.iter().any(|(name, _)| name == cluster);
        match (set, parts.as_slice()) {
            ("taskapp-platform", ["platform", ..]) => {
                for _ in of_environment("management".into()) {
                    names.insert(format!(
                        "{}-{}",
                        param("/kind").to_lowercase(),
                        param("/metadata/name")
                    ));
                }
            }
            ("taskapp-catalog", ["components", _, "environments", _]) => {
                for cluster in of_environment(param("/environment")) {
                    names.insert(format!("{}-{cluster}", param("/component")));
                }
            }
            ("taskapp-schemas", ["components", _, "schema", _]) => {
                for cluster in of_environment(param("/environment")) {
                    names.insert(format!("{}-schema-{cluster}", param("/database")));
                }
            }
            ("taskapp-infra", ["infra", component, cluster]) if registered(cluster) => {
                names.insert(format!("infra-{component}-{cluster}"));
            }
            ("taskapp-packages", ["packages", package, cluster]) if registered(cluster) => {
                names.insert(format!("packages-{package}-{cluster}"));
            }
            _ => {}
        }
    }
    names
}

/// The Applications `set`'s status lists as its own.
fn listed(sandbox: &Sandbox, set: &str) -> Vec<Value> {
    sandbox
        .cluster("management")
        .unwrap()
        .get(
            "argoproj.io/v1alpha1",
            "ApplicationSet",
            Some("argocd"),
            set,
        )
        .unwrap()["status"]["resources"]
        .as_array()
        .unwrap()
        .clone()
}

/// The Applications whose owner reference names `set`, by name.
fn owned(sandbox: &Sandbox, set: &str) -> BTreeMap<String, Value> {
    sandbox
        .cluster("management")
        .unwrap()
        .list("argoproj.io/v1alpha1", "Application")
        .into_iter()
        .filter(|app| {
            app["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|owner| owner["kind"] == "ApplicationSet" && owner["name"] == set)
        })
        .map(|app| (text(&app, "/metadata/name").to_owned(), app))
        .collect()
}

fn app(sandbox: &Sandbox, name: &str) -> Value {
    sandbox
        .cluster("management")
        .unwrap()
        .get("argoproj.io/v1alpha1", "Application", Some("argocd"), name)
        .unwrap_or(Value::Null)
}

/// Each set owns exactly the Applications its files and clusters make, lists them in its status, and
/// labels them as the server finds them.
fn assert_generated_from_main(sandbox: &Sandbox) {
    let files = main_files(sandbox);
    let clusters = registered_clusters(sandbox);
    assert!(
        clusters
            .iter()
            .any(|(name, env)| name == "management" && env == "management"),
        "{clusters:?}"
    );
    for set in SETS {
        let wanted = expected(set, &files, &clusters);
        let apps = owned(sandbox, set);
        let made: BTreeSet<String> = apps.keys().cloned().collect();
        assert!(!wanted.is_empty(), "{set} generates nothing");
        assert_eq!(made, wanted, "{set}");
        let listed: BTreeSet<String> = listed(sandbox, set)
            .iter()
            .map(|r| text(r, "/name").to_owned())
            .collect();
        assert_eq!(listed, made, "{set}'s status");
        for (name, app) in &apps {
            match set {
                "taskapp-platform" => {
                    assert!(
                        app["metadata"]["labels"]
                            .get(shared::crd::COMPONENT_LABEL)
                            .is_none(),
                        "{name} carries the component label"
                    );
                    let resource = &app["status"]["resources"][0];
                    assert_eq!(label(app, RESOURCE_KIND_LABEL), text(resource, "/kind"));
                    assert_eq!(label(app, RESOURCE_NAME_LABEL), text(resource, "/name"));
                    assert_eq!(app["status"]["resources"].as_array().unwrap().len(), 1);
                    assert_eq!(text(app, "/spec/destination/name"), "management");
                }
                "taskapp-infra" => {
                    let component = label(app, PLATFORM_COMPONENT_LABEL);
                    let cluster = label(app, CLUSTER_LABEL);
                    let file = &files[&format!("infra/{component}/{cluster}.yaml")];
                    let version = text(file, "/chart/version");
                    assert_eq!(
                        app["metadata"]["annotations"][VERSION_ANNOTATION], version,
                        "{name}"
                    );
                    assert_eq!(app["spec"]["sources"][0]["targetRevision"], version);
                    assert_eq!(app["spec"]["sources"][1]["ref"], "values");
                    assert_eq!(text(app, "/spec/destination/name"), cluster);
                }
                "taskapp-packages" => {
                    let package = label(app, PACKAGE_LABEL);
                    let cluster = label(app, CLUSTER_LABEL);
                    let file = &files[&format!("packages/{package}/{cluster}.yaml")];
                    let tag = text(file, "/spec/package").rsplit(':').next().unwrap();
                    assert_eq!(app["metadata"]["annotations"][VERSION_ANNOTATION], tag);
                    assert_eq!(app["status"]["resources"][0]["group"], "pkg.crossplane.io");
                }
                _ => {}
            }
        }
    }
}

#[tokio::test]
async fn every_application_set_makes_one_application_per_file_and_matching_cluster() {
    let sandbox = start(1, Simulate::Off, None).await;
    assert_generated_from_main(&sandbox);
    // The story's examples.
    let operator = app(&sandbox, "infra-release-operator-dev");
    assert_eq!(
        operator["metadata"]["annotations"][VERSION_ANNOTATION],
        "1.9.0"
    );
    assert_eq!(
        app(&sandbox, "infra-release-operator-prod")["metadata"]["annotations"][VERSION_ANNOTATION],
        "1.8.2"
    );
    let crds: Vec<&str> = operator["status"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "CustomResourceDefinition")
        .map(|r| {
            assert_eq!(r["group"], "apiextensions.k8s.io");
            text(r, "/name")
        })
        .collect();
    assert!(crds.contains(&"releases.platform.tower.dev"), "{crds:?}");
    let monitored: Vec<String> = owned(&sandbox, "taskapp-infra")
        .into_values()
        .filter(|a| {
            a["status"]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["kind"] == "ServiceMonitor" && r["group"] == "monitoring.coreos.com")
        })
        .map(|a| label(&a, PLATFORM_COMPONENT_LABEL).to_owned())
        .collect();
    assert!(!monitored.iter().any(|c| c == "metrics-stack"));
    assert!(monitored.iter().any(|c| c == "tower"));
    let release = app(&sandbox, "release-payments-prod");
    assert_eq!(label(&release, RESOURCE_KIND_LABEL), "Release");
    assert_eq!(label(&release, shared::crd::ENVIRONMENT_LABEL), "prod");
    assert_eq!(
        text(&release, "/spec/source/directory/include"),
        "payments-release.yaml"
    );
    assert_eq!(
        label(&app(&sandbox, "component-payments"), RESOURCE_KIND_LABEL),
        "Component"
    );
    for converged in owned(&sandbox, "taskapp-infra").values() {
        assert_eq!(text(converged, "/status/sync/status"), "Synced");
        assert_eq!(text(converged, "/status/health/status"), "Healthy");
        assert_eq!(text(converged, "/status/operationState/phase"), "Succeeded");
        assert!(
            !converged["status"]["history"]
                .as_array()
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn with_two_prod_clusters_each_gets_its_own_component_and_package_applications() {
    let sandbox = start(2, Simulate::Off, None).await;
    assert_generated_from_main(&sandbox);
    for name in [
        "infra-metrics-stack-prod-eu",
        "infra-metrics-stack-prod-us",
        "packages-provider-aws-rds-prod-us",
        "payments-schema-prod-eu",
    ] {
        assert!(!app(&sandbox, name).is_null(), "no {name}");
    }
    assert!(app(&sandbox, "infra-metrics-stack-prod").is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_onboarding_adds_the_applications_its_files_generate_and_no_others() {
    let sandbox = start(1, Simulate::Manual, None).await;
    let simulator = sandbox.simulator().unwrap();
    // The repository only the catalog knows gets onboarded, at its newest commit.
    let service = sandbox::world::CATALOG_ONLY.name;
    let head = sandbox
        .repositories()
        .git(service)
        .log("main", None, 0, 1)
        .unwrap()
        .remove(0);
    let short = &head.sha[..7];
    let component = shared::crd::Component::new(
        service,
        shared::crd::ComponentSpec {
            owner: sandbox::world::CATALOG_ONLY.team.into(),
            repository: format!("acme/{service}"),
            template: shared::crd::TemplateRef {
                name: "node-service".into(),
                version: sandbox::world::TEMPLATE_VERSION.into(),
            },
            description: sandbox::world::CATALOG_ONLY.description.into(),
            depends_on: vec![],
        },
    );
    let mut files = vec![(
        sandbox::platform::component_path(service),
        serde_saphyr::to_string(&component).unwrap(),
    )];
    for environment in ["dev", "prod"] {
        let mut release = shared::crd::Release::new(
            &format!("{service}-{environment}"),
            shared::crd::ReleaseSpec {
                component: service.into(),
                environment: environment.into(),
                version: short.into(),
                image: shared::crd::ImageRef {
                    repository: format!("ghcr.io/acme/{service}"),
                    tag: short.into(),
                },
                chart: shared::crd::ChartRef {
                    repository: format!("acme/{service}"),
                    path: "chart".into(),
                    revision: short.into(),
                },
                auto_deploy: environment == "dev",
                databases: vec![],
            },
        );
        release.metadata.namespace = Some("platform".into());
        release.metadata.labels = Some(sandbox::platform::labels(service, environment));
        files.push((
            sandbox::platform::release_path(service, environment),
            serde_saphyr::to_string(&release).unwrap(),
        ));
    }
    crate::simulator::merge_files(
        &sandbox,
        &files,
        &format!("Onboard {service}"),
        &format!("tower/onboard/{service}"),
    )
    .await;
    let mut seen = Vec::new();
    for _ in 0..120 {
        simulator.advance(Duration::from_secs(1));
        let catalog = app(&sandbox, &format!("{service}-prod"));
        let platform = app(&sandbox, &format!("release-{service}-prod"));
        for (what, present) in [
            ("platform Application", !platform.is_null()),
            ("catalog Application", !catalog.is_null()),
        ] {
            if present && !seen.contains(&what) {
                seen.push(what);
            }
        }
        if text(&catalog, "/status/sync/status") == "Synced" {
            break;
        }
    }
    assert_eq!(
        seen,
        ["platform Application", "catalog Application"],
        "{:#?}",
        simulator.journal()
    );
    let component_app = app(&sandbox, &format!("component-{service}"));
    assert_eq!(text(&component_app, "/status/sync/status"), "Synced");
    assert_eq!(
        text(&component_app, "/status/operationState/phase"),
        "Succeeded"
    );
    assert_generated_from_main(&sandbox);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bump_over_http_is_the_ci_bots_commit_and_argo_cd_syncs_the_new_version() {
    let sandbox = start(1, Simulate::Manual, None).await;
    let simulator = sandbox.simulator().unwrap();
    let client = reqwest::Client::new();
    let bump = |body: Value| {
        let request = client
            .post(format!("{}/sandbox/platform/bump", sandbox.url()))
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, bumped) = bump(json!({"component": "release-operator", "cluster": "dev"})).await;
    assert_eq!(status, 200, "{bumped}");
    assert_eq!(bumped["version"], "1.9.1");
    assert_eq!(bumped["previous"], "1.9.0");
    assert_eq!(bumped["author"], "release-operator-ci[bot]");
    assert_eq!(bumped["file"], "infra/release-operator/dev.yaml");
    let commit = text(&bumped, "/commit").to_owned();
    assert_eq!(commit.len(), 40);
    let git = sandbox.repositories().git(GITOPS_REPOSITORY);
    let last = git
        .log("main", Some("infra/release-operator/dev.yaml"), 0, 1)
        .unwrap()
        .remove(0);
    assert_eq!(last.sha, commit);
    assert_eq!(last.author.login, "release-operator-ci[bot]");
    assert_eq!(last.title(), "release-operator: bump to 1.9.1 on dev");
    let values = git
        .run(&["show", "main:values/release-operator/dev.yaml"])
        .unwrap();
    assert!(values.contains("tag: \"1.9.1\""), "{values}");

    let name = "infra-release-operator-dev";
    let mut states: Vec<String> = Vec::new();
    for _ in 0..120 {
        simulator.advance(Duration::from_secs(1));
        let current = app(&sandbox, name);
        let state = format!(
            "{} {} {} {}",
            current["metadata"]["annotations"][VERSION_ANNOTATION]
                .as_str()
                .unwrap(),
            text(&current, "/status/sync/status"),
            text(&current, "/status/operationState/phase"),
            text(&current, "/status/health/status"),
        );
        if states.last() != Some(&state) {
            states.push(state);
        }
        if states.last().map(String::as_str) == Some("1.9.1 Synced Succeeded Healthy") {
            break;
        }
    }
    assert_eq!(
        states,
        [
            "1.9.0 Synced Succeeded Healthy",
            "1.9.1 OutOfSync Succeeded Healthy",
            "1.9.1 OutOfSync Running Healthy",
            "1.9.1 Synced Succeeded Progressing",
            "1.9.1 Synced Succeeded Healthy",
        ]
    );
    let synced = app(&sandbox, name);
    assert_eq!(synced["spec"]["sources"][0]["targetRevision"], "1.9.1");
    assert_eq!(synced["status"]["sync"]["revisions"][0], "1.9.1");
    let history = synced["status"]["history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["revisions"][0], "1.9.1");
    assert_eq!(
        synced["status"]["summary"]["images"][0],
        "ghcr.io/acme/release-operator:1.9.1"
    );
    // Prod did not move; the set's status follows its Applications.
    assert_eq!(
        app(&sandbox, "infra-release-operator-prod")["metadata"]["annotations"][VERSION_ANNOTATION],
        "1.8.2"
    );

    // A third-party component by version, committed by a person.
    let (status, bumped) =
        bump(json!({"component": "argo-rollouts", "cluster": "prod", "version": "2.38.0"})).await;
    assert_eq!(status, 200, "{bumped}");
    assert_eq!(bumped["previous"], "2.37.7");
    assert_eq!(bumped["author"], "root");
    let last = git
        .log("main", Some("infra/argo-rollouts/prod.yaml"), 0, 1)
        .unwrap()
        .remove(0);
    assert_eq!(last.title(), "Bump argo-rollouts to 2.38.0 on prod");

    // Refusals say what is wrong.
    let (status, refused) = bump(json!({"component": "backstage", "cluster": "dev"})).await;
    assert_eq!(status, 404);
    assert!(text(&refused, "/message").contains("no platform component named `backstage`"));
    let (status, refused) = bump(json!({"component": "tower", "cluster": "dev"})).await;
    assert_eq!(status, 404);
    assert_eq!(
        text(&refused, "/message"),
        "tower does not run on a cluster named `dev`; it runs on management"
    );
    let (status, _) = bump(json!({"cluster": "dev"})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_bump_needs_the_simulator() {
    let sandbox = start(1, Simulate::Off, None).await;
    let response = reqwest::Client::new()
        .post(format!("{}/sandbox/platform/bump", sandbox.url()))
        .json(&json!({"component": "release-operator", "cluster": "dev"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_ci_builds_bump_dev_and_management_first_and_prod_one_version_behind() {
    let sandbox = start(1, Simulate::Manual, None).await;
    let simulator = sandbox.simulator().unwrap();
    simulator.start_demo_commits();
    for _ in 0..30 {
        simulator.advance(Duration::from_secs(60));
    }
    let git = sandbox.repositories().git(GITOPS_REPOSITORY);
    let bot: Vec<String> = git
        .log("main", Some("infra/release-operator/"), 0, 50)
        .unwrap()
        .into_iter()
        .rev()
        .filter(|c| c.author.login == "release-operator-ci[bot]")
        .map(|c| c.title().to_owned())
        .collect();
    let at = |title: &str| {
        bot.iter()
            .position(|t| t == title)
            .unwrap_or_else(|| panic!("no {title:?} in {bot:#?}"))
    };
    // The planned history's bumps, then the demo's first build.
    assert!(
        at("release-operator: bump to 1.9.0 on dev") < at("release-operator: bump to 1.9.1 on dev")
    );
    assert!(
        at("release-operator: bump to 1.9.1 on dev")
            < at("release-operator: bump to 1.9.1 on management")
    );
    assert!(
        at("release-operator: bump to 1.9.1 on management")
            < at("release-operator: bump to 1.9.0 on prod")
    );
    // Argo CD synced each; nothing is left waiting.
    for name in [
        "infra-release-operator-dev",
        "infra-release-operator-management",
        "infra-release-operator-prod",
        "infra-tower-management",
    ] {
        let current = app(&sandbox, name);
        assert_eq!(text(&current, "/status/sync/status"), "Synced", "{name}");
        assert_eq!(text(&current, "/status/health/status"), "Healthy", "{name}");
    }
    let tower = git
        .log("main", Some("infra/tower/management.yaml"), 0, 1)
        .unwrap()
        .remove(0);
    assert_eq!(tower.author.login, "tower-ci[bot]");
    assert!(
        tower.title().starts_with("tower: bump to 0.4."),
        "{}",
        tower.title()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_made_out_of_sync_stays_so_until_someone_syncs_it() {
    let sandbox = start(1, Simulate::Manual, None).await;
    let simulator = sandbox.simulator().unwrap();
    let post = |path: String| {
        let request = reqwest::Client::new().post(format!("{}{path}", sandbox.url()));
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, body) =
        post("/sandbox/applications/release-payments-prod/out-of-sync".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resource"]["kind"], "Release");
    assert_eq!(body["resource"]["name"], "payments-prod");
    simulator.advance(Duration::from_secs(300));
    let drifted = app(&sandbox, "release-payments-prod");
    assert_eq!(text(&drifted, "/status/sync/status"), "OutOfSync");
    assert_eq!(text(&drifted, "/status/resources/0/status"), "OutOfSync");
    let entry = listed(&sandbox, "taskapp-platform")
        .into_iter()
        .find(|r| r["name"] == "release-payments-prod")
        .unwrap();
    assert_eq!(entry["status"], "OutOfSync");

    // A service's drifts in its ConfigMap.
    let (status, body) = post("/sandbox/applications/ledger-dev/out-of-sync".into()).await;
    assert_eq!(status, 200);
    assert_eq!(body["resource"]["kind"], "ConfigMap");

    let (status, body) = post("/sandbox/applications/no-such-app/out-of-sync".into()).await;
    assert_eq!(status, 404);
    assert_eq!(
        text(&body, "/message"),
        "no Application named `no-such-app` in argocd"
    );
}

#[tokio::test]
async fn only_a_workload_cluster_comes_up_fresh() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.fresh = Some("management".into());
    let error = Sandbox::start_with(options).await.err().unwrap();
    assert!(error.to_string().contains("not `management`"), "{error:#}");
}

/// The state of a fresh cluster's Application in one line, for following it.
fn standing(app: &Value) -> String {
    format!(
        "{} {} {}",
        text(app, "/status/sync/status"),
        text(app, "/status/health/status"),
        text(app, "/status/operationState/phase"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_cluster_waits_for_the_metrics_stacks_crds_then_converges() {
    let sandbox = start(1, Simulate::Manual, Some("dev")).await;
    let simulator = sandbox.simulator().unwrap();
    let start_at = simulator.now();
    let fresh: Vec<String> = owned(&sandbox, "taskapp-infra")
        .into_keys()
        .chain(owned(&sandbox, "taskapp-packages").into_keys())
        .filter(|name| name.ends_with("-dev"))
        .collect();
    assert_eq!(fresh.len(), 6 + 3, "{fresh:?}");
    for name in &fresh {
        let unsynced = app(&sandbox, name);
        assert_eq!(standing(&unsynced), "OutOfSync Missing ", "{name}");
        assert!(unsynced["status"]["history"].as_array().unwrap().is_empty());
    }
    // Other clusters are as ever.
    assert_eq!(
        standing(&app(&sandbox, "infra-metrics-stack-prod")),
        "Synced Healthy Succeeded"
    );

    let monitor_message = "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for \
        requested resource platform-system/release-operator. Make sure the \"ServiceMonitor\" CRD is \
        installed on the destination cluster.";
    let mut waited_for_monitors = None;
    let mut waited_for_providers = false;
    let mut metrics_synced = None;
    let mut metrics_healthy = None;
    let mut converged = None;
    for _ in 0..900 {
        simulator.advance(Duration::from_secs(1));
        let now = simulator.now();
        let operator = app(&sandbox, "infra-release-operator-dev");
        if text(&operator, "/status/operationState/phase") == "Failed"
            && waited_for_monitors.is_none()
        {
            assert_eq!(standing(&operator), "OutOfSync Missing Failed");
            let message = text(&operator, "/status/operationState/message");
            assert!(
                message.starts_with("one or more synchronization tasks are not valid (retried ")
                    && message.ends_with(" times)."),
                "{message}"
            );
            let result = &operator["status"]["operationState"]["syncResult"]["resources"][0];
            assert_eq!(result["kind"], "ServiceMonitor");
            assert_eq!(result["status"], "SyncFailed");
            assert_eq!(result["message"], monitor_message);
            let condition = &operator["status"]["conditions"][0];
            assert_eq!(condition["type"], "SyncError");
            assert_eq!(condition["message"], monitor_message);
            waited_for_monitors = Some(now);
        }
        let provider = app(&sandbox, "packages-provider-aws-rds-dev");
        if text(&provider, "/status/conditions/0/message")
            .contains("could not find pkg.crossplane.io/Provider")
        {
            waited_for_providers = true;
        }
        let metrics = app(&sandbox, "infra-metrics-stack-dev");
        if text(&metrics, "/status/sync/status") == "Synced" && metrics_synced.is_none() {
            metrics_synced = Some(now);
        }
        if text(&metrics, "/status/health/status") == "Healthy" && metrics_healthy.is_none() {
            metrics_healthy = Some(now);
            // While the metrics stack settled, the operator was still waiting for its CRD.
            assert_ne!(standing(&operator), "Synced Healthy Succeeded");
        }
        if fresh
            .iter()
            .all(|name| standing(&app(&sandbox, name)) == "Synced Healthy Succeeded")
        {
            converged = Some(now);
            break;
        }
    }
    let journal = simulator.journal();
    let waited = waited_for_monitors.unwrap_or_else(|| panic!("nothing waited: {journal:#?}"));
    assert!(
        waited_for_providers,
        "no package waited for crossplane: {journal:#?}"
    );
    let (synced, healthy) = (metrics_synced.unwrap(), metrics_healthy.unwrap());
    let settling = healthy.duration_since(synced).as_secs();
    assert!(
        (150..=200).contains(&settling),
        "the metrics stack settled in {settling} s"
    );
    let converged = converged.unwrap_or_else(|| panic!("never converged: {journal:#?}"));
    assert!(waited < healthy && healthy < converged);
    // At `--speed 10`, a minute of wall time.
    let took = converged.duration_since(start_at).as_secs();
    assert!(took <= 600, "converged after {took} s");
    let operator = app(&sandbox, "infra-release-operator-dev");
    assert!(operator["status"].get("conditions").is_none(), "{operator}");
    assert!(
        operator["status"]["operationState"]["retryCount"]
            .as_u64()
            .unwrap()
            >= 1
    );
}
