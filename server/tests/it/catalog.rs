//! The catalog: conditional re-reads (a second scan answered by 304s, counted), pushes read one repository,
//! no periodic scan with webhooks, and services as the union of Components and catalog entries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use server::fleet::Dirty;
use server::fleet::catalog::{Catalog, Lookup, Refresh};
use server::routes::webhooks::sign;
use server::upstream::github::{ForgeRequests, GithubApp};
use shared::crd::{Component, ComponentSpec, TemplateRef};
use shared::fleet::{CatalogState, ServiceSummary};
use tower::ServiceExt as _;

use crate::webhooks::webhook_app;
use crate::{TestApp, eventually};

/// A GitHub answering the organisation's repository list (two pages, GitHub's absolute `Link` between them)
/// and each repository's `catalog-info.yaml`, with `ETag`s and `304 Not Modified`, recording every request.
#[derive(Default)]
struct Stub {
    /// The file of each repository (`None`: no file).
    files: HashMap<String, Option<String>>,
    /// Each request: path and query, whether it was conditional, the status answered.
    requests: Vec<(String, bool, u16)>,
}

type Shared = Arc<Mutex<Stub>>;

const REPOSITORIES: [&str; 3] = ["alpha", "beta", "gamma"];

fn catalog_file(name: &str, description: &str) -> String {
    format!(
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: {name}\n  description: {description}\n  annotations:\n    pagerduty.com/service-id: P{name}\nspec:\n  type: service\n  lifecycle: production\n  owner: group:shop\n"
    )
}

/// GitHub's ETag: a quoted digest of the body (a weak validator would do as well).
fn etag(body: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    format!("\"{:016x}\"", hasher.finish())
}

fn conditional(headers: &HeaderMap, body: String, link: Option<String>) -> (u16, Response) {
    let tag = etag(&body);
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|sent| sent.as_bytes() == tag.as_bytes())
    {
        let response = (StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response();
        return (304, response);
    }
    let mut response = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (header::ETAG, tag),
        ],
        body,
    )
        .into_response();
    if let Some(link) = link.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    (200, response)
}

async fn stub_github(State(stub): State<Shared>, request: Request) -> Response {
    let headers = request.headers().clone();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or_default().to_string();
    let conditional_request = headers.contains_key(header::IF_NONE_MATCH);
    let (status, response) = if request.method() == axum::http::Method::POST
        && path == "/app/installations/2/access_tokens"
    {
        let expires_at = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1);
        let body = json!({"token": "ghs_stub", "expires_at": expires_at.to_string()});
        (201, (StatusCode::CREATED, axum::Json(body)).into_response())
    } else if path == "/orgs/acme/repos" {
        let second = query.contains("page=2");
        let names: &[&str] = if second {
            &REPOSITORIES[2..]
        } else {
            &REPOSITORIES[..2]
        };
        let page: Vec<Value> = names
            .iter()
            .map(|n| json!({"full_name": format!("acme/{n}"), "name": n, "default_branch": "main"}))
            .collect();
        // As GitHub writes it: absolute, on the API's own host.
        let link = (!second).then(|| {
            format!("<http://{host}/orgs/acme/repos?per_page=100&page=2>; rel=\"next\", <http://{host}/orgs/acme/repos?per_page=100&page=2>; rel=\"last\"")
        });
        conditional(&headers, Value::Array(page).to_string(), link)
    } else if let Some(name) = path
        .strip_prefix("/repos/acme/")
        .and_then(|rest| rest.strip_suffix("/contents/catalog-info.yaml"))
    {
        let file = stub.lock().unwrap().files.get(name).cloned().flatten();
        match file {
            Some(text) => {
                use base64::Engine as _;
                let body = json!({
                    "type": "file",
                    "encoding": "base64",
                    "name": "catalog-info.yaml",
                    "path": "catalog-info.yaml",
                    "content": base64::engine::general_purpose::STANDARD.encode(text),
                });
                conditional(&headers, body.to_string(), None)
            }
            None => (
                404,
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/repos/contents#get-repository-content", "status": "404"})),
                )
                    .into_response(),
            ),
        }
    } else {
        (404, StatusCode::NOT_FOUND.into_response())
    };
    let shown = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    stub.lock()
        .unwrap()
        .requests
        .push((shown, conditional_request, status));
    response
}

async fn start_stub() -> (GithubApp, Shared, tokio::task::JoinHandle<()>) {
    let stub: Shared = Arc::default();
    {
        let mut state = stub.lock().unwrap();
        state
            .files
            .insert("alpha".into(), Some(catalog_file("alpha", "First.")));
        state.files.insert("beta".into(), None);
        state
            .files
            .insert("gamma".into(), Some(catalog_file("gamma", "Third.")));
    }
    let router = axum::Router::new()
        .fallback(stub_github)
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    let (_, key) = sandbox::forge::Forge::demo_app();
    let github = GithubApp::new(&format!("http://{addr}/"), 1, &key, 2).unwrap();
    (github, stub, server)
}

fn describe(requests: ForgeRequests) -> String {
    format!(
        "{} requests ({} answered 304 Not Modified)",
        requests.sent, requests.not_modified
    )
}

#[tokio::test]
async fn a_second_scan_is_answered_by_304s_and_a_push_reads_one_file() {
    let (github, stub, server) = start_stub().await;
    let catalog = Catalog::default();
    assert_eq!(catalog.lookup("acme/alpha"), Lookup::Unread);

    assert!(
        catalog.scan(&github, "acme").await.unwrap(),
        "the first scan changes everything"
    );
    let first = catalog.last_scan().unwrap();
    assert!(
        !catalog.scan(&github, "acme").await.unwrap(),
        "nothing changed"
    );
    let second = catalog.last_scan().unwrap();
    println!(
        "catalog scan of {} repositories: first {}, second {}",
        first.repositories,
        describe(first.requests),
        describe(second.requests)
    );
    assert_eq!((first.repositories, first.found), (3, 2));
    // A token, two list pages (the second reached through GitHub's absolute Link), three files.
    assert_eq!(
        first.requests,
        ForgeRequests {
            sent: 6,
            not_modified: 0
        }
    );
    // Two pages and two files unchanged; the missing file has no validator and is asked again.
    assert_eq!(
        second.requests,
        ForgeRequests {
            sent: 5,
            not_modified: 4
        }
    );
    let recorded = stub.lock().unwrap().requests.clone();
    assert!(
        recorded[1..6]
            .iter()
            .all(|(_, conditional, _)| !conditional),
        "{recorded:?}"
    );
    assert!(
        recorded[6..]
            .iter()
            .filter(|(path, _, _)| !path.contains("/beta/"))
            .all(|(_, conditional, status)| *conditional && *status == 304),
        "{recorded:?}"
    );
    assert!(
        recorded
            .iter()
            .any(|(path, _, _)| path == "/orgs/acme/repos?per_page=100&page=2"),
        "the next page is asked for relative to the API: {recorded:?}"
    );

    let Lookup::Found(alpha) = catalog.lookup("acme/alpha") else {
        panic!("alpha has a file");
    };
    assert_eq!(alpha.description.as_deref(), Some("First."));
    assert_eq!(alpha.owner.as_deref(), Some("shop"));
    assert_eq!(alpha.on_call.map(|a| a.value).as_deref(), Some("Palpha"));
    assert_eq!(catalog.lookup("acme/beta"), Lookup::Missing);

    // With webhooks: one (conditional) scan at start, then only pushed repositories, nothing on a timer.
    let (dirty_tx, mut dirty) = tokio::sync::mpsc::unbounded_channel();
    catalog.spawn_refresh(github.clone(), "acme".into(), Refresh::OnPush, dirty_tx);
    let scanned = eventually(Duration::from_secs(5), || async {
        (catalog.scans() == 3).then_some(())
    })
    .await;
    assert!(scanned.is_some());
    let quiet = github.requests();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        github.requests() - quiet,
        ForgeRequests::default(),
        "no periodic scan with webhooks"
    );

    stub.lock().unwrap().files.insert(
        "alpha".into(),
        Some(catalog_file("alpha", "First, and changed.")),
    );
    let before = github.requests();
    // A burst of pushes to one repository is one read.
    for _ in 0..5 {
        catalog.repository_pushed("acme/alpha", "main");
    }
    let marked = tokio::time::timeout(Duration::from_secs(5), dirty.recv())
        .await
        .expect("the push changed the catalog");
    assert_eq!(marked, Some(Dirty::All));
    let Lookup::Found(alpha) = catalog.lookup("acme/alpha") else {
        panic!("alpha still has a file");
    };
    assert_eq!(alpha.description.as_deref(), Some("First, and changed."));
    let push = github.requests() - before;
    println!("a push to one repository: {}", describe(push));
    assert_eq!(
        push,
        ForgeRequests {
            sent: 1,
            not_modified: 0
        }
    );

    // The file going away removes the entry.
    stub.lock().unwrap().files.insert("gamma".into(), None);
    catalog.repository_pushed("acme/gamma", "main");
    tokio::time::timeout(Duration::from_secs(5), dirty.recv())
        .await
        .expect("the removal changed the catalog");
    assert_eq!(catalog.lookup("acme/gamma"), Lookup::Missing);
    server.abort();
}

#[tokio::test]
async fn without_webhooks_the_periodic_rescan_is_conditional() {
    let (github, _stub, server) = start_stub().await;
    let catalog = Catalog::default();
    let (dirty_tx, _dirty) = tokio::sync::mpsc::unbounded_channel();
    catalog.spawn_refresh(
        github.clone(),
        "acme".into(),
        Refresh::Every(Duration::from_millis(300)),
        dirty_tx,
    );
    let rescanned = eventually(Duration::from_secs(10), || async {
        (catalog.scans() >= 3).then_some(())
    })
    .await;
    assert!(rescanned.is_some());
    let report = catalog.last_scan().unwrap();
    assert_eq!(
        report.requests,
        ForgeRequests {
            sent: 5,
            not_modified: 4
        }
    );
    server.abort();
}

fn summary(app: &TestApp, name: &str) -> Option<ServiceSummary> {
    app.fleet.service(name)
}

fn typeahead_component() -> Component {
    let mut component = Component::new(
        sandbox::world::CATALOG_ONLY.name,
        ComponentSpec {
            owner: "shop".into(),
            repository: format!("acme/{}", sandbox::world::CATALOG_ONLY.name),
            template: TemplateRef {
                name: "node-service".into(),
                version: "1.4.0".into(),
            },
            description: "Onboarded at last.".into(),
            depends_on: vec![],
        },
    );
    component.metadata.namespace = Some("platform".into());
    component
}

/// Removes `catalog-info.yaml` from `repository`'s main in the sandbox's git, as a commit would.
fn remove_catalog_file(app: &TestApp, repository: &str) {
    let git = app.sandbox.repositories().git(repository);
    let listing = git.run(&["ls-tree", "refs/heads/main"]).unwrap();
    let kept: String = listing
        .lines()
        .filter(|line| !line.ends_with("\tcatalog-info.yaml"))
        .map(|line| format!("{line}\n"))
        .collect();
    let tree = git
        .run_with(&["mktree"], Some(kept.as_bytes()), &[])
        .unwrap();
    let tree = String::from_utf8(tree).unwrap().trim().to_string();
    let person = [
        ("GIT_AUTHOR_NAME", "Ada".to_string()),
        ("GIT_AUTHOR_EMAIL", "ada@acme.example".to_string()),
        ("GIT_COMMITTER_NAME", "Ada".to_string()),
        ("GIT_COMMITTER_EMAIL", "ada@acme.example".to_string()),
    ];
    let commit = git
        .run_with(
            &[
                "commit-tree",
                &tree,
                "-p",
                "refs/heads/main",
                "-m",
                "Leave the catalog",
            ],
            None,
            &person,
        )
        .unwrap();
    let commit = String::from_utf8(commit).unwrap().trim().to_string();
    git.run(&["update-ref", "refs/heads/main", &commit])
        .unwrap();
}

#[tokio::test]
async fn services_are_the_union_of_components_and_the_catalog() {
    let app = webhook_app().await;
    let only = sandbox::world::CATALOG_ONLY.name;
    let without = sandbox::world::SERVICE_WITHOUT_CATALOG;
    let settled = eventually(Duration::from_secs(15), || async {
        summary(&app, only).filter(|s| s.catalog_state == CatalogState::NotOnboarded)
    })
    .await
    .expect("the catalog-only repository never became a service");
    assert_eq!(settled.owner, sandbox::world::CATALOG_ONLY.team);
    assert_eq!(
        settled.description,
        sandbox::world::CATALOG_ONLY.description
    );
    assert_eq!(settled.repository, format!("acme/{only}"));
    assert!(settled.environments.is_empty() && settled.template.is_empty());
    let payments = summary(&app, "payments").unwrap();
    assert_eq!(payments.catalog_state, CatalogState::Found);
    let on_call = payments
        .catalog
        .and_then(|c| c.on_call)
        .expect("payments names who is on call");
    assert_eq!(on_call.key, "pagerduty.com/service-id");
    assert_eq!(
        summary(&app, without).unwrap().catalog_state,
        CatalogState::Missing
    );
    let (status, detail) = app.get_json(&format!("/api/v1/services/{only}")).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["cards"], json!([]));

    // A Component for it: one service, from the platform, still found in the catalog.
    let management = app.sandbox.cluster("management").unwrap();
    management.create_typed(&typeahead_component()).unwrap();
    let onboarded = eventually(Duration::from_secs(10), || async {
        summary(&app, only).filter(|s| s.catalog_state == CatalogState::Found)
    })
    .await
    .expect("the Component never replaced the catalog entry");
    assert_eq!(onboarded.template, "node-service@1.4.0");
    assert_eq!(
        app.fleet
            .services()
            .iter()
            .filter(|s| s.name == only)
            .count(),
        1
    );
    management
        .delete(
            "platform.tower.dev/v1alpha1",
            "Component",
            Some("platform"),
            only,
        )
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || async {
            summary(&app, only).filter(|s| s.catalog_state == CatalogState::NotOnboarded)
        })
        .await
        .is_some(),
        "without its Component it is back in the catalog only"
    );

    // Its file goes away and GitHub says so: the service goes.
    remove_catalog_file(&app, only);
    let push = json!({
        "ref": "refs/heads/main",
        "deleted": false,
        "forced": false,
        "repository": {"full_name": format!("acme/{only}"), "name": only, "default_branch": "main"},
        "commits": [{"id": "0d1a26e", "added": [], "modified": [], "removed": ["catalog-info.yaml"]}],
    })
    .to_string();
    let response = app
        .router
        .clone()
        .oneshot(
            axum::http::Request::post("/api/v1/webhooks/github")
                .header("x-github-event", "push")
                .header(
                    "x-hub-signature-256",
                    sign(
                        sandbox::forge::DEMO_WEBHOOK_SECRET.as_bytes(),
                        push.as_bytes(),
                    ),
                )
                .body(axum::body::Body::from(push))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    assert!(
        eventually(Duration::from_secs(10), || async {
            summary(&app, only).is_none().then_some(())
        })
        .await
        .is_some(),
        "the service stayed after its catalog file went"
    );
}
