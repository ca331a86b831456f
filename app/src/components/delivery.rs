//! What every write shows: the files and diff of a change before it is made, the pull request after, CI at a
//! glance, and the Promote / Rollback dialog. Plain functions returning `AnyView` where they can, so the pages
//! share one copy of the rendering code.

use leptos::html::Dialog;
use leptos::lazy;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::ApiError;
use shared::delivery::{
    ChangePreview, CheckView, CiState, MergeBlocker, PullRequestView, PullState, ReviewState,
    ReviewView, VersionRef,
};
use shared::status::Tone;

use crate::api;
use crate::components::focus::{keep_tab_inside, remember_focus};
use crate::components::status::{banner, chip, tone_chip};
use crate::live::{LiveFleet, PullUpdates};
use crate::pages::show_error;

/// The pull request of one `pull_request_updated` event as the stream sent it.
fn decode_pull(event: &str) -> Option<PullRequestView> {
    #[derive(serde::Deserialize)]
    struct Updated {
        pull: PullRequestView,
    }
    serde_json::from_str::<Updated>(event).ok().map(|e| e.pull)
}

/// Puts `pr` where Tower's list keeps it, replacing its older self: open ones first (the newest first), then
/// the merged ones (the most recently merged first); one closed without merging leaves the list.
pub fn upsert_pull(list: &mut Vec<PullRequestView>, pr: PullRequestView) {
    if let Some(at) = list.iter().position(|p| p.number == pr.number) {
        if list[at].state == pr.state {
            list[at] = pr;
            return;
        }
        list.remove(at);
    }
    match pr.state {
        PullState::Open => list.insert(0, pr),
        PullState::Merged => {
            let first_merged = list
                .iter()
                .position(|p| p.state != PullState::Open)
                .unwrap_or(list.len());
            list.insert(first_merged, pr);
        }
        PullState::Closed => {}
    }
}

/// Applies the pull request changes the stream sent after the stamp `after` to `list`, oldest first: each one
/// `belongs` is upserted, any other leaves (a service page keeps only its own open ones).
pub fn patch_pulls(
    list: &mut Vec<PullRequestView>,
    updates: &PullUpdates,
    after: u64,
    belongs: impl Fn(&PullRequestView) -> bool,
) {
    for pr in updates.newer_than(after).filter_map(decode_pull) {
        if belongs(&pr) {
            upsert_pull(list, pr);
        } else {
            list.retain(|p| p.number != pr.number);
        }
    }
}

/// A check run in the status vocabulary: queued, running, passed, failed, skipped, …
pub fn check_look(check: &CheckView) -> (Tone, &'static str) {
    match (check.status.as_str(), check.conclusion.as_deref()) {
        ("completed", Some("success")) => (Tone::Ok, "passed"),
        ("completed", Some("failure" | "timed_out" | "startup_failure")) => (Tone::Bad, "failed"),
        ("completed", Some("cancelled")) => (Tone::Warn, "cancelled"),
        ("completed", Some("action_required")) => (Tone::Warn, "action required"),
        ("completed", Some("skipped")) => (Tone::Unknown, "skipped"),
        ("completed", Some("neutral")) => (Tone::Unknown, "neutral"),
        ("completed", _) => (Tone::Unknown, "completed"),
        ("in_progress", _) => (Tone::Progress, "running"),
        _ => (Tone::Unknown, "queued"),
    }
}

/// One check run: its state in words and its name, a link to its page when it has one.
pub fn check_item(check: &CheckView) -> AnyView {
    let (tone, word) = check_look(check);
    let name = match check.url.clone() {
        Some(url) => {
            view! { <a href=url rel="noreferrer" target="_blank">{check.name.clone()}</a> }
                .into_any()
        }
        None => check.name.clone().into_any(),
    };
    view! {
        <li data-testid="pr-check" data-name=check.name.clone() data-status=check.status.clone()
            data-conclusion=check.conclusion.clone().unwrap_or_default()>
            {tone_chip(tone, word, None)}{name}
        </li>
    }
    .into_any()
}

/// A review's state as `data-state` spells it.
pub fn review_slug(state: ReviewState) -> &'static str {
    match state {
        ReviewState::Approved => "approved",
        ReviewState::ChangesRequested => "changes_requested",
        ReviewState::Commented => "commented",
        ReviewState::Dismissed => "dismissed",
    }
}

/// One reviewer's latest review: who, what they said and how long ago (`now` is the clock signal).
pub fn review_item(review: &ReviewView, now: Signal<String>) -> AnyView {
    let (tone, glyph, word) = match review.state {
        ReviewState::Approved => (Tone::Ok, "✓", "approved"),
        ReviewState::ChangesRequested => (Tone::Bad, "✕", "requested changes"),
        ReviewState::Commented => (Tone::Unknown, "…", "commented"),
        ReviewState::Dismissed => (Tone::Unknown, "⊘", "dismissed"),
    };
    let when = review.at.clone().map(|at| {
        let (datetime, title) = (at.clone(), at.clone());
        view! { " "<time class="muted small" datetime=datetime title=title>{move || shared::time::age_or_raw(&at, &now.get())}</time> }
    });
    view! {
        <li data-testid="pr-review" data-state=review_slug(review.state) data-reviewer=review.reviewer.clone()>
            {chip(tone, glyph, word.into(), None)}<strong>{review.reviewer.clone()}</strong>{when}
        </li>
    }
    .into_any()
}

/// A blocker's kind as `data-kind` spells it.
pub fn blocker_slug(blocker: &MergeBlocker) -> &'static str {
    match blocker {
        MergeBlocker::Conflicts => "conflicts",
        MergeBlocker::ChecksFailed { .. } => "checks_failed",
        MergeBlocker::ChecksRunning => "checks_running",
        MergeBlocker::ApprovalRequired => "approval_required",
        MergeBlocker::ChangesRequested { .. } => "changes_requested",
    }
}

/// Whether a pull request can merge, in words: merged, closed, ready, or blocked (and how badly).
pub fn merge_chip(pr: &PullRequestView) -> AnyView {
    let (tone, label) = match pr.state {
        PullState::Merged => (Tone::Ok, "Merged"),
        PullState::Closed => (Tone::Unknown, "Closed"),
        PullState::Open if pr.blockers.is_empty() && pr.mergeable == Some(true) => {
            (Tone::Ok, "Open · ready to merge")
        }
        PullState::Open if pr.blockers.is_empty() => {
            (Tone::Progress, "Open · checking mergeability")
        }
        PullState::Open
            if pr.blockers.iter().any(|b| {
                !matches!(
                    b,
                    MergeBlocker::ChecksRunning | MergeBlocker::ApprovalRequired
                )
            }) =>
        {
            (Tone::Bad, "Open · blocked")
        }
        PullState::Open => (Tone::Warn, "Open · waiting"),
    };
    tone_chip(tone, label, Some("pr-state"))
}

/// A unified diff as preformatted text, each line classed by what it does (no diff library).
pub fn diff_view(diff: &str) -> AnyView {
    let lines = diff
        .lines()
        .map(|line| {
            let class = if line.starts_with("+++") || line.starts_with("---") {
                "d-file"
            } else if line.starts_with('+') {
                "d-add"
            } else if line.starts_with('-') {
                "d-del"
            } else if line.starts_with('@') {
                "d-hunk"
            } else {
                ""
            };
            view! { <span class=class>{format!("{line}\n")}</span> }
        })
        .collect_view();
    view! { <pre class="diff" data-testid="diff">{lines}</pre> }.into_any()
}

/// The exact files a change writes and its diff against main.
pub fn change_view(change: &ChangePreview) -> AnyView {
    let files = change
        .files
        .iter()
        .map(|f| {
            let what = if f.previous_content.is_some() {
                "changes "
            } else {
                "creates "
            };
            view! { <li data-testid="preview-file" data-path=f.path.clone()><span class="muted">{what}</span><span class="mono">{f.path.clone()}</span></li> }
        })
        .collect_view();
    view! {
        <section class="preview" aria-label="Preview">
            <h3>{change.title.clone()}" "<span class="mono muted small">{change.branch.clone()}</span></h3>
            <ul class="files" data-testid="preview-files">{files}</ul>
            {diff_view(&change.diff)}
        </section>
    }
    .into_any()
}

/// The pull request an action opened, or the open one it updated.
pub fn pull_outcome(pr: &PullRequestView) -> AnyView {
    view! {
        <p class="outcome" role="status" data-testid="pr-outcome">
            {if pr.reused { "Tower updated the open PR " } else { "Tower opened PR " }}
            <a href=pr.url.clone() target="_blank" rel="noreferrer" data-testid="pr-link">{format!("#{}", pr.number)}</a>
            {format!(" ({}). It takes effect when it is merged.", pr.title)}
        </p>
    }
    .into_any()
}

/// CI on a pull request, as `data-ci` spells it.
pub fn ci_slug(ci: CiState) -> &'static str {
    match ci {
        CiState::Pending => "pending",
        CiState::Success => "success",
        CiState::Failure => "failure",
        CiState::None => "none",
    }
}

/// CI rolled up: word, glyph and colour.
pub fn ci_chip(ci: CiState) -> AnyView {
    let (tone, label) = match ci {
        CiState::Pending => (Tone::Progress, "CI running"),
        CiState::Success => (Tone::Ok, "CI passed"),
        CiState::Failure => (Tone::Bad, "CI failed"),
        CiState::None => (Tone::Unknown, "No checks"),
    };
    tone_chip(tone, label, Some("ci"))
}

/// A pending pull request in one line: number, title, CI, and what keeps it from merging.
pub fn pending_pull(pr: &PullRequestView) -> AnyView {
    let blockers = pr
        .blockers
        .iter()
        .map(MergeBlocker::sentence)
        .collect::<Vec<_>>()
        .join(" · ");
    view! {
        <p class="pending-pr" data-testid="pending-pr" data-ci=ci_slug(pr.ci)>
            "Pending: "<a href=pr.url.clone() target="_blank" rel="noreferrer">{format!("#{} {}", pr.number, pr.title)}</a>" "
            {ci_chip(pr.ci)}
            {(!blockers.is_empty()).then(|| view! { <span class="muted small" data-testid="pending-pr-blockers">{blockers}</span> })}
        </p>
    }
    .into_any()
}

fn side(label: &'static str, from: &VersionRef, to: &VersionRef) -> AnyView {
    let (a, b) = match label {
        "Image" => (from.image.clone(), to.image.clone()),
        _ => (from.chart_revision.clone(), to.chart_revision.clone()),
    };
    let same = a == b;
    view! {
        <dt>{label}</dt>
        <dd class="mono">{a}{(!same).then(|| view! { " → "<strong>{b}</strong> })}{same.then_some(" (unchanged)")}</dd>
    }
    .into_any()
}

/// Promote (dev → prod) or Rollback (prod → the version before) of `service`: a modal `<dialog>` (the browser
/// traps focus and closes it on Escape) showing what would change, then the pull request. Its code is a
/// separate wasm module, fetched the first time a dialog opens.
#[component]
pub fn MoveDialog(
    service: String,
    rollback: bool,
    /// Called when the dialog closes.
    on_close: Callback<()>,
    /// Called after a pull request was opened or updated.
    on_opened: Callback<()>,
) -> impl IntoView {
    Suspend::new(move_dialog(service, rollback, on_close, on_opened))
}

#[lazy]
fn move_dialog(
    service: String,
    rollback: bool,
    on_close: Callback<()>,
    on_opened: Callback<()>,
) -> AnyView {
    view! { <LoadedMoveDialog service rollback on_close on_opened /> }.into_any()
}

#[component]
fn LoadedMoveDialog(
    service: String,
    rollback: bool,
    on_close: Callback<()>,
    on_opened: Callback<()>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let dialog: NodeRef<Dialog> = NodeRef::new();
    Effect::new(move |_| {
        if let Some(dialog) = dialog.get() {
            let _ = dialog.show_modal();
        }
    });
    // Every way out closes the `<dialog>` first and leaves by its `close` event: focus can go back to what
    // opened it (the page removes the dialog, which would drop focus on the body) only once the page behind
    // is no longer inert.
    let give_back_focus = remember_focus();
    let closed = move || {
        give_back_focus();
        on_close.run(());
    };
    let close = move || match dialog.get_untracked() {
        Some(dialog) => dialog.close(),
        None => closed(),
    };
    let preview = crate::live::fetched({
        let service = service.clone();
        move || {
            let service = service.clone();
            async move { api::preview_move(&service, rollback).await }
        }
    });
    let busy = RwSignal::new(false);
    let result: RwSignal<Option<Result<PullRequestView, ApiError>>> = RwSignal::new(None);
    let confirm = {
        let service = service.clone();
        move |_| {
            let service = service.clone();
            busy.set(true);
            spawn_local(async move {
                let answer = api::open_move(&service, rollback).await;
                if answer.is_ok() {
                    on_opened.run(());
                }
                result.set(Some(answer));
                busy.set(false);
            });
        }
    };
    let title = if rollback {
        format!("Roll back {service} in prod")
    } else {
        format!("Promote {service} to prod")
    };
    let now = move || live.now.get();
    let aria = title.clone();
    view! {
        <dialog node_ref=dialog class="move-dialog" data-testid="move-dialog" aria-label=aria
            on:close=move |_| closed() on:keydown=move |event| keep_tab_inside(&event)>
            <header class="dialog-head">
                <h2>{title}</h2>
                <button type="button" class="link" data-testid="dialog-close" on:click=move |_| close() aria-label="Close">"Close ✕"</button>
            </header>
            {move || match preview.get() {
                None => view! { <div aria-busy="true" data-testid="loading"><div class="skeleton-row"></div><div class="skeleton-row"></div></div> }.into_any(),
                Some(Err(error)) => show_error(&error),
                Some(Ok(p)) => {
                    let now = now();
                    let commits = p.commits.iter().map(|c| view! {
                        <li><span class="mono">{c.sha.clone()}</span>" "{c.message.clone()}
                        <span class="muted">{format!(" {} · {}", c.author, shared::time::age_or_raw(&c.at, &now))}</span></li>
                    }).collect_view();
                    let schema_first = p.schema_first.as_ref().map(|form| {
                        format!("/create?template=apply-schema&service={}&environment={}&database={}&version={}",
                            p.service, form.environment, form.database, form.version)
                    });
                    view! {
                        <p class="move-versions">
                            <span class="mono">{p.from.version.clone()}</span>" → "<strong class="mono">{p.to.version.clone()}</strong>
                            <span class="muted">{format!(" in {}", p.environment)}</span>
                        </p>
                        <dl class="facts">{side("Image", &p.from, &p.to)}{side("Chart", &p.from, &p.to)}</dl>
                        <h3>{if rollback { "Commits taken out" } else { "Commits going out" }}</h3>
                        {if p.commits.is_empty() {
                            view! { <p class="muted" data-testid="move-commits">"No commits between the two versions."</p> }.into_any()
                        } else {
                            view! { <ul class="commits" data-testid="move-commits">{commits}</ul> }.into_any()
                        }}
                        {rollback.then(|| view! { <p class="muted">"The database schema does not move back; bindings stay as they are."</p> })}
                        {(!p.missing_migrations.is_empty()).then(|| view! {
                            <div class="banner tone-warn" data-testid="missing-migrations" role="status">
                                <span class="glyph" aria-hidden="true">"!"</span>
                                <div>
                                    {format!("The {} database lacks migrations this code ships: {}. Apply the schema first, then promote.",
                                        p.environment, p.missing_migrations.join(", "))}
                                    {schema_first.map(|href| view! { " "<a href=href class="button" data-testid="schema-first-button">"Apply schema first"</a> })}
                                </div>
                            </div>
                        })}
                        {p.pending.first().map(|pr| banner(Tone::Progress, "◔", "move-pending",
                            format!("PR #{} already moves prod; confirming updates it.", pr.number)))}
                        {change_view(&p.change)}
                    }.into_any()
                }
            }}
            <footer class="dialog-actions">
                {move || match result.get() {
                    Some(Ok(pr)) => pull_outcome(&pr),
                    Some(Err(error)) => view! { <p class="error-inline" role="alert" data-testid="move-error">{error.to_string()}</p> }.into_any(),
                    None => ().into_any(),
                }}
                <button type="button" class="primary" data-testid="confirm-button"
                    disabled=move || busy.get() || !matches!(preview.get(), Some(Ok(_)))
                    on:click=confirm>
                    {move || if busy.get() { "Opening the PR…" } else if rollback { "Open rollback PR" } else { "Open promote PR" }}
                </button>
                <button type="button" class="link" data-testid="dialog-cancel" on:click=move |_| close()>"Cancel"</button>
            </footer>
        </dialog>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(number: u64, state: PullState, service: &str) -> PullRequestView {
        PullRequestView {
            number,
            url: format!("https://github.example/acme/application-repositories/pull/{number}"),
            branch: format!("tower/promote/{service}"),
            title: format!("Promote {service} to prod"),
            state,
            checks: vec![],
            ci: CiState::None,
            mergeable: Some(true),
            reused: false,
            intent: None,
            service: Some(service.into()),
            environment: Some("prod".into()),
            author: "tower[bot]".into(),
            created_at: "2026-12-02T10:00:00Z".into(),
            merged_at: None,
            labels: vec![],
            reviews: vec![],
            blockers: vec![],
        }
    }

    fn event(pr: &PullRequestView) -> String {
        serde_json::to_string(&shared::fleet::FleetEvent::PullRequestUpdated { pull: pr.clone() })
            .unwrap_or_default()
    }

    fn numbers(list: &[PullRequestView]) -> Vec<(u64, PullState)> {
        list.iter().map(|p| (p.number, p.state)).collect()
    }

    #[test]
    fn an_update_replaces_its_pull_request_and_keeps_open_ones_before_merged_ones() {
        use PullState::{Merged, Open};
        let mut list = vec![pr(5, Open, "payments"), pr(3, Merged, "ledger")];
        let mut approved = pr(5, Open, "payments");
        approved.reviews = vec![ReviewView {
            reviewer: "grace".into(),
            state: ReviewState::Approved,
            at: None,
        }];
        upsert_pull(&mut list, approved);
        assert_eq!(numbers(&list), [(5, Open), (3, Merged)]);
        assert_eq!(list[0].reviews.len(), 1);
        upsert_pull(&mut list, pr(7, Open, "refunds"));
        assert_eq!(numbers(&list), [(7, Open), (5, Open), (3, Merged)]);
        upsert_pull(&mut list, pr(5, Merged, "payments"));
        assert_eq!(numbers(&list), [(7, Open), (5, Merged), (3, Merged)]);
        upsert_pull(&mut list, pr(7, PullState::Closed, "refunds"));
        assert_eq!(numbers(&list), [(5, Merged), (3, Merged)]);
    }

    #[test]
    fn a_page_applies_only_the_events_after_its_fetch_and_a_service_keeps_only_its_open_ones() {
        let mut updates = PullUpdates::default();
        let mut with_check = pr(5, PullState::Open, "payments");
        with_check.checks = vec![CheckView {
            name: "tower-ci / validate".into(),
            status: "in_progress".into(),
            conclusion: None,
            url: None,
        }];
        let fetched_at = {
            let mut stamp = 0;
            for (index, text) in [
                event(&pr(4, PullState::Open, "payments")),
                event(&with_check),
                event(&pr(6, PullState::Open, "ledger")),
                "{not json".to_string(),
            ]
            .into_iter()
            .enumerate()
            {
                updates.record_for_tests(text);
                if index == 0 {
                    stamp = updates.seq();
                }
            }
            stamp
        };
        let mut everything = vec![];
        patch_pulls(&mut everything, &updates, fetched_at, |_| true);
        assert_eq!(
            numbers(&everything),
            [(6, PullState::Open), (5, PullState::Open)]
        );
        assert_eq!(everything[1].checks[0].status, "in_progress");

        let mut pending = vec![pr(4, PullState::Open, "payments")];
        updates.record_for_tests(event(&pr(4, PullState::Merged, "payments")));
        patch_pulls(&mut pending, &updates, fetched_at, |p| {
            p.service.as_deref() == Some("payments") && p.state == PullState::Open
        });
        assert_eq!(numbers(&pending), [(5, PullState::Open)]);
    }

    #[test]
    fn checks_read_as_the_status_vocabulary() {
        let check = |status: &str, conclusion: Option<&str>| CheckView {
            name: "tower-ci / validate".into(),
            status: status.into(),
            conclusion: conclusion.map(String::from),
            url: None,
        };
        assert_eq!(check_look(&check("queued", None)).1, "queued");
        assert_eq!(check_look(&check("in_progress", None)).1, "running");
        assert_eq!(
            check_look(&check("completed", Some("success"))),
            (Tone::Ok, "passed")
        );
        assert_eq!(
            check_look(&check("completed", Some("timed_out"))),
            (Tone::Bad, "failed")
        );
        assert_eq!(
            check_look(&check("completed", Some("skipped"))).1,
            "skipped"
        );
    }
}
