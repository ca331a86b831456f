//! What the contract tests share: a vendored schema document loaded once, and validators for the schemas at
//! JSON pointers inside it.
//!
//! ```ignore
//! let contract = Contract::load("contracts/github-rest/openapi.json", Draft::Draft4);
//! let validator = contract.validator("/components/schemas/full-repository");
//! assert_eq!(violations(&validator, &answer), Vec::<String>::new());
//! ```
//!
//! The document is registered under its own URI, so the `$ref`s of the schema a validator checks
//! (`#/components/schemas/…`, `#/definitions/…`) resolve into it. An OpenAPI 3.0 document's `nullable: true`
//! is no JSON Schema keyword (a validator would ignore it and reject every `null`), so it is translated into
//! what it means when such a document is loaded: `null` joins the schema's `type` (and its `enum`), or the
//! schema becomes `anyOf` itself or `null` when it names no type.
#![allow(clippy::unwrap_used)]

use jsonschema::{Draft, Registry, Validator};
use serde_json::{Value, json};

/// A vendored schema document, ready to build validators from.
pub struct Contract {
    document: Value,
    registry: Registry<'static>,
    uri: String,
    draft: Draft,
}

impl Contract {
    /// Loads the document at `path`, relative to the sandbox crate (`contracts/github-rest/openapi.json`),
    /// whose schemas follow `draft` (OpenAPI 3.0's schema objects are closest to draft 4: `$ref` replaces its
    /// siblings, `exclusiveMinimum` is a boolean).
    pub fn load(path: &str, draft: Draft) -> Self {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut document: Value = serde_json::from_str(&text).unwrap();
        let openapi_3_0 = document["openapi"]
            .as_str()
            .is_some_and(|version| version.starts_with("3.0"));
        if openapi_3_0 {
            translate_nullable(&mut document);
        }
        let uri = format!("urn:tower:contract:{path}");
        let registry = Registry::new()
            .draft(draft)
            .add(&uri, document.clone())
            .unwrap()
            .prepare()
            .unwrap();
        Self {
            document,
            registry,
            uri,
            draft,
        }
    }

    /// The document as loaded (with `nullable` translated).
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// A validator for the schema at `pointer` (`/components/schemas/repository`), its references resolved
    /// in the document. Panics when nothing is there.
    pub fn validator(&self, pointer: &str) -> Validator {
        assert!(
            self.document.pointer(pointer).is_some(),
            "{} has nothing at {pointer}",
            self.uri
        );
        self.validator_for(&json!({"$ref": format!("#{pointer}")}))
    }

    /// A validator for `schema`, a piece of the document or one made from pieces of it: its local
    /// references (`#/…`) resolve in the document.
    pub fn validator_for(&self, schema: &Value) -> Validator {
        let mut schema = schema.clone();
        self.absolute_references(&mut schema);
        jsonschema::options()
            .with_draft(self.draft)
            .with_registry(&self.registry)
            .build(&schema)
            .unwrap_or_else(|e| panic!("{schema}: {e}"))
    }

    fn absolute_references(&self, schema: &mut Value) {
        match schema {
            Value::Object(object) => {
                for (key, value) in object.iter_mut() {
                    match value {
                        Value::String(reference) if key == "$ref" && reference.starts_with('#') => {
                            // A URI fragment: the braces of path templates (`~1{owner}`) are escaped.
                            let fragment = reference
                                .replace('%', "%25")
                                .replace('{', "%7B")
                                .replace('}', "%7D");
                            *reference = format!("{}{fragment}", self.uri);
                        }
                        _ => self.absolute_references(value),
                    }
                }
            }
            Value::Array(items) => items
                .iter_mut()
                .for_each(|item| self.absolute_references(item)),
            _ => {}
        }
    }
}

/// Every violation of `validator` by `instance`, one a line: where in the instance, what is wrong, and
/// where in the schema. Empty when it conforms.
pub fn violations(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|error| {
            format!(
                "`{}`: {} (schema {})",
                error.instance_path(),
                error,
                error.schema_path()
            )
        })
        .collect()
}

/// Rewrites OpenAPI 3.0's `nullable: true` into JSON Schema, everywhere in `value`.
fn translate_nullable(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(translate_nullable),
        Value::Object(object) => {
            object.values_mut().for_each(translate_nullable);
            // Only the keyword: a `properties` map may name a field `nullable`.
            if object.get("nullable") != Some(&Value::Bool(true)) {
                return;
            }
            object.remove("nullable");
            if let Some(Value::Array(allowed)) = object.get_mut("enum")
                && !allowed.contains(&Value::Null)
            {
                allowed.push(Value::Null);
            }
            match object.get_mut("type") {
                Some(Value::String(kind)) => {
                    let kind = std::mem::take(kind);
                    object.insert("type".into(), json!([kind, "null"]));
                }
                Some(Value::Array(kinds)) => {
                    if !kinds.contains(&json!("null")) {
                        kinds.push(json!("null"));
                    }
                }
                _ => {
                    let schema = Value::Object(std::mem::take(object));
                    object.insert("anyOf".into(), json!([schema, {"type": "null"}]));
                }
            }
        }
        _ => {}
    }
}
