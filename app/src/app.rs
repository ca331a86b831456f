//! The app shell: header, routes, and the live fleet in context.

use leptos::prelude::*;
use leptos_router::components::{A, Route, Router, Routes};
use leptos_router::path;

use crate::live::LiveFleet;
use crate::pages::not_found::NotFound;
use crate::pages::overview::Overview;
use crate::pages::service::ServicePage;

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let live = LiveFleet::start();
    provide_context(live);
    view! {
        <Router>
            <header class="topbar">
                <A href="/" attr:class="brand">"Tower"</A>
                <nav aria-label="Main">
                    <A href="/">"Overview"</A>
                </nav>
                <StreamIndicator connected=live.connected />
            </header>
            <main id="main">
                <Routes fallback=NotFound>
                    <Route path=path!("/") view=Overview />
                    <Route path=path!("/services/:name") view=ServicePage />
                </Routes>
            </main>
        </Router>
    }
}

/// Says whether the page is live; words as well as colour.
#[component]
fn StreamIndicator(connected: RwSignal<bool>) -> impl IntoView {
    view! {
        <span
            class="stream"
            class:stream-live=move || connected.get()
            data-testid="stream-indicator"
            role="status"
        >
            {move || if connected.get() { "● Live" } else { "○ Connecting…" }}
        </span>
    }
}
