//! The HTTP contract between the browser and the server, declared once.
//!
//! Every route is a type implementing [`Endpoint`]: its method, path pattern, the permission it needs, its
//! request and its response. The server registers its handlers by these types and the app calls through
//! them, so a route renamed or dropped on one side and not the other no longer compiles. [`ROUTES`] lists
//! them all, for the server's registration check and the route × role table.
//!
//! The event stream's names and the CSRF header live here too: they are part of the same contract.

use crate::auth::Permission;
use crate::config::{EditFile, PlatformConfig, ServiceConfig};
use crate::databases::DatabaseDetail;
use crate::delivery::{
    AddDatabaseForm, ApplySchemaForm, BuildView, ChangePreview, CreateDeploymentForm, MovePreview,
    OnboardForm, PullRequestView, ReleaseDetail, ReleasePage, Scaffold, SchemaVersionView,
};
use crate::fleet::{
    ActivityItem, DatabaseView, EnvironmentView, FleetEvent, ServiceDetail, ServiceSummary,
    SyncRequest, SyncResponse,
};
use crate::logs::{LogLine, RecentPods};
use crate::metrics::{MetricsRange, MetricsView};
use crate::pipelines::{LogChunk, PipelineQuery, PipelineRunDetail, PipelineRunPage, StepLogQuery};
use crate::platform::PlatformView;
use crate::session::SessionInfo;
use crate::slo::{SloSummary, SloView};
use crate::url::encode_query_value;

/// Where the API lives: every route's path starts with it.
pub const PREFIX: &str = "/api/v1";

/// The header every state-changing request from Tower's own page carries. A cross-site form cannot set it,
/// and a cross-site `fetch` with it needs a CORS preflight that Tower never grants.
pub const CSRF_HEADER: &str = "x-tower-csrf";

/// The name SSE messages carrying a [`FleetEvent`] are sent under, on [`Events`].
pub const FLEET_EVENT: &str = "fleet";

/// The name SSE messages carrying one log line are sent under, on [`Logs`]: each message's data is a
/// [`crate::logs::LogLine`] as JSON, saying whether the line was read live or from the log store.
pub const LOG_EVENT: &str = "log";

/// The name of the one SSE message that closes a [`Logs`] stream which ends by itself (a tail without follow,
/// a gone pod's stored lines). A browser's EventSource reconnects after any close, so without it an end and
/// a dropped connection look the same, and the tail would be sent again. Its data is the name again: a
/// browser dispatches no event whose data is empty.
pub const LOG_END_EVENT: &str = "end";

/// The HTTP methods the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    /// Reads, and previews of a Promote or Rollback.
    Get,
    /// Everything with a body or an effect.
    Post,
}

impl Method {
    /// As HTTP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// What a route needs of whoever calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Anyone, signed in or not: only the session routes themselves.
    Public,
    /// A permission not tied to one service.
    Fleet(Permission),
    /// A permission on the service named by the route's `{name}` placeholder: owner-only permissions need
    /// membership of that service's owner team.
    Service(Permission),
}

impl Access {
    /// The permission it needs, if any.
    pub fn permission(self) -> Option<Permission> {
        match self {
            Access::Public => None,
            Access::Fleet(p) | Access::Service(p) => Some(p),
        }
    }
}

/// One route as declared: what the server registers and the app calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    /// The endpoint's type name, for messages and tests.
    pub name: &'static str,
    /// Its method.
    pub method: Method,
    /// The full path with `{placeholder}`s, e.g. `/api/v1/services/{name}`.
    pub path: &'static str,
    /// What it needs.
    pub access: Access,
    /// Whether it shows what a write would do without doing it. Previews need the write's permission but
    /// change nothing, so looking before acting is neither audited nor throttled.
    pub preview: bool,
}

impl Route {
    /// Whether calling it changes something: a POST needing a write permission, not a preview. Writes are
    /// audited and rate limited.
    pub fn writes(&self) -> bool {
        self.method == Method::Post
            && !self.preview
            && self.access.permission().is_some_and(Permission::is_write)
    }

    /// The path relative to [`PREFIX`], as a router nested there registers it.
    pub fn relative_path(&self) -> &'static str {
        self.path.strip_prefix(PREFIX).unwrap_or(self.path)
    }

    /// The names of its placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
    }

    /// The path with each placeholder replaced, in order, by the percent-encoded `values`.
    fn url(&self, values: &[&str]) -> String {
        let mut values = values.iter();
        let mut url = String::with_capacity(self.path.len() + 16);
        for segment in self.path.split('/').skip(1) {
            url.push('/');
            if segment.starts_with('{') {
                // The builders below pass exactly one value per placeholder (a test checks each).
                url.push_str(&encode_query_value(
                    values.next().copied().unwrap_or_default(),
                ));
            } else {
                url.push_str(segment);
            }
        }
        url
    }
}

/// One API route as a type: the server registers its handler by it, the app calls through it.
pub trait Endpoint {
    /// Method, path, access.
    const ROUTE: Route;
    /// The JSON body it takes (`()` when none).
    type Request;
    /// What a 2xx answer carries (`()` when nothing; for a stream, one event's data).
    type Response;
}

/// Declares the endpoints, their URL builders and [`ROUTES`]. Each entry reads
/// `Name: Method "path" (one argument per placeholder), access [, preview]; Request => Response;`.
macro_rules! endpoints {
    (@preview) => { false };
    (@preview preview) => { true };
    ($(
        $(#[doc = $doc:literal])*
        $name:ident: $method:ident $path:literal ($($arg:ident),*), $access:expr $(, $preview:ident)?;
            $request:ty => $response:ty;
    )*) => {
        $(
            $(#[doc = $doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct $name;

            impl Endpoint for $name {
                const ROUTE: Route = Route {
                    name: stringify!($name),
                    method: Method::$method,
                    path: concat!("/api/v1", $path),
                    access: $access,
                    preview: endpoints!(@preview $($preview)?),
                };
                type Request = $request;
                type Response = $response;
            }

            impl $name {
                /// Its URL: the path with each placeholder filled, in order, with a percent-encoded value.
                pub fn url($($arg: &str),*) -> String {
                    Self::ROUTE.url(&[$($arg),*])
                }
            }
        )*

        /// Every route of the API, in the order the server registers them.
        pub const ROUTES: &[Route] = &[$($name::ROUTE),*];
    };
}

use Access::{Fleet, Public, Service};

endpoints! {
    /// Who is signed in, and the access policy.
    GetSession: Get "/session" (), Public;
        () => SessionInfo;
    /// Starts a guest session.
    ContinueAsGuest: Post "/session/guest" (), Public;
        () => SessionInfo;
    /// Ends the session (204).
    SignOut: Post "/session/sign-out" (), Public;
        () => ();

    /// Every service of the fleet.
    ListServices: Get "/services" (), Fleet(Permission::ReadCatalog);
        () => Vec<ServiceSummary>;
    /// One service, with a deployment card per environment.
    GetService: Get "/services/{name}" (name), Service(Permission::ReadFleet);
        () => ServiceDetail;
    /// The databases a service is bound to, in every environment.
    ListDatabases: Get "/services/{name}/databases" (service), Service(Permission::ReadFleet);
        () => Vec<DatabaseView>;
    /// Asks Argo CD to sync a service's Application in one environment.
    SyncEnvironment: Post "/services/{name}/environments/{env}/sync" (service, environment),
        Service(Permission::Sync);
        SyncRequest => SyncResponse;
    /// One container's log as SSE, one [`LogLine`] per [`LOG_EVENT`]; takes a [`LogQuery`]. A running
    /// pod's log is read live; a pod that is gone, from the log store.
    Logs: Get "/services/{name}/environments/{env}/logs" (service, environment),
        Service(Permission::ReadLogs);
        () => LogLine;
    /// The pods whose logs [`Logs`] can read: running ones, and gone ones the log store keeps.
    ListLogPods: Get "/services/{name}/environments/{env}/log-pods" (service, environment),
        Service(Permission::ReadLogs);
        () => RecentPods;
    /// The fixed metrics of a service in one environment, with its deploys; takes a
    /// [`crate::metrics::MetricsParams`].
    GetMetrics: Get "/services/{name}/environments/{env}/metrics" (service, environment),
        Service(Permission::ReadMetrics);
        () => MetricsView;
    /// A service's objectives in every environment, evaluated.
    ListSlos: Get "/services/{name}/slos" (service), Service(Permission::ReadMetrics);
        () => Vec<SloView>;
    /// Every service with objectives, by its worst budget.
    ListSloSummaries: Get "/slos" (), Fleet(Permission::ReadMetrics);
        () => Vec<SloSummary>;
    /// Every service's pipeline runs, newest first, a page at a time; takes a [`PipelineQuery`].
    ListPipelineRuns: Get "/pipelines" (), Fleet(Permission::ReadFleet);
        () => PipelineRunPage;
    /// One service's pipeline runs, newest first, a page at a time; takes a [`PipelineQuery`] (whose
    /// `service` the path overrides).
    ListServicePipelineRuns: Get "/services/{name}/pipelines" (service), Service(Permission::ReadFleet);
        () => PipelineRunPage;
    /// One run: its spec, tasks, steps, results and `when` outcomes.
    GetPipelineRun: Get "/pipelines/{namespace}/{run}" (namespace, run), Fleet(Permission::ReadFleet);
        () => PipelineRunDetail;
    /// One step's container log as SSE, a [`crate::pipelines::LogChunk`] per
    /// [`crate::pipelines::LOG_CHUNK_EVENT`] and [`LOG_END_EVENT`] at the end; takes a [`StepLogQuery`].
    StepLog: Get "/services/{name}/pipelines/{namespace}/{run}/tasks/{task}/steps/{step}/log"
        (service, namespace, run, task, step), Service(Permission::ReadLogs);
        () => LogChunk;
    /// One step's whole container log as plain text, to download.
    DownloadStepLog: Get "/services/{name}/pipelines/{namespace}/{run}/tasks/{task}/steps/{step}/log.txt"
        (service, namespace, run, task, step), Service(Permission::ReadLogs);
        () => String;
    /// A service's platform resources per environment: the files in git, the live objects, the operators'
    /// derived files, what runs, and where the live objects drift from git.
    GetServiceConfig: Get "/services/{name}/config" (service), Service(Permission::ReadFleet);
        () => ServiceConfig;
    /// What an edit of one of the service's `platform/` files would write; a file that does not pass
    /// [`crate::config::validate`] is refused (422) with its diagnostics.
    PreviewConfigEdit: Post "/services/{name}/config/preview" (service),
        Service(Permission::EditConfig), preview;
        EditFile => ChangePreview;
    /// Opens the edit's pull request (201, or 200 when reused); refused like the preview.
    SubmitConfigEdit: Post "/services/{name}/config/submit" (service), Service(Permission::EditConfig);
        EditFile => PullRequestView;
    /// The platform's configuration: ApplicationSets and what they generated, the clusters, Tower's settings.
    GetPlatformConfig: Get "/config" (), Fleet(Permission::ReadFleet);
        () => PlatformConfig;
    /// The platform's own components and Crossplane packages per cluster, with their Applications, versions,
    /// skew and last bumps.
    GetPlatform: Get "/platform" (), Fleet(Permission::ReadPlatform);
        () => PlatformView;
    /// Every Database in every environment, by environment then name.
    ListAllDatabases: Get "/databases" (), Fleet(Permission::ReadFleet);
        () => Vec<DatabaseView>;
    /// One database: its checks (error texts for owners of a bound service only) and its schema's history.
    GetDatabase: Get "/databases/{env}/{database}" (environment, database), Fleet(Permission::ReadFleet);
        () => DatabaseDetail;
    /// GitHub's webhook (`push`, `pull_request`, `pull_request_review`, `check_run`), verified by its
    /// `X-Hub-Signature-256` HMAC against the configured secret: 401 and no effect otherwise, 204 when taken.
    /// Not Tower's page calling, so no session and no CSRF header: the signature is the credential.
    GithubWebhook: Post "/webhooks/github" (), Public;
        serde_json::Value => ();
    /// The environments and their clusters' connections.
    ListEnvironments: Get "/environments" (), Fleet(Permission::ReadFleet);
        () => Vec<EnvironmentView>;
    /// The newest things that happened, newest first.
    ListActivity: Get "/activity" (), Fleet(Permission::ReadFleet);
        () => Vec<ActivityItem>;
    /// The one event stream: a snapshot, then deltas, each a [`FLEET_EVENT`].
    Events: Get "/events" (), Fleet(Permission::ReadFleet);
        () => FleetEvent;

    /// The scaffold templates and versions new services can be created from.
    ListScaffolds: Get "/scaffolds" (), Fleet(Permission::ReadCatalog);
        () => Vec<Scaffold>;
    /// What onboarding a new service would write.
    PreviewOnboard: Post "/templates/{template}/preview" (template),
        Fleet(Permission::RunTemplates), preview;
        TemplateForm => ChangePreview;
    /// Opens the pull request that onboards a new service (201, or 200 when reused).
    SubmitOnboard: Post "/templates/{template}/submit" (template), Fleet(Permission::RunTemplates);
        TemplateForm => PullRequestView;
    /// What a golden path on an existing service would write.
    PreviewTemplate: Post "/services/{name}/templates/{template}/preview" (service, template),
        Service(Permission::RunTemplates), preview;
        TemplateForm => ChangePreview;
    /// Opens the golden path's pull request (201, or 200 when reused).
    SubmitTemplate: Post "/services/{name}/templates/{template}/submit" (service, template),
        Service(Permission::RunTemplates);
        TemplateForm => PullRequestView;
    /// The service's green builds, newest first.
    ListBuilds: Get "/services/{name}/builds" (service), Service(Permission::ReadReleases);
        () => Vec<BuildView>;
    /// The schema versions published from the service's migrations.
    ListSchemaVersions: Get "/services/{name}/schema-versions" (service),
        Service(Permission::ReadReleases);
        () => Vec<SchemaVersionView>;
    /// What Promote to prod would change.
    PreviewPromote: Get "/services/{name}/promote/preview" (service),
        Service(Permission::Promote), preview;
        () => MovePreview;
    /// Opens the Promote pull request.
    Promote: Post "/services/{name}/promote" (service), Service(Permission::Promote);
        () => PullRequestView;
    /// What Rollback of prod would change.
    PreviewRollback: Get "/services/{name}/rollback/preview" (service),
        Service(Permission::Rollback), preview;
        () => MovePreview;
    /// Opens the Rollback pull request.
    Rollback: Post "/services/{name}/rollback" (service), Service(Permission::Rollback);
        () => PullRequestView;
    /// Tower's open pull requests for one service.
    ServicePulls: Get "/services/{name}/pulls" (service), Service(Permission::ReadPullRequests);
        () => Vec<PullRequestView>;
    /// Tower's pull requests: open, then recently merged.
    ListPulls: Get "/pulls" (), Fleet(Permission::ReadPullRequests);
        () => Vec<PullRequestView>;
    /// One page of release records; takes a [`ReleaseQuery`].
    ListReleases: Get "/releases" (), Fleet(Permission::ReadReleases);
        () => ReleasePage;
    /// One release record with its diff.
    GetRelease: Get "/releases/{sha}" (sha), Fleet(Permission::ReadReleases);
        () => ReleaseDetail;
}

impl Logs {
    /// The log stream of one container of `service` in `environment`.
    pub fn with_query(service: &str, environment: &str, query: &LogQuery) -> String {
        format!("{}?{}", Self::url(service, environment), query.to_query())
    }
}

impl GetMetrics {
    /// The metrics of `service` in `environment` over `range`.
    pub fn with_range(service: &str, environment: &str, range: MetricsRange) -> String {
        let mut query = Query::default();
        query.push("range", range.param());
        format!("{}?{}", Self::url(service, environment), query.0)
    }
}

impl ListPipelineRuns {
    /// One page of the fleet's runs.
    pub fn with_query(query: &PipelineQuery) -> String {
        with_query_string(Self::url(), query.to_query())
    }
}

impl ListServicePipelineRuns {
    /// One page of `service`'s runs.
    pub fn with_query(service: &str, query: &PipelineQuery) -> String {
        with_query_string(Self::url(service), query.to_query())
    }
}

impl StepLog {
    /// The log stream of `step` of `task` in run `namespace/run` of `service`.
    pub fn with_query(
        service: &str,
        namespace: &str,
        run: &str,
        task: &str,
        step: &str,
        query: StepLogQuery,
    ) -> String {
        format!(
            "{}?follow={}",
            Self::url(service, namespace, run, task, step),
            query.follow
        )
    }
}

/// `url` with `query` appended, if it is not empty.
fn with_query_string(url: String, query: String) -> String {
    if query.is_empty() {
        url
    } else {
        format!("{url}?{query}")
    }
}

impl ListReleases {
    /// One page of release records.
    pub fn with_query(query: &ReleaseQuery) -> String {
        format!("{}?{}", Self::url(), query.to_query())
    }
}

/// The body of every golden path's preview and submit: one form per [`crate::delivery::Template`]. On the
/// wire it is the form itself; the route's `{template}` says which.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum TemplateForm {
    /// `onboard-service`.
    Onboard(OnboardForm),
    /// `create-deployment`.
    CreateDeployment(CreateDeploymentForm),
    /// `add-database`.
    AddDatabase(AddDatabaseForm),
    /// `apply-schema`.
    ApplySchema(ApplySchemaForm),
}

/// The query of [`Logs`]: which container, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct LogQuery {
    /// The pod.
    pub pod: String,
    /// The container in it (the pod's only one when absent).
    pub container: Option<String>,
    /// Keep streaming new lines.
    #[serde(default)]
    pub follow: bool,
    /// The previous (crashed) instance of the container.
    #[serde(default)]
    pub previous: bool,
    /// How many lines from the end to start with (the server clamps it; 200 when absent).
    pub tail: Option<i64>,
}

impl LogQuery {
    /// As a query string (without `?`), as `serde_urlencoded` would write it.
    pub fn to_query(&self) -> String {
        let mut query = Query::default();
        query.push("pod", &self.pod);
        if let Some(container) = &self.container {
            query.push("container", container);
        }
        query.push("follow", if self.follow { "true" } else { "false" });
        query.push("previous", if self.previous { "true" } else { "false" });
        if let Some(tail) = self.tail {
            query.push("tail", &tail.to_string());
        }
        query.0
    }
}

/// The query of [`ListReleases`] and of the Releases page's own URL.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct ReleaseQuery {
    /// The service.
    pub service: Option<String>,
    /// The environment (prod when absent).
    pub environment: Option<String>,
    /// Where the page starts: the commit of the last record of the page before.
    pub cursor: Option<String>,
}

impl ReleaseQuery {
    /// As a query string (without `?`), as `serde_urlencoded` would write it.
    pub fn to_query(&self) -> String {
        let mut query = Query::default();
        for (key, value) in [
            ("service", &self.service),
            ("environment", &self.environment),
            ("cursor", &self.cursor),
        ] {
            if let Some(value) = value {
                query.push(key, value);
            }
        }
        query.0
    }
}

/// A query string written by hand: `serde_urlencoded` would be a dependency of the browser's build for two
/// small structs. A test checks that the server's parser reads back exactly what was written.
#[derive(Default)]
struct Query(String);

impl Query {
    fn push(&mut self, key: &str, value: &str) {
        if !self.0.is_empty() {
            self.0.push('&');
        }
        self.0.push_str(key);
        self.0.push('=');
        self.0.push_str(&encode_query_value(value));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_route_is_declared_once_under_the_prefix() {
        let mut seen = BTreeSet::new();
        for route in ROUTES {
            assert!(
                route.path.starts_with(PREFIX),
                "{}: {}",
                route.name,
                route.path
            );
            assert!(
                seen.insert((route.method, route.path)),
                "{} {} is declared twice",
                route.method.as_str(),
                route.path
            );
        }
        let names: BTreeSet<_> = ROUTES.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), ROUTES.len(), "endpoint names are unique");
    }

    #[test]
    fn a_service_route_names_its_service() {
        for route in ROUTES {
            if let Access::Service(_) = route.access {
                assert_eq!(
                    route.placeholders().next(),
                    Some("name"),
                    "{} is scoped to a service, so its first placeholder is the service",
                    route.name
                );
            }
        }
    }

    #[test]
    fn the_url_builders_fill_every_placeholder_and_encode_values() {
        let urls = [
            GetService::url("pay ments"),
            ListDatabases::url("payments"),
            SyncEnvironment::url("payments", "dev"),
            Logs::with_query("payments", "dev", &LogQuery::default()),
            PreviewOnboard::url("onboard-service"),
            SubmitOnboard::url("onboard-service"),
            PreviewTemplate::url("payments", "add-database"),
            SubmitTemplate::url("payments", "add-database"),
            ListBuilds::url("payments"),
            ListSchemaVersions::url("payments"),
            PreviewPromote::url("payments"),
            Promote::url("payments"),
            PreviewRollback::url("payments"),
            Rollback::url("payments"),
            ServicePulls::url("payments"),
            GetRelease::url("abc123"),
            GetMetrics::with_range("payments", "prod", MetricsRange::Week),
            ListSlos::url("payments"),
            ListLogPods::url("payments", "dev"),
            ListPipelineRuns::with_query(&PipelineQuery::default()),
            ListServicePipelineRuns::with_query("payments", &PipelineQuery::default()),
            GetPipelineRun::url("tekton-ci", "payments-build-abc1234"),
            StepLog::with_query(
                "payments",
                "tekton-ci",
                "r",
                "test",
                "unit",
                StepLogQuery::default(),
            ),
            DownloadStepLog::url("payments", "tekton-ci", "r", "test", "unit"),
            GetDatabase::url("prod", "payments-db"),
        ];
        for url in &urls {
            assert!(!url.contains('{'), "{url}");
        }
        assert_eq!(urls[0], "/api/v1/services/pay%20ments");
        assert_eq!(urls[19], "/api/v1/pipelines");
        assert_eq!(
            urls[22],
            "/api/v1/services/payments/pipelines/tekton-ci/r/tasks/test/steps/unit/log?follow=false"
        );
        assert_eq!(urls[2], "/api/v1/services/payments/environments/dev/sync");
        assert_eq!(urls[24], "/api/v1/databases/prod/payments-db");
        assert_eq!(
            urls[16],
            "/api/v1/services/payments/environments/prod/metrics?range=7d"
        );
        assert_eq!(
            urls[6],
            "/api/v1/services/payments/templates/add-database/preview"
        );
    }

    #[test]
    fn only_posts_that_are_not_previews_write() {
        let writes: BTreeSet<_> = ROUTES
            .iter()
            .filter(|r| r.writes())
            .map(|r| r.name)
            .collect();
        assert_eq!(
            writes,
            [
                "SyncEnvironment",
                "SubmitOnboard",
                "SubmitTemplate",
                "Promote",
                "Rollback",
                "SubmitConfigEdit"
            ]
            .into()
        );
        // A preview needs the permission of what it previews.
        for route in ROUTES.iter().filter(|r| r.preview) {
            assert!(
                route.access.permission().is_some_and(Permission::is_write),
                "{}",
                route.name
            );
        }
    }

    #[test]
    fn query_strings_encode_their_values() {
        let query = LogQuery {
            pod: "payments-7d9f&x".into(),
            container: Some("app".into()),
            follow: true,
            tail: Some(200),
            ..LogQuery::default()
        };
        assert_eq!(
            query.to_query(),
            "pod=payments-7d9f%26x&container=app&follow=true&previous=false&tail=200"
        );
        let releases = ReleaseQuery {
            service: Some("payments".into()),
            environment: None,
            cursor: Some("abc".into()),
        };
        assert_eq!(releases.to_query(), "service=payments&cursor=abc");
    }

    #[test]
    fn a_template_form_is_the_form_itself_on_the_wire() {
        let form = AddDatabaseForm {
            environment: "dev".into(),
            name: "orders".into(),
            size: "small".into(),
        };
        assert_eq!(
            serde_json::to_value(TemplateForm::AddDatabase(form.clone())).ok(),
            serde_json::to_value(form).ok()
        );
    }
}
