//! Untrusted text at the sign-in flow's sinks, through the router and the sandbox forge's real OAuth pages:
//! the `Location` Tower answers and the cookies it sets. The same payload table runs in Chromium in
//! `end2end/tests/open-redirect.spec.ts`.

use axum::body::Body;
use axum::http::{Response, StatusCode};
use url::Url;

use crate::TestApp;

const PAYLOADS: &str = include_str!("../../../end2end/data/open-redirect-payloads.json");

#[derive(serde::Deserialize)]
struct Payload {
    payload: String,
    why: String,
}

fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// Signs ada in on a fresh Tower from a link to `/auth/github/start?<start_query>`: the start and callback
/// responses.
async fn sign_in_from(start_query: &str) -> (Response<Body>, Response<Body>) {
    let app = TestApp::start().await;
    app.sign_in_through_forge(start_query, "ada").await
}

#[tokio::test]
async fn the_reported_tab_payload_returns_the_user_to_the_overview() {
    let (_, callback) = sign_in_from("return_to=/%09/evil.example/x").await;
    assert_eq!(callback.status(), StatusCode::SEE_OTHER);
    assert_eq!(callback.headers()["location"], "/");
}

#[tokio::test]
async fn every_payload_of_the_table_lands_on_tower_after_signing_in() {
    let app = TestApp::start().await;
    let tower = Url::parse("http://tower.test").unwrap();
    let payloads: Vec<Payload> = serde_json::from_str(PAYLOADS).unwrap();
    assert!(payloads.len() >= 30);
    for Payload { payload, why } in &payloads {
        let (start, callback) = app
            .sign_in_through_forge(&format!("return_to={}", encode(payload)), "ada")
            .await;
        assert_eq!(start.status(), StatusCode::SEE_OTHER, "{why}");
        let location = callback.headers()["location"].to_str().unwrap();
        let landed = tower.join(location).unwrap();
        assert_eq!(
            landed.origin(),
            tower.origin(),
            "{payload:?} ({why}) sent the browser to {location:?}"
        );
    }
}

#[tokio::test]
async fn a_return_to_carrying_a_line_break_cannot_add_a_header_or_a_cookie() {
    let (start, callback) = sign_in_from("return_to=/prs%0d%0aSet-Cookie:%20evil=1").await;
    let cookies = |response: &Response<Body>| -> Vec<String> {
        response
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().split('=').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(cookies(&start), ["tower_oauth"]);
    let mut after = cookies(&callback);
    after.sort();
    assert_eq!(after, ["tower_oauth", "tower_session"]);
    // The line break is dropped as a browser would drop it; what is left is a path on Tower.
    assert_eq!(callback.headers()["location"], "/prsSet-Cookie:%20evil=1");
}

#[tokio::test]
async fn a_log_request_names_only_pods_of_its_service_so_nothing_else_reaches_the_cluster() {
    let app = TestApp::start().await;
    for pod in ["..%2F..%2Fsecrets", "ledger-0", "payments-0%2Flog%3Fx%3D1"] {
        let response = app
            .send_as(
                &crate::Role::Owner,
                axum::http::Method::GET,
                &format!("/api/v1/services/payments/environments/prod/logs?pod={pod}"),
            )
            .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{pod}");
        let body: serde_json::Value =
            serde_json::from_str(&crate::body_text(response).await).unwrap();
        assert_eq!(body["field"], "pod", "{pod}: {body}");
    }
}
