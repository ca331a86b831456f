//! `cargo xtask kube build`: the real Kubernetes API server and etcd that Tower's Kubernetes side is held to,
//! built from their published Go modules (`testbed/kube-apiserver`, `testbed/etcd`, each its own module so
//! their dependency graphs never have to agree) into `target/kube/`, and beside them `github-client`
//! (`testbed/github-client`), a second GitHub client (go-github) the sandbox's forge is held to.
//!
//! A binary is rebuilt only when its module changed: a stamp beside it holds the SHA-256 of the module's
//! `go.mod`, `go.sum` and `main.go` it was built from. Versions are pinned in those files: Kubernetes
//! v1.37.2 (its staging modules replaced by the published v0.37.2), etcd v3.6.16 and go-github v74.0.0.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::util::{self, display_path, repo_root};

/// What `cargo xtask kube` does.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum KubeCommand {
    /// Build kube-apiserver, etcd and the go-github client from their Go modules into target/kube/ (only
    /// when their modules changed), printing how long each took.
    Build,
    /// Build them, then run the sandbox's world on real API servers (etcd and a kube-apiserver per cluster)
    /// until Ctrl-C, writing target/kube/tower.yaml for `tower serve --config target/kube/tower.yaml`.
    Up {
        /// Where the Tower started with target/kube/tower.yaml will listen.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
    },
}

/// `cargo xtask kube <command>`.
pub fn kube(command: &KubeCommand) -> Result<()> {
    match command {
        KubeCommand::Build => build().map(|_| ()),
        KubeCommand::Up { listen } => {
            build()?;
            util::run(&mut util::cargo([
                "run", "-p", "testbed", "--bin", "kube-up", "--", listen,
            ]))
        }
    }
}

/// The test command's step: builds the binaries the `testbed` tests run. Without Go it fails on CI (`CI`
/// set), where the tier must never be skipped, and elsewhere says the tier will be skipped.
pub fn test_step() -> Result<()> {
    if !util::on_path("go") && std::env::var_os("CI").is_none() {
        println!("warning: `go` is missing: the real-API-server tests (testbed) will be skipped");
        return Ok(());
    }
    build().map(|_| ())
}

/// A binary built from one module under `testbed/`.
struct Binary {
    /// The module's folder under `testbed/`, and the binary's name in `target/kube/`.
    name: &'static str,
}

const BINARIES: [Binary; 3] = [
    Binary { name: "etcd" },
    Binary {
        name: "kube-apiserver",
    },
    // Small (about 9 s on a cold module cache once the standard library is compiled): the testbed's
    // github_client test runs it against the sandbox's forge.
    Binary {
        name: "github-client",
    },
];

/// Where the binaries go.
pub fn bin_dir() -> PathBuf {
    repo_root().join("target/kube/bin")
}

/// Builds every binary whose module changed; returns the binaries' paths.
pub fn build() -> Result<Vec<PathBuf>> {
    if !util::on_path("go") {
        bail!(
            "`go` is missing: the real-API-server tier builds kube-apiserver and etcd from Go modules"
        );
    }
    fs::create_dir_all(bin_dir()).context("creating target/kube/bin")?;
    BINARIES.iter().map(build_one).collect()
}

fn build_one(binary: &Binary) -> Result<PathBuf> {
    let module = repo_root().join("testbed").join(binary.name);
    let output = bin_dir().join(binary.name);
    let stamp = bin_dir().join(format!("{}.stamp", binary.name));
    let wanted = module_digest(&module)?;
    if output.is_file() && fs::read_to_string(&stamp).is_ok_and(|built| built == wanted) {
        println!("{}: up to date ({})", binary.name, display_path(&output));
        return Ok(output);
    }
    let started = Instant::now();
    let mut go = util::command("go");
    go.current_dir(&module)
        .args(["build", "-trimpath", "-mod=readonly"])
        // No symbol table or DWARF: nothing debugs these binaries, and linking kube-apiserver's without them
        // is seconds faster.
        .arg(format!("-ldflags=-s -w {}", version_flags(&module)?))
        .arg("-o")
        .arg(&output)
        .arg(".")
        // Reproducible and static: no cgo, no VCS stamping (the repository is not the module's).
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-buildvcs=false");
    util::run(&mut go).with_context(|| format!("building {}", binary.name))?;
    fs::write(&stamp, &wanted).with_context(|| format!("writing {}", display_path(&stamp)))?;
    println!(
        "{}: built in {:.0}s ({})",
        binary.name,
        started.elapsed().as_secs_f64(),
        display_path(&output)
    );
    Ok(output)
}

/// The linker flags stamping Kubernetes' version into kube-apiserver (without them it calls itself
/// `v0.0.0-master`), from the `k8s.io/kubernetes` version its `go.mod` requires; none for other modules.
fn version_flags(module: &Path) -> Result<String> {
    let path = module.join("go.mod");
    let go_mod =
        fs::read_to_string(&path).with_context(|| format!("reading {}", display_path(&path)))?;
    // `require k8s.io/kubernetes vX` on its own, or a line of a `require (…)` block.
    let Some(version) = go_mod.lines().find_map(|line| {
        let line = line.trim();
        line.strip_prefix("require ")
            .unwrap_or(line)
            .strip_prefix("k8s.io/kubernetes ")
            .and_then(|rest| rest.split_whitespace().next())
    }) else {
        return Ok(String::new());
    };
    let Some((major, minor)) = version
        .strip_prefix('v')
        .and_then(|v| v.split_once('.'))
        .and_then(|(major, rest)| Some((major, rest.split('.').next()?)))
    else {
        bail!(
            "{}: `{version}` is not a Kubernetes version",
            display_path(&path)
        );
    };
    let package = "k8s.io/component-base/version";
    Ok(format!(
        "-X {package}.gitVersion={version} -X {package}.gitMajor={major} -X {package}.gitMinor={minor} \
         -X {package}.gitTreeState=clean"
    ))
}

/// SHA-256 over what a module's build depends on, as hex.
fn module_digest(module: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    for file in ["go.mod", "go.sum", "main.go"] {
        let path = module.join(file);
        let bytes = fs::read(&path).with_context(|| format!("reading {}", display_path(&path)))?;
        hasher.update(file.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}
