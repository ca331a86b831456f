//! `docs/configuration.md`, rendered from the JSON Schema ([`super::schema`]): every key with its type,
//! default and description, each mapping and list of mappings under a heading of its own dotted path, and the
//! environment variables.
//!
//! Both generated files are checked in; `generated_files_match_the_code` fails when either differs from what
//! this module writes, and `TOWER_WRITE_CONFIG_DOCS=1` makes it rewrite them. `tower config schema` prints the
//! schema and `tower config schema --markdown` the reference, from the same functions.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::load::{ENV_ONLY, ENV_OVERRIDES};
use super::schema::{json_schema, resolve, type_names};

/// The command that rewrites `deploy/tower.schema.json` and `docs/configuration.md`.
pub const REGENERATE: &str =
    "TOWER_WRITE_CONFIG_DOCS=1 cargo test -p server --lib config::reference";

/// Where the schema is checked in, from the workspace root.
pub const SCHEMA_PATH: &str = "deploy/tower.schema.json";

/// Where the reference is checked in, from the workspace root.
pub const REFERENCE_PATH: &str = "docs/configuration.md";

/// One key of the file, flattened.
struct Key {
    /// `github.client_secret`, `clusters[].url`.
    path: String,
    /// The key's own schema (references resolved).
    schema: Value,
    /// The schema of its items, for a list (references resolved).
    items: Option<Value>,
    /// Whether null (or leaving it out, for an `Option`) is allowed.
    nullable: bool,
    /// Whether its mapping requires it.
    required: bool,
    /// `default`, from the property itself.
    default: Option<Value>,
    /// `description`, from the property or else its type.
    description: String,
    /// The prefix of its keys when it holds a mapping (`github`) or a list of them (`clusters[]`): it then
    /// gets a heading of its own, with its keys under it.
    children: Option<String>,
}

/// `docs/configuration.md`.
pub fn markdown() -> String {
    let schema = json_schema();
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut keys = Vec::new();
    collect(&schema, "", &defs, &mut keys, 0);

    let mut out = String::new();
    out.push_str("# Configuration reference\n\n");
    let _ = writeln!(
        out,
        "<!-- Generated from server/src/config.rs by server/src/config/reference.rs; do not edit. \
         Regenerate with `{REGENERATE}`. -->\n"
    );
    let _ = writeln!(
        out,
        "`tower serve --config FILE` reads one YAML file, `tower.yaml`; environment variables then override \
         some of its keys (below). `tower config check FILE` reads a file the same way and lists every \
         problem with its key, or prints `FILE: ok`. The file's JSON Schema is \
         [`{SCHEMA_PATH}`](../{SCHEMA_PATH}) (`tower config schema` prints it); an editor with the YAML \
         language server checks the file as you type when its first line names the schema (a path relative to the \
         file, or a URL):\n"
    );
    let _ = writeln!(
        out,
        "```yaml\n# yaml-language-server: $schema=../{SCHEMA_PATH}\n```\n"
    );
    out.push_str(
        "Keys are listed as dotted paths; `clusters[].url` is the `url` of each item of the list `clusters`. \
         A key with a default may be left out.\n\n",
    );

    out.push_str("## Environment variables\n\n");
    out.push_str("| variable | sets |\n|---|---|\n");
    for (variable, key) in ENV_OVERRIDES {
        let _ = writeln!(
            out,
            "| `{variable}` | [`{key}`](#{}) |",
            anchor(&key_path(key))
        );
    }
    for (variable, what) in ENV_ONLY {
        let _ = writeln!(out, "| `{variable}` | {} |", one_line(what));
    }
    out.push('\n');

    // The top level's plain keys first, then one heading per mapping (or list of mappings) with its keys.
    out.push_str("## Top level\n\n");
    out.push_str(&paragraphs(
        schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    ));
    for key in members(&keys, "") {
        render_key(&mut out, "###", key);
    }
    for section in &keys {
        if let Some(children) = &section.children {
            render_key(&mut out, "##", section);
            for key in members(&keys, children) {
                render_key(&mut out, "###", key);
            }
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The keys directly under `parent` that hold a value (not a section of their own).
fn members<'a>(keys: &'a [Key], parent: &'a str) -> impl Iterator<Item = &'a Key> {
    keys.iter()
        .filter(move |key| key.children.is_none() && parent_of(&key.path) == parent)
}

/// Lists `node`'s properties under `prefix`, depth first, in the schema's (alphabetical) order.
fn collect(
    node: &Value,
    prefix: &str,
    defs: &Map<String, Value>,
    out: &mut Vec<Key>,
    depth: usize,
) {
    let (node, _) = resolve(node, defs);
    let Some(properties) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, property) in properties {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let (resolved, nullable) = resolve(property, defs);
        let description = property
            .get("description")
            .or_else(|| resolved.get("description"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (child, child_path) = if type_names(resolved).contains(&"array") {
            let items = resolved.get("items").map(|items| resolve(items, defs).0);
            (items, format!("{path}[]"))
        } else {
            (Some(resolved), path.clone())
        };
        let child = child.filter(|child| child.get("properties").is_some());
        out.push(Key {
            path: path.clone(),
            schema: resolved.clone(),
            items: resolved
                .get("items")
                .map(|items| resolve(items, defs).0.clone()),
            nullable,
            required: required.contains(&name.as_str()),
            default: property.get("default").cloned(),
            description,
            children: child.is_some().then(|| child_path.clone()),
        });
        if let Some(child) = child
            && depth < 8
        {
            collect(child, &child_path, defs, out, depth + 1);
        }
    }
}

fn render_key(out: &mut String, level: &str, key: &Key) {
    let _ = writeln!(out, "{level} `{}`\n", key.path);
    let mut facts = vec![format!(
        "**Type:** {}",
        type_words(&key.schema, key.items.as_ref(), key.nullable)
    )];
    if key.required {
        facts.push("**required**".into());
    } else if key.nullable && key.default.as_ref().is_none_or(Value::is_null) {
        facts.push("optional".into());
    }
    if key.schema.get("writeOnly") == Some(&Value::Bool(true)) {
        facts.push("**secret** (shown only as set or not set)".into());
    }
    let variables: Vec<String> = ENV_OVERRIDES
        .iter()
        .filter(|(_, overridden)| key_path(overridden) == key.path)
        .map(|(variable, _)| format!("`{variable}`"))
        .collect();
    if !variables.is_empty() {
        facts.push(format!("**environment:** {}", variables.join(", ")));
    }
    let block_default = match &key.default {
        None | Some(Value::Null) => None,
        // A mapping's default is its keys' defaults, which they list themselves.
        Some(Value::Object(_)) => {
            facts.push("**default:** each of its keys' defaults".into());
            None
        }
        Some(value @ Value::Array(items)) if !items.is_empty() => {
            facts.push("**default:** below".into());
            Some(value)
        }
        Some(value) => {
            facts.push(format!("**default:** `{}`", inline(value)));
            None
        }
    };
    let _ = writeln!(out, "{}\n", facts.join(" · "));
    out.push_str(&paragraphs(&key.description));
    if let Some(value) = block_default {
        let yaml = serde_saphyr::to_string(value).unwrap_or_else(|_| value.to_string());
        let _ = writeln!(out, "```yaml\n{}\n```\n", yaml.trim_end());
    }
}

/// The key a section's member belongs to: `github` for `github.api_url`, `clusters[]` for `clusters[].url`,
/// `` for `listen`.
fn parent_of(path: &str) -> &str {
    path.rsplit_once('.').map_or("", |(parent, _)| parent)
}

/// `argocd[0].token` as the reference lists it: `argocd[].token`.
fn key_path(key: &str) -> String {
    let mut out = String::new();
    let mut rest = key;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..=open]);
        rest = &rest[open..];
        match rest.find(']') {
            Some(close) => rest = &rest[close..],
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// GitHub's heading anchor for the heading `` `path` ``: lower case, punctuation other than `-` and `_`
/// dropped.
fn anchor(path: &str) -> String {
    path.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

/// What a schema asks for, in words; `items` is a list's item schema.
fn type_words(schema: &Value, items: Option<&Value>, nullable: bool) -> String {
    let mut words = if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", inline(v))).collect();
        format!("one of {}", values.join(", "))
    } else {
        let names: Vec<&str> = type_names(schema)
            .into_iter()
            .filter(|name| *name != "null")
            .collect();
        match names.as_slice() {
            ["array"] => match items {
                Some(items) if items.get("properties").is_some() => "list of mappings".into(),
                Some(items) if items.get("enum").is_some() => {
                    format!("list, each item {}", type_words(items, None, false))
                }
                Some(items) => match type_names(items).as_slice() {
                    ["string"] => "list of strings".into(),
                    ["integer"] => "list of integers".into(),
                    _ => "list".into(),
                },
                None => "list".into(),
            },
            ["object"] => "mapping".into(),
            ["integer"] => match schema.get("minimum").and_then(Value::as_f64) {
                Some(0.0) => "integer ≥ 0".into(),
                _ => "integer".into(),
            },
            [one] => (*one).to_string(),
            _ => "any value".into(),
        }
    };
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        words.push_str(" (each at most once)");
    }
    if nullable {
        words.push_str(" or null");
    }
    words
}

/// A JSON value as one line: strings without quotes.
fn inline(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A doc comment's text as Markdown paragraphs: its wrapped lines joined, rustdoc links made plain code.
fn paragraphs(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for paragraph in text.split("\n\n") {
        let _ = writeln!(out, "{}\n", one_line(paragraph));
    }
    out
}

/// Wrapped lines joined into one, `` [`x`] `` made `` `x` ``.
fn one_line(text: &str) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    joined.replace("[`", "`").replace("`]", "`")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    /// The checked-in schema and reference are what the types say. `TOWER_WRITE_CONFIG_DOCS=1` rewrites them
    /// after a change to a configuration type.
    #[test]
    fn generated_files_match_the_code() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let files = [
            (SCHEMA_PATH, super::super::schema::json_schema_text()),
            (REFERENCE_PATH, markdown()),
        ];
        if std::env::var_os("TOWER_WRITE_CONFIG_DOCS").is_some() {
            for (path, text) in &files {
                std::fs::write(root.join(path), text).expect("write a generated file");
            }
        }
        for (path, text) in &files {
            let on_disk = std::fs::read_to_string(root.join(path)).unwrap_or_default();
            assert!(
                on_disk == *text,
                "{path} differs from what the configuration types generate: run `{REGENERATE}`"
            );
        }
    }

    #[test]
    fn every_key_is_in_the_reference_with_its_type() {
        let text = markdown();
        for key in [
            "### `listen`",
            "### `clusters[].url`",
            "### `github.client_secret`",
            "### `pipelines.history_per_service`",
            "### `auth.guest_allowlist`",
            "### `scaffolds[].versions`",
            "## `crossplane_claims`",
            "### `crossplane_claims[].plural`",
        ] {
            assert!(text.contains(key), "{key} missing");
        }
        assert!(text.contains("| `TOWER_SESSION_SECRET` |"), "{text}");
        assert!(
            text.contains("| `TOWER_ARGOCD_TOKEN` | [`argocd[0].token`](#argocdtoken) |"),
            "{text}"
        );
        assert!(text.contains("**default:** `12`"), "{text}");
    }

    #[test]
    fn every_environment_override_names_a_key_of_the_schema() {
        let text = markdown();
        for (variable, key) in ENV_OVERRIDES {
            let heading = format!("### `{}`", key_path(key));
            assert!(
                text.contains(&heading),
                "{variable} overrides {key}, which is not a key"
            );
        }
    }

    #[test]
    fn the_secrets_the_settings_page_masks_are_the_ones_the_schema_marks() {
        let schema = json_schema();
        let mut marked = BTreeSet::new();
        for def in schema["$defs"]
            .as_object()
            .into_iter()
            .flat_map(|d| d.values())
        {
            for (name, property) in def["properties"].as_object().into_iter().flatten() {
                if property.get("writeOnly") == Some(&Value::Bool(true)) {
                    marked.insert(name.as_str());
                }
            }
        }
        let named: BTreeSet<&str> = super::super::SECRET_KEYS.into_iter().collect();
        assert_eq!(marked, named);
    }

    #[test]
    fn key_paths_drop_list_indices() {
        assert_eq!(key_path("argocd[0].token"), "argocd[].token");
        assert_eq!(key_path("listen"), "listen");
        assert_eq!(anchor("clusters[].url"), "clustersurl");
    }
}
