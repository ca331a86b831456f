//! The sandbox's own control of its clusters, for tests that only speak HTTP (a browser test): take a
//! cluster down to show an outage, and bring it back.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::Clusters;

pub(crate) fn router(clusters: Clusters) -> Router {
    Router::new()
        .route("/sandbox/clusters/{name}/reachable", post(set_reachable))
        .route(
            "/sandbox/clusters/{name}/namespaces/{namespace}/pods/{pod}/log",
            post(append_log),
        )
        .with_state(clusters)
}

/// `POST /sandbox/clusters/{name}/reachable` with `{"reachable": false}` (or `true`): the cluster answers
/// every request with 502 and ends its watches, or answers again. Echoes the cluster's state.
async fn set_reachable(
    State(clusters): State<Clusters>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let Some(cluster) = clusters.cluster(&name) else {
        return refusal(
            StatusCode::NOT_FOUND,
            format!(
                "no cluster named `{name}`; there are {}",
                clusters.names().join(", ")
            ),
        );
    };
    // Read by hand rather than with `Json<…>`, so the answer names the field whatever was wrong and
    // whatever content type a test sends.
    let reachable = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|request| request.get("reachable").and_then(Value::as_bool));
    let Some(reachable) = reachable else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object whose `reachable` is true or false".into(),
        );
    };
    cluster.set_reachable(reachable);
    tracing::info!(
        cluster = name,
        reachable,
        "sandbox cluster reachability set"
    );
    Json(json!({"cluster": name, "reachable": cluster.is_reachable()})).into_response()
}

/// `POST /sandbox/clusters/{name}/namespaces/{namespace}/pods/{pod}/log` with `{"container": "app",
/// "line": "…"}`: the container writes `line` to its log now, as an application prints whatever it is
/// given (tests put hostile text there: markup, terminal escapes). Answers 204; 404 for an unknown cluster.
async fn append_log(
    State(clusters): State<Clusters>,
    Path((name, namespace, pod)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let Some(cluster) = clusters.cluster(&name) else {
        return refusal(StatusCode::NOT_FOUND, format!("no cluster named `{name}`"));
    };
    let request = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
    let (Some(container), Some(line)) = (
        request.get("container").and_then(Value::as_str),
        request.get("line").and_then(Value::as_str),
    ) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object with the strings `container` and `line`".into(),
        );
    };
    cluster.append_log(&namespace, &pod, container, line);
    StatusCode::NO_CONTENT.into_response()
}

fn refusal(status: StatusCode, message: String) -> Response {
    (status, Json(json!({"message": message}))).into_response()
}
