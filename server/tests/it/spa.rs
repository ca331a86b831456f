//! Serving the SPA.

use crate::{TestApp, body_text};

#[tokio::test]
async fn client_routes_load_index_html_and_are_revalidated() {
    let app = TestApp::start().await;
    let response = app.get("/services/payments", &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert!(body_text(response).await.contains("<title>Tower</title>"));
}

#[tokio::test]
async fn hashed_assets_are_immutable_and_sent_precompressed() {
    let app = TestApp::start().await;
    let path = "/assets/tower-0123456789abcdef.js";

    let brotli = app.get(path, &[("accept-encoding", "gzip, br")]).await;
    assert_eq!(brotli.status(), 200);
    assert_eq!(brotli.headers()["content-encoding"], "br");
    assert_eq!(
        brotli.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(body_text(brotli).await, "brotli js");

    let gzip = app.get(path, &[("accept-encoding", "gzip")]).await;
    assert_eq!(gzip.headers()["content-encoding"], "gzip");
    assert_eq!(body_text(gzip).await, "gzip js");

    let plain = app.get(path, &[]).await;
    assert!(plain.headers().get("content-encoding").is_none());
    assert_eq!(body_text(plain).await, "console.log(1)");
}

#[tokio::test]
async fn a_missing_asset_is_a_404_not_the_index() {
    let app = TestApp::start().await;
    let response = app.get("/assets/tower-ffffffffffffffff.js", &[]).await;
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["cache-control"], "no-cache");
}

#[tokio::test]
async fn unknown_api_paths_answer_json_404() {
    let app = TestApp::start().await;
    let (status, body) = app.get_json("/api/v2/nothing").await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "not_found");
}

#[tokio::test]
async fn healthz_answers_ok() {
    let app = TestApp::start().await;
    let response = app.get("/healthz", &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_text(response).await, "ok");
}
