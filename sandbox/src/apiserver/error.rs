//! The errors a cluster store reports, and their Kubernetes `Status` wire form.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Results of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why a store operation failed; each variant is one Kubernetes `Status` reason.
///
/// `resource` fields hold what a real apiserver puts in its messages: the plural, qualified by the
/// group for non-core types (`deployments.apps`), so clients see familiar text.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The object (or the resource type) does not exist: 404 `NotFound`.
    #[error("{resource} \"{name}\" not found")]
    NotFound {
        /// Qualified plural, e.g. `configmaps` or `deployments.apps`.
        resource: String,
        /// The object's name.
        name: String,
    },
    /// No resource type is registered for this apiVersion and kind (or path): 404 `NotFound`.
    #[error("the server could not find the requested resource ({what})")]
    UnknownType {
        /// The apiVersion/kind or path that was asked for.
        what: String,
    },
    /// A path no API serves (a group, version or resource nobody registered): 404 in plain text, as a real
    /// API server's mux answers it before any handler, with no `Status`.
    #[error("404 page not found ({what})")]
    NotServed {
        /// The path that was asked for.
        what: String,
    },
    /// Creating an object whose name is taken: 409 `AlreadyExists`.
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists {
        /// Qualified plural.
        resource: String,
        /// The object's name.
        name: String,
    },
    /// An update carried a stale resourceVersion: 409 `Conflict`.
    #[error(
        "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict {
        /// Qualified plural.
        resource: String,
        /// The object's name.
        name: String,
    },
    /// A watch or continue token refers to history that was compacted away: 410 `Expired`.
    #[error("{0}")]
    Expired(String),
    /// The object (or the request's options) is malformed: 422 `Invalid`.
    ///
    /// Unlike the other variants, a real apiserver names the kind here, not the resource: the message reads
    /// `ConfigMap "Upper" is invalid: …` and `details.kind` is `ConfigMap`, with one cause per field.
    #[error("{kind} \"{name}\" is invalid: {}", Cause::list(causes))]
    Invalid {
        /// The kind, qualified by the group for non-core types: `ConfigMap`, `Component.platform.tower.dev`,
        /// `ListOptions.meta.k8s.io`.
        kind: String,
        /// The object's name, possibly empty.
        name: String,
        /// What is wrong, field by field.
        causes: Vec<Cause>,
    },
    /// The request cannot be understood (bad selector, bad body, name mismatch): 400 `BadRequest`.
    #[error("{0}")]
    BadRequest(String),
    /// The path exists but not for this verb: 405 `MethodNotAllowed`.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// The request body's media type is not one this server reads: 415 `UnsupportedMediaType`.
    #[error(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    )]
    UnsupportedMediaType,
}

/// One field's fault in an [`StoreError::Invalid`], as `Status.details.causes` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`…
    pub reason: &'static str,
    /// The field's path: `metadata.name`.
    pub field: String,
    /// What is wrong with it: `Invalid value: "Upper": a lowercase RFC 1123 subdomain …`.
    pub message: String,
}

impl Cause {
    /// `field: message` for one cause, `[field: message, …]` for several, as the apiserver writes them.
    fn list(causes: &[Cause]) -> String {
        let each: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        match each.as_slice() {
            [one] => one.clone(),
            _ => format!("[{}]", each.join(", ")),
        }
    }
}

impl StoreError {
    /// The HTTP status code a real apiserver answers with.
    pub fn code(&self) -> u16 {
        match self {
            Self::NotFound { .. } | Self::UnknownType { .. } | Self::NotServed { .. } => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } => 409,
            Self::Expired(_) => 410,
            Self::Invalid { .. } => 422,
            Self::BadRequest(_) => 400,
            Self::MethodNotAllowed => 405,
            Self::UnsupportedMediaType => 415,
        }
    }

    /// The machine-readable `Status.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::UnknownType { .. } | Self::NotServed { .. } => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } => "Conflict",
            Self::Expired(_) => "Expired",
            Self::Invalid { .. } => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::UnsupportedMediaType => "UnsupportedMediaType",
        }
    }

    /// The `metav1.Status` object for this error, as sent in bodies and in watch `ERROR` events.
    ///
    /// The message is the error's own text: this server impersonates Kubernetes, whose clients
    /// (kubectl, kube-rs) show `Status.message` to their users, and it holds no secrets.
    pub fn status(&self) -> Value {
        let mut details = serde_json::Map::new();
        // `resource` or `kind` qualified by a group, as `details` splits them.
        let mut name_and_kind = |name: &str, qualified: &str| {
            let (kind, group) = qualified.split_once('.').unwrap_or((qualified, ""));
            // Go leaves out empty fields: no name when the object had none.
            if !name.is_empty() {
                details.insert("name".into(), json!(name));
            }
            if !group.is_empty() {
                details.insert("group".into(), json!(group));
            }
            details.insert("kind".into(), json!(kind));
        };
        match self {
            Self::NotFound { resource, name }
            | Self::AlreadyExists { resource, name }
            | Self::Conflict { resource, name } => name_and_kind(name, resource),
            Self::Invalid { kind, name, causes } => {
                name_and_kind(name, kind);
                let causes: Vec<Value> = causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            _ => {}
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl IntoResponse for StoreError {
    fn into_response(self) -> Response {
        // A path no API serves never reaches a real API server's handlers: its mux answers in plain text,
        // and clients (Tower's `fleet::watch::is_kind_not_served` among them) must cope with that.
        if matches!(self, Self::NotServed { .. }) {
            return (
                StatusCode::NOT_FOUND,
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; charset=utf-8",
                )],
                "404 page not found\n",
            )
                .into_response();
        }
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (code, axum::Json(self.status())).into_response()
    }
}
