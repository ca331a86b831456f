//! Container logs: a bounded ring of bytes per container, its `previous` ring, and `follow` streams.

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

/// Bytes of log kept per container (current and previous each), like a kubelet's rotated log file.
///
/// About 300 of the simulator's access-log lines: more than Tower's default tail of 200, and full within
/// a few minutes of a sandbox at ten times real speed, after which a container's log takes no more.
const BYTES_KEPT: usize = 64 * 1024;
/// Framing before each line's text in a ring: its time (microseconds since the epoch) and its length.
const HEADER: usize = 8 + 4;
/// `follow` messages a slow reader may fall behind by before it loses lines.
const FOLLOW_CAPACITY: usize = 64;

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

/// Lines as one ring of bytes, each framed by [`HEADER`], oldest evicted first: one allocation per
/// container however many lines pass through it.
#[derive(Default)]
struct Ring {
    bytes: VecDeque<u8>,
}

impl Ring {
    fn push(&mut self, at: jiff::Timestamp, text: &str) {
        // A line longer than the whole ring keeps its start, as a truncating log driver would.
        let mut end = text.len().min(BYTES_KEPT - HEADER);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let text = &text.as_bytes()[..end];
        while !self.bytes.is_empty() && self.bytes.len() + HEADER + text.len() > BYTES_KEPT {
            let length = self.length_at(8);
            self.bytes.drain(..HEADER + length);
        }
        if self.bytes.capacity() == 0 {
            // The ring's full size at once, so it never grows by doubling past it.
            self.bytes.reserve_exact(BYTES_KEPT);
        }
        let micros = at.as_microsecond();
        self.bytes.extend(micros.to_le_bytes());
        self.bytes.extend((text.len() as u32).to_le_bytes());
        self.bytes.extend(text);
    }

    /// The `u32` length stored at `offset`.
    fn length_at(&self, offset: usize) -> usize {
        let mut word = [0u8; 4];
        for (i, byte) in word.iter_mut().enumerate() {
            *byte = self.bytes[offset + i];
        }
        u32::from_le_bytes(word) as usize
    }

    /// Every line, oldest first.
    fn lines(&self) -> Vec<LogLine> {
        let mut lines = Vec::new();
        let mut offset = 0;
        while offset + HEADER <= self.bytes.len() {
            let mut micros = [0u8; 8];
            for (i, byte) in micros.iter_mut().enumerate() {
                *byte = self.bytes[offset + i];
            }
            let length = self.length_at(offset + 8);
            let text: Vec<u8> = self
                .bytes
                .range(offset + HEADER..offset + HEADER + length)
                .copied()
                .collect();
            lines.push(LogLine {
                at: jiff::Timestamp::from_microsecond(i64::from_le_bytes(micros))
                    .unwrap_or_default(),
                text: String::from_utf8_lossy(&text).into_owned(),
            });
            offset += HEADER + length;
        }
        lines
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }
}

struct ContainerLog {
    current: Ring,
    previous: Option<Ring>,
    live: broadcast::Sender<LogMessage>,
}

impl Default for ContainerLog {
    fn default() -> Self {
        Self::new()
    }
}

impl ContainerLog {
    fn new() -> Self {
        Self {
            current: Ring::default(),
            previous: None,
            live: broadcast::channel(FOLLOW_CAPACITY).0,
        }
    }
}

/// (namespace, pod, container)
type LogKey = (String, String, String);

/// The lines one container of a deleted pod had logged: its previous instance's, then its current one's,
/// oldest first, each with the time it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerLines {
    /// The container's name.
    pub container: String,
    /// `(written at, text)`, oldest first.
    pub lines: Vec<(jiff::Timestamp, String)>,
}

/// Told about every deleted pod's logs before they are dropped: `(namespace, pod, containers)`. A log
/// store (the sandbox's Loki) keeps them; the cluster itself forgets them as a kubelet does.
pub type PodLogSink = Arc<dyn Fn(&str, &str, Vec<ContainerLines>) + Send + Sync>;

/// A container log computed on demand instead of kept in a ring: CI step logs, which are long, fixed once
/// written, and cheaper to compute again than to keep.
pub trait GeneratedLog: Send + Sync {
    /// Lines written as of `now`: every line once the container has ended.
    fn written(&self, now: jiff::Timestamp) -> usize;
    /// Whether the container has ended by `now`, so no line follows those written.
    fn ended(&self, now: jiff::Timestamp) -> bool;
    /// Line `index` (0-based) and when it was written; `None` past the last line.
    fn line(&self, index: usize) -> Option<(jiff::Timestamp, String)>;
}

/// Computes the log of a container that has no ring from its pod as stored: `(pod, container)`, or `None`
/// when the source does not generate that container's log.
pub type LogGenerator = Arc<dyn Fn(&Value, &str) -> Option<Box<dyn GeneratedLog>> + Send + Sync>;

/// The time as a cluster's world sees it: the simulator's clock when one runs.
pub type ClusterClock = Arc<dyn Fn() -> jiff::Timestamp + Send + Sync>;

/// Every container log of one cluster.
#[derive(Default)]
pub(crate) struct Logs {
    containers: Mutex<HashMap<LogKey, ContainerLog>>,
    /// Where a deleted pod's lines go, if anywhere.
    sink: std::sync::OnceLock<PodLogSink>,
    /// Logs computed on demand for containers without a ring.
    generator: std::sync::OnceLock<LogGenerator>,
    /// The clock generated logs are written by; real time until a simulator sets its own.
    clock: Mutex<Option<ClusterClock>>,
}

impl Logs {
    fn lock(&self) -> MutexGuard<'_, HashMap<LogKey, ContainerLog>> {
        self.containers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn append(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        let mut logs = self.lock();
        let log = logs.entry(key(namespace, pod, container)).or_default();
        let at = jiff::Timestamp::now();
        let text = text.trim_end_matches('\n');
        log.current.push(at, text);
        // Only followers need the line as its own allocation.
        if log.live.receiver_count() > 0 {
            let line = Arc::new(LogLine {
                at,
                text: text.to_owned(),
            });
            // An error only means the last follower just left.
            let _ = log.live.send(LogMessage::Line(line));
        }
    }

    /// Sends a deleted pod's logs to `sink` from now on; the first sink set stays.
    pub(crate) fn set_sink(&self, sink: PodLogSink) {
        // A second sink is ignored: the sandbox sets one per cluster at startup.
        let _ = self.sink.set(sink);
    }

    /// Computes logs of containers without a ring with `generator` from now on; the first one set stays.
    pub(crate) fn set_generator(&self, generator: LogGenerator) {
        // A second generator is ignored: the sandbox sets one per cluster when seeding.
        let _ = self.generator.set(generator);
    }

    /// Reads generated logs by `clock` from now on.
    pub(crate) fn set_clock(&self, clock: ClusterClock) {
        *self.clock.lock().unwrap_or_else(PoisonError::into_inner) = Some(clock);
    }

    /// The time generated logs are read at.
    fn now(&self) -> jiff::Timestamp {
        let clock = self
            .clock
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        clock.map_or_else(jiff::Timestamp::now, |clock| clock())
    }

    /// Whether a container has a ring (has logged, or was read before).
    fn has_ring(&self, k: &LogKey) -> bool {
        self.lock().contains_key(k)
    }

    /// Forgets every container log of a deleted pod, handing its lines to the sink first.
    pub(crate) fn remove_pod(&self, namespace: &str, pod: &str) {
        let mut removed = Vec::new();
        self.lock().retain(|(ns, name, container), log| {
            let doomed = ns == namespace && name == pod;
            if doomed {
                removed.push((container.clone(), std::mem::take(log)));
            }
            !doomed
        });
        let Some(sink) = self.sink.get() else {
            return;
        };
        let mut containers: Vec<ContainerLines> = removed
            .into_iter()
            .map(|(container, log)| {
                let mut lines: Vec<(jiff::Timestamp, String)> = log
                    .previous
                    .iter()
                    .flat_map(Ring::lines)
                    .chain(log.current.lines())
                    .map(|line| (line.at, line.text))
                    .collect();
                lines.sort_by_key(|(at, _)| *at);
                ContainerLines { container, lines }
            })
            .filter(|c| !c.lines.is_empty())
            .collect();
        containers.sort_by(|a, b| a.container.cmp(&b.container));
        if !containers.is_empty() {
            sink(namespace, pod, containers);
        }
    }

    pub(crate) fn restart(&self, namespace: &str, pod: &str, container: &str) {
        let mut logs = self.lock();
        let log = logs.entry(key(namespace, pod, container)).or_default();
        log.previous = Some(std::mem::take(&mut log.current));
        // An error only means no one is following this container.
        let _ = log.live.send(LogMessage::End);
    }

    /// Containers with a log, and the bytes their rings hold.
    pub(crate) fn retained(&self) -> (usize, usize) {
        let logs = self.lock();
        let bytes = logs
            .values()
            .map(|log| log.current.len() + log.previous.as_ref().map_or(0, Ring::len))
            .sum();
        (logs.len(), bytes)
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
    ) -> Option<(Vec<LogLine>, broadcast::Receiver<LogMessage>)> {
        let mut logs = self.lock();
        let log = logs.entry(k).or_default();
        let lines = if previous {
            log.previous.as_ref()?
        } else {
            &log.current
        };
        Some((lines.lines(), log.live.subscribe()))
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
    let k = key(namespace, pod, &container);
    if !store.logs().has_ring(&k)
        && let Some(generator) = store.logs().generator.get()
        && let Some(log) = generator(&pod_object, &container)
    {
        return generated(store, pod_type, k, log, generator.clone(), query);
    }
    let Some((mut lines, mut live)) = store.logs().read(k, query.previous) else {
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
    let head: String = lines.iter().map(&render).collect();
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

/// Lines of a generated log sent in one piece of the body: big enough to be cheap, small enough that a
/// 100,000-line log is never in memory at once.
const GENERATED_CHUNK: usize = 1_000;
/// How often a `follow` reader of a generated log looks for new lines (wall time).
const GENERATED_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// One generated line as the kubelet writes it: with `timestamps`, RFC 3339 with nanoseconds and a space
/// first.
fn render_generated(at: jiff::Timestamp, text: &str, timestamps: bool) -> String {
    if timestamps {
        format!("{} {text}\n", at.strftime("%Y-%m-%dT%H:%M:%S.%9fZ"))
    } else {
        format!("{text}\n")
    }
}

/// Lines `from..to` of a generated log, rendered.
fn generated_chunk(log: &dyn GeneratedLog, from: usize, to: usize, timestamps: bool) -> Bytes {
    let mut text = String::new();
    for index in from..to {
        if let Some((at, line)) = log.line(index) {
            text.push_str(&render_generated(at, &line, timestamps));
        }
    }
    Bytes::from(text)
}

/// The first line of a generated log written at or after `since` (lines are written in time order).
fn first_since(log: &dyn GeneratedLog, written: usize, since: jiff::Timestamp) -> usize {
    let (mut low, mut high) = (0, written);
    while low < high {
        let middle = low + (high - low) / 2;
        match log.line(middle) {
            Some((at, _)) if at < since => low = middle + 1,
            _ => high = middle,
        }
    }
    low
}

/// Answers a log request from a generated log: the lines written by the cluster's clock, streamed in
/// chunks; `follow` polls for more until the container ends or its pod goes.
fn generated(
    store: &ClusterStore,
    pod_type: usize,
    (namespace, pod, container): LogKey,
    log: Box<dyn GeneratedLog>,
    generator: LogGenerator,
    query: LogQuery,
) -> Result<Response> {
    if query.previous {
        return Err(StoreError::BadRequest(format!(
            "previous terminated container \"{container}\" in pod \"{pod}\" not found"
        )));
    }
    let now = store.logs().now();
    let written = log.written(now);
    let since = match (query.since_time, query.since_seconds) {
        (Some(time), _) => Some(time),
        (None, Some(seconds)) => now
            .checked_sub(jiff::SignedDuration::from_secs(seconds))
            .ok(),
        (None, None) => None,
    };
    let mut from = since.map_or(0, |since| first_since(log.as_ref(), written, since));
    if let Some(tail) = query.tail_lines {
        from = from.max(written.saturating_sub(tail));
    }
    let timestamps = query.timestamps;
    let body = if query.follow {
        let store = store.clone();
        Body::from_stream(async_stream::stream! {
            let mut log = log;
            let mut sent = from;
            let mut upto = written;
            let mut now = now;
            loop {
                while sent < upto {
                    let end = upto.min(sent + GENERATED_CHUNK);
                    yield Ok::<_, Infallible>(generated_chunk(log.as_ref(), sent, end, timestamps));
                    sent = end;
                }
                if log.ended(now) {
                    break;
                }
                tokio::time::sleep(GENERATED_POLL).await;
                // The pod changes as its steps run and end; a deleted pod ends the stream, as the kubelet's.
                let Some(pod_object) = store.get_at(pod_type, Some(&namespace), &pod) else {
                    break;
                };
                let Some(next) = generator(&pod_object, &container) else {
                    break;
                };
                log = next;
                now = store.logs().now();
                upto = log.written(now).max(sent);
            }
        })
    } else {
        let chunks = (from..written).step_by(GENERATED_CHUNK).map(move |start| {
            Ok::<_, Infallible>(generated_chunk(
                log.as_ref(),
                start,
                written.min(start + GENERATED_CHUNK),
                timestamps,
            ))
        });
        Body::from_stream(futures::stream::iter(chunks))
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
