//! Delivery: golden paths, Promote and Rollback as pull requests through the sandbox forge; the exact GitHub
//! request sequence against a recording server answering with GitHub's documented examples; release records.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use server::delivery::builds::Builds;
use server::delivery::pull::{Change, submit};
use server::delivery::releases::ReleaseHistory;
use server::delivery::{Delivery, DeliveryConfig};
use server::error::Error;
use server::upstream::github::{AppClaims, GithubApp};
use shared::crd::{Component, Database, DatabaseSchema, Release};
use shared::delivery::{Intent, PullRequestView, RenderedFile};
use tower::ServiceExt as _;

use crate::{Role, TestApp, eventually};

const REPO: &str = "application-repositories";

pub(crate) async fn send_json(
    app: &TestApp,
    who: &Role,
    method: Method,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let mut request = axum::http::Request::builder()
        .method(method.clone())
        .uri(path);
    if let Some(identity) = who.identity() {
        request = request.header("cookie", app.session_cookie(identity));
    }
    if method != Method::GET {
        request = request
            .header("x-tower-csrf", "1")
            .header("content-type", "application/json");
    }
    let response = app
        .router
        .clone()
        .oneshot(request.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A file on a branch of the sandbox's GitOps repository, if it is there.
pub(crate) fn file_on(app: &TestApp, branch: &str, path: &str) -> Option<String> {
    let git = app.sandbox.repositories().git(REPO);
    git.try_run(&["show", &format!("refs/heads/{branch}:{path}")])
        .unwrap()
}

pub(crate) fn tower_branches(app: &TestApp) -> Vec<String> {
    let git = app.sandbox.repositories().git(REPO);
    git.run(&["for-each-ref", "--format=%(refname)", "refs/heads/tower/"])
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

pub(crate) fn main_head(app: &TestApp) -> String {
    app.sandbox
        .repositories()
        .git(REPO)
        .resolve("refs/heads/main")
        .unwrap()
        .unwrap()
}

fn onboard_form(name: &str, owner: &str) -> Value {
    json!({
        "name": name,
        "owner": owner,
        "description": "Sends invoices: monthly & on demand. # not a comment",
        "template": "go-service",
        "template_version": "1.4.0",
        "auto_deploy": true,
    })
}

#[tokio::test]
async fn each_golden_path_opens_a_pull_request_whose_files_read_back_as_platform_resources() {
    let app = TestApp::start().await;
    let owner = Role::Owner;

    // Preview first: the exact files and diff, nothing written.
    let (status, preview) = send_json(
        &app,
        &owner,
        Method::POST,
        "/api/v1/templates/onboard-service/preview",
        onboard_form("invoices", "payments"),
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["branch"], "tower/onboard/invoices");
    assert!(
        preview["diff"]
            .as_str()
            .unwrap()
            .contains("+++ b/platform/registry/invoices.yaml")
    );
    assert!(tower_branches(&app).is_empty(), "a preview writes nothing");

    // Onboard Service → Component + first dev Release.
    let (status, pull) = send_json(
        &app,
        &owner,
        Method::POST,
        "/api/v1/templates/onboard-service/submit",
        onboard_form("invoices", "payments"),
    )
    .await;
    assert_eq!(status, 201, "{pull}");
    let pull: PullRequestView = serde_json::from_value(pull).unwrap();
    assert!(!pull.reused);
    assert_eq!(pull.branch, "tower/onboard/invoices");
    assert!(pull.labels.contains(&"tower".to_string()));
    let component: Component = serde_saphyr::from_str(
        &file_on(&app, &pull.branch, "platform/registry/invoices.yaml").unwrap(),
    )
    .unwrap();
    assert_eq!(component.spec.owner, "payments");
    assert_eq!(component.spec.repository, "acme/invoices");
    assert_eq!(component.spec.template.version, "1.4.0");
    let release: Release = serde_saphyr::from_str(
        &file_on(
            &app,
            &pull.branch,
            "platform/environments/dev/invoices-release.yaml",
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(release.spec.environment, "dev");
    assert!(release.spec.auto_deploy);
    assert_eq!(release.spec.image.repository, "ghcr.io/acme/invoices");
    assert_eq!(release.spec.chart.revision, release.spec.image.tag);

    // Create deployment: a green build from the service's builds, bound to its database.
    let (status, builds) = send_json(
        &app,
        &owner,
        Method::GET,
        "/api/v1/services/payments/builds",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{builds}");
    let builds = builds.as_array().unwrap();
    assert!(!builds.is_empty());
    let build = builds[1]["version"].as_str().unwrap().to_string();
    let (status, pull) = send_json(
        &app,
        &owner,
        Method::POST,
        "/api/v1/services/payments/templates/create-deployment/submit",
        json!({"environment": "dev", "build": build, "databases": ["payments"]}),
    )
    .await;
    assert_eq!(status, 201, "{pull}");
    let release: Release = serde_saphyr::from_str(
        &file_on(
            &app,
            "tower/deploy/payments/dev",
            "platform/environments/dev/payments-release.yaml",
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(release.spec.version, build);
    assert_eq!(release.spec.image.tag, build);
    assert_eq!(release.spec.chart.revision, build);
    assert_eq!(release.spec.databases[0].database, "payments");
    assert_eq!(release.spec.databases[0].secret_name, "payments-db");

    // Add Database.
    let (status, pull) = send_json(
        &app,
        &owner,
        Method::POST,
        "/api/v1/services/payments/templates/add-database/submit",
        json!({"environment": "dev", "name": "payments-cache", "size": "small"}),
    )
    .await;
    assert_eq!(status, 201, "{pull}");
    let database: Database = serde_saphyr::from_str(
        &file_on(
            &app,
            "tower/database/payments/dev/payments-cache",
            "platform/environments/dev/payments-cache-database.yaml",
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(database.spec.name, "payments-cache");

    // Apply database schema: prod is at 0003; 0004 is published and adds one migration.
    let (status, versions) = send_json(
        &app,
        &owner,
        Method::GET,
        "/api/v1/services/payments/schema-versions",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        versions.as_array().unwrap().last().unwrap()["version"],
        "0004"
    );
    let (status, preview) = send_json(
        &app,
        &owner,
        Method::POST,
        "/api/v1/services/payments/templates/apply-schema/preview",
        json!({"environment": "prod", "version": "0004"}),
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert!(
        preview["body"]
            .as_str()
            .unwrap()
            .contains("0004_add_refund_reference.sql")
    );
    let (status, schema_pull) = send_json(
        &app,
        &owner,
        Method::POST,
        "/api/v1/services/payments/templates/apply-schema/submit",
        json!({"environment": "prod", "version": "0004"}),
    )
    .await;
    assert_eq!(status, 201, "{schema_pull}");
    let schema: DatabaseSchema = serde_saphyr::from_str(
        &file_on(
            &app,
            "tower/schema/payments/prod/payments",
            "platform/environments/prod/payments-schema.yaml",
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(schema.spec.version, "0004");
    assert_eq!(schema.spec.migrations.len(), 4);

    // Only platform/ was written, on every branch.
    let git = app.sandbox.repositories().git(REPO);
    for branch in tower_branches(&app) {
        let changed = git
            .run(&["diff", "--name-only", "refs/heads/main", &branch])
            .unwrap();
        assert!(
            changed.lines().all(|p| p.starts_with("platform/")),
            "{branch}: {changed}"
        );
        assert_eq!(
            git.count(&format!("refs/heads/main..{branch}"), None)
                .unwrap(),
            1,
            "one commit per PR"
        );
    }

    // The PRs tab and the card's pending PRs list them at once, and with CI and mergeability as soon as
    // the background task has read them again; merging works.
    let (status, pulls) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        "/api/v1/pulls",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200);
    let pulls: Vec<PullRequestView> = serde_json::from_value(pulls).unwrap();
    let open = |pulls: &[PullRequestView]| -> Vec<PullRequestView> {
        pulls
            .iter()
            .filter(|p| p.state == shared::delivery::PullState::Open)
            .cloned()
            .collect()
    };
    assert_eq!(open(&pulls).len(), 4);
    let read_again = eventually(Duration::from_secs(10), || async {
        let (_, pulls) = send_json(
            &app,
            &Role::Guest,
            Method::GET,
            "/api/v1/pulls",
            Value::Null,
        )
        .await;
        let pulls: Vec<PullRequestView> = serde_json::from_value(pulls).unwrap();
        let open = open(&pulls);
        open.iter()
            .all(|p| !p.checks.is_empty() && p.mergeable == Some(true))
            .then_some(open)
    })
    .await;
    assert!(
        read_again.is_some_and(|open| open.len() == 4),
        "every open pull request shows its checks and mergeability"
    );
    let (_, mine) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        "/api/v1/services/payments/pulls",
        Value::Null,
    )
    .await;
    assert_eq!(mine.as_array().unwrap().len(), 3);

    let number = schema_pull["number"].as_u64().unwrap();
    app.sandbox
        .forge()
        .merge(REPO, number, "grace")
        .await
        .unwrap();
    let git = app.sandbox.repositories().git(REPO);
    let on_main = git
        .run(&[
            "show",
            "refs/heads/main:platform/environments/prod/payments-schema.yaml",
        ])
        .unwrap();
    assert!(on_main.contains("0004_add_refund_reference.sql"));

    // The merge reaches the Overview's activity feed, linking to the pull request.
    let merged = eventually(Duration::from_secs(15), || async {
        let (_, activity) = app.get_json("/api/v1/activity").await;
        activity
            .as_array()
            .unwrap()
            .iter()
            .find(|item| {
                item["kind"] == "pull_request_merged"
                    && item["link"]
                        .as_str()
                        .is_some_and(|link| link.ends_with(&format!("/pull/{number}")))
            })
            .cloned()
    })
    .await
    .expect("the merge never reached the activity feed");
    assert_eq!(merged["service"], "payments");
    assert_eq!(merged["environment"], "prod");
}

#[tokio::test]
async fn promote_twice_opens_one_pull_request_and_rollback_keeps_the_bindings() {
    let app = TestApp::start().await;
    let detail = app.fleet.service_detail("payments").unwrap();
    let card = |env: &str| {
        detail
            .cards
            .iter()
            .find(|c| c.environment == env)
            .unwrap()
            .clone()
    };
    let dev = card("dev").release.unwrap().version;
    let prod = card("prod").release.unwrap().version;
    let main_prod: Release = serde_saphyr::from_str(
        &file_on(
            &app,
            "main",
            "platform/environments/prod/payments-release.yaml",
        )
        .unwrap(),
    )
    .unwrap();

    let (status, preview) = send_json(
        &app,
        &Role::Owner,
        Method::GET,
        "/api/v1/services/payments/promote/preview",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["from"]["version"], prod.as_str());
    assert_eq!(preview["to"]["version"], dev.as_str());
    assert_eq!(preview["to"]["chart_revision"], dev.as_str());
    assert!(
        !preview["commits"].as_array().unwrap().is_empty(),
        "what changed: {preview}"
    );
    assert_eq!(
        preview["missing_migrations"],
        json!(["0004_add_refund_reference.sql"])
    );
    assert_eq!(preview["schema_first"]["version"], "0004");

    let (status, first) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        "/api/v1/services/payments/promote",
        json!({}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let (status, second) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        "/api/v1/services/payments/promote",
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(first["number"], second["number"]);
    assert_eq!(second["reused"], true);
    let open: Vec<_> = tower_branches(&app);
    assert_eq!(open, ["refs/heads/tower/promote/payments/prod"]);
    let promoted: Release = serde_saphyr::from_str(
        &file_on(
            &app,
            "tower/promote/payments/prod",
            "platform/environments/prod/payments-release.yaml",
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(promoted.spec.version, dev);
    assert_eq!(promoted.spec.image.tag, dev);
    assert_eq!(promoted.spec.chart.revision, dev);
    assert_eq!(promoted.spec.databases, main_prod.spec.databases);

    let (status, rollback) = send_json(
        &app,
        &Role::Owner,
        Method::GET,
        "/api/v1/services/payments/rollback/preview",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{rollback}");
    let previous = rollback["to"]["version"].as_str().unwrap().to_string();
    assert_ne!(previous, prod);
    let (status, pull) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        "/api/v1/services/payments/rollback",
        json!({}),
    )
    .await;
    assert_eq!(status, 201, "{pull}");
    let rolled: Release = serde_saphyr::from_str(
        &file_on(
            &app,
            "tower/rollback/payments/prod",
            "platform/environments/prod/payments-release.yaml",
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(rolled.spec.version, previous);
    assert_eq!(rolled.spec.chart.revision, previous);
    assert_eq!(
        rolled.spec.databases, main_prod.spec.databases,
        "bindings unchanged"
    );
    // The plan's previous prod version of payments is commit 5 of its history.
    let history = app.sandbox.repositories().histories();
    assert_eq!(previous, history.commit("payments", 5).unwrap().short());
    // The schema does not move back: only the Release file changes.
    let changed = app
        .sandbox
        .repositories()
        .git(REPO)
        .run(&[
            "diff",
            "--name-only",
            "refs/heads/main",
            "refs/heads/tower/rollback/payments/prod",
        ])
        .unwrap();
    assert_eq!(
        changed.trim(),
        "platform/environments/prod/payments-release.yaml"
    );

    // Merging the promote PR works.
    app.sandbox
        .forge()
        .merge(REPO, first["number"].as_u64().unwrap(), "grace")
        .await
        .unwrap();
}

#[tokio::test]
async fn invalid_inputs_answer_400_naming_the_field_and_write_nothing() {
    let app = TestApp::start().await;
    let before = main_head(&app);
    let onboard = "/api/v1/templates/onboard-service/submit";
    let long = "a".repeat(300);
    let cases: Vec<(&str, Value, &str)> = vec![
        (onboard, onboard_form("../x", "payments"), "name"),
        (onboard, onboard_form("A B", "payments"), "name"),
        (onboard, onboard_form(&long, "payments"), "name"),
        (onboard, onboard_form("a: {b}", "payments"), "name"),
        (onboard, onboard_form("*anchor", "payments"), "name"),
        (onboard, onboard_form("invoices", "nobody"), "owner"),
        (onboard, onboard_form("payments", "payments"), "name"),
        (
            onboard,
            json!({"name": "x", "owner": "payments", "template": "go-service", "template_version": "1.4.0", "description": "two\nlines"}),
            "description",
        ),
        (onboard, json!([1, 2]), "body"),
        (
            "/api/v1/services/payments/templates/create-deployment/preview",
            json!({"environment": "staging", "build": "abcdef1"}),
            "environment",
        ),
        (
            "/api/v1/services/payments/templates/add-database/submit",
            json!({"environment": "dev", "name": "../etc", "size": "small"}),
            "name",
        ),
        (
            "/api/v1/services/payments/templates/add-database/submit",
            json!({"environment": "dev", "name": "cache", "size": "huge"}),
            "size",
        ),
        (
            "/api/v1/services/payments/templates/apply-schema/submit",
            json!({"environment": "prod", "version": "0009"}),
            "version",
        ),
        (
            "/api/v1/services/payments/templates/apply-schema/submit",
            json!({"environment": "prod", "version": "0002"}),
            "version",
        ),
        (
            "/api/v1/services/payments/templates/create-deployment/submit",
            json!({"environment": "dev", "build": "abcdef1", "databases": ["nope"]}),
            "build",
        ),
    ];
    for (path, body, field) in cases {
        // Writes are rate limited per user (a burst of ten): onboarding cases go as the admin.
        let who = if path == onboard {
            Role::Admin
        } else {
            Role::Owner
        };
        let (status, error) = send_json(&app, &who, Method::POST, path, body.clone()).await;
        assert_eq!(status, 400, "{path} {body}: {error}");
        assert_eq!(error["field"], field, "{path} {body}: {error}");
        assert!(!error["message"].as_str().unwrap().is_empty());
    }
    // A build that is not green: refunds' third commit failed its tests.
    let red = app
        .sandbox
        .repositories()
        .histories()
        .commit("refunds", 2)
        .unwrap()
        .clone();
    assert!(!red.green);
    let (status, error) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        "/api/v1/services/refunds/templates/create-deployment/submit",
        json!({"environment": "prod", "build": red.short()}),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["field"], "build");

    assert!(tower_branches(&app).is_empty(), "no branch created");
    assert_eq!(main_head(&app), before, "nothing written");
}

/// Values an attacker would put where a write's URL names a service, an environment or a template, to make
/// Tower write outside `platform/` or onto a branch outside its pattern (percent-encoded, as they travel).
const HOSTILE_NAMES: &[&str] = &[
    "..",
    "%2e%2e",
    "..%2F..%2Fcomponents",
    "payments%2F..%2Fledger",
    "payments%2Fenvironments",
    "refs%2Fheads%2Fmain",
    ".git",
    "-rf",
    "PAYMENTS",
    "payments%00",
    "payments%0d%0aX-Injected:%201",
    "%E2%80%AEstnemyap",
    "payments.",
    "payments%20",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

#[tokio::test]
async fn hostile_names_in_any_writes_url_or_an_edits_path_never_escape_platform_or_the_branch_pattern()
 {
    let app = TestApp::start().await;
    let before = main_head(&app);
    let valid = |placeholder: &str| match placeholder {
        "name" => "payments",
        "env" => "dev",
        "template" => "add-database",
        other => panic!("a write route with an unexpected placeholder {{{other}}}"),
    };
    let mut cases = 0;
    for route in shared::api::ROUTES
        .iter()
        .filter(|r| r.method == shared::api::Method::Post && r.path.contains('{'))
    {
        let placeholders: Vec<&str> = route
            .path
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect();
        for hostile_in in &placeholders {
            for hostile in HOSTILE_NAMES {
                let mut url = route.path.to_string();
                for placeholder in &placeholders {
                    let value = if placeholder == hostile_in {
                        hostile
                    } else {
                        valid(placeholder)
                    };
                    url = url.replace(&format!("{{{placeholder}}}"), value);
                }
                let (status, error) =
                    send_json(&app, &Role::Admin, Method::POST, &url, json!({})).await;
                cases += 1;
                assert_eq!(status, 400, "{} {url}: {error}", route.name);
                assert_eq!(error["field"], *hostile_in, "{} {url}: {error}", route.name);
            }
        }
    }
    assert!(cases > 100, "{cases} cases");

    // The config editor names its file in the body: every way out of the service's own platform files is
    // refused, naming the path.
    let release = shared::delivery::release_path("payments", "prod");
    for path in [
        format!("{release}/../../../components/payments/values/prod.yaml"),
        "platform/environments/prod/../../components/payments/values/prod.yaml".to_string(),
        format!("/{release}"),
        format!("./{release}"),
        release.replace('/', "\\"),
        format!("{release}\0.yaml"),
        "platform/environments/prod/payments-release.yaml/..".to_string(),
        "/etc/passwd".to_string(),
        ".git/config".to_string(),
    ] {
        let (status, error) = send_json(
            &app,
            &Role::Owner,
            Method::POST,
            &shared::api::PreviewConfigEdit::url("payments"),
            json!({"path": path, "content": "kind: Release\n"}),
        )
        .await;
        assert!(matches!(status, 400 | 422), "{path}: {status} {error}");
        assert_eq!(error["field"], "path", "{path}: {error}");
    }
    assert!(tower_branches(&app).is_empty(), "no branch created");
    assert_eq!(main_head(&app), before, "nothing written");
}

#[tokio::test]
async fn guests_and_other_teams_are_refused_and_nothing_is_written() {
    let app = TestApp::start().await;
    let before = main_head(&app);
    for role in [Role::Guest, Role::OtherTeam] {
        for path in [
            "/api/v1/services/payments/promote",
            "/api/v1/services/payments/rollback",
            "/api/v1/services/payments/templates/add-database/submit",
        ] {
            let (status, error) = send_json(
                &app,
                &role,
                Method::POST,
                path,
                json!({"environment": "dev", "name": "x", "size": "small"}),
            )
            .await;
            assert_eq!(status, 403, "{role:?} {path}: {error}");
        }
        let (status, _) = send_json(
            &app,
            &role,
            Method::GET,
            "/api/v1/services/payments/promote/preview",
            Value::Null,
        )
        .await;
        assert_eq!(status, 403);
        // Onboarding for a team one is not in.
        let (status, error) = send_json(
            &app,
            &role,
            Method::POST,
            "/api/v1/templates/onboard-service/submit",
            onboard_form("invoices", "payments"),
        )
        .await;
        assert_eq!(status, 403, "{role:?}: {error}");
    }
    assert!(tower_branches(&app).is_empty());
    assert_eq!(main_head(&app), before);
}

#[tokio::test]
async fn release_records_list_the_release_commits_with_their_versions_and_diffs() {
    let app = TestApp::start().await;
    let (status, page) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        "/api/v1/releases?service=payments&environment=prod",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let records = page["records"].as_array().unwrap();
    assert!(!records.is_empty());
    let prod = app.fleet.service_detail("payments").unwrap().cards[1]
        .release
        .clone()
        .unwrap()
        .version;
    assert_eq!(records[0]["version"], prod.as_str(), "newest first: {page}");
    assert!(records.iter().any(|r| r["pr_number"].is_u64()), "{page}");
    let sha = records[0]["sha"].as_str().unwrap();
    let (status, detail) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        &format!("/api/v1/releases/{sha}"),
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["service"], "payments");
    assert_eq!(detail["environment"], "prod");
    assert!(
        detail["diff"]
            .as_str()
            .unwrap()
            .contains("payments-release.yaml")
    );

    let (status, error) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        "/api/v1/releases?service=../x",
        Value::Null,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["field"], "service");
    let (status, error) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        "/api/v1/releases?service=payments&cursor=0000000",
        Value::Null,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["field"], "cursor");
}

#[tokio::test]
async fn release_records_name_their_service_and_approvals_and_list_every_service_without_one() {
    let app = TestApp::start().await;
    let page = |query: String| {
        let app = &app;
        async move {
            let (status, page) = send_json(
                app,
                &Role::Guest,
                Method::GET,
                &format!("/api/v1/releases?{query}"),
                Value::Null,
            )
            .await;
            assert_eq!(status, 200, "{query}: {page}");
            serde_json::from_value::<shared::delivery::ReleasePage>(page).unwrap()
        }
    };

    // Without a service: every service's records in prod, newest first, each naming its service, with the
    // same version its service's own page shows.
    let all = page("environment=prod".into()).await;
    assert!(!all.records.is_empty());
    let services: std::collections::BTreeSet<String> = all
        .records
        .iter()
        .filter_map(|r| r.service.clone())
        .collect();
    assert!(
        all.records.iter().all(|r| r.service.is_some()),
        "{:?}",
        all.records
    );
    assert!(services.len() > 1, "{services:?}");
    for service in services.iter().take(3) {
        let own = page(format!("service={service}&environment=prod")).await;
        for record in all
            .records
            .iter()
            .filter(|r| r.service.as_ref() == Some(service))
        {
            if let Some(same) = own.records.iter().find(|r| r.sha == record.sha) {
                assert_eq!(same.version, record.version, "{service} {}", record.sha);
                assert_eq!(same.service.as_deref(), Some(service.as_str()));
            }
        }
    }
    if let Some(cursor) = &all.next_cursor {
        let next = page(format!("environment=prod&cursor={cursor}")).await;
        assert!(
            next.records
                .iter()
                .all(|r| all.records.iter().all(|first| first.sha != r.sha)),
            "no record twice"
        );
    }

    // A Promote the demo reviewer approved and merged: its record says who approved it.
    let (status, opened) = send_json(
        &app,
        &Role::Owner,
        Method::POST,
        "/api/v1/services/payments/promote",
        json!({}),
    )
    .await;
    assert_eq!(status, 201, "{opened}");
    let number = opened["number"].as_u64().unwrap();
    let approved = eventually(Duration::from_secs(30), || async {
        let (_, pulls) = send_json(
            &app,
            &Role::Guest,
            Method::GET,
            "/api/v1/pulls",
            Value::Null,
        )
        .await;
        let pulls: Vec<PullRequestView> = serde_json::from_value(pulls).unwrap();
        pulls.into_iter().find(|p| {
            p.number == number
                && p.reviews
                    .iter()
                    .any(|r| r.state == shared::delivery::ReviewState::Approved)
        })
    })
    .await
    .expect("the demo reviewer never approved the Promote");
    assert!(approved.blockers.is_empty(), "{:?}", approved.blockers);
    app.sandbox
        .forge()
        .merge(REPO, number, "grace")
        .await
        .unwrap();
    let record = eventually(Duration::from_secs(10), || async {
        page("service=payments&environment=prod".into())
            .await
            .records
            .into_iter()
            .find(|r| r.pr_number == Some(number))
    })
    .await
    .expect("the merged Promote never became a release record");
    assert_eq!(record.service.as_deref(), Some("payments"));
    let approvers: Vec<&str> = record
        .approvals
        .iter()
        .map(|a| a.reviewer.as_str())
        .collect();
    assert_eq!(approvers, [sandbox::forge::DEMO_REVIEWER]);
    let (status, detail) = send_json(
        &app,
        &Role::Guest,
        Method::GET,
        &format!("/api/v1/releases/{}", record.sha),
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["record"]["approvals"][0]["reviewer"], "grace");
    assert_eq!(detail["record"]["service"], "payments");
}

/// A forge serving `repositories` on a local port, and a GitHub App client for it.
async fn standalone_forge(
    repositories: sandbox::git::Repositories,
) -> (GithubApp, tokio::task::JoinHandle<()>) {
    let forge =
        sandbox::forge::Forge::new(repositories, sandbox::forge::ForgeConfig::default()).unwrap();
    let router = axum::Router::new().nest("/github", sandbox::forge::router(forge));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    let (app_id, key) = sandbox::forge::Forge::demo_app();
    let github = GithubApp::new(
        &format!("http://{addr}/github/"),
        app_id,
        &key,
        sandbox::forge::DEMO_INSTALLATION_ID,
    )
    .unwrap();
    (github, server)
}

#[tokio::test]
async fn the_releases_tab_pages_20_at_a_time_through_100_release_commits_with_stable_cursors() {
    let repositories = sandbox::git::release_history_fixture(100).unwrap();
    let git = repositories.git(REPO);
    let (github, server) = standalone_forge(repositories.clone()).await;
    let history = ReleaseHistory::new(github, format!("acme/{REPO}"));

    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = history
            .page(Some("payments"), "prod", cursor.as_deref())
            .await
            .unwrap();
        assert!(page.records.len() <= 20);
        pages.push(page.clone());
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let all: Vec<_> = pages.iter().flat_map(|p| p.records.clone()).collect();
    assert!(all.len() >= 100, "{} records", all.len());
    assert!(
        pages[..pages.len() - 1]
            .iter()
            .all(|p| p.records.len() == 20)
    );
    let unique: std::collections::BTreeSet<_> = all.iter().map(|r| r.sha.clone()).collect();
    assert_eq!(unique.len(), all.len(), "no record twice");
    assert!(all.iter().filter(|r| r.version.is_some()).count() >= 100);
    let calls = history.calls();
    assert_eq!(
        calls.commit_pages, 2,
        "the commit list is read once: {calls:?}"
    );

    // Paging again costs the forge nothing new.
    let second_cursor = pages[0].next_cursor.clone().unwrap();
    let again = history
        .page(Some("payments"), "prod", Some(&second_cursor))
        .await
        .unwrap();
    assert_eq!(again, pages[1]);
    assert_eq!(history.calls().commit_pages, calls.commit_pages);
    assert_eq!(history.calls().files, calls.files);

    // A new release commit arrives: the same cursor gives the same page; the first page starts with it.
    let head = git.resolve("refs/heads/main").unwrap().unwrap();
    let path = "platform/environments/prod/payments-release.yaml";
    let current = git.run(&["show", &format!("{head}:{path}")]).unwrap();
    let who = sandbox::git::people::identity("ada");
    let sha = git
        .commit_files(
            "main",
            &head,
            &who,
            jiff::Timestamp::now().as_second(),
            "Release again",
            [(
                path.to_string(),
                format!("{current}# touched\n").into_bytes(),
            )]
            .into(),
        )
        .unwrap();
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let later = history
        .page(Some("payments"), "prod", Some(&second_cursor))
        .await
        .unwrap();
    assert_eq!(later, pages[1], "stable cursor");
    let first = history.page(Some("payments"), "prod", None).await.unwrap();
    assert_eq!(first.records[0].sha, sha);
    assert_eq!(first.records[1], pages[0].records[0]);
    assert_eq!(
        history.calls().commit_pages,
        calls.commit_pages + 1,
        "one read for the new commit"
    );
    server.abort();
}

// ----- the exact GitHub request sequence, against a recording server -----

#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    method: String,
    path: String,
    auth: String,
    body: Value,
}

#[derive(Default)]
struct MockGithub {
    recorded: Vec<Recorded>,
    branch: Option<String>,
    /// Open pull requests: number, title, body.
    pulls: Vec<(u64, String, String)>,
    fail_next_pull: bool,
    token_lifetime: i64,
    minted: u32,
}

type Shared = Arc<Mutex<MockGithub>>;

const MAIN_SHA: &str = "aa218f56b14c9653891f9e74264a383fa43fefbd";
const MAIN_TREE: &str = "9fb037999f264ba9a7fc6274d15fa3ae2ab98312";
const NEW_TREE: &str = "cd8274d15fa3ae2ab983129fb037999f264ba9a7";
const NEW_COMMIT: &str = "7638417db6d59f3c431d3e1f261cc637155684cd";
const API: &str = "https://api.github.com/repos/acme/application-repositories";

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn not_found(docs: &str) -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        json!({"message": "Not Found", "documentation_url": format!("https://docs.github.com/rest/{docs}"), "status": "404"}),
    )
}

fn reference(name: &str, sha: &str) -> Value {
    // GitHub's documented example of a reference.
    json!({
        "ref": name,
        "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
        "url": format!("{API}/git/{name}"),
        "object": {"type": "commit", "sha": sha, "url": format!("{API}/git/commits/{sha}")}
    })
}

fn git_commit(sha: &str, tree: &str, parent: &str) -> Value {
    json!({
        "sha": sha,
        "node_id": "MDY6Q29tbWl0NmRjYjA5YjViNTc4NzVmMzM0ZjYxYWViZWQ2OTVlMmU0MTkzZGI1ZQ==",
        "url": format!("{API}/git/commits/{sha}"),
        "html_url": format!("https://github.com/acme/application-repositories/commit/{sha}"),
        "author": {"date": "2014-11-07T22:01:45Z", "name": "Monalisa Octocat", "email": "octocat@github.com"},
        "committer": {"date": "2014-11-07T22:01:45Z", "name": "Monalisa Octocat", "email": "octocat@github.com"},
        "message": "Promote payments",
        "tree": {"url": format!("{API}/git/trees/{tree}"), "sha": tree},
        "parents": [{"url": format!("{API}/git/commits/{parent}"), "sha": parent, "html_url": "https://github.com"}],
        "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null}
    })
}

fn pull_json(number: u64, branch: &str, title: &str, body: &str) -> Value {
    json!({
        "url": format!("{API}/pulls/{number}"),
        "id": 1296269,
        "node_id": "MDExOlB1bGxSZXF1ZXN0MQ==",
        "html_url": format!("https://github.com/acme/application-repositories/pull/{number}"),
        "number": number,
        "state": "open",
        "locked": false,
        "title": title,
        "user": {"login": "tower-app[bot]", "id": 1, "type": "Bot"},
        "body": body,
        "labels": [],
        "created_at": "2011-01-26T19:01:12Z",
        "updated_at": "2011-01-26T19:01:12Z",
        "closed_at": null,
        "merged_at": null,
        "merge_commit_sha": null,
        "head": {"label": format!("acme:{branch}"), "ref": branch, "sha": NEW_COMMIT},
        "base": {"label": "acme:main", "ref": "main", "sha": MAIN_SHA},
        "draft": false,
        "merged": false,
        "mergeable": null,
        "mergeable_state": "unknown"
    })
}

async fn mock_github(State(state): State<Shared>, request: Request) -> Response {
    let method = request.method().to_string();
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let auth = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = request.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let mut state = state.lock().unwrap();
    state.recorded.push(Recorded {
        method: method.clone(),
        path: path.clone(),
        auth,
        body: body.clone(),
    });
    let repo = "/repos/acme/application-repositories";
    let branch_ref = format!("{repo}/git/ref/heads/tower/promote/payments/prod");
    match (method.as_str(), path.as_str()) {
        ("POST", "/app/installations/42/access_tokens") => {
            state.minted += 1;
            let expires = jiff::Timestamp::now().as_second() + state.token_lifetime;
            let expires_at = jiff::Timestamp::from_second(expires)
                .unwrap()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            json_response(
                StatusCode::CREATED,
                json!({
                    "token": format!("ghs_16C7e42F292c6912E7710c838347Ae178B4a{}", state.minted),
                    "expires_at": expires_at,
                    "permissions": {"contents": "write", "pull_requests": "write", "checks": "read"},
                    "repository_selection": "selected"
                }),
            )
        }
        ("GET", p) if p == format!("{repo}/git/ref/heads/main") => {
            json_response(StatusCode::OK, reference("refs/heads/main", MAIN_SHA))
        }
        ("GET", p) if p == format!("{repo}/git/commits/{MAIN_SHA}") => json_response(
            StatusCode::OK,
            git_commit(
                MAIN_SHA,
                MAIN_TREE,
                "0000000000000000000000000000000000000000",
            ),
        ),
        ("POST", p) if p == format!("{repo}/git/trees") => json_response(
            StatusCode::CREATED,
            json!({"sha": NEW_TREE, "url": format!("{API}/git/trees/{NEW_TREE}"), "tree": [], "truncated": false}),
        ),
        ("GET", p) if p == branch_ref => match &state.branch {
            Some(sha) => json_response(
                StatusCode::OK,
                reference("refs/heads/tower/promote/payments/prod", sha),
            ),
            None => not_found("git/refs#get-a-reference"),
        },
        ("GET", p) if p == format!("{repo}/git/commits/{NEW_COMMIT}") => {
            json_response(StatusCode::OK, git_commit(NEW_COMMIT, NEW_TREE, MAIN_SHA))
        }
        ("POST", p) if p == format!("{repo}/git/commits") => json_response(
            StatusCode::CREATED,
            git_commit(NEW_COMMIT, NEW_TREE, MAIN_SHA),
        ),
        ("POST", p) if p == format!("{repo}/git/refs") => {
            state.branch = Some(NEW_COMMIT.into());
            json_response(
                StatusCode::CREATED,
                reference("refs/heads/tower/promote/payments/prod", NEW_COMMIT),
            )
        }
        ("GET", p)
            if p.starts_with(&format!(
                "{repo}/pulls?state=open&head=acme%3Atower%2Fpromote%2Fpayments%2Fprod"
            )) =>
        {
            let open: Vec<Value> = state
                .pulls
                .iter()
                .map(|(n, title, body)| pull_json(*n, "tower/promote/payments/prod", title, body))
                .collect();
            json_response(StatusCode::OK, Value::Array(open))
        }
        ("POST", p) if p == format!("{repo}/pulls") => {
            if state.fail_next_pull {
                state.fail_next_pull = false;
                return json_response(
                    StatusCode::BAD_GATEWAY,
                    json!({"message": "Server Error", "documentation_url": "https://docs.github.com/rest"}),
                );
            }
            let title = body["title"].as_str().unwrap_or_default().to_string();
            let text = body["body"].as_str().unwrap_or_default().to_string();
            state.pulls.push((1347, title, text));
            json_response(
                StatusCode::CREATED,
                pull_json(
                    1347,
                    "tower/promote/payments/prod",
                    body["title"].as_str().unwrap_or_default(),
                    body["body"].as_str().unwrap_or_default(),
                ),
            )
        }
        ("POST", p) if p == format!("{repo}/issues/1347/labels") => json_response(
            StatusCode::OK,
            json!([
                {"id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "url": format!("{API}/labels/tower"), "name": "tower", "description": null, "color": "f29513", "default": false},
                {"id": 208045947, "node_id": "MDU6TGFiZWwyMDgwNDU5NDc=", "url": format!("{API}/labels/tower:promote"), "name": "tower:promote", "description": null, "color": "f29513", "default": false}
            ]),
        ),
        _ => not_found("rest"),
    }
}

async fn mock_delivery(
    token_lifetime: i64,
) -> (Delivery, GithubApp, Shared, tokio::task::JoinHandle<()>) {
    let state: Shared = Arc::new(Mutex::new(MockGithub {
        token_lifetime,
        ..MockGithub::default()
    }));
    let router = axum::Router::new()
        .fallback(mock_github)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    let (_, key) = sandbox::forge::Forge::demo_app();
    let github = GithubApp::new(&format!("http://{addr}/"), 4242, &key, 42).unwrap();
    let pipelines = server::pipelines::Pipelines::new(
        server::config::PipelinesConfig::default(),
        "platform.tower.dev/component".into(),
        None,
    );
    let delivery = Delivery::new(
        github.clone(),
        Builds::new(pipelines),
        DeliveryConfig {
            organisation: "acme".into(),
            repository: REPO.into(),
            public_url: "https://tower.example".into(),
            component_label: "platform.tower.dev/component".into(),
            scaffolds: Vec::new(),
            webhook_secret: None,
        },
    );
    (delivery, github, state, server)
}

fn promote_change() -> Change {
    Change {
        intent: Intent::Promote {
            service: "payments".into(),
        },
        title: "Promote payments to 3f2a9c1 in prod".into(),
        body: "Promotes payments.".into(),
        files: vec![RenderedFile {
            path: "platform/environments/prod/payments-release.yaml".into(),
            content: "kind: Release\n".into(),
            previous_content: None,
        }],
    }
}

fn sequence(recorded: &[Recorded]) -> Vec<String> {
    recorded
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[tokio::test]
async fn one_pull_request_is_exactly_this_sequence_of_github_calls() {
    let (delivery, _, state, server) = mock_delivery(3600).await;
    let pull = submit(&delivery, &promote_change(), "ada").await.unwrap();
    assert_eq!(pull.number, 1347);
    assert!(!pull.reused);
    assert_eq!(pull.labels, ["tower", "tower:promote"]);
    let recorded = state.lock().unwrap().recorded.clone();
    let repo = "/repos/acme/application-repositories";
    assert_eq!(
        sequence(&recorded),
        [
            "POST /app/installations/42/access_tokens".to_string(),
            format!("GET {repo}/git/ref/heads/main"),
            format!("GET {repo}/git/commits/{MAIN_SHA}"),
            format!("POST {repo}/git/trees"),
            format!("GET {repo}/git/ref/heads/tower/promote/payments/prod"),
            format!("POST {repo}/git/commits"),
            format!("POST {repo}/git/refs"),
            format!(
                "GET {repo}/pulls?state=open&head=acme%3Atower%2Fpromote%2Fpayments%2Fprod&per_page=10&page=1"
            ),
            format!("POST {repo}/pulls"),
            format!("POST {repo}/issues/1347/labels"),
        ]
    );
    // One commit carrying every file, on main, on the intent's branch.
    assert_eq!(
        recorded[3].body,
        json!({"base_tree": MAIN_TREE, "tree": [{"path": "platform/environments/prod/payments-release.yaml", "mode": "100644", "type": "blob", "content": "kind: Release\n"}]})
    );
    assert_eq!(recorded[5].body["parents"], json!([MAIN_SHA]));
    assert_eq!(recorded[5].body["tree"], NEW_TREE);
    assert_eq!(
        recorded[6].body,
        json!({"ref": "refs/heads/tower/promote/payments/prod", "sha": NEW_COMMIT})
    );
    assert_eq!(recorded[8].body["head"], "tower/promote/payments/prod");
    assert_eq!(recorded[8].body["base"], "main");
    assert_eq!(
        recorded[9].body,
        json!({"labels": ["tower", "tower:promote"]})
    );

    // The App JWT: iss, iat backdated about 60 s, exp at most 10 minutes on.
    let jwt = recorded[0].auth.strip_prefix("Bearer ").unwrap();
    let claims = jsonwebtoken::dangerous::insecure_decode::<AppClaims>(jwt)
        .unwrap()
        .claims;
    let now = jiff::Timestamp::now().as_second();
    assert_eq!(claims.iss, 4242);
    assert!(
        (now - 65..=now - 55).contains(&claims.iat),
        "iat {} now {now}",
        claims.iat
    );
    assert!(
        claims.exp > now && claims.exp - now <= 600,
        "exp {} now {now}",
        claims.exp
    );
    // Every other call used the installation token.
    assert!(
        recorded[1..]
            .iter()
            .all(|r| r.auth == "Bearer ghs_16C7e42F292c6912E7710c838347Ae178B4a1")
    );

    // Asking again: the branch and pull request are found, nothing is pushed or opened, the token is reused.
    state.lock().unwrap().recorded.clear();
    let again = submit(&delivery, &promote_change(), "ada").await.unwrap();
    assert!(again.reused);
    assert_eq!(again.number, 1347);
    let recorded = state.lock().unwrap().recorded.clone();
    let writes: Vec<_> = sequence(&recorded)
        .into_iter()
        .filter(|r| r.starts_with("POST") || r.starts_with("PATCH"))
        .collect();
    assert_eq!(
        writes,
        [
            format!("POST {repo}/git/trees"),
            format!("POST {repo}/issues/1347/labels")
        ]
    );
    assert_eq!(
        state.lock().unwrap().minted,
        1,
        "the installation token is reused"
    );
    server.abort();
}

#[tokio::test]
async fn a_token_near_its_expiry_is_replaced_before_use() {
    let (delivery, github, state, server) = mock_delivery(120).await;
    github.client().await.unwrap();
    github.client().await.unwrap();
    assert_eq!(
        state.lock().unwrap().minted,
        2,
        "a token with 2 minutes left is not used"
    );
    let (_, github_long, state_long, server_long) = mock_delivery(3600).await;
    github_long.client().await.unwrap();
    github_long.client().await.unwrap();
    assert_eq!(state_long.lock().unwrap().minted, 1);
    drop(delivery);
    server.abort();
    server_long.abort();
}

#[tokio::test]
async fn a_forge_failure_after_the_push_is_finished_by_the_retry_without_an_orphan() {
    let (delivery, _, state, server) = mock_delivery(3600).await;
    state.lock().unwrap().fail_next_pull = true;
    let error = submit(&delivery, &promote_change(), "ada")
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Incomplete { .. }), "{error:?}");
    let response = error.into_response();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let body: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("tower/promote/payments/prod")
            && message.contains("Submitting again is safe"),
        "{message}"
    );
    assert!(
        !message.contains("Server Error"),
        "no upstream text in the body"
    );
    assert!(body["request_id"].is_string());

    state.lock().unwrap().recorded.clear();
    let pull = submit(&delivery, &promote_change(), "ada").await.unwrap();
    assert_eq!(pull.number, 1347);
    let recorded = sequence(&state.lock().unwrap().recorded);
    let repo = "/repos/acme/application-repositories";
    assert!(
        !recorded.contains(&format!("POST {repo}/git/commits")),
        "no second commit: {recorded:?}"
    );
    assert!(
        !recorded.contains(&format!("POST {repo}/git/refs")),
        "no second branch: {recorded:?}"
    );
    assert!(
        recorded.contains(&format!("GET {repo}/git/commits/{NEW_COMMIT}")),
        "{recorded:?}"
    );
    assert_eq!(state.lock().unwrap().pulls.len(), 1, "one pull request");
    server.abort();
}
