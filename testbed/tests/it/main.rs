//! Tower against real kube-apiservers: the same answers as from the sandbox's emulation, and its generated RBAC
//! enough for every watch and nothing more. Skipped without the binaries (`cargo xtask kube build`), except on
//! CI, where that fails.
#![allow(clippy::unwrap_used)]

mod both;
mod faults;
mod rbac;

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum_extra::extract::PrivateCookieJar;
use http_body_util::BodyExt as _;
use server::config::TowerConfig;
use server::state::AppState;
use shared::auth::Identity;
use tower::ServiceExt as _;

/// Tower's router over `config`, once its fleet model has its first picture.
pub struct Tower {
    router: Router,
    state: AppState,
    _assets: tempfile::TempDir,
}

impl Tower {
    pub async fn start(config: &TowerConfig) -> Self {
        let assets = tempfile::tempdir().unwrap();
        std::fs::write(assets.path().join("index.html"), "<!doctype html>").unwrap();
        let state = server::serve::build_state(config, assets.path().to_path_buf(), true)
            .await
            .unwrap();
        assert!(
            state.fleet.wait_until_ready(Duration::from_secs(30)).await,
            "the fleet never synced"
        );
        Self {
            router: server::routes::router(state.clone()),
            state,
            _assets: assets,
        }
    }

    /// GET `path` as a guest: the status and the JSON body.
    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let jar = PrivateCookieJar::new(self.state.auth.key.clone())
            .add(self.state.auth.session_cookie(Identity::guest()));
        let response = axum::response::IntoResponse::into_response(jar);
        let cookie = response.headers()["set-cookie"].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_owned();
        let request = Request::get(path)
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }
}
