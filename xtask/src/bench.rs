//! `cargo xtask bench`: the numbers the issues set targets for, measured on this machine and printed.
//!
//! - `GET /api/v1/services` answered from the watch caches at `--scale N` services, loaded with `wrk` over
//!   loopback (p50/p99 latency and requests per second), gzip (as browsers ask) and plain.
//! - `metrics`: the Metrics tab's answer on the sandbox's real Prometheus, cold (the first viewer of a
//!   service, environment and range in a step, which costs one query per fixed query) and warm (every
//!   viewer after, answered from the shared cache).
//! - `pipelines`: the Pipelines pages' numbers; natively (release), the DAG and layout of a 300-task
//!   pipeline and the search and wrap index of a 100,000-line log; the run lists' p99 and Tower's RSS with
//!   10,000 runs in its caches; in Chromium, the layout in wasm and the 100,000-line log's open, search,
//!   scrolling and memory.
//! - `scale`: the fleet at 1,000 and 10,000 services, sandbox and Tower as separate release processes: the
//!   first picture, Tower's memory (and heap by cache), the service list under wrk, the stream's snapshot, and
//!   the Overview in Chromium (see [`scale`]).
//! - `load`: 500 event-stream clients (and a few that never read) under 2,000 API requests/s for 60 s: errors,
//!   p50/p99 per route, a watch change's time to every client, Tower's RSS and CPU (see [`load`]).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::util;

mod load;
mod scale;

/// Options of `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which benchmark; the service list when not given.
    #[command(subcommand)]
    pub which: Option<Which>,
    #[command(flatten)]
    pub services: ServicesArgs,
}

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum Which {
    /// `GET /api/v1/services` at scale under wrk (the default).
    Services(ServicesArgs),
    /// `tower sandbox --speed 10` left running: its RSS every 30 s, and the growth from the first minute.
    SandboxMemory(crate::memory::MemoryArgs),
    /// The Metrics tab's answer time, cold and warm cache.
    Metrics(MetricsArgs),
    /// The Pipelines pages: natively, in Tower with 10,000 runs, and in Chromium.
    Pipelines(PipelinesArgs),
    /// The fleet at 1,000 and 10,000 services: start-up, memory, the service list and the Overview.
    Scale(scale::ScaleArgs),
    /// Many live viewers under API load: fan-out time, errors, latency per route, RSS and CPU.
    Load(load::LoadArgs),
}

/// Options of the Pipelines benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct PipelinesArgs {
    /// Layouts of a 300-task pipeline timed natively (each of a different pipeline).
    #[arg(long, default_value_t = 200)]
    pub layout_runs: usize,
    /// Searches of the 100,000-line log timed natively, per case.
    #[arg(long, default_value_t = 50)]
    pub search_runs: usize,
    /// Services the sandbox generates for the run-list part (the sandbox spreads 10,000 runs over them).
    #[arg(long, default_value_t = 500)]
    pub scale: usize,
    /// Run-list requests timed against Tower with those runs in its caches.
    #[arg(long, default_value_t = 2000)]
    pub list_requests: usize,
    /// Only the native part (no sandbox, no Tower).
    #[arg(long)]
    pub native_only: bool,
}

/// Options of the Metrics tab benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct MetricsArgs {
    /// Warm requests per service and range.
    #[arg(long, default_value_t = 50)]
    pub warm: usize,
    /// Measure the debug build (`target/debug/tower`) rather than building a release one.
    #[arg(long)]
    pub debug: bool,
}

/// Options of the service-list benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct ServicesArgs {
    /// Services the sandbox generates.
    #[arg(long, default_value_t = 1000)]
    pub scale: usize,
    /// Seconds each load run lasts.
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    /// Concurrent connections.
    #[arg(long, default_value_t = 32)]
    pub connections: u32,
}

const TOWER: &str = "127.0.0.1:18700";
const SANDBOX: &str = "127.0.0.1:18701";

/// Runs the benchmark asked for.
pub fn bench(args: &BenchArgs) -> Result<()> {
    match &args.which {
        None => services(&args.services),
        Some(Which::Services(services_args)) => services(services_args),
        Some(Which::SandboxMemory(memory_args)) => crate::memory::sandbox_memory(memory_args),
        Some(Which::Metrics(metrics_args)) => metrics(metrics_args),
        Some(Which::Pipelines(pipelines_args)) => pipelines(pipelines_args),
        Some(Which::Scale(scale_args)) => scale::scale(scale_args),
        Some(Which::Load(load_args)) => load::load(load_args),
    }
}

/// Builds the `tower` binary as users run it (release) and returns its path.
pub fn release_tower() -> Result<std::path::PathBuf> {
    util::run(&mut util::cargo([
        "build",
        "--release",
        "-p",
        "server",
        "--bin",
        "tower",
    ]))?;
    Ok(util::repo_root().join("target/release/tower"))
}

/// Stops a `tower` child when dropped, however the bench ends.
pub struct Server(pub Child);

/// How long Tower gets to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first: Tower then stops its sandbox's Prometheus and removes its temporary folders, which a
        // SIGKILL would leave behind.
        let terminated = i32::try_from(self.0.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|pid| {
                rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok()
            });
        let deadline = Instant::now() + STOP_GRACE;
        while terminated && Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn services(args: &ServicesArgs) -> Result<()> {
    ensure_wrk()?;
    let binary = release_tower()?;
    let started = Instant::now();
    let mut serve = util::command(&binary);
    serve
        .args([
            "serve",
            "--sandbox",
            "--sandbox-no-metrics",
            "--listen",
            TOWER,
            "--sandbox-listen",
            SANDBOX,
        ])
        .args(["--scale", &args.scale.to_string(), "--assets", "dist"])
        .env("TOWER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    util::announce(&serve);
    let _server = Server(serve.spawn().context("starting tower")?);

    let cookie = wait_for_guest_session(Duration::from_secs(180))?;
    let services = wait_for_services(&cookie, args.scale, Duration::from_secs(180))?;
    println!(
        "tower is up with {services} services after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let url = format!("http://{TOWER}/api/v1/services");
    let mut rows = Vec::new();
    for (label, encoding) in [("gzip", "gzip"), ("identity", "identity")] {
        let output = wrk(&url, &cookie, encoding, args.connections, args.duration)?;
        println!("{output}");
        rows.push((label, parse_wrk(&output)?));
    }
    println!(
        "\nGET /api/v1/services at {services} services, {} connections, {} s each:",
        args.connections, args.duration
    );
    println!(
        "{:<10} {:>10} {:>10} {:>12} {:>12}",
        "encoding", "p50", "p99", "requests/s", "transfer/s"
    );
    for (label, result) in &rows {
        println!(
            "{label:<10} {:>10} {:>10} {:>12.0} {:>12}",
            result.p50, result.p99, result.requests_per_second, result.transfer
        );
    }
    Ok(())
}

fn metrics(args: &MetricsArgs) -> Result<()> {
    let binary = if args.debug {
        util::run(&mut util::cargo([
            "build", "-p", "server", "--bin", "tower",
        ]))?;
        util::repo_root().join("target/debug/tower")
    } else {
        release_tower()?
    };
    let mut serve = util::command(&binary);
    serve
        .args([
            "serve",
            "--sandbox",
            "--listen",
            TOWER,
            "--sandbox-listen",
            SANDBOX,
            "--assets",
            "dist",
        ])
        .env("TOWER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    util::announce(&serve);
    let _server = Server(serve.spawn().context("starting tower")?);
    let cookie = wait_for_guest_session(Duration::from_secs(180))?;
    wait_for_services(&cookie, 5, Duration::from_secs(180))?;

    let time = |url: &str| -> Result<f64> {
        let started = Instant::now();
        let body = curl(&["-H", &format!("Cookie: {cookie}"), url])?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        if !body.contains("\"charts\"") || body.contains("\"error\"") {
            bail!(
                "{url} did not answer charts: {}",
                body.chars().take(300).collect::<String>()
            );
        }
        Ok(elapsed)
    };
    let services = ["payments", "checkout", "search", "cart", "ledger"];
    println!(
        "\nGET /api/v1/services/<name>/environments/prod/metrics (8 fixed queries), {}:",
        if args.debug {
            "debug build"
        } else {
            "release build"
        }
    );
    println!(
        "{:<6} {:>12} {:>12} {:>12}",
        "range", "cold p50", "warm p50", "warm p99"
    );
    for range in ["1h", "6h", "24h", "7d"] {
        let mut cold = Vec::new();
        let mut warm = Vec::new();
        for service in services {
            let url = format!(
                "http://{TOWER}/api/v1/services/{service}/environments/prod/metrics?range={range}"
            );
            cold.push(time(&url)?);
            for _ in 0..args.warm {
                warm.push(time(&url)?);
            }
        }
        println!(
            "{range:<6} {:>10.1}ms {:>10.1}ms {:>10.1}ms",
            percentile(&mut cold, 0.5),
            percentile(&mut warm, 0.5),
            percentile(&mut warm, 0.99)
        );
    }
    println!(
        "(curl per request, so each time includes a process start and a connection: an upper bound)"
    );
    Ok(())
}

/// Every part of the Pipelines benchmark, one after the other.
fn pipelines(args: &PipelinesArgs) -> Result<()> {
    pipelines_native(args)?;
    if args.native_only {
        return Ok(());
    }
    pipelines_server(args)?;
    pipelines_browser(args)
}

/// The browser half: `end2end/bench/pipelines.bench.ts` in Chromium against a release `tower` on a sandbox at
/// `--scale` (the 300-task run's layout in wasm; the 100,000-line log's open, search, scrolling and memory).
/// The spec prints one JSON line per number; they are repeated together at the end.
fn pipelines_browser(args: &PipelinesArgs) -> Result<()> {
    println!("\nPipelines, in Chromium (the wasm-release build):");
    let tower = release_tower()?;
    crate::dist::dist(None)?;
    let mut npx = crate::test::playwright_command("playwright.bench.config.ts", &tower)?;
    npx.arg("bench/pipelines.bench.ts")
        .env("TOWER_BENCH_SCALE", args.scale.to_string());
    let out = util::tee(&mut npx)?;
    let numbers: Vec<&str> = out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("{\"bench\":\"pipelines\""))
        .collect();
    println!("\nPipelines in Chromium:");
    for line in &numbers {
        println!("  {line}");
    }
    if !out.success {
        bail!("the browser benchmark failed (see Playwright's report above)");
    }
    Ok(())
}

/// Runs Tower's caches hold before the run lists are timed: the sandbox's `--scale` seeds this many.
const PIPELINE_RUNS: usize = 10_000;

/// The run lists with [`PIPELINE_RUNS`] runs in Tower's caches: `tower sandbox --scale N` on its own, a
/// release `tower serve` against it (so Tower's RSS is Tower's alone), then `list_requests` requests over
/// first pages, filters, services' lists and pages deep behind cursors, each timed by curl
/// (`time_total`, on a kept-alive connection): p50, p99 and max, and Tower's RSS.
fn pipelines_server(args: &PipelinesArgs) -> Result<()> {
    let binary = release_tower()?;
    let folder = util::repo_root().join("target/bench-pipelines");
    let (_sandbox, config) = separate_sandbox(
        &binary,
        &folder,
        &["--no-metrics", "--scale", &args.scale.to_string()],
    )?;
    let started = Instant::now();
    let server = separate_tower(&binary, &config)?;
    let cookie = wait_for_guest_session(Duration::from_secs(180))?;
    let list = format!("http://{TOWER}/api/v1/pipelines");
    let total = loop {
        let body = curl(&["-H", &format!("Cookie: {cookie}"), &list]).unwrap_or_default();
        let total = json_number(&body, "total").unwrap_or(0);
        if total >= PIPELINE_RUNS {
            break total;
        }
        if started.elapsed() > Duration::from_secs(300) {
            bail!("only {total} of {PIPELINE_RUNS} runs in Tower's caches after 300 s");
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    println!(
        "tower lists {total} runs {:.1} s after it started",
        started.elapsed().as_secs_f64()
    );

    // What the pages ask: first pages with and without filters, services' lists, and pages behind cursors
    // (next and previous) deep into the fleet's list.
    let mut urls = vec![
        list.clone(),
        format!("{list}?status=failed"),
        format!("{list}?status=succeeded"),
        format!("{list}?status=running"),
        format!("{list}?trigger=github-pull-request"),
        format!("{list}?revision=main"),
        format!("{list}?revision=feature%2Fchange-1"),
        format!("{list}?service=payments"),
        format!("{list}?service=svc-0001&status=failed"),
    ];
    for n in (1..=args.scale).step_by((args.scale / 50).max(1)) {
        urls.push(format!(
            "http://{TOWER}/api/v1/services/svc-{n:04}/pipelines"
        ));
    }
    let mut page = list.clone();
    for _ in 0..100 {
        let body = curl(&["-H", &format!("Cookie: {cookie}"), &page])?;
        if let Some(previous) = json_string(&body, "previous") {
            urls.push(format!("{list}?cursor={previous}"));
        }
        let Some(next) = json_string(&body, "next") else {
            break;
        };
        page = format!("{list}?cursor={next}");
        urls.push(page.clone());
    }
    let failed_page = curl(&["-H", &format!("Cookie: {cookie}"), &urls[1]])?;
    if let Some(next) = json_string(&failed_page, "next") {
        urls.push(format!("{list}?status=failed&cursor={next}"));
    }

    let mut times = Vec::with_capacity(args.list_requests);
    let requests: Vec<&String> = urls.iter().cycle().take(args.list_requests).collect();
    for batch in requests.chunks(200) {
        // One curl for a batch: one connection, kept alive, and curl's own clock per request.
        let mut config = String::new();
        for url in batch {
            config.push_str(&format!("url = \"{url}\"\noutput = \"/dev/null\"\n"));
        }
        let batch_file = folder.join("requests.curl");
        std::fs::write(&batch_file, config).context("writing the request list")?;
        let output = curl(&[
            "-H",
            &format!("Cookie: {cookie}"),
            "-w",
            "%{http_code} %{time_total}\n",
            "--config",
            &batch_file.to_string_lossy(),
        ])?;
        for line in output.lines() {
            let (code, seconds) = line.split_once(' ').context("curl's timing line")?;
            if code != "200" {
                bail!("a run list answered {code}");
            }
            times.push(seconds.parse::<f64>().context("curl's time")? * 1000.0);
        }
    }
    let rss = rss_kib(&server).map_or_else(|| "unknown".into(), |kib| format!("{kib} kB"));
    println!(
        "\nGET run lists with {total} runs in the caches ({} requests over {} URLs: first pages, filters, \
         services, cursors):",
        times.len(),
        urls.len()
    );
    println!("{:>10} {:>10} {:>10}", "p50", "p99", "max");
    println!(
        "{:>8.2}ms {:>8.2}ms {:>8.2}ms",
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99),
        percentile(&mut times, 1.0)
    );
    println!("tower's RSS with those runs: {rss}");
    Ok(())
}

/// `tower sandbox` on its own (on [`SANDBOX`]) with `world` arguments, writing the configuration
/// that points a Tower on [`TOWER`] at it into `folder`; returns once the configuration is written, which
/// the sandbox does when it is seeded and listening.
pub fn separate_sandbox(
    binary: &std::path::Path,
    folder: &std::path::Path,
    world: &[&str],
) -> Result<(Server, std::path::PathBuf)> {
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let config = folder.join("tower.sandbox.yaml");
    let _ = std::fs::remove_file(&config);
    let mut sandbox = util::command(binary);
    sandbox
        .args(["sandbox", "--listen", SANDBOX])
        .args(["--tower-listen", TOWER])
        .args(world)
        .arg("--write-config")
        .arg(&config)
        .env("TOWER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    util::announce(&sandbox);
    let sandbox = Server(sandbox.spawn().context("starting tower sandbox")?);
    let deadline = Instant::now() + Duration::from_secs(600);
    while !config.exists() {
        if Instant::now() > deadline {
            bail!("tower sandbox wrote no configuration within 600 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok((sandbox, config))
}

/// `tower serve --config <config>` on [`TOWER`], as its own process (so its RSS is Tower's alone).
fn separate_tower(binary: &std::path::Path, config: &std::path::Path) -> Result<Server> {
    let mut serve = util::command(binary);
    serve
        .arg("serve")
        .arg("--config")
        .arg(config)
        .args(["--listen", TOWER, "--assets", "dist"])
        .env("TOWER_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    util::announce(&serve);
    Ok(Server(serve.spawn().context("starting tower")?))
}

/// A child's resident memory in KiB (`VmRSS`), while it runs.
fn rss_kib(process: &Server) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", process.0.id())).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The number after the last `"key":` in `json`, read without a JSON parser (the bench has none): a page's
/// own fields come after its runs, whose tasks have a `total` of their own.
fn json_number(json: &str, key: &str) -> Option<usize> {
    let start = json.rfind(&format!("\"{key}\":"))? + key.len() + 3;
    let digits: String = json
        .get(start..)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The string after the last `"key":` in `json`, when it is one (a cursor: hex, nothing to unescape).
fn json_string(json: &str, key: &str) -> Option<String> {
    let start = json.rfind(&format!("\"{key}\":\""))? + key.len() + 4;
    let rest = json.get(start..)?;
    Some(rest.get(..rest.find('"')?)?.to_string())
}

/// The native part of the Pipelines benchmark: `shared`'s `pipelines_bench` example in release, which
/// prints p50/p99/max of the graph and layout of 300-task pipelines, of a search of a 100,000-line log for a
/// term on line 90,000, and of that log's wrap index.
fn pipelines_native(args: &PipelinesArgs) -> Result<()> {
    println!("\nPipelines, natively (release):");
    util::run(
        util::cargo([
            "run",
            "--release",
            "--quiet",
            "-p",
            "shared",
            "--example",
            "pipelines_bench",
            "--",
        ])
        .args([args.layout_runs.to_string(), args.search_runs.to_string()]),
    )
}

/// The `q` quantile (0–1) of `values`, nearest rank.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len().max(1));
    values.get(rank - 1).copied().unwrap_or(f64::NAN)
}

fn ensure_wrk() -> Result<()> {
    if Command::new("wrk").arg("--version").output().is_ok() {
        return Ok(());
    }
    if util::read(util::command("id").arg("-u")).is_ok_and(|id| id.trim() == "0") {
        util::run(util::command("apt-get").args(["install", "-y", "wrk"]))
    } else {
        bail!("the bench needs wrk: sudo apt-get install wrk")
    }
}

fn curl(args: &[&str]) -> Result<String> {
    util::read(
        util::command("curl")
            .args(["-s", "--max-time", "10"])
            .args(args),
    )
}

fn wait_for_guest_session(limit: Duration) -> Result<String> {
    let deadline = Instant::now() + limit;
    loop {
        let headers = curl(&[
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-X",
            "POST",
            "-H",
            "x-tower-csrf: 1",
            &format!("http://{TOWER}/api/v1/session/guest"),
        ]);
        if let Ok(headers) = headers
            && let Some(cookie) = headers
                .lines()
                .find_map(|l| {
                    l.strip_prefix("set-cookie: ")
                        .or_else(|| l.strip_prefix("Set-Cookie: "))
                })
                .and_then(|c| c.split(';').next())
        {
            return Ok(cookie.to_string());
        }
        if Instant::now() > deadline {
            bail!("tower did not come up within {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn wait_for_services(cookie: &str, wanted: usize, limit: Duration) -> Result<usize> {
    let deadline = Instant::now() + limit;
    loop {
        let body = curl(&[
            "-H",
            &format!("Cookie: {cookie}"),
            &format!("http://{TOWER}/api/v1/services"),
        ])
        .unwrap_or_default();
        let count = body.matches("\"owner\":").count();
        if count >= wanted {
            return Ok(count);
        }
        if Instant::now() > deadline {
            bail!(
                "only {count} of {wanted} services after {} s",
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `wrk` on `url` as `cookie`'s session, asking for `encoding`, with `connections` for `seconds`: its
/// output, latency distribution included (read with [`parse_wrk`]).
fn wrk(url: &str, cookie: &str, encoding: &str, connections: u32, seconds: u64) -> Result<String> {
    util::read(util::command("wrk").args([
        "-t2",
        &format!("-c{connections}"),
        &format!("-d{seconds}s"),
        "--latency",
        "-H",
        &format!("Cookie: {cookie}"),
        "-H",
        &format!("Accept-Encoding: {encoding}"),
        url,
    ]))
}

/// What one wrk run measured.
#[derive(Debug, PartialEq)]
struct WrkResult {
    p50: String,
    p99: String,
    requests_per_second: f64,
    transfer: String,
}

fn parse_wrk(output: &str) -> Result<WrkResult> {
    let field = |prefix: &str| {
        output
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(prefix))
            .map(|rest| rest.trim().to_string())
            .with_context(|| format!("wrk printed no `{prefix}` line"))
    };
    Ok(WrkResult {
        p50: field("50%")?,
        p99: field("99%")?,
        requests_per_second: field("Requests/sec:")?
            .parse()
            .context("requests per second")?,
        transfer: field("Transfer/sec:")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut values = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&mut values, 0.5), 3.0);
        assert_eq!(percentile(&mut values, 0.99), 5.0);
        assert_eq!(percentile(&mut values, 0.0), 1.0);
    }

    #[test]
    fn cursors_and_totals_are_read_from_a_page() {
        let page = r#"{"runs":[{"tasks":{"total":7,"done":3}}],"next":"61626364","previous":null,"total":10042,"dropped":0}"#;
        assert_eq!(json_number(page, "total"), Some(10042));
        assert_eq!(json_string(page, "next").as_deref(), Some("61626364"));
        assert_eq!(json_string(page, "previous"), None);
    }

    #[test]
    fn wrk_output_is_read() {
        let output = "  Latency Distribution\n     50%    1.20ms\n     75%    2.00ms\n     90%    3.00ms\n     99%    8.10ms\n  120000 requests in 15.00s, 1.2GB read\nRequests/sec:   8000.12\nTransfer/sec:     80.00MB\n";
        let result = parse_wrk(output).expect("parses");
        assert_eq!(result.p50, "1.20ms");
        assert_eq!(result.p99, "8.10ms");
        assert!((result.requests_per_second - 8000.12).abs() < 0.01);
        assert_eq!(result.transfer, "80.00MB");
    }
}
