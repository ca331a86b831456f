//! The metrics API's and the log store's answers validated against Prometheus' and Loki's documented
//! response shapes, transcribed as JSON Schema under `sandbox/contracts/{prometheus,loki}/` (each with a
//! SOURCE naming the documentation page). Every route both emulators serve is called
//! ([`metrics::Route::ALL`], [`loki::Route::ALL`], which their routers are built from).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::SocketAddr;

use axum::http::Method;
use jsonschema::{Draft, Validator};
use sandbox::loki::{self, TENANT};
use sandbox::metrics::{self, Metrics, Options as MetricsOptions};
use sandbox::world::SERVICES;
use sandbox::{Options, Sandbox};
use serde_json::{Value, json};

use super::contract::{Contract, violations};

/// Prometheus' query API responses (https://prometheus.io/docs/prometheus/latest/querying/api/).
const PROMETHEUS: &str = "contracts/prometheus/query-api.schema.json";
/// Loki's query responses (https://grafana.com/docs/loki/latest/reference/loki-http-api/).
const LOKI: &str = "contracts/loki/http-api.schema.json";

/// Loads one of the two vendored documents.
fn contract(path: &str) -> Contract {
    Contract::load(path, Draft::Draft202012)
}

/// A validator for the document's `#/$defs/<name>`.
fn definition(contract: &Contract, name: &str) -> Validator {
    contract.validator(&format!("/$defs/{name}"))
}

/// Asserts `instance` is valid, listing every violation with where it is.
fn assert_valid(validator: &Validator, instance: &Value, what: &str) {
    let errors = violations(validator, instance);
    assert!(
        errors.is_empty(),
        "{what} breaks the documented shape:\n{}\n{instance}",
        errors.join("\n")
    );
}

// ---- Prometheus ----

/// A fallback metrics server (the emulator: a real Prometheus answers for itself) and the routes called.
struct PrometheusApi {
    metrics: Metrics,
    client: reqwest::Client,
    contract: Contract,
    now: i64,
    exercised: BTreeSet<(metrics::Route, Method)>,
}

impl PrometheusApi {
    async fn start() -> Self {
        let now = jiff::Timestamp::now();
        let metrics = Metrics::fallback(MetricsOptions::new(42, now), &SERVICES)
            .await
            .unwrap();
        Self {
            metrics,
            client: reqwest::Client::new(),
            contract: contract(PROMETHEUS),
            now: now.as_second(),
            exercised: BTreeSet::new(),
        }
    }

    /// The server's root (`/metrics` and `/prometheus/…` hang off it).
    fn root(&self) -> String {
        self.metrics
            .base_url()
            .strip_suffix("/prometheus")
            .unwrap()
            .to_owned()
    }

    /// Calls `route` with `params` (in the query string for GET, form-encoded for POST).
    async fn call(
        &mut self,
        route: metrics::Route,
        method: Method,
        params: &[(&str, String)],
    ) -> (u16, Value) {
        self.exercised.insert((route, method.clone()));
        let url = format!("{}{}", self.root(), route.path());
        let request = if method == Method::POST {
            self.client.post(url).form(params)
        } else {
            self.client.get(url).query(params)
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{route:?} answered non-JSON ({e}): {text}"));
        (status, body)
    }

    /// A query that succeeds with `result_type` and a non-empty result in the documented envelope.
    async fn success(
        &mut self,
        route: metrics::Route,
        method: Method,
        params: &[(&str, String)],
        result_type: &str,
    ) -> Value {
        let (status, body) = self.call(route, method.clone(), params).await;
        let what = format!("{method} {route:?} {params:?}");
        assert_eq!(status, 200, "{what}: {body}");
        assert_valid(&definition(&self.contract, "success"), &body, &what);
        assert_eq!(body["data"]["resultType"], result_type, "{what}: {body}");
        let result = &body["data"]["result"];
        assert!(
            result.as_array().is_some_and(|r| !r.is_empty()),
            "{what}: {body}"
        );
        body
    }

    /// A request refused with HTTP `status` and `error_type` in the documented error envelope.
    async fn error(
        &mut self,
        route: metrics::Route,
        method: Method,
        params: &[(&str, String)],
        (status, error_type): (u16, &str),
    ) {
        let (got, body) = self.call(route, method.clone(), params).await;
        let what = format!("{method} {route:?} {params:?}");
        assert_eq!(got, status, "{what}: {body}");
        assert_valid(&definition(&self.contract, "error"), &body, &what);
        assert_eq!(body["errorType"], error_type, "{what}: {body}");
    }
}

const PAYMENTS: &str = r#"service="payments",environment="prod""#;

fn query(text: &str) -> (&'static str, String) {
    ("query", text.to_owned())
}

#[tokio::test]
async fn instant_and_range_queries_answer_in_prometheus_documented_envelope() {
    let mut api = PrometheusApi::start().await;
    let t = ("time", api.now.to_string());
    let rate = format!(r#"sum by (code) (rate(http_requests_total{{{PAYMENTS}}}[5m]))"#);
    let range = [
        ("start", (api.now - 3600).to_string()),
        ("end", api.now.to_string()),
        ("step", "60".to_owned()),
    ];
    use metrics::Route::{Query, QueryRange};
    for method in [Method::GET, Method::POST] {
        let vector = api
            .success(Query, method.clone(), &[query(&rate), t.clone()], "vector")
            .await;
        // Every sample carries the evaluation time.
        for sample in vector["data"]["result"].as_array().unwrap() {
            assert_eq!(sample["value"][0], api.now, "{sample}");
        }
        api.success(
            Query,
            method.clone(),
            &[query("1 + 1"), t.clone()],
            "scalar",
        )
        .await;
        // A bare range selector in an instant query: the raw samples of the window, a matrix.
        let raw = format!("http_requests_total{{{PAYMENTS}}}[5m]");
        let matrix = api
            .success(Query, method.clone(), &[query(&raw), t.clone()], "matrix")
            .await;
        for series in matrix["data"]["result"].as_array().unwrap() {
            for sample in series["values"].as_array().unwrap() {
                let at = sample[0].as_f64().unwrap();
                assert!(
                    at > (api.now - 300) as f64 && at <= api.now as f64,
                    "{series}"
                );
            }
        }

        let mut params = vec![query(&rate)];
        params.extend(range.clone());
        let body = api
            .success(QueryRange, method.clone(), &params, "matrix")
            .await;
        for series in body["data"]["result"].as_array().unwrap() {
            assert_eq!(series["values"].as_array().unwrap().len(), 61, "{series}");
        }
        // A scalar over a range is a matrix of one series without labels.
        let mut params = vec![query("2")];
        params.extend(range.clone());
        let body = api
            .success(QueryRange, method.clone(), &params, "matrix")
            .await;
        assert_eq!(body["data"]["result"][0]["metric"], json!({}));
    }
}

#[tokio::test]
async fn refused_queries_answer_with_prometheus_documented_error_types_and_statuses() {
    let mut api = PrometheusApi::start().await;
    use metrics::Route::{Query, QueryRange};
    let bad_data = (400, "bad_data");
    let now = api.now.to_string();
    let hour_ago = (api.now - 3600).to_string();
    let rate = format!(r#"sum(rate(http_requests_total{{{PAYMENTS}}}[5m]))"#);
    // Two series that differ only in their name: dividing by both is many-to-many.
    let both = format!(r#"{{__name__=~"http_request_duration_seconds_(sum|count)",{PAYMENTS}}}"#);
    let many_to_many = format!("http_request_duration_seconds_count{{{PAYMENTS}}} / {both}");
    for method in [Method::GET, Method::POST] {
        for bad in [
            vec![query("sum(rate(")],
            vec![query("")],
            vec![query(&rate), ("time", "yesterday".into())],
            vec![query("sum(http_requests_total[5m])")],
            vec![query("-http_requests_total[5m]")],
        ] {
            api.error(Query, method.clone(), &bad, bad_data).await;
        }
        api.error(
            Query,
            method.clone(),
            &[query(&many_to_many), ("time", now.clone())],
            (422, "execution"),
        )
        .await;

        let range = |q: &str, start: &str, end: &str, step: &str| {
            vec![
                query(q),
                ("start", start.to_owned()),
                ("end", end.to_owned()),
                ("step", step.to_owned()),
            ]
        };
        for bad in [
            range("sum(rate(", &hour_ago, &now, "60"),
            range(&rate, "yesterday", &now, "60"),
            range(&rate, &hour_ago, "", "60"),
            range(&rate, &now, &hour_ago, "60"),
            range(&rate, &hour_ago, &now, "0"),
            range(&rate, &hour_ago, &now, "soon"),
            range(&rate, &hour_ago, &now, "0.1"),
            range("http_requests_total[5m]", &hour_ago, &now, "60"),
        ] {
            api.error(QueryRange, method.clone(), &bad, bad_data).await;
        }
        api.error(
            QueryRange,
            method.clone(),
            &range(&many_to_many, &hour_ago, &now, "60"),
            (422, "execution"),
        )
        .await;
    }
}

#[tokio::test]
async fn every_metrics_route_is_exercised_and_answers_as_documented() {
    let mut api = PrometheusApi::start().await;
    let now = ("time", api.now.to_string());
    use metrics::Route;
    for method in [Method::GET, Method::POST] {
        api.success(
            Route::Query,
            method.clone(),
            &[query("1"), now.clone()],
            "scalar",
        )
        .await;
        let params = [
            query("1"),
            ("start", (api.now - 60).to_string()),
            ("end", api.now.to_string()),
            ("step", "30".to_owned()),
        ];
        api.success(Route::QueryRange, method, &params, "matrix")
            .await;
    }
    let client = api.client.clone();
    let ready = client
        .get(format!("{}{}", api.root(), Route::Ready.path()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    api.exercised.insert((Route::Ready, Method::GET));
    // The text exposition format: `name{label="value",…} value` per line.
    let exposition = client
        .get(format!("{}{}", api.root(), Route::Exposition.path()))
        .send()
        .await
        .unwrap();
    assert_eq!(exposition.status().as_u16(), 200);
    assert!(
        exposition.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = exposition.text().await.unwrap();
    assert!(!text.is_empty());
    for line in text.lines() {
        let (series, value) = line.rsplit_once("} ").unwrap();
        assert!(series.contains('{'), "{line}");
        assert!(
            value.parse::<f64>().is_ok() || ["NaN", "+Inf", "-Inf"].contains(&value),
            "{line}"
        );
    }
    api.exercised.insert((Route::Exposition, Method::GET));

    let every: BTreeSet<(Route, Method)> = Route::ALL
        .into_iter()
        .flat_map(|route| route.methods().iter().map(move |m| (route, m.clone())))
        .collect();
    assert_eq!(api.exercised, every, "a metrics route was not exercised");
}

#[test]
fn the_prometheus_contract_rejects_what_prometheus_never_sends() {
    let contract = contract(PROMETHEUS);
    let success = definition(&contract, "success");
    let ok = json!({"status": "success", "data": {"resultType": "vector",
        "result": [{"metric": {"a": "b"}, "value": [1.5, "0.25"]}]}});
    assert!(success.is_valid(&ok));
    for bad in [
        // The value as a number, not a string.
        json!({"status": "success", "data": {"resultType": "vector",
            "result": [{"metric": {}, "value": [1, 0.25]}]}}),
        // A vector's samples under `values`.
        json!({"status": "success", "data": {"resultType": "vector",
            "result": [{"metric": {}, "values": [[1, "1"]]}]}}),
        // An unknown result type.
        json!({"status": "success", "data": {"resultType": "streams", "result": []}}),
        // A matrix series without values.
        json!({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}}]}}),
        // A scalar as a bare number.
        json!({"status": "success", "data": {"resultType": "scalar", "result": 2}}),
    ] {
        assert!(!success.is_valid(&bad), "{bad}");
    }
    let error = definition(&contract, "error");
    assert!(error.is_valid(&json!({"status": "error", "errorType": "bad_data", "error": "x"})));
    assert!(!error.is_valid(&json!({"status": "error", "error": "x"})));
    assert!(!error.is_valid(&json!({"status": "error", "errorType": "bad_data", "message": "x"})));
}

// ---- Loki ----

/// A sandbox whose log store holds one deleted pod's lines, and the routes called.
struct LokiApi {
    sandbox: Sandbox,
    client: reqwest::Client,
    contract: Contract,
    selector: String,
    exercised: BTreeSet<(loki::Route, Method)>,
}

impl LokiApi {
    async fn start() -> Self {
        let sandbox = Sandbox::start_with(Options::new(SocketAddr::from(([127, 0, 0, 1], 0))))
            .await
            .unwrap();
        let dev = sandbox.cluster("dev").unwrap();
        let pods = dev.list_namespaced("v1", "Pod", "payments");
        let pod = pods[0]["metadata"]["name"].as_str().unwrap().to_owned();
        let container = pods[0]["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap()
            .to_owned();
        for n in 1..=5 {
            dev.append_log("payments", &pod, &container, &format!("line {n}"));
        }
        dev.delete("v1", "Pod", Some("payments"), &pod).unwrap();
        let selector = format!(r#"{{cluster="dev",namespace="payments",pod="{pod}"}}"#);
        Self {
            sandbox,
            client: reqwest::Client::new(),
            contract: contract(LOKI),
            selector,
            exercised: BTreeSet::new(),
        }
    }

    /// Calls `path` (a route's path with its parameter filled in) as `tenant`; the status and the body
    /// (JSON when it parses, else a string).
    async fn call(
        &mut self,
        route: loki::Route,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
        tenant: Option<&str>,
    ) -> (u16, Value) {
        self.exercised.insert((route, method.clone()));
        let url = format!("{}/loki{path}", self.sandbox.loki_url());
        let mut request = if method == Method::POST {
            self.client.post(url).form(params)
        } else {
            self.client.get(url).query(params)
        };
        if let Some(tenant) = tenant {
            request = request.header("X-Scope-OrgID", tenant);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// A 200 following the schema `#/$defs/<name>`.
    async fn ok(
        &mut self,
        route: loki::Route,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
        name: &str,
    ) -> Value {
        let (status, body) = self
            .call(route, method.clone(), path, params, Some(TENANT))
            .await;
        let what = format!("{method} {path} {params:?}");
        assert_eq!(status, 200, "{what}: {body}");
        assert_valid(&definition(&self.contract, name), &body, &what);
        body
    }
}

/// A stream's timestamps, as numbers.
fn timestamps(stream: &Value) -> Vec<u128> {
    stream["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[0].as_str().unwrap().parse().unwrap())
        .collect()
}

#[tokio::test]
async fn every_log_route_answers_in_lokis_documented_shape() {
    let mut api = LokiApi::start().await;
    let selector = api.selector.clone();
    use loki::Route;
    let path = Route::QueryRange.path();

    let backward = api
        .ok(
            Route::QueryRange,
            Method::GET,
            path,
            &[("query", &selector)],
            "queryRangeStreams",
        )
        .await;
    let stream = &backward["data"]["result"][0];
    assert_eq!(stream["stream"]["namespace"], "payments", "{backward}");
    let newest_first = timestamps(stream);
    assert!(newest_first.len() >= 5, "{backward}");
    assert!(
        newest_first.windows(2).all(|w| w[0] >= w[1]),
        "backward is newest first: {backward}"
    );

    let params = [
        ("query", selector.as_str()),
        ("direction", "forward"),
        ("limit", "3"),
    ];
    let forward = api
        .ok(
            Route::QueryRange,
            Method::GET,
            path,
            &params,
            "queryRangeStreams",
        )
        .await;
    let oldest_first = timestamps(&forward["data"]["result"][0]);
    assert_eq!(oldest_first.len(), 3, "{forward}");
    assert!(
        oldest_first.windows(2).all(|w| w[0] <= w[1]),
        "forward is oldest first: {forward}"
    );

    // Another tenant holds nothing: an empty result, still in the documented shape.
    let (status, other) = api
        .call(
            Route::QueryRange,
            Method::GET,
            path,
            &[("query", &selector)],
            Some("someone-else"),
        )
        .await;
    assert_eq!(status, 200);
    assert_valid(
        &definition(&api.contract, "queryRangeStreams"),
        &other,
        "another tenant's answer",
    );
    assert_eq!(other["data"]["result"], json!([]));

    let labels = api
        .ok(
            Route::Labels,
            Method::GET,
            Route::Labels.path(),
            &[],
            "labelNames",
        )
        .await;
    let names: BTreeSet<&str> = labels["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["cluster", "container", "namespace", "pod"])
    );
    let values_path = Route::LabelValues.path().replace("{name}", "namespace");
    let values = api
        .ok(
            Route::LabelValues,
            Method::GET,
            &values_path,
            &[("query", &selector)],
            "labelNames",
        )
        .await;
    assert_eq!(values["data"], json!(["payments"]));

    for method in [Method::GET, Method::POST] {
        let series = api
            .ok(
                Route::Series,
                method,
                Route::Series.path(),
                &[("match[]", &selector)],
                "series",
            )
            .await;
        assert_eq!(series["data"].as_array().unwrap().len(), 1, "{series}");
        assert_eq!(series["data"][0]["cluster"], "dev");
    }

    let every: BTreeSet<(Route, Method)> = Route::ALL
        .into_iter()
        .flat_map(|route| route.methods().iter().map(move |m| (route, m.clone())))
        .collect();
    assert_eq!(api.exercised, every, "a log route was not exercised");
}

/// A request Loki refuses: route, method, path, parameters, tenant, and the HTTP status it answers.
type Refusal<'a> = (
    loki::Route,
    Method,
    &'a str,
    Vec<(&'a str, &'a str)>,
    Option<&'a str>,
    u16,
);

#[tokio::test]
async fn refused_log_queries_answer_with_lokis_statuses() {
    let mut api = LokiApi::start().await;
    let selector = api.selector.clone();
    use loki::Route;
    let query_range = Route::QueryRange.path();
    let values_path = Route::LabelValues.path().replace("{name}", "pod");
    let refusals: Vec<Refusal> = vec![
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", &selector)],
            None,
            401,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![],
            Some(TENANT),
            400,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", "{pod=~\".+\"}")],
            Some(TENANT),
            400,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", &selector), ("start", "yesterday")],
            Some(TENANT),
            400,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", &selector), ("end", "soon")],
            Some(TENANT),
            400,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", &selector), ("limit", "0")],
            Some(TENANT),
            400,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", &selector), ("limit", "5001")],
            Some(TENANT),
            400,
        ),
        (
            Route::QueryRange,
            Method::GET,
            query_range,
            vec![("query", &selector), ("direction", "sideways")],
            Some(TENANT),
            400,
        ),
        (
            Route::Labels,
            Method::GET,
            Route::Labels.path(),
            vec![],
            None,
            401,
        ),
        (
            Route::Labels,
            Method::GET,
            Route::Labels.path(),
            vec![("start", "yesterday")],
            Some(TENANT),
            400,
        ),
        (
            Route::LabelValues,
            Method::GET,
            &values_path,
            vec![("query", "pod")],
            Some(TENANT),
            400,
        ),
        (
            Route::Series,
            Method::GET,
            Route::Series.path(),
            vec![],
            Some(TENANT),
            400,
        ),
        (
            Route::Series,
            Method::POST,
            Route::Series.path(),
            vec![("match[]", "{pod!=\"x\"}")],
            Some(TENANT),
            400,
        ),
        (
            Route::Series,
            Method::GET,
            Route::Series.path(),
            vec![("match[]", &selector)],
            None,
            401,
        ),
    ];
    for (route, method, path, params, tenant, status) in refusals {
        let (got, body) = api.call(route, method.clone(), path, &params, tenant).await;
        assert_eq!(got, status, "{method} {path} {params:?}: {body}");
        // Loki writes refusals as plain text, saying what is wrong.
        assert!(
            body.as_str().is_some_and(|text| !text.trim().is_empty()),
            "{method} {path}: {body}"
        );
    }
}

#[test]
fn the_loki_contract_rejects_what_loki_never_sends() {
    let contract = contract(LOKI);
    let streams = definition(&contract, "queryRangeStreams");
    // Each bad case below is wrong in one way only, so the summary is a whole one.
    let stats = json!({"summary": {"bytesProcessedPerSecond": 10, "execTime": 0.1,
        "linesProcessedPerSecond": 10, "queueTime": 0.0, "totalBytesProcessed": 1, "totalLinesProcessed": 1}});
    let ok = json!({"status": "success", "data": {"resultType": "streams",
        "result": [{"stream": {"pod": "p"}, "values": [["1700000000000000000", "line"]]}], "stats": stats}});
    assert!(streams.is_valid(&ok));
    for bad in [
        // The timestamp as a number.
        json!({"status": "success", "data": {"resultType": "streams",
            "result": [{"stream": {}, "values": [[1700000000000000000_u64, "line"]]}], "stats": stats}}),
        // Seconds with a fraction, not nanoseconds.
        json!({"status": "success", "data": {"resultType": "streams",
            "result": [{"stream": {}, "values": [["1700000000.5", "line"]]}], "stats": stats}}),
        // Labels under `metric`, as a Prometheus vector has them.
        json!({"status": "success", "data": {"resultType": "streams",
            "result": [{"metric": {}, "values": [["1", "line"]]}], "stats": stats}}),
        // Statistics without their summary.
        json!({"status": "success", "data": {"resultType": "streams", "result": [], "stats": {}}}),
        // No stats.
        json!({"status": "success", "data": {"resultType": "streams", "result": []}}),
        // A summary without its documented counters.
        json!({"status": "success", "data": {"resultType": "streams", "result": [],
            "stats": {"summary": {"execTime": 0.1}}}}),
    ] {
        assert!(!streams.is_valid(&bad), "{bad}");
    }
}
