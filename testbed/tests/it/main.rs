//! Tower against real kube-apiservers: the same answers as from the sandbox's emulation, and its generated RBAC
//! enough for every watch and nothing more; and go-github, a second GitHub client, against the sandbox's forge.
//! Skipped without the binaries (`cargo xtask kube build`), except on CI, where that fails.
#![allow(clippy::unwrap_used)]

mod both;
mod faults;
mod github_client;
mod rbac;

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum_extra::extract::PrivateCookieJar;
use http_body_util::BodyExt as _;
use server::config::TowerConfig;
use server::state::AppState;
use shared::auth::Identity;
use tower::ServiceExt as _;

/// A sandbox and a testbed holding a copy of its world.
pub async fn sandbox_and_copy() -> (sandbox::Sandbox, testbed::Platform) {
    let sandbox =
        sandbox::Sandbox::start_with(sandbox::Options::new("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
    let platform = testbed::Platform::copy_of(&sandbox).await.unwrap();
    (sandbox, platform)
}

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
            .add(self.state.auth.session_cookie(Identity::guest()).unwrap());
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

    /// `service`'s card in `environment`, once `ready` holds for it; fails with the last card seen after
    /// `within`.
    pub async fn card_when(
        &self,
        service: &str,
        environment: &str,
        what: &str,
        within: Duration,
        ready: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let started = Instant::now();
        loop {
            let (status, detail) = self.get_json(&format!("/api/v1/services/{service}")).await;
            assert_eq!(status, 200, "{detail}");
            let card = detail["cards"]
                .as_array()
                .unwrap()
                .iter()
                .find(|card| card["environment"] == environment)
                .cloned()
                .unwrap();
            if ready(&card) {
                println!("{what}: {:.1}s", started.elapsed().as_secs_f64());
                return card;
            }
            assert!(started.elapsed() < within, "{what} never came: {card:#}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}
