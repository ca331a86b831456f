//! `tower serve`: wire the upstreams, the fleet model and the router together and listen.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use kube::Client;

use crate::fleet::FleetModel;
use crate::routes::router;
use crate::state::AppState;
use crate::upstream;

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

    let state = AppState {
        fleet,
        assets: args.assets.clone(),
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
