//! An owner's pod logs (the endpoints `shared::api` declares as `Logs` and `ListLogPods`): a running pod's
//! log streamed live from its cluster, a gone pod's last lines from the log store, each line saying which.
//!
//! Only pods of this service in this environment can be read: a running pod must be on the service's card in
//! the fleet model, a gone one must be a pod the store lists for the service's namespace. Tower passes the
//! model's or the store's name onwards, never the request's.

use std::collections::BTreeSet;
use std::convert::Infallible;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use futures::stream::BoxStream;
use futures::{AsyncBufReadExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;
use serde::Deserialize;
use shared::api::{LOG_END_EVENT, LOG_EVENT, ListLogPods, LogQuery, Logs};
use shared::delivery::FieldError;
use shared::fleet::DeploymentCard;
use shared::logs::{LogLine, LogSource, RecentPod, RecentPods};

use crate::error::{Error, Result};
use crate::routes::{ApiQuery, ApiRoutes};
use crate::state::AppState;

/// Lines a request may ask for at most.
const MAX_TAIL: i64 = 5_000;

/// The log routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<Logs, _, _>(logs)
        .serve::<ListLogPods, _, _>(list_log_pods)
}

#[derive(Deserialize)]
struct ServiceEnvironment {
    name: String,
    env: String,
}

/// The card of `name` in `env`, or a 404.
fn card(state: &AppState, name: &str, env: &str) -> Result<DeploymentCard> {
    state
        .fleet
        .service_detail(name)
        .and_then(|d| d.cards.into_iter().find(|c| c.environment == env))
        .ok_or_else(|| Error::NotFound(format!("service {name} in {env}")))
}

/// The namespace the service's pods run in: a running pod's, else the service's name.
fn namespace(state: &AppState, card: &DeploymentCard, name: &str) -> String {
    card.pods
        .iter()
        .find_map(|p| state.fleet.pod_namespace(&p.cluster, &p.name))
        .unwrap_or_else(|| name.to_string())
}

/// Running pods first, as the card lists them; then gone pods the store keeps, newest first.
async fn list_log_pods(
    State(state): State<AppState>,
    Path(ServiceEnvironment { name, env }): Path<ServiceEnvironment>,
) -> Result<Json<RecentPods>> {
    let card = card(&state, &name, &env)?;
    let mut pods: Vec<RecentPod> = card
        .pods
        .iter()
        .map(|p| RecentPod {
            name: p.name.clone(),
            containers: p.containers.clone(),
            gone: false,
            last_line_at: None,
        })
        .collect();
    let Some(history) = &state.log_history else {
        return Ok(Json(RecentPods {
            store: false,
            store_unavailable: false,
            store_unavailable_since: None,
            pods,
        }));
    };
    let namespace = namespace(&state, &card, &name);
    let live: BTreeSet<&str> = card.pods.iter().map(|p| p.name.as_str()).collect();
    let mut store_unavailable = false;
    match history.gone_pods(&env, &namespace, &live).await {
        Ok(gone) => pods.extend(gone),
        // The running pods can still be read: say the store is unavailable rather than fail the panel.
        Err(error) => {
            tracing::warn!(error = %error, service = %name, environment = %env, "the log store failed to list gone pods");
            store_unavailable = true;
        }
    }
    Ok(Json(RecentPods {
        store: true,
        store_unavailable,
        store_unavailable_since: history
            .failing_since()
            .filter(|_| store_unavailable)
            .map(|since| since.to_string()),
        pods,
    }))
}

/// Streams one container's log as SSE: a running pod's live from its cluster, a gone pod's from the store.
async fn logs(
    State(state): State<AppState>,
    Path(ServiceEnvironment { name, env }): Path<ServiceEnvironment>,
    ApiQuery(query): ApiQuery<LogQuery>,
) -> Result<Sse<KeepAliveStream<BoxStream<'static, Result<Event, Infallible>>>>> {
    let card = card(&state, &name, &env)?;
    let tail = query.tail.unwrap_or(200).clamp(1, MAX_TAIL);
    let not_a_pod = || {
        Error::from(FieldError::new(
            "pod",
            format!("{} is not a pod of {name} in {env}", query.pod),
        ))
    };
    // A followed live log goes on until the container stops (and the browser reconnects to its next
    // instance); anything else is a tail that ends, and says so.
    let mut ends = !query.follow;
    let stream = if let Some(pod) = card.pods.iter().find(|p| p.name == query.pod) {
        if let Some(container) = &query.container
            && !pod.containers.contains(container)
        {
            return Err(FieldError::new(
                "container",
                format!("{} has no container {container}", pod.name),
            )
            .into());
        }
        // Read where the pod runs: an environment may span several clusters.
        let client = state
            .workload_clients
            .get(&pod.cluster)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("cluster {} of {env}", pod.cluster)))?;
        let namespace = state
            .fleet
            .pod_namespace(&pod.cluster, &pod.name)
            .unwrap_or_else(|| name.clone());
        let pods: Api<Pod> = Api::namespaced(client, &namespace);
        let params = LogParams {
            container: query.container.clone(),
            follow: query.follow,
            previous: query.previous,
            tail_lines: Some(tail),
            timestamps: true,
            ..LogParams::default()
        };
        let lines = pods
            .log_stream(&pod.name, &params)
            .await
            .map_err(|error| Error::upstream("the cluster", error))?
            .lines();
        lines
            .take_while(|line| std::future::ready(line.is_ok()))
            .filter_map(|line| std::future::ready(line.ok()))
            .map(|text| {
                Ok(log_event(&LogLine {
                    source: LogSource::Live,
                    text,
                }))
            })
            .boxed()
    } else {
        // Not running: perhaps gone and kept by the store. A name that cannot be a pod's is refused
        // before the store hears of anything.
        let history = state.log_history.as_ref().ok_or_else(not_a_pod)?;
        if !is_pod_name(&query.pod) {
            return Err(not_a_pod());
        }
        let namespace = namespace(&state, &card, &name);
        let stored = history
            .stored_pods(&env, &namespace)
            .await
            .map_err(|error| Error::upstream("the log store", error))?;
        let (pod, containers) = stored.get_key_value(&query.pod).ok_or_else(not_a_pod)?;
        let container = match &query.container {
            Some(wanted) => containers.get(wanted).ok_or_else(|| {
                Error::from(FieldError::new(
                    "container",
                    format!("the log store has no container {wanted} of {pod}"),
                ))
            })?,
            None => match containers.iter().collect::<Vec<_>>().as_slice() {
                [only] => *only,
                _ => {
                    return Err(FieldError::new(
                        "container",
                        format!("{pod} had several containers: name one"),
                    )
                    .into());
                }
            },
        };
        // A gone pod writes nothing more: `follow` and `previous` change nothing, the stream ends after
        // the tail.
        ends = true;
        let lines = history
            .tail(&env, &namespace, pod, container, tail as usize)
            .await
            .map_err(|error| Error::upstream("the log store", error))?;
        futures::stream::iter(lines.into_iter().map(|line| Ok(log_event(&line)))).boxed()
    };
    let stream = if ends {
        stream
            .chain(futures::stream::once(std::future::ready(Ok(end_event()))))
            .boxed()
    } else {
        stream
    };
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The event closing a log stream that ended by itself ([`LOG_END_EVENT`]).
pub(crate) fn end_event() -> Event {
    // Not empty: a browser dispatches no event whose data is empty.
    Event::default().event(LOG_END_EVENT).data(LOG_END_EVENT)
}

fn log_event(line: &LogLine) -> Event {
    // Serializing our own type cannot fail; an empty object is a harmless fallback all the same.
    let data = serde_json::to_string(line).unwrap_or_else(|_| "{}".into());
    Event::default().event(LOG_EVENT).data(data)
}

/// Whether `name` can be a pod's: a DNS-1123 subdomain (lowercase letters, digits, `-` and `.`, starting
/// and ending with a letter or digit, at most 253 characters). Nothing else can close a LogQL string.
pub fn is_pod_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dns_names_can_be_pods() {
        assert!(is_pod_name("payments-7d9f8-abcde"));
        assert!(is_pod_name("a.b-1"));
        for bad in [
            "",
            "-a",
            "a-",
            "Payments",
            r#"x"} or {pod=~".+"#,
            "a b",
            "a/b",
            &"a".repeat(254),
        ] {
            assert!(!is_pod_name(bad), "{bad}");
        }
    }
}
