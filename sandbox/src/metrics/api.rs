//! HTTP: Prometheus' query API over the PromQL subset (fallback mode), and the `/metrics` exposition
//! a real Prometheus scrapes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value as JsonValue, json};

use super::promql::{self, QueryError, Value};
use super::series::{Generator, Series, format_value};

/// Prometheus refuses range queries with more points per series than this.
const MAX_POINTS: f64 = 11_000.0;

/// `/metrics`, plus `/prometheus/api/v1/query`, `…/query_range` and `/prometheus/-/ready` with `api`.
pub(super) fn router(generator: Arc<Generator>, api: bool) -> Router {
    let mut router = Router::new().route("/metrics", get(exposition));
    if api {
        router = router
            .route("/prometheus/api/v1/query", get(query).post(query))
            .route(
                "/prometheus/api/v1/query_range",
                get(query_range).post(query_range),
            )
            .route(
                "/prometheus/-/ready",
                get(|| async { "Prometheus Server is Ready.\n" }),
            );
    }
    router.with_state(generator)
}

/// A `bad_data` error, Prometheus' answer to a query it cannot run.
struct BadData(String);

impl From<QueryError> for BadData {
    fn from(err: QueryError) -> Self {
        Self(err.0)
    }
}

impl IntoResponse for BadData {
    fn into_response(self) -> Response {
        let body = json!({"status": "error", "errorType": "bad_data", "error": self.0});
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    }
}

/// Parameters from the query string and, for POST, the form body, as Prometheus merges them.
fn params(query: HashMap<String, String>, body: &Bytes) -> HashMap<String, String> {
    let mut params = query;
    if let Ok(form) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(body) {
        params.extend(form);
    }
    params
}

/// A time parameter: Unix seconds (fractions allowed) or RFC 3339.
fn time(params: &HashMap<String, String>, name: &str) -> Result<Option<f64>, BadData> {
    let Some(text) = params.get(name).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if let Ok(seconds) = text.parse::<f64>() {
        return Ok(Some(seconds));
    }
    text.parse::<jiff::Timestamp>()
        .map(|ts| Some(ts.as_millisecond() as f64 / 1000.0))
        .map_err(|_| {
            BadData(format!(
                "invalid parameter \"{name}\": cannot parse \"{text}\" to a valid timestamp"
            ))
        })
}

fn required_time(params: &HashMap<String, String>, name: &str) -> Result<f64, BadData> {
    time(params, name)?.ok_or_else(|| {
        BadData(format!(
            "invalid parameter \"{name}\": cannot parse \"\" to a valid timestamp"
        ))
    })
}

fn expression(params: &HashMap<String, String>) -> Result<promql::Expr, BadData> {
    let text = params.get("query").map(String::as_str).unwrap_or_default();
    promql::parse(text).map_err(|e| BadData(format!("invalid parameter \"query\": {e}")))
}

fn now() -> f64 {
    jiff::Timestamp::now().as_millisecond() as f64 / 1000.0
}

/// A timestamp as Prometheus writes it: a JSON number, integral when whole.
fn timestamp(t: f64) -> JsonValue {
    if t.fract() == 0.0 && t.abs() < 1e15 {
        json!(t as i64)
    } else {
        json!((t * 1000.0).round() / 1000.0)
    }
}

async fn query(
    State(generator): State<Arc<Generator>>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Json<JsonValue>, BadData> {
    let params = params(query, &body);
    let expr = expression(&params)?;
    let t = time(&params, "time")?.unwrap_or_else(now);
    let data = match promql::evaluate(&expr, &generator, t)? {
        Value::Scalar(v) => {
            json!({"resultType": "scalar", "result": [timestamp(t), format_value(v)]})
        }
        Value::Vector(mut samples) => {
            samples.sort_by(|a, b| a.0.cmp(&b.0));
            let result: Vec<JsonValue> = samples
                .into_iter()
                .map(|(labels, v)| {
                    json!({"metric": labels, "value": [timestamp(t), format_value(v)]})
                })
                .collect();
            json!({"resultType": "vector", "result": result})
        }
    };
    Ok(Json(json!({"status": "success", "data": data})))
}

async fn query_range(
    State(generator): State<Arc<Generator>>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Json<JsonValue>, BadData> {
    let params = params(query, &body);
    let start = required_time(&params, "start")?;
    let end = required_time(&params, "end")?;
    if end < start {
        return Err(BadData(
            "invalid parameter \"end\": end timestamp must not be before start time".into(),
        ));
    }
    let step_text = params.get("step").map(String::as_str).unwrap_or_default();
    let step = step_text
        .parse::<f64>()
        .or_else(|_| promql::duration(step_text))
        .map_err(|_| {
            BadData(format!(
                "invalid parameter \"step\": cannot parse \"{step_text}\" to a valid duration"
            ))
        })?;
    if step <= 0.0 {
        return Err(BadData(
            "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    if (end - start) / step > MAX_POINTS {
        return Err(BadData(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into(),
        ));
    }
    let expr = expression(&params)?;
    let mut series: BTreeMap<promql::Labels, Vec<JsonValue>> = BTreeMap::new();
    let mut t = start;
    while t <= end {
        let samples = match promql::evaluate(&expr, &generator, t)? {
            Value::Scalar(v) => vec![(promql::Labels::new(), v)],
            Value::Vector(samples) => samples,
        };
        for (labels, v) in samples {
            series
                .entry(labels)
                .or_default()
                .push(json!([timestamp(t), format_value(v)]));
        }
        t += step;
    }
    let result: Vec<JsonValue> = series
        .into_iter()
        .map(|(labels, values)| json!({"metric": labels, "values": values}))
        .collect();
    Ok(Json(json!({
        "status": "success",
        "data": {"resultType": "matrix", "result": result},
    })))
}

/// The current value of every series in Prometheus' text format, for a real Prometheus to scrape.
async fn exposition(State(generator): State<Arc<Generator>>) -> impl IntoResponse {
    let t = now();
    let mut body = String::new();
    for series in generator.series() {
        line(&mut body, series, generator.sample(series, t), None);
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
}

/// Appends one sample line; with `timestamp` (seconds, as OpenMetrics has them for backfill) the
/// sample carries its time instead of leaving it to the scraper.
pub(super) fn line(out: &mut String, series: &Series, value: f64, timestamp: Option<f64>) {
    out.push_str(series.name);
    out.push('{');
    for (i, (k, v)) in series.labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let escaped = v
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let _ = write!(out, "{k}=\"{escaped}\"");
    }
    out.push_str("} ");
    out.push_str(&format_value(value));
    if let Some(ts) = timestamp {
        let _ = write!(out, " {ts}");
    }
    out.push('\n');
}
