//! The Metrics tab of a service page (`?tab=metrics&env=…&range=…`): one chart per fixed query
//! (`shared::metrics::MetricQuery`), every deploy of the range marked on each. The drawing is
//! `shared::metrics::chart`; this module only lays its answers out as SVG and HTML. Its code is a separate
//! wasm module, fetched the first time the tab opens, so the Overview's first load does not carry it.

use leptos::lazy;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use shared::metrics::chart::{
    self, DeployMark, Frame, TimeTick, ValueAxis, deploy_marks, deploy_near, format_value,
    move_cursor, series_path, time_ticks, unit_name, value_at, value_axis,
};
use shared::metrics::{DeployMarker, MetricQuery, MetricsRange, MetricsView, Series, Unit};
use shared::url::encode_query_value;
use shared::{ApiError, ErrorCode};
use wasm_bindgen::JsCast as _;

use crate::api;
use crate::live::{LiveFleet, fetched};
use crate::pages::show_error;
use crate::pages::slo::SloPanel;

/// The plot's own coordinates: the SVG is stretched to the card (lines keep their width through
/// `vector-effect`), and every label is HTML placed at a percentage of these.
pub const PLOT_WIDTH: f64 = 1_000.0;
/// The plot's own height (see [`PLOT_WIDTH`]).
pub const PLOT_HEIGHT: f64 = 200.0;
/// Two deploy labels closer than this (in plot units, so about 55 px on a phone) would overlap: only the newer
/// is written.
pub const LABEL_GAP: f64 = 180.0;
/// Series colours cycle through this many CSS classes (`series-0` …).
const SERIES_COLOURS: usize = 4;

/// The Metrics tab for `name` in the picker's environment (`env`), over `?range=`.
#[component]
pub fn MetricsTab(name: Memo<String>, env: Memo<Option<String>>) -> impl IntoView {
    Suspend::new(metrics_tab(name, env))
}

#[lazy]
fn metrics_tab(name: Memo<String>, env: Memo<Option<String>>) -> AnyView {
    view! { <LoadedMetricsTab name env /> }.into_any()
}

/// Where the tab stands, apart from the numbers: the grid is rebuilt only when this changes, so a refresh
/// patches the charts in place and keyboard focus on one survives it.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    Loading,
    /// The service runs nowhere yet.
    NoEnvironment,
    Failed(ApiError),
    Loaded,
}

#[component]
fn LoadedMetricsTab(name: Memo<String>, env: Memo<Option<String>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let query = use_query_map();
    let range = Memo::new(move |_| {
        query.with(|q| {
            q.get("range")
                .and_then(|r| MetricsRange::parse(&r))
                .unwrap_or_default()
        })
    });
    // The picker's environment; with "All environments", prod when the service runs there, else its first.
    let environment = Memo::new(move |_| {
        env.get().or_else(|| {
            live.fleet.with(|fleet| {
                let service = fleet.service(&name.get())?;
                let cells = &service.environments;
                cells
                    .iter()
                    .find(|c| c.environment == "prod")
                    .or_else(|| cells.first())
                    .map(|c| c.environment.clone())
            })
        })
    });
    // Changes once per step of the range, on the app's clock: a newer answer would not differ sooner.
    let step_tick = Memo::new(move |_| {
        let step = i64::try_from(range.get().step_seconds())
            .unwrap_or(i64::MAX)
            .max(1);
        live.now
            .with(|now| shared::time::parse_rfc3339(now).unwrap_or_default())
            .div_euclid(step)
    });
    let answer = fetched(move || {
        let (name, environment, range) = (name.get(), environment.get(), range.get());
        step_tick.track();
        async move {
            match environment {
                Some(environment) => Some(api::get_metrics(&name, &environment, range).await),
                None => None,
            }
        }
    });
    let status = Memo::new(move |_| {
        answer.with(|answer| match answer {
            None => Status::Loading,
            Some(None) => Status::NoEnvironment,
            Some(Some(Err(error))) => Status::Failed(error.clone()),
            Some(Some(Ok(_))) => Status::Loaded,
        })
    });
    let data: Memo<Option<MetricsView>> = Memo::new(move |_| {
        answer.with(|answer| match answer {
            Some(Some(Ok(view))) => Some(view.clone()),
            _ => None,
        })
    });
    // The charts on screen are of another range or environment than the URL asks for, until its answer comes.
    let stale = Memo::new(move |_| {
        data.with(|view| {
            view.as_ref().is_some_and(|view| {
                view.range != range.get()
                    || Some(view.environment.as_str()) != environment.get().as_deref()
            })
        })
    });
    let range_href = move |choice: MetricsRange| {
        let mut href = format!("/services/{}?tab=metrics", name.get());
        if let Some(env) = env.get() {
            href.push_str(&format!("&env={}", encode_query_value(&env)));
        }
        href.push_str(&format!("&range={}", choice.param()));
        href
    };

    view! {
        <div class="metrics" data-testid="metrics-tab">
            <div class="metrics-bar">
                <nav class="range-picker" aria-label="Time range">
                    {MetricsRange::ALL.into_iter().map(|choice| view! {
                        <a
                            href=move || range_href(choice)
                            aria-current=move || (range.get() == choice).then_some("true")
                            data-testid=format!("metrics-range-{}", choice.param())
                        >{choice.label()}</a>
                    }).collect_view()}
                </nav>
                <p class="muted small metrics-about" data-testid="metrics-about">
                    {move || describe(&name.get(), env.get().is_none(), environment.get(), data.get().as_ref())}
                </p>
            </div>
            <SloPanel name environment />
            {move || match status.get() {
                Status::Loading => view! {
                    <div class="metric-grid" role="status" aria-busy="true" aria-label="Loading metrics" data-testid="loading">
                        {MetricQuery::ALL.map(|_| view! { <div class="skeleton-chart"></div> }).into_iter().collect_view()}
                    </div>
                }.into_any(),
                Status::NoEnvironment => view! {
                    <p class="empty" data-testid="no-metrics">
                        {format!("{} is not deployed anywhere yet, so it has no metrics. They appear here once it runs in an environment.", name.get())}
                    </p>
                }.into_any(),
                Status::Failed(error) => not_configured(&error).unwrap_or_else(|| show_error(&error)),
                Status::Loaded => view! {
                    <div class="metric-grid" class:stale=move || stale.get() aria-busy=move || stale.get().then_some("true")>
                        {MetricQuery::ALL.into_iter().map(|query| view! { <MetricCard query data /> }).collect_view()}
                    </div>
                }.into_any(),
            }}
        </div>
    }
}

/// What the charts show and how fresh they are: "payments in prod (pick an environment above for another) ·
/// up to 10:42 UTC · refreshed every 15 s".
fn describe(
    name: &str,
    defaulted: bool,
    environment: Option<String>,
    view: Option<&MetricsView>,
) -> String {
    let Some(environment) = environment else {
        return String::new();
    };
    let mut text = format!("{name} in {environment}");
    if defaulted {
        text.push_str(" (pick an environment above for another)");
    }
    if let Some(view) = view {
        text.push_str(&format!(
            " · up to {} · refreshed every {}",
            chart::moment(view.end, view.range),
            every(view.step)
        ));
    }
    text.push_str(". Point at a chart, or focus it and use ← →, to read its values.");
    text
}

fn every(seconds: u64) -> String {
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", seconds / 60)
    }
}

/// A Tower without a metrics store answers 404 saying so: that is how this Tower is set up, not a failure.
fn not_configured(error: &ApiError) -> Option<AnyView> {
    (error.code == ErrorCode::NotFound && error.message.ends_with("is not configured in this Tower."))
        .then(|| {
            view! {
                <p class="empty" data-testid="metrics-not-configured">
                    "Metrics are not configured in this Tower. "
                    "Tower reads them from Mimir; an administrator can add its address to Tower's configuration."
                </p>
            }
            .into_any()
        })
}

/// What one card shows, apart from the numbers; the card's body is rebuilt only when this changes.
#[derive(Debug, Clone, PartialEq)]
enum Shown {
    Missing,
    Failed {
        message: String,
        since: String,
    },
    Empty {
        service: String,
        environment: String,
        range: MetricsRange,
    },
    Drawn,
}

/// One fixed query's chart, kept current by `data`.
#[component]
fn MetricCard(query: MetricQuery, data: Memo<Option<MetricsView>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let shown = Memo::new(move |_| {
        data.with(|view| {
            let Some(view) = view else {
                return Shown::Missing;
            };
            let Some(chart) = view.charts.iter().find(|c| c.query == query) else {
                return Shown::Missing;
            };
            if let Some(error) = &chart.error {
                Shown::Failed {
                    message: error.message.clone(),
                    since: error.since.clone(),
                }
            } else if chart.series.iter().all(|s| s.points.is_empty()) {
                Shown::Empty {
                    service: view.service.clone(),
                    environment: view.environment.clone(),
                    range: view.range,
                }
            } else {
                Shown::Drawn
            }
        })
    });
    let unit = query.unit();
    view! {
        <article class="metric-card" data-testid="metric-chart" data-query=query.slug()>
            <header class="metric-head">
                <h2>{query.title()}</h2>
                <span class="muted small">{unit_name(unit)}</span>
            </header>
            {move || match shown.get() {
                Shown::Missing => view! {
                    <p class="chart-empty" data-testid="chart-empty">"Tower did not answer this chart."</p>
                }.into_any(),
                Shown::Failed { message, since } => view! {
                    <p class="chart-error" data-testid="chart-error">
                        <strong>{message}</strong>" "
                        <span class="muted">{move || live.now.with(|now| shared::time::since(&since, now))}</span>
                    </p>
                }.into_any(),
                Shown::Empty { service, environment, range } => view! {
                    <p class="chart-empty" data-testid="chart-empty">
                        {format!("No data for {service} in {environment} over the last {}.", range.label())}
                    </p>
                }.into_any(),
                Shown::Drawn => {
                    let drawn = Memo::new(move |_| data.with(|view| view.as_ref().and_then(|v| drawing(v, query))));
                    view! { <ChartPlot drawn /> }.into_any()
                }
            }}
        </article>
    }
}

/// Everything a drawn chart places, computed once per answer: a Metrics chart's (from [`drawing`]) or an
/// SLO's budget (`pages::slo`), drawn by the same [`ChartPlot`].
#[derive(Debug, Clone, PartialEq)]
pub struct Drawing {
    /// How values are written in the readout.
    pub unit: Unit,
    /// The lines, in colour order.
    pub series: Vec<Series>,
    /// The range it spans (for the moments written in the readout and tooltips).
    pub range: MetricsRange,
    /// Seconds between points.
    pub step: u64,
    /// The box and what its edges mean.
    pub frame: Frame,
    /// The vertical axis.
    pub axis: ValueAxis,
    /// The time axis' labels.
    pub times: Vec<TimeTick>,
    /// One SVG path per series.
    pub paths: Vec<String>,
    /// The deploys as drawn.
    pub marks: Vec<DeployMark>,
    /// The deploys, for the readout.
    pub deploys: Vec<DeployMarker>,
    /// The chart in one sentence, its `aria-label`.
    pub summary: String,
}

fn drawing(view: &MetricsView, query: MetricQuery) -> Option<Drawing> {
    let chart = view.charts.iter().find(|c| c.query == query)?.clone();
    let axis = value_axis(
        query.unit(),
        chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|(_, v)| *v)),
    );
    let frame = Frame {
        start: view.start,
        end: view.end,
        min: axis.min,
        max: axis.max,
        width: PLOT_WIDTH,
        height: PLOT_HEIGHT,
    };
    let paths = chart
        .series
        .iter()
        .map(|s| series_path(&frame, &s.points, view.step))
        .collect();
    let marks = deploy_marks(&frame, &view.deploys, LABEL_GAP);
    let summary = chart::summary(&chart, view.range, marks.len());
    Some(Drawing {
        unit: query.unit(),
        series: chart.series,
        range: view.range,
        step: view.step,
        times: time_ticks(view.start, view.end),
        frame,
        axis,
        paths,
        marks,
        deploys: view.deploys.clone(),
        summary,
    })
}

/// `part` of `whole` as a CSS percentage.
fn percent(part: f64, whole: f64) -> String {
    format!("{:.2}%", part / whole * 100.0)
}

/// The SVG and its labels, with a readout that follows the pointer or the arrow keys.
#[component]
pub fn ChartPlot(drawn: Memo<Option<Drawing>>) -> impl IntoView {
    // The moment the readout is at: set by the pointer or the arrow keys, cleared when they leave.
    let cursor: RwSignal<Option<i64>> = RwSignal::new(None);

    let on_pointer = move |event: web_sys::PointerEvent| {
        let Some(fraction) = event
            .current_target()
            .and_then(|target| horizontal_fraction(&target, f64::from(event.client_x())))
        else {
            return;
        };
        drawn.with_untracked(|drawn| {
            if let Some(drawn) = drawn {
                cursor.set(Some(drawn.frame.time_at(fraction * PLOT_WIDTH)));
            }
        });
    };
    let on_key = move |event: web_sys::KeyboardEvent| {
        let Some((start, end, step)) =
            drawn.with_untracked(|d| d.as_ref().map(|d| (d.frame.start, d.frame.end, d.step)))
        else {
            return;
        };
        let current = cursor.get_untracked();
        let next = match event.key().as_str() {
            "ArrowLeft" => Some(move_cursor(current, -1, start, end, step)),
            "ArrowRight" => Some(move_cursor(current, 1, start, end, step)),
            "Home" => Some(start),
            "End" => Some(end),
            "Escape" if current.is_some() => None,
            _ => return,
        };
        event.prevent_default();
        cursor.set(next);
    };

    let readout = move || {
        let at = cursor.get()?;
        drawn.with(|drawn| drawn.as_ref().map(|drawn| readout_text(drawn, at)))
    };
    // Where the readout's guide line and dots are, in plot units.
    let guide = move || {
        let at = cursor.get()?;
        drawn.with(|drawn| {
            let drawn = drawn.as_ref()?;
            let dots: Vec<(usize, f64, f64)> = drawn
                .series
                .iter()
                .enumerate()
                .filter_map(|(index, s)| {
                    value_at(&s.points, at, drawn.step)
                        .map(|(t, v)| (index, drawn.frame.x(t), drawn.frame.y(v)))
                })
                .collect();
            let x = dots.first().map_or(drawn.frame.x(at), |(_, x, _)| *x);
            Some((x, dots))
        })
    };

    view! {
        <div
            class="chart"
            role="img"
            tabindex="0"
            aria-label=move || drawn.with(|d| d.as_ref().map(|d| d.summary.clone()).unwrap_or_default())
            aria-keyshortcuts="ArrowLeft ArrowRight Home End Escape"
            on:keydown=on_key
            on:blur=move |_| cursor.set(None)
        >
            <div class="deploy-labels" aria-hidden="true">
                {move || drawn.with(|d| d.as_ref().map(|d| d.marks.iter().filter(|m| m.labelled).map(|mark| {
                    let flip = mark.x > PLOT_WIDTH * 0.8;
                    view! {
                        <span class="deploy-label mono" class:flip=flip style:left=percent(mark.x, PLOT_WIDTH)>{mark.version.clone()}</span>
                    }
                }).collect_view()))}
            </div>
            <div class="y-axis" aria-hidden="true">
                {move || drawn.with(|d| d.as_ref().map(|d| d.axis.ticks.iter().map(|tick| {
                    let top = percent(d.frame.y(tick.value), PLOT_HEIGHT);
                    view! { <span style:top=top>{tick.label.clone()}</span> }
                }).collect_view()))}
            </div>
            <div
                class="plot"
                on:pointermove=on_pointer
                on:pointerdown=on_pointer
                on:pointerleave=move |_| cursor.set(None)
            >
                <svg
                    viewBox=format!("0 0 {PLOT_WIDTH} {PLOT_HEIGHT}")
                    preserveAspectRatio="none"
                    aria-hidden="true"
                    focusable="false"
                >
                    {move || drawn.with(|d| d.as_ref().map(|d| {
                        let grid = d.axis.ticks.iter().map(|tick| {
                            let y = d.frame.y(tick.value);
                            view! { <line class="grid" x1="0" x2=PLOT_WIDTH y1=y y2=y /> }
                        }).collect_view();
                        let series = d.paths.iter().enumerate().map(|(index, path)| view! {
                            <path class=format!("series series-{}", index % SERIES_COLOURS) d=path.clone() />
                        }).collect_view();
                        let marks = d.marks.iter().map(|mark| {
                            let title = format!("deployed {} at {}", mark.version, chart::moment(mark.at, d.range));
                            view! {
                                <g class="deploy" data-testid="deploy-marker" data-version=mark.version.clone()>
                                    <title>{title}</title>
                                    <line x1=mark.x x2=mark.x y1="0" y2=PLOT_HEIGHT />
                                    <rect class="deploy-hit" x=mark.x - 6.0 y="0" width="12" height=PLOT_HEIGHT />
                                </g>
                            }
                        }).collect_view();
                        view! { <g>{grid}</g><g>{series}</g><g>{marks}</g> }
                    }))}
                    {move || guide().map(|(x, _)| view! { <line class="guide" x1=x x2=x y1="0" y2=PLOT_HEIGHT /> })}
                </svg>
                {move || guide().map(|(_, dots)| dots.into_iter().map(|(index, x, y)| view! {
                    <span
                        class=format!("dot series-{}", index % SERIES_COLOURS)
                        style:left=percent(x, PLOT_WIDTH)
                        style:top=percent(y, PLOT_HEIGHT)
                    ></span>
                }).collect_view())}
            </div>
            <div class="x-axis" aria-hidden="true">
                {move || drawn.with(|d| d.as_ref().map(|d| d.times.iter().map(|tick| {
                    let x = d.frame.x(tick.at);
                    let (first, last) = (x < PLOT_WIDTH * 0.04, x > PLOT_WIDTH * 0.96);
                    view! {
                        <span style:left=percent(x, PLOT_WIDTH) class:edge-start=first class:edge-end=last>{tick.label.clone()}</span>
                    }
                }).collect_view()))}
            </div>
        </div>
        {move || drawn.with(|d| d.as_ref().filter(|d| d.series.len() > 1).map(|d| view! {
            <ul class="legend small">
                {d.series.iter().enumerate().map(|(index, s)| view! {
                    <li><span class=format!("swatch series-{}", index % SERIES_COLOURS) aria-hidden="true"></span>{s.label.clone()}</li>
                }).collect_view()}
            </ul>
        }))}
        <p class="readout small" aria-live="polite">
            {move || match readout() {
                Some(text) => view! { <span data-testid="chart-readout">{text}</span> }.into_any(),
                None => view! {
                    <span class="muted">{move || latest(&drawn.get())}</span>
                }.into_any(),
            }}
        </p>
    }
}

/// The readout at `at`: the time of the nearest point, each series' value there, and a deploy close by.
fn readout_text(drawn: &Drawing, at: i64) -> String {
    let unit = drawn.unit;
    let step = drawn.step;
    // Snap to the nearest point of the fullest series, so the time shown is one a value was taken at.
    let at = drawn
        .series
        .iter()
        .max_by_key(|s| s.points.len())
        .and_then(|s| value_at(&s.points, at, step))
        .map_or(at, |(t, _)| t);
    let mut parts = vec![chart::moment(at, drawn.range)];
    let many = drawn.series.len() > 1;
    for series in &drawn.series {
        let value = value_at(&series.points, at, step)
            .map_or_else(|| "no data".to_string(), |(_, v)| format_value(unit, v));
        parts.push(if many {
            format!("{} {value}", series.label)
        } else {
            value
        });
    }
    if let Some(deploy) = deploy_near(&drawn.deploys, at, step) {
        parts.push(match &deploy.previous {
            Some(previous) => format!("deployed {} (was {previous})", deploy.version),
            None => format!("deployed {}", deploy.version),
        });
    }
    parts.join(" · ")
}

/// The line under the chart when no readout is open: its newest value.
fn latest(drawn: &Option<Drawing>) -> String {
    drawn
        .as_ref()
        .filter(|d| d.series.len() == 1)
        .and_then(|d| {
            let (at, value) = *d.series.first()?.points.last()?;
            Some(format!(
                "Latest {} at {}",
                format_value(d.unit, value),
                chart::moment(at, d.range)
            ))
        })
        .unwrap_or_default()
}

/// How far across `target` the pointer at `client_x` is, from 0 to 1. (Through `getBoundingClientRect` read
/// dynamically: the app's `web-sys` features do not include `DomRect`.)
fn horizontal_fraction(target: &web_sys::EventTarget, client_x: f64) -> Option<f64> {
    let function: js_sys::Function = js_sys::Reflect::get(target, &"getBoundingClientRect".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let rect = function.call0(target).ok()?;
    let number = |key: &str| js_sys::Reflect::get(&rect, &key.into()).ok()?.as_f64();
    let (left, width) = (number("left")?, number("width")?);
    (width > 0.0).then(|| ((client_x - left) / width).clamp(0.0, 1.0))
}
