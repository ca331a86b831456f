//! Scale mode's objects cost about their JSON text: the store keeps each object serialized, with only its
//! labels parsed beside it. Kept as JSON trees they took seven times as much, and `--scale 10000` needed
//! 8 GB; this catches a change that brings trees (or a second copy of every object) back.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use sandbox::{Options, Sandbox};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Generated services the test seeds: enough that per-service bytes dwarf the plan's world.
const SERVICES: usize = 100;
/// Live heap a generated service may take, with its share of runs: stored as JSON it takes about 120 KB
/// (its runs' TaskRuns most of it), as trees it took seven times that.
const BYTES_PER_SERVICE: usize = 250 * 1024;

/// The live heap a started sandbox holds, in bytes.
async fn heap_of(scale: Option<usize>) -> (usize, Sandbox) {
    let before = dhat::HeapStats::get().curr_bytes;
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.scale = scale;
    // Two runs a service, as at `--scale 10000` with the default runs.
    options.scale_runs = 2 * SERVICES;
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let after = dhat::HeapStats::get().curr_bytes;
    (after.saturating_sub(before), sandbox)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_service_costs_about_its_objects_json() {
    // Backtraces are only for reports this test does not write; one frame keeps the counting cheap.
    let profiler = dhat::Profiler::builder()
        .testing()
        .trim_backtraces(Some(1))
        .build();
    let (plain, plain_sandbox) = heap_of(None).await;
    let (scaled, scaled_sandbox) = heap_of(Some(SERVICES)).await;
    let per_service = scaled.saturating_sub(plain) / SERVICES;
    eprintln!("{per_service} bytes per generated service ({plain} bytes without them)");
    assert!(
        per_service <= BYTES_PER_SERVICE,
        "a generated service takes {per_service} bytes of live heap (limit {BYTES_PER_SERVICE})"
    );
    drop(profiler);
    drop((plain_sandbox, scaled_sandbox));
}
