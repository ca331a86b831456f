//! Tower's server, tested through its router against the real sandbox over HTTP.
#![allow(clippy::unwrap_used)]

mod fleet;
mod spa;

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use http_body_util::BodyExt as _;
use server::fleet::FleetModel;
use server::routes::router;
use server::state::AppState;
use tower::ServiceExt as _;

/// A server wired to a fresh sandbox, with a small fake SPA build in a temporary folder.
pub struct TestApp {
    pub router: Router,
    pub sandbox: sandbox::Sandbox,
    pub fleet: FleetModel,
    _assets: tempfile::TempDir,
}

impl TestApp {
    pub async fn start() -> Self {
        let sandbox = sandbox::Sandbox::start("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let client =
            server::upstream::kube::client_for_url(&sandbox.cluster_url("management")).unwrap();
        let (components, watch) = server::upstream::kube::watch_components(client);
        let fleet = FleetModel::new(components);
        tokio::spawn(fleet.clone().follow(watch));
        assert!(
            fleet.wait_until_ready(Duration::from_secs(10)).await,
            "fleet never synced"
        );

        let assets = tempfile::tempdir().unwrap();
        let dir = assets.path();
        std::fs::create_dir_all(dir.join("assets")).unwrap();
        std::fs::write(
            dir.join("index.html"),
            "<!doctype html><title>Tower</title>",
        )
        .unwrap();
        std::fs::write(dir.join("index.html.br"), "brotli index").unwrap();
        std::fs::write(
            dir.join("assets/tower-0123456789abcdef.js"),
            "console.log(1)",
        )
        .unwrap();
        std::fs::write(dir.join("assets/tower-0123456789abcdef.js.br"), "brotli js").unwrap();
        std::fs::write(dir.join("assets/tower-0123456789abcdef.js.gz"), "gzip js").unwrap();
        std::fs::write(dir.join("favicon.svg"), "<svg/>").unwrap();

        let state = AppState {
            fleet: fleet.clone(),
            assets: dir.to_path_buf(),
        };
        Self {
            router: router(state),
            sandbox,
            fleet,
            _assets: assets,
        }
    }

    /// Sends a GET with `headers`.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response<Body> {
        let mut request = Request::get(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    /// Sends a GET and parses the JSON body.
    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let response = self.get(path, &[]).await;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }
}

/// The whole body of a response as text.
pub async fn body_text(response: Response<Body>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}
