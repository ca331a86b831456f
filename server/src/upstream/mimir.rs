//! Mimir's Prometheus HTTP API (or a plain Prometheus): `query` and `query_range`, with Mimir's tenant header
//! when one is configured.
//!
//! This client runs whatever PromQL it is given; only `crate::metrics` calls it, with the fixed queries it
//! builds from a `shared::metrics::MetricQuery` and label values checked against the fleet's own names.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::config::MimirConfig;

/// Where the Prometheus API lives under the configured base, as path segments for
/// [`crate::sinks::upstream_url`].
const PROMETHEUS_API: [&str; 2] = ["api", "v1"];

/// The header Mimir reads the tenant from.
const TENANT_HEADER: &str = "X-Scope-OrgID";

/// Failures talking to Mimir. Their text goes to logs only.
#[derive(Debug, thiserror::Error)]
pub enum MimirError {
    /// Mimir could not be reached, or its answer was cut short.
    #[error("Mimir request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// Mimir answered with an error (`{"status":"error","errorType","error"}`).
    #[error("Mimir refused ({status}, {error_type}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// Prometheus' `errorType` (`bad_data`, `timeout`, …).
        error_type: String,
        /// Prometheus' `error`.
        message: String,
    },
    /// The answer was not the Prometheus API's shape.
    #[error("Mimir answered in an unexpected shape: {0}")]
    Shape(String),
    /// The configured URL cannot carry the API's path.
    #[error("Mimir URL: {0}")]
    Url(#[from] crate::sinks::UrlError),
}

impl MimirError {
    /// Whether Mimir could not be reached or did not answer in time (rather than answering badly): a
    /// refused connection, a timeout, or a kept-alive connection cut before the request got through.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, MimirError::Http(error)
            if error.is_connect() || error.is_timeout() || error.is_request())
    }
}

/// One series of a range query: its labels and its samples, `(Unix seconds, value)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSeries {
    /// The series' labels.
    pub labels: BTreeMap<String, String>,
    /// Samples in time order; non-finite values (`NaN` from 0/0, `±Inf`) are left out.
    pub points: Vec<(i64, f64)>,
}

/// One sample of an instant query.
#[derive(Debug, Clone, PartialEq)]
pub struct InstantSample {
    /// The series' labels.
    pub labels: BTreeMap<String, String>,
    /// Its value (possibly non-finite: an instant answer is read as it is).
    pub value: f64,
}

/// A Mimir (Prometheus API) endpoint.
#[derive(Debug, Clone)]
pub struct Mimir {
    http: reqwest::Client,
    base: String,
    tenant: Option<String>,
}

/// The envelope of every Prometheus API answer.
#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct MatrixEntry {
    metric: BTreeMap<String, String>,
    values: Vec<(f64, String)>,
}

#[derive(Deserialize)]
struct VectorEntry {
    metric: BTreeMap<String, String>,
    value: (f64, String),
}

impl Mimir {
    /// A client for the API configured in `config`.
    pub fn new(config: &MimirConfig) -> Result<Self, MimirError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self {
            http,
            base: config.url.trim_end_matches('/').to_string(),
            tenant: config.tenant.clone(),
        })
    }

    /// `query_range`: `promql` from `start` to `end` (Unix seconds) every `step` seconds.
    pub async fn query_range(
        &self,
        promql: &str,
        start: i64,
        end: i64,
        step: u64,
    ) -> Result<Vec<RangeSeries>, MimirError> {
        let params = [
            ("query", promql.to_string()),
            ("start", start.to_string()),
            ("end", end.to_string()),
            ("step", step.to_string()),
        ];
        let data = self.get("query_range", &params).await?;
        if data.result_type != "matrix" {
            return Err(MimirError::Shape(format!(
                "query_range answered a {}",
                data.result_type
            )));
        }
        let entries: Vec<MatrixEntry> = serde_json::from_value(data.result)
            .map_err(|error| MimirError::Shape(error.to_string()))?;
        Ok(entries
            .into_iter()
            .map(|entry| RangeSeries {
                labels: entry.metric,
                points: entry
                    .values
                    .into_iter()
                    .filter_map(|(at, value)| {
                        let value = value.parse::<f64>().ok().filter(|v| v.is_finite())?;
                        Some((at.round() as i64, value))
                    })
                    .collect(),
            })
            .collect())
    }

    /// `query`: `promql` at `at` (Unix seconds).
    pub async fn query(&self, promql: &str, at: i64) -> Result<Vec<InstantSample>, MimirError> {
        let params = [("query", promql.to_string()), ("time", at.to_string())];
        let data = self.get("query", &params).await?;
        match data.result_type.as_str() {
            "vector" => {
                let entries: Vec<VectorEntry> = serde_json::from_value(data.result)
                    .map_err(|error| MimirError::Shape(error.to_string()))?;
                entries
                    .into_iter()
                    .map(|entry| {
                        Ok(InstantSample {
                            labels: entry.metric,
                            value: parse_value(&entry.value.1)?,
                        })
                    })
                    .collect()
            }
            "scalar" => {
                let (_, value): (f64, String) = serde_json::from_value(data.result)
                    .map_err(|error| MimirError::Shape(error.to_string()))?;
                Ok(vec![InstantSample {
                    labels: BTreeMap::new(),
                    value: parse_value(&value)?,
                }])
            }
            other => Err(MimirError::Shape(format!("query answered a {other}"))),
        }
    }

    /// The one way a request reaches Mimir: counted in Tower's own metrics by outcome.
    async fn get(&self, endpoint: &str, params: &[(&str, String)]) -> Result<Data, MimirError> {
        crate::telemetry::counted(
            crate::telemetry::Upstream::Mimir,
            self.get_uncounted(endpoint, params).await,
        )
    }

    async fn get_uncounted(
        &self,
        endpoint: &str,
        params: &[(&str, String)],
    ) -> Result<Data, MimirError> {
        let url =
            crate::sinks::upstream_url(&self.base, PROMETHEUS_API.into_iter().chain([endpoint]))?;
        let mut request = self.http.get(url).query(params);
        if let Some(tenant) = &self.tenant {
            request = request.header(TENANT_HEADER, tenant);
        }
        let response = request.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        let envelope: Envelope = serde_json::from_slice(&body).map_err(|error| {
            if status.is_success() {
                MimirError::Shape(error.to_string())
            } else {
                MimirError::Refused {
                    status: status.as_u16(),
                    error_type: "http".into(),
                    message: String::from_utf8_lossy(&body).chars().take(200).collect(),
                }
            }
        })?;
        if envelope.status != "success" || !status.is_success() {
            return Err(MimirError::Refused {
                status: status.as_u16(),
                error_type: envelope.error_type.unwrap_or_default(),
                message: envelope.error.unwrap_or_default(),
            });
        }
        envelope
            .data
            .ok_or_else(|| MimirError::Shape("a success without data".into()))
    }
}

/// A sample value as Prometheus writes it: a decimal string, or `NaN`, `+Inf`, `-Inf`.
fn parse_value(text: &str) -> Result<f64, MimirError> {
    text.parse()
        .map_err(|_| MimirError::Shape(format!("a sample value of {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_special_values_parse() {
        assert!(parse_value("NaN").is_ok_and(f64::is_nan));
        assert_eq!(parse_value("+Inf").ok(), Some(f64::INFINITY));
        assert_eq!(parse_value("-Inf").ok(), Some(f64::NEG_INFINITY));
        assert_eq!(parse_value("0.25").ok(), Some(0.25));
        assert!(parse_value("a lot").is_err());
    }
}
