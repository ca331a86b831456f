//! Sign-in, the route × role table, CSRF, security headers.

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::routing::get;
use serde_json::{Value, json};
use server::routes::{api, router_with_api};
use shared::api::{self as contract, Endpoint, LogQuery, ReleaseQuery, Route};
use shared::metrics::MetricsRange;
use shared::pipelines::{PipelineQuery, PipelineRunPage, PipelineRunSummary, StepLogQuery};
use tower::ServiceExt as _;

use crate::{Role, TestApp, body_text};

/// One row of the route × role table: a request with real values for every placeholder, and the exact
/// status each role gets, in the order of [`Role::ALL`]: anonymous, guest, a member of another team, an
/// owner of `payments`, an admin.
struct Row {
    route: Route,
    url: String,
    body: Value,
    expected: [u16; 5],
    /// Sent as Tower's page sends it (a write with the CSRF header), or else as GitHub delivers a webhook.
    from_tower: bool,
}

fn row<E: Endpoint>(url: String, body: Value, expected: [u16; 5]) -> Row {
    Row {
        route: E::ROUTE,
        url,
        body,
        expected,
        from_tower: true,
    }
}

impl Row {
    /// Sent as GitHub delivers a webhook (see [`deliver_unsigned`]).
    fn sent_as_github_delivers(self) -> Row {
        Row {
            from_tower: false,
            ..self
        }
    }
}

/// Everyone, signed in or not.
const PUBLIC: [u16; 5] = [200, 200, 200, 200, 200];
/// Anyone signed in, guests included.
const READ: [u16; 5] = [401, 200, 200, 200, 200];
/// Owners of `payments` and admins only.
const OWNERS: [u16; 5] = [401, 403, 403, 200, 200];
/// A pull request: the owner opens it (201), the admin's identical request reuses it (200).
const OPENS: [u16; 5] = [401, 403, 403, 201, 200];

/// The specification of who may call what, written out rather than derived from `Policy`, so a change
/// to the policy or to a route's declared permission shows up here as a failing cell.
fn table(
    pod: &str,
    container: &str,
    sha: &str,
    run: &PipelineRunSummary,
    prod_release: &str,
) -> Vec<Row> {
    let logs = LogQuery {
        pod: pod.into(),
        container: Some(container.into()),
        follow: false,
        previous: false,
        tail: Some(5),
    };
    let releases = ReleaseQuery {
        service: Some("payments".into()),
        environment: Some("prod".into()),
        cursor: None,
    };
    let onboard = json!({
        "name": "invoices",
        "owner": "payments",
        "description": "Sends invoices.",
        "template": "go-service",
        "template_version": "1.4.0",
        "auto_deploy": true,
    });
    let database = json!({"environment": "dev", "name": "payments-cache", "size": "small"});
    let release_path = shared::delivery::release_path("payments", "prod");
    let edit = json!({
        "path": release_path,
        "content": prod_release.replace("autoDeploy: false", "autoDeploy: true"),
    });
    let rejected = json!({
        "path": release_path,
        "content": prod_release.replace("spec:\n", "spec:\n  replicas: 3\n"),
    });
    let none = Value::Null;
    use contract::*;
    vec![
        row::<GetSession>(GetSession::url(), none.clone(), PUBLIC),
        row::<ContinueAsGuest>(ContinueAsGuest::url(), none.clone(), PUBLIC),
        row::<SignOut>(SignOut::url(), none.clone(), [204; 5]),
        row::<ListServices>(ListServices::url(), none.clone(), READ),
        row::<GetService>(GetService::url("payments"), none.clone(), READ),
        // Those who may browse learn that a service does not exist; strangers learn nothing.
        row::<GetService>(
            GetService::url("no-such-service"),
            none.clone(),
            [401, 404, 404, 404, 404],
        ),
        row::<ListDatabases>(ListDatabases::url("payments"), none.clone(), READ),
        // The owner's sync is still running when the admin asks for another.
        row::<SyncEnvironment>(
            SyncEnvironment::url("payments", "dev"),
            json!({"force": false}),
            [401, 403, 403, 200, 409],
        ),
        row::<Logs>(
            Logs::with_query("payments", "dev", &logs),
            none.clone(),
            OWNERS,
        ),
        row::<ListLogPods>(ListLogPods::url("payments", "dev"), none.clone(), OWNERS),
        row::<GetMetrics>(
            GetMetrics::with_range("payments", "prod", MetricsRange::SixHours),
            none.clone(),
            READ,
        ),
        // A name that is not a label never reaches a lookup, let alone a query.
        row::<GetMetrics>(
            GetMetrics::url(r#"a"} or vector(1) #"#, "prod"),
            none.clone(),
            [400; 5],
        ),
        row::<GetMetrics>(
            format!("{}?range=2d", GetMetrics::url("payments", "prod")),
            none.clone(),
            [401, 400, 400, 400, 400],
        ),
        row::<ListSlos>(ListSlos::url("payments"), none.clone(), READ),
        row::<ListSloSummaries>(ListSloSummaries::url(), none.clone(), READ),
        row::<ListPipelineRuns>(
            ListPipelineRuns::with_query(&PipelineQuery::default()),
            none.clone(),
            READ,
        ),
        row::<ListServicePipelineRuns>(
            ListServicePipelineRuns::with_query("payments", &PipelineQuery::default()),
            none.clone(),
            READ,
        ),
        row::<ListServicePipelineRuns>(
            ListServicePipelineRuns::url("no-such-service"),
            none.clone(),
            [401, 404, 404, 404, 404],
        ),
        row::<GetPipelineRun>(
            GetPipelineRun::url(&run.namespace, &run.name),
            none.clone(),
            READ,
        ),
        // A run's name is a DNS name; anything else never reaches a lookup.
        row::<GetPipelineRun>(
            GetPipelineRun::url(&run.namespace, "Not.A.Run-"),
            none.clone(),
            [400; 5],
        ),
        // Pipeline logs are owner-only, as deployment logs are.
        row::<StepLog>(
            StepLog::with_query(
                "payments",
                &run.namespace,
                &run.name,
                "test",
                "unit",
                StepLogQuery::default(),
            ),
            none.clone(),
            OWNERS,
        ),
        row::<DownloadStepLog>(
            DownloadStepLog::url("payments", &run.namespace, &run.name, "test", "unit"),
            none.clone(),
            OWNERS,
        ),
        row::<GetServiceConfig>(GetServiceConfig::url("payments"), none.clone(), READ),
        row::<GetServiceConfig>(
            GetServiceConfig::url("no-such-service"),
            none.clone(),
            [401, 404, 404, 404, 404],
        ),
        row::<PreviewConfigEdit>(PreviewConfigEdit::url("payments"), edit.clone(), OWNERS),
        // A file the validator rejects: 422 with its diagnostics, for those who may edit at all.
        row::<PreviewConfigEdit>(
            PreviewConfigEdit::url("payments"),
            rejected.clone(),
            [401, 403, 403, 422, 422],
        ),
        row::<SubmitConfigEdit>(
            SubmitConfigEdit::url("payments"),
            rejected,
            [401, 403, 403, 422, 422],
        ),
        row::<SubmitConfigEdit>(SubmitConfigEdit::url("payments"), edit, OPENS),
        row::<GetPlatformConfig>(GetPlatformConfig::url(), none.clone(), READ),
        row::<GetPlatform>(GetPlatform::url(), none.clone(), READ),
        row::<ListAllDatabases>(ListAllDatabases::url(), none.clone(), READ),
        row::<GetDatabase>(GetDatabase::url("prod", "payments"), none.clone(), READ),
        row::<GetDatabase>(
            GetDatabase::url("prod", "no-such-database"),
            none.clone(),
            [401, 404, 404, 404, 404],
        ),
        // Neither segment reaches a lookup unless it is a DNS label.
        row::<GetDatabase>(
            GetDatabase::url("prod", "Payments_DB"),
            none.clone(),
            [400; 5],
        ),
        row::<GetDatabase>(GetDatabase::url("PROD", "payments"), none.clone(), [400; 5]),
        // GitHub's deliveries: the signature is the only credential, whoever's cookie comes along, and GitHub
        // sends no CSRF header. Without a signature nothing happens.
        row::<GithubWebhook>(
            GithubWebhook::url(),
            json!({"zen": "Keep it logically awesome."}),
            [401; 5],
        )
        .sent_as_github_delivers(),
        row::<ListEnvironments>(ListEnvironments::url(), none.clone(), READ),
        row::<ListActivity>(ListActivity::url(), none.clone(), READ),
        row::<Events>(Events::url(), none.clone(), READ),
        row::<ListScaffolds>(ListScaffolds::url(), none.clone(), READ),
        // Onboarding is for one's own team: a member of another team is refused by the plan, not the guard.
        row::<PreviewOnboard>(
            PreviewOnboard::url("onboard-service"),
            onboard.clone(),
            [401, 403, 403, 200, 200],
        ),
        row::<SubmitOnboard>(SubmitOnboard::url("onboard-service"), onboard, OPENS),
        row::<PreviewTemplate>(
            PreviewTemplate::url("payments", "add-database"),
            database.clone(),
            OWNERS,
        ),
        row::<SubmitTemplate>(
            SubmitTemplate::url("payments", "add-database"),
            database,
            OPENS,
        ),
        // prod already runs schema 0003: nothing to change.
        row::<PreviewTemplate>(
            PreviewTemplate::url("payments", "apply-schema"),
            json!({"environment": "prod", "version": "0003"}),
            [401, 403, 403, 409, 409],
        ),
        row::<ListBuilds>(ListBuilds::url("payments"), none.clone(), READ),
        row::<ListSchemaVersions>(ListSchemaVersions::url("payments"), none.clone(), READ),
        row::<PreviewPromote>(PreviewPromote::url("payments"), none.clone(), OWNERS),
        row::<Promote>(Promote::url("payments"), none.clone(), OPENS),
        row::<PreviewRollback>(PreviewRollback::url("payments"), none.clone(), OWNERS),
        row::<Rollback>(Rollback::url("payments"), none.clone(), OPENS),
        row::<ServicePulls>(ServicePulls::url("payments"), none.clone(), READ),
        row::<ListPulls>(ListPulls::url(), none.clone(), READ),
        row::<ListReleases>(ListReleases::with_query(&releases), none.clone(), READ),
        row::<GetRelease>(GetRelease::url(sha), none, READ),
    ]
}

/// Sends `method url` with `body` (JSON) as GitHub delivers a webhook, but without its signature: no CSRF
/// header (GitHub sends none), an event name and a delivery id, and `who`'s session cookie, which must not
/// count for anything.
async fn deliver_unsigned(
    app: &TestApp,
    who: &Role,
    method: Method,
    url: &str,
    body: String,
) -> axum::http::Response<Body> {
    let mut request = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("x-github-event", "ping")
        .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    if let Some(identity) = who.identity() {
        request = request.header("cookie", app.session_cookie(identity));
    }
    app.router
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap()
}

/// A row's JSON body; none for `null`.
/// `POST url` as an admin's browser would send it from another site's page: the session cookie rides along,
/// the CSRF header only if `csrf_header`, and `origin` if given.
async fn send_cross_site(
    app: &TestApp,
    url: &str,
    body: String,
    csrf_header: bool,
    origin: Option<&str>,
) -> axum::response::Response {
    let admin = app.session_cookie(Role::Admin.identity().unwrap());
    let mut request = Request::post(url)
        .header("host", "tower.test")
        .header("cookie", admin)
        .header("content-type", "application/json");
    if csrf_header {
        request = request.header("x-tower-csrf", "1");
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    app.router
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap()
}

fn body(value: &Value) -> String {
    if value.is_null() {
        String::new()
    } else {
        value.to_string()
    }
}

#[tokio::test]
async fn every_route_answers_each_role_exactly_as_the_table_says() {
    // Metrics from a port nobody listens on: the tab answers, each chart saying the store is unreachable.
    let app = TestApp::start_with(|config| {
        config.mimir = Some(server::config::MimirConfig::new(
            "http://127.0.0.1:9/prometheus",
        ));
    })
    .await;
    let card = app
        .fleet
        .service_detail("payments")
        .and_then(|d| d.cards.into_iter().find(|c| c.environment == "dev"))
        .expect("payments runs in dev");
    let pod = card.pods.first().expect("payments has a pod in dev");
    let container = pod.containers.first().expect("the pod has a container");
    let (status, page) = app
        .get_json(&contract::ListReleases::with_query(&ReleaseQuery {
            service: Some("payments".into()),
            environment: Some("prod".into()),
            cursor: None,
        }))
        .await;
    assert_eq!(status, 200, "{page}");
    let sha = page["records"][0]["sha"]
        .as_str()
        .expect("payments has a release record")
        .to_string();
    // A finished run of payments whose pods are still there (the newest few keep theirs).
    let (status, runs) = app
        .get_json(&contract::ListServicePipelineRuns::url("payments"))
        .await;
    assert_eq!(status, 200, "{runs}");
    let runs: PipelineRunPage = serde_json::from_value(runs).unwrap();
    let run = runs
        .runs
        .iter()
        .take(sandbox::fixtures::tekton::RUNS_WITH_PODS)
        .find(|r| r.status.is_finished())
        .expect("one of payments' newest runs has finished");
    let (status, config) = app
        .get_json(&contract::GetServiceConfig::url("payments"))
        .await;
    assert_eq!(status, 200, "{config}");
    let prod_release = config["environments"]
        .as_array()
        .and_then(|envs| envs.iter().find(|e| e["environment"] == "prod"))
        .and_then(|prod| prod["resources"][0]["intent"]["content"].as_str())
        .expect("payments' prod Release in git")
        .to_string();
    let rows = table(&pod.name, container, &sha, run, &prod_release);

    // Every route served has a row, and every row is a route served: the table cannot fall behind.
    let served: BTreeSet<Route> = api(&app.state).routes().iter().copied().collect();
    let declared: BTreeSet<Route> = contract::ROUTES.iter().copied().collect();
    assert_eq!(served, declared, "the server serves exactly the contract");
    let covered: BTreeSet<Route> = rows.iter().map(|r| r.route).collect();
    let missing: Vec<_> = served.difference(&covered).map(|r| r.name).collect();
    assert!(missing.is_empty(), "routes without a row: {missing:?}");

    let mut wrong = Vec::new();
    let mut cells = 0;
    for row in &rows {
        assert!(!row.url.contains('{'), "{}: {}", row.route.name, row.url);
        for (role, expected) in Role::ALL.iter().zip(row.expected) {
            let method = match row.route.method {
                contract::Method::Get => Method::GET,
                contract::Method::Post => Method::POST,
            };
            let response = if row.from_tower {
                app.send_with(role, method.clone(), &row.url, body(&row.body))
                    .await
            } else {
                deliver_unsigned(&app, role, method.clone(), &row.url, body(&row.body)).await
            };
            cells += 1;
            let status = response.status().as_u16();
            if status != expected {
                let body = body_text(response).await;
                wrong.push(format!(
                    "{method} {} as {role:?}: expected {expected}, got {status}: {body}",
                    row.url
                ));
                continue;
            }
            if status >= 400 {
                let body: Value = serde_json::from_str(&body_text(response).await).unwrap();
                assert!(
                    body["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "{method} {} as {role:?}: an error says why",
                    row.url
                );
            }
        }
        // Every write the page sends is refused to another site's page, even with an admin's cookie: without
        // Tower's CSRF header, and with it from a foreign Origin.
        if row.from_tower && row.route.method == contract::Method::Post {
            for (header, origin) in [(false, None), (true, Some("https://evil.example"))] {
                let response =
                    send_cross_site(&app, &row.url, body(&row.body), header, origin).await;
                cells += 1;
                if response.status() != StatusCode::FORBIDDEN {
                    wrong.push(format!(
                        "POST {} from another site (CSRF header: {header}, Origin: {origin:?}): expected 403, got {}",
                        row.url,
                        response.status()
                    ));
                }
            }
        }
    }
    println!(
        "route × role table: {} routes, {} rows × {} roles = {cells} cells, {} wrong",
        served.len(),
        rows.len(),
        Role::ALL.len(),
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "unexpected answers:\n{}",
        wrong.join("\n")
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

/// Who `cookie` (a `Cookie` header value) is to Tower: the session's login, or `None` when refused.
async fn who_is(app: &TestApp, cookie: &str) -> Option<String> {
    let response = app.get("/api/v1/session", &[("cookie", cookie)]).await;
    assert_eq!(response.status(), StatusCode::OK);
    let session: Value = serde_json::from_str(&body_text(response).await).unwrap();
    session["identity"]["login"].as_str().map(str::to_string)
}

/// The `name=value` of the first `Set-Cookie` of `response` named `name`.
fn set_cookie(response: &axum::response::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok()?.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")))
        .map(str::to_string)
}

/// A session cookie made by a Tower whose authentication differs from `app`'s by `change`.
fn cookie_from(app: &TestApp, change: impl FnOnce(&mut server::auth::AuthState)) -> String {
    use axum::response::IntoResponse as _;
    let mut auth = app.state.auth.clone();
    change(&mut auth);
    let jar = axum_extra::extract::PrivateCookieJar::new(auth.key.clone()).add(
        auth.session_cookie(Role::Owner.identity().unwrap())
            .unwrap(),
    );
    let response = jar.into_response();
    set_cookie(&response, server::auth::SESSION_COOKIE).unwrap()
}

#[tokio::test]
async fn expired_foreign_and_bit_flipped_session_cookies_are_refused() {
    let app = TestApp::start().await;
    let valid = cookie_from(&app, |_| {});
    assert_eq!(who_is(&app, &valid).await.as_deref(), Some("ada"));

    let expired = cookie_from(&app, |auth| auth.session_ttl = std::time::Duration::ZERO);
    assert_eq!(who_is(&app, &expired).await, None, "an expired session");

    let other_secret = cookie_from(&app, |auth| {
        auth.key = axum_extra::extract::cookie::Key::generate();
    });
    assert_eq!(
        who_is(&app, &other_secret).await,
        None,
        "another Tower's secret"
    );

    // One character of the sealed value changed: authentication fails, whichever character it is.
    let (name, sealed) = valid.split_once('=').unwrap();
    for at in [0, sealed.len() / 2, sealed.len() - 1] {
        let mut flipped = sealed.as_bytes().to_vec();
        flipped[at] = if flipped[at] == b'A' { b'B' } else { b'A' };
        let flipped = format!("{name}={}", String::from_utf8(flipped).unwrap());
        assert_eq!(who_is(&app, &flipped).await, None, "changed at {at}");
    }
}

#[tokio::test]
async fn a_cookie_replayed_after_sign_out_is_refused_even_after_a_restart() {
    let revoked = tempfile::tempdir().unwrap();
    let file = revoked.path().join("revoked-sessions");
    let configured = file.clone();
    let app = TestApp::start_with(move |config| {
        config.auth.revoked_sessions_file = Some(configured);
    })
    .await;
    let mut signed_in = Vec::new();
    for _ in 0..2 {
        let response = app
            .router
            .clone()
            .oneshot(
                Request::post("/api/v1/session/guest")
                    .header("x-tower-csrf", "1")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        signed_in.push(set_cookie(&response, server::auth::SESSION_COOKIE).unwrap());
    }
    let [signing_out, staying] = [&signed_in[0], &signed_in[1]];
    assert_eq!(who_is(&app, signing_out).await.as_deref(), Some("guest"));

    let sign_out = app
        .router
        .clone()
        .oneshot(
            Request::post("/api/v1/session/sign-out")
                .header("x-tower-csrf", "1")
                .header("cookie", signing_out.as_str())
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(sign_out.status(), StatusCode::NO_CONTENT);
    // The browser is told to forget it…
    let forgotten = sign_out.headers()["set-cookie"].to_str().unwrap();
    assert!(
        forgotten.starts_with("tower_session=;") || forgotten.contains("Max-Age=0"),
        "{forgotten}"
    );
    // …and a copy kept elsewhere is refused, for reads and writes alike; the other session goes on.
    assert_eq!(who_is(&app, signing_out).await, None);
    let read = app
        .get("/api/v1/services", &[("cookie", signing_out.as_str())])
        .await;
    assert_eq!(read.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(who_is(&app, staying).await.as_deref(), Some("guest"));

    // A restarted Tower with the same secret and the same file still refuses it.
    let mut restarted = app.state.auth.clone();
    restarted.revoked = std::sync::Arc::new(server::auth::RevokedSessions::open(&file, 0).unwrap());
    let jar_of = |cookie: &str| {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("cookie", cookie.parse().unwrap());
        axum_extra::extract::PrivateCookieJar::from_headers(&headers, restarted.key.clone())
    };
    assert!(restarted.identity_in(&jar_of(signing_out)).is_none());
    assert!(restarted.identity_in(&jar_of(staying)).is_some());
}

#[tokio::test]
async fn a_tampered_oauth_state_or_a_reused_code_signs_nobody_in() {
    let app = TestApp::start().await;
    let failed_sign_in = |response: &axum::response::Response| {
        let location = response.headers()["location"].to_str().unwrap();
        response.status() == StatusCode::SEE_OTHER
            && location.starts_with("/sign-in?error=")
            && set_cookie(response, server::auth::SESSION_COOKIE)
                .is_none_or(|c| c == "tower_session=")
    };

    // The forge sends the browser back with a code and the state; the state is changed on the way.
    let (oauth_cookie, callback) = app.forge_callback("", "ada").await;
    let tampered = callback.replace("state=", "state=x");
    let response = app.get(&tampered, &[("cookie", &oauth_cookie)]).await;
    assert!(failed_sign_in(&response), "{:?}", response.headers());

    // A callback that worked once: its code, replayed with a fresh (valid) state, signs nobody in again.
    let (oauth_cookie, callback) = app.forge_callback("", "ada").await;
    let first = app.get(&callback, &[("cookie", &oauth_cookie)]).await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    assert!(set_cookie(&first, server::auth::SESSION_COOKIE).is_some());
    let code = callback
        .split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("code="))
        .unwrap()
        .to_string();
    let (fresh_cookie, fresh_callback) = app.forge_callback("", "ada").await;
    let fresh_state = fresh_callback
        .split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("state="))
        .unwrap()
        .to_string();
    let replayed = format!("/auth/github/callback?code={code}&state={fresh_state}");
    let response = app.get(&replayed, &[("cookie", &fresh_cookie)]).await;
    assert!(failed_sign_in(&response), "{:?}", response.headers());
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
            "self.router = self.router.route(route.relative_path(), guarded);",
        ),
        ("routes.rs", ".route(\"/healthz\", get(healthz))"),
        ("routes.rs", ".route(\"/readyz\", get(readyz))"),
        ("routes.rs", ".route(\"/metrics\", get(metrics))"),
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
        "routes registered without a declared permission (use ApiRoutes::serve):\n{}",
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
            throttled = Some(sync);
            break;
        }
    }
    let throttled = throttled.expect("the burst was limited");
    // It says when to come back: at most the six seconds one write takes to refill, never "now".
    let retry_after: u64 = throttled.headers()[axum::http::header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=6).contains(&retry_after), "Retry-After: {retry_after}");
    let body = body_text(throttled).await;
    assert!(body.contains("too_many_requests"), "{body}");
    assert!(body.contains(&format!("{retry_after} s")), "{body}");
    // The limit is the user's own: another user's write goes through meanwhile.
    let admin_sync = app
        .send_as(
            &Role::Admin,
            Method::POST,
            "/api/v1/services/payments/environments/dev/sync",
        )
        .await;
    assert_ne!(admin_sync.status(), StatusCode::TOO_MANY_REQUESTS);
}

/// The app writes its query strings by hand (no URL-encoding serializer in the browser's build); the
/// server's parser must read back exactly what was meant.
#[test]
fn the_query_strings_the_app_writes_read_back_on_the_server() {
    use axum::extract::Query;
    // Every field set, with characters a query string must escape.
    let logs = LogQuery {
        tail: Some(7),
        previous: true,
        follow: true,
        container: Some("app/ä".into()),
        pod: "payments-7d9f 1&x=y".into(),
    };
    let uri: axum::http::Uri = contract::Logs::with_query("payments", "dev", &logs)
        .parse()
        .unwrap();
    let Query(back) = Query::<LogQuery>::try_from_uri(&uri).unwrap();
    assert_eq!(back, logs);
    let bare = LogQuery {
        pod: "p".into(),
        ..LogQuery::default()
    };
    let uri: axum::http::Uri = contract::Logs::with_query("payments", "dev", &bare)
        .parse()
        .unwrap();
    assert_eq!(Query::<LogQuery>::try_from_uri(&uri).unwrap().0, bare);

    for releases in [
        ReleaseQuery::default(),
        ReleaseQuery {
            service: Some("payments".into()),
            environment: Some("prod".into()),
            cursor: Some("3f2a9c1".into()),
        },
    ] {
        let uri: axum::http::Uri = contract::ListReleases::with_query(&releases)
            .parse()
            .unwrap();
        assert_eq!(
            Query::<ReleaseQuery>::try_from_uri(&uri).unwrap().0,
            releases
        );
    }
}
