//! The sandbox's fixtures: every object has the shape its upstream gives it (k8s-openapi for core kinds,
//! `shared::crd` for the platform's, the CRDs and Argo CD's Swagger in `sandbox/tests/reference/` for the rest),
//! and together they tell the story the plan tells.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, Secret, Service};
use kube::api::{Api, ListParams};
use kube::{Client, Config};
use sandbox::fixtures::{self, argocd, crossplane, secrets, tekton, workloads};
use sandbox::platform::schema_version;
use sandbox::world::{ENVIRONMENTS, Histories, SERVICES};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use shared::crd::{Component, Database, DatabaseSchema, Release};

// ---- the fixtures under test ----

fn base() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

/// Every fixture object with the cluster it goes to.
fn all_objects() -> Vec<(String, Value)> {
    let histories = Histories::synthetic();
    let mut all: Vec<(String, Value)> = fixtures::management_objects(&histories, base())
        .into_iter()
        .map(|o| ("management".to_string(), o))
        .collect();
    for environment in ENVIRONMENTS {
        all.extend(
            fixtures::workload_objects(environment, &histories, base())
                .into_iter()
                .map(|o| (environment.to_string(), o)),
        );
    }
    all
}

/// Every fixture object of a sandbox with `topology`, with the cluster it goes to.
fn all_objects_on(topology: &sandbox::topology::Topology) -> Vec<(String, Value)> {
    let histories = Histories::synthetic();
    let mut all: Vec<(String, Value)> =
        fixtures::management_objects_for(topology, &histories, base())
            .into_iter()
            .map(|o| ("management".to_string(), o))
            .collect();
    for cluster in topology.workload_clusters() {
        all.extend(
            fixtures::workload_objects_on(cluster, &histories, base())
                .into_iter()
                .map(|o| (cluster.name.clone(), o)),
        );
    }
    all
}

fn of_kind(kind: &str) -> Vec<(String, Value)> {
    all_objects()
        .into_iter()
        .filter(|(_, o)| o["kind"] == kind)
        .collect()
}

/// The services' Applications: those `taskapp-catalog` owns.
fn catalog_applications() -> Vec<(String, Value)> {
    of_kind("Application")
        .into_iter()
        .filter(|(_, a)| {
            a["metadata"]["ownerReferences"][0]["name"] == argocd::CATALOG_APPLICATION_SET
        })
        .collect()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

fn label<'a>(object: &'a Value, key: &str) -> &'a str {
    object["metadata"]["labels"][key]
        .as_str()
        .unwrap_or_default()
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

// ---- reference shapes ----

fn reference_dir() -> PathBuf {
    // The upstream files the fixtures are checked against, copied into the repository (with each
    // upstream's SOURCE) so a clone alone runs every test.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference")
}

/// The YAML documents of a reference file.
fn reference_documents(file: &str) -> Vec<Value> {
    let path = reference_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(["---"]) {
        if line.trim_end() == "---" {
            if current.lines().any(|l| {
                let l = l.trim();
                !l.is_empty() && !l.starts_with('#')
            }) {
                let document: Value = serde_saphyr::from_str(&current)
                    .unwrap_or_else(|e| panic!("{file} is not YAML: {e}"));
                documents.push(document);
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    documents
}

/// The openAPIV3Schema of a reference CRD's version, which must be served; parsed once per file.
fn crd_schema(file: &str, version: &str) -> Value {
    static CACHE: OnceLock<Mutex<HashMap<(String, String), Value>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let key = (file.to_string(), version.to_string());
    if let Some(schema) = cache.lock().unwrap().get(&key) {
        return schema.clone();
    }
    let schema = parse_crd_schema(file, version);
    cache.lock().unwrap().insert(key, schema.clone());
    schema
}

fn parse_crd_schema(file: &str, version: &str) -> Value {
    let crd = reference_documents(file)
        .into_iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .unwrap_or_else(|| panic!("{file} holds no CRD"));
    let served = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap_or_else(|| panic!("{file} has no version {version}"))
        .clone();
    assert_eq!(served["served"], true, "{file} does not serve {version}");
    served["schema"]["openAPIV3Schema"].clone()
}

/// A schema and the document its `$ref`s resolve in.
struct Schema {
    root: Value,
    schema: Value,
}

impl Schema {
    fn crd(file: &str, version: &str) -> Self {
        let schema = crd_schema(file, version);
        Self {
            root: schema.clone(),
            schema,
        }
    }

    fn swagger(definition: &str) -> Self {
        static SWAGGER: OnceLock<Value> = OnceLock::new();
        let root = SWAGGER.get_or_init(|| {
            let path = reference_dir().join("argocd/swagger.json");
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        });
        Self {
            schema: json!({"$ref": format!("#/definitions/{definition}")}),
            root: root.clone(),
        }
    }

    fn errors(&self, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        check(&self.root, &self.schema, value, "", &mut errors);
        errors
    }
}

/// A structural check of `value` against an OpenAPI v3 (CRD) or Swagger 2 schema: types, formats, enums,
/// required fields, and no fields the schema does not declare (a real apiserver would prune them).
fn check(root: &Value, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let pointer = reference.trim_start_matches('#');
        let target = root
            .pointer(pointer)
            .unwrap_or_else(|| panic!("unresolved {reference}"));
        return check(root, target, value, path, errors);
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            errors.push(format!("{path}: want int or string, got {value}"));
        }
        return;
    }
    if value.is_null() {
        if schema["nullable"] != true {
            errors.push(format!("{path}: null"));
        }
        return;
    }
    for all in schema["allOf"].as_array().into_iter().flatten() {
        check(root, all, value, path, errors);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            let fits = options.iter().any(|option| {
                let mut inner = Vec::new();
                check(root, option, value, path, &mut inner);
                inner.is_empty()
            });
            if !fits {
                errors.push(format!("{path}: matches none of {key}"));
            }
        }
    }
    let ok = match schema["type"].as_str() {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !ok {
        errors.push(format!("{path}: want {}, got {value}", schema["type"]));
        return;
    }
    if let (Some("date-time"), Some(text)) = (schema["format"].as_str(), value.as_str())
        && text.parse::<Timestamp>().is_err()
    {
        errors.push(format!("{path}: {text:?} is not a date-time"));
    }
    if let Some(options) = schema["enum"].as_array()
        && !options.contains(value)
    {
        errors.push(format!("{path}: {value} is not one of {options:?}"));
    }
    if let Some(object) = value.as_object() {
        let properties = schema["properties"].as_object();
        let preserve = schema["x-kubernetes-preserve-unknown-fields"] == true;
        for (key, field) in object {
            let here = format!("{path}.{key}");
            match (
                properties.and_then(|p| p.get(key)),
                &schema["additionalProperties"],
            ) {
                (Some(property), _) => check(root, property, field, &here, errors),
                (None, additional) if additional.is_object() => {
                    check(root, additional, field, &here, errors)
                }
                (None, Value::Bool(true)) => {}
                (None, _) if preserve || properties.is_none() => {}
                (None, _) => errors.push(format!("{here}: unknown field")),
            }
        }
        for required in schema["required"].as_array().into_iter().flatten() {
            if let Some(required) = required.as_str()
                && !object.contains_key(required)
            {
                errors.push(format!("{path}.{required}: required"));
            }
        }
    }
    if let (Some(items), Some(elements)) = (schema.get("items"), value.as_array()) {
        for (n, element) in elements.iter().enumerate() {
            check(root, items, element, &format!("{path}[{n}]"), errors);
        }
    }
}

/// Deserializes into `K` and back; a field `K` does not know (a typo, a wrong nesting) comes back missing.
fn round_trips<K: DeserializeOwned + Serialize>(object: &Value) -> Result<(), String> {
    let typed: K = serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    match first_difference(object, &back, "") {
        None => Ok(()),
        Some(difference) => Err(difference),
    }
}

fn first_difference(want: &Value, got: &Value, path: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w
            .keys()
            .chain(g.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .find_map(|k| {
                first_difference(
                    w.get(k).unwrap_or(&Value::Null),
                    g.get(k).unwrap_or(&Value::Null),
                    &format!("{path}.{k}"),
                )
            }),
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(n, (w, g))| first_difference(w, g, &format!("{path}[{n}]"))),
        _ if want == got => None,
        _ => Some(format!("{path}: fixture has {want}, the type reads {got}")),
    }
}

/// The conditions Crossplane writes on claims, composites and managed resources.
fn crossplane_status() -> Value {
    json!({
        "type": "object",
        "properties": {
            "conditions": {"type": "array", "items": {
                "type": "object",
                "required": ["type", "status", "reason", "lastTransitionTime"],
                "properties": {
                    "type": {"type": "string"},
                    "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                    "reason": {"type": "string"},
                    "message": {"type": "string"},
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                },
            }},
            "connectionDetails": {"type": "object", "properties": {"lastPublishedTime": {"type": "string", "format": "date-time"}}},
            "atProvider": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "endpoint": {"type": "string"},
        },
    })
}

fn reference(kind: &str, name: &str) -> Value {
    json!({"type": "object", "required": [name], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string", "enum": [kind]}, "name": {"type": "string"}, "namespace": {"type": "string"},
    }})
}

/// Checks one object against the shape its upstream gives it; `Err` says what is wrong.
fn validate(object: &Value, xrd: &Value) -> Result<(), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let schema_errors = |schema: Schema, value: &Value| -> Result<(), String> {
        let errors = schema.errors(value);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    };
    let without_type = || {
        let mut value = object.clone();
        let map = value.as_object_mut().unwrap();
        map.remove("apiVersion");
        map.remove("kind");
        value
    };
    // Whatever the kind, metadata must read as Kubernetes metadata.
    round_trips::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(&object["metadata"])?;
    match (api_version, kind) {
        ("v1", "Namespace") => round_trips::<Namespace>(object),
        ("v1", "Pod") => round_trips::<Pod>(object),
        ("v1", "Event") => round_trips::<Event>(object),
        ("v1", "Secret") => round_trips::<Secret>(object),
        ("v1", "Service") => round_trips::<Service>(object),
        ("v1", "ConfigMap") => round_trips::<ConfigMap>(object),
        ("apps/v1", "Deployment") => round_trips::<Deployment>(object),
        ("apps/v1", "ReplicaSet") => round_trips::<ReplicaSet>(object),
        ("platform.tower.dev/v1alpha1", "Component") => round_trips::<Component>(object),
        ("platform.tower.dev/v1alpha1", "Release") => round_trips::<Release>(object),
        ("platform.tower.dev/v1alpha1", "Database") => round_trips::<Database>(object),
        ("platform.tower.dev/v1alpha1", "DatabaseSchema") => round_trips::<DatabaseSchema>(object),
        ("argoproj.io/v1alpha1", "Application") => {
            // What Argo CD's API declares, and what its CRD lets the apiserver store.
            schema_errors(Schema::swagger("v1alpha1Application"), &without_type())?;
            schema_errors(
                Schema::crd("argocd/application-crd.yaml", "v1alpha1"),
                object,
            )
        }
        ("argoproj.io/v1alpha1", "ApplicationSet") => {
            schema_errors(Schema::swagger("v1alpha1ApplicationSet"), &without_type())
        }
        ("argoproj.io/v1alpha1", "AppProject") => {
            schema_errors(Schema::swagger("v1alpha1AppProject"), &without_type())
        }
        ("argoproj.io/v1alpha1", "Rollout") => {
            schema_errors(
                Schema::crd("argo-rollouts/rollout-crd.yaml", "v1alpha1"),
                object,
            )?;
            // The pod template is a core PodTemplateSpec, which the CRD leaves open.
            round_trips::<k8s_openapi::api::core::v1::PodTemplateSpec>(&object["spec"]["template"])
        }
        ("external-secrets.io/v1", "ExternalSecret") => schema_errors(
            Schema::crd(
                "external-secrets/external-secrets.io_externalsecrets.yaml",
                "v1",
            ),
            object,
        ),
        ("external-secrets.io/v1", "ClusterSecretStore") => {
            // No reference CRD for stores: check what ExternalSecrets and Tower rely on.
            let ready = condition(object, "Ready").ok_or("a store reports Ready")?;
            if object["spec"]["provider"]["aws"]["service"] != "SecretsManager"
                || ready["status"] != "True"
            {
                return Err("the store is a ready AWS Secrets Manager store".into());
            }
            Ok(())
        }
        ("tekton.dev/v1", "Pipeline") => {
            schema_errors(Schema::crd("tekton/300-pipeline.yaml", "v1"), object)
        }
        ("tekton.dev/v1", "PipelineRun") => {
            schema_errors(Schema::crd("tekton/300-pipelinerun.yaml", "v1"), object)
        }
        ("tekton.dev/v1", "TaskRun") => {
            schema_errors(Schema::crd("tekton/300-taskrun.yaml", "v1"), object)
        }
        ("pyrra.dev/v1alpha1", "ServiceLevelObjective") => schema_errors(
            Schema::crd("pyrra/pyrra.dev_servicelevelobjectives.yaml", "v1alpha1"),
            object,
        ),
        ("tekton.dev/v1", "Task") => {
            // No reference Task CRD; a TaskRun's status carries the full TaskSpec schema.
            let pipeline = crd_schema("tekton/300-taskrun.yaml", "v1");
            let task_spec = pipeline
                .pointer("/properties/status/properties/taskSpec")
                .unwrap()
                .clone();
            schema_errors(
                Schema {
                    root: pipeline,
                    schema: task_spec,
                },
                &object["spec"],
            )
        }
        ("apiextensions.crossplane.io/v1", "CompositeResourceDefinition" | "Composition") => {
            // Same top-level spec fields as the reference XRD and Composition use.
            let file = if kind == "Composition" {
                "crossplane/composition.yaml"
            } else {
                "crossplane/definition.yaml"
            };
            let reference = &reference_documents(file)[0];
            for key in object["spec"].as_object().unwrap().keys() {
                let known = ["defaultCompositionRef"];
                if reference["spec"].get(key).is_none() && !known.contains(&key.as_str()) {
                    return Err(format!("spec.{key} is not in {file}"));
                }
            }
            Ok(())
        }
        (_, "PostgreSQLInstance" | "XPostgreSQLInstance") => {
            let parameters = xrd
                .pointer(
                    "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/parameters",
                )
                .unwrap()
                .clone();
            let mut spec_properties = json!({
                "parameters": parameters,
                "compositionRef": reference("", "name"),
                "compositionRevisionRef": reference("", "name"),
                "compositionUpdatePolicy": {"type": "string", "enum": ["Automatic", "Manual"]},
                "compositeDeletePolicy": {"type": "string", "enum": ["Background", "Foreground"]},
                "resourceRef": reference(crossplane::COMPOSITE_KIND, "name"),
                "claimRef": reference(crossplane::CLAIM_KIND, "namespace"),
                "resourceRefs": {"type": "array", "items": {"type": "object", "required": ["apiVersion", "kind", "name"], "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"}}}},
                "writeConnectionSecretToRef": reference("", "name"),
            });
            spec_properties["compositionRef"]["properties"]["kind"] = json!({"type": "string"});
            let schema = json!({"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"], "properties": {
                "apiVersion": {"type": "string", "enum": [format!("{}/{}", crossplane::GROUP, crossplane::VERSION)]},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "required": ["parameters", "compositionRef"], "properties": spec_properties},
                "status": crossplane_status(),
            }});
            schema_errors(
                Schema {
                    root: schema.clone(),
                    schema,
                },
                object,
            )
        }
        (_, "Instance" | "SubnetGroup") => {
            let schema = json!({"type": "object", "required": ["spec", "status"], "properties": {
                "apiVersion": {"type": "string", "enum": [format!("{}/{}", crossplane::RDS_GROUP, crossplane::RDS_VERSION)]},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "required": ["forProvider"], "properties": {
                    "forProvider": {"type": "object", "required": ["region"], "x-kubernetes-preserve-unknown-fields": true, "properties": {"region": {"type": "string"}}},
                    "providerConfigRef": reference("", "name"),
                    "deletionPolicy": {"type": "string", "enum": ["Orphan", "Delete"]},
                    "managementPolicies": {"type": "array", "items": {"type": "string"}},
                    "writeConnectionSecretToRef": reference("", "name"),
                }},
                "status": crossplane_status(),
            }});
            schema_errors(
                Schema {
                    root: schema.clone(),
                    schema,
                },
                object,
            )
        }
        _ => Err(format!("no check for {api_version} {kind}: add one")),
    }
}

// ---- shapes ----

#[test]
fn every_fixture_has_the_shape_its_upstream_gives_it() {
    assert_upstream_shapes(&all_objects());
}

#[test]
fn every_fixture_of_prod_split_across_two_clusters_has_its_upstream_shape_too() {
    let topology = sandbox::topology::Topology::with_prod_clusters(2).unwrap();
    let objects = all_objects_on(&topology);
    let named: Vec<&str> = objects
        .iter()
        .filter(|(_, o)| o["kind"] == "Application")
        .filter_map(|(_, o)| o["spec"]["destination"]["name"].as_str())
        .collect();
    assert!(
        named.contains(&"prod-eu") && named.contains(&"prod-us"),
        "{named:?}"
    );
    assert_upstream_shapes(&objects);
}

/// Fails naming every object that does not fit its upstream's published shape.
fn assert_upstream_shapes(objects: &[(String, Value)]) {
    let xrd = objects
        .iter()
        .map(|(_, o)| o)
        .find(|o| o["kind"] == "CompositeResourceDefinition")
        .unwrap()
        .clone();
    let mut failures = Vec::new();
    for (cluster, object) in objects {
        if let Err(error) = validate(object, &xrd) {
            failures.push(format!(
                "{cluster} {} {}/{}:\n{error}",
                object["kind"].as_str().unwrap_or_default(),
                object["metadata"]["namespace"].as_str().unwrap_or_default(),
                name(object)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixtures do not fit their upstream shape:\n{}",
        failures.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

#[test]
fn the_shape_check_rejects_misspelt_fields_wrong_types_and_missing_requirements() {
    let objects = all_objects();
    let xrd = objects
        .iter()
        .map(|(_, o)| o)
        .find(|o| o["kind"] == "CompositeResourceDefinition")
        .unwrap()
        .clone();
    let first = |kind: &str| {
        objects
            .iter()
            .map(|(_, o)| o)
            .find(|o| o["kind"] == kind)
            .unwrap()
            .clone()
    };
    let broken: Vec<(&str, Value)> = vec![
        ("Rollout", {
            let mut o = first("Rollout");
            o["status"]["currentStepIdx"] = json!(5);
            o
        }),
        ("Rollout", {
            let mut o = first("Rollout");
            o["spec"]["replicas"] = json!("three");
            o
        }),
        ("Rollout", {
            let mut o = first("Rollout");
            o["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = json!("Always");
            o
        }),
        ("Application", {
            let mut o = first("Application");
            o["status"]["sync"]["revison"] = json!("abc");
            o
        }),
        ("Application", {
            let mut o = first("Application");
            o["status"]["history"][0]["deployedAt"] = json!("yesterday");
            o
        }),
        ("ApplicationSet", {
            let mut o = first("ApplicationSet");
            o["spec"]["generator"] = json!([]);
            o
        }),
        ("ExternalSecret", {
            let mut o = first("ExternalSecret");
            o["status"]["refreshedTime"] = json!("2026-11-30T12:00:00Z");
            o
        }),
        ("PipelineRun", {
            let mut o = first("PipelineRun");
            o["status"]["skippedTasks"] = json!([{"name": "scan"}]);
            o
        }),
        ("TaskRun", {
            let mut o = first("TaskRun");
            o["status"]["steps"][0]["terminated"]["exitCode"] = json!("0");
            o
        }),
        ("Task", {
            let mut o = first("Task");
            o["spec"]["steps"][0]["scirpt"] = json!("true");
            o
        }),
        ("Pod", {
            let mut o = first("Pod");
            o["status"]["containerStatuses"][0]["restartCount"] = json!("7");
            o
        }),
        ("Pod", {
            let mut o = first("Pod");
            o["spec"]["containers"][0]["imag"] = json!("x");
            o
        }),
        ("Event", {
            let mut o = first("Event");
            o["involvedObjekt"] = json!({});
            o
        }),
        ("PostgreSQLInstance", {
            let mut o = first("PostgreSQLInstance");
            o["spec"]["parameters"]["size"] = json!("huge");
            o
        }),
        ("Release", {
            let mut o = first("Release");
            o["status"]["observedVersions"] = json!("x");
            o
        }),
        ("ServiceLevelObjective", {
            let mut o = first("ServiceLevelObjective");
            o["spec"]["target"] = json!(99.5);
            o
        }),
        ("ServiceLevelObjective", {
            let mut o = first("ServiceLevelObjective");
            o["spec"]["indicator"]["ratio"]["error"] = json!({"metric": "up"});
            o
        }),
    ];
    for (kind, object) in broken {
        assert!(
            validate(&object, &xrd).is_err(),
            "a broken {kind} passed: {object}"
        );
    }
}

#[test]
fn every_fixture_kind_is_registered_on_the_clusters() {
    let types = fixtures::resource_types();
    let builtin = [
        "Namespace",
        "Pod",
        "Event",
        "ConfigMap",
        "Service",
        "Deployment",
        "ReplicaSet",
    ];
    for (_, object) in all_objects() {
        let kind = object["kind"].as_str().unwrap();
        let api_version = object["apiVersion"].as_str().unwrap();
        assert!(
            builtin.contains(&kind)
                || types
                    .iter()
                    .any(|t| t.kind == kind && t.api_version() == api_version),
            "{api_version} {kind} is not registered"
        );
    }
}

#[test]
fn the_reference_external_secret_version_is_the_storage_version_the_fixtures_use() {
    let crd = reference_documents("external-secrets/external-secrets.io_externalsecrets.yaml");
    let storage = crd[0]["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["storage"] == true)
        .unwrap()["name"]
        .clone();
    assert_eq!(storage, "v1");
    assert!(
        fixtures::resource_types()
            .iter()
            .any(|t| t.kind == "ExternalSecret" && t.version == "v1")
    );
}

// ---- the story ----

#[test]
fn every_service_has_a_release_an_application_and_a_rollout_per_environment() {
    for kind in ["Release", "Application", "Rollout"] {
        let objects = if kind == "Application" {
            catalog_applications()
        } else {
            of_kind(kind)
        };
        assert_eq!(
            objects.len(),
            SERVICES.len() * ENVIRONMENTS.len(),
            "{kind}s"
        );
        for plan in &SERVICES {
            for environment in ENVIRONMENTS {
                assert!(
                    objects.iter().any(|(cluster, o)| {
                        let labelled = label(o, shared::crd::COMPONENT_LABEL) == plan.name
                            && label(o, shared::crd::ENVIRONMENT_LABEL) == environment;
                        labelled && (kind != "Rollout" || cluster == environment)
                    }),
                    "no {kind} of {} in {environment}",
                    plan.name
                );
            }
        }
    }
    assert_eq!(of_kind("Component").len(), 8);
    let teams: BTreeSet<String> = of_kind("Component")
        .iter()
        .map(|(_, c)| c["spec"]["owner"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(teams.len(), 3);
}

#[test]
fn applications_carry_the_labels_and_commit_of_the_release_they_come_from() {
    let releases = of_kind("Release");
    for (_, application) in catalog_applications() {
        let (_, release) = releases
            .iter()
            .find(|(_, r)| name(r) == name(&application))
            .unwrap_or_else(|| panic!("no Release for {}", name(&application)));
        for key in [shared::crd::COMPONENT_LABEL, shared::crd::ENVIRONMENT_LABEL] {
            assert_eq!(label(&application, key), label(release, key), "{key}");
        }
        let revision = application["status"]["sync"]["revision"].as_str().unwrap();
        let version = release["spec"]["version"].as_str().unwrap();
        assert!(
            revision.starts_with(version),
            "{} runs {revision}, its Release says {version}",
            name(&application)
        );
        assert_eq!(application["spec"]["source"]["targetRevision"], revision);
        let environment = release["spec"]["environment"].as_str().unwrap();
        assert_eq!(
            application["spec"]["destination"]["server"],
            fixtures::cluster_server(environment)
        );
        let history = application["status"]["history"].as_array().unwrap();
        assert_eq!(history.last().unwrap()["revision"], revision);
        assert_eq!(
            application["metadata"]["ownerReferences"][0]["name"],
            argocd::CATALOG_APPLICATION_SET
        );
    }
}

#[test]
fn applications_match_the_cluster_secret_of_their_environment() {
    let secrets = of_kind("Secret");
    for environment in ENVIRONMENTS {
        let secret = secrets
            .iter()
            .map(|(_, s)| s)
            .find(|s| label(s, "environment") == environment)
            .unwrap();
        assert_eq!(label(secret, argocd::SECRET_TYPE_LABEL), "cluster");
        let typed: Secret = serde_json::from_value(secret.clone()).unwrap();
        let server = &typed.data.unwrap()["server"];
        assert_eq!(
            String::from_utf8_lossy(&server.0),
            fixtures::cluster_server(environment)
        );
    }
    // Argo CD's own cluster is registered too, in-cluster, so the platform's sets can select it.
    let management = secrets
        .iter()
        .map(|(_, s)| s)
        .find(|s| label(s, "environment") == "management")
        .unwrap();
    assert_eq!(name(management), "cluster-management");
    let typed: Secret = serde_json::from_value(management.clone()).unwrap();
    let data = typed.data.unwrap();
    assert_eq!(data["server"].0, b"https://kubernetes.default.svc");
    assert_eq!(data["name"].0, b"management");
    let sets: Vec<String> = of_kind("ApplicationSet")
        .iter()
        .map(|(_, s)| name(s).to_string())
        .collect();
    for wanted in [
        "taskapp-platform",
        "taskapp-catalog",
        "taskapp-schemas",
        "taskapp-infra",
        "taskapp-packages",
    ] {
        assert!(sets.iter().any(|s| s == wanted), "{wanted}");
    }
}

#[test]
fn one_application_is_degraded_and_one_is_out_of_sync() {
    let applications = of_kind("Application");
    let degraded: Vec<&str> = applications
        .iter()
        .filter(|(_, a)| a["status"]["health"]["status"] == "Degraded")
        .map(|(_, a)| name(a))
        .collect();
    let out_of_sync: Vec<&str> = applications
        .iter()
        .filter(|(_, a)| a["status"]["sync"]["status"] == "OutOfSync")
        .map(|(_, a)| name(a))
        .collect();
    assert_eq!(degraded, ["recommendations-dev"]);
    assert_eq!(out_of_sync, [argocd::OUT_OF_SYNC]);
}

#[test]
fn every_pod_runs_the_image_its_environments_release_names() {
    let releases = of_kind("Release");
    // The management cluster's pods are CI's, which run no release.
    let pods: Vec<(String, Value)> = of_kind("Pod")
        .into_iter()
        .filter(|(cluster, _)| cluster != "management")
        .collect();
    assert_eq!(
        pods.len(),
        8 * 2 + 8 * 3 + 2,
        "rollout pods plus one worker pod per environment"
    );
    for (cluster, pod) in pods {
        let component = label(&pod, shared::crd::COMPONENT_LABEL);
        let (_, release) = releases
            .iter()
            .find(|(_, r)| {
                r["spec"]["component"] == component && r["spec"]["environment"] == cluster.as_str()
            })
            .unwrap();
        let image = pod["spec"]["containers"][0]["image"].as_str().unwrap();
        let (repository, tag) = image.rsplit_once(':').unwrap();
        assert_eq!(repository, release["spec"]["image"]["repository"]);
        assert_eq!(tag, release["spec"]["image"]["tag"], "{}", name(&pod));
        assert_eq!(label(&pod, shared::crd::ENVIRONMENT_LABEL), cluster);
    }
}

#[test]
fn exactly_one_pod_is_crash_looping() {
    let crashing: Vec<(String, Value)> = of_kind("Pod")
        .into_iter()
        .filter(|(_, p)| {
            p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        })
        .collect();
    assert_eq!(crashing.len(), 1);
    let (cluster, pod) = &crashing[0];
    assert_eq!(cluster, workloads::CRASH_LOOPING_ENVIRONMENT);
    assert_eq!(
        label(pod, shared::crd::COMPONENT_LABEL),
        workloads::CRASH_LOOPING_SERVICE
    );
    let status = &pod["status"]["containerStatuses"][0];
    assert_eq!(status["restartCount"], 7);
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
    let back_off = of_kind("Event")
        .into_iter()
        .filter(|(_, e)| {
            e["reason"] == "BackOff" && e["involvedObject"]["name"] == pod["metadata"]["name"]
        })
        .count();
    assert_eq!(back_off, 1);
    let rollout = of_kind("Rollout")
        .into_iter()
        .find(|(c, r)| c == cluster && name(r) == workloads::CRASH_LOOPING_SERVICE)
        .unwrap()
        .1;
    assert_eq!(rollout["status"]["phase"], "Degraded");
}

#[test]
fn rollouts_own_their_replica_sets_and_pods_and_step_a_canary() {
    let replica_sets = of_kind("ReplicaSet");
    for (cluster, rollout) in of_kind("Rollout") {
        let hash = rollout["status"]["stableRS"].as_str().unwrap();
        assert_eq!(rollout["status"]["currentPodHash"], hash);
        let steps = rollout["spec"]["strategy"]["canary"]["steps"]
            .as_array()
            .unwrap();
        assert_eq!(rollout["status"]["currentStepIndex"], steps.len());
        assert!(steps.iter().any(|s| s.get("pause").is_some()));
        let owned: Vec<&Value> = replica_sets
            .iter()
            .filter(|(c, rs)| {
                *c == cluster
                    && rs["metadata"]["ownerReferences"][0]["name"] == name(&rollout)
                    && rs["metadata"]["ownerReferences"][0]["kind"] == "Rollout"
            })
            .map(|(_, rs)| rs)
            .collect();
        assert!(!owned.is_empty() && owned.len() <= 2);
        let current = owned
            .iter()
            .find(|rs| label(rs, workloads::ROLLOUT_HASH_LABEL) == hash)
            .unwrap();
        assert_eq!(current["spec"]["replicas"], rollout["spec"]["replicas"]);
        assert!(
            owned
                .iter()
                .filter(|rs| label(rs, workloads::ROLLOUT_HASH_LABEL) != hash)
                .all(|rs| rs["spec"]["replicas"] == 0)
        );
    }
    assert!(
        of_kind("Deployment").len() >= 2,
        "a plain Deployment per environment too"
    );
}

#[test]
fn exactly_one_external_secret_is_stale() {
    let stale: Vec<(String, Value)> = of_kind("ExternalSecret")
        .into_iter()
        .filter(|(_, es)| {
            let interval = jiff::SignedDuration::from_hours(1);
            assert_eq!(es["spec"]["refreshInterval"], secrets::REFRESH_INTERVAL);
            let refreshed: Timestamp = es["status"]["refreshTime"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            base().duration_since(refreshed) > interval
        })
        .collect();
    assert_eq!(stale.len(), 1);
    let (cluster, es) = &stale[0];
    assert_eq!(
        (cluster.as_str(), name(es)),
        (secrets::STALE.1, secrets::STALE.2)
    );
    let ready = condition(es, "Ready").unwrap();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "SecretSyncedError");
}

#[test]
fn exactly_one_database_claim_has_a_composition_error() {
    let claims = of_kind(crossplane::CLAIM_KIND);
    assert_eq!(
        claims.len(),
        4 * 2,
        "one claim per database service and environment"
    );
    let failing: Vec<&(String, Value)> = claims
        .iter()
        .filter(|(_, c)| condition(c, "Synced").unwrap()["status"] == "False")
        .collect();
    assert_eq!(failing.len(), 1);
    let (cluster, claim) = failing[0];
    assert_eq!(
        (name(claim), cluster.as_str()),
        crossplane::COMPOSITION_ERROR
    );
    let synced = condition(claim, "Synced").unwrap();
    assert_eq!(synced["reason"], "ReconcileError");
    assert!(
        synced["message"]
            .as_str()
            .unwrap()
            .contains("cannot compose resources")
    );
    let composite = claim["spec"]["resourceRef"]["name"].as_str().unwrap();
    for kind in ["Instance", "SubnetGroup"] {
        assert!(
            of_kind(kind)
                .iter()
                .any(|(c, m)| c == cluster && label(m, "crossplane.io/composite") == composite),
            "{kind} composed for {composite}"
        );
    }
}

#[test]
fn exactly_one_database_is_behind_the_code_its_service_runs() {
    let histories = Histories::synthetic();
    let behind: Vec<String> = of_kind("DatabaseSchema")
        .iter()
        .filter(|(_, schema)| {
            let service =
                sandbox::world::service(schema["spec"]["database"].as_str().unwrap()).unwrap();
            let environment = schema["spec"]["environment"].as_str().unwrap();
            let shipped = &histories.running(service, environment).unwrap().migrations;
            schema["status"]["appliedVersion"] != schema_version(shipped).as_str()
        })
        .map(|(_, s)| name(s).to_string())
        .collect();
    assert_eq!(behind, ["payments-prod"]);
    let databases = of_kind("Database");
    let payments = databases
        .iter()
        .find(|(_, d)| name(d) == "payments-prod")
        .unwrap();
    assert_eq!(payments.1["status"]["schemaVersion"], "0003");
    assert_eq!(payments.1["status"]["available"], true);
}

#[test]
fn ci_runs_every_commit_with_failures_skips_when_expressions_and_finally() {
    let histories = Histories::synthetic();
    let runs = of_kind("PipelineRun");
    let commits: usize = SERVICES.iter().map(|s| s.commits.len()).sum();
    let pushes = runs
        .iter()
        .filter(|(_, r)| label(r, tekton::EVENTLISTENER_LABEL) == tekton::PUSH_LISTENER)
        .count();
    assert_eq!(pushes, commits, "one build of main per commit");
    for (_, run) in &runs {
        let service = label(run, shared::crd::COMPONENT_LABEL);
        let revision = run["spec"]["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "revision")
            .unwrap()["value"]
            .as_str()
            .unwrap();
        let succeeded = condition(run, "Succeeded").unwrap();
        let annotations = &run["metadata"]["annotations"];
        match annotations[tekton::COMMIT_ANNOTATION].as_str() {
            Some(sha) => {
                // A build of main, by push or by hand: its commit's verdict.
                let commit = histories.services[service]
                    .iter()
                    .find(|c| c.sha == sha)
                    .unwrap();
                assert_eq!(succeeded["status"] == "True", commit.green, "{}", name(run));
                assert_eq!(revision, sha);
                assert_eq!(annotations[tekton::BRANCH_ANNOTATION], "main");
            }
            None => {
                // A pull request's run builds a commit that is not on main.
                assert_eq!(
                    label(run, tekton::EVENTLISTENER_LABEL),
                    tekton::PULL_REQUEST_LISTENER
                );
                assert!(
                    !histories.services[service]
                        .iter()
                        .any(|c| c.sha == revision)
                );
                assert!(
                    annotations[tekton::BRANCH_ANNOTATION]
                        .as_str()
                        .unwrap()
                        .starts_with("feature/")
                );
            }
        }
        assert_eq!(label(run, "tekton.dev/pipeline"), tekton::PIPELINE);
        assert_eq!(run["status"]["pipelineSpec"], tekton::pipeline_spec());
    }
    let skipped: Vec<&Value> = runs
        .iter()
        .flat_map(|(_, r)| r["status"]["skippedTasks"].as_array().into_iter().flatten())
        .collect();
    assert!(
        skipped
            .iter()
            .any(|s| s["reason"] == tekton::WHEN_SKIPPED && s["name"] == "scan")
    );
    assert!(
        skipped
            .iter()
            .any(|s| s["reason"] == tekton::STOPPING_SKIPPED)
    );
    let task_runs = of_kind("TaskRun");
    assert!(
        task_runs
            .iter()
            .any(|(_, t)| condition(t, "Succeeded").unwrap()["status"] == "False")
    );
    assert!(
        task_runs
            .iter()
            .any(|(_, t)| label(t, "tekton.dev/memberOf") == "finally")
    );
    // Every child a run references exists, and every TaskRun belongs to a run that references it.
    let names: BTreeSet<&str> = task_runs.iter().map(|(_, t)| name(t)).collect();
    let mut referenced = 0;
    for (_, run) in &runs {
        for child in run["status"]["childReferences"].as_array().unwrap() {
            assert!(names.contains(child["name"].as_str().unwrap()));
            assert!(child["displayName"].is_string());
            referenced += 1;
        }
    }
    assert_eq!(referenced, task_runs.len());
    let pipeline = &of_kind("Pipeline")[0].1;
    assert!(
        pipeline["spec"]["finally"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    );
    let tasks = pipeline["spec"]["tasks"].as_array().unwrap();
    assert!(tasks.iter().any(|t| t.get("when").is_some()));
    assert!(tasks.iter().any(|t| {
        t["params"]
            .to_string()
            .contains("$(tasks.build-image.results.IMAGE_DIGEST)")
    }));
    assert!(tasks.iter().all(|t| t["displayName"].is_string()));
}

#[test]
fn every_kind_is_found_by_the_platform_labels() {
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for (_, object) in all_objects() {
        if !label(&object, shared::crd::COMPONENT_LABEL).is_empty() {
            *by_kind
                .entry(object["kind"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    for kind in [
        "Release",
        "Application",
        "Rollout",
        "ReplicaSet",
        "Pod",
        "Namespace",
        "ExternalSecret",
        "PipelineRun",
        "TaskRun",
        crossplane::CLAIM_KIND,
        "ServiceLevelObjective",
    ] {
        assert!(
            by_kind.contains_key(kind),
            "no {kind} carries the component label"
        );
    }
}

// ---- over the wire ----

#[tokio::test]
async fn a_kube_client_lists_the_seeded_workloads_by_label_with_typed_shapes() {
    let sandbox = sandbox::Sandbox::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client =
        Client::try_from(Config::new(sandbox.cluster_url("dev").parse().unwrap())).unwrap();

    let pods: Api<Pod> = Api::all(client.clone());
    let payments = pods
        .list(&ListParams::default().labels(&format!("{}=payments", shared::crd::COMPONENT_LABEL)))
        .await
        .unwrap();
    assert_eq!(payments.items.len(), 2);
    assert!(
        payments
            .items
            .iter()
            .all(|p| p.metadata.namespace.as_deref() == Some("payments"))
    );

    let deployments: Api<Deployment> = Api::all(client.clone());
    let deployments = deployments.list(&ListParams::default()).await.unwrap();
    assert!(!deployments.items.is_empty());
    assert!(deployments.items.iter().all(|d| d.status.is_some()));

    let events: Api<Event> = Api::namespaced(client.clone(), "recommendations");
    let events = events.list(&ListParams::default()).await.unwrap();
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("BackOff"))
    );

    let replica_sets: Api<ReplicaSet> = Api::all(client.clone());
    let replica_sets = replica_sets.list(&ListParams::default()).await.unwrap();
    let rs = &replica_sets.items[0];
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert!(!owner.uid.is_empty());

    // Owner references point at the uids the store gave the owners.
    let rollout_type = kube::api::ApiResource {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        api_version: "argoproj.io/v1alpha1".into(),
        kind: "Rollout".into(),
        plural: "rollouts".into(),
    };
    let rollouts: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &rollout_type);
    let rollouts = rollouts.list(&ListParams::default()).await.unwrap();
    assert_eq!(rollouts.items.len(), 8);
    let payments_pod = &payments.items[0];
    let pod_owner = &payments_pod.metadata.owner_references.as_ref().unwrap()[0];
    let owning_rs = replica_sets
        .items
        .iter()
        .find(|rs| rs.metadata.name.as_deref() == Some(pod_owner.name.as_str()))
        .unwrap();
    assert_eq!(
        owning_rs.metadata.uid.as_deref(),
        Some(pod_owner.uid.as_str())
    );
    let rs_owner = &owning_rs.metadata.owner_references.as_ref().unwrap()[0];
    let rollout = rollouts
        .items
        .iter()
        .find(|r| {
            r.metadata.name.as_deref() == Some(rs_owner.name.as_str())
                && r.metadata.namespace.as_deref() == Some("payments")
        })
        .unwrap();
    assert_eq!(rollout.metadata.uid.as_deref(), Some(rs_owner.uid.as_str()));

    let in_namespace: Api<Pod> = Api::namespaced(client.clone(), "recommendations");
    let crashing = in_namespace
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_some_and(|c| c[0].restart_count > 0)
        })
        .unwrap();
    let previous = in_namespace
        .logs(
            crashing.metadata.name.as_deref().unwrap(),
            &kube::api::LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(previous.contains("Traceback"));

    let management = Client::try_from(Config::new(
        sandbox.cluster_url("management").parse().unwrap(),
    ))
    .unwrap();
    let releases: Api<Release> = Api::namespaced(management, "platform");
    assert_eq!(
        releases
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        16
    );
}
