//! The simulator on a manual clock: merges, pushes and sync requests go in through the forge, the git
//! repositories and Argo CD's HTTP API as a client would send them; the world it moves is read back from
//! the clusters and `git log`.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use octocrab::Octocrab;
use octocrab::models::{AppId, InstallationId};
use octocrab::params::repos::Reference;
use sandbox::forge::{self, Forge};
use sandbox::world::{self, GITOPS_REPOSITORY, REGISTRY};
use sandbox::{Options, Sandbox, Simulate};
use serde_json::{Value, json};

async fn manual(seed: u64) -> Sandbox {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.simulate = Simulate::Manual;
    options.seed = seed;
    Sandbox::start_with(options).await.unwrap()
}

fn installation(sandbox: &Sandbox) -> Octocrab {
    let (app_id, pem) = Forge::demo_app();
    Octocrab::builder()
        .base_uri(format!("{}/github/", sandbox.url()))
        .unwrap()
        .app(
            AppId(app_id),
            jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
        )
        .build()
        .unwrap()
        .installation(InstallationId(forge::DEMO_INSTALLATION_ID))
        .unwrap()
}

/// Opens a pull request on `application-repositories` writing `content` to `path`, as Tower's GitHub App
/// does, and merges it as grace.
pub(crate) async fn merge_change(
    sandbox: &Sandbox,
    path: &str,
    content: &str,
    title: &str,
    branch: &str,
) {
    let changed = merge_files(
        sandbox,
        &[(path.to_string(), content.to_string())],
        title,
        branch,
    )
    .await;
    assert_eq!(changed, [path]);
}

/// Opens one pull request on `application-repositories` writing each of `files` (path, content), as Tower's
/// GitHub App does through the forge's git data API, merges it as grace, and answers the files it changed.
pub(crate) async fn merge_files(
    sandbox: &Sandbox,
    files: &[(String, String)],
    title: &str,
    branch: &str,
) -> Vec<String> {
    let octo = installation(sandbox);
    let repo = octo.repos("acme", GITOPS_REPOSITORY);
    let main = repo
        .get_ref(&Reference::Branch("main".into()))
        .await
        .unwrap();
    let octocrab::models::repos::Object::Commit { sha: main_sha, .. } = main.object else {
        panic!("main is not a commit");
    };
    let base = repo.get_commit(&main_sha).await.unwrap();
    let mut entries = Vec::new();
    for (path, content) in files {
        let blob = repo
            .create_blob(content.as_str())
            .encoding("utf-8")
            .send()
            .await
            .unwrap();
        entries.push(
            octocrab::models::git::CreateTreeEntry::new(path, "100644", "blob").with_sha(&blob.sha),
        );
    }
    let tree = repo
        .create_tree(entries)
        .base_tree(&base.tree.sha)
        .send()
        .await
        .unwrap();
    let commit = octo
        .git("acme", GITOPS_REPOSITORY)
        .create_commit(title, &tree.sha)
        .parents(vec![main_sha])
        .send()
        .await
        .unwrap();
    repo.create_ref(&Reference::Branch(branch.into()), &commit.sha)
        .await
        .unwrap();
    let pull = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .create(title, branch, "main")
        .send()
        .await
        .unwrap();
    sandbox
        .forge()
        .merge(GITOPS_REPOSITORY, pull.number, "grace")
        .await
        .unwrap()
        .files_changed
}

fn get(sandbox: &Sandbox, cluster: &str, kind: (&str, &str), ns: &str, name: &str) -> Value {
    sandbox
        .cluster(cluster)
        .unwrap()
        .get(kind.0, kind.1, Some(ns), name)
        .unwrap_or(Value::Null)
}

fn app(sandbox: &Sandbox, name: &str) -> Value {
    get(
        sandbox,
        "management",
        ("argoproj.io/v1alpha1", "Application"),
        "argocd",
        name,
    )
}

fn rollout(sandbox: &Sandbox, env: &str, service: &str) -> Value {
    get(
        sandbox,
        env,
        ("argoproj.io/v1alpha1", "Rollout"),
        service,
        service,
    )
}

fn pod_images(sandbox: &Sandbox, env: &str, service: &str) -> Vec<String> {
    sandbox
        .cluster(env)
        .unwrap()
        .list_namespaced("v1", "Pod", service)
        .iter()
        .filter(|p| p["metadata"]["labels"]["rollouts-pod-template-hash"].is_string())
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn seconds(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merging_a_prod_release_change_derives_syncs_and_steps_the_canary_to_healthy() {
    let sandbox = manual(42).await;
    let simulator = sandbox.simulator().unwrap();
    let plan = world::service("payments").unwrap();
    let dev = sandbox
        .repositories()
        .histories()
        .running(plan, "dev")
        .unwrap()
        .clone();
    let release = sandbox::platform::release(plan, "prod", &dev);
    let yaml = serde_saphyr::to_string(&release).unwrap();
    let history_before = app(&sandbox, "payments-prod")["status"]["history"]
        .as_array()
        .unwrap()
        .len();
    let revision_before = text(
        &rollout(&sandbox, "prod", "payments"),
        "/metadata/annotations/rollout.argoproj.io~1revision",
    );

    merge_change(
        &sandbox,
        &sandbox::platform::release_path("payments", "prod"),
        &yaml,
        "Promote payments to dev's version",
        "tower/promote/payments/prod",
    )
    .await;

    let gitops = sandbox.repositories().git(GITOPS_REPOSITORY);
    let new_image = format!("{REGISTRY}/payments:{}", dev.short());
    let mut seen: Vec<String> = Vec::new();
    let record = |what: String, seen: &mut Vec<String>| {
        if seen.last() != Some(&what) {
            seen.push(what);
        }
    };
    let start = simulator.now();
    let mut step_times = Vec::new();
    for _ in 0..600 {
        simulator.advance(seconds(1));
        let derived = gitops
            .log("main", Some("components/payments/"), 0, 1)
            .unwrap()
            .into_iter()
            .any(|c| c.author.login == "release-operator[bot]" && c.title().contains(dev.short()));
        if derived {
            record("derived".into(), &mut seen);
        }
        let application = app(&sandbox, "payments-prod");
        let sync = text(&application, "/status/sync/status");
        let at = text(&application, "/status/sync/revision");
        if sync == "OutOfSync" {
            record("OutOfSync".into(), &mut seen);
        } else if at == dev.sha {
            record("Synced".into(), &mut seen);
        }
        let r = rollout(&sandbox, "prod", "payments");
        if text(&r, "/metadata/annotations/rollout.argoproj.io~1revision") != revision_before {
            let index = r["status"]["currentStepIndex"].as_i64().unwrap();
            let phase = text(&r, "/status/phase");
            let label = format!("step {index} {phase}");
            if seen.last() != Some(&label) {
                step_times.push((index, phase.clone(), simulator.now()));
            }
            record(label, &mut seen);
        }
        let images = pod_images(&sandbox, "prod", "payments");
        if images.len() == 3 && images.iter().all(|i| *i == new_image) {
            record("pods on the new image".into(), &mut seen);
        }
        if at == dev.sha && text(&application, "/status/health/status") == "Healthy" {
            record("Healthy".into(), &mut seen);
            break;
        }
    }
    // Collapse what repeats while other things move (e.g. "Synced" between step records).
    let order: Vec<&str> = [
        "derived",
        "OutOfSync",
        "Synced",
        "step 0 Progressing",
        "step 1 Progressing",
        "step 1 Paused",
        "step 2 Progressing",
        "step 3 Progressing",
        "step 3 Paused",
        "step 4 Progressing",
        "step 5 Healthy",
        "pods on the new image",
        "Healthy",
    ]
    .to_vec();
    let positions: Vec<usize> = order
        .iter()
        .map(|what| {
            seen.iter()
                .position(|s| s == what)
                .unwrap_or_else(|| panic!("never saw {what}: {seen:#?}"))
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "out of order: {seen:#?}"
    );

    // The pauses took their simulated time.
    let when = |index: i64, phase: &str| {
        step_times
            .iter()
            .find(|(i, p, _)| *i == index && p == phase)
            .map(|(_, _, t)| *t)
            .unwrap()
    };
    assert!(
        when(2, "Progressing")
            .duration_since(when(1, "Paused"))
            .as_secs()
            >= 30
    );
    assert!(
        when(4, "Progressing")
            .duration_since(when(3, "Paused"))
            .as_secs()
            >= 120
    );
    assert!(simulator.now().duration_since(start).as_secs() < 600);

    let application = app(&sandbox, "payments-prod");
    let history = application["status"]["history"].as_array().unwrap();
    assert_eq!(history.len(), history_before + 1);
    assert_eq!(history.last().unwrap()["revision"], dev.sha.as_str());
    assert_eq!(
        application["status"]["operationState"]["phase"],
        "Succeeded"
    );
    let release = get(
        &sandbox,
        "management",
        ("platform.tower.dev/v1alpha1", "Release"),
        "platform",
        "payments-prod",
    );
    assert_eq!(release["status"]["observedVersion"], dev.short());
    // Its derived commit is the release operator's, on main.
    let derived = text(&release, "/status/derivedCommit");
    let log = gitops.log(&derived, None, 0, 1).unwrap();
    assert_eq!(log[0].author.login, "release-operator[bot]");
    let values = gitops
        .run(&["show", "main:components/payments/values/prod.yaml"])
        .unwrap();
    assert!(values.contains(dev.short()), "{values}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_green_push_to_a_service_deploys_it_to_dev_through_auto_deploy() {
    let sandbox = manual(42).await;
    let simulator = sandbox.simulator().unwrap();
    let sha = simulator
        .push_commit("search", "Add synonyms", true)
        .unwrap();
    let short = &sha[..7];
    for _ in 0..180 {
        simulator.advance(seconds(5));
        let application = app(&sandbox, "search-dev");
        if text(&application, "/status/sync/revision") == sha
            && text(&application, "/status/health/status") == "Healthy"
        {
            break;
        }
    }
    let run = get(
        &sandbox,
        "management",
        ("tekton.dev/v1", "PipelineRun"),
        "tekton-ci",
        &format!("search-build-{short}"),
    );
    assert_eq!(run["status"]["conditions"][0]["status"], "True");
    let application = app(&sandbox, "search-dev");
    assert_eq!(text(&application, "/status/sync/revision"), sha);
    assert_eq!(text(&application, "/status/health/status"), "Healthy");
    let release = get(
        &sandbox,
        "management",
        ("platform.tower.dev/v1alpha1", "Release"),
        "platform",
        "search-dev",
    );
    assert_eq!(release["spec"]["version"], short);
    let moves = sandbox
        .repositories()
        .git(GITOPS_REPOSITORY)
        .log(
            "main",
            Some("platform/environments/dev/search-release.yaml"),
            0,
            1,
        )
        .unwrap();
    assert_eq!(moves[0].author.login, "release-operator[bot]");
    assert_eq!(moves[0].title(), format!("Deploy search {short} to dev"));
    let images = pod_images(&sandbox, "dev", "search");
    assert_eq!(images, vec![format!("{REGISTRY}/search:{short}"); 2]);
    // The new pods log.
    let pods = sandbox
        .cluster("dev")
        .unwrap()
        .list_namespaced("v1", "Pod", "search");
    assert!(!pods.is_empty());
    // prod did not move.
    assert_ne!(
        text(&app(&sandbox, "search-prod"), "/status/sync/revision"),
        sha
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_red_push_fails_its_pipeline_run_and_deploys_nothing() {
    let sandbox = manual(42).await;
    let simulator = sandbox.simulator().unwrap();
    let before = text(&app(&sandbox, "cart-dev"), "/status/sync/revision");
    let sha = simulator
        .push_commit("cart", "Rework totals (tests fail)", false)
        .unwrap();
    let name = format!("cart-build-{}", &sha[..7]);
    let mut saw_running = false;
    for _ in 0..120 {
        simulator.advance(seconds(5));
        let run = get(
            &sandbox,
            "management",
            ("tekton.dev/v1", "PipelineRun"),
            "tekton-ci",
            &name,
        );
        if run["status"]["conditions"][0]["reason"] == "Running" {
            saw_running = true;
        }
    }
    assert!(saw_running, "the run was never seen running");
    let run = get(
        &sandbox,
        "management",
        ("tekton.dev/v1", "PipelineRun"),
        "tekton-ci",
        &name,
    );
    assert_eq!(run["status"]["conditions"][0]["reason"], "Failed");
    assert!(run["status"]["skippedTasks"].as_array().unwrap().len() >= 2);
    let test = get(
        &sandbox,
        "management",
        ("tekton.dev/v1", "TaskRun"),
        "tekton-ci",
        &format!("{name}-test"),
    );
    assert_eq!(test["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        text(&app(&sandbox, "cart-dev"), "/status/sync/revision"),
        before
    );
    let moves = sandbox
        .repositories()
        .git(GITOPS_REPOSITORY)
        .log(
            "main",
            Some("platform/environments/dev/cart-release.yaml"),
            0,
            1,
        )
        .unwrap();
    assert!(!moves[0].title().contains(&sha[..7]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argo_cd_sync_request_completes_with_succeeded_and_keeps_who_asked() {
    let sandbox = manual(42).await;
    let simulator = sandbox.simulator().unwrap();
    let before = app(&sandbox, "catalog-prod");
    assert_eq!(before["status"]["sync"]["status"], "OutOfSync");
    let history = before["status"]["history"].as_array().unwrap().len();
    let response = reqwest::Client::new()
        .post(format!(
            "{}/argocd/api/v1/applications/catalog-prod/sync",
            sandbox.url()
        ))
        .bearer_auth(sandbox::ARGOCD_TOKEN)
        .json(&json!({"prune": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        app(&sandbox, "catalog-prod")["status"]["operationState"]["phase"],
        "Running"
    );
    simulator.advance(seconds(10));
    let after = app(&sandbox, "catalog-prod");
    assert_eq!(after["status"]["operationState"]["phase"], "Succeeded");
    assert_eq!(
        after["status"]["operationState"]["operation"]["initiatedBy"]["username"],
        "tower"
    );
    assert_eq!(after["status"]["sync"]["status"], "Synced");
    assert!(after.get("operation").is_none());
    assert_eq!(
        after["status"]["history"].as_array().unwrap().len(),
        (history + 1).min(10)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_migration_shows_the_database_error_and_the_applied_version_stops_before_it() {
    let sandbox = manual(42).await;
    let simulator = sandbox.simulator().unwrap();
    let plan = world::service("payments").unwrap();
    let prod = sandbox
        .repositories()
        .histories()
        .running(plan, "prod")
        .unwrap()
        .clone();
    assert_eq!(prod.migrations.len(), 4);
    let schema = sandbox::platform::database_schema(plan, "prod", &prod.migrations);
    merge_change(
        &sandbox,
        &sandbox::platform::schema_path("payments", "prod"),
        &serde_saphyr::to_string(&schema).unwrap(),
        "Publish payments schema 0004 to prod",
        "tower/schema/payments/prod",
    )
    .await;
    let mut states = Vec::new();
    for _ in 0..60 {
        simulator.advance(seconds(2));
        let schema = get(
            &sandbox,
            "management",
            ("platform.tower.dev/v1alpha1", "DatabaseSchema"),
            "platform",
            "payments-prod",
        );
        let last = text(&schema, "/status/checks/3/state");
        if states.last() != Some(&last) {
            states.push(last);
        }
    }
    assert_eq!(states, ["", "Pending", "Running", "Failed"]);
    let schema = get(
        &sandbox,
        "management",
        ("platform.tower.dev/v1alpha1", "DatabaseSchema"),
        "platform",
        "payments-prod",
    );
    let checks = schema["status"]["checks"].as_array().unwrap();
    assert!(checks[..3].iter().all(|c| c["state"] == "Succeeded"));
    assert_eq!(
        checks[3]["error"],
        "ERROR: column \"refund_id\" of relation \"payments\" already exists (SQLSTATE 42701)"
    );
    assert_eq!(schema["status"]["appliedVersion"], "0003");
    let derived = sandbox
        .repositories()
        .git(GITOPS_REPOSITORY)
        .log("main", Some("components/payments/schema/prod.yaml"), 0, 1)
        .unwrap();
    assert_eq!(derived[0].author.login, "schema-operator[bot]");
}

/// What a run of the simulator leaves behind, without what differs between any two runs (uids,
/// resourceVersions).
fn digest(sandbox: &Sandbox) -> Vec<String> {
    let mut lines = sandbox.simulator().unwrap().journal();
    let management = sandbox.cluster("management").unwrap();
    for a in management.list("argoproj.io/v1alpha1", "Application") {
        lines.push(format!(
            "{} {} {} {}",
            text(&a, "/metadata/name"),
            text(&a, "/status/sync/status"),
            text(&a, "/status/sync/revision"),
            text(&a, "/status/health/status")
        ));
    }
    for run in management.list("tekton.dev/v1", "PipelineRun") {
        lines.push(format!(
            "{} {}",
            text(&run, "/metadata/name"),
            text(&run, "/status/conditions/0/reason")
        ));
    }
    for env in world::ENVIRONMENTS {
        let cluster = sandbox.cluster(env).unwrap();
        for r in cluster.list("argoproj.io/v1alpha1", "Rollout") {
            lines.push(format!(
                "{env} {} {} {} {}",
                text(&r, "/metadata/name"),
                text(&r, "/status/phase"),
                r["status"]["currentStepIndex"],
                text(&r, "/status/stableRS")
            ));
        }
        for p in cluster.list("v1", "Pod") {
            lines.push(format!(
                "{env} {} {} {}",
                text(&p, "/metadata/name"),
                text(&p, "/spec/containers/0/image"),
                p["status"]["containerStatuses"][0]["restartCount"]
            ));
        }
    }
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_with_the_same_seed_move_the_world_the_same_way() {
    let mut runs = Vec::new();
    for _ in 0..2 {
        let sandbox = manual(7).await;
        let simulator = sandbox.simulator().unwrap();
        simulator.start_demo_commits();
        for _ in 0..240 {
            simulator.advance(seconds(10));
        }
        runs.push(digest(&sandbox));
    }
    let pushes = runs[0].iter().filter(|l| l.contains(": pushed ")).count();
    assert!(pushes >= 3, "too few demo commits: {:#?}", runs[0]);
    assert!(
        runs[0].iter().any(|l| l.contains("rollouts:")),
        "{:#?}",
        runs[0]
    );
    assert_eq!(runs[0], runs[1]);
}
