//! Service level objectives: Pyrra's `ServiceLevelObjective` resources from the management cluster's watch
//! cache, evaluated against Mimir every [`EVALUATE_EVERY`] into [`SloView`]s that every request reads.
//!
//! Evaluation runs in the background, like the fleet model's recompute: a page of SLOs or the Overview's
//! summary costs no upstream request, and any number of viewers share one evaluation. For each objective
//! it asks Mimir for the bad and total event counts (`sum(increase(…[w]))`) over every burn-rate window and
//! the objective's own window, all at one instant, and does the arithmetic in `shared::slo`.
//!
//! The metrics an objective names come from its resource, which its owners put there by pull request; they
//! are used only when they are plain selectors (a metric name and matchers), so no resource can make Tower
//! run arbitrary PromQL.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::DynamicObject;
use serde_json::Value;
use shared::fleet::{ActivityItem, ActivityKind};
use shared::metrics::ChartError;
use shared::slo::{self, BURN_WINDOWS, BurnRate, Counts, Indicator, SloSummary, SloView};
use tokio::sync::watch;

use crate::fleet::FleetModel;
use crate::upstream::mimir::{Mimir, MimirError};

/// How often every objective is evaluated.
pub const EVALUATE_EVERY: Duration = Duration::from_secs(30);

/// How many queries run against Mimir at once during an evaluation.
const CONCURRENT_QUERIES: usize = 8;

/// Seconds evaluation stays behind now: a few scrape intervals, for samples still on their way in.
const INGESTION_LAG: i64 = 15;

/// How far back the budget chart looks, and its step.
const HISTORY: (i64, u64) = (24 * 3_600, 360);

/// The evaluated objectives, shared by every request.
#[derive(Clone)]
pub struct Slos {
    views: Arc<RwLock<Vec<SloView>>>,
    evaluated: watch::Receiver<u64>,
}

impl std::fmt::Debug for Slos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slos").finish_non_exhaustive()
    }
}

impl Slos {
    /// Starts evaluating the objectives in `fleet`'s watch cache against `mimir`, until the process ends.
    pub fn spawn(fleet: FleetModel, mimir: Mimir) -> Self {
        let views = Arc::new(RwLock::new(Vec::new()));
        let (done, evaluated) = watch::channel(0);
        let slos = Self {
            views: views.clone(),
            evaluated,
        };
        tokio::spawn(async move {
            let mut burning = BTreeSet::new();
            loop {
                fleet.wait_until_ready(Duration::from_secs(3_600)).await;
                let now = jiff::Timestamp::now();
                let evaluated = evaluate_all(&fleet, &mimir, now).await;
                announce_burning(&fleet, &evaluated, &mut burning, now);
                *views.write().unwrap_or_else(PoisonError::into_inner) = evaluated;
                done.send_modify(|n| *n += 1);
                tokio::time::sleep(EVALUATE_EVERY).await;
            }
        });
        slos
    }

    /// Waits, at most `limit`, for the first evaluation; whether it has happened.
    pub async fn wait_until_evaluated(&self, limit: Duration) -> bool {
        let mut evaluated = self.evaluated.clone();
        tokio::time::timeout(limit, evaluated.wait_for(|n| *n > 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The objectives of `service`, by environment and name.
    pub fn of_service(&self, service: &str) -> Vec<SloView> {
        self.read()
            .iter()
            .filter(|v| v.service == service)
            .cloned()
            .collect()
    }

    /// One line per service with objectives.
    pub fn summaries(&self) -> Vec<SloSummary> {
        slo::summarize(&self.read())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<SloView>> {
        self.views.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An objective as its resource states it.
#[derive(Debug, Clone, PartialEq)]
struct Objective {
    service: String,
    environment: String,
    name: String,
    description: String,
    indicator: Indicator,
    objective: f64,
    window: String,
    window_seconds: u64,
    /// Ratio: the errors' selector; latency: the fast requests' (good events).
    counted: String,
    total: String,
}

impl Objective {
    /// Bad and total events from what the selectors counted.
    fn counts(&self, counted: f64, total: f64) -> Counts {
        let errors = match self.indicator {
            Indicator::Ratio => counted,
            // Fast requests are the good ones; the rest of the total spends the budget.
            Indicator::Latency => (total - counted).max(0.0),
        };
        Counts { errors, total }
    }
}

/// Why a resource cannot be evaluated, for its owners.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ResourceError {
    #[error("spec.target must be a percentage between 0 and 100, such as \"99.5\"")]
    Target,
    #[error("spec.window must be a duration such as 28d")]
    Window,
    #[error("spec.indicator needs ratio (errors, total) or latency (success, total)")]
    Indicator,
    #[error("{0} must be a plain metric selector, such as http_requests_total{{code=~\"5..\"}}")]
    Selector(&'static str),
}

/// Reads one resource; `None` when it names no service and environment (it is not one of the fleet's).
fn objective(
    object: &DynamicObject,
    labels: &crate::config::LabelsConfig,
) -> Option<(String, String, String, Result<Objective, ResourceError>)> {
    let map = object.metadata.labels.as_ref()?;
    let service = map.get(&labels.component)?.clone();
    let environment = map.get(&labels.environment)?.clone();
    let name = object.metadata.name.clone().unwrap_or_default();
    let spec = object.data.get("spec");
    let text = |path: &str| {
        spec.and_then(|s| s.pointer(path)).and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    let read = || -> Result<Objective, ResourceError> {
        let objective = text("/target")
            .and_then(|t| slo::parse_target(&t))
            .ok_or(ResourceError::Target)?;
        let window = text("/window").ok_or(ResourceError::Window)?;
        let window_seconds = slo::parse_duration(&window).ok_or(ResourceError::Window)?;
        let selector = |path: &str, field: &'static str| {
            let value = text(path).ok_or(ResourceError::Indicator)?;
            if is_plain_selector(&value) {
                Ok(value)
            } else {
                Err(ResourceError::Selector(field))
            }
        };
        let (indicator, counted, total) =
            if spec.and_then(|s| s.pointer("/indicator/ratio")).is_some() {
                (
                    Indicator::Ratio,
                    selector(
                        "/indicator/ratio/errors/metric",
                        "spec.indicator.ratio.errors.metric",
                    )?,
                    selector(
                        "/indicator/ratio/total/metric",
                        "spec.indicator.ratio.total.metric",
                    )?,
                )
            } else if spec.and_then(|s| s.pointer("/indicator/latency")).is_some() {
                (
                    Indicator::Latency,
                    selector(
                        "/indicator/latency/success/metric",
                        "spec.indicator.latency.success.metric",
                    )?,
                    selector(
                        "/indicator/latency/total/metric",
                        "spec.indicator.latency.total.metric",
                    )?,
                )
            } else {
                return Err(ResourceError::Indicator);
            };
        Ok(Objective {
            service: service.clone(),
            environment: environment.clone(),
            name: name.clone(),
            description: text("/description").unwrap_or_default(),
            indicator,
            objective,
            window,
            window_seconds,
            counted,
            total,
        })
    };
    let read = read();
    Some((service, environment, name, read))
}

/// Whether `text` is a metric name with optional matchers and nothing else: `name{label op "value", …}`
/// with `=`, `!=`, `=~` or `!~` and double-quoted values. Anything more (functions, operators, a second
/// selector) is refused, so a resource can only choose which series are counted.
pub fn is_plain_selector(text: &str) -> bool {
    let text = text.trim();
    let name_end = text.find('{').unwrap_or(text.len());
    let (name, rest) = text.split_at(name_end);
    let is_name = |s: &str, colon: bool| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
    };
    if !is_name(name, true) {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
        return false;
    };
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return true;
        }
        let mut label = String::new();
        while let Some(c) = chars
            .peek()
            .copied()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            label.push(c);
            chars.next();
        }
        if !is_name(&label, false) {
            return false;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match (chars.next(), chars.peek().copied()) {
            (Some('='), Some('~')) | (Some('!'), Some('~')) | (Some('!'), Some('=')) => {
                chars.next();
            }
            (Some('='), _) => {}
            _ => return false,
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('"') {
            return false;
        }
        loop {
            match chars.next() {
                Some('\\') => {
                    if chars.next().is_none() {
                        return false;
                    }
                }
                Some('"') => break,
                Some(_) => {}
                None => return false,
            }
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            Some(',') => {}
            None => return true,
            Some(_) => return false,
        }
    }
}

/// Evaluates every objective in the cache at `now`.
async fn evaluate_all(fleet: &FleetModel, mimir: &Mimir, now: jiff::Timestamp) -> Vec<SloView> {
    let labels = fleet.labels().clone();
    // Every window of every objective ends at the same instant, on a whole ten seconds so that tests and
    // people can ask Mimir for exactly what Tower asked, and far enough behind now that every scrape
    // before it has been ingested: the same question then always gets the same answer.
    let at = (now.as_second() - INGESTION_LAG).div_euclid(10) * 10;
    let mut objects: Vec<_> = fleet
        .slo_objects()
        .iter()
        .filter_map(|object| objective(object, &labels))
        .filter(|(service, _, _, _)| fleet.service(service).is_some())
        .collect();
    objects.sort_by(|a, b| (&a.0, &a.1, &a.2).cmp(&(&b.0, &b.1, &b.2)));
    futures::stream::iter(objects)
        .map(|(service, environment, name, objective)| async move {
            match objective {
                Ok(objective) => evaluate(mimir, &objective, at).await,
                Err(problem) => unreadable(service, environment, name, &problem, at),
            }
        })
        .buffered(CONCURRENT_QUERIES)
        .collect()
        .await
}

/// An objective's view before any figure: what its resource names, evaluated at `at`.
fn blank(service: String, environment: String, name: String, at: i64) -> SloView {
    SloView {
        service,
        environment,
        name,
        description: String::new(),
        indicator: Indicator::Ratio,
        objective: 0.0,
        window: String::new(),
        evaluated_at: at,
        counts: None,
        availability: None,
        budget_remaining: None,
        burn_rates: Vec::new(),
        alerts: Vec::new(),
        budget_history: Vec::new(),
        error: None,
    }
}

/// Why an objective has no figures, since `at`.
fn failure(message: String, at: i64) -> ChartError {
    ChartError {
        message,
        since: jiff::Timestamp::from_second(at)
            .unwrap_or_default()
            .to_string(),
    }
}

fn unreadable(
    service: String,
    environment: String,
    name: String,
    problem: &ResourceError,
    at: i64,
) -> SloView {
    SloView {
        error: Some(failure(
            format!("The objective cannot be read: {problem}"),
            at,
        )),
        ..blank(service, environment, name, at)
    }
}

/// The PromQL counting `selector`'s events over `seconds`.
fn increase(selector: &str, seconds: u64) -> String {
    format!("sum(increase({selector}[{seconds}s]))")
}

/// Bad and total events over `seconds` ending at `at`; `None` counts when no series exists.
async fn counts(
    mimir: &Mimir,
    objective: &Objective,
    seconds: u64,
    at: i64,
) -> Result<Option<Counts>, MimirError> {
    let (counted, total) = (
        increase(&objective.counted, seconds),
        increase(&objective.total, seconds),
    );
    let counted = mimir.query(&counted, at);
    let total = mimir.query(&total, at);
    let (counted, total) = futures::future::try_join(counted, total).await?;
    let value =
        |samples: &[crate::upstream::mimir::InstantSample]| samples.first().map(|s| s.value);
    let (Some(counted), Some(total)) = (value(&counted), value(&total)) else {
        return Ok(None);
    };
    Ok(Some(objective.counts(counted, total)))
}

/// Budget remaining over the objective's window at every step of the last [`HISTORY`].
async fn budget_history(
    mimir: &Mimir,
    objective: &Objective,
    at: i64,
) -> Result<Vec<(i64, f64)>, MimirError> {
    let (span, step) = HISTORY;
    let start = at - span;
    let (counted, total) = (
        increase(&objective.counted, objective.window_seconds),
        increase(&objective.total, objective.window_seconds),
    );
    let counted = mimir.query_range(&counted, start, at, step);
    let total = mimir.query_range(&total, start, at, step);
    let (counted, total) = futures::future::try_join(counted, total).await?;
    let points = |series: Vec<crate::upstream::mimir::RangeSeries>| -> BTreeMap<i64, f64> {
        series
            .into_iter()
            .next()
            .map(|s| s.points.into_iter().collect())
            .unwrap_or_default()
    };
    let counted = points(counted);
    let total = points(total);
    Ok(total
        .iter()
        .filter_map(|(t, total)| {
            let counts = objective.counts(*counted.get(t)?, *total);
            Some((*t, slo::budget_remaining(counts, objective.objective)?))
        })
        .collect())
}

async fn evaluate(mimir: &Mimir, objective: &Objective, at: i64) -> SloView {
    let windows = BURN_WINDOWS
        .iter()
        .map(|(_, seconds)| *seconds)
        .chain([objective.window_seconds]);
    let all =
        futures::future::try_join_all(windows.map(|seconds| counts(mimir, objective, seconds, at)));
    let history = budget_history(mimir, objective, at);
    let mut view = SloView {
        description: objective.description.clone(),
        indicator: objective.indicator,
        objective: objective.objective,
        window: objective.window.clone(),
        ..blank(
            objective.service.clone(),
            objective.environment.clone(),
            objective.name.clone(),
            at,
        )
    };
    match futures::future::try_join(all, history).await {
        Ok((mut counts, history)) => {
            let whole = counts.pop().flatten();
            view.burn_rates = BURN_WINDOWS
                .iter()
                .zip(counts)
                .map(|((window, seconds), counts)| BurnRate {
                    window: (*window).to_string(),
                    seconds: *seconds,
                    counts,
                    rate: counts.and_then(|c| slo::burn_rate(c, objective.objective)),
                })
                .collect();
            view.alerts = slo::alerts(&view.burn_rates);
            view.counts = whole;
            view.availability = whole.and_then(slo::availability);
            view.budget_remaining =
                whole.and_then(|c| slo::budget_remaining(c, objective.objective));
            view.budget_history = history;
        }
        Err(error) => {
            tracing::warn!(
                slo = objective.name,
                error = %crate::error::cause_chain(&error),
                "SLO evaluation failed"
            );
            view.error = Some(failure(
                if error.is_unreachable() {
                    "The metrics store is unreachable".into()
                } else {
                    "The metrics store did not answer as expected".into()
                },
                at,
            ));
        }
    }
    view
}

/// Records in the activity feed each objective that has started burning since the last evaluation.
fn announce_burning(
    fleet: &FleetModel,
    views: &[SloView],
    burning: &mut BTreeSet<(String, String, String)>,
    now: jiff::Timestamp,
) {
    let mut still = BTreeSet::new();
    for view in views.iter().filter(|v| v.burning()) {
        let key = (
            view.service.clone(),
            view.environment.clone(),
            view.name.clone(),
        );
        if !burning.contains(&key) {
            let fastest = view
                .alerts
                .iter()
                .filter(|a| a.firing)
                .map(|a| (a.long.as_str(), a.short.as_str()))
                .next()
                .unwrap_or_default();
            let rate = view
                .burn_rates
                .iter()
                .find(|b| b.window == fastest.0)
                .and_then(|b| b.rate)
                .unwrap_or_default();
            fleet.record(ActivityItem {
                at: now.to_string(),
                service: view.service.clone(),
                environment: Some(view.environment.clone()),
                kind: ActivityKind::SloBurning,
                message: format!(
                    "{} burns its error budget {rate:.1}× too fast over {} and {}",
                    view.name, fastest.0, fastest.1
                ),
                link: None,
            });
        }
        still.insert(key);
    }
    *burning = still;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_selectors_are_counted() {
        for good in [
            "http_requests_total",
            r#"http_requests_total{service="payments",code=~"5.."}"#,
            r#"http_request_duration_seconds_bucket{ le = "0.25" , service!="x\"y" }"#,
            r#"job:requests:rate5m{job!~"a|b"}"#,
            "up{}",
        ] {
            assert!(is_plain_selector(good), "{good}");
        }
        for bad in [
            "",
            "sum(http_requests_total)",
            r#"http_requests_total{code="5xx"} or vector(1)"#,
            r#"http_requests_total{code="5xx"}[5m]"#,
            r#"http_requests_total{code=5}"#,
            r#"http_requests_total{code="5xx"#,
            r#"http_requests_total{code="a"} / up"#,
            "1http",
            r#"http_requests_total{code="a"}}"#,
            r#"a{b="c" d="e"}"#,
        ] {
            assert!(!is_plain_selector(bad), "{bad}");
        }
    }

    fn resource(spec: Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "pyrra.dev/v1alpha1",
            "kind": "ServiceLevelObjective",
            "metadata": {"name": "payments-availability", "labels": {
                "platform.tower.dev/component": "payments",
                "platform.tower.dev/environment": "prod",
            }},
            "spec": spec,
        }))
        .expect("a resource")
    }

    #[test]
    fn a_resource_reads_as_pyrra_writes_it_and_says_what_is_wrong_otherwise() {
        let labels = crate::config::LabelsConfig::default();
        let good = resource(serde_json::json!({
            "target": "99.5", "window": "28d",
            "indicator": {"ratio": {
                "errors": {"metric": r#"http_requests_total{service="payments",code=~"5.."}"#},
                "total": {"metric": r#"http_requests_total{service="payments"}"#},
            }},
        }));
        let (service, environment, _, read) = objective(&good, &labels).expect("labelled");
        assert_eq!(
            (service.as_str(), environment.as_str()),
            ("payments", "prod")
        );
        let read = read.expect("readable");
        assert_eq!(read.objective, 0.995);
        assert_eq!(read.window_seconds, 28 * 86_400);
        assert_eq!(read.indicator, Indicator::Ratio);

        let cases = [
            (
                serde_json::json!({"target": "100", "window": "28d"}),
                ResourceError::Target,
            ),
            (
                serde_json::json!({"target": "99", "window": "a month"}),
                ResourceError::Window,
            ),
            (
                serde_json::json!({"target": "99", "window": "28d", "indicator": {}}),
                ResourceError::Indicator,
            ),
            (
                serde_json::json!({"target": "99", "window": "28d", "indicator": {"ratio": {
                    "errors": {"metric": "sum(x)"}, "total": {"metric": "x"}}}}),
                ResourceError::Selector("spec.indicator.ratio.errors.metric"),
            ),
        ];
        for (spec, expected) in cases {
            let (_, _, _, read) = objective(&resource(spec.clone()), &labels).expect("labelled");
            assert_eq!(read, Err(expected), "{spec}");
        }
    }
}
