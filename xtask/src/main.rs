//! Tower's build orchestration, run as `cargo xtask <command>` (see `.cargo/config.toml`).

mod bench;
mod dist;
mod image;
mod kube;
mod leftovers;
mod manifests;
mod memory;
mod run;
mod test;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Build, run and test Tower.
#[derive(Parser)]
#[command(name = "xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the SPA into dist/: hashed wasm, JS and CSS, index.html, precompressed copies.
    Dist {
        /// Page template to use instead of app/index.html.
        #[arg(long, value_name = "PATH")]
        index_html: Option<PathBuf>,
    },
    /// Build the SPA and the server, then serve at http://127.0.0.1:8080 with the sandbox.
    Run {
        /// Extra arguments for `tower serve`, after `--`.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Measure what the issues set targets for: service list latency and throughput at scale (default),
    /// or the sandbox's memory over ten minutes (`bench sandbox-memory`).
    Bench(bench::BenchArgs),
    /// Build the container image: dist/, a static musl `tower` with the SPA embedded, an OCI archive FROM
    /// scratch at target/image/tower.oci.tar (buildah); `--smoke` then runs the archive's binary.
    Image(image::ImageArgs),
    /// The real Kubernetes API server tier: `kube build` builds kube-apiserver and etcd from their Go
    /// modules (testbed/) into target/kube/bin.
    Kube {
        #[command(subcommand)]
        command: kube::KubeCommand,
    },
    /// Regenerate the roles in deploy/kubernetes/ from the kinds Tower watches, then validate every manifest
    /// there against Kubernetes' schemas (`--check`: validate only).
    Manifests {
        /// Only validate; leave the files as they are.
        #[arg(long)]
        check: bool,
    },
    /// Format check, clippy (native and wasm32), tests, then the Playwright suite.
    Test {
        /// Skip the SPA build and the browser tests.
        #[arg(long)]
        skip_e2e: bool,
    },
}

fn main() -> ExitCode {
    let result: Result<()> = match Cli::parse().command {
        Command::Dist { index_html } => dist::dist(index_html.as_deref()),
        Command::Run { args } => run::run(&args),
        Command::Manifests { check } => manifests::manifests(check),
        Command::Test { skip_e2e } => test::test(skip_e2e),
        Command::Bench(args) => bench::bench(&args),
        Command::Image(args) => image::image(&args),
        Command::Kube { command } => kube::kube(&command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line with the whole cause chain; anyhow's `Debug` would add a backtrace of
            // xtask itself whenever RUST_BACKTRACE is set, which says nothing about the failure.
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
