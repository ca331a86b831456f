//! Config: a service's platform resources as git intent beside the live objects, the drift between them, and
//! the check a `platform/` file goes through: in the browser as the owner types, and on the server again
//! before a pull request is opened.
//!
//! The check is [`validate`]: YAML syntax ([`yaml`]), the CRD's OpenAPI v3 schema ([`schema`]), then Tower's
//! own rules, the ones the golden paths' forms enforce (names are DNS labels, the file's environment is its
//! folder's, a Release's version is a green build with image and chart pinned to it, bound databases exist).
//! Every diagnostic carries a line and a column, and a field when one is to blame.

pub mod schema;
pub mod yaml;

use serde::{Deserialize, Serialize};

use crate::delivery::{NO_BUILD_YET, is_writable_path, validate_build_id, validate_label};
use crate::fleet::CommitView;
use yaml::{Node, Value};

pub use yaml::Position;

/// One thing wrong with a file: where, which field, and what to change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Diagnostic {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
    /// The field to blame (`spec.databases[0].database`); empty for a syntax error.
    pub field: String,
    /// What to change, in a sentence.
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic at `at` on `field`.
    pub fn new(at: Position, field: &str, message: impl Into<String>) -> Self {
        Diagnostic {
            line: at.line.max(1),
            column: at.column.max(1),
            field: field.to_string(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// The platform kinds Tower writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PlatformKind {
    /// `platform/registry/<svc>.yaml`.
    Component,
    /// `platform/environments/<env>/<svc>-release.yaml`.
    Release,
    /// `platform/environments/<env>/<db>-database.yaml`.
    Database,
    /// `platform/environments/<env>/<db>-schema.yaml`.
    DatabaseSchema,
}

impl PlatformKind {
    /// The `kind:` of its resources.
    pub fn name(self) -> &'static str {
        match self {
            PlatformKind::Component => "Component",
            PlatformKind::Release => "Release",
            PlatformKind::Database => "Database",
            PlatformKind::DatabaseSchema => "DatabaseSchema",
        }
    }
}

/// What a `platform/` path holds, read from the path alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformPath {
    /// The kind its file must hold.
    pub kind: PlatformKind,
    /// The service (Component, Release) or database (Database, DatabaseSchema) it is named after.
    pub name: String,
    /// Its environment folder, except for a Component.
    pub environment: Option<String>,
}

/// Reads a `platform/` path: `platform/registry/<svc>.yaml` or `platform/environments/<env>/<name>-<kind>.yaml`
/// with DNS-label names. Anything else is not a file Tower edits.
pub fn parse_platform_path(path: &str) -> Option<PlatformPath> {
    if !is_writable_path(path) {
        return None;
    }
    let parts: Vec<&str> = path.split('/').collect();
    let label = |s: &str| validate_label("path", s).is_ok();
    match parts.as_slice() {
        ["platform", "registry", file] => {
            let name = file.strip_suffix(".yaml")?;
            label(name).then(|| PlatformPath {
                kind: PlatformKind::Component,
                name: name.to_string(),
                environment: None,
            })
        }
        ["platform", "environments", environment, file] if label(environment) => {
            let stem = file.strip_suffix(".yaml")?;
            let (name, kind) = [
                ("-release", PlatformKind::Release),
                ("-database", PlatformKind::Database),
                ("-schema", PlatformKind::DatabaseSchema),
            ]
            .into_iter()
            .find_map(|(suffix, kind)| stem.strip_suffix(suffix).map(|name| (name, kind)))?;
            label(name).then(|| PlatformPath {
                kind,
                name: name.to_string(),
                environment: Some((*environment).to_string()),
            })
        }
        _ => None,
    }
}

/// What Tower's own rules need beyond the file. A list that is `None` is not known (then its rule is
/// skipped, never failed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleContext {
    /// The service whose Config tab the file is edited from.
    pub service: String,
    /// The platform's environments.
    pub environments: Vec<String>,
    /// The service's green builds (their commit ids).
    pub green_builds: Option<Vec<String>>,
    /// The databases that exist, per environment.
    pub databases: Option<Vec<DatabaseRef>>,
}

/// A database in an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseRef {
    /// The environment.
    pub environment: String,
    /// The Database's name.
    pub name: String,
}

/// The fields of `metadata` a file in git may carry; the rest are the cluster's.
const METADATA_FIELDS: [&str; 4] = ["name", "namespace", "labels", "annotations"];

/// Everything wrong with `text` as the file at `path`, in line order; empty when it may be proposed.
pub fn validate(path: &str, text: &str, context: &RuleContext) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(target) = parse_platform_path(path) else {
        out.push(Diagnostic::new(
            Position::START,
            "path",
            format!("`{path}` is not a platform file Tower edits."),
        ));
        return out;
    };
    let (root, spellings) = match yaml::read(text) {
        Ok(yaml::Document {
            root: Some(root),
            spellings,
        }) => (root, spellings),
        Ok(yaml::Document { root: None, .. }) => {
            out.push(Diagnostic::new(
                Position::START,
                "",
                format!(
                    "The file is empty; it should hold a {}.",
                    target.kind.name()
                ),
            ));
            return out;
        }
        Err(error) => {
            out.push(Diagnostic::new(error.at, "", error.message));
            return out;
        }
    };
    let Value::Mapping(entries) = &root.value else {
        out.push(Diagnostic::new(
            root.at,
            "",
            format!(
                "A {} is a mapping (`key: value` lines), not {}.",
                target.kind.name(),
                root.describe()
            ),
        ));
        return out;
    };
    check_header(&root, &target, &mut out);
    if let Some(resource) = schema::schema_of(target.kind.name()) {
        for entry in entries {
            match entry.key.as_str() {
                "apiVersion" | "kind" | "metadata" => {}
                "status" => out.push(Diagnostic::new(
                    entry.key_at,
                    "status",
                    "`status` is written by the platform's operators; a file in git carries none.",
                )),
                key => match resource.schema.property(key) {
                    Some(child) => schema::check(&entry.value, entry.key_at, key, child, &mut out),
                    None => out.push(Diagnostic::new(
                        entry.key_at,
                        key,
                        format!(
                            "Unknown field `{key}`: a {} has apiVersion, kind, metadata and spec.",
                            target.kind.name()
                        ),
                    )),
                },
            }
        }
        for required in &resource.schema.required {
            if root.entry(required).is_none() {
                out.push(Diagnostic::new(
                    Position::START,
                    required,
                    format!("`{required}` is required and missing."),
                ));
            }
        }
    }
    check_rules(&root, &target, context, &mut out);
    spell_out(&mut out, &spellings);
    out.sort();
    out.dedup();
    out
}

/// Names a value by how it was written where Kubernetes reads it as other than its text: a diagnostic says
/// "not `no`, which Kubernetes reads as the boolean false" where [`Node::describe`] alone would say "not the
/// boolean false" of a line that has no `false` on it. The checks describe a node by its value; a diagnostic
/// at a spelled value's place gets that description replaced.
fn spell_out(out: &mut [Diagnostic], spellings: &[yaml::Spelling]) {
    for diagnostic in out {
        let Some(spelling) = spellings
            .iter()
            .find(|s| s.at.line == diagnostic.line && s.at.column == diagnostic.column)
        else {
            continue;
        };
        diagnostic.message =
            diagnostic
                .message
                .replacen(&spelling.plainly(), &spelling.spelled(), 1);
    }
}

/// `apiVersion`, `kind` and `metadata`: what every platform resource carries and the CRD schema leaves out.
fn check_header(root: &Node, target: &PlatformPath, out: &mut Vec<Diagnostic>) {
    let kind = target.kind.name();
    match root.entry("apiVersion") {
        None => out.push(Diagnostic::new(
            Position::START,
            "apiVersion",
            format!("`apiVersion` is required: {}.", schema::API_VERSION),
        )),
        Some(entry) if entry.value.as_str() != Some(schema::API_VERSION) => {
            out.push(Diagnostic::new(
                entry.value.at,
                "apiVersion",
                format!(
                    "`apiVersion` must be {}, not {}.",
                    schema::API_VERSION,
                    entry.value.describe()
                ),
            ))
        }
        Some(_) => {}
    }
    match root.entry("kind") {
        None => out.push(Diagnostic::new(
            Position::START,
            "kind",
            format!("`kind` is required: this file holds a {kind}."),
        )),
        Some(entry) if entry.value.as_str() != Some(kind) => out.push(Diagnostic::new(
            entry.value.at,
            "kind",
            format!(
                "This file holds a {kind} (its path says so), not {}.",
                entry.value.describe()
            ),
        )),
        Some(_) => {}
    }
    let Some(metadata) = root.entry("metadata") else {
        out.push(Diagnostic::new(
            Position::START,
            "metadata.name",
            "`metadata.name` is required and missing.",
        ));
        return;
    };
    let Value::Mapping(fields) = &metadata.value.value else {
        out.push(Diagnostic::new(
            metadata.value.at,
            "metadata",
            format!(
                "`metadata` should be a mapping, not {}.",
                metadata.value.describe()
            ),
        ));
        return;
    };
    for field in fields {
        let path = schema::join("metadata", &field.key);
        match field.key.as_str() {
            "name" | "namespace" => label_at(&field.value, &path, out),
            "labels" => string_map(&field.value, &path, StringMap::Labels, out),
            "annotations" => string_map(&field.value, &path, StringMap::Annotations, out),
            other => out.push(Diagnostic::new(
                field.key_at,
                &path,
                format!(
                    "`metadata.{other}` is set by the cluster or not used here; a file in git carries {}.",
                    METADATA_FIELDS.join(", ")
                ),
            )),
        }
    }
    if metadata.value.entry("name").is_none() {
        out.push(Diagnostic::new(
            metadata.key_at,
            "metadata.name",
            "`metadata.name` is required and missing.",
        ));
    }
}

/// A DNS label at `node`, reported as `field`.
fn label_at(node: &Node, field: &str, out: &mut Vec<Diagnostic>) {
    match node.as_str() {
        Some(value) => {
            if let Err(error) = validate_label("name", value) {
                out.push(Diagnostic::new(
                    node.at,
                    field,
                    format!("`{field}`: {}", error.message),
                ));
            }
        }
        None => out.push(Diagnostic::new(
            node.at,
            field,
            format!("`{field}` should be a string, not {}.", node.describe()),
        )),
    }
}

/// Which of metadata's maps: the API server checks their keys and values (apimachinery's `ValidateLabels`
/// and `ValidateAnnotations`) and refuses the object otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StringMap {
    /// Keys are qualified names, values at most 63 name characters.
    Labels,
    /// Keys are qualified names (checked lowercased), values any text, 256 KiB in all.
    Annotations,
}

/// The most an object's annotations may hold, keys and values together.
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// Labels and annotations: a mapping of strings to strings, with the keys and values the API server allows.
fn string_map(node: &Node, field: &str, map: StringMap, out: &mut Vec<Diagnostic>) {
    let Value::Mapping(entries) = &node.value else {
        out.push(Diagnostic::new(
            node.at,
            field,
            format!(
                "`{field}` should be a mapping of strings, not {}.",
                node.describe()
            ),
        ));
        return;
    };
    let mut size = 0;
    for entry in entries {
        let path = format!("{field}.{}", entry.key);
        let key = match map {
            StringMap::Labels => entry.key.clone(),
            StringMap::Annotations => entry.key.to_ascii_lowercase(),
        };
        if let Err(problem) = qualified_name(&key) {
            out.push(Diagnostic::new(
                entry.key_at,
                &path,
                format!("`{}` is not a valid key of `{field}`: {problem}", entry.key),
            ));
        }
        let Some(value) = entry.value.as_str() else {
            out.push(Diagnostic::new(
                entry.value.at,
                &path,
                format!(
                    "`{path}` should be a string, not {}. Quote it.",
                    entry.value.describe()
                ),
            ));
            continue;
        };
        size += entry.key.len() + value.len();
        if map == StringMap::Labels && !name_part(value, true) {
            out.push(Diagnostic::new(
                entry.value.at,
                &path,
                format!(
                    "`{path}`: a label's value is at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit; {value:?} is not."
                ),
            ));
        }
    }
    if map == StringMap::Annotations && size > ANNOTATIONS_MAX_BYTES {
        out.push(Diagnostic::new(
            node.at,
            field,
            format!(
                "The annotations take {size} bytes; the cluster stores at most 256 KiB of them."
            ),
        ));
    }
}

/// Whether `key` is a Kubernetes qualified name (`name` or `prefix/name`, the prefix a DNS subdomain), and
/// what is wrong with it if not.
fn qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !dns_subdomain(prefix)
    {
        return Err(format!(
            "its prefix {prefix:?} should be a DNS name (lowercase letters, digits, '-' and '.', at most 253 characters)."
        ));
    }
    if name.contains('/') {
        return Err("a key has at most one '/'.".into());
    }
    if !name_part(name, false) {
        return Err(format!(
            "{name:?} should be 1 to 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit."
        ));
    }
    Ok(())
}

/// A qualified name's name part or a label's value: at most 63 letters, digits, `-`, `_` and `.`, starting
/// and ending with a letter or digit; empty only if `empty` is allowed.
fn name_part(text: &str, empty: bool) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if text.is_empty() {
        return empty;
    }
    text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && edge(text.chars().next())
        && edge(text.chars().last())
}

/// A DNS subdomain (RFC 1123): dot-separated lowercase labels, at most 253 characters in all.
fn dns_subdomain(text: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    text.len() <= 253
        && text.split('.').all(|label| {
            label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && edge(label.chars().next())
                && edge(label.chars().last())
        })
}

/// The golden paths' rules, by kind. Each looks only at fields of the right type (the schema reports the
/// others), so one mistake is reported once.
fn check_rules(
    root: &Node,
    target: &PlatformPath,
    context: &RuleContext,
    out: &mut Vec<Diagnostic>,
) {
    let Some(spec) = root.get("spec") else {
        return;
    };
    if let (Some(environment), Some((written, at))) =
        (target.environment.as_deref(), text_at(spec, "environment"))
    {
        if written != environment {
            out.push(Diagnostic::new(
                at,
                "spec.environment",
                format!(
                    "`spec.environment` says {written}, but the file is in platform/environments/{environment}/."
                ),
            ));
        } else if !context.environments.is_empty()
            && !context.environments.iter().any(|e| e == written)
        {
            out.push(Diagnostic::new(
                at,
                "spec.environment",
                format!(
                    "Unknown environment {written}; the platform has {}.",
                    context.environments.join(", ")
                ),
            ));
        }
    }
    match target.kind {
        PlatformKind::Component => {
            if let Some((owner, at)) = text_at(spec, "owner")
                && let Err(error) = validate_label("owner", owner)
            {
                out.push(Diagnostic::new(
                    at,
                    "spec.owner",
                    format!("`spec.owner`: {}", error.message),
                ));
            }
            for (i, dependency) in sequence(spec, "dependsOn").enumerate() {
                if let Some(name) = dependency.as_str()
                    && let Err(error) = validate_label("dependsOn", name)
                {
                    let field = format!("spec.dependsOn[{i}]");
                    out.push(Diagnostic::new(
                        dependency.at,
                        &field,
                        format!("`{field}`: {}", error.message),
                    ));
                }
            }
        }
        PlatformKind::Release => release_rules(spec, target, context, out),
        PlatformKind::Database => {
            if let Some((name, at)) = text_at(spec, "name")
                && name != target.name
            {
                out.push(Diagnostic::new(
                    at,
                    "spec.name",
                    format!(
                        "`spec.name` says {name}, but the file is {}'s.",
                        target.name
                    ),
                ));
            }
        }
        PlatformKind::DatabaseSchema => {
            if let Some((database, at)) = text_at(spec, "database")
                && database != target.name
            {
                out.push(Diagnostic::new(
                    at,
                    "spec.database",
                    format!(
                        "`spec.database` says {database}, but the file is {}'s.",
                        target.name
                    ),
                ));
            }
        }
    }
}

/// The string at `key` of `node`, and where it is.
fn text_at<'a>(node: &'a Node, key: &str) -> Option<(&'a str, Position)> {
    node.get(key).and_then(|n| n.as_str().map(|s| (s, n.at)))
}

/// The items of the list `key` of `node` (none when it is missing or not a list).
fn sequence<'a>(node: &'a Node, key: &str) -> impl Iterator<Item = &'a Node> {
    let items: &[Node] = match node.get(key).map(|n| &n.value) {
        Some(Value::Sequence(items)) => items,
        _ => &[],
    };
    items.iter()
}

/// A Release: its component is the service of its path, its version a green build (or none yet) with image
/// tag and chart revision pinned to it, and its bindings name databases of its environment.
fn release_rules(
    spec: &Node,
    target: &PlatformPath,
    context: &RuleContext,
    out: &mut Vec<Diagnostic>,
) {
    if let Some((component, at)) = text_at(spec, "component")
        && component != target.name
    {
        out.push(Diagnostic::new(
            at,
            "spec.component",
            format!(
                "`spec.component` says {component}, but this is {}'s Release.",
                target.name
            ),
        ));
    }
    if let Some((version, at)) = text_at(spec, "version") {
        if let Err(error) = validate_build_id("version", version) {
            out.push(Diagnostic::new(
                at,
                "spec.version",
                format!("`spec.version`: {}", error.message),
            ));
        } else if let Some(green) = &context.green_builds {
            let known =
                |build: &String| build.starts_with(version) || version.starts_with(build.as_str());
            if version != NO_BUILD_YET && !green.iter().any(known) {
                out.push(Diagnostic::new(
                    at,
                    "spec.version",
                    format!(
                        "{version} is not a green build of {}; choose a build whose pipeline passed.",
                        target.name
                    ),
                ));
            }
        }
        for (parent, key) in [("image", "tag"), ("chart", "revision")] {
            if let Some((pinned, at)) = spec.get(parent).and_then(|p| text_at(p, key))
                && pinned != version
            {
                let field = format!("spec.{parent}.{key}");
                out.push(Diagnostic::new(
                    at,
                    &field,
                    format!("`{field}` must be the version's commit, {version}, not {pinned}."),
                ));
            }
        }
    }
    for (i, binding) in sequence(spec, "databases").enumerate() {
        if let Some((database, at)) = text_at(binding, "database") {
            let field = format!("spec.databases[{i}].database");
            if let Err(error) = validate_label("database", database) {
                out.push(Diagnostic::new(
                    at,
                    &field,
                    format!("`{field}`: {}", error.message),
                ));
            } else if let (Some(databases), Some(environment)) =
                (&context.databases, &target.environment)
                && !databases
                    .iter()
                    .any(|d| &d.environment == environment && d.name == database)
            {
                out.push(Diagnostic::new(
                        at,
                        &field,
                        format!("There is no database {database} in {environment}; add it first (Add Database)."),
                    ));
            }
        }
        if let Some((secret, at)) = text_at(binding, "secretName")
            && let Err(error) = validate_label("secretName", secret)
        {
            let field = format!("spec.databases[{i}].secretName");
            out.push(Diagnostic::new(
                at,
                &field,
                format!("`{field}`: {}", error.message),
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Drift

/// Where a live object's spec differs from git's: the fields (`spec.version`, `spec.databases[1]`) whose
/// values differ, are only in git, or are only live. Both sides are JSON as the typed resource serializes it,
/// so a default the cluster filled in is not drift.
pub fn drifted_fields(
    intent: &serde_json::Value,
    live: &serde_json::Value,
    path: &str,
) -> Vec<String> {
    use serde_json::Value as Json;
    let mut out = Vec::new();
    match (intent, live) {
        (Json::Object(a), Json::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let field = schema::join(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => out.extend(drifted_fields(x, y, &field)),
                    _ => out.push(field),
                }
            }
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                out.extend(drifted_fields(x, y, &format!("{path}[{i}]")));
            }
        }
        (a, b) if a != b => out.push(path.to_string()),
        _ => {}
    }
    out
}

// ---------------------------------------------------------------------------------------------------------
// The Config tab's answers

/// A service's Config tab: per environment, every resource of the service in its four states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceConfig {
    /// The service.
    pub service: String,
    /// Its Component (`platform/registry/<svc>.yaml`), which no environment owns.
    pub registry: Option<ConfigResource>,
    /// One section per environment, in the platform's order.
    pub environments: Vec<EnvironmentConfig>,
    /// What the editor's rules need, so the browser checks exactly what the server will.
    pub rules: RuleContext,
    /// Whether this Tower reads and writes git (a GitHub App is configured); without it there is no intent
    /// to show and no pull request to open.
    pub git_configured: bool,
}

/// One environment's resources of a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentConfig {
    /// The environment.
    pub environment: String,
    /// Release, Databases and DatabaseSchemas: intent and applied.
    pub resources: Vec<ConfigResource>,
    /// The operators' files for the service here (`components/<svc>/environments/<env>/…`).
    pub derived: Vec<DerivedFile>,
    /// What runs: the Argo CD Application, ExternalSecrets and Crossplane claims, read-only.
    pub running: Vec<RunningObject>,
}

/// One platform resource: the file in git and the object on the management cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigResource {
    /// Its kind.
    pub kind: PlatformKind,
    /// Its `metadata.name`.
    pub name: String,
    /// The file in git, when there is one.
    pub intent: Option<IntentFile>,
    /// The object as it lives, as YAML without `managedFields` and the cluster's bookkeeping.
    pub applied: Option<String>,
    /// Spec fields that differ between git and the cluster; empty when in sync or one side is missing.
    pub drift: Vec<String>,
    /// The unified diff of git's spec against the live spec, when they drift.
    pub drift_diff: Option<String>,
}

/// A `platform/` file on the base branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntentFile {
    /// Its path in `application-repositories`.
    pub path: String,
    /// Its content.
    pub content: String,
    /// The last commit that changed it.
    pub commit: Option<CommitView>,
}

/// A file the operators derive from intent; Tower shows it and never writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DerivedFile {
    /// Its path.
    pub path: String,
    /// Its content.
    pub content: String,
}

/// A read-only object that runs the service: an Argo CD Application, an ExternalSecret, a Crossplane claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningObject {
    /// `Application`, `ExternalSecret`, `PostgreSQLInstance`, …
    pub kind: String,
    /// Its name.
    pub name: String,
    /// A word on its state (`Synced · Healthy`, `SecretSynced`, `Ready`), when it reports one.
    pub state: Option<String>,
    /// The object as YAML, stripped like the applied objects.
    pub yaml: String,
}

/// An owner's edit of one `platform/` file: the body of the Config preview and pull request routes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditFile {
    /// The file's path.
    pub path: String,
    /// Its whole new content.
    pub content: String,
}

/// The answer when a file does not pass [`validate`]: what the editor shows, from the server's own check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected {
    /// What is wrong, in line order.
    pub diagnostics: Vec<Diagnostic>,
}

// ---------------------------------------------------------------------------------------------------------
// The fleet-wide /config page

/// The platform's own configuration: what Argo CD generates from where, the clusters, and Tower's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformConfig {
    /// Argo CD's ApplicationSets on the management cluster, by name.
    pub application_sets: Vec<ApplicationSetView>,
    /// The clusters Tower reads, management first.
    pub clusters: Vec<ClusterView>,
    /// Tower's configuration as loaded; a secret only says whether it is set.
    pub settings: Vec<Setting>,
}

/// One ApplicationSet and the Applications it generated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplicationSetView {
    /// Its name.
    pub name: String,
    /// Its generators in words (`git files components/*/environments/*.yaml`, `clusters environment`, …).
    pub generators: Vec<String>,
    /// The Applications it owns, by name, with their sync and health.
    pub applications: Vec<GeneratedApplication>,
    /// The object as YAML, stripped like the Config tab's.
    pub yaml: String,
}

/// An Application an ApplicationSet generated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratedApplication {
    /// Its name.
    pub name: String,
    /// `Synced`, `OutOfSync`, …
    pub sync: Option<String>,
    /// `Healthy`, `Degraded`, …
    pub health: Option<String>,
}

/// A cluster Tower reads and how it connects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterView {
    /// Its name.
    pub name: String,
    /// Its environment; none for the management cluster.
    pub environment: Option<String>,
    /// How Tower reaches it: a URL, a kubeconfig context, or in-cluster.
    pub connection: String,
    /// Its labels as Argo CD knows them (its cluster secret's, read as metadata only); empty for a cluster
    /// Argo CD has no secret for (the management cluster it runs in).
    pub labels: std::collections::BTreeMap<String, String>,
    /// Where its watches stand.
    pub state: crate::fleet::SourceState,
}

/// One setting of Tower's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// Its key, as the configuration file writes it (`github.app_id`, `clusters[1].token`).
    pub key: String,
    /// Its value; for a secret only `set` or `not set`.
    pub value: String,
    /// Whether it is a secret (its value is never sent).
    pub secret: bool,
}

#[cfg(test)]
mod tests;

/// Labels' and annotations' keys and values as the API server checks them (a real server's verdicts on the
/// same files are `testbed/tests/dry_run.rs`'s).
#[cfg(test)]
mod metadata_tests {
    use super::*;

    #[test]
    fn keys_are_qualified_names() {
        for good in [
            "team",
            "app.kubernetes.io/part-of",
            "platform.tower.dev/component",
            "Team_Name.v2",
        ] {
            assert_eq!(qualified_name(good), Ok(()), "{good}");
        }
        for bad in [
            "tower dev/note",
            "/team",
            "Tower.dev/team",
            "a/b/c",
            "team/",
            "-team",
            &"x".repeat(64),
        ] {
            assert!(qualified_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn label_values_are_short_names_or_empty() {
        assert!(name_part("", true) && !name_part("", false));
        assert!(name_part("Team_Payments.v2", true));
        assert!(!name_part("Team Payments", true));
        assert!(!name_part("payments-", true));
        assert!(!name_part(&"x".repeat(64), true));
    }

    #[test]
    fn metadata_maps_are_checked_as_the_server_does() {
        let file = |metadata: &str| {
            format!(
                "apiVersion: platform.tower.dev/v1alpha1\nkind: Database\nmetadata:\n  name: ledger-dev\n{metadata}spec:\n  environment: dev\n  name: ledger\n  size: small\n"
            )
        };
        let path = "platform/environments/dev/ledger-database.yaml";
        let fields = |metadata: &str| -> Vec<String> {
            validate(path, &file(metadata), &RuleContext::default())
                .into_iter()
                .map(|d| d.field)
                .collect()
        };
        assert!(fields("  labels:\n    team: payments\n  annotations:\n    Tower.dev/Note: any text at all\n").is_empty());
        assert_eq!(
            fields("  labels:\n    team: Team Payments\n"),
            ["metadata.labels.team"]
        );
        assert_eq!(
            fields("  annotations:\n    tower dev/note: hi\n"),
            ["metadata.annotations.tower dev/note"]
        );
        let huge = format!(
            "  annotations:\n    note: {}\n",
            "x".repeat(ANNOTATIONS_MAX_BYTES)
        );
        assert_eq!(fields(&huge), ["metadata.annotations"]);
    }
}
