//! PRs (`/prs`): the pull requests Tower opened, open first then recently merged, with their checks and
//! mergeability, each linking to the forge. Fetched again on the clock's tick so CI keeps up.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::{LazyRoute, lazy_route};
use shared::delivery::{PullRequestView, PullState};
use shared::status::Tone;
use shared::time::age_or_raw;

use crate::api;
use crate::components::delivery::{ci_chip, ci_slug};
use crate::components::status::tone_chip;
use crate::live::{LiveFleet, fetched};
use crate::pages::show_error;

/// `/prs`, fetched as its own wasm module on the first visit.
#[derive(Debug)]
pub struct PullsRoute;

#[lazy_route]
impl LazyRoute for PullsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <PullsPage /> }.into_any()
    }
}

/// Tower's pull requests.
#[component]
pub fn PullsPage() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let pulls = fetched(move || {
        live.now.track();
        api::list_pulls()
    });
    view! {
        <section class="page">
            <div class="page-head"><h1>"Pull requests"</h1><p class="counts">"What Tower proposed; everything changes only when a PR merges."</p></div>
            {move || match pulls.get() {
                None => view! { <div aria-busy="true" data-testid="loading"><div class="skeleton-row"></div><div class="skeleton-row"></div></div> }.into_any(),
                Some(Err(error)) => show_error(&error),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p class="empty" data-testid="no-prs">"Tower has opened no pull requests yet. They appear here when someone runs a golden path on "<A href="/create">"Create"</A>", or promotes or rolls back a service."</p>
                }.into_any(),
                Some(Ok(list)) => {
                    let now = live.now.get();
                    view! {
                        <table class="fleet pulls">
                            <thead><tr><th scope="col">"PR"</th><th scope="col">"For"</th><th scope="col">"State"</th><th scope="col">"Checks"</th><th scope="col">"Opened"</th></tr></thead>
                            <tbody>{list.iter().map(|pr| row(pr, &now)).collect_view()}</tbody>
                        </table>
                    }.into_any()
                }
            }}
        </section>
    }
}

fn row(pr: &PullRequestView, now: &str) -> AnyView {
    let state = match pr.state {
        PullState::Open => match pr.mergeable {
            Some(true) => tone_chip(Tone::Ok, "Open · mergeable", Some("pr-state")),
            Some(false) => tone_chip(Tone::Bad, "Open · conflicts", Some("pr-state")),
            None => tone_chip(Tone::Progress, "Open", Some("pr-state")),
        },
        PullState::Merged => tone_chip(Tone::Ok, "Merged", Some("pr-state")),
        PullState::Closed => tone_chip(Tone::Unknown, "Closed", Some("pr-state")),
    };
    let what = format!(
        "{} {}{}",
        pr.intent.map(|i| i.slug()).unwrap_or("change"),
        pr.service.clone().unwrap_or_default(),
        pr.environment
            .as_ref()
            .map(|e| format!(" in {e}"))
            .unwrap_or_default()
    );
    let checks = pr
        .checks
        .iter()
        .map(|c| {
            let outcome = c.conclusion.clone().unwrap_or_else(|| c.status.clone());
            let name = match c.url.clone() {
                Some(url) => {
                    view! { <a href=url rel="noreferrer" target="_blank">{c.name.clone()}</a> }
                        .into_any()
                }
                None => c.name.clone().into_any(),
            };
            view! { <li>{name}" "<span class="muted">{outcome}</span></li> }
        })
        .collect_view();
    view! {
        <tr data-testid="pr-row" data-number=pr.number.to_string() data-state=match pr.state { PullState::Open => "open", PullState::Merged => "merged", PullState::Closed => "closed" }>
            <td><a href=pr.url.clone() rel="noreferrer" target="_blank">{format!("#{}", pr.number)}</a>" "{pr.title.clone()}</td>
            <td>{pr.service.clone().map(|s| view! { <A href=format!("/services/{s}")>{what}</A> })}</td>
            <td>{state}{pr.merged_at.as_deref().map(|at| view! { <span class="muted small">{age_or_raw(at, now)}</span> })}</td>
            <td data-testid="pr-checks" data-ci=ci_slug(pr.ci)>{ci_chip(pr.ci)}<ul class="checks small">{checks}</ul></td>
            <td class="muted">{format!("{} by {}", age_or_raw(&pr.created_at, now), pr.author)}</td>
        </tr>
    }
    .into_any()
}
