//! The Metrics tab's backend: each fixed [`MetricQuery`] as PromQL, and one answer per step shared by every
//! viewer.
//!
//! A request names a service and an environment, which the route has checked against the fleet's own names,
//! and a range from a closed set. The PromQL is built here from fixed parts, the configured label names and
//! those checked values, so nothing a person types reaches Mimir.
//!
//! Answers are cached by (query, service, environment, range, end), where `end` is now rounded down to the
//! range's step: any number of viewers of the same chart within a step cost one upstream request, and
//! concurrent viewers wait for the one request in flight rather than sending their own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use shared::metrics::{Chart, ChartError, MetricQuery, MetricsRange, Series};
use tokio::sync::OnceCell;

use crate::config::MimirConfig;
use crate::upstream::mimir::{Mimir, MimirError, RangeSeries};

/// How long a failed answer is reused before Mimir is asked again: long enough that a page of charts
/// (and many viewers) do not each wait for their own timeout, short enough to recover within seconds.
const FAILURE_REUSE: Duration = Duration::from_secs(5);

/// The smallest `rate()` window: two scrapes at least, whatever the step.
const MIN_RATE_WINDOW: u64 = 120;

/// What one chart's answer is cached by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    query: MetricQuery,
    service: String,
    environment: String,
    range: MetricsRange,
    end: i64,
}

/// A failed answer, as the browser is told it.
#[derive(Debug, Clone)]
struct Failure {
    message: &'static str,
}

type Answer = (Instant, Result<Vec<Series>, Failure>);

/// The fixed queries against one Mimir, with their shared answers.
#[derive(Clone)]
pub struct Metrics {
    mimir: Mimir,
    service_label: String,
    environment_label: String,
    cache: Arc<Mutex<HashMap<Key, Arc<OnceCell<Answer>>>>>,
    /// When Mimir started failing, Unix seconds; cleared by the next answer.
    failing_since: Arc<Mutex<Option<jiff::Timestamp>>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("mimir", &self.mimir)
            .finish_non_exhaustive()
    }
}

/// The charts of one view and the window they cover.
#[derive(Debug, Clone)]
pub struct Charts {
    /// The first point's time, Unix seconds.
    pub start: i64,
    /// The last point's time, Unix seconds: a whole number of steps.
    pub end: i64,
    /// Seconds between points.
    pub step: u64,
    /// One chart per fixed query, in [`MetricQuery::ALL`]'s order.
    pub charts: Vec<Chart>,
}

impl Metrics {
    /// The fixed queries against the Mimir `config` names.
    pub fn new(config: &MimirConfig) -> Result<Self, MimirError> {
        Ok(Self {
            mimir: Mimir::new(config)?,
            service_label: config.service_label.clone(),
            environment_label: config.environment_label.clone(),
            cache: Arc::default(),
            failing_since: Arc::default(),
        })
    }

    /// Every fixed query for `service` in `environment` over `range`, ending at the last whole step before
    /// `now`. `service` and `environment` must be names from the fleet model.
    pub async fn charts(
        &self,
        service: &str,
        environment: &str,
        range: MetricsRange,
        now: jiff::Timestamp,
    ) -> Charts {
        let step = range.step_seconds();
        let step_i64 = i64::try_from(step).unwrap_or(i64::MAX);
        let end = now.as_second().div_euclid(step_i64) * step_i64;
        let start = end - i64::try_from(range.seconds()).unwrap_or(0);
        self.forget_older_than(now.as_second());
        let answers = MetricQuery::ALL.map(|query| {
            let key = Key {
                query,
                service: service.to_string(),
                environment: environment.to_string(),
                range,
                end,
            };
            async move {
                let answer = self.answer(key, start).await;
                (query, answer)
            }
        });
        let answers = futures::future::join_all(answers).await;
        let since = self.failing_since();
        let charts = answers
            .into_iter()
            .map(|(query, answer)| match answer {
                Ok(series) => Chart {
                    query,
                    series,
                    error: None,
                },
                Err(failure) => Chart {
                    query,
                    series: Vec::new(),
                    error: Some(ChartError {
                        message: failure.message.to_string(),
                        since: since.unwrap_or(now).to_string(),
                    }),
                },
            })
            .collect();
        Charts {
            start,
            end,
            step,
            charts,
        }
    }

    /// The answer for `key`: the one cached for its step, the one in flight, or a new one.
    async fn answer(&self, key: Key, start: i64) -> Result<Vec<Series>, Failure> {
        let cell = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            let cell = cache.entry(key.clone()).or_default();
            let stale_failure = cell
                .get()
                .is_some_and(|(at, answer)| answer.is_err() && at.elapsed() > FAILURE_REUSE);
            if stale_failure {
                *cell = Arc::default();
            }
            cell.clone()
        };
        let (_, answer) = cell
            .get_or_init(|| async {
                let promql = self.promql(key.query, &key.service, &key.environment, key.range);
                let result = self
                    .mimir
                    .query_range(&promql, start, key.end, key.range.step_seconds())
                    .await;
                (Instant::now(), self.settle(key.query, result))
            })
            .await;
        answer.clone()
    }

    /// Records whether Mimir answered, and turns its answer into the chart's series.
    fn settle(
        &self,
        query: MetricQuery,
        result: Result<Vec<RangeSeries>, MimirError>,
    ) -> Result<Vec<Series>, Failure> {
        let mut since = self
            .failing_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match result {
            Ok(series) => {
                *since = None;
                Ok(series
                    .into_iter()
                    .filter(|s| !s.points.is_empty())
                    .map(|s| Series {
                        label: series_label(query, &s),
                        points: s.points,
                    })
                    .collect())
            }
            Err(error) => {
                since.get_or_insert_with(jiff::Timestamp::now);
                tracing::warn!(
                    query = query.slug(),
                    error = %crate::error::cause_chain(&error),
                    "metrics query failed"
                );
                Err(Failure {
                    message: if error.is_unreachable() {
                        "The metrics store is unreachable"
                    } else {
                        "The metrics store did not answer as expected"
                    },
                })
            }
        }
    }

    fn failing_since(&self) -> Option<jiff::Timestamp> {
        *self
            .failing_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops answers too old for any view to ask for again (their step has passed).
    fn forget_older_than(&self, now: i64) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|key, _| {
            let step = i64::try_from(key.range.step_seconds()).unwrap_or(i64::MAX);
            key.end.saturating_add(2 * step) >= now
        });
    }

    /// The PromQL of `query` for `service` in `environment` over `range`.
    pub fn promql(
        &self,
        query: MetricQuery,
        service: &str,
        environment: &str,
        range: MetricsRange,
    ) -> String {
        promql(
            query,
            &Selector {
                service_label: &self.service_label,
                service,
                environment_label: &self.environment_label,
                environment,
            },
            range,
        )
    }
}

/// The label matchers every fixed query selects a service's series by.
struct Selector<'a> {
    service_label: &'a str,
    service: &'a str,
    environment_label: &'a str,
    environment: &'a str,
}

impl Selector<'_> {
    /// `{service="…",environment="…"<extra>}`, the values escaped as PromQL strings.
    fn matchers(&self, extra: &str) -> String {
        format!(
            "{{{}={},{}={}{extra}}}",
            self.service_label,
            promql_string(self.service),
            self.environment_label,
            promql_string(self.environment)
        )
    }
}

/// `value` as a double-quoted PromQL string. The values are fleet names, which never need escaping; this
/// keeps a future caller that passes something else from changing the query.
fn promql_string(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '\n' => quoted.push_str("\\n"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The `rate()` window for `range`: two steps, at least [`MIN_RATE_WINDOW`], so every point averages
/// over the whole step before it and a slow scrape still leaves two samples in the window.
fn rate_window(range: MetricsRange) -> String {
    format!("{}s", (2 * range.step_seconds()).max(MIN_RATE_WINDOW))
}

fn promql(query: MetricQuery, selector: &Selector<'_>, range: MetricsRange) -> String {
    let all = selector.matchers("");
    let window = rate_window(range);
    let quantile = |phi: &str| {
        format!(
            "histogram_quantile({phi}, sum by (le) (rate(http_request_duration_seconds_bucket{all}[{window}])))"
        )
    };
    match query {
        MetricQuery::RequestRate => format!("sum(rate(http_requests_total{all}[{window}]))"),
        MetricQuery::ErrorRatio => format!(
            "sum(rate(http_requests_total{}[{window}])) / sum(rate(http_requests_total{all}[{window}]))",
            selector.matchers(",code=~\"5..\"")
        ),
        MetricQuery::LatencyP50 => quantile("0.5"),
        MetricQuery::LatencyP95 => quantile("0.95"),
        MetricQuery::LatencyP99 => quantile("0.99"),
        MetricQuery::Cpu => format!("sum(rate(container_cpu_usage_seconds_total{all}[{window}]))"),
        MetricQuery::Memory => format!("sum(container_memory_working_set_bytes{all})"),
        MetricQuery::Restarts => format!(
            "sum(increase(kube_pod_container_status_restarts_total{all}[{}s]))",
            range.step_seconds().max(MIN_RATE_WINDOW)
        ),
    }
}

/// A series' name on its chart: the query's title, or the labels that tell several apart.
fn series_label(query: MetricQuery, series: &RangeSeries) -> String {
    if series.labels.is_empty() {
        return query.title().to_string();
    }
    series
        .labels
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector<'a>(service: &'a str) -> Selector<'a> {
        Selector {
            service_label: "service",
            service,
            environment_label: "environment",
            environment: "prod",
        }
    }

    #[test]
    fn every_fixed_query_selects_only_the_service_and_environment() {
        for query in MetricQuery::ALL {
            let text = promql(query, &selector("payments"), MetricsRange::Hour);
            assert!(
                text.contains(r#"{service="payments",environment="prod""#),
                "{query:?}: {text}"
            );
            assert!(!text.contains("{}"), "{query:?} selects everything: {text}");
        }
    }

    #[test]
    fn a_quote_in_a_value_cannot_close_the_matcher() {
        let text = promql(
            MetricQuery::RequestRate,
            &selector(r#"a"} or vector(1) #"#),
            MetricsRange::Hour,
        );
        assert_eq!(
            text,
            r#"sum(rate(http_requests_total{service="a\"} or vector(1) #",environment="prod"}[120s]))"#
        );
    }

    #[test]
    fn rate_windows_cover_two_steps_and_two_scrapes() {
        assert_eq!(rate_window(MetricsRange::Hour), "120s");
        assert_eq!(rate_window(MetricsRange::SixHours), "180s");
        assert_eq!(rate_window(MetricsRange::Week), "5040s");
    }
}
