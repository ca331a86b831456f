//! Small fleets for the tests of the fleet's pure logic.

use crate::fleet::{EnvironmentCell, Health, ServiceSummary, SyncStatus};

/// One environment cell at `abc1234`, reachable and without drift.
pub fn cell(env: &str, sync: SyncStatus, health: Health) -> EnvironmentCell {
    EnvironmentCell {
        environment: env.into(),
        version: Some("abc1234".into()),
        sync,
        health,
        drift: false,
        unreachable_since: None,
        unreachable_clusters: Vec::new(),
        problems: Vec::new(),
    }
}

/// A synced, healthy cell.
pub fn healthy(env: &str) -> EnvironmentCell {
    cell(env, SyncStatus::Synced, Health::Healthy)
}

/// A service of `owner` running in `cells`.
pub fn service(name: &str, owner: &str, cells: Vec<EnvironmentCell>) -> ServiceSummary {
    ServiceSummary {
        name: name.into(),
        owner: owner.into(),
        description: format!("The {name} service"),
        repository: format!("acme/{name}"),
        template: "go-service@1.0.0".into(),
        depends_on: vec![],
        environments: cells,
        catalog: None,
        catalog_state: crate::fleet::CatalogState::Found,
    }
}
