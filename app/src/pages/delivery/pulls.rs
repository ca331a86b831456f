//! PRs (`/prs`): the pull requests Tower opened, open first then recently merged, each with its check runs,
//! its reviews, whether it can merge and what keeps it from merging, linking to the forge. Live: fetched once
//! (and again when the event stream reconnects), then patched by every `pull_request_updated` the stream
//! sends, which the forge's webhooks cause; nothing is fetched on the clock.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::{LazyRoute, lazy_route};
use shared::ApiError;
use shared::delivery::{MergeBlocker, PullRequestView, PullState};
use shared::time::age_or_raw;

use crate::api;
use crate::components::delivery::{
    blocker_slug, check_item, ci_chip, ci_slug, merge_chip, patch_pulls, review_item,
};
use crate::live::{LiveFleet, fetched};
use crate::pages::show_errors;

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
    // Fetched when the page opens and after the stream reconnects (changes may have been missed meanwhile).
    let answer = fetched(move || {
        live.resyncs.track();
        let seq = live.pulls.with_untracked(|p| p.seq());
        async move { api::list_pulls().await.map(|list| (seq, list)) }
    });
    let pulls: Memo<Option<Result<Vec<PullRequestView>, ApiError>>> = Memo::new(move |_| {
        let answer = answer.get()?;
        Some(answer.map(|(seq, mut list)| {
            live.pulls
                .with(|updates| patch_pulls(&mut list, updates, seq, |_| true));
            list
        }))
    });
    let numbers = Memo::new(move |_| {
        pulls.with(|p| {
            p.as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|list| list.iter().map(|pr| pr.number).collect::<Vec<_>>())
                .unwrap_or_default()
        })
    });
    view! {
        <section class="page">
            <div class="page-head"><h1>"Pull requests"</h1><p class="counts">"What Tower proposed; everything changes only when a PR merges."</p></div>
            <ErrorBoundary fallback=show_errors>
                {move || match pulls.with(|p| p.as_ref().map(|r| r.as_ref().map(Vec::is_empty).map_err(Clone::clone))) {
                    None => Ok(view! { <div aria-busy="true" data-testid="loading"><div class="skeleton-row"></div><div class="skeleton-row"></div></div> }.into_any()),
                    Some(Err(error)) => Err(error),
                    Some(Ok(true)) => Ok(view! {
                        <p class="empty" data-testid="no-prs">"Tower has opened no pull requests yet. They appear here when someone runs a golden path on "<A href="/create">"Create"</A>", or promotes or rolls back a service."</p>
                    }.into_any()),
                    Some(Ok(false)) => Ok(view! {
                        <table class="fleet pulls">
                            <thead><tr>
                                <th scope="col">"PR"</th><th scope="col">"For"</th><th scope="col">"Mergeable"</th>
                                <th scope="col">"Checks"</th><th scope="col">"Reviews"</th><th scope="col">"Opened"</th>
                            </tr></thead>
                            <tbody>
                                // Keyed by number: an update redraws its own row, and focus elsewhere stays put.
                                <For each=move || numbers.get() key=|n| *n let:number>
                                    <PullRow pr=Signal::derive(move || pulls.with(|p| {
                                        p.as_ref().and_then(|r| r.as_ref().ok()).and_then(|list| list.iter().find(|pr| pr.number == number).cloned())
                                    })) />
                                </For>
                            </tbody>
                        </table>
                    }.into_any()),
                }}
            </ErrorBoundary>
        </section>
    }
}

/// One pull request, redrawn when it changes.
#[component]
fn PullRow(pr: Signal<Option<PullRequestView>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let now = Signal::derive(move || live.now.get());
    move || {
        pr.get().map(|pr| {
            let state = match pr.state {
                PullState::Open => "open",
                PullState::Merged => "merged",
                PullState::Closed => "closed",
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
            let blockers = pr
                .blockers
                .iter()
                .map(|b| view! { <li data-testid="pr-blocker" data-kind=blocker_slug(b)>{MergeBlocker::sentence(b)}</li> })
                .collect_view();
            let checks = pr.checks.iter().map(check_item).collect_view();
            let reviews = pr.reviews.iter().map(|r| review_item(r, now)).collect_view();
            let merged_at = pr.merged_at.clone();
            let created_at = pr.created_at.clone();
            let no_checks = pr.checks.is_empty();
            let no_reviews = pr.reviews.is_empty();
            view! {
                <tr data-testid="pr-row" data-number=pr.number.to_string() data-state=state
                    data-mergeable=(pr.state == PullState::Open && pr.blockers.is_empty() && pr.mergeable == Some(true)).to_string()>
                    <td><a href=pr.url.clone() rel="noreferrer" target="_blank">{format!("#{}", pr.number)}</a>" "{pr.title.clone()}</td>
                    <td>{pr.service.clone().map(|s| view! { <A href=format!("/services/{s}")>{what}</A> })}</td>
                    <td>
                        {merge_chip(&pr)}
                        {merged_at.map(|at| view! { <span class="muted small">{move || age_or_raw(&at, &now.get())}</span> })}
                        <ul class="checks small" aria-label="What keeps it from merging">{blockers}</ul>
                    </td>
                    <td data-testid="pr-checks" data-ci=ci_slug(pr.ci)>
                        {ci_chip(pr.ci)}
                        {if no_checks {
                            view! { <p class="muted small">"No check has reported yet."</p> }.into_any()
                        } else {
                            view! { <ul class="checks small">{checks}</ul> }.into_any()
                        }}
                    </td>
                    <td data-testid="pr-reviews">
                        {if no_reviews {
                            view! { <span class="muted small">"No reviews yet"</span> }.into_any()
                        } else {
                            view! { <ul class="checks small">{reviews}</ul> }.into_any()
                        }}
                    </td>
                    <td class="muted">{move || age_or_raw(&created_at, &now.get())}{format!(" by {}", pr.author)}</td>
                </tr>
            }
        })
    }
}
