//! Releases (`/releases?service=&environment=&cursor=`): the commits that changed a Release file in one
//! environment — one service's, or every service's when none is chosen — 20 per page, newest first, each with
//! who approved its pull request; `/releases/:sha` shows who, when, the PR and its approvals, the version and
//! the diff, and offers Promote from a dev record. Fetched again whenever the stream says the GitOps
//! repository's main moved (`releases_changed`).

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};
use leptos_router::{LazyRoute, lazy_route};
use shared::auth::Permission;
use shared::delivery::{DEV, PROD, ReleaseDetail, ReleaseRecord, ReviewView};
use shared::fleet::overview::{environments, is_onboarded};
use shared::time::age_or_raw;

use crate::api;
use crate::app::Session;
use crate::components::delivery::{MoveDialog, diff_view};
use crate::components::status::permission_reason;
use crate::live::{LiveFleet, fetched};
use crate::pages::{show_error, show_errors};

/// The query of the Releases page's URL, which is also the query of the API call the page makes; no
/// service means every service's records.
fn query_string(service: Option<&str>, environment: &str, cursor: Option<&str>) -> String {
    release_query(service, environment, cursor).to_query()
}

fn release_query(
    service: Option<&str>,
    environment: &str,
    cursor: Option<&str>,
) -> api::ReleaseQuery {
    api::ReleaseQuery {
        service: service.map(str::to_string),
        environment: Some(environment.to_string()),
        cursor: cursor.map(str::to_string),
    }
}

/// Who approved, in a few words: `grace`, `grace and ken`, or none.
fn approvers(approvals: &[ReviewView]) -> Option<String> {
    let names: Vec<&str> = approvals.iter().map(|a| a.reviewer.as_str()).collect();
    match names.as_slice() {
        [] => None,
        [one] => Some((*one).to_string()),
        [rest @ .., last] => Some(format!("{} and {last}", rest.join(", "))),
    }
}

/// `/releases`, fetched as its own wasm module on the first visit.
#[derive(Debug)]
pub struct ReleasesRoute;

#[lazy_route]
impl LazyRoute for ReleasesRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ReleasesPage /> }.into_any()
    }
}

/// `/releases/:sha`, fetched as its own wasm module on the first visit.
#[derive(Debug)]
pub struct ReleaseDetailRoute;

#[lazy_route]
impl LazyRoute for ReleaseDetailRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ReleaseDetailPage /> }.into_any()
    }
}

/// The list of release records.
#[component]
pub fn ReleasesPage() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let query = use_query_map();
    let service = Memo::new(move |_| query.with(|q| q.get("service").filter(|s| !s.is_empty())));
    let environment = Memo::new(move |_| {
        query.with(|q| {
            q.get("environment")
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| PROD.into())
        })
    });
    let cursor = Memo::new(move |_| query.with(|q| q.get("cursor").filter(|s| !s.is_empty())));
    let names = Memo::new(move |_| {
        live.fleet.with(|f| {
            f.services()
                .filter(|s| is_onboarded(s))
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        })
    });
    let envs = Memo::new(move |_| live.fleet.with(|f| environments(f.services())));
    // Fetched again when main moves (a merge, dev's auto-deploy) and after the stream reconnects.
    let page = fetched(move || {
        live.releases.track();
        live.resyncs.track();
        let q = release_query(
            service.get().as_deref(),
            &environment.get(),
            cursor.get().as_deref(),
        );
        async move { api::list_releases(&q).await }
    });
    let navigate = use_navigate();
    let go = move |service: String, environment: String| {
        let service = (!service.is_empty()).then_some(service);
        navigate(
            &format!(
                "/releases?{}",
                query_string(service.as_deref(), &environment, None)
            ),
            NavigateOptions::default(),
        );
    };
    let go_env = go.clone();
    let select = |testid: &'static str,
                  label: &'static str,
                  any: &'static str,
                  options: Memo<Vec<String>>,
                  current: Memo<String>,
                  on: Box<dyn Fn(String)>| {
        view! {
            <label>{label}" "
                <select data-testid=testid on:change=move |ev| on(event_target_value(&ev))>
                    <option value="">{any}</option>
                    {move || options.get().into_iter().map(|o| {
                        let selected = o == current.get();
                        view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                    }).collect_view()}
                </select>
            </label>
        }
    };
    let current_service = Memo::new(move |_| service.get().unwrap_or_default());

    view! {
        <section class="page">
            <div class="page-head"><h1>"Releases"</h1><p class="counts">"Commits that changed a Release, newest first."</p></div>
            <div class="filters">
                {select("filter-service", "Service", "All services", names, current_service,
                    Box::new(move |s| go(s, environment.get_untracked())))}
                {select("filter-environment", "Environment", "Choose…", envs, environment,
                    Box::new(move |e| go_env(service.get_untracked().unwrap_or_default(), e)))}
            </div>
            <ErrorBoundary fallback=show_errors>
            {move || match page.get() {
                None => Ok(view! { <div aria-busy="true" data-testid="loading"><div class="skeleton-row"></div><div class="skeleton-row"></div></div> }.into_any()),
                Some(Err(error)) => Err(error),
                Some(Ok(page)) if page.records.is_empty() => Ok(view! {
                    <p class="empty" data-testid="no-releases">{match service.get() {
                        Some(_) => "No release records here yet. One appears when a PR changing this Release is merged, or when dev auto-deploys a green build.",
                        None => "No release records in this environment yet. One appears when a PR changing a Release is merged, or when dev auto-deploys a green build.",
                    }}</p>
                }.into_any()),
                Some(Ok(page)) => {
                    let every = service.get().is_none();
                    let rows = page.records.iter().map(|r| record_row(r, every, live.now.into())).collect_view();
                    let next = page.next_cursor.map(|c| {
                        let href = format!("/releases?{}", query_string(service.get().as_deref(), &environment.get(), Some(&c)));
                        view! { <A href=href attr:data-testid="next-page">"Older records →"</A> }
                    });
                    let first = cursor.get().map(|_| {
                        let href = format!("/releases?{}", query_string(service.get().as_deref(), &environment.get(), None));
                        view! { <A href=href attr:data-testid="first-page">"← Newest"</A> }
                    });
                    Ok(view! {
                        <table class="fleet releases">
                            <thead><tr>
                                <th scope="col">"Commit"</th>
                                {every.then(|| view! { <th scope="col">"Service"</th> })}
                                <th scope="col">"Version"</th><th scope="col">"Who"</th><th scope="col">"When"</th>
                                <th scope="col">"PR"</th><th scope="col">"Approved by"</th><th scope="col">"Message"</th>
                            </tr></thead>
                            <tbody>{rows}</tbody>
                        </table>
                        <nav class="pager" aria-label="Pages">{first}" "{next}</nav>
                    }.into_any())
                }
            }}
            </ErrorBoundary>
        </section>
    }
}

/// One record; `every` adds its service (the list of every service's records).
fn record_row(r: &ReleaseRecord, every: bool, now: Signal<String>) -> AnyView {
    let short: String = r.sha.chars().take(7).collect();
    let at = r.at.clone();
    let service = every.then(|| {
        view! { <td data-testid="release-service">{r.service.clone().map(|s| view! { <A href=format!("/services/{s}")>{s.clone()}</A> })}</td> }
    });
    let approved = match (approvers(&r.approvals), r.pr_number) {
        (Some(names), _) => {
            view! { <span data-testid="release-approvals">{names}</span> }.into_any()
        }
        (None, Some(_)) => {
            view! { <span class="muted" data-testid="release-approvals">"nobody"</span> }.into_any()
        }
        (None, None) => view! { <span class="muted">"no PR"</span> }.into_any(),
    };
    view! {
        <tr data-testid="release-row" data-sha=r.sha.clone() data-pr=r.pr_number.map(|n| n.to_string())>
            <td><A href=format!("/releases/{}", r.sha) attr:class="mono">{short}</A></td>
            {service}
            <td class="mono">{r.version.clone().unwrap_or_else(|| "?".into())}</td>
            <td>{r.author.clone()}</td>
            <td class="muted" title=r.at.clone()>{move || age_or_raw(&at, &now.get())}</td>
            <td>{r.pr_number.map(|n| format!("#{n}"))}</td>
            <td>{approved}</td>
            <td>{r.message.clone()}</td>
        </tr>
    }
    .into_any()
}

/// One release record: who, when, the PR, the version and the diff.
#[component]
pub fn ReleaseDetailPage() -> impl IntoView {
    let params = use_params_map();
    let sha = Memo::new(move |_| params.with(|p| p.get("sha").unwrap_or_default()));
    let detail = fetched(move || {
        let sha = sha.get();
        async move { api::get_release(&sha).await }
    });
    view! {
        <section class="page">
            <nav class="crumbs" aria-label="Breadcrumb"><A href="/releases">"Releases"</A>" / "<span class="mono">{move || sha.get()}</span></nav>
            {move || match detail.get() {
                None => view! { <div aria-busy="true" data-testid="loading"><div class="skeleton-row skeleton-title"></div><div class="skeleton-row"></div></div> }.into_any(),
                Some(Err(error)) => show_error(&error),
                Some(Ok(detail)) => detail_view(detail),
            }}
        </section>
    }
}

fn detail_view(d: ReleaseDetail) -> AnyView {
    let live = expect_context::<LiveFleet>();
    let r = &d.record;
    let back = d.service.as_ref().map(|s| {
        format!(
            "/releases?{}",
            query_string(Some(s), d.environment.as_deref().unwrap_or(PROD), None)
        )
    });
    let now = live.now.get_untracked();
    let approvals = if r.approvals.is_empty() {
        view! { <span class="muted">{if r.pr_number.is_some() { "nobody approved its PR" } else { "no PR to approve" }}</span> }.into_any()
    } else {
        view! {
            <ul class="checks">{r.approvals.iter().map(|a| view! {
                <li data-testid="release-approval" data-reviewer=a.reviewer.clone()>
                    <strong>{a.reviewer.clone()}</strong>
                    {a.at.as_ref().map(|at| view! { <span class="muted" title=at.clone()>{format!(" {}", age_or_raw(at, &now))}</span> })}
                </li>
            }).collect_view()}</ul>
        }.into_any()
    };
    let promote = d
        .service
        .clone()
        .filter(|_| d.environment.as_deref() == Some(DEV))
        .map(|service| view! { <PromoteFromRecord service version=r.version.clone() /> });
    view! {
        <article class="release-detail" data-testid="release-detail">
            <h1>{format!("{} in {}", d.service.clone().unwrap_or_else(|| "?".into()), d.environment.clone().unwrap_or_else(|| "?".into()))}</h1>
            <p>{r.message.clone()}</p>
            <dl class="facts">
                <dt>"Version"</dt><dd class="mono" data-testid="release-version">{r.version.clone().unwrap_or_else(|| "unreadable".into())}</dd>
                <dt>"Who"</dt><dd data-testid="release-author">{r.author.clone()}</dd>
                <dt>"When"</dt><dd title=r.at.clone()>{age_or_raw(&r.at, &live.now.get_untracked())}</dd>
                <dt>"Pull request"</dt>
                <dd data-testid="release-pr">{match (r.pr_number, d.pr_url.clone()) {
                    (Some(n), Some(url)) => view! { <a href=url rel="noreferrer" target="_blank">{format!("#{n}")}</a> }.into_any(),
                    (Some(n), None) => format!("#{n}").into_any(),
                    _ => "none (a direct commit)".into_any(),
                }}</dd>
                <dt>"Approved by"</dt><dd data-testid="release-approvals">{approvals}</dd>
                <dt>"Commit"</dt>
                <dd class="mono">{match d.url.clone() {
                    Some(url) => view! { <a href=url rel="noreferrer" target="_blank">{r.sha.clone()}</a> }.into_any(),
                    None => r.sha.clone().into_any(),
                }}</dd>
            </dl>
            {back.map(|href| view! { <p><A href=href>"All records of this service here"</A></p> })}
            {promote}
            <h2>"Diff"</h2>
            <ul class="files">{d.files.iter().map(|f| view! { <li data-testid="release-file"><span class="muted">{format!("{} ", f.status)}</span><span class="mono">{f.path.clone()}</span></li> }).collect_view()}</ul>
            {diff_view(&d.diff)}
        </article>
    }
    .into_any()
}

/// Promote from a dev record: Promote always moves prod to what dev runs now, so the button says when that is
/// not this record's version.
#[component]
fn PromoteFromRecord(service: String, version: Option<String>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let session = expect_context::<Session>();
    let open = RwSignal::new(false);
    let summary = {
        let service = service.clone();
        Memo::new(move |_| {
            live.fleet.with(|f| {
                f.service(&service).map(|s| {
                    let dev = s
                        .environments
                        .iter()
                        .find(|c| c.environment == DEV)
                        .and_then(|c| c.version.clone());
                    (s.owner.clone(), dev)
                })
            })
        })
    };
    move || {
        let (owner, dev) = summary.get()?;
        let decision = session.info()?.decide(Permission::Promote, Some(&owner));
        if !decision.allowed() {
            return permission_reason(decision);
        }
        let note = (dev.is_some() && dev != version).then(|| {
            format!("Dev now runs {}, not this record's version; Promote moves prod to what dev runs now.", dev.clone().unwrap_or_default())
        });
        let service = service.clone();
        Some(view! {
            <p>
                <button type="button" data-testid="promote-button" aria-haspopup="dialog" on:click=move |_| open.set(true)>"Promote to prod…"</button>
                {note.map(|n| view! { <span class="muted small">" "{n}</span> })}
            </p>
            {move || open.get().then(|| view! {
                <MoveDialog service=service.clone() rollback=false
                    on_close=Callback::new(move |()| open.set(false)) on_opened=Callback::new(|()| ()) />
            })}
        }.into_any())
    }
}
