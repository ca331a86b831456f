//! Tower's server, tested through its router against the real sandbox over HTTP.
#![allow(clippy::unwrap_used)]

mod auth;
mod catalog;
mod clusters;
mod config;
mod config_check;
mod databases;
mod delivery;
mod faults;
mod fleet;
mod fuzz_api;
mod logs;
mod manifests;
mod metrics;
mod pipelines;
mod platform;
mod replicas;
mod secrets;
#[cfg(target_os = "linux")]
mod signals;
mod sinks;
mod slo;
mod spa;
mod telemetry;
mod webhooks;

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Method;
use axum::http::{Request, Response};
use axum::response::IntoResponse as _;
use axum_extra::extract::PrivateCookieJar;
use http_body_util::BodyExt as _;
use server::fleet::FleetModel;
use server::routes::router;
use server::state::AppState;
use shared::auth::{AccountKind, Identity};
use tower::ServiceExt as _;

/// The kinds of user the route × role matrix walks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    Anonymous,
    Guest,
    /// A member of `shop`, which does not own `payments`.
    OtherTeam,
    /// A member of `payments`.
    Owner,
    Admin,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Anonymous,
        Role::Guest,
        Role::OtherTeam,
        Role::Owner,
        Role::Admin,
    ];

    pub fn identity(&self) -> Option<Identity> {
        let member = |login: &str, kind, teams: &[&str]| Identity {
            login: login.into(),
            name: login.into(),
            kind,
            teams: teams.iter().map(|t| (*t).to_string()).collect(),
            avatar_url: None,
        };
        match self {
            Role::Anonymous => None,
            Role::Guest => Some(Identity::guest()),
            Role::OtherTeam => Some(member("linus", AccountKind::Member, &["shop"])),
            Role::Owner => Some(member("ada", AccountKind::Member, &["payments"])),
            Role::Admin => Some(member("root", AccountKind::Admin, &[])),
        }
    }
}

/// A server wired to a fresh sandbox, with a small fake SPA build in a temporary folder.
pub struct TestApp {
    pub router: Router,
    pub state: AppState,
    pub sandbox: sandbox::Sandbox,
    pub fleet: FleetModel,
    _assets: tempfile::TempDir,
}

impl TestApp {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// As [`Self::start`], with the sandbox's Tower configuration changed by `adjust` first.
    pub async fn start_with(adjust: impl FnOnce(&mut server::config::TowerConfig)) -> Self {
        Self::start_on(
            sandbox::Options::new("127.0.0.1:0".parse().unwrap()),
            adjust,
        )
        .await
    }

    /// As [`Self::start_with`], on a sandbox started with `options`.
    pub async fn start_on(
        options: sandbox::Options,
        adjust: impl FnOnce(&mut server::config::TowerConfig),
    ) -> Self {
        let sandbox = sandbox::Sandbox::start_with(options).await.unwrap();
        Self::start_over(sandbox, adjust).await
    }

    /// As [`Self::start_with`], over a sandbox a test has already started (and perhaps changed).
    pub async fn start_over(
        sandbox: sandbox::Sandbox,
        adjust: impl FnOnce(&mut server::config::TowerConfig),
    ) -> Self {
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

        let mut config =
            server::sandbox_cli::tower_config(&sandbox, "127.0.0.1:0".parse().unwrap());
        config.public_url = "http://tower.test".into();
        if let Some(github) = config.github.as_mut() {
            // The activity feed's merges show up within a test's patience.
            github.merged_poll_seconds = 1;
            // Nothing delivers webhooks to a router without a socket: poll, unless a test opts in.
            github.webhook_secret = None;
        }
        adjust(&mut config);
        let state = server::serve::build_state(&config, dir.to_path_buf(), true)
            .await
            .unwrap();
        let fleet = state.fleet.clone();
        assert!(
            fleet.wait_until_ready(Duration::from_secs(10)).await,
            "fleet never synced"
        );
        Self {
            router: router(state.clone()),
            state,
            sandbox,
            fleet,
            _assets: assets,
        }
    }

    /// A `Cookie` header value carrying a valid session for `identity`.
    pub fn session_cookie(&self, identity: Identity) -> String {
        let jar = PrivateCookieJar::new(self.state.auth.key.clone())
            .add(self.state.auth.session_cookie(identity).unwrap());
        let response = jar.into_response();
        let set_cookie = response.headers()["set-cookie"].to_str().unwrap();
        set_cookie.split(';').next().unwrap().to_string()
    }

    /// Sends `method path` as `who` (with the CSRF header on writes) and returns the response.
    pub async fn send_as(&self, who: &Role, method: Method, path: &str) -> Response<Body> {
        self.send_with(who, method, path, "{}".into()).await
    }

    /// As [`Self::send_as`], with `body` (JSON) on writes.
    pub async fn send_with(
        &self,
        who: &Role,
        method: Method,
        path: &str,
        body: String,
    ) -> Response<Body> {
        let mut request = Request::builder().method(method.clone()).uri(path);
        if let Some(identity) = who.identity() {
            request = request.header("cookie", self.session_cookie(identity));
        }
        if method != Method::GET {
            request = request
                .header("x-tower-csrf", "1")
                .header("content-type", "application/json");
        }
        self.router
            .clone()
            .oneshot(request.body(Body::from(body)).unwrap())
            .await
            .unwrap()
    }

    /// Signs `login` in through the sandbox forge's OAuth pages as a browser would, starting from
    /// `/auth/github/start?<start_query>`: returns the start response and the callback's response.
    pub async fn sign_in_through_forge(
        &self,
        start_query: &str,
        login: &str,
    ) -> (Response<Body>, Response<Body>) {
        let (start, oauth_cookie, callback_path) = self.through_forge(start_query, login).await;
        let callback = self.get(&callback_path, &[("cookie", &oauth_cookie)]).await;
        (start, callback)
    }

    /// As [`Self::sign_in_through_forge`], stopping where the forge sends the browser back: the OAuth
    /// cookie Tower set and the callback path (with its `code` and `state`), not yet visited.
    pub async fn forge_callback(&self, start_query: &str, login: &str) -> (String, String) {
        let (_, oauth_cookie, callback_path) = self.through_forge(start_query, login).await;
        (oauth_cookie, callback_path)
    }

    async fn through_forge(
        &self,
        start_query: &str,
        login: &str,
    ) -> (Response<Body>, String, String) {
        let start = self
            .get(&format!("/auth/github/start?{start_query}"), &[])
            .await;
        let header = |response: &Response<Body>, name: &str| -> Vec<String> {
            response
                .headers()
                .get_all(name)
                .iter()
                .map(|v| v.to_str().unwrap().to_string())
                .collect()
        };
        let authorize = format!("{}&login={login}", header(&start, "location")[0]);
        let oauth_cookie: Vec<String> = header(&start, "set-cookie")
            .iter()
            .map(|c| c.split(';').next().unwrap().to_string())
            .collect();
        let forge = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let chosen = forge.get(&authorize).send().await.unwrap();
        let callback = chosen.headers()["location"].to_str().unwrap().to_string();
        let callback_path = callback
            .strip_prefix("http://tower.test")
            .expect("the forge sends the browser back to Tower")
            .to_string();
        (start, oauth_cookie.join("; "), callback_path)
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

    /// Sends a GET as a guest and parses the JSON body.
    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let response = self.send_as(&Role::Guest, Method::GET, path).await;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }
}

/// Requests the sandbox's Kubernetes APIs and Argo CD have received so far.
pub fn upstream_requests(app: &TestApp) -> u64 {
    let kube: u64 = sandbox::CLUSTERS
        .iter()
        .filter_map(|c| app.sandbox.cluster(c))
        .map(|c| c.request_count())
        .sum();
    kube + app.sandbox.argocd().request_count()
}

/// [`upstream_requests`] once start-up's have stopped (it has not moved for half a second, within 15 s):
/// the pipeline watches list after the first picture, so their lists and watches may still be arriving.
pub async fn settled_upstream_requests(app: &TestApp) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut last = upstream_requests(app);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = upstream_requests(app);
        if now == last || tokio::time::Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// Asks `probe` every 100 ms until it answers something or `limit` passes.
pub async fn eventually<T, Fut>(limit: Duration, mut probe: impl FnMut() -> Fut) -> Option<T>
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(found) = probe().await {
            return Some(found);
        }
        if tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The whole body of a response as text.
pub async fn body_text(response: Response<Body>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}
