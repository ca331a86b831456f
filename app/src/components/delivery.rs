//! What every write shows: the files and diff of a change before it is made, the pull request after, CI at a
//! glance, and the Promote / Rollback dialog. Plain functions returning `AnyView` where they can, so the pages
//! share one copy of the rendering code.

use leptos::html::Dialog;
use leptos::lazy;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::ApiError;
use shared::delivery::{ChangePreview, CiState, PullRequestView, VersionRef};
use shared::status::Tone;

use crate::api;
use crate::components::focus::{keep_tab_inside, remember_focus};
use crate::components::status::{banner, tone_chip};
use crate::live::LiveFleet;
use crate::pages::show_error;

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

/// A pending pull request in one line: number, title, CI.
pub fn pending_pull(pr: &PullRequestView) -> AnyView {
    view! {
        <p class="pending-pr" data-testid="pending-pr" data-ci=ci_slug(pr.ci)>
            "Pending: "<a href=pr.url.clone() target="_blank" rel="noreferrer">{format!("#{} {}", pr.number, pr.title)}</a>" "
            {ci_chip(pr.ci)}
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
