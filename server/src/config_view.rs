//! The Config tab on the server: a service's `platform/` files on main beside the management cluster's
//! objects (drift named field by field), the operators' derived files and what runs; and an owner's edit of
//! one file, checked again with the browser's own [`shared::config::validate`] and proposed as a pull request.
//!
//! Reads go to the forge only when the tab is opened (a handful of file reads per environment, concurrently);
//! live objects come from the watch caches through [`crate::fleet::FleetModel::platform_objects`].

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::join_all;
use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value as Json;
use shared::auth::Identity;
use shared::config::{
    ApplicationSetView, ClusterView, ConfigResource, DatabaseRef, DerivedFile, Diagnostic,
    EditFile, EnvironmentConfig, GeneratedApplication, IntentFile, PlatformConfig, PlatformKind,
    Position, RuleContext, RunningObject, ServiceConfig, Setting, drifted_fields,
    parse_platform_path, validate,
};
use shared::crd::{Component, Database, DatabaseSchema, Release};
use shared::delivery::{
    BASE_BRANCH, Intent, RenderedFile, component_path, database_path, release_path, schema_path,
    unified_diff,
};
use shared::fleet::{CommitView, SourceState};

use crate::delivery::pull::Change;
use crate::delivery::{Delivery, forge};
use crate::error::{Error, Result};
use crate::fleet::PlatformObjects;
use crate::fleet::application::Application;
use crate::state::AppState;

/// Metadata the cluster keeps for itself: left out of the applied YAML, which is about intent.
const CLUSTER_METADATA: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "selfLink",
];
/// The annotation `kubectl apply` leaves: a copy of the object, noise beside it.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A file on main and the last commit that changed it.
struct GitFile {
    content: String,
    commit: Option<CommitView>,
}

/// Reads `platform/` and `components/` files of main; `None` everywhere when no forge is configured.
struct Git<'a> {
    delivery: Option<&'a Delivery>,
}

impl Git<'_> {
    /// The file at `path` on main with its last commit, `None` when it does not exist.
    async fn read(&self, path: &str) -> Result<Option<GitFile>> {
        let Some(delivery) = self.delivery else {
            return Ok(None);
        };
        let github = delivery.github();
        let repository = delivery.repository();
        let Some(content) = github
            .file(&repository, path, BASE_BRANCH)
            .await
            .map_err(forge("reading main"))?
        else {
            return Ok(None);
        };
        let commit = github
            .commits_touching(&repository, path, BASE_BRANCH, 1, 1)
            .await
            .map_err(forge("reading a file's history"))?
            .first()
            .map(|c| c.view());
        Ok(Some(GitFile { content, commit }))
    }

    /// Every file of `paths`, read concurrently, in the same order.
    async fn read_all(&self, paths: &[String]) -> Result<Vec<Option<GitFile>>> {
        join_all(paths.iter().map(|p| self.read(p)))
            .await
            .into_iter()
            .collect()
    }
}

/// The service's Config tab.
pub async fn service_config(state: &AppState, service: &str) -> Result<ServiceConfig> {
    if state.fleet.service(service).is_none() {
        return Err(Error::NotFound(format!("service {service}")));
    }
    let objects = state.fleet.platform_objects(service);
    let git = Git {
        delivery: state.delivery.as_ref(),
    };
    let environments = state.fleet.environments();

    let registry_path = component_path(service);
    let registry_file = git.read(&registry_path).await?;
    let registry = resource::<Component>(
        PlatformKind::Component,
        service,
        &registry_path,
        registry_file,
        objects.component.as_deref(),
    );

    let mut sections = Vec::new();
    for environment in &environments {
        sections.push(environment_config(&git, &objects, service, environment).await?);
    }
    let mut rules = rule_context(state, service, &objects);
    // Versions that run or are asked for today are acceptable as they are, even when older than the
    // pipeline history Tower keeps: an edit of the bindings must not trip over an old build.
    if let Some(green) = rules.green_builds.as_mut() {
        for section in &sections {
            for resource in &section.resources {
                if let Some(version) = resource
                    .intent
                    .as_ref()
                    .and_then(|f| serde_saphyr::from_str::<Release>(&f.content).ok())
                    .map(|r| r.spec.version)
                {
                    green.push(version);
                }
            }
        }
    }
    Ok(ServiceConfig {
        service: service.to_string(),
        registry: Some(registry),
        environments: sections,
        rules,
        git_configured: state.delivery.is_some(),
    })
}

/// One environment's section: the Release, its databases and their schemas, derived files, what runs.
async fn environment_config(
    git: &Git<'_>,
    objects: &PlatformObjects,
    service: &str,
    environment: &str,
) -> Result<EnvironmentConfig> {
    let live_release = objects
        .releases
        .iter()
        .find(|r| r.spec.environment == environment)
        .map(Arc::as_ref);
    let release_file_path = release_path(service, environment);
    let release_file = git.read(&release_file_path).await?;
    let git_release: Option<Release> = release_file
        .as_ref()
        .and_then(|f| serde_saphyr::from_str(&f.content).ok());

    // The databases of this environment: those live, and those the Release in git binds.
    let mut names: BTreeSet<String> = objects
        .databases
        .iter()
        .filter(|d| d.spec.environment == environment)
        .map(|d| d.spec.name.clone())
        .collect();
    for release in git_release.iter().chain(live_release) {
        names.extend(release.spec.databases.iter().map(|b| b.database.clone()));
    }
    let mut resources = vec![resource::<Release>(
        PlatformKind::Release,
        &format!("{service}-{environment}"),
        &release_file_path,
        release_file,
        live_release,
    )];
    for name in &names {
        let paths = [
            database_path(name, environment),
            schema_path(name, environment),
        ];
        let mut files = git.read_all(&paths).await?.into_iter();
        let live_database = objects
            .databases
            .iter()
            .find(|d| &d.spec.name == name && d.spec.environment == environment);
        resources.push(resource::<Database>(
            PlatformKind::Database,
            &live_database.map_or_else(|| format!("{name}-{environment}"), |d| name_of(d.as_ref())),
            &paths[0],
            files.next().flatten(),
            live_database.map(Arc::as_ref),
        ));
        let live_schema = objects
            .schemas
            .iter()
            .find(|s| &s.spec.database == name && s.spec.environment == environment);
        let schema_file = files.next().flatten();
        if schema_file.is_some() || live_schema.is_some() {
            resources.push(resource::<DatabaseSchema>(
                PlatformKind::DatabaseSchema,
                &live_schema
                    .map_or_else(|| format!("{name}-{environment}"), |s| name_of(s.as_ref())),
                &paths[1],
                schema_file,
                live_schema.map(Arc::as_ref),
            ));
        }
    }

    let derived_paths = [
        format!("components/{service}/environments/{environment}.yaml"),
        format!("components/{service}/values/{environment}.yaml"),
        format!("components/{service}/schema/{environment}.yaml"),
    ];
    let derived = git
        .read_all(&derived_paths)
        .await?
        .into_iter()
        .zip(&derived_paths)
        .filter_map(|(file, path)| {
            file.map(|f| DerivedFile {
                path: path.clone(),
                content: f.content,
            })
        })
        .collect();

    // Applications and ExternalSecrets are cached typed and trimmed; shown as objects again.
    let applications = objects
        .applications
        .iter()
        .filter(|(env, _)| env == environment)
        .map(|(_, application)| running_object(&application.to_dynamic()));
    let secrets = objects
        .secrets
        .iter()
        .filter(|(env, _)| env == environment)
        .map(|(_, secret)| running_object(&secret.to_dynamic()));
    let mut running: Vec<RunningObject> = objects
        .claims
        .iter()
        .filter(|(env, _)| env == environment)
        .map(|(_, object)| running_object(object))
        .chain(applications)
        .chain(secrets)
        .collect();
    running.sort_by(|a, b| (kind_rank(&a.kind), &a.name).cmp(&(kind_rank(&b.kind), &b.name)));

    Ok(EnvironmentConfig {
        environment: environment.to_string(),
        resources,
        derived,
        running,
    })
}

/// The Application first, then secrets, then claims.
fn kind_rank(kind: &str) -> u8 {
    match kind {
        "Application" => 0,
        "ExternalSecret" => 1,
        _ => 2,
    }
}

fn name_of<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// A platform resource's four sides: git, cluster, and the drift between their specs. `K` is its type: both
/// sides go through it, so a default the API server filled in is not drift.
fn resource<K>(
    kind: PlatformKind,
    name: &str,
    path: &str,
    file: Option<GitFile>,
    live: Option<&K>,
) -> ConfigResource
where
    K: kube::Resource + Clone + Serialize + serde::de::DeserializeOwned + HasSpec,
{
    let intent_spec = file
        .as_ref()
        .and_then(|f| serde_saphyr::from_str::<K>(&f.content).ok())
        .and_then(|typed| typed.spec_value());
    let live_spec = live.and_then(HasSpec::spec_value);
    let (drift, drift_diff) = match (&intent_spec, &live_spec) {
        (Some(intent), Some(live)) => {
            let fields = drifted_fields(intent, live, "spec");
            let diff = (!fields.is_empty()).then(|| {
                let as_yaml = |spec: &Json| serde_saphyr::to_string(spec).unwrap_or_default();
                unified_diff(path, Some(&as_yaml(intent)), &as_yaml(live))
            });
            (fields, diff)
        }
        _ => (Vec::new(), None),
    };
    ConfigResource {
        kind,
        name: live.map_or_else(|| name.to_string(), name_of),
        intent: file.map(|f| IntentFile {
            path: path.to_string(),
            content: f.content,
            commit: f.commit,
        }),
        applied: live.and_then(|object| applied_typed_yaml(object)),
        drift,
        drift_diff,
    }
}

/// The spec of a platform resource as JSON, for drift.
pub trait HasSpec {
    /// The spec, serialized.
    fn spec_value(&self) -> Option<Json>;
}

macro_rules! has_spec {
    ($($kind:ty),*) => {$(
        impl HasSpec for $kind {
            fn spec_value(&self) -> Option<Json> {
                serde_json::to_value(&self.spec).ok()
            }
        }
    )*};
}
has_spec!(Component, Release, Database, DatabaseSchema);

/// A typed object as YAML in its type's field order (as the file in git has it), without the cluster's
/// bookkeeping.
fn applied_typed_yaml<K: kube::Resource + Clone + Serialize>(object: &K) -> Option<String> {
    let mut object = object.clone();
    let metadata = object.meta_mut();
    metadata.managed_fields = None;
    metadata.resource_version = None;
    metadata.uid = None;
    metadata.generation = None;
    metadata.creation_timestamp = None;
    metadata.self_link = None;
    if let Some(annotations) = metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
    if metadata.annotations.as_ref().is_some_and(|a| a.is_empty()) {
        metadata.annotations = None;
    }
    serde_saphyr::to_string(&object).ok()
}

/// An object as YAML without the cluster's bookkeeping (managed fields, ids, versions, the last-applied copy).
fn applied_yaml<K: Serialize>(object: &K) -> Option<String> {
    let mut json = serde_json::to_value(object).ok()?;
    if let Some(metadata) = json.get_mut("metadata").and_then(Json::as_object_mut) {
        for field in CLUSTER_METADATA {
            metadata.remove(field);
        }
        if let Some(annotations) = metadata
            .get_mut("annotations")
            .and_then(Json::as_object_mut)
        {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty() {
                metadata.remove("annotations");
            }
        }
    }
    serde_saphyr::to_string(&json).ok()
}

/// An Application, ExternalSecret or claim, read-only, with a word on its state.
fn running_object(object: &DynamicObject) -> RunningObject {
    let kind = object
        .types
        .as_ref()
        .map_or_else(|| "Object".to_string(), |t| t.kind.clone());
    let status = object.data.get("status");
    let text = |path: &[&str]| {
        path.iter()
            .try_fold(status?, |v, k| v.get(k))
            .and_then(Json::as_str)
            .map(str::to_string)
    };
    let state = if kind == "Application" {
        match (text(&["sync", "status"]), text(&["health", "status"])) {
            (Some(sync), Some(health)) => Some(format!("{sync} · {health}")),
            (sync, health) => sync.or(health),
        }
    } else {
        status
            .and_then(|s| s.get("conditions"))
            .and_then(Json::as_array)
            .and_then(|conditions| {
                conditions
                    .iter()
                    .find(|c| c.get("type").and_then(Json::as_str) == Some("Ready"))
            })
            .map(|ready| {
                let reason = ready.get("reason").and_then(Json::as_str).unwrap_or("");
                match ready.get("status").and_then(Json::as_str) {
                    Some("True") => format!("Ready{}", suffix(reason)),
                    _ => format!("Not ready{}", suffix(reason)),
                }
            })
    };
    RunningObject {
        kind,
        name: object.metadata.name.clone().unwrap_or_default(),
        state,
        yaml: applied_yaml(object).unwrap_or_default(),
    }
}

fn suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" ({reason})")
    }
}

/// What the rules need: the environments, the service's green builds (plus the versions its Releases run
/// and ask for) and the databases that exist.
fn rule_context(state: &AppState, service: &str, objects: &PlatformObjects) -> RuleContext {
    let green_builds = state.delivery.as_ref().map(|delivery| {
        let mut builds: Vec<String> = delivery
            .builds()
            .green(service)
            .into_iter()
            .map(|b| b.commit)
            .collect();
        builds.extend(objects.releases.iter().map(|r| r.spec.version.clone()));
        builds
    });
    RuleContext {
        service: service.to_string(),
        environments: state.fleet.environments(),
        green_builds,
        databases: Some(
            state
                .fleet
                .database_names()
                .into_iter()
                .map(|(environment, name)| DatabaseRef { environment, name })
                .collect(),
        ),
    }
}

/// An owner's edit as a [`Change`]: the file must be one of the service's, pass [`validate`] (the browser's
/// check, run again here) and read into its typed resource; then it is proposed exactly as written.
pub async fn edit_change(
    state: &AppState,
    user: &Identity,
    service: &str,
    edit: &EditFile,
) -> Result<Change> {
    let delivery = state
        .delivery
        .as_ref()
        .ok_or(Error::NotConfigured("Delivery (a GitHub App)"))?;
    if state.fleet.service(service).is_none() {
        return Err(Error::NotFound(format!("service {service}")));
    }
    let objects = state.fleet.platform_objects(service);
    let Some(file) = parse_platform_path(&edit.path) else {
        return Err(Error::Rejected(vec![Diagnostic::new(
            Position::START,
            "path",
            format!("`{}` is not a platform file Tower edits.", edit.path),
        )]));
    };
    let belongs = match file.kind {
        PlatformKind::Component | PlatformKind::Release => file.name == service,
        PlatformKind::Database | PlatformKind::DatabaseSchema => {
            file.name == service
                || objects.databases.iter().any(|d| d.spec.name == file.name)
                || objects
                    .releases
                    .iter()
                    .any(|r| r.spec.databases.iter().any(|b| b.database == file.name))
        }
    };
    if !belongs {
        return Err(Error::Rejected(vec![Diagnostic::new(
            Position::START,
            "path",
            format!("`{}` is not one of {service}'s files.", edit.path),
        )]));
    }
    let previous = Git {
        delivery: Some(delivery),
    }
    .read(&edit.path)
    .await?;
    let mut rules = rule_context(state, service, &objects);
    if let (Some(green), Some(previous)) = (rules.green_builds.as_mut(), &previous)
        && let Ok(release) = serde_saphyr::from_str::<Release>(&previous.content)
    {
        green.push(release.spec.version);
    }
    let diagnostics = validate(&edit.path, &edit.content, &rules);
    if !diagnostics.is_empty() {
        return Err(Error::Rejected(diagnostics));
    }
    typed(file.kind, &edit.content)?;
    let previous_content = previous.map(|f| f.content);
    if previous_content.as_deref() == Some(edit.content.as_str()) {
        return Err(Error::Conflict(format!(
            "{} on main is exactly this",
            edit.path
        )));
    }
    let verb = if previous_content.is_some() {
        "Edit"
    } else {
        "Add"
    };
    let title = format!("{verb} {}", edit.path);
    let base = delivery.config().public_url.trim_end_matches('/');
    let body = format!(
        "{verb}s `{path}` as written in Tower's Config tab, checked against the {kind} schema and Tower's rules.\n\n\
         Requested in Tower by @{login} ({name}). Merge to apply; the operators and Argo CD take it from there.\n\n\
         [Open {service}'s config in Tower]({base}/services/{service}?tab=config)",
        path = edit.path,
        kind = file.kind.name(),
        login = user.login,
        name = user.name,
    );
    Ok(Change {
        intent: Intent::Config {
            service: service.to_string(),
            path: edit.path.clone(),
        },
        title,
        body,
        files: vec![RenderedFile {
            path: edit.path.clone(),
            content: edit.content.clone(),
            previous_content,
        }],
    })
}

/// The last check: the file reads into the resource type the operators read. [`validate`] accepting a file
/// this refuses would be a bug in the validator, reported like any rejection rather than written.
fn typed(kind: PlatformKind, content: &str) -> Result<()> {
    let result = match kind {
        PlatformKind::Component => serde_saphyr::from_str::<Component>(content).map(drop),
        PlatformKind::Release => serde_saphyr::from_str::<Release>(content).map(drop),
        PlatformKind::Database => serde_saphyr::from_str::<Database>(content).map(drop),
        PlatformKind::DatabaseSchema => serde_saphyr::from_str::<DatabaseSchema>(content).map(drop),
    };
    result.map_err(|error| {
        tracing::warn!(%error, "a file the validator accepted does not read as its type");
        Error::Rejected(vec![Diagnostic::new(
            Position::START,
            "",
            format!("The file does not read as a {}.", kind.name()),
        )])
    })
}

// ---------------------------------------------------------------------------------------------------------
// The fleet-wide /config page

/// Tower's configuration as the `/config` page shows it, computed once at start.
#[derive(Debug, Clone, Default)]
pub struct PlatformSettings {
    /// Every setting, secrets masked.
    pub settings: Vec<Setting>,
    /// Each cluster's name and how Tower reaches it, in the configuration's order.
    pub connections: Vec<(String, String)>,
}

impl PlatformSettings {
    /// From the configuration as loaded.
    pub fn from_config(config: &crate::config::TowerConfig) -> Self {
        PlatformSettings {
            settings: config.settings(),
            connections: config
                .clusters
                .iter()
                .map(|c| (c.name.clone(), c.connection()))
                .collect(),
        }
    }
}

/// The `/config` page: ApplicationSets from the watch cache with the Applications they own, the clusters
/// with their watches' state, and the settings.
pub fn platform_config(state: &AppState) -> PlatformConfig {
    let (sets, applications) = state.fleet.argo_objects();
    let mut application_sets: Vec<ApplicationSetView> = sets
        .iter()
        .map(|set| application_set_view(set, &applications))
        .collect();
    application_sets.sort_by(|a, b| a.name.cmp(&b.name));
    let sources = state.fleet.sources();
    let labels = state.fleet.cluster_labels();
    let clusters = state
        .platform_settings
        .connections
        .iter()
        .map(|(name, connection)| {
            // A configured cluster whose watches have not registered yet is still syncing.
            let source = sources.iter().find(|s| &s.cluster == name);
            let environment = source.and_then(|s| s.environment.clone());
            ClusterView {
                name: name.clone(),
                labels: environment
                    .as_ref()
                    .and_then(|environment| labels.get(environment).cloned())
                    .unwrap_or_default(),
                environment,
                connection: connection.clone(),
                state: source.map_or(SourceState::Syncing, |s| s.state.clone()),
            }
        })
        .collect();
    PlatformConfig {
        application_sets,
        clusters,
        settings: state.platform_settings.settings.clone(),
    }
}

/// An ApplicationSet: its generators in words and the Applications whose owner it is.
fn application_set_view(
    set: &DynamicObject,
    applications: &[Arc<Application>],
) -> ApplicationSetView {
    let name = set.metadata.name.clone().unwrap_or_default();
    let generators = set
        .data
        .pointer("/spec/generators")
        .and_then(Json::as_array)
        .map(|list| list.iter().map(generator_words).collect())
        .unwrap_or_default();
    let mut owned: Vec<GeneratedApplication> = applications
        .iter()
        .filter(|app| {
            app.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.kind == "ApplicationSet" && owner.name == name)
        })
        .map(|app| GeneratedApplication {
            name: app.name(),
            sync: app.status.sync.status.clone(),
            health: app.status.health.status.clone(),
        })
        .collect();
    owned.sort_by(|a, b| a.name.cmp(&b.name));
    ApplicationSetView {
        name,
        generators,
        applications: owned,
        yaml: applied_yaml(set).unwrap_or_default(),
    }
}

/// One generator in words: `git files components/*/environments/*.yaml`, `clusters environment=dev`,
/// `matrix of (…, …)`, or its kind.
fn generator_words(generator: &Json) -> String {
    let Some((kind, body)) = generator.as_object().and_then(|o| o.iter().next()) else {
        return "unknown".into();
    };
    match kind.as_str() {
        "git" => {
            // `files` and `directories` are lists of `{path}`.
            let paths = |key: &str| -> Vec<&str> {
                body.get(key)
                    .and_then(Json::as_array)
                    .map(|list| {
                        list.iter()
                            .filter_map(|p| p.get("path").and_then(Json::as_str))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let files = paths("files");
            if files.is_empty() {
                format!("git directories {}", paths("directories").join(", "))
            } else {
                format!("git files {}", files.join(", "))
            }
        }
        "clusters" => {
            let labels: Vec<String> = body
                .pointer("/selector/matchLabels")
                .and_then(Json::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect()
                })
                .unwrap_or_default();
            if labels.is_empty() {
                "clusters (all)".into()
            } else {
                format!("clusters {}", labels.join(", "))
            }
        }
        "matrix" | "merge" => {
            let inner: Vec<String> = body
                .get("generators")
                .and_then(Json::as_array)
                .map(|g| g.iter().map(generator_words).collect())
                .unwrap_or_default();
            format!("{kind} of ({})", inner.join("; "))
        }
        other => other.to_string(),
    }
}
