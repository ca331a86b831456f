//! Every forge route's answers validated against GitHub's OpenAPI description.
//!
//! The description is `sandbox/contracts/github-rest/openapi.json`, the operations the forge serves cut from
//! the published `@octokit/openapi` by `update.mjs` beside it. One scenario calls every route of
//! [`forge::routes`] on a fresh forge — successes and the errors a client meets (404, 422, 401, …) — and
//! checks each answer against the operation's response schema for the status it came with: required
//! fields present, types and enums right, `nullable` honoured. A status the operation does not document
//! fails, as does a route of the forge the scenario never called, so a route added to the forge without a
//! contract test fails here.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use jsonschema::Draft;
use reqwest::Method;
use sandbox::forge::{self, DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Forge};
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::{Value, json};

use crate::contract::{Contract, violations};
use crate::forge::TestForge;

/// The vendored subset of GitHub's REST API description.
const DESCRIPTION: &str = "contracts/github-rest/openapi.json";

/// Forge routes GitHub's description names differently: the root listing of contents is `contents/{path}`
/// with an empty path, and the legacy routes GitHub still answers but no longer documents are checked
/// against the operations that replaced them (`GET /git/refs` lists what `matching-refs` with an empty
/// prefix lists; `GET /git/refs/{ref}` is `GET /git/ref/{ref}`; `GET /statuses/{ref}` is
/// `GET /commits/{ref}/statuses`).
const RENAMED: [(&str, &str); 4] = [
    (
        "GET /repos/{owner}/{repo}/contents",
        "get /repos/{owner}/{repo}/contents/{path}",
    ),
    (
        "GET /repos/{owner}/{repo}/git/refs",
        "get /repos/{owner}/{repo}/git/matching-refs/{ref}",
    ),
    (
        "GET /repos/{owner}/{repo}/git/refs/{*reference}",
        "get /repos/{owner}/{repo}/git/ref/{ref}",
    ),
    (
        "GET /repos/{owner}/{repo}/statuses/{reference}",
        "get /repos/{owner}/{repo}/commits/{ref}/statuses",
    ),
];

/// The OAuth web flow lives on github.com, not in the REST API's description; its answers are checked
/// against GitHub's OAuth documentation by hand below.
const OUTSIDE_THE_DESCRIPTION: [&str; 2] = [
    "GET /login/oauth/authorize",
    "POST /login/oauth/access_token",
];

/// Schemas whose `oneOf` no answer can satisfy: none of their branches requires a field, so every body
/// matches them all (a 409 of `PUT contents` is `basic-error` or `repository-rule-violation-error`, both
/// bare `message`/`documentation_url`/`status`). They are read as `anyOf`, which is what they mean.
const INDISTINGUISHABLE_ONE_OF: [&str; 1] = [
    "/paths/~1repos~1{owner}~1{repo}~1contents~1{path}/put/responses/409/content/application~1json/schema",
];

/// How a request authenticates.
#[derive(Debug, Clone, Copy)]
enum Auth {
    /// None: the repositories are public.
    Anonymous,
    /// The App's JWT.
    App,
    /// An installation access token.
    Installation,
    /// A signed-in person's OAuth token (ada).
    User,
}

/// The scenario's client: calls routes, validates answers, remembers what it covered and what failed.
struct Checker {
    forge: TestForge,
    contract: Contract,
    /// Forge route (`GET /repos/{owner}/{repo}`) → GitHub operation (`get /repos/{owner}/{repo}`).
    operations: BTreeMap<String, String>,
    covered: BTreeSet<String>,
    failures: Vec<String>,
    jwt: String,
    installation: String,
    user: String,
}

/// A path template with its parameters' names left out (`/repos/{}/{}`), as forge and GitHub name them
/// differently (`{number}` against `{pull_number}`).
fn unnamed(path: &str) -> String {
    let mut out = String::new();
    let mut in_parameter = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_parameter = true;
                out.push_str("{}");
            }
            '}' => in_parameter = false,
            _ if in_parameter => {}
            c => out.push(c),
        }
    }
    out
}

/// A JSON pointer token (RFC 6901).
fn token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

impl Checker {
    async fn start() -> Self {
        let forge = TestForge::start().await;
        let contract = Contract::load(DESCRIPTION, Draft::Draft4);
        let documented: BTreeMap<String, String> = contract.document()["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, item)| {
                item.as_object()
                    .unwrap()
                    .keys()
                    .filter(|method| *method != "parameters")
                    .map(move |method| {
                        (
                            format!("{} {}", method.to_uppercase(), unnamed(path)),
                            format!("{method} {path}"),
                        )
                    })
            })
            .collect();
        let renamed: BTreeMap<&str, &str> = RENAMED.into_iter().collect();
        let mut operations = BTreeMap::new();
        for (method, path) in forge::routes() {
            let route = format!("{method} {path}");
            if OUTSIDE_THE_DESCRIPTION.contains(&route.as_str()) {
                continue;
            }
            let operation = match renamed.get(route.as_str()) {
                Some(operation) => Some(operation.to_string()),
                None => documented
                    .get(&format!("{method} {}", unnamed(path)))
                    .cloned(),
            };
            let operation = operation.unwrap_or_else(|| {
                panic!(
                    "the vendored description has no operation for the forge's {route}: add it to \
                     OPERATIONS in sandbox/contracts/github-rest/update.mjs and run it"
                )
            });
            operations.insert(route, operation);
        }
        let installation = forge.token().await;
        let user = forge.forge.user_token("ada");
        Self {
            forge,
            contract,
            operations,
            covered: BTreeSet::new(),
            failures: Vec::new(),
            jwt: app_jwt(),
            installation,
            user,
        }
    }

    /// Calls the forge's `route` (`"GET /repos/{owner}/{repo}"`) at `path` (`/repos/acme/…`) and validates
    /// the answer against the operation's response for its status. The status and the body.
    /// `call` without credentials or a body: most of GitHub's reads are public for a public repository.
    async fn read(&mut self, route: &str, path: &str) -> (u16, Value) {
        self.call(route, path, Auth::Anonymous, None).await
    }

    async fn call(
        &mut self,
        route: &str,
        path: &str,
        auth: Auth,
        body: Option<Value>,
    ) -> (u16, Value) {
        let (method, _) = route.split_once(' ').unwrap();
        let operation = self
            .operations
            .get(route)
            .unwrap_or_else(|| panic!("the forge serves no route {route}"))
            .clone();
        self.covered.insert(route.to_string());
        let mut request = self
            .forge
            .http
            .request(
                Method::from_bytes(method.as_bytes()).unwrap(),
                self.forge.api(path),
            )
            .header("accept", "application/vnd.github+json");
        request = match auth {
            Auth::Anonymous => request,
            Auth::App => request.bearer_auth(&self.jwt),
            Auth::Installation => request.bearer_auth(&self.installation),
            Auth::User => request.bearer_auth(&self.user),
        };
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let answer: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{route} at {path}: {status} not JSON ({e}): {text}"))
        };
        self.validate(route, path, &operation, status, &answer, text.is_empty());
        (status, answer)
    }

    fn validate(
        &mut self,
        route: &str,
        path: &str,
        operation: &str,
        status: u16,
        answer: &Value,
        empty: bool,
    ) {
        let (method, template) = operation.split_once(' ').unwrap();
        let at = format!("{route} at {path} answered {status}");
        let pointer = format!("/paths/{}/{method}/responses/{status}", token(template));
        let document = self.contract.document();
        let Some(mut response) = document.pointer(&pointer) else {
            if status < 400 {
                self.failures
                    .push(format!("{at}, a status {operation} does not document"));
                return;
            }
            // GitHub answers every operation's authentication and lookup failures with its basic error,
            // documented or not.
            let validator = self.contract.validator("/components/schemas/basic-error");
            self.record(&at, violations(&validator, answer));
            self.error_shape(&at, answer);
            return;
        };
        let mut pointer = pointer;
        if let Some(reference) = response["$ref"].as_str() {
            pointer = reference.trim_start_matches('#').to_string();
            response = document.pointer(&pointer).unwrap();
        }
        match response["content"].as_object() {
            // GitHub describes some errors without a body (a 404 of "is it merged?"), yet answers them
            // with its basic error, as every error.
            None if status >= 400 => {
                let validator = self.contract.validator("/components/schemas/basic-error");
                self.record(&at, violations(&validator, answer));
            }
            None => {
                if !empty {
                    self.failures.push(format!(
                        "{at}: {operation} documents no body for it, yet it has one: {answer}"
                    ));
                }
            }
            Some(content) => {
                let media = content.keys().next().unwrap().clone();
                let schema = format!("{pointer}/content/{}/schema", token(&media));
                let validator = if INDISTINGUISHABLE_ONE_OF.contains(&schema.as_str()) {
                    let branches = &document.pointer(&schema).unwrap()["oneOf"];
                    self.contract.validator_for(&json!({"anyOf": branches}))
                } else {
                    self.contract.validator(&schema)
                };
                self.record(&at, violations(&validator, answer));
            }
        }
        if status >= 400 {
            self.error_shape(&at, answer);
        }
    }

    /// GitHub's error body: `message` and `documentation_url` always, `errors` with a 422's validation
    /// failures (the description's `basic-error` marks none of them required).
    fn error_shape(&mut self, at: &str, answer: &Value) {
        let mut missing = Vec::new();
        for field in ["message", "documentation_url"] {
            if !answer[field].is_string() {
                missing.push(field);
            }
        }
        if !missing.is_empty() {
            self.failures
                .push(format!("{at}: the error lacks {missing:?}: {answer}"));
        }
    }

    fn record(&mut self, at: &str, violations: Vec<String>) {
        if !violations.is_empty() {
            self.failures
                .push(format!("{at}:\n    {}", violations.join("\n    ")));
        }
    }

    /// Asserts `status` is what the scenario expects of a call, so a step that went wrong is named.
    fn expect(&self, what: &str, status: u16, expected: u16, answer: &Value) {
        assert_eq!(status, expected, "{what}: {answer}");
    }
}

/// A JWT of the demo App, valid for nine minutes.
fn app_jwt() -> String {
    let now = jiff::Timestamp::now().as_second();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &json!({"iat": now - 60, "exp": now + 540, "iss": forge::DEMO_APP_ID}),
        &jsonwebtoken::EncodingKey::from_rsa_pem(Forge::demo_app().1.as_bytes()).unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn every_forge_route_answers_in_githubs_published_shape() {
    let mut c = Checker::start().await;
    let repo = format!("/repos/acme/{GITOPS_REPOSITORY}");
    let installation = forge::DEMO_INSTALLATION_ID;

    // The App and its installation.
    c.call("GET /app", "/app", Auth::App, None).await;
    c.call(
        "GET /app/installations",
        "/app/installations",
        Auth::App,
        None,
    )
    .await;
    let tokens = "POST /app/installations/{id}/access_tokens";
    let (status, answer) = c
        .call(
            tokens,
            &format!("/app/installations/{installation}/access_tokens"),
            Auth::App,
            None,
        )
        .await;
    c.expect("an installation token", status, 201, &answer);
    c.read(
        tokens,
        &format!("/app/installations/{installation}/access_tokens"),
    )
    .await;
    c.call(
        tokens,
        "/app/installations/1/access_tokens",
        Auth::App,
        None,
    )
    .await;
    c.call(
        "GET /orgs/{org}/installation",
        "/orgs/acme/installation",
        Auth::App,
        None,
    )
    .await;
    let repo_installation = "GET /repos/{owner}/{repo}/installation";
    c.call(
        repo_installation,
        &format!("{repo}/installation"),
        Auth::App,
        None,
    )
    .await;
    c.call(
        repo_installation,
        "/repos/acme/no-such-repository/installation",
        Auth::App,
        None,
    )
    .await;
    c.call(
        "GET /installation/repositories",
        "/installation/repositories",
        Auth::Installation,
        None,
    )
    .await;
    c.read(
        "GET /installation/repositories",
        "/installation/repositories",
    )
    .await;

    // The organisation and its repositories.
    c.read("GET /orgs/{org}", "/orgs/acme").await;
    c.read("GET /orgs/{org}", "/orgs/no-such-org").await;
    c.read("GET /orgs/{org}/repos", "/orgs/acme/repos").await;
    c.call("GET /repos/{owner}/{repo}", &repo, Auth::Installation, None)
        .await;
    c.call(
        "GET /repos/{owner}/{repo}",
        "/repos/acme/no-such-repository",
        Auth::Installation,
        None,
    )
    .await;

    // Contents and commits.
    const RELEASE: &str = "platform/environments/prod/payments-release.yaml";
    c.read(
        "GET /repos/{owner}/{repo}/contents",
        &format!("{repo}/contents"),
    )
    .await;
    let contents = "GET /repos/{owner}/{repo}/contents/{*path}";
    let (status, file) = c
        .read(contents, &format!("{repo}/contents/{RELEASE}"))
        .await;
    c.expect("a file's contents", status, 200, &file);
    c.read(contents, &format!("{repo}/contents/platform")).await;
    c.read(contents, &format!("{repo}/contents/no/such/file"))
        .await;
    let put = "PUT /repos/{owner}/{repo}/contents/{*path}";
    let (status, created) = c
        .call(
            put,
            &format!("{repo}/contents/notes/contract.md"),
            Auth::Installation,
            Some(json!({"message": "Add a note", "content": "aGVsbG8K", "branch": "main"})),
        )
        .await;
    c.expect("a created file", status, 201, &created);
    let note_sha = created["content"]["sha"].as_str().unwrap().to_string();
    c.call(
        put,
        &format!("{repo}/contents/notes/contract.md"),
        Auth::Installation,
        Some(json!({"message": "Edit the note", "content": "aGkK", "sha": note_sha})),
    )
    .await;
    c.call(
        put,
        &format!("{repo}/contents/notes/contract.md"),
        Auth::Installation,
        Some(json!({"message": "Edit it again", "content": "aGkK", "sha": note_sha})),
    )
    .await;
    c.call(
        put,
        &format!("{repo}/contents/notes/other.md"),
        Auth::Installation,
        Some(json!({"message": "No content"})),
    )
    .await;

    let (_, commits) = c
        .read(
            "GET /repos/{owner}/{repo}/commits",
            &format!("{repo}/commits?per_page=3"),
        )
        .await;
    let main = commits[0]["sha"].as_str().unwrap().to_string();
    let previous = commits[1]["sha"].as_str().unwrap().to_string();
    let commit = "GET /repos/{owner}/{repo}/commits/{reference}";
    c.read(commit, &format!("{repo}/commits/{main}")).await;
    c.read(commit, &format!("{repo}/commits/no-such-ref")).await;
    c.read(
        "GET /repos/{owner}/{repo}/compare/{range}",
        &format!("{repo}/compare/{previous}...{main}"),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/compare/{range}",
        &format!("{repo}/compare/main...no-such-branch"),
    )
    .await;
    let branch = "GET /repos/{owner}/{repo}/branches/{branch}";
    c.read(branch, &format!("{repo}/branches/main")).await;
    c.read(branch, &format!("{repo}/branches/no-such-branch"))
        .await;

    // The git data API: a blob, a tree, a commit and a branch made of them.
    let (status, blob) = c
        .call(
            "POST /repos/{owner}/{repo}/git/blobs",
            &format!("{repo}/git/blobs"),
            Auth::Installation,
            Some(json!({"content": "replicas: 3\n", "encoding": "utf-8"})),
        )
        .await;
    c.expect("a blob", status, 201, &blob);
    let blob_sha = blob["sha"].as_str().unwrap().to_string();
    let get_blob = "GET /repos/{owner}/{repo}/git/blobs/{sha}";
    c.read(get_blob, &format!("{repo}/git/blobs/{blob_sha}"))
        .await;
    c.read(get_blob, &format!("{repo}/git/blobs/{}", "0".repeat(40)))
        .await;
    let base_tree = c
        .forge
        .git(GITOPS_REPOSITORY, &["rev-parse", "main^{tree}"]);
    let (status, tree) = c
        .call(
            "POST /repos/{owner}/{repo}/git/trees",
            &format!("{repo}/git/trees"),
            Auth::Installation,
            Some(json!({
                "base_tree": base_tree.trim(),
                "tree": [{"path": "platform/contract.yaml", "mode": "100644", "type": "blob", "sha": blob_sha}],
            })),
        )
        .await;
    c.expect("a tree", status, 201, &tree);
    let tree_sha = tree["sha"].as_str().unwrap().to_string();
    let get_tree = "GET /repos/{owner}/{repo}/git/trees/{sha}";
    c.read(get_tree, &format!("{repo}/git/trees/{tree_sha}"))
        .await;
    c.read(
        get_tree,
        &format!("{repo}/git/trees/{tree_sha}?recursive=1"),
    )
    .await;
    c.read(get_tree, &format!("{repo}/git/trees/{}", "0".repeat(40)))
        .await;
    let (status, new_commit) = c
        .call(
            "POST /repos/{owner}/{repo}/git/commits",
            &format!("{repo}/git/commits"),
            Auth::Installation,
            Some(json!({"message": "Contract", "tree": tree_sha, "parents": [main]})),
        )
        .await;
    c.expect("a commit", status, 201, &new_commit);
    let head = new_commit["sha"].as_str().unwrap().to_string();
    let get_commit = "GET /repos/{owner}/{repo}/git/commits/{sha}";
    c.read(get_commit, &format!("{repo}/git/commits/{head}"))
        .await;
    c.read(
        get_commit,
        &format!("{repo}/git/commits/{}", "0".repeat(40)),
    )
    .await;
    let create_ref = "POST /repos/{owner}/{repo}/git/refs";
    let (status, answer) = c
        .call(
            create_ref,
            &format!("{repo}/git/refs"),
            Auth::Installation,
            Some(json!({"ref": "refs/heads/contract", "sha": head})),
        )
        .await;
    c.expect("a branch", status, 201, &answer);
    c.call(
        create_ref,
        &format!("{repo}/git/refs"),
        Auth::Installation,
        Some(json!({"ref": "refs/heads/contract", "sha": head})),
    )
    .await;
    c.call(
        create_ref,
        &format!("{repo}/git/refs"),
        Auth::Installation,
        Some(json!({"ref": "refs/heads/doomed", "sha": main})),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/git/refs",
        &format!("{repo}/git/refs"),
    )
    .await;
    let get_ref = "GET /repos/{owner}/{repo}/git/ref/{*reference}";
    c.read(get_ref, &format!("{repo}/git/ref/heads/contract"))
        .await;
    c.read(get_ref, &format!("{repo}/git/ref/heads/no-such-branch"))
        .await;
    c.read(
        "GET /repos/{owner}/{repo}/git/refs/{*reference}",
        &format!("{repo}/git/refs/heads/contract"),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/git/matching-refs/{*prefix}",
        &format!("{repo}/git/matching-refs/heads/"),
    )
    .await;
    let update_ref = "PATCH /repos/{owner}/{repo}/git/refs/{*reference}";
    c.call(
        update_ref,
        &format!("{repo}/git/refs/heads/doomed"),
        Auth::Installation,
        Some(json!({"sha": head})),
    )
    .await;
    c.call(
        update_ref,
        &format!("{repo}/git/refs/heads/doomed"),
        Auth::Installation,
        Some(json!({"sha": main})),
    )
    .await;
    let delete_ref = "DELETE /repos/{owner}/{repo}/git/refs/{*reference}";
    let (status, answer) = c
        .call(
            delete_ref,
            &format!("{repo}/git/refs/heads/doomed"),
            Auth::Installation,
            None,
        )
        .await;
    c.expect("a deleted branch", status, 204, &answer);
    c.call(
        delete_ref,
        &format!("{repo}/git/refs/heads/doomed"),
        Auth::Installation,
        None,
    )
    .await;

    // A pull request, its reviews, comments and labels.
    let pulls = "POST /repos/{owner}/{repo}/pulls";
    let (status, pull) = c
        .call(
            pulls,
            &format!("{repo}/pulls"),
            Auth::Installation,
            Some(json!({"title": "Contract", "head": "contract", "base": "main", "body": "Checks shapes."})),
        )
        .await;
    c.expect("a pull request", status, 201, &pull);
    let number = pull["number"].as_u64().unwrap();
    let pr = format!("{repo}/pulls/{number}");
    c.call(
        pulls,
        &format!("{repo}/pulls"),
        Auth::Installation,
        Some(json!({"title": "No head", "base": "main"})),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/pulls",
        &format!("{repo}/pulls?state=all"),
    )
    .await;
    let get_pull = "GET /repos/{owner}/{repo}/pulls/{number}";
    c.read(get_pull, &pr).await;
    c.read(get_pull, &format!("{repo}/pulls/99999")).await;
    let update_pull = "PATCH /repos/{owner}/{repo}/pulls/{number}";
    c.call(
        update_pull,
        &pr,
        Auth::Installation,
        Some(json!({"title": "Contract, retitled"})),
    )
    .await;
    c.call(
        update_pull,
        &pr,
        Auth::Installation,
        Some(json!({"state": "sideways"})),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/pulls/{number}/files",
        &format!("{pr}/files"),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/pulls/{number}/commits",
        &format!("{pr}/commits"),
    )
    .await;
    let is_merged = "GET /repos/{owner}/{repo}/pulls/{number}/merge";
    let (status, answer) = c.read(is_merged, &format!("{pr}/merge")).await;
    c.expect("an open pull request is not merged", status, 404, &answer);

    let reviews = "POST /repos/{owner}/{repo}/pulls/{number}/reviews";
    let (status, review) = c
        .call(
            reviews,
            &format!("{pr}/reviews"),
            Auth::User,
            Some(json!({"event": "COMMENT", "body": "Looks plausible."})),
        )
        .await;
    c.expect("a review", status, 200, &review);
    let review_id = review["id"].as_u64().unwrap();
    let (status, pending) = c
        .call(
            reviews,
            &format!("{pr}/reviews"),
            Auth::User,
            Some(json!({"body": "Draft thoughts."})),
        )
        .await;
    c.expect("a pending review", status, 200, &pending);
    let pending_id = pending["id"].as_u64().unwrap();
    c.call(
        reviews,
        &format!("{pr}/reviews"),
        Auth::User,
        Some(json!({"event": "SHRUG"})),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/pulls/{number}/reviews",
        &format!("{pr}/reviews"),
    )
    .await;
    let get_review = "GET /repos/{owner}/{repo}/pulls/{number}/reviews/{id}";
    c.read(get_review, &format!("{pr}/reviews/{review_id}"))
        .await;
    c.read(get_review, &format!("{pr}/reviews/1")).await;
    let submit = "POST /repos/{owner}/{repo}/pulls/{number}/reviews/{id}/events";
    let (status, answer) = c
        .call(
            submit,
            &format!("{pr}/reviews/{pending_id}/events"),
            Auth::User,
            Some(json!({"event": "COMMENT", "body": "Submitted."})),
        )
        .await;
    c.expect("a submitted review", status, 200, &answer);
    c.call(
        submit,
        &format!("{pr}/reviews/{pending_id}/events"),
        Auth::User,
        Some(json!({"event": "COMMENT"})),
    )
    .await;

    let issue = format!("{repo}/issues/{number}");
    let comment = "POST /repos/{owner}/{repo}/issues/{number}/comments";
    let (status, answer) = c
        .call(
            comment,
            &format!("{issue}/comments"),
            Auth::Installation,
            Some(json!({"body": "Deployed to staging."})),
        )
        .await;
    c.expect("a comment", status, 201, &answer);
    c.call(
        comment,
        &format!("{repo}/issues/99999/comments"),
        Auth::Installation,
        Some(json!({"body": "Nobody reads this."})),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/issues/{number}/comments",
        &format!("{issue}/comments"),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/labels",
        &format!("{repo}/labels"),
    )
    .await;
    let create_label = "POST /repos/{owner}/{repo}/labels";
    let (status, answer) = c
        .call(
            create_label,
            &format!("{repo}/labels"),
            Auth::Installation,
            Some(
                json!({"name": "promote", "color": "0e8a16", "description": "Promotes a release"}),
            ),
        )
        .await;
    c.expect("a label", status, 201, &answer);
    c.call(
        create_label,
        &format!("{repo}/labels"),
        Auth::Installation,
        Some(json!({"name": "promote"})),
    )
    .await;
    let get_label = "GET /repos/{owner}/{repo}/labels/{name}";
    c.read(get_label, &format!("{repo}/labels/promote")).await;
    c.read(get_label, &format!("{repo}/labels/no-such-label"))
        .await;
    let labels = "/repos/{owner}/{repo}/issues/{number}/labels";
    c.call(
        &format!("POST {labels}"),
        &format!("{issue}/labels"),
        Auth::Installation,
        Some(json!({"labels": ["promote"]})),
    )
    .await;
    c.call(
        &format!("PUT {labels}"),
        &format!("{issue}/labels"),
        Auth::Installation,
        Some(json!({"labels": ["promote", "bug"]})),
    )
    .await;
    c.read(&format!("GET {labels}"), &format!("{issue}/labels"))
        .await;
    c.read(
        &format!("GET {labels}"),
        &format!("{repo}/issues/99999/labels"),
    )
    .await;
    let remove = "DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}";
    c.call(
        remove,
        &format!("{issue}/labels/bug"),
        Auth::Installation,
        None,
    )
    .await;
    c.call(
        remove,
        &format!("{issue}/labels/bug"),
        Auth::Installation,
        None,
    )
    .await;
    let (status, answer) = c
        .call(
            &format!("DELETE {labels}"),
            &format!("{issue}/labels"),
            Auth::Installation,
            None,
        )
        .await;
    c.expect("labels cleared", status, 204, &answer);

    // Statuses and check runs on the pull request's head.
    let statuses = "/repos/{owner}/{repo}/statuses/{reference}";
    let (status, answer) = c
        .call(
            &format!("POST {statuses}"),
            &format!("{repo}/statuses/{head}"),
            Auth::Installation,
            Some(json!({"state": "success", "context": "tower/deploy", "description": "Deployed", "target_url": "https://tower.test/deploys/1"})),
        )
        .await;
    c.expect("a status", status, 201, &answer);
    c.call(
        &format!("POST {statuses}"),
        &format!("{repo}/statuses/{head}"),
        Auth::Installation,
        Some(json!({"state": "splendid"})),
    )
    .await;
    c.read(
        &format!("GET {statuses}"),
        &format!("{repo}/statuses/{head}"),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/commits/{reference}/statuses",
        &format!("{repo}/commits/{head}/statuses"),
    )
    .await;
    let combined = "GET /repos/{owner}/{repo}/commits/{reference}/status";
    c.read(combined, &format!("{repo}/commits/{head}/status"))
        .await;
    c.read(combined, &format!("{repo}/commits/no-such-ref/status"))
        .await;
    let create_run = "POST /repos/{owner}/{repo}/check-runs";
    let (status, run) = c
        .call(
            create_run,
            &format!("{repo}/check-runs"),
            Auth::Installation,
            Some(json!({"name": "tower / deploy", "head_sha": head, "status": "in_progress", "external_id": "deploy-1", "details_url": "https://tower.test/deploys/1"})),
        )
        .await;
    c.expect("a check run", status, 201, &run);
    let run_id = run["id"].as_u64().unwrap();
    c.call(
        create_run,
        &format!("{repo}/check-runs"),
        Auth::Installation,
        Some(json!({"head_sha": head})),
    )
    .await;
    let get_run = "GET /repos/{owner}/{repo}/check-runs/{id}";
    c.read(get_run, &format!("{repo}/check-runs/{run_id}"))
        .await;
    c.read(get_run, &format!("{repo}/check-runs/1")).await;
    c.call(
        "PATCH /repos/{owner}/{repo}/check-runs/{id}",
        &format!("{repo}/check-runs/{run_id}"),
        Auth::Installation,
        Some(json!({"status": "completed", "conclusion": "success", "output": {"title": "Deployed", "summary": "All green", "text": "Details."}})),
    )
    .await;
    c.read(
        "GET /repos/{owner}/{repo}/commits/{reference}/check-runs",
        &format!("{repo}/commits/{head}/check-runs"),
    )
    .await;

    // The merge, and what merging again says.
    let merge = "PUT /repos/{owner}/{repo}/pulls/{number}/merge";
    let (status, answer) = c
        .call(
            merge,
            &format!("{pr}/merge"),
            Auth::Installation,
            Some(json!({"merge_method": "merge"})),
        )
        .await;
    c.expect("a merge", status, 200, &answer);
    c.call(
        merge,
        &format!("{pr}/merge"),
        Auth::Installation,
        Some(json!({"merge_method": "merge"})),
    )
    .await;
    let (status, answer) = c.read(is_merged, &format!("{pr}/merge")).await;
    c.expect("a merged pull request", status, 204, &answer);
    c.read(get_pull, &pr).await;

    // People.
    c.call("GET /user", "/user", Auth::User, None).await;
    c.read("GET /user", "/user").await;
    c.call("GET /user/teams", "/user/teams", Auth::User, None)
        .await;
    c.call("GET /user/orgs", "/user/orgs", Auth::User, None)
        .await;
    let user = "GET /users/{login}";
    c.read(user, "/users/ada").await;
    c.read(user, "/users/tower-app[bot]").await;
    c.read(user, "/users/no-such-person").await;

    // The OAuth web flow, as GitHub's OAuth documentation describes its answers.
    let authorize = c.forge.api(&format!(
        "/login/oauth/authorize?client_id={DEMO_CLIENT_ID}&redirect_uri=http://tower.test/callback&state=xyz&login=ada"
    ));
    let redirect = c.forge.http.get(&authorize).send().await.unwrap();
    assert!(redirect.status().is_redirection(), "{}", redirect.status());
    let location = redirect.headers()["location"].to_str().unwrap().to_string();
    let code = location
        .strip_prefix("http://tower.test/callback?code=")
        .and_then(|rest| rest.strip_suffix("&state=xyz"))
        .unwrap_or_else(|| panic!("{location}"))
        .to_string();
    c.covered.insert("GET /login/oauth/authorize".into());
    let exchange = c
        .forge
        .http
        .post(c.forge.api("/login/oauth/access_token"))
        .header("accept", "application/json")
        .form(&[
            ("client_id", DEMO_CLIENT_ID),
            ("client_secret", DEMO_CLIENT_SECRET),
            ("code", code.as_str()),
            ("redirect_uri", "http://tower.test/callback"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(exchange.status(), 200);
    let token: Value = exchange.json().await.unwrap();
    for field in ["access_token", "token_type", "scope"] {
        assert!(token[field].is_string(), "{field} in {token}");
    }
    c.covered.insert("POST /login/oauth/access_token".into());

    // Every route the forge serves was called, and every answer matched.
    let served: BTreeSet<String> = forge::routes()
        .into_iter()
        .map(|(method, path)| format!("{method} {path}"))
        .collect();
    let untested: Vec<&String> = served.difference(&c.covered).collect();
    assert!(
        untested.is_empty(),
        "routes of the forge no contract test calls: {untested:#?}"
    );
    assert!(
        c.failures.is_empty(),
        "{} answers differ from GitHub's description:\n{}",
        c.failures.len(),
        c.failures.join("\n")
    );
}
