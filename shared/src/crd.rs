//! The platform's custom resources, group `platform.tower.dev`, version `v1alpha1`.
//!
//! People write their specs through pull requests to `platform/` in `application-repositories`; the
//! operators on the management cluster write their statuses. The CRD YAML in `deploy/crds/` is generated from
//! these types ([`crd_files`]) and a test fails when it drifts.

use kube::CustomResource;
use kube::CustomResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of every platform resource.
pub const GROUP: &str = "platform.tower.dev";
/// Label naming the component an object belongs to; Tower finds things by it, never by name.
pub const COMPONENT_LABEL: &str = "platform.tower.dev/component";
/// Label naming the environment (`dev`, `prod`) an object belongs to.
pub const ENVIRONMENT_LABEL: &str = "platform.tower.dev/environment";
/// The namespace on the management cluster that holds the platform resources.
pub const PLATFORM_NAMESPACE: &str = "platform";

/// A service's identity: who owns it, where its code lives, what it was scaffolded from.
/// Lives at `platform/registry/<name>.yaml`.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.tower.dev",
    version = "v1alpha1",
    kind = "Component",
    namespaced,
    shortname = "comp",
    printcolumn = r#"{"name":"Owner","type":"string","jsonPath":".spec.owner"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ComponentSpec {
    /// The owning team's slug; its members own the service.
    pub owner: String,
    /// The service repository, `org/name`.
    pub repository: String,
    /// The scaffold template the service was created from.
    pub template: TemplateRef,
    /// What the service does, in a sentence.
    #[serde(default)]
    pub description: String,
    /// Components this one calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// A scaffold template and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TemplateRef {
    /// The template's name, e.g. `go-service`.
    pub name: String,
    /// The template's version, e.g. `1.4.0`.
    pub version: String,
}

/// What runs of a component in one environment. Lives at `platform/environments/<env>/<svc>-release.yaml`.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.tower.dev",
    version = "v1alpha1",
    kind = "Release",
    namespaced,
    status = "ReleaseStatus",
    shortname = "rel",
    printcolumn = r#"{"name":"Component","type":"string","jsonPath":".spec.component"}"#,
    printcolumn = r#"{"name":"Environment","type":"string","jsonPath":".spec.environment"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseSpec {
    /// The component released.
    pub component: String,
    /// The environment it runs in.
    pub environment: String,
    /// The build's commit in the service repository.
    pub version: String,
    /// The image built from that commit.
    pub image: ImageRef,
    /// The chart, pinned to the same commit as the image.
    pub chart: ChartRef,
    /// Whether the release operator moves this Release to every green build of main (dev only).
    #[serde(default)]
    pub auto_deploy: bool,
    /// Databases the component is bound to in this environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub databases: Vec<DatabaseBinding>,
}

/// An image repository and tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImageRef {
    /// e.g. `ghcr.io/acme/payments`.
    pub repository: String,
    /// The commit the image was built from.
    pub tag: String,
}

/// Where the Helm chart comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChartRef {
    /// The git repository holding the chart.
    pub repository: String,
    /// The chart's folder in that repository.
    pub path: String,
    /// The commit, the same as the image's.
    pub revision: String,
}

/// A database a component uses in an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseBinding {
    /// The Database's name.
    pub database: String,
    /// The Secret the connection details are written to.
    pub secret_name: String,
}

/// What the release operator observed and derived.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseStatus {
    /// The version whose derived files were written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_version: Option<String>,
    /// The `application-repositories` commit carrying the derived files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_commit: Option<String>,
    /// Standard conditions (`Ready`, `Derived`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A Kubernetes-style condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase reason.
    #[serde(default)]
    pub reason: String,
    /// A sentence for a person.
    #[serde(default)]
    pub message: String,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// A database instance in one environment. Lives at `platform/environments/<env>/<db>-database.yaml`.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.tower.dev",
    version = "v1alpha1",
    kind = "Database",
    namespaced,
    status = "DatabaseStatus",
    shortname = "db"
)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSpec {
    /// The environment it lives in.
    pub environment: String,
    /// The database's name.
    pub name: String,
    /// Its size class.
    pub size: DatabaseSize,
    /// The engine.
    #[serde(default)]
    pub engine: DatabaseEngine,
}

/// Size classes the platform offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseSize {
    /// For dev and small services.
    Small,
    /// The default for prod.
    Medium,
    /// For the heaviest services.
    Large,
}

/// Database engines the platform offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseEngine {
    /// PostgreSQL.
    #[default]
    Postgres,
}

/// What the platform reports of a database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseStatus {
    /// Whether it accepts connections.
    #[serde(default)]
    pub available: bool,
    /// `host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The schema version applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// Components bound to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bound_components: Vec<String>,
}

/// A published schema version to apply to a database. Lives at `platform/environments/<env>/<db>-schema.yaml`.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.tower.dev",
    version = "v1alpha1",
    kind = "DatabaseSchema",
    namespaced,
    status = "DatabaseSchemaStatus",
    shortname = "dbschema"
)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSchemaSpec {
    /// The Database's name.
    pub database: String,
    /// The environment.
    pub environment: String,
    /// The published schema version to apply.
    pub version: String,
    /// The migrations that version consists of, in order.
    #[serde(default)]
    pub migrations: Vec<String>,
}

/// What the schema operator reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseSchemaStatus {
    /// The version applied to the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_version: Option<String>,
    /// The checks run while applying.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<SchemaCheck>,
}

/// One step of applying a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SchemaCheck {
    /// e.g. `migrate 0007_add_refunds`.
    pub name: String,
    /// Where it stands.
    pub state: CheckState,
    /// The database's error text when failed (owner-only in the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The state of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum CheckState {
    /// Not started.
    Pending,
    /// Under way.
    Running,
    /// Done.
    Succeeded,
    /// Failed; see the error.
    Failed,
}

/// Every CRD as `(file name, YAML)`, in the order `deploy/crds/` lists them.
pub fn crd_files() -> Result<Vec<(String, String)>, serde_saphyr::SerializeError> {
    [
        Component::crd(),
        Release::crd(),
        Database::crd(),
        DatabaseSchema::crd(),
    ]
    .into_iter()
    .map(|crd| {
        let file = format!("{}.yaml", crd.metadata.name.clone().unwrap_or_default());
        serde_saphyr::to_string(&crd).map(|yaml| (file, yaml))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `deploy/crds/` is what a platform team applies; it must say exactly what the types say. Set
    /// `TOWER_WRITE_CRDS=1` to regenerate after changing a type.
    #[test]
    fn deployed_crds_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
        let files = crd_files().expect("CRDs serialize");
        if std::env::var_os("TOWER_WRITE_CRDS").is_some() {
            std::fs::create_dir_all(&dir).expect("create deploy/crds");
            for (name, yaml) in &files {
                std::fs::write(dir.join(name), yaml).expect("write CRD");
            }
        }
        for (name, yaml) in &files {
            let on_disk = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                on_disk == *yaml,
                "deploy/crds/{name} drifted from the types: run `TOWER_WRITE_CRDS=1 cargo test -p shared --features crd`"
            );
        }
        assert_eq!(files.len(), 4);
    }

    #[test]
    fn a_release_reads_back_from_the_yaml_people_write() {
        let yaml = r#"
apiVersion: platform.tower.dev/v1alpha1
kind: Release
metadata:
  name: payments-prod
  namespace: platform
spec:
  component: payments
  environment: prod
  version: 3f2a9c1
  image: {repository: ghcr.io/acme/payments, tag: 3f2a9c1}
  chart: {repository: acme/payments, path: chart, revision: 3f2a9c1}
  databases:
    - {database: payments, secretName: payments-db}
"#;
        let release: Release = serde_saphyr::from_str(yaml).expect("parses");
        assert_eq!(release.spec.chart.revision, release.spec.image.tag);
        assert!(!release.spec.auto_deploy);
        assert_eq!(release.spec.databases[0].secret_name, "payments-db");
    }
}
