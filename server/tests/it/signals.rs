//! The real `tower` binary on signals: SIGTERM and SIGINT stop it with status 0 and leave no child process and
//! no temporary folder behind; SIGKILL, which it cannot handle, still takes its children with it.
//!
//! Each test gives Tower a `TMPDIR` of its own, so it knows exactly which folders are Tower's, and walks
//! `/proc` for Tower's descendants before the signal and for what is left of them after.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use sandbox::supervisor::TEMP_PREFIX;

/// Startup includes building the repositories and backfilling Prometheus, on two busy cores.
const STARTUP: Duration = Duration::from_secs(180);
/// A clean stop with no browser connected takes well under a second; this is the bound, not the expectation.
const STOP: Duration = Duration::from_secs(30);

#[test]
fn sigterm_stops_tower_serve_on_the_sandbox_with_status_0_and_nothing_left() {
    assert_clean_stop(Tower::serve_sandbox(), Signal::TERM, "tower serve");
}

#[test]
fn sigint_stops_tower_sandbox_with_status_0_and_nothing_left() {
    assert_clean_stop(Tower::sandbox(), Signal::INT, "tower sandbox");
}

#[test]
fn sigterm_fails_readiness_first_and_ends_the_event_stream_with_a_retry_hint() {
    let mut tower = Tower::serve_sandbox();
    let listen = tower.listen.clone().unwrap();
    let deadline = Instant::now() + STARTUP;
    while http_status(&listen, "/readyz") != Some(200) {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    // A guest's browser on the event stream, past its snapshot.
    let cookie = guest_cookie(&listen);
    let mut events = std::net::TcpStream::connect(&listen).unwrap();
    events
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        events,
        "GET /api/v1/events HTTP/1.1\r\nHost: {listen}\r\nAccept: text/event-stream\r\nCookie: {cookie}\r\n\r\n"
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 64 * 1024];
    while !String::from_utf8_lossy(&seen).contains("event: fleet") {
        let read = events.read(&mut buffer).expect("a snapshot");
        assert!(read > 0, "the stream ended before its snapshot");
        seen.extend_from_slice(&buffer[..read]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));

    let pid = Pid::from_raw(i32::try_from(tower.pid()).unwrap()).unwrap();
    kill_process(pid, Signal::TERM).unwrap();
    // Not ready from the signal on, while the listener still answers.
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut readiness = http_status(&listen, "/readyz");
    while readiness == Some(200) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        readiness = http_status(&listen, "/readyz");
    }
    assert_eq!(readiness, Some(503), "readiness fails first");
    // The stream ends cleanly (the last chunk, then the end) after the reconnect hint.
    let mut rest = Vec::new();
    events
        .read_to_end(&mut rest)
        .expect("the stream ends, not breaks");
    seen.extend_from_slice(&rest);
    let text = String::from_utf8_lossy(&seen);
    assert!(text.contains("retry: 3000"), "{text}");
    assert!(
        text.ends_with("0\r\n\r\n"),
        "a clean end of the chunked body: {text:?}"
    );
    let status = tower.wait_for_exit();
    assert_eq!(status.code(), Some(0), "{status}");
    tower.assert_nothing_left();
}

/// A guest session's cookie from `POST /api/v1/session/guest`.
fn guest_cookie(addr: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /api/v1/session/guest HTTP/1.0\r\nHost: {addr}\r\nx-tower-csrf: 1\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("set-cookie").then(|| {
                value
                    .trim()
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
        })
        .unwrap_or_else(|| panic!("no session cookie: {response}"))
}

/// Sends `signal` to a running `tower` and checks it stopped cleanly: status 0, none of its children left,
/// nothing left in its `TMPDIR`.
fn assert_clean_stop(mut tower: Tower, signal: Signal, what: &str) {
    let children = tower.descendants_with_prometheus();
    let status = tower.signal_and_wait(signal);
    assert_eq!(status.code(), Some(0), "{what} exited with {status}");
    assert_all_gone(&children);
    tower.assert_nothing_left();
}

#[test]
fn sigkill_of_tower_serve_still_takes_its_children_with_it() {
    let mut tower = Tower::serve_sandbox();
    let children = tower.descendants_with_prometheus();
    let status = tower.signal_and_wait(Signal::KILL);
    assert_eq!(status.code(), None, "SIGKILL cannot be handled: {status}");
    // The kernel's parent-death signal, not Tower, stops them; the folder stays (nothing runs to remove it)
    // and goes with this test's TMPDIR.
    assert_all_gone(&children);
    assert_no_process_names(tower.tmp.path());
}

/// A `tower` process started with its own `TMPDIR`, its stdout read line by line.
struct Tower {
    child: Child,
    lines: mpsc::Receiver<String>,
    tmp: tempfile::TempDir,
    /// What `tower sandbox` writes into `tmp` besides the sandbox's root; allowed to stay.
    config: Option<PathBuf>,
    /// Where `tower serve` listens.
    listen: Option<String>,
}

impl Tower {
    /// `tower serve --sandbox` on free ports, up once `/healthz` answers.
    fn serve_sandbox() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let assets = tmp.path().join("no-dist");
        let mut command = Command::new(env!("CARGO_BIN_EXE_tower"));
        command.arg("--log-json").args([
            "serve",
            "--sandbox",
            "--listen",
            "127.0.0.1:0",
            "--sandbox-listen",
            "127.0.0.1:0",
            "--assets",
        ]);
        command.arg(&assets);
        let tower = Self::start(command, tmp, None);
        let line = tower.wait_for_line(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .is_ok_and(|log| log["fields"]["message"] == "Tower is listening")
        });
        let log: serde_json::Value = serde_json::from_str(&line).unwrap();
        let listen = log["fields"]["listen"].as_str().unwrap().to_owned();
        assert_eq!(http_status(&listen, "/healthz"), Some(200), "{listen}");
        let mut tower = tower;
        tower.listen = Some(listen);
        tower
    }

    /// `tower sandbox` on a free port, up once it says so.
    fn sandbox() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("tower.sandbox.yaml");
        let mut command = Command::new(env!("CARGO_BIN_EXE_tower"));
        command
            .args(["sandbox", "--listen", "127.0.0.1:0", "--write-config"])
            .arg(&config);
        let tower = Self::start(command, tmp, Some(config));
        tower.wait_for_line(|line| line.starts_with("Tower sandbox is running"));
        tower
    }

    fn start(mut command: Command, tmp: tempfile::TempDir, config: Option<PathBuf>) -> Self {
        let mut child = command
            .env("TMPDIR", tmp.path())
            .env("TOWER_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        // Reads to the end, so Tower never blocks on a full pipe after the line the test waited for.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            tmp,
            config,
            listen: None,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn wait_for_line(&self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + STARTUP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(_) => {}
                Err(error) => panic!("tower did not come up within {STARTUP:?}: {error}"),
            }
        }
    }

    /// Tower's descendants now, after checking that they include Prometheus, started in Tower's temporary
    /// root, when Prometheus is installed (CI installs it).
    fn descendants_with_prometheus(&self) -> Vec<Proc> {
        let children = descendants(self.pid());
        let roots = self.temp_roots();
        assert_eq!(roots.len(), 1, "one temporary root per run: {roots:?}");
        if sandbox::metrics::Metrics::prometheus_installed() {
            let prometheus = children
                .iter()
                .find(|child| child.comm == "prometheus")
                .unwrap_or_else(|| panic!("no prometheus among tower's children {children:?}"));
            let root = roots[0].to_string_lossy().into_owned();
            assert!(
                prometheus.cmdline.contains(&root),
                "prometheus runs outside the temporary root {root}: {}",
                prometheus.cmdline
            );
        } else {
            eprintln!(
                "note: prometheus is not installed; tower has no long-lived child to check (CI installs it)"
            );
        }
        children
    }

    fn signal_and_wait(&mut self, signal: Signal) -> ExitStatus {
        let pid = Pid::from_raw(i32::try_from(self.pid()).unwrap()).unwrap();
        kill_process(pid, signal).unwrap();
        self.wait_for_exit()
    }

    /// Waits for Tower to exit, at most [`STOP`].
    fn wait_for_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + STOP;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("tower did not stop within {STOP:?} of the signal");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The sandbox's temporary roots in Tower's `TMPDIR`.
    fn temp_roots(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.tmp.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(TEMP_PREFIX))
            })
            .collect()
    }

    /// Tower's `TMPDIR` holds nothing but what it was asked to write, and no process names it.
    fn assert_nothing_left(&self) {
        let left: Vec<PathBuf> = std::fs::read_dir(self.tmp.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| Some(path) != self.config.as_ref())
            .collect();
        assert!(left.is_empty(), "left in tower's TMPDIR: {left:?}");
        assert_no_process_names(self.tmp.path());
    }
}

impl Drop for Tower {
    fn drop(&mut self) {
        // A failed assertion must not leave Tower running either.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Proc {
    pid: u32,
    parent: u32,
    /// Ticks since boot; tells a reused pid from the original.
    started: u64,
    /// `Z` for a zombie: dead, waiting for a parent to reap it.
    state: char,
    comm: String,
    cmdline: String,
}

/// Every process now, by pid.
fn processes() -> BTreeMap<u32, Proc> {
    let mut all = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return all;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(process) = read_proc(pid) {
            all.insert(pid, process);
        }
    }
    all
}

fn read_proc(pid: u32) -> Option<Proc> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split at the last `)`.
    let (head, rest) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let parent = fields.get(1)?.parse().ok()?;
    // Field 22 of stat, the 20th after the comm.
    let started = fields.get(19)?.parse().ok()?;
    let cmdline = std::fs::read(dir.join("cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default();
    Some(Proc {
        pid,
        parent,
        started,
        state,
        comm,
        cmdline,
    })
}

/// Every living descendant of `root`, children and grandchildren alike.
fn descendants(root: u32) -> Vec<Proc> {
    let all = processes();
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for process in all
            .values()
            .filter(|p| p.parent == parent && p.state != 'Z')
        {
            frontier.push(process.pid);
            found.push(process.clone());
        }
    }
    found
}

/// Waits until none of `processes` runs any more (gone, a zombie, or its pid reused by another process).
fn assert_all_gone(processes: &[Proc]) {
    let deadline = Instant::now() + STOP;
    loop {
        let alive: Vec<Proc> = processes
            .iter()
            .filter_map(|old| {
                read_proc(old.pid).filter(|p| p.started == old.started && p.state != 'Z')
            })
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still running after tower stopped: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// No living process names `dir` on its command line.
fn assert_no_process_names(dir: &Path) {
    let dir = dir.to_string_lossy().into_owned();
    let deadline = Instant::now() + STOP;
    loop {
        let naming: Vec<Proc> = processes()
            .into_values()
            .filter(|p| p.state != 'Z' && p.cmdline.contains(&dir))
            .collect();
        if naming.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes still use {dir}: {naming:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The status code of `GET path` at `addr`, over a bare HTTP/1.0 request.
fn http_status(addr: &str, path: &str) -> Option<u16> {
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.split_whitespace().nth(1)?.parse().ok()
}
