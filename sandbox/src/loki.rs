//! A Loki-compatible log store for the logs of pods that no longer exist: Loki cannot be installed here.
//!
//! The clusters hand it every deleted pod's lines (see `ClusterStore::on_pod_logs_removed`); it keeps them
//! for [`Limits::max_age`] and within [`Limits::max_bytes`], oldest streams evicted first, and answers
//! Loki's HTTP API for them: `query_range` (a stream selector of equality matchers only; anything else is
//! refused with a 400, as Loki refuses a query it cannot parse), `labels`, `label/<name>/values` and
//! `series`. Answers have Loki's documented shapes: `{"status":"success","data":{"resultType":"streams",
//! "result":[{"stream":{…},"values":[["<ns>","<line>"],…]}],"stats":{"summary":{…}}}}`.
//!
//! Streams are labelled `cluster`, `namespace`, `pod` and `container`, as a log agent on each cluster
//! labels them. Requests must name a tenant in `X-Scope-OrgID` (a multi-tenant Loki's `no org id`
//! otherwise); only [`TENANT`] holds data.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use serde_json::{Value, json};

use crate::apiserver::ContainerLines;

/// The tenant the sandbox's clusters write to, and Tower's configuration reads.
pub const TENANT: &str = "tower";

/// The header Loki reads the tenant from.
const TENANT_HEADER: &str = "x-scope-orgid";

/// Lines a query may ask for at most (Loki's default `max_entries_limit_per_query`).
const MAX_LIMIT: usize = 5_000;

/// Lines a query answers when it names no `limit` (Loki's default).
const DEFAULT_LIMIT: usize = 100;

/// Lines kept per stream at most: Tower's default tail, and more than a kubelet's ring of a short-lived pod.
const LINES_PER_STREAM: usize = 200;

/// What one kept line costs the heap: its text and its slot.
fn line_bytes(line: &(i128, String)) -> usize {
    std::mem::size_of::<(i128, String)>() + line.1.len()
}

/// How much the store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of lines (text and slots) and labels kept across all streams; the oldest streams go first.
    pub max_bytes: usize,
    /// Streams whose newest line is older than this are forgotten (Loki's retention).
    pub max_age: Duration,
}

impl Default for Limits {
    /// 384 KiB for an hour: the last lines of a dozen-odd gone pods, which is what anyone looks for, and
    /// little enough that a long-running sandbox's memory stays flat.
    fn default() -> Self {
        Self {
            max_bytes: 384 * 1024,
            max_age: Duration::from_secs(60 * 60),
        }
    }
}

/// One route of the log store's API, under `/loki`. The router is built from [`Route::ALL`], so the
/// contract tests, which exercise every route, see each one added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Route {
    /// `GET /api/v1/query_range`: a log query's lines.
    QueryRange,
    /// `GET /api/v1/labels`: label names.
    Labels,
    /// `GET /api/v1/label/{name}/values`: one label's values.
    LabelValues,
    /// `GET|POST /api/v1/series`: the streams' label sets.
    Series,
}

impl Route {
    /// Every route.
    pub const ALL: [Self; 4] = [
        Self::QueryRange,
        Self::Labels,
        Self::LabelValues,
        Self::Series,
    ];

    /// The path under `/loki`, its parameter written `{name}`.
    pub fn path(self) -> &'static str {
        match self {
            Self::QueryRange => "/api/v1/query_range",
            Self::Labels => "/api/v1/labels",
            Self::LabelValues => "/api/v1/label/{name}/values",
            Self::Series => "/api/v1/series",
        }
    }

    /// The methods it answers.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Self::QueryRange | Self::Labels | Self::LabelValues => &[Method::GET],
            Self::Series => &[Method::GET, Method::POST],
        }
    }

    fn handler(self) -> MethodRouter<LogStore> {
        match self {
            Self::QueryRange => get(query_range),
            Self::Labels => get(labels),
            Self::LabelValues => get(label_values),
            Self::Series => get(series).post(series),
        }
    }
}

/// One stream: a container of a pod that is gone, with its lines oldest first.
#[derive(Debug)]
struct Stream {
    labels: BTreeMap<String, String>,
    /// `(nanoseconds since the epoch, text)`, oldest first.
    lines: Vec<(i128, String)>,
    bytes: usize,
}

impl Stream {
    fn newest(&self) -> i128 {
        self.lines.last().map_or(i128::MIN, |(at, _)| *at)
    }
}

#[derive(Debug, Default)]
struct Archive {
    /// In the order they were kept, oldest first.
    streams: VecDeque<Stream>,
    bytes: usize,
}

/// A matching stream's labels and its lines within the asked range.
type Selected = (BTreeMap<String, String>, Vec<(i128, String)>);

/// The store: cheap to clone, shared by the clusters that feed it and the router that reads it.
#[derive(Debug, Clone)]
pub struct LogStore {
    archive: Arc<Mutex<Archive>>,
    limits: Limits,
    /// HTTP requests received, so tests can show what never reached the store.
    requests: Arc<AtomicU64>,
}

impl Default for LogStore {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl LogStore {
    /// An empty store keeping what `limits` allow.
    pub fn new(limits: Limits) -> Self {
        Self {
            archive: Arc::default(),
            limits,
            requests: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Archive> {
        self.archive.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps the lines of a deleted pod of `cluster`, one stream per container.
    pub fn keep(&self, cluster: &str, namespace: &str, pod: &str, containers: Vec<ContainerLines>) {
        let mut archive = self.lock();
        for ContainerLines { container, lines } in containers {
            let labels: BTreeMap<String, String> = [
                ("cluster", cluster),
                ("namespace", namespace),
                ("pod", pod),
                ("container", container.as_str()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
            let mut lines: Vec<(i128, String)> = lines
                .into_iter()
                .map(|(at, text)| (at.as_nanosecond(), text))
                .collect();
            let label_bytes: usize = labels.iter().map(|(k, v)| k.len() + v.len()).sum();
            // A stream larger than the whole store keeps its newest lines.
            // Only a container's last lines are kept: what someone reads of a gone pod is how it ended.
            let skip = lines.len().saturating_sub(LINES_PER_STREAM);
            lines.drain(..skip);
            let mut bytes = label_bytes + lines.iter().map(line_bytes).sum::<usize>();
            let mut drop_front = 0;
            while bytes > self.limits.max_bytes && drop_front < lines.len() {
                bytes -= line_bytes(&lines[drop_front]);
                drop_front += 1;
            }
            lines.drain(..drop_front);
            if lines.is_empty() {
                continue;
            }
            // The same stream kept twice (a pod deleted, recreated under its name and deleted again)
            // is one stream with both runs' lines.
            if let Some(index) = archive.streams.iter().position(|s| s.labels == labels)
                && let Some(mut old) = archive.streams.remove(index)
            {
                archive.bytes -= old.bytes;
                old.lines.append(&mut lines);
                old.lines.sort_by_key(|(at, _)| *at);
                lines = old.lines;
                let skip = lines.len().saturating_sub(LINES_PER_STREAM);
                lines.drain(..skip);
                bytes = label_bytes + lines.iter().map(line_bytes).sum::<usize>();
            }
            archive.bytes += bytes;
            archive.streams.push_back(Stream {
                labels,
                lines,
                bytes,
            });
        }
        self.evict(&mut archive, jiff::Timestamp::now());
    }

    /// Drops streams past their age, then the oldest until the bytes fit.
    fn evict(&self, archive: &mut Archive, now: jiff::Timestamp) {
        let oldest_kept = now.as_nanosecond() - self.limits.max_age.as_nanos() as i128;
        let before = archive.streams.len();
        archive.streams.retain(|s| s.newest() >= oldest_kept);
        if archive.streams.len() != before {
            archive.bytes = archive.streams.iter().map(|s| s.bytes).sum();
        }
        while archive.bytes > self.limits.max_bytes {
            let Some(oldest) = archive.streams.pop_front() else {
                break;
            };
            archive.bytes -= oldest.bytes;
        }
    }

    /// HTTP requests the API has received.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Streams and bytes held now, for bounds tests.
    pub fn retained(&self) -> (usize, usize) {
        let archive = self.lock();
        (archive.streams.len(), archive.bytes)
    }

    /// The API under `/loki`: `/api/v1/query_range`, `/api/v1/labels`, `/api/v1/label/{name}/values`,
    /// `/api/v1/series`.
    pub fn router(&self) -> Router {
        Route::ALL
            .into_iter()
            .fold(Router::new(), |router, route| {
                router.route(route.path(), route.handler())
            })
            .layer(axum::middleware::from_fn_with_state(
                self.requests.clone(),
                count_request,
            ))
            .with_state(self.clone())
    }

    /// The streams matching `selector` with a line in `[start, end)`, their lines in that range.
    fn select(&self, selector: &Selector, start: i128, end: i128) -> Vec<Selected> {
        let mut archive = self.lock();
        self.evict(&mut archive, jiff::Timestamp::now());
        archive
            .streams
            .iter()
            .filter(|s| selector.matches(&s.labels))
            .filter_map(|s| {
                let lines: Vec<(i128, String)> = s
                    .lines
                    .iter()
                    .filter(|(at, _)| *at >= start && *at < end)
                    .cloned()
                    .collect();
                (!lines.is_empty()).then(|| (s.labels.clone(), lines))
            })
            .collect()
    }
}

async fn count_request(
    State(requests): State<Arc<AtomicU64>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    requests.fetch_add(1, Ordering::Relaxed);
    next.run(request).await
}

/// A 4xx as Loki writes it: plain text.
type Refusal = (StatusCode, String);

fn refuse(status: StatusCode, message: impl Into<String>) -> Refusal {
    (status, message.into())
}

fn success(data: Value) -> Response {
    axum::Json(json!({"status": "success", "data": data})).into_response()
}

/// The tenant a request names, or Loki's refusal.
fn tenant(headers: &HeaderMap) -> Result<bool, Refusal> {
    match headers.get(TENANT_HEADER).and_then(|v| v.to_str().ok()) {
        Some(tenant) if !tenant.is_empty() => Ok(tenant == TENANT),
        _ => Err(refuse(StatusCode::UNAUTHORIZED, "no org id")),
    }
}

/// A query string's pairs, decoded; repeated keys (`match[]`) keep every value.
fn pairs(query: Option<&str>) -> Result<Vec<(String, String)>, Refusal> {
    serde_urlencoded::from_str(query.unwrap_or_default())
        .map_err(|_| refuse(StatusCode::BAD_REQUEST, "invalid query string"))
}

fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `start` and `end` as Loki reads them: nanoseconds (or whole seconds, up to ten digits), fractional
/// seconds, or RFC3339. Defaults: the last hour up to now.
fn time_range(pairs: &[(String, String)]) -> Result<(i128, i128), Refusal> {
    let now = jiff::Timestamp::now().as_nanosecond();
    let end = match param(pairs, "end") {
        Some(text) => parse_time(text).ok_or_else(|| {
            refuse(
                StatusCode::BAD_REQUEST,
                format!("invalid end parameter: cannot parse \"{text}\" to a valid timestamp"),
            )
        })?,
        None => now,
    };
    let start = match param(pairs, "start") {
        Some(text) => parse_time(text).ok_or_else(|| {
            refuse(
                StatusCode::BAD_REQUEST,
                format!("invalid start parameter: cannot parse \"{text}\" to a valid timestamp"),
            )
        })?,
        None => end - 3_600 * 1_000_000_000,
    };
    if end < start {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "end timestamp must not be before or equal to start time",
        ));
    }
    Ok((start, end))
}

/// One timestamp as Loki accepts it, in nanoseconds since the epoch.
pub fn parse_time(text: &str) -> Option<i128> {
    if let Ok(whole) = text.parse::<i128>() {
        // Loki reads a short integer as seconds, a long one as nanoseconds.
        return Some(if text.trim_start_matches('-').len() <= 10 {
            whole * 1_000_000_000
        } else {
            whole
        });
    }
    if let Ok(seconds) = text.parse::<f64>()
        && seconds.is_finite()
    {
        return Some((seconds * 1e9) as i128);
    }
    text.parse::<jiff::Timestamp>()
        .ok()
        .map(jiff::Timestamp::as_nanosecond)
}

async fn query_range(
    State(store): State<LogStore>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, Refusal> {
    let started = Instant::now();
    let ours = tenant(&headers)?;
    let pairs = pairs(query.as_deref())?;
    let Some(logql) = param(&pairs, "query") else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "query parameter is required",
        ));
    };
    let selector = Selector::parse(logql).map_err(|m| refuse(StatusCode::BAD_REQUEST, m))?;
    let (start, end) = time_range(&pairs)?;
    let limit = match param(&pairs, "limit") {
        None => DEFAULT_LIMIT,
        Some(text) => match text.parse::<usize>() {
            Ok(0) | Err(_) => {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    format!("invalid limit parameter: \"{text}\" is not a positive number"),
                ));
            }
            Ok(limit) if limit > MAX_LIMIT => {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "max entries limit per query exceeded, limit > max_entries_limit_per_query ({limit} > {MAX_LIMIT})"
                    ),
                ));
            }
            Ok(limit) => limit,
        },
    };
    let backward = match param(&pairs, "direction").unwrap_or("backward") {
        "backward" | "BACKWARD" => true,
        "forward" | "FORWARD" => false,
        other => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                format!("invalid direction \"{other}\": must be forward or backward"),
            ));
        }
    };
    let streams = if ours {
        store.select(&selector, start, end)
    } else {
        Vec::new()
    };
    // The limit counts lines across every stream: the newest (backward) or oldest (forward) win.
    let mut all: Vec<(i128, usize, usize)> = streams
        .iter()
        .enumerate()
        .flat_map(|(s, (_, lines))| {
            lines
                .iter()
                .enumerate()
                .map(move |(l, (at, _))| (*at, s, l))
        })
        .collect();
    let processed_lines = all.len();
    let processed_bytes: usize = streams
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(|(_, line)| line.len()))
        .sum();
    all.sort();
    if backward {
        all.reverse();
    }
    all.truncate(limit);
    let mut chosen: BTreeMap<usize, Vec<(i128, usize)>> = BTreeMap::new();
    for (at, s, l) in all {
        chosen.entry(s).or_default().push((at, l));
    }
    let result: Vec<Value> = chosen
        .into_iter()
        .map(|(s, entries)| {
            let (labels, lines) = &streams[s];
            let values: Vec<Value> = entries
                .into_iter()
                .map(|(at, l)| json!([at.to_string(), lines[l].1]))
                .collect();
            json!({"stream": labels, "values": values})
        })
        .collect();
    let stats = json!({"summary": summary(processed_lines, processed_bytes, started.elapsed())});
    Ok(success(
        json!({"resultType": "streams", "result": result, "stats": stats}),
    ))
}

/// The `summary` section of Loki's query statistics, counted over the lines the selector matched: clients
/// (and Grafana's query inspector) read `totalLinesProcessed` and `execTime` from it.
fn summary(lines: usize, bytes: usize, took: Duration) -> Value {
    let seconds = took.as_secs_f64();
    let per_second = |count: usize| {
        if seconds > 0.0 {
            (count as f64 / seconds).round() as u64
        } else {
            0
        }
    };
    json!({
        "bytesProcessedPerSecond": per_second(bytes),
        "linesProcessedPerSecond": per_second(lines),
        "totalBytesProcessed": bytes,
        "totalLinesProcessed": lines,
        "execTime": seconds,
        "queueTime": 0.0,
    })
}

async fn labels(
    State(store): State<LogStore>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, Refusal> {
    label_names_or_values(store, headers, query, None).await
}

async fn label_values(
    State(store): State<LogStore>,
    Path(name): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, Refusal> {
    label_names_or_values(store, headers, query, Some(name)).await
}

/// `labels` (no `name`) or `label/<name>/values`, optionally narrowed by a `query` selector.
async fn label_names_or_values(
    store: LogStore,
    headers: HeaderMap,
    query: Option<String>,
    name: Option<String>,
) -> Result<Response, Refusal> {
    let ours = tenant(&headers)?;
    let pairs = pairs(query.as_deref())?;
    let selector = match param(&pairs, "query") {
        None => Selector::default(),
        Some(logql) => Selector::parse(logql).map_err(|m| refuse(StatusCode::BAD_REQUEST, m))?,
    };
    let (start, end) = time_range(&pairs)?;
    let streams = if ours {
        store.select(&selector, start, end)
    } else {
        Vec::new()
    };
    let found: BTreeSet<&String> = streams
        .iter()
        .flat_map(|(labels, _)| match &name {
            None => labels.keys().collect::<Vec<_>>(),
            Some(name) => labels.get(name).into_iter().collect(),
        })
        .collect();
    Ok(success(json!(found)))
}

async fn series(
    State(store): State<LogStore>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: axum::body::Bytes,
) -> Result<Response, Refusal> {
    let ours = tenant(&headers)?;
    // A POST carries the same parameters form-encoded in its body.
    let text = match query {
        Some(query) if body.is_empty() => query,
        _ => String::from_utf8_lossy(&body).into_owned(),
    };
    let pairs = pairs(Some(&text))?;
    let mut selectors = Vec::new();
    for (key, value) in &pairs {
        if key == "match[]" || key == "match" {
            selectors.push(Selector::parse(value).map_err(|m| refuse(StatusCode::BAD_REQUEST, m))?)
        }
    }
    if selectors.is_empty() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "at least one match[] argument is required",
        ));
    }
    let (start, end) = time_range(&pairs)?;
    let mut found = BTreeSet::new();
    if ours {
        for selector in &selectors {
            found.extend(
                store
                    .select(selector, start, end)
                    .into_iter()
                    .map(|(l, _)| l),
            );
        }
    }
    Ok(success(json!(found)))
}

/// A LogQL stream selector of equality matchers only: `{name="value", …}`. Tower builds nothing else, so
/// the sandbox parses nothing else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// `(label, value)` pairs every matching stream has.
    pub matchers: Vec<(String, String)>,
}

impl Selector {
    /// Parses `text`, or says why not as Loki's parse errors do.
    pub fn parse(text: &str) -> Result<Self, String> {
        let fail = |at: usize, what: &str| format!("parse error at line 1, col {}: {what}", at + 1);
        let bytes = text.as_bytes();
        let mut i = 0;
        let skip_space = |i: &mut usize| {
            while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
                *i += 1;
            }
        };
        skip_space(&mut i);
        if bytes.get(i) != Some(&b'{') {
            return Err(fail(i, "syntax error: a stream selector starts with {"));
        }
        i += 1;
        let mut matchers = Vec::new();
        loop {
            skip_space(&mut i);
            if bytes.get(i) == Some(&b'}') && matchers.is_empty() {
                break;
            }
            let name_start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let name = &text[name_start..i];
            if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
                return Err(fail(
                    name_start,
                    "syntax error: unexpected character, expecting a label name",
                ));
            }
            skip_space(&mut i);
            match (bytes.get(i), bytes.get(i + 1)) {
                (Some(b'='), Some(b'~')) | (Some(b'!'), _) => {
                    return Err(fail(i, "only equality matchers (=) are supported here"));
                }
                (Some(b'='), _) => i += 1,
                _ => return Err(fail(i, "syntax error: expecting =")),
            }
            skip_space(&mut i);
            if bytes.get(i) != Some(&b'"') {
                return Err(fail(i, "syntax error: expecting a quoted string"));
            }
            i += 1;
            let mut value = String::new();
            loop {
                let Some(c) = text[i..].chars().next() else {
                    return Err(fail(i, "syntax error: unterminated string"));
                };
                i += c.len_utf8();
                match c {
                    '"' => break,
                    '\\' => {
                        let Some(escaped) = text[i..].chars().next() else {
                            return Err(fail(i, "syntax error: unterminated string"));
                        };
                        i += escaped.len_utf8();
                        value.push(match escaped {
                            '"' => '"',
                            '\\' => '\\',
                            'n' => '\n',
                            't' => '\t',
                            _ => return Err(fail(i, "syntax error: invalid escape")),
                        });
                    }
                    c => value.push(c),
                }
            }
            matchers.push((name.to_owned(), value));
            skip_space(&mut i);
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => break,
                _ => return Err(fail(i, "syntax error: expecting , or }")),
            }
        }
        i += 1;
        skip_space(&mut i);
        if i < bytes.len() {
            return Err(fail(
                i,
                "only a stream selector is supported here: no pipeline or metric query",
            ));
        }
        if !matchers.iter().any(|(_, v)| !v.is_empty()) {
            return Err(
                "parse error : queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~\".*\" does not meet this requirement, but app=~\".+\" will"
                    .into(),
            );
        }
        Ok(Self { matchers })
    }

    /// Whether a stream's labels satisfy every matcher (an empty value matches an absent label).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matchers
            .iter()
            .all(|(name, value)| labels.get(name).map_or("", String::as_str) == value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_of_equality_matchers_parse_and_nothing_else_does() {
        let selector =
            Selector::parse(r#" { namespace="payments", pod="payments-1",container="a\"b" } "#);
        assert_eq!(
            selector.map(|s| s.matchers),
            Ok(vec![
                ("namespace".into(), "payments".into()),
                ("pod".into(), "payments-1".into()),
                ("container".into(), "a\"b".into()),
            ])
        );
        for bad in [
            r#"{pod=~".+"}"#,
            r#"{pod!="x"}"#,
            r#"{pod="x"} |= "error""#,
            r#"rate({pod="x"}[1m])"#,
            r#"{pod="x""#,
            r#"{pod="x"}}"#,
            r#"{}"#,
            r#"{pod=""}"#,
            r#"{1pod="x"}"#,
            r#"pod="x""#,
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_parse_as_loki_reads_them() {
        assert_eq!(parse_time("1700000000"), Some(1_700_000_000_000_000_000));
        assert_eq!(
            parse_time("1700000000123456789"),
            Some(1_700_000_000_123_456_789)
        );
        assert_eq!(parse_time("1700000000.5"), Some(1_700_000_000_500_000_000));
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z"),
            Some(1_700_000_000_000_000_000)
        );
        assert_eq!(parse_time("yesterday"), None);
    }
}
