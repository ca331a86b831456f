//! The platform resources (Component, Release, Database, DatabaseSchema) the plan implies, and the files of the
//! platform's own components (`infra/`, `values/`) and Crossplane packages (`packages/`). The GitOps
//! repository's files, the management cluster's objects and the Applications the ApplicationSets generate
//! are all built from these functions, so they agree byte for byte in content.

use shared::crd::{
    ChartRef, Component, ComponentSpec, Database, DatabaseBinding, DatabaseEngine, DatabaseSchema,
    DatabaseSchemaSpec, DatabaseSize, DatabaseSpec, ImageRef, Release, ReleaseSpec, TemplateRef,
};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::world::{
    Commit, ComponentPlan, Histories, MANAGEMENT_ENVIRONMENT, ORGANISATION, PLATFORM_NAMESPACE,
    PackagePlan, REGISTRY, ServicePlan, TEMPLATE_VERSION,
};

/// The Component of `plan`, as `platform/registry/<name>.yaml` declares it.
pub fn component(plan: &ServicePlan) -> Component {
    let mut component = Component::new(
        plan.name,
        ComponentSpec {
            owner: plan.team.into(),
            repository: format!("{ORGANISATION}/{}", plan.name),
            template: TemplateRef {
                name: plan.template.into(),
                version: TEMPLATE_VERSION.into(),
            },
            description: plan.description.into(),
            depends_on: plan.depends_on.iter().map(|s| (*s).to_string()).collect(),
        },
    );
    component.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
    component
}

/// The name of a service's Release in an environment: `<svc>-<env>`.
pub fn release_name(service: &str, environment: &str) -> String {
    format!("{service}-{environment}")
}

/// The Release running `commit` of `plan` in `environment`.
pub fn release(plan: &ServicePlan, environment: &str, commit: &Commit) -> Release {
    let version = commit.short().to_string();
    let mut release = Release::new(
        &release_name(plan.name, environment),
        ReleaseSpec {
            component: plan.name.into(),
            environment: environment.into(),
            version: version.clone(),
            image: ImageRef {
                repository: format!("{REGISTRY}/{}", plan.name),
                tag: version.clone(),
            },
            chart: ChartRef {
                repository: format!("{ORGANISATION}/{}", plan.name),
                path: "chart".into(),
                revision: version,
            },
            auto_deploy: environment == "dev",
            databases: if plan.database {
                vec![DatabaseBinding {
                    database: plan.name.into(),
                    secret_name: format!("{}-db", plan.name),
                }]
            } else {
                Vec::new()
            },
        },
    );
    release.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
    release.metadata.labels = Some(labels(plan.name, environment));
    release
}

/// The Releases of every service in every environment, as the plan has them.
pub fn releases(histories: &Histories) -> Vec<Release> {
    crate::world::SERVICES
        .iter()
        .flat_map(|plan| {
            crate::world::ENVIRONMENTS
                .iter()
                .filter_map(move |environment| {
                    histories
                        .running(plan, environment)
                        .map(|commit| release(plan, environment, commit))
                })
        })
        .collect()
}

/// The Database of `plan` in `environment` (only for services that have one).
pub fn database(plan: &ServicePlan, environment: &str) -> Database {
    let mut database = Database::new(
        &format!("{}-{environment}", plan.name),
        DatabaseSpec {
            environment: environment.into(),
            name: plan.name.into(),
            size: if environment == "prod" {
                DatabaseSize::Medium
            } else {
                DatabaseSize::Small
            },
            engine: DatabaseEngine::Postgres,
        },
    );
    database.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
    database.metadata.labels = Some(labels(plan.name, environment));
    database
}

/// The schema version name of a set of migrations: the number of the newest one, zero-padded (`0004`).
pub fn schema_version(migrations: &[String]) -> String {
    migrations
        .last()
        .and_then(|file| file.split('_').next())
        .unwrap_or("0000")
        .to_string()
}

/// The DatabaseSchema applying `migrations` to `plan`'s database in `environment`.
pub fn database_schema(
    plan: &ServicePlan,
    environment: &str,
    migrations: &[String],
) -> DatabaseSchema {
    let mut schema = DatabaseSchema::new(
        &format!("{}-{environment}", plan.name),
        DatabaseSchemaSpec {
            database: plan.name.into(),
            environment: environment.into(),
            version: schema_version(migrations),
            migrations: migrations.to_vec(),
        },
    );
    schema.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
    schema.metadata.labels = Some(labels(plan.name, environment));
    schema
}

/// The migrations the plan says are applied to `plan`'s database in `environment`: what the running code
/// ships, except where the plan has the prod database lag behind.
pub fn applied_migrations(
    plan: &ServicePlan,
    environment: &str,
    histories: &Histories,
) -> Vec<String> {
    let shipped = histories
        .running(plan, environment)
        .map(|commit| commit.migrations.clone())
        .unwrap_or_default();
    match (environment, plan.prod_schema_behind) {
        ("prod", Some(count)) => shipped.into_iter().take(count).collect(),
        _ => shipped,
    }
}

/// The platform's discovery labels for a component in an environment.
pub fn labels(component: &str, environment: &str) -> std::collections::BTreeMap<String, String> {
    [
        (
            shared::crd::COMPONENT_LABEL.to_string(),
            component.to_string(),
        ),
        (
            shared::crd::ENVIRONMENT_LABEL.to_string(),
            environment.to_string(),
        ),
    ]
    .into()
}

/// Paths in `application-repositories`: the same functions Tower writes with, so the sandbox's repository and
/// Tower's pull requests cannot disagree.
pub use shared::delivery::{component_path, database_path, release_path, schema_path};

/// `infra/<component>/<cluster>.yaml`: where `component`'s chart comes from on `cluster`.
pub fn infra_path(component: &str, cluster: &str) -> String {
    format!("infra/{component}/{cluster}.yaml")
}

/// `values/<component>/<cluster>.yaml`: `component`'s Helm values on `cluster`.
pub fn values_path(component: &str, cluster: &str) -> String {
    format!("values/{component}/{cluster}.yaml")
}

/// `packages/<package>/<cluster>.yaml`: the Crossplane package `package` on `cluster`.
pub fn package_path(package: &str, cluster: &str) -> String {
    format!("packages/{package}/{cluster}.yaml")
}

/// What `infra/<component>/<cluster>.yaml` holds: the chart a component is installed from on one cluster.
/// `taskapp-infra`'s git files generator reads its keys as parameters (`{{.chart.version}}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfraFile {
    /// The platform component.
    pub component: String,
    /// The cluster (Argo CD's name for it) it is installed on.
    pub cluster: String,
    /// The namespace it is installed into.
    pub namespace: String,
    /// The chart and the version to install.
    pub chart: InfraChart,
}

/// A Helm chart at a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfraChart {
    /// The chart repository.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// The chart's name in it.
    pub name: String,
    /// The chart version.
    pub version: String,
}

/// The infra file of `component` on `cluster` at `version`.
pub fn infra_file(component: &ComponentPlan, cluster: &str, version: &str) -> InfraFile {
    InfraFile {
        component: component.name.into(),
        cluster: cluster.into(),
        namespace: component.namespace.into(),
        chart: InfraChart {
            repo_url: component.repository.into(),
            name: component.chart.into(),
            version: version.into(),
        },
    }
}

/// The Helm values of `component` on `cluster` at `version`: an in-house component's image is tagged with its
/// chart's version (its CI bumps both in one commit), a third-party chart keeps its own default image.
pub fn infra_values(component: &ComponentPlan, cluster: &str, version: &str) -> Value {
    let mut values = json!({
        "replicaCount": if cluster == crate::topology::MANAGEMENT { 2 } else { 1 },
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    });
    if component.in_house {
        values["image"] =
            json!({"repository": format!("{REGISTRY}/{}", component.name), "tag": version});
    }
    if component.service_monitor {
        values["serviceMonitor"] = json!({"enabled": true});
    }
    values
}

/// The `pkg.crossplane.io/v1` manifest of `package` at `version`, as `packages/<package>/<cluster>.yaml` holds
/// it (the same on every cluster).
pub fn package_manifest(package: &PackagePlan, version: &str) -> Value {
    json!({
        "apiVersion": "pkg.crossplane.io/v1",
        "kind": package.kind,
        "metadata": {"name": package.name},
        "spec": {"package": format!("{}:{version}", package.package)},
    })
}

/// The tag of a package reference (`xpkg.upbound.io/upbound/provider-aws-rds:v1.14.0` gives `v1.14.0`).
pub fn package_version(reference: &str) -> &str {
    reference.rsplit_once(':').map_or("", |(_, tag)| tag)
}

/// The clusters of `topology` that `environments` name, management first.
pub fn clusters_running(
    topology: &crate::topology::Topology,
    environments: &[&str],
) -> Vec<String> {
    std::iter::once(MANAGEMENT_ENVIRONMENT)
        .chain(crate::world::ENVIRONMENTS)
        .filter(|environment| environments.contains(environment))
        .flat_map(|environment| topology.cluster_names_of(environment))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::{Histories, service};

    #[test]
    fn a_release_pins_image_and_chart_to_the_same_commit() {
        let histories = Histories::synthetic();
        let payments = service("payments").expect("payments");
        let commit = histories.running(payments, "prod").expect("prod");
        let release = release(payments, "prod", commit);
        assert_eq!(release.spec.image.tag, commit.short());
        assert_eq!(release.spec.chart.revision, release.spec.image.tag);
        assert!(!release.spec.auto_deploy);
        assert_eq!(release.spec.databases.len(), 1);
    }

    #[test]
    fn the_payments_prod_database_lags_the_code_it_runs() {
        let histories = Histories::synthetic();
        let payments = service("payments").expect("payments");
        let applied = applied_migrations(payments, "prod", &histories);
        let shipped = &histories
            .running(payments, "prod")
            .expect("prod")
            .migrations;
        assert_eq!(schema_version(&applied), "0003");
        assert_eq!(schema_version(shipped), "0004");
    }
}
