//! Service level objectives: what a service promises (Pyrra's `ServiceLevelObjective` resources), how much
//! of its error budget is left, how fast it burns, and which of the SRE Workbook's multi-window,
//! multi-burn-rate alerts would fire.
//!
//! The arithmetic is here, pure and tested natively: the server feeds it the error and total counts Mimir
//! answers for each window, and the browser only shows the result.

use serde::{Deserialize, Serialize};

use crate::metrics::ChartError;

/// The windows burn rates are measured over, in seconds, shortest first: the short and long windows of
/// the four [`ALERTS`].
pub const BURN_WINDOWS: [(&str, u64); 7] = [
    ("5m", 300),
    ("30m", 1_800),
    ("1h", 3_600),
    ("2h", 7_200),
    ("6h", 21_600),
    ("1d", 86_400),
    ("3d", 259_200),
];

/// The four multi-window, multi-burn-rate alerts of the Google SRE Workbook (chapter 5, for a 30-day
/// objective): an alert fires when the burn rate over both its long and its short window exceeds its
/// factor. The factors spend 2 % of the budget in an hour, 5 % in six hours, 10 % in a day and 10 % in
/// three days.
pub const ALERTS: [AlertRule; 4] = [
    AlertRule {
        long: "1h",
        short: "5m",
        factor: 14.4,
        severity: Severity::Page,
    },
    AlertRule {
        long: "6h",
        short: "30m",
        factor: 6.0,
        severity: Severity::Page,
    },
    AlertRule {
        long: "1d",
        short: "2h",
        factor: 3.0,
        severity: Severity::Ticket,
    },
    AlertRule {
        long: "3d",
        short: "6h",
        factor: 1.0,
        severity: Severity::Ticket,
    },
];

/// One multi-window burn-rate alert.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlertRule {
    /// The long window (one of [`BURN_WINDOWS`]).
    pub long: &'static str,
    /// The short window, which makes the alert stop soon after the burning does.
    pub short: &'static str,
    /// The burn rate both windows must exceed.
    pub factor: f64,
    /// Whether it wakes someone up.
    pub severity: Severity,
}

/// How urgent an alert is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Someone is paged: the budget goes within days.
    Page,
    /// A ticket: the budget goes within the window if nothing changes.
    Ticket,
}

/// What an objective measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Indicator {
    /// Requests answered without an error, of all requests.
    Ratio,
    /// Requests answered faster than a threshold, of all requests.
    Latency,
}

/// Errors and total events over one window: the raw numbers every figure is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Bad events (errors, or requests slower than the threshold).
    pub errors: f64,
    /// All events.
    pub total: f64,
}

impl Counts {
    /// The share of bad events, or `None` when nothing happened (no events, no ratio).
    pub fn error_ratio(self) -> Option<f64> {
        (self.total > 0.0 && self.errors.is_finite() && self.total.is_finite())
            .then(|| (self.errors / self.total).clamp(0.0, 1.0))
    }
}

/// The error budget: the share of events an objective allows to be bad (`1 − objective`).
pub fn budget(objective: f64) -> f64 {
    1.0 - objective
}

/// How many times faster than allowed the budget is being spent: 1 spends exactly the budget over the
/// objective's window. `None` without events, or for an objective of 100 % (no budget to spend).
pub fn burn_rate(counts: Counts, objective: f64) -> Option<f64> {
    let budget = budget(objective);
    (budget > 0.0)
        .then_some(())
        .and(counts.error_ratio())
        .map(|ratio| ratio / budget)
}

/// The share of the window's budget still unspent: 1 untouched, 0 spent, negative overspent.
pub fn budget_remaining(window: Counts, objective: f64) -> Option<f64> {
    burn_rate(window, objective).map(|burn| 1.0 - burn)
}

/// Availability over the window: the share of good events.
pub fn availability(window: Counts) -> Option<f64> {
    window.error_ratio().map(|ratio| 1.0 - ratio)
}

/// The burn rate over `window` from a list of `(window, rate)`.
fn rate_over(burn_rates: &[BurnRate], window: &str) -> Option<f64> {
    burn_rates
        .iter()
        .find(|b| b.window == window)
        .and_then(|b| b.rate)
}

/// Each of [`ALERTS`] and whether it fires for these burn rates.
pub fn alerts(burn_rates: &[BurnRate]) -> Vec<AlertState> {
    ALERTS
        .iter()
        .map(|rule| {
            let over = |window| rate_over(burn_rates, window).is_some_and(|r| r > rule.factor);
            AlertState {
                long: rule.long.to_string(),
                short: rule.short.to_string(),
                factor: rule.factor,
                severity: rule.severity,
                firing: over(rule.long) && over(rule.short),
            }
        })
        .collect()
}

/// A Prometheus duration (`28d`, `4w`, `6h`, `90m`, `1h30m`) in seconds, or `None` when it is not one.
pub fn parse_duration(text: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut digits = String::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let c = rest.chars().next()?;
        if c.is_ascii_digit() {
            digits.push(c);
            rest = &rest[1..];
            continue;
        }
        let (unit, len) = if rest.starts_with("ms") {
            (0, 2)
        } else {
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3_600,
                'd' => 86_400,
                'w' => 7 * 86_400,
                'y' => 365 * 86_400,
                _ => return None,
            };
            (unit, 1)
        };
        let value: u64 = digits.parse().ok()?;
        digits.clear();
        total = total.checked_add(value.checked_mul(unit)?)?;
        rest = &rest[len..];
    }
    (digits.is_empty() && total > 0).then_some(total)
}

/// An objective as Pyrra writes its target: a percentage string (`"99.5"`) as a share (0.995), or
/// `None` unless it is strictly between 0 and 100.
pub fn parse_target(text: &str) -> Option<f64> {
    let percent: f64 = text.trim().parse().ok()?;
    (percent > 0.0 && percent < 100.0).then(|| percent / 100.0)
}

/// One objective of one service in one environment, evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloView {
    /// The service.
    pub service: String,
    /// The environment.
    pub environment: String,
    /// The resource's name.
    pub name: String,
    /// What it promises, in a sentence (the resource's description).
    pub description: String,
    /// What it measures.
    pub indicator: Indicator,
    /// The objective, as a share (0.995).
    pub objective: f64,
    /// The window as written (`28d`).
    pub window: String,
    /// When the figures were computed, Unix seconds: every window ends here.
    pub evaluated_at: i64,
    /// The counts over the whole window.
    pub counts: Option<Counts>,
    /// Good events over the window, as a share.
    pub availability: Option<f64>,
    /// Budget left over the window, as a share (negative when overspent).
    pub budget_remaining: Option<f64>,
    /// Burn rates over [`BURN_WINDOWS`], in that order.
    pub burn_rates: Vec<BurnRate>,
    /// The four alerts and whether each fires.
    pub alerts: Vec<AlertState>,
    /// Budget remaining over the last day, `(Unix seconds, share)`, for the chart.
    pub budget_history: Vec<(i64, f64)>,
    /// Why there are no figures: the metrics store failed, or the resource cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ChartError>,
}

impl SloView {
    /// Whether any alert fires.
    pub fn burning(&self) -> bool {
        self.alerts.iter().any(|a| a.firing)
    }
}

/// The burn rate over one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurnRate {
    /// The window (`5m`).
    pub window: String,
    /// Its length in seconds.
    pub seconds: u64,
    /// The counts over it.
    pub counts: Option<Counts>,
    /// Errors over budget; `None` without events.
    pub rate: Option<f64>,
}

/// One alert, evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertState {
    /// The long window.
    pub long: String,
    /// The short window.
    pub short: String,
    /// The burn rate both must exceed.
    pub factor: f64,
    /// Page or ticket.
    pub severity: Severity,
    /// Whether both windows exceed the factor now.
    pub firing: bool,
}

/// A service's objectives in one line of the Overview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloSummary {
    /// The service.
    pub service: String,
    /// How many objectives it has, in every environment.
    pub objectives: usize,
    /// The least budget left among them, with where.
    pub worst: Option<WorstBudget>,
    /// Whether any of them burns.
    pub burning: bool,
}

/// The objective with the least budget left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorstBudget {
    /// Its environment.
    pub environment: String,
    /// Its name.
    pub name: String,
    /// Budget left, as a share.
    pub budget_remaining: f64,
}

/// One summary per service that has objectives, in service order.
pub fn summarize(slos: &[SloView]) -> Vec<SloSummary> {
    let mut summaries: Vec<SloSummary> = Vec::new();
    for slo in slos {
        let index = match summaries.iter().position(|s| s.service == slo.service) {
            Some(index) => index,
            None => {
                summaries.push(SloSummary {
                    service: slo.service.clone(),
                    objectives: 0,
                    worst: None,
                    burning: false,
                });
                summaries.len() - 1
            }
        };
        let summary = &mut summaries[index];
        summary.objectives += 1;
        summary.burning |= slo.burning();
        if let Some(remaining) = slo.budget_remaining
            && summary
                .worst
                .as_ref()
                .is_none_or(|w| remaining < w.budget_remaining)
        {
            summary.worst = Some(WorstBudget {
                environment: slo.environment.clone(),
                name: slo.name.clone(),
                budget_remaining: remaining,
            });
        }
    }
    summaries.sort_by(|a, b| a.service.cmp(&b.service));
    summaries
}

/// Below this share of budget left an objective is shown amber; at or below zero, red.
pub const LOW_BUDGET: f64 = 0.25;

/// Hours of history the panel's chart shows (the server keeps [`SloView::budget_history`] this long).
pub const HISTORY_HOURS: u64 = 24;

impl Severity {
    /// In words, for the alerts table.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Page => "Page",
            Severity::Ticket => "Ticket",
        }
    }
}

impl SloView {
    /// The burn rate over `window` (one of [`BURN_WINDOWS`]); `None` when it was not measured or had no
    /// events.
    pub fn rate(&self, window: &str) -> Option<f64> {
        rate_over(&self.burn_rates, window)
    }
}

impl SloSummary {
    /// Where the worst objective is shown: the Metrics tab of its service in its environment.
    pub fn href(&self) -> String {
        let mut href = format!(
            "/services/{}?tab=metrics",
            crate::url::encode_query_value(&self.service)
        );
        if let Some(worst) = &self.worst {
            href.push_str("&env=");
            href.push_str(&crate::url::encode_query_value(&worst.environment));
        }
        href
    }
}

/// A share as a percentage, to at most `decimals` decimals without trailing zeros, with a real minus
/// sign: `99.5 %`, `92.03 %`, `−912 %`; "–" when it is not a number. Rounded once, then written as
/// integers, so `-0.0001` reads `0 %` and never `−0 %`.
fn percent(share: f64, decimals: u32) -> String {
    if !share.is_finite() {
        return "–".to_string();
    }
    let scale = 10_u64.pow(decimals);
    // `as` saturates: an absurd share still writes a (large) number.
    let scaled = (share * 100.0 * scale as f64).round() as i64;
    let (whole, fraction) = (scaled.unsigned_abs() / scale, scaled.unsigned_abs() % scale);
    let mut text = String::new();
    if scaled < 0 {
        text.push('\u{2212}');
    }
    text.push_str(&whole.to_string());
    if fraction > 0 {
        let digits = fraction.to_string();
        let padded = "0".repeat((decimals as usize).saturating_sub(digits.len())) + &digits;
        text.push('.');
        text.push_str(padded.trim_end_matches('0'));
    }
    text.push_str(" %");
    text
}

/// An objective or an availability as the panel writes it: `99.5 %`, `99.95 %`, `92.034 %` (three
/// decimals at most: a 99.95 % objective must not read as 100 %).
pub fn format_percent(share: f64) -> String {
    percent(share, 3)
}

/// Budget remaining as the panel and the Overview write it: whole percent from 10 % up (`87 %`,
/// `−912 %`), one decimal below (`4.2 %`, `−0.5 %`), "no data" without events.
pub fn format_budget(remaining: Option<f64>) -> String {
    match remaining {
        Some(share) if share.is_finite() => {
            let decimals = if (share * 100.0).abs() >= 10.0 { 0 } else { 1 };
            percent(share, decimals)
        }
        _ => "no data".to_string(),
    }
}

/// A burn rate as the alerts table writes it: `16.0×`, `0.4×`, `120×`; "—" without events.
pub fn format_burn_rate(rate: Option<f64>) -> String {
    match rate {
        Some(rate) if rate.is_finite() && rate.abs() >= 100.0 => format!("{rate:.0}×"),
        Some(rate) if rate.is_finite() => format!("{rate:.1}×"),
        _ => "—".to_string(),
    }
}

/// The tone of a budget remaining: red when spent, amber when under [`LOW_BUDGET`], unknown without
/// events. Colour is never the only signal: the number goes with it.
pub fn budget_tone(remaining: Option<f64>) -> crate::status::Tone {
    use crate::status::Tone;
    match remaining {
        Some(share) if share <= 0.0 => Tone::Bad,
        Some(share) if share < LOW_BUDGET => Tone::Warn,
        Some(_) => Tone::Ok,
        None => Tone::Unknown,
    }
}

/// The objectives of one environment as the panel lists them: least budget left first (as Pyrra's list
/// sorts), those without figures last, then by name so the order holds still between refreshes.
pub fn in_environment<'a>(slos: &'a [SloView], environment: &str) -> Vec<&'a SloView> {
    let mut shown: Vec<&SloView> = slos
        .iter()
        .filter(|slo| slo.environment == environment)
        .collect();
    shown.sort_by(|a, b| {
        budget_order(a.budget_remaining, b.budget_remaining).then_with(|| a.name.cmp(&b.name))
    });
    shown
}

/// Least budget first; no figure after every figure.
pub fn budget_order(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(&b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// What the panel says when an environment has no objectives, and how to get one there.
pub fn empty_message(service: &str, environment: &str) -> String {
    format!(
        "{service} has no service level objectives in {environment}. Add a Pyrra ServiceLevelObjective \
         labelled with the component and environment."
    )
}

/// The vertical axis of a budget chart: from the lowest value (or 0) to 100 % (or the highest), in
/// percent. Unlike a ratio's axis it goes below zero, where an overspent budget is.
pub fn budget_axis(values: impl IntoIterator<Item = f64>) -> crate::metrics::chart::ValueAxis {
    use crate::metrics::Unit;
    use crate::metrics::chart::{ValueAxis, ValueTick, value_axis};
    // Whole percents through the plain-number axis, then back to shares with a percent sign.
    let percents = values
        .into_iter()
        .filter(|v| v.is_finite())
        .map(|v| v * 100.0)
        .chain([100.0]);
    let axis = value_axis(Unit::Count, percents);
    ValueAxis {
        min: axis.min / 100.0,
        max: axis.max / 100.0,
        ticks: axis
            .ticks
            .into_iter()
            .map(|tick| ValueTick {
                value: tick.value / 100.0,
                label: format!("{} %", tick.label.replace('-', "\u{2212}")),
            })
            .collect(),
    }
}

/// The budget chart in one sentence, for its `aria-label`: "Error budget remaining of
/// payments-prod-availability, last 24 hours, now −912 %, 1 deploy".
pub fn budget_summary(slo: &SloView, deploys: usize) -> String {
    let now = slo
        .budget_history
        .last()
        .map(|(_, v)| Some(*v))
        .unwrap_or(slo.budget_remaining);
    let deploys = match deploys {
        0 => String::new(),
        1 => ", 1 deploy".to_string(),
        n => format!(", {n} deploys"),
    };
    format!(
        "Error budget remaining of {}, last {HISTORY_HOURS} hours, now {}{deploys}",
        slo.name,
        format_budget(now)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn burn(window: &str, rate: f64) -> BurnRate {
        BurnRate {
            window: window.into(),
            seconds: 0,
            counts: None,
            rate: Some(rate),
        }
    }

    #[test]
    fn a_budget_spent_at_exactly_the_allowed_pace_burns_at_one() {
        let counts = Counts {
            errors: 5.0,
            total: 1_000.0,
        };
        let rate = burn_rate(counts, 0.995).expect("events");
        assert!((rate - 1.0).abs() < 1e-9, "{rate}");
        assert!(budget_remaining(counts, 0.995).expect("events").abs() < 1e-9);
        assert!((availability(counts).expect("events") - 0.995).abs() < 1e-12);
    }

    #[test]
    fn no_events_is_no_figure_rather_than_a_perfect_one() {
        let none = Counts::default();
        assert_eq!(burn_rate(none, 0.99), None);
        assert_eq!(availability(none), None);
        assert_eq!(budget_remaining(none, 0.99), None);
    }

    #[test]
    fn an_overspent_budget_goes_negative() {
        let counts = Counts {
            errors: 80.0,
            total: 1_000.0,
        };
        let remaining = budget_remaining(counts, 0.995).expect("events");
        assert!((remaining - (1.0 - 16.0)).abs() < 1e-9, "{remaining}");
    }

    #[test]
    fn an_alert_fires_only_when_both_its_windows_burn() {
        let fast = [burn("5m", 20.0), burn("1h", 15.0), burn("30m", 2.0)];
        let states = alerts(&fast);
        assert!(states[0].firing, "1h and 5m above 14.4");
        assert!(!states[1].firing, "30m is below 6");
        // The long window alone does not page once the short one has recovered.
        let recovered = [burn("5m", 0.5), burn("1h", 15.0)];
        assert!(!alerts(&recovered)[0].firing);
        let slow = [
            burn("3d", 1.5),
            burn("6h", 1.8),
            burn("1d", 1.6),
            burn("2h", 1.9),
        ];
        let states = alerts(&slow);
        assert_eq!(
            states.iter().map(|a| a.firing).collect::<Vec<_>>(),
            [false, false, false, true]
        );
        assert_eq!(states[3].severity, Severity::Ticket);
    }

    #[test]
    fn every_alert_window_is_measured() {
        for rule in ALERTS {
            for window in [rule.long, rule.short] {
                assert!(BURN_WINDOWS.iter().any(|(w, _)| *w == window), "{window}");
            }
        }
        for (text, seconds) in BURN_WINDOWS {
            assert_eq!(parse_duration(text), Some(seconds));
        }
    }

    #[test]
    fn durations_and_targets_read_as_pyrra_writes_them() {
        assert_eq!(parse_duration("28d"), Some(28 * 86_400));
        assert_eq!(parse_duration("4w"), Some(28 * 86_400));
        assert_eq!(parse_duration("1h30m"), Some(5_400));
        for bad in ["", "d", "28", "28x", "-1d", "0d"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        assert_eq!(parse_target("99.5"), Some(0.995));
        for bad in ["100", "0", "abc", "-5", "101"] {
            assert_eq!(parse_target(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_overview_sees_each_service_by_its_worst_budget() {
        let slo = |service: &str, env: &str, remaining: Option<f64>, firing: bool| SloView {
            service: service.into(),
            environment: env.into(),
            name: format!("{service}-{env}"),
            description: String::new(),
            indicator: Indicator::Ratio,
            objective: 0.99,
            window: "28d".into(),
            evaluated_at: 0,
            counts: None,
            availability: None,
            budget_remaining: remaining,
            burn_rates: Vec::new(),
            alerts: vec![AlertState {
                long: "1h".into(),
                short: "5m".into(),
                factor: 14.4,
                severity: Severity::Page,
                firing,
            }],
            budget_history: Vec::new(),
            error: None,
        };
        let summaries = summarize(&[
            slo("search", "prod", Some(0.9), false),
            slo("payments", "dev", Some(0.8), false),
            slo("payments", "prod", Some(-3.0), true),
            slo("search", "dev", None, false),
        ]);
        assert_eq!(summaries.len(), 2);
        assert_eq!(summaries[0].service, "payments");
        assert_eq!(summaries[0].objectives, 2);
        assert!(summaries[0].burning);
        let worst = summaries[0].worst.as_ref().expect("a budget");
        assert_eq!(
            (worst.environment.as_str(), worst.budget_remaining),
            ("prod", -3.0)
        );
        assert!(!summaries[1].burning);
        assert_eq!(
            summaries[1]
                .worst
                .as_ref()
                .expect("a budget")
                .budget_remaining,
            0.9
        );
    }

    fn view(name: &str, environment: &str, remaining: Option<f64>) -> SloView {
        SloView {
            service: "payments".into(),
            environment: environment.into(),
            name: name.into(),
            description: String::new(),
            indicator: Indicator::Ratio,
            objective: 0.995,
            window: "28d".into(),
            evaluated_at: 0,
            counts: None,
            availability: None,
            budget_remaining: remaining,
            burn_rates: vec![burn("5m", 16.0), burn("1h", 15.9)],
            alerts: Vec::new(),
            budget_history: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn figures_read_as_percentages_with_a_real_minus_sign() {
        assert_eq!(format_percent(0.995), "99.5 %");
        assert_eq!(format_percent(0.9995), "99.95 %");
        assert_eq!(format_percent(0.920_341_2), "92.034 %");
        assert_eq!(format_percent(1.0), "100 %");
        assert_eq!(format_percent(0.9005), "90.05 %");
        assert_eq!(format_percent(0.90005), "90.005 %");
        assert_eq!(format_percent(0.0), "0 %");
        assert_eq!(format_percent(f64::NAN), "–");
        assert_eq!(format_budget(Some(-9.12)), "\u{2212}912 %");
        assert_eq!(format_budget(Some(0.8712)), "87 %");
        assert_eq!(format_budget(Some(0.042)), "4.2 %");
        assert_eq!(format_budget(Some(-0.005)), "\u{2212}0.5 %");
        assert_eq!(format_budget(Some(-0.0001)), "0 %");
        assert_eq!(format_budget(Some(0.0)), "0 %");
        assert_eq!(format_budget(None), "no data");
        assert_eq!(format_burn_rate(Some(16.0)), "16.0×");
        assert_eq!(format_burn_rate(Some(0.42)), "0.4×");
        assert_eq!(format_burn_rate(Some(120.4)), "120×");
        assert_eq!(format_burn_rate(None), "—");
    }

    #[test]
    fn a_spent_budget_is_red_and_a_low_one_amber() {
        use crate::status::Tone;
        assert_eq!(budget_tone(Some(-9.12)), Tone::Bad);
        assert_eq!(budget_tone(Some(0.0)), Tone::Bad);
        assert_eq!(budget_tone(Some(0.2)), Tone::Warn);
        assert_eq!(budget_tone(Some(0.25)), Tone::Ok);
        assert_eq!(budget_tone(None), Tone::Unknown);
    }

    #[test]
    fn the_panel_lists_one_environment_least_budget_first_and_unmeasured_last() {
        let slos = [
            view("payments-prod-latency", "prod", Some(0.6)),
            view("payments-dev-availability", "dev", Some(-1.0)),
            view("payments-prod-quiet", "prod", None),
            view("payments-prod-availability", "prod", Some(-9.12)),
        ];
        let names: Vec<&str> = in_environment(&slos, "prod")
            .into_iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "payments-prod-availability",
                "payments-prod-latency",
                "payments-prod-quiet"
            ]
        );
        assert!(in_environment(&slos, "staging").is_empty());
        assert_eq!(slos[0].rate("5m"), Some(16.0));
        assert_eq!(slos[0].rate("3d"), None);
        assert_eq!(
            empty_message("recommendations", "prod"),
            "recommendations has no service level objectives in prod. Add a Pyrra \
             ServiceLevelObjective labelled with the component and environment."
        );
    }

    #[test]
    fn the_budget_axis_reaches_below_zero_and_up_to_a_whole_budget() {
        let healthy = budget_axis([0.97, 0.95]);
        assert_eq!(healthy.min, 0.0);
        assert!((healthy.max - 1.0).abs() < 1e-9, "{healthy:?}");
        assert_eq!(
            healthy.ticks.last().map(|t| t.label.as_str()),
            Some("100 %")
        );
        let overspent = budget_axis([0.5, -9.12]);
        assert!(overspent.min <= -9.12, "{overspent:?}");
        assert!(overspent.max >= 1.0);
        assert!(
            overspent.ticks[0].label.starts_with('\u{2212}'),
            "{overspent:?}"
        );
        assert!(overspent.ticks.iter().any(|t| t.value == 0.0));
    }

    #[test]
    fn the_chart_summary_names_the_objective_its_latest_budget_and_deploys() {
        let mut slo = view("payments-prod-availability", "prod", Some(-9.0));
        slo.budget_history = vec![(0, 0.9), (360, -9.12)];
        assert_eq!(
            budget_summary(&slo, 1),
            "Error budget remaining of payments-prod-availability, last 24 hours, now \u{2212}912 %, 1 deploy"
        );
        slo.budget_history.clear();
        assert!(budget_summary(&slo, 0).ends_with("now \u{2212}900 %"));
    }

    #[test]
    fn the_overview_links_a_service_to_its_worst_objective() {
        let summary = SloSummary {
            service: "payments".into(),
            objectives: 2,
            worst: Some(WorstBudget {
                environment: "prod".into(),
                name: "payments-prod-availability".into(),
                budget_remaining: -9.12,
            }),
            burning: true,
        };
        assert_eq!(summary.href(), "/services/payments?tab=metrics&env=prod");
        assert_eq!(Severity::Page.label(), "Page");
    }
}
