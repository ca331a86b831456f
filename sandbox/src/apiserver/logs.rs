//! Container logs: a bounded buffer per container, its `previous` buffer, and `follow` streams.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::broadcast;

use super::error::{Result, StoreError};
use super::store::ClusterStore;

/// Lines kept per container (current and previous each), like a kubelet's rotated log.
const LINES_KEPT: usize = 1_000;

/// One logged line and when it was written.
#[derive(Debug)]
pub(crate) struct LogLine {
    at: jiff::Timestamp,
    text: String,
}

/// What `follow` readers receive.
#[derive(Debug, Clone)]
pub(crate) enum LogMessage {
    Line(Arc<LogLine>),
    /// The container restarted: its log stream ends, as the kubelet ends it.
    End,
}

struct ContainerLog {
    current: VecDeque<Arc<LogLine>>,
    previous: Option<VecDeque<Arc<LogLine>>>,
    live: broadcast::Sender<LogMessage>,
}

impl ContainerLog {
    fn new() -> Self {
        Self {
            current: VecDeque::new(),
            previous: None,
            live: broadcast::channel(256).0,
        }
    }
}

/// (namespace, pod, container)
type LogKey = (String, String, String);

/// Every container log of one cluster.
#[derive(Default)]
pub(crate) struct Logs {
    containers: Mutex<HashMap<LogKey, ContainerLog>>,
}

impl Logs {
    fn lock(&self) -> MutexGuard<'_, HashMap<LogKey, ContainerLog>> {
        self.containers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn append(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        let mut logs = self.lock();
        let log = logs
            .entry(key(namespace, pod, container))
            .or_insert_with(ContainerLog::new);
        let line = Arc::new(LogLine {
            at: jiff::Timestamp::now(),
            text: text.trim_end_matches('\n').to_owned(),
        });
        log.current.push_back(line.clone());
        if log.current.len() > LINES_KEPT {
            log.current.pop_front();
        }
        // An error only means no one is following this container.
        let _ = log.live.send(LogMessage::Line(line));
    }

    /// Forgets every container log of a deleted pod.
    pub(crate) fn remove_pod(&self, namespace: &str, pod: &str) {
        self.lock()
            .retain(|(ns, name, _), _| !(ns == namespace && name == pod));
    }

    pub(crate) fn restart(&self, namespace: &str, pod: &str, container: &str) {
        let mut logs = self.lock();
        let log = logs
            .entry(key(namespace, pod, container))
            .or_insert_with(ContainerLog::new);
        log.previous = Some(std::mem::take(&mut log.current));
        // An error only means no one is following this container.
        let _ = log.live.send(LogMessage::End);
    }

    /// Containers of a pod that have logged anything, sorted.
    fn containers_of(&self, namespace: &str, pod: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .lock()
            .keys()
            .filter(|(ns, p, _)| ns == namespace && p == pod)
            .map(|(_, _, c)| c.clone())
            .collect();
        names.sort();
        names
    }

    /// A snapshot of a container's lines and, for `follow`, a feed of later ones.
    fn read(
        &self,
        k: LogKey,
        previous: bool,
    ) -> Option<(Vec<Arc<LogLine>>, broadcast::Receiver<LogMessage>)> {
        let mut logs = self.lock();
        let log = logs.entry(k).or_insert_with(ContainerLog::new);
        let lines = if previous {
            log.previous.as_ref()?
        } else {
            &log.current
        };
        Some((lines.iter().cloned().collect(), log.live.subscribe()))
    }
}

fn key(namespace: &str, pod: &str, container: &str) -> LogKey {
    (namespace.to_owned(), pod.to_owned(), container.to_owned())
}

/// The query of `GET …/pods/{name}/log`.
#[derive(Debug, Default)]
pub(crate) struct LogQuery {
    pub(crate) container: Option<String>,
    pub(crate) follow: bool,
    pub(crate) previous: bool,
    pub(crate) timestamps: bool,
    pub(crate) tail_lines: Option<usize>,
    pub(crate) since_seconds: Option<i64>,
    pub(crate) since_time: Option<jiff::Timestamp>,
}

/// Answers a pod log request: text/plain, streamed when following.
pub(crate) fn respond(
    store: &ClusterStore,
    pod_type: usize,
    namespace: &str,
    pod: &str,
    query: LogQuery,
) -> Result<Response> {
    let Some(pod_object) = store.get_at(pod_type, Some(namespace), pod) else {
        return Err(StoreError::NotFound {
            resource: "pods".into(),
            name: pod.to_owned(),
        });
    };
    let container = pick_container(
        store,
        &pod_object,
        namespace,
        pod,
        query.container.as_deref(),
    )?;
    let Some((mut lines, mut live)) = store
        .logs()
        .read(key(namespace, pod, &container), query.previous)
    else {
        return Err(StoreError::BadRequest(format!(
            "previous terminated container \"{container}\" in pod \"{pod}\" not found"
        )));
    };
    let since = match (query.since_time, query.since_seconds) {
        (Some(time), _) => Some(time),
        (None, Some(seconds)) => jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_secs(seconds))
            .ok(),
        (None, None) => None,
    };
    if let Some(since) = since {
        lines.retain(|line| line.at >= since);
    }
    if let Some(tail) = query.tail_lines {
        let skip = lines.len().saturating_sub(tail);
        lines.drain(..skip);
    }
    let timestamps = query.timestamps;
    let render = move |line: &LogLine| {
        if timestamps {
            format!("{} {}\n", line.at, line.text)
        } else {
            format!("{}\n", line.text)
        }
    };
    let head: String = lines.iter().map(|line| render(line)).collect();
    let body = if query.follow && !query.previous {
        Body::from_stream(async_stream::stream! {
            yield Ok::<_, Infallible>(Bytes::from(head));
            loop {
                match live.recv().await {
                    Ok(LogMessage::Line(line)) => yield Ok(Bytes::from(render(&line))),
                    Ok(LogMessage::End) | Err(broadcast::error::RecvError::Closed) => break,
                    // A reader this slow loses lines, as with a real kubelet's rotation.
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                }
            }
        })
    } else {
        Body::from(head)
    };
    Ok(([(header::CONTENT_TYPE, "text/plain")], body).into_response())
}

/// The container a request means: the named one, else the pod's only one.
fn pick_container(
    store: &ClusterStore,
    pod_object: &Value,
    namespace: &str,
    pod: &str,
    wanted: Option<&str>,
) -> Result<String> {
    let mut declared: Vec<String> = [
        "/spec/initContainers",
        "/spec/containers",
        "/spec/ephemeralContainers",
    ]
    .iter()
    .filter_map(|path| pod_object.pointer(path).and_then(Value::as_array))
    .flatten()
    .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
    .collect();
    if declared.is_empty() {
        declared = store.logs().containers_of(namespace, pod);
    }
    match wanted {
        Some(name) if declared.is_empty() || declared.iter().any(|c| c == name) => {
            Ok(name.to_owned())
        }
        Some(name) => Err(StoreError::BadRequest(format!(
            "container {name} is not valid for pod {pod}"
        ))),
        None => {
            // Init and ephemeral containers are never the default; a pod without a spec falls back
            // to whatever has logged.
            let regular: Vec<String> = pod_object
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                        .collect()
                })
                .filter(|cs: &Vec<String>| !cs.is_empty())
                .unwrap_or(declared);
            match regular.as_slice() {
                [only] => Ok(only.clone()),
                [] => Err(StoreError::BadRequest(format!(
                    "pod {pod} has no containers"
                ))),
                many => Err(StoreError::BadRequest(format!(
                    "a container name must be specified for pod {pod}, choose one of: [{}]",
                    many.join(" ")
                ))),
            }
        }
    }
}
