//! Delivery: Tower's only write, a pull request to `application-repositories`.
//!
//! The forms of the golden paths (Onboard Service, Create deployment, Add Database, Apply database schema),
//! Promote and Rollback, the pull requests Tower opens, release records and their request/response bodies.
//! Validation is pure and lives outside the `crd` feature so the browser runs exactly the checks the server
//! runs; rendering the files needs the resource types and lives behind `crd` (the browser asks the server for
//! a preview instead).
//!
//! Paths follow design document 004: `platform/registry/<svc>.yaml`,
//! `platform/environments/<env>/<svc>-release.yaml`, `…/<db>-database.yaml`, `…/<db>-schema.yaml`. Tower only
//! ever writes under `platform/`; the operators' derived files (`components/`) have their own writers.

use serde::{Deserialize, Serialize};

use crate::fleet::CommitView;

/// The branch every pull request targets.
pub const BASE_BRANCH: &str = "main";
/// The only folder Tower writes to.
pub const PLATFORM_DIR: &str = "platform/";
/// Every branch Tower pushes starts with this, so its pull requests can be found by branch alone.
pub const BRANCH_PREFIX: &str = "tower/";
/// The label on every pull request Tower opens.
pub const TOWER_LABEL: &str = "tower";
/// Release records per page on the Releases tab.
pub const RELEASES_PAGE: usize = 20;
/// Longest DNS-1123 label.
pub const MAX_LABEL: usize = 63;
/// Longest description of a service.
pub const MAX_DESCRIPTION: usize = 200;

/// An input the user must change: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The form field, as the request body names it.
    pub field: &'static str,
    /// What to change, in a sentence.
    pub message: String,
}

impl FieldError {
    /// An error on `field`.
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

/// `Result` of validation.
pub type Validation = Result<(), FieldError>;

// ---------------------------------------------------------------------------------------------------------
// Field rules

/// A DNS-1123 label: 1–63 lowercase letters, digits and `-`, starting and ending with a letter or digit.
/// Names of services, teams, databases, environments and templates are labels, because each ends up in a
/// Kubernetes name, a label value and a path; this rule alone keeps `../x`, `A B` and YAML syntax out.
pub fn validate_label(field: &'static str, value: &str) -> Validation {
    if value.is_empty() {
        return Err(FieldError::new(field, "Required."));
    }
    if value.chars().count() > MAX_LABEL {
        return Err(FieldError::new(
            field,
            format!("At most {MAX_LABEL} characters."),
        ));
    }
    let allowed = value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let edges = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !allowed || !edges(value.chars().next()) || !edges(value.chars().last()) {
        return Err(FieldError::new(
            field,
            "Use lowercase letters, digits and '-', starting and ending with a letter or digit.",
        ));
    }
    Ok(())
}

/// What a database's connection Secret is named: the database's name and this (see `binding`).
pub const DATABASE_SECRET_SUFFIX: &str = "-db";

/// A database's name: a label short enough that its Secret's name, `<database>-db`, is a label too (Tower's
/// own check of a Release refuses a longer `secretName`, so a longer name could be added but never bound).
pub fn validate_database_name(field: &'static str, value: &str) -> Validation {
    validate_label(field, value)?;
    let longest = MAX_LABEL - DATABASE_SECRET_SUFFIX.len();
    if value.chars().count() > longest {
        return Err(FieldError::new(
            field,
            format!(
                "At most {longest} characters: its Secret is named after it, with `{DATABASE_SECRET_SUFFIX}`."
            ),
        ));
    }
    Ok(())
}

/// A name that, with its environment, names a resource: `<name>-<environment>` (a Release, a Database, a
/// DatabaseSchema) must be a label too, as Tower's own check of the file requires of `metadata.name`.
pub fn validate_name_in_environment(
    field: &'static str,
    value: &str,
    environment: &str,
) -> Validation {
    let longest = MAX_LABEL.saturating_sub(environment.chars().count() + 1);
    if value.chars().count() > longest {
        return Err(FieldError::new(
            field,
            format!(
                "At most {longest} characters in {environment}: its resource is named `<name>-{environment}`, at most {MAX_LABEL} characters."
            ),
        ));
    }
    Ok(())
}

/// A build id as the platform writes versions: the build's commit, 7 to 40 lowercase hex digits.
pub fn validate_build_id(field: &'static str, value: &str) -> Validation {
    if value.is_empty() {
        return Err(FieldError::new(field, "Required."));
    }
    if !(7..=40).contains(&value.len())
        || !value
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    {
        return Err(FieldError::new(
            field,
            "A build is its commit id: 7 to 40 lowercase hex digits.",
        ));
    }
    Ok(())
}

/// A scaffold template version: `MAJOR.MINOR.PATCH`.
pub fn validate_template_version(field: &'static str, value: &str) -> Validation {
    let parts: Vec<&str> = value.split('.').collect();
    let ok = value.len() <= 32
        && parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    if value.is_empty() {
        return Err(FieldError::new(field, "Required."));
    }
    if !ok {
        return Err(FieldError::new(
            field,
            "A template version looks like 1.4.0.",
        ));
    }
    Ok(())
}

/// A published schema version: the zero-padded number of its newest migration (`0004`).
pub fn validate_schema_version(field: &'static str, value: &str) -> Validation {
    if value.is_empty() {
        return Err(FieldError::new(field, "Required."));
    }
    if value.len() > 10 || !value.chars().all(|c| c.is_ascii_digit()) {
        return Err(FieldError::new(
            field,
            "A schema version is the number of its newest migration, e.g. 0004.",
        ));
    }
    Ok(())
}

/// One of the platform's environments (`known`); any label when `known` is empty (not loaded yet).
pub fn validate_environment(field: &'static str, value: &str, known: &[String]) -> Validation {
    validate_label(field, value)?;
    if !known.is_empty() && !known.iter().any(|k| k == value) {
        return Err(FieldError::new(
            field,
            format!("Unknown environment; choose one of {}.", known.join(", ")),
        ));
    }
    Ok(())
}

/// A description: one line of at most [`MAX_DESCRIPTION`] characters, no control characters. It is free
/// text; the YAML serializer quotes whatever YAML would misread.
pub fn validate_description(field: &'static str, value: &str) -> Validation {
    if value.chars().count() > MAX_DESCRIPTION {
        return Err(FieldError::new(
            field,
            format!("At most {MAX_DESCRIPTION} characters."),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            "One line, without control characters.",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Golden paths

/// The golden-path templates, as they appear in URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Template {
    /// A Component and its first dev Release.
    OnboardService,
    /// A Release of a green build in an environment.
    CreateDeployment,
    /// A Database in an environment.
    AddDatabase,
    /// A DatabaseSchema at a published version.
    ApplySchema,
}

impl Template {
    /// Every template.
    pub const ALL: [Template; 4] = [
        Template::OnboardService,
        Template::CreateDeployment,
        Template::AddDatabase,
        Template::ApplySchema,
    ];

    /// Its URL segment, e.g. `onboard-service`.
    pub fn slug(self) -> &'static str {
        match self {
            Template::OnboardService => "onboard-service",
            Template::CreateDeployment => "create-deployment",
            Template::AddDatabase => "add-database",
            Template::ApplySchema => "apply-schema",
        }
    }

    /// The template a URL segment names.
    pub fn from_slug(slug: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.slug() == slug)
    }
}

/// A scaffold template the platform offers for new services, with its versions, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scaffold {
    /// The template's name, e.g. `go-service`.
    pub name: String,
    /// Its released versions, newest first, e.g. `["1.4.0", "1.3.2"]`.
    pub versions: Vec<String>,
}

/// Checks that an Onboard Service form names one of the platform's `scaffolds` and one of its versions.
/// An empty list (a deployment that configures none) accepts any well-formed template.
pub fn validate_scaffold(form: &OnboardForm, scaffolds: &[Scaffold]) -> Validation {
    if scaffolds.is_empty() {
        return Ok(());
    }
    let Some(scaffold) = scaffolds.iter().find(|s| s.name == form.template) else {
        let names: Vec<&str> = scaffolds.iter().map(|s| s.name.as_str()).collect();
        return Err(FieldError::new(
            "template",
            format!(
                "Choose one of the platform's templates: {}.",
                names.join(", ")
            ),
        ));
    };
    if !scaffold.versions.contains(&form.template_version) {
        return Err(FieldError::new(
            "template_version",
            format!(
                "{} has versions {}.",
                scaffold.name,
                scaffold.versions.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Body of Onboard Service: `POST /api/v1/templates/onboard-service/{preview,submit}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OnboardForm {
    /// The new service's name (a DNS label); its repository is `<organisation>/<name>`.
    pub name: String,
    /// The owning team's slug: one of the user's teams (any known team for admins).
    pub owner: String,
    /// What it does, in a sentence.
    pub description: String,
    /// The scaffold template, e.g. `go-service`.
    pub template: String,
    /// The scaffold template's version, e.g. `1.4.0`.
    pub template_version: String,
    /// Whether dev follows every green build of main.
    pub auto_deploy: bool,
    /// The first dev build, if the repository already has a green one; otherwise the server picks the newest
    /// green build, or none yet (see [`NO_BUILD_YET`]).
    pub build: Option<String>,
}

/// The version a first dev Release carries when the repository has no green build yet: git's null object
/// id, shortened. With autoDeploy on, the release operator moves dev to the first green build.
pub const NO_BUILD_YET: &str = "0000000";

/// Body of Create deployment: `POST /api/v1/services/{name}/templates/create-deployment/{preview,submit}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CreateDeploymentForm {
    /// The environment.
    pub environment: String,
    /// A green build of the service (`GET /api/v1/services/{name}/builds`).
    pub build: String,
    /// Databases to bind, by name; each must exist in the environment.
    pub databases: Vec<String>,
}

/// Body of Add Database: `POST /api/v1/services/{name}/templates/add-database/{preview,submit}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AddDatabaseForm {
    /// The environment.
    pub environment: String,
    /// The database's name.
    pub name: String,
    /// `small`, `medium` or `large`.
    pub size: String,
}

/// Database sizes the platform offers, as forms spell them.
pub const DATABASE_SIZES: [&str; 3] = ["small", "medium", "large"];

/// Body of Apply database schema: `POST /api/v1/services/{name}/templates/apply-schema/{preview,submit}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApplySchemaForm {
    /// The environment.
    pub environment: String,
    /// The database (empty: the service's own, named like the service).
    pub database: String,
    /// A published schema version (`GET /api/v1/services/{name}/schema-versions`).
    pub version: String,
}

/// Checks an Onboard Service form's fields on their own (team membership and name clashes need the
/// server's data and are checked there).
pub fn validate_onboard(form: &OnboardForm) -> Validation {
    validate_label("name", &form.name)?;
    validate_name_in_environment("name", &form.name, DEV)?;
    validate_label("owner", &form.owner)?;
    validate_description("description", &form.description)?;
    validate_label("template", &form.template)?;
    validate_template_version("template_version", &form.template_version)?;
    if let Some(build) = &form.build {
        validate_build_id("build", build)?;
    }
    Ok(())
}

/// Checks a Create deployment form against the platform's `environments`.
pub fn validate_create_deployment(
    form: &CreateDeploymentForm,
    environments: &[String],
) -> Validation {
    validate_environment("environment", &form.environment, environments)?;
    validate_build_id("build", &form.build)?;
    if form.databases.len() > 8 {
        return Err(FieldError::new("databases", "At most 8 databases."));
    }
    for (index, database) in form.databases.iter().enumerate() {
        validate_database_name("databases", database)?;
        if form.databases[..index].contains(database) {
            return Err(FieldError::new(
                "databases",
                format!("{database} is listed twice."),
            ));
        }
    }
    Ok(())
}

/// Checks an Add Database form against the platform's `environments`.
pub fn validate_add_database(form: &AddDatabaseForm, environments: &[String]) -> Validation {
    validate_environment("environment", &form.environment, environments)?;
    validate_database_name("name", &form.name)?;
    validate_name_in_environment("name", &form.name, &form.environment)?;
    if !DATABASE_SIZES.contains(&form.size.as_str()) {
        return Err(FieldError::new(
            "size",
            format!("Choose one of {}.", DATABASE_SIZES.join(", ")),
        ));
    }
    Ok(())
}

/// Checks an Apply database schema form against the platform's `environments`.
pub fn validate_apply_schema(form: &ApplySchemaForm, environments: &[String]) -> Validation {
    validate_environment("environment", &form.environment, environments)?;
    if !form.database.is_empty() {
        validate_label("database", &form.database)?;
        validate_name_in_environment("database", &form.database, &form.environment)?;
    }
    validate_schema_version("version", &form.version)
}

/// The schema version a migration file publishes: its leading number (`0004_add_refunds.sql` → `0004`).
pub fn schema_version_of(migration: &str) -> Option<&str> {
    let number = migration.split('_').next()?;
    (!number.is_empty() && number.chars().all(|c| c.is_ascii_digit())).then_some(number)
}

/// The migrations schema `version` consists of: every migration up to the one that publishes it, in order;
/// `None` when no migration publishes it.
pub fn migrations_up_to(migrations: &[String], version: &str) -> Option<Vec<String>> {
    let at = migrations
        .iter()
        .position(|m| schema_version_of(m) == Some(version))?;
    Some(migrations[..=at].to_vec())
}

/// A published schema version, for the Apply database schema form:
/// `GET /api/v1/services/{name}/schema-versions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaVersionView {
    /// e.g. `0004`.
    pub version: String,
    /// The migrations it consists of, in order.
    pub migrations: Vec<String>,
}

// ---------------------------------------------------------------------------------------------------------
// Paths

/// Path of a Component.
pub fn component_path(service: &str) -> String {
    format!("platform/registry/{service}.yaml")
}

/// Path of a Release.
pub fn release_path(service: &str, environment: &str) -> String {
    format!("platform/environments/{environment}/{service}-release.yaml")
}

/// Path of a Database.
pub fn database_path(database: &str, environment: &str) -> String {
    format!("platform/environments/{environment}/{database}-database.yaml")
}

/// Path of a DatabaseSchema.
pub fn schema_path(database: &str, environment: &str) -> String {
    format!("platform/environments/{environment}/{database}-schema.yaml")
}

/// Whether Tower may write `path`: a YAML file under `platform/`, with no way out of it. The operators'
/// derived files, infrastructure and packages have their own writers and are never touched.
pub fn is_writable_path(path: &str) -> bool {
    path.starts_with(PLATFORM_DIR)
        && path.ends_with(".yaml")
        && path
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '.' | '_'))
}

// ---------------------------------------------------------------------------------------------------------
// Intents and branches

/// What a pull request is for. Each intent has one deterministic branch, so asking twice updates the same
/// pull request and a retry after a failure finds what the first attempt pushed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Intent {
    /// Onboard Service.
    Onboard {
        /// The new service.
        service: String,
    },
    /// Create deployment.
    Deploy {
        /// The service.
        service: String,
        /// The environment.
        environment: String,
    },
    /// Add Database.
    Database {
        /// The service asking.
        service: String,
        /// The environment.
        environment: String,
        /// The database.
        database: String,
    },
    /// Apply database schema.
    Schema {
        /// The service asking.
        service: String,
        /// The environment.
        environment: String,
        /// The database.
        database: String,
    },
    /// Promote to prod.
    Promote {
        /// The service.
        service: String,
    },
    /// Roll prod back.
    Rollback {
        /// The service.
        service: String,
    },
    /// An owner's edit of one `platform/` file in the Config tab.
    Config {
        /// The service whose tab it was edited in.
        service: String,
        /// The file (a path [`crate::config::parse_platform_path`] reads).
        path: String,
    },
}

/// The kind of an [`Intent`], for lists and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntentKind {
    /// Onboard Service.
    Onboard,
    /// Create deployment.
    Deploy,
    /// Add Database.
    Database,
    /// Apply database schema.
    Schema,
    /// Promote to prod.
    Promote,
    /// Roll prod back.
    Rollback,
    /// Edit a file in the Config tab.
    Config,
}

impl IntentKind {
    /// Its branch segment and label suffix.
    pub fn slug(self) -> &'static str {
        match self {
            IntentKind::Onboard => "onboard",
            IntentKind::Deploy => "deploy",
            IntentKind::Database => "database",
            IntentKind::Schema => "schema",
            IntentKind::Promote => "promote",
            IntentKind::Rollback => "rollback",
            IntentKind::Config => "config",
        }
    }
}

/// The environment Promote and Rollback move.
pub const PROD: &str = "prod";
/// The environment Promote takes its version from.
pub const DEV: &str = "dev";

impl Intent {
    /// Its kind.
    pub fn kind(&self) -> IntentKind {
        match self {
            Intent::Onboard { .. } => IntentKind::Onboard,
            Intent::Deploy { .. } => IntentKind::Deploy,
            Intent::Database { .. } => IntentKind::Database,
            Intent::Schema { .. } => IntentKind::Schema,
            Intent::Promote { .. } => IntentKind::Promote,
            Intent::Rollback { .. } => IntentKind::Rollback,
            Intent::Config { .. } => IntentKind::Config,
        }
    }

    /// The service it concerns.
    pub fn service(&self) -> &str {
        match self {
            Intent::Onboard { service }
            | Intent::Deploy { service, .. }
            | Intent::Database { service, .. }
            | Intent::Schema { service, .. }
            | Intent::Promote { service }
            | Intent::Rollback { service }
            | Intent::Config { service, .. } => service,
        }
    }

    /// The environment it changes, if one.
    pub fn environment(&self) -> Option<&str> {
        match self {
            Intent::Onboard { .. } => None,
            Intent::Deploy { environment, .. }
            | Intent::Database { environment, .. }
            | Intent::Schema { environment, .. } => Some(environment),
            Intent::Promote { .. } | Intent::Rollback { .. } => Some(PROD),
            Intent::Config { path, .. } => {
                let environments = "platform/environments/";
                path.strip_prefix(environments)?.split('/').next()
            }
        }
    }

    /// Its branch: `tower/<kind>/<service>[/<environment>[/<database>]]`.
    pub fn branch(&self) -> String {
        let kind = self.kind().slug();
        match self {
            Intent::Onboard { service } => format!("{BRANCH_PREFIX}{kind}/{service}"),
            Intent::Deploy {
                service,
                environment,
            } => format!("{BRANCH_PREFIX}{kind}/{service}/{environment}"),
            Intent::Database {
                service,
                environment,
                database,
            }
            | Intent::Schema {
                service,
                environment,
                database,
            } => format!("{BRANCH_PREFIX}{kind}/{service}/{environment}/{database}"),
            Intent::Promote { service } | Intent::Rollback { service } => {
                format!("{BRANCH_PREFIX}{kind}/{service}/{PROD}")
            }
            // One branch per file: `…/<env>/<file name without .yaml>`, or the service alone for its
            // Component. A path that is not a platform file gives a branch `is_tower_branch` refuses.
            Intent::Config { service, path } => match crate::config::parse_platform_path(path) {
                Some(file) => match file.environment {
                    Some(environment) => {
                        let stem = path
                            .rsplit('/')
                            .next()
                            .and_then(|f| f.strip_suffix(".yaml"))
                            .unwrap_or_default();
                        format!("{BRANCH_PREFIX}{kind}/{service}/{environment}/{stem}")
                    }
                    None => format!("{BRANCH_PREFIX}{kind}/{service}"),
                },
                None => format!("{BRANCH_PREFIX}{kind}/{service}/invalid path"),
            },
        }
    }

    /// The labels its pull request carries: `tower` and `tower:<kind>`.
    pub fn labels(&self) -> Vec<String> {
        vec![
            TOWER_LABEL.to_string(),
            format!("{TOWER_LABEL}:{}", self.kind().slug()),
        ]
    }
}

/// What a Tower branch says about its pull request: kind, service and environment. Branches from older
/// histories (`tower/schema/<svc>/<env>`) parse too.
pub fn parse_branch(branch: &str) -> Option<(IntentKind, String, Option<String>)> {
    let rest = branch.strip_prefix(BRANCH_PREFIX)?;
    let mut parts = rest.split('/');
    let kind = match parts.next()? {
        "onboard" => IntentKind::Onboard,
        "deploy" => IntentKind::Deploy,
        "database" => IntentKind::Database,
        "schema" => IntentKind::Schema,
        "promote" => IntentKind::Promote,
        "rollback" => IntentKind::Rollback,
        "config" => IntentKind::Config,
        _ => return None,
    };
    let service = parts.next().filter(|s| !s.is_empty())?.to_string();
    let environment = parts.next().map(str::to_string);
    Some((kind, service, environment))
}

/// Whether Tower may push `branch`: the deterministic pattern `tower/<kind>/<label>[/<label>…]` with a known
/// kind and at most three DNS-1123 labels, so nothing git or the forge reads specially (`..`, `@{`, `.lock`,
/// `~`, `^`, `:`, a control character, a leading `-`, an empty segment) can ever name a ref Tower writes.
pub fn is_tower_branch(branch: &str) -> bool {
    let Some(rest) = branch.strip_prefix(BRANCH_PREFIX) else {
        return false;
    };
    let names: Vec<&str> = rest.split('/').skip(1).collect();
    parse_branch(branch).is_some()
        && (1..=3).contains(&names.len())
        && names
            .iter()
            .all(|name| validate_label("branch", name).is_ok())
}

// ---------------------------------------------------------------------------------------------------------
// Previews and pull requests

/// One file of a change, as it will be written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedFile {
    /// Its path in `application-repositories` (always under `platform/`).
    pub path: String,
    /// Its full new content.
    pub content: String,
    /// Its content on main now, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_content: Option<String>,
}

/// What a submit would do, without doing it: the answer of every `…/preview`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangePreview {
    /// The files written.
    pub files: Vec<RenderedFile>,
    /// A unified diff of every file against main.
    pub diff: String,
    /// The branch the change is pushed to.
    pub branch: String,
    /// The pull request's title.
    pub title: String,
    /// The pull request's body (Markdown).
    pub body: String,
}

/// Where a pull request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullState {
    /// Waiting for review.
    Open,
    /// Merged.
    Merged,
    /// Closed without merging.
    Closed,
}

/// CI on a pull request's head, rolled up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiState {
    /// Some check is queued or running.
    Pending,
    /// Every check passed.
    Success,
    /// A check failed.
    Failure,
    /// No checks reported (or not asked for: merged pull requests).
    None,
}

/// One check run on a pull request's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckView {
    /// e.g. `tower-ci / validate`.
    pub name: String,
    /// `queued`, `in_progress`, `completed`.
    pub status: String,
    /// When completed: `success`, `failure`, `neutral`, `cancelled`, `skipped`, `timed_out`, …
    pub conclusion: Option<String>,
    /// The check's page on the forge.
    pub url: Option<String>,
}

/// Rolls checks up: any failure fails, anything unfinished is pending, all passed is success.
pub fn roll_up_checks(checks: &[CheckView]) -> CiState {
    if checks.is_empty() {
        return CiState::None;
    }
    let failed = checks.iter().any(|c| {
        matches!(
            c.conclusion.as_deref(),
            Some("failure" | "cancelled" | "timed_out" | "action_required" | "startup_failure")
        )
    });
    if failed {
        CiState::Failure
    } else if checks.iter().any(|c| c.status != "completed") {
        CiState::Pending
    } else {
        CiState::Success
    }
}

/// A pull request Tower opened: the answer of every submit, Promote and Rollback, and the PRs tab's rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestView {
    /// Its number.
    pub number: u64,
    /// Its page on the forge.
    pub url: String,
    /// Its head branch.
    pub branch: String,
    /// Title.
    pub title: String,
    /// Open, merged or closed.
    pub state: PullState,
    /// Check runs on its head (open pull requests only).
    pub checks: Vec<CheckView>,
    /// The checks rolled up.
    pub ci: CiState,
    /// Whether it merges cleanly, when the forge has computed it.
    pub mergeable: Option<bool>,
    /// True when a submit updated an open pull request of the same intent instead of opening another.
    pub reused: bool,
    /// What it is for, from its branch.
    pub intent: Option<IntentKind>,
    /// The service, from its branch.
    pub service: Option<String>,
    /// The environment, from its branch.
    pub environment: Option<String>,
    /// Who opened it on the forge (Tower's App bot).
    pub author: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, when merged.
    pub merged_at: Option<String>,
    /// Its labels.
    pub labels: Vec<String>,
    /// Each reviewer's latest review, oldest first.
    #[serde(default)]
    pub reviews: Vec<ReviewView>,
    /// What keeps it from merging now (open pull requests only; empty when it can merge), from
    /// [`merge_blockers`].
    #[serde(default)]
    pub blockers: Vec<MergeBlocker>,
}

/// A reviewer's latest review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewView {
    /// Their login.
    pub reviewer: String,
    /// What they said.
    pub state: ReviewState,
    /// When (RFC 3339), when the forge says.
    pub at: Option<String>,
}

/// GitHub's review states, the ones that count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// `APPROVED`.
    Approved,
    /// `CHANGES_REQUESTED`.
    ChangesRequested,
    /// `COMMENTED`.
    Commented,
    /// `DISMISSED`.
    Dismissed,
}

impl ReviewState {
    /// From GitHub's `state` (`APPROVED`, …); `None` for `PENDING` (a draft review nobody else sees) and
    /// anything unknown.
    pub fn parse(github: &str) -> Option<Self> {
        match github {
            "APPROVED" => Some(ReviewState::Approved),
            "CHANGES_REQUESTED" => Some(ReviewState::ChangesRequested),
            "COMMENTED" => Some(ReviewState::Commented),
            "DISMISSED" => Some(ReviewState::Dismissed),
            _ => None,
        }
    }
}

/// One thing that keeps an open pull request from merging.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MergeBlocker {
    /// It conflicts with main.
    Conflicts,
    /// These checks concluded other than success, neutral or skipped.
    ChecksFailed {
        /// Their names.
        checks: Vec<String>,
    },
    /// Checks are queued or running.
    ChecksRunning,
    /// Nobody has approved it yet.
    ApprovalRequired,
    /// These reviewers asked for changes.
    ChangesRequested {
        /// Their logins.
        by: Vec<String>,
    },
}

impl MergeBlocker {
    /// A sentence for the PRs page.
    pub fn sentence(&self) -> String {
        match self {
            MergeBlocker::Conflicts => "Conflicts with main".into(),
            MergeBlocker::ChecksFailed { checks } => format!("Failed: {}", checks.join(", ")),
            MergeBlocker::ChecksRunning => "Checks are running".into(),
            MergeBlocker::ApprovalRequired => "Needs an approval".into(),
            MergeBlocker::ChangesRequested { by } => {
                format!("Changes requested by {}", by.join(", "))
            }
        }
    }
}

/// What keeps a pull request from merging: conflicts, then failed or running checks, then reviews (changes
/// requested, or no approval). Empty for a pull request that is not open.
pub fn merge_blockers(
    state: PullState,
    mergeable: Option<bool>,
    checks: &[CheckView],
    reviews: &[ReviewView],
) -> Vec<MergeBlocker> {
    if state != PullState::Open {
        return Vec::new();
    }
    let mut blockers = Vec::new();
    if mergeable == Some(false) {
        blockers.push(MergeBlocker::Conflicts);
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| {
            c.status == "completed"
                && !matches!(
                    c.conclusion.as_deref(),
                    Some("success" | "neutral" | "skipped")
                )
        })
        .map(|c| c.name.clone())
        .collect();
    if !failed.is_empty() {
        blockers.push(MergeBlocker::ChecksFailed { checks: failed });
    }
    if checks.iter().any(|c| c.status != "completed") {
        blockers.push(MergeBlocker::ChecksRunning);
    }
    let changes: Vec<String> = reviews
        .iter()
        .filter(|r| r.state == ReviewState::ChangesRequested)
        .map(|r| r.reviewer.clone())
        .collect();
    if !changes.is_empty() {
        blockers.push(MergeBlocker::ChangesRequested { by: changes });
    } else if !reviews.iter().any(|r| r.state == ReviewState::Approved) {
        blockers.push(MergeBlocker::ApprovalRequired);
    }
    blockers
}

/// Each reviewer's latest review that counts, oldest first: GitHub lists every review ever submitted, and a
/// later comment does not undo an approval.
pub fn latest_reviews(all: impl IntoIterator<Item = ReviewView>) -> Vec<ReviewView> {
    let mut latest: Vec<ReviewView> = Vec::new();
    for review in all {
        if review.state == ReviewState::Commented
            && latest.iter().any(|r| r.reviewer == review.reviewer)
        {
            continue;
        }
        latest.retain(|r| r.reviewer != review.reviewer);
        latest.push(review);
    }
    latest
}

// ---------------------------------------------------------------------------------------------------------
// Builds, Promote, Rollback

/// A green build of a service: `GET /api/v1/services/{name}/builds`, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildView {
    /// The version it is deployed as (short commit).
    pub version: String,
    /// The full commit id.
    pub commit: String,
    /// The commit message's first line, when CI recorded it.
    pub message: Option<String>,
    /// The commit's author, when CI recorded it.
    pub author: Option<String>,
    /// When the build finished (RFC 3339).
    pub finished_at: Option<String>,
}

/// One side of a Promote or Rollback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRef {
    /// The build's commit (short).
    pub version: String,
    /// `repository:tag`.
    pub image: String,
    /// The chart's revision (the same commit).
    pub chart_revision: String,
}

/// What Promote or Rollback would change: `GET /api/v1/services/{name}/{promote,rollback}/preview`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovePreview {
    /// The service.
    pub service: String,
    /// The environment moved (`prod`).
    pub environment: String,
    /// What runs there now.
    pub from: VersionRef,
    /// What it would run.
    pub to: VersionRef,
    /// Commits between the two, newest first (for a rollback: the commits taken out).
    pub commits: Vec<CommitView>,
    /// Migrations the target code ships that the environment's database lacks.
    pub missing_migrations: Vec<String>,
    /// When migrations are missing: the Apply database schema form to submit first.
    pub schema_first: Option<ApplySchemaForm>,
    /// The files, diff, branch and pull request text.
    pub change: ChangePreview,
    /// Open pull requests already moving this environment of this service.
    pub pending: Vec<PullRequestView>,
}

// ---------------------------------------------------------------------------------------------------------
// Releases

/// A release record: a commit that changed a Release file. `GET /api/v1/releases?service=&environment=`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseRecord {
    /// The commit in `application-repositories`.
    pub sha: String,
    /// The version the Release names after this commit, when it could be read.
    pub version: Option<String>,
    /// Who made the commit (login when the forge knows it, else the name).
    pub author: String,
    /// When (RFC 3339).
    pub at: String,
    /// The pull request that brought it, when there was one.
    pub pr_number: Option<u64>,
    /// The commit message's first line.
    pub message: String,
    /// Who approved the pull request that brought it, and when.
    #[serde(default)]
    pub approvals: Vec<ReviewView>,
    /// The service whose Release it changed, when one did (the Releases page lists every service's records
    /// when none is chosen).
    #[serde(default)]
    pub service: Option<String>,
}

/// One page of release records, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleasePage {
    /// At most [`RELEASES_PAGE`] records.
    pub records: Vec<ReleaseRecord>,
    /// Pass as `cursor` for the next page; absent on the last page. It is the last record's sha, so it stays
    /// valid when newer records arrive.
    pub next_cursor: Option<String>,
}

/// One file a release commit changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Its path.
    pub path: String,
    /// `added`, `modified`, `removed`.
    pub status: String,
    /// Its unified diff hunks, when the forge sent them.
    pub patch: Option<String>,
}

/// A release record with its diff: `GET /api/v1/releases/{sha}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseDetail {
    /// The record.
    pub record: ReleaseRecord,
    /// The service whose Release it changed, when one.
    pub service: Option<String>,
    /// The environment, when one.
    pub environment: Option<String>,
    /// The files it changed.
    pub files: Vec<FileChange>,
    /// A unified diff of all of them.
    pub diff: String,
    /// The commit's page on the forge.
    pub url: Option<String>,
    /// The pull request's page on the forge, when there was one.
    pub pr_url: Option<String>,
}

// ---------------------------------------------------------------------------------------------------------
// Diffs

/// A unified diff of `path` from `old` (absent: a new file) to `new`, with three lines of context.
pub fn unified_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let old_text = old.unwrap_or("");
    if old_text == new {
        return String::new();
    }
    let a: Vec<&str> = old_text.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = line_ops(&a, &b);
    let mut out = match old {
        Some(_) => format!("--- a/{path}\n+++ b/{path}\n"),
        None => format!("--- /dev/null\n+++ b/{path}\n"),
    };
    const CONTEXT: usize = 3;
    // Group the edit script into hunks: changes closer than twice the context share one.
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut start = 0;
    while start < changed.len() {
        let mut end = start;
        while end + 1 < changed.len() && changed[end + 1] - changed[end] <= 2 * CONTEXT {
            end += 1;
        }
        let from = changed[start].saturating_sub(CONTEXT);
        let to = (changed[end] + CONTEXT + 1).min(ops.len());
        let (mut a_start, mut b_start) = (0, 0);
        for op in &ops[..from] {
            match op {
                Op::Same(..) => {
                    a_start += 1;
                    b_start += 1;
                }
                Op::Removed(_) => a_start += 1,
                Op::Added(_) => b_start += 1,
            }
        }
        let (mut a_len, mut b_len) = (0, 0);
        let mut body = String::new();
        for op in &ops[from..to] {
            match op {
                Op::Same(line) => {
                    a_len += 1;
                    b_len += 1;
                    body.push_str(&format!(" {line}\n"));
                }
                Op::Removed(line) => {
                    a_len += 1;
                    body.push_str(&format!("-{line}\n"));
                }
                Op::Added(line) => {
                    b_len += 1;
                    body.push_str(&format!("+{line}\n"));
                }
            }
        }
        let position = |start: usize, len: usize| {
            if len == 0 {
                format!("{start},0")
            } else {
                format!("{},{len}", start + 1)
            }
        };
        out.push_str(&format!(
            "@@ -{} +{} @@\n{body}",
            position(a_start, a_len),
            position(b_start, b_len)
        ));
        start = end + 1;
    }
    out
}

/// The diff of several files, one after the other.
pub fn diff_files(files: &[RenderedFile]) -> String {
    files
        .iter()
        .map(|f| unified_diff(&f.path, f.previous_content.as_deref(), &f.content))
        .collect()
}

enum Op<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// A shortest edit script by longest common subsequence; the files Tower writes are a few dozen lines.
fn line_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    // Beyond this the table gets large; a whole-file replacement is still a correct diff.
    if n.saturating_mul(m) > 4_000_000 {
        let mut ops: Vec<Op<'a>> = a.iter().map(|l| Op::Removed(l)).collect();
        ops.extend(b.iter().map(|l| Op::Added(l)));
        return ops;
    }
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if a[i] == b[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n && j < m {
        if a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if table[at(i + 1, j)] >= table[at(i, j + 1)] {
            ops.push(Op::Removed(a[i]));
            i += 1;
        } else {
            ops.push(Op::Added(b[j]));
            j += 1;
        }
    }
    ops.extend(a[i..].iter().map(|l| Op::Removed(l)));
    ops.extend(b[j..].iter().map(|l| Op::Added(l)));
    ops
}

// ---------------------------------------------------------------------------------------------------------
// Rendering

#[cfg(feature = "crd")]
pub use render::*;

/// Files from forms, by serializing the platform's resource types (never by string templates).
#[cfg(feature = "crd")]
mod render {
    use std::collections::BTreeMap;

    use super::{
        AddDatabaseForm, DATABASE_SECRET_SUFFIX, DEV, NO_BUILD_YET, OnboardForm, RenderedFile,
        component_path, database_path, release_path, schema_path,
    };
    use crate::crd::{
        COMPONENT_LABEL, ChartRef, Component, ComponentSpec, Database, DatabaseBinding,
        DatabaseEngine, DatabaseSchema, DatabaseSchemaSpec, DatabaseSize, DatabaseSpec,
        ENVIRONMENT_LABEL, ImageRef, PLATFORM_NAMESPACE, Release, ReleaseSpec, TemplateRef,
    };

    /// What rendering needs to know about the installation.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RenderContext {
        /// The forge organisation: repositories are `<organisation>/<service>`.
        pub organisation: String,
        /// The image registry prefix: images are `<registry>/<service>`.
        pub registry: String,
    }

    fn labels(component: &str, environment: &str) -> BTreeMap<String, String> {
        [
            (COMPONENT_LABEL.to_string(), component.to_string()),
            (ENVIRONMENT_LABEL.to_string(), environment.to_string()),
        ]
        .into()
    }

    /// Serializes `value` into the file at `path`.
    pub fn to_file<T: serde::Serialize>(
        path: String,
        value: &T,
        previous_content: Option<String>,
    ) -> Result<RenderedFile, serde_saphyr::SerializeError> {
        Ok(RenderedFile {
            path,
            content: serde_saphyr::to_string(value)?,
            previous_content,
        })
    }

    /// The Component an Onboard Service form asks for.
    pub fn component(form: &OnboardForm, context: &RenderContext) -> Component {
        let mut component = Component::new(
            &form.name,
            ComponentSpec {
                owner: form.owner.clone(),
                repository: format!("{}/{}", context.organisation, form.name),
                template: TemplateRef {
                    name: form.template.clone(),
                    version: form.template_version.clone(),
                },
                description: form.description.clone(),
                depends_on: Vec::new(),
            },
        );
        component.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
        component
    }

    /// A new Release of `service` in `environment` at `version`, image and chart pinned to that commit.
    pub fn new_release(
        service: &str,
        environment: &str,
        version: &str,
        auto_deploy: bool,
        databases: Vec<DatabaseBinding>,
        context: &RenderContext,
    ) -> Release {
        let mut release = Release::new(
            &format!("{service}-{environment}"),
            ReleaseSpec {
                component: service.into(),
                environment: environment.into(),
                version: version.into(),
                image: ImageRef {
                    repository: format!("{}/{service}", context.registry),
                    tag: version.into(),
                },
                chart: ChartRef {
                    repository: format!("{}/{service}", context.organisation),
                    path: "chart".into(),
                    revision: version.into(),
                },
                auto_deploy,
                databases,
            },
        );
        release.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
        release.metadata.labels = Some(labels(service, environment));
        release
    }

    /// `release` moved to `version`: image tag and chart revision pinned to the same commit, everything else
    /// (bindings, auto-deploy, repositories, metadata) kept. Promote and Rollback are exactly this.
    pub fn pin_release(release: &Release, version: &str) -> Release {
        let mut moved = release.clone();
        moved.spec.version = version.into();
        moved.spec.image.tag = version.into();
        moved.spec.chart.revision = version.into();
        // Status belongs to the operator; a file in git carries none.
        moved.status = None;
        moved
    }

    /// The binding of `database`: the Secret its connection details go to, `<database>-db` unless the
    /// existing Release already names one.
    pub fn binding(database: &str, existing: Option<&Release>) -> DatabaseBinding {
        existing
            .and_then(|r| r.spec.databases.iter().find(|b| b.database == database))
            .cloned()
            .unwrap_or_else(|| DatabaseBinding {
                database: database.into(),
                secret_name: format!("{database}{DATABASE_SECRET_SUFFIX}"),
            })
    }

    /// Onboard Service: the Component and the first dev Release at `version` (or [`NO_BUILD_YET`]).
    pub fn render_onboard(
        form: &OnboardForm,
        version: Option<&str>,
        context: &RenderContext,
    ) -> Result<Vec<RenderedFile>, serde_saphyr::SerializeError> {
        let release = new_release(
            &form.name,
            DEV,
            version.unwrap_or(NO_BUILD_YET),
            form.auto_deploy,
            Vec::new(),
            context,
        );
        Ok(vec![
            to_file(component_path(&form.name), &component(form, context), None)?,
            to_file(release_path(&form.name, DEV), &release, None)?,
        ])
    }

    /// The Database an Add Database form asks for, labelled for the service that asked.
    pub fn database(service: &str, form: &AddDatabaseForm) -> Database {
        let size = match form.size.as_str() {
            "large" => DatabaseSize::Large,
            "medium" => DatabaseSize::Medium,
            _ => DatabaseSize::Small,
        };
        let mut database = Database::new(
            &format!("{}-{}", form.name, form.environment),
            DatabaseSpec {
                environment: form.environment.clone(),
                name: form.name.clone(),
                size,
                engine: DatabaseEngine::Postgres,
            },
        );
        database.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
        database.metadata.labels = Some(labels(service, &form.environment));
        database
    }

    /// Add Database: the Database file.
    pub fn render_database(
        service: &str,
        form: &AddDatabaseForm,
    ) -> Result<Vec<RenderedFile>, serde_saphyr::SerializeError> {
        Ok(vec![to_file(
            database_path(&form.name, &form.environment),
            &database(service, form),
            None,
        )?])
    }

    /// The DatabaseSchema applying `migrations` (published as `version`) to `database` in `environment`;
    /// an existing file keeps its metadata.
    pub fn schema(
        service: &str,
        database: &str,
        environment: &str,
        version: &str,
        migrations: Vec<String>,
        existing: Option<&DatabaseSchema>,
    ) -> DatabaseSchema {
        let spec = DatabaseSchemaSpec {
            database: database.into(),
            environment: environment.into(),
            version: version.into(),
            migrations,
        };
        match existing {
            Some(existing) => {
                let mut schema = existing.clone();
                schema.spec = spec;
                schema.status = None;
                schema
            }
            None => {
                let mut schema = DatabaseSchema::new(&format!("{database}-{environment}"), spec);
                schema.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
                schema.metadata.labels = Some(labels(service, environment));
                schema
            }
        }
    }

    /// Apply database schema: the DatabaseSchema file.
    pub fn render_schema(
        schema: &DatabaseSchema,
        previous_content: Option<String>,
    ) -> Result<Vec<RenderedFile>, serde_saphyr::SerializeError> {
        Ok(vec![to_file(
            schema_path(&schema.spec.database, &schema.spec.environment),
            schema,
            previous_content,
        )?])
    }

    /// A Release file (Create deployment, Promote, Rollback).
    pub fn render_release(
        release: &Release,
        previous_content: Option<String>,
    ) -> Result<Vec<RenderedFile>, serde_saphyr::SerializeError> {
        Ok(vec![to_file(
            release_path(&release.spec.component, &release.spec.environment),
            release,
            previous_content,
        )?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onboarding_takes_only_the_platforms_templates_and_their_versions() {
        let scaffolds = vec![Scaffold {
            name: "go-service".into(),
            versions: vec!["1.4.0".into(), "1.3.2".into()],
        }];
        let mut form = OnboardForm {
            template: "go-service".into(),
            template_version: "1.3.2".into(),
            ..OnboardForm::default()
        };
        assert!(validate_scaffold(&form, &scaffolds).is_ok());
        form.template_version = "1.5.0".into();
        assert_eq!(
            validate_scaffold(&form, &scaffolds).map_err(|e| e.field),
            Err("template_version")
        );
        form.template = "cobol-service".into();
        assert_eq!(
            validate_scaffold(&form, &scaffolds).map_err(|e| e.field),
            Err("template")
        );
        // A deployment that lists no templates leaves the choice to the well-formedness checks.
        assert!(validate_scaffold(&form, &[]).is_ok());
    }

    #[test]
    fn labels_refuse_paths_spaces_long_names_and_yaml_syntax() {
        for bad in [
            "../x", "A B", "", "-a", "a-", "a_b", "a: b", "*anchor", "{x}", "x\ny", "é",
        ] {
            assert!(validate_label("name", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            validate_label("name", &"a".repeat(300)).map_err(|e| e.field),
            Err("name")
        );
        assert!(validate_label("name", &"a".repeat(63)).is_ok());
        assert!(validate_label("name", "payments-2").is_ok());
    }

    #[test]
    fn builds_are_commit_ids() {
        assert!(validate_build_id("build", "3f2a9c1").is_ok());
        assert!(validate_build_id("build", &"a".repeat(40)).is_ok());
        for bad in ["3f2a9c", "3F2A9C1", "main", "3f2a9c1; rm", &"a".repeat(41)] {
            assert!(validate_build_id("build", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn forms_name_the_field_at_fault() {
        let mut form = OnboardForm {
            name: "invoices".into(),
            owner: "payments".into(),
            description: "Sends invoices: monthly, #1 & *fast*".into(),
            template: "go-service".into(),
            template_version: "1.4.0".into(),
            auto_deploy: true,
            build: None,
        };
        assert_eq!(validate_onboard(&form), Ok(()));
        form.template_version = "latest".into();
        assert_eq!(
            validate_onboard(&form).map_err(|e| e.field),
            Err("template_version")
        );
        form.owner = "Pay Ments".into();
        assert_eq!(validate_onboard(&form).map_err(|e| e.field), Err("owner"));

        let envs = vec!["dev".to_string(), "prod".to_string()];
        let deploy = CreateDeploymentForm {
            environment: "staging".into(),
            build: "3f2a9c1".into(),
            databases: vec![],
        };
        assert_eq!(
            validate_create_deployment(&deploy, &envs).map_err(|e| e.field),
            Err("environment")
        );
        let database = AddDatabaseForm {
            environment: "dev".into(),
            name: "orders".into(),
            size: "huge".into(),
        };
        assert_eq!(
            validate_add_database(&database, &envs).map_err(|e| e.field),
            Err("size")
        );
    }

    #[test]
    fn only_platform_files_are_writable() {
        assert!(is_writable_path(
            "platform/environments/prod/payments-release.yaml"
        ));
        for path in [
            "components/payments/values/prod.yaml",
            "platform/../components/x.yaml",
            "platform//x.yaml",
            "/platform/x.yaml",
            "infra/backstage/management.yaml",
            "platform/x.txt",
        ] {
            assert!(!is_writable_path(path), "{path}");
        }
    }

    #[test]
    fn branches_are_deterministic_per_intent_and_parse_back() {
        let promote = Intent::Promote {
            service: "payments".into(),
        };
        assert_eq!(promote.branch(), "tower/promote/payments/prod");
        assert_eq!(
            parse_branch(&promote.branch()),
            Some((IntentKind::Promote, "payments".into(), Some("prod".into())))
        );
        let schema = Intent::Schema {
            service: "payments".into(),
            environment: "prod".into(),
            database: "payments".into(),
        };
        assert_eq!(schema.branch(), "tower/schema/payments/prod/payments");
        let edit = Intent::Config {
            service: "payments".into(),
            path: "platform/environments/prod/payments-release.yaml".into(),
        };
        assert_eq!(edit.branch(), "tower/config/payments/prod/payments-release");
        assert!(is_tower_branch(&edit.branch()));
        assert_eq!(edit.environment(), Some("prod"));
        let component = Intent::Config {
            service: "payments".into(),
            path: "platform/registry/payments.yaml".into(),
        };
        assert_eq!(component.branch(), "tower/config/payments");
        assert_eq!(component.environment(), None);
        let outside = Intent::Config {
            service: "payments".into(),
            path: "components/payments/values/prod.yaml".into(),
        };
        assert!(!is_tower_branch(&outside.branch()));
        assert_eq!(parse_branch("feature/x"), None);
        assert_eq!(promote.labels(), ["tower", "tower:promote"]);
    }

    #[test]
    fn only_tower_branches_of_labels_are_pushable() {
        assert!(is_tower_branch("tower/promote/payments/prod"));
        assert!(is_tower_branch("tower/schema/payments/prod/payments"));
        assert!(is_tower_branch("tower/onboard/invoices"));
        for branch in [
            "main",
            "feature/x",
            "tower/unknown/payments",
            "tower/deploy",
            "tower/deploy/",
            "tower/deploy//prod",
            "tower/deploy/../main",
            "tower/deploy/pay.lock",
            "tower/deploy/pay@{1}",
            "tower/deploy/pay ments",
            "tower/deploy/pay\nments",
            "tower/deploy/-payments",
            "tower/deploy/Payments",
            "tower/deploy/a/b/c/d",
            "refs/heads/tower/deploy/payments",
        ] {
            assert!(!is_tower_branch(branch), "{branch:?}");
        }
    }

    #[test]
    fn schema_versions_are_the_newest_migrations_number() {
        let migrations: Vec<String> = ["0001_a.sql", "0002_b.sql", "0003_c.sql"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            migrations_up_to(&migrations, "0002"),
            Some(vec!["0001_a.sql".into(), "0002_b.sql".into()])
        );
        assert_eq!(migrations_up_to(&migrations, "0009"), None);
    }

    #[test]
    fn checks_roll_up_failure_first_then_pending() {
        let check = |status: &str, conclusion: Option<&str>| CheckView {
            name: "ci".into(),
            status: status.into(),
            conclusion: conclusion.map(String::from),
            url: None,
        };
        assert_eq!(roll_up_checks(&[]), CiState::None);
        assert_eq!(
            roll_up_checks(&[check("completed", Some("success")), check("queued", None)]),
            CiState::Pending
        );
        assert_eq!(
            roll_up_checks(&[check("completed", Some("failure")), check("queued", None)]),
            CiState::Failure
        );
        assert_eq!(
            roll_up_checks(&[check("completed", Some("success"))]),
            CiState::Success
        );
    }

    #[test]
    fn a_unified_diff_shows_only_the_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = unified_diff("x.yaml", Some(old), new);
        assert_eq!(
            diff,
            "--- a/x.yaml\n+++ b/x.yaml\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        let created = unified_diff("y.yaml", None, "k: v\n");
        assert_eq!(
            created,
            "--- /dev/null\n+++ b/y.yaml\n@@ -0,0 +1,1 @@\n+k: v\n"
        );
        assert_eq!(unified_diff("z", Some("same\n"), "same\n"), "");
    }

    #[cfg(feature = "crd")]
    #[test]
    fn onboarding_renders_a_component_and_a_dev_release_that_read_back() {
        let context = RenderContext {
            organisation: "acme".into(),
            registry: "ghcr.io/acme".into(),
        };
        let form = OnboardForm {
            name: "invoices".into(),
            owner: "payments".into(),
            description: "key: value # not a comment, & not an anchor".into(),
            template: "go-service".into(),
            template_version: "1.4.0".into(),
            auto_deploy: true,
            build: None,
        };
        let files = render_onboard(&form, Some("3f2a9c1"), &context).expect("renders");
        let paths: Vec<_> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "platform/registry/invoices.yaml",
                "platform/environments/dev/invoices-release.yaml"
            ]
        );
        assert!(files.iter().all(|f| is_writable_path(&f.path)));
        let component: crate::crd::Component =
            serde_saphyr::from_str(&files[0].content).expect("component parses");
        assert_eq!(component.spec.description, form.description);
        let release: crate::crd::Release =
            serde_saphyr::from_str(&files[1].content).expect("release parses");
        assert_eq!(release.spec.image.tag, "3f2a9c1");
        assert_eq!(release.spec.chart.revision, release.spec.image.tag);
        assert!(release.spec.auto_deploy);
    }

    #[cfg(feature = "crd")]
    #[test]
    fn pinning_a_release_keeps_its_bindings() {
        let context = RenderContext {
            organisation: "acme".into(),
            registry: "ghcr.io/acme".into(),
        };
        let bindings = vec![binding("payments", None)];
        let release = new_release("payments", "prod", "1111111", false, bindings, &context);
        let moved = pin_release(&release, "2222222");
        assert_eq!(moved.spec.databases, release.spec.databases);
        assert_eq!(moved.spec.image.tag, "2222222");
        assert_eq!(moved.spec.chart.revision, "2222222");
        assert_eq!(moved.metadata, release.metadata);
    }
}
