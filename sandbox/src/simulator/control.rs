//! The sandbox's HTTP controls of the platform's Applications, for tests that only speak HTTP (a browser
//! test), next to the clusters' (`/sandbox/clusters/…`) and the forge's (`/sandbox/pulls/…`):
//!
//! - `POST /sandbox/platform/bump` with `{"component": "release-operator", "cluster": "dev"}` (and an
//!   optional `"version"`, by default the next patch version) makes the component's CI bot commit a bump
//!   now, and answers with the new version and the commit ([`super::Bumped`]). It needs the simulator.
//! - `POST /sandbox/applications/{name}/out-of-sync` makes an Application OutOfSync as a hand edit of its
//!   live objects would: its sync status and one of its resources' (a ConfigMap's when it has one). Nothing
//!   reverts it (the sets do not self-heal); a sync does.
//!
//! Refusals are `{"message": …}` in words: 400 for a body that does not say what to do, 404 for an unknown
//! component, cluster or Application, 409 when the sandbox runs no simulator.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{BumpError, Simulator};
use crate::apiserver::{ClusterStore, StoreError};
use crate::fixtures::stamp;
use crate::world::ARGOCD_NAMESPACE;

/// What the controls act on.
#[derive(Clone)]
struct Control {
    /// Holds the Applications.
    management: ClusterStore,
    /// Commits bumps and moves the world on; absent in a sandbox without simulation.
    simulator: Option<Simulator>,
}

/// The controls' routes, at the sandbox's root.
pub fn router(management: ClusterStore, simulator: Option<Simulator>) -> Router {
    Router::new()
        .route("/sandbox/platform/bump", post(bump))
        .route(
            "/sandbox/applications/{name}/out-of-sync",
            post(out_of_sync),
        )
        .with_state(Control {
            management,
            simulator,
        })
}

/// The body of `POST /sandbox/platform/bump`.
#[derive(Debug, Deserialize)]
struct BumpRequest {
    component: String,
    cluster: String,
    #[serde(default)]
    version: Option<String>,
}

async fn bump(State(control): State<Control>, body: Bytes) -> Response {
    // Read by hand rather than with `Json<…>`, so the answer says what is wrong whatever a test sends.
    let Ok(request) = serde_json::from_slice::<BumpRequest>(&body) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object with `component` and `cluster` (and optionally `version`)"
                .into(),
        );
    };
    let Some(simulator) = control.simulator else {
        return refusal(
            StatusCode::CONFLICT,
            "this sandbox runs without its simulator, so nothing would pick a bump up".into(),
        );
    };
    // The bump runs git and holds the simulator's lock: off the async workers.
    let bumped = tokio::task::spawn_blocking(move || {
        simulator.bump(
            &request.component,
            &request.cluster,
            request.version.as_deref(),
        )
    })
    .await;
    match bumped {
        Ok(Ok(bumped)) => {
            tracing::info!(
                component = bumped.component,
                cluster = bumped.cluster,
                version = bumped.version,
                "sandbox platform component bumped"
            );
            Json(bumped).into_response()
        }
        Ok(Err(error @ (BumpError::UnknownComponent { .. } | BumpError::NotOnCluster { .. }))) => {
            refusal(StatusCode::NOT_FOUND, error.to_string())
        }
        Ok(Err(error @ BumpError::EmptyVersion)) => {
            refusal(StatusCode::BAD_REQUEST, error.to_string())
        }
        Ok(Err(BumpError::Failed(error))) => {
            tracing::error!(error = format!("{error:#}"), "a sandbox bump failed");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the bump failed; the sandbox's log says why".into(),
            )
        }
        Err(error) => {
            tracing::error!(%error, "a sandbox bump panicked");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the bump failed; the sandbox's log says why".into(),
            )
        }
    }
}

async fn out_of_sync(State(control): State<Control>, Path(name): Path<String>) -> Response {
    let now = control
        .simulator
        .as_ref()
        .map_or_else(jiff::Timestamp::now, Simulator::now);
    match mark_out_of_sync(&control.management, &name, now) {
        Ok(Some(resource)) => {
            tracing::info!(application = name, "sandbox Application made OutOfSync");
            Json(json!({"application": name, "sync": "OutOfSync", "resource": resource}))
                .into_response()
        }
        Ok(None) => refusal(
            StatusCode::NOT_FOUND,
            format!("no Application named `{name}` in {ARGOCD_NAMESPACE}"),
        ),
        Err(error) => {
            tracing::error!(%error, application = name, "making an Application OutOfSync failed");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the Application could not be changed; the sandbox's log says why".into(),
            )
        }
    }
}

/// Makes Application `name` OutOfSync with one of its resources drifted, as of `at`; returns that resource
/// (`{group, kind, namespace, name}`), or `None` when there is no such Application.
fn mark_out_of_sync(
    management: &ClusterStore,
    name: &str,
    at: jiff::Timestamp,
) -> Result<Option<Value>, StoreError> {
    let (api_version, kind) = (crate::argocd::API_VERSION, crate::argocd::KIND);
    for _ in 0..5 {
        let Some(mut app) = management.get(api_version, kind, Some(ARGOCD_NAMESPACE), name) else {
            return Ok(None);
        };
        app["status"]["sync"]["status"] = json!("OutOfSync");
        app["status"]["reconciledAt"] = json!(stamp(at));
        let mut drifted = json!({});
        if let Some(resources) = app["status"]["resources"].as_array_mut() {
            // A hand edit changes a ConfigMap more often than anything; never a CRD.
            let index = resources
                .iter()
                .position(|r| r["kind"] == "ConfigMap")
                .or_else(|| {
                    resources
                        .iter()
                        .position(|r| r["kind"] != "CustomResourceDefinition")
                })
                .or(if resources.is_empty() { None } else { Some(0) });
            if let Some(entry) = index.and_then(|i| resources.get_mut(i)) {
                entry["status"] = json!("OutOfSync");
                drifted = json!({
                    "group": entry.get("group").cloned().unwrap_or_else(|| json!("")),
                    "kind": entry["kind"],
                    "namespace": entry.get("namespace").cloned().unwrap_or_else(|| json!("")),
                    "name": entry["name"],
                });
            }
        }
        match management.replace(app) {
            Ok(_) => {
                if let Err(error) = crate::fixtures::argocd::refresh_set_entry(management, name) {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "could not refresh an ApplicationSet's status"
                    );
                }
                return Ok(Some(drifted));
            }
            Err(StoreError::Conflict { .. }) => continue,
            Err(error) => return Err(error),
        }
    }
    Err(StoreError::BadRequest(format!(
        "Application {name} kept changing"
    )))
}

fn refusal(status: StatusCode, message: String) -> Response {
    (status, Json(json!({"message": message}))).into_response()
}
