//! `tower serve`: wire the upstreams, the fleet model and the router together and listen.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use kube::Client;

use crate::auth::AuthState;
use crate::fleet::FleetModel;
use crate::routes::router;
use crate::state::{AppState, write_limiter};
use crate::upstream;
use axum_extra::extract::cookie::Key;
use shared::auth::Policy;

/// Options of `tower serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "TOWER_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Folder with the built SPA (`cargo xtask dist` writes `dist/`).
    #[arg(long, env = "TOWER_ASSETS", default_value = "dist")]
    pub assets: PathBuf,
    /// Run against the embedded sandbox platform instead of real clusters.
    #[arg(long)]
    pub sandbox: bool,
    /// Where the embedded sandbox's APIs listen (port 0 picks a free one).
    #[arg(long, env = "TOWER_SANDBOX_LISTEN", default_value = "127.0.0.1:0")]
    pub sandbox_listen: SocketAddr,
    /// The management cluster's API server URL; without it, in-cluster config or the kubeconfig is used.
    #[arg(long, env = "TOWER_MANAGEMENT_URL")]
    pub management_url: Option<String>,
}

/// Runs the server until Ctrl-C.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Kept alive for as long as the server runs: dropping it would stop the embedded platform.
    let mut _sandbox = None;
    let management: Client = if args.sandbox {
        let sandbox = sandbox::Sandbox::start(args.sandbox_listen)
            .await
            .context("starting the embedded sandbox")?;
        tracing::info!(url = %sandbox.url(), "sandbox platform is up");
        let client = upstream::kube::client_for_url(&sandbox.cluster_url("management"))?;
        _sandbox = Some(sandbox);
        client
    } else if let Some(url) = &args.management_url {
        upstream::kube::client_for_url(url)?
    } else {
        upstream::kube::client_from_environment().await?
    };

    let (components, watch) = upstream::kube::watch_components(management);
    let fleet = FleetModel::new(components);
    tokio::spawn(fleet.clone().follow(watch));

    let auth = AuthState {
        key: session_key()?,
        policy: Policy::default(),
        admins: ["root".to_string()].into(),
        session_ttl: std::time::Duration::from_secs(12 * 3600),
        secure_cookies: false,
        public_origin: format!("http://{}", args.listen),
        github: None,
        sandbox: args.sandbox,
    };
    let state = AppState {
        fleet,
        assets: args.assets.clone(),
        auth,
        write_limiter: write_limiter(),
    };
    if !args.assets.join("index.html").exists() {
        tracing::warn!(assets = %args.assets.display(), "no index.html here: run `cargo xtask dist` to build the SPA");
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    tracing::info!(url = %format!("http://{}", args.listen), "Tower is listening");
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("serving HTTP")
}

/// The key sessions are encrypted with: from `TOWER_SESSION_SECRET` (at least 64 bytes) so sessions survive a
/// restart and work across replicas, else a random one (sessions then end with the process).
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
