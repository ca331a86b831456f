//! Fuzzing the API against a running Tower on the sandbox: random methods, paths built from the real
//! routes with mutated segments, bodies, headers and cookies (valid, tampered and foreign sessions, with and
//! without the CSRF header). What a client must be able to rely on: no 500, a 5xx only as the documented
//! upstream failures (502/503 saying `unavailable`), and every 4xx or 5xx an `ApiError` body.
//!
//! The cases come from proptest's deterministic runner, so every run sends the same [`REQUESTS`] requests
//! (the corpus is the seed) and a failure names the request that caused it.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::IntoResponse as _;
use axum_extra::extract::PrivateCookieJar;
use axum_extra::extract::cookie::Key;
use http_body_util::BodyExt as _;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::TestRunner;
use shared::{ApiError, ErrorCode};
use tower::ServiceExt as _;

use crate::{Role, TestApp};

/// How many requests one run of `cargo xtask test` sends; `TOWER_FUZZ_REQUESTS` asks for more (or fewer) for
/// a longer hunt.
const REQUESTS: usize = 600;

/// What a request carries as its session.
#[derive(Debug, Clone)]
enum Session {
    None,
    Valid(usize),
    /// A valid cookie with one character changed.
    Tampered(usize, prop::sample::Index, char),
    /// A cookie sealed with another secret (another Tower, or a forger).
    Foreign,
    Garbage(String),
}

/// One request to send.
#[derive(Debug, Clone)]
struct Case {
    method: &'static str,
    path: String,
    session: Session,
    csrf: bool,
    origin: Option<&'static str>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

/// Path segments: real names, and what an attacker puts in their place.
const SEGMENTS: &[&str] = &[
    "payments",
    "orders",
    "dev",
    "prod",
    "staging",
    "payments-dev",
    "nope",
    "..",
    "%2e%2e",
    "..%2f..%2fetc",
    "%2F",
    "%00",
    "a%0d%0aSet-Cookie:%20x=y",
    "%ff%fe",
    "%F0%9F%A6%80",
    "%3Cscript%3E",
    "-",
    "0",
    "99999999999999999999999",
    "-1",
    "tower%2Fonboard%2Fpayments",
    "UPPER",
];

const QUERIES: &[&str] = &[
    "",
    "?limit=-1",
    "?limit=99999999999999999999",
    "?since=yesterday",
    "?cursor=%ff",
    "?page=0&page=1",
    "?range=1h&step=0",
    "?start=2026-12-05T05:00:00Z&end=1970-01-01T00:00:00Z",
    "?q=%00",
    "?environment=../../x",
    "?a=b;c=d",
    "?pod=x&tail=many&follow=maybe",
    "?pod=%ff",
    "?follow=maybe",
];

/// Non-API paths the browser reaches.
const OTHER_PATHS: &[&str] = &[
    "/",
    "/services/payments",
    "/auth/github/start",
    "/auth/github/start?return_to=https://evil.example",
    "/auth/github/callback",
    "/auth/github/callback?code=x&state=y",
    "/auth/logout",
    "/healthz",
    "/readyz",
    "/api",
    "/api/",
    "/api/v1",
    "/api/v1/",
    "/api/v2/services",
    "/api/v1/does-not-exist",
    "/api/v1/services/payments/../../v1/services",
    "/assets/tower-0123456789abcdef.js",
    "/assets/../index.html",
];

/// JSON bodies: near-valid forms and hostile shapes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let fixed = prop::sample::select(vec![
        "",
        "{}",
        "[]",
        "null",
        "\"\"",
        "{",
        "{\"name\":\"payments\"}",
        "{\"name\":\"../../x\",\"owner\":\"payments\",\"template\":\"go-service\",\"template_version\":\"1.4.0\"}",
        "{\"environment\":\"prod\",\"build\":\"3f2a9c1\",\"databases\":[\"payments\"]}",
        "{\"environment\":\"dev\",\"name\":\"payments\",\"size\":\"small\"}",
        "{\"environment\":1e999,\"build\":null}",
        "{\"environment\":\"prod\",\"version\":99999999999999999999999}",
        "{\"path\":\"platform/../infrastructure/x.yaml\",\"content\":\"a: &a [*a]\"}",
        "{\"path\":\"platform/environments/prod/payments-release.yaml\",\"content\":\"\\u0000\"}",
        "{\"name\":\"\\ud800\"}",
        "{\"name\":\"🦀\",\"description\":\"<script>alert(1)</script>\"}",
    ])
    .prop_map(|s| s.as_bytes().to_vec());
    let nested = (1usize..20_000)
        .prop_map(|depth| format!("{}1{}", "[".repeat(depth), "]".repeat(depth)).into_bytes());
    let bytes = prop::collection::vec(any::<u8>(), 0..200);
    prop_oneof![6 => fixed, 1 => nested, 1 => bytes]
}

/// A path, with the method of the route it was built from (none for the other paths).
fn path(
    routes: Vec<(String, &'static str)>,
) -> impl Strategy<Value = (String, Option<&'static str>)> {
    // Real names twice as often as hostile ones, so handlers are reached as well as refusals.
    let segment = prop_oneof![
        2 => prop::sample::select(&SEGMENTS[..6]),
        1 => prop::sample::select(SEGMENTS),
    ];
    let api = (
        prop::sample::select(routes),
        prop::collection::vec(segment, 4),
        prop::sample::select(QUERIES),
        prop::bool::weighted(0.1),
    )
        .prop_map(|((template, method), segments, query, trailing)| {
            // Fill each `{placeholder}` with a segment, in turn.
            let mut path = String::new();
            let mut rest = template.as_str();
            let mut next = segments.iter().cycle();
            while let Some(open) = rest.find('{') {
                path.push_str(&rest[..open]);
                let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
                path.push_str(next.next().copied().unwrap_or("x"));
                rest = &rest[close..];
            }
            path.push_str(rest);
            if trailing {
                path.push('/');
            }
            (path + query, Some(method))
        });
    prop_oneof![5 => api, 1 => prop::sample::select(OTHER_PATHS).prop_map(|p| (p.to_string(), None))]
}

fn case(routes: Vec<(String, &'static str)>) -> impl Strategy<Value = Case> {
    // Mostly what Tower's own page sends, so requests get past the guards into the handlers; the rest is
    // tampered with.
    let session = prop_oneof![
        1 => Just(Session::None),
        6 => (0usize..Role::ALL.len()).prop_map(Session::Valid),
        1 => (0usize..Role::ALL.len(), any::<prop::sample::Index>(), any::<char>())
            .prop_map(|(r, i, c)| Session::Tampered(r, i, c)),
        1 => Just(Session::Foreign),
        1 => "[ -~]{0,40}".prop_map(Session::Garbage),
    ];
    let content_type = prop_oneof![
        4 => Just(Some("application/json")),
        1 => prop::option::of(prop::sample::select(vec!["text/plain", "application/json; charset=latin1"])),
    ];
    // The route's own method two times in three, so handlers are reached; any other the rest of the time.
    let method = prop_oneof![
        2 => Just(None),
        1 => prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "BREW"])
            .prop_map(Some),
    ];
    (
        method,
        path(routes),
        session,
        prop::bool::weighted(0.8),
        prop::option::weighted(
            0.2,
            prop::sample::select(vec!["https://evil.example", "http://tower.test", "null"]),
        ),
        content_type,
        body(),
    )
        .prop_map(
            |(method, (path, own), session, csrf, origin, content_type, body)| Case {
                method: method.or(own).unwrap_or("GET"),
                path,
                session,
                csrf,
                origin,
                content_type,
                body,
            },
        )
}

impl TestApp {
    /// The `Cookie` header `session` stands for.
    fn cookie_for(&self, session: &Session) -> Option<String> {
        let valid = |role: usize| {
            Role::ALL[role]
                .identity()
                .map(|identity| self.session_cookie(identity))
        };
        match session {
            Session::None => None,
            Session::Valid(role) => valid(*role),
            Session::Tampered(role, at, with) => valid(*role).map(|cookie| {
                let (name, value) = cookie.split_once('=').unwrap();
                let mut chars: Vec<char> = value.chars().collect();
                let at = at.index(chars.len().max(1));
                if let Some(c) = chars.get_mut(at) {
                    *c = if *c == *with { 'A' } else { *with };
                }
                let tampered: String = chars.into_iter().collect();
                format!("{name}={}", tampered.escape_default())
            }),
            Session::Foreign => {
                let identity = Role::Admin.identity().unwrap();
                let jar = PrivateCookieJar::new(Key::generate())
                    .add(self.state.auth.session_cookie(identity).unwrap());
                let response = jar.into_response();
                let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
                Some(set_cookie.split(';').next().unwrap().to_string())
            }
            Session::Garbage(text) => Some(format!("tower_session={text}")),
        }
    }
}

/// Sends `case` and says what is wrong with the answer, if anything.
async fn check(app: &TestApp, case: &Case) -> Result<StatusCode, String> {
    let mut request = Request::builder().method(case.method).uri(&case.path);
    if let Some(cookie) = app.cookie_for(&case.session) {
        request = request.header("cookie", cookie);
    }
    if case.csrf {
        request = request.header(shared::api::CSRF_HEADER, "1");
    }
    if let Some(origin) = case.origin {
        request = request.header("origin", origin);
    }
    if let Some(content_type) = case.content_type {
        request = request.header("content-type", content_type);
    }
    // A path no client could send (a request line the HTTP parser refuses) is not a case.
    let Ok(request) = request.body(Body::from(case.body.clone())) else {
        return Ok(StatusCode::BAD_REQUEST);
    };
    let response =
        tokio::time::timeout(Duration::from_secs(20), app.router.clone().oneshot(request))
            .await
            .map_err(|_| "no answer within 20 s".to_string())?
            .unwrap();
    let status = response.status();
    if status.is_success() || status.is_redirection() || status.is_informational() {
        // A 2xx may be an endless event stream: its body is not read.
        return Ok(status);
    }
    let api = case.path.starts_with("/api");
    let body = tokio::time::timeout(Duration::from_secs(20), response.into_body().collect())
        .await
        .map_err(|_| "the error body never ended".to_string())?
        .map_err(|e| format!("the error body failed: {e}"))?
        .to_bytes();
    let error: Option<ApiError> = serde_json::from_slice(&body).ok();
    let shown = String::from_utf8_lossy(&body);
    if status.is_server_error() {
        let documented = matches!(
            status,
            StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE
        ) && error
            .as_ref()
            .is_some_and(|e| e.code == ErrorCode::Unavailable);
        if !documented {
            return Err(format!(
                "{status} is no documented upstream failure: {shown}"
            ));
        }
    } else if api && error.is_none() && case.method != "HEAD" {
        return Err(format!("{status} without an ApiError body: {shown:?}"));
    }
    Ok(status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_api_answers_every_request_with_no_500_and_errors_as_api_error() {
    let app = TestApp::start().await;
    let routes: Vec<(String, &'static str)> = server::routes::api(&app.state)
        .routes()
        .iter()
        .map(|route| (route.path.to_string(), route.method.as_str()))
        .collect();
    let strategy = case(routes);
    let mut runner = TestRunner::deterministic();
    let mut failures = Vec::new();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let started = std::time::Instant::now();
    let requests = std::env::var("TOWER_FUZZ_REQUESTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(REQUESTS);
    for _ in 0..requests {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        match check(&app, &case).await {
            Ok(status) => *statuses.entry(status.as_u16()).or_default() += 1,
            Err(why) => failures.push(format!(
                "{} {} (session {:?}, csrf {}, origin {:?}, content-type {:?}, body {:?}): {why}",
                case.method,
                case.path,
                case.session,
                case.csrf,
                case.origin,
                case.content_type,
                String::from_utf8_lossy(&case.body)
                    .chars()
                    .take(120)
                    .collect::<String>(),
            )),
        }
    }
    println!(
        "fuzz_api: {requests} requests in {:?}, statuses {statuses:?}",
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {requests} requests failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Reads an error response as the API's error shape.
async fn api_error(response: axum::response::Response) -> (StatusCode, Option<ApiError>) {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).ok())
}

/// What the fuzzer found, each answered before in a shape no client could read: a wrong method on a real
/// route and a segment that is not UTF-8 were 500s, a malformed query a plain-text 400, and `/api/` the SPA.
#[tokio::test]
async fn regression_malformed_requests_the_fuzzer_found_are_answered_as_api_errors() {
    let app = TestApp::start().await;
    let admin = app.session_cookie(Role::Admin.identity().unwrap());
    let send = |method: &str, path: &str| {
        Request::builder()
            .method(method)
            .uri(path)
            .header("cookie", &admin)
            .header(shared::api::CSRF_HEADER, "1")
            .body(Body::empty())
            .unwrap()
    };
    let answer =
        |request| async { api_error(app.router.clone().oneshot(request).await.unwrap()).await };

    // A route's path with another method: 405, saying which methods it takes.
    let response = app
        .router
        .clone()
        .oneshot(send("DELETE", "/api/v1/services/payments"))
        .await
        .unwrap();
    assert_eq!(
        response.headers().get("allow").map(|a| a.to_str().unwrap()),
        Some("GET,HEAD")
    );
    let (status, error) = api_error(response).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let error = error.unwrap();
    assert!(error.message.contains("DELETE"), "{error:?}");
    let (status, error) = answer(send("GET", "/api/v1/webhooks/github")).await;
    assert_eq!(
        (status, error.is_some()),
        (StatusCode::METHOD_NOT_ALLOWED, true)
    );

    // A segment that decodes to no UTF-8.
    let (status, error) = answer(send("GET", "/api/v1/services/%ff%fe")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error.unwrap().field.as_deref(), Some("path"));

    // A query the route cannot read: named as the query at fault.
    let (status, error) = answer(send(
        "GET",
        "/api/v1/services/payments/environments/dev/logs?tail=many",
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error = error.unwrap();
    assert_eq!(error.field.as_deref(), Some("query"));
    assert!(error.message.contains("tail"), "{error:?}");

    // `/api/` is the API's, not the SPA's.
    let (status, error) = answer(send("GET", "/api/")).await;
    assert_eq!(
        (status, error.map(|e| e.code)),
        (StatusCode::NOT_FOUND, Some(ErrorCode::NotFound))
    );
}
