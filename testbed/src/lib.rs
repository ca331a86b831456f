//! The platform's clusters on real Kubernetes API servers: one etcd and one `kube-apiserver` per cluster
//! (`management`, `dev`, `prod`), each under its own `--etcd-prefix`, on loopback, built from their Go modules by
//! `cargo xtask kube build` (`testbed/kube-apiserver`, `testbed/etcd`).
//!
//! No kubelet, scheduler or controller manager runs, as in controller-runtime's envtest: objects stay as
//! written, which is what a copy of the sandbox's fixture world wants. The servers authenticate static tokens
//! ([`ADMIN_TOKEN`] is in `system:masters`) and service-account tokens, and authorize with RBAC only.
//!
//! Every process is started through the sandbox's [`Supervisor`], so none outlives the test or `kube-up` that
//! started it, however that ends, and its folder is under a `tower-sandbox-` root the leftover check knows.

pub mod pki;
pub mod world;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use kube::Client;
use sandbox::supervisor::{Process, Supervisor};
use secrecy::SecretString;

/// The bearer token of the testbed's administrator (group `system:masters`).
pub const ADMIN_TOKEN: &str = "testbed-admin-token";
/// How long a fresh API server may take to answer `/readyz` (a few seconds here; CI's two cores are slower).
const READY_WITHIN: Duration = Duration::from_secs(90);

/// Where `cargo xtask kube build` puts the binaries, unless `TOWER_KUBE_BIN` names another folder.
pub fn bin_dir() -> PathBuf {
    std::env::var_os("TOWER_KUBE_BIN")
        .map_or_else(|| world::repo_root().join("target/kube/bin"), PathBuf::from)
}

/// Whether the binaries are built. Tests skip without them, except on CI (`CI` set), where a missing binary
/// fails: the test command builds them first, so missing means the build broke.
pub fn binaries_present() -> bool {
    let present = ["etcd", "kube-apiserver"]
        .iter()
        .all(|name| bin_dir().join(name).is_file());
    if !present && std::env::var_os("CI").is_some() {
        panic!(
            "{} lacks etcd or kube-apiserver on CI: `cargo xtask kube build` must have built them",
            bin_dir().display()
        );
    }
    present
}

/// One etcd and an API server per cluster, running until dropped.
pub struct Testbed {
    // Processes before the supervisor: fields drop in order, and the supervisor removes their folders.
    etcd: Option<Process>,
    servers: BTreeMap<String, ApiServer>,
    etcd_port: u16,
    /// Logs, etcd's data and the PKI.
    dir: PathBuf,
    pki: pki::Pki,
    supervisor: Supervisor,
}

/// One cluster's API server.
struct ApiServer {
    port: u16,
    process: Option<Process>,
}

impl Testbed {
    /// Starts etcd and one API server per name in `clusters`, and waits until every server is ready.
    pub async fn start(clusters: &[&str]) -> Result<Self> {
        let supervisor = Supervisor::new()?;
        let dir = supervisor.folder("testbed")?;
        let pki = pki::Pki::create(&dir.join("pki"), ADMIN_TOKEN)?;
        let etcd_port = free_port()?;
        let mut testbed = Self {
            etcd: None,
            servers: BTreeMap::new(),
            etcd_port,
            dir,
            pki,
            supervisor,
        };
        testbed.start_etcd()?;
        for cluster in clusters {
            let port = free_port()?;
            testbed.servers.insert(
                (*cluster).to_owned(),
                ApiServer {
                    port,
                    process: None,
                },
            );
            testbed.spawn_server(cluster)?;
        }
        let started = Instant::now();
        for cluster in clusters {
            testbed.wait_ready(cluster).await?;
        }
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            "testbed API servers ready"
        );
        Ok(testbed)
    }

    /// The clusters, by name.
    pub fn clusters(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// `cluster`'s API server URL.
    pub fn url(&self, cluster: &str) -> Result<String> {
        Ok(format!("https://127.0.0.1:{}", self.server(cluster)?.port))
    }

    /// The PEM file of the certificate authority that signed every server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.pki.ca_file()
    }

    /// A client of `cluster` as the administrator.
    pub fn admin(&self, cluster: &str) -> Result<Client> {
        self.client(cluster, ADMIN_TOKEN)
    }

    /// A client of `cluster` with a bearer `token`, trusting the testbed's CA.
    pub fn client(&self, cluster: &str, token: &str) -> Result<Client> {
        server::upstream::kube::client_for_url(
            &self.url(cluster)?,
            Some(SecretString::from(token.to_owned())),
            Some(self.ca_file()),
        )
    }

    /// Kills etcd: the API servers stay up and answer errors until [`Self::start_etcd`].
    pub fn stop_etcd(&mut self) {
        if let Some(etcd) = self.etcd.take() {
            etcd.stop();
        }
    }

    /// Starts etcd on its port and data folder (the data survives a stop).
    pub fn start_etcd(&mut self) -> Result<()> {
        let data = self.dir.join("etcd");
        let client = format!("http://127.0.0.1:{}", self.etcd_port);
        let peer_port = free_port()?;
        let peer = format!("http://127.0.0.1:{peer_port}");
        let mut etcd = Command::new(bin_dir().join("etcd"));
        etcd.arg("--name=testbed")
            .arg(format!("--data-dir={}", data.display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=testbed={peer}"))
            .arg("--log-level=error")
            // A restarted etcd keeps its data but joins the cluster it already is.
            .arg("--initial-cluster-state=new");
        quiet(&mut etcd, &self.dir.join("etcd.log"))?;
        self.etcd = Some(self.supervisor.spawn("etcd", etcd)?);
        Ok(())
    }

    /// Kills `cluster`'s API server: its clients' connections break and new ones are refused.
    pub fn stop_server(&mut self, cluster: &str) {
        if let Some(process) = self
            .servers
            .get_mut(cluster)
            .and_then(|server| server.process.take())
        {
            process.stop();
        }
    }

    /// Starts `cluster`'s API server again on its port; returns once it is ready.
    pub async fn start_server(&mut self, cluster: &str) -> Result<()> {
        self.spawn_server(cluster)?;
        self.wait_ready(cluster).await
    }

    /// Deletes `key` (`/<cluster>/pods/<namespace>/<name>`) from etcd behind the API servers' backs, as a
    /// change made while no server watched: only a client that lists again sees it.
    pub async fn delete_from_etcd(&self, key: &str) -> Result<()> {
        use base64::Engine as _;
        let key = base64::engine::general_purpose::STANDARD.encode(key);
        let answer: serde_json::Value = reqwest::Client::new()
            .post(format!(
                "http://127.0.0.1:{}/v3/kv/deleterange",
                self.etcd_port
            ))
            .json(&serde_json::json!({ "key": key }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if answer["deleted"].as_str() != Some("1") {
            bail!("etcd had no key to delete: {answer}");
        }
        Ok(())
    }

    /// Compacts etcd's history up to its current revision. An API server's watch cache still serves older
    /// resourceVersions it holds, so a watch from before the compaction is answered `410 Gone` once the server
    /// has restarted ([`Self::stop_server`], [`Self::start_server`]).
    pub async fn compact(&self) -> Result<()> {
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{}/v3/kv", self.etcd_port);
        // A range read of any key answers with the store's current revision.
        let range: serde_json::Value = http
            .post(format!("{base}/range"))
            .json(&serde_json::json!({ "key": "AA==" }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let revision = range["header"]["revision"]
            .as_str()
            .context("etcd's range answer has no revision")?;
        http.post(format!("{base}/compaction"))
            .json(&serde_json::json!({ "revision": revision, "physical": true }))
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    fn server(&self, cluster: &str) -> Result<&ApiServer> {
        self.servers
            .get(cluster)
            .with_context(|| format!("the testbed has no cluster `{cluster}`"))
    }

    fn spawn_server(&mut self, cluster: &str) -> Result<()> {
        let port = self.server(cluster)?.port;
        let pki = &self.pki;
        let mut apiserver = Command::new(bin_dir().join("kube-apiserver"));
        apiserver
            .arg(format!(
                "--etcd-servers=http://127.0.0.1:{}",
                self.etcd_port
            ))
            .arg(format!("--etcd-prefix=/{cluster}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--advertise-address=127.0.0.1")
            .arg(format!("--secure-port={port}"))
            .arg(format!("--tls-cert-file={}", pki.serving_cert().display()))
            .arg(format!(
                "--tls-private-key-file={}",
                pki.serving_key().display()
            ))
            .arg(format!("--token-auth-file={}", pki.tokens().display()))
            .arg("--authorization-mode=RBAC")
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg(format!(
                "--service-account-key-file={}",
                pki.service_account_public().display()
            ))
            .arg(format!(
                "--service-account-signing-key-file={}",
                pki.service_account_key().display()
            ))
            // Kubernetes' default range, which the fixtures' Services take their cluster IPs from.
            .arg("--service-cluster-ip-range=10.96.0.0/12")
            // No controller manager creates the `default` service accounts pods would need.
            .arg("--disable-admission-plugins=ServiceAccount")
            // With no kube-controller-manager there is no endpoint to reconcile.
            .arg("--endpoint-reconciler-type=none")
            // Flow control's bootstrap answers 429 for a while after start; tests want answers.
            .arg("--enable-priority-and-fairness=false")
            .arg("--profiling=false")
            .arg("-v=0");
        quiet(&mut apiserver, &self.dir.join(format!("{cluster}.log")))?;
        let process = self
            .supervisor
            .spawn(&format!("kube-apiserver ({cluster})"), apiserver)?;
        if let Some(server) = self.servers.get_mut(cluster) {
            server.process = Some(process);
        }
        Ok(())
    }

    /// Waits until `cluster`'s `/readyz` answers `ok`, failing early with the server's log when it exits.
    async fn wait_ready(&self, cluster: &str) -> Result<()> {
        let client = self.admin(cluster)?;
        let deadline = Instant::now() + READY_WITHIN;
        let log = self.dir.join(format!("{cluster}.log"));
        loop {
            let request = http::Request::get("/readyz").body(Vec::new())?;
            if let Ok(answer) = client.request_text(request).await
                && answer.trim() == "ok"
            {
                return Ok(());
            }
            let exited = self
                .server(cluster)?
                .process
                .as_ref()
                .map(Process::try_wait)
                .transpose()?
                .flatten();
            if exited.is_some() || Instant::now() > deadline {
                let tail = std::fs::read_to_string(&log).unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(20).collect();
                bail!(
                    "kube-apiserver for {cluster} {}; its log ends:\n{}",
                    match exited {
                        Some(status) => format!("exited ({status})"),
                        None => format!("not ready within {READY_WITHIN:?}"),
                    },
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A free loopback port (bound then released: the child binds it a moment later).
fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?.port())
}

/// Sends a child's output to `log`, which a failed start quotes.
fn quiet(command: &mut Command, log: &Path) -> Result<()> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    Ok(())
}

/// A testbed holding a sandbox's world: every cluster of the sandbox on a real API server with the same
/// objects, Tower's generated RBAC applied, and a token of Tower's service account on each.
pub struct Platform {
    pub testbed: Testbed,
    /// Tower's read-only token per cluster.
    pub tokens: BTreeMap<String, String>,
}

impl Platform {
    /// Starts a testbed with `sandbox`'s clusters and copies each one's objects onto its API server.
    pub async fn copy_of(sandbox: &sandbox::Sandbox) -> Result<Self> {
        let mut names = vec![sandbox::topology::MANAGEMENT.to_owned()];
        names.extend(
            sandbox
                .workload_clusters()
                .into_iter()
                .map(|(_, name)| name),
        );
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let testbed = Testbed::start(&refs).await?;
        let loads = names.iter().map(|name| {
            let testbed = &testbed;
            async move {
                let store = sandbox
                    .cluster(name)
                    .with_context(|| format!("the sandbox has no cluster {name}"))?;
                let client = testbed.admin(name)?;
                let types = store.resource_types();
                world::install_crds(&client, &world::crds(&types)?)
                    .await
                    .with_context(|| format!("installing CRDs on {name}"))?;
                let count = world::load(&client, &types, store.objects())
                    .await
                    .with_context(|| format!("loading {name}'s objects"))?;
                let (rbac, (namespace, account)) = if name == sandbox::topology::MANAGEMENT {
                    (world::management_rbac()?, world::MANAGEMENT_ACCOUNT)
                } else {
                    (world::workload_rbac()?, world::WORKLOAD_ACCOUNT)
                };
                world::apply_documents(&client, &rbac)
                    .await
                    .with_context(|| format!("applying Tower's RBAC on {name}"))?;
                let token = world::token_for(&client, namespace, account).await?;
                tracing::info!(cluster = %name, objects = count, "loaded");
                anyhow::Ok((name.clone(), token))
            }
        });
        let tokens = futures::future::try_join_all(loads)
            .await?
            .into_iter()
            .collect();
        Ok(Self { testbed, tokens })
    }

    /// `sandbox`'s Tower configuration (Argo CD, the forge, Loki stay the sandbox's) with every cluster read
    /// from its testbed copy, with Tower's read-only token.
    pub fn tower_config(
        &self,
        sandbox: &sandbox::Sandbox,
        listen: std::net::SocketAddr,
    ) -> Result<server::config::TowerConfig> {
        let mut config = server::sandbox_cli::tower_config(sandbox, listen);
        for cluster in &mut config.clusters {
            cluster.url = Some(self.testbed.url(&cluster.name)?);
            cluster.token = self
                .tokens
                .get(&cluster.name)
                .map(|token| SecretString::from(token.clone()));
            cluster.certificate_authority = Some(self.testbed.ca_file());
        }
        Ok(config)
    }
}
