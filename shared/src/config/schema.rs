//! The platform's resources checked against their CRDs' OpenAPI v3 schemas, with line and column.
//!
//! The schemas are `deploy/crds/`, which `shared::crd` generates and a test keeps equal to the types; they are
//! compiled in here, so the browser (in the Config tab's chunk) and the server check a file against one
//! source. The walker knows the structural subset Kubernetes allows in a CRD (`type`, `properties`,
//! `required`, `items`, `additionalProperties`, `enum`, `nullable`, `format`, `minimum`/`maximum`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`) and ignores the rest (`description`,
//! `default`, `title`): a general JSON Schema crate would add a regex engine and URL handling to the chunk
//! for keywords these schemas never use, and would still need this tree to turn its JSON pointers into lines.

use std::sync::OnceLock;

use super::Diagnostic;
use super::yaml::{self, Node, Position, Value};

/// The API group and version of every platform resource.
pub const API_VERSION: &str = "platform.tower.dev/v1alpha1";

/// The CRDs, as `deploy/crds/` holds them.
const CRDS: [&str; 4] = [
    include_str!("../../../deploy/crds/components.platform.tower.dev.yaml"),
    include_str!("../../../deploy/crds/releases.platform.tower.dev.yaml"),
    include_str!("../../../deploy/crds/databases.platform.tower.dev.yaml"),
    include_str!("../../../deploy/crds/databaseschemas.platform.tower.dev.yaml"),
];

/// The type a schema asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// A mapping.
    Object,
    /// A list.
    Array,
    /// Text.
    String,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// `true` or `false`.
    Boolean,
}

impl Type {
    fn parse(name: &str) -> Option<Type> {
        Some(match name {
            "object" => Type::Object,
            "array" => Type::Array,
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            _ => return None,
        })
    }

    fn words(self) -> &'static str {
        match self {
            Type::Object => "a mapping",
            Type::Array => "a list",
            Type::String => "a string",
            Type::Integer => "a whole number",
            Type::Number => "a number",
            Type::Boolean => "true or false",
        }
    }
}

/// One node of a structural schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// `type`.
    pub kind: Option<Type>,
    /// `properties`, in the order the CRD lists them.
    pub properties: Vec<(String, Schema)>,
    /// `required`.
    pub required: Vec<String>,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `additionalProperties` (a map's values).
    pub additional: Option<Box<Schema>>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `nullable`.
    pub nullable: bool,
    /// `enum`, as the values' text.
    pub allowed: Vec<String>,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `maximum`.
    pub maximum: Option<f64>,
}

impl Schema {
    /// Reads a schema node of a CRD.
    pub fn from_node(node: &Node) -> Schema {
        let text = |key: &str| node.get(key).and_then(Node::as_str);
        let number = |key: &str| match node.get(key).map(|n| &n.value) {
            Some(Value::Integer(i)) => Some(*i as f64),
            Some(Value::Float(f)) => Some(*f),
            _ => None,
        };
        let flag = |key: &str| matches!(node.get(key).map(|n| &n.value), Some(Value::Bool(true)));
        let list = |key: &str| match node.get(key).map(|n| &n.value) {
            Some(Value::Sequence(items)) => items.iter().filter_map(scalar_text).collect(),
            _ => Vec::new(),
        };
        Schema {
            kind: text("type").and_then(Type::parse),
            properties: match node.get("properties").map(|n| &n.value) {
                Some(Value::Mapping(entries)) => entries
                    .iter()
                    .map(|e| (e.key.clone(), Schema::from_node(&e.value)))
                    .collect(),
                _ => Vec::new(),
            },
            required: list("required"),
            items: node.get("items").map(|n| Box::new(Schema::from_node(n))),
            additional: node
                .get("additionalProperties")
                .filter(|n| matches!(n.value, Value::Mapping(_)))
                .map(|n| Box::new(Schema::from_node(n))),
            preserve_unknown: flag("x-kubernetes-preserve-unknown-fields"),
            int_or_string: flag("x-kubernetes-int-or-string"),
            nullable: flag("nullable"),
            allowed: list("enum"),
            minimum: number("minimum"),
            maximum: number("maximum"),
        }
    }

    /// The schema of property `name`.
    pub fn property(&self, name: &str) -> Option<&Schema> {
        self.properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, schema)| schema)
    }
}

/// A platform kind and the schema of its storage version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSchema {
    /// `Release`, `Component`, …
    pub kind: String,
    /// The root schema (`openAPIV3Schema`).
    pub schema: Schema,
}

/// The four platform kinds' schemas, read once from the compiled-in CRDs.
pub fn platform_schemas() -> &'static [ResourceSchema] {
    static SCHEMAS: OnceLock<Vec<ResourceSchema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| CRDS.iter().filter_map(|crd| read_crd(crd)).collect())
}

/// The schema of `kind`.
pub fn schema_of(kind: &str) -> Option<&'static ResourceSchema> {
    platform_schemas().iter().find(|r| r.kind == kind)
}

/// A CRD's kind and the schema of its storage version. `None` only if `deploy/crds/` were not a CRD, which
/// the tests rule out.
fn read_crd(text: &str) -> Option<ResourceSchema> {
    let crd = yaml::parse(text).ok()??;
    let spec = crd.get("spec")?;
    let kind = spec.get("names")?.get("kind")?.as_str()?.to_string();
    let Value::Sequence(versions) = &spec.get("versions")?.value else {
        return None;
    };
    let storage = versions
        .iter()
        .find(|v| matches!(v.get("storage").map(|n| &n.value), Some(Value::Bool(true))))?;
    let schema = Schema::from_node(storage.get("schema")?.get("openAPIV3Schema")?);
    Some(ResourceSchema { kind, schema })
}

/// The text of a scalar node (for `enum` and keys).
fn scalar_text(node: &Node) -> Option<String> {
    Some(match &node.value {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null | Value::Sequence(_) | Value::Mapping(_) => return None,
    })
}

/// `parent.child`, or `child` at the root.
pub fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_string()
    } else {
        format!("{parent}.{child}")
    }
}

/// Checks `node` (at field path `path`; `owner` is where its key is, for "missing" diagnostics) against
/// `schema`, appending what is wrong to `out`.
pub fn check(node: &Node, owner: Position, path: &str, schema: &Schema, out: &mut Vec<Diagnostic>) {
    if node.value == Value::Null {
        if !schema.nullable && schema.kind.is_some() {
            out.push(Diagnostic::new(
                node.at,
                path,
                format!(
                    "`{path}` is empty; it needs {}.",
                    schema.kind.map_or("a value", Type::words)
                ),
            ));
        }
        return;
    }
    if let Some(kind) = schema.kind
        && !fits(&node.value, kind, schema.int_or_string)
    {
        let hint = match (&node.value, kind) {
            (Value::Integer(_) | Value::Float(_) | Value::Bool(_), Type::String) => {
                " Quote it to make it a string."
            }
            (Value::String(_), Type::Boolean) => " Write true or false, without quotes.",
            _ => "",
        };
        out.push(Diagnostic::new(
            node.at,
            path,
            format!(
                "`{path}` should be {}, not {}.{hint}",
                kind.words(),
                node.describe()
            ),
        ));
        return;
    }
    if !schema.allowed.is_empty()
        && let Some(text) = scalar_text(node)
        && !schema.allowed.contains(&text)
    {
        out.push(Diagnostic::new(
            node.at,
            path,
            format!(
                "`{path}` must be one of {}; {text:?} is not.",
                schema.allowed.join(", ")
            ),
        ));
    }
    let number = match node.value {
        Value::Integer(i) => Some(i as f64),
        Value::Float(f) => Some(f),
        _ => None,
    };
    if let Some(number) = number
        && (schema.minimum.is_some_and(|min| number < min)
            || schema.maximum.is_some_and(|max| number > max))
    {
        out.push(Diagnostic::new(
            node.at,
            path,
            format!(
                "`{path}` must be between {} and {}.",
                schema.minimum.map_or("-∞".into(), |m| m.to_string()),
                schema.maximum.map_or("∞".into(), |m| m.to_string())
            ),
        ));
    }
    match &node.value {
        Value::Mapping(entries) => {
            for entry in entries {
                let field = join(path, &entry.key);
                if let Some(child) = schema.property(&entry.key) {
                    check(&entry.value, entry.key_at, &field, child, out);
                } else if let Some(values) = &schema.additional {
                    check(&entry.value, entry.key_at, &field, values, out);
                } else if !schema.preserve_unknown && !schema.properties.is_empty() {
                    out.push(unknown_field(entry.key_at, path, &entry.key, schema));
                } else if !schema.preserve_unknown && schema.kind == Some(Type::Object) {
                    out.push(Diagnostic::new(
                        entry.key_at,
                        &field,
                        format!("`{field}` is not a field here: `{path}` takes no fields."),
                    ));
                }
            }
            for required in &schema.required {
                if node.entry(required).is_none() {
                    let field = join(path, required);
                    out.push(Diagnostic::new(
                        owner,
                        &field,
                        format!("`{field}` is required and missing."),
                    ));
                }
            }
        }
        Value::Sequence(items) => {
            if let Some(item_schema) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    check(item, item.at, &format!("{path}[{i}]"), item_schema, out);
                }
            }
        }
        _ => {}
    }
}

/// Whether `value` is of type `kind`.
fn fits(value: &Value, kind: Type, int_or_string: bool) -> bool {
    match (kind, value) {
        (Type::Object, Value::Mapping(_))
        | (Type::Array, Value::Sequence(_))
        | (Type::String, Value::String(_))
        | (Type::Integer, Value::Integer(_))
        | (Type::Number, Value::Integer(_) | Value::Float(_))
        | (Type::Boolean, Value::Bool(_)) => true,
        (Type::String, Value::Integer(_)) => int_or_string,
        _ => false,
    }
}

/// "Unknown field `spec.foo`", with the nearest known field when one is close.
fn unknown_field(at: Position, parent: &str, key: &str, schema: &Schema) -> Diagnostic {
    let field = join(parent, key);
    let known: Vec<&str> = schema.properties.iter().map(|(k, _)| k.as_str()).collect();
    let nearest = known
        .iter()
        .map(|k| (edit_distance(&key.to_lowercase(), &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= 2)
        .min();
    let suggestion = match nearest {
        Some((_, k)) => format!(" Did you mean `{k}`?"),
        None => format!(" Known fields: {}.", known.join(", ")),
    };
    let place = if parent.is_empty() {
        "this resource".to_string()
    } else {
        format!("`{parent}`")
    };
    Diagnostic::new(
        at,
        &field,
        format!("Unknown field `{field}`: {place} has no `{key}`.{suggestion}"),
    )
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_in_deploy_is_read() {
        let kinds: Vec<&str> = platform_schemas().iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["Component", "Release", "Database", "DatabaseSchema"]
        );
        let release = schema_of("Release").expect("Release");
        let spec = release.schema.property("spec").expect("spec");
        assert!(spec.required.contains(&"version".to_string()));
        assert_eq!(
            schema_of("Database")
                .and_then(|d| d.schema.property("spec"))
                .and_then(|s| s.property("size"))
                .map(|s| s.allowed.clone()),
            Some(vec!["small".into(), "medium".into(), "large".into()])
        );
    }

    #[test]
    fn near_misses_get_a_suggestion() {
        assert_eq!(edit_distance("verison", "version"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        let spec = schema_of("Release")
            .and_then(|r| r.schema.property("spec"))
            .expect("spec");
        let d = unknown_field(Position::START, "spec", "verison", spec);
        assert!(
            d.message.contains("Did you mean `version`?"),
            "{}",
            d.message
        );
        let d = unknown_field(Position::START, "spec", "replicas", spec);
        assert!(
            d.message.contains("Known fields: autoDeploy, chart"),
            "{}",
            d.message
        );
    }
}
