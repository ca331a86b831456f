//! Loading the configuration: a YAML file, then environment overrides, then validation that names the key.

use std::path::Path;

use secrecy::SecretString;
use shared::config::schema::check;
use shared::config::yaml::{self, Node, Position, Value};

use super::{ConfigError, TowerConfig};

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The YAML is malformed or has unknown or mistyped keys.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message, which names the key and line.
        message: String,
    },
    /// The values do not make a usable configuration.
    #[error("{path} has {} problem(s):\n{}", .errors.len(), .errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The file.
        path: String,
        /// Each problem, naming its key.
        errors: Vec<ConfigError>,
    },
}

/// Environment variables that override keys of the file (secrets are better kept out of files).
pub const ENV_OVERRIDES: [(&str, &str); 6] = [
    ("TOWER_LISTEN", "listen"),
    ("TOWER_PUBLIC_URL", "public_url"),
    ("TOWER_GITHUB_CLIENT_SECRET", "github.client_secret"),
    ("TOWER_GITHUB_APP_PRIVATE_KEY", "github.app_private_key"),
    ("TOWER_GITHUB_WEBHOOK_SECRET", "github.webhook_secret"),
    ("TOWER_ARGOCD_TOKEN", "argocd[0].token"),
];

/// Environment variables Tower reads that no key of the file sets, each with what it does (listed in
/// `docs/configuration.md`; `TOWER_SESSION_SECRET` is read by `serve::session_key`, the others by the
/// command line).
pub const ENV_ONLY: [(&str, &str); 5] = [
    (
        "TOWER_CONFIG",
        "The configuration file, for `tower serve` without `--config`.",
    ),
    (
        "TOWER_SESSION_SECRET",
        "The key sessions are encrypted with, at least 64 bytes, so sessions survive a restart and work \
         across replicas. Unset, Tower makes a random one and sessions end with the process. Only the \
         environment gives it: it has no key in the file.",
    ),
    (
        "TOWER_ASSETS",
        "The folder with the built SPA (`cargo xtask dist` writes `dist/`, the default).",
    ),
    (
        "TOWER_LOG",
        "What is logged, as `tracing` filter directives; default `info,tower_http=info,kube=warn`.",
    ),
    (
        "TOWER_LOG_JSON",
        "`true` logs JSON lines (for log collectors) instead of text.",
    ),
];

/// Reads, overrides from `env` and validates the file at `path`.
pub fn load(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<TowerConfig, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: shown.clone(),
        source,
    })?;
    parse(&shown, &text, env)
}

/// Parses `text` (from `origin`), applies overrides and validates.
pub fn parse(
    origin: &str,
    text: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<TowerConfig, LoadError> {
    let mut config: TowerConfig =
        serde_saphyr::from_str(text).map_err(|error| explain(origin, text, error.to_string()))?;
    apply_overrides(&mut config, env);
    let errors = config.validate();
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(LoadError::Invalid {
            path: origin.to_string(),
            errors,
        })
    }
}

/// Why `text` did not deserialize, as completely as can be said: a syntax error with its line and column, or
/// else every unknown key, wrong type and missing key the schema finds, each with its key, line and column.
/// Serde stops at the first of these; its `message` is the answer only when the schema finds nothing.
fn explain(origin: &str, text: &str, message: String) -> LoadError {
    let path = origin.to_string();
    let root = match yaml::parse(text) {
        Err(syntax) => {
            return LoadError::Parse {
                path,
                message: syntax.to_string(),
            };
        }
        Ok(Some(root)) => root,
        Ok(None) => Node {
            value: Value::Mapping(Vec::new()),
            at: Position::START,
        },
    };
    let mut found = Vec::new();
    check(
        &root,
        Position::START,
        "",
        super::schema::structural(),
        &mut found,
    );
    if found.is_empty() {
        return LoadError::Parse { path, message };
    }
    let errors = found
        .into_iter()
        .map(|diagnostic| {
            let field = &diagnostic.field;
            let said = diagnostic
                .message
                .strip_prefix(&format!("`{field}` "))
                .unwrap_or(&diagnostic.message)
                .replace("this resource has", "the file has");
            ConfigError {
                key: if field.is_empty() {
                    "(top level)".into()
                } else {
                    field.clone()
                },
                message: format!(
                    "line {}, column {}: {said}",
                    diagnostic.line, diagnostic.column
                ),
            }
        })
        .collect();
    LoadError::Invalid { path, errors }
}

/// Applies [`ENV_OVERRIDES`].
pub fn apply_overrides(config: &mut TowerConfig, env: impl Fn(&str) -> Option<String>) {
    if let Some(listen) = env("TOWER_LISTEN") {
        config.listen = listen;
    }
    if let Some(url) = env("TOWER_PUBLIC_URL") {
        config.public_url = url;
    }
    if let Some(github) = config.github.as_mut() {
        if let Some(secret) = env("TOWER_GITHUB_CLIENT_SECRET") {
            github.client_secret = SecretString::from(secret);
        }
        if let Some(key) = env("TOWER_GITHUB_APP_PRIVATE_KEY") {
            github.app_private_key = SecretString::from(key);
        }
        if let Some(secret) = env("TOWER_GITHUB_WEBHOOK_SECRET") {
            github.webhook_secret = Some(SecretString::from(secret));
        }
    }
    if let (Some(argocd), Some(token)) = (config.argocd.first_mut(), env("TOWER_ARGOCD_TOKEN")) {
        argocd.token = SecretString::from(token);
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret as _;

    use super::*;

    const MINIMAL: &str = "
organisation: acme
clusters:
  - name: management
    url: https://mgmt.example
  - name: dev
    environment: dev
    context: dev
";

    #[test]
    fn a_minimal_file_loads_with_defaults() {
        let config = parse("tower.yaml", MINIMAL, |_| None).expect("valid");
        assert_eq!(config.listen, "127.0.0.1:8080");
        assert_eq!(config.labels.component, "platform.tower.dev/component");
        assert_eq!(
            config.management().map(|c| c.name.as_str()),
            Some("management")
        );
    }

    #[test]
    fn crossplane_kinds_default_and_an_empty_field_is_named() {
        let config = parse("tower.yaml", MINIMAL, |_| None).expect("valid");
        assert_eq!(
            config.crossplane_composed,
            crate::config::default_composed_kinds()
        );
        // A file written before composed kinds existed keeps its claims and gets the default composed kinds.
        let text = format!(
            "{MINIMAL}crossplane_claims:\n  - {{group: db.example, version: v1, kind: Db, plural: dbs}}\n"
        );
        let config = parse("tower.yaml", &text, |_| None).expect("valid");
        assert_eq!(config.crossplane_claims[0].plural, "dbs");
        assert_eq!(config.crossplane_composed.len(), 2);

        let text = format!(
            "{MINIMAL}crossplane_composed:\n  - {{group: rds.example, version: v1, kind: Instance, plural: ''}}\n"
        );
        let error = parse("tower.yaml", &text, |_| None).expect_err("empty plural");
        assert!(
            error
                .to_string()
                .contains("crossplane_composed[0].plural: must not be empty"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_key_is_named() {
        let text = format!("{MINIMAL}colour: blue\n");
        let error = parse("tower.yaml", &text, |_| None).expect_err("unknown key");
        assert!(error.to_string().contains("colour"), "{error}");
    }

    #[test]
    fn debug_of_a_loaded_configuration_shows_no_secret() {
        let text = format!(
            "{MINIMAL}  - name: prod
    environment: prod
    url: https://prod.example
    token: cluster-token-in-file
argocd:
  - name: argocd
    url: https://argocd.example
    token: argocd-token-in-file
github:
  api_url: https://api.github.example/
  oauth_authorize_url: https://github.example/login/oauth/authorize
  oauth_token_url: https://github.example/login/oauth/access_token
  client_id: Iv1.public
  client_secret: client-secret-in-file
  app_id: 1
  installation_id: 2
  app_private_key: |
    -----BEGIN PRIVATE KEY-----
    private-key-in-file
    -----END PRIVATE KEY-----
  webhook_secret: webhook-secret-in-file
"
        );
        let config = parse("tower.yaml", &text, |key| match key {
            "TOWER_ARGOCD_TOKEN" => Some("argocd-token-from-env".into()),
            "TOWER_GITHUB_WEBHOOK_SECRET" => Some("webhook-secret-from-env".into()),
            _ => None,
        })
        .expect("valid");
        // The secrets did load (the override won), so their absence below is the mask at work.
        assert_eq!(
            config.argocd[0].token.expose_secret(),
            "argocd-token-from-env"
        );
        let github = config.github.as_ref().expect("github");
        assert_eq!(
            github.client_secret.expose_secret(),
            "client-secret-in-file"
        );
        assert_eq!(
            github
                .webhook_secret
                .as_ref()
                .map(|s| s.expose_secret().to_string()),
            Some("webhook-secret-from-env".into())
        );
        let shown = format!("{config:?} {config:#?}");
        for secret in [
            "cluster-token-in-file",
            "argocd-token",
            "client-secret-in-file",
            "private-key-in-file",
            "webhook-secret",
        ] {
            assert!(!shown.contains(secret), "Debug shows {secret}: {shown}");
        }
        // What is not secret still shows, so the configuration can be debugged.
        assert!(shown.contains("Iv1.public"), "{shown}");
    }

    #[test]
    fn environment_overrides_win_and_are_validated() {
        let error = parse("tower.yaml", MINIMAL, |key| {
            (key == "TOWER_LISTEN").then(|| "nowhere".into())
        })
        .expect_err("bad listen");
        assert!(
            error.to_string().contains("listen: must be an address"),
            "{error}"
        );
    }
}
