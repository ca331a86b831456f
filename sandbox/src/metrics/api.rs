//! HTTP: Prometheus' query API over the PromQL subset (fallback mode), and the `/metrics` exposition
//! a real Prometheus scrapes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use serde_json::{Value as JsonValue, json};

use super::promql::{self, QueryError, Value};
use super::series::{Generator, Series, format_value};

/// Prometheus refuses range queries with more points per series than this.
const MAX_POINTS: f64 = 11_000.0;

/// One route of the metrics server. The router is built from [`Route::ALL`], so the contract tests, which
/// exercise every route, see each one added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Route {
    /// `GET /metrics`: the text exposition a real Prometheus scrapes (always served).
    Exposition,
    /// `GET|POST /prometheus/api/v1/query`: an instant query (fallback mode).
    Query,
    /// `GET|POST /prometheus/api/v1/query_range`: a range query (fallback mode).
    QueryRange,
    /// `GET /prometheus/-/ready`: Prometheus' readiness probe (fallback mode).
    Ready,
}

impl Route {
    /// Every route, served or not.
    pub const ALL: [Self; 4] = [Self::Exposition, Self::Query, Self::QueryRange, Self::Ready];

    /// The path.
    pub fn path(self) -> &'static str {
        match self {
            Self::Exposition => "/metrics",
            Self::Query => "/prometheus/api/v1/query",
            Self::QueryRange => "/prometheus/api/v1/query_range",
            Self::Ready => "/prometheus/-/ready",
        }
    }

    /// The methods it answers.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Self::Exposition | Self::Ready => &[Method::GET],
            Self::Query | Self::QueryRange => &[Method::GET, Method::POST],
        }
    }

    /// Whether it is part of the query API, served only in fallback mode (a real Prometheus serves it
    /// otherwise).
    pub fn is_api(self) -> bool {
        !matches!(self, Self::Exposition)
    }

    fn handler(self) -> MethodRouter<Arc<Generator>> {
        match self {
            Self::Exposition => get(exposition),
            Self::Query => get(query).post(query),
            Self::QueryRange => get(query_range).post(query_range),
            Self::Ready => get(|| async { "Prometheus Server is Ready.\n" }),
        }
    }
}

/// `/metrics`, plus the query API's routes with `api`.
pub(super) fn router(generator: Arc<Generator>, api: bool) -> Router {
    Route::ALL
        .into_iter()
        .filter(|route| api || !route.is_api())
        .fold(Router::new(), |router, route| {
            router.route(route.path(), route.handler())
        })
        .with_state(generator)
}

/// The interval between the raw samples an instant query of a range selector answers: the backfill's
/// default step, as if a scraper had taken them.
const SCRAPE_INTERVAL: f64 = 30.0;

/// A refused query, answered in Prometheus' error envelope with the status its API documents.
#[derive(Debug, thiserror::Error)]
enum ApiError {
    /// Missing or malformed parameters, or an expression that does not parse or type-check: 400.
    #[error("{0}")]
    BadData(String),
    /// An expression that parsed but could not be evaluated (many-to-many matching): 422.
    #[error("{0}")]
    Execution(String),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error_type) = match &self {
            Self::BadData(_) => (StatusCode::BAD_REQUEST, "bad_data"),
            Self::Execution(_) => (StatusCode::UNPROCESSABLE_ENTITY, "execution"),
        };
        let body = json!({"status": "error", "errorType": error_type, "error": self.to_string()});
        (status, Json(body)).into_response()
    }
}

/// Evaluation errors are execution errors: type errors were caught while parsing.
fn evaluate(expr: &promql::Expr, generator: &Generator, t: f64) -> Result<Value, ApiError> {
    promql::evaluate(expr, generator, t).map_err(|QueryError(message)| ApiError::Execution(message))
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
fn time(params: &HashMap<String, String>, name: &str) -> Result<Option<f64>, ApiError> {
    let Some(text) = params.get(name).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if let Ok(seconds) = text.parse::<f64>() {
        return Ok(Some(seconds));
    }
    text.parse::<jiff::Timestamp>()
        .map(|ts| Some(ts.as_millisecond() as f64 / 1000.0))
        .map_err(|_| {
            ApiError::BadData(format!(
                "invalid parameter \"{name}\": cannot parse \"{text}\" to a valid timestamp"
            ))
        })
}

fn required_time(params: &HashMap<String, String>, name: &str) -> Result<f64, ApiError> {
    time(params, name)?.ok_or_else(|| {
        ApiError::BadData(format!(
            "invalid parameter \"{name}\": cannot parse \"\" to a valid timestamp"
        ))
    })
}

fn expression(params: &HashMap<String, String>) -> Result<promql::Expr, ApiError> {
    let text = params.get("query").map(String::as_str).unwrap_or_default();
    promql::parse(text).map_err(|e| ApiError::BadData(format!("invalid parameter \"query\": {e}")))
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
) -> Result<Json<JsonValue>, ApiError> {
    let params = params(query, &body);
    let expr = expression(&params)?;
    let t = time(&params, "time")?.unwrap_or_else(now);
    if let Some(series) = promql::range_samples(&expr, &generator, t, SCRAPE_INTERVAL) {
        let result: Vec<JsonValue> = series
            .into_iter()
            .map(|(labels, samples)| {
                let values: Vec<JsonValue> = samples
                    .into_iter()
                    .map(|(at, v)| json!([timestamp(at), format_value(v)]))
                    .collect();
                json!({"metric": labels, "values": values})
            })
            .collect();
        let data = json!({"resultType": "matrix", "result": result});
        return Ok(Json(json!({"status": "success", "data": data})));
    }
    let data = match evaluate(&expr, &generator, t)? {
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
) -> Result<Json<JsonValue>, ApiError> {
    let params = params(query, &body);
    let start = required_time(&params, "start")?;
    let end = required_time(&params, "end")?;
    if end < start {
        return Err(ApiError::BadData(
            "invalid parameter \"end\": end timestamp must not be before start time".into(),
        ));
    }
    let step_text = params.get("step").map(String::as_str).unwrap_or_default();
    let step = step_text
        .parse::<f64>()
        .or_else(|_| promql::duration(step_text))
        .map_err(|_| {
            ApiError::BadData(format!(
                "invalid parameter \"step\": cannot parse \"{step_text}\" to a valid duration"
            ))
        })?;
    if step <= 0.0 {
        return Err(ApiError::BadData(
            "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    if (end - start) / step > MAX_POINTS {
        return Err(ApiError::BadData(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)".into(),
        ));
    }
    let expr = expression(&params)?;
    if matches!(expr, promql::Expr::Selector { range: Some(_), .. }) {
        return Err(ApiError::BadData(
            "invalid parameter \"query\": invalid expression type \"range vector\" for range query, must be Scalar or instant Vector".into(),
        ));
    }
    let mut series: BTreeMap<promql::Labels, Vec<JsonValue>> = BTreeMap::new();
    let mut t = start;
    while t <= end {
        let samples = match evaluate(&expr, &generator, t)? {
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
