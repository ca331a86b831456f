//! Databases as catalog entities: the Databases page (`/databases`, every Database in every environment)
//! and a database's own page (`/databases/{env}/{name}`: its schema checks and the history of its schema).
//! The rows are [`crate::fleet::DatabaseView`]s, the same a service's Databases table shows, so a database
//! reads the same wherever it appears.

use serde::{Deserialize, Serialize};

use crate::fleet::DatabaseView;

/// One database with everything its page shows: `GET /api/v1/databases/{env}/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseDetail {
    /// The database as the list shows it, with its checks (error texts only for owners of a bound service).
    pub database: DatabaseView,
    /// The schema version its DatabaseSchema asks for, when there is one.
    pub published_version: Option<String>,
    /// That version's migrations, in order.
    pub migrations: Vec<String>,
    /// The services bound to it that are in the fleet, each a link to its page.
    pub services: Vec<String>,
    /// The commits that changed its DatabaseSchema in the GitOps repository, newest first: each schema
    /// version it was asked to apply, and when.
    pub history: Vec<SchemaChange>,
}

/// One commit that changed a database's DatabaseSchema file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaChange {
    /// The commit in the GitOps repository.
    pub sha: String,
    /// The schema version the file names after it, when it could be read.
    pub version: Option<String>,
    /// The commit message's first line.
    pub message: String,
    /// Who made it.
    pub author: String,
    /// When (RFC 3339).
    pub at: String,
    /// The pull request that brought it, when there was one.
    pub pr_number: Option<u64>,
}

/// Where a database's page lives in the app.
pub fn database_path(environment: &str, name: &str) -> String {
    format!(
        "/databases/{}/{}",
        crate::url::encode_query_value(environment),
        crate::url::encode_query_value(name)
    )
}
