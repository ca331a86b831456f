//! Watch streams: newline-delimited JSON events, one chunk per event.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::{Instant, MissedTickBehavior};

use super::error::StoreError;
use super::selector::Selection;
use super::store::{Change, ClusterStore, EventType, metadata};

/// How often watchers that asked for bookmarks get one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(5);
/// Stands in for "no timeout": a real apiserver picks 30–60 minutes; the client disconnecting ends it sooner.
const NO_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The watch-specific query parameters.
#[derive(Debug, Default)]
pub(crate) struct WatchQuery {
    /// Resume after this resourceVersion; `None` (absent or "0") starts with the current objects.
    pub(crate) after: Option<u64>,
    /// `sendInitialEvents=true`: current objects, then a bookmark marking their end.
    pub(crate) send_initial_events: bool,
    /// `allowWatchBookmarks=true`.
    pub(crate) bookmarks: bool,
    /// `timeoutSeconds`.
    pub(crate) timeout: Option<Duration>,
    /// `Accept: …;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`: objects reduced to their metadata, as
    /// kube-rs's `metadata_watcher` asks (a client that may not read a kind's data can still watch its labels).
    pub(crate) metadata_only: bool,
}

/// An object as a `PartialObjectMetadata`: its metadata and nothing else.
pub(crate) fn partial_metadata(object: &Value) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// An event line with its object reduced to metadata (bookmarks and errors pass as they are).
fn metadata_line(line: Bytes) -> Bytes {
    let Ok(mut event) = serde_json::from_slice::<Value>(&line) else {
        return line;
    };
    if matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED")
    ) {
        event["object"] = partial_metadata(&event["object"]);
        let mut text = event.to_string();
        text.push('\n');
        return Bytes::from(text);
    }
    line
}

/// What the stream does next.
enum Next {
    Stop,
    Bookmark,
    Change(Result<Arc<Change>, RecvError>),
}

/// Answers a watch request with a stream of events on one type.
pub(crate) fn respond(
    store: &ClusterStore,
    ty: usize,
    selection: Selection,
    query: WatchQuery,
) -> Response {
    let rt = store.registry().get(ty).clone();
    let (api_version, kind) = (rt.api_version(), rt.kind.clone());
    let bookmark = move |rv: u64, initial_end: bool| {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        event(
            "BOOKMARK",
            &json!({"apiVersion": api_version, "kind": kind, "metadata": meta}),
        )
    };
    let from = if query.send_initial_events {
        None
    } else {
        query.after
    };
    let subscription = match store.subscribe(ty, from) {
        Ok(subscription) => subscription,
        // A real apiserver accepts the watch, then reports the gap inside it; clients relist.
        Err(err) => return stream_response(Body::from(event("ERROR", &err.status()))),
    };
    let skip_through = from.unwrap_or(0);
    let mut live = subscription.live;
    let mut reachability = store.reachability();
    let metadata_only = query.metadata_only;
    let shape = move |line: Bytes| {
        if metadata_only {
            metadata_line(line)
        } else {
            line
        }
    };
    let body = Body::from_stream(async_stream::stream! {
        let mut last = subscription.resource_version;
        for (_, object) in subscription.initial.iter().filter(|(key, o)| selection.matches_stored(key, o)) {
            yield Ok::<_, Infallible>(shape(raw_event("ADDED", object.json())));
        }
        if query.send_initial_events {
            yield Ok(bookmark(last, true));
        }
        for change in &subscription.replay {
            if let Some(line) = project(change, &selection) {
                yield Ok(shape(line));
            }
        }
        let deadline = tokio::time::sleep(query.timeout.unwrap_or(NO_TIMEOUT));
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(Instant::now() + BOOKMARK_EVERY, BOOKMARK_EVERY);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let next = tokio::select! {
                _ = &mut deadline => Next::Stop,
                // The cluster went down: cut the connection as an outage would.
                _ = reachability.wait_for(|up| !*up) => Next::Stop,
                _ = ticker.tick(), if query.bookmarks => Next::Bookmark,
                change = live.next() => Next::Change(change),
            };
            match next {
                Next::Stop | Next::Change(Err(RecvError::Closed)) => break,
                Next::Bookmark => yield Ok(bookmark(last, false)),
                Next::Change(Err(RecvError::Lagged(_))) => {
                    // Events were lost for this watcher: tell it to relist rather than leave it wrong.
                    let err = StoreError::Expired("too old resource version: the watcher fell behind".into());
                    yield Ok(event("ERROR", &err.status()));
                    break;
                }
                Next::Change(Ok(change)) => {
                    last = change.resource_version;
                    if change.type_index != ty || change.resource_version <= skip_through {
                        continue;
                    }
                    if let Some(line) = project(&change, &selection) {
                        yield Ok(shape(line));
                    }
                }
            }
        }
    });
    stream_response(body)
}

fn stream_response(body: Body) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// One event line.
fn event(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

/// One event line around an object already serialized, without building its tree again.
fn raw_event(kind: &str, object: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(object.len() + kind.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// The event line a watcher with this selection gets for a change, if it sees it at all.
///
/// An object modified out of the selection is a `DELETED` (its old state at the new version) and one
/// modified into it an `ADDED`, as the apiserver's watch cache reports them.
fn project(change: &Change, selection: &Selection) -> Option<Bytes> {
    let object = change.object.json();
    if selection.is_everything() {
        return Some(raw_event(change.event.as_str(), object));
    }
    let now = selection.matches_stored(&change.key, &change.object);
    match change.event {
        EventType::Added | EventType::Deleted => {
            now.then(|| raw_event(change.event.as_str(), object))
        }
        EventType::Modified => {
            let previous = change.previous.as_deref();
            let before = previous.is_some_and(|p| selection.matches_stored(&change.key, p));
            match (before, now) {
                (true, true) => Some(raw_event("MODIFIED", object)),
                (false, true) => Some(raw_event("ADDED", object)),
                (true, false) => {
                    let mut gone = previous.map(|p| p.tree()).unwrap_or_default();
                    metadata(&mut gone).insert(
                        "resourceVersion".into(),
                        json!(change.resource_version.to_string()),
                    );
                    Some(event("DELETED", &gone))
                }
                (false, false) => None,
            }
        }
    }
}
