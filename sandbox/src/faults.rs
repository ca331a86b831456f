//! A fault-injecting HTTP reverse proxy that sits in front of any upstream the sandbox plays (a cluster's
//! API, Argo CD, the forge, Prometheus, Loki): tests point Tower at [`FaultProxy::url`] instead of the
//! upstream and switch [`Fault`]s at run time, and read back what reached the proxy and when, to check that
//! Tower's retries keep the pace the upstream asked for.
//!
//! One piece of code for every upstream: requests are forwarded verbatim (method, path, query, headers,
//! body) and answers streamed back as they come, so watches and server-sent events pass through live. The
//! faults' bodies take the shape of the upstream the request's path names (a Kubernetes `Status`, GitHub's
//! `message`/`documentation_url`, Prometheus' `status: error`, Argo CD's gRPC-gateway error, Loki's text).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio_stream::wrappers::WatchStream;

/// What the proxy does to the requests it receives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fault {
    /// Pass everything through, streaming bodies (watches, server-sent events) as they come.
    #[default]
    None,
    /// Close every connection as soon as it is accepted, and cut the open ones: the upstream is gone.
    Down,
    /// Answer after this delay (then as the upstream answers).
    Slow(Duration),
    /// `500` with a body in the upstream's own error shape.
    ServerError,
    /// Declare the whole body's `Content-Length` and close after half of it; a stream is cut midway through
    /// its first chunk.
    Truncated,
    /// Watch requests (`watch=true`, or a path with `/stream`) answer `410 Gone` with a Kubernetes `Status`
    /// body (`reason: Expired`); everything else passes.
    Gone,
    /// Watch requests answer as a real API server answers a watch from a compacted `resourceVersion`: `200`,
    /// one `ERROR` event carrying the `410 Expired` Status, and the end of the stream (the watch cache hands
    /// out an "error watcher" rather than failing the request). Everything else passes.
    GoneInStream,
    /// GitHub's rate limit: `status` (403 for the primary limit, 429 for a secondary one) with
    /// `x-ratelimit-limit`, `x-ratelimit-remaining: 0`, `x-ratelimit-reset`, `retry-after` and GitHub's error
    /// body.
    RateLimited {
        /// 403 or 429.
        status: u16,
        /// What `retry-after` says, and how far ahead `x-ratelimit-reset` is.
        retry_after_secs: u64,
    },
}

/// One request the proxy received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// When it arrived.
    pub at: Instant,
    /// Its method; `REFUSED` for a connection closed unread while the proxy was [`Fault::Down`].
    pub method: String,
    /// Its path and query as sent (empty for a refused connection).
    pub path: String,
}

/// The method recorded for a connection closed unread while [`Fault::Down`].
pub const REFUSED: &str = "REFUSED";

/// What the proxy shares between its listener, its handler and the test holding it.
struct Shared {
    /// The fault now, with a generation that moves on every change (streams and connections compare it).
    fault: watch::Sender<(u64, Fault)>,
    /// When set, the fault applies only to requests whose `METHOD path?query` contains this; the rest pass.
    only: Mutex<Option<String>>,
    /// Every request received, oldest first.
    received: Mutex<Vec<Received>>,
    /// Where requests go: the upstream's scheme, host and port.
    origin: String,
    /// The client forwarding them.
    http: reqwest::Client,
}

impl Shared {
    fn record(&self, method: &str, path: &str) {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Received {
                at: Instant::now(),
                method: method.to_string(),
                path: path.to_string(),
            });
    }

    fn fault(&self) -> (u64, Fault) {
        self.fault.borrow().clone()
    }

    /// The fault for `request` (`METHOD path?query`): the fault now, unless it is aimed at other requests.
    fn fault_for(&self, request: &str) -> Fault {
        let aimed = self
            .only
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match aimed {
            Some(aimed) if !request.contains(&aimed) => Fault::None,
            _ => self.fault().1,
        }
    }

    /// Whether the whole upstream is down (not just some requests).
    fn all_down(&self) -> bool {
        self.fault().1 == Fault::Down
            && self
                .only
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
    }
}

/// A running fault proxy; dropping it stops it.
pub struct FaultProxy {
    addr: SocketAddr,
    base_path: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("url", &self.url())
            .field("upstream", &self.shared.origin)
            .field("fault", &self.shared.fault().1)
            .finish()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FaultProxy {
    /// Starts a proxy on `127.0.0.1:0` in front of `upstream_base_url` (which may carry a path, as the
    /// sandbox's cluster and Argo CD URLs do), passing everything through until told otherwise.
    pub async fn start(upstream_base_url: &str) -> anyhow::Result<Self> {
        let upstream = reqwest::Url::parse(upstream_base_url)
            .with_context(|| format!("upstream URL {upstream_base_url:?}"))?;
        let host = upstream
            .host_str()
            .with_context(|| format!("upstream URL {upstream_base_url:?} has no host"))?;
        let origin = match upstream.port() {
            Some(port) => format!("{}://{host}:{port}", upstream.scheme()),
            None => format!("{}://{host}", upstream.scheme()),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .context("building the proxy's client")?;
        let (fault, _) = watch::channel((0, Fault::None));
        let shared = Arc::new(Shared {
            fault,
            only: Mutex::default(),
            received: Mutex::default(),
            origin,
            http,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the fault proxy")?;
        let addr = listener.local_addr().context("the proxy's address")?;
        let router = axum::Router::new()
            .fallback(forward)
            .with_state(shared.clone());
        let listener = FaultyListener {
            listener,
            shared: shared.clone(),
        };
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::warn!(%error, "the fault proxy stopped");
            }
        });
        Ok(Self {
            addr,
            base_path: upstream.path().trim_end_matches('/').to_string(),
            shared,
            server,
        })
    }

    /// The URL to configure in place of the upstream's: the proxy's address with the upstream's path.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.base_path)
    }

    /// Switches to `fault` from now on. Open streams (watches, server-sent events) end, so their clients
    /// come back and meet the new fault; [`Fault::Down`] also cuts every open connection.
    pub fn set(&self, fault: Fault) {
        self.switch(None, fault);
    }

    /// As [`FaultProxy::set`], for the requests whose `METHOD path?query` contains `request` only (say
    /// `POST /github/repos/acme/app/pulls`); the rest pass through.
    pub fn set_for(&self, request: &str, fault: Fault) {
        self.switch(Some(request.to_string()), fault);
    }

    fn switch(&self, only: Option<String>, fault: Fault) {
        *self
            .shared
            .only
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = only;
        self.shared.fault.send_modify(|(generation, now)| {
            *generation += 1;
            *now = fault;
        });
    }

    /// The fault now.
    pub fn fault(&self) -> Fault {
        self.shared.fault().1
    }

    /// Every request received so far, oldest first.
    pub fn received(&self) -> Vec<Received> {
        self.shared
            .received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The requests received at or after `since`.
    pub fn received_since(&self, since: Instant) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.at >= since)
            .collect()
    }
}

/// Whether a request is a watch or an event stream: what [`Fault::Gone`] answers and what a fault change
/// ends.
fn is_stream(path: &str, query: &str) -> bool {
    path.contains("/stream")
        || query
            .split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
}

/// Which upstream's error shape a request's path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Kubernetes,
    ArgoCd,
    Github,
    Prometheus,
    Loki,
}

fn flavor(path: &str) -> Flavor {
    if path.contains("/loki/api/") {
        Flavor::Loki
    } else if path.contains("/api/v1/query")
        || path.contains("/api/v1/series")
        || path.contains("/api/v1/label")
    {
        Flavor::Prometheus
    } else if path.contains("/api/v1/applications")
        || path.contains("/api/v1/stream/")
        || path.contains("/api/v1/session")
    {
        Flavor::ArgoCd
    } else if path.contains("/api/")
        || path.contains("/apis")
        || path.ends_with("/version")
        || path.ends_with("/readyz")
    {
        Flavor::Kubernetes
    } else {
        Flavor::Github
    }
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn kubernetes_status(code: u16, reason: &str, message: &str) -> serde_json::Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

/// A `500` as the upstream `path` belongs to answers one.
fn server_error(path: &str) -> Response {
    let status = StatusCode::INTERNAL_SERVER_ERROR;
    match flavor(path) {
        Flavor::Kubernetes => json_response(
            status,
            &kubernetes_status(
                500,
                "InternalError",
                "Internal error occurred: etcdserver: request timed out",
            ),
        ),
        Flavor::ArgoCd => json_response(
            status,
            &json!({"error": "internal error", "code": 13, "message": "internal error"}),
        ),
        Flavor::Github => json_response(
            status,
            &json!({"message": "Server Error", "documentation_url": "https://docs.github.com/rest"}),
        ),
        Flavor::Prometheus => json_response(
            status,
            &json!({"status": "error", "errorType": "internal", "error": "store gateway unavailable"}),
        ),
        Flavor::Loki => (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "rpc error: code = Unavailable desc = no healthy ingesters\n",
        )
            .into_response(),
    }
}

/// `410 Gone` with the Status a Kubernetes API server sends for a compacted `resourceVersion`.
fn gone() -> Response {
    json_response(
        StatusCode::GONE,
        &kubernetes_status(410, "Expired", "too old resource version: 1 (4242)"),
    )
}

/// A watch answered with one `ERROR` event carrying the `410 Expired` Status, then ended.
fn gone_in_stream() -> Response {
    let event = json!({
        "type": "ERROR",
        "object": kubernetes_status(410, "Expired", "too old resource version: 1 (4242)"),
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        format!("{event}\n"),
    )
        .into_response()
}

/// GitHub's rate-limit answer: `status` with its headers and error body.
fn rate_limited(status: u16, retry_after_secs: u64) -> Response {
    let reset = jiff::Timestamp::now().as_second()
        + i64::try_from(retry_after_secs).unwrap_or(i64::MAX / 2);
    let (code, message, documentation_url) = if status == 429 {
        (
            StatusCode::TOO_MANY_REQUESTS,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        )
    } else {
        (
            StatusCode::FORBIDDEN,
            "API rate limit exceeded for installation ID 1.",
            "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit",
        )
    };
    let mut response = json_response(
        code,
        &json!({"message": message, "documentation_url": documentation_url}),
    );
    let headers = response.headers_mut();
    for (name, value) in [
        ("x-ratelimit-limit", "5000".to_string()),
        ("x-ratelimit-remaining", "0".to_string()),
        ("x-ratelimit-used", "5000".to_string()),
        ("x-ratelimit-resource", "core".to_string()),
        ("x-ratelimit-reset", reset.to_string()),
        ("retry-after", retry_after_secs.to_string()),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    response
}

/// Headers that belong to one hop, not to the request or answer forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    [
        header::CONNECTION,
        header::HOST,
        header::TRANSFER_ENCODING,
        header::CONTENT_LENGTH,
        header::UPGRADE,
        header::TE,
        header::TRAILER,
        header::PROXY_AUTHORIZATION,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
}

fn forwarded_headers(headers: &HeaderMap) -> HeaderMap {
    headers
        .iter()
        .filter(|(name, _)| !hop_by_hop(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// The one handler: applies the fault now, or forwards.
async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path_and_query = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| request.uri().path().to_string());
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or_default().to_string();
    shared.record(request.method().as_str(), &path_and_query);
    let streaming = is_stream(&path, &query);
    let request_line = format!("{} {path_and_query}", request.method());
    let fault = shared.fault_for(&request_line);
    match &fault {
        // A connection accepted just before the switch: cut it as the listener would have.
        Fault::Down => return cut_response(),
        Fault::Slow(delay) => tokio::time::sleep(*delay).await,
        Fault::ServerError => return server_error(&path),
        Fault::Gone if streaming => return gone(),
        Fault::GoneInStream if streaming => return gone_in_stream(),
        Fault::RateLimited {
            status,
            retry_after_secs,
        } => return rate_limited(*status, *retry_after_secs),
        Fault::None | Fault::Truncated | Fault::Gone | Fault::GoneInStream => {}
    }

    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
        Ok(body) => body,
        Err(_) => return cut_response(),
    };
    let upstream = shared
        .http
        .request(parts.method, format!("{}{path_and_query}", shared.origin))
        .headers(forwarded_headers(&parts.headers))
        .body(body)
        .send()
        .await;
    let upstream = match upstream {
        Ok(upstream) => upstream,
        // The upstream itself is gone: say so as a gateway would.
        Err(_) => return StatusCode::BAD_GATEWAY.into_response(),
    };
    let status = upstream.status();
    let mut headers = forwarded_headers(upstream.headers());

    if fault == Fault::Truncated {
        if streaming {
            // Half of the first chunk (or nothing, if none comes soon), then the connection is cut.
            let mut chunks = upstream.bytes_stream();
            let first = tokio::time::timeout(Duration::from_secs(1), chunks.next())
                .await
                .ok()
                .flatten()
                .and_then(Result::ok)
                .unwrap_or_default();
            return truncated(status, headers, first, None);
        }
        let Ok(whole) = upstream.bytes().await else {
            return cut_response();
        };
        return truncated(status, headers, whole.clone(), Some(whole.len()));
    }

    if let Some(length) = upstream.content_length()
        && !streaming
    {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    let mut changes = WatchStream::from_changes(shared.fault.subscribe());
    let mut chunks = upstream.bytes_stream();
    let body = async_stream::stream! {
        loop {
            tokio::select! {
                chunk = chunks.next() => match chunk {
                    Some(Ok(chunk)) => yield Ok::<Bytes, std::io::Error>(chunk),
                    Some(Err(error)) => {
                        yield Err(std::io::Error::other(error));
                        break;
                    }
                    None => break,
                },
                // A stream ends when the fault changes, so its client comes back to the new one; a
                // plain answer is finished whatever happens meanwhile, unless the upstream goes down.
                Some(_) = changes.next() => {
                    if shared.fault_for(&request_line) == Fault::Down {
                        yield Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the upstream went down"));
                        break;
                    }
                    if streaming {
                        break;
                    }
                }
            }
        }
    };
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// An answer whose body fails at once: hyper closes the connection without finishing it.
fn cut_response() -> Response {
    let body = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "cut by the fault proxy",
        ))
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}

/// `status` with `headers`, declaring `declared` bytes (when given) but sending only half of `body`, then
/// cutting the connection.
fn truncated(
    status: StatusCode,
    mut headers: HeaderMap,
    body: Bytes,
    declared: Option<usize>,
) -> Response {
    if let Some(declared) = declared {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(declared));
    }
    let half = body.slice(..body.len() / 2);
    let chunks = async_stream::stream! {
        yield Ok(half);
        // Long enough for the head and the half to be flushed: hyper drops the connection at the error,
        // and an error before the flush would look like a refused request rather than a cut body.
        tokio::time::sleep(Duration::from_millis(100)).await;
        yield Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "truncated by the fault proxy",
        ));
    };
    let mut response = Response::new(Body::from_stream(chunks));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The proxy's listener: while [`Fault::Down`] it closes each connection as it accepts it, and every
/// connection it hands out fails once the proxy goes down.
struct FaultyListener {
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
}

impl axum::serve::Listener for FaultyListener {
    type Io = Cuttable;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(_) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if self.shared.all_down() {
                self.shared.record(REFUSED, "");
                drop(stream);
                continue;
            }
            return (
                Cuttable {
                    shared: self.shared.clone(),
                    stream,
                    changes: WatchStream::new(self.shared.fault.subscribe()),
                    cut: false,
                },
                addr,
            );
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

/// A connection that fails every read and write once the proxy goes [`Fault::Down`].
struct Cuttable {
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    changes: WatchStream<(u64, Fault)>,
    cut: bool,
}

impl Cuttable {
    /// Whether the proxy has gone down since this connection was accepted (registering for the next change).
    fn is_cut(&mut self, cx: &mut Context<'_>) -> bool {
        while !self.cut {
            match self.changes.poll_next_unpin(cx) {
                Poll::Ready(Some((_, Fault::Down))) if self.shared.all_down() => self.cut = true,
                Poll::Ready(None) => self.cut = true,
                Poll::Ready(Some(_)) => {}
                Poll::Pending => break,
            }
        }
        self.cut
    }
}

fn reset() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "the fault proxy went down",
    )
}

impl AsyncRead for Cuttable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.is_cut(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Cuttable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.is_cut(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.is_cut(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// An upstream answering `/big` with a kilobyte, `/things?watch=true` with a stream of two lines that
    /// stays open, and anything else with `ok`.
    async fn upstream() -> (String, tokio::task::JoinHandle<()>) {
        let router = axum::Router::new()
            .route(
                "/base/big",
                axum::routing::get(|| async { "x".repeat(1024) }),
            )
            .route(
                "/base/things",
                axum::routing::get(|| async {
                    let lines = futures::stream::iter([
                        Ok::<_, std::io::Error>(Bytes::from("{\"type\":\"ADDED\"}\n")),
                        Ok(Bytes::from("{\"type\":\"MODIFIED\"}\n")),
                    ])
                    .chain(futures::stream::pending());
                    Body::from_stream(lines)
                }),
            )
            .fallback(|| async { "ok" });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/base", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        (url, server)
    }

    #[tokio::test]
    async fn each_fault_answers_as_documented_and_none_passes_streams_through() {
        let (url, _server) = upstream().await;
        let proxy = FaultProxy::start(&url).await.unwrap();
        assert!(proxy.url().ends_with("/base"));
        let client = reqwest::Client::new();
        let get = |path: &str| client.get(format!("{}{path}", proxy.url())).send();

        let passed = get("/plain").await.unwrap();
        assert_eq!(passed.text().await.unwrap(), "ok");
        // A watch streams through before it ends.
        let mut watch = get("/things?watch=true").await.unwrap().bytes_stream();
        let first = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(first.starts_with(b"{\"type\":\"ADDED\"}"));

        proxy.set(Fault::Gone);
        // The open watch ends, so its client comes back to the new fault.
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(_)) = watch.next().await {}
        })
        .await;
        assert!(ended.is_ok(), "the open watch ends on a fault change");
        let gone = get("/things?watch=true").await.unwrap();
        assert_eq!(gone.status(), 410);
        let status: serde_json::Value = gone.json().await.unwrap();
        assert_eq!(
            (status["kind"].as_str(), status["code"].as_u64()),
            (Some("Status"), Some(410))
        );
        assert_eq!(get("/plain").await.unwrap().status(), 200, "lists pass");

        proxy.set(Fault::GoneInStream);
        let event = get("/things?watch=1").await.unwrap();
        assert_eq!(event.status(), 200);
        let event: serde_json::Value =
            serde_json::from_str(event.text().await.unwrap().trim()).unwrap();
        assert_eq!(
            (event["type"].as_str(), event["object"]["code"].as_u64()),
            (Some("ERROR"), Some(410))
        );

        proxy.set(Fault::ServerError);
        let failed = get("/api/v1/pods").await.unwrap();
        assert_eq!(failed.status(), 500);
        assert_eq!(
            failed.json::<serde_json::Value>().await.unwrap()["reason"],
            "InternalError"
        );

        proxy.set(Fault::RateLimited {
            status: 429,
            retry_after_secs: 7,
        });
        let limited = get("/repos/acme/app").await.unwrap();
        assert_eq!(limited.status(), 429);
        let headers = limited.headers().clone();
        assert_eq!(headers["retry-after"], "7");
        assert_eq!(headers["x-ratelimit-remaining"], "0");
        assert_eq!(headers["x-ratelimit-limit"], "5000");
        let reset: i64 = headers["x-ratelimit-reset"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(reset >= jiff::Timestamp::now().as_second() + 5);
        let body: serde_json::Value = limited.json().await.unwrap();
        assert!(body["message"].is_string() && body["documentation_url"].is_string());

        proxy.set(Fault::Truncated);
        let cut = get("/big").await.unwrap();
        assert_eq!(cut.content_length(), Some(1024));
        assert!(cut.bytes().await.is_err(), "the body is cut short");

        proxy.set_for("GET /base/big", Fault::ServerError);
        assert_eq!(
            get("/big").await.unwrap().status(),
            500,
            "the aimed request fails"
        );
        assert_eq!(
            get("/plain").await.unwrap().status(),
            200,
            "the others pass"
        );

        proxy.set(Fault::Slow(Duration::from_millis(300)));
        let asked = Instant::now();
        assert_eq!(get("/plain").await.unwrap().status(), 200);
        assert!(asked.elapsed() >= Duration::from_millis(300));

        proxy.set(Fault::Down);
        assert!(get("/plain").await.is_err(), "connections are closed");
        proxy.set(Fault::None);
        assert_eq!(get("/plain").await.unwrap().status(), 200);

        let received = proxy.received();
        assert!(
            received
                .iter()
                .any(|r| r.method == "GET" && r.path == "/base/things?watch=1")
        );
        assert!(received.windows(2).all(|pair| pair[0].at <= pair[1].at));
    }
}
