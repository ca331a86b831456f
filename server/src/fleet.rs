//! The fleet model: the watch caches turned into what the pages show, and the deltas pushed to browsers.
//!
//! Data flows one way: upstream → watch cache (reflector store) → this model → JSON API / SSE. Request
//! handlers only read from here; nothing in a handler lists from an upstream.

use std::time::Duration;

use futures::{Stream, StreamExt as _};
use kube::ResourceExt as _;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use shared::crd::Component;
use shared::fleet::{FleetEvent, ServiceSummary};
use tokio::sync::broadcast;

/// How many deltas a slow browser may fall behind before it is sent a fresh snapshot instead.
const EVENT_BUFFER: usize = 1024;

/// The fleet as the server knows it, shared by every request.
#[derive(Clone)]
pub struct FleetModel {
    /// The Components on the management cluster, kept by a reflector.
    components: Store<Component>,
    /// Deltas for every connected browser.
    events: broadcast::Sender<FleetEvent>,
}

impl FleetModel {
    /// A model reading `components` and publishing on a fresh channel.
    pub fn new(components: Store<Component>) -> Self {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Self { components, events }
    }

    /// Every service, in name order.
    pub fn services(&self) -> Vec<ServiceSummary> {
        let mut services: Vec<_> = self
            .components
            .state()
            .iter()
            .map(|component| summarize(component))
            .collect();
        services.sort_by(|a, b| a.name.cmp(&b.name));
        services
    }

    /// One service by name.
    pub fn service(&self, name: &str) -> Option<ServiceSummary> {
        self.components
            .state()
            .iter()
            .find(|component| component.name_any() == name)
            .map(|component| summarize(component))
    }

    /// Waits until the first list of Components has completed, at most `limit`; false if it has not.
    pub async fn wait_until_ready(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.components.wait_until_ready())
            .await
            .is_ok_and(|ready| ready.is_ok())
    }

    /// Subscribes to deltas. Subscribe before taking a snapshot so nothing falls between the two.
    pub fn subscribe(&self) -> broadcast::Receiver<FleetEvent> {
        self.events.subscribe()
    }

    /// Turns the Component watch into deltas until the stream ends. Runs for the life of the server.
    pub async fn follow(
        self,
        watch: impl Stream<Item = Result<watcher::Event<Component>, watcher::Error>>,
    ) {
        let mut watch = std::pin::pin!(watch);
        while let Some(event) = watch.next().await {
            let delta = match event {
                Ok(watcher::Event::Apply(component)) => FleetEvent::ServiceUpserted {
                    service: summarize(&component),
                },
                Ok(watcher::Event::Delete(component)) => FleetEvent::ServiceRemoved {
                    name: component.name_any(),
                },
                // A (re)list finished: the store now holds exactly what the cluster has.
                Ok(watcher::Event::InitDone) => FleetEvent::Snapshot {
                    services: self.services(),
                },
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => continue,
                Err(error) => {
                    tracing::warn!(%error, "component watch failed; retrying with backoff");
                    continue;
                }
            };
            // No receivers just means no browser is connected.
            let _ = self.events.send(delta);
        }
    }
}

/// The summary the Overview lists for one Component.
pub fn summarize(component: &Component) -> ServiceSummary {
    let spec = &component.spec;
    ServiceSummary {
        name: component.name_any(),
        owner: spec.owner.clone(),
        description: spec.description.clone(),
        repository: spec.repository.clone(),
        template: format!("{}@{}", spec.template.name, spec.template.version),
        depends_on: spec.depends_on.clone(),
    }
}
