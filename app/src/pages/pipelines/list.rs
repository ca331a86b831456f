//! One list of pipeline runs, for the fleet (`/pipelines`) or a service's tab: newest first, 20 a page, the
//! filters and the page's cursor in the URL (`?status=&revision=&trigger=&cursor=`, and `service=` on the
//! fleet page), kept live by the event stream.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};
use shared::ApiError;
use shared::pipelines::{PAGE_SIZE, PipelineQuery, PipelineRunPage, PipelineRunSummary, RunStatus};
use shared::time::{age_or_raw, duration};
use shared::url::encode_query_value;

use super::{run_chip, short_commit};
use crate::api;
use crate::live::{LiveFleet, RunChange, RunUpdates, browser_now, fetched};
use crate::pages::show_errors;

/// Where a list lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `/pipelines`: every service, with a service filter.
    Fleet,
    /// A service page's Pipelines tab.
    Service(Memo<String>),
}

impl Scope {
    fn service(self) -> Option<String> {
        match self {
            Scope::Fleet => None,
            Scope::Service(name) => Some(name.get()),
        }
    }

    /// The list's own URL with `query`: on a service page the tab stays in it.
    fn href(self, query: &PipelineQuery) -> String {
        let params = query.to_query();
        match self {
            Scope::Fleet if params.is_empty() => "/pipelines".into(),
            Scope::Fleet => format!("/pipelines?{params}"),
            Scope::Service(name) => {
                let mut href = format!(
                    "/services/{}?tab=pipelines",
                    encode_query_value(&name.get_untracked())
                );
                if !params.is_empty() {
                    href.push('&');
                    href.push_str(&params);
                }
                href
            }
        }
    }
}

/// The filters and cursor the URL holds (`service` only on the fleet page).
fn query_from_url(scope: Scope, get: impl Fn(&str) -> Option<String>) -> PipelineQuery {
    let given = |key: &str| get(key).filter(|v| !v.is_empty());
    PipelineQuery {
        service: match scope {
            Scope::Fleet => given("service"),
            Scope::Service(_) => None,
        },
        status: given("status"),
        revision: given("revision"),
        trigger: given("trigger"),
        cursor: given("cursor"),
    }
}

/// Applies the stream's changes since a page was fetched to its rows. The first page (no cursor) takes in
/// new runs that match its filters and drops runs that stopped matching, keeping newest first and at most a
/// page; any other page only updates the rows it shows, so its neighbours' cursors stay true.
fn patch(
    runs: &mut Vec<PipelineRunSummary>,
    changes: &[(&(String, String), &RunChange)],
    filters: &PipelineQuery,
    first_page: bool,
) {
    for ((namespace, name), change) in changes {
        let at = runs
            .iter()
            .position(|r| &r.namespace == namespace && &r.name == name);
        match (change, at) {
            (RunChange::Removed, Some(i)) => {
                runs.remove(i);
            }
            (RunChange::Removed, None) => {}
            (RunChange::Updated(run), Some(i)) => {
                if first_page && !filters.matches(run) {
                    runs.remove(i);
                } else {
                    runs[i] = run.as_ref().clone();
                }
            }
            (RunChange::Updated(run), None) => {
                if first_page && filters.matches(run) {
                    runs.push(run.as_ref().clone());
                }
            }
        }
    }
    if first_page {
        runs.sort_by_key(PipelineRunSummary::key);
        runs.truncate(PAGE_SIZE);
    }
}

/// The page as fetched: the stream's stamp when the fetch started, the filters, and the answer.
type Fetched = (u64, PipelineQuery, Result<PipelineRunPage, ApiError>);

/// A list of runs with its filters and pager.
#[component]
pub fn RunList(scope: Scope) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let url = use_query_map();
    let query = Memo::new(move |_| url.with(|q| query_from_url(scope, |key| q.get(key))));
    let page = fetched(move || {
        let query = query.get();
        let service = scope.service();
        live.resyncs.track();
        let seq = live.runs.with_untracked(RunUpdates::seq);
        async move {
            let answer = match &service {
                Some(service) => api::list_service_pipeline_runs(service, &query).await,
                None => api::list_pipeline_runs(&query).await,
            };
            (seq, query, answer)
        }
    });
    // The fetched page, patched by every change that arrived since.
    let shown: Memo<Option<Result<PipelineRunPage, ApiError>>> = Memo::new(move |_| {
        let (seq, query, answer): Fetched = page.get()?;
        Some(answer.map(|mut page| {
            let mut filters = query.clone();
            if let Some(service) = scope.service() {
                filters.service = Some(service);
            }
            let changes = live.runs.with(|updates| updates.newer_than(seq));
            let changes: Vec<_> = changes.iter().map(|(key, change)| (key, change)).collect();
            patch(&mut page.runs, &changes, &filters, query.cursor.is_none());
            page
        }))
    });
    // A page reached by going back that turns out to be the newest is the live first page: drop its cursor.
    let navigate = use_navigate();
    Effect::new({
        let navigate = navigate.clone();
        move |_| {
            let newest_with_cursor = shown
                .with(|p| matches!(p, Some(Ok(page)) if page.previous.is_none()))
                && query.with_untracked(|q| q.cursor.is_some());
            if newest_with_cursor {
                let mut first = query.get_untracked();
                first.cursor = None;
                navigate(
                    &scope.href(&first),
                    NavigateOptions {
                        replace: true,
                        scroll: false,
                        ..NavigateOptions::default()
                    },
                );
            }
        }
    });
    let status = Memo::new(move |_| {
        shown.with(|p| {
            p.as_ref()
                .map(|r| r.as_ref().map(|_| ()).map_err(Clone::clone))
        })
    });

    view! {
        <div class="run-list" data-testid="run-list">
            <Filters scope query shown />
            <ErrorBoundary fallback=show_errors>
                {move || match status.get() {
                    None => Ok(view! {
                        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading pipeline runs" data-testid="loading">
                            <div class="skeleton-row"></div><div class="skeleton-row"></div><div class="skeleton-row"></div>
                        </div>
                    }.into_any()),
                    Some(Err(error)) => Err(error),
                    Some(Ok(())) => Ok(view! { <RunTable scope query shown /> }.into_any()),
                }}
            </ErrorBoundary>
        </div>
    }
}

/// Status, branch or commit, trigger and (fleet-wide) service; every change is a new URL without a cursor.
#[component]
fn Filters(
    scope: Scope,
    query: Memo<PipelineQuery>,
    shown: Memo<Option<Result<PipelineRunPage, ApiError>>>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let navigate = use_navigate();
    let go = move |change: &dyn Fn(&mut PipelineQuery)| {
        let mut next = query.get_untracked();
        change(&mut next);
        next.cursor = None;
        navigate(&scope.href(&next), NavigateOptions::default());
    };
    let go = StoredValue::new_local(go);
    let set = move |field: fn(&mut PipelineQuery) -> &mut Option<String>, value: String| {
        go.with_value(|go| {
            go(&move |q: &mut PipelineQuery| {
                *field(q) = Some(value.clone()).filter(|v| !v.trim().is_empty());
            });
        });
    };
    // The page's triggers, plus the one chosen (a page filtered to nothing still offers it).
    let triggers = Memo::new(move |_| {
        let mut triggers = shown.with(|p| match p {
            Some(Ok(page)) => page.triggers.clone(),
            _ => Vec::new(),
        });
        if let Some(chosen) = query.with(|q| q.trigger.clone())
            && !triggers.contains(&chosen)
        {
            triggers.push(chosen);
        }
        triggers
    });
    let services = Memo::new(move |_| {
        live.fleet.with(|f| {
            f.services()
                .filter(|s| shared::fleet::overview::is_onboarded(s))
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        })
    });
    let filtered = Memo::new(move |_| {
        query.with(|q| {
            q.status.is_some() || q.revision.is_some() || q.trigger.is_some() || q.service.is_some()
        })
    });

    view! {
        <form class="filters run-filters" data-testid="run-filters" role="search" aria-label="Filter runs"
            on:submit=move |ev| ev.prevent_default()>
            {(scope == Scope::Fleet).then(|| view! {
                <label>"Service "
                    <select data-testid="filter-service"
                        prop:value=move || query.with(|q| q.service.clone().unwrap_or_default())
                        on:change=move |ev| set(|q| &mut q.service, event_target_value(&ev))>
                        <option value="">"All services"</option>
                        {move || services.get().into_iter().map(|s| {
                            let selected = query.with(|q| q.service.as_deref() == Some(s.as_str()));
                            view! { <option value=s.clone() selected=selected>{s.clone()}</option> }
                        }).collect_view()}
                    </select>
                </label>
            })}
            <label>"Status "
                <select data-testid="filter-status"
                    prop:value=move || query.with(|q| q.status.clone().unwrap_or_default())
                    on:change=move |ev| set(|q| &mut q.status, event_target_value(&ev))>
                    <option value="">"Any status"</option>
                    {RunStatus::ALL.into_iter().map(|s| view! {
                        <option value=s.param() selected=move || query.with(|q| q.status.as_deref() == Some(s.param()))>{s.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <label>"Branch or commit "
                <input type="search" data-testid="filter-revision" placeholder="main or 3f2a1c9"
                    prop:value=move || query.with(|q| q.revision.clone().unwrap_or_default())
                    on:change=move |ev| set(|q| &mut q.revision, event_target_value(&ev)) />
            </label>
            <label>"Trigger "
                <select data-testid="filter-trigger"
                    prop:value=move || query.with(|q| q.trigger.clone().unwrap_or_default())
                    on:change=move |ev| set(|q| &mut q.trigger, event_target_value(&ev))>
                    <option value="">"Any trigger"</option>
                    {move || triggers.get().into_iter().map(|t| {
                        let selected = query.with(|q| q.trigger.as_deref() == Some(t.as_str()));
                        view! { <option value=t.clone() selected=selected>{t.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
            <Show when=move || filtered.get()>
                <A href=move || scope.href(&PipelineQuery::default()) attr:data-testid="clear-filters" attr:class="clear-filters">"Clear filters"</A>
            </Show>
        </form>
    }
}

/// The rows, the note on dropped history, and the pager.
#[component]
fn RunTable(
    scope: Scope,
    query: Memo<PipelineQuery>,
    shown: Memo<Option<Result<PipelineRunPage, ApiError>>>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let navigate = use_navigate();
    let runs = Memo::new(move |_| {
        shown.with(|p| match p {
            Some(Ok(page)) => page.runs.clone(),
            _ => Vec::new(),
        })
    });
    let facts = Memo::new(move |_| {
        shown.with(|p| match p {
            Some(Ok(page)) => (
                page.next.clone(),
                page.previous.clone(),
                page.dropped,
                page.history_per_service,
                page.total,
            ),
            _ => (None, None, 0, 0, 0),
        })
    });
    // Running runs' durations count up by the second.
    let now = RwSignal::new(browser_now());
    if let Ok(tick) = set_interval_with_handle(
        move || {
            now.try_set(browser_now());
        },
        std::time::Duration::from_secs(1),
    ) {
        on_cleanup(move || tick.clear());
    }
    let filtered = Memo::new(move |_| {
        query.with(|q| {
            q.status.is_some() || q.revision.is_some() || q.trigger.is_some() || q.service.is_some()
        })
    });
    let page_to = move |cursor: Option<String>| {
        let mut next = query.get_untracked();
        next.cursor = cursor;
        navigate(&scope.href(&next), NavigateOptions::default());
    };
    let page_to = StoredValue::new_local(page_to);

    view! {
        {move || (facts.get().2 > 0).then(|| view! {
            <p class="muted small run-history-note" data-testid="runs-dropped">
                {format!("Older runs are not kept in memory (Tower keeps the newest {} per service).", facts.get().3)}
            </p>
        })}
        <Show
            when=move || !runs.with(Vec::is_empty)
            fallback=move || if filtered.get() {
                view! {
                    <p class="empty" data-testid="no-runs">"No runs match these filters. "
                        <A href=move || scope.href(&PipelineQuery::default()) attr:data-testid="clear-filters-empty">"Clear filters"</A>
                    </p>
                }.into_any()
            } else {
                view! { <p class="empty" data-testid="no-runs">"No pipeline runs yet. A run appears here when a commit is pushed and Tekton starts building it."</p> }.into_any()
            }
        >
            <table class="fleet runs" data-testid="run-table">
                <caption class="visually-hidden">"Pipeline runs, newest first"</caption>
                <thead><tr>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Commit"</th>
                    {(scope == Scope::Fleet).then(|| view! { <th scope="col">"Service"</th> })}
                    <th scope="col">"Branch"</th>
                    <th scope="col">"Trigger"</th>
                    <th scope="col">"Who"</th>
                    <th scope="col">"Started"</th>
                    <th scope="col">"Duration"</th>
                    <th scope="col">"Tasks"</th>
                </tr></thead>
                <tbody>
                    <For
                        each=move || runs.get()
                        key=|r| (r.namespace.clone(), r.name.clone(), r.status, (r.tasks.total, r.tasks.succeeded, r.tasks.failed, r.tasks.skipped, r.tasks.running), r.finished_at.clone(), r.started_at.clone())
                        let:run
                    >
                        <RunRow run fleet=scope == Scope::Fleet now clock=live.now />
                    </For>
                </tbody>
            </table>
        </Show>
        <nav class="pager" aria-label="Pages">
            <button type="button" data-testid="run-list-previous"
                disabled=move || facts.with(|f| f.1.is_none())
                on:click=move |_| {
                    if let Some(cursor) = facts.get_untracked().1 {
                        page_to.with_value(|go| go(Some(cursor)));
                    }
                }>"← Newer"</button>
            <span class="muted small" data-testid="run-count">{move || format!("{} runs", facts.get().4)}</span>
            <button type="button" data-testid="run-list-next"
                disabled=move || facts.with(|f| f.0.is_none())
                on:click=move |_| {
                    if let Some(cursor) = facts.get_untracked().0 {
                        page_to.with_value(|go| go(Some(cursor)));
                    }
                }>"Older →"</button>
        </nav>
    }
}

/// One run: status, commit and message, branch, trigger, who, started, duration and tasks.
#[component]
fn RunRow(
    run: PipelineRunSummary,
    fleet: bool,
    /// Ticks every second, for a running run's duration.
    now: RwSignal<String>,
    /// The app's clock, for ages.
    clock: RwSignal<String>,
) -> impl IntoView {
    let href = run.page_path();
    let commit = run.commit.as_deref().map(short_commit);
    let created = run.created_at.clone();
    let started = run
        .started_at
        .clone()
        .unwrap_or_else(|| run.created_at.clone());
    let running = !run.status.is_finished();
    let timed = run.clone();
    let duration = move || {
        let now = if running {
            now.get()
        } else {
            now.get_untracked()
        };
        timed
            .duration_seconds(&now)
            .map(duration)
            .unwrap_or_else(|| "not started".into())
    };
    let counts = run.tasks;
    let done = counts.succeeded + counts.failed + counts.skipped;
    let part = |n: u32| {
        if counts.total == 0 {
            0.0
        } else {
            f64::from(n) * 100.0 / f64::from(counts.total)
        }
    };
    let progress = format!(
        "{done} of {} tasks done: {} succeeded, {} failed, {} skipped, {} running",
        counts.total, counts.succeeded, counts.failed, counts.skipped, counts.running
    );
    let label = commit.unwrap_or_else(|| run.name.clone());
    view! {
        <tr data-testid="run-row" data-run=run.name.clone() data-status=run.status.param()
            data-created=run.created_at.clone()>
            <td>{run_chip(run.status)}</td>
            <td class="run-commit">
                <A href=href.clone() attr:class="mono" attr:data-testid="run-link">
                    {label}
                </A>
                " "
                <span class="run-message">{run.message.clone().unwrap_or_default()}</span>
            </td>
            {fleet.then(|| view! { <td><A href=format!("/services/{}?tab=pipelines", encode_query_value(&run.service))>{run.service.clone()}</A></td> })}
            <td class="mono">{run.branch.clone().unwrap_or_else(|| "—".into())}</td>
            <td>{run.trigger.clone()}</td>
            <td>{run.author.clone().unwrap_or_else(|| "—".into())}</td>
            <td class="muted">
                <time datetime=started.clone() title=started.clone()>{move || age_or_raw(&created, &clock.get())}</time>
            </td>
            <td class="mono" data-testid="run-duration">{duration}</td>
            <td>
                <span class="run-progress" aria-hidden="true">
                    <span class="seg ok" style:width=format!("{:.1}%", part(counts.succeeded))></span>
                    <span class="seg bad" style:width=format!("{:.1}%", part(counts.failed))></span>
                    <span class="seg skip" style:width=format!("{:.1}%", part(counts.skipped))></span>
                    <span class="seg progress" style:width=format!("{:.1}%", part(counts.running))></span>
                </span>
                <span class="small" title=progress.clone() data-testid="run-tasks">{format!("{done}/{}", counts.total)}</span>
                <span class="visually-hidden">{progress}</span>
            </td>
        </tr>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::pipelines::TaskCounts;

    fn run(name: &str, created_at: &str, status: RunStatus) -> PipelineRunSummary {
        PipelineRunSummary {
            namespace: "tekton-ci".into(),
            name: name.into(),
            service: "payments".into(),
            pipeline: None,
            status,
            reason: None,
            commit: Some(format!("{name}0000")),
            message: None,
            branch: Some("main".into()),
            trigger: "github-push".into(),
            author: None,
            created_at: created_at.into(),
            started_at: None,
            finished_at: None,
            tasks: TaskCounts::default(),
        }
    }

    fn names(runs: &[PipelineRunSummary]) -> Vec<&str> {
        runs.iter().map(|r| r.name.as_str()).collect()
    }

    fn key(name: &str) -> (String, String) {
        ("tekton-ci".to_string(), name.to_string())
    }

    #[test]
    fn a_new_run_lands_at_the_top_of_the_first_page_and_pushes_the_oldest_off() {
        let mut runs: Vec<_> = (0..PAGE_SIZE)
            .map(|i| {
                run(
                    &format!("r{i:02}"),
                    &format!("2026-12-01T10:{:02}:00Z", 59 - i),
                    RunStatus::Succeeded,
                )
            })
            .collect();
        let new = RunChange::Updated(Box::new(run(
            "new",
            "2026-12-01T11:00:00Z",
            RunStatus::Running,
        )));
        let k = key("new");
        patch(&mut runs, &[(&k, &new)], &PipelineQuery::default(), true);
        assert_eq!(runs.len(), PAGE_SIZE);
        assert_eq!(runs[0].name, "new");
        assert_eq!(runs[PAGE_SIZE - 1].name, format!("r{:02}", PAGE_SIZE - 2));
    }

    #[test]
    fn a_later_page_updates_its_rows_in_place_and_takes_in_no_new_run() {
        let mut runs = vec![
            run("a", "2026-12-01T10:02:00Z", RunStatus::Running),
            run("b", "2026-12-01T10:01:00Z", RunStatus::Running),
        ];
        let (ka, kn) = (key("a"), key("new"));
        let done = RunChange::Updated(Box::new(run(
            "a",
            "2026-12-01T10:02:00Z",
            RunStatus::Succeeded,
        )));
        let new = RunChange::Updated(Box::new(run(
            "new",
            "2026-12-01T11:00:00Z",
            RunStatus::Running,
        )));
        patch(
            &mut runs,
            &[(&ka, &done), (&kn, &new)],
            &PipelineQuery::default(),
            false,
        );
        assert_eq!(names(&runs), ["a", "b"]);
        assert_eq!(runs[0].status, RunStatus::Succeeded);
    }

    #[test]
    fn the_first_page_drops_a_run_that_stops_matching_and_ignores_new_runs_that_do_not_match() {
        let filters = PipelineQuery {
            status: Some("running".into()),
            ..PipelineQuery::default()
        };
        let mut runs = vec![run("a", "2026-12-01T10:02:00Z", RunStatus::Running)];
        let (ka, kb) = (key("a"), key("b"));
        let done = RunChange::Updated(Box::new(run(
            "a",
            "2026-12-01T10:02:00Z",
            RunStatus::Failed,
        )));
        let other = RunChange::Updated(Box::new(run(
            "b",
            "2026-12-01T10:05:00Z",
            RunStatus::Succeeded,
        )));
        patch(&mut runs, &[(&ka, &done), (&kb, &other)], &filters, true);
        assert!(runs.is_empty());
    }

    #[test]
    fn a_removed_run_leaves_any_page() {
        let mut runs = vec![
            run("a", "2026-12-01T10:02:00Z", RunStatus::Succeeded),
            run("b", "2026-12-01T10:01:00Z", RunStatus::Succeeded),
        ];
        let ka = key("a");
        patch(
            &mut runs,
            &[(&ka, &RunChange::Removed)],
            &PipelineQuery::default(),
            false,
        );
        assert_eq!(names(&runs), ["b"]);
    }

    #[test]
    fn the_url_of_a_service_tab_keeps_the_tab_and_drops_empty_filters() {
        let owner = Owner::new();
        owner.set();
        let name = Memo::new(|_| "payments".to_string());
        let query = PipelineQuery {
            status: Some("failed".into()),
            revision: Some(String::new()),
            ..PipelineQuery::default()
        };
        assert_eq!(
            Scope::Service(name).href(&query),
            "/services/payments?tab=pipelines&status=failed"
        );
        assert_eq!(Scope::Fleet.href(&PipelineQuery::default()), "/pipelines");
        let read = query_from_url(Scope::Service(name), |key| {
            (key == "service" || key == "trigger").then(|| "x".to_string())
        });
        assert_eq!(read.service, None);
        assert_eq!(read.trigger.as_deref(), Some("x"));
    }
}
