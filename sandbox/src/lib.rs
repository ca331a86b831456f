//! The offline platform Tower's demo and tests run against: faithful on the wire, so Tower talks to it with
//! the same clients it uses in production.

/// A fake Kubernetes API server that real kube-rs clients and kubectl talk to.
pub mod apiserver;
/// A fake Argo CD API server over the management cluster's Applications.
pub mod argocd;
pub mod fixtures;
/// The GitHub-compatible forge serving the git repositories: App auth, contents, git data, pulls, checks, OAuth.
pub mod forge;
/// Real git repositories built from the plan: the service repositories and `application-repositories`.
pub mod git;
/// Metrics history and live series: a real Prometheus when installed, else a built-in PromQL subset.
pub mod metrics;
pub mod platform;
pub mod world;

use std::net::SocketAddr;

use anyhow::Context as _;
use apiserver::{ClusterStore, Clusters, ResourceType};

/// The clusters of the platform: the management cluster and one workload cluster per environment.
pub const CLUSTERS: [&str; 3] = ["management", "dev", "prod"];

/// A running sandbox: its clusters' Kubernetes APIs on one loopback listener.
pub struct Sandbox {
    clusters: Clusters,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Sandbox {
    /// Seeds the fixtures and starts serving on `listen` (port 0 picks a free port).
    pub async fn start(listen: SocketAddr) -> anyhow::Result<Self> {
        let clusters = Clusters::new(&CLUSTERS, platform_types());
        fixtures::seed(&clusters, &world::Histories::synthetic())
            .context("seeding the fixtures")?;

        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding the sandbox to {listen}"))?;
        let addr = listener.local_addr().context("sandbox listener address")?;
        let router = clusters.router();
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "sandbox server stopped");
            }
        });
        Ok(Self {
            clusters,
            addr,
            server,
        })
    }

    /// The sandbox's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The Kubernetes API base URL of `cluster` (`management`, `dev` or `prod`).
    pub fn cluster_url(&self, cluster: &str) -> String {
        format!("http://{}/clusters/{cluster}", self.addr)
    }

    /// Direct access to a cluster's objects, for the simulator and tests.
    pub fn cluster(&self, name: &str) -> Option<ClusterStore> {
        self.clusters.cluster(name)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The platform's own kinds, known to every cluster besides the core ones.
fn platform_types() -> Vec<ResourceType> {
    fixtures::resource_types()
}
