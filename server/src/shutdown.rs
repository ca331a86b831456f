//! Stopping on SIGTERM (what Kubernetes, systemd and `kill` send) and SIGINT (Ctrl-C): both mean a graceful
//! stop that ends with status 0, after everything Tower started (the embedded sandbox's children and temporary
//! folders) is gone. Without a handler, SIGTERM ended the process at once with status 143 and left the
//! sandbox's Prometheus running.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

/// How long requests still in flight after the signal get before the server stops waiting for them. The
/// event stream never ends by itself, so without a bound one open browser tab would hold the process.
pub const GRACE: Duration = Duration::from_secs(5);

/// Whether a stop was requested; cloned wherever something must end on it.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
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
        Ok(Self(receiver))
    }

    /// Resolves once a stop is requested.
    pub async fn requested(&self) {
        let mut receiver = self.0.clone();
        // An error means the listener is gone, which only happens while the runtime shuts down: stop too.
        let _ = receiver.wait_for(|requested| *requested).await;
    }

    /// Runs `work` until it finishes or a stop is requested; `None` when stopped first, in which case `work`
    /// is dropped (and with it whatever it had started).
    pub async fn unless_requested<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            output = work => Some(output),
            () = self.requested() => None,
        }
    }

    /// Resolves [`GRACE`] after a stop is requested: when a graceful stop stops waiting.
    pub async fn grace_over(&self) {
        self.requested().await;
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
