//! One module per page.

pub mod create;
pub mod not_found;
pub mod overview;
pub mod prs;
pub mod releases;
pub mod service;
pub mod sign_in;

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
