//! Two replicas that agree: two real `tower serve --config FILE` processes, started from one configuration
//! file and one session secret against one sandbox, share no memory and need no coordination. A session made
//! on one is valid on the other (sessions are encrypted cookies), and one Promote sent to both at once opens
//! one pull request (its branch is a pure function of the intent, and the loser of the race reuses the
//! winner's branch and pull request).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::redirect::Policy;
use secrecy::ExposeSecret as _;
use serde_json::Value;
use server::config::TowerConfig;
use server::upstream::github::GithubApp;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

use crate::eventually;

/// Where both replicas say browsers reach them: one name in front of both, as a load balancer gives.
const PUBLIC_URL: &str = "http://tower.test";
/// The secret both replicas encrypt sessions with (`TOWER_SESSION_SECRET`, at least 64 bytes).
const SESSION_SECRET: &str =
    "replicas-share-this-secret-replicas-share-this-secret-replicas-share-this-secret";
/// Startup: two processes syncing their watch caches on two busy cores.
const STARTUP: Duration = Duration::from_secs(120);
const REPO: &str = "application-repositories";

/// One `tower serve` process, killed when dropped.
struct Replica {
    /// Where it listens.
    addr: SocketAddr,
    _child: Child,
}

impl Replica {
    /// `tower serve --config config` on a free port, with the shared session secret; up once it says where
    /// it listens.
    async fn start(config: &Path, assets: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tower"))
            .arg("--log-json")
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(["--listen", "127.0.0.1:0", "--assets"])
            .arg(assets)
            .env("TOWER_SESSION_SECRET", SESSION_SECRET)
            .env("TOWER_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = tokio::time::timeout(STARTUP, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let Ok(log) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if log["fields"]["message"] == "Tower is listening" {
                    return log["fields"]["listen"].as_str().unwrap().parse().unwrap();
                }
            }
            panic!("tower stopped before it listened");
        })
        .await
        .expect("tower did not listen in time");
        // Reads to the end, so Tower never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            addr,
            _child: child,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// One sandbox and two replicas pointed at it by the same configuration file.
struct Replicas {
    a: Replica,
    b: Replica,
    config: TowerConfig,
    sandbox: sandbox::Sandbox,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Replicas {
    async fn start() -> Self {
        let sandbox =
            sandbox::Sandbox::start_with(sandbox::Options::new("127.0.0.1:0".parse().unwrap()))
                .await
                .unwrap();
        let mut config =
            server::sandbox_cli::tower_config(&sandbox, "127.0.0.1:0".parse().unwrap());
        config.public_url = PUBLIC_URL.into();
        let dir = tempfile::tempdir().unwrap();
        // One list of signed-out sessions on a volume both replicas mount.
        config.auth.revoked_sessions_file = Some(dir.path().join("revoked-sessions"));
        let file = dir.path().join("tower.yaml");
        std::fs::write(&file, serde_saphyr::to_string(&config).unwrap()).unwrap();
        let assets = dir.path().join("no-dist");
        let (a, b) = tokio::join!(
            Replica::start(&file, &assets),
            Replica::start(&file, &assets)
        );
        let http = reqwest::Client::builder()
            .redirect(Policy::none())
            .build()
            .unwrap();
        Self {
            a,
            b,
            config,
            sandbox,
            http,
            _dir: dir,
        }
    }

    /// Signs `login` in on `replica` through the sandbox forge's OAuth pages, as a browser would, and returns
    /// the session cookie (`tower_session=…`).
    async fn sign_in(&self, replica: &Replica, login: &str) -> String {
        let start = self
            .http
            .get(replica.url("/auth/github/start?return_to=/services/payments"))
            .send()
            .await
            .unwrap();
        let authorize = format!("{}&login={login}", location(&start));
        let oauth_cookie = cookies(&start).join("; ");
        let chosen = self.http.get(&authorize).send().await.unwrap();
        let callback = location(&chosen)
            .strip_prefix(PUBLIC_URL)
            .expect("the forge sends the browser back to Tower")
            .to_string();
        let signed_in = self
            .http
            .get(replica.url(&callback))
            .header("cookie", oauth_cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(signed_in.status(), StatusCode::SEE_OTHER, "{signed_in:?}");
        assert_eq!(location(&signed_in), "/services/payments", "signed in");
        cookies(&signed_in)
            .into_iter()
            .find(|c| c.starts_with("tower_session="))
            .expect("signing in sets the session cookie")
    }

    /// `GET path` on `replica` with `cookie`: status and JSON body.
    async fn get(&self, replica: &Replica, path: &str, cookie: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(replica.url(path))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `POST path` on `replica` with `cookie`, the CSRF header and an empty JSON object.
    async fn post(&self, replica: &Replica, path: &str, cookie: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .post(replica.url(path))
            .header("cookie", cookie)
            .header(shared::api::CSRF_HEADER, "1")
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Waits until `replica` answers `path` with 200 for `cookie` (its watch caches have synced).
    async fn wait_until_ok(&self, replica: &Replica, path: &str, cookie: &str) -> Value {
        eventually(STARTUP, || async {
            let (status, body) = self.get(replica, path, cookie).await;
            (status == StatusCode::OK).then_some(body)
        })
        .await
        .unwrap_or_else(|| panic!("{} never answered {path} with 200", replica.addr))
    }

    /// The pull requests in `state` (`open`, `all`) whose head is `branch`, as the forge lists them to the App.
    async fn pulls_from(&self, state: &str, branch: &str) -> Vec<u64> {
        let github = self.config.github.as_ref().unwrap();
        let app = GithubApp::new(
            &github.api_url,
            github.app_id,
            github.app_private_key.expose_secret(),
            github.installation_id,
        )
        .unwrap();
        let repo = format!("{}/{REPO}", self.config.organisation);
        app.list_pulls(&repo, state, Some(branch), 100, 1)
            .await
            .unwrap()
            .into_iter()
            .filter(|p| p.head.reference == branch)
            .map(|p| p.number)
            .collect()
    }

    /// Tower's branches in the GitOps repository.
    fn tower_branches(&self) -> Vec<String> {
        self.sandbox
            .repositories()
            .git(REPO)
            .run(&["for-each-ref", "--format=%(refname)", "refs/heads/tower/"])
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }
}

fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_string()
}

/// The `name=value` parts of every `Set-Cookie` of `response`.
fn cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_made_on_one_replica_is_valid_on_the_other() {
    let replicas = Replicas::start().await;
    let session = replicas.sign_in(&replicas.a, "ada").await;

    let (status, on_a) = replicas.get(&replicas.a, "/api/v1/session", &session).await;
    assert_eq!(status, StatusCode::OK);
    let (status, on_b) = replicas.get(&replicas.b, "/api/v1/session", &session).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(on_a["identity"]["login"], "ada", "{on_a}");
    assert_eq!(on_b["identity"], on_a["identity"], "{on_b}");

    // An owner-only read on B, with the cookie A set: B knows ada owns payments from the cookie alone.
    let preview = replicas
        .wait_until_ok(
            &replicas.b,
            "/api/v1/services/payments/promote/preview",
            &session,
        )
        .await;
    assert!(preview["to"]["version"].is_string(), "{preview}");
    // Without the cookie, B does not let anyone in.
    let (status, _) = replicas
        .get(&replicas.b, "/api/v1/services/payments/promote/preview", "")
        .await;
    assert!(status.is_client_error(), "{status}");

    // Signed out on A, the same cookie is refused on B too (B rereads the shared list within a second).
    let (status, _) = replicas
        .post(&replicas.a, "/api/v1/session/sign-out", &session)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let refused_on_b = eventually(Duration::from_secs(5), || async {
        let (_, on_b) = replicas.get(&replicas.b, "/api/v1/session", &session).await;
        on_b["identity"].is_null().then_some(())
    })
    .await;
    assert!(
        refused_on_b.is_some(),
        "B still honours a session signed out on A"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_promote_sent_to_both_replicas_at_once_opens_one_pull_request() {
    let replicas = Replicas::start().await;
    let session = replicas.sign_in(&replicas.a, "ada").await;
    let preview = "/api/v1/services/payments/promote/preview";
    replicas.wait_until_ok(&replicas.a, preview, &session).await;
    replicas.wait_until_ok(&replicas.b, preview, &session).await;

    // The seeded history has merged promotes of payments from this branch; none is open.
    let branch = "tower/promote/payments/prod";
    let before = replicas.pulls_from("all", branch).await;
    assert_eq!(replicas.pulls_from("open", branch).await, [] as [u64; 0]);

    let promote = "/api/v1/services/payments/promote";
    let ((status_a, on_a), (status_b, on_b)) = tokio::join!(
        replicas.post(&replicas.a, promote, &session),
        replicas.post(&replicas.b, promote, &session),
    );
    assert!(status_a.is_success(), "A answered {status_a}: {on_a}");
    assert!(status_b.is_success(), "B answered {status_b}: {on_b}");
    let number = on_a["number"].as_u64().unwrap();
    assert_eq!(on_b["number"], number, "A: {on_a}\nB: {on_b}");
    assert_eq!(on_a["branch"], branch);
    // One opened it (201); the other, which lost the race, says it reused it (200).
    let mut answers = [(status_a, &on_a), (status_b, &on_b)];
    answers.sort_by_key(|(status, _)| *status);
    assert_eq!(
        [answers[0].0, answers[1].0],
        [StatusCode::OK, StatusCode::CREATED],
        "A: {on_a}\nB: {on_b}"
    );
    assert_eq!(answers[0].1["reused"], true, "{}", answers[0].1);
    assert_eq!(answers[1].1["reused"], false, "{}", answers[1].1);

    assert_eq!(replicas.pulls_from("open", branch).await, [number]);
    let after = replicas.pulls_from("all", branch).await;
    let new: Vec<u64> = after.into_iter().filter(|n| !before.contains(n)).collect();
    assert_eq!(new, [number], "exactly one pull request was opened");
    assert_eq!(
        replicas.tower_branches(),
        ["refs/heads/tower/promote/payments/prod"]
    );
}
