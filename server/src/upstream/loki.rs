//! Loki's HTTP API: `query_range` and `series`, with the tenant header when one is configured.
//!
//! Queries are never text from a request: a [`Selector`] has fixed label names (`cluster`, `namespace`,
//! `pod`, `container`) and its values are escaped as LogQL strings, and only `routes::logs` builds one,
//! from the fleet model's names and the pod names the store itself listed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::config::LokiConfig;

/// Where Loki's API lives under the configured base, as path segments for [`crate::sinks::upstream_url`].
const LOKI_API: [&str; 3] = ["loki", "api", "v1"];

/// The header Loki reads the tenant from.
const TENANT_HEADER: &str = "X-Scope-OrgID";

/// Failures talking to Loki. Their text goes to logs only.
#[derive(Debug, thiserror::Error)]
pub enum LokiError {
    /// Loki could not be reached, or its answer was cut short.
    #[error("Loki request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// Loki answered with an error status (its body is plain text).
    #[error("Loki refused ({status}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The start of Loki's answer.
        message: String,
    },
    /// The answer was not Loki's documented shape.
    #[error("Loki answered in an unexpected shape: {0}")]
    Shape(String),
    /// The configured URL cannot carry the API's path.
    #[error("Loki URL: {0}")]
    Url(#[from] crate::sinks::UrlError),
}

/// The result type of [`Loki::query_range`]'s and [`Loki::series`]'s errors.
pub type Result<T, E = LokiError> = std::result::Result<T, E>;

/// A LogQL stream selector of equality matchers on the labels a log agent puts on every pod's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector<'a> {
    /// The cluster the pod ran on.
    pub cluster: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// The pod, or every pod of the namespace.
    pub pod: Option<&'a str>,
    /// The container, or every container.
    pub container: Option<&'a str>,
}

impl Selector<'_> {
    /// As LogQL: `{cluster="…",namespace="…"[,pod="…"][,container="…"]}`, each value a quoted string with
    /// `\`, `"` and control characters escaped, so no value can end its string.
    pub fn logql(&self) -> String {
        let mut out = String::from("{");
        let pairs = [
            ("cluster", Some(self.cluster)),
            ("namespace", Some(self.namespace)),
            ("pod", self.pod),
            ("container", self.container),
        ];
        for (name, value) in pairs {
            let Some(value) = value else { continue };
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(name);
            out.push_str("=\"");
            for c in value.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '"' => out.push_str("\\\""),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        out.push('}');
        out
    }
}

/// Which end of the range `query_range` starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Newest lines first.
    Backward,
    /// Oldest lines first.
    Forward,
}

/// One stream of a `query_range` answer: its labels and lines, as Loki sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogStream {
    /// The stream's labels.
    pub labels: BTreeMap<String, String>,
    /// `(nanoseconds since the epoch, line)`, in the order asked for.
    pub values: Vec<(i128, String)>,
}

/// A Loki endpoint.
#[derive(Debug, Clone)]
pub struct Loki {
    http: reqwest::Client,
    base: String,
    tenant: Option<String>,
}

#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    data: T,
}

#[derive(Deserialize)]
struct Streams {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<StreamEntry>,
}

#[derive(Deserialize)]
struct StreamEntry {
    stream: BTreeMap<String, String>,
    values: Vec<(String, String)>,
}

impl Loki {
    /// A client for the Loki configured in `config`.
    pub fn new(config: &LokiConfig) -> Result<Self> {
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

    /// `query_range`: at most `limit` lines of the streams `selector` matches within `[start, end)`
    /// (nanoseconds since the epoch), from the end `direction` says.
    pub async fn query_range(
        &self,
        selector: &Selector<'_>,
        start: i128,
        end: i128,
        limit: usize,
        direction: Direction,
    ) -> Result<Vec<LogStream>> {
        let params = [
            ("query", selector.logql()),
            ("start", start.to_string()),
            ("end", end.to_string()),
            ("limit", limit.to_string()),
            (
                "direction",
                match direction {
                    Direction::Backward => "backward",
                    Direction::Forward => "forward",
                }
                .to_string(),
            ),
        ];
        let data: Streams = self.get("query_range", &params).await?;
        if data.result_type != "streams" {
            return Err(LokiError::Shape(format!(
                "query_range answered {}",
                data.result_type
            )));
        }
        data.result
            .into_iter()
            .map(|entry| {
                let values = entry
                    .values
                    .into_iter()
                    .map(|(at, line)| {
                        at.parse::<i128>()
                            .map(|at| (at, line))
                            .map_err(|_| LokiError::Shape(format!("a timestamp of {at:?}")))
                    })
                    .collect::<Result<_>>()?;
                Ok(LogStream {
                    labels: entry.stream,
                    values,
                })
            })
            .collect()
    }

    /// `series`: the label sets of the streams `selector` matches with lines within `[start, end)`.
    pub async fn series(
        &self,
        selector: &Selector<'_>,
        start: i128,
        end: i128,
    ) -> Result<Vec<BTreeMap<String, String>>> {
        let params = [
            ("match[]", selector.logql()),
            ("start", start.to_string()),
            ("end", end.to_string()),
        ];
        self.get("series", &params).await
    }

    /// The one way a request reaches Loki: counted in Tower's own metrics by outcome.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        endpoint: &str,
        params: &[(&str, String)],
    ) -> Result<T> {
        crate::telemetry::counted(
            crate::telemetry::Upstream::Loki,
            self.get_uncounted(endpoint, params).await,
        )
    }

    async fn get_uncounted<T: serde::de::DeserializeOwned>(
        &self,
        endpoint: &str,
        params: &[(&str, String)],
    ) -> Result<T> {
        let url = crate::sinks::upstream_url(&self.base, LOKI_API.into_iter().chain([endpoint]))?;
        let mut request = self.http.get(url).query(params);
        if let Some(tenant) = &self.tenant {
            request = request.header(TENANT_HEADER, tenant);
        }
        let response = request.send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            return Err(LokiError::Refused {
                status: status.as_u16(),
                message: String::from_utf8_lossy(&body).chars().take(200).collect(),
            });
        }
        let envelope: Envelope<T> =
            serde_json::from_slice(&body).map_err(|error| LokiError::Shape(error.to_string()))?;
        if envelope.status != "success" {
            return Err(LokiError::Shape(format!("status {}", envelope.status)));
        }
        Ok(envelope.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_values_cannot_leave_their_strings() {
        let selector = Selector {
            cluster: "prod",
            namespace: "payments",
            pod: Some(r#"x"} |= "" or {pod=~".+"#),
            container: Some("a\\b\nc"),
        };
        assert_eq!(
            selector.logql(),
            r#"{cluster="prod",namespace="payments",pod="x\"} |= \"\" or {pod=~\".+",container="a\\b\nc"}"#
        );
        let namespace = Selector {
            cluster: "dev",
            namespace: "payments",
            pod: None,
            container: None,
        };
        assert_eq!(namespace.logql(), r#"{cluster="dev",namespace="payments"}"#);
    }
}
