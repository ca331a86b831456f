//! GitHub through the portal's GitHub App, with octocrab: reads of service repositories (what changed between
//! two versions, which migrations a version ships) and the one write Tower makes, a pull request to
//! `application-repositories` built with the git data API.
//!
//! Tokens are the App's short-lived installation tokens: an App JWT (`iss` = the App id, `iat` backdated 60 s
//! for clock drift, `exp` 9 minutes on, under GitHub's 10-minute cap) buys an installation token, which is
//! cached and replaced [`REFRESH_BEFORE`] its expiry so no request ever starts with a token about to lapse.
//! Nothing here uses a person's token.
//!
//! Every request is counted ([`GithubApp::requests`]): how hard Tower leans on the forge is a number tests
//! and benchmarks read, not a guess. Re-reads that can be conditional are ([`GithubApp::get_conditional`]):
//! GitHub answers `304 Not Modified` to an `If-None-Match` naming the current `ETag`, and such answers do
//! not count against the App's rate limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use octocrab::Octocrab;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use shared::fleet::CommitView;
use tokio::sync::Mutex;

use crate::sinks::PathPart::{GitPath, Segment};
use crate::sinks::{PathPart, api_path, with_query};
use crate::telemetry::{Outcome, Upstream, counted, upstream_request};

/// How long before an installation token expires it is replaced.
pub const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);
/// How far an App JWT's `iat` is backdated, for clocks that run ahead of GitHub's.
pub const JWT_BACKDATE: Duration = Duration::from_secs(60);
/// How long an App JWT lives after now (GitHub refuses more than 10 minutes).
pub const JWT_LIFETIME: Duration = Duration::from_secs(9 * 60);
/// Connecting to GitHub gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Waiting for an answer gives up after this.
const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// Failures talking to GitHub. Their text goes to logs only.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// The App's key or the API URL is unusable.
    #[error("GitHub App setup failed: {0}")]
    Setup(String),
    /// Minting the App JWT or the installation token failed.
    #[error("GitHub App authentication failed: {0}")]
    Token(String),
    /// A request failed.
    #[error("GitHub request failed: {0}")]
    Request(#[from] octocrab::Error),
    /// An answer did not have the documented shape.
    #[error("GitHub answered {0} in an unexpected shape")]
    Shape(&'static str),
    /// GitHub said the App's rate limit is spent and when to come back; nothing is sent until then.
    #[error("GitHub's rate limit is spent; the next request may go in {} s", .retry_in.as_secs())]
    RateLimited {
        /// How long until GitHub said requests may resume.
        retry_in: Duration,
    },
}

impl GithubError {
    /// The HTTP status GitHub answered with, when it answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            GithubError::Request(octocrab::Error::GitHub { source, .. }) => {
                Some(source.status_code.as_u16())
            }
            _ => None,
        }
    }

    /// Whether GitHub said the thing does not exist.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }
}

/// `Result` for GitHub calls.
pub type Result<T, E = GithubError> = std::result::Result<T, E>;

/// The claims of an App JWT.
#[derive(Debug, Serialize, Deserialize)]
pub struct AppClaims {
    /// The App id.
    pub iss: u64,
    /// Issued at (Unix seconds), backdated by [`JWT_BACKDATE`].
    pub iat: i64,
    /// Expires at (Unix seconds), [`JWT_LIFETIME`] after now.
    pub exp: i64,
}

struct Cached {
    client: Octocrab,
    expires_at: jiff::Timestamp,
}

struct Inner {
    api_url: String,
    app_id: u64,
    key: EncodingKey,
    installation_id: u64,
    /// One mint at a time: concurrent requests on an expired token wait for the same new one.
    token: Mutex<Option<Cached>>,
    /// Requests sent, token mints included.
    sent: AtomicU64,
    /// Conditional requests GitHub answered `304 Not Modified`.
    not_modified: AtomicU64,
    /// Until when GitHub asked for no more requests (its rate limit spent): every request before then fails
    /// at once without being sent, so no background loop or retry comes back sooner than GitHub said.
    paused_until: std::sync::Mutex<Option<std::time::Instant>>,
}

/// The longest pause a rate-limit answer is taken to ask for, whatever its headers say (a clock far off
/// GitHub's should not silence Tower for a day).
const LONGEST_PAUSE: Duration = Duration::from_secs(3600);

/// How long GitHub asks to wait after a secondary rate limit that names no time ("wait at least one minute").
const SECONDARY_LIMIT_PAUSE: Duration = Duration::from_secs(60);

/// How long GitHub's answer asks Tower to send nothing: a `403` or `429` whose headers say the rate limit is
/// spent (`retry-after`, else `x-ratelimit-remaining: 0` until `x-ratelimit-reset`), as GitHub documents.
/// `None` for any other answer, a `403` for a missing permission included.
fn rate_limit_pause(status: http::StatusCode, headers: &http::HeaderMap) -> Option<Duration> {
    if status != http::StatusCode::FORBIDDEN && status != http::StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let pause = if let Some(seconds) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        Duration::from_secs(seconds)
    } else if header("x-ratelimit-remaining") == Some("0") {
        let reset = header("x-ratelimit-reset").and_then(|v| v.parse::<i64>().ok())?;
        let seconds = reset
            .saturating_sub(jiff::Timestamp::now().as_second())
            .max(1);
        Duration::from_secs(u64::try_from(seconds).unwrap_or(1))
    } else if status == http::StatusCode::TOO_MANY_REQUESTS {
        SECONDARY_LIMIT_PAUSE
    } else {
        return None;
    };
    Some(pause.min(LONGEST_PAUSE))
}

/// How many requests an App client has sent, for tests, benchmarks and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForgeRequests {
    /// Every request sent, token mints included.
    pub sent: u64,
    /// Of those, conditional reads answered `304 Not Modified` (free of GitHub's rate limit).
    pub not_modified: u64,
}

impl std::ops::Sub for ForgeRequests {
    type Output = ForgeRequests;

    fn sub(self, earlier: ForgeRequests) -> ForgeRequests {
        ForgeRequests {
            sent: self.sent.saturating_sub(earlier.sent),
            not_modified: self.not_modified.saturating_sub(earlier.not_modified),
        }
    }
}

/// The answer to a conditional read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conditional<T> {
    /// Unchanged since the `ETag` sent: reuse what was read then.
    NotModified,
    /// The resource as it is now.
    Fresh {
        /// Its body.
        value: T,
        /// Its validator, to send next time.
        etag: Option<String>,
        /// The next page (`Link: rel="next"`), relative to the API base, when there is one.
        next: Option<String>,
    },
}

/// Counts a request that failed before any answer; one that was answered is counted by what it answered.
fn counted_error<T, E>(result: Result<T, E>) -> Result<T, E> {
    if result.is_err() {
        upstream_request(Upstream::Github, Outcome::Error);
    }
    result
}

/// Sends `$request` (one of octocrab's raw calls) and reads its answer whole: the rate-limit headers noted on
/// `$app`, an error status turned into octocrab's error, the body parsed into the type asked for. A macro, as
/// octocrab's raw body type is not nameable without another dependency.
macro_rules! answered {
    ($app:expr, $answer:ty, $request:expr) => {{
        let answer: octocrab::Result<$answer> = async {
            let response = $request.await?;
            $app.note_rate_limit(response.status(), response.headers());
            <$answer as octocrab::FromResponse>::from_response(
                octocrab::map_github_error(response).await?,
            )
            .await
        }
        .await;
        answer
    }};
}

/// The App's installation client; cheap to clone (clones share the token cache).
#[derive(Clone)]
pub struct GithubApp {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for GithubApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GithubApp")
            .field("api_url", &self.inner.api_url)
            .field("app_id", &self.inner.app_id)
            .field("installation_id", &self.inner.installation_id)
            .finish_non_exhaustive()
    }
}

/// An octocrab client for `api_url` sending `token` (an App JWT or an installation token) as a bearer.
fn client_with(api_url: &str, token: String) -> Result<Octocrab> {
    Octocrab::builder()
        .base_uri(api_url)
        .map_err(|e| GithubError::Setup(format!("api_url: {e}")))?
        .personal_token(token)
        .set_connect_timeout(Some(CONNECT_TIMEOUT))
        .set_read_timeout(Some(READ_TIMEOUT))
        .build()
        .map_err(|e| GithubError::Setup(e.to_string()))
}

/// The installation token answer (`POST /app/installations/{id}/access_tokens`).
#[derive(Debug, Deserialize)]
struct AccessToken {
    token: String,
    expires_at: String,
}

impl GithubApp {
    /// Authenticates as App `app_id` with `private_key_pem`, acting as `installation_id`, against `api_url`.
    pub fn new(
        api_url: &str,
        app_id: u64,
        private_key_pem: &str,
        installation_id: u64,
    ) -> Result<Self> {
        let key = EncodingKey::from_rsa_pem(private_key_pem.as_bytes()).map_err(|e| {
            GithubError::Setup(format!("the App private key is not an RSA PEM key: {e}"))
        })?;
        // Fail at start-up, not on the first request, when the URL is unusable.
        api_url
            .parse::<http::Uri>()
            .map_err(|e| GithubError::Setup(format!("api_url: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                api_url: api_url.to_string(),
                app_id,
                key,
                installation_id,
                token: Mutex::new(None),
                sent: AtomicU64::new(0),
                not_modified: AtomicU64::new(0),
                paused_until: std::sync::Mutex::new(None),
            }),
        })
    }

    /// The requests sent so far by this client and its clones.
    pub fn requests(&self) -> ForgeRequests {
        ForgeRequests {
            sent: self.inner.sent.load(Ordering::Relaxed),
            not_modified: self.inner.not_modified.load(Ordering::Relaxed),
        }
    }

    fn count_sent(&self) {
        self.inner.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Fails while GitHub's last rate-limit answer asks for quiet, before anything is sent.
    fn unless_paused(&self) -> Result<()> {
        let paused_until = *self
            .inner
            .paused_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match paused_until {
            Some(until) if until > std::time::Instant::now() => Err(GithubError::RateLimited {
                retry_in: until - std::time::Instant::now(),
            }),
            _ => Ok(()),
        }
    }

    /// `error` as the rate limit when GitHub's answer (the one that failed, or another's meanwhile) said it is
    /// spent, so the user hears when to come back rather than that the forge failed.
    fn limited_or(&self, error: octocrab::Error) -> GithubError {
        match self.unless_paused() {
            Err(limited) => limited,
            Ok(()) => error.into(),
        }
    }

    /// Reads an answer's rate-limit headers: the remaining budget for Tower's metrics, and a pause when
    /// GitHub says the limit is spent.
    fn note_rate_limit(&self, status: http::StatusCode, headers: &http::HeaderMap) {
        crate::telemetry::github_rate_limit(headers);
        if let Some(pause) = rate_limit_pause(status, headers) {
            tracing::warn!(
                seconds = pause.as_secs(),
                "GitHub's rate limit is spent; sending nothing until it says"
            );
            let until = std::time::Instant::now() + pause;
            let mut paused_until = self
                .inner
                .paused_until
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *paused_until = Some(paused_until.map_or(until, |earlier| earlier.max(until)));
        }
    }

    /// The API base this client talks to, e.g. `https://api.github.com/`.
    pub fn api_url(&self) -> &str {
        &self.inner.api_url
    }

    /// A fresh App JWT.
    pub fn app_jwt(&self) -> Result<String> {
        let now = jiff::Timestamp::now().as_second();
        let claims = AppClaims {
            iss: self.inner.app_id,
            iat: now - JWT_BACKDATE.as_secs() as i64,
            exp: now + JWT_LIFETIME.as_secs() as i64,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.inner.key)
            .map_err(|e| GithubError::Token(format!("signing the App JWT: {e}")))
    }

    /// The installation client, minting a new installation token when the cached one is within
    /// [`REFRESH_BEFORE`] of expiring.
    pub async fn client(&self) -> Result<Octocrab> {
        let mut cached = self.inner.token.lock().await;
        let now = jiff::Timestamp::now();
        if let Some(current) = cached.as_ref()
            && current.expires_at.as_second() - now.as_second() > REFRESH_BEFORE.as_secs() as i64
        {
            return Ok(current.client.clone());
        }
        self.unless_paused()?;
        let app = client_with(&self.inner.api_url, self.app_jwt()?)?;
        self.count_sent();
        let route = api_path([
            Segment("app"),
            Segment("installations"),
            Segment(&self.inner.installation_id.to_string()),
            Segment("access_tokens"),
        ]);
        let minted: AccessToken = counted(
            Upstream::Github,
            answered!(self, AccessToken, app._post(route, None::<&()>)),
        )
        .map_err(|error| self.limited_or(error))?;
        let expires_at: jiff::Timestamp = minted
            .expires_at
            .parse()
            .map_err(|_| GithubError::Shape("an installation token's expires_at"))?;
        let client = client_with(&self.inner.api_url, minted.token)?;
        tracing::debug!(expires_at = %expires_at, "minted a GitHub installation token");
        *cached = Some(Cached {
            client: client.clone(),
            expires_at,
        });
        Ok(client)
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, route: String) -> Result<T> {
        self.unless_paused()?;
        let client = self.client().await?;
        self.count_sent();
        counted(Upstream::Github, answered!(self, T, client._get(route)))
            .map_err(|error| self.limited_or(error))
    }

    async fn post<T: serde::de::DeserializeOwned>(&self, route: String, body: &Value) -> Result<T> {
        self.unless_paused()?;
        let client = self.client().await?;
        self.count_sent();
        counted(
            Upstream::Github,
            answered!(self, T, client._post(route, Some(body))),
        )
        .map_err(|error| self.limited_or(error))
    }

    async fn patch<T: serde::de::DeserializeOwned>(
        &self,
        route: String,
        body: &Value,
    ) -> Result<T> {
        self.unless_paused()?;
        let client = self.client().await?;
        self.count_sent();
        counted(
            Upstream::Github,
            answered!(self, T, client._patch(route, Some(body))),
        )
        .map_err(|error| self.limited_or(error))
    }

    /// `GET route` (relative to the API base) with `If-None-Match: etag` when one is given: `NotModified`
    /// when GitHub says nothing changed, else the JSON body with its `ETag` and next page.
    pub async fn get_conditional(
        &self,
        route: &str,
        etag: Option<&str>,
    ) -> Result<Conditional<Value>> {
        self.unless_paused()?;
        let client = self.client().await?;
        let mut headers = http::HeaderMap::new();
        if let Some(value) = etag.and_then(|e| http::HeaderValue::from_str(e).ok()) {
            headers.insert(http::header::IF_NONE_MATCH, value);
        }
        self.count_sent();
        let response = counted_error(
            client
                ._get_with_headers(route.to_string(), Some(headers))
                .await,
        )?;
        self.note_rate_limit(response.status(), response.headers());
        if response.status() == http::StatusCode::NOT_MODIFIED {
            self.inner.not_modified.fetch_add(1, Ordering::Relaxed);
            upstream_request(Upstream::Github, Outcome::NotModified);
            return Ok(Conditional::NotModified);
        }
        let response = counted(Upstream::Github, octocrab::map_github_error(response).await)?;
        let etag = response
            .headers()
            .get(http::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let next = response
            .headers()
            .get(http::header::LINK)
            .and_then(|v| v.to_str().ok())
            .and_then(next_link)
            .and_then(|target| relative_to_api(target, &self.inner.api_url));
        let text = client.body_to_string(response).await?;
        let value = serde_json::from_str(&text).map_err(|_| GithubError::Shape("a JSON answer"))?;
        Ok(Conditional::Fresh { value, etag, next })
    }

    /// Every item of the list at `route`, following `Link: rel="next"` for at most `max_pages` pages.
    async fn get_pages<T: serde::de::DeserializeOwned>(
        &self,
        route: String,
        max_pages: usize,
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        let mut next = Some(route);
        for _ in 0..max_pages {
            let Some(route) = next.take() else { break };
            let Conditional::Fresh {
                value, next: after, ..
            } = self.get_conditional(&route, None).await?
            else {
                // Nothing was sent to be unchanged from.
                return Err(GithubError::Shape(
                    "a list answered 304 without a validator",
                ));
            };
            let page: Vec<T> =
                serde_json::from_value(value).map_err(|_| GithubError::Shape("a list page"))?;
            items.extend(page);
            next = after;
        }
        Ok(items)
    }

    /// Commits in `repository` (`owner/name`) after `base` up to `head`, newest first.
    pub async fn commits_between(
        &self,
        repository: &str,
        base: &str,
        head: &str,
    ) -> Result<Vec<CommitView>> {
        let comparison: Value = self
            .get(repo_path(
                repository,
                &[Segment("compare"), GitPath(&format!("{base}...{head}"))],
            ))
            .await?;
        let mut commits: Vec<CommitView> = comparison
            .get("commits")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|commit| {
                let field = |path: &[&str]| {
                    path.iter()
                        .try_fold(commit, |v, k| v.get(k))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                let author = Some(field(&["author", "login"]))
                    .filter(|l| !l.is_empty())
                    .unwrap_or_else(|| field(&["commit", "author", "name"]));
                CommitView {
                    sha: field(&["sha"]).chars().take(7).collect(),
                    message: field(&["commit", "message"])
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    author,
                    at: field(&["commit", "author", "date"]),
                }
            })
            .collect();
        commits.reverse();
        Ok(commits)
    }

    /// The migration files (`migrations/*`) in `repository` at `git_ref`, sorted; empty when there are none.
    pub async fn migrations_at(&self, repository: &str, git_ref: &str) -> Result<Vec<String>> {
        let listing: Value = match self
            .get(with_query(
                &repo_path(repository, &[Segment("contents"), Segment("migrations")]),
                &[("ref", git_ref)],
            ))
            .await
        {
            Ok(listing) => listing,
            Err(error) if error.is_not_found() => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let mut files: Vec<String> = listing
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("file"))
            .filter_map(|item| item.get("name").and_then(Value::as_str).map(str::to_string))
            .collect();
        files.sort();
        Ok(files)
    }

    // ----- the git data API and pull requests, for Tower's one write -----

    /// The commit a branch points at, or `None` when the branch does not exist.
    pub async fn branch_sha(&self, repository: &str, branch: &str) -> Result<Option<String>> {
        match self
            .get::<Ref>(repo_path(
                repository,
                &[
                    Segment("git"),
                    Segment("ref"),
                    Segment("heads"),
                    GitPath(branch),
                ],
            ))
            .await
        {
            Ok(reference) => Ok(Some(reference.object.sha)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// A commit object: its tree and parents.
    pub async fn git_commit(&self, repository: &str, sha: &str) -> Result<GitCommit> {
        self.get(repo_path(
            repository,
            &[Segment("git"), Segment("commits"), Segment(sha)],
        ))
        .await
    }

    /// A tree: `base_tree` with `files` (path → content) written over it. Idempotent: the same content gives
    /// the same tree id.
    pub async fn create_tree(
        &self,
        repository: &str,
        base_tree: &str,
        files: &[(String, String)],
    ) -> Result<String> {
        let tree: Vec<Value> = files
            .iter()
            .map(|(path, content)| {
                json!({"path": path, "mode": "100644", "type": "blob", "content": content})
            })
            .collect();
        let created: Sha = self
            .post(
                repo_path(repository, &[Segment("git"), Segment("trees")]),
                &json!({"base_tree": base_tree, "tree": tree}),
            )
            .await?;
        Ok(created.sha)
    }

    /// A commit of `tree` on `parent`.
    pub async fn create_commit(
        &self,
        repository: &str,
        message: &str,
        tree: &str,
        parent: &str,
    ) -> Result<String> {
        let created: Sha = self
            .post(
                repo_path(repository, &[Segment("git"), Segment("commits")]),
                &json!({"message": message, "tree": tree, "parents": [parent]}),
            )
            .await?;
        Ok(created.sha)
    }

    /// Creates branch `branch` at `sha`.
    pub async fn create_branch(&self, repository: &str, branch: &str, sha: &str) -> Result<()> {
        let _: Value = self
            .post(
                repo_path(repository, &[Segment("git"), Segment("refs")]),
                &json!({"ref": format!("refs/heads/{branch}"), "sha": sha}),
            )
            .await?;
        Ok(())
    }

    /// Moves branch `branch` to `sha`, forced: Tower's branches carry exactly one commit on main, rebuilt
    /// whenever main moves or the change does.
    pub async fn move_branch(&self, repository: &str, branch: &str, sha: &str) -> Result<()> {
        let _: Value = self
            .patch(
                repo_path(
                    repository,
                    &[
                        Segment("git"),
                        Segment("refs"),
                        Segment("heads"),
                        GitPath(branch),
                    ],
                ),
                &json!({"sha": sha, "force": true}),
            )
            .await?;
        Ok(())
    }

    /// Pull requests of `repository` in `state` (`open`, `closed`, `all`), newest first, optionally only
    /// those from `head_branch`; at most `per_page` of page `page`.
    pub async fn list_pulls(
        &self,
        repository: &str,
        state: &str,
        head_branch: Option<&str>,
        per_page: u32,
        page: u32,
    ) -> Result<Vec<Pull>> {
        let owner = repository.split('/').next().unwrap_or_default();
        let head = head_branch.map(|b| format!("{owner}:{b}"));
        let (per_page, page) = (per_page.to_string(), page.to_string());
        let mut query = vec![("state", state)];
        if let Some(head) = &head {
            query.push(("head", head));
        }
        query.extend([("per_page", per_page.as_str()), ("page", page.as_str())]);
        self.get(with_query(
            &repo_path(repository, &[Segment("pulls")]),
            &query,
        ))
        .await
    }

    /// The `per_page` pull requests of `repository` in `state` updated most recently, newest first (a merge
    /// updates a pull request, so this is where new merges show up whatever their age).
    pub async fn recently_updated_pulls(
        &self,
        repository: &str,
        state: &str,
        per_page: u32,
    ) -> Result<Vec<Pull>> {
        let per_page = per_page.to_string();
        self.get(with_query(
            &repo_path(repository, &[Segment("pulls")]),
            &[
                ("state", state),
                ("sort", "updated"),
                ("direction", "desc"),
                ("per_page", &per_page),
            ],
        ))
        .await
    }

    /// One pull request, with its mergeability.
    pub async fn pull(&self, repository: &str, number: u64) -> Result<Pull> {
        self.get(repo_path(
            repository,
            &[Segment("pulls"), Segment(&number.to_string())],
        ))
        .await
    }

    /// Opens a pull request from `branch` into `base`.
    pub async fn create_pull(
        &self,
        repository: &str,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
    ) -> Result<Pull> {
        self.post(
            repo_path(repository, &[Segment("pulls")]),
            &json!({"title": title, "head": branch, "base": base, "body": body}),
        )
        .await
    }

    /// Updates a pull request's title and body.
    pub async fn update_pull(
        &self,
        repository: &str,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<Pull> {
        self.patch(
            repo_path(
                repository,
                &[Segment("pulls"), Segment(&number.to_string())],
            ),
            &json!({"title": title, "body": body}),
        )
        .await
    }

    /// Adds labels to an issue or pull request.
    pub async fn add_labels(&self, repository: &str, number: u64, labels: &[String]) -> Result<()> {
        let _: Value = self
            .post(
                repo_path(
                    repository,
                    &[
                        Segment("issues"),
                        Segment(&number.to_string()),
                        Segment("labels"),
                    ],
                ),
                &json!({"labels": labels}),
            )
            .await?;
        Ok(())
    }

    /// Check runs on commit `sha`.
    pub async fn check_runs(&self, repository: &str, sha: &str) -> Result<Vec<CheckRun>> {
        let runs: CheckRuns = self
            .get(repo_path(
                repository,
                &[Segment("commits"), Segment(sha), Segment("check-runs")],
            ))
            .await?;
        Ok(runs.check_runs)
    }

    /// Every review submitted on pull request `number`, oldest first, as GitHub lists them.
    pub async fn reviews(&self, repository: &str, number: u64) -> Result<Vec<Review>> {
        self.get_pages(
            with_query(
                &repo_path(
                    repository,
                    &[
                        Segment("pulls"),
                        Segment(&number.to_string()),
                        Segment("reviews"),
                    ],
                ),
                &[("per_page", "100")],
            ),
            REVIEW_PAGES,
        )
        .await
    }

    /// File `path` at `git_ref` read conditionally: `Fresh` with `None` when it does not exist there.
    pub async fn file_conditional(
        &self,
        repository: &str,
        path: &str,
        git_ref: &str,
        etag: Option<&str>,
    ) -> Result<Conditional<Option<String>>> {
        let route = with_query(
            &repo_path(repository, &[Segment("contents"), GitPath(path)]),
            &[("ref", git_ref)],
        );
        match self.get_conditional(&route, etag).await {
            Ok(Conditional::NotModified) => Ok(Conditional::NotModified),
            Ok(Conditional::Fresh { value, etag, .. }) => {
                let contents: Contents = serde_json::from_value(value)
                    .map_err(|_| GithubError::Shape("a file's contents"))?;
                Ok(Conditional::Fresh {
                    value: Some(contents.text()?),
                    etag,
                    next: None,
                })
            }
            Err(error) if error.is_not_found() => Ok(Conditional::Fresh {
                value: None,
                etag: None,
                next: None,
            }),
            Err(error) => Err(error),
        }
    }

    /// One page of `organisation`'s repositories, read conditionally: the first page's route is
    /// [`organisation_repositories_route`], later ones come from the answer's `next`.
    pub async fn organisation_repositories_page(
        &self,
        route: &str,
        etag: Option<&str>,
    ) -> Result<Conditional<Vec<Repository>>> {
        Ok(match self.get_conditional(route, etag).await? {
            Conditional::NotModified => Conditional::NotModified,
            Conditional::Fresh { value, etag, next } => Conditional::Fresh {
                value: serde_json::from_value(value)
                    .map_err(|_| GithubError::Shape("a page of repositories"))?,
                etag,
                next,
            },
        })
    }

    /// The text of file `path` at `git_ref`, or `None` when it does not exist there.
    pub async fn file(
        &self,
        repository: &str,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<String>> {
        let contents: Contents = match self
            .get(with_query(
                &repo_path(repository, &[Segment("contents"), GitPath(path)]),
                &[("ref", git_ref)],
            ))
            .await
        {
            Ok(contents) => contents,
            Err(error) if error.is_not_found() => return Ok(None),
            Err(error) => return Err(error),
        };
        contents.text().map(Some)
    }

    /// Commits reachable from `sha` that touched `path`, newest first: one page.
    pub async fn commits_touching(
        &self,
        repository: &str,
        path: &str,
        sha: &str,
        per_page: u32,
        page: u32,
    ) -> Result<Vec<CommitSummary>> {
        let (per_page, page) = (per_page.to_string(), page.to_string());
        self.get(with_query(
            &repo_path(repository, &[Segment("commits")]),
            &[
                ("sha", sha),
                ("path", path),
                ("per_page", &per_page),
                ("page", &page),
            ],
        ))
        .await
    }

    /// One commit with its changed files and their patches.
    pub async fn commit(&self, repository: &str, sha: &str) -> Result<CommitDetail> {
        self.get(repo_path(repository, &[Segment("commits"), Segment(sha)]))
            .await
    }
}

/// Review pages read at most for one pull request (100 reviews a page).
const REVIEW_PAGES: usize = 10;

/// The first page of `organisation`'s repositories, 100 to a page.
pub fn organisation_repositories_route(organisation: &str) -> String {
    with_query(
        &api_path([Segment("orgs"), Segment(organisation), Segment("repos")]),
        &[("per_page", "100")],
    )
}

/// The `rel="next"` target of a `Link` header (RFC 8288), as written.
fn next_link(link: &str) -> Option<&str> {
    link.split(',').find_map(|entry| {
        let (target, params) = entry.split_once(';')?;
        params
            .split(';')
            .any(|p| {
                let p = p.trim();
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| target.trim().strip_prefix('<')?.strip_suffix('>'))
            .flatten()
    })
}

/// `target` as a path relative to the API base `api_url`, or `None` when it points elsewhere.
///
/// GitHub writes absolute `Link` targets (`https://api.github.com/organizations/1/repos?page=2`), and
/// octocrab sends credentials only with relative URIs (or to api.github.com), so an absolute link to any
/// other host (GitHub Enterprise, the sandbox) would page on without the token. A link to another origin is
/// not followed at all.
pub fn relative_to_api(target: &str, api_url: &str) -> Option<String> {
    if target.starts_with('/') && !target.starts_with("//") {
        return Some(target.to_string());
    }
    let target = url::Url::parse(target).ok()?;
    let base = url::Url::parse(api_url).ok()?;
    if target.origin() != base.origin() {
        return None;
    }
    let rest = target
        .path()
        .strip_prefix(base.path().trim_end_matches('/'))?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let mut relative = if rest.is_empty() {
        "/".to_string()
    } else {
        rest.to_string()
    };
    if let Some(query) = target.query() {
        relative.push('?');
        relative.push_str(query);
    }
    Some(relative)
}

/// `/repos/{owner}/{name}/…` for `repository` (`owner/name`), every part percent-encoded by the URL type.
fn repo_path(repository: &str, parts: &[PathPart<'_>]) -> String {
    let (owner, name) = repository.split_once('/').unwrap_or((repository, ""));
    api_path(
        [Segment("repos"), Segment(owner), Segment(name)]
            .into_iter()
            .chain(parts.iter().copied()),
    )
}

/// Decodes GitHub's base64 (standard alphabet, lines wrapped with `\n`).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let unwrapped: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(unwrapped)
        .ok()
}

/// `{"sha": …}`, the part of several answers Tower reads.
#[derive(Debug, Clone, Deserialize)]
pub struct Sha {
    /// The object id.
    pub sha: String,
}

#[derive(Debug, Deserialize)]
struct Ref {
    object: Sha,
}

/// A git commit object (`GET /git/commits/{sha}`).
#[derive(Debug, Clone, Deserialize)]
pub struct GitCommit {
    /// Its id.
    pub sha: String,
    /// Its tree.
    pub tree: Sha,
    /// Its parents.
    #[serde(default)]
    pub parents: Vec<Sha>,
}

/// A user as GitHub embeds it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct User {
    /// Their login.
    #[serde(default)]
    pub login: String,
}

/// One side of a pull request.
#[derive(Debug, Clone, Deserialize)]
pub struct PullSide {
    /// The branch.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Its commit.
    pub sha: String,
}

/// A label.
#[derive(Debug, Clone, Deserialize)]
pub struct Label {
    /// Its name.
    pub name: String,
}

/// A pull request, as much of it as Tower shows.
#[derive(Debug, Clone, Deserialize)]
pub struct Pull {
    /// Its number.
    pub number: u64,
    /// Its page.
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    /// Title.
    pub title: String,
    /// Body.
    #[serde(default)]
    pub body: Option<String>,
    /// The head branch.
    pub head: PullSide,
    /// Who opened it.
    #[serde(default)]
    pub user: Option<User>,
    /// RFC 3339.
    #[serde(default)]
    pub created_at: String,
    /// RFC 3339, when merged.
    #[serde(default)]
    pub merged_at: Option<String>,
    /// Single-pull answers only: whether it merges cleanly (null while GitHub computes it).
    #[serde(default)]
    pub mergeable: Option<bool>,
    /// Its labels.
    #[serde(default)]
    pub labels: Vec<Label>,
}

/// A check run.
#[derive(Debug, Clone, Deserialize)]
pub struct CheckRun {
    /// Its id: a re-run has a higher one.
    #[serde(default)]
    pub id: u64,
    /// e.g. `tower-ci / validate`.
    pub name: String,
    /// `queued`, `in_progress`, `completed`.
    pub status: String,
    /// When completed.
    #[serde(default)]
    pub conclusion: Option<String>,
    /// Its page.
    #[serde(default)]
    pub html_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CheckRuns {
    #[serde(default)]
    check_runs: Vec<CheckRun>,
}

#[derive(Debug, Deserialize)]
struct Contents {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

impl Contents {
    /// The file's text, decoded from GitHub's base64.
    fn text(&self) -> Result<String> {
        if self.encoding.as_deref() != Some("base64") {
            return Err(GithubError::Shape("a file's contents"));
        }
        let bytes = decode_base64(self.content.as_deref().unwrap_or_default())
            .ok_or(GithubError::Shape("a file's base64 contents"))?;
        String::from_utf8(bytes).map_err(|_| GithubError::Shape("a file's text"))
    }
}

/// A review of a pull request (`GET /repos/{o}/{r}/pulls/{n}/reviews`).
#[derive(Debug, Clone, Deserialize)]
pub struct Review {
    /// Who wrote it (absent for a deleted account).
    #[serde(default)]
    pub user: Option<User>,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    #[serde(default)]
    pub state: String,
    /// When it was submitted (RFC 3339); absent while pending.
    #[serde(default)]
    pub submitted_at: Option<String>,
}

/// A repository as the organisation's list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Repository {
    /// `owner/name`.
    pub full_name: String,
    /// Its default branch.
    #[serde(default)]
    pub default_branch: Option<String>,
    /// Whether it is archived (archived repositories still describe services).
    #[serde(default)]
    pub archived: bool,
}

/// A git person inside a commit.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct GitPerson {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// RFC 3339.
    #[serde(default)]
    pub date: String,
}

/// The git part of a listed commit.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CommitData {
    /// Its message.
    #[serde(default)]
    pub message: String,
    /// Its author.
    #[serde(default)]
    pub author: GitPerson,
}

/// A commit as `GET /repos/{o}/{r}/commits` lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct CommitSummary {
    /// Its id.
    pub sha: String,
    /// Message, author.
    pub commit: CommitData,
    /// The author's forge account, when GitHub matched one.
    #[serde(default)]
    pub author: Option<User>,
    /// Its page.
    #[serde(default)]
    pub html_url: Option<String>,
    /// Its parents.
    #[serde(default)]
    pub parents: Vec<Sha>,
}

impl CommitSummary {
    /// As the browser shows a commit: short id, first line, the forge login when known.
    pub fn view(&self) -> CommitView {
        let author = self
            .author
            .as_ref()
            .map(|u| u.login.clone())
            .filter(|login| !login.is_empty())
            .unwrap_or_else(|| self.commit.author.name.clone());
        CommitView {
            sha: self.sha.chars().take(7).collect(),
            message: self
                .commit
                .message
                .lines()
                .next()
                .unwrap_or_default()
                .to_string(),
            author,
            at: self.commit.author.date.clone(),
        }
    }
}

/// A changed file of a commit.
#[derive(Debug, Clone, Deserialize)]
pub struct CommitFile {
    /// Its path.
    pub filename: String,
    /// `added`, `modified`, `removed`, …
    pub status: String,
    /// The diff hunks, when not too large.
    #[serde(default)]
    pub patch: Option<String>,
}

/// One commit with its files (`GET /repos/{o}/{r}/commits/{sha}`).
#[derive(Debug, Clone, Deserialize)]
pub struct CommitDetail {
    /// The summary part.
    #[serde(flatten)]
    pub summary: CommitSummary,
    /// Changed files.
    #[serde(default)]
    pub files: Vec<CommitFile>,
}

#[cfg(test)]
mod tests {
    use super::{decode_base64, next_link, relative_to_api};

    #[test]
    fn an_absolute_next_link_becomes_relative_to_the_api_base_and_another_origin_is_not_followed() {
        let github = "<https://api.github.com/organizations/9/repos?per_page=100&page=2>; rel=\"next\", \
                      <https://api.github.com/organizations/9/repos?per_page=100&page=5>; rel=\"last\"";
        let next = next_link(github).expect("a next link");
        assert_eq!(
            relative_to_api(next, "https://api.github.com/").as_deref(),
            Some("/organizations/9/repos?per_page=100&page=2")
        );
        // The sandbox (or GitHub Enterprise) serves the API under a path: it is kept out of the route, which
        // octocrab joins to the base again.
        assert_eq!(
            relative_to_api(
                "http://127.0.0.1:4000/github/orgs/acme/repos?page=2",
                "http://127.0.0.1:4000/github/"
            )
            .as_deref(),
            Some("/orgs/acme/repos?page=2")
        );
        assert_eq!(
            relative_to_api(
                "/github/orgs/acme/repos?page=2",
                "http://127.0.0.1:4000/github/"
            )
            .as_deref(),
            Some("/github/orgs/acme/repos?page=2")
        );
        for elsewhere in [
            "https://evil.example/orgs/acme/repos?page=2",
            "http://127.0.0.1:4001/github/orgs/acme/repos",
            "http://127.0.0.1:4000/githubx/orgs",
            "//evil.example/x",
        ] {
            assert_eq!(
                relative_to_api(elsewhere, "http://127.0.0.1:4000/github/"),
                None,
                "{elsewhere}"
            );
        }
        assert_eq!(next_link("<https://x/a?page=1>; rel=\"prev\""), None);
    }

    #[test]
    fn base64_as_github_wraps_it_decodes() {
        assert_eq!(
            decode_base64("aGVsbG8g\nd29ybGQ=\n").as_deref(),
            Some(&b"hello world"[..])
        );
        assert_eq!(decode_base64("a$b"), None);
    }
}
