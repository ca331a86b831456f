//! The Overview (`/`): the fleet as a services × environments matrix, filtered by what the URL says
//! (`?q=&team=&env=&status=`) and ordered by name or by error budget left (`?sort=budget`), with fleet counts,
//! each service's worst SLO, a line on the platform's own Applications and the recent-activity feed.
//! Everything updates live.

use leptos::html::Input;
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};
use shared::fleet::CellProblem;
use shared::fleet::overview::{
    FleetCounts, OverviewFilter, OverviewSort, StatusFilter, environments, fleet_counts,
    matrix_tone, merge_activity, onboard_href, sort_by_budget, teams,
};
use shared::fleet::{ActivityItem, ActivityKind, EnvironmentCell, ServiceSummary, SourceState};
use shared::rows::visible_window;
use shared::slo::{SloSummary, budget_tone, format_budget};
use shared::status::Tone;
use shared::time::{age_or_raw, since};
use shared::{ApiError, ErrorCode};

use crate::api;
use crate::components::platform::{counts_in_words, standing_look, worst_standing};
use crate::components::status::{chip, drift_chip, health_chip, problem_chip, sync_chip};
use crate::live::LiveFleet;
use crate::pages::show_errors;

/// How many activity items the feed keeps (as many as the server does).
const FEED_LENGTH: usize = 50;
/// How many activity items the feed shows at first, and how many more each "Older activity" shows.
const FEED_PAGE: usize = 10;
/// How often the SLO column is asked again: the server evaluates objectives every 30 s.
const SLO_REFRESH_SECONDS: i64 = 30;

/// The fleet at a glance.
#[component]
pub fn Overview() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let query = use_query_map();
    let filter = Memo::new(move |_| query.with(|q| OverviewFilter::from_query(|key| q.get(key))));
    let navigate = use_navigate();
    let set_filter = move |next: OverviewFilter| {
        navigate(
            &next.to_path(),
            NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };
    let set_search = {
        let set_filter = set_filter.clone();
        move |text: String| {
            let mut next = filter.get_untracked();
            next.q = text;
            set_filter(next);
        }
    };

    // `/` jumps to the search box from anywhere on the page, as on GitHub.
    let search_box: NodeRef<Input> = NodeRef::new();
    crate::pages::focus_on_slash(search_box);

    // Exact for the whole fleet, not for the rows in view; counted once per change, not once per tile.
    let counts = Memo::new(move |_| live.fleet.with(|f| fleet_counts(f.services())));
    let all_teams = Memo::new(move |_| live.fleet.with(|f| teams(f.services())));
    let all_envs = Memo::new(move |_| live.fleet.with(|f| environments(f.services())));
    let columns = Memo::new(move |_| match filter.get().env {
        Some(env) => vec![env],
        None => all_envs.get(),
    });
    let slos = slo_summaries();
    // The rows by name, in order: what the filters select from the whole fleet, which may be ten thousand
    // services. Only the rows in view are rendered (see [`Matrix`]).
    let rows = Memo::new(move |_| {
        let filter = filter.get();
        live.fleet.with(|fleet| {
            let mut shown = filter.apply(fleet);
            if filter.sort == OverviewSort::Budget {
                slos.with(|slos| sort_by_budget(&mut shown, slos.shown().unwrap_or_default()));
            }
            shown
                .into_iter()
                .map(|service| service.name.clone())
                .collect::<Vec<String>>()
        })
    });
    let slo_column = Memo::new(move |_| slos.with(|slos| slos.shown().is_some()));
    let sort_href = move |sort: OverviewSort| {
        OverviewFilter {
            sort,
            ..filter.get()
        }
        .to_path()
    };

    let select = move |key: &'static str| {
        let set_filter = set_filter.clone();
        move |event: leptos::ev::Event| {
            let value = event_target_value(&event);
            let value = (!value.is_empty()).then_some(value);
            let mut next = filter.get_untracked();
            match key {
                "team" => next.team = value,
                "env" => next.env = value,
                _ => next.status = value.and_then(|v| StatusFilter::parse(&v)),
            }
            set_filter(next);
        }
    };

    view! {
        <section class="page overview">
            <div class="page-head">
                <h1>"Overview"</h1>
                <p class="counts" data-testid="fleet-counts">
                    {move || counts.with(|counts| format!("{} services · {} teams", counts.services, counts.teams))}
                </p>
            </div>
            <FleetStatus counts />
            <PlatformLine />
            <UnreachableClusters />
            <div class="filters" role="search">
                <label class="search">
                    <span class="visually-hidden">"Search services"</span>
                    <input
                        type="search"
                        node_ref=search_box
                        placeholder="Search services (press /)"
                        data-testid="search"
                        prop:value=move || filter.get().q
                        on:input=move |event| set_search(event_target_value(&event))
                    />
                </label>
                <label>"Team "
                    <select data-testid="filter-team" prop:value=move || filter.get().team.unwrap_or_default() on:change=select("team")>
                        <option value="">"All teams"</option>
                        {move || all_teams.get().into_iter().map(|team| view! {
                            <option value=team.clone() selected=filter.get_untracked().team.as_ref() == Some(&team)>{team.clone()}</option>
                        }).map(IntoAny::into_any).collect_view()}
                    </select>
                </label>
                <label>"Environment "
                    <select data-testid="filter-env" prop:value=move || filter.get().env.unwrap_or_default() on:change=select("env")>
                        <option value="">"All environments"</option>
                        {move || all_envs.get().into_iter().map(|env| view! {
                            <option value=env.clone() selected=filter.get_untracked().env.as_ref() == Some(&env)>{env.clone()}</option>
                        }).map(IntoAny::into_any).collect_view()}
                    </select>
                </label>
                <label>"Status "
                    <select data-testid="filter-status" prop:value=move || filter.get().status.map(|s| s.as_str()).unwrap_or_default() on:change=select("status")>
                        <option value="">"Any status"</option>
                        {StatusFilter::ALL.into_iter().map(|status| view! {
                            <option value=status.as_str() selected=move || filter.get_untracked().status == Some(status)>{status.label()}</option>
                        }).map(IntoAny::into_any).collect_view()}
                    </select>
                </label>
                {move || slo_column.get().then(|| view! {
                    <nav class="sort-picker" aria-label="Order">
                        <span class="muted">"Sort "</span>
                        {OverviewSort::ALL.into_iter().map(|sort| view! {
                            <a
                                href=move || sort_href(sort)
                                aria-current=move || (filter.get().sort == sort).then_some("true")
                                data-testid=format!("sort-{}", sort.as_str())
                            >{sort.label()}</a>
                        }).collect_view()}
                    </nav>
                })}
                {move || filter.get().is_active().then(|| view! { <A href=move || filter.get().cleared().to_path() attr:data-testid="clear-filters">"Clear filters"</A> })}
            </div>
            {move || slos.with(|slos| slos.error().map(|error| view! {
                <p class="error small" role="alert" data-testid="slo-summary-error">
                    {format!("Service level objectives could not be loaded: {error} The rest of the Overview is live.")}
                </p>
            }))}
            <div class="overview-grid">
                <div class="matrix-wrap">
                    <ErrorBoundary fallback=show_errors>
                        {move || match live.loaded.get() {
                            None => Ok(view! { <TableSkeleton /> }.into_any()),
                            Some(Err(error)) => Err(error),
                            Some(Ok(())) => Ok(view! {
                                <Show
                                    when=move || !rows.with(Vec::is_empty)
                                    fallback=move || view! { <EmptyFleet filtering=filter.get().is_active() /> }
                                >
                                    <Matrix rows columns slos slo_column />
                                </Show>
                            }.into_any()),
                        }}
                    </ErrorBoundary>
                    <NotOnboarded filter />
                </div>
                <ActivityFeed />
            </div>
        </section>
    }
}

/// The SLO column's data: the last answer, kept until the next one replaces it.
#[derive(Debug, Clone, Default, PartialEq)]
enum SloSummaries {
    #[default]
    Loading,
    /// SLOs are not configured in this Tower (its 404 says so): no column, no error.
    NotConfigured,
    Failed(ApiError),
    Loaded(Vec<SloSummary>),
}

impl SloSummaries {
    /// The summaries to show, when the column is shown.
    fn shown(&self) -> Option<&[SloSummary]> {
        match self {
            SloSummaries::Loaded(summaries) => Some(summaries),
            _ => None,
        }
    }

    fn error(&self) -> Option<ApiError> {
        match self {
            SloSummaries::Failed(error) => Some(error.clone()),
            _ => None,
        }
    }
}

/// Every service's worst objective, asked again every 30 s on the app's clock.
fn slo_summaries() -> Memo<SloSummaries> {
    let live = expect_context::<LiveFleet>();
    let tick = Memo::new(move |_| {
        live.now
            .with(|now| shared::time::parse_rfc3339(now).unwrap_or_default())
            .div_euclid(SLO_REFRESH_SECONDS)
    });
    let answer = crate::live::fetched(move || {
        tick.track();
        api::list_slo_summaries()
    });
    Memo::new(move |_| {
        answer.with(|answer| match answer {
            None => SloSummaries::Loading,
            Some(Ok(summaries)) => SloSummaries::Loaded(summaries.clone()),
            Some(Err(error))
                if error.code == ErrorCode::NotFound
                    && error.message.ends_with("is not configured in this Tower.") =>
            {
                SloSummaries::NotConfigured
            }
            // Tower is still evaluating for the first time: the column appears with the next answer.
            Some(Err(error)) if error.code == ErrorCode::Unavailable => SloSummaries::Loading,
            Some(Err(error)) => SloSummaries::Failed(error.clone()),
        })
    })
}

/// The height of a matrix row in pixels, the same for every row (`--fleet-row-height` in `style/tower.css`),
/// so which rows are in view follows from the scroll position alone.
const ROW_HEIGHT: f64 = 60.0;
/// Rows rendered above and below the view, so a fast scroll or a keyboard page shows rows, not a gap.
const OVERSCAN: usize = 12;

/// The matrix, rendering only the rows in the window's view (and [`OVERSCAN`] either side): the rest are two
/// spacers of the height they would take, so the page scrolls as if every row were there, and a thousand or
/// ten thousand services cost the DOM the same. The window's own scrolling is used (no inner scroll box),
/// so the keyboard, the scroll bar and the browser's position keep working as on any page.
#[component]
fn Matrix(
    rows: Memo<Vec<String>>,
    columns: Memo<Vec<String>>,
    slos: Memo<SloSummaries>,
    slo_column: Memo<bool>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let body: NodeRef<leptos::html::Tbody> = NodeRef::new();
    // How far the body's top is above the window's top, and the window's height, in pixels.
    let view_port = RwSignal::new((0.0_f64, window_height()));
    let measure = move || {
        if let Some(body) = body.get_untracked() {
            let top = body.get_bounding_client_rect().top();
            view_port.set((-top, window_height()));
        }
    };
    let scroll = window_event_listener(leptos::ev::scroll, move |_| measure());
    let resize = window_event_listener(leptos::ev::resize, move |_| measure());
    on_cleanup(move || {
        scroll.remove();
        resize.remove();
    });
    // What is above the matrix (banners, tiles) can change height with the rows: measure after each change.
    Effect::new(move |_| {
        rows.track();
        if body.get().is_some() {
            measure();
        }
    });
    let range = Memo::new(move |_| {
        let (top, height) = view_port.get();
        visible_window(top, height, ROW_HEIGHT, rows.with(Vec::len), OVERSCAN)
    });
    let in_view = Memo::new(move |_| {
        let range = range.get();
        rows.with(|names| names.get(range).map(<[String]>::to_vec).unwrap_or_default())
    });
    // Each row's newest summary: a change anywhere in the fleet re-reads only the rows in view, and a row
    // is rendered again only when its own service changed.
    let shown = move || {
        in_view.with(|names| {
            live.fleet.with(|fleet| {
                names
                    .iter()
                    .filter_map(|name| fleet.service(name).cloned())
                    .collect::<Vec<_>>()
            })
        })
    };
    let spans = move || 2 + columns.with(Vec::len) + usize::from(slo_column.get());
    let spacer = move |height: f64| {
        view! {
            <tr class="row-spacer" aria-hidden="true">
                <td colspan=spans style:height=format!("{height}px")></td>
            </tr>
        }
    };
    // Where a row is among all rows (1 is the header), for assistive technology, which sees only a window.
    let row_index = move |name: String| {
        Signal::derive(move || {
            let offset = in_view.with(|names| names.iter().position(|n| *n == name));
            offset.map_or(0, |offset| range.get().start + offset + 2)
        })
    };
    view! {
        <table class="fleet matrix" data-testid="fleet-table" aria-rowcount=move || rows.with(Vec::len) + 1
            data-rows=move || rows.with(Vec::len)>
            <thead>
                <tr aria-rowindex="1">
                    <th scope="col">"Service"</th>
                    <th scope="col">"Owner"</th>
                    {move || columns.get().into_iter().map(|env| view! { <th scope="col">{env}</th> }).map(IntoAny::into_any).collect_view()}
                    {move || slo_column.get().then(|| view! { <th scope="col">"SLO"</th> })}
                </tr>
            </thead>
            <tbody node_ref=body>
                {move || spacer(range.get().start as f64 * ROW_HEIGHT)}
                <For
                    each=shown
                    key=|service| service.clone()
                    children=move |service| {
                        let index = row_index(service.name.clone());
                        view! { <ServiceRow service index columns slos slo_column /> }
                    }
                />
                {move || spacer((rows.with(Vec::len) - range.get().end) as f64 * ROW_HEIGHT)}
            </tbody>
        </table>
    }
}

/// The browser window's inner height in pixels (a generous guess where there is none).
fn window_height() -> f64 {
    window()
        .inner_height()
        .ok()
        .and_then(|height| height.as_f64())
        .unwrap_or(1000.0)
}

#[component]
fn ServiceRow(
    service: ServiceSummary,
    index: Signal<usize>,
    columns: Memo<Vec<String>>,
    slos: Memo<SloSummaries>,
    slo_column: Memo<bool>,
) -> impl IntoView {
    let href = format!("/services/{}", service.name);
    let name = service.name.clone();
    let description = service.description.clone();
    let row_name = service.name.clone();
    let owner = service.owner.clone();
    let slo_service = service.name.clone();
    view! {
        <tr class="service-row" data-testid="service-row" data-service=row_name aria-rowindex=index>
            <th scope="row">
                <A href=href>{name}</A>
                <span class="muted small description" title=service.description.clone()>{description}</span>
            </th>
            <td>{owner}</td>
            {move || {
                let service = service.clone();
                columns.get().into_iter().map(move |env| {
                    let cell = service.environments.iter().find(|c| c.environment == env).cloned();
                    view! { <MatrixCell service=service.name.clone() environment=env cell /> }
                }).map(IntoAny::into_any).collect_view()
            }}
            {move || slo_column.get().then(|| {
                let summary = slos.with(|slos| {
                    slos.shown().and_then(|all| all.iter().find(|s| s.service == slo_service).cloned())
                });
                view! { <SloCell service=slo_service.clone() summary /> }
            })}
        </tr>
    }
}

/// A service's worst error budget left, marked when an objective burns, linking to where it is shown.
#[component]
fn SloCell(service: String, summary: Option<SloSummary>) -> impl IntoView {
    let Some(summary) = summary else {
        return view! {
            <td class="slo-cell" data-testid="slo-cell" data-service=service data-budget="none">
                <span class="muted small">"no objectives"</span>
            </td>
        }
        .into_any();
    };
    let remaining = summary.worst.as_ref().map(|w| w.budget_remaining);
    let tone = budget_tone(remaining);
    let title = summary.worst.as_ref().map(|w| {
        format!(
            "{} in {}: {} of its error budget left",
            w.name,
            w.environment,
            format_budget(Some(w.budget_remaining))
        )
    });
    view! {
        <td class=format!("slo-cell {}", tone.class()) data-testid="slo-cell" data-service=service
            data-burning=if summary.burning { "true" } else { "false" }
            data-budget=format_budget(remaining)>
            <a href=summary.href() class="slo-budget" title=title>{format_budget(remaining)}</a>
            {summary.burning.then(|| chip(Tone::Bad, "⚠", "Burning".into(), Some("slo-burning")))}
        </td>
    }
    .into_any()
}

#[component]
fn MatrixCell(
    service: String,
    environment: String,
    cell: Option<EnvironmentCell>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let href = format!("/services/{service}?env={environment}");
    let Some(cell) = cell else {
        return view! {
            <td class="cell" data-testid="matrix-cell" data-service=service data-env=environment data-tone="absent">
                <span class="muted">"not deployed"</span>
            </td>
        }
        .into_any();
    };
    let tone = matrix_tone(&cell);
    view! {
        <td class=format!("cell {}", tone.class()) data-testid="matrix-cell" data-service=service data-env=environment
            data-tone=tone.class()>
            <a href=href class="cell-version mono" data-testid="cell-version">
                {cell.version.clone().unwrap_or_else(|| "no version".into())}
            </a>
            <span class="chips">
                {sync_chip(cell.sync)}
                {health_chip(cell.health)}
                {cell.drift.then(drift_chip)}
                {cell.problems.iter().map(|p| problem_chip(*p)).collect_view()}
            </span>
            {cell.unreachable_since.clone().map(|at| {
                // With several clusters, which of them: the others are live.
                let which = if cell.unreachable_clusters.is_empty() {
                    "unreachable".to_string()
                } else {
                    format!("{} unreachable", cell.unreachable_clusters.join(", "))
                };
                view! {
                    <span class="unreachable small" data-testid="unreachable">
                        <span class="glyph" aria-hidden="true">"⚠ "</span>
                        {move || format!("{which} {}", since(&at, &live.now.get()))}
                    </span>
                }
            })}
        </td>
    }
    .into_any()
}

/// The fleet in numbers; each number links to the matching status filter.
#[component]
fn FleetStatus(counts: Memo<FleetCounts>) -> impl IntoView {
    let counts = move |count: fn(&FleetCounts) -> usize| counts.with(count);
    let tile = move |label: &'static str,
                     status: StatusFilter,
                     tone: Tone,
                     count: fn(&FleetCounts) -> usize| {
        let href = OverviewFilter {
            status: Some(status),
            ..Default::default()
        }
        .to_path();
        view! {
            <A href=href attr:class=move || {
                let n = counts(count);
                format!("tile {}", if n == 0 && tone != Tone::Ok { "tile-zero" } else { tone.class() })
            } attr:data-testid=format!("count-{}", status.as_str())>
                <strong>{move || counts(count)}</strong>" "{label}
            </A>
        }
    };
    view! {
        <nav class="tiles" aria-label="Fleet status" data-testid="fleet-status">
            {tile("synced and healthy", StatusFilter::Healthy, Tone::Ok, |c| c.healthy)}
            {tile("degraded", StatusFilter::Degraded, Tone::Bad, |c| c.degraded)}
            {tile("out of sync", StatusFilter::OutOfSync, Tone::Warn, |c| c.out_of_sync)}
            {tile("drifted", StatusFilter::Drift, Tone::Warn, |c| c.drifted)}
            {tile("unreachable", StatusFilter::Unreachable, Tone::Unknown, |c| c.unreachable)}
            {tile("stale secret", StatusFilter::Problem(CellProblem::StaleSecret), Tone::Warn, |c| c.stale_secret)}
            {tile("composition error", StatusFilter::Problem(CellProblem::CompositionError), Tone::Bad, |c| c.composition_error)}
            {tile("schema behind", StatusFilter::Problem(CellProblem::SchemaBehind), Tone::Warn, |c| c.schema_behind)}
            {tile("schema check failed", StatusFilter::Problem(CellProblem::SchemaCheckFailed), Tone::Bad, |c| c.schema_check_failed)}
            <span class="muted small">{move || format!("of {} deployments", counts(|c| c.deployments))}</span>
        </nav>
    }
}

/// The platform's own Applications in one line from the stream's counts, linking to the Platform page;
/// waiting for a CRD is counted apart from failing. Nothing until the stream has reported them.
#[component]
fn PlatformLine() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    move || {
        live.platform.get().map(|counts| {
            let (tone, glyph, slug) = standing_look(worst_standing(&counts));
            view! {
                <p class=format!("platform-line small {}", tone.class()) data-standing=slug>
                    <span class="glyph" aria-hidden="true">{glyph}" "</span>
                    <a href="/platform" data-testid="overview-platform">
                        {format!("Platform: {}", counts_in_words(&counts))}
                    </a>
                </p>
            }
        })
    }
}

/// The services the catalog knows that are not on the platform yet (a `catalog-info.yaml`, no Component):
/// no matrix row and in no count, listed here with Onboard. Nothing while there are none.
#[component]
fn NotOnboarded(filter: Memo<OverviewFilter>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    move || {
        let services: Vec<ServiceSummary> = live
            .fleet
            .with(|f| filter.with(|filter| filter.not_onboarded(f).into_iter().cloned().collect()));
        let rows = services
            .into_iter()
            .map(|s| {
                let (onboard, href) = (onboard_href(&s), format!("/services/{}", s.name));
                let about = format!(" {} · {} ", s.owner, s.description);
                let row = s.name.clone();
                view! {
                    <li data-testid="not-onboarded" data-service=row>
                        <A href=href>{s.name}</A>
                        <span class="muted small">{about}</span>
                        <a class="button" href=onboard data-testid="onboard-button">"Onboard"</a>
                    </li>
                }
            })
            .collect::<Vec<_>>();
        (!rows.is_empty()).then(|| {
            view! {
                <section class="not-onboarded" aria-labelledby="not-onboarded-title">
                    <h2 id="not-onboarded-title">"In the catalog, not onboarded"</h2>
                    <ul class="feed">{rows}</ul>
                </section>
            }
        })
    }
}

/// A banner per cluster that cannot be reached, dated.
#[component]
fn UnreachableClusters() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    move || {
        let now = live.now.get();
        live.sources.with(|sources| {
            sources
                .iter()
                .filter_map(|source| match &source.state {
                    SourceState::Unreachable { since: at, reason } => Some(view! {
                        <p class="banner tone-unknown" role="status" data-testid="cluster-unreachable">
                            <span class="glyph" aria-hidden="true">"⚠ "</span>
                            {format!(
                                "{} cluster {} is unreachable {} ({reason}). Its cells show the last known state; the rest is live.",
                                source.environment.clone().unwrap_or_else(|| "The".into()),
                                source.cluster,
                                since(at, &now),
                            )}
                        </p>
                    }),
                    _ => None,
                })
                .map(IntoAny::into_any).collect_view()
        })
    }
}

/// Deploys, syncs, failed pipelines, merged PRs and degraded apps, newest first, live.
#[component]
fn ActivityFeed() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let fetched = crate::live::fetched(api::list_activity);
    let items = Memo::new(move |_| {
        let fetched = fetched.get().and_then(Result::ok).unwrap_or_default();
        live.activity
            .with(|streamed| merge_activity(streamed, &fetched, FEED_LENGTH))
    });
    let error = move || fetched.get().and_then(Result::err);
    // The newest page first; older pages on request, so the feed never pushes the page down without end.
    let shown = RwSignal::new(FEED_PAGE);
    let page = Memo::new(move |_| {
        items.with(|all| all.iter().take(shown.get()).cloned().collect::<Vec<_>>())
    });
    let older = move || items.with(Vec::len) > shown.get();
    view! {
        <aside class="activity" aria-labelledby="activity-title" data-testid="activity">
            <h2 id="activity-title">"Recent activity"</h2>
            {move || error().map(|error| view! {
                <p class="error" role="alert" data-testid="activity-error">
                    {format!("Earlier activity could not be loaded: {error} New activity still appears here as it happens.")}
                </p>
            })}
            {move || {
                let loading = fetched.get().is_none() && live.activity.with(Vec::is_empty);
                if loading {
                    view! { <div class="skeleton" role="status" aria-busy="true" aria-label="Loading activity">
                        {(0..5).map(|_| view! { <div class="skeleton-row"></div> }).map(IntoAny::into_any).collect_view()}
                    </div> }.into_any()
                } else if items.with(Vec::is_empty) {
                    view! { <p class="empty" data-testid="activity-empty">
                        "Nothing has happened yet. Deploys, syncs, failed pipelines, merged pull requests and degraded apps show up here as they happen."
                    </p> }.into_any()
                } else {
                    view! {
                        <ol class="feed" data-testid="activity-feed" tabindex="0" aria-label="Activity, newest first">
                            <For each=move || page.get() key=|item| (item.at.clone(), item.service.clone(), item.message.clone()) let:item>
                                <ActivityRow item />
                            </For>
                        </ol>
                        {move || older().then(|| view! {
                            <button type="button" class="link" data-testid="activity-older"
                                on:click=move |_| shown.update(|n| *n += FEED_PAGE)>"Older activity"</button>
                        })}
                    }.into_any()
                }
            }}
        </aside>
    }
}

#[component]
fn ActivityRow(item: ActivityItem) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let (glyph, word, tone) = match item.kind {
        ActivityKind::Deploy => ("⇡", "Deploy", Tone::Progress),
        ActivityKind::Sync => ("⟳", "Sync", Tone::Ok),
        ActivityKind::PipelineFailed => ("✕", "Pipeline failed", Tone::Bad),
        ActivityKind::PullRequestMerged => ("⑂", "PR merged", Tone::Ok),
        ActivityKind::Degraded => ("!", "Degraded", Tone::Bad),
        ActivityKind::SloBurning => ("⚠", "SLO burning", Tone::Bad),
    };
    let kind = match item.kind {
        ActivityKind::Deploy => "deploy",
        ActivityKind::Sync => "sync",
        ActivityKind::PipelineFailed => "pipeline_failed",
        ActivityKind::PullRequestMerged => "pull_request_merged",
        ActivityKind::Degraded => "degraded",
        ActivityKind::SloBurning => "slo_burning",
    };
    let href = match &item.environment {
        Some(env) => format!("/services/{}?env={env}", item.service),
        None => format!("/services/{}", item.service),
    };
    // A pull request someone opened by hand names no service; it still belongs in the feed.
    let service =
        (!item.service.is_empty()).then(|| view! { <a href=href>{item.service.clone()}</a> });
    let message = match item.link.clone() {
        // A path inside Tower (a run page) opens here; anything else is another site's page.
        Some(link) if link.starts_with('/') && !link.starts_with("//") => view! {
            <a href=link data-testid="activity-link">{item.message.clone()}</a>
        }
        .into_any(),
        Some(link) => view! {
            <a href=link target="_blank" rel="noopener noreferrer" data-testid="activity-link">{item.message.clone()}</a>
        }
        .into_any(),
        None => item.message.clone().into_any(),
    };
    let at = item.at.clone();
    view! {
        <li class="feed-item" data-testid="activity-item" data-kind=kind data-service=item.service.clone()>
            {chip(tone, glyph, word.into(), None)}
            <span>
                {service}
                {item.environment.clone().map(|env| view! { <span class="muted">{format!(" · {env}")}</span> })}
                " "{message}
            </span>
            <time class="muted small" datetime=item.at.clone() title=item.at.clone()>
                {move || age_or_raw(&at, &live.now.get())}
            </time>
        </li>
    }
}

/// Shaped like the matrix it stands in for, with how far Tower's first picture has got when it is still
/// loading the fleet.
#[component]
fn TableSkeleton() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    view! {
        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading services" data-testid="loading">
            {move || live.progress.get().map(|progress| view! {
                <p class="muted" data-testid="loading-progress">{progress}</p>
            })}
            {(0..8).map(|_| view! { <div class="skeleton-row"></div> }).map(IntoAny::into_any).collect_view()}
        </div>
    }
}

#[component]
fn EmptyFleet(filtering: bool) -> impl IntoView {
    view! {
        <div class="empty" data-testid="empty">
            {if filtering {
                view! { "No service matches these filters. "<A href="/">"Clear filters"</A> }.into_any()
            } else {
                view! { "No services yet. Onboard one from Create, and it appears here as soon as its Component exists." }.into_any()
            }}
        </div>
    }
}
