//! `cargo xtask bench scale`: Tower at fleet size, as the Fleet scale issue measures it. For each size (1,000
//! always, as the base the others are compared with, and every size asked for: 10,000 by default), `tower
//! sandbox --scale N` and `tower serve --config` run as separate release processes, and the bench prints:
//!
//! - the time from Tower's start to its first picture (`/readyz` 200), and the sandbox's seeding time;
//! - how long Tower stays busy after it (the catalog read and forge lookups every service starts), its RSS
//!   once idle, its watch caches by kind (from its `/metrics`), and the sandbox's RSS;
//! - `GET /api/v1/services` p50 and p99 under wrk (gzip, as browsers ask), and the stream's snapshot size;
//! - in Chromium (`end2end/bench/scale.bench.ts`): the Overview's first row painted, search to one row,
//!   clearing the search, a scroll to the last row, the rows and nodes in the DOM, and the JS heap.
//!
//! Then one table: a column per size, the ratio of the largest to 1,000, and the target.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use super::{
    Server, TOWER, curl, ensure_wrk, parse_wrk, release_tower, rss_kib, separate_sandbox,
    separate_tower, wait_for_guest_session, wrk,
};
use crate::util;

/// The size every run measures too, so growth shows as a ratio.
const BASE: usize = 1_000;

/// Options of the scale benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct ScaleArgs {
    /// Fleet sizes to measure (comma-separated); 1,000 is always measured as the base.
    #[arg(long, value_delimiter = ',', default_value = "10000")]
    pub services: Vec<usize>,
    /// PipelineRuns the sandbox seeds across the generated services (each keeps at least its two builds).
    #[arg(long, default_value_t = 2_000)]
    pub runs: usize,
    /// Seconds each wrk run lasts.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Concurrent wrk connections.
    #[arg(long, default_value_t = 32)]
    pub connections: u32,
    /// Seconds at most Tower is given after its first picture to settle (its CPU under 10% for 3 s: the
    /// catalog read and the forge lookups each service starts are done) before it is measured.
    #[arg(long, default_value_t = 300)]
    pub settle: u64,
    /// Leave Chromium out (the server's numbers only).
    #[arg(long)]
    pub no_browser: bool,
}

/// Everything measured at one fleet size.
#[derive(Debug, Default)]
struct Measured {
    services: usize,
    sandbox_seeded_s: f64,
    sandbox_rss_mib: f64,
    first_picture_s: f64,
    /// Seconds from the first picture until Tower was idle.
    settled_s: f64,
    tower_rss_mib: f64,
    /// `tower_watch_cache_*` samples from Tower's `/metrics`, by their labels.
    caches: Vec<(String, f64)>,
    list_p50: String,
    list_p99: String,
    list_requests_per_second: f64,
    snapshot_bytes: usize,
    /// The browser's numbers by name (`first_row_ms`, `search_ms`, …).
    browser: BTreeMap<String, f64>,
}

/// Runs every size and prints the table.
pub fn scale(args: &ScaleArgs) -> Result<()> {
    ensure_wrk()?;
    let binary = release_tower()?;
    if !args.no_browser {
        crate::dist::dist(None)?;
    }
    let mut sizes = vec![BASE];
    sizes.extend(args.services.iter().copied().filter(|n| *n != BASE));
    let mut all = Vec::new();
    for services in sizes {
        println!("\n== {services} services ==");
        all.push(measure(args, &binary, services)?);
    }
    print_table(&all);
    Ok(())
}

fn measure(args: &ScaleArgs, binary: &std::path::Path, services: usize) -> Result<Measured> {
    let folder = util::repo_root().join("target/bench-scale");
    let seeding = Instant::now();
    let (sandbox, config) = separate_sandbox(
        binary,
        &folder,
        &[
            "--no-metrics",
            "--scale",
            &services.to_string(),
            "--scale-runs",
            &args.runs.to_string(),
        ],
    )?;
    let sandbox_seeded_s = seeding.elapsed().as_secs_f64();
    println!("sandbox seeded in {sandbox_seeded_s:.1} s");

    let started = Instant::now();
    let tower = separate_tower(binary, &config)?;
    wait_until_ready(&tower, Duration::from_secs(600))?;
    let first_picture_s = started.elapsed().as_secs_f64();
    println!("first picture after {first_picture_s:.1} s");
    let cookie = wait_for_guest_session(Duration::from_secs(60))?;

    let settled_s = wait_until_idle(&tower, Duration::from_secs(args.settle))?;
    println!("settled {settled_s:.1} s after the first picture (its CPU under 10% for 3 s)");
    let tower_rss_mib = mib(rss_kib(&tower));
    let sandbox_rss_mib = mib(rss_kib(&sandbox));
    let caches = watch_caches()?;

    let url = format!("http://{TOWER}/api/v1/services");
    let list = parse_wrk(&wrk(
        &url,
        &cookie,
        "gzip",
        args.connections,
        args.duration,
    )?)?;
    let snapshot_bytes = snapshot_size(&cookie)?;
    let browser = if args.no_browser {
        BTreeMap::new()
    } else {
        browser(binary, services)?
    };
    Ok(Measured {
        services,
        sandbox_seeded_s,
        sandbox_rss_mib,
        first_picture_s,
        settled_s,
        tower_rss_mib,
        caches,
        list_p50: list.p50,
        list_p99: list.p99,
        list_requests_per_second: list.requests_per_second,
        snapshot_bytes,
        browser,
    })
}

fn mib(kib: Option<u64>) -> f64 {
    kib.map_or(f64::NAN, |kib| kib as f64 / 1024.0)
}

/// Polls `/readyz` until it answers 200: Tower's first picture is complete.
fn wait_until_ready(tower: &Server, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let code = curl(&[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://{TOWER}/readyz"),
        ])
        .unwrap_or_default();
        if code.trim() == "200" {
            return Ok(());
        }
        if rss_kib(tower).is_none() {
            bail!("tower exited before its first picture");
        }
        if Instant::now() > deadline {
            bail!("no first picture within {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `process` has used under 10% of a core for 3 s in a row, at most `limit`; returns how long
/// that took (`limit` when it never was).
fn wait_until_idle(process: &Server, limit: Duration) -> Result<f64> {
    let cpu_seconds = || -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", process.0.id())).ok()?;
        // After the command name in parentheses: state is field 3, utime 14 and stime 15 (1-based).
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: f64 =
            fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        Some(ticks / CLOCK_TICKS_PER_SECOND)
    };
    let started = Instant::now();
    let mut quiet = 0;
    let mut before = cpu_seconds().context("reading Tower's CPU time")?;
    while started.elapsed() < limit {
        std::thread::sleep(Duration::from_secs(1));
        let now = cpu_seconds().context("reading Tower's CPU time")?;
        quiet = if now - before < 0.1 { quiet + 1 } else { 0 };
        before = now;
        if quiet >= 3 {
            return Ok(started.elapsed().as_secs_f64() - 3.0);
        }
    }
    Ok(limit.as_secs_f64())
}

/// `USER_HZ`, the unit of `/proc/<pid>/stat`'s CPU times: 100 on every Linux this runs on.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Tower's own account of its watch caches: every `tower_watch_cache_*` sample on `/metrics`.
fn watch_caches() -> Result<Vec<(String, f64)>> {
    let text = curl(&[&format!("http://{TOWER}/metrics")])?;
    Ok(text
        .lines()
        .filter(|line| line.starts_with("tower_watch_cache_"))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect())
}

/// The size in bytes of the first event of the live stream (the snapshot every browser gets on connecting).
fn snapshot_size(cookie: &str) -> Result<usize> {
    let folder = util::repo_root().join("target/bench-scale");
    let file = folder.join("snapshot.txt");
    // curl stops at its time limit (exit 28): the stream never ends by itself, so its status is not read.
    let _ = util::command("curl")
        .args(["-s", "-N", "--max-time", "8", "-H"])
        .arg(format!("Cookie: {cookie}"))
        .arg("-o")
        .arg(&file)
        .arg(format!("http://{TOWER}/api/v1/events"))
        .status();
    let stream = std::fs::read_to_string(&file).context("reading the stream's first events")?;
    let first = stream
        .split("\n\n")
        .find(|event| event.contains("\"snapshot\""))
        .context("the stream sent no snapshot within 8 s")?;
    Ok(first.len())
}

/// The Overview in Chromium: `end2end/bench/scale.bench.ts` against the Tower already running, its JSON line
/// read back.
fn browser(tower: &std::path::Path, services: usize) -> Result<BTreeMap<String, f64>> {
    let mut npx = crate::test::playwright_command("playwright.bench.config.ts", tower)?;
    npx.arg("bench/scale.bench.ts")
        .env("TOWER_BENCH_URL", format!("http://{TOWER}"))
        .env("TOWER_BENCH_SERVICES", services.to_string());
    let out = util::tee(&mut npx)?;
    if !out.success {
        bail!("the browser benchmark failed (see Playwright's report above)");
    }
    let line = out
        .stdout
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("{\"bench\":\"scale\""))
        .context("the browser benchmark printed no numbers")?;
    let value: serde_json::Value =
        serde_json::from_str(line).context("reading the browser's numbers")?;
    Ok(value
        .as_object()
        .map(|numbers| {
            numbers
                .iter()
                .filter_map(|(name, value)| Some((name.clone(), value.as_f64()?)))
                .collect()
        })
        .unwrap_or_default())
}

/// One line of the table: its label, the target, and how to read it from a measurement.
struct Row {
    label: &'static str,
    target: &'static str,
    value: fn(&Measured) -> Option<f64>,
    unit: &'static str,
}

fn browser_number(measured: &Measured, name: &str) -> Option<f64> {
    measured.browser.get(name).copied()
}

fn millis(text: &str) -> Option<f64> {
    let text = text.trim();
    if let Some(ms) = text.strip_suffix("ms") {
        ms.parse().ok()
    } else if let Some(us) = text.strip_suffix("us") {
        us.parse::<f64>().ok().map(|us| us / 1000.0)
    } else {
        text.strip_suffix('s')?
            .parse::<f64>()
            .ok()
            .map(|s| s * 1000.0)
    }
}

const ROWS: &[Row] = &[
    Row {
        label: "first picture after start",
        target: "< 10 s",
        value: |m| Some(m.first_picture_s),
        unit: "s",
    },
    Row {
        label: "busy after the first picture",
        target: "",
        value: |m| Some(m.settled_s),
        unit: "s",
    },
    Row {
        label: "Tower RSS, settled",
        target: "< 800 MB",
        value: |m| Some(m.tower_rss_mib),
        unit: "MiB",
    },
    Row {
        label: "GET /api/v1/services p50",
        target: "",
        value: |m| millis(&m.list_p50),
        unit: "ms",
    },
    Row {
        label: "GET /api/v1/services p99",
        target: "< 20 ms",
        value: |m| millis(&m.list_p99),
        unit: "ms",
    },
    Row {
        label: "GET /api/v1/services req/s",
        target: "",
        value: |m| Some(m.list_requests_per_second),
        unit: "",
    },
    Row {
        label: "SSE snapshot",
        target: "",
        value: |m| Some(m.snapshot_bytes as f64 / 1024.0),
        unit: "KiB",
    },
    Row {
        label: "Overview first row painted",
        target: "< 1 s",
        value: |m| browser_number(m, "first_row_ms"),
        unit: "ms",
    },
    Row {
        label: "search to one row",
        target: "< 100 ms",
        value: |m| browser_number(m, "search_ms"),
        unit: "ms",
    },
    Row {
        label: "clearing the search",
        target: "< 100 ms",
        value: |m| browser_number(m, "clear_ms"),
        unit: "ms",
    },
    Row {
        label: "scroll to the last row",
        target: "< 100 ms",
        value: |m| browser_number(m, "scroll_ms"),
        unit: "ms",
    },
    Row {
        label: "rows in the DOM",
        target: "< 500",
        value: |m| browser_number(m, "rows_in_dom"),
        unit: "",
    },
    Row {
        label: "DOM nodes",
        target: "",
        value: |m| browser_number(m, "dom_nodes"),
        unit: "",
    },
    Row {
        label: "JS heap used",
        target: "",
        value: |m| browser_number(m, "js_heap_mib"),
        unit: "MiB",
    },
    Row {
        label: "sandbox seeded",
        target: "",
        value: |m| Some(m.sandbox_seeded_s),
        unit: "s",
    },
    Row {
        label: "sandbox RSS",
        target: "< 2 GB",
        value: |m| Some(m.sandbox_rss_mib),
        unit: "MiB",
    },
];

fn print_table(all: &[Measured]) {
    let (Some(base), Some(largest)) = (all.first(), all.last()) else {
        return;
    };
    println!("\nFleet scale (release builds; sandbox and Tower as separate processes):");
    print!("{:<30}", "");
    for measured in all {
        print!(" {:>14}", format!("{} services", measured.services));
    }
    println!(" {:>8} {:>10}", "ratio", "target");
    for row in ROWS {
        print!("{:<30}", row.label);
        for measured in all {
            let shown = (row.value)(measured).map_or("—".to_string(), |v| {
                format!("{} {}", round(v), row.unit).trim().to_string()
            });
            print!(" {shown:>14}");
        }
        let ratio = match ((row.value)(base), (row.value)(largest)) {
            (Some(a), Some(b)) if a > 0.0 && all.len() > 1 => format!("{:.1}×", b / a),
            _ => String::new(),
        };
        println!(" {ratio:>8} {:>10}", row.target);
    }
    if all.len() > 1 {
        let added = (largest.services - base.services) as f64;
        println!(
            "Tower RSS per added service: {:.1} KiB (target: about 60 KB or less)",
            (largest.tower_rss_mib - base.tower_rss_mib) * 1024.0 / added
        );
    }
    for measured in all {
        if measured.caches.is_empty() {
            continue;
        }
        println!("\nTower's watch caches at {} services:", measured.services);
        for (name, value) in &measured.caches {
            println!("  {name} {}", round(*value));
        }
    }
}

/// Three significant figures at most, without a trailing `.0`.
fn round(value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_latencies_read_in_milliseconds() {
        assert_eq!(millis("4.70ms"), Some(4.7));
        assert_eq!(millis("812.00us"), Some(0.812));
        assert_eq!(millis("1.20s"), Some(1200.0));
        assert_eq!(millis("soon"), None);
    }

    #[test]
    fn numbers_keep_three_figures() {
        assert_eq!(round(2867.4), "2867");
        assert_eq!(round(12.345), "12.3");
        assert_eq!(round(0.8123), "0.81");
        assert_eq!(round(f64::NAN), "—");
    }
}
