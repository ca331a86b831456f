//! Real mode: backfill history with `promtool`, then run `prometheus` on loopback scraping the live
//! exposition, so queries see hours of history continued by live samples.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::api;
use super::series::Generator;
use crate::supervisor::{Process, Supervisor};

/// How long Prometheus may take to load the backfilled blocks and become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How often Prometheus scrapes the live exposition.
const SCRAPE_INTERVAL: &str = "5s";
/// How often Prometheus scrapes Tower's own `/metrics` once told where it is ([`PrometheusServer::scrape_tower`]).
const TOWER_SCRAPE_INTERVAL: &str = "2s";
/// The file-based service discovery file listing Tower's `/metrics` targets, beside `prometheus.yml`.
/// Prometheus watches it (inotify, and re-reads it every few seconds), so no reload is needed.
const TOWER_TARGETS: &str = "tower-targets.json";

/// The folder of every Prometheus running in this process, by its URL, for [`scrape_tower_at`]: the
/// sandbox hands out the URL (as Mimir's), not the server.
static RUNNING: std::sync::Mutex<std::collections::BTreeMap<String, PathBuf>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn running() -> std::sync::MutexGuard<'static, std::collections::BTreeMap<String, PathBuf>> {
    RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// As [`PrometheusServer::scrape_tower`], for the Prometheus of this process answering at `url`; `false`
/// when there is none.
pub(super) fn scrape_tower_at(url: &str, targets: &[String]) -> anyhow::Result<bool> {
    let Some(dir) = running().get(url).cloned() else {
        return Ok(false);
    };
    write_tower_targets(&dir, targets)?;
    Ok(true)
}

/// A running Prometheus and the folder holding its config, data and log.
pub struct PrometheusServer {
    /// Started by the sandbox's supervisor, so it dies with Tower even when Tower is killed outright.
    process: Process,
    /// `http://127.0.0.1:PORT/prometheus`.
    url: String,
    /// Under the supervisor's temporary root; removed on drop, after the process is stopped.
    dir: PathBuf,
    /// How long the backfill took.
    pub(super) backfill: Duration,
    /// How long Prometheus took to become ready.
    pub(super) startup: Duration,
}

impl PrometheusServer {
    /// The query API's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where the config and TSDB live.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Prometheus process' id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Has Prometheus scrape Tower's own `/metrics` at each of `targets` (`host:port`) from now on, in the
    /// job `tower`, replacing the targets given before. Written to a temporary file and renamed over the
    /// discovery file, so Prometheus never reads half of it.
    pub fn scrape_tower(&self, targets: &[String]) -> anyhow::Result<()> {
        write_tower_targets(&self.dir, targets)
    }
}

/// Writes `targets` as the `tower` job's file-based discovery list in `dir`.
fn write_tower_targets(dir: &Path, targets: &[String]) -> anyhow::Result<()> {
    let list = if targets.is_empty() {
        serde_json::json!([])
    } else {
        serde_json::json!([{ "targets": targets }])
    };
    let path = dir.join(TOWER_TARGETS);
    let partial = dir.join(format!("{TOWER_TARGETS}.partial"));
    std::fs::write(&partial, list.to_string())
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &path).with_context(|| format!("renaming to {}", path.display()))
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        running().remove(&self.url);
        // Stopped before its folder goes, so the folder is not being written while it is removed.
        self.process.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The path of executable `name` on `PATH`, if any.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Writes `history` of samples every `step` ending at `now` as OpenMetrics, turns them into TSDB
/// blocks, then starts Prometheus scraping `scrape_target` (`host:port`), both under `supervisor`.
pub(super) async fn start(
    generator: &Generator,
    now: f64,
    history: Duration,
    step: Duration,
    scrape_target: &str,
    supervisor: &Supervisor,
) -> anyhow::Result<PrometheusServer> {
    let prometheus = on_path("prometheus").context("prometheus is not on PATH")?;
    let promtool = on_path("promtool").context("promtool is not on PATH")?;
    // A Prometheus that fails leaves its folder (and log) under the root until the supervisor goes.
    let dir = supervisor.folder("prometheus")?;
    let data = dir.join("data");
    std::fs::create_dir_all(&data).context("creating the TSDB folder")?;

    let began = Instant::now();
    let openmetrics = dir.join("history.om");
    write_history(generator, now, history, step, &openmetrics)?;
    let promtool_log = dir.join("promtool.log");
    let mut backfill = Command::new(promtool);
    backfill
        .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
        .arg(&openmetrics)
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(&promtool_log)?);
    let status = supervisor
        .spawn("promtool", backfill)?
        .wait()
        .await
        .context("running promtool")?;
    if !status.success() {
        bail!(
            "promtool tsdb create-blocks-from openmetrics failed: {}",
            read_log(&promtool_log)
        );
    }
    // The file is only promtool's input; removing it keeps the folder small.
    let _ = std::fs::remove_file(&openmetrics);
    let backfill = began.elapsed();

    let config = dir.join("prometheus.yml");
    // No Tower to scrape yet: the discovery file must exist, empty, until one says where it listens.
    write_tower_targets(&dir, &[])?;
    std::fs::write(
        &config,
        config_text(scrape_target, &dir.join(TOWER_TARGETS)),
    )
    .context("writing prometheus.yml")?;
    let port = free_port().context("finding a free port for Prometheus")?;
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{listen}/prometheus");
    let began = Instant::now();
    // Its log goes to a file in its folder: nobody reads it while it runs, and an unread pipe would
    // eventually block it.
    let prometheus_log = dir.join("prometheus.log");
    let mut command = Command::new(prometheus);
    command
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        // Retention counts back from the newest block; backfilled history must not age out at once.
        .arg("--storage.tsdb.retention.time=30d")
        .arg(format!("--web.listen-address={listen}"))
        .arg("--web.route-prefix=/prometheus")
        .arg(format!("--web.external-url={url}"))
        .arg("--log.level=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(&prometheus_log)?);
    let process = supervisor.spawn("prometheus", command)?;
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(status) = process.try_wait().context("checking on prometheus")? {
            bail!(
                "prometheus exited with {status}: {}",
                read_log(&prometheus_log)
            );
        }
        if ready(&listen).await {
            break;
        }
        if Instant::now() > deadline {
            bail!("prometheus was not ready within {READY_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running().insert(url.clone(), dir.clone());
    Ok(PrometheusServer {
        process,
        url,
        dir,
        backfill,
        startup: began.elapsed(),
    })
}

/// A child's stderr, written to `path`.
fn log_file(path: &Path) -> anyhow::Result<Stdio> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    Ok(Stdio::from(file))
}

/// What a child wrote to its log, for the error saying why it failed.
fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The scrape config: one job on the sandbox's exposition, and one on Tower's own `/metrics` at the
/// targets listed in `tower_targets` (none until Tower listens).
///
/// `honor_labels` keeps the exposition's labels; `job` and `instance` are dropped so live samples
/// land in the same series as the backfilled history, which has neither. Tower's series keep both, as
/// a real Prometheus scraping Tower would.
fn config_text(target: &str, tower_targets: &Path) -> String {
    // JSON strings are valid YAML double-quoted strings: the path needs no escaping of its own.
    let tower_targets = serde_json::Value::from(tower_targets.display().to_string());
    format!(
        "global:\n  scrape_interval: {SCRAPE_INTERVAL}\n  evaluation_interval: {SCRAPE_INTERVAL}\n\
         scrape_configs:\n  - job_name: sandbox\n    honor_labels: true\n    metrics_path: /metrics\n    \
         static_configs:\n      - targets: ['{target}']\n    metric_relabel_configs:\n      \
         - action: labeldrop\n        regex: job|instance\n  \
         - job_name: tower\n    scrape_interval: {TOWER_SCRAPE_INTERVAL}\n    metrics_path: /metrics\n    \
         file_sd_configs:\n      - files: [{tower_targets}]\n        refresh_interval: 2s\n"
    )
}

/// OpenMetrics text for promtool: each metric family contiguous, timestamps in seconds, ending with
/// `# EOF`.
fn write_history(
    generator: &Generator,
    now: f64,
    history: Duration,
    step: Duration,
    path: &Path,
) -> anyhow::Result<()> {
    let step = step.as_secs_f64().max(1.0);
    // Aligned to the step so samples fall on the same instants on every run; ending before `now`
    // so the first live scrape is newer than every block (Prometheus rejects older appends).
    let last = ((now - 1.0) / step).floor() * step;
    let first = ((now - history.as_secs_f64()) / step).ceil() * step;
    let mut names: Vec<&str> = Vec::new();
    for series in generator.series() {
        if !names.contains(&series.name) {
            names.push(series.name);
        }
    }
    // Streamed one series at a time: the whole history is tens of megabytes, and one transient buffer
    // that size makes glibc raise its mmap and trim thresholds for good, so the process keeps every
    // later freed page and its RSS creeps up for the rest of the run.
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut writer = std::io::BufWriter::new(file);
    let mut lines = String::new();
    for name in names {
        for series in generator.series().iter().filter(|s| s.name == name) {
            let mut t = first;
            while t <= last {
                api::line(&mut lines, series, generator.sample(series, t), Some(t));
                t += step;
            }
            writer.write_all(lines.as_bytes())?;
            lines.clear();
        }
    }
    writer.write_all(b"# EOF\n")?;
    writer
        .flush()
        .with_context(|| format!("writing {}", path.display()))
}

/// A port nobody listens on right now (Prometheus binds it a moment later).
fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Whether `/prometheus/-/ready` answers 200, over a bare HTTP/1.0 request (no client dependency).
async fn ready(listen: &str) -> bool {
    let connect = tokio::net::TcpStream::connect(listen);
    let Ok(Ok(mut stream)) = tokio::time::timeout(Duration::from_secs(1), connect).await else {
        return false;
    };
    let request = format!("GET /prometheus/-/ready HTTP/1.0\r\nHost: {listen}\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    match tokio::time::timeout(Duration::from_secs(1), stream.read(&mut head)).await {
        Ok(Ok(n)) => {
            let head = &head[..n];
            head.starts_with(b"HTTP/1.0 200") || head.starts_with(b"HTTP/1.1 200")
        }
        _ => false,
    }
}
