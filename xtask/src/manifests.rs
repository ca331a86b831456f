//! `cargo xtask manifests`: regenerates the roles in `deploy/kubernetes/` from the kinds Tower watches
//! (`server/src/fleet/watched.rs`), then validates every manifest there against Kubernetes' own schemas.
//! `--check` (and `cargo xtask test`) only validates; the server's tests fail when a role drifted.
//!
//! The validator is PyPI's `kubernetes-validate` (the OpenAPI schemas of each Kubernetes release, bundled),
//! pinned, in a venv under `target/`. kustomize is not needed: every file of each kustomization folder is
//! validated as it is (the overlays only add files and an image tag), and `server/tests/it/manifests.rs`
//! checks that each `kustomization.yaml` lists every file of its folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::util::{self, repo_root};

/// The validator's version: its release number is the newest Kubernetes it knows.
const VALIDATOR: &str = "kubernetes-validate==1.31.0";
/// The Kubernetes version the manifests must be valid for.
const KUBERNETES: &str = "1.31.0";
/// Where the manifests live.
const DIR: &str = "deploy/kubernetes";

/// Regenerates the roles (unless `check`), then validates.
pub fn manifests(check: bool) -> Result<()> {
    if !check {
        let mut cmd = util::cargo(["test", "-p", "server", "--lib", "fleet::watched"]);
        cmd.env("TOWER_WRITE_MANIFESTS", "1");
        util::run(&mut cmd).context("regenerating the roles")?;
    }
    validate()
}

/// Whether this runs on CI, where a validator that cannot be installed is a failure rather than a skip.
fn on_ci() -> bool {
    std::env::var_os("CI").is_some_and(|ci| !ci.is_empty() && ci != "false" && ci != "0")
}

/// Validates every manifest under `deploy/kubernetes/` with `--strict` (unknown fields are errors). A kind
/// the validator has no schema for (a CRD's) is an error too: none is expected here.
pub fn validate() -> Result<()> {
    let validator = match install() {
        Ok(validator) => validator,
        Err(error) if !on_ci() => {
            println!(
                "skipping the manifests' validation: {error:#} (CI=true makes this a failure)"
            );
            return Ok(());
        }
        Err(error) => return Err(error),
    };
    let files = manifest_files(&repo_root().join(DIR))?;
    if files.is_empty() {
        bail!("no manifests under {DIR}");
    }
    let mut cmd = util::command(&validator);
    cmd.args(["--strict", "--quiet", "--kubernetes-version", KUBERNETES])
        .args(&files);
    util::announce(&cmd);
    let output = cmd
        .output()
        .with_context(|| format!("could not start {}", validator.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    print!("{text}");
    // A kind without a schema is only a warning to the validator (exit 0); here it is a mistake.
    let unknown = text.lines().filter(|l| l.starts_with("WARN")).count();
    if !output.status.success() || unknown > 0 {
        bail!("the manifests under {DIR} do not validate against Kubernetes {KUBERNETES}");
    }
    println!(
        "{} manifest files valid for Kubernetes {KUBERNETES} (strict)",
        files.len()
    );
    Ok(())
}

/// The validator, installed into `target/venv-manifests` unless the pinned version is already there.
fn install() -> Result<PathBuf> {
    let venv = repo_root().join("target/venv-manifests");
    let bin = venv.join("bin");
    let validator = bin.join("kubernetes-validate");
    let pip = bin.join("pip");
    if !pip.exists() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        util::run(util::command(&python).args(["-m", "venv"]).arg(&venv))
            .context("creating the validator's venv (python3 -m venv)")?;
    }
    let installed = util::command(&pip)
        .args(["show", "kubernetes-validate"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let pinned = VALIDATOR.trim_start_matches("kubernetes-validate==");
    if !installed
        .lines()
        .any(|l| l.trim() == format!("Version: {pinned}"))
    {
        util::run(util::command(&pip).args(["install", "--quiet", VALIDATOR]))
            .with_context(|| format!("pip install {VALIDATOR}"))?;
    }
    Ok(validator)
}

/// Every YAML file under `dir` except the kustomizations (kustomize's own, not Kubernetes objects), sorted.
fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml")
                && path.file_name().is_some_and(|n| n != "kustomization.yaml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_manifest_but_the_kustomizations_is_validated() {
        let files = manifest_files(&repo_root().join(DIR)).expect("the folder reads");
        let names: Vec<String> = files
            .iter()
            .map(|f| util::display_path(f).replace('\\', "/"))
            .collect();
        assert!(names.contains(&"deploy/kubernetes/base/deployment.yaml".to_string()));
        assert!(names.contains(&"deploy/kubernetes/workload-cluster/rbac.yaml".to_string()));
        assert!(!names.iter().any(|n| n.ends_with("kustomization.yaml")));
    }
}
