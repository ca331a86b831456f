//! Kubernetes: clients per cluster and the watch streams that feed the fleet model.

use anyhow::Context as _;
use kube::Client;
use secrecy::SecretString;

/// A client for the cluster whose API server is at `url` (which may carry a path prefix, as the sandbox's do),
/// authenticating with `token` when given, trusting the PEM certificate authority at `certificate_authority`
/// when given (besides the system's roots otherwise). kube-rs rereads that file now and then, so a rotated CA
/// is picked up without a restart.
pub fn client_for_url(
    url: &str,
    token: Option<SecretString>,
    certificate_authority: Option<std::path::PathBuf>,
) -> anyhow::Result<Client> {
    let uri: http::Uri = url
        .parse()
        .with_context(|| format!("cluster URL {url:?}"))?;
    let mut config = kube::Config::new(uri);
    config.auth_info.token = token;
    config.root_cert_file = certificate_authority;
    Client::try_from(config).context("building the Kubernetes client")
}

/// A client for a kubeconfig context.
pub async fn client_for_context(context: &str) -> anyhow::Result<Client> {
    let options = kube::config::KubeConfigOptions {
        context: Some(context.to_string()),
        ..Default::default()
    };
    let config = kube::Config::from_kubeconfig(&options)
        .await
        .with_context(|| format!("kubeconfig context {context:?}"))?;
    Client::try_from(config).context("building the Kubernetes client")
}

/// A client from the environment: in-cluster service account, else the current kubeconfig context.
pub async fn client_from_environment() -> anyhow::Result<Client> {
    Client::try_default()
        .await
        .context("no in-cluster config and no usable kubeconfig")
}
