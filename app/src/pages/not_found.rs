//! What an unknown client route shows.

use leptos::prelude::*;
use leptos_router::components::A;

/// The page for routes the app does not know.
#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <section class="empty" data-testid="not-found">
            <h1>"Nothing here"</h1>
            <p>"This address is not a page of Tower. "<A href="/">"Go to the Overview"</A></p>
        </section>
    }
}
