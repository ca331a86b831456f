//! The SLO panel at the top of a service's Metrics tab: for the tab's environment, each service level objective
//! with its three numbers (objective, availability, error budget left), its budget over the last day with the
//! deploys marked, and the four burn-rate alerts (as Pyrra's detail page lays them out). The arithmetic and the
//! wording are `shared::slo`; the chart is the Metrics tab's own [`ChartPlot`]. It is only reached from the
//! Metrics tab, so its code is part of that tab's lazily loaded module.

use leptos::prelude::*;
use shared::metrics::chart::{Frame, clock_time, deploy_marks, series_path, time_ticks};
use shared::metrics::{DeployMarker, MetricsRange, Series, Unit};
use shared::slo::{
    self, AlertState, HISTORY_HOURS, SloView, budget_axis, budget_summary, budget_tone,
    empty_message, format_budget, format_burn_rate, format_percent,
};
use shared::status::Tone;
use shared::{ApiError, ErrorCode};

use crate::api;
use crate::components::status::chip;
use crate::live::{LiveFleet, fetched};
use crate::pages::metrics::{ChartPlot, Drawing, LABEL_GAP, PLOT_HEIGHT, PLOT_WIDTH};

/// How often the objectives are asked again: the server evaluates them every 30 s.
const REFRESH_SECONDS: i64 = 30;
/// How soon to ask again when Tower is still evaluating for the first time (it answers 503 meanwhile).
const SYNCING_RETRY_MS: u64 = 3_000;

/// Where the panel stands, apart from the numbers: rebuilt only when this changes, so a refresh patches the
/// objectives in place.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    Loading,
    /// Metrics (and so objectives) are not configured in this Tower: the Metrics tab already says so.
    Hidden,
    Failed(ApiError),
    Loaded,
}

/// The objectives of `name` in `environment` (the Metrics tab's), kept current.
#[component]
pub fn SloPanel(name: Memo<String>, environment: Memo<Option<String>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let tick = Memo::new(move |_| {
        live.now
            .with(|now| shared::time::parse_rfc3339(now).unwrap_or_default())
            .div_euclid(REFRESH_SECONDS)
    });
    // Bumped to ask again soon while Tower answers that it is still evaluating.
    let retry = RwSignal::new(0_u32);
    let answer = fetched(move || {
        let name = name.get();
        tick.track();
        retry.track();
        async move { api::list_slos(&name).await }
    });
    Effect::new(move |_| {
        let syncing = answer.with(
            |answer| matches!(answer, Some(Err(error)) if error.code == ErrorCode::Unavailable),
        );
        if syncing {
            set_timeout(
                move || retry.update(|n| *n += 1),
                std::time::Duration::from_millis(SYNCING_RETRY_MS),
            );
        }
    });
    let status = Memo::new(move |_| {
        answer.with(|answer| match answer {
            None => Status::Loading,
            Some(Ok(_)) => Status::Loaded,
            Some(Err(error)) if not_configured(error) => Status::Hidden,
            Some(Err(error)) if error.code == ErrorCode::Unavailable => Status::Loading,
            Some(Err(error)) => Status::Failed(error.clone()),
        })
    });
    let shown: Memo<Vec<SloView>> = Memo::new(move |_| {
        let environment = environment.get().unwrap_or_default();
        answer.with(|answer| match answer {
            Some(Ok(slos)) => slo::in_environment(slos, &environment)
                .into_iter()
                .cloned()
                .collect(),
            _ => Vec::new(),
        })
    });
    let names = Memo::new(move |_| {
        shown.with(|slos| slos.iter().map(|s| s.name.clone()).collect::<Vec<_>>())
    });
    let any = Memo::new(move |_| !names.with(Vec::is_empty));

    // The deploys of the last day, for the markers: the Metrics API's 24-hour answer, which the server keeps
    // per step for every viewer. Asked only when there is a chart to mark.
    let day_step = i64::try_from(MetricsRange::Day.step_seconds()).unwrap_or(360);
    let day_tick = Memo::new(move |_| {
        live.now
            .with(|now| shared::time::parse_rfc3339(now).unwrap_or_default())
            .div_euclid(day_step)
    });
    let deploy_answer = fetched(move || {
        let (name, environment, any) = (name.get(), environment.get(), any.get());
        day_tick.track();
        async move {
            match environment.filter(|_| any) {
                Some(environment) => {
                    Some(api::get_metrics(&name, &environment, MetricsRange::Day).await)
                }
                None => None,
            }
        }
    });
    let deploys: Memo<Vec<DeployMarker>> = Memo::new(move |_| {
        deploy_answer.with(|answer| match answer {
            Some(Some(Ok(view))) => view.deploys.clone(),
            _ => Vec::new(),
        })
    });
    let deploy_error = move || {
        deploy_answer.with(|answer| match answer {
            Some(Some(Err(error))) if !not_configured(error) => Some(error.to_string()),
            _ => None,
        })
    };

    move || {
        match status.get() {
        Status::Hidden => ().into_any(),
        Status::Loading => view! {
            <section class="slo-panel" data-testid="slo-panel">
                <div class="slo-list" role="status" aria-busy="true" aria-label="Loading service level objectives" data-testid="slo-loading">
                    <div class="skeleton-slo"></div>
                </div>
            </section>
        }
        .into_any(),
        Status::Failed(error) => view! {
            <section class="slo-panel" data-testid="slo-panel">
                <div class="error" role="alert" data-testid="slo-error">
                    <strong>"Could not load the service level objectives."</strong>
                    <p>{error.to_string()}</p>
                </div>
            </section>
        }
        .into_any(),
        Status::Loaded => view! {
            <section class="slo-panel" aria-labelledby="slo-title" data-testid="slo-panel">
                <div class="slo-bar">
                    <h2 id="slo-title">"Service level objectives"</h2>
                    <p class="muted small">
                        {move || about(&name.get(), environment.get().as_deref(), &shown.get())}
                    </p>
                </div>
                {move || deploy_error().map(|error| view! {
                    <p class="muted small" data-testid="slo-deploys-error">
                        {format!("Deploys are not marked on the budget charts: {error}")}
                    </p>
                })}
                <Show
                    when=move || any.get()
                    fallback=move || view! {
                        <p class="empty" data-testid="slo-empty">
                            {move || environment.get().map(|env| empty_message(&name.get(), &env))}
                        </p>
                    }
                >
                    <div class="slo-list">
                        <For each=move || names.get() key=|name| name.clone() let:slo_name>
                            <SloCard slo_name shown deploys />
                        </For>
                    </div>
                </Show>
            </section>
        }
        .into_any(),
    }
    }
}

/// A Tower without a metrics store answers 404 saying so (as the Metrics tab reads it).
fn not_configured(error: &ApiError) -> bool {
    error.code == ErrorCode::NotFound && error.message.ends_with("is not configured in this Tower.")
}

/// "payments in prod · evaluated 10:42 UTC · least budget first".
fn about(name: &str, environment: Option<&str>, shown: &[SloView]) -> String {
    let Some(environment) = environment else {
        return String::new();
    };
    let mut text = format!("{name} in {environment}");
    if let Some(at) = shown.iter().map(|s| s.evaluated_at).max() {
        text.push_str(&format!(" · evaluated {} UTC", clock_time(at)));
    }
    if shown.len() > 1 {
        text.push_str(" · least budget left first");
    }
    text
}

/// One objective, kept current from `shown` by its name.
#[component]
fn SloCard(
    slo_name: String,
    shown: Memo<Vec<SloView>>,
    deploys: Memo<Vec<DeployMarker>>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let slo = {
        let slo_name = slo_name.clone();
        Memo::new(move |_| shown.with(|all| all.iter().find(|s| s.name == slo_name).cloned()))
    };
    let field = move |read: fn(&SloView) -> String| {
        move || slo.with(|s| s.as_ref().map(read).unwrap_or_default())
    };
    let burning = Memo::new(move |_| slo.with(|s| s.as_ref().is_some_and(SloView::burning)));
    let failure = Memo::new(move |_| {
        slo.with(|s| {
            s.as_ref()
                .and_then(|s| s.error.as_ref())
                .map(|e| (e.message.clone(), e.since.clone()))
        })
    });
    let remaining = move || slo.with(|s| s.as_ref().and_then(|s| s.budget_remaining));
    let drawn = Memo::new(move |_| {
        slo.with(|s| {
            s.as_ref()
                .and_then(|s| deploys.with(|deploys| budget_drawing(s, deploys)))
        })
    });
    // Whether there is a chart at all: the plot itself is kept across refreshes (and keyboard focus on it).
    let charted = Memo::new(move |_| drawn.with(Option::is_some));
    let alerts = Memo::new(move |_| {
        slo.with(|s| {
            s.as_ref()
                .map(|s| {
                    s.alerts
                        .iter()
                        .map(|alert| (alert.clone(), s.rate(&alert.long), s.rate(&alert.short)))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    let heading_id = format!("slo-{slo_name}");
    let labelled_by = heading_id.clone();

    view! {
        <article
            class="slo-card"
            aria-labelledby=labelled_by
            data-testid="slo"
            data-name=slo_name.clone()
            data-burning=move || if burning.get() { "true" } else { "false" }
        >
            <header class="slo-head">
                <h3 id=heading_id>{slo_name.clone()}</h3>
                {move || burning.get().then(|| chip(Tone::Bad, "⚠", "Burning".into(), Some("slo-burning")))}
                <p class="muted small slo-description">{field(|s| s.description.clone())}</p>
            </header>
            <dl class="slo-numbers">
                <div class="slo-number" data-testid="slo-objective">
                    <dt>"Objective"</dt>
                    <dd class="figure">{field(|s| format_percent(s.objective))}</dd>
                    <dd class="muted small">{field(|s| format!("{} objective over {}", indicator(s), s.window))}</dd>
                </div>
                <div class="slo-number" data-testid="slo-availability">
                    <dt>"Availability"</dt>
                    <dd class="figure">{field(|s| s.availability.map_or_else(|| "no data".to_string(), format_percent))}</dd>
                    <dd class="muted small">{field(|s| format!("over the last {}", s.window))}</dd>
                </div>
                <div
                    class=move || format!("slo-number budget {}", budget_tone(remaining()).class())
                    data-testid="slo-budget"
                    data-tone=move || budget_tone(remaining()).class()
                >
                    <dt>"Error budget left"</dt>
                    <dd class="figure">{move || format_budget(remaining())}</dd>
                    <dd class="muted small">{move || budget_words(remaining())}</dd>
                </div>
            </dl>
            {move || match failure.get() {
                Some((message, since)) => view! {
                    <p class="chart-error" data-testid="slo-error">
                        <strong>{message}</strong>" "
                        <span class="muted">{move || live.now.with(|now| shared::time::since(&since, now))}</span>
                    </p>
                }.into_any(),
                None => view! {
                    <div class="slo-body">
                        <div class="slo-chart">
                            <h4>{format!("Error budget left, last {HISTORY_HOURS} hours")}</h4>
                            {move || if charted.get() {
                                view! { <ChartPlot drawn /> }.into_any()
                            } else {
                                view! { <p class="chart-empty" data-testid="chart-empty">"No budget history yet."</p> }.into_any()
                            }}
                        </div>
                        <table class="burn-table" data-testid="burn-table">
                            <caption>"Burn-rate alerts (multi-window, as the SRE Workbook sets them)"</caption>
                            <thead>
                                <tr>
                                    <th scope="col">"Windows"</th>
                                    <th scope="col">"Long"</th>
                                    <th scope="col">"Short"</th>
                                    <th scope="col">"Factor"</th>
                                    <th scope="col">"Severity"</th>
                                    <th scope="col">"Firing"</th>
                                </tr>
                            </thead>
                            <tbody>
                                {move || alerts.get().into_iter().map(|(alert, long, short)| alert_row(alert, long, short)).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any(),
            }}
        </article>
    }
}

/// What an objective measures, in a word.
fn indicator(slo: &SloView) -> &'static str {
    match slo.indicator {
        slo::Indicator::Ratio => "Availability",
        slo::Indicator::Latency => "Latency",
    }
}

/// The budget in words beside its number (colour is never the only signal).
fn budget_words(remaining: Option<f64>) -> &'static str {
    match budget_tone(remaining) {
        Tone::Bad => "spent",
        Tone::Warn => "running low",
        Tone::Unknown => "no events in the window",
        _ => "left of the window's budget",
    }
}

/// One alert: its windows, their burn rates, the factor both must exceed, and whether it fires.
fn alert_row(alert: AlertState, long: Option<f64>, short: Option<f64>) -> AnyView {
    let over = |rate: Option<f64>| rate.is_some_and(|r| r > alert.factor);
    let firing = alert.firing;
    view! {
        <tr class:firing=firing data-testid="alert-row" data-firing=if firing { "true" } else { "false" }
            data-long=alert.long.clone() data-short=alert.short.clone()>
            <th scope="row" class="mono">{format!("{} / {}", alert.long, alert.short)}</th>
            <td class="mono" class:over=over(long)>{format_burn_rate(long)}</td>
            <td class="mono" class:over=over(short)>{format_burn_rate(short)}</td>
            <td class="mono">{format_burn_rate(Some(alert.factor))}</td>
            <td>{alert.severity.label()}</td>
            <td>
                {if firing {
                    view! { <span class="firing-mark"><span aria-hidden="true">"✓ "</span>"Firing"</span> }.into_any()
                } else {
                    view! { <span class="muted"><span aria-hidden="true">"— "</span>"Not firing"</span> }.into_any()
                }}
            </td>
        </tr>
    }
    .into_any()
}

/// The budget chart of `slo`: its last day of budget left, every deploy of that day marked.
fn budget_drawing(slo: &SloView, deploys: &[DeployMarker]) -> Option<Drawing> {
    let points = slo.budget_history.clone();
    let end = points.last()?.0.max(slo.evaluated_at);
    let span = i64::try_from(HISTORY_HOURS * 3_600).unwrap_or(86_400);
    let start = end - span;
    let step = MetricsRange::Day.step_seconds();
    let axis = budget_axis(points.iter().map(|(_, v)| *v));
    let frame = Frame {
        start,
        end,
        min: axis.min,
        max: axis.max,
        width: PLOT_WIDTH,
        height: PLOT_HEIGHT,
    };
    let paths = vec![series_path(&frame, &points, step)];
    let marks = deploy_marks(&frame, deploys, LABEL_GAP);
    let summary = budget_summary(slo, marks.len());
    Some(Drawing {
        unit: Unit::Ratio,
        series: vec![Series {
            label: "Error budget left".into(),
            points,
        }],
        range: MetricsRange::Day,
        step,
        times: time_ticks(start, end),
        frame,
        axis,
        paths,
        marks,
        deploys: deploys.to_vec(),
        summary,
    })
}
