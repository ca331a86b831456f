//! What every request handler can reach.

use std::path::PathBuf;

use crate::fleet::FleetModel;

/// Shared, cheaply cloned state of the server.
#[derive(Clone)]
pub struct AppState {
    /// The fleet model, fed by the watch caches.
    pub fleet: FleetModel,
    /// The folder holding the built SPA (`index.html`, `assets/`).
    pub assets: PathBuf,
}
