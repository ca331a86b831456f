//! Kubernetes: clients per cluster and the watch streams that feed the fleet model.

use anyhow::Context as _;
use futures::{Stream, StreamExt as _};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource as _};
use shared::crd::Component;

/// A client for the cluster whose API server is at `url` (which may carry a path prefix, as the sandbox's do).
pub fn client_for_url(url: &str) -> anyhow::Result<Client> {
    let uri: http::Uri = url
        .parse()
        .with_context(|| format!("cluster URL {url:?}"))?;
    let config = kube::Config::new(uri);
    Client::try_from(config).context("building the Kubernetes client")
}

/// A client from the environment: in-cluster service account, else the current kubeconfig context.
pub async fn client_from_environment() -> anyhow::Result<Client> {
    Client::try_default()
        .await
        .context("no in-cluster config and no usable kubeconfig")
}

/// A reflector over every Component on the management cluster: the store it keeps, and the stream of watcher
/// events that must be polled to keep it current. Managed fields are stripped before they reach the store:
/// nobody reads them and they are a large share of each object.
pub fn watch_components(
    client: Client,
) -> (
    Store<Component>,
    impl Stream<Item = Result<watcher::Event<Component>, watcher::Error>> + Send,
) {
    let api: Api<Component> = Api::all(client);
    let (reader, writer) = reflector::store();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|component| {
            component.meta_mut().managed_fields = None;
        })
        .reflect(writer)
        .boxed();
    (reader, stream)
}
