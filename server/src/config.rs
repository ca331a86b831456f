//! Tower's configuration file: its shape and its validation ([`load()`] reads it, with environment overrides).
//! `tower sandbox` writes one pointing at the sandbox's endpoints. Validation is pure, so every error names the
//! key at fault.
//!
//! Only the server reads this, so it lives here rather than in `shared`: the browser's wasm never carries the
//! shape of the server's secrets. Secrets are [`SecretString`]s, so `Debug` (and so a log line or a panic
//! message) shows `[REDACTED]` in their place.

mod cli;
#[cfg(test)]
mod fuzz;
mod load;
mod pipelines;
mod reference;
mod schema;

use std::collections::BTreeSet;

use schemars::JsonSchema;
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};
use shared::auth::Permission;

pub use cli::ConfigCommand;
pub use load::{ENV_ONLY, ENV_OVERRIDES, LoadError, load, parse};
pub use pipelines::{MAX_HISTORY_PER_SERVICE, PipelinesConfig};
pub use reference::{REFERENCE_PATH, REGENERATE, SCHEMA_PATH, markdown as reference};
pub use schema::{json_schema, json_schema_text};

/// The whole configuration file (YAML).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TowerConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080`. Env: `TOWER_LISTEN`.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The URL browsers reach Tower at (scheme, host, port), for OAuth callbacks and the CSRF origin check.
    /// Env: `TOWER_PUBLIC_URL`.
    #[serde(default = "default_public_url")]
    pub public_url: String,
    /// The GitHub organisation whose teams own services and whose repositories hold catalog-info.yaml.
    pub organisation: String,
    /// The management cluster and the workload clusters, one or more per environment (`prod-eu` and
    /// `prod-us`, both `environment: prod`): an environment's card shows each of its clusters.
    pub clusters: Vec<ClusterConfig>,
    /// Argo CD instances, each deploying to the clusters it names (one may name none: it serves the rest).
    #[serde(default)]
    pub argocd: Vec<ArgoCdConfig>,
    /// GitHub (or a GitHub-compatible forge): the App that opens PRs and the OAuth app that signs people in.
    #[serde(default)]
    pub github: Option<GithubConfig>,
    /// Sign-in and permissions.
    #[serde(default)]
    pub auth: AuthConfig,
    /// The discovery labels.
    #[serde(default)]
    pub labels: LabelsConfig,
    /// Crossplane claim kinds shown on deployment cards: namespaced, in the service's namespace on workload
    /// clusters, found by the component label.
    #[serde(default = "default_claim_kinds")]
    pub crossplane_claims: Vec<ResourceKindConfig>,
    /// Crossplane managed resource kinds shown under the claim that composed them: cluster-scoped, found by
    /// the `crossplane.io/claim-name` and `crossplane.io/claim-namespace` labels Crossplane puts on them.
    /// Empty shows claims alone.
    #[serde(default = "default_composed_kinds")]
    pub crossplane_composed: Vec<ResourceKindConfig>,
    /// The scaffold templates new services are created from, each with its versions newest first
    /// (`- name: go-service` / `versions: ["1.4.0", "1.3.2"]`): the Create form offers exactly these, and
    /// onboarding refuses others. Empty (the default) leaves both to the person filling the form.
    #[serde(default)]
    #[schemars(with = "Vec<schema::Scaffold>")]
    pub scaffolds: Vec<shared::delivery::Scaffold>,
    /// Mimir (or any Prometheus HTTP API) for the Metrics tab; absent, the tab says metrics are not
    /// configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mimir: Option<MimirConfig>,
    /// Loki, the log store keeping the logs of pods that are gone (crashed, replaced by a rollout, rolled
    /// back); absent, the log panel reads running pods only and says logs are live only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loki: Option<LokiConfig>,
    /// CI's Tekton runs: the cluster and namespace they are read from, the history kept per service, and the
    /// labels and annotations a run names its commit, branch and trigger with.
    #[serde(default)]
    pub pipelines: PipelinesConfig,
}

/// Where the logs of gone pods are read. Tower expects the streams labelled as a log agent on each cluster
/// labels them: `cluster` (the cluster's `name` in [`TowerConfig::clusters`]), `namespace`, `pod` and
/// `container`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LokiConfig {
    /// Loki's base URL, e.g. `https://loki.example` (Tower appends `/loki/api/v1/query_range`).
    pub url: String,
    /// Loki's tenant, sent as `X-Scope-OrgID`; absent for a single-tenant Loki.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl LokiConfig {
    fn validate(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        if !is_http_url(&self.url) {
            errors.push(error("loki.url", "must be an http:// or https:// URL"));
        }
        if let Some(tenant) = &self.tenant
            && (tenant.is_empty() || !tenant.bytes().all(|b| b.is_ascii_graphic()))
        {
            errors.push(error(
                "loki.tenant",
                "must be a non-empty tenant id without spaces",
            ));
        }
        errors
    }
}

/// Where metrics are read, and the labels the fixed queries select a service's series by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MimirConfig {
    /// The Prometheus API base, e.g. `https://mimir.example/prometheus` (Tower appends `/api/v1/query_range`).
    pub url: String,
    /// Mimir's tenant, sent as `X-Scope-OrgID`; absent for a plain Prometheus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The label holding the service's name on its series.
    #[serde(default = "default_service_metric_label")]
    pub service_label: String,
    /// The label holding the environment on its series.
    #[serde(default = "default_environment_metric_label")]
    pub environment_label: String,
}

impl MimirConfig {
    /// A Prometheus API at `url` with the default labels and no tenant.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            tenant: None,
            service_label: default_service_metric_label(),
            environment_label: default_environment_metric_label(),
        }
    }

    fn validate(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        if !is_http_url(&self.url) {
            errors.push(error("mimir.url", "must be an http:// or https:// URL"));
        }
        // Label names go into PromQL as they are, so they must be what PromQL allows there.
        for (key, label) in [
            ("mimir.service_label", &self.service_label),
            ("mimir.environment_label", &self.environment_label),
        ] {
            if !is_label_name(label) {
                errors.push(error(
                    key,
                    "must be a Prometheus label name: letters, digits and _, not starting with a digit",
                ));
            }
        }
        if let Some(tenant) = &self.tenant
            && (tenant.is_empty() || !tenant.bytes().all(|b| b.is_ascii_graphic()))
        {
            errors.push(error(
                "mimir.tenant",
                "must be a non-empty tenant id without spaces",
            ));
        }
        errors
    }
}

fn default_service_metric_label() -> String {
    "service".into()
}

fn default_environment_metric_label() -> String {
    "environment".into()
}

/// Whether `name` is a Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`).
fn is_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A Kubernetes resource kind Tower watches by name rather than by a type compiled in (a Crossplane claim or
/// managed resource kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceKindConfig {
    /// API group, e.g. `database.acme.example`.
    pub group: String,
    /// Version, e.g. `v1alpha1`.
    pub version: String,
    /// Kind, e.g. `PostgreSQLInstance`.
    pub kind: String,
    /// Plural resource name, e.g. `postgresqlinstances`.
    pub plural: String,
}

impl ResourceKindConfig {
    fn new(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    /// The problems of the kind found at `key`: every field is needed to address its API.
    fn validate(&self, key: &str) -> Vec<ConfigError> {
        [
            ("group", &self.group),
            ("version", &self.version),
            ("kind", &self.kind),
            ("plural", &self.plural),
        ]
        .into_iter()
        .filter(|(_, value)| value.trim().is_empty())
        .map(|(field, _)| error(format!("{key}.{field}"), "must not be empty"))
        .collect()
    }
}

/// The platform's database claim.
pub fn default_claim_kinds() -> Vec<ResourceKindConfig> {
    vec![ResourceKindConfig::new(
        "database.acme.example",
        "v1alpha1",
        "PostgreSQLInstance",
        "postgresqlinstances",
    )]
}

/// What the platform's database Composition composes: an RDS instance and its subnet group (Upbound's AWS
/// provider).
pub fn default_composed_kinds() -> Vec<ResourceKindConfig> {
    vec![
        ResourceKindConfig::new("rds.aws.upbound.io", "v1beta1", "Instance", "instances"),
        ResourceKindConfig::new(
            "rds.aws.upbound.io",
            "v1beta1",
            "SubnetGroup",
            "subnetgroups",
        ),
    ]
}

fn default_listen() -> String {
    "127.0.0.1:8080".into()
}

fn default_public_url() -> String {
    "http://127.0.0.1:8080".into()
}

/// The leaves of `value` under `prefix` as settings, secrets masked.
fn flatten(prefix: &str, value: &serde_json::Value, out: &mut Vec<shared::config::Setting>) {
    use serde_json::Value;
    let last = prefix
        .rsplit(['.', ']'])
        .find(|s| !s.is_empty())
        .unwrap_or(prefix);
    if SECRET_KEYS.contains(&last) {
        let set = !matches!(value, Value::Null) && value.as_str().is_none_or(|s| !s.is_empty());
        out.push(shared::config::Setting {
            key: prefix.to_string(),
            value: if set { "set" } else { "not set" }.into(),
            secret: true,
        });
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&key, child, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, child) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), child, out);
            }
        }
        other => out.push(shared::config::Setting {
            key: prefix.to_string(),
            value: match other {
                Value::String(s) => s.clone(),
                Value::Array(_) => "(none)".into(),
                Value::Null => "(not set)".into(),
                other => other.to_string(),
            },
            secret: false,
        }),
    }
}

impl ClusterConfig {
    /// How Tower reaches the cluster, in words.
    pub fn connection(&self) -> String {
        match (&self.url, &self.context) {
            (Some(url), _) => url.clone(),
            (None, Some(context)) => format!("kubeconfig context {context}"),
            (None, None) if self.in_cluster => "in-cluster service account".into(),
            (None, None) => "not configured".into(),
        }
    }
}

/// One cluster and how to reach it: exactly one of `url`, `context`, `in_cluster`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// A name for logs and the UI (`management`, `dev`, `prod`).
    pub name: String,
    /// The environment this workload cluster runs; absent for the management cluster. Several clusters may
    /// run one environment; an Argo CD Application is then matched to its cluster by
    /// `spec.destination.name`, which must be this cluster's `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The API server URL (with a bearer `token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A bearer token for `url` (a read-only service account's).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "secret::optional"
    )]
    #[schemars(with = "Option<String>", extend("writeOnly" = true))]
    pub token: Option<SecretString>,
    /// A PEM file of the certificate authority that signed `url`'s serving certificate, for an API server
    /// whose certificate the system's roots do not trust (a private cluster CA, as most have).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<std::path::PathBuf>,
    /// A kubeconfig context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Use the pod's service account (Tower runs in this cluster).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(extend("default" = false))]
    pub in_cluster: bool,
}

/// An Argo CD instance.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgoCdConfig {
    /// A name for logs.
    pub name: String,
    /// Base URL, e.g. `https://argocd.example.com`.
    pub url: String,
    /// An API token of an account allowed to read applications and sync. Env: `TOWER_ARGOCD_TOKEN` (first
    /// instance).
    #[serde(with = "secret")]
    #[schemars(with = "String", extend("writeOnly" = true))]
    pub token: SecretString,
    /// The workload clusters this instance deploys to, by their `name` in `clusters`: Sync for an
    /// Application there goes to this instance. Empty: every workload cluster no other instance names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
}

/// GitHub: REST API, App and OAuth app.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GithubConfig {
    /// REST API base, e.g. `https://api.github.com/`.
    pub api_url: String,
    /// The OAuth authorize page, e.g. `https://github.com/login/oauth/authorize`.
    pub oauth_authorize_url: String,
    /// The OAuth token endpoint, e.g. `https://github.com/login/oauth/access_token`.
    pub oauth_token_url: String,
    /// The OAuth app's client id.
    pub client_id: String,
    /// The OAuth app's client secret. Env: `TOWER_GITHUB_CLIENT_SECRET`.
    #[serde(with = "secret")]
    #[schemars(with = "String", extend("writeOnly" = true))]
    pub client_secret: SecretString,
    /// The GitHub App's id.
    pub app_id: u64,
    /// The App's installation on the organisation.
    pub installation_id: u64,
    /// The App's private key (PEM). Env: `TOWER_GITHUB_APP_PRIVATE_KEY`.
    #[serde(with = "secret")]
    #[schemars(with = "String", extend("writeOnly" = true))]
    pub app_private_key: SecretString,
    /// The GitOps repository PRs go to.
    #[serde(default = "default_gitops_repository")]
    pub gitops_repository: String,
    /// Seconds between reads of the GitOps repository's merged pull requests (the activity feed's merges)
    /// while no webhook secret is configured; with webhooks, merges arrive as `pull_request` events and this
    /// read becomes a backup every few minutes.
    #[serde(default = "default_merged_poll_seconds")]
    pub merged_poll_seconds: u64,
    /// The secret GitHub signs the App's webhook deliveries with (`X-Hub-Signature-256`). Set, Tower takes
    /// `POST /api/v1/webhooks/github` and keeps pull requests, release records and the catalog current from
    /// the events, polling only as a slow backup; absent, the webhook answers 401 and Tower polls instead.
    /// Env: `TOWER_GITHUB_WEBHOOK_SECRET`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "secret::optional"
    )]
    #[schemars(with = "Option<String>", extend("writeOnly" = true))]
    pub webhook_secret: Option<SecretString>,
}

fn default_gitops_repository() -> String {
    "application-repositories".into()
}

fn default_merged_poll_seconds() -> u64 {
    15
}

/// Sign-in and permissions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Forge logins with every permission.
    #[serde(default)]
    pub admins: Vec<String>,
    /// What guests may do; absent means the default allowlist.
    #[serde(default)]
    #[schemars(with = "Option<BTreeSet<schema::PermissionName>>")]
    pub guest_allowlist: Option<BTreeSet<Permission>>,
    /// Hours a session lasts.
    #[serde(default = "default_session_hours")]
    pub session_hours: u64,
    /// A file listing the sessions ended by signing out, so a copied cookie stays refused after a restart;
    /// replicas may share it on one volume. Absent: the list is kept in memory, which suffices only while
    /// `TOWER_SESSION_SECRET` is unset (sessions then end with the process anyway).
    #[serde(default)]
    pub revoked_sessions_file: Option<std::path::PathBuf>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            admins: Vec::new(),
            guest_allowlist: None,
            session_hours: default_session_hours(),
            revoked_sessions_file: None,
        }
    }
}

fn default_session_hours() -> u64 {
    12
}

/// The labels Tower finds platform objects by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelsConfig {
    /// Names the component.
    #[serde(default = "default_component_label")]
    pub component: String,
    /// Names the environment.
    #[serde(default = "default_environment_label")]
    pub environment: String,
}

impl Default for LabelsConfig {
    fn default() -> Self {
        Self {
            component: default_component_label(),
            environment: default_environment_label(),
        }
    }
}

fn default_component_label() -> String {
    "platform.tower.dev/component".into()
}

fn default_environment_label() -> String {
    "platform.tower.dev/environment".into()
}

/// A configuration error naming the key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    /// The key's path, e.g. `clusters[1].url`.
    pub key: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

fn error(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

fn is_http_url(url: &str) -> bool {
    (url.starts_with("http://") || url.starts_with("https://")) && url.len() > "https://".len()
}

/// The keys whose values are secrets: the `/config` page says only whether each is set. A new secret field
/// must be named here (`settings_never_carry_a_secret` sets every one and looks for it in the answer).
const SECRET_KEYS: [&str; 4] = [
    "token",
    "client_secret",
    "app_private_key",
    "webhook_secret",
];

impl TowerConfig {
    /// The configuration as the `/config` page lists it: one line per leaf key (`github.app_id`,
    /// `clusters[1].url`), secrets as `set` or `not set`, and the session key, which only the environment
    /// gives.
    pub fn settings(&self) -> Vec<shared::config::Setting> {
        let mut settings = Vec::new();
        if let Ok(json) = serde_json::to_value(self) {
            flatten("", &json, &mut settings);
        }
        settings.push(shared::config::Setting {
            key: "TOWER_SESSION_SECRET".into(),
            value: if std::env::var_os("TOWER_SESSION_SECRET").is_some() {
                "set"
            } else {
                "not set"
            }
            .into(),
            secret: true,
        });
        settings
    }

    /// Every problem in the file, each naming its key. Empty when the file is usable.
    pub fn validate(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            errors.push(error(
                "listen",
                "must be an address with a port, such as 127.0.0.1:8080",
            ));
        }
        if !is_http_url(&self.public_url) {
            errors.push(error("public_url", "must be an http:// or https:// URL"));
        }
        if self.organisation.trim().is_empty() {
            errors.push(error("organisation", "must name the GitHub organisation"));
        }
        let managements = self
            .clusters
            .iter()
            .filter(|c| c.environment.is_none())
            .count();
        if managements != 1 {
            errors.push(error(
                "clusters",
                format!("needs exactly one management cluster (one without `environment`), found {managements}"),
            ));
        }
        let mut names = BTreeSet::new();
        for (index, cluster) in self.clusters.iter().enumerate() {
            let key = format!("clusters[{index}]");
            if !names.insert(cluster.name.as_str()) {
                errors.push(error(
                    format!("{key}.name"),
                    format!("`{}` is used twice", cluster.name),
                ));
            }
            if cluster.environment.as_deref().is_some_and(str::is_empty) {
                errors.push(error(
                    format!("{key}.environment"),
                    "must name the environment (leave it out for the management cluster)",
                ));
            }
            let ways = usize::from(cluster.url.is_some())
                + usize::from(cluster.context.is_some())
                + usize::from(cluster.in_cluster);
            if ways != 1 {
                errors.push(error(
                    key.clone(),
                    "give exactly one of `url`, `context`, `in_cluster`",
                ));
            }
            if let Some(url) = &cluster.url
                && !is_http_url(url)
            {
                errors.push(error(
                    format!("{key}.url"),
                    "must be an http:// or https:// URL",
                ));
            }
            if cluster.token.is_some() && cluster.url.is_none() {
                errors.push(error(format!("{key}.token"), "only goes with `url`"));
            }
            if let Some(path) = &cluster.certificate_authority {
                if cluster.url.is_none() {
                    errors.push(error(
                        format!("{key}.certificate_authority"),
                        "only goes with `url`",
                    ));
                } else if !path.is_file() {
                    errors.push(error(
                        format!("{key}.certificate_authority"),
                        format!("`{}` is not a readable file", path.display()),
                    ));
                }
            }
        }
        errors.extend(self.validate_argocd_clusters());
        for (index, argocd) in self.argocd.iter().enumerate() {
            if !is_http_url(&argocd.url) {
                errors.push(error(
                    format!("argocd[{index}].url"),
                    "must be an http:// or https:// URL",
                ));
            }
            if argocd.token.expose_secret().trim().is_empty() {
                errors.push(error(format!("argocd[{index}].token"), "must not be empty"));
            }
        }
        if let Some(github) = &self.github {
            for (key, url) in [
                ("github.api_url", &github.api_url),
                ("github.oauth_authorize_url", &github.oauth_authorize_url),
                ("github.oauth_token_url", &github.oauth_token_url),
            ] {
                if !is_http_url(url) {
                    errors.push(error(key, "must be an http:// or https:// URL"));
                }
            }
            if github.merged_poll_seconds == 0 {
                errors.push(error("github.merged_poll_seconds", "must be at least 1"));
            }
            // An empty secret would let anyone sign a delivery: HMAC with an empty key is no check at all.
            if github
                .webhook_secret
                .as_ref()
                .is_some_and(|secret| secret.expose_secret().trim().is_empty())
            {
                errors.push(error(
                    "github.webhook_secret",
                    "must not be empty (leave it out to run without webhooks)",
                ));
            }
            if !github
                .app_private_key
                .expose_secret()
                .contains("PRIVATE KEY")
            {
                errors.push(error("github.app_private_key", "must be a PEM private key"));
            }
        }
        if self.auth.session_hours == 0 {
            errors.push(error("auth.session_hours", "must be at least 1"));
        }
        for (key, kinds) in [
            ("crossplane_claims", &self.crossplane_claims),
            ("crossplane_composed", &self.crossplane_composed),
        ] {
            for (index, kind) in kinds.iter().enumerate() {
                errors.extend(kind.validate(&format!("{key}[{index}]")));
            }
        }
        if let Some(mimir) = &self.mimir {
            errors.extend(mimir.validate());
        }
        if let Some(loki) = &self.loki {
            errors.extend(loki.validate());
        }
        errors.extend(
            self.pipelines
                .validate(self.clusters.iter().map(|c| c.name.as_str())),
        );
        for (index, scaffold) in self.scaffolds.iter().enumerate() {
            let key = format!("scaffolds[{index}]");
            if let Err(problem) = shared::delivery::validate_label("name", &scaffold.name) {
                errors.push(error(format!("{key}.name"), problem.message));
            }
            if scaffold.versions.is_empty() {
                errors.push(error(
                    format!("{key}.versions"),
                    "must list at least one version",
                ));
            }
            for (n, version) in scaffold.versions.iter().enumerate() {
                if let Err(problem) =
                    shared::delivery::validate_template_version("version", version)
                {
                    errors.push(error(format!("{key}.versions[{n}]"), problem.message));
                }
            }
        }
        errors
    }

    /// Each Argo CD instance must know which clusters it deploys to, so a Sync never goes to an instance that
    /// does not hold the Application: named clusters exist and are workload clusters, no cluster is named
    /// twice, and at most one instance serves "the rest".
    fn validate_argocd_clusters(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        let workloads: BTreeSet<&str> = self
            .workload_clusters()
            .map(|(_, cluster)| cluster.name.as_str())
            .collect();
        let mut served = std::collections::BTreeMap::new();
        let mut names = BTreeSet::new();
        for (index, argocd) in self.argocd.iter().enumerate() {
            if !names.insert(argocd.name.as_str()) {
                errors.push(error(
                    format!("argocd[{index}].name"),
                    format!("`{}` is used twice", argocd.name),
                ));
            }
            for (n, cluster) in argocd.clusters.iter().enumerate() {
                let key = format!("argocd[{index}].clusters[{n}]");
                if !workloads.contains(cluster.as_str()) {
                    errors.push(error(
                        key,
                        format!("`{cluster}` is not the name of a workload cluster in `clusters`"),
                    ));
                } else if let Some(first) = served.insert(cluster.as_str(), argocd.name.as_str()) {
                    errors.push(error(
                        key,
                        format!("`{cluster}` is already served by Argo CD `{first}`"),
                    ));
                }
            }
        }
        let catch_alls: Vec<usize> = self
            .argocd
            .iter()
            .enumerate()
            .filter(|(_, argocd)| argocd.clusters.is_empty())
            .map(|(index, _)| index)
            .collect();
        if let [_, second, ..] = catch_alls.as_slice() {
            errors.push(error(
                format!("argocd[{second}].clusters"),
                "name the clusters this instance deploys to: only one instance may serve every cluster the others do not name",
            ));
        }
        errors
    }

    /// The Argo CD instance deploying to workload cluster `cluster`: the one naming it, else the one naming
    /// none.
    pub fn argocd_for(&self, cluster: &str) -> Option<&ArgoCdConfig> {
        self.argocd
            .iter()
            .find(|argocd| argocd.clusters.iter().any(|c| c == cluster))
            .or_else(|| self.argocd.iter().find(|argocd| argocd.clusters.is_empty()))
    }

    /// The management cluster.
    pub fn management(&self) -> Option<&ClusterConfig> {
        self.clusters.iter().find(|c| c.environment.is_none())
    }

    /// The cluster CI runs on: `pipelines.cluster`, else the management cluster.
    pub fn pipelines_cluster(&self) -> Option<&ClusterConfig> {
        match &self.pipelines.cluster {
            Some(name) => self.clusters.iter().find(|c| &c.name == name),
            None => self.management(),
        }
    }

    /// The workload clusters, with their environments.
    pub fn workload_clusters(&self) -> impl Iterator<Item = (&str, &ClusterConfig)> {
        self.clusters
            .iter()
            .filter_map(|c| c.environment.as_deref().map(|e| (e, c)))
    }
}

/// Reads a secret as the plain string the file holds, and writes it back out the same way.
///
/// Writing exposes the secret on purpose: it is how `tower sandbox` hands Tower its configuration file.
/// Nothing else serializes a configuration.
mod secret {
    use secrecy::{ExposeSecret as _, SecretString};
    use serde::{Deserialize as _, Deserializer, Serializer};

    /// Writes the secret's text.
    pub fn serialize<S: Serializer>(
        secret: &SecretString,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(secret.expose_secret())
    }

    /// Reads a string straight into a secret.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SecretString, D::Error> {
        String::deserialize(deserializer).map(SecretString::from)
    }

    /// The same for an optional secret.
    pub mod optional {
        use secrecy::{ExposeSecret as _, SecretString};
        use serde::{Deserialize as _, Deserializer, Serializer};

        /// Writes the secret's text, or nothing.
        pub fn serialize<S: Serializer>(
            secret: &Option<SecretString>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match secret {
                Some(secret) => serializer.serialize_some(secret.expose_secret()),
                None => serializer.serialize_none(),
            }
        }

        /// Reads an optional string straight into a secret.
        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<SecretString>, D::Error> {
            Option::<String>::deserialize(deserializer).map(|secret| secret.map(SecretString::from))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TowerConfig {
        TowerConfig {
            listen: default_listen(),
            public_url: default_public_url(),
            organisation: "acme".into(),
            clusters: vec![
                ClusterConfig {
                    name: "management".into(),
                    environment: None,
                    url: Some("https://mgmt.example".into()),
                    token: Some("t".into()),
                    certificate_authority: None,
                    context: None,
                    in_cluster: false,
                },
                ClusterConfig {
                    name: "dev".into(),
                    environment: Some("dev".into()),
                    url: None,
                    token: None,
                    certificate_authority: None,
                    context: Some("dev".into()),
                    in_cluster: false,
                },
            ],
            argocd: vec![],
            github: None,
            auth: AuthConfig::default(),
            labels: LabelsConfig::default(),
            crossplane_claims: default_claim_kinds(),
            crossplane_composed: default_composed_kinds(),
            scaffolds: vec![shared::delivery::Scaffold {
                name: "go-service".into(),
                versions: vec!["1.4.0".into()],
            }],
            mimir: Some(MimirConfig::new("https://mimir.example/prometheus")),
            loki: Some(LokiConfig {
                url: "https://loki.example".into(),
                tenant: Some("acme".into()),
            }),
            pipelines: PipelinesConfig::default(),
        }
    }

    #[test]
    fn settings_never_carry_a_secret() {
        let mut full = config();
        full.clusters[0].token = Some("SECRET-cluster-token".into());
        full.argocd = vec![ArgoCdConfig {
            name: "argocd".into(),
            url: "https://argocd.example".into(),
            token: "SECRET-argocd-token".into(),
            clusters: Vec::new(),
        }];
        full.github = Some(GithubConfig {
            api_url: "https://api.github.com/".into(),
            oauth_authorize_url: "https://github.com/login/oauth/authorize".into(),
            oauth_token_url: "https://github.com/login/oauth/access_token".into(),
            client_id: "Iv1.abc".into(),
            client_secret: "SECRET-client".into(),
            app_id: 7,
            installation_id: 9,
            app_private_key: "SECRET-private-key".into(),
            gitops_repository: "application-repositories".into(),
            merged_poll_seconds: 30,
            webhook_secret: Some("SECRET-webhook".into()),
        });
        let settings = full.settings();
        let find = |key: &str| settings.iter().find(|s| s.key == key);
        for setting in &settings {
            assert!(!setting.value.contains("SECRET"), "{setting:?}");
        }
        let secret = |key: &str| find(key).map(|s| (s.value.as_str(), s.secret));
        assert_eq!(secret("clusters[0].token"), Some(("set", true)));
        assert_eq!(secret("argocd[0].token"), Some(("set", true)));
        assert_eq!(secret("github.client_secret"), Some(("set", true)));
        assert_eq!(secret("github.app_private_key"), Some(("set", true)));
        assert_eq!(secret("github.webhook_secret"), Some(("set", true)));
        assert_eq!(find("github.app_id").map(|s| s.value.as_str()), Some("7"));
        assert_eq!(
            find("clusters[1].context").map(|s| s.value.as_str()),
            Some("dev")
        );
        assert!(find("TOWER_SESSION_SECRET").is_some_and(|s| s.secret));
        assert_eq!(full.clusters[1].connection(), "kubeconfig context dev");
    }

    #[test]
    fn an_empty_webhook_secret_is_named_because_it_would_sign_nothing() {
        let github = |secret: Option<&str>| GithubConfig {
            api_url: "https://api.github.com/".into(),
            oauth_authorize_url: "https://github.com/login/oauth/authorize".into(),
            oauth_token_url: "https://github.com/login/oauth/access_token".into(),
            client_id: "Iv1.abc".into(),
            client_secret: "client".into(),
            app_id: 7,
            installation_id: 9,
            app_private_key: "-----BEGIN PRIVATE KEY-----".into(),
            gitops_repository: "application-repositories".into(),
            merged_poll_seconds: 15,
            webhook_secret: secret.map(Into::into),
        };
        let mut with = config();
        with.github = Some(github(Some(" ")));
        let keys: Vec<String> = with.validate().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["github.webhook_secret"]);
        with.github = Some(github(Some("s3cret")));
        assert_eq!(with.validate(), vec![]);
        with.github = Some(github(None));
        assert_eq!(with.validate(), vec![]);
    }

    #[test]
    fn a_sound_configuration_has_no_errors() {
        assert_eq!(config().validate(), vec![]);
    }

    #[test]
    fn mimir_labels_must_be_label_names_because_they_go_into_promql() {
        let mut bad = config();
        let mimir = bad
            .mimir
            .as_mut()
            .expect("the sound configuration has Mimir");
        mimir.url = "mimir.example".into();
        mimir.service_label = "app\"} or vector(1) #".into();
        mimir.environment_label = "2env".into();
        mimir.tenant = Some("team a".into());
        let keys: Vec<String> = bad.validate().into_iter().map(|e| e.key).collect();
        assert_eq!(
            keys,
            [
                "mimir.url",
                "mimir.service_label",
                "mimir.environment_label",
                "mimir.tenant"
            ]
        );
    }

    #[test]
    fn loki_needs_an_http_url_and_a_tenant_without_spaces() {
        let mut bad = config();
        bad.loki = Some(LokiConfig {
            url: "loki.example".into(),
            tenant: Some("team a".into()),
        });
        let keys: Vec<String> = bad.validate().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["loki.url", "loki.tenant"]);
    }

    #[test]
    fn a_pipelines_cluster_must_be_a_configured_cluster() {
        let mut bad = config();
        bad.pipelines.cluster = Some("ci".into());
        let keys: Vec<String> = bad.validate().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["pipelines.cluster"]);
        bad.pipelines.cluster = Some("dev".into());
        assert_eq!(bad.validate(), vec![]);
        assert_eq!(
            bad.pipelines_cluster().map(|c| c.name.as_str()),
            Some("dev")
        );
        assert_eq!(
            config().pipelines_cluster().map(|c| c.name.as_str()),
            Some("management")
        );
    }

    #[test]
    fn scaffold_templates_need_label_names_and_versions() {
        let mut bad = config();
        bad.scaffolds[0].name = "Go Service".into();
        bad.scaffolds[0].versions = vec!["latest".into()];
        let keys: Vec<String> = bad.validate().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["scaffolds[0].name", "scaffolds[0].versions[0]"]);
    }

    #[test]
    fn each_error_names_its_key() {
        let mut bad = config();
        bad.listen = "nowhere".into();
        bad.clusters[1].context = None;
        bad.clusters[1].url = Some("ftp://dev".into());
        bad.clusters[1].environment = None;
        let keys: Vec<_> = bad.validate().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, ["listen", "clusters", "clusters[1].url"]);
    }

    /// `prod-eu` and `prod-us` both run prod, each deployed by its own Argo CD.
    fn two_prod_clusters() -> TowerConfig {
        let mut config = config();
        for name in ["prod-eu", "prod-us"] {
            config.clusters.push(ClusterConfig {
                name: name.into(),
                environment: Some("prod".into()),
                url: Some(format!("https://{name}.example")),
                token: None,
                certificate_authority: None,
                context: None,
                in_cluster: false,
            });
        }
        let instance = |name: &str, clusters: &[&str]| ArgoCdConfig {
            name: name.into(),
            url: format!("https://{name}.example"),
            token: "token".into(),
            clusters: clusters.iter().map(|c| (*c).to_string()).collect(),
        };
        config.argocd = vec![instance("argocd", &[]), instance("argocd-us", &["prod-us"])];
        config
    }

    #[test]
    fn an_environment_may_span_clusters_each_served_by_one_argo_cd() {
        let config = two_prod_clusters();
        assert_eq!(config.validate(), vec![]);
        let prod: Vec<&str> = config
            .workload_clusters()
            .filter(|(environment, _)| *environment == "prod")
            .map(|(_, cluster)| cluster.name.as_str())
            .collect();
        assert_eq!(prod, ["prod-eu", "prod-us"]);
        let instance = |cluster| config.argocd_for(cluster).map(|a| a.name.as_str());
        assert_eq!(instance("prod-us"), Some("argocd-us"));
        assert_eq!(
            instance("prod-eu"),
            Some("argocd"),
            "the instance naming none serves the rest"
        );
        assert_eq!(instance("dev"), Some("argocd"));
    }

    #[test]
    fn argo_cd_instances_must_name_real_clusters_and_never_share_one() {
        let mut bad = two_prod_clusters();
        bad.argocd[0].clusters = vec!["prod-us".into(), "prod-ap".into(), "management".into()];
        bad.argocd.push(bad.argocd[1].clone());
        bad.argocd[2].clusters = Vec::new();
        let errors: Vec<String> = bad.validate().iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "argocd[0].clusters[1]: `prod-ap` is not the name of a workload cluster in `clusters`",
                "argocd[0].clusters[2]: `management` is not the name of a workload cluster in `clusters`",
                "argocd[1].clusters[0]: `prod-us` is already served by Argo CD `argocd`",
                "argocd[2].name: `argocd-us` is used twice",
            ]
        );
        let mut two_catch_alls = two_prod_clusters();
        two_catch_alls.argocd[1].clusters = Vec::new();
        let keys: Vec<String> = two_catch_alls
            .validate()
            .into_iter()
            .map(|e| e.key)
            .collect();
        assert_eq!(keys, ["argocd[1].clusters"]);
    }

    #[test]
    fn a_cluster_needs_exactly_one_way_in() {
        let mut bad = config();
        bad.clusters[1].in_cluster = true;
        let errors = bad.validate();
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "clusters[1]: give exactly one of `url`, `context`, `in_cluster`"
        );
    }

    #[test]
    fn a_certificate_authority_must_be_a_file_beside_a_url() {
        let mut bad = config();
        bad.clusters[0].certificate_authority = Some("/nonexistent/ca.pem".into());
        bad.clusters[1].certificate_authority = Some("/nonexistent/ca.pem".into());
        let errors: Vec<String> = bad.validate().iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "clusters[0].certificate_authority: `/nonexistent/ca.pem` is not a readable file",
                "clusters[1].certificate_authority: only goes with `url`",
            ]
        );
        let ca = tempfile::NamedTempFile::new().expect("a temporary file");
        let mut good = config();
        good.clusters[0].certificate_authority = Some(ca.path().to_path_buf());
        assert!(good.validate().is_empty());
    }

    #[test]
    fn a_resource_kind_missing_a_field_is_named() {
        let mut bad = config();
        bad.crossplane_composed[0].plural = " ".into();
        bad.crossplane_claims[0].group = String::new();
        let errors = bad.validate();
        let keys: Vec<_> = errors.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "crossplane_claims[0].group",
                "crossplane_composed[0].plural"
            ]
        );
        assert_eq!(
            errors[1].to_string(),
            "crossplane_composed[0].plural: must not be empty"
        );
        // Empty lists are fine: Tower then shows no claims, or claims without what they compose.
        bad.crossplane_claims.clear();
        bad.crossplane_composed.clear();
        assert_eq!(bad.validate(), vec![]);
    }
}
