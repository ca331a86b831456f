//! Sign-in, the route × role matrix, CSRF, security headers.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::routing::get;
use server::routes::{Access, api, router_with_api};
use shared::auth::Decision;
use tower::ServiceExt as _;

use crate::{Role, TestApp, body_text};

/// The service every service-scoped route is called on; the `payments` team owns it.
const SERVICE: &str = "payments";

#[tokio::test]
async fn every_route_allows_and_denies_exactly_as_the_policy_says_for_every_role() {
    let app = TestApp::start().await;
    let specs = api(&app.state).specs().to_vec();
    assert!(specs.len() >= 6, "the API has its routes");
    let mut unexpected = Vec::new();
    let (mut allows, mut denials) = (0, 0);
    for spec in &specs {
        let path = spec.path.replace("{name}", SERVICE);
        for role in Role::ALL {
            let identity = role.identity();
            let expected = match spec.access {
                Access::Public => Decision::Allow,
                Access::Fleet(p) => app.state.auth.policy.decide(identity.as_ref(), p, None),
                Access::Service(p) => {
                    app.state
                        .auth
                        .policy
                        .decide(identity.as_ref(), p, Some("payments"))
                }
            };
            let response = app.send_as(&role, spec.method.clone(), &path).await;
            let status = response.status();
            let denied = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
            if expected.allowed() {
                allows += 1;
            } else {
                denials += 1;
            }
            let wanted = match expected {
                Decision::Allow => !denied,
                Decision::SignInRequired => status == StatusCode::UNAUTHORIZED,
                Decision::Deny { .. } => status == StatusCode::FORBIDDEN,
            };
            if !wanted {
                unexpected.push(format!(
                    "{} {path} as {role:?}: expected {expected:?}, got {status}",
                    spec.method
                ));
            }
            if denied {
                let body: serde_json::Value =
                    serde_json::from_str(&body_text(response).await).unwrap();
                assert!(
                    body["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "a denial says why"
                );
            }
        }
    }
    println!(
        "route × role matrix: {} routes × {} roles, {allows} allowed, {denials} denied, {} unexpected",
        specs.len(),
        Role::ALL.len(),
        unexpected.len()
    );
    assert!(
        unexpected.is_empty(),
        "unexpected decisions:\n{}",
        unexpected.join("\n")
    );
}

#[tokio::test]
async fn a_route_added_without_declaring_its_access_is_refused() {
    let app = TestApp::start().await;
    let (declared, _) = api(&app.state).finish();
    // Bypasses `ApiRoutes`, as a careless change would.
    let rogue = declared.route("/secrets", get(|| async { "everything" }));
    let router = router_with_api(app.state.clone(), rogue);
    let response = router
        .oneshot(Request::get("/api/v1/secrets").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(!body_text(response).await.contains("everything"));
}

#[tokio::test]
async fn continue_as_guest_starts_a_read_only_session() {
    let app = TestApp::start().await;
    let response = app
        .send_as(&Role::Anonymous, Method::POST, "/api/v1/session/guest")
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("tower_session="));
    assert!(cookie.contains("HttpOnly"));
    assert!(cookie.contains("SameSite=Lax"));
    // The cookie is encrypted: nothing of the identity shows.
    assert!(!cookie.contains("guest"));

    let session_cookie = cookie.split(';').next().unwrap();
    let response = app
        .router
        .clone()
        .oneshot(
            Request::get("/api/v1/session")
                .header("cookie", session_cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_str(&body_text(response).await).unwrap();
    assert_eq!(body["identity"]["kind"], "guest");
}

#[tokio::test]
async fn a_forged_or_tampered_session_cookie_is_anonymous() {
    let app = TestApp::start().await;
    let response = app
        .router
        .clone()
        .oneshot(
            Request::get("/api/v1/services")
                .header(
                    "cookie",
                    "tower_session={\"identity\":{\"login\":\"root\",\"kind\":\"admin\"}}",
                )
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_cross_site_post_without_the_csrf_header_is_refused() {
    let app = TestApp::start().await;
    let owner = app.session_cookie(Role::Owner.identity().unwrap());
    let post = |headers: Vec<(&'static str, String)>| {
        let mut request = Request::post("/api/v1/session/guest").header("host", "tower.test");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        app.router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
    };
    let no_header = post(vec![
        ("cookie", owner.clone()),
        ("origin", "https://evil.example".into()),
    ])
    .await
    .unwrap();
    assert_eq!(no_header.status(), StatusCode::FORBIDDEN);
    assert!(body_text(no_header).await.contains("CSRF"));

    let wrong_origin = post(vec![
        ("cookie", owner.clone()),
        ("origin", "https://evil.example".into()),
        ("x-tower-csrf", "1".into()),
    ])
    .await
    .unwrap();
    assert_eq!(wrong_origin.status(), StatusCode::FORBIDDEN);

    let same_origin = post(vec![
        ("cookie", owner),
        ("origin", "http://tower.test".into()),
        ("x-tower-csrf", "1".into()),
    ])
    .await
    .unwrap();
    assert_eq!(same_origin.status(), StatusCode::OK);
}

#[tokio::test]
async fn every_response_carries_a_strict_content_security_policy() {
    let app = TestApp::start().await;
    for path in ["/", "/api/v1/session", "/assets/tower-0123456789abcdef.js"] {
        let response = app.get(path, &[]).await;
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap();
        assert!(
            csp.contains("script-src 'self' 'wasm-unsafe-eval'"),
            "{path}: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"));
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert_eq!(response.headers()["referrer-policy"], "same-origin");
    }
}

#[tokio::test]
async fn an_unknown_service_is_not_found_for_readers_and_unauthorised_for_strangers() {
    let app = TestApp::start().await;
    let response = app
        .send_as(&Role::Guest, Method::GET, "/api/v1/services/nope")
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = app
        .send_as(&Role::Anonymous, Method::GET, "/api/v1/services/nope")
        .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

/// The only places that may register a route on the axum router directly: the permission-declaring builder
/// itself, the outer application (`/healthz`), and the browser's sign-in redirects (public by nature). Any
/// other `.route(` in `server/src` bypasses the declared permissions and fails here; at run time the
/// `deny_unguarded` layer refuses such a route's API answers too
/// (`a_route_added_without_declaring_its_access_is_refused`).
#[test]
fn no_route_is_registered_around_the_permission_declaring_builder() {
    let allowed = [
        (
            "routes.rs",
            "self.router = self.router.route(path, guarded);",
        ),
        (
            "routes.rs",
            "self.route(Method::GET, path, access, axum::routing::get(handler))",
        ),
        (
            "routes.rs",
            "self.route(Method::POST, path, access, axum::routing::post(handler))",
        ),
        ("routes.rs", ".route(\"/healthz\", get(healthz))"),
        (
            "session.rs",
            ".route(\"/auth/github/start\", get(github_start))",
        ),
        (
            "session.rs",
            ".route(\"/auth/github/callback\", get(github_callback))",
        ),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![root.join("routes.rs")];
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !files.contains(&path) {
                files.push(path);
            }
        }
    }
    let mut offenders = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines().map(str::trim) {
            let registers = line.contains(".route(")
                || line.contains(".route_service(")
                || line.contains(".nest_service(\"/api");
            if registers && !allowed.iter().any(|(f, l)| *f == name && line == *l) {
                offenders.push(format!("{}: {line}", file.display()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "routes registered without a declared permission (use ApiRoutes::get/post):\n{}",
        offenders.join("\n")
    );
}

#[tokio::test]
async fn previews_are_not_throttled_but_writes_are() {
    let app = TestApp::start().await;
    // Many looks before acting are fine.
    for _ in 0..15 {
        let preview = app
            .send_as(
                &Role::Owner,
                Method::GET,
                "/api/v1/services/payments/rollback/preview",
            )
            .await;
        assert_ne!(preview.status(), StatusCode::TOO_MANY_REQUESTS);
    }
    // A burst of writes is cut off with a JSON error that says to wait.
    let mut throttled = None;
    for _ in 0..15 {
        let sync = app
            .send_as(
                &Role::Owner,
                Method::POST,
                "/api/v1/services/payments/environments/dev/sync",
            )
            .await;
        if sync.status() == StatusCode::TOO_MANY_REQUESTS {
            throttled = Some(body_text(sync).await);
            break;
        }
    }
    let body = throttled.expect("the burst was limited");
    assert!(body.contains("too_many_requests"), "{body}");
}
