//! `cargo xtask bench load`: many live viewers under API load, over loopback and bounded in time. `tower
//! sandbox --scale N` and `tower serve --config` run as separate release processes (so Tower's RSS and CPU
//! are its own); then:
//!
//! - `--clients` event-stream clients (`GET /api/v1/events`) connect and read their snapshot, and
//!   `--slow-clients` more connect and never read a byte;
//! - fan-out alone: a few watch changes (`POST /sandbox/applications/svc-NNNN-dev/out-of-sync` on the sandbox,
//!   one service each) timed from the request to every client seeing its card turn OutOfSync, with Tower's CPU
//!   over that window (the cost of the connected clients, per 100);
//! - then `--rate` GET requests a second for `--duration` s over five routes the pages call, while
//!   `--rounds` more watch changes are timed the same way;
//! - Tower's RSS before the clients, once they are connected and at the end, its CPU over the load, and
//!   whether it closed the clients that never read.
//!
//! The API load comes from threads in this process at a fixed rate (open loop) rather than from wrk: wrk keeps
//! each connection as busy as it can (closed loop), so it cannot hold 2,000 requests/s, and on a two-core
//! machine it would take the cores Tower needs for the fan-out being measured. Each request's time runs from
//! when it was due, not when it was sent, so a stall shows up in the percentiles instead of hiding as fewer
//! requests (no coordinated omission). Every client speaks plain HTTP/1.1 over `std::net`: xtask has no async
//! runtime, and one blocked thread per client is what 500 browsers look like to Tower anyway.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use super::{
    SANDBOX, Server, TOWER, curl, percentile, release_tower, rss_kib, separate_sandbox,
    separate_tower, wait_for_guest_session, wait_for_services,
};
use crate::util;

/// Options of the load benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// Event-stream clients that read everything.
    #[arg(long, default_value_t = 500)]
    pub clients: usize,
    /// Event-stream clients that never read (each should be dropped once its buffers are full).
    #[arg(long, default_value_t = 3)]
    pub slow_clients: usize,
    /// API requests a second, spread over the routes.
    #[arg(long, default_value_t = 2000)]
    pub rate: u32,
    /// Seconds the API load lasts.
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Keep-alive connections the API load is spread over.
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// Watch changes timed under load (one service's dev Application each).
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Watch changes timed before the API load starts (fan-out alone).
    #[arg(long, default_value_t = 5)]
    pub quiet_rounds: usize,
    /// Services the sandbox generates (at least one per round).
    #[arg(long, default_value_t = 100)]
    pub services: usize,
}

/// How long one watch change may take to reach every client before the round counts it as missed.
const ROUND_LIMIT: Duration = Duration::from_secs(10);
/// The pause before each watch change of the fan-out-alone part.
const QUIET_SPACING: Duration = Duration::from_secs(1);
/// How long one API request may take before it counts as an error.
const REQUEST_LIMIT: Duration = Duration::from_secs(5);
/// Reading clients kept connected while the never-reading ones' buffers are filled.
const FLOOD_READERS: usize = 10;
/// Event data sent to each client to fill a never-reading one's buffers: more than Linux's largest send
/// buffer (`tcp_wmem`'s 4 MiB) plus the receive window a socket that is never read keeps (128 KiB).
const FLOOD_BYTES: u64 = 6 * 1024 * 1024;
/// How long the filling may take before the bench gives up on it (and says how far it got).
const FLOOD_LIMIT: Duration = Duration::from_secs(120);
/// Tower's `server::serve::STALLED_WRITE_LIMIT` (30 s), plus a margin for its timer and the close.
const STALL_WAIT: Duration = Duration::from_secs(35);
/// `/proc/<pid>/stat` counts CPU time in these (USER_HZ, 100 on Linux).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Runs the benchmark and prints its table.
pub fn load(args: &LoadArgs) -> Result<()> {
    let wanted_services = args.rounds + args.quiet_rounds;
    if args.services < wanted_services {
        bail!(
            "--services {} is too few: every round changes a service of its own ({wanted_services})",
            args.services
        );
    }
    let binary = release_tower()?;
    let folder = util::repo_root().join("target/bench-load");
    let (_sandbox, config) = separate_sandbox(
        &binary,
        &folder,
        &[
            "--no-metrics",
            "--scale",
            &args.services.to_string(),
            "--scale-runs",
            &(args.services * 2).to_string(),
        ],
    )?;
    let tower = separate_tower(&binary, &config)?;
    let cookie = wait_for_guest_session(Duration::from_secs(300))?;
    wait_for_services(&cookie, args.services, Duration::from_secs(300))?;
    // Let the first picture's follow-up work (catalog reads, forge lookups) finish before measuring.
    std::thread::sleep(Duration::from_secs(3));
    let rss_idle = rss_kib(&tower);

    let watch = Arc::new(Watch::default());
    println!(
        "connecting {} event-stream clients and {} that never read…",
        args.clients, args.slow_clients
    );
    let clients = connect_clients(args.clients, &cookie, &watch)?;
    let slow = (0..args.slow_clients)
        .map(|_| open_event_stream(&cookie))
        .collect::<Result<Vec<_>>>()?;
    let snapshot_bytes = watch.received_bytes.load(Ordering::Relaxed) / args.clients.max(1) as u64;
    let rss_connected = rss_kib(&tower);

    let mut services = (1..=wanted_services).map(|n| format!("svc-{n:04}"));
    println!("fan-out alone: {} watch changes…", args.quiet_rounds);
    let cpu_before_quiet = cpu_seconds(&tower)?;
    let quiet_started = Instant::now();
    let quiet: Vec<Round> = services
        .by_ref()
        .take(args.quiet_rounds)
        .map(|service| {
            // Spaced out, so the CPU window is long enough for /proc's 10 ms ticks.
            std::thread::sleep(QUIET_SPACING);
            time_round(&watch, &service, args.clients)
        })
        .collect::<Result<_>>()?;
    let quiet_cpu =
        (cpu_seconds(&tower)? - cpu_before_quiet) / quiet_started.elapsed().as_secs_f64();

    println!(
        "{} requests/s for {} s with {} watch changes…",
        args.rate, args.duration, args.rounds
    );
    let cpu_before_load = cpu_seconds(&tower)?;
    let load_started = Instant::now();
    let generator = {
        let (cookie, rate, duration, connections) = (
            cookie.clone(),
            args.rate,
            Duration::from_secs(args.duration),
            args.connections,
        );
        let services = args.services;
        std::thread::spawn(move || api_load(&cookie, rate, duration, connections, services))
    };
    let spacing = Duration::from_secs(args.duration) / u32::try_from(args.rounds + 1).unwrap_or(1);
    let mut loaded = Vec::new();
    let mut rss_during = Vec::new();
    for service in services {
        std::thread::sleep(spacing.saturating_sub(Duration::from_millis(500)));
        loaded.push(time_round(&watch, &service, args.clients)?);
        rss_during.extend(rss_kib(&tower));
    }
    let routes = generator
        .join()
        .map_err(|_| anyhow::anyhow!("the API load generator panicked"))?;
    let load_seconds = load_started.elapsed().as_secs_f64();
    let load_cpu = (cpu_seconds(&tower)? - cpu_before_load) / load_seconds;
    let rss_end = rss_kib(&tower);
    let streams_counted = sse_clients_gauge();
    let disconnected = watch.disconnected.load(Ordering::Relaxed);
    let received_bytes = watch.received_bytes.load(Ordering::Relaxed) / args.clients.max(1) as u64;

    // The clients that never read: over the run, less was sent than a socket's buffers hold, so none of
    // Tower's writes to them stalled yet. Send more than that (to a few readers only, so the bench's own
    // threads do not take the cores), then wait out Tower's stalled-write limit.
    let kept = clients.len().min(FLOOD_READERS);
    for client in &clients[kept..] {
        let _ = client.shutdown(Shutdown::Both);
    }
    let flood = if args.slow_clients > 0 {
        println!(
            "sending each client over {} MiB of changes, to fill the buffers of those that never read…",
            FLOOD_BYTES / (1024 * 1024)
        );
        Some(flood_until_full(&watch, kept, args.services)?)
    } else {
        None
    };
    let stuck_round = time_round(&watch, "svc-0001", kept)?;
    if flood.is_some() {
        println!(
            "waiting {} s: Tower's stalled-write limit and a margin…",
            STALL_WAIT.as_secs()
        );
        std::thread::sleep(STALL_WAIT);
    }
    let streams_after_stall = sse_clients_gauge();
    let slow_outcome: Vec<SlowOutcome> = slow.into_iter().map(drain).collect();
    for client in &clients[..kept] {
        let _ = client.shutdown(Shutdown::Both);
    }

    print_report(&Report {
        args,
        routes,
        load_seconds,
        quiet,
        loaded,
        rss_idle,
        rss_connected,
        rss_end,
        rss_during,
        quiet_cpu,
        load_cpu,
        snapshot_bytes,
        received_bytes,
        streams_counted,
        slow: slow_outcome,
        disconnected,
        flood,
        stuck_round,
        kept_readers: kept,
        streams_after_stall,
    });
    Ok(())
}

/// What sending more than the never-reading clients' buffers hold took.
struct Flood {
    /// Watch changes made in the sandbox.
    changes: usize,
    /// Event data each reading client received meanwhile.
    bytes_per_reader: u64,
    /// How long it took.
    seconds: f64,
}

/// Makes services' Applications OutOfSync in turn (each change restamps `reconciledAt`, so every one is a
/// card update) until each of `readers` reading clients has received [`FLOOD_BYTES`] more, or
/// [`FLOOD_LIMIT`] passes.
fn flood_until_full(watch: &Watch, readers: usize, services: usize) -> Result<Flood> {
    let started = Instant::now();
    let before = watch.received_bytes.load(Ordering::Relaxed);
    let received = || {
        watch
            .received_bytes
            .load(Ordering::Relaxed)
            .saturating_sub(before)
            / readers.max(1) as u64
    };
    let mut changes = 0;
    while received() < FLOOD_BYTES && started.elapsed() < FLOOD_LIMIT {
        let service = changes % services + 1;
        let environment = if (changes / services).is_multiple_of(2) {
            "dev"
        } else {
            "prod"
        };
        let status = post(
            SANDBOX,
            &format!("/sandbox/applications/svc-{service:04}-{environment}/out-of-sync"),
        )?;
        if status != 200 {
            bail!(
                "the sandbox answered {status} to making svc-{service:04}-{environment} OutOfSync"
            );
        }
        changes += 1;
    }
    // The last changes' events are still on their way to the readers.
    std::thread::sleep(Duration::from_secs(1));
    Ok(Flood {
        changes,
        bytes_per_reader: received(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What the event-stream clients share: the change being looked for and when each client saw it.
#[derive(Default)]
struct Watch {
    /// The service whose card is expected to turn OutOfSync, with the round's number.
    target: RwLock<Option<(usize, String)>>,
    /// When each client saw the current round's change.
    seen: Mutex<Vec<(usize, Instant)>>,
    /// Clients that have their snapshot.
    ready: AtomicUsize,
    /// Clients whose stream ended or failed.
    disconnected: AtomicUsize,
    /// Bytes of event data every client has read, together.
    received_bytes: AtomicU64,
}

/// Connects `count` reading clients, each on a thread of its own, and waits until every one has its
/// snapshot; returns a handle on each connection (to close them at the end).
fn connect_clients(count: usize, cookie: &str, watch: &Arc<Watch>) -> Result<Vec<TcpStream>> {
    let mut handles = Vec::with_capacity(count);
    for _ in 0..count {
        let stream = open_event_stream(cookie)?;
        handles.push(stream.try_clone().context("cloning a client's socket")?);
        let watch = Arc::clone(watch);
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                // Any end is early: the bench reads this count before it closes the clients.
                let _ = read_events(stream, &watch);
                watch.disconnected.fetch_add(1, Ordering::Relaxed);
            })
            .context("starting a client thread")?;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while watch.ready.load(Ordering::Relaxed) < count {
        if Instant::now() > deadline {
            bail!(
                "only {} of {count} clients had their snapshot after 120 s",
                watch.ready.load(Ordering::Relaxed)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(handles)
}

/// `GET /api/v1/events` sent on a new connection, its answer not read yet.
fn open_event_stream(cookie: &str) -> Result<TcpStream> {
    let mut stream = TcpStream::connect(TOWER).context("connecting to Tower")?;
    write!(
        stream,
        "GET /api/v1/events HTTP/1.1\r\nHost: {TOWER}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .context("asking for the event stream")?;
    Ok(stream)
}

/// Reads one client's stream until it ends: counts its snapshot, and records when it sees the change the
/// current round looks for.
fn read_events(stream: TcpStream, watch: &Watch) -> Result<()> {
    let mut reader = BufReader::new(stream);
    let head = read_head(&mut reader)?;
    if head.status != 200 {
        bail!("the event stream answered {}", head.status);
    }
    let mut events = BufReader::new(Chunked::new(reader, head.chunked));
    let mut line = String::new();
    let mut snapshot = true;
    let mut last_seen = None;
    loop {
        line.clear();
        if events.read_line(&mut line).context("reading an event")? == 0 {
            return Ok(());
        }
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let received = Instant::now();
        watch
            .received_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        if snapshot {
            snapshot = false;
            watch.ready.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let Ok(target) = watch.target.read() else {
            continue;
        };
        if let Some((round, service)) = target.as_ref()
            && last_seen != Some(*round)
            && shows_out_of_sync(data, service)
        {
            last_seen = Some(*round);
            if let Ok(mut seen) = watch.seen.lock() {
                seen.push((*round, received));
            }
        }
    }
}

/// Whether an event's data is `service`'s dev card (or its summary) showing OutOfSync: the change a round
/// makes. Read as text: 500 clients parsing every event as JSON would take the cores Tower is measured on.
fn shows_out_of_sync(data: &str, service: &str) -> bool {
    let about_service = data.contains(&format!(
        "\"card\":{{\"service\":\"{service}\",\"environment\":\"dev\""
    )) || data.contains(&format!(
        "\"type\":\"service_upserted\",\"service\":{{\"name\":\"{service}\""
    ));
    about_service && data.contains("\"OutOfSync\"")
}

/// One timed watch change: from the request to the sandbox to each client seeing it.
struct Round {
    /// Each client's delay, for those that saw it within [`ROUND_LIMIT`].
    delays_ms: Vec<f64>,
    /// Clients that did not see it in time.
    missed: usize,
}

impl Round {
    /// The time until the last client saw it (the round limit when one never did).
    fn all_ms(&self) -> f64 {
        if self.missed > 0 {
            return ROUND_LIMIT.as_secs_f64() * 1000.0;
        }
        self.delays_ms.iter().copied().fold(0.0, f64::max)
    }
}

/// Makes `service`'s dev Application OutOfSync in the sandbox and waits until `clients` clients saw it.
fn time_round(watch: &Watch, service: &str, clients: usize) -> Result<Round> {
    let round = {
        let mut target = watch
            .target
            .write()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        let round = target.as_ref().map_or(0, |(round, _)| round + 1);
        *target = Some((round, service.to_string()));
        round
    };
    let started = Instant::now();
    let status = post(
        SANDBOX,
        &format!("/sandbox/applications/{service}-dev/out-of-sync"),
    )?;
    if status != 200 {
        bail!("the sandbox answered {status} to making {service}-dev OutOfSync");
    }
    let seen_by = || {
        watch
            .seen
            .lock()
            .map_or(0, |seen| seen.iter().filter(|(r, _)| *r == round).count())
    };
    while seen_by() < clients && started.elapsed() < ROUND_LIMIT {
        std::thread::sleep(Duration::from_millis(5));
    }
    let delays_ms: Vec<f64> = watch
        .seen
        .lock()
        .map_err(|_| anyhow::anyhow!("a client thread panicked"))?
        .iter()
        .filter(|(r, _)| *r == round)
        .map(|(_, at)| at.saturating_duration_since(started).as_secs_f64() * 1000.0)
        .collect();
    let missed = clients.saturating_sub(delays_ms.len());
    Ok(Round { delays_ms, missed })
}

/// `POST path` (no body) on a new connection to `address`; the answer's status.
fn post(address: &str, path: &str) -> Result<u16> {
    let mut stream =
        TcpStream::connect(address).with_context(|| format!("connecting to {address}"))?;
    stream.set_read_timeout(Some(REQUEST_LIMIT))?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut reader = BufReader::new(stream);
    Ok(read_head(&mut reader)?.status)
}

/// The API routes the load spreads over, as the pages call them.
fn routes(services: usize) -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("GET /services", vec!["/api/v1/services".into()]),
        (
            "GET /services/{name}",
            (1..=services.min(50))
                .map(|n| format!("/api/v1/services/svc-{n:04}"))
                .collect(),
        ),
        ("GET /environments", vec!["/api/v1/environments".into()]),
        ("GET /activity", vec!["/api/v1/activity".into()]),
        ("GET /pipelines", vec!["/api/v1/pipelines".into()]),
    ]
}

/// What one route's requests measured.
#[derive(Default)]
struct RouteResult {
    times_ms: Vec<f64>,
    errors: usize,
}

/// `rate` requests a second for `duration`, round-robin over [`routes`], spread over `connections`
/// keep-alive connections each on its own thread. Request `i` is due at `i / rate` s; a connection that
/// falls behind sends at once, and the time counts from when the request was due.
fn api_load(
    cookie: &str,
    rate: u32,
    duration: Duration,
    connections: usize,
    services: usize,
) -> BTreeMap<&'static str, RouteResult> {
    let routes = Arc::new(routes(services));
    let total = (f64::from(rate) * duration.as_secs_f64()) as usize;
    let start = Instant::now() + Duration::from_millis(100);
    let connections = connections.max(1);
    let workers: Vec<_> = (0..connections)
        .map(|worker| {
            let (routes, cookie) = (Arc::clone(&routes), cookie.to_string());
            std::thread::spawn(move || {
                let mut results: BTreeMap<&'static str, RouteResult> = BTreeMap::new();
                let mut connection: Option<BufReader<TcpStream>> = None;
                for i in (worker..total).step_by(connections) {
                    let due = start + Duration::from_secs_f64(i as f64 / f64::from(rate));
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let (name, paths) = &routes[i % routes.len()];
                    let path = &paths[(i / routes.len()) % paths.len()];
                    let result = results.entry(name).or_default();
                    match get(&mut connection, path, &cookie) {
                        Ok(200) => result.times_ms.push(due.elapsed().as_secs_f64() * 1000.0),
                        Ok(_) | Err(_) => {
                            result.errors += 1;
                            connection = None;
                        }
                    }
                }
                results
            })
        })
        .collect();
    let mut merged: BTreeMap<&'static str, RouteResult> = BTreeMap::new();
    for worker in workers {
        let Ok(results) = worker.join() else { continue };
        for (name, result) in results {
            let entry = merged.entry(name).or_default();
            entry.times_ms.extend(result.times_ms);
            entry.errors += result.errors;
        }
    }
    merged
}

/// `GET path` on `connection` (opened when there is none), its body read and dropped; the status.
fn get(connection: &mut Option<BufReader<TcpStream>>, path: &str, cookie: &str) -> Result<u16> {
    if connection.is_none() {
        let stream = TcpStream::connect(TOWER).context("connecting to Tower")?;
        stream.set_read_timeout(Some(REQUEST_LIMIT))?;
        stream.set_nodelay(true)?;
        *connection = Some(BufReader::new(stream));
    }
    let reader = connection.as_mut().context("no connection")?;
    write!(
        reader.get_mut(),
        "GET {path} HTTP/1.1\r\nHost: {TOWER}\r\nCookie: {cookie}\r\nAccept-Encoding: gzip\r\n\r\n"
    )?;
    let head = read_head(reader)?;
    if head.chunked {
        std::io::copy(&mut Chunked::new(&mut *reader, true), &mut std::io::sink())?;
    } else {
        let length = head
            .content_length
            .context("an answer with neither length nor chunks")?;
        std::io::copy(&mut reader.by_ref().take(length), &mut std::io::sink())?;
    }
    if head.close {
        *connection = None;
    }
    Ok(head.status)
}

/// An HTTP/1.1 answer's status line and the headers that say how its body is framed.
struct Head {
    status: u16,
    content_length: Option<u64>,
    chunked: bool,
    close: bool,
}

fn read_head(reader: &mut impl BufRead) -> Result<Head> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        bail!("the connection closed before an answer");
    }
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("not an HTTP status line: {line:?}"))?;
    let mut head = Head {
        status,
        content_length: None,
        chunked: false,
        close: false,
    };
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            bail!("the connection closed inside an answer's headers");
        }
        let header = line.trim_end();
        if header.is_empty() {
            return Ok(head);
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => head.content_length = value.parse().ok(),
            "transfer-encoding" => head.chunked = value.eq_ignore_ascii_case("chunked"),
            "connection" => head.close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
}

/// A body read through HTTP/1.1 chunked framing (or as is, when the answer is not chunked).
struct Chunked<R> {
    inner: R,
    chunked: bool,
    /// Bytes left in the current chunk.
    left: u64,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    fn new(inner: R, chunked: bool) -> Self {
        Self {
            inner,
            chunked,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.chunked {
            return self.inner.read(buf);
        }
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut size = String::new();
            if self.inner.read_line(&mut size)? == 0 {
                return Ok(0);
            }
            let hex = size.trim().split(';').next().unwrap_or_default();
            self.left = u64::from_str_radix(hex, 16).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "a bad chunk size")
            })?;
            if self.left == 0 {
                // The last chunk, then the (empty) trailer.
                self.done = true;
                size.clear();
                self.inner.read_line(&mut size)?;
                return Ok(0);
            }
        }
        let wanted = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..wanted])?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= read as u64;
        if self.left == 0 {
            let mut crlf = String::new();
            self.inner.read_line(&mut crlf)?;
        }
        Ok(read)
    }
}

/// What became of a client that never read.
struct SlowOutcome {
    /// Bytes waiting for it at the end (in its socket's buffers).
    buffered: usize,
    /// Whether Tower had closed the connection.
    closed: bool,
}

/// Reads what a never-reading client has waiting, without blocking, to see whether Tower closed it.
fn drain(mut stream: TcpStream) -> SlowOutcome {
    let mut outcome = SlowOutcome {
        buffered: 0,
        closed: false,
    };
    if stream.set_nonblocking(true).is_err() {
        return outcome;
    }
    let mut buffer = vec![0; 64 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => {
                outcome.closed = true;
                break;
            }
            Ok(read) => outcome.buffered += read,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                outcome.closed = true;
                break;
            }
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    outcome
}

/// `tower_sse_clients` from Tower's `/metrics`: the event streams it holds open.
fn sse_clients_gauge() -> Option<f64> {
    curl(&[&format!("http://{TOWER}/metrics")])
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("tower_sse_clients "))
        .and_then(|value| value.trim().parse().ok())
}

/// A process's CPU time so far (user and system), in seconds.
fn cpu_seconds(process: &Server) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", process.0.id()))
        .context("reading Tower's /proc stat (has it exited?)")?;
    // After the command name in parentheses: utime is field 14 and stime 15 (1-based).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .context("a /proc stat without a command name")?
        .1
        .split_whitespace()
        .collect();
    let ticks = |index: usize| -> Result<f64> {
        fields
            .get(index)
            .and_then(|field| field.parse::<f64>().ok())
            .context("a /proc stat without CPU times")
    };
    Ok((ticks(11)? + ticks(12)?) / CLOCK_TICKS_PER_SECOND)
}

/// Everything the bench measured.
struct Report<'a> {
    args: &'a LoadArgs,
    routes: BTreeMap<&'static str, RouteResult>,
    load_seconds: f64,
    quiet: Vec<Round>,
    loaded: Vec<Round>,
    rss_idle: Option<u64>,
    rss_connected: Option<u64>,
    rss_end: Option<u64>,
    /// Tower's RSS after each round under load, in KiB.
    rss_during: Vec<u64>,
    /// Tower's CPU (cores) with the clients connected and only the watch changes to send.
    quiet_cpu: f64,
    /// Tower's CPU (cores) under the API load and the watch changes.
    load_cpu: f64,
    snapshot_bytes: u64,
    /// Event data a reading client received over the whole run, on average.
    received_bytes: u64,
    streams_counted: Option<f64>,
    slow: Vec<SlowOutcome>,
    disconnected: usize,
    /// Filling the never-reading clients' buffers, when there were any.
    flood: Option<Flood>,
    /// One watch change timed while the never-reading clients were stuck, to the kept readers.
    stuck_round: Round,
    kept_readers: usize,
    /// `tower_sse_clients` after the stalled-write limit had passed.
    streams_after_stall: Option<f64>,
}

fn print_report(report: &Report) {
    let args = report.args;
    println!(
        "\nAPI load: {} requests/s for {} s over {} connections (open loop; time from when each request was due):",
        args.rate, args.duration, args.connections
    );
    println!(
        "{:<22} {:>9} {:>7} {:>10} {:>10}",
        "route", "requests", "errors", "p50", "p99"
    );
    let (mut requests, mut errors) = (0, 0);
    for (name, result) in &report.routes {
        let mut times = result.times_ms.clone();
        requests += times.len() + result.errors;
        errors += result.errors;
        println!(
            "{name:<22} {:>9} {:>7} {:>8.2}ms {:>8.2}ms",
            times.len() + result.errors,
            result.errors,
            percentile(&mut times, 0.5),
            percentile(&mut times, 0.99)
        );
    }
    println!(
        "{:<22} {:>9} {:>7}   ({:.0} requests/s achieved)",
        "all",
        requests,
        errors,
        requests as f64 / report.load_seconds
    );

    let mib = |kib: Option<u64>| kib.map_or(f64::NAN, |kib| kib as f64 / 1024.0);
    let growth = match (report.rss_connected, report.rss_end) {
        (Some(start), Some(end)) if start > 0 => (end as f64 / start as f64 - 1.0) * 100.0,
        _ => f64::NAN,
    };
    let clients_per_100 = args.clients as f64 / 100.0;
    let fan_out = |rounds: &[Round]| -> (f64, f64, f64, usize) {
        let mut all: Vec<f64> = rounds.iter().map(Round::all_ms).collect();
        let mut each: Vec<f64> = rounds.iter().flat_map(|r| r.delays_ms.clone()).collect();
        let missed = rounds.iter().map(|r| r.missed).sum();
        (
            percentile(&mut each, 0.5),
            percentile(&mut all, 0.5),
            percentile(&mut all, 0.99),
            missed,
        )
    };
    let (quiet_each_p50, quiet_all_p50, quiet_all_p99, quiet_missed) = fan_out(&report.quiet);
    let (load_each_p50, load_all_p50, load_all_p99, load_missed) = fan_out(&report.loaded);
    let slow_closed = report.slow.iter().filter(|s| s.closed).count();

    println!(
        "\nTower with {} event-stream clients (snapshot {} kB each) and {} that never read:",
        args.clients,
        report.snapshot_bytes / 1024,
        args.slow_clients
    );
    println!("{:<52} {:>14} {:>12}", "", "measured", "target");
    let row = |what: &str, measured: String, target: &str| {
        println!("{what:<52} {measured:>14} {target:>12}");
    };
    row("API errors", errors.to_string(), "0");
    row(
        &format!(
            "change → all clients, p99, alone ({} changes)",
            report.quiet.len()
        ),
        format!("{quiet_all_p99:.0} ms"),
        "< 1000 ms",
    );
    row(
        &format!(
            "change → all clients, p99, under load ({} changes)",
            report.loaded.len()
        ),
        format!("{load_all_p99:.0} ms"),
        "< 1000 ms",
    );
    row(
        "change → all clients, p50, alone / under load",
        format!("{quiet_all_p50:.0} / {load_all_p50:.0} ms"),
        "",
    );
    row(
        "change → one client, p50, alone / under load",
        format!("{quiet_each_p50:.0} / {load_each_p50:.0} ms"),
        "",
    );
    row(
        "deliveries missed (not seen within 10 s)",
        (quiet_missed + load_missed).to_string(),
        "0",
    );
    row(
        "reading clients disconnected during the run",
        report.disconnected.to_string(),
        "0",
    );
    row(
        "RSS before the clients",
        format!("{:.1} MiB", mib(report.rss_idle)),
        "",
    );
    row(
        "RSS at start (clients connected) / end",
        format!(
            "{:.1} / {:.1} MiB",
            mib(report.rss_connected),
            mib(report.rss_end)
        ),
        "",
    );
    row(
        "RSS growth over the run",
        format!("{growth:+.1} %"),
        "within 10 %",
    );
    let during: Vec<String> = report
        .rss_during
        .iter()
        .map(|kib| format!("{:.0}", *kib as f64 / 1024.0))
        .collect();
    println!(
        "  RSS after each change under load (MiB): {}",
        during.join(" ")
    );
    row(
        "CPU per 100 clients, fan-out alone",
        format!("{:.1} % core", report.quiet_cpu * 100.0 / clients_per_100),
        "",
    );
    row(
        "CPU per 100 clients, under load",
        format!("{:.1} % core", report.load_cpu * 100.0 / clients_per_100),
        "",
    );
    row(
        "CPU under load, all",
        format!("{:.0} % core", report.load_cpu * 100.0),
        "",
    );
    row(
        "never-reading clients closed by Tower",
        format!("{slow_closed} of {}", report.slow.len()),
        "all",
    );
    row(
        "event streams Tower held at the end",
        report
            .streams_counted
            .map_or_else(|| "unknown".into(), |n| format!("{n:.0}")),
        // The never-reading clients are still open then: nothing sent to them had stalled yet.
        &(args.clients + args.slow_clients).to_string(),
    );
    println!(
        "  a reading client received {} kB of events over the run",
        report.received_bytes / 1024
    );
    // What a never-reading client was sent: the run's events, and the flood's.
    let mut sent = report.received_bytes;
    if let Some(flood) = &report.flood {
        sent += flood.bytes_per_reader;
        println!(
            "  then {} watch changes in {:.1} s sent each of {} kept readers {} kB more",
            flood.changes,
            flood.seconds,
            report.kept_readers,
            flood.bytes_per_reader / 1024
        );
    }
    let (_, _, stuck_all, stuck_missed) = fan_out(std::slice::from_ref(&report.stuck_round));
    println!(
        "  with the never-reading clients stuck, one change reached all {} kept readers in {stuck_all:.0} ms ({stuck_missed} missed)",
        report.kept_readers
    );
    println!(
        "  event streams Tower held {} s after that: {} (the kept readers are {}, the never-reading {})",
        STALL_WAIT.as_secs(),
        report
            .streams_after_stall
            .map_or_else(|| "unknown".into(), |n| format!("{n:.0}")),
        report.kept_readers,
        report.slow.len()
    );
    for (index, slow) in report.slow.iter().enumerate() {
        println!(
            "  never-reading client {}: {} kB waiting in its socket of {} kB sent, {}; {}",
            index + 1,
            slow.buffered / 1024,
            sent / 1024,
            if slow.closed {
                "closed by Tower"
            } else {
                "still open"
            },
            // Less waiting than was sent means Tower's writes to it stalled: its buffers were full.
            if (slow.buffered as u64) < sent {
                "its buffers filled"
            } else {
                "all that was sent fit in its buffers (not full yet)"
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_turning_out_of_sync_is_recognized_only_for_its_service() {
        let card = r#"{"type":"card_updated","card":{"service":"svc-0003","environment":"dev","application":{"sync":"OutOfSync"}}}"#;
        assert!(shows_out_of_sync(card, "svc-0003"));
        assert!(!shows_out_of_sync(card, "svc-0030"));
        let prod = card.replace("\"dev\"", "\"prod\"");
        assert!(!shows_out_of_sync(&prod, "svc-0003"));
        let synced = card.replace("OutOfSync", "Synced");
        assert!(!shows_out_of_sync(&synced, "svc-0003"));
    }

    #[test]
    fn chunked_bodies_are_unframed() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\nNEXT";
        let mut reader = &body[..];
        let mut text = String::new();
        Chunked::new(&mut reader, true)
            .read_to_string(&mut text)
            .expect("a well-formed body");
        assert_eq!(text, "hello, world");
        assert_eq!(reader, b"NEXT", "the next answer on the connection is left");
    }

    #[test]
    fn an_answers_head_says_how_its_body_is_framed() {
        let answer = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
        let head = read_head(&mut &answer[..]).expect("a well-formed head");
        assert_eq!(head.status, 200);
        assert!(head.chunked);
        let answer = b"HTTP/1.1 404 Not Found\r\ncontent-length: 12\r\nconnection: close\r\n\r\n";
        let head = read_head(&mut &answer[..]).expect("a well-formed head");
        assert_eq!(
            (head.status, head.content_length, head.close),
            (404, Some(12), true)
        );
    }
}
