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

/// The same small build as [`TestApp`]'s folder, compiled into the test binary as `embed-spa` compiles
/// `dist/` into `tower`.
#[derive(rust_embed::Embed)]
#[folder = "tests/fixtures/spa"]
struct Fixture;

/// What a `tower` built with `embed-spa` but without `dist/` embeds: nothing.
#[derive(rust_embed::Embed)]
#[folder = "tests/fixtures/no-such-build"]
#[allow_missing = true]
struct NotBuilt;

/// A request to the embedded SPA's routes, as the whole router would pass it on.
async fn embedded_get<E: rust_embed::Embed>(
    path: &str,
    headers: &[(&str, &str)],
) -> axum::http::Response<axum::body::Body> {
    use tower::ServiceExt as _;
    let mut request = axum::http::Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    server::routes::spa::embedded::<E, ()>()
        .oneshot(request.body(axum::body::Body::empty()).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_embedded_spa_loads_index_html_for_client_routes_and_is_revalidated() {
    for path in ["/", "/services/payments", "/releases/0123abc"] {
        let response = embedded_get::<Fixture>(path, &[]).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["cache-control"], "no-cache");
        assert_eq!(response.headers()["content-type"], "text/html");
        assert_eq!(
            body_text(response).await,
            "<!doctype html><title>Tower</title>"
        );
    }
    // The index has a brotli copy only: a browser taking gzip alone gets it plain.
    let brotli = embedded_get::<Fixture>("/services/payments", &[("accept-encoding", "br")]).await;
    assert_eq!(brotli.headers()["content-encoding"], "br");
    assert_eq!(body_text(brotli).await, "brotli index");
    let gzip = embedded_get::<Fixture>("/", &[("accept-encoding", "gzip")]).await;
    assert!(gzip.headers().get("content-encoding").is_none());
}

#[tokio::test]
async fn embedded_hashed_assets_are_immutable_and_sent_precompressed() {
    let path = "/assets/tower-0123456789abcdef.js";

    let brotli = embedded_get::<Fixture>(path, &[("accept-encoding", "gzip, br")]).await;
    assert_eq!(brotli.status(), 200);
    assert_eq!(brotli.headers()["content-encoding"], "br");
    assert_eq!(brotli.headers()["content-type"], "text/javascript");
    assert_eq!(brotli.headers()["vary"], "accept-encoding");
    assert_eq!(
        brotli.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(body_text(brotli).await, "brotli js");

    let gzip = embedded_get::<Fixture>(path, &[("accept-encoding", "gzip, br;q=0")]).await;
    assert_eq!(gzip.headers()["content-encoding"], "gzip");
    assert_eq!(body_text(gzip).await, "gzip js");

    let plain = embedded_get::<Fixture>(path, &[]).await;
    assert!(plain.headers().get("content-encoding").is_none());
    assert_eq!(body_text(plain).await, "console.log(1)");
}

#[tokio::test]
async fn an_embedded_asset_the_browser_holds_is_a_304_that_stays_immutable() {
    let path = "/assets/tower-0123456789abcdef.js";
    let first = embedded_get::<Fixture>(path, &[("accept-encoding", "br")]).await;
    let etag = first.headers()["etag"].to_str().unwrap().to_string();

    let again =
        embedded_get::<Fixture>(path, &[("accept-encoding", "br"), ("if-none-match", &etag)]).await;
    assert_eq!(again.status(), 304);
    assert_eq!(
        again.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(body_text(again).await.is_empty());

    // The brotli copy's tag does not stand for the plain file.
    let plain = embedded_get::<Fixture>(path, &[("if-none-match", &etag)]).await;
    assert_eq!(plain.status(), 200);
    assert_eq!(body_text(plain).await, "console.log(1)");
}

#[tokio::test]
async fn embedded_files_outside_assets_are_served_by_name_and_a_missing_asset_is_a_404() {
    let favicon = embedded_get::<Fixture>("/favicon.svg", &[]).await;
    assert_eq!(favicon.status(), 200);
    assert_eq!(favicon.headers()["content-type"], "image/svg+xml");
    assert_eq!(favicon.headers()["cache-control"], "no-cache");
    assert_eq!(body_text(favicon).await, "<svg/>");

    let missing = embedded_get::<Fixture>("/assets/tower-ffffffffffffffff.js", &[]).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.headers()["cache-control"], "no-cache");
}

#[tokio::test]
async fn the_embedded_spa_refuses_writes() {
    use tower::ServiceExt as _;
    let request = axum::http::Request::post("/services/payments")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = server::routes::spa::embedded::<Fixture, ()>()
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
}

#[tokio::test]
async fn a_tower_built_without_dist_says_so_instead_of_serving_a_blank_page() {
    let response = embedded_get::<NotBuilt>("/services/payments", &[]).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert!(body_text(response).await.contains("cargo xtask dist"));

    let asset = embedded_get::<NotBuilt>("/assets/tower-0123456789abcdef.js", &[]).await;
    assert_eq!(asset.status(), 404);
}
