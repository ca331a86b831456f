//! One pipeline run (`/pipelines/:namespace/:name?task=&step=#L…`): its header, its DAG, the selected task's
//! panel (status, why, `when` outcomes, results, steps) and the selected step's log. It follows the run
//! live: each change of the run on the event stream fetches its detail again, so nodes change colour as
//! tasks finish.

use std::cell::RefCell;
use std::time::Duration;

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_location, use_navigate, use_params_map, use_query_map};
use shared::ApiError;
use shared::pipelines::console::parse_line_anchor;
use shared::pipelines::graph::DisplayNameCache;
use shared::pipelines::layout::layout;
use shared::pipelines::{PipelineRunDetail, StepView, TaskStatus, TaskView};
use shared::time::{age_or_raw, duration, parse_rfc3339};
use shared::url::encode_query_value;

use super::{run_chip, short_commit, task_chip};
use crate::api::{self, StepRef};
use crate::components::log_console::LogConsole;
use crate::components::pipeline_graph::{DrawnGraph, PipelineGraph};
use crate::live::{LiveFleet, browser_now, fetched};
use crate::pages::show_errors;

/// How long the page waits after a change of its run on the stream before fetching it again: changes of one
/// moment (a task finishing and the next starting) become one fetch.
const REFETCH_DELAY: Duration = Duration::from_millis(300);

thread_local! {
    /// Task display names resolved once per pipeline spec, for every run page of the visit.
    static NAMES: RefCell<DisplayNameCache> = RefCell::new(DisplayNameCache::new());
}

/// Milliseconds since the page started, for timing the layout.
fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// The DAG of `detail`, laid out and timed.
fn draw(detail: &PipelineRunDetail) -> DrawnGraph {
    let started = now_ms();
    let graph = NAMES.with(|names| names.borrow_mut().graph(detail));
    let layout = layout(&graph);
    DrawnGraph {
        graph,
        layout,
        layout_ms: now_ms() - started,
    }
}

/// Seconds between two RFC 3339 times, when both read.
fn seconds_between(start: Option<&str>, end: Option<&str>) -> Option<i64> {
    Some(parse_rfc3339(end?)? - parse_rfc3339(start?)?)
}

/// The run page.
#[component]
pub fn RunPage() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let params = use_params_map();
    let query = use_query_map();
    let namespace = Memo::new(move |_| params.with(|p| p.get("namespace").unwrap_or_default()));
    let name = Memo::new(move |_| params.with(|p| p.get("name").unwrap_or_default()));
    let task = Memo::new(move |_| query.with(|q| q.get("task").filter(|t| !t.is_empty())));
    let step = Memo::new(move |_| query.with(|q| q.get("step").filter(|s| !s.is_empty())));

    let refresh = RwSignal::new(0_u32);
    let answer = fetched(move || {
        let (namespace, name) = (namespace.get(), name.get());
        refresh.track();
        live.resyncs.track();
        async move { api::get_pipeline_run(&namespace, &name).await }
    });
    // Fetch again shortly after the stream says the run changed.
    let stamp = Memo::new(move |_| {
        live.runs
            .with(|updates| updates.stamp_of(&namespace.get(), &name.get()))
    });
    let pending = StoredValue::new_local(None::<TimeoutHandle>);
    Effect::new(move |seen: Option<Option<u64>>| {
        let now = stamp.get();
        let changed = seen.is_some_and(|seen| seen != now);
        if changed && pending.with_value(Option::is_none) {
            let handle = set_timeout_with_handle(
                move || {
                    pending.try_set_value(None);
                    refresh.try_update(|n| *n += 1);
                },
                REFETCH_DELAY,
            );
            pending.set_value(handle.ok());
        }
        now
    });
    on_cleanup(move || {
        if let Some(Some(handle)) = pending.try_update_value(Option::take) {
            handle.clear();
        }
    });

    let status = Memo::new(move |_| {
        answer.with(|a| {
            a.as_ref()
                .map(|r| r.as_ref().map(|_| ()).map_err(Clone::clone))
        })
    });
    let detail: Memo<Option<PipelineRunDetail>> =
        Memo::new(move |_| answer.with(|a| a.as_ref().and_then(|r| r.as_ref().ok()).cloned()));

    view! {
        <section class="page run-page">
            <nav class="crumbs" aria-label="Breadcrumb">
                <A href="/pipelines">"Pipelines"</A>" / "
                {move || detail.with(|d| d.as_ref().map(|d| {
                    let service = d.summary.service.clone();
                    view! { <A href=format!("/services/{}?tab=pipelines", encode_query_value(&service))>{service.clone()}</A>" / " }
                }))}
                <span class="mono">{move || name.get()}</span>
            </nav>
            <ErrorBoundary fallback=show_errors>
                {move || match status.get() {
                    None => Ok(view! {
                        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading the run" data-testid="loading">
                            <div class="skeleton-row skeleton-title"></div><div class="skeleton-row"></div><div class="skeleton-row"></div>
                        </div>
                    }.into_any()),
                    Some(Err(error)) => Err::<AnyView, ApiError>(error),
                    Some(Ok(())) => Ok(view! { <RunBody detail task step /> }.into_any()),
                }}
            </ErrorBoundary>
        </section>
    }
}

/// Header, DAG, task panel and log, once the run has loaded.
#[component]
fn RunBody(
    detail: Memo<Option<PipelineRunDetail>>,
    task: Memo<Option<String>>,
    step: Memo<Option<String>>,
) -> impl IntoView {
    let navigate = use_navigate();
    let location = use_location();
    let drawn: Memo<Option<DrawnGraph>> = Memo::new(move |_| detail.with(|d| d.as_ref().map(draw)));
    let path = Memo::new(move |_| location.pathname.get());
    let go = move |task: Option<&str>, step: Option<&str>| {
        let mut href = path.get_untracked();
        let mut params = Vec::new();
        if let Some(task) = task {
            params.push(format!("task={}", encode_query_value(task)));
        }
        if let Some(step) = step {
            params.push(format!("step={}", encode_query_value(step)));
        }
        if !params.is_empty() {
            href.push('?');
            href.push_str(&params.join("&"));
        }
        navigate(
            &href,
            NavigateOptions {
                scroll: false,
                ..NavigateOptions::default()
            },
        );
    };
    let go = StoredValue::new_local(go);
    let on_select = Callback::new(move |name: String| {
        go.with_value(|go| go(Some(&name), None));
    });
    let on_step = Callback::new(move |(task, step): (String, String)| {
        go.with_value(|go| go(Some(&task), Some(&step)));
    });
    let selected_task: Memo<Option<TaskView>> = Memo::new(move |_| {
        let name = task.get()?;
        detail.with(|d| d.as_ref()?.tasks.iter().find(|t| t.name == name).cloned())
    });
    // The log console is rebuilt only when another step is chosen, never when the run is fetched again.
    let console = Memo::new(move |_| {
        let (task, step) = (task.get()?, step.get()?);
        let (service, namespace, run, can_read) = detail.with(|d| {
            d.as_ref().map(|d| {
                (
                    d.summary.service.clone(),
                    d.summary.namespace.clone(),
                    d.summary.name.clone(),
                    d.can_read_logs,
                )
            })
        })?;
        let known = detail.with(|d| {
            d.as_ref().is_some_and(|d| {
                d.tasks
                    .iter()
                    .any(|t| t.name == task && t.steps.iter().any(|s| s.name == step))
            })
        });
        known.then_some((
            StepRef {
                service,
                namespace,
                run,
                task,
                step,
            },
            can_read,
        ))
    });
    let anchor = Memo::new(move |_| location.hash.with(|h| parse_line_anchor(h)));

    view! {
        <RunHeader detail />
        <h2 class="section-title">"Tasks"</h2>
        <PipelineGraph drawn=drawn.into() selected=task.into() on_select />
        <p class="muted small dag-legend">"Select a task to see its steps and their logs. Arrows point from a task to those that wait for it; a label names the result passed."</p>
        {move || match (task.get(), selected_task.get()) {
            (None, _) => None,
            (Some(name), None) => Some(view! {
                <p class="empty" data-testid="task-missing">{format!("This run has no task named {name}.")}</p>
            }.into_any()),
            (Some(_), Some(view)) => Some(view! { <TaskPanel task=view step on_step /> }.into_any()),
        }}
        {move || console.get().map(|(step_ref, can_read)| {
            let running = detail.with_untracked(|d| {
                d.as_ref()
                    .and_then(|d| d.tasks.iter().find(|t| t.name == step_ref.task))
                    .and_then(|t| t.steps.iter().find(|s| s.name == step_ref.step))
                    .is_some_and(|s| matches!(s.status, TaskStatus::Running | TaskStatus::Pending))
            });
            view! { <LogConsole step=step_ref can_read_logs=can_read running anchor /> }
        })}
    }
}

/// What the run is: status, service, commit and message, branch, trigger, who, when, how long, and Tekton's
/// message.
#[component]
fn RunHeader(detail: Memo<Option<PipelineRunDetail>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let now = RwSignal::new(browser_now());
    if let Ok(tick) = set_interval_with_handle(
        move || {
            now.try_set(browser_now());
        },
        Duration::from_secs(1),
    ) {
        on_cleanup(move || tick.clear());
    }
    move || {
        detail.with(|d| {
            let d = d.as_ref()?;
            let s = d.summary.clone();
            let commit = s.commit.clone().unwrap_or_default();
            let title = s
                .message
                .clone()
                .unwrap_or_else(|| s.pipeline.clone().unwrap_or_else(|| s.name.clone()));
            let timed = s.clone();
            let running = !s.status.is_finished();
            let created = s.created_at.clone();
            let message = d.message.clone();
            Some(view! {
                <header class="run-head" data-testid="run-header" data-status=s.status.param()>
                    <h1>{run_chip(s.status)}" "<span>{title}</span></h1>
                    <dl class="facts">
                        <dt>"Service"</dt>
                        <dd><A href=format!("/services/{}?tab=pipelines", encode_query_value(&s.service)) attr:data-testid="run-service">{s.service.clone()}</A></dd>
                        <dt>"Commit"</dt>
                        <dd class="mono" data-testid="run-commit" title=commit.clone()>{if commit.is_empty() { "unknown".to_string() } else { short_commit(&commit) }}</dd>
                        <dt>"Branch"</dt><dd class="mono">{s.branch.clone().unwrap_or_else(|| "—".into())}</dd>
                        <dt>"Trigger"</dt><dd>{s.trigger.clone()}</dd>
                        <dt>"Who"</dt><dd>{s.author.clone().unwrap_or_else(|| "—".into())}</dd>
                        <dt>"Started"</dt>
                        <dd><time datetime=s.created_at.clone() title=s.created_at.clone()>{move || age_or_raw(&created, &live.now.get())}</time></dd>
                        <dt>"Duration"</dt>
                        <dd data-testid="run-duration">{move || {
                            let now = if running { now.get() } else { now.get_untracked() };
                            timed.duration_seconds(&now).map(duration).unwrap_or_else(|| "not started".into())
                        }}</dd>
                        <dt>"Pipeline"</dt>
                        <dd class="mono">{s.pipeline.clone().unwrap_or_else(|| "inline".into())}</dd>
                        <dt>"Tasks"</dt>
                        <dd>{format!("{} of {} done · {} failed · {} skipped", s.tasks.succeeded + s.tasks.failed + s.tasks.skipped, s.tasks.total, s.tasks.failed, s.tasks.skipped)}</dd>
                    </dl>
                    {message.map(|m| view! { <p class="run-message-full" data-testid="run-message"><span class="muted">"Tekton: "</span>{m}</p> })}
                </header>
            })
        })
    }
}

/// One task: where it stands and why, its `when` outcomes, results and steps.
#[component]
fn TaskPanel(
    task: TaskView,
    step: Memo<Option<String>>,
    on_step: Callback<(String, String)>,
) -> impl IntoView {
    let name = task.name.clone();
    let heading = match &task.display_name {
        Some(display) if display != &task.name => format!("{display} ({})", task.name),
        _ => task.name.clone(),
    };
    let took = seconds_between(task.started_at.as_deref(), task.finished_at.as_deref());
    let when = (!task.when.is_empty()).then(|| {
        view! {
            <h4>"When"</h4>
            <ul class="when-list" data-testid="task-when">
                {task.when.iter().map(|w| {
                    let e = &w.expression;
                    let text = match &e.cel {
                        Some(cel) => format!("cel: {cel}"),
                        None => format!("{} {} [{}]", e.input, e.operator, e.values.join(", ")),
                    };
                    view! {
                        <li data-passed=w.passed.to_string()>
                            <span class="glyph" aria-hidden="true">{if w.passed { "✓" } else { "✕" }}</span>
                            " "<span class="mono">{text}</span>" "
                            <span class="muted">{if w.passed { "held" } else { "did not hold" }}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }
    });
    let results = (!task.results.is_empty()).then(|| {
        view! {
            <h4>"Results"</h4>
            <dl class="facts results" data-testid="task-results">
                {task.results.iter().map(|r| view! {
                    <dt class="mono">{r.name.clone()}</dt><dd class="mono result-value">{r.value.clone()}</dd>
                }).collect_view()}
            </dl>
        }
    });
    let steps = if task.steps.is_empty() {
        view! { <p class="muted" data-testid="no-steps">{if task.status == TaskStatus::Skipped { "It was skipped, so no step ran." } else { "No step has started yet." }}</p> }.into_any()
    } else {
        view! {
            <ol class="task-steps" data-testid="task-steps">
                {task.steps.iter().map(|s| step_row(&name, s, step, on_step)).collect_view()}
            </ol>
        }
        .into_any()
    };
    view! {
        <section class="task-panel" data-testid="task-panel" data-task=task.name.clone() aria-labelledby="task-panel-title">
            <h3 id="task-panel-title">{task_chip(task.status, Some("task-status"))}" "{heading}</h3>
            <dl class="facts">
                {task.reason.clone().map(|r| view! { <dt>"Reason"</dt><dd data-testid="task-reason">{r}</dd> })}
                {task.message.clone().map(|m| view! { <dt>"Message"</dt><dd data-testid="task-message">{m}</dd> })}
                {task.skip_reason.clone().map(|r| view! { <dt>"Skipped because"</dt><dd data-testid="task-skip-reason">{r}</dd> })}
                {took.map(|t| view! { <dt>"Took"</dt><dd>{duration(t)}</dd> })}
                {task.task_run.clone().map(|t| view! { <dt>"TaskRun"</dt><dd class="mono">{t}</dd> })}
                {task.finally.then(|| view! { <dt>"Group"</dt><dd>"finally: runs after every other task, whatever happened"</dd> })}
            </dl>
            {when}
            {results}
            <h4>"Steps"</h4>
            {steps}
        </section>
    }
}

fn step_row(
    task: &str,
    s: &StepView,
    selected: Memo<Option<String>>,
    on_step: Callback<(String, String)>,
) -> impl IntoView + use<> {
    let took = seconds_between(s.started_at.as_deref(), s.finished_at.as_deref());
    let name = s.name.clone();
    let current = {
        let name = name.clone();
        move || selected.with(|sel| sel.as_deref() == Some(name.as_str()))
    };
    let pick = (task.to_string(), name.clone());
    let label = match &s.display_name {
        Some(display) if display != &s.name => format!("{display} ({})", s.name),
        _ => s.name.clone(),
    };
    let exit = s.exit_code.map(|code| format!("exit {code}"));
    let pressed = current.clone();
    view! {
        <li class="task-step" class:current=current>
            <button type="button" class="step-button" data-testid=format!("step-{name}")
                aria-pressed=move || if pressed() { "true" } else { "false" }
                on:click=move |_| on_step.run(pick.clone())>
                {task_chip(s.status, None)}
                <span class="step-name">{label}</span>
                {exit.map(|e| view! { <span class="mono small" data-testid="step-exit">{e}</span> })}
                {took.map(|t| view! { <span class="muted small">{duration(t)}</span> })}
                {s.reason.clone().map(|r| view! { <span class="muted small">{r}</span> })}
                <span class="step-open muted small">"Log →"</span>
            </button>
        </li>
    }
}
