//! `kube-up` (`cargo xtask kube up`): the sandbox's fixture world on real API servers, until Ctrl-C.
//!
//! Starts the sandbox (its Argo CD API, forge and Loki stay in use) and a testbed with a real kube-apiserver per
//! cluster, copies each cluster's objects onto it, applies Tower's generated RBAC, and writes
//! `target/kube/tower.yaml` (clusters read with Tower's read-only tokens) and `target/kube/kubeconfig` (the
//! administrator, one context per cluster), or into `TOWER_KUBE_OUT` when set. Then `tower serve --config target/kube/tower.yaml` shows the fleet
//! from the real servers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result};

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube_client=off".into()),
        )
        .init();
    let tower_listen: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()
        .context("the first argument is the address Tower will listen on")?;
    let started = Instant::now();
    let sandbox = sandbox::Sandbox::start_with(sandbox::Options::new(
        "127.0.0.1:0".parse().context("loopback")?,
    ))
    .await?;
    let platform = testbed::Platform::copy_of(&sandbox).await?;
    // The browser test runs its own beside a developer's, so it names another folder.
    let out = std::env::var_os("TOWER_KUBE_OUT").map_or_else(
        || testbed::world::repo_root().join("target/kube"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;

    let config = platform.tower_config(&sandbox, tower_listen)?;
    let tower_yaml = out.join("tower.yaml");
    write(
        &tower_yaml,
        &format!(
            "# Written by `cargo xtask kube up`: the sandbox's world on real API servers, valid while it runs.\n{}",
            serde_saphyr::to_string(&config)?
        ),
    )?;
    let kubeconfig = out.join("kubeconfig");
    write(&kubeconfig, &admin_kubeconfig(&platform.testbed)?)?;

    let seconds = started.elapsed().as_secs_f64();
    println!("\nThe platform's clusters run on real API servers (ready in {seconds:.1}s):");
    for cluster in platform.testbed.clusters() {
        println!("  {cluster:<12} {}", platform.testbed.url(cluster)?);
    }
    println!(
        "\n  tower serve --config {}\n  KUBECONFIG={} kubectl --context management get components -A\n\nCtrl-C stops them.",
        tower_yaml.display(),
        kubeconfig.display()
    );
    tokio::signal::ctrl_c().await?;
    drop(platform);
    drop(sandbox);
    for file in [tower_yaml, kubeconfig] {
        let _ = std::fs::remove_file(file);
    }
    Ok(())
}

/// A kubeconfig with one context per cluster, as the administrator.
fn admin_kubeconfig(testbed: &testbed::Testbed) -> Result<String> {
    let ca = std::fs::read(testbed.ca_file()).context("reading the testbed's CA")?;
    let ca = base64_encode(&ca);
    let mut clusters = Vec::new();
    let mut contexts = Vec::new();
    for name in testbed.clusters() {
        clusters.push(serde_json::json!({
            "name": name,
            "cluster": { "server": testbed.url(name)?, "certificate-authority-data": ca },
        }));
        contexts.push(serde_json::json!({
            "name": name,
            "context": { "cluster": name, "user": "admin" },
        }));
    }
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "contexts": contexts,
        "current-context": sandbox::topology::MANAGEMENT,
        "users": [{ "name": "admin", "user": { "token": testbed::ADMIN_TOKEN } }],
    });
    Ok(serde_saphyr::to_string(&kubeconfig)?)
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn write(path: &PathBuf, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
