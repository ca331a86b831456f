//! Pipelines: every Tekton run of the fleet (`/pipelines`) or of one service (its `?tab=pipelines`), and one
//! run (`/pipelines/:namespace/:name`) with its DAG, a task's steps and a step's log. The DAG and its layout
//! come from `shared::pipelines`; these modules only draw them. Each page is its own wasm module, fetched the
//! first time it opens, so the Overview's first load carries none of it.

pub mod list;
pub mod run;

use leptos::lazy;
use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};
use shared::pipelines::{RunStatus, TaskStatus};
use shared::status::Tone;

use crate::components::status::chip;
use list::{RunList, Scope};

/// `/pipelines`, fetched as its own wasm module on the first visit.
#[derive(Debug)]
pub struct PipelinesRoute;

#[lazy_route]
impl LazyRoute for PipelinesRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! {
            <section class="page">
                <div class="page-head">
                    <h1>"Pipelines"</h1>
                    <p class="counts">"Every Tekton run that builds a service, newest first."</p>
                </div>
                <RunList scope=Scope::Fleet />
            </section>
        }
        .into_any()
    }
}

/// `/pipelines/:namespace/:name`, fetched as its own wasm module on the first visit.
#[derive(Debug)]
pub struct PipelineRunRoute;

#[lazy_route]
impl LazyRoute for PipelineRunRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <run::RunPage /> }.into_any()
    }
}

/// The Pipelines tab of a service page: its runs. Its code is a separate wasm module, fetched the first time
/// the tab opens.
#[component]
pub fn PipelinesTab(name: Memo<String>) -> impl IntoView {
    Suspend::new(pipelines_tab(name))
}

#[lazy]
fn pipelines_tab(name: Memo<String>) -> AnyView {
    view! { <RunList scope=Scope::Service(name) /> }.into_any()
}

/// A run's status as a chip: glyph, word and colour.
pub fn run_chip(status: RunStatus) -> AnyView {
    let (tone, glyph) = run_look(status);
    chip(tone, glyph, status.label().into(), Some("run-status"))
}

/// The tone and glyph of a run's status.
pub fn run_look(status: RunStatus) -> (Tone, &'static str) {
    match status {
        RunStatus::Pending => (Tone::Unknown, "○"),
        RunStatus::Running => (Tone::Progress, "◔"),
        RunStatus::Succeeded => (Tone::Ok, "✓"),
        RunStatus::Failed => (Tone::Bad, "✕"),
        RunStatus::Cancelled => (Tone::Warn, "⊘"),
        RunStatus::TimedOut => (Tone::Bad, "⧗"),
    }
}

/// The tone and glyph of a task's (or step's) status.
pub fn task_look(status: TaskStatus) -> (Tone, &'static str) {
    match status {
        TaskStatus::Pending => (Tone::Unknown, "○"),
        TaskStatus::Running => (Tone::Progress, "◔"),
        TaskStatus::Succeeded => (Tone::Ok, "✓"),
        TaskStatus::Failed => (Tone::Bad, "✕"),
        TaskStatus::Cancelled => (Tone::Warn, "⊘"),
        TaskStatus::Skipped => (Tone::Unknown, "↷"),
    }
}

/// A task's (or step's) status as a chip.
pub fn task_chip(status: TaskStatus, testid: Option<&'static str>) -> AnyView {
    let (tone, glyph) = task_look(status);
    chip(tone, glyph, status.label().into(), testid)
}

/// The first seven characters of a commit.
pub fn short_commit(commit: &str) -> String {
    commit.chars().take(7).collect()
}
