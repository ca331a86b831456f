//! A forge that speaks the subset of GitHub's REST API Tower uses, backed by the real git repositories of
//! [`crate::git`]: GitHub App authentication (JWT, installation tokens), repository contents (reads and
//! file writes), the git data API, pull requests with their reviews, issue comments and labels, commit
//! statuses and check runs, signed webhooks, and an OAuth web flow with demo identities.
//!
//! [`router`] serves the API without a prefix; the sandbox mounts it at `/github`, so a client's base URI
//! is `http://127.0.0.1:PORT/github/`. [`sandbox_routes`] adds the demo reviewer's merge and review buttons
//! at the sandbox's root. Shapes follow GitHub's OpenAPI examples; every error is GitHub's
//! `{"message", "errors"?, "documentation_url"}`.
//!
//! The organisation's repositories are public, as on GitHub: anyone may read them without a token (so a
//! client following an absolute `Link` header, which octocrab sends no credentials to, still pages), while
//! every write, and every read GitHub keeps to a token (`/installation/…`, `/user…`, `/app…`), needs one.
//!
//! The forge's CI validates every pull request head of `application-repositories` with
//! [`shared::config::validate`], and the demo reviewer ([`DEMO_REVIEWER`]) reviews each pull request there
//! a couple of seconds after that check completes: an approval when it passed, changes requested naming
//! what failed otherwise.

mod auth;
mod body;
mod checks;
mod contents;
mod error;
mod gitdata;
mod issues;
mod oauth;
mod pulls;
mod repos;
mod reviews;
mod shapes;
mod webhooks;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::{FromRequestParts, OriginalUri};
use axum::handler::Handler;
use axum::http::request::Parts;
use axum::routing::{MethodFilter, MethodRouter, on, post};
use serde::Serialize;
use tokio::sync::broadcast;

pub use error::{GitHubError, Result};
pub use reviews::ReviewEvent;
pub use webhooks::DELIVERED as DELIVERED_WEBHOOKS;
pub use webhooks::signature as webhook_signature;

use crate::git::{Git, Repositories};
use crate::world::{GITOPS_REPOSITORY, ORGANISATION};

/// The demo GitHub App's id.
pub const DEMO_APP_ID: u64 = 424_242;
/// The demo App's installation on the `acme` organisation.
pub const DEMO_INSTALLATION_ID: u64 = 42_424_242;
/// The demo OAuth App's client id (Tower's sign-in).
pub const DEMO_CLIENT_ID: &str = "Iv1.tower0sandbox0demo";
/// The demo OAuth App's client secret. Published on purpose: the sandbox is a demo.
pub const DEMO_CLIENT_SECRET: &str = "tower-sandbox-demo-client-secret";
/// The name of the check run the forge's CI attaches to each pull request's head.
pub const CI_CHECK_NAME: &str = "tower-ci / validate";
/// The demo reviewer: she reviews every pull request of `application-repositories` once its CI check
/// completes, and `POST /sandbox/pulls/{number}/review` makes her review on demand. A member of the
/// `payments` and `platform` teams ([`crate::world::PLATFORM_TEAM`]).
pub const DEMO_REVIEWER: &str = "grace";

/// TEST-ONLY key pair of the demo App; see `forge/testdata/README.md`. Never use it for anything real.
const DEMO_PRIVATE_KEY: &str = include_str!("forge/testdata/demo-app.private.pem");
const DEMO_PUBLIC_KEY: &str = include_str!("forge/testdata/demo-app.public.pem");

/// What the forge is configured with.
#[derive(Debug, Clone)]
pub struct ForgeConfig {
    /// The GitHub App's id: the `iss` its JWTs must carry.
    pub app_id: u64,
    /// The App's slug; its bot user is `<slug>[bot]`.
    pub app_slug: String,
    /// PEM public keys JWTs may be signed with (GitHub lets an App have several during a rotation).
    pub app_public_keys: Vec<String>,
    /// The App's installation on the organisation.
    pub installation_id: u64,
    /// The OAuth client id Tower signs people in with.
    pub client_id: String,
    /// The OAuth client secret.
    pub client_secret: String,
    /// How long an installation access token lives (GitHub: one hour).
    pub token_lifetime: Duration,
    /// Where `html_url`s point (there is no web UI; GitHub's host keeps links recognisable).
    pub html_base: String,
}

impl Default for ForgeConfig {
    fn default() -> Self {
        Self {
            app_id: DEMO_APP_ID,
            app_slug: "tower-app".into(),
            app_public_keys: vec![DEMO_PUBLIC_KEY.into()],
            installation_id: DEMO_INSTALLATION_ID,
            client_id: DEMO_CLIENT_ID.into(),
            client_secret: DEMO_CLIENT_SECRET.into(),
            token_lifetime: Duration::from_secs(3600),
            html_base: "https://github.com".into(),
        }
    }
}

/// A merged pull request, announced to whoever simulates what happens next (Argo CD syncing, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeEvent {
    /// The repository's name, e.g. `application-repositories`.
    pub repo: String,
    /// The pull request's number.
    pub number: u64,
    /// The merge commit on the base branch.
    pub merge_sha: String,
    /// Paths the merge changed on the base branch.
    pub files_changed: Vec<String>,
}

/// Who is calling: the App's installation or a signed-in person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// An installation access token.
    Installation,
    /// A user's OAuth token.
    User(String),
}

impl Caller {
    /// The login the caller acts as (`tower-app[bot]` for the installation).
    pub fn login(&self) -> String {
        match self {
            Self::Installation => crate::git::people::APP_BOT.into(),
            Self::User(login) => login.clone(),
        }
    }
}

/// A token the forge issued.
#[derive(Debug, Clone)]
struct Token {
    caller: Caller,
    expires_at: jiff::Timestamp,
}

/// A pull request's state in the forge.
#[derive(Debug, Clone)]
struct Pull {
    number: u64,
    title: String,
    body: String,
    open: bool,
    draft: bool,
    head_ref: String,
    head_sha: String,
    base_ref: String,
    base_sha: String,
    user: String,
    created_at: String,
    updated_at: String,
    closed_at: Option<String>,
    merged_at: Option<String>,
    merge_commit_sha: Option<String>,
    merged_by: Option<String>,
    labels: Vec<String>,
}

/// A commit status someone posted.
#[derive(Debug, Clone)]
struct Status {
    id: u64,
    state: String,
    target_url: Option<String>,
    description: Option<String>,
    context: String,
    created_at: String,
    creator: String,
}

/// A check run, posted by a client or by the forge's own CI.
#[derive(Debug, Clone)]
struct CheckRun {
    id: u64,
    repo: String,
    name: String,
    head_sha: String,
    status: String,
    conclusion: Option<String>,
    started_at: Option<String>,
    completed_at: Option<String>,
    details_url: Option<String>,
    external_id: Option<String>,
    title: Option<String>,
    summary: Option<String>,
    text: Option<String>,
    /// For the forge's own CI: what it concluded and how far it got.
    ci: Option<Ci>,
}

/// The forge's CI on one of its check runs: created in progress, completed [`checks::CI_DURATION`] later
/// with its verdict, then reviewed by [`DEMO_REVIEWER`].
#[derive(Debug, Clone)]
struct Ci {
    /// When the run started (it is created in progress, as GitHub Actions creates its runs).
    started: jiff::Timestamp,
    /// What it will conclude, computed when the head was pushed.
    verdict: Verdict,
    /// The pull request whose head it validates.
    pull: Option<u64>,
    /// When it completed.
    completed: Option<jiff::Timestamp>,
    /// Whether the demo reviewer has reviewed the pull request for this run.
    reviewed: bool,
}

/// What the forge's CI concluded of a pull request head.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    passes: bool,
    /// The check run's `output.title`.
    title: String,
    /// Its `output.summary`: the files and their first problems.
    summary: String,
    /// Its `output.text`: every problem, when there are any.
    text: Option<String>,
}

/// A comment on an issue or pull request (the issue comments API).
#[derive(Debug, Clone)]
struct Comment {
    id: u64,
    user: String,
    body: String,
    created_at: String,
    updated_at: String,
}

/// A pull request review.
#[derive(Debug, Clone)]
struct Review {
    id: u64,
    number: u64,
    user: String,
    /// GitHub's REST state: `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED` or `PENDING`.
    state: String,
    body: String,
    commit_id: String,
    submitted_at: Option<String>,
}

/// A repository's label.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Label {
    name: String,
    color: String,
    description: Option<String>,
    /// One of GitHub's default labels of a new repository.
    default: bool,
}

/// An OAuth code handed to a redirect, exchangeable once.
#[derive(Debug, Clone)]
struct Code {
    login: String,
    redirect_uri: String,
    scope: String,
    expires_at: jiff::Timestamp,
}

/// Check runs kept, oldest forgotten first: a few days of a busy repository's pull requests.
const CHECK_RUNS_KEPT: usize = 1_000;
/// Statuses kept per commit, oldest forgotten first (GitHub itself stops at 1,000).
const STATUSES_PER_COMMIT: usize = 1_000;

#[derive(Debug, Default)]
struct State {
    tokens: HashMap<String, Token>,
    /// Pull requests by repository, in number order.
    pulls: BTreeMap<String, Vec<Pull>>,
    /// Next issue/pull number by repository (they share one sequence, as on GitHub).
    next_number: BTreeMap<String, u64>,
    statuses: HashMap<(String, String), Vec<Status>>,
    check_runs: Vec<CheckRun>,
    codes: HashMap<String, Code>,
    /// Issue comments by repository and issue number, oldest first.
    comments: BTreeMap<(String, u64), Vec<Comment>>,
    /// Pull request reviews by repository and pull request number, oldest first.
    reviews: BTreeMap<(String, u64), Vec<Review>>,
    /// Labels by repository; GitHub's defaults until something adds one.
    labels: BTreeMap<String, Vec<Label>>,
    next_id: u64,
    secret_counter: u64,
}

struct Inner {
    config: ForgeConfig,
    repositories: Repositories,
    state: Mutex<State>,
    merges: broadcast::Sender<MergeEvent>,
    /// The App's verification keys, parsed once.
    keys: Vec<jsonwebtoken::DecodingKey>,
    /// Where webhooks go and the secret they are signed with, once someone subscribed.
    webhooks: std::sync::RwLock<Option<WebhookTarget>>,
    /// The queue of the background task delivering webhooks, once one started.
    deliveries: Mutex<Option<webhooks::Queue>>,
    /// The API's base URL as clients call it (`http://127.0.0.1:PORT/github`), for the URLs inside webhook
    /// payloads, which no request carries: learnt from the requests served, or set by the sandbox.
    api_url: std::sync::RwLock<Option<String>>,
    /// Told every token the forge issues, once someone asked ([`Forge::on_token_issued`]).
    issued: std::sync::RwLock<Option<TokenSink>>,
}

/// Told each access token the forge issues, with its kind (`installation_token`, `user_token`).
pub type TokenSink = Arc<dyn Fn(&'static str, &str) + Send + Sync>;

/// Where the forge delivers its webhooks, as a GitHub App's webhook URL and secret.
#[derive(Clone)]
pub struct WebhookTarget {
    /// The receiver, e.g. `http://127.0.0.1:8080/api/v1/webhooks/github`.
    pub url: String,
    /// The HMAC-SHA256 secret every delivery's `X-Hub-Signature-256` is computed with.
    pub secret: String,
}

impl std::fmt::Debug for WebhookTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookTarget")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The webhook secret of the demo App (TEST-ONLY, like its private key): `serve --sandbox` configures Tower
/// with it and points the forge's deliveries at Tower.
pub const DEMO_WEBHOOK_SECRET: &str = "tower-sandbox-webhook-secret";

/// A handle on the forge: cheap to clone, shared by its routes, the sandbox and tests.
#[derive(Clone)]
pub struct Forge {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Forge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forge")
            .field("root", &self.inner.repositories.root())
            .field("app_id", &self.inner.config.app_id)
            .finish_non_exhaustive()
    }
}

impl State {
    /// Remembers a token, forgetting expired ones so a long-running forge does not collect them.
    fn add_token(&mut self, token: String, issued: Token) {
        let now = jiff::Timestamp::now();
        self.tokens.retain(|_, t| t.expires_at > now);
        self.codes.retain(|_, c| c.expires_at > now);
        self.tokens.insert(token, issued);
    }

    /// Remembers an OAuth code, forgetting expired ones.
    fn add_code(&mut self, code: String, issued: Code) {
        let now = jiff::Timestamp::now();
        self.codes.retain(|_, c| c.expires_at > now);
        self.codes.insert(code, issued);
    }

    /// Remembers a check run, forgetting the oldest beyond [`CHECK_RUNS_KEPT`].
    fn add_check_run(&mut self, run: CheckRun) {
        self.check_runs.push(run);
        let excess = self.check_runs.len().saturating_sub(CHECK_RUNS_KEPT);
        self.check_runs.drain(..excess);
    }

    /// The labels of `repo`, GitHub's defaults until something was added.
    fn labels_of(&mut self, repo: &str) -> &mut Vec<Label> {
        self.labels
            .entry(repo.to_string())
            .or_insert_with(issues::default_labels)
    }

    /// Open pull requests of `repo` whose head is `sha`: what a check run on it belongs to.
    fn pulls_with_head(&self, repo: &str, sha: &str) -> Vec<Pull> {
        self.pulls
            .get(repo)
            .map(|pulls| {
                pulls
                    .iter()
                    .filter(|p| p.open && p.head_sha == sha)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Remembers a commit status, forgetting the commit's oldest beyond [`STATUSES_PER_COMMIT`].
    fn add_status(&mut self, repo: String, sha: String, status: Status) {
        let statuses = self.statuses.entry((repo, sha)).or_default();
        statuses.push(status);
        let excess = statuses.len().saturating_sub(STATUSES_PER_COMMIT);
        statuses.drain(..excess);
    }
}

impl Forge {
    /// A forge over `repositories`, with the pull requests their history merged listed as closed.
    pub fn new(repositories: Repositories, config: ForgeConfig) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let keys = config
            .app_public_keys
            .iter()
            .map(|pem| jsonwebtoken::DecodingKey::from_rsa_pem(pem.as_bytes()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .context("the App's public keys must be RSA PEM")?;
        let mut state = State {
            next_id: 1_000_000,
            ..State::default()
        };
        let seeded: Vec<Pull> = repositories
            .merged_pulls()
            .iter()
            .map(|merged| Pull {
                number: merged.number,
                title: merged.title.clone(),
                body: merged.body.clone(),
                open: false,
                draft: false,
                head_ref: merged.branch.clone(),
                head_sha: merged.head_sha.clone(),
                base_ref: "main".into(),
                base_sha: merged.base_sha.clone(),
                user: merged.author.clone(),
                created_at: merged.created_at.clone(),
                updated_at: merged.merged_at.clone(),
                closed_at: Some(merged.merged_at.clone()),
                merged_at: Some(merged.merged_at.clone()),
                merge_commit_sha: Some(merged.merge_sha.clone()),
                merged_by: Some(merged.merged_by.clone()),
                labels: Vec::new(),
            })
            .collect();
        state
            .next_number
            .insert(GITOPS_REPOSITORY.into(), seeded.len() as u64 + 1);
        state.pulls.insert(GITOPS_REPOSITORY.into(), seeded);
        let (merges, _) = broadcast::channel(64);
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                repositories,
                state: Mutex::new(state),
                merges,
                keys,
                webhooks: std::sync::RwLock::new(None),
                deliveries: Mutex::new(None),
                api_url: std::sync::RwLock::new(None),
                issued: std::sync::RwLock::new(None),
            }),
        })
    }

    /// The demo App: its id and its TEST-ONLY private key (PEM), for Tower's configuration in the demo.
    pub fn demo_app() -> (u64, String) {
        (DEMO_APP_ID, DEMO_PRIVATE_KEY.into())
    }

    /// Delivers the forge's webhooks (`push`, `pull_request`, `pull_request_review`, `check_run`) to
    /// `target` from now on, signed with its secret; `None` stops delivering.
    ///
    /// Deliveries leave in the order things happened, one at a time, from a background task (started here
    /// on the current Tokio runtime, or on a thread of its own outside one): a request to the forge never
    /// waits for a receiver. A delivery that fails is logged and retried twice, a little later each time.
    pub fn deliver_webhooks_to(&self, target: Option<WebhookTarget>) {
        let delivering = target.is_some();
        *self
            .inner
            .webhooks
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = target;
        if delivering {
            webhooks::ensure_running(self);
        }
    }

    /// Sets the API's base URL as clients reach it (`http://127.0.0.1:PORT/github`), which the URLs
    /// inside webhook payloads start with. Without it the forge uses the base of the last request it
    /// served.
    pub fn set_api_url(&self, url: impl Into<String>) {
        *self
            .inner
            .api_url
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(url.into());
    }

    /// Announces that `reference` (`refs/heads/main`) of `repo` moved from `before` to `after` (40 zeros
    /// for a ref created or deleted), pushed by `pusher`: a `push` webhook, and for a branch that is the
    /// head of open pull requests, their new head (`synchronize`) and a new CI run.
    ///
    /// The forge's own writes call it; whoever commits to a bare repository directly (the simulator's
    /// developers and operators) calls it after moving the ref. It runs git, so call it off the async
    /// runtime's workers.
    pub fn announce_push(
        &self,
        repo: &str,
        reference: &str,
        before: &str,
        after: &str,
        pusher: &str,
    ) {
        self.hook(webhooks::Hook::Push {
            repo: repo.into(),
            reference: reference.into(),
            before: before.into(),
            after: after.into(),
            pusher: pusher.into(),
        });
        if let Some(branch) = reference.strip_prefix("refs/heads/")
            && after != gitdata::ZERO
            && let Err(error) = pulls::head_moved(self, repo, branch, after, pusher)
        {
            tracing::warn!(%repo, %branch, %error, "could not bring pull requests up to date with a push");
        }
    }

    /// Makes `reviewer` review pull request `number` of `repo` at its head, as `POST /pulls/{n}/reviews`
    /// would; returns the review's id. A review of one's own pull request, or one that asks for changes
    /// or comments without a body, is refused as GitHub refuses it.
    pub fn review(
        &self,
        repo: &str,
        number: u64,
        reviewer: &str,
        event: ReviewEvent,
        body: &str,
    ) -> Result<u64> {
        reviews::submit(self, repo, number, reviewer, Some(event), body, None).map(|r| r.id)
    }

    /// Where webhooks are delivered now, if anywhere.
    pub fn webhook_target(&self) -> Option<WebhookTarget> {
        self.inner
            .webhooks
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The configuration the forge runs with.
    pub fn config(&self) -> &ForgeConfig {
        &self.inner.config
    }

    /// The repositories it serves.
    pub fn repositories(&self) -> &Repositories {
        &self.inner.repositories
    }

    /// Merged pull requests, as they happen (through the API, [`Forge::merge`] or the sandbox route).
    pub fn subscribe_merges(&self) -> broadcast::Receiver<MergeEvent> {
        self.inner.merges.subscribe()
    }

    /// Merges pull request `number` of `repo` as `merger` (a demo reviewer), like pressing the button.
    pub async fn merge(&self, repo: &str, number: u64, merger: &str) -> Result<MergeEvent> {
        pulls::merge(self, repo, number, merger, None, None).await
    }

    /// Advances the forge's CI to `now`: each check run it started (in progress from the moment a pull
    /// request's head is pushed) completes 4 s later with its verdict, and 2 s after that the demo
    /// reviewer reviews the pull request.
    pub fn tick(&self, now: jiff::Timestamp) {
        checks::tick(self, now);
    }

    /// Ticks the forge's CI every second with the wall clock, for the running demo.
    pub fn spawn_ticker(&self) -> tokio::task::JoinHandle<()> {
        let forge = self.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(Duration::from_secs(1));
            loop {
                interval.tick().await;
                forge.tick(jiff::Timestamp::now());
            }
        })
    }

    /// Issues a user OAuth token for `login` directly (tests, and the sandbox's own tooling).
    pub fn user_token(&self, login: &str) -> String {
        let token = self.secret("gho_");
        self.state().add_token(
            token.clone(),
            Token {
                caller: Caller::User(login.into()),
                expires_at: jiff::Timestamp::MAX,
            },
        );
        token
    }

    /// Queues `hook` for delivery when someone subscribed to webhooks; nothing otherwise.
    fn hook(&self, hook: webhooks::Hook) {
        webhooks::enqueue(self, hook);
    }

    /// The API base the URLs inside webhook payloads start with.
    fn api_base(&self) -> ApiBase {
        let url = self
            .inner
            .api_url
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "http://localhost/github".into());
        let origin = url
            .find("://")
            .and_then(|scheme| {
                url[scheme + 3..]
                    .find('/')
                    .map(|path| &url[..scheme + 3 + path])
            })
            .unwrap_or(&url)
            .to_string();
        ApiBase {
            url,
            request: String::new(),
            origin,
        }
    }

    /// Remembers the base URL a request reached the API at, unless the sandbox set one.
    fn learn_api_url(&self, url: &str) {
        let known = self
            .inner
            .api_url
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some();
        if !known {
            self.set_api_url(url);
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A fresh id for statuses and check runs.
    fn next_id(&self) -> u64 {
        let mut state = self.state();
        state.next_id += 1;
        state.next_id
    }

    /// A random-looking secret with GitHub's prefix for its kind (`ghs_`, `gho_`).
    fn secret(&self, prefix: &str) -> String {
        use std::hash::{BuildHasher, Hasher};
        let counter = {
            let mut state = self.state();
            state.secret_counter += 1;
            state.secret_counter
        };
        // RandomState is seeded from the OS per instance: unguessable enough for a sandbox's tokens.
        let mut text = String::from(prefix);
        for round in 0..3u64 {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u64(counter);
            hasher.write_u64(round);
            text.push_str(&format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff));
        }
        self.note_issued(prefix, &text);
        text
    }

    /// Has `sink` told every access token the forge issues from now on (installation and user tokens;
    /// not OAuth codes, which travel through the browser by design), so a test harness can check that
    /// none of them leaks into a log or a response.
    pub fn on_token_issued(&self, sink: TokenSink) {
        *self
            .inner
            .issued
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sink);
    }

    fn note_issued(&self, prefix: &str, text: &str) {
        let kind = match prefix {
            "ghs_" => "installation_token",
            "gho_" => "user_token",
            _ => return,
        };
        let sink = self
            .inner
            .issued
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(sink) = sink {
            sink(kind, text);
        }
    }

    /// The bare repository `owner/name`, or GitHub's 404.
    fn repo(&self, owner: &str, name: &str) -> Result<Git> {
        let path = self.inner.repositories.path(name);
        if !owner.eq_ignore_ascii_case(ORGANISATION)
            || name.contains('/')
            || name.starts_with('.')
            || !path.is_dir()
        {
            return Err(GitHubError::not_found());
        }
        Ok(Git::at(path))
    }

    /// Names of the organisation's repositories, sorted.
    fn repository_names(&self) -> Vec<String> {
        let dir = self.inner.repositories.root().join(ORGANISATION);
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok())
                    .filter_map(|entry| {
                        entry
                            .file_name()
                            .to_string_lossy()
                            .strip_suffix(".git")
                            .map(String::from)
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// Runs blocking git work off the async runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(GitHubError::internal(&error)))
}

/// The time now as GitHub writes it.
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The base URL of the API as the client called it (`http://127.0.0.1:PORT/github`), for `url` fields and
/// `Link` headers; it follows wherever the router is mounted.
#[derive(Debug, Clone)]
pub struct ApiBase {
    /// e.g. `http://127.0.0.1:8080/github`.
    pub url: String,
    /// The path and query the client requested, including the mount prefix (`/github/orgs/acme/repos?…`).
    pub request: String,
    /// Scheme and host the client called (`http://127.0.0.1:8080`), which `Link` targets start with.
    pub origin: String,
}

impl<S: Send + Sync> FromRequestParts<S> for ApiBase {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _: &S,
    ) -> std::result::Result<Self, Self::Rejection> {
        let host = parts
            .headers
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost")
            .to_string();
        let inner = parts.uri.path().to_string();
        let original = parts
            .extensions
            .get::<OriginalUri>()
            .map(|o| o.0.clone())
            .unwrap_or_else(|| parts.uri.clone());
        let prefix = original
            .path()
            .strip_suffix(inner.as_str())
            .unwrap_or("")
            .to_string();
        Ok(Self {
            url: format!("http://{host}{prefix}"),
            origin: format!("http://{host}"),
            request: original
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_else(|| "/".into()),
        })
    }
}

/// `per_page` and `page` query parameters, with GitHub's defaults (30, 1) and cap (100).
#[derive(Debug, Clone, Copy, serde::Deserialize)]
struct Paging {
    per_page: Option<usize>,
    page: Option<usize>,
}

impl Paging {
    fn per_page(&self) -> usize {
        self.per_page.unwrap_or(30).clamp(1, 100)
    }
    fn page(&self) -> usize {
        self.page.unwrap_or(1).max(1)
    }
    fn skip(&self) -> usize {
        (self.page() - 1) * self.per_page()
    }

    /// GitHub's `Link` header for a list of `total` items, or `None` when it fits one page.
    ///
    /// The targets are absolute, as GitHub writes them, built from the request's `Host` and the forge's
    /// mount path (`<http://127.0.0.1:8080/github/orgs/acme/repos?per_page=5&page=2>; rel="next"`).
    /// octocrab sends its credentials only to relative URIs or `api.github.com`, so a client following one
    /// pages anonymously: the repositories are public, and their reads need no token.
    fn link(&self, base: &ApiBase, total: usize) -> Option<String> {
        let last = total.div_ceil(self.per_page()).max(1);
        if last <= 1 {
            return None;
        }
        let url = |page: usize| {
            let (path, query) = base
                .request
                .split_once('?')
                .unwrap_or((base.request.as_str(), ""));
            let mut pairs: Vec<(String, String)> =
                serde_urlencoded::from_str(query).unwrap_or_default();
            pairs.retain(|(k, _)| k != "page" && k != "per_page");
            pairs.push(("per_page".into(), self.per_page().to_string()));
            pairs.push(("page".into(), page.to_string()));
            let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
            format!("<{}{path}?{query}>", base.origin)
        };
        let page = self.page();
        let mut links = Vec::new();
        if page > 1 {
            links.push(format!("{}; rel=\"prev\"", url(page - 1)));
        }
        if page < last {
            links.push(format!("{}; rel=\"next\"", url(page + 1)));
            links.push(format!("{}; rel=\"last\"", url(last)));
        }
        if page > 1 {
            links.push(format!("{}; rel=\"first\"", url(1)));
        }
        Some(links.join(", "))
    }
}

/// A JSON list response with GitHub's `Link` header when there is more than one page.
fn paged(items: Vec<serde_json::Value>, link: Option<String>) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut response = axum::Json(items).into_response();
    if let Some(link) = link
        && let Ok(value) = axum::http::HeaderValue::from_str(&link)
    {
        response
            .headers_mut()
            .insert(axum::http::header::LINK, value);
    }
    response
}

/// An HTTP method the forge answers, for its route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Verb {
    fn filter(self) -> MethodFilter {
        match self {
            Self::Get => MethodFilter::GET,
            Self::Post => MethodFilter::POST,
            Self::Put => MethodFilter::PUT,
            Self::Patch => MethodFilter::PATCH,
            Self::Delete => MethodFilter::DELETE,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }
}

/// One route of the REST API: a method, an axum path and what answers it.
struct Route {
    verb: Verb,
    path: &'static str,
    handler: MethodRouter<Forge>,
}

/// The route answering `verb` at `path` with `handler`.
fn route<H, T>(verb: Verb, path: &'static str, handler: H) -> Route
where
    H: Handler<T, Forge>,
    T: 'static,
{
    Route {
        verb,
        path,
        handler: on(verb.filter(), handler),
    }
}

/// The REST API's routes, one per method and path: [`router`] is built from this table, and [`routes`]
/// lists it, so the contract tests know every route they must cover.
fn table() -> Vec<Route> {
    vec![
        route(Verb::Get, "/app", auth::get_app),
        route(Verb::Get, "/app/installations", auth::list_installations),
        route(
            Verb::Post,
            "/app/installations/{id}/access_tokens",
            auth::create_access_token,
        ),
        route(
            Verb::Get,
            "/orgs/{org}/installation",
            auth::org_installation,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/installation",
            auth::repo_installation,
        ),
        route(
            Verb::Get,
            "/installation/repositories",
            repos::installation_repositories,
        ),
        route(Verb::Get, "/orgs/{org}", repos::get_org),
        route(Verb::Get, "/orgs/{org}/repos", repos::list_org_repos),
        route(Verb::Get, "/repos/{owner}/{repo}", repos::get_repo),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/contents",
            repos::get_root_contents,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/contents/{*path}",
            repos::get_contents,
        ),
        route(
            Verb::Put,
            "/repos/{owner}/{repo}/contents/{*path}",
            contents::put_contents,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/commits",
            repos::list_commits,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/commits/{reference}",
            repos::get_commit,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/compare/{range}",
            repos::compare,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/branches/{branch}",
            repos::get_branch,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/refs",
            gitdata::list_refs,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/git/refs",
            gitdata::create_ref,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/refs/{*reference}",
            gitdata::get_ref,
        ),
        route(
            Verb::Patch,
            "/repos/{owner}/{repo}/git/refs/{*reference}",
            gitdata::update_ref,
        ),
        route(
            Verb::Delete,
            "/repos/{owner}/{repo}/git/refs/{*reference}",
            gitdata::delete_ref,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/ref/{*reference}",
            gitdata::get_ref,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/matching-refs/{*prefix}",
            gitdata::matching_refs,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/git/blobs",
            gitdata::create_blob,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/blobs/{sha}",
            gitdata::get_blob,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/git/trees",
            gitdata::create_tree,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/trees/{sha}",
            gitdata::get_tree,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/git/commits",
            gitdata::create_commit,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/git/commits/{sha}",
            gitdata::get_git_commit,
        ),
        route(Verb::Get, "/repos/{owner}/{repo}/pulls", pulls::list),
        route(Verb::Post, "/repos/{owner}/{repo}/pulls", pulls::create),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/pulls/{number}",
            pulls::get,
        ),
        route(
            Verb::Patch,
            "/repos/{owner}/{repo}/pulls/{number}",
            pulls::update,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/pulls/{number}/merge",
            pulls::is_merged,
        ),
        route(
            Verb::Put,
            "/repos/{owner}/{repo}/pulls/{number}/merge",
            pulls::merge_route,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/pulls/{number}/files",
            pulls::files,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/pulls/{number}/commits",
            pulls::commits,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/pulls/{number}/reviews",
            reviews::list,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/pulls/{number}/reviews",
            reviews::create,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/pulls/{number}/reviews/{id}",
            reviews::get,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/pulls/{number}/reviews/{id}/events",
            reviews::submit_pending,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/issues/{number}/comments",
            issues::list_comments,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/issues/{number}/comments",
            issues::create_comment,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/issues/{number}/labels",
            issues::list_issue_labels,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/issues/{number}/labels",
            issues::add_issue_labels,
        ),
        route(
            Verb::Put,
            "/repos/{owner}/{repo}/issues/{number}/labels",
            issues::set_issue_labels,
        ),
        route(
            Verb::Delete,
            "/repos/{owner}/{repo}/issues/{number}/labels",
            issues::clear_issue_labels,
        ),
        route(
            Verb::Delete,
            "/repos/{owner}/{repo}/issues/{number}/labels/{name}",
            issues::remove_issue_label,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/labels",
            issues::list_labels,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/labels",
            issues::create_label,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/labels/{name}",
            issues::get_label,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/statuses/{reference}",
            checks::list_statuses,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/statuses/{reference}",
            checks::create_status,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/commits/{reference}/statuses",
            checks::list_statuses,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/commits/{reference}/status",
            checks::combined_status,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/commits/{reference}/check-runs",
            checks::list_check_runs,
        ),
        route(
            Verb::Post,
            "/repos/{owner}/{repo}/check-runs",
            checks::create_check_run,
        ),
        route(
            Verb::Get,
            "/repos/{owner}/{repo}/check-runs/{id}",
            checks::get_check_run,
        ),
        route(
            Verb::Patch,
            "/repos/{owner}/{repo}/check-runs/{id}",
            checks::update_check_run,
        ),
        route(Verb::Get, "/login/oauth/authorize", oauth::authorize),
        route(Verb::Post, "/login/oauth/access_token", oauth::access_token),
        route(Verb::Get, "/user", oauth::user),
        route(Verb::Get, "/user/teams", oauth::user_teams),
        route(Verb::Get, "/user/orgs", oauth::user_orgs),
        route(Verb::Get, "/users/{login}", oauth::get_user),
    ]
}

/// Every route of the REST API [`router`] serves, as (method, axum path): `("GET", "/repos/{owner}/{repo}")`.
pub fn routes() -> Vec<(&'static str, &'static str)> {
    table()
        .iter()
        .map(|route| (route.verb.name(), route.path))
        .collect()
}

/// The GitHub REST API of the forge, to be mounted at `/github`.
pub fn router(forge: Forge) -> Router {
    table()
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.path, route.handler)
        })
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            forge.clone(),
            learn_api_url,
        ))
        .with_state(forge)
}

async fn not_found() -> GitHubError {
    GitHubError::not_found()
}

/// Remembers where clients reach the API, for the URLs of webhook payloads.
async fn learn_api_url(
    axum::extract::State(forge): axum::extract::State<Forge>,
    base: ApiBase,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    forge.learn_api_url(&base.url);
    next.run(request).await
}

/// The sandbox's own controls, mounted at the sandbox's root:
///
/// - `POST /sandbox/pulls/{n}/merge` merges a pull request of `application-repositories` as a demo
///   reviewer (`?merger=<login>`, `root` by default), and `POST /sandbox/repos/{repo}/pulls/{n}/merge` does
///   the same in any repository;
/// - `POST /sandbox/pulls/{n}/review` with `{"event": "APPROVE" | "REQUEST_CHANGES" | "COMMENT", "body":
///   "…"}` makes [`DEMO_REVIEWER`] review a pull request of `application-repositories` now (`"reviewer"`
///   names someone else), answering 201 with the review as `GET /pulls/{n}/reviews/{id}` shows it;
///   `POST /sandbox/repos/{repo}/pulls/{n}/review` does the same in any repository.
pub fn sandbox_routes(forge: Forge) -> Router {
    Router::new()
        .route("/sandbox/pulls/{number}/merge", post(pulls::sandbox_merge))
        .route(
            "/sandbox/repos/{repo}/pulls/{number}/merge",
            post(pulls::sandbox_merge_in),
        )
        .route(
            "/sandbox/pulls/{number}/review",
            post(reviews::sandbox_review),
        )
        .route(
            "/sandbox/repos/{repo}/pulls/{number}/review",
            post(reviews::sandbox_review_in),
        )
        .with_state(forge)
}
