//! The Metrics tab's backend against the sandbox's real Prometheus (Debian's `prometheus`, which `.ci/run`
//! installs): every fixed query answers, a name built to break out of PromQL is refused before Prometheus
//! hears of it, viewers share answers, and a stopped metrics store is reported and recovered from.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use http_body_util::BodyExt as _;
use shared::api::GetMetrics;
use shared::metrics::{MetricQuery, MetricsRange, MetricsView};

use crate::{Role, TestApp, eventually};

/// A sandbox with metrics on a real Prometheus, and Tower reading them (through `mimir_url` when given,
/// e.g. a proxy that can be stopped).
async fn app_with_prometheus(mimir_url: Option<String>) -> TestApp {
    TestApp::start_over(sandbox_with_prometheus().await, |config| {
        if let (Some(url), Some(mimir)) = (mimir_url, config.mimir.as_mut()) {
            mimir.url = url;
        }
    })
    .await
}

/// A sandbox whose metrics run on a real Prometheus.
pub async fn sandbox_with_prometheus() -> sandbox::Sandbox {
    assert!(
        sandbox::metrics::Metrics::prometheus_installed(),
        "these tests need a real Prometheus: apt-get install prometheus (`.ci/run` does)"
    );
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.metrics = true;
    sandbox::Sandbox::start_with(options).await.unwrap()
}

/// Pyrra's ServiceLevelObjective, as the management cluster serves it.
pub fn pyrra_objectives() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "pyrra.dev".into(),
        version: "v1alpha1".into(),
        api_version: "pyrra.dev/v1alpha1".into(),
        kind: "ServiceLevelObjective".into(),
        plural: "servicelevelobjectives".into(),
    }
}

/// A platform without Pyrra objectives, so Tower's only queries are the Metrics tab's: the tests that count
/// what reaches the metrics store count exactly those.
async fn app_without_objectives() -> TestApp {
    use kube::Api;
    use kube::api::{DeleteParams, DynamicObject};

    let sandbox = sandbox_with_prometheus().await;
    let client =
        server::upstream::kube::client_for_url(&sandbox.cluster_url("management"), None, None)
            .unwrap();
    let resource = pyrra_objectives();
    let all = Api::<DynamicObject>::all_with(client.clone(), &resource);
    for slo in all.list(&Default::default()).await.unwrap().items {
        let namespace = slo.metadata.namespace.clone().unwrap();
        Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &resource)
            .delete(&slo.metadata.name.unwrap(), &DeleteParams::default())
            .await
            .unwrap();
    }
    assert!(
        all.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    TestApp::start_over(sandbox, |_| {}).await
}

async fn metrics_as(app: &TestApp, who: &Role, url: &str) -> (u16, serde_json::Value) {
    let response = app.send_as(who, Method::GET, url).await;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

async fn view(app: &TestApp, service: &str, environment: &str, range: MetricsRange) -> MetricsView {
    let (status, body) = metrics_as(
        app,
        &Role::Guest,
        &GetMetrics::with_range(service, environment, range),
    )
    .await;
    assert_eq!(status, 200, "{service} in {environment}: {body}");
    serde_json::from_value(body).unwrap()
}

/// How many range and instant queries Prometheus has answered, from its own request counter.
async fn queries_prometheus_answered(app: &TestApp) -> u64 {
    let base = app.sandbox.metrics_url().unwrap();
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|line| {
            line.starts_with("prometheus_http_requests_total{") && line.contains("/api/v1/query")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test]
async fn every_fixed_query_answers_for_every_fixture_service_and_environment() {
    let app = app_with_prometheus(None).await;
    let services = app.fleet.services();
    assert!(services.len() >= 5, "the fixture has a fleet");
    let mut charts = 0;
    for service in &services {
        for environment in app.fleet.environments() {
            let view = view(&app, &service.name, &environment, MetricsRange::Hour).await;
            let queries: Vec<MetricQuery> = view.charts.iter().map(|c| c.query).collect();
            assert_eq!(
                queries,
                MetricQuery::ALL,
                "one chart per fixed query, in order"
            );
            assert_eq!(view.end - view.start, 3_600);
            assert_eq!(view.end % 15, 0, "the window ends on a whole step");
            for chart in &view.charts {
                charts += 1;
                let what = format!("{} {} {:?}", service.name, environment, chart.query);
                assert_eq!(chart.error, None, "{what}");
                let points: Vec<&(i64, f64)> =
                    chart.series.iter().flat_map(|s| &s.points).collect();
                // The backfill covers the whole hour; allow the newest few steps to be still unscraped.
                assert!(points.len() >= 200, "{what}: {} points", points.len());
                assert!(
                    points
                        .iter()
                        .all(|(t, v)| (view.start..=view.end).contains(t) && v.is_finite()),
                    "{what}: points inside the window"
                );
                let plausible = |v: f64| match chart.query {
                    MetricQuery::ErrorRatio => (0.0..=1.0).contains(&v),
                    MetricQuery::LatencyP50 | MetricQuery::LatencyP95 | MetricQuery::LatencyP99 => {
                        v > 0.0 && v < 60.0
                    }
                    MetricQuery::RequestRate | MetricQuery::Cpu | MetricQuery::Memory => v > 0.0,
                    MetricQuery::Restarts => v >= 0.0,
                };
                assert!(points.iter().all(|(_, v)| plausible(*v)), "{what}");
            }
        }
    }
    println!("{charts} charts answered for {} services", services.len());

    // The tail is slower than the median, for the same service and moment.
    let view = view(&app, "payments", "prod", MetricsRange::Hour).await;
    let last = |query: MetricQuery| {
        view.charts
            .iter()
            .find(|c| c.query == query)
            .unwrap()
            .series[0]
            .points
            .last()
            .unwrap()
            .1
    };
    assert!(last(MetricQuery::LatencyP50) < last(MetricQuery::LatencyP95));
    assert!(last(MetricQuery::LatencyP95) < last(MetricQuery::LatencyP99));
}

#[tokio::test]
async fn a_component_with_no_series_answers_empty_charts_not_errors() {
    use kube::Api;
    use kube::api::PostParams;
    use shared::crd::Component;

    let app = app_with_prometheus(None).await;
    let client =
        server::upstream::kube::client_for_url(&app.sandbox.cluster_url("management"), None, None)
            .unwrap();
    let components: Api<Component> = Api::all(client);
    let template = components
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some("payments"))
        .expect("payments is a Component");
    let mut fresh = Component::new("invoices", template.spec.clone());
    fresh.metadata.namespace = template.metadata.namespace.clone();
    fresh.metadata.labels = template.metadata.labels.clone().map(|mut labels| {
        for value in labels.values_mut() {
            if value == "payments" {
                *value = "invoices".into();
            }
        }
        labels
    });
    Api::<Component>::namespaced(
        components.clone().into_client(),
        template.metadata.namespace.as_deref().unwrap_or("default"),
    )
    .create(&PostParams::default(), &fresh)
    .await
    .unwrap();
    eventually(Duration::from_secs(10), || async {
        app.fleet.service("invoices").map(|_| ())
    })
    .await
    .expect("the new Component becomes a service");

    let view = view(&app, "invoices", "prod", MetricsRange::Hour).await;
    assert_eq!(view.charts.len(), MetricQuery::ALL.len());
    for chart in &view.charts {
        assert_eq!(chart.error, None, "{:?}", chart.query);
        assert!(
            chart.series.is_empty(),
            "{:?}: {:?}",
            chart.query,
            chart.series
        );
    }
}

#[tokio::test]
async fn a_name_built_to_break_out_of_promql_is_refused_before_prometheus_hears_of_it() {
    let app = app_without_objectives().await;
    // Prometheus has answered nothing of Tower's yet; its own readiness checks are not queries.
    let before = queries_prometheus_answered(&app).await;
    let attacks = [
        (GetMetrics::url(r#"a"} or vector(1) #"#, "prod"), "name"),
        (
            GetMetrics::url("payments", r#"prod"} or vector(1) #"#),
            "env",
        ),
        (GetMetrics::url("payments", "prod\n"), "env"),
        (
            format!(
                "{}?range=1h%22%7D%20or%20vector(1)",
                GetMetrics::url("payments", "prod")
            ),
            "range",
        ),
    ];
    for (url, field) in &attacks {
        for who in [Role::Guest, Role::Owner] {
            let (status, body) = metrics_as(&app, &who, url).await;
            assert_eq!(status, 400, "{url} as {who:?}: {body}");
            assert_eq!(body["field"], *field, "{url}: {body}");
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        queries_prometheus_answered(&app).await,
        before,
        "no refused request reached Prometheus"
    );
}

#[tokio::test]
async fn twenty_viewers_of_one_chart_cost_one_upstream_query_per_fixed_query() {
    let app = app_without_objectives().await;
    let before = queries_prometheus_answered(&app).await;
    let url = GetMetrics::with_range("checkout", "prod", MetricsRange::Week);
    let viewers = (0..20).map(|n| {
        let who = if n % 2 == 0 { Role::Guest } else { Role::Owner };
        let app = &app;
        let url = url.clone();
        async move { metrics_as(app, &who, &url).await }
    });
    let answers = futures::future::join_all(viewers).await;
    let mut ends = BTreeSet::new();
    for (status, body) in &answers {
        assert_eq!(*status, 200, "{body}");
        ends.insert(body["end"].as_i64().unwrap());
    }
    // A week's step is 42 minutes: the twenty requests fall within one step unless one just began.
    let expected = (MetricQuery::ALL.len() * ends.len()) as u64;
    let reached = eventually(Duration::from_secs(5), || async {
        let now = queries_prometheus_answered(&app).await - before;
        (now >= expected).then_some(now)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = queries_prometheus_answered(&app).await - before;
    assert_eq!(reached, Some(expected), "one query per chart per step");
    assert_eq!(settled, expected, "and none after");
    assert!(
        answers.windows(2).all(|pair| pair[0].1 == pair[1].1) || ends.len() > 1,
        "every viewer sees the same answer"
    );
}

/// A TCP proxy that can be stopped (its port then refuses connections) and started again on the same port:
/// the metrics store going away and coming back, as Tower sees it. Its target is set once known.
struct Switch {
    addr: SocketAddr,
    target: Arc<std::sync::Mutex<String>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Switch {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut switch = Self {
            addr: listener.local_addr().unwrap(),
            target: Arc::default(),
            task: None,
        };
        switch.task = Some(switch.serve(listener));
        switch
    }

    /// Accepts and forwards until aborted; aborting it also cuts every connection it forwards (they live
    /// in its `JoinSet`), as a store that goes away does.
    fn serve(&self, listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        let target = self.target.clone();
        tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                let target = target.lock().unwrap().clone();
                connections.spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        })
    }

    async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    fn restart(&mut self) {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket.bind(self.addr).unwrap();
        self.task = Some(self.serve(socket.listen(64).unwrap()));
    }
}

#[tokio::test]
async fn a_stopped_metrics_store_is_reported_with_its_time_and_recovered_from_without_a_restart() {
    let mut switch = Switch::start().await;
    let target = switch.target.clone();
    let proxy = format!("http://{}/prometheus", switch.addr);
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.metrics = true;
    let app = TestApp::start_on(options, |config| {
        let mimir = config.mimir.as_mut().expect("the sandbox runs metrics");
        let prometheus = url::Url::parse(&mimir.url).unwrap();
        *target.lock().unwrap() = format!(
            "{}:{}",
            prometheus.host_str().unwrap(),
            prometheus.port().unwrap()
        );
        mimir.url = proxy;
    })
    .await;

    let healthy = view(&app, "payments", "prod", MetricsRange::Hour).await;
    assert!(
        healthy
            .charts
            .iter()
            .all(|c| c.error.is_none() && !c.series.is_empty())
    );

    switch.stop().await;
    let stopped_at = jiff::Timestamp::now();
    // A range not asked for yet, so no answer of the healthy minute is reused.
    let down = view(&app, "payments", "prod", MetricsRange::SixHours).await;
    for chart in &down.charts {
        let error = chart
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{:?} reports the outage", chart.query));
        assert_eq!(error.message, "The metrics store is unreachable");
        let since: jiff::Timestamp = error.since.parse().unwrap();
        assert!(
            since
                >= stopped_at
                    .checked_sub(jiff::SignedDuration::from_secs(1))
                    .unwrap(),
            "since {since}, stopped at {stopped_at}"
        );
    }
    // The deploys come from Argo CD, not the metrics store: they are still marked.
    let markers: Vec<_> = app
        .fleet
        .deploy_markers("payments", "prod")
        .into_iter()
        .filter(|d| (down.start..=down.end).contains(&d.at))
        .collect();
    assert_eq!(down.deploys, markers);
    // The rest of the page keeps working.
    let (status, _) = app
        .get_json(&shared::api::GetService::url("payments"))
        .await;
    assert_eq!(status, 200);
    // Still down a little later: the outage keeps its first time.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let still = view(&app, "payments", "prod", MetricsRange::SixHours).await;
    assert_eq!(
        still.charts[0].error.as_ref().map(|e| &e.since),
        down.charts[0].error.as_ref().map(|e| &e.since)
    );

    switch.restart();
    let recovered = eventually(Duration::from_secs(15), || async {
        let view = view(&app, "payments", "prod", MetricsRange::SixHours).await;
        view.charts
            .iter()
            .all(|c| c.error.is_none() && !c.series.is_empty())
            .then_some(view)
    })
    .await;
    assert!(recovered.is_some(), "the charts come back by themselves");
}

#[tokio::test]
async fn deploys_are_marked_where_argo_cd_says_they_happened() {
    let app = app_with_prometheus(None).await;
    let week = view(&app, "payments", "prod", MetricsRange::Week).await;
    assert!(
        !week.deploys.is_empty(),
        "payments has deployed to prod this week"
    );
    assert!(
        week.deploys.windows(2).all(|pair| pair[0].at <= pair[1].at),
        "oldest first"
    );
    assert!(
        week.deploys
            .iter()
            .all(|d| (week.start..=week.end).contains(&d.at))
    );
    // The newest marker is the version prod runs now.
    let card = app
        .fleet
        .service_detail("payments")
        .and_then(|d| d.cards.into_iter().find(|c| c.environment == "prod"))
        .unwrap();
    assert_eq!(
        week.deploys.last().map(|d| d.version.clone()),
        card.running_version
    );
    let hour = view(&app, "payments", "prod", MetricsRange::Hour).await;
    assert!(
        hour.deploys
            .iter()
            .all(|d| (hour.start..=hour.end).contains(&d.at))
    );
    assert!(hour.deploys.len() <= week.deploys.len());
}

#[tokio::test]
async fn mimir_hears_the_tenant_on_every_request_and_each_fixed_query_once() {
    use std::sync::Mutex;

    use axum::extract::{Query, State};
    use axum::http::HeaderMap;

    type Heard = Arc<Mutex<Vec<(Option<String>, String)>>>;
    async fn query_range(
        State(heard): State<Heard>,
        headers: HeaderMap,
        Query(params): Query<std::collections::HashMap<String, String>>,
    ) -> axum::Json<serde_json::Value> {
        let tenant = headers
            .get("x-scope-orgid")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        heard
            .lock()
            .unwrap()
            .push((tenant, params.get("query").cloned().unwrap_or_default()));
        axum::Json(serde_json::json!({
            "status": "success",
            "data": {"resultType": "matrix", "result": [
                {"metric": {}, "values": [[1_700_000_000, "1.5"], [1_700_000_015, "NaN"]]}
            ]}
        }))
    }
    let heard: Heard = Arc::default();
    let fake = axum::Router::new()
        .route(
            "/mimir/prometheus/api/v1/query_range",
            axum::routing::get(query_range),
        )
        .with_state(heard.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, fake).await });

    let app = TestApp::start_with(|config| {
        let mut mimir = server::config::MimirConfig::new(format!("http://{addr}/mimir/prometheus"));
        mimir.tenant = Some("platform".into());
        config.mimir = Some(mimir);
    })
    .await;
    let view = view(&app, "payments", "dev", MetricsRange::Hour).await;
    assert!(view.charts.iter().all(|c| c.error.is_none()));
    // NaN (0/0) is a gap, not a point.
    assert_eq!(view.charts[0].series[0].points, vec![(1_700_000_000, 1.5)]);
    let heard = heard.lock().unwrap().clone();
    // Every request carries the tenant, the SLO evaluation's included.
    assert!(
        heard
            .iter()
            .all(|(tenant, _)| tenant.as_deref() == Some("platform"))
    );
    // Each fixed query was asked exactly once, selecting payments in dev.
    let metrics = app.state.metrics.as_ref().unwrap();
    for query in MetricQuery::ALL {
        let promql = metrics.promql(query, "payments", "dev", MetricsRange::Hour);
        assert!(
            promql.contains(r#"service="payments",environment="dev""#),
            "{promql}"
        );
        let asked = heard.iter().filter(|(_, q)| *q == promql).count();
        assert_eq!(asked, 1, "{query:?}: {promql}");
    }
}
