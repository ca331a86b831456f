//! `cargo xtask bench sandbox-memory`: starts `tower sandbox --speed 10` (release build, as users run it)
//! and reads its resident memory from `/proc` every 30 seconds, then prints the samples and the growth from
//! the first minute to the last. Prometheus, which the sandbox starts when Debian's package is installed,
//! is a separate process and printed beside it for reference.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::bench::{release_tower, separate_sandbox};
use crate::util;

/// Options of the sandbox memory benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct MemoryArgs {
    /// Minutes to watch the sandbox for.
    #[arg(long, default_value_t = 10)]
    pub minutes: u64,
    /// Simulated seconds per real second.
    #[arg(long, default_value_t = 10.0)]
    pub speed: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 30)]
    pub every: u64,
}

/// One reading of `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Resident {
    total: u64,
    anonymous: u64,
}

/// Runs the benchmark.
pub fn sandbox_memory(args: &MemoryArgs) -> Result<()> {
    if args.minutes == 0 || args.every == 0 {
        bail!("--minutes and --every must be at least 1");
    }
    let binary = release_tower()?;
    let folder = util::repo_root().join("target/bench-sandbox-memory");
    // With its Prometheus: its RSS is read too.
    let (child, config) =
        separate_sandbox(&binary, &folder, &["--speed", &args.speed.to_string()])?;
    let pid = child.0.id();

    let started = Instant::now();
    let end = Duration::from_secs(args.minutes * 60);
    let mut samples: Vec<(u64, Resident, Option<Resident>)> = Vec::new();
    println!(
        "{:>6} {:>12} {:>12} {:>16}",
        "time", "RSS", "anonymous", "prometheus RSS"
    );
    let mut next = Duration::from_secs(args.every);
    while next <= end {
        std::thread::sleep(next.saturating_sub(started.elapsed()));
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .context("the sandbox exited early")?;
        let resident = parse_status(&status).context("reading /proc/<pid>/status")?;
        let prometheus = prometheus_child(pid);
        println!(
            "{:>5}s {:>9.1} MB {:>9.1} MB {:>13}",
            next.as_secs(),
            mb(resident.total),
            mb(resident.anonymous),
            prometheus.map_or("-".to_string(), |p| format!("{:.1} MB", mb(p.total)))
        );
        samples.push((next.as_secs(), resident, prometheus));
        next += Duration::from_secs(args.every);
    }
    drop(child);
    let _ = std::fs::remove_file(&config);

    let first_minute = samples
        .iter()
        .find(|(at, _, _)| *at >= 60)
        .or(samples.first())
        .context("no samples")?;
    let last = samples.last().context("no samples")?;
    let peak = samples
        .iter()
        .map(|(_, r, _)| r.total)
        .max()
        .unwrap_or_default();
    println!(
        "\ntower sandbox --speed {}: RSS {:.1} MB at {} s, {:.1} MB at {} s ({:+.1} MB, {:+.1}%), peak {:.1} MB",
        args.speed,
        mb(first_minute.1.total),
        first_minute.0,
        mb(last.1.total),
        last.0,
        mb(last.1.total) - mb(first_minute.1.total),
        percent(first_minute.1.total, last.1.total),
        mb(peak),
    );
    Ok(())
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn percent(from: u64, to: u64) -> f64 {
    if from == 0 {
        0.0
    } else {
        (to as f64 - from as f64) * 100.0 / from as f64
    }
}

/// `VmRSS` and `RssAnon` of a `/proc/<pid>/status`.
fn parse_status(status: &str) -> Option<Resident> {
    let field = |name: &str| {
        status.lines().find_map(|line| {
            line.strip_prefix(name)?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()
        })
    };
    Some(Resident {
        total: field("VmRSS:")?,
        anonymous: field("RssAnon:")?,
    })
}

/// The Prometheus the sandbox started, if any.
fn prometheus_child(parent: u32) -> Option<Resident> {
    // Each thread lists the children it spawned; Prometheus comes from the supervisor's spawner thread.
    let tasks = std::fs::read_dir(format!("/proc/{parent}/task")).ok()?;
    let children: String = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .collect::<Vec<_>>()
        .join(" ");
    children.split_whitespace().find_map(|pid| {
        let comm = std::fs::read_to_string(Path::new("/proc").join(pid).join("comm")).ok()?;
        if comm.trim() != "prometheus" {
            return None;
        }
        parse_status(&std::fs::read_to_string(Path::new("/proc").join(pid).join("status")).ok()?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_status_is_read() {
        let status =
            "Name:\ttower\nVmRSS:\t   65768 kB\nRssAnon:\t   32408 kB\nRssFile:\t   33360 kB\n";
        assert_eq!(
            parse_status(status),
            Some(Resident {
                total: 65768,
                anonymous: 32408
            })
        );
        assert_eq!(parse_status("Name:\ttower\n"), None);
        assert!((percent(1000, 1100) - 10.0).abs() < 1e-9);
    }
}
