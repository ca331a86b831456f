//! The deterministic generator every metrics path shares: the backfill, the live `/metrics` endpoint
//! and the built-in PromQL subset all call [`Generator::sample`], so history and live values agree.
//!
//! Counters are closed-form integrals of their rates (a daily wave around a per-service base) plus a
//! bounded piecewise-linear noise whose slope never exceeds the smallest rate, so they are monotonic
//! without summing over history, and a sample at any instant costs the same.
//!
//! The story the charts tell: `recommendations` crash-loops in dev (restarts, a saw-tooth of memory, 15 %
//! 5xx), `payments` in prod slows down for a while every few hours, and from the instant of the world's
//! bad deploy ([`crate::world::Timeline::bad_deploy`], given by [`Generator::with_bad_deploy`]) that
//! service's 5xx share steps up from a fraction of a percent to [`BAD_DEPLOY_ERRORS`]. A status class's
//! counter integrates its share piecewise (before and after the step), so it stays closed-form and
//! monotonic, and the total request rate does not change.
//!
//! The service level objectives seeded on the management cluster ([`crate::fixtures::slo`]) read these
//! series, so the story is sized for them: healthy services fail a few hundredths of a percent of their
//! requests and answer all but a sliver within their latency thresholds (burn rates well under 1), the bad
//! deploy burns `payments`' 99.5 % availability budget 16 times too fast, and
//! [`crate::world::SLOW_LATENCY_SERVICE`] in [`crate::world::SLOW_LATENCY_ENVIRONMENT`] has a larger slow
//! tail ([`SLOW_LATENCY_TAIL`] of its requests, all day), so its latency objective burns slowly (about 1.9)
//! over every window.

use std::collections::BTreeMap;
use std::f64::consts::PI;

use crate::world::{ENVIRONMENTS, SLOW_LATENCY_ENVIRONMENT, SLOW_LATENCY_SERVICE, ServicePlan};

/// Seconds in the daily traffic wave.
const DAY: f64 = 86_400.0;
/// How far the daily wave swings the rate around its base (±40 %).
const WAVE: f64 = 0.4;
/// Seconds between the knots of the piecewise-linear noise.
const KNOT: f64 = 60.0;
/// Histogram bucket bounds, Prometheus client defaults.
pub(crate) const BUCKETS: [f64; 11] = [
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    f64::INFINITY,
];
/// Pods per service and environment.
const PODS: usize = 2;
/// Seconds between restarts of a crash-looping container (CrashLoopBackOff's five-minute cap).
const CRASH_EVERY: f64 = 300.0;
/// Seconds between the payments/prod latency bumps.
const BUMP_EVERY: f64 = 3.0 * 3600.0;
/// How long each latency bump lasts.
const BUMP_WIDTH: f64 = 40.0 * 60.0;
/// Share of requests in the slow tail.
const SLOW_SHARE: f64 = 0.05;
/// Share of requests in the slow tail of the slow-latency service ([`crate::world::SLOW_LATENCY_SERVICE`]):
/// twice the usual, so about 1.9 % of its requests take longer than its latency objective's 0.5 s.
pub const SLOW_LATENCY_TAIL: f64 = 0.10;
/// The slow-latency service's median latency, fixed rather than drawn from the seed so its objective burns
/// at the same rate whatever the seed (its slow tail's median is [`SLOW_FACTOR`] times this, 0.32 s).
const SLOW_LATENCY_MEDIAN: f64 = 0.04;
/// How much slower the slow tail is than the median.
const SLOW_FACTOR: f64 = 8.0;
/// How much slower requests are during a latency bump.
const BUMP_FACTOR: f64 = 10.0;
/// Spread (σ of the log) of every latency distribution.
const SIGMA: f64 = 0.5;
/// Share of requests answered with a 5xx after the bad deploy.
pub const BAD_DEPLOY_ERRORS: f64 = 0.08;

/// Which quantity a series measures; its labels say for whom.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Measure {
    /// `http_requests_total{code}`; the index is into [`CODES`].
    Requests(usize),
    /// `http_request_duration_seconds_bucket{le}`; the index is into [`BUCKETS`].
    Bucket(usize),
    /// `http_request_duration_seconds_sum`.
    DurationSum,
    /// `http_request_duration_seconds_count`.
    DurationCount,
    /// `container_cpu_usage_seconds_total` of one pod.
    Cpu(usize),
    /// `container_memory_working_set_bytes` of one pod.
    Memory(usize),
    /// `kube_pod_container_status_restarts_total` of one pod.
    Restarts(usize),
}

/// Status classes requests are counted by, as the `code` label.
const CODES: [&str; 3] = ["2xx", "4xx", "5xx"];

/// One time series: its metric name, labels, and which profile and quantity produce it.
#[derive(Debug, Clone)]
pub struct Series {
    /// The metric name.
    pub name: &'static str,
    /// Labels, `__name__` excluded.
    pub labels: BTreeMap<String, String>,
    profile: usize,
    measure: Measure,
}

impl Series {
    /// Whether the value only ever grows (so rate/increase make sense and history must match).
    pub fn is_counter(&self) -> bool {
        !matches!(self.measure, Measure::Memory(_))
    }
}

/// How one service behaves in one environment.
#[derive(Debug, Clone)]
struct Profile {
    /// The service.
    service: &'static str,
    /// The environment.
    environment: &'static str,
    /// Requests per second at the daily mean.
    rate: f64,
    /// Share of requests per status class, summing to 1.
    shares: [f64; 3],
    /// A bad deploy: from this Unix time on, the shares are these instead.
    step: Option<(f64, [f64; 3])>,
    /// Median latency of ordinary requests, in seconds.
    median: f64,
    /// Share of requests in the slow tail ([`SLOW_FACTOR`] times slower).
    slow_share: f64,
    /// Where in the day the traffic peaks, as a phase.
    phase: f64,
    /// CPU cores per pod at the daily mean.
    cpu: f64,
    /// Working-set bytes per pod.
    memory: f64,
    /// The container crash-loops: restarts climb, memory saw-tooths, more 5xx.
    crash_looping: bool,
    /// Requests slow down for a while every few hours.
    latency_bumps: bool,
    /// A per-profile key for noise.
    key: u64,
}

/// A deterministic source of every series' value at any instant.
#[derive(Debug, Clone)]
pub struct Generator {
    /// Counters count from here (when the sandbox's pods "started"); before it they are zero.
    origin: f64,
    profiles: Vec<Profile>,
    series: Vec<Series>,
}

impl Generator {
    /// Series for every service in every environment, from `seed`; counters start at `origin`
    /// (Unix seconds).
    pub fn new(seed: u64, origin: f64, services: &[ServicePlan]) -> Self {
        let mut profiles = Vec::new();
        let mut series = Vec::new();
        for plan in services {
            for environment in ENVIRONMENTS {
                let key = hash(seed, &[plan.name, environment]);
                let unit = |salt: u64| unit(mix(key ^ salt));
                let prod = environment == "prod";
                let crash_looping = plan.name == "recommendations" && environment == "dev";
                let slow_latency =
                    plan.name == SLOW_LATENCY_SERVICE && environment == SLOW_LATENCY_ENVIRONMENT;
                let base = 5.0 + 55.0 * unit(1);
                // Healthy services fail one to four requests in ten thousand: well inside even a 99.9 %
                // availability objective (a burn rate of at most 0.4).
                let five_xx = if crash_looping {
                    0.15
                } else {
                    0.0001 + 0.0003 * unit(2)
                };
                let four_xx = 0.02 + 0.03 * unit(3);
                let profile = Profile {
                    service: plan.name,
                    environment,
                    rate: if prod { base } else { base / 15.0 },
                    shares: [1.0 - five_xx - four_xx, four_xx, five_xx],
                    step: None,
                    median: if slow_latency {
                        SLOW_LATENCY_MEDIAN
                    } else {
                        0.02 + 0.08 * unit(4)
                    },
                    slow_share: if slow_latency {
                        SLOW_LATENCY_TAIL
                    } else {
                        SLOW_SHARE
                    },
                    phase: 2.0 * PI * unit(5),
                    cpu: if prod {
                        0.2 + 0.6 * unit(6)
                    } else {
                        0.05 + 0.1 * unit(6)
                    },
                    memory: (96.0 + 320.0 * unit(7)) * 1024.0 * 1024.0,
                    crash_looping,
                    latency_bumps: plan.name == "payments" && prod,
                    key,
                };
                let index = profiles.len();
                profiles.push(profile);
                let labels = |extra: &[(&str, String)]| {
                    let base = [
                        ("service", plan.name.to_owned()),
                        ("environment", environment.to_owned()),
                        ("namespace", plan.name.to_owned()),
                    ];
                    base.into_iter()
                        .chain(extra.iter().cloned())
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<BTreeMap<String, String>>()
                };
                let mut push = |name: &'static str, measure: Measure, extra: &[(&str, String)]| {
                    series.push(Series {
                        name,
                        labels: labels(extra),
                        profile: index,
                        measure,
                    });
                };
                for (code, class) in CODES.iter().enumerate() {
                    push(
                        "http_requests_total",
                        Measure::Requests(code),
                        &[("code", (*class).to_owned())],
                    );
                }
                for (bucket, le) in BUCKETS.iter().enumerate() {
                    push(
                        "http_request_duration_seconds_bucket",
                        Measure::Bucket(bucket),
                        &[("le", format_value(*le))],
                    );
                }
                push(
                    "http_request_duration_seconds_sum",
                    Measure::DurationSum,
                    &[],
                );
                push(
                    "http_request_duration_seconds_count",
                    Measure::DurationCount,
                    &[],
                );
                for pod in 0..PODS {
                    let pod_labels = [
                        ("pod", pod_name(plan.name, key, pod)),
                        ("container", plan.name.to_owned()),
                    ];
                    push(
                        "container_cpu_usage_seconds_total",
                        Measure::Cpu(pod),
                        &pod_labels,
                    );
                    push(
                        "container_memory_working_set_bytes",
                        Measure::Memory(pod),
                        &pod_labels,
                    );
                    push(
                        "kube_pod_container_status_restarts_total",
                        Measure::Restarts(pod),
                        &pod_labels,
                    );
                }
            }
        }
        Self {
            origin,
            profiles,
            series,
        }
    }

    /// The same series, except that from Unix time `at` on [`BAD_DEPLOY_ERRORS`] of `service`'s requests
    /// in `environment` fail (taken from its 2xx); the 4xx share and the total rate stay as they were.
    /// The sandbox passes the world's [`crate::world::Timeline::bad_deploy`], so the jump lines up with
    /// Argo CD's history.
    pub fn with_bad_deploy(mut self, service: &str, environment: &str, at: f64) -> Self {
        for p in &mut self.profiles {
            if p.service == service && p.environment == environment {
                let [_, four_xx, _] = p.shares;
                let shares = [
                    1.0 - BAD_DEPLOY_ERRORS - four_xx,
                    four_xx,
                    BAD_DEPLOY_ERRORS,
                ];
                p.step = Some((at, shares));
            }
        }
        self
    }

    /// Every series, in a stable order.
    pub fn series(&self) -> &[Series] {
        &self.series
    }

    /// When counters start, in Unix seconds.
    pub fn origin(&self) -> f64 {
        self.origin
    }

    /// The value of `series` at Unix time `t` (seconds). Counters are non-decreasing in `t`.
    pub fn sample(&self, series: &Series, t: f64) -> f64 {
        let Some(p) = self.profiles.get(series.profile) else {
            return f64::NAN;
        };
        let o = self.origin;
        let t = t.max(o);
        match series.measure {
            Measure::Requests(code) => self.requests(p, code, t),
            Measure::DurationCount => self.count(p, t),
            Measure::Bucket(bucket) => {
                let le = BUCKETS.get(bucket).copied().unwrap_or(f64::INFINITY);
                let fast = lognormal_cdf(le, p.median);
                let slow = lognormal_cdf(le, p.median * SLOW_FACTOR);
                let bumped = lognormal_cdf(le, p.median * BUMP_FACTOR);
                let mixed = (1.0 - p.slow_share) * fast + p.slow_share * slow;
                // Requests caught in a bump moved from the fast distribution to the bumped one.
                let moved = self.bumped(p, t) * (1.0 - p.slow_share) * (fast - bumped);
                (self.count(p, t) * mixed - moved).max(0.0)
            }
            Measure::DurationSum => {
                let mean = |median: f64| median * (SIGMA * SIGMA / 2.0).exp();
                let mixed = (1.0 - p.slow_share) * mean(p.median)
                    + p.slow_share * mean(p.median * SLOW_FACTOR);
                let extra = (1.0 - p.slow_share) * (mean(p.median * BUMP_FACTOR) - mean(p.median));
                self.count(p, t) * mixed + self.bumped(p, t) * extra
            }
            Measure::Cpu(pod) => {
                let key = mix(p.key ^ 0x100 ^ pod as u64);
                let cores = p.cpu * (1.0 + 0.1 * unit(key));
                (integral(cores, p.phase, o, t) + noise(key, cores, t) - noise(key, cores, o))
                    .max(0.0)
            }
            Measure::Memory(pod) => {
                let key = mix(p.key ^ 0x200 ^ pod as u64);
                if p.crash_looping {
                    // Leaks until the container is killed, then starts over.
                    let cycle = ((t - o) / CRASH_EVERY + unit(key)).fract();
                    p.memory * (0.3 + 0.9 * cycle)
                } else {
                    let wave = (2.0 * PI * t / DAY + p.phase).sin();
                    p.memory * (1.0 + 0.05 * wave + 0.04 * (knots(key, t) - 0.5))
                }
            }
            Measure::Restarts(pod) => {
                let key = mix(p.key ^ 0x300 ^ pod as u64);
                let every = if p.crash_looping {
                    CRASH_EVERY
                } else {
                    2.0 * DAY
                };
                ((t - o) / every + unit(key)).floor()
            }
        }
    }

    /// Requests of every status class since the origin: the histogram's count.
    fn count(&self, p: &Profile, t: f64) -> f64 {
        (0..CODES.len()).map(|c| self.requests(p, c, t)).sum()
    }

    /// Requests of one status class since the origin.
    fn requests(&self, p: &Profile, code: usize, t: f64) -> f64 {
        let key = mix(p.key ^ 0x10 ^ code as u64);
        // Requests of this class between `from` and `to` while it has `share` of the traffic: each
        // piece is monotonic on its own, and pieces meet where one ends and the next begins.
        let piece = |shares: &[f64; 3], from: f64, to: f64| {
            if to <= from {
                return 0.0;
            }
            let rate = p.rate * shares.get(code).copied().unwrap_or(0.0);
            integral(rate, p.phase, from, to) + noise(key, rate, to) - noise(key, rate, from)
        };
        let o = self.origin;
        let total = match p.step {
            Some((at, after)) if t > at => {
                let at = at.max(o);
                piece(&p.shares, o, at) + piece(&after, at, t)
            }
            _ => piece(&p.shares, o, t),
        };
        total.max(0.0)
    }

    /// Requests that fell into a latency bump since the origin (zero for profiles without bumps).
    fn bumped(&self, p: &Profile, t: f64) -> f64 {
        if !p.latency_bumps {
            return 0.0;
        }
        // The bump's peak rate stays below the lowest request rate so every bucket stays monotonic.
        let peak = 0.35 * p.rate * (1.0 - WAVE);
        let offset = BUMP_EVERY * unit(mix(p.key ^ 0x400));
        let cumulative = |t: f64| {
            let u = t - offset;
            let whole = (u / BUMP_EVERY).floor();
            let within = u - whole * BUMP_EVERY;
            let partial = if within < BUMP_WIDTH {
                let wave = BUMP_WIDTH / (4.0 * PI) * (2.0 * PI * within / BUMP_WIDTH).sin();
                peak * (within / 2.0 - wave)
            } else {
                peak * BUMP_WIDTH / 2.0
            };
            whole * peak * BUMP_WIDTH / 2.0 + partial
        };
        cumulative(t) - cumulative(self.origin)
    }
}

/// ∫ₒᵗ base·(1 + WAVE·sin(2πs/DAY + phase)) ds.
fn integral(base: f64, phase: f64, o: f64, t: f64) -> f64 {
    let omega = 2.0 * PI / DAY;
    base * ((t - o) - WAVE / omega * ((omega * t + phase).cos() - (omega * o + phase).cos()))
}

/// Bounded noise to add to a counter of mean rate `rate`: its slope stays under half the lowest rate,
/// so the counter never goes down.
fn noise(key: u64, rate: f64, t: f64) -> f64 {
    let amplitude = 0.5 * rate * (1.0 - WAVE) * KNOT;
    amplitude * knots(key, t)
}

/// A piecewise-linear function in [0, 1] through hashed values at every `KNOT` seconds.
fn knots(key: u64, t: f64) -> f64 {
    let k = (t / KNOT).floor();
    let frac = t / KNOT - k;
    let at = |i: f64| {
        unit(mix(
            key ^ (i as i64 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ))
    };
    at(k) * (1.0 - frac) + at(k + 1.0) * frac
}

/// P(latency ≤ le) for a log-normal latency with this median.
fn lognormal_cdf(le: f64, median: f64) -> f64 {
    if le.is_infinite() {
        return 1.0;
    }
    let z = (le.ln() - median.ln()) / (SIGMA * std::f64::consts::SQRT_2);
    0.5 * (1.0 + erf(z))
}

/// Abramowitz & Stegun 7.1.26 (error below 1.5e-7): enough for plausible buckets, no extra crate.
fn erf(x: f64) -> f64 {
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    sign * (1.0 - poly * (-x * x).exp())
}

/// SplitMix64's finaliser: a good 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform value in [0, 1) from a hash.
fn unit(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// FNV-1a of the parts, mixed with the seed: stable across runs and platforms.
fn hash(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ mix(seed);
    for part in parts {
        for byte in part.bytes().chain([0xff]) {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    mix(h)
}

/// A pod name shaped like a ReplicaSet's: `<svc>-<10 chars>-<5 chars>`.
fn pod_name(service: &str, key: u64, pod: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let word = |mut bits: u64, len: usize| -> String {
        (0..len)
            .map(|_| {
                let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize];
                bits /= ALPHABET.len() as u64;
                c as char
            })
            .collect()
    };
    format!(
        "{service}-{}-{}",
        word(mix(key ^ 0x500), 10),
        word(mix(key ^ 0x600 ^ pod as u64), 5)
    )
}

/// A sample value (or `le` bound) as Prometheus' query API writes it (`jsonutil.MarshalValue`: Go's
/// `strconv.FormatFloat` with the shortest round-trip digits): `NaN`, `+Inf`, `-Inf`; plain decimals,
/// except below 1e-6 or from 1e21 in magnitude, which get Go's exponent form (`1e-07`, `1.5e+21`).
/// The text exposition and promtool read either form.
pub(crate) fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else if v != 0.0 && (v.abs() < 1e-6 || v.abs() >= 1e21) {
        // Rust writes `1.5e-7`; Go writes the exponent signed and with at least two digits.
        let text = format!("{v:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(digits) => ('-', digits),
            None => ('+', exponent),
        };
        format!("{mantissa}e{sign}{digits:0>2}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::SERVICES;

    #[test]
    fn counters_never_go_down_and_buckets_are_cumulative() {
        let origin = 1_700_000_000.0;
        // A bad deploy between two samples, so the loop checks counters across it too.
        let generator = Generator::new(7, origin, &SERVICES).with_bad_deploy(
            "payments",
            "prod",
            origin + 7400.5,
        );
        for series in generator.series().iter().filter(|s| s.is_counter()) {
            let mut last = 0.0;
            let mut t = origin - 100.0;
            while t < origin + 6.0 * 3600.0 {
                let v = generator.sample(series, t);
                assert!(
                    v >= last - 1e-9,
                    "{} {:?} fell at {t}",
                    series.name,
                    series.labels
                );
                last = v;
                t += 37.0;
            }
        }
        let payments: Vec<&Series> = generator
            .series()
            .iter()
            .filter(|s| {
                s.name == "http_request_duration_seconds_bucket"
                    && s.labels.get("service").map(String::as_str) == Some("payments")
                    && s.labels.get("environment").map(String::as_str) == Some("prod")
            })
            .collect();
        let t = origin + 5000.0;
        let values: Vec<f64> = payments.iter().map(|s| generator.sample(s, t)).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1] + 1e-9), "{values:?}");
    }

    /// The 5xx share of `service` in `environment` over the `window` seconds before `t`.
    fn error_ratio(
        generator: &Generator,
        service: &str,
        environment: &str,
        t: f64,
        window: f64,
    ) -> f64 {
        let (mut errors, mut all) = (0.0, 0.0);
        for series in generator.series().iter().filter(|s| {
            s.name == "http_requests_total"
                && s.labels["service"] == service
                && s.labels["environment"] == environment
        }) {
            let delta = generator.sample(series, t) - generator.sample(series, t - window);
            all += delta;
            if series.labels["code"] == "5xx" {
                errors += delta;
            }
        }
        errors / all
    }

    #[test]
    fn the_error_ratio_steps_up_at_the_bad_deploy_and_nowhere_else() {
        let origin = 1_700_000_000.0;
        let at = origin + 5.0 * 3600.0 + 17.0;
        let plain = Generator::new(7, origin, &SERVICES);
        let bad = plain.clone().with_bad_deploy("payments", "prod", at);
        let window = 600.0;
        assert!(error_ratio(&bad, "payments", "prod", at, window) < 0.01);
        let after = error_ratio(&bad, "payments", "prod", at + window, window);
        assert!((0.07..0.09).contains(&after), "{after}");
        // Hours later it still fails, and the counters are continuous at the step.
        assert!(error_ratio(&bad, "payments", "prod", at + 3.0 * 3600.0, 3600.0) > 0.07);
        for series in bad.series().iter().filter(|s| s.is_counter()) {
            let (before, after) = (bad.sample(series, at - 1e-3), bad.sample(series, at + 1e-3));
            assert!(
                (after - before).abs() < 1.0,
                "{} {:?}",
                series.name,
                series.labels
            );
        }
        // Everything else, and everything before the step, is untouched.
        for series in plain.series() {
            let same_service =
                series.labels["service"] == "payments" && series.labels["environment"] == "prod";
            for t in [origin + 60.0, at - 1.0, at + 600.0, at + 7200.0] {
                if !(same_service && t > at && series.name.starts_with("http_")) {
                    assert_eq!(
                        plain.sample(series, t),
                        bad.sample(series, t),
                        "{} {:?} at {t}",
                        series.name,
                        series.labels
                    );
                }
            }
        }
        // The total rate does not change: only the 5xx share does.
        let count = |g: &Generator, t: f64| {
            g.series()
                .iter()
                .filter(|s| {
                    s.name == "http_request_duration_seconds_count"
                        && s.labels["service"] == "payments"
                        && s.labels["environment"] == "prod"
                })
                .map(|s| g.sample(s, t))
                .sum::<f64>()
        };
        let (before, after) = (count(&plain, at + 3600.0), count(&bad, at + 3600.0));
        assert!(
            (after - before).abs() / before < 0.01,
            "{before} vs {after}"
        );
    }

    #[test]
    fn values_are_written_as_prometheus_writes_them() {
        let cases = [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.005, "0.005"),
            (-2.5, "-2.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-6, "0.000001"),
            (1e-7, "1e-07"),
            (-1.5e-7, "-1.5e-07"),
            (1e-300, "1e-300"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.2345e22, "1.2345e+22"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_value(value), expected, "{value:?}");
        }
    }

    #[test]
    fn the_crash_looping_service_restarts_every_few_minutes() {
        let origin = 1_700_000_000.0;
        let generator = Generator::new(7, origin, &SERVICES);
        let restarts = |service: &str, environment: &str| {
            generator
                .series()
                .iter()
                .filter(|s| {
                    s.name == "kube_pod_container_status_restarts_total"
                        && s.labels.get("service").map(String::as_str) == Some(service)
                        && s.labels.get("environment").map(String::as_str) == Some(environment)
                })
                .map(|s| generator.sample(s, origin + 3600.0) - generator.sample(s, origin))
                .sum::<f64>()
        };
        assert!(restarts("recommendations", "dev") >= 20.0);
        assert!(restarts("payments", "prod") <= 2.0);
    }
}
