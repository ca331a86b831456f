//! The sandbox's metrics, queried over HTTP the way a Prometheus client queries them: a real
//! Prometheus with backfilled history when installed, and the built-in fallback.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use sandbox::metrics::{Metrics, Options};
use sandbox::supervisor::Supervisor;
use sandbox::world::SERVICES;
use serde_json::Value;

const REQUEST_RATE: &str =
    r#"sum by (code) (rate(http_requests_total{service="payments",environment="prod"}[5m]))"#;

/// Three hours at one-minute steps: enough history to query an hour back, quick to backfill.
fn options(now: jiff::Timestamp) -> Options {
    Options {
        history: Duration::from_secs(3 * 3600),
        step: Duration::from_secs(60),
        warmup: Duration::from_secs(3600),
        ..Options::new(42, now)
    }
}

/// `query_range` over the last hour at 60-second steps.
async fn last_hour(base: &str, query: &str, now: jiff::Timestamp) -> (u16, Value) {
    let end = now.as_second();
    let response = reqwest::Client::new()
        .get(format!("{base}/api/v1/query_range"))
        .query(&[
            ("query", query.to_owned()),
            ("start", (end - 3600).to_string()),
            ("end", end.to_string()),
            ("step", "60".to_owned()),
        ])
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The JSON answer to `request`.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

/// An instant query's first value, or "none".
async fn instant(base: &str, query: &str) -> String {
    let body = json_of(
        reqwest::Client::new()
            .get(format!("{base}/api/v1/query"))
            .query(&[("query", query)]),
    )
    .await;
    body["data"]["result"][0]["value"][1]
        .as_str()
        .unwrap_or("none")
        .to_owned()
}

/// The value of an instant query at Unix time `t`, parsed: `NaN` when there is no result.
async fn value_at(base: &str, query: &str, t: i64) -> f64 {
    let body = json_of(
        reqwest::Client::new()
            .get(format!("{base}/api/v1/query"))
            .query(&[("query", query), ("time", &t.to_string())]),
    )
    .await;
    assert_eq!(body["status"], "success", "{query}: {body}");
    let result = body["data"]["result"].as_array().unwrap();
    assert!(result.len() <= 1, "{query}: {body}");
    result
        .first()
        .map(|sample| sample["value"][1].as_str().unwrap().parse().unwrap())
        .unwrap_or(f64::NAN)
}

/// The six queries Tower's Mimir client runs, for `service` in `environment` over `window`: request
/// rate, error ratio, p95 latency, CPU, memory, restarts.
fn tower_queries(service: &str, environment: &str, window: &str) -> [String; 6] {
    let s = format!(r#"service="{service}",environment="{environment}""#);
    [
        format!("sum(rate(http_requests_total{{{s}}}[{window}]))"),
        error_ratio(service, environment, window),
        format!(
            "histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{{{s}}}[{window}])))"
        ),
        format!("sum(rate(container_cpu_usage_seconds_total{{{s}}}[{window}]))"),
        format!("sum(container_memory_working_set_bytes{{{s}}})"),
        format!("sum(increase(kube_pod_container_status_restarts_total{{{s}}}[{window}]))"),
    ]
}

/// Tower's error-ratio query.
fn error_ratio(service: &str, environment: &str, window: &str) -> String {
    let s = format!(r#"service="{service}",environment="{environment}""#);
    format!(
        r#"sum(rate(http_requests_total{{{s},code=~"5.."}}[{window}])) / sum(rate(http_requests_total{{{s}}}[{window}]))"#
    )
}

/// Checks a request-rate matrix: one series per status class, each with a value every minute.
fn assert_request_rate_matrix(body: &Value, now: jiff::Timestamp) {
    assert_eq!(body["status"], "success", "{body}");
    assert_eq!(body["data"]["resultType"], "matrix");
    let result = body["data"]["result"].as_array().unwrap();
    let codes: BTreeSet<&str> = result
        .iter()
        .map(|s| s["metric"]["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, BTreeSet::from(["2xx", "4xx", "5xx"]), "{body}");
    for series in result {
        let values = series["values"].as_array().unwrap();
        // History, not just the last few scrapes: the first point is an hour old.
        assert!(values.len() >= 55, "only {} points: {series}", values.len());
        let first = values[0][0].as_f64().unwrap();
        assert!(first <= (now.as_second() - 3500) as f64, "{series}");
        let value: f64 = values[0][1].as_str().unwrap().parse().unwrap();
        assert!(value > 0.0, "{series}");
    }
}

/// The first value of the `code` series in a matrix.
fn first_value(body: &Value, code: &str) -> f64 {
    let series = body["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"]["code"] == code)
        .unwrap();
    series["values"][0][1].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_real_prometheus_serves_backfilled_history_for_a_fixture_service() {
    if !Metrics::prometheus_installed() {
        eprintln!(
            "note: prometheus/promtool not on PATH; skipping the real-Prometheus test (CI installs Debian's prometheus)"
        );
        return;
    }
    let now = jiff::Timestamp::now();
    let began = Instant::now();
    let supervisor = Supervisor::new().unwrap();
    let metrics = Metrics::prometheus(options(now), &SERVICES, &supervisor)
        .await
        .unwrap();
    let (backfill, startup) = metrics.timings();
    eprintln!(
        "prometheus: backfill {backfill:?}, startup {startup:?}, total {:?}",
        began.elapsed()
    );
    assert!(matches!(metrics, Metrics::Prometheus(_)));
    let base = metrics.base_url();
    assert!(base.ends_with("/prometheus"), "{base}");

    let (status, body) = last_hour(&base, REQUEST_RATE, now).await;
    assert_eq!(status, 200, "{body}");
    assert_request_rate_matrix(&body, now);

    // Prometheus' rate over one-minute samples agrees with the generator's exact rate.
    let fallback = Metrics::fallback(options(now), &SERVICES).await.unwrap();
    let (_, expected) = last_hour(&fallback.base_url(), REQUEST_RATE, now).await;
    let (real, ideal) = (first_value(&body, "2xx"), first_value(&expected, "2xx"));
    assert!(
        (real - ideal).abs() / ideal < 0.15,
        "prometheus {real} vs generator {ideal}"
    );

    // Tower's error ratio, evaluated by both backends on a backfilled instant: the two rates share the
    // same samples, so Prometheus' extrapolation cancels out and the ratios agree closely. Payments is
    // past its bad deploy by now, a service without one is not.
    let at = now.as_second() / 60 * 60 - 600;
    for (service, environment) in [("payments", "prod"), ("ledger", "prod")] {
        let query = error_ratio(service, environment, "30m");
        let real = value_at(&base, &query, at).await;
        let ideal = value_at(&fallback.base_url(), &query, at).await;
        eprintln!("{service}/{environment} error ratio: prometheus {real}, fallback {ideal}");
        assert!(
            (real - ideal).abs() <= 0.05 * ideal + 1e-4,
            "{service}/{environment}: prometheus {real} vs fallback {ideal}"
        );
    }

    // Live scrapes continue the backfilled series rather than starting new ones beside them. The
    // first scrape lands somewhere within the 5 s interval, so poll for it.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let latest = instant(
            &base,
            r#"timestamp(http_requests_total{service="payments",environment="prod",code="2xx"})"#,
        )
        .await;
        // Backfilled samples all predate `now`; a later one can only come from a scrape.
        if latest
            .parse::<f64>()
            .is_ok_and(|t| t > now.as_second() as f64)
        {
            break;
        }
        assert!(Instant::now() < deadline, "no live scrape arrived");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let series = instant(
        &base,
        r#"count(last_over_time(http_requests_total{service="payments",environment="prod",code="2xx"}[2h]))"#,
    )
    .await;
    assert_eq!(
        series, "1",
        "live samples must extend the backfilled series"
    );

    // Prometheus itself rejects bad PromQL with the same shape the fallback uses.
    let (status, body) = last_hour(&base, "sum(rate(", now).await;
    assert_eq!(status, 400);
    assert_eq!(body["errorType"], "bad_data");
}

#[tokio::test]
async fn the_fallback_answers_the_same_query_with_the_same_shape() {
    let now = jiff::Timestamp::now();
    let metrics = Metrics::fallback(options(now), &SERVICES).await.unwrap();
    assert!(matches!(metrics, Metrics::Fallback(_)));
    let (status, body) = last_hour(&metrics.base_url(), REQUEST_RATE, now).await;
    assert_eq!(status, 200, "{body}");
    assert_request_rate_matrix(&body, now);
    let values = body["data"]["result"][0]["values"].as_array().unwrap();
    assert_eq!(values.len(), 61);
    assert!(
        body["data"]["result"][0]["metric"]
            .get("__name__")
            .is_none()
    );
}

#[tokio::test]
async fn the_fallback_answers_latency_cpu_memory_and_restarts_by_get_and_post() {
    let now = jiff::Timestamp::now();
    let metrics = Metrics::fallback(options(now), &SERVICES).await.unwrap();
    let base = metrics.base_url();
    let selector = r#"service="recommendations",environment="dev""#;
    let queries = [
        format!(
            "histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{{{selector}}}[5m])))"
        ),
        format!("sum(rate(container_cpu_usage_seconds_total{{{selector}}}[5m]))"),
        format!("sum(container_memory_working_set_bytes{{{selector}}})"),
        format!("sum(increase(kube_pod_container_status_restarts_total{{{selector}}}[1h]))"),
    ];
    let client = reqwest::Client::new();
    for query in &queries {
        let (status, body) = last_hour(&base, query, now).await;
        assert_eq!(status, 200, "{query}: {body}");
        let result = body["data"]["result"].as_array().unwrap();
        assert_eq!(result.len(), 1, "{query}: {body}");
        let value: f64 = result[0]["values"][0][1].as_str().unwrap().parse().unwrap();
        assert!(value > 0.0, "{query}: {body}");

        let at = now.as_second().to_string();
        let instant = json_of(
            client
                .post(format!("{base}/api/v1/query"))
                .form(&[("query", query.as_str()), ("time", at.as_str())]),
        )
        .await;
        assert_eq!(instant["data"]["resultType"], "vector", "{instant}");
        assert_eq!(instant["data"]["result"][0]["value"][0], now.as_second());
    }
    // Both crash-looping pods restart every five minutes: about a dozen an hour each.
    let (_, restarts) = last_hour(&base, &queries[3], now).await;
    let last: f64 = restarts["data"]["result"][0]["values"][60][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((20.0..=28.0).contains(&last), "{restarts}");
}

#[tokio::test]
async fn every_query_tower_runs_gives_a_finite_plausible_value_in_the_fallback() {
    let now = jiff::Timestamp::now();
    let metrics = Metrics::fallback(options(now), &SERVICES).await.unwrap();
    let base = metrics.base_url();
    let at = now.as_second();
    for window in ["2m", "5m", "1h"] {
        let queries = tower_queries("payments", "prod", window);
        let mut values = [0.0; 6];
        for (value, query) in values.iter_mut().zip(&queries) {
            *value = value_at(&base, query, at).await;
            assert!(value.is_finite(), "{query} gave {value}");
        }
        let context = format!("payments/prod over {window}: {values:?}");
        let [rate, errors, p95, cpu, memory, restarts] = values;
        // Prod traffic of a few to sixty requests a second, swinging ±40 % over the day.
        assert!((1.0..120.0).contains(&rate), "{context}");
        // After the bad deploy about 8 % of payments' requests fail; over short windows the noise
        // moves that around.
        assert!(0.0 < errors && errors < 1.0, "{context}");
        if window == "1h" {
            assert!((0.06..0.10).contains(&errors), "{context}");
        }
        let p50 = value_at(&base, &queries[2].replace("0.95", "0.5"), at).await;
        assert!(0.0 < p50 && p50 < p95 && p95 <= 5.0, "p50 {p50}, {context}");
        // Two pods of a fraction of a core each, a few hundred MiB each.
        assert!(0.0 < cpu && cpu < 4.0, "{context}");
        assert!((100e6..2e9).contains(&memory), "{context}");
        assert!((0.0..=2.0).contains(&restarts), "{context}");
    }
    // A service without a bad deploy stays well under 1 %.
    let ledger = value_at(&base, &error_ratio("ledger", "prod", "5m"), at).await;
    assert!((0.0..0.01).contains(&ledger), "{ledger}");
}

#[tokio::test]
async fn the_error_ratio_jumps_at_the_bad_deploy_argo_cd_records() {
    let mut options = sandbox::Options::new(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    options.epoch = Some("2027-03-14T15:09:26Z".parse().unwrap());
    let sandbox = sandbox::Sandbox::start_with(options).await.unwrap();
    let timeline = sandbox.timeline();
    let deploy = timeline.bad_deploy();
    assert_eq!((deploy.service, deploy.environment), ("payments", "prod"));

    // It is the newest entry of the Application's history: the deploy marker.
    let app = sandbox
        .cluster("management")
        .unwrap()
        .list("argoproj.io/v1alpha1", "Application")
        .into_iter()
        .find(|a| a["metadata"]["name"] == "payments-prod")
        .unwrap();
    let newest = app["status"]["history"].as_array().unwrap().last().unwrap();
    let commit = sandbox
        .repositories()
        .histories()
        .commit(deploy.service, deploy.commit)
        .unwrap()
        .clone();
    assert_eq!(newest["revision"], commit.sha.as_str(), "{newest}");
    let marker: jiff::Timestamp = newest["deployedAt"].as_str().unwrap().parse().unwrap();
    assert_eq!(marker, deploy.at);

    // The metrics of that world: clean before the marker, failing after it.
    let metrics = Metrics::fallback(Options::new(42, timeline.start()), &SERVICES)
        .await
        .unwrap();
    let base = metrics.base_url();
    let at = deploy.at.as_second();
    let payments = error_ratio("payments", "prod", "10m");
    let before = value_at(&base, &payments, at).await;
    let after = value_at(&base, &payments, at + 600).await;
    assert!(before < 0.01, "before the deploy: {before}");
    assert!(after > 0.05, "after the deploy: {after}");
    // Another service does not notice.
    let ledger = error_ratio("ledger", "prod", "10m");
    let (before, after) = (
        value_at(&base, &ledger, at).await,
        value_at(&base, &ledger, at + 600).await,
    );
    assert!(before < 0.01 && after < 0.01, "ledger: {before} → {after}");
    assert!((after - before).abs() < 0.002, "ledger: {before} → {after}");
}

#[tokio::test]
async fn a_query_outside_the_subset_gets_bad_data() {
    let now = jiff::Timestamp::now();
    let metrics = Metrics::fallback(options(now), &SERVICES).await.unwrap();
    let (status, body) = last_hour(
        &metrics.base_url(),
        "sum(rate(http_requests_total[5m])) % sum(rate(http_requests_total[5m]))",
        now,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["status"], "error");
    assert_eq!(body["errorType"], "bad_data");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("binary operator \"%\""), "{error}");

    let (status, body) = last_hour(&metrics.base_url(), "topk(3, up)", now).await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("\"topk\""),
        "{body}"
    );
}
