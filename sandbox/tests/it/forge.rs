//! The forge, driven over real TCP by the clients Tower uses: octocrab as a GitHub App, and plain HTTP for
//! the OAuth web flow and the error shapes.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use octocrab::Octocrab;
use octocrab::models::{AppId, InstallationId};
use octocrab::params::repos::Reference;
use sandbox::forge::{self, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Forge, ForgeConfig};
use sandbox::git::Repositories;
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};

const OTHER_KEY: &str = include_str!("../../src/forge/testdata/other.private.pem");
const RELEASE: &str = "platform/environments/prod/payments-release.yaml";

/// A forge over freshly built repositories, served like the sandbox serves it: the API under `/github`,
/// the sandbox's controls at the root.
pub struct TestForge {
    pub forge: Forge,
    pub addr: SocketAddr,
    pub http: reqwest::Client,
}

impl TestForge {
    pub async fn start() -> Self {
        Self::with(ForgeConfig::default()).await
    }

    pub async fn with(config: ForgeConfig) -> Self {
        let repositories = Repositories::build().unwrap();
        let forge = Forge::new(repositories, config).unwrap();
        let router = axum::Router::new()
            .nest("/github", forge::router(forge.clone()))
            .merge(forge::sandbox_routes(forge.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Self { forge, addr, http }
    }

    pub fn api(&self, path: &str) -> String {
        format!("http://{}/github{path}", self.addr)
    }

    pub fn app(&self) -> Octocrab {
        let (app_id, pem) = Forge::demo_app();
        Octocrab::builder()
            .base_uri(self.api("/"))
            .unwrap()
            .app(
                AppId(app_id),
                jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
            )
            .build()
            .unwrap()
    }

    pub fn installation(&self) -> Octocrab {
        self.app()
            .installation(InstallationId(forge::DEMO_INSTALLATION_ID))
            .unwrap()
    }

    pub fn git(&self, repo: &str, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(self.forge.repositories().path(repo))
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// Commits `files` (path, content) onto a new `branch` off main of `application-repositories` and
    /// opens a pull request from it as the App: its number and head commit.
    pub async fn open_pull(
        &self,
        branch: &str,
        title: &str,
        files: &[(&str, &str)],
    ) -> (u64, String) {
        let octo = self.installation();
        let repo = octo.repos("acme", GITOPS_REPOSITORY);
        let git = self.forge.repositories().git(GITOPS_REPOSITORY);
        let main = git.resolve("main").unwrap().unwrap();
        let tree = git.run(&["rev-parse", "main^{tree}"]).unwrap();
        let entries = files
            .iter()
            .map(|(path, content)| {
                octocrab::models::git::CreateTreeEntry::new(*path, "100644", "blob")
                    .with_content(*content)
            })
            .collect();
        let tree = repo
            .create_tree(entries)
            .base_tree(tree.trim())
            .send()
            .await
            .unwrap();
        let commit = octo
            .git("acme", GITOPS_REPOSITORY)
            .create_commit(title, &tree.sha)
            .parents(vec![main])
            .send()
            .await
            .unwrap();
        repo.create_ref(&Reference::Branch(branch.into()), &commit.sha)
            .await
            .unwrap();
        let pull = octo
            .pulls("acme", GITOPS_REPOSITORY)
            .create(title, branch, "main")
            .send()
            .await
            .unwrap();
        (pull.number, commit.sha)
    }

    /// Moves the forge's clock `seconds` past now.
    pub fn tick_in(&self, seconds: i64) {
        self.forge
            .tick(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(seconds));
    }

    /// The file at `path` on main of `application-repositories`.
    pub fn gitops_file(&self, path: &str) -> String {
        self.git(GITOPS_REPOSITORY, &["show", &format!("main:{path}")])
    }

    /// An installation token fetched by hand, for raw HTTP calls.
    pub async fn token(&self) -> String {
        let response = self
            .http
            .post(self.api(&format!(
                "/app/installations/{}/access_tokens",
                forge::DEMO_INSTALLATION_ID
            )))
            .bearer_auth(jwt(&Forge::demo_app().1, 60, 540))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let body: Value = response.json().await.unwrap();
        body["token"].as_str().unwrap().to_string()
    }
}

/// An App JWT issued `issued_ago` seconds ago that expires `expires_in` seconds from now.
fn jwt(pem: &str, issued_ago: i64, expires_in: i64) -> String {
    let now = jiff::Timestamp::now().as_second();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &json!({"iat": now - issued_ago, "exp": now + expires_in, "iss": forge::DEMO_APP_ID}),
        &jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

pub async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("timed out")
}

#[tokio::test]
async fn octocrab_as_the_app_opens_a_pull_request_whose_commit_is_on_disk_and_a_merge_moves_main() {
    let forge = TestForge::start().await;
    let app = forge.app();
    let me: Value = app.get("/app", None::<&()>).await.unwrap();
    assert_eq!(me["slug"], "tower-app");

    let octo = forge.installation();
    let repo = octo.repos("acme", GITOPS_REPOSITORY);
    let main = repo
        .get_ref(&Reference::Branch("main".into()))
        .await
        .unwrap();
    let octocrab::models::repos::Object::Commit { sha: main_sha, .. } = main.object else {
        panic!("main is not a commit: {main:?}");
    };
    let base_commit = repo.get_commit(&main_sha).await.unwrap();

    // A change the forge's CI validates: the file as it is, plus a comment.
    let promoted = format!("{}# promoted by the test\n", forge.gitops_file(RELEASE));
    let blob = repo
        .create_blob(promoted.as_str())
        .encoding("utf-8")
        .send()
        .await
        .unwrap();
    let tree = repo
        .create_tree(vec![
            octocrab::models::git::CreateTreeEntry::new(RELEASE, "100644", "blob")
                .with_sha(&blob.sha),
        ])
        .base_tree(&base_commit.tree.sha)
        .send()
        .await
        .unwrap();
    let commit = octo
        .git("acme", GITOPS_REPOSITORY)
        .create_commit("Promote payments in prod", &tree.sha)
        .parents(vec![main_sha.clone()])
        .send()
        .await
        .unwrap();
    let branch = "tower/promote/payments/prod";
    repo.create_ref(&Reference::Branch(branch.into()), &commit.sha)
        .await
        .unwrap();
    let pull = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .create("Promote payments in prod", branch, "main")
        .body("Opened by the test.")
        .send()
        .await
        .unwrap();
    assert_eq!(pull.user.as_ref().unwrap().login, "tower-app[bot]");
    assert_eq!(pull.head.sha, commit.sha);

    // git itself sees the branch, the commit and the file.
    let log = forge.git(GITOPS_REPOSITORY, &["log", "--oneline", branch]);
    assert!(log.starts_with(&commit.sha[..7]), "{log}");
    assert!(log.contains("Promote payments in prod"));
    let listed = forge.git(GITOPS_REPOSITORY, &["ls-tree", "-r", branch, "--", RELEASE]);
    assert!(listed.contains(&blob.sha), "{listed}");

    let open = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .list()
        .state(octocrab::params::State::Open)
        .send()
        .await
        .unwrap();
    assert_eq!(
        open.items.iter().map(|p| p.number).collect::<Vec<_>>(),
        [pull.number]
    );

    // The forge's CI validates the head: in progress from the start, then success once time moves on.
    let route = format!(
        "/repos/acme/{GITOPS_REPOSITORY}/commits/{}/check-runs",
        commit.sha
    );
    let runs: Value = octo.get(&route, None::<&()>).await.unwrap();
    assert_eq!(runs["check_runs"][0]["status"], "in_progress");
    assert_eq!(
        runs["check_runs"][0]["pull_requests"][0]["number"],
        pull.number
    );
    forge
        .forge
        .tick(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(10));
    let runs: Value = octo.get(&route, None::<&()>).await.unwrap();
    assert_eq!(runs["check_runs"][0]["name"], forge::CI_CHECK_NAME);
    assert_eq!(runs["check_runs"][0]["conclusion"], "success");

    let mut merges = forge.forge.subscribe_merges();
    let response = forge
        .http
        .post(format!(
            "http://{}/sandbox/pulls/{}/merge?merger=grace",
            forge.addr, pull.number
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let event = within(merges.recv()).await.unwrap();
    assert_eq!(event.number, pull.number);
    assert_eq!(event.files_changed, [RELEASE]);
    let head = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]);
    assert_eq!(head.trim(), event.merge_sha);
    let merge = forge.git(
        GITOPS_REPOSITORY,
        &["log", "-1", "--format=%an|%P|%s", "main"],
    );
    assert_eq!(
        merge.trim(),
        format!(
            "Grace Hopper|{main_sha} {}|Merge pull request #{} from acme/{branch}",
            commit.sha, pull.number
        )
    );
    let merged = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .get(pull.number)
        .await
        .unwrap();
    assert!(merged.merged_at.is_some());
    assert_eq!(
        merged.merge_commit_sha.as_deref(),
        Some(event.merge_sha.as_str())
    );
    // Merging updates the pull request, so it leads the closed ones sorted by update.
    let recent: Value = octo
        .get(
            format!(
                "/repos/acme/{GITOPS_REPOSITORY}/pulls?state=closed&sort=updated&direction=desc"
            ),
            None::<&()>,
        )
        .await
        .unwrap();
    assert_eq!(recent[0]["number"], pull.number);
}

#[tokio::test]
async fn a_pull_request_touching_files_outside_platform_fails_ci() {
    let forge = TestForge::start().await;
    let git = forge.forge.repositories().git(GITOPS_REPOSITORY);
    let main = git.resolve("main").unwrap().unwrap();
    let tree = git.run(&["rev-parse", "main^{tree}"]).unwrap();
    // components/ is the release operator's; a pull request that edits it is refused by CI.
    let octo = forge.installation();
    let repo = octo.repos("acme", GITOPS_REPOSITORY);
    let tree = repo
        .create_tree(vec![
            octocrab::models::git::CreateTreeEntry::new(
                "components/payments/values/prod.yaml",
                "100644",
                "blob",
            )
            .with_content("image: {tag: hand-edited}\n"),
        ])
        .base_tree(tree.trim())
        .send()
        .await
        .unwrap();
    let edit = octo
        .git("acme", GITOPS_REPOSITORY)
        .create_commit("Hand-edit a derived file", &tree.sha)
        .parents(vec![main])
        .send()
        .await
        .unwrap();
    repo.create_ref(&Reference::Branch("hand-edit".into()), &edit.sha)
        .await
        .unwrap();
    octo.pulls("acme", GITOPS_REPOSITORY)
        .create("Hand-edit", "acme:hand-edit", "main")
        .send()
        .await
        .unwrap();
    forge
        .forge
        .tick(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(10));
    let runs: Value = octo
        .get(
            format!("/repos/acme/{GITOPS_REPOSITORY}/commits/hand-edit/check-runs"),
            None::<&()>,
        )
        .await
        .unwrap();
    assert_eq!(runs["check_runs"][0]["conclusion"], "failure");
}

#[tokio::test]
async fn the_forge_rejects_a_jwt_signed_with_another_key_or_living_too_long() {
    let forge = TestForge::start().await;
    for (token, message) in [
        (
            jwt(OTHER_KEY, 60, 540),
            "A JSON web token could not be decoded",
        ),
        (
            jwt(&Forge::demo_app().1, 60, 900),
            "'Expiration time' claim ('exp') is too far in the future",
        ),
        (
            "not-a-jwt".to_string(),
            "A JSON web token could not be decoded",
        ),
    ] {
        let response = forge
            .http
            .get(forge.api("/app"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["message"], message);
        assert!(
            body["documentation_url"]
                .as_str()
                .unwrap()
                .starts_with("https://docs.github.com/rest")
        );
    }
    // octocrab signing with the other key gets no installation token.
    let (app_id, _) = Forge::demo_app();
    let impostor = Octocrab::builder()
        .base_uri(forge.api("/"))
        .unwrap()
        .app(
            AppId(app_id),
            jsonwebtoken::EncodingKey::from_rsa_pem(OTHER_KEY.as_bytes()).unwrap(),
        )
        .build()
        .unwrap()
        .installation(InstallationId(forge::DEMO_INSTALLATION_ID))
        .unwrap();
    assert!(impostor.repos("acme", "payments").get().await.is_err());
}

#[tokio::test]
async fn an_expired_installation_token_is_bad_credentials() {
    let forge = TestForge::with(ForgeConfig {
        token_lifetime: Duration::ZERO,
        ..ForgeConfig::default()
    })
    .await;
    let token = forge.token().await;
    let response = forge
        .http
        .get(forge.api("/repos/acme/payments"))
        .header("authorization", format!("token {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Bad credentials");
    assert_eq!(body["documentation_url"], "https://docs.github.com/rest");

    // The repositories are public: reading needs no token, but writing does.
    let anonymous = forge
        .http
        .get(forge.api("/repos/acme/payments"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 200);
    let body: Value = anonymous.json().await.unwrap();
    assert_eq!(body["private"], false);
    assert_eq!(body["visibility"], "public");
    let anonymous_write = forge
        .http
        .post(forge.api("/repos/acme/payments/git/blobs"))
        .json(&json!({"content": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_write.status(), 401);
}

#[tokio::test]
async fn bad_requests_get_githubs_error_shape_naming_the_field() {
    let forge = TestForge::start().await;
    let token = forge.token().await;
    let post = |path: &str, body: Value| {
        forge
            .http
            .post(forge.api(path))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    let pulls = format!("/repos/acme/{GITOPS_REPOSITORY}/pulls");

    let response = post(&pulls, json!({"head": "x", "base": "main"}))
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Validation Failed");
    assert_eq!(
        body["errors"][0],
        json!({"resource": "PullRequest", "field": "title", "code": "missing_field"})
    );
    assert!(
        body["documentation_url"]
            .as_str()
            .unwrap()
            .contains("pulls")
    );

    let response = post(
        &pulls,
        json!({"title": "t", "head": "nope", "base": "main"}),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["field"], "head");

    let main = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main"]);
    let refs = format!("/repos/acme/{GITOPS_REPOSITORY}/git/refs");
    let response = post(&refs, json!({"ref": "refs/heads/main", "sha": main.trim()}))
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Reference already exists");

    let response = post(&refs, json!({"ref": "refs/heads/x"})).await.unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["field"], "sha");
    assert_eq!(body["errors"][0]["code"], "missing_field");

    let response = forge
        .http
        .post(forge.api(&refs))
        .bearer_auth(&token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Problems parsing JSON");

    // A second pull request for the same branch.
    let branch = "tower/promote/ledger/prod";
    let tree = forge.git(GITOPS_REPOSITORY, &["rev-parse", "main^{tree}"]);
    let blob = post(
        &format!("/repos/acme/{GITOPS_REPOSITORY}/git/blobs"),
        json!({"content": base64::engine::general_purpose::STANDARD.encode("x: 1\n"), "encoding": "base64"}),
    )
    .await
    .unwrap();
    let blob: Value = blob.json().await.unwrap();
    let new_tree: Value = post(
        &format!("/repos/acme/{GITOPS_REPOSITORY}/git/trees"),
        json!({"base_tree": tree.trim(), "tree": [{"path": "platform/x.yaml", "mode": "100644", "type": "blob", "sha": blob["sha"]}]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let commit: Value = post(
        &format!("/repos/acme/{GITOPS_REPOSITORY}/git/commits"),
        json!({"message": "x", "tree": new_tree["sha"], "parents": [main.trim()]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let created = post(
        &refs,
        json!({"ref": format!("refs/heads/{branch}"), "sha": commit["sha"]}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 201);
    let open_pull = || {
        post(
            &pulls,
            json!({"title": "t", "head": branch, "base": "main"}),
        )
    };
    let first = open_pull().await.unwrap();
    assert_eq!(first.status(), 201);
    let second = open_pull().await.unwrap();
    assert_eq!(second.status(), 422);
    let body: Value = second.json().await.unwrap();
    assert_eq!(
        body["errors"][0]["message"],
        format!("A pull request already exists for acme:{branch}.")
    );

    let unsorted = forge
        .http
        .get(forge.api(&format!("{pulls}?sort=cheapest")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(unsorted.status(), 422);
    let body: Value = unsorted.json().await.unwrap();
    assert_eq!(body["errors"][0]["field"], "sort");

    for path in [
        "/repos/acme/nope",
        "/repos/acme/payments/contents/nope.txt",
        "/no/such/route",
    ] {
        let response = forge
            .http
            .get(forge.api(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["message"], "Not Found", "{path}");
        assert!(body["documentation_url"].is_string());
    }
}

#[tokio::test]
async fn contents_and_commit_history_read_from_the_repositories_with_paging_links() {
    let forge = TestForge::start().await;
    let token = forge.token().await;
    let get = |path: String| forge.http.get(forge.api(&path)).bearer_auth(&token).send();

    let file: Value = get(format!(
        "/repos/acme/{GITOPS_REPOSITORY}/contents/{RELEASE}"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(file["encoding"], "base64");
    let content = base64::engine::general_purpose::STANDARD
        .decode(file["content"].as_str().unwrap().replace('\n', ""))
        .unwrap();
    let release: shared::crd::Release =
        serde_saphyr::from_str(std::str::from_utf8(&content).unwrap()).unwrap();
    let payments = sandbox::world::service("payments").unwrap();
    let running = forge
        .forge
        .repositories()
        .histories()
        .running(payments, "prod")
        .unwrap()
        .clone();
    assert_eq!(release.spec.version, running.short());

    let folder: Value = get(format!(
        "/repos/acme/{GITOPS_REPOSITORY}/contents/platform/registry"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(folder.as_array().unwrap().len(), 8);

    let response = get(format!(
        "/repos/acme/{GITOPS_REPOSITORY}/commits?path={RELEASE}&per_page=1"
    ))
    .await
    .unwrap();
    let link = response.headers()["link"].to_str().unwrap().to_string();
    assert!(link.contains("rel=\"next\""), "{link}");
    assert!(
        link.contains(&format!("<http://{}/github/repos/acme/", forge.addr)),
        "{link}"
    );
    let commits: Value = response.json().await.unwrap();
    assert_eq!(commits.as_array().unwrap().len(), 1);
    assert!(
        commits[0]["commit"]["message"]
            .as_str()
            .unwrap()
            .contains(running.short())
    );

    let commit: Value = get(format!("/repos/acme/payments/commits/{}", running.sha))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(commit["author"]["login"], running.author);
    assert!(
        commit["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["filename"] == "migrations/0004_add_refund_reference.sql")
    );

    // Through octocrab too: the path-prefixed base URI joins with every route.
    let octo = forge.installation();
    let repos = octo
        .orgs("acme")
        .list_repos()
        .per_page(5)
        .send()
        .await
        .unwrap();
    assert_eq!(repos.items.len(), 5);
    let rest = octo
        .get_page::<octocrab::models::Repository>(&repos.next)
        .await
        .unwrap()
        .unwrap();
    // Eight services, the GitOps repository, and the one repository only in the catalog.
    assert_eq!(repos.items.len() + rest.items.len(), 10);
}

#[tokio::test]
async fn the_oauth_flow_signs_ada_in_once_per_code() {
    let forge = TestForge::start().await;
    let authorize = forge.api(&format!(
        "/login/oauth/authorize?client_id={DEMO_CLIENT_ID}&redirect_uri=http://tower.test/callback&state=xyz&scope=read:org"
    ));
    let page = forge.http.get(&authorize).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    for login in ["ada", "root", "visitor"] {
        assert!(html.contains(&format!("identity-{login}")), "{login}");
    }

    let redirect = forge
        .http
        .get(format!("{authorize}&login=ada"))
        .send()
        .await
        .unwrap();
    assert!(redirect.status().is_redirection());
    let location = redirect.headers()["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with("http://tower.test/callback?code="),
        "{location}"
    );
    assert!(location.ends_with("&state=xyz"));
    let code = location
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();

    let exchange = || {
        forge
            .http
            .post(forge.api("/login/oauth/access_token"))
            .header("accept", "application/json")
            .form(&[
                ("client_id", DEMO_CLIENT_ID),
                ("client_secret", DEMO_CLIENT_SECRET),
                ("code", &code),
                ("redirect_uri", "http://tower.test/callback"),
            ])
            .send()
    };
    let token: Value = exchange().await.unwrap().json().await.unwrap();
    assert_eq!(token["token_type"], "bearer");
    let access = token["access_token"].as_str().unwrap();

    let user: Value = forge
        .http
        .get(forge.api("/user"))
        .bearer_auth(access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(user["login"], "ada");
    assert_eq!(user["name"], "Ada Lovelace");
    let teams: Value = forge
        .http
        .get(forge.api("/user/teams"))
        .bearer_auth(access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        teams
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["slug"] == "payments" && t["organization"]["login"] == "acme")
    );

    let reused: Value = exchange().await.unwrap().json().await.unwrap();
    assert_eq!(reused["error"], "bad_verification_code");
    assert!(reused.get("access_token").is_none());

    let visitor = forge.forge.user_token("visitor");
    let orgs: Value = forge
        .http
        .get(forge.api("/user/orgs"))
        .bearer_auth(visitor)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(orgs, json!([]));
}
