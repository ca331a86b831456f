//! How a chart is drawn: axis ticks, value formatting per unit, and the SVG path of a series. Pure, so it is
//! tested natively and the wasm app only renders what it returns.
//!
//! A chart is drawn in a box of any width × height (the app uses a fixed `viewBox` stretched to the card, and
//! places its text as HTML at the fractions given here, so labels stay readable at any width). Times are Unix
//! seconds and every label is UTC, like the rest of Tower.

use std::fmt::Write as _;

use super::{Chart, DeployMarker, MetricsRange, Unit};

/// Consecutive points further apart than this many steps are not joined: missing data shows as a gap, never as
/// a line drawn across it.
pub const GAP_STEPS: f64 = 1.5;

/// The most intervals a value axis is divided into (so 4 to 6 ticks, 0 included).
const VALUE_INTERVALS: f64 = 5.0;

/// The most labels a time axis carries.
const TIME_TICKS: usize = 8;

/// Time axis spacings, shortest first: the first that keeps to [`TIME_TICKS`] is used.
const TIME_INTERVALS: [i64; 14] = [
    60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 14_400, 21_600, 43_200, 86_400, 172_800,
];

const DAY: i64 = 86_400;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// One labelled value on the vertical axis.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueTick {
    /// The value it marks.
    pub value: f64,
    /// The value in the axis' unit (`20 MiB`).
    pub label: String,
}

/// The vertical axis of a chart: from `min` (the first tick) to `max` (the last).
#[derive(Debug, Clone, PartialEq)]
pub struct ValueAxis {
    /// The bottom of the chart.
    pub min: f64,
    /// The top of the chart.
    pub max: f64,
    /// Evenly spaced, bottom first, the first at `min` and the last at `max`.
    pub ticks: Vec<ValueTick>,
}

/// One labelled moment on the time axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeTick {
    /// Unix seconds.
    pub at: i64,
    /// UTC clock time (`10:40`), or the date (`May 5`) at midnight and on day-spaced axes.
    pub label: String,
}

/// The box a chart is drawn in and what its edges mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// The time at the left edge, Unix seconds.
    pub start: i64,
    /// The time at the right edge.
    pub end: i64,
    /// The value at the bottom edge.
    pub min: f64,
    /// The value at the top edge.
    pub max: f64,
    /// The box's width.
    pub width: f64,
    /// The box's height.
    pub height: f64,
}

impl Frame {
    /// The horizontal position of `at` (outside the box when `at` is outside `start..=end`).
    pub fn x(&self, at: i64) -> f64 {
        if self.end <= self.start {
            return self.width / 2.0;
        }
        (at - self.start) as f64 / (self.end - self.start) as f64 * self.width
    }

    /// The vertical position of `value`, kept inside the box (0 is the top).
    pub fn y(&self, value: f64) -> f64 {
        let span = self.max - self.min;
        if span <= 0.0 || !value.is_finite() {
            return self.height;
        }
        let y = self.height - (value - self.min) / span * self.height;
        y.clamp(0.0, self.height)
    }

    /// The time under the horizontal position `x` (kept inside `start..=end`).
    pub fn time_at(&self, x: f64) -> i64 {
        if self.width <= 0.0 || !x.is_finite() {
            return self.end;
        }
        let fraction = (x / self.width).clamp(0.0, 1.0);
        self.start + ((self.end - self.start) as f64 * fraction).round() as i64
    }
}

/// A deploy as a chart draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeployMark {
    /// When it was deployed, Unix seconds.
    pub at: i64,
    /// Its horizontal position in the frame.
    pub x: f64,
    /// The version deployed.
    pub version: String,
    /// Whether its version is written above the line: close deploys would overwrite each other's labels, so
    /// only the newest of a cluster gets one (every mark keeps its tooltip and its place in the readout).
    pub labelled: bool,
}

/// The vertical axis for `values` in `unit`: from 0 (or below, for negative values, except ratios) up to the
/// largest value rounded up to a 1, 2 or 5 × 10ⁿ step of the unit, with 4 to 6 ticks. No values, or only
/// zeros, still give an axis a reader recognises (0 to 1 req/s, 0 to 1 %, 0 to 1 s…).
pub fn value_axis(unit: Unit, values: impl IntoIterator<Item = f64>) -> ValueAxis {
    let (mut low, mut high) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((0.0_f64, 0.0_f64), |(low, high), v| {
            (low.min(v), high.max(v))
        });
    if unit == Unit::Ratio {
        low = 0.0;
    }
    if unit == Unit::Count {
        // Counts come in whole numbers: an axis of 0.2 restarts would read as nonsense.
        high = high.max(4.0);
    }
    if high - low <= 0.0 {
        high = low + default_top(unit);
    }
    let scale = Scale::of(unit, low.abs().max(high.abs()));
    let (scaled_low, scaled_high) = (low / scale.divisor, high / scale.divisor);
    let mut step = nice_step((scaled_high - scaled_low) / VALUE_INTERVALS);
    if unit == Unit::Count && scale.divisor == 1.0 {
        step = step.max(1.0);
    }
    let first = (scaled_low / step + 1e-9).floor() as i64;
    let last = (scaled_high / step - 1e-9).ceil() as i64;
    let decimals = decimals_of(step);
    let ticks = (first..=last.max(first + 1))
        .map(|index| {
            let scaled = index as f64 * step;
            ValueTick {
                value: scaled * scale.divisor,
                label: scale.label(&fixed(scaled, decimals), scaled),
            }
        })
        .collect::<Vec<_>>();
    ValueAxis {
        min: ticks.first().map_or(0.0, |t| t.value),
        max: ticks.last().map_or(1.0, |t| t.value),
        ticks,
    }
}

/// `value` as a person reads it in `unit`, to three significant digits: `12.4 req/s`, `0.42 %`, `120 ms`,
/// `1.2 s`, `250 m`, `1.5 cores`, `96 MiB`, `1.2 GiB`, `3`.
pub fn format_value(unit: Unit, value: f64) -> String {
    if !value.is_finite() {
        return "–".to_string();
    }
    let scale = Scale::of(unit, value.abs());
    let scaled = value / scale.divisor;
    scale.label(&significant(scaled), scaled)
}

/// The unit in words, for a chart's heading.
pub fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::PerSecond => "requests per second",
        Unit::Ratio => "percent of requests",
        Unit::Seconds => "seconds",
        Unit::Cores => "CPU cores",
        Unit::Bytes => "bytes",
        Unit::Count => "count per step",
    }
}

/// The labelled moments of a time axis from `start` to `end`: whole minutes, hours or days of UTC, at most
/// eight. A day-spaced axis (7 days) is labelled by dates, a shorter one by clock times, except that a tick at
/// midnight names its date.
pub fn time_ticks(start: i64, end: i64) -> Vec<TimeTick> {
    if end <= start {
        return Vec::new();
    }
    let interval = TIME_INTERVALS
        .into_iter()
        .find(|interval| ticks_within(start, end, *interval) <= TIME_TICKS)
        .unwrap_or(2 * DAY);
    let first = start.div_euclid(interval) * interval
        + if start.rem_euclid(interval) == 0 {
            0
        } else {
            interval
        };
    (0..)
        .map(|index| first + index * interval)
        .take_while(|at| *at <= end)
        .map(|at| TimeTick {
            at,
            label: if interval >= DAY || at.rem_euclid(DAY) == 0 {
                date(at)
            } else {
                clock_time(at)
            },
        })
        .collect()
}

fn ticks_within(start: i64, end: i64, interval: i64) -> usize {
    let first = start.div_euclid(interval) + i64::from(start.rem_euclid(interval) != 0);
    let last = end.div_euclid(interval);
    usize::try_from(last - first + 1).unwrap_or(0)
}

/// The UTC clock time of `at`: `10:40`.
pub fn clock_time(at: i64) -> String {
    let in_day = at.rem_euclid(DAY);
    format!("{:02}:{:02}", in_day / 3_600, in_day % 3_600 / 60)
}

/// The UTC date of `at`: `May 5`.
pub fn date(at: i64) -> String {
    let (_, month, day) = crate::time::civil_from_days(at.div_euclid(DAY));
    let month = usize::try_from(month - 1)
        .ok()
        .and_then(|m| MONTHS.get(m))
        .copied()
        .unwrap_or("?");
    format!("{month} {day}")
}

/// A moment on a chart of `range`, for the readout and a deploy's tooltip: `10:40 UTC`, with its date
/// (`May 5 10:40 UTC`) when the range spans more than a few hours.
pub fn moment(at: i64, range: MetricsRange) -> String {
    if range.seconds() > 6 * 3_600 {
        format!("{} {} UTC", date(at), clock_time(at))
    } else {
        format!("{} UTC", clock_time(at))
    }
}

/// The SVG path (`d`) of `points` in `frame`: one line through consecutive points, broken wherever two are
/// more than [`GAP_STEPS`] steps apart, so missing data is a visible gap and not a straight line across it. A
/// point with no neighbour is a zero-length segment, which a round line cap draws as a dot. Empty for no
/// points.
pub fn series_path(frame: &Frame, points: &[(i64, f64)], step: u64) -> String {
    let gap = step as f64 * GAP_STEPS;
    let mut d = String::new();
    let mut previous: Option<i64> = None;
    let mut run = 0_usize;
    for &(at, value) in points {
        if !value.is_finite() {
            continue;
        }
        let (x, y) = (frame.x(at), frame.y(value));
        let joined = previous.is_some_and(|previous| ((at - previous) as f64) <= gap);
        if joined {
            let _ = write!(d, "L{x:.1},{y:.1}");
            run += 1;
        } else {
            if run == 1 {
                d.push_str("h0");
            }
            let _ = write!(d, "M{x:.1},{y:.1}");
            run = 1;
        }
        previous = Some(at);
    }
    if run == 1 {
        d.push_str("h0");
    }
    d
}

/// The index of the point of `points` (in time order) closest in time to `at`; the earlier on a tie. `None`
/// when there are no points.
pub fn nearest_point(points: &[(i64, f64)], at: i64) -> Option<usize> {
    let after = points.partition_point(|(t, _)| *t < at);
    let candidates = [
        after.checked_sub(1),
        (after < points.len()).then_some(after),
    ];
    candidates
        .into_iter()
        .flatten()
        .min_by_key(|index| (points[*index].0 - at).abs())
}

/// The value `points` have at `at`: the nearest point's, when it is within [`GAP_STEPS`] steps of `at`
/// (further away, the series has no data there).
pub fn value_at(points: &[(i64, f64)], at: i64, step: u64) -> Option<(i64, f64)> {
    let point = points[nearest_point(points, at)?];
    ((point.0 - at).abs() as f64 <= step as f64 * GAP_STEPS).then_some(point)
}

/// The deploys drawn on a chart in `frame`: those at or between its start and end (the rest are dropped),
/// oldest first. Labels are given from the newest back, each at least `label_gap` (in the frame's width) from
/// the previous labelled one.
pub fn deploy_marks(frame: &Frame, deploys: &[DeployMarker], label_gap: f64) -> Vec<DeployMark> {
    let mut marks: Vec<DeployMark> = deploys
        .iter()
        .filter(|deploy| (frame.start..=frame.end).contains(&deploy.at))
        .map(|deploy| DeployMark {
            at: deploy.at,
            x: frame.x(deploy.at),
            version: deploy.version.clone(),
            labelled: false,
        })
        .collect();
    marks.sort_by_key(|mark| mark.at);
    let mut last_label: Option<f64> = None;
    for mark in marks.iter_mut().rev() {
        if last_label.is_none_or(|x| x - mark.x >= label_gap) {
            mark.labelled = true;
            last_label = Some(mark.x);
        }
    }
    marks
}

/// The deploy nearest to `at` within [`GAP_STEPS`] steps, for the readout.
pub fn deploy_near(deploys: &[DeployMarker], at: i64, step: u64) -> Option<&DeployMarker> {
    deploys
        .iter()
        .filter(|deploy| (deploy.at - at).abs() as f64 <= step as f64 * GAP_STEPS)
        .min_by_key(|deploy| (deploy.at - at).abs())
}

/// Where the keyboard's readout goes next: `by` steps from `cursor`, kept between `start` and `end`. The first
/// key press (no cursor yet) shows the newest point, the one a reader came to see.
pub fn move_cursor(cursor: Option<i64>, by: i64, start: i64, end: i64, step: u64) -> i64 {
    match cursor {
        None => end,
        Some(at) => {
            let step = i64::try_from(step).unwrap_or(i64::MAX).max(1);
            at.saturating_add(by.saturating_mul(step))
                .clamp(start, end.max(start))
        }
    }
}

/// A chart in one sentence, for its `aria-label`: "Request rate, last 1 hour, latest 12.4 req/s, 2 deploys".
pub fn summary(chart: &Chart, range: MetricsRange, deploys: usize) -> String {
    let query = chart.query;
    let unit = query.unit();
    let state = if chart.error.is_some() {
        "unavailable".to_string()
    } else if chart.series.iter().all(|s| s.points.is_empty()) {
        "no data".to_string()
    } else {
        let latest = |points: &[(i64, f64)]| {
            points
                .last()
                .map_or_else(|| "no data".to_string(), |(_, v)| format_value(unit, *v))
        };
        match chart.series.as_slice() {
            [only] => format!("latest {}", latest(&only.points)),
            many => format!(
                "latest {}",
                many.iter()
                    .map(|s| format!("{} {}", s.label, latest(&s.points)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    };
    let deploys = match deploys {
        0 => String::new(),
        1 => ", 1 deploy".to_string(),
        n => format!(", {n} deploys"),
    };
    format!(
        "{}, last {}, {state}{deploys}",
        query.title(),
        range.label()
    )
}

/// How a unit's values are scaled and written: divide by `divisor`, then add `suffix`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    divisor: f64,
    suffix: &'static str,
    /// Cores: "1 core", but "1.5 cores".
    singular: Option<&'static str>,
}

impl Scale {
    const fn new(divisor: f64, suffix: &'static str) -> Self {
        Self {
            divisor,
            suffix,
            singular: None,
        }
    }

    /// The scale a value of this size is best written in (zero in the unit's main one: `0 s`, not `0 ms`).
    fn of(unit: Unit, magnitude: f64) -> Self {
        const KIB: f64 = 1024.0;
        match unit {
            Unit::PerSecond if magnitude >= 1_000.0 => Self::new(1_000.0, "k req/s"),
            Unit::PerSecond => Self::new(1.0, " req/s"),
            Unit::Ratio => Self::new(0.01, " %"),
            Unit::Seconds if magnitude > 0.0 && magnitude < 0.001 => Self::new(1e-6, " µs"),
            Unit::Seconds if magnitude > 0.0 && magnitude < 1.0 => Self::new(0.001, " ms"),
            Unit::Seconds => Self::new(1.0, " s"),
            Unit::Cores if magnitude > 0.0 && magnitude < 1.0 => Self::new(0.001, " m"),
            Unit::Cores => Self {
                singular: Some(" core"),
                ..Self::new(1.0, " cores")
            },
            Unit::Bytes => {
                let suffixes = [" B", " KiB", " MiB", " GiB", " TiB", " PiB"];
                let mut divisor = 1.0;
                let mut index = 0;
                while magnitude >= divisor * KIB && index + 1 < suffixes.len() {
                    divisor *= KIB;
                    index += 1;
                }
                Self::new(divisor, suffixes[index])
            }
            Unit::Count if magnitude >= 10_000.0 => Self::new(1_000.0, "k"),
            Unit::Count => Self::new(1.0, ""),
        }
    }

    fn label(&self, number: &str, scaled: f64) -> String {
        let suffix = match self.singular {
            Some(singular) if scaled == 1.0 => singular,
            _ => self.suffix,
        };
        format!("{number}{suffix}")
    }
}

/// The unit's axis when there is nothing to scale it by.
fn default_top(unit: Unit) -> f64 {
    match unit {
        Unit::Ratio => 0.01,
        Unit::Bytes => 1024.0 * 1024.0,
        Unit::Count => 4.0,
        Unit::PerSecond | Unit::Seconds | Unit::Cores => 1.0,
    }
}

/// The smallest of 1, 2, 5 × 10ⁿ at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let magnitude = 10_f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

/// Decimals that write every multiple of `step` exactly (0.2 → 1, 0.05 → 2, 20 → 0).
fn decimals_of(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10() - 1e-9).ceil().clamp(0.0, 9.0) as usize
    }
}

/// `value` with at most `decimals` decimals, trailing zeros dropped (`0.50` → `0.5`, `2.0` → `2`).
fn fixed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    if text == "-0" { "0".to_string() } else { text }
}

/// `value` to three significant digits (`12.4`, `0.42`, `120`, `0.0042`).
fn significant(value: f64) -> String {
    let magnitude = value.abs();
    let decimals = if magnitude == 0.0 || magnitude >= 100.0 {
        0
    } else if magnitude >= 10.0 {
        1
    } else if magnitude >= 1.0 {
        2
    } else {
        (2.0 + (-magnitude.log10()).ceil()).clamp(0.0, 9.0) as usize
    };
    fixed(value, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ChartError, MetricQuery, Series};

    /// 2024-05-01T10:00:00Z.
    const TEN: i64 = 1_714_557_600;
    const MIB: f64 = 1024.0 * 1024.0;
    const GIB: f64 = 1024.0 * MIB;

    fn labels(axis: &ValueAxis) -> Vec<&str> {
        axis.ticks.iter().map(|t| t.label.as_str()).collect()
    }

    fn frame() -> Frame {
        Frame {
            start: TEN,
            end: TEN + 3_600,
            min: 0.0,
            max: 10.0,
            width: 1_000.0,
            height: 100.0,
        }
    }

    #[test]
    fn the_value_axis_starts_at_zero_and_ends_on_a_round_number_above_the_largest_value() {
        let axis = value_axis(Unit::PerSecond, [3.0, 12.4, 7.9]);
        assert_eq!(axis.min, 0.0);
        assert_eq!(axis.max, 15.0);
        assert_eq!(
            labels(&axis),
            ["0 req/s", "5 req/s", "10 req/s", "15 req/s"]
        );
        assert!(axis.ticks.iter().all(|t| t.value <= axis.max));
    }

    #[test]
    fn every_axis_has_four_to_six_ticks_evenly_spaced() {
        for unit in [
            Unit::PerSecond,
            Unit::Ratio,
            Unit::Seconds,
            Unit::Cores,
            Unit::Bytes,
            Unit::Count,
        ] {
            for top in [
                0.0, 0.0007, 0.003, 0.042, 0.2, 0.99, 1.0, 1.01, 3.3, 7.0, 12.4, 99.0, 101.0,
                5_000.0, 1e6, 3.5e9,
            ] {
                let axis = value_axis(unit, [top / 3.0, top]);
                let n = axis.ticks.len();
                assert!((4..=6).contains(&n), "{unit:?} {top}: {:?}", labels(&axis));
                assert!(axis.max >= top, "{unit:?} {top}: top tick below the data");
                let step = axis.ticks[1].value - axis.ticks[0].value;
                for pair in axis.ticks.windows(2) {
                    let gap = pair[1].value - pair[0].value;
                    assert!((gap - step).abs() <= step * 1e-6, "{unit:?} {top}");
                }
                let mut seen = std::collections::BTreeSet::new();
                for label in labels(&axis) {
                    assert!(seen.insert(label), "{unit:?} {top}: {label} twice");
                }
            }
        }
    }

    #[test]
    fn an_empty_or_flat_series_still_gets_a_readable_axis() {
        assert_eq!(
            labels(&value_axis(Unit::Ratio, [])),
            ["0 %", "0.2 %", "0.4 %", "0.6 %", "0.8 %", "1 %"]
        );
        assert_eq!(
            labels(&value_axis(Unit::Seconds, [0.0, 0.0])),
            ["0 s", "0.2 s", "0.4 s", "0.6 s", "0.8 s", "1 s"]
        );
        assert_eq!(
            labels(&value_axis(Unit::Count, [0.0])),
            ["0", "1", "2", "3", "4"]
        );
        // A flat line is drawn against a zero-based axis, so it reads as steady rather than as noise.
        let flat = value_axis(Unit::Cores, [0.25, 0.25, 0.25]);
        assert_eq!(
            labels(&flat),
            ["0 m", "50 m", "100 m", "150 m", "200 m", "250 m"]
        );
    }

    #[test]
    fn a_ratio_axis_never_goes_below_zero_and_reads_in_percent() {
        let axis = value_axis(Unit::Ratio, [-0.01, 0.0042, 0.001]);
        assert_eq!(axis.min, 0.0);
        assert_eq!(
            labels(&axis),
            ["0 %", "0.1 %", "0.2 %", "0.3 %", "0.4 %", "0.5 %"]
        );
    }

    #[test]
    fn axis_labels_share_one_unit_chosen_by_the_top() {
        let memory = value_axis(Unit::Bytes, [96.0 * MIB, 80.0 * MIB]);
        assert_eq!(
            labels(&memory),
            ["0 MiB", "20 MiB", "40 MiB", "60 MiB", "80 MiB", "100 MiB"]
        );
        let large = value_axis(Unit::Bytes, [1.2 * GIB]);
        assert_eq!(labels(&large), ["0 GiB", "0.5 GiB", "1 GiB", "1.5 GiB"]);
        let cpu = value_axis(Unit::Cores, [1.4]);
        assert_eq!(
            labels(&cpu),
            ["0 cores", "0.5 cores", "1 core", "1.5 cores"]
        );
    }

    #[test]
    fn restart_counts_step_by_whole_numbers() {
        let axis = value_axis(Unit::Count, [0.5, 1.0]);
        assert!(axis.ticks.iter().all(|t| t.value.fract() == 0.0));
        assert_eq!(
            labels(&value_axis(Unit::Count, [17.0])).last().copied(),
            Some("20")
        );
    }

    #[test]
    fn values_read_in_the_unit_a_person_expects() {
        let cases = [
            (Unit::PerSecond, 12.4, "12.4 req/s"),
            (Unit::PerSecond, 0.5, "0.5 req/s"),
            (Unit::PerSecond, 1_520.0, "1.52k req/s"),
            (Unit::Ratio, 0.0042, "0.42 %"),
            (Unit::Ratio, 0.0, "0 %"),
            (Unit::Ratio, 1.0, "100 %"),
            (Unit::Seconds, 0.12, "120 ms"),
            (Unit::Seconds, 1.2, "1.2 s"),
            (Unit::Seconds, 0.0004, "400 µs"),
            (Unit::Seconds, 0.0, "0 s"),
            (Unit::Cores, 0.25, "250 m"),
            (Unit::Cores, 1.5, "1.5 cores"),
            (Unit::Cores, 1.0, "1 core"),
            (Unit::Bytes, 96.0 * MIB, "96 MiB"),
            (Unit::Bytes, 1.2 * GIB, "1.2 GiB"),
            (Unit::Bytes, 512.0, "512 B"),
            (Unit::Count, 3.0, "3"),
            (Unit::Count, 0.5, "0.5"),
            (Unit::PerSecond, f64::NAN, "–"),
        ];
        for (unit, value, expected) in cases {
            assert_eq!(format_value(unit, value), expected, "{unit:?} {value}");
        }
    }

    #[test]
    fn values_keep_three_significant_digits() {
        assert_eq!(format_value(Unit::PerSecond, 123.456), "123 req/s");
        assert_eq!(format_value(Unit::PerSecond, 12.345), "12.3 req/s");
        assert_eq!(format_value(Unit::PerSecond, 1.234), "1.23 req/s");
        assert_eq!(format_value(Unit::PerSecond, 0.01234), "0.0123 req/s");
        assert_eq!(format_value(Unit::Seconds, 0.2346), "235 ms");
    }

    #[test]
    fn an_hour_is_labelled_every_ten_minutes_in_utc() {
        let ticks = time_ticks(TEN + 15, TEN + 3_600);
        let labels: Vec<_> = ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            ["10:10", "10:20", "10:30", "10:40", "10:50", "11:00"]
        );
        assert!(ticks.iter().all(|t| t.at % 600 == 0));
    }

    #[test]
    fn longer_ranges_space_their_labels_wider_and_a_week_is_labelled_by_day() {
        let six = time_ticks(TEN - 6 * 3_600 + 90, TEN);
        assert_eq!(six.len(), 6);
        assert_eq!(six[0].label, "05:00");
        // 24 hours crosses midnight: that tick names the day instead of "00:00".
        let day = time_ticks(TEN - DAY + 360, TEN);
        assert!(day.len() <= 8 && day.len() >= 4, "{day:?}");
        assert!(day.iter().any(|t| t.label == "May 1"), "{day:?}");
        assert!(day.iter().all(|t| t.label != "00:00"));
        let week = time_ticks(TEN - 7 * DAY + 2_520, TEN);
        let labels: Vec<_> = week.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Apr 25", "Apr 26", "Apr 27", "Apr 28", "Apr 29", "Apr 30", "May 1"
            ]
        );
    }

    #[test]
    fn the_readout_dates_moments_only_on_long_ranges() {
        assert_eq!(moment(TEN + 2_520, MetricsRange::Hour), "10:42 UTC");
        assert_eq!(moment(TEN + 2_520, MetricsRange::SixHours), "10:42 UTC");
        assert_eq!(moment(TEN + 2_520, MetricsRange::Week), "May 1 10:42 UTC");
        assert_eq!(date(0), "Jan 1");
        assert_eq!(date(951_782_400), "Feb 29");
    }

    #[test]
    fn a_series_spans_the_box_from_its_first_to_its_last_point() {
        let frame = frame();
        let d = series_path(
            &frame,
            &[(TEN, 0.0), (TEN + 1_800, 5.0), (TEN + 3_600, 10.0)],
            1_800,
        );
        assert_eq!(d, "M0.0,100.0L500.0,50.0L1000.0,0.0");
    }

    #[test]
    fn missing_data_breaks_the_line_instead_of_bridging_it() {
        let frame = frame();
        let step = 15;
        // 0, 15, 30: joined. 90 is four steps later: a new line starts. 105 is one step on: joined.
        let points = [
            (TEN, 1.0),
            (TEN + 15, 1.0),
            (TEN + 30, 1.0),
            (TEN + 90, 2.0),
            (TEN + 105, 2.0),
        ];
        let d = series_path(&frame, &points, step);
        assert_eq!(d.matches('M').count(), 2, "{d}");
        assert_eq!(d.matches('L').count(), 3, "{d}");
        // One and a half steps apart is still one line; a little more is not.
        assert_eq!(
            series_path(&frame, &[(TEN, 1.0), (TEN + 22, 1.0)], step)
                .matches('M')
                .count(),
            1
        );
        assert_eq!(
            series_path(&frame, &[(TEN, 1.0), (TEN + 23, 1.0)], step)
                .matches('M')
                .count(),
            2
        );
    }

    #[test]
    fn a_lone_point_is_still_drawn_and_no_points_draw_nothing() {
        let frame = frame();
        let d = series_path(
            &frame,
            &[(TEN, 1.0), (TEN + 600, 2.0), (TEN + 615, 3.0)],
            15,
        );
        assert!(d.starts_with("M0.0,90.0h0M"), "{d}");
        assert_eq!(
            series_path(&frame, &[(TEN + 600, 2.0)], 15),
            "M166.7,80.0h0"
        );
        assert_eq!(series_path(&frame, &[], 15), "");
    }

    #[test]
    fn values_above_the_axis_stay_inside_the_box() {
        let frame = frame();
        assert_eq!(frame.y(50.0), 0.0);
        assert_eq!(frame.y(-3.0), 100.0);
    }

    #[test]
    fn hovering_finds_the_nearest_point_in_time() {
        let points = [
            (TEN, 1.0),
            (TEN + 15, 2.0),
            (TEN + 30, 3.0),
            (TEN + 90, 4.0),
        ];
        assert_eq!(nearest_point(&points, TEN - 100), Some(0));
        assert_eq!(nearest_point(&points, TEN + 16), Some(1));
        assert_eq!(nearest_point(&points, TEN + 25), Some(2));
        assert_eq!(nearest_point(&points, TEN + 1_000), Some(3));
        assert_eq!(nearest_point(&[], TEN), None);
        // In the middle of a gap there is no value to read.
        assert_eq!(value_at(&points, TEN + 60, 15), None);
        assert_eq!(value_at(&points, TEN + 80, 15), Some((TEN + 90, 4.0)));
        // The pointer's position maps back to a time.
        let frame = frame();
        assert_eq!(frame.time_at(500.0), TEN + 1_800);
        assert_eq!(frame.time_at(-20.0), TEN);
        assert_eq!(frame.time_at(5_000.0), TEN + 3_600);
    }

    #[test]
    fn deploys_outside_the_range_are_not_drawn_and_close_ones_share_a_label() {
        let deploy = |at: i64, version: &str| DeployMarker {
            at,
            version: version.into(),
            previous: None,
        };
        let deploys = [
            deploy(TEN - 60, "old1111"),
            deploy(TEN + 1_800, "aaa1111"),
            deploy(TEN + 1_830, "bbb2222"),
            deploy(TEN + 3_600, "ccc3333"),
            deploy(TEN + 3_700, "future1"),
        ];
        let marks = deploy_marks(&frame(), &deploys, 80.0);
        let shown: Vec<_> = marks
            .iter()
            .map(|m| (m.version.as_str(), m.x.round(), m.labelled))
            .collect();
        assert_eq!(
            shown,
            [
                ("aaa1111", 500.0, false),
                ("bbb2222", 508.0, true),
                ("ccc3333", 1_000.0, true),
            ]
        );
        assert_eq!(
            deploy_near(&deploys, TEN + 1_820, 15).map(|d| d.version.as_str()),
            Some("bbb2222")
        );
        assert_eq!(deploy_near(&deploys, TEN + 900, 15), None);
    }

    #[test]
    fn arrow_keys_start_at_the_newest_point_and_stay_inside_the_range() {
        let (start, end) = (TEN, TEN + 3_600);
        assert_eq!(move_cursor(None, -1, start, end, 15), end);
        assert_eq!(move_cursor(Some(end), -1, start, end, 15), end - 15);
        assert_eq!(move_cursor(Some(end), 1, start, end, 15), end);
        assert_eq!(move_cursor(Some(start + 5), -1, start, end, 15), start);
    }

    #[test]
    fn a_chart_describes_itself_in_one_sentence() {
        let series = |label: &str, points: Vec<(i64, f64)>| Series {
            label: label.into(),
            points,
        };
        let mut chart = Chart {
            query: MetricQuery::RequestRate,
            series: vec![series("payments", vec![(TEN, 3.0), (TEN + 15, 12.4)])],
            error: None,
        };
        assert_eq!(
            summary(&chart, MetricsRange::Hour, 0),
            "Request rate, last 1 hour, latest 12.4 req/s"
        );
        assert_eq!(
            summary(&chart, MetricsRange::SixHours, 2),
            "Request rate, last 6 hours, latest 12.4 req/s, 2 deploys"
        );
        chart.series.push(series("canary", vec![(TEN, 0.5)]));
        assert_eq!(
            summary(&chart, MetricsRange::Hour, 1),
            "Request rate, last 1 hour, latest payments 12.4 req/s, canary 0.5 req/s, 1 deploy"
        );
        chart.series.clear();
        assert_eq!(
            summary(&chart, MetricsRange::Day, 0),
            "Request rate, last 24 hours, no data"
        );
        chart.error = Some(ChartError {
            message: "The metrics store is unreachable".into(),
            since: "2024-05-01T10:42:00Z".into(),
        });
        assert_eq!(
            summary(&chart, MetricsRange::Day, 0),
            "Request rate, last 24 hours, unavailable"
        );
    }
}
