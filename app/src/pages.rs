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

use leptos::prelude::*;

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
