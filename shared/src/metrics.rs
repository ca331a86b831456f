//! Metrics of one service in one environment: the closed set of fixed queries, the ranges a chart shows,
//! and what the Metrics tab receives.
//!
//! Nothing a person types reaches PromQL. The browser names a [`MetricsRange`]; the route names the service
//! and the environment, which the server checks against the fleet's own names; the server maps each
//! [`MetricQuery`] to its PromQL (`server/src/upstream/mimir.rs`). A Prometheus proxy anyone could query is
//! exactly what design document 002 rules out.

pub mod chart;

use serde::{Deserialize, Serialize};

/// The fixed queries, one chart each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricQuery {
    /// Requests per second, every status.
    RequestRate,
    /// The share of requests answered 5xx.
    ErrorRatio,
    /// Median latency, from the request duration histogram.
    LatencyP50,
    /// 95th percentile latency.
    LatencyP95,
    /// 99th percentile latency.
    LatencyP99,
    /// CPU cores used, all pods together.
    Cpu,
    /// Working-set memory, all pods together.
    Memory,
    /// Container restarts per range step, all pods together.
    Restarts,
}

impl MetricQuery {
    /// Every fixed query, in the order the tab shows them.
    pub const ALL: [MetricQuery; 8] = [
        MetricQuery::RequestRate,
        MetricQuery::ErrorRatio,
        MetricQuery::LatencyP50,
        MetricQuery::LatencyP95,
        MetricQuery::LatencyP99,
        MetricQuery::Cpu,
        MetricQuery::Memory,
        MetricQuery::Restarts,
    ];

    /// Its name in URLs, test ids and logs (as serde writes it).
    pub fn slug(self) -> &'static str {
        match self {
            MetricQuery::RequestRate => "request_rate",
            MetricQuery::ErrorRatio => "error_ratio",
            MetricQuery::LatencyP50 => "latency_p50",
            MetricQuery::LatencyP95 => "latency_p95",
            MetricQuery::LatencyP99 => "latency_p99",
            MetricQuery::Cpu => "cpu",
            MetricQuery::Memory => "memory",
            MetricQuery::Restarts => "restarts",
        }
    }

    /// The chart's title.
    pub fn title(self) -> &'static str {
        match self {
            MetricQuery::RequestRate => "Request rate",
            MetricQuery::ErrorRatio => "Error ratio (5xx)",
            MetricQuery::LatencyP50 => "Latency p50",
            MetricQuery::LatencyP95 => "Latency p95",
            MetricQuery::LatencyP99 => "Latency p99",
            MetricQuery::Cpu => "CPU",
            MetricQuery::Memory => "Memory",
            MetricQuery::Restarts => "Restarts",
        }
    }

    /// What its values measure.
    pub fn unit(self) -> Unit {
        match self {
            MetricQuery::RequestRate => Unit::PerSecond,
            MetricQuery::ErrorRatio => Unit::Ratio,
            MetricQuery::LatencyP50 | MetricQuery::LatencyP95 | MetricQuery::LatencyP99 => {
                Unit::Seconds
            }
            MetricQuery::Cpu => Unit::Cores,
            MetricQuery::Memory => Unit::Bytes,
            MetricQuery::Restarts => Unit::Count,
        }
    }
}

/// The unit of a chart's values, which decides how its axis and readout are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Events per second (`12.4 req/s`).
    PerSecond,
    /// A share between 0 and 1, shown as a percentage (`0.42 %`).
    Ratio,
    /// A duration (`120 ms`, `1.2 s`).
    Seconds,
    /// CPU cores (`250 m`, `1.5 cores`).
    Cores,
    /// Bytes, binary multiples (`96 MiB`).
    Bytes,
    /// A plain count.
    Count,
}

/// How far back a chart looks.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum MetricsRange {
    /// The last hour (the default).
    #[default]
    #[serde(rename = "1h")]
    Hour,
    /// The last six hours.
    #[serde(rename = "6h")]
    SixHours,
    /// The last day.
    #[serde(rename = "24h")]
    Day,
    /// The last week.
    #[serde(rename = "7d")]
    Week,
}

impl MetricsRange {
    /// Every range, shortest first, as the picker offers them.
    pub const ALL: [MetricsRange; 4] = [
        MetricsRange::Hour,
        MetricsRange::SixHours,
        MetricsRange::Day,
        MetricsRange::Week,
    ];

    /// Points per chart: enough for a smooth line at any width the page has, few enough to stay small.
    pub const POINTS: u64 = 240;

    /// Its value in URLs (`?range=6h`).
    pub fn param(self) -> &'static str {
        match self {
            MetricsRange::Hour => "1h",
            MetricsRange::SixHours => "6h",
            MetricsRange::Day => "24h",
            MetricsRange::Week => "7d",
        }
    }

    /// The range a URL names, or `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|range| range.param() == text)
    }

    /// In words, for the picker.
    pub fn label(self) -> &'static str {
        match self {
            MetricsRange::Hour => "1 hour",
            MetricsRange::SixHours => "6 hours",
            MetricsRange::Day => "24 hours",
            MetricsRange::Week => "7 days",
        }
    }

    /// Its length in seconds.
    pub fn seconds(self) -> u64 {
        match self {
            MetricsRange::Hour => 3_600,
            MetricsRange::SixHours => 6 * 3_600,
            MetricsRange::Day => 24 * 3_600,
            MetricsRange::Week => 7 * 24 * 3_600,
        }
    }

    /// Seconds between points: the range over [`Self::POINTS`]. It is also how long one answer is served
    /// to every viewer, since a newer one would not differ by a whole point.
    pub fn step_seconds(self) -> u64 {
        self.seconds() / Self::POINTS
    }
}

/// The query of `GetMetrics`: which range (the default when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricsParams {
    /// A [`MetricsRange::param`]; anything else is refused, naming `range`.
    pub range: Option<String>,
}

/// The Metrics tab of one service in one environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsView {
    /// The service.
    pub service: String,
    /// The environment.
    pub environment: String,
    /// The range shown.
    pub range: MetricsRange,
    /// The first point's time, Unix seconds.
    pub start: i64,
    /// The last point's time, Unix seconds: a whole number of steps, so every viewer within a step sees the
    /// same answer.
    pub end: i64,
    /// Seconds between points.
    pub step: u64,
    /// One chart per fixed query, in [`MetricQuery::ALL`]'s order.
    pub charts: Vec<Chart>,
    /// The deploys inside the range, oldest first, marked on every chart.
    pub deploys: Vec<DeployMarker>,
}

/// One fixed query's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// Which query.
    pub query: MetricQuery,
    /// Its series; empty when the service has no such series (an empty chart, not an error).
    pub series: Vec<Series>,
    /// Why there is no answer, when the metrics store failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ChartError>,
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What the line is (the label set that distinguishes it, or the query's title).
    pub label: String,
    /// `(Unix seconds, value)`, in time order. Missing or non-finite samples are left out: the chart draws
    /// a gap where consecutive points are more than a step apart.
    pub points: Vec<(i64, f64)>,
}

/// Why a chart has no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartError {
    /// What is wrong, for a person ("The metrics store is unreachable").
    pub message: String,
    /// Since when it has been failing, RFC 3339.
    pub since: String,
}

/// A deploy, drawn as a vertical line on every chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeployMarker {
    /// When Argo CD deployed it, Unix seconds.
    pub at: i64,
    /// The version deployed (short commit).
    pub version: String,
    /// The version it replaced, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_reads_back_from_its_url_value_and_nothing_else_does() {
        for range in MetricsRange::ALL {
            assert_eq!(MetricsRange::parse(range.param()), Some(range));
            assert_eq!(
                serde_json::to_value(range).ok(),
                Some(serde_json::Value::String(range.param().into()))
            );
        }
        for text in ["", "1H", "2h", "1h ", "7d&x=1", "30d"] {
            assert_eq!(MetricsRange::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn every_range_has_the_same_number_of_whole_second_steps() {
        for range in MetricsRange::ALL {
            assert_eq!(
                range.step_seconds() * MetricsRange::POINTS,
                range.seconds(),
                "{range:?}"
            );
        }
    }

    #[test]
    fn query_slugs_are_what_serde_writes() {
        for query in MetricQuery::ALL {
            assert_eq!(
                serde_json::to_value(query).ok(),
                Some(serde_json::Value::String(query.slug().into()))
            );
        }
    }
}
