//! `tower.yaml`'s JSON Schema, derived from the configuration types with `schemars`: doc comments become
//! descriptions, `#[serde(default = …)]` becomes `default`, secrets are strings marked `writeOnly`.
//!
//! The same schema does two jobs. `deploy/tower.schema.json` and `docs/configuration.md` are written from it
//! (see [`super::reference`]), and a file that does not deserialize is walked against it by
//! `shared::config::schema::check`, so every unknown key, wrong type and missing key is named with its line
//! and column at once, not only the first one serde meets.

use std::borrow::Cow;
use std::sync::OnceLock;

use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::{Map, Value};
use shared::auth::Permission;
use shared::config::schema::{Schema as Structural, Type};

use super::TowerConfig;

/// A scaffold template the platform offers for new services, with its versions, newest first.
///
/// The schema of `shared::delivery::Scaffold`, which `shared` does not derive (its schema would reach the
/// browser's wasm for nothing); `the_scaffold_mirror_has_the_fields_of_the_real_type` keeps the two equal.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Only its schema is used.
pub(super) struct Scaffold {
    /// The template's name, e.g. `go-service`.
    name: String,
    /// Its released versions, newest first, e.g. `["1.4.0", "1.3.2"]`.
    versions: Vec<String>,
}

/// The schema of a [`Permission`] as the file names it: one of [`Permission::ALL`], in snake case.
pub(super) struct PermissionName;

impl JsonSchema for PermissionName {
    fn schema_name() -> Cow<'static, str> {
        "Permission".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> schemars::Schema {
        let names: Vec<Value> = Permission::ALL
            .iter()
            .filter_map(|permission| serde_json::to_value(permission).ok())
            .collect();
        json_schema!({
            "description": "A permission, as `shared::auth::Permission` names it.",
            "type": "string",
            "enum": names,
        })
    }
}

/// The JSON Schema of `tower.yaml` (draft 2020-12).
pub fn json_schema() -> Value {
    let mut schema = schemars::schema_for!(TowerConfig).to_value();
    if let Some(root) = schema.as_object_mut() {
        root.insert("title".into(), "tower.yaml".into());
    }
    schema
}

/// [`json_schema`] as `deploy/tower.schema.json` holds it: pretty-printed, ending in a newline.
pub fn json_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&json_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// The schema in the structural form `shared::config::schema::check` walks: references resolved, an
/// `Option` (`anyOf` with `null`, or a type list with `null`) made `nullable`.
pub(super) fn structural() -> &'static Structural {
    static STRUCTURAL: OnceLock<Structural> = OnceLock::new();
    STRUCTURAL.get_or_init(|| {
        let schema = json_schema();
        let defs = schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        to_structural(&schema, &defs, 0)
    })
}

/// Follows `$ref`s into `defs` and unwraps `anyOf: [X, {type: null}]`, returning the schema and whether
/// null is allowed.
pub(super) fn resolve<'a>(mut node: &'a Value, defs: &'a Map<String, Value>) -> (&'a Value, bool) {
    let mut nullable = false;
    // schemars nests at most a reference inside an `anyOf`; the bound only guards against a cycle.
    for _ in 0..8 {
        if let Some(target) = node.get("$ref").and_then(Value::as_str) {
            match target
                .strip_prefix("#/$defs/")
                .and_then(|name| defs.get(name))
            {
                Some(found) => node = found,
                None => break,
            }
        } else if let Some(branches) = node.get("anyOf").and_then(Value::as_array) {
            let (nulls, others): (Vec<&Value>, Vec<&Value>) = branches
                .iter()
                .partition(|b| b.get("type").and_then(Value::as_str) == Some("null"));
            match (nulls.len(), others.as_slice()) {
                (1, [only]) => {
                    nullable = true;
                    node = only;
                }
                _ => break,
            }
        } else {
            break;
        }
    }
    (node, nullable || type_names(node).contains(&"null"))
}

/// The names in a schema's `type` (a string or a list).
pub(super) fn type_names(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn to_structural(node: &Value, defs: &Map<String, Value>, depth: usize) -> Structural {
    let (node, nullable) = resolve(node, defs);
    if depth > 16 {
        return Structural::default();
    }
    let kind = type_names(node).into_iter().find_map(|name| match name {
        "object" => Some(Type::Object),
        "array" => Some(Type::Array),
        "string" => Some(Type::String),
        "integer" => Some(Type::Integer),
        "number" => Some(Type::Number),
        "boolean" => Some(Type::Boolean),
        _ => None,
    });
    let properties = node
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(key, child)| (key.clone(), to_structural(child, defs, depth + 1)))
                .collect()
        })
        .unwrap_or_default();
    let strings = |key: &str| -> Vec<String> {
        node.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|item| match item {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    Structural {
        kind,
        properties,
        required: strings("required"),
        items: node
            .get("items")
            .map(|items| Box::new(to_structural(items, defs, depth + 1))),
        additional: node
            .get("additionalProperties")
            .filter(|additional| additional.is_object())
            .map(|additional| Box::new(to_structural(additional, defs, depth + 1))),
        preserve_unknown: false,
        int_or_string: false,
        nullable,
        allowed: strings("enum"),
        minimum: node.get("minimum").and_then(Value::as_f64),
        maximum: node.get("maximum").and_then(Value::as_f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scaffold_mirror_has_the_fields_of_the_real_type() {
        let real = serde_json::to_value(shared::delivery::Scaffold {
            name: "go-service".into(),
            versions: vec!["1.4.0".into()],
        })
        .expect("a scaffold serializes");
        let real: Vec<&String> = real.as_object().expect("an object").keys().collect();
        let mirror = schemars::schema_for!(Scaffold).to_value();
        let mirror: Vec<&String> = mirror["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .collect();
        assert_eq!(real, mirror);
    }

    #[test]
    fn secrets_are_strings_the_schema_marks_write_only() {
        let schema = json_schema();
        let github = &schema["$defs"]["GithubConfig"]["properties"];
        assert_eq!(github["client_secret"]["type"], "string");
        assert_eq!(github["client_secret"]["writeOnly"], true);
        assert_eq!(github["client_id"].get("writeOnly"), None);
        let cluster = &schema["$defs"]["ClusterConfig"]["properties"];
        assert_eq!(cluster["token"]["writeOnly"], true);
        assert_eq!(
            cluster["token"]["type"],
            serde_json::json!(["string", "null"])
        );
    }

    #[test]
    fn defaults_and_descriptions_come_from_the_types() {
        let schema = json_schema();
        let listen = &schema["properties"]["listen"];
        assert_eq!(listen["default"], "127.0.0.1:8080");
        assert!(
            listen["description"]
                .as_str()
                .is_some_and(|d| d.contains("TOWER_LISTEN")),
            "{listen}"
        );
        let pipelines = &schema["$defs"]["PipelinesConfig"]["properties"];
        assert_eq!(pipelines["history_per_service"]["default"], 200);
        assert_eq!(
            schema["required"],
            serde_json::json!(["organisation", "clusters"])
        );
    }

    #[test]
    fn guest_permissions_are_the_closed_set() {
        let schema = json_schema();
        let names = schema["$defs"]["Permission"]["enum"]
            .as_array()
            .map(Vec::len);
        assert_eq!(names, Some(Permission::ALL.len()));
    }
}
