//! The live fleet: loaded once over the JSON API, then kept current by the one event stream.

use futures::StreamExt as _;
use gloo_net::eventsource::futures::EventSource;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::ApiError;
use shared::fleet::{FLEET_EVENT_NAME, Fleet, FleetEvent};

use crate::api;

/// The fleet every page reads, provided once as context.
#[derive(Clone, Copy)]
pub struct LiveFleet {
    /// Services by name, patched by every delta.
    pub fleet: RwSignal<Fleet>,
    /// `None` while the first load is under way; then whether it worked.
    pub loaded: RwSignal<Option<Result<(), ApiError>>>,
    /// Whether the event stream is connected right now.
    pub connected: RwSignal<bool>,
}

impl LiveFleet {
    /// Starts loading and listening; call once, at the top of the app.
    pub fn start() -> Self {
        let live = Self {
            fleet: RwSignal::new(Fleet::default()),
            loaded: RwSignal::new(None),
            connected: RwSignal::new(false),
        };
        spawn_local(async move {
            match api::list_services().await {
                Ok(services) => {
                    // A snapshot from the stream may have landed first; it is at least as new.
                    if live.loaded.get_untracked().is_none() {
                        live.fleet.set(Fleet::from_services(services));
                    }
                    live.loaded.set(Some(Ok(())));
                }
                Err(error) => {
                    if live.loaded.get_untracked().is_none() {
                        live.loaded.set(Some(Err(error)));
                    }
                }
            }
        });
        live.listen();
        live
    }

    /// Applies every delta from `/api/v1/events`. The browser reconnects by itself after a drop, and the
    /// server starts every connection with a snapshot, so nothing is missed across a reconnect.
    fn listen(self) {
        let Ok(mut source) = EventSource::new("/api/v1/events") else {
            return;
        };
        let Ok(mut deltas) = source.subscribe(FLEET_EVENT_NAME) else {
            return;
        };
        spawn_local(async move {
            // Dropping the EventSource closes it, so it lives as long as this task.
            let _source = source;
            while let Some(message) = deltas.next().await {
                match message {
                    Ok((_, event)) => {
                        self.connected.set(true);
                        let Some(text) = event.data().as_string() else {
                            continue;
                        };
                        let Ok(delta) = serde_json::from_str::<FleetEvent>(&text) else {
                            continue;
                        };
                        let is_snapshot = matches!(delta, FleetEvent::Snapshot { .. });
                        self.fleet.update(|fleet| fleet.apply(delta));
                        if is_snapshot {
                            self.loaded.set(Some(Ok(())));
                        }
                    }
                    Err(_) => self.connected.set(false),
                }
            }
        });
    }
}
