//! `tower serve`: wire the upstreams, the fleet model and the router together and listen.

use std::collections::BTreeMap;
use std::future::IntoFuture as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use axum_extra::extract::cookie::Key;
use kube::Client;
use secrecy::ExposeSecret as _;
use shared::auth::Policy;

mod stalled;

pub use stalled::STALLED_WRITE_LIMIT;

use crate::auth::{AuthState, RevokedSessions};
use crate::config::{ClusterConfig, TowerConfig};
use crate::delivery::builds::Builds;
use crate::delivery::tracking::{self, PullTracker};
use crate::delivery::{Delivery, DeliveryConfig};
use crate::fleet::catalog::{self, Catalog, Refresh};
use crate::fleet::code::CodeCache;
use crate::fleet::{FleetModel, watch};
use crate::pipelines::Pipelines;
use crate::routes::serving;
use crate::routes::spa::Spa;
use crate::shutdown::{GRACE, Shutdown, WRITES_GET};
use crate::state::{AppState, write_limiter};
use crate::telemetry::Telemetry;
use crate::upstream;
use crate::upstream::argocd::ArgoCd;
use crate::upstream::github::GithubApp;
use crate::upstream::github_oauth::OAuthClient;

/// Options of `tower serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The configuration file (see `server::config::TowerConfig`); not needed with `--sandbox`.
    #[arg(long, env = "TOWER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on (overrides the file's `listen`).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Folder with the built SPA (`cargo xtask dist` writes `dist/`), served from disk. Without it: the SPA
    /// compiled into this binary (builds with the `embed-spa` feature, as the container image's), else `dist`.
    #[arg(long, env = "TOWER_ASSETS")]
    pub assets: Option<PathBuf>,
    /// Run against the embedded sandbox platform instead of real clusters (in builds with the `sandbox`
    /// feature, the default).
    #[arg(long)]
    pub sandbox: bool,
    /// How the embedded sandbox runs.
    #[cfg(feature = "sandbox")]
    #[command(flatten)]
    pub embedded: crate::sandbox_cli::EmbeddedArgs,
}

/// What a `tower` built without the `sandbox` feature answers when asked for the sandbox.
#[cfg(not(feature = "sandbox"))]
pub const NO_SANDBOX: &str = "this tower was built without the sandbox (cargo feature `sandbox`, on by \
    default): give --config FILE to run against real clusters, or use a tower built with default features";

/// The embedded platform, kept alive while Tower serves; nothing in a build without it.
#[cfg(feature = "sandbox")]
type Embedded = sandbox::Sandbox;
#[cfg(not(feature = "sandbox"))]
type Embedded = ();

/// Starts the embedded sandbox for `--sandbox`, with a configuration pointing at it.
#[cfg(feature = "sandbox")]
async fn embedded_sandbox(args: &ServeArgs) -> anyhow::Result<(Embedded, TowerConfig)> {
    crate::sandbox_cli::embedded(&args.embedded, args.listen).await
}

/// Refuses `--sandbox`: this build has no emulator.
#[cfg(not(feature = "sandbox"))]
async fn embedded_sandbox(_args: &ServeArgs) -> anyhow::Result<(Embedded, TowerConfig)> {
    anyhow::bail!(NO_SANDBOX)
}

/// Points the embedded sandbox's webhooks, and its Prometheus' scrapes, at Tower once Tower listens at
/// `listen`.
#[cfg(feature = "sandbox")]
fn deliver_webhooks(sandbox: &Option<Embedded>, config: &TowerConfig, listen: SocketAddr) {
    if let Some(sandbox) = sandbox {
        crate::sandbox_cli::deliver_webhooks(sandbox, config, listen);
        crate::sandbox_cli::scrape_tower(sandbox, listen);
    }
}

/// A build without the sandbox has none to point.
#[cfg(not(feature = "sandbox"))]
fn deliver_webhooks(_sandbox: &Option<Embedded>, _config: &TowerConfig, _listen: SocketAddr) {}

/// Runs the server until `shutdown` (SIGTERM or SIGINT); the embedded sandbox, its children and its folders go
/// with it.
pub async fn serve(args: ServeArgs, shutdown: Shutdown) -> anyhow::Result<()> {
    // Kept alive for as long as the server runs: dropping it would stop the embedded platform.
    let mut sandbox = None;
    let mut config = if args.sandbox {
        let Some(started) = shutdown.unless_requested(embedded_sandbox(&args)).await else {
            return Ok(());
        };
        let (embedded, config) = started?;
        sandbox = Some(embedded);
        config
    } else {
        let path = args
            .config
            .as_deref()
            .context("give --config FILE, or --sandbox to run on the embedded sandbox")?;
        crate::config::load(path, |key| std::env::var(key).ok())?
    };
    if let Some(listen) = args.listen {
        config.listen = listen.to_string();
        if args.sandbox {
            config.public_url = format!("http://{listen}");
        }
    }
    let webhook_config = config.clone();
    let assets = args
        .assets
        .clone()
        .map_or_else(Spa::default_for_this_build, Spa::Folder);
    run(config, assets, args.sandbox, shutdown, |listen| {
        deliver_webhooks(&sandbox, &webhook_config, listen)
    })
    .await
}

/// Serves `config` until `shutdown`. On a stop, `/readyz` answers 503 at once, new writes are refused, the
/// event streams close with a reconnect hint; [`crate::shutdown::UNREADY_FOR`] later the listener stops, requests in flight get
/// [`GRACE`] to finish, and writes in flight (which run to completion on their own) up to [`WRITES_GET`] more.
/// `listening` is told the address bound (with port 0, the only way to learn the port).
pub async fn run(
    config: TowerConfig,
    assets: Spa,
    sandbox: bool,
    shutdown: Shutdown,
    listening: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    let listen: SocketAddr = config.listen.parse().context("listen")?;
    let Some(built) = shutdown
        .unless_requested(build(&config, assets, sandbox))
        .await
    else {
        return Ok(());
    };
    let (state, sources) = built?;
    crate::routes::spa::warn_if_missing(&state.assets);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    // The bound address, not the configured one: with port 0 this is how a caller learns the port.
    let listen = listener.local_addr().context("listener address")?;
    tracing::info!(%listen, public_url = %config.public_url, "Tower is listening");
    listening(listen);
    serve_on(listener, state, Some(sources), shutdown).await
}

/// Serves `state` on `listener` until `shutdown`, stopping as [`run`] says; `watches` adds every watch's
/// state to the metrics. Tests call it with a state of their own.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: AppState,
    watches: Option<watch::Sources>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let telemetry = Telemetry::new(&state, watches);
    let app = serving(state, shutdown.clone(), telemetry);
    let stop = shutdown.clone();
    let listener = stalled::ClosingStalled::new(listener, STALLED_WRITE_LIMIT);
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.stop_listening().await })
        .into_future();
    let served = tokio::select! {
        served = server => served.context("serving HTTP"),
        () = shutdown.grace_over() => {
            tracing::warn!(grace = ?GRACE, "requests still open after the grace period; stopping anyway");
            Ok(())
        }
    };
    // A write holds the stop until it has finished, so no pull request is left half-written.
    if tokio::time::timeout(WRITES_GET, shutdown.writes_done())
        .await
        .is_err()
    {
        tracing::error!(limit = ?WRITES_GET, "a write is still in flight; stopping anyway");
    }
    served
}

/// Connects the upstreams named in `config` and starts the watch caches.
pub async fn build_state(
    config: &TowerConfig,
    assets: impl Into<Spa>,
    sandbox: bool,
) -> anyhow::Result<AppState> {
    Ok(build(config, assets.into(), sandbox).await?.0)
}

/// As [`build_state`], with the watch caches' sources for Tower's own metrics.
async fn build(
    config: &TowerConfig,
    assets: Spa,
    sandbox: bool,
) -> anyhow::Result<(AppState, watch::Sources)> {
    let management = config
        .management()
        .context("clusters: no management cluster")?;
    let management = cluster_client(management).await?;
    let mut workloads = Vec::new();
    for (environment, cluster) in config.workload_clusters() {
        workloads.push((
            environment.to_string(),
            cluster.name.clone(),
            cluster_client(cluster).await?,
        ));
    }
    // Each environment's streams in Loki carry its clusters' configured names.
    let log_history = match &config.loki {
        Some(loki) => Some(crate::logs::LogHistory::new(
            loki,
            workloads.iter().fold(
                BTreeMap::<String, Vec<String>>::new(),
                |mut clusters, (environment, cluster, _)| {
                    clusters
                        .entry(environment.clone())
                        .or_default()
                        .push(cluster.clone());
                    clusters
                },
            ),
        )?),
        None => None,
    };
    let workload_clients = workloads
        .iter()
        .map(|(_, cluster, client)| (cluster.clone(), client.clone()))
        .collect();
    // CI's cluster is one of those above: its client is shared, and its watches report to its state.
    let ci_cluster = config
        .pipelines_cluster()
        .context("pipelines.cluster: no such cluster")?
        .name
        .clone();
    let ci_on_a_workload_cluster = workloads
        .iter()
        .any(|(_, cluster, _)| *cluster == ci_cluster);
    let ci_client = if config.pipelines.cluster.is_none() {
        management.clone()
    } else {
        workloads
            .iter()
            .find(|(_, cluster, _)| *cluster == ci_cluster)
            .map(|(_, _, client)| client.clone())
            .unwrap_or_else(|| management.clone())
    };
    let (stores, sources, dirty_tx, dirty_rx) = watch::start(watch::Clusters {
        management,
        workloads,
        claim_kinds: config.crossplane_claims.iter().map(Into::into).collect(),
        composed_kinds: config.crossplane_composed.iter().map(Into::into).collect(),
        component_label: config.labels.component.clone(),
    });
    let github_app = match &config.github {
        Some(github) => Some(GithubApp::new(
            &github.api_url,
            github.app_id,
            github.app_private_key.expose_secret(),
            github.installation_id,
        )?),
        None => None,
    };
    let code = github_app.clone().map(CodeCache::new);
    // With webhooks, GitHub says what changed and polls are only a slow backup.
    let webhooks = config
        .github
        .as_ref()
        .is_some_and(|github| github.webhook_secret.is_some());
    let catalog = Catalog::default();
    if let Some(github) = &github_app {
        catalog.spawn_refresh(
            github.clone(),
            config.organisation.clone(),
            if webhooks {
                Refresh::OnPush
            } else {
                Refresh::Every(catalog::RESCAN_EVERY)
            },
            dirty_tx.clone(),
        );
    }
    let (fleet_pictured, pipelines_go) = tokio::sync::oneshot::channel::<()>();
    // The first picture waits for each workload cluster's watches to settle: runs on one of those must
    // not wait for that picture in turn, or it would only come after the settling times out.
    let runs_wait_for_the_picture = !ci_on_a_workload_cluster;
    let pipelines = Pipelines::start(
        ci_client,
        config.pipelines.clone(),
        config.labels.component.clone(),
        sources.handle(&ci_cluster),
        async move {
            if runs_wait_for_the_picture {
                let _ = pipelines_go.await;
            }
        },
    );
    let watches = sources.clone();
    let fleet = FleetModel::start(
        stores,
        config.labels.clone(),
        sources,
        code,
        catalog.clone(),
        Some(pipelines.clone()),
        // Argo CD's UI is served where its API is; the first instance is the one running on management.
        config.argocd.first().map(|instance| instance.url.clone()),
        dirty_tx,
        dirty_rx,
    );
    {
        // The runs list once the fleet's first picture is complete (see `Pipelines::start`), or after a
        // minute: a fleet whose management cluster does not answer must not leave the runs unlisted.
        let fleet = fleet.clone();
        tokio::spawn(async move {
            fleet.wait_until_ready(Duration::from_secs(60)).await;
            let _ = fleet_pictured.send(());
        });
    }

    // Delivery shares the App client with the reads above, so one installation token serves both.
    let delivery = match (&github_app, &config.github) {
        (Some(app), Some(github)) => Some(Delivery::new(
            app.clone(),
            Builds::new(pipelines.clone()),
            DeliveryConfig {
                organisation: config.organisation.clone(),
                repository: github.gitops_repository.clone(),
                public_url: config.public_url.clone(),
                component_label: config.labels.component.clone(),
                scaffolds: config.scaffolds.clone(),
                webhook_secret: github.webhook_secret.clone(),
            },
        )),
        _ => None,
    };

    if let (Some(delivery), Some(github)) = (&delivery, &config.github) {
        let poll = if webhooks {
            tracking::BACKUP_POLL
        } else {
            Duration::from_secs(github.merged_poll_seconds)
        };
        delivery.follow_catalog(catalog);
        if webhooks {
            delivery.releases().trust_head_for(tracking::BACKUP_POLL);
        }
        PullTracker::spawn(delivery, fleet.clone(), poll);
        crate::delivery::merges::spawn(
            delivery.github().clone(),
            delivery.repository(),
            fleet.clone(),
            poll,
            delivery.merges_wake(),
        );
    }

    // One client per instance, shared by the clusters it deploys to.
    let mut instances = BTreeMap::new();
    for instance in &config.argocd {
        instances.insert(
            instance.name.as_str(),
            ArgoCd::new(&instance.url, instance.token.clone())?,
        );
    }
    let argocd = config
        .workload_clusters()
        .filter_map(|(_, cluster)| {
            let instance = config.argocd_for(&cluster.name)?;
            Some((
                cluster.name.clone(),
                instances.get(instance.name.as_str())?.clone(),
            ))
        })
        .collect();
    let github = match &config.github {
        Some(github) => Some(OAuthClient::new(
            github.oauth_authorize_url.clone(),
            github.oauth_token_url.clone(),
            github.api_url.clone(),
            github.client_id.clone(),
            github.client_secret.clone(),
            config.organisation.clone(),
        )?),
        None => None,
    };
    let auth = AuthState {
        key: session_key()?,
        policy: config
            .auth
            .guest_allowlist
            .clone()
            .map(|guest_allowlist| Policy { guest_allowlist })
            .unwrap_or_default(),
        admins: config.auth.admins.iter().cloned().collect(),
        session_ttl: Duration::from_secs(config.auth.session_hours * 3600),
        revoked: std::sync::Arc::new(revoked_sessions(
            config.auth.revoked_sessions_file.as_deref(),
        )?),
        secure_cookies: config.public_url.starts_with("https://"),
        public_origin: config.public_url.trim_end_matches('/').to_string(),
        github,
        sandbox,
    };
    let metrics = config
        .mimir
        .as_ref()
        .map(crate::metrics::Metrics::new)
        .transpose()?;
    let slos = match &config.mimir {
        Some(mimir) => Some(crate::slo::Slos::spawn(
            fleet.clone(),
            crate::upstream::mimir::Mimir::new(mimir)?,
        )),
        None => None,
    };
    let state = AppState {
        metrics,
        slos,
        fleet,
        assets,
        auth,
        write_limiter: write_limiter(),
        argocd,
        workload_clients,
        log_history,
        delivery,
        pipelines,
        platform_settings: std::sync::Arc::new(crate::config_view::PlatformSettings::from_config(
            config,
        )),
    };
    Ok((state, watches))
}

/// A Kubernetes client for one configured cluster.
async fn cluster_client(cluster: &ClusterConfig) -> anyhow::Result<Client> {
    if let Some(url) = &cluster.url {
        return upstream::kube::client_for_url(
            url,
            cluster.token.clone(),
            cluster.certificate_authority.clone(),
        );
    }
    if let Some(context) = &cluster.context {
        return upstream::kube::client_for_context(context).await;
    }
    upstream::kube::client_from_environment().await
}

/// The key sessions are encrypted with: from `TOWER_SESSION_SECRET` (at least 64 bytes) so sessions survive a
/// restart and work across replicas, else a random one (sessions then end with the process).
/// The list of signed-out sessions: in `file` when configured, else in memory.
fn revoked_sessions(file: Option<&std::path::Path>) -> anyhow::Result<RevokedSessions> {
    match file {
        Some(path) => Ok(RevokedSessions::open(path, crate::auth::unix_now())?),
        None => {
            if std::env::var_os("TOWER_SESSION_SECRET").is_some() {
                tracing::warn!(
                    "auth.revoked_sessions_file is not set: a signed-out session's cookie is refused only until Tower restarts"
                );
            }
            Ok(RevokedSessions::in_memory())
        }
    }
}

fn session_key() -> anyhow::Result<Key> {
    match std::env::var("TOWER_SESSION_SECRET") {
        Ok(secret) => Key::try_from(secret.as_bytes())
            .map_err(|_| anyhow::anyhow!("TOWER_SESSION_SECRET must be at least 64 bytes")),
        Err(_) => {
            tracing::warn!("TOWER_SESSION_SECRET is not set: sessions end when Tower restarts");
            Ok(Key::generate())
        }
    }
}
