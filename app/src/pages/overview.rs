//! The Overview (`/`): every service of the fleet, searchable, live.

use leptos::ev::KeyboardEvent;
use leptos::html::Input;
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};
use shared::fleet::ServiceSummary;

use crate::live::LiveFleet;
use crate::pages::show_errors;

/// The fleet at a glance.
#[component]
pub fn Overview() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let query = use_query_map();
    let search = Memo::new(move |_| query.with(|q| q.get("q").unwrap_or_default()));
    let navigate = use_navigate();
    let set_search = move |text: String| {
        let path = if text.is_empty() {
            "/".to_string()
        } else {
            format!("/?q={}", js_sys::encode_uri_component(&text))
        };
        navigate(
            &path,
            NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };

    // `/` jumps to the search box from anywhere on the page, as on GitHub.
    let search_box: NodeRef<Input> = NodeRef::new();
    let shortcut = window_event_listener(leptos::ev::keydown, move |event: KeyboardEvent| {
        let typing = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(t).ok())
            .is_some();
        if event.key() == "/"
            && !typing
            && let Some(input) = search_box.get()
        {
            event.prevent_default();
            let _ = input.focus();
        }
    });
    on_cleanup(move || shortcut.remove());

    let visible = move || {
        let text = search.get();
        live.fleet.with(|fleet| {
            fleet
                .search(&text)
                .cloned()
                .collect::<Vec<ServiceSummary>>()
        })
    };

    view! {
        <section class="page">
            <div class="page-head">
                <h1>"Overview"</h1>
                <p class="counts" data-testid="fleet-counts">
                    {move || live.fleet.with(|f| format!("{} services · {} teams", f.len(), f.team_count()))}
                </p>
            </div>
            <label class="search">
                <span class="visually-hidden">"Search services"</span>
                <input
                    type="search"
                    node_ref=search_box
                    placeholder="Search services (press /)"
                    data-testid="search"
                    prop:value=move || search.get()
                    on:input=move |event| set_search(event_target_value(&event))
                />
            </label>
            <ErrorBoundary fallback=show_errors>
                {move || match live.loaded.get() {
                    None => Ok(view! { <TableSkeleton /> }.into_any()),
                    Some(Err(error)) => Err(error),
                    Some(Ok(())) => Ok(view! {
                        <Show
                            when=move || !visible().is_empty()
                            fallback=move || view! { <EmptyFleet searching=!search.get().is_empty() /> }
                        >
                            <table class="fleet" data-testid="fleet-table">
                                <thead>
                                    <tr><th>"Service"</th><th>"Owner"</th><th>"Description"</th><th>"Template"</th></tr>
                                </thead>
                                <tbody>
                                    <For each=visible key=|service| service.clone() children=|service| view! { <ServiceRow service /> } />
                                </tbody>
                            </table>
                        </Show>
                    }.into_any()),
                }}
            </ErrorBoundary>
        </section>
    }
}

#[component]
fn ServiceRow(service: ServiceSummary) -> impl IntoView {
    let href = format!("/services/{}", service.name);
    let name = service.name.clone();
    view! {
        <tr data-testid="service-row" data-service=service.name>
            <td><A href=href>{name}</A></td>
            <td>{service.owner}</td>
            <td>{service.description}</td>
            <td class="mono">{service.template}</td>
        </tr>
    }
}

/// Shaped like the table it stands in for.
#[component]
fn TableSkeleton() -> impl IntoView {
    view! {
        <div class="skeleton" aria-busy="true" aria-label="Loading services" data-testid="loading">
            {(0..6).map(|_| view! { <div class="skeleton-row"></div> }).collect_view()}
        </div>
    }
}

#[component]
fn EmptyFleet(searching: bool) -> impl IntoView {
    view! {
        <div class="empty" data-testid="empty">
            {if searching {
                "No service matches this search."
            } else {
                "No services yet. Onboard one from Create, and it appears here as soon as its Component exists."
            }}
        </div>
    }
}
