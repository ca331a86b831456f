//! The native part of `cargo xtask bench pipelines`: times the DAG and its layout of a 300-task pipeline,
//! a search of a 100,000-line log for a term on line 90,000, and the wrap index of that log, and prints
//! p50/p99/max in milliseconds. Run it in release: `cargo run --release -p shared --example pipelines_bench`.
//! Arguments: `[layout runs] [search runs]` (default 200 and 50).

use std::hint::black_box;
use std::time::Instant;

use shared::pipelines::console::{LogBuffer, RowIndex, SYNTHETIC_NEEDLE, synthetic_log};
use shared::pipelines::graph::graph;
use shared::pipelines::layout::{layout, synthetic_pipeline};

/// Tasks in the benchmarked pipeline.
const TASKS: usize = 300;
/// Lines in the benchmarked log.
const LINES: usize = 100_000;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let layout_runs = args.next().and_then(Result::ok).unwrap_or(200).max(1);
    let search_runs = args.next().and_then(Result::ok).unwrap_or(50).max(1);

    let detail = synthetic_pipeline(TASKS, 12);
    let sample = layout(&graph(&detail));
    println!(
        "{TASKS}-task pipeline: {} edges, {} layers, {:.0} x {:.0} px",
        graph(&detail).edges.len(),
        sample.nodes.iter().map(|n| n.layer).max().unwrap_or(0) + 1,
        sample.width,
        sample.height
    );
    let mut graph_only = Vec::with_capacity(layout_runs);
    let mut both = Vec::with_capacity(layout_runs);
    for run in 0..layout_runs {
        // A different pipeline every run, so no run is faster for having seen the same input.
        let detail = synthetic_pipeline(TASKS, run as u64);
        let started = Instant::now();
        let g = black_box(graph(black_box(&detail)));
        graph_only.push(ms(started));
        black_box(layout(&g));
        both.push(ms(started));
    }
    report(
        &format!("graph of a {TASKS}-task pipeline"),
        &mut graph_only,
    );
    report(
        &format!("graph + layout of a {TASKS}-task pipeline"),
        &mut both,
    );

    let lines = synthetic_log(LINES, 7);
    let started = Instant::now();
    let mut buffer = LogBuffer::new();
    buffer.push_lines(lines.iter().cloned());
    let mut fill = vec![ms(started)];
    report(&format!("LogBuffer of {LINES} lines filled"), &mut fill);
    for (label, term, case_sensitive) in [
        ("case-sensitive", SYNTHETIC_NEEDLE, true),
        ("case-insensitive", "LEDGER::RECONCILES_A_LEAP", false),
    ] {
        let mut times = Vec::with_capacity(search_runs);
        let mut found = 0;
        for _ in 0..search_runs {
            let started = Instant::now();
            let result = black_box(buffer.search(black_box(term), case_sensitive));
            times.push(ms(started));
            found = result.matches.first().map_or(0, |m| m.line + 1);
        }
        report(
            &format!("search of {LINES} lines, {label}, hit on line {found}"),
            &mut times,
        );
    }
    let mut times = Vec::with_capacity(search_runs);
    for _ in 0..search_runs {
        let started = Instant::now();
        black_box(RowIndex::of_buffer(black_box(&buffer), 120));
        times.push(ms(started));
    }
    report(
        &format!("RowIndex of {LINES} lines at 120 columns"),
        &mut times,
    );
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

/// Prints p50, p99 and max of `times` (milliseconds).
fn report(what: &str, times: &mut [f64]) {
    times.sort_by(f64::total_cmp);
    let rank = |q: f64| {
        let at = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len().max(1));
        times.get(at - 1).copied().unwrap_or(f64::NAN)
    };
    println!(
        "{what:<62} p50 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms  ({} runs)",
        rank(0.5),
        rank(0.99),
        times.last().copied().unwrap_or(f64::NAN),
        times.len()
    );
}
