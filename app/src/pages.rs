//! The pages, by area: each area has the name it has in `shared` and in the server's routes.

pub mod config;
pub mod databases;
pub mod delivery;
pub mod fleet;
pub mod metrics;
pub mod not_found;
pub mod pipelines;
pub mod platform;
pub mod session;
pub mod slo;

use leptos::html::Input;
use leptos::prelude::*;

/// `/` jumps to `input` from anywhere on the page, as on GitHub, unless the user is typing in a field; the
/// listener goes with the page.
pub fn focus_on_slash(input: NodeRef<Input>) {
    let shortcut = window_event_listener(leptos::ev::keydown, move |event| {
        let typing = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(t).ok())
            .is_some_and(|element| {
                matches!(element.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA")
            });
        if event.key() == "/"
            && !typing
            && let Some(input) = input.get()
        {
            event.prevent_default();
            let _ = input.focus();
        }
    });
    on_cleanup(move || shortcut.remove());
}

/// One failed load, in words, where an `ErrorBoundary` would be more machinery than the spot needs.
pub fn show_error(error: &shared::ApiError) -> AnyView {
    view! {
        <div class="error" role="alert" data-testid="error">
            <strong>"Could not load this."</strong>
            <p>{error.to_string()}</p>
        </div>
    }
    .into_any()
}

/// How every page shows the errors its `ErrorBoundary` caught: what failed, in words.
pub fn show_errors(errors: ArcRwSignal<Errors>) -> impl IntoView {
    view! {
        <div class="error" role="alert" data-testid="error">
            <strong>"Could not load this."</strong>
            <ul>
                {move || {
                    errors
                        .get()
                        .into_iter()
                        .map(|(_, error)| view! { <li>{error.to_string()}</li> })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}
