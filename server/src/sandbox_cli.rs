//! Tower on the offline platform: `tower serve --sandbox` (the sandbox embedded), `tower sandbox` (the platform
//! on its own, for demos and for pointing a separately started Tower at), `tower sandbox merge <pr>` (the demo
//! reviewer), and the Tower configuration that points at a sandbox.
//!
//! Compiled only with the `sandbox` feature (on by default): a production `tower` built without it carries no
//! emulator.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;

use crate::config::{
    ArgoCdConfig, AuthConfig, ClusterConfig, GithubConfig, LabelsConfig, TowerConfig,
};

/// Options of `tower serve` for the embedded sandbox (used with `--sandbox`).
#[derive(Debug, Clone, clap::Args)]
pub struct EmbeddedArgs {
    /// Where the embedded sandbox's APIs listen (port 0 picks a free one).
    #[arg(long, env = "TOWER_SANDBOX_LISTEN", default_value = "127.0.0.1:0")]
    pub sandbox_listen: SocketAddr,
    /// Start the embedded sandbox without metrics (faster start).
    #[arg(long)]
    pub sandbox_no_metrics: bool,
    /// Write every secret of the sandbox and of Tower's configuration for it (client secret, webhook
    /// secret, the App's private key, Argo CD tokens, then each access token the forge issues, as it does)
    /// to this file, one JSON object a line (`{"kind": …, "value": …}`), so a test harness can check that
    /// none of them shows up in a log or a response. For tests only: the file holds live credentials.
    #[arg(long, value_name = "PATH")]
    pub sandbox_secrets_file: Option<PathBuf>,
    /// The embedded sandbox's world.
    #[command(flatten)]
    pub world: WorldArgs,
}

/// What `tower serve --sandbox` and `tower sandbox` both choose about the simulated world.
#[derive(Debug, Clone, clap::Args)]
pub struct WorldArgs {
    /// How much faster than real time the simulated platform moves (10: a 30 s canary pause takes 3 s).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Also generate this many services (`svc-0001`…) with their Applications, pods and runs, for benchmarks.
    #[arg(long)]
    pub scale: Option<usize>,
    /// PipelineRuns (with their TaskRuns) seeded across the generated services with `--scale`; fewer start
    /// faster (every service keeps at least its two builds).
    #[arg(long, value_name = "N", default_value_t = sandbox::scale::PIPELINE_RUNS)]
    pub scale_runs: usize,
    /// Seed of everything random-looking.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// How busy the demo's developers are: `calm` (about one visible event a minute) or `busy`.
    #[arg(long, default_value = "calm")]
    pub pace: sandbox::simulator::Pace,
    /// Pins the sandbox's start (RFC 3339): its history ends just before, the same on every run. Without it
    /// the world starts now.
    #[arg(long)]
    pub epoch: Option<jiff::Timestamp>,
    /// How many clusters run prod: 1 is `prod`; 2 or more are `prod-eu`, `prod-us`, …, with `prod-us` deployed
    /// by an Argo CD of its own.
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(1..=sandbox::topology::MAX_PROD_CLUSTERS as u64),
    )]
    pub prod_clusters: usize,
    /// Bring this workload cluster (`dev`, `prod`, `prod-eu`…) up from nothing: Argo CD syncs its
    /// components and Crossplane packages in no declared order, and those needing another one's CRDs fail
    /// and retry until it is installed (the metrics stack takes a while).
    #[arg(long, value_name = "CLUSTER")]
    pub fresh: Option<String>,
}

impl WorldArgs {
    /// A real-time sandbox listening on `listen`, with metrics unless `no_metrics`, as these arguments say.
    fn options(&self, listen: SocketAddr, no_metrics: bool) -> sandbox::Options {
        let mut options = sandbox::Options::new(listen);
        options.metrics = !no_metrics;
        options.simulate = sandbox::Simulate::RealTime;
        options.speed = self.speed;
        options.scale = self.scale;
        options.scale_runs = self.scale_runs;
        options.seed = self.seed;
        options.pace = self.pace;
        options.epoch = self.epoch;
        options.prod_clusters = self.prod_clusters;
        options.fresh = self.fresh.clone();
        options
    }
}

/// Starts the embedded sandbox and returns it with a configuration pointing Tower at it, Tower listening on
/// `listen` (8080 by default). Dropping the sandbox stops it.
pub async fn embedded(
    args: &EmbeddedArgs,
    listen: Option<SocketAddr>,
) -> anyhow::Result<(sandbox::Sandbox, TowerConfig)> {
    let options = args
        .world
        .options(args.sandbox_listen, args.sandbox_no_metrics);
    let sandbox = sandbox::Sandbox::start_with(options)
        .await
        .context("starting the embedded sandbox")?;
    tracing::info!(url = %sandbox.url(), "sandbox platform is up");
    let listen = listen.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080)));
    let config = tower_config(&sandbox, listen);
    if let Some(path) = &args.sandbox_secrets_file {
        write_secrets(&sandbox, &config, path)
            .with_context(|| format!("writing the sandbox's secrets to {}", path.display()))?;
    }
    Ok((sandbox, config))
}

/// Writes the secrets of `config` to `path` (`--sandbox-secrets-file`), and has `sandbox`'s forge append
/// each access token it issues from now on.
fn write_secrets(
    sandbox: &sandbox::Sandbox,
    config: &TowerConfig,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    use secrecy::ExposeSecret as _;
    use std::io::Write as _;

    fn line(kind: &str, value: &str) -> String {
        let mut text = serde_json::json!({ "kind": kind, "value": value }).to_string();
        text.push('\n');
        text
    }

    let mut text = String::new();
    if let Some(github) = &config.github {
        text += &line("github.client_secret", github.client_secret.expose_secret());
        text += &line(
            "github.app_private_key",
            github.app_private_key.expose_secret(),
        );
        if let Some(secret) = &github.webhook_secret {
            text += &line("github.webhook_secret", secret.expose_secret());
        }
    }
    for argocd in &config.argocd {
        text += &line("argocd.token", argocd.token.expose_secret());
    }
    std::fs::write(path, text)?;
    let file = std::sync::Mutex::new(std::fs::OpenOptions::new().append(true).open(path)?);
    sandbox
        .forge()
        .on_token_issued(std::sync::Arc::new(move |kind, token| {
            let mut file = file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(error) = file.write_all(line(kind, token).as_bytes()) {
                tracing::warn!(%error, "could not append an issued token to the secrets file");
            }
        }));
    Ok(())
}

/// Has the sandbox's real Prometheus (when it runs one) scrape the `/metrics` of a Tower listening on
/// `listen`, as a production Prometheus would scrape Tower.
pub fn scrape_tower(sandbox: &sandbox::Sandbox, listen: SocketAddr) {
    let Some(prometheus) = sandbox.metrics_url() else {
        return;
    };
    let host = if listen.ip().is_unspecified() {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        listen.ip()
    };
    let target = SocketAddr::new(host, listen.port());
    match sandbox::metrics::scrape_tower_at(&prometheus, target) {
        Ok(true) => {
            tracing::info!(%target, %prometheus, "the sandbox's Prometheus scrapes Tower's /metrics");
        }
        Ok(false) => {
            tracing::info!(
                "the sandbox runs no Prometheus (not installed): nothing scrapes Tower's /metrics"
            );
        }
        Err(error) => {
            tracing::warn!(
                error = format!("{error:#}"),
                "could not point the sandbox's Prometheus at Tower"
            );
        }
    }
}

/// Points `sandbox`'s forge webhooks at a Tower listening on `listen`, signed with the secret `config` gives
/// Tower (the demo secret [`tower_config`] writes), as a GitHub App's webhook URL and secret would be set.
pub fn deliver_webhooks(sandbox: &sandbox::Sandbox, config: &TowerConfig, listen: SocketAddr) {
    use secrecy::ExposeSecret as _;

    let Some(secret) = config
        .github
        .as_ref()
        .and_then(|github| github.webhook_secret.as_ref())
    else {
        return;
    };
    let host = if listen.ip().is_unspecified() {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        listen.ip()
    };
    let url = format!(
        "http://{}{}",
        SocketAddr::new(host, listen.port()),
        <shared::api::GithubWebhook as shared::api::Endpoint>::ROUTE.path
    );
    tracing::info!(%url, "the sandbox forge delivers its webhooks to Tower");
    sandbox
        .forge()
        .deliver_webhooks_to(Some(sandbox::forge::WebhookTarget {
            url,
            secret: secret.expose_secret().to_string(),
        }));
}

/// A Tower configuration pointing at every endpoint of `sandbox`, with Tower listening on `listen`.
pub fn tower_config(sandbox: &sandbox::Sandbox, listen: SocketAddr) -> TowerConfig {
    use sandbox::{forge, world};

    let (app_id, app_private_key) = forge::Forge::demo_app();
    let github = format!("{}/github", sandbox.url());
    let cluster = |name: &str, environment: Option<&str>| ClusterConfig {
        name: name.into(),
        environment: environment.map(Into::into),
        url: Some(sandbox.cluster_url(name)),
        token: None,
        certificate_authority: None,
        context: None,
        in_cluster: false,
    };
    let mut clusters = vec![cluster(sandbox::topology::MANAGEMENT, None)];
    clusters.extend(
        sandbox
            .workload_clusters()
            .iter()
            .map(|(environment, name)| cluster(name, Some(environment))),
    );
    let argocd = sandbox
        .argocd_instances()
        .into_iter()
        .map(|instance| ArgoCdConfig {
            name: instance.name,
            url: instance.url,
            token: sandbox::ARGOCD_TOKEN.into(),
            clusters: instance.clusters,
        })
        .collect();
    TowerConfig {
        listen: listen.to_string(),
        public_url: format!("http://{listen}"),
        organisation: world::ORGANISATION.into(),
        clusters,
        argocd,
        github: Some(GithubConfig {
            api_url: format!("{github}/"),
            oauth_authorize_url: format!("{github}/login/oauth/authorize"),
            oauth_token_url: format!("{github}/login/oauth/access_token"),
            client_id: forge::DEMO_CLIENT_ID.into(),
            client_secret: forge::DEMO_CLIENT_SECRET.into(),
            app_id,
            installation_id: forge::DEMO_INSTALLATION_ID,
            app_private_key: app_private_key.into(),
            gitops_repository: world::GITOPS_REPOSITORY.into(),
            merged_poll_seconds: 5,
            // The forge signs its deliveries with the demo secret once it is told where Tower listens
            // ([`deliver_webhooks`]).
            webhook_secret: Some(forge::DEMO_WEBHOOK_SECRET.into()),
        }),
        auth: AuthConfig {
            admins: world::ADMINS.iter().map(|a| (*a).to_string()).collect(),
            ..AuthConfig::default()
        },
        labels: LabelsConfig::default(),
        crossplane_claims: crate::config::default_claim_kinds(),
        scaffolds: world::SCAFFOLDS
            .iter()
            .map(|(name, versions)| shared::delivery::Scaffold {
                name: (*name).into(),
                versions: versions.iter().map(|v| (*v).to_string()).collect(),
            })
            .collect(),
        // The defaults are what the sandbox's Composition composes, so the tests exercise them.
        crossplane_composed: crate::config::default_composed_kinds(),
        // The sandbox's series carry the default labels.
        mimir: sandbox.metrics_url().map(crate::config::MimirConfig::new),
        // The sandbox's Loki keeps the pods its simulator deletes, labelled by cluster as Tower expects.
        loki: Some(crate::config::LokiConfig {
            url: sandbox.loki_url(),
            tenant: Some(sandbox::loki::TENANT.into()),
        }),
        // Tekton runs on the sandbox's management cluster, labelled and annotated with the defaults.
        pipelines: crate::config::PipelinesConfig::default(),
    }
}

use crate::shutdown::Shutdown;

/// Options of `tower sandbox`.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// What to do; without one, run the sandbox.
    #[command(subcommand)]
    pub command: Option<SandboxCommand>,
    /// Where the sandbox listens.
    #[arg(long, default_value = "127.0.0.1:8181")]
    pub listen: SocketAddr,
    /// Where the Tower configuration pointing at the sandbox is written.
    #[arg(long, default_value = "tower.sandbox.yaml")]
    pub write_config: PathBuf,
    /// The address Tower will listen on, as written into that configuration.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub tower_listen: SocketAddr,
    /// Run without metrics.
    #[arg(long)]
    pub no_metrics: bool,
    /// The sandbox's world.
    #[command(flatten)]
    pub world: WorldArgs,
}

/// Sub-commands of `tower sandbox`.
#[derive(Debug, clap::Subcommand)]
pub enum SandboxCommand {
    /// Merge pull request `pr` of `application-repositories`, as a reviewer would.
    Merge {
        /// The pull request's number.
        pr: u64,
        /// The running sandbox.
        #[arg(long, default_value = "http://127.0.0.1:8181")]
        url: String,
        /// Who merges (a demo login).
        #[arg(long, default_value = "grace")]
        merger: String,
    },
}

/// Runs `tower sandbox …`; the sandbox runs until `shutdown` (SIGTERM or SIGINT).
pub async fn run(args: SandboxArgs, shutdown: Shutdown) -> anyhow::Result<()> {
    match args.command {
        Some(SandboxCommand::Merge { pr, url, merger }) => merge(&url, pr, &merger).await,
        None => serve(args, shutdown).await,
    }
}

async fn serve(args: SandboxArgs, shutdown: Shutdown) -> anyhow::Result<()> {
    let options = args.world.options(args.listen, args.no_metrics);
    let Some(sandbox) = shutdown
        .unless_requested(sandbox::Sandbox::start_with(options))
        .await
    else {
        return Ok(());
    };
    let sandbox = sandbox?;
    let config = tower_config(&sandbox, args.tower_listen);
    // The Tower started from the written configuration listens there; deliveries fail (and are logged by
    // the forge) until it does.
    deliver_webhooks(&sandbox, &config, args.tower_listen);
    let yaml = serde_saphyr::to_string(&config).context("serializing the configuration")?;
    std::fs::write(&args.write_config, yaml)
        .with_context(|| format!("writing {}", args.write_config.display()))?;

    println!("Tower sandbox is running.");
    for cluster in sandbox.topology().cluster_names() {
        println!(
            "  kubernetes {cluster:<11} {}",
            sandbox.cluster_url(cluster)
        );
    }
    for instance in sandbox.argocd_instances() {
        let serves = if instance.clusters.is_empty() {
            String::new()
        } else {
            format!(", deploys to {}", instance.clusters.join(", "))
        };
        println!(
            "  argo cd {:<14} {}  (token {}{serves})",
            instance.name,
            instance.url,
            sandbox::ARGOCD_TOKEN
        );
    }
    println!("  github api             {}/github/", sandbox.url());
    if let Some(metrics) = sandbox.metrics_url() {
        println!("  prometheus             {metrics}");
    }
    println!(
        "  git repositories       {}",
        sandbox.repositories().root().display()
    );
    println!(
        "  temporary root         {}  (removed on exit)",
        sandbox.temp_root().display()
    );
    println!(
        "Tower configuration written to {}",
        args.write_config.display()
    );
    println!(
        "  run: tower serve --config {}",
        args.write_config.display()
    );
    println!("  merge a pull request: tower sandbox merge <number>");
    println!(
        "  simulated time runs at {}x{}{}",
        args.world.speed,
        args.world
            .scale
            .map(|n| format!(", with {n} generated services"))
            .unwrap_or_default(),
        args.world
            .fresh
            .as_deref()
            .map(|cluster| format!(", {cluster} coming up from nothing"))
            .unwrap_or_default()
    );
    shutdown.requested().await;
    // Dropping the sandbox stops its children and removes its temporary root.
    drop(sandbox);
    Ok(())
}

async fn merge(url: &str, pr: u64, merger: &str) -> anyhow::Result<()> {
    let endpoint = format!(
        "{}/sandbox/pulls/{pr}/merge?merger={merger}",
        url.trim_end_matches('/')
    );
    let response = reqwest::Client::new()
        .post(&endpoint)
        .send()
        .await
        .with_context(|| format!("reaching the sandbox at {url}"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        anyhow::bail!("the sandbox refused to merge #{pr} ({status}): {body}");
    }
    println!("merged #{pr}: {body}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    /// `WorldArgs` as a command line of its own.
    #[derive(Debug, clap::Parser)]
    struct World {
        #[command(flatten)]
        world: WorldArgs,
    }

    #[test]
    fn prod_clusters_defaults_to_one_and_takes_one_to_one_per_region() {
        let parse = |args: &[&str]| {
            World::try_parse_from(std::iter::once("tower").chain(args.iter().copied()))
                .map(|parsed| parsed.world.prod_clusters)
        };
        assert_eq!(parse(&[]).ok(), Some(1));
        assert_eq!(parse(&["--prod-clusters", "2"]).ok(), Some(2));
        assert!(parse(&["--prod-clusters", "0"]).is_err());
        let too_many = (sandbox::topology::MAX_PROD_CLUSTERS + 1).to_string();
        assert!(parse(&["--prod-clusters", &too_many]).is_err());
        let options = World::try_parse_from(["tower", "--prod-clusters", "2"])
            .expect("parses")
            .world
            .options("127.0.0.1:0".parse().expect("address"), true);
        assert_eq!(options.prod_clusters, 2);
    }

    #[test]
    fn fresh_names_the_cluster_that_comes_up_from_nothing() {
        let world = |args: &[&str]| {
            World::try_parse_from(std::iter::once("tower").chain(args.iter().copied()))
                .expect("parses")
                .world
                .options("127.0.0.1:0".parse().expect("address"), true)
        };
        assert_eq!(world(&[]).fresh, None);
        assert_eq!(world(&["--fresh", "dev"]).fresh.as_deref(), Some("dev"));
    }

    #[tokio::test]
    async fn the_secrets_file_holds_the_configured_secrets_then_each_issued_token() {
        use secrecy::ExposeSecret as _;

        let sandbox = sandbox::Sandbox::start_with(sandbox::Options::new(
            "127.0.0.1:0".parse().expect("address"),
        ))
        .await
        .expect("sandbox starts");
        let config = tower_config(&sandbox, "127.0.0.1:0".parse().expect("address"));
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("secrets.jsonl");
        write_secrets(&sandbox, &config, &path).expect("written");
        let token = sandbox.forge().user_token("ada");
        let read = std::fs::read_to_string(&path).expect("readable");
        let secrets: Vec<(String, String)> = read
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).expect("one JSON a line");
                (
                    value["kind"].as_str().expect("kind").to_string(),
                    value["value"].as_str().expect("value").to_string(),
                )
            })
            .collect();
        let github = config.github.as_ref().expect("github");
        let has = |kind: &str, value: &str| secrets.iter().any(|(k, v)| k == kind && v == value);
        assert!(has(
            "github.client_secret",
            github.client_secret.expose_secret()
        ));
        assert!(has(
            "github.app_private_key",
            github.app_private_key.expose_secret()
        ));
        assert!(has(
            "github.webhook_secret",
            github
                .webhook_secret
                .as_ref()
                .expect("webhook secret")
                .expose_secret()
        ));
        assert!(has("argocd.token", config.argocd[0].token.expose_secret()));
        assert!(has("user_token", &token), "{secrets:?}");
    }

    #[tokio::test]
    async fn the_configuration_names_every_prod_cluster_and_the_argo_cd_deploying_each() {
        let mut options = sandbox::Options::new("127.0.0.1:0".parse().expect("address"));
        options.prod_clusters = 2;
        let sandbox = sandbox::Sandbox::start_with(options)
            .await
            .expect("sandbox starts");
        let config = tower_config(&sandbox, "127.0.0.1:0".parse().expect("address"));
        assert_eq!(config.validate(), vec![]);
        let clusters: Vec<(&str, Option<&str>)> = config
            .clusters
            .iter()
            .map(|c| (c.name.as_str(), c.environment.as_deref()))
            .collect();
        assert_eq!(
            clusters,
            [
                ("management", None),
                ("dev", Some("dev")),
                ("prod-eu", Some("prod")),
                ("prod-us", Some("prod")),
            ]
        );
        assert_eq!(
            config.clusters[3].url.as_deref(),
            Some(sandbox.cluster_url("prod-us").as_str())
        );
        let instance = |cluster| {
            config
                .argocd_for(cluster)
                .map(|a| (a.name.as_str(), a.url.clone()))
        };
        assert_eq!(
            instance("prod-us"),
            Some(("argocd-us", format!("{}/argocd-us", sandbox.url())))
        );
        assert_eq!(
            instance("prod-eu"),
            Some(("argocd", format!("{}/argocd", sandbox.url())))
        );
        assert_eq!(instance("dev"), instance("prod-eu"));
    }
}
