//! `cargo xtask run`: builds the SPA and the server, then becomes the server, serving `dist/`
//! with the sandbox upstreams.

use std::process::Command;

use anyhow::Result;

use crate::dist;
use crate::util::{self, repo_root};

/// Where the dev server listens.
const LISTEN: &str = "127.0.0.1:8080";

/// Builds everything and runs `tower serve --sandbox`, passing `extra` through.
pub fn run(extra: &[String]) -> Result<()> {
    dist::dist(None)?;
    util::run(&mut util::cargo([
        "build", "-p", "server", "--bin", "tower",
    ]))?;

    let root = repo_root();
    let mut tower = util::command(root.join("target/debug/tower"));
    tower
        .args(["serve", "--sandbox", "--listen", LISTEN, "--assets"])
        .arg(root.join("dist"))
        .args(extra);
    util::announce(&tower);
    println!("Tower is running at http://{LISTEN}");
    exec(tower)
}

/// Replaces this process with the server, so Ctrl-C (sent to the whole foreground process
/// group) reaches only the server and nothing is left behind or orphaned; `cargo run` execs
/// xtask the same way, so the terminal waits on the server directly.
#[cfg(unix)]
fn exec(mut cmd: Command) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let err = cmd.exec();
    Err(anyhow::Error::new(err).context("could not start target/debug/tower"))
}

/// Elsewhere, wait for the server; the console delivers Ctrl-C to both processes.
#[cfg(not(unix))]
fn exec(mut cmd: Command) -> Result<()> {
    let status = cmd.status()?;
    anyhow::ensure!(status.success(), "tower exited with {status}");
    Ok(())
}
