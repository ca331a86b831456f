//! The status vocabulary: chips and banners that always carry a word and a glyph with their colour.
//! Plain functions returning `AnyView`, so every chip on every page shares one piece of rendering code
//! (the first load stays small).

use leptos::prelude::*;
use shared::auth::Decision;
use shared::fleet::{CellProblem, Health, SyncStatus};
use shared::status::{Tone, health_tone, sync_tone};

/// The glyph that goes with a tone, so colour is never the only signal.
pub fn glyph(tone: Tone) -> &'static str {
    match tone {
        Tone::Ok => "✓",
        Tone::Progress => "◔",
        Tone::Unknown => "?",
        Tone::Warn => "!",
        Tone::Bad => "✕",
    }
}

/// A chip: glyph, word, colour; `testid` also puts the word in `data-value` for tests.
pub fn chip(
    tone: Tone,
    glyph: &'static str,
    label: String,
    testid: Option<&'static str>,
) -> AnyView {
    let value = testid.map(|_| label.clone());
    view! {
        <span class=format!("chip {}", tone.class()) data-testid=testid data-value=value>
            <span class="glyph" aria-hidden="true">{glyph}</span>
            {label}
        </span>
    }
    .into_any()
}

/// A chip with the tone's own glyph.
pub fn tone_chip(tone: Tone, label: impl Into<String>, testid: Option<&'static str>) -> AnyView {
    chip(tone, glyph(tone), label.into(), testid)
}

/// Argo CD's sync status.
pub fn sync_chip(sync: SyncStatus) -> AnyView {
    tone_chip(sync_tone(sync), sync.label(), Some("chip-sync"))
}

/// Argo CD's health.
pub fn health_chip(health: Health) -> AnyView {
    tone_chip(health_tone(health), health.label(), Some("chip-health"))
}

/// Drift between what runs and what the Release asks for.
pub fn drift_chip() -> AnyView {
    chip(Tone::Warn, "≠", "Drift".into(), Some("chip-drift"))
}

/// A problem beyond sync and health (stale secret, composition error, …): its own word and glyph.
pub fn problem_chip(problem: CellProblem) -> AnyView {
    let tone = shared::fleet::overview::problem_tone(problem);
    view! {
        <span class=format!("chip {}", tone.class()) data-testid="chip-problem" data-problem=problem.as_str()>
            <span class="glyph" aria-hidden="true">{glyph(tone)}</span>
            {problem.label()}
        </span>
    }
    .into_any()
}

/// A sentence that needs to be seen: a warning, a failure, an unreachable cluster.
pub fn banner(tone: Tone, glyph: &'static str, testid: &'static str, text: String) -> AnyView {
    view! {
        <p class=format!("banner {}", tone.class()) data-testid=testid role="status">
            <span class="glyph" aria-hidden="true">{glyph}</span>
            <span>{text}</span>
        </p>
    }
    .into_any()
}

/// Why a control is not there, and who can use it.
pub fn permission_reason(decision: Decision) -> Option<AnyView> {
    let reason = match decision {
        Decision::Allow => return None,
        Decision::SignInRequired => "Sign in to do this.".to_string(),
        Decision::Deny { reason } => reason,
    };
    Some(
        view! {
            <p class="permission-reason" data-testid="permission-reason">
                // Drawn rather than an emoji: machines without an emoji font showed an empty box.
                <svg class="lock" aria-hidden="true" viewBox="0 0 16 16" width="12" height="12">
                    <path d="M4.5 7V5a3.5 3.5 0 0 1 7 0v2" fill="none" stroke="currentColor" stroke-width="1.6"/>
                    <rect x="2.5" y="7" width="11" height="8" rx="1.5" fill="currentColor"/>
                </svg>
                " "
                {reason}
            </p>
        }
        .into_any(),
    )
}
