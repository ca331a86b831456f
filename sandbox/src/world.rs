//! The plan of the sandbox's world: which services exist, who owns them, how their histories go and what
//! runs where, and the platform's own components and Crossplane packages with the versions each cluster
//! runs ([`PLATFORM_COMPONENTS`], [`PACKAGES`]). The git repositories, the Kubernetes fixtures, the forge and
//! the simulator all read this one plan, so they agree with each other.
//!
//! Everything here is static data and pure functions. Real commit ids come from the git repositories built
//! from this plan ([`Histories`]): the fixtures refer to commits by their position in a service's history.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

/// The GitHub organisation every repository lives in.
pub const ORGANISATION: &str = "acme";
/// The GitOps repository.
pub const GITOPS_REPOSITORY: &str = "application-repositories";
/// The container registry images are pushed to.
pub const REGISTRY: &str = "ghcr.io/acme";
/// The environments, each with its own workload cluster of the same name.
pub const ENVIRONMENTS: [&str; 2] = ["dev", "prod"];
/// The namespace on the workload clusters that a service runs in is the service's name; this is where the
/// platform resources live on the management cluster.
pub const PLATFORM_NAMESPACE: &str = shared::crd::PLATFORM_NAMESPACE;
/// The namespace of Argo CD on the management cluster.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// The namespace of Tekton's runs on the management cluster.
pub const CI_NAMESPACE: &str = "tekton-ci";

/// A team and its members (demo identities of the forge's sign-in).
#[derive(Debug, Clone, Copy)]
pub struct Team {
    /// The team's slug, used as Components' `spec.owner`.
    pub slug: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Forge logins of its members.
    pub members: &'static [&'static str],
}

/// The three teams of the fixture organisation.
pub const TEAMS: [Team; 3] = [
    Team {
        slug: "payments",
        name: "Payments",
        members: &["ada", "grace"],
    },
    Team {
        slug: "shop",
        name: "Shop",
        members: &["linus", "margaret"],
    },
    Team {
        slug: "discovery",
        name: "Discovery",
        members: &["barbara", "ken"],
    },
];

/// Forge logins of the platform admins (members of no service team).
pub const ADMINS: [&str; 1] = ["root"];

/// The platform team: it owns no service, and reviews what changes the platform. Its one member is the
/// forge's demo reviewer ([`crate::forge::DEMO_REVIEWER`]), who also belongs to `payments`. Kept apart
/// from [`TEAMS`], which are the teams owning services.
pub const PLATFORM_TEAM: Team = Team {
    slug: "platform",
    name: "Platform",
    members: &["grace"],
};

/// A repository in the catalog that is not on the platform: it has a Backstage `catalog-info.yaml` and
/// no Component, Release, Application or pipeline anywhere, so Tower lists it as not onboarded.
#[derive(Debug, Clone, Copy)]
pub struct CatalogOnlyPlan {
    /// The repository's name, also its catalog entity's `metadata.name`.
    pub name: &'static str,
    /// The owning team's slug (`spec.owner: group:<team>`).
    pub team: &'static str,
    /// `metadata.description`.
    pub description: &'static str,
    /// `spec.lifecycle`.
    pub lifecycle: &'static str,
    /// `metadata.tags`.
    pub tags: &'static [&'static str],
    /// Its commit messages, oldest first.
    pub commits: &'static [&'static str],
}

/// The one repository in the catalog but not on the platform. (`acme/search` is taken: `search` is one of
/// [`SERVICES`].)
pub const CATALOG_ONLY: CatalogOnlyPlan = CatalogOnlyPlan {
    name: "typeahead",
    team: "shop",
    description: "Finds products as you type",
    lifecycle: "experimental",
    tags: &["typescript", "search", "experimental"],
    commits: &[
        "Scaffold typeahead from node-service 1.4.0",
        "Suggest product names by prefix",
        "Rank suggestions by last week's sales",
    ],
};

/// The service whose repository has no `catalog-info.yaml`: a Component the catalog does not know, which
/// Tower warns about.
pub const SERVICE_WITHOUT_CATALOG: &str = "ledger";

/// Services whose `catalog-info.yaml` names who is on call, and their PagerDuty service ids.
pub const ON_CALL: [(&str, &str); 3] = [
    ("payments", "P7Q2XK9"),
    ("refunds", "P4M8RTA"),
    ("checkout", "PZ3N6WB"),
];

/// One commit of a service's planned history.
#[derive(Debug, Clone, Copy)]
pub struct CommitPlan {
    /// The commit message's first line.
    pub message: &'static str,
    /// Whether its Tekton PipelineRun succeeds (a green build: image and chart at this commit).
    pub green: bool,
    /// A migration file this commit adds under `migrations/`, if any.
    pub migration: Option<&'static str>,
}

const fn green(message: &'static str) -> CommitPlan {
    CommitPlan {
        message,
        green: true,
        migration: None,
    }
}
const fn red(message: &'static str) -> CommitPlan {
    CommitPlan {
        message,
        green: false,
        migration: None,
    }
}
const fn migrate(message: &'static str, file: &'static str) -> CommitPlan {
    CommitPlan {
        message,
        green: true,
        migration: Some(file),
    }
}

/// One service of the fleet and its story.
#[derive(Debug, Clone, Copy)]
pub struct ServicePlan {
    /// Name of the service, its Component, repository and namespace.
    pub name: &'static str,
    /// Owning team's slug.
    pub team: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Scaffold template name.
    pub template: &'static str,
    /// Services it calls.
    pub depends_on: &'static [&'static str],
    /// Its database, if it has one (same name as the service).
    pub database: bool,
    /// Commit history of main, oldest first. The first commit is the scaffold.
    pub commits: &'static [CommitPlan],
    /// Index into `commits` of what runs in dev (always green).
    pub dev: usize,
    /// Index into `commits` of what runs in prod (always green).
    pub prod: usize,
    /// Index of what ran in prod before `prod` (the Rollback target), if anything did.
    pub prod_previous: Option<usize>,
    /// The schema version (number of migrations) applied to the prod database, when it lags the code.
    pub prod_schema_behind: Option<usize>,
    /// Public hostname.
    pub host: &'static str,
}

/// The scaffold template version every fixture service was created from.
pub const TEMPLATE_VERSION: &str = "1.4.0";

/// The platform's scaffold templates and their versions, newest first: what the sandbox's Tower offers on
/// the Create form (a real deployment lists its own in its configuration).
pub const SCAFFOLDS: [(&str, &[&str]); 4] = [
    ("go-service", &[TEMPLATE_VERSION, "1.3.2", "1.2.0"]),
    ("node-service", &[TEMPLATE_VERSION, "1.3.1"]),
    ("python-service", &[TEMPLATE_VERSION, "1.3.0"]),
    ("rust-service", &[TEMPLATE_VERSION]),
];

/// The Release whose object on the management cluster differs from its file in git (`spec.autoDeploy`
/// turned on by hand): the service and environment.
pub const DRIFTED_RELEASE: (&str, &str) = ("cart", "prod");

/// The fleet: eight services, three teams, with the situations a portal must show.
pub const SERVICES: [ServicePlan; 8] = [
    ServicePlan {
        name: "payments",
        team: "payments",
        description: "Takes card and wallet payments.",
        template: "go-service",
        depends_on: &["ledger"],
        database: true,
        commits: &[
            migrate(
                "Scaffold payments from go-service 1.4.0",
                "0001_create_payments.sql",
            ),
            green("Add card authorisation"),
            migrate("Store wallet tokens", "0002_add_wallet_tokens.sql"),
            green("Retry declined captures once"),
            migrate("Index payments by merchant", "0003_index_merchant.sql"),
            green("Expose capture latency metric"),
            migrate("Add refunds reference", "0004_add_refund_reference.sql"),
            green("Tidy error messages"),
        ],
        dev: 7,
        prod: 6,
        prod_previous: Some(5),
        // Prod runs code that ships 0004, but the prod database is still at 0003.
        prod_schema_behind: Some(3),
        host: "payments.acme.example",
    },
    ServicePlan {
        name: "ledger",
        team: "payments",
        description: "Double-entry ledger of every money movement.",
        template: "go-service",
        depends_on: &[],
        database: true,
        commits: &[
            migrate(
                "Scaffold ledger from go-service 1.4.0",
                "0001_create_entries.sql",
            ),
            green("Post entries in one transaction"),
            migrate("Add accounts table", "0002_create_accounts.sql"),
            green("Daily balance snapshot job"),
            green("Bump go to 1.23"),
        ],
        dev: 4,
        prod: 3,
        prod_previous: Some(1),
        prod_schema_behind: None,
        host: "ledger.acme.example",
    },
    ServicePlan {
        name: "refunds",
        team: "payments",
        description: "Refunds and chargebacks.",
        template: "go-service",
        depends_on: &["payments", "ledger"],
        database: false,
        commits: &[
            green("Scaffold refunds from go-service 1.4.0"),
            green("Partial refunds"),
            red("Chargeback webhook (tests fail)"),
            green("Fix chargeback webhook tests"),
        ],
        dev: 3,
        prod: 1,
        prod_previous: Some(0),
        prod_schema_behind: None,
        host: "refunds.acme.example",
    },
    ServicePlan {
        name: "checkout",
        team: "shop",
        description: "Turns a cart into an order.",
        template: "node-service",
        depends_on: &["cart", "payments", "catalog"],
        database: true,
        commits: &[
            migrate(
                "Scaffold checkout from node-service 1.4.0",
                "0001_create_orders.sql",
            ),
            green("Order confirmation e-mail"),
            green("Apply vouchers"),
            migrate("Store shipping address", "0002_add_shipping_address.sql"),
            green("Show delivery estimate"),
            green("Guest checkout"),
        ],
        dev: 5,
        prod: 4,
        prod_previous: Some(2),
        prod_schema_behind: None,
        host: "checkout.acme.example",
    },
    ServicePlan {
        name: "cart",
        team: "shop",
        description: "Shopping carts.",
        template: "node-service",
        depends_on: &["catalog"],
        database: false,
        commits: &[
            green("Scaffold cart from node-service 1.4.0"),
            green("Merge guest cart on sign-in"),
            green("Expire carts after 30 days"),
        ],
        dev: 2,
        prod: 2,
        prod_previous: Some(1),
        prod_schema_behind: None,
        host: "cart.acme.example",
    },
    ServicePlan {
        name: "catalog",
        team: "shop",
        description: "Products, prices and stock.",
        template: "go-service",
        depends_on: &[],
        database: true,
        commits: &[
            migrate(
                "Scaffold catalog from go-service 1.4.0",
                "0001_create_products.sql",
            ),
            green("Price history"),
            migrate("Stock per warehouse", "0002_stock_per_warehouse.sql"),
            green("Bulk price import"),
            red("Switch image CDN (breaks thumbnails)"),
        ],
        // Dev runs the last green build; the red one never deployed.
        dev: 3,
        prod: 3,
        prod_previous: Some(1),
        prod_schema_behind: None,
        host: "catalog.acme.example",
    },
    ServicePlan {
        name: "search",
        team: "discovery",
        description: "Full-text product search.",
        template: "rust-service",
        depends_on: &["catalog"],
        database: false,
        commits: &[
            green("Scaffold search from rust-service 1.4.0"),
            green("Typo tolerance"),
            green("Facets by brand"),
            green("Cache hot queries"),
        ],
        dev: 3,
        prod: 2,
        prod_previous: Some(1),
        prod_schema_behind: None,
        host: "search.acme.example",
    },
    ServicePlan {
        name: "recommendations",
        team: "discovery",
        description: "Products people also bought.",
        template: "python-service",
        depends_on: &["catalog", "search"],
        database: false,
        commits: &[
            green("Scaffold recommendations from python-service 1.4.0"),
            green("Co-purchase model"),
            green("Nightly model refresh"),
        ],
        dev: 2,
        prod: 1,
        prod_previous: Some(0),
        prod_schema_behind: None,
        host: "recommendations.acme.example",
    },
];

/// A minute, in seconds.
pub const MINUTE: i64 = 60;
/// An hour, in seconds.
pub const HOUR: i64 = 3_600;
/// A day, in seconds.
pub const DAY: i64 = 86_400;

/// Where a fixed world starts (the manual clock, and repositories built without a start): 2026-11-20T09:00:00Z.
/// Commit ids depend on commit times, so a fixed start gives the same ids on every run.
pub const FIXED_START: Timestamp = Timestamp::constant(1_795_165_200, 0);

/// Services' scaffold commits are this far apart, so histories interleave.
const SERVICE_STAGGER: i64 = 40 * MINUTE;
/// How long before the sandbox starts the last planned commit was made: long enough for its build, the
/// release operator, Argo CD's sync and the canary to have finished, short enough to read as "just now".
pub const LAST_COMMIT_LEAD: i64 = 16 * MINUTE;
/// How long the platform ran before the first service was scaffolded (Argo CD, Tekton, Crossplane and the
/// operators were installed then).
const BOOTSTRAP_LEAD: i64 = 2 * DAY;

/// How long after a commit the release operator moves dev's Release to its build (which takes about six
/// minutes).
pub const DEV_RELEASE_DELAY: i64 = 8 * MINUTE;
/// How long after a commit dev runs it: the derived files a minute after the Release, Argo CD's sync two
/// minutes later.
pub const DEV_DEPLOY_DELAY: i64 = 11 * MINUTE;
/// How long after a commit its promotion to prod is opened: the next morning.
pub const PROMOTE_DELAY: i64 = 20 * HOUR;
/// How long a pull request of the planned history stays open before it is merged.
pub const REVIEW_DELAY: i64 = 25 * MINUTE;
/// How long after a commit prod runs it: the promotion merged 25 minutes after it was opened, the derived
/// files 5 minutes later, Argo CD's sync 5 minutes after that.
pub const PROD_DEPLOY_DELAY: i64 = PROMOTE_DELAY + 35 * MINUTE;

/// How long after its scaffold commit a service was onboarded (its Component and Releases merged).
pub const ONBOARD_DELAY: i64 = HOUR;
/// How long after its scaffold commit the ApplicationSet created a service's Applications: once the
/// release operator had derived the onboarding's files.
pub const APPLICATIONS_DELAY: i64 = ONBOARD_DELAY + 31 * MINUTE;
/// How long after its scaffold commit Argo CD first synced a service.
pub const FIRST_SYNC_DELAY: i64 = APPLICATIONS_DELAY + 9 * MINUTE;

/// The environment label of the management cluster's Argo CD cluster secret: the platform's own resources
/// and components deploy there, and no service runs there.
pub const MANAGEMENT_ENVIRONMENT: &str = "management";

/// One of the platform's own components: a Helm chart `taskapp-infra` installs on each cluster
/// `infra/<name>/<cluster>.yaml` names, with its values in `values/<name>/<cluster>.yaml`.
#[derive(Debug, Clone, Copy)]
pub struct ComponentPlan {
    /// Its name: the folder under `infra/` and `values/`, and its Applications' component label.
    pub name: &'static str,
    /// The chart's name in its repository.
    pub chart: &'static str,
    /// The chart repository (`oci://…` for the platform team's own charts).
    pub repository: &'static str,
    /// The namespace it is installed into.
    pub namespace: &'static str,
    /// Where it runs: [`MANAGEMENT_ENVIRONMENT`] and workload environments (every cluster of each).
    pub environments: &'static [&'static str],
    /// The chart versions it has run, oldest first: the bootstrap installed the first, each later one is a
    /// bump (dev first, then management, then prod).
    pub versions: &'static [&'static str],
    /// Whether prod stays one version behind the newest (its last bump has not reached prod yet).
    pub prod_lags: bool,
    /// Built by the platform team: a green build of its repository has its CI bot (`<name>-ci[bot]`) commit
    /// the bump, and its values pin the image to the chart's version. Third-party components are bumped by
    /// people, by pull request.
    pub in_house: bool,
    /// The CustomResourceDefinitions the chart installs, by name (`<plural>.<group>`).
    pub crds: &'static [&'static str],
    /// The chart's workloads as (kind, name): Deployments, StatefulSets, DaemonSets.
    pub workloads: &'static [(&'static str, &'static str)],
    /// Whether the chart ships a `monitoring.coreos.com` ServiceMonitor for its own metrics (every chart but
    /// the one installing that CRD).
    pub service_monitor: bool,
    /// Seconds from a successful sync until its workloads are ready (Argo CD's health goes from Progressing
    /// to Healthy): the metrics stack is the slow one, which a fresh cluster's other charts wait for.
    pub settle: i64,
}

impl ComponentPlan {
    /// The newest version: what dev (and management) run.
    pub fn newest(&self) -> &'static str {
        self.versions.last().copied().unwrap_or_default()
    }

    /// The version it runs in `environment` at the end of the planned history: the newest, except in prod
    /// when prod lags one behind.
    pub fn version_in(&self, environment: &str) -> &'static str {
        match self.versions {
            [.., previous, _] if self.prod_lags && environment == "prod" => previous,
            _ => self.newest(),
        }
    }

    /// Whether it runs in `environment`.
    pub fn runs_in(&self, environment: &str) -> bool {
        self.environments.contains(&environment)
    }
}

/// Every environment, management first: where the platform's components and packages can run.
const ALL_ENVIRONMENTS: &[&str] = &[MANAGEMENT_ENVIRONMENT, "dev", "prod"];

/// The platform's own components. Versions agree everywhere except `release-operator` and `argo-rollouts`,
/// whose prod lags one version behind dev.
pub const PLATFORM_COMPONENTS: [ComponentPlan; 8] = [
    ComponentPlan {
        name: "release-operator",
        chart: "release-operator",
        repository: "oci://ghcr.io/acme/charts",
        namespace: "platform-system",
        environments: ALL_ENVIRONMENTS,
        versions: &["1.8.0", "1.8.2", "1.9.0"],
        prod_lags: true,
        in_house: true,
        crds: &[
            "releases.platform.tower.dev",
            "components.platform.tower.dev",
        ],
        workloads: &[("Deployment", "release-operator")],
        service_monitor: true,
        settle: 20,
    },
    ComponentPlan {
        name: "schema-operator",
        chart: "schema-operator",
        repository: "oci://ghcr.io/acme/charts",
        namespace: "platform-system",
        environments: ALL_ENVIRONMENTS,
        versions: &["0.6.0", "0.6.1"],
        prod_lags: false,
        in_house: true,
        crds: &[
            "databases.platform.tower.dev",
            "databaseschemas.platform.tower.dev",
        ],
        workloads: &[("Deployment", "schema-operator")],
        service_monitor: true,
        settle: 20,
    },
    ComponentPlan {
        name: "external-secrets",
        chart: "external-secrets",
        repository: "https://charts.external-secrets.io",
        namespace: "external-secrets",
        environments: ALL_ENVIRONMENTS,
        versions: &["0.10.4"],
        prod_lags: false,
        in_house: false,
        crds: &[
            "externalsecrets.external-secrets.io",
            "secretstores.external-secrets.io",
            "clustersecretstores.external-secrets.io",
        ],
        workloads: &[
            ("Deployment", "external-secrets"),
            ("Deployment", "external-secrets-webhook"),
            ("Deployment", "external-secrets-cert-controller"),
        ],
        service_monitor: true,
        settle: 20,
    },
    ComponentPlan {
        name: "crossplane",
        chart: "crossplane",
        repository: "https://charts.crossplane.io/stable",
        namespace: "crossplane-system",
        environments: ALL_ENVIRONMENTS,
        versions: &["1.17.1"],
        prod_lags: false,
        in_house: false,
        crds: &[
            "providers.pkg.crossplane.io",
            "configurations.pkg.crossplane.io",
            "functions.pkg.crossplane.io",
            "compositeresourcedefinitions.apiextensions.crossplane.io",
            "compositions.apiextensions.crossplane.io",
        ],
        workloads: &[
            ("Deployment", "crossplane"),
            ("Deployment", "crossplane-rbac-manager"),
        ],
        service_monitor: true,
        settle: 30,
    },
    ComponentPlan {
        name: "metrics-stack",
        chart: "kube-prometheus-stack",
        repository: "https://prometheus-community.github.io/helm-charts",
        namespace: "monitoring",
        environments: ALL_ENVIRONMENTS,
        versions: &["65.1.0", "65.3.1"],
        prod_lags: false,
        in_house: false,
        crds: &[
            "servicemonitors.monitoring.coreos.com",
            "podmonitors.monitoring.coreos.com",
            "prometheusrules.monitoring.coreos.com",
            "prometheuses.monitoring.coreos.com",
            "alertmanagers.monitoring.coreos.com",
        ],
        workloads: &[
            ("Deployment", "metrics-stack-operator"),
            ("Deployment", "metrics-stack-kube-state-metrics"),
            ("DaemonSet", "metrics-stack-prometheus-node-exporter"),
            ("StatefulSet", "prometheus-metrics-stack-prometheus"),
        ],
        service_monitor: false,
        // Prometheus replays its write-ahead log and the operator waits for it: long enough for a browser to
        // see the other charts wait (16 s at `--speed 10`).
        settle: 160,
    },
    ComponentPlan {
        name: "argo-rollouts",
        chart: "argo-rollouts",
        repository: "https://argoproj.github.io/argo-helm",
        namespace: "argo-rollouts",
        environments: &["dev", "prod"],
        versions: &["2.37.6", "2.37.7", "2.38.0"],
        prod_lags: true,
        in_house: false,
        crds: &[
            "rollouts.argoproj.io",
            "analysisruns.argoproj.io",
            "analysistemplates.argoproj.io",
            "clusteranalysistemplates.argoproj.io",
            "experiments.argoproj.io",
        ],
        workloads: &[("Deployment", "argo-rollouts")],
        service_monitor: true,
        settle: 20,
    },
    ComponentPlan {
        name: "tekton",
        chart: "tekton-pipeline",
        repository: "https://cdfoundation.github.io/tekton-helm-chart",
        namespace: "tekton-pipelines",
        environments: &[MANAGEMENT_ENVIRONMENT],
        versions: &["1.0.0"],
        prod_lags: false,
        in_house: false,
        crds: &[
            "pipelineruns.tekton.dev",
            "taskruns.tekton.dev",
            "pipelines.tekton.dev",
            "tasks.tekton.dev",
        ],
        workloads: &[
            ("Deployment", "tekton-pipelines-controller"),
            ("Deployment", "tekton-pipelines-webhook"),
        ],
        service_monitor: true,
        settle: 20,
    },
    ComponentPlan {
        name: shared::platform::TOWER_COMPONENT,
        chart: "tower",
        repository: "oci://ghcr.io/acme/charts",
        namespace: "tower",
        environments: &[MANAGEMENT_ENVIRONMENT],
        versions: &["0.3.0", "0.3.1", "0.4.0"],
        prod_lags: false,
        in_house: true,
        crds: &[],
        workloads: &[("Deployment", "tower")],
        service_monitor: true,
        settle: 20,
    },
];

/// Looks a platform component up by name.
pub fn platform_component(name: &str) -> Option<&'static ComponentPlan> {
    PLATFORM_COMPONENTS.iter().find(|c| c.name == name)
}

/// A Crossplane package `taskapp-packages` installs on every cluster from `packages/<name>/<cluster>.yaml`.
#[derive(Debug, Clone, Copy)]
pub struct PackagePlan {
    /// Its name: the folder under `packages/`, the object's `metadata.name`.
    pub name: &'static str,
    /// `Provider` or `Configuration` (`pkg.crossplane.io/v1`).
    pub kind: &'static str,
    /// The package without its tag (`xpkg.upbound.io/upbound/provider-aws-rds`).
    pub package: &'static str,
    /// Its versions (tags), oldest first; every cluster runs the newest.
    pub versions: &'static [&'static str],
}

impl PackagePlan {
    /// The tag every cluster runs.
    pub fn newest(&self) -> &'static str {
        self.versions.last().copied().unwrap_or_default()
    }
}

/// The Crossplane packages: the AWS providers the database Composition uses, and the Configuration holding
/// that Composition.
pub const PACKAGES: [PackagePlan; 3] = [
    PackagePlan {
        name: "provider-aws-rds",
        kind: "Provider",
        package: "xpkg.upbound.io/upbound/provider-aws-rds",
        versions: &["v1.13.0", "v1.14.0"],
    },
    PackagePlan {
        name: "provider-aws-iam",
        kind: "Provider",
        package: "xpkg.upbound.io/upbound/provider-aws-iam",
        versions: &["v1.14.0"],
    },
    PackagePlan {
        name: "configuration-database",
        kind: "Configuration",
        package: "xpkg.upbound.io/acme/configuration-database",
        versions: &["v0.4.2"],
    },
];

/// One version bump of the planned history: a component's or a package's file moving to `version` in
/// `environment` (on every cluster of it) at `at` (seconds since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedBump {
    /// The component or package.
    pub name: &'static str,
    /// The environment whose clusters move; empty for a package, which moves on every cluster at once.
    pub environment: &'static str,
    /// The version moved to.
    pub version: &'static str,
    /// When it was committed (a pull request's opening, for people's bumps).
    pub at: i64,
}

/// When the world's planned history happened, laid out backwards from the moment the sandbox starts.
///
/// This is the one place the sandbox decides times: the git histories, the fixtures, the forge's pull
/// requests and the metrics backfill all derive theirs from a `Timeline`, so they agree with each other and
/// a sandbox started today shows a history that ends today. The same start gives the same world (and the
/// same commit ids); a later start gives the same world, shifted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeline {
    start: Timestamp,
}

impl Default for Timeline {
    /// The fixed world of [`FIXED_START`].
    fn default() -> Self {
        Self::ending_at(FIXED_START)
    }
}

impl Timeline {
    /// A world whose planned history ends just before `start` (truncated to whole seconds, as Kubernetes
    /// and git write times).
    pub fn ending_at(start: Timestamp) -> Self {
        Self {
            start: Timestamp::from_second(start.as_second()).unwrap_or(start),
        }
    }

    /// The moment the sandbox starts: every planned object is older.
    pub fn start(&self) -> Timestamp {
        self.start
    }

    /// When the first service's scaffold commit was made, in seconds since the epoch.
    pub fn history_start(&self) -> i64 {
        self.start.as_second() - LAST_COMMIT_LEAD - last_commit_offset()
    }

    /// When the platform itself was installed: before every service, Application and namespace.
    pub fn bootstrapped(&self) -> i64 {
        self.history_start() - BOOTSTRAP_LEAD
    }

    /// The commit time of commit `index` of the `service_index`-th service: one commit a day per service,
    /// services 40 minutes apart so histories interleave.
    pub fn commit_time(&self, service_index: usize, index: usize) -> i64 {
        self.history_start() + offset(service_index, index)
    }

    /// When the `service_index`-th service was onboarded: its Component and Releases merged an hour
    /// after its scaffold commit.
    pub fn onboarded(&self, service_index: usize) -> i64 {
        self.commit_time(service_index, 0) + ONBOARD_DELAY
    }

    /// The platform components' version bumps after the bootstrap, oldest first: the `n`-th later version
    /// of the `k`-th component reaches dev on day `2n - 1` of the history (a few hours in, components an
    /// hour apart), management two hours later, and prod the next day, unless prod lags and this is the
    /// newest version. A component that only runs on management moves there at dev's time.
    pub fn component_bumps(&self) -> Vec<PlannedBump> {
        let mut bumps = Vec::new();
        for (k, component) in PLATFORM_COMPONENTS.iter().enumerate() {
            for (n, version) in component.versions.iter().enumerate().skip(1) {
                let first = self.history_start() + (2 * n as i64 - 1) * DAY + (2 + k as i64) * HOUR;
                let newest = n + 1 == component.versions.len();
                let management_at = if component.runs_in("dev") {
                    first + 2 * HOUR
                } else {
                    first
                };
                for (environment, at) in [
                    ("dev", first),
                    (MANAGEMENT_ENVIRONMENT, management_at),
                    ("prod", first + DAY),
                ] {
                    if !component.runs_in(environment)
                        || (environment == "prod" && newest && component.prod_lags)
                    {
                        continue;
                    }
                    bumps.push(PlannedBump {
                        name: component.name,
                        environment,
                        version,
                        at,
                    });
                }
            }
        }
        bumps.sort_by_key(|bump| bump.at);
        bumps
    }

    /// The Crossplane packages' bumps after the bootstrap: each later version on every cluster at once, by
    /// one pull request, on day three.
    pub fn package_bumps(&self) -> Vec<PlannedBump> {
        PACKAGES
            .iter()
            .enumerate()
            .flat_map(|(k, package)| {
                package
                    .versions
                    .iter()
                    .enumerate()
                    .skip(1)
                    .map(move |(n, version)| PlannedBump {
                        name: package.name,
                        environment: "",
                        version,
                        at: self.history_start() + (2 * n as i64 + 1) * DAY + (5 + k as i64) * HOUR,
                    })
            })
            .collect()
    }

    /// When the ApplicationSet created the service's Applications (and Argo CD their namespaces): once the
    /// release operator had derived the onboarding's files.
    pub fn applications_created(&self, service_index: usize) -> i64 {
        self.commit_time(service_index, 0) + APPLICATIONS_DELAY
    }

    /// Seconds since the epoch as a timestamp (the start when out of range).
    pub fn at(&self, seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap_or(self.start)
    }

    /// `seconds` before the start.
    pub fn before_start(&self, seconds: i64) -> Timestamp {
        self.start
            .checked_sub(SignedDuration::from_secs(seconds))
            .unwrap_or(self.start)
    }

    /// When commit `index` of the `service_index`-th service finished syncing in `environment` (Argo CD's
    /// `deployedAt`), in seconds since the epoch: see [`deploy_time`].
    pub fn deployed(&self, service_index: usize, index: usize, environment: &str) -> i64 {
        deploy_time(
            environment,
            self.commit_time(service_index, index),
            self.commit_time(service_index, 0),
            self.start.as_second(),
        )
    }

    /// The bad deploy of [`BAD_DEPLOY_SERVICE`] in [`BAD_DEPLOY_ENVIRONMENT`]: the service's current prod
    /// commit, at the instant its Argo CD history records it (the Metrics tab's deploy marker). From then on
    /// [`crate::metrics::BAD_DEPLOY_ERRORS`] (8 %) of that service's requests fail; before, well under 1 %.
    ///
    /// A server test finds it from the sandbox it started: `sandbox.timeline().bad_deploy()`.
    pub fn bad_deploy(&self) -> Deploy {
        let plan = &SERVICES[BAD_DEPLOY_INDEX];
        Deploy {
            service: plan.name,
            environment: BAD_DEPLOY_ENVIRONMENT,
            commit: plan.prod,
            at: self.at(self.deployed(BAD_DEPLOY_INDEX, plan.prod, BAD_DEPLOY_ENVIRONMENT)),
        }
    }
}

/// When a commit made at `committed` reached `environment` (Argo CD's `deployedAt`) for a service whose
/// scaffold was committed at `scaffolded`, in a world starting at `start` (all seconds since the epoch): dev
/// [`DEV_DEPLOY_DELAY`] after the commit, prod [`PROD_DEPLOY_DELAY`] after it (the next working day), never
/// before Argo CD first synced the service and never later than a minute before the start.
pub fn deploy_time(environment: &str, committed: i64, scaffolded: i64, start: i64) -> i64 {
    let delay = if environment == "prod" {
        PROD_DEPLOY_DELAY
    } else {
        DEV_DEPLOY_DELAY
    };
    (committed + delay)
        .max(scaffolded + FIRST_SYNC_DELAY)
        .min(start - MINUTE)
}

/// One deploy of the planned history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deploy {
    /// The service deployed.
    pub service: &'static str,
    /// Where.
    pub environment: &'static str,
    /// Its position in the service's [`ServicePlan::commits`].
    pub commit: usize,
    /// When Argo CD finished syncing it: the `deployedAt` of the Application's history entry.
    pub at: Timestamp,
}

/// The service whose last prod deploy went bad: `payments`' promotion of "Add refunds reference" ships code
/// that needs migration 0004 to a prod database still at 0003 ([`ServicePlan::prod_schema_behind`]), so
/// its error ratio jumps from well under 1 % to about 8 % right after the deploy. Of all planned prod
/// deploys it is the only one inside the metrics' six hours of history (about 3 h 41 min before the start).
pub const BAD_DEPLOY_SERVICE: &str = SERVICES[BAD_DEPLOY_INDEX].name;
/// The environment of the bad deploy.
pub const BAD_DEPLOY_ENVIRONMENT: &str = "prod";
/// `payments`' position in [`SERVICES`].
const BAD_DEPLOY_INDEX: usize = 0;

/// The service whose latency objective burns slowly: in prod a tenth of `search`'s queries miss its cache
/// of hot queries and take the slow path ([`crate::metrics::SLOW_LATENCY_TAIL`]), so all day about 1.9 % of
/// them take longer than the 0.5 s its objective allows 1 % to exceed. Nothing pages; the budget is gone in
/// half the objective's window ([`crate::fixtures::slo::SLOW_BURN`]).
pub const SLOW_LATENCY_SERVICE: &str = "search";
/// The environment of the slow latency burn.
pub const SLOW_LATENCY_ENVIRONMENT: &str = "prod";

fn offset(service_index: usize, index: usize) -> i64 {
    index as i64 * DAY + service_index as i64 * SERVICE_STAGGER
}

/// The offset of the last planned commit of the fleet from the first.
fn last_commit_offset() -> i64 {
    SERVICES
        .iter()
        .enumerate()
        .map(|(service_index, plan)| offset(service_index, plan.commits.len().saturating_sub(1)))
        .max()
        .unwrap_or_default()
}

/// The position of `name` in [`SERVICES`] (what staggers its history), if it is one.
pub fn service_index(name: &str) -> Option<usize> {
    SERVICES.iter().position(|s| s.name == name)
}

/// Looks a service plan up by name.
pub fn service(name: &str) -> Option<&'static ServicePlan> {
    SERVICES.iter().find(|s| s.name == name)
}

/// Looks a team up by slug: a service team, or [`PLATFORM_TEAM`].
pub fn team(slug: &str) -> Option<&'static Team> {
    TEAMS
        .iter()
        .chain(std::iter::once(&PLATFORM_TEAM))
        .find(|t| t.slug == slug)
}

/// A commit as it exists in a service repository built from the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The full 40-hex commit id.
    pub sha: String,
    /// The first line of its message.
    pub message: String,
    /// The author's forge login.
    pub author: String,
    /// Commit time, RFC 3339.
    pub time: String,
    /// Whether its build is green.
    pub green: bool,
    /// Every migration file present at this commit, in order.
    pub migrations: Vec<String>,
}

impl Commit {
    /// The short id images are tagged with and versions are shown as: the first 7 hex digits.
    pub fn short(&self) -> &str {
        self.sha.get(..7).unwrap_or(&self.sha)
    }
}

/// The real histories of every service repository, oldest commit first, and where `application-repositories`
/// ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histories {
    /// Commits by service name.
    pub services: BTreeMap<String, Vec<Commit>>,
    /// The commit at the head of main of `application-repositories`: the revision the Applications that
    /// sync its `HEAD` (the platform's own) were last compared with. Empty when no repository was built.
    pub gitops_head: String,
    /// The commits of main of `application-repositories` that changed each file, oldest first (a merged
    /// pull request changes its files in its merge commit): what the platform's Applications synced.
    pub gitops_changes: BTreeMap<String, Vec<FileChange>>,
}

/// A commit of `application-repositories` changing a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The commit on main.
    pub commit: String,
    /// Its commit time, in seconds since the epoch.
    pub time: i64,
}

impl Histories {
    /// The commit at `index` of `service`'s history.
    pub fn commit(&self, service: &str, index: usize) -> Option<&Commit> {
        self.services.get(service).and_then(|c| c.get(index))
    }

    /// What runs of `plan` in `environment` according to the plan.
    pub fn running(&self, plan: &ServicePlan, environment: &str) -> Option<&Commit> {
        let index = if environment == "prod" {
            plan.prod
        } else {
            plan.dev
        };
        self.commit(plan.name, index)
    }

    /// Fake but well-formed histories for unit tests that do not build git repositories: commit ids are
    /// derived from the service name and position.
    pub fn synthetic() -> Self {
        let services = SERVICES
            .iter()
            .map(|plan| {
                let team = team(plan.team).map(|t| t.members[0]).unwrap_or("root");
                let mut migrations = Vec::new();
                let commits = plan
                    .commits
                    .iter()
                    .enumerate()
                    .map(|(index, commit)| {
                        if let Some(file) = commit.migration {
                            migrations.push(file.to_string());
                        }
                        Commit {
                            sha: synthetic_sha(plan.name, index),
                            message: commit.message.to_string(),
                            author: team.to_string(),
                            time: format!("2026-11-{:02}T09:00:00Z", 10 + index),
                            green: commit.green,
                            migrations: migrations.clone(),
                        }
                    })
                    .collect();
                (plan.name.to_string(), commits)
            })
            .collect();
        Self {
            services,
            gitops_head: synthetic_sha(crate::world::GITOPS_REPOSITORY, 0),
            gitops_changes: BTreeMap::new(),
        }
    }
}

fn synthetic_sha(service: &str, index: usize) -> String {
    // FNV-1a over the name and position, repeated to 40 hex digits: stable and distinct enough for tests.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in service.bytes().chain((index as u64).to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}{hash:016x}{:08x}", hash as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_is_consistent() {
        for plan in &SERVICES {
            assert!(
                team(plan.team).is_some(),
                "{} has an unknown team",
                plan.name
            );
            for index in [plan.dev, plan.prod].into_iter().chain(plan.prod_previous) {
                let commit = plan.commits.get(index).expect("position within history");
                assert!(commit.green, "{} runs a red build at {index}", plan.name);
            }
            for dependency in plan.depends_on {
                assert!(
                    service(dependency).is_some(),
                    "{} depends on unknown {dependency}",
                    plan.name
                );
            }
            assert!(plan.prod <= plan.dev, "{}: prod is ahead of dev", plan.name);
        }
        assert_eq!(SERVICES.len(), 8);
        assert_eq!(TEAMS.len(), 3);
    }

    #[test]
    fn every_service_was_scaffolded_from_a_template_the_platform_offers() {
        for plan in &SERVICES {
            assert!(
                SCAFFOLDS
                    .iter()
                    .any(|(name, versions)| *name == plan.template
                        && versions.first() == Some(&TEMPLATE_VERSION)),
                "{} uses {} {TEMPLATE_VERSION}, which SCAFFOLDS lacks",
                plan.name,
                plan.template
            );
        }
    }

    #[test]
    fn the_last_planned_commit_is_minutes_before_the_start() {
        let timeline = Timeline::default();
        let last = SERVICES
            .iter()
            .enumerate()
            .map(|(index, plan)| timeline.commit_time(index, plan.commits.len() - 1))
            .max()
            .expect("services");
        assert_eq!(timeline.start().as_second() - last, LAST_COMMIT_LEAD);
        assert!(timeline.bootstrapped() < timeline.commit_time(0, 0));
        // Every planned deploy happened before the start.
        assert!(last + DEV_DEPLOY_DELAY < timeline.start().as_second());
    }

    #[test]
    fn the_bad_deploy_is_payments_last_prod_deploy_a_few_hours_before_the_start() {
        let timeline = Timeline::default();
        let deploy = timeline.bad_deploy();
        assert_eq!((deploy.service, deploy.environment), ("payments", "prod"));
        let plan = service(BAD_DEPLOY_SERVICE).expect("payments");
        assert_eq!(deploy.commit, plan.prod);
        assert!(
            plan.prod_schema_behind.is_some(),
            "the story needs a reason"
        );
        let ago = timeline.start().as_second() - deploy.at.as_second();
        assert_eq!(ago, 3 * HOUR + 41 * MINUTE);
        // Inside the Metrics tab's six hours, with clean history on both sides of it.
        assert!((HOUR..=6 * HOUR - 30 * MINUTE).contains(&ago), "{ago}");
        let previous = plan.prod_previous.expect("a previous prod deploy");
        assert!(
            timeline.deployed(BAD_DEPLOY_INDEX, previous, "prod")
                < deploy.at.as_second() - 6 * HOUR
        );
        // No other planned prod deploy falls inside the metrics' six hours, so the marker is unambiguous.
        for (index, other) in SERVICES.iter().enumerate().skip(1) {
            let at = timeline.deployed(index, other.prod, "prod");
            assert!(
                timeline.start().as_second() - at > 6 * HOUR,
                "{} deployed to prod {}s before the start",
                other.name,
                timeline.start().as_second() - at
            );
        }
        // A later start moves it along.
        let later = Timeline::ending_at(timeline.start() + SignedDuration::from_hours(5));
        assert_eq!(
            later.bad_deploy().at.as_second() - deploy.at.as_second(),
            5 * HOUR
        );
    }

    #[test]
    fn synthetic_histories_follow_the_plan() {
        let histories = Histories::synthetic();
        let payments = service("payments").expect("payments");
        let prod = histories.running(payments, "prod").expect("prod commit");
        assert_eq!(prod.migrations.len(), 4);
        assert_eq!(prod.short().len(), 7);
        assert_ne!(histories.running(payments, "dev"), Some(prod));
    }
}
