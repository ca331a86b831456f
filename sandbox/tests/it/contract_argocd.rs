//! Argo CD API answers and stream events validated against Argo CD's swagger.
//!
//! Every operation the sandbox's Argo CD serves (`sandbox::argocd::Operation::ALL`, which its router is built from)
//! is called on a seeded sandbox, and each answer is checked against the swagger's schema for that operation:
//! its `200` schema for successes, its `default` one (grpc-gateway's `runtimeError`) for errors, and the
//! stream's events against `Stream result of v1alpha1ApplicationWatchEvent`.
//!
//! Swagger leaves objects open, so a field Argo CD never sends would pass; here every object with declared
//! properties is closed (`unevaluatedProperties: false`), so an invented or misspelt field fails too, as
//! it would fail a client generated from the swagger that rejects unknown fields. That rewrite happens before
//! the document is registered, which is why the swagger is loaded here rather than with `contract::Contract`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt as _;
use jsonschema::{Registry, Validator};
use sandbox::argocd::Operation;
use sandbox::{ARGOCD_TOKEN, Options, Sandbox};
use serde_json::{Value, json};

use super::contract::violations;

/// Argo CD's swagger at the commit `reference/argocd/SOURCE` names.
const SWAGGER: &str = include_str!("../reference/argocd/swagger.json");

/// The URI the swagger is registered under, so `#/definitions/…` references resolve into it.
const SWAGGER_URI: &str = "urn:tower:argocd:swagger";

/// Fields the swagger leaves out although Argo CD sends them: `v1alpha1Application` embeds Kubernetes'
/// `TypeMeta` inline (`apiVersion`, `kind`), which the swagger generator skips.
const TYPE_META: [(&str, &str); 2] = [
    ("v1alpha1Application", "apiVersion"),
    ("v1alpha1Application", "kind"),
];

/// The swagger, closed as the module doc says, and the validators built from it.
struct Swagger {
    document: Value,
    registry: Registry<'static>,
}

impl Swagger {
    fn load() -> Self {
        let mut document: Value = serde_json::from_str(SWAGGER).unwrap();
        close_objects(&mut document);
        open_all_of_members(&mut document);
        for (definition, field) in TYPE_META {
            document["definitions"][definition]["properties"][field] = json!({"type": "string"});
        }
        let registry = Registry::new()
            .add(SWAGGER_URI, document.clone())
            .unwrap()
            .prepare()
            .unwrap();
        Self { document, registry }
    }

    /// The swagger's path template for `operation`: parameters are named differently (`{applicationName}`
    /// against the router's `{name}`), so templates compare with their parameter names left out.
    fn path_of(&self, operation: Operation) -> String {
        let unnamed = |path: &str| {
            let mut out = String::new();
            let mut in_param = false;
            for c in path.chars() {
                match c {
                    '{' => {
                        in_param = true;
                        out.push('{');
                    }
                    '}' => {
                        in_param = false;
                        out.push('}');
                    }
                    _ if in_param => {}
                    c => out.push(c),
                }
            }
            out
        };
        let method = operation.method().as_str().to_lowercase();
        self.document["paths"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(path, item)| {
                unnamed(path) == unnamed(operation.path()) && item.get(&method).is_some()
            })
            .map(|(path, _)| path.clone())
            .unwrap_or_else(|| panic!("{operation:?} is not in Argo CD's swagger"))
    }

    /// A validator for `operation`'s response: `200` or `default` (the error shape).
    fn response(&self, operation: Operation, response: &str) -> Validator {
        let path = self.path_of(operation);
        let method = operation.method().as_str().to_lowercase();
        let schema =
            self.document["paths"][&path][&method]["responses"][response]["schema"].clone();
        assert!(
            schema.is_object(),
            "{path} {method} has no {response} schema"
        );
        self.validator(&schema)
    }

    /// A validator for one of the swagger's definitions.
    fn definition(&self, name: &str) -> Validator {
        assert!(
            self.document["definitions"][name].is_object(),
            "no definition {name}"
        );
        self.validator(&json!({"$ref": format!("#/definitions/{name}")}))
    }

    /// A validator for `schema`, a piece of the swagger: its `#/…` references point into the swagger.
    fn validator(&self, schema: &Value) -> Validator {
        let mut schema = schema.clone();
        absolute_refs(&mut schema);
        jsonschema::options()
            .with_registry(&self.registry)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    }
}

/// Makes a piece of the swagger's local references (`#/definitions/…`) point into the registered swagger.
fn absolute_refs(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(reference) if key == "$ref" && reference.starts_with('#') => {
                        *reference = format!("{SWAGGER_URI}{reference}");
                    }
                    _ => absolute_refs(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(absolute_refs),
        _ => {}
    }
}

/// Closes every object schema that declares properties (and no `additionalProperties` of its own).
/// `unevaluatedProperties` rather than `additionalProperties`, so properties an `allOf` brings in (as
/// `v1alpha1ResourceNode` takes `v1alpha1ResourceRef`'s) count as declared.
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("unevaluatedProperties".into(), json!(false));
            }
            for value in map.values_mut() {
                close_objects(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// Points each `allOf` member at an open copy of its definition: a closed member would refuse the
/// properties its siblings declare (`v1alpha1ResourceNode`'s own next to `v1alpha1ResourceRef`'s).
fn open_all_of_members(document: &mut Value) {
    let definitions = document["definitions"].as_object_mut().unwrap();
    let mut opened = Vec::new();
    for definition in definitions.values_mut() {
        let members = definition.get_mut("allOf").and_then(Value::as_array_mut);
        for member in members.into_iter().flatten() {
            let Some(name) = member["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/definitions/"))
                .map(str::to_owned)
            else {
                continue;
            };
            let open = format!("{name}.open");
            member["$ref"] = json!(format!("#/definitions/{open}"));
            opened.push((name, open));
        }
    }
    for (name, open) in opened {
        let mut copy = definitions[&name].clone();
        copy.as_object_mut()
            .unwrap()
            .remove("unevaluatedProperties");
        definitions.insert(open, copy);
    }
}

/// Asserts `instance` is valid, listing every violation with where it is.
fn assert_valid(validator: &Validator, instance: &Value, what: &str) {
    let errors = violations(validator, instance);
    assert!(
        errors.is_empty(),
        "{what} breaks Argo CD's swagger:\n{}",
        errors.join("\n")
    );
}

struct Api {
    /// Kept for its lifetime: dropping it stops the server.
    _sandbox: Sandbox,
    base: String,
    client: reqwest::Client,
    swagger: Swagger,
    /// Operations called so far, for the check that every one was.
    exercised: BTreeSet<Operation>,
}

impl Api {
    async fn start() -> Self {
        let sandbox = Sandbox::start_with(Options::new(SocketAddr::from(([127, 0, 0, 1], 0))))
            .await
            .unwrap();
        let base = sandbox.argocd_instances()[0].url.clone();
        Self {
            _sandbox: sandbox,
            base,
            client: reqwest::Client::new(),
            swagger: Swagger::load(),
            exercised: BTreeSet::new(),
        }
    }

    /// Calls `operation` on `path` (its template filled in), with the token unless `token` is `None`.
    async fn call(
        &mut self,
        operation: Operation,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
    ) -> (u16, Value) {
        self.exercised.insert(operation);
        let mut request = self
            .client
            .request(operation.method(), format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.body(body.to_owned());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{operation:?} {path} answered non-JSON ({e}): {text}"));
        (status, body)
    }

    /// Calls `operation` expecting a 200 that follows the swagger's schema; returns the answer.
    async fn ok(&mut self, operation: Operation, path: &str, body: Option<&str>) -> Value {
        let (status, answer) = self.call(operation, path, Some(ARGOCD_TOKEN), body).await;
        assert_eq!(status, 200, "{operation:?} {path}: {answer}");
        assert_valid(
            &self.swagger.response(operation, "200"),
            &answer,
            &format!("{operation:?} {path}"),
        );
        answer
    }

    /// Calls `operation` expecting an error of HTTP `status` and gRPC `code` in the swagger's error shape.
    async fn error(
        &mut self,
        operation: Operation,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
        (status, code): (u16, i64),
    ) {
        let (got, answer) = self.call(operation, path, token, body).await;
        assert_eq!(got, status, "{operation:?} {path}: {answer}");
        let what = format!("{operation:?} {path} error");
        assert_valid(&self.swagger.response(operation, "default"), &answer, &what);
        // grpc-gateway always fills these three; the schema alone makes none required.
        assert_eq!(answer["code"], code, "{what}: {answer}");
        assert!(
            answer["message"].as_str().is_some_and(|m| !m.is_empty())
                && answer["error"] == answer["message"],
            "{what}: {answer}"
        );
    }
}

fn app_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn every_operation_answers_in_argo_cds_swagger_shape() {
    let mut api = Api::start().await;

    let list = api
        .ok(Operation::ListApplications, "/api/v1/applications", None)
        .await;
    let names = app_names(&list);
    assert!(
        names.len() >= 4,
        "the seeded sandbox has Applications: {list}"
    );
    let selected = api
        .ok(
            Operation::ListApplications,
            "/api/v1/applications?selector=platform.tower.dev/environment%3Dprod&projects=default",
            None,
        )
        .await;
    assert!(selected["items"].is_array(), "{selected}");

    // Every Application and its tree, so every kind of node the fixtures make is checked.
    let mut nodes = 0;
    for name in &names {
        let app = api
            .ok(
                Operation::GetApplication,
                &format!("/api/v1/applications/{name}"),
                None,
            )
            .await;
        assert_eq!(app["metadata"]["name"], name.as_str());
        let tree = api
            .ok(
                Operation::ResourceTree,
                &format!("/api/v1/applications/{name}/resource-tree"),
                None,
            )
            .await;
        nodes += tree["nodes"].as_array().map_or(0, Vec::len);
    }
    assert!(nodes > 0, "no Application has a resource tree to check");

    let name = &names[0];
    let dry = api
        .ok(
            Operation::Sync,
            &format!("/api/v1/applications/{name}/sync"),
            Some(r#"{"dryRun": true}"#),
        )
        .await;
    assert_eq!(dry["metadata"]["name"], name.as_str());
    let synced = api
        .ok(
            Operation::Sync,
            &format!("/api/v1/applications/{name}/sync"),
            Some(r#"{"revision": "main", "prune": true, "strategy": {"apply": {"force": true}}}"#),
        )
        .await;
    assert_eq!(
        synced["status"]["operationState"]["phase"], "Running",
        "{synced}"
    );
    let running = api
        .ok(
            Operation::GetApplication,
            &format!("/api/v1/applications/{name}"),
            None,
        )
        .await;
    assert!(running["operation"].is_object(), "{running}");

    let events = watch(&mut api, "/api/v1/stream/applications", names.len()).await;
    let event_names: BTreeSet<&str> = events
        .iter()
        .map(|e| {
            e["result"]["application"]["metadata"]["name"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(event_names, names.iter().map(String::as_str).collect());

    let exercised = api.exercised.clone();
    assert_eq!(
        exercised,
        Operation::ALL.into_iter().collect(),
        "an operation was not exercised"
    );
}

/// Reads the stream until `count` events arrived, checking each against the swagger.
async fn watch(api: &mut Api, path: &str, count: usize) -> Vec<Value> {
    api.exercised.insert(Operation::WatchApplications);
    let response = api
        .client
        .get(format!("{}{path}", api.base))
        .bearer_auth(ARGOCD_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let frame_schema = api.swagger.response(Operation::WatchApplications, "200");
    let event_schema = api.swagger.definition("v1alpha1ApplicationWatchEvent");
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = Vec::new();
    while events.len() < count {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .expect("timed out waiting for stream events")
            .unwrap()
            .unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            // Keep-alive comments (`:`) carry no event.
            let Some(data) = frame.trim().strip_prefix("data:") else {
                continue;
            };
            let event: Value = serde_json::from_str(data.trim()).unwrap();
            assert_valid(&frame_schema, &event, "a stream frame");
            assert_valid(&event_schema, &event["result"], "a stream event");
            let kind = event["result"]["type"].as_str();
            assert!(
                matches!(kind, Some("ADDED" | "MODIFIED" | "DELETED")),
                "a watch event's type is a Kubernetes watch type: {event}"
            );
            assert!(
                event["result"]["application"]["metadata"]["name"].is_string(),
                "{event}"
            );
            events.push(event);
        }
    }
    events
}

#[tokio::test]
async fn every_operation_refuses_in_argo_cds_error_shape() {
    let mut api = Api::start().await;
    let list = api
        .ok(Operation::ListApplications, "/api/v1/applications", None)
        .await;
    let name = app_names(&list)[0].clone();
    let unauthenticated = (401, 16);
    let not_found = (404, 5);
    let invalid = (400, 3);

    for operation in Operation::ALL {
        let path = operation.path().replace("{name}", &name);
        api.error(operation, &path, None, None, unauthenticated)
            .await;
        api.error(
            operation,
            &path,
            Some("not-the-token"),
            None,
            unauthenticated,
        )
        .await;
        if operation.path().contains("{name}") {
            let missing = operation.path().replace("{name}", "no-such-app");
            api.error(operation, &missing, Some(ARGOCD_TOKEN), None, not_found)
                .await;
        } else {
            let bad_selector = format!("{path}?selector=a%20in%20(b");
            api.error(operation, &bad_selector, Some(ARGOCD_TOKEN), None, invalid)
                .await;
        }
    }
    let sync = format!("/api/v1/applications/{name}/sync");
    api.error(
        Operation::Sync,
        &sync,
        Some(ARGOCD_TOKEN),
        Some("{not json"),
        invalid,
    )
    .await;
    api.ok(Operation::Sync, &sync, Some("{}")).await;
    // A second sync while the first runs: FailedPrecondition.
    api.error(
        Operation::Sync,
        &sync,
        Some(ARGOCD_TOKEN),
        Some("{}"),
        (400, 9),
    )
    .await;

    assert_eq!(api.exercised, Operation::ALL.into_iter().collect());
}

#[tokio::test]
async fn a_path_no_operation_serves_is_argo_cds_not_found() {
    let api = Api::start().await;
    let response = api
        .client
        .get(format!("{}/api/v1/clusters", api.base))
        .bearer_auth(ARGOCD_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_valid(
        &api.swagger.definition("runtimeError"),
        &body,
        "the not-found answer",
    );
    assert_eq!(body["code"], 5, "{body}");
}

#[tokio::test]
async fn every_swagger_operation_the_sandbox_does_not_list_is_argo_cds_not_found() {
    let mut api = Api::start().await;
    let list = api
        .ok(Operation::ListApplications, "/api/v1/applications", None)
        .await;
    let name = app_names(&list)[0].clone();
    let served: BTreeSet<(String, String)> = Operation::ALL
        .into_iter()
        .map(|op| (api.swagger.path_of(op), op.method().as_str().to_lowercase()))
        .collect();
    let not_found = api.swagger.definition("runtimeError");
    let mut checked = 0;
    for (path, item) in api.swagger.document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if served.contains(&(path.clone(), method.clone())) {
                continue;
            }
            // Every parameter filled with an Application that exists: only a missing route answers 404.
            let mut concrete = String::new();
            let mut rest = path.as_str();
            while let Some(open) = rest.find('{') {
                concrete.push_str(&rest[..open]);
                concrete.push_str(&name);
                rest = &rest[rest[open..].find('}').unwrap() + open + 1..];
            }
            concrete.push_str(rest);
            let method = axum::http::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = api
                .client
                .request(method.clone(), format!("{}{concrete}", api.base))
                .bearer_auth(ARGOCD_TOKEN)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            let what = format!("{method} {concrete}");
            let body: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{what} answered non-JSON ({e}): {text:?}"));
            assert_eq!(
                (status, &body["message"]),
                (404, &json!("Not Found")),
                "{what} is served but not an `Operation`, so no contract test covers it: {body}"
            );
            assert_valid(&not_found, &body, &what);
            checked += 1;
        }
    }
    let operations: usize = api.swagger.document["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(checked + Operation::ALL.len(), operations);
}

#[test]
fn every_operation_is_one_the_swagger_describes_once() {
    let swagger = Swagger::load();
    let paths: BTreeSet<(String, String)> = Operation::ALL
        .into_iter()
        .map(|op| (swagger.path_of(op), op.method().to_string()))
        .collect();
    assert_eq!(
        paths.len(),
        Operation::ALL.len(),
        "two operations share a swagger operation: {paths:?}"
    );
}

#[test]
fn the_closed_swagger_rejects_what_argo_cd_never_sends() {
    let swagger = Swagger::load();
    let error = swagger.definition("runtimeError");
    assert!(error.is_valid(&json!({"error": "x", "code": 5, "message": "x"})));
    assert!(!error.is_valid(&json!({"error": "x", "code": "5", "message": "x"})));
    assert!(!error.is_valid(&json!({"error": "x", "code": 5, "message": "x", "status": 404})));
    let app = swagger.definition("v1alpha1Application");
    let minimal = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "a", "generation": 3}});
    assert!(app.is_valid(&minimal));
    assert!(!app.is_valid(&json!({"metadata": {"name": "a"}, "state": "Synced"})));
    assert!(!app.is_valid(&json!({"metadata": {"name": "a", "generation": "3"}})));
    let node = swagger.definition("v1alpha1ResourceNode");
    // `kind` comes from `v1alpha1ResourceRef` through `allOf`: declared, so allowed.
    assert!(
        node.is_valid(&json!({"kind": "Pod", "name": "p", "createdAt": "2024-01-01T00:00:00Z"}))
    );
    assert!(!node.is_valid(&json!({"kind": "Pod", "createdAt": "yesterday"})));
    assert!(!node.is_valid(&json!({"kind": "Pod", "healthStatus": "Healthy"})));
}
