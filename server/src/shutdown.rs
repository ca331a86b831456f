//! Stopping on SIGTERM (what Kubernetes, systemd and `kill` send) and SIGINT (Ctrl-C): both mean a graceful
//! stop that ends with status 0, after everything Tower started (the embedded sandbox's children and temporary
//! folders) is gone. Without a handler, SIGTERM ended the process at once with status 143 and left the
//! sandbox's Prometheus running.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// How long requests still in flight after the signal get before the server stops waiting for them. The
/// event stream never ends by itself, so without a bound one open browser tab would hold the process.
pub const GRACE: Duration = Duration::from_secs(5);

/// How long `/readyz` answers 503 before the listener stops taking connections: long enough for a load
/// balancer (a Kubernetes Service's endpoints) to stop sending new requests here, while requests that still
/// arrive are answered.
pub const UNREADY_FOR: Duration = Duration::from_secs(2);

/// How long a stop waits for writes in flight (a pull request being pushed) after the grace period: a write
/// either completes or never starts, so this bound is only reached when the forge hangs.
pub const WRITES_GET: Duration = Duration::from_secs(30);

/// Whether a stop was requested; cloned wherever something must end on it. It also counts the writes in
/// flight ([`Shutdown::hold`]), so a stop waits for them and refuses new ones.
#[derive(Debug, Clone)]
pub struct Shutdown {
    requested: watch::Receiver<bool>,
    /// Writes in flight.
    holds: Arc<watch::Sender<usize>>,
    /// Keeps a manual stop's sender alive (see [`Shutdown::manual`]).
    _trigger: Option<Arc<watch::Sender<bool>>>,
}

/// Requests the stop of a [`Shutdown::manual`], as a signal would.
#[derive(Debug, Clone)]
pub struct Trigger(Arc<watch::Sender<bool>>);

impl Trigger {
    /// Requests the stop.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

/// A write in flight: the stop waits until every one is dropped.
#[derive(Debug)]
pub struct Hold(Arc<watch::Sender<usize>>);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl Shutdown {
    fn with(requested: watch::Receiver<bool>, trigger: Option<Arc<watch::Sender<bool>>>) -> Self {
        Self {
            requested,
            holds: Arc::new(watch::Sender::new(0)),
            _trigger: trigger,
        }
    }

    /// Listens for SIGTERM and SIGINT from now on. Called first thing, so a signal that arrives while the
    /// sandbox is still starting is not lost (nor handled by the default action, which would orphan children).
    pub fn listen() -> anyhow::Result<Self> {
        let (requested, receiver) = watch::channel(false);
        let signal = signal()?;
        tokio::spawn(async move {
            let name = signal.await;
            tracing::info!(signal = name, "stopping");
            let _ = requested.send(true);
        });
        Ok(Self::with(receiver, None))
    }

    /// A stop requested by calling [`Trigger::stop`] rather than by a signal (tests, and a router without
    /// a server around it, whose trigger is simply never pulled).
    pub fn manual() -> (Trigger, Self) {
        let (sender, receiver) = watch::channel(false);
        let sender = Arc::new(sender);
        (Trigger(sender.clone()), Self::with(receiver, Some(sender)))
    }

    /// Whether a stop has been requested.
    pub fn is_requested(&self) -> bool {
        *self.requested.borrow()
    }

    /// Resolves once a stop is requested.
    pub async fn requested(&self) {
        let mut receiver = self.requested.clone();
        // An error means the listener is gone, which only happens while the runtime shuts down: stop too.
        let _ = receiver.wait_for(|requested| *requested).await;
    }

    /// Registers a write about to start; `None` once a stop was requested, and the write must not start.
    pub fn hold(&self) -> Option<Hold> {
        self.holds.send_modify(|count| *count += 1);
        let hold = Hold(self.holds.clone());
        // Counted before checking: a stop requested from here on sees this write and waits for it.
        (!self.is_requested()).then_some(hold)
    }

    /// Resolves once no write is in flight.
    pub async fn writes_done(&self) {
        let mut holds = self.holds.subscribe();
        let _ = holds.wait_for(|count| *count == 0).await;
    }

    /// Resolves [`UNREADY_FOR`] after a stop is requested: when the listener stops taking connections.
    pub async fn stop_listening(&self) {
        self.requested().await;
        tokio::time::sleep(UNREADY_FOR).await;
    }

    /// Runs `work` until it finishes or a stop is requested; `None` when stopped first, in which case `work`
    /// is dropped (and with it whatever it had started).
    pub async fn unless_requested<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            output = work => Some(output),
            () = self.requested() => None,
        }
    }

    /// Resolves [`GRACE`] after the listener stopped: when a graceful stop stops waiting for requests.
    pub async fn grace_over(&self) {
        self.stop_listening().await;
        tokio::time::sleep(GRACE).await;
    }
}

/// The first SIGTERM or SIGINT, by name.
#[cfg(unix)]
fn signal() -> anyhow::Result<impl Future<Output = &'static str>> {
    use anyhow::Context as _;
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        }
    })
}

/// Ctrl-C where there are no Unix signals.
#[cfg(not(unix))]
fn signal() -> anyhow::Result<impl Future<Output = &'static str>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_held_before_the_stop_are_waited_for_and_none_start_after_it() {
        let (trigger, shutdown) = Shutdown::manual();
        let before = shutdown.hold().expect("no stop yet");
        trigger.stop();
        assert!(shutdown.is_requested());
        assert!(
            shutdown.hold().is_none(),
            "a write after the stop never starts"
        );
        let waiting = tokio::time::timeout(Duration::from_millis(50), shutdown.writes_done()).await;
        assert!(waiting.is_err(), "the write in flight holds the stop");
        drop(before);
        tokio::time::timeout(Duration::from_secs(1), shutdown.writes_done())
            .await
            .expect("released once the write is done");
    }

    #[tokio::test]
    async fn a_router_without_a_server_is_never_stopped() {
        let (trigger, shutdown) = Shutdown::manual();
        drop(trigger);
        let stopped = tokio::time::timeout(Duration::from_millis(50), shutdown.requested()).await;
        assert!(stopped.is_err());
        assert!(shutdown.hold().is_some());
    }
}
