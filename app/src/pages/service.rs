//! The service page (`/services/:name`).

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;
use shared::fleet::ServiceSummary;

use crate::live::LiveFleet;
use crate::pages::show_errors;

/// One service: who owns it, where it lives, what it depends on.
#[component]
pub fn ServicePage() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let params = use_params_map();
    let name = Memo::new(move |_| params.with(|p| p.get("name").unwrap_or_default()));
    let service = Memo::new(move |_| live.fleet.with(|fleet| fleet.service(&name.get()).cloned()));

    view! {
        <section class="page">
            <nav class="crumbs" aria-label="Breadcrumb"><A href="/">"Overview"</A>" / "{move || name.get()}</nav>
            <ErrorBoundary fallback=show_errors>
                {move || match (live.loaded.get(), service.get()) {
                    (None, _) => Ok(view! { <div class="skeleton" aria-busy="true" data-testid="loading"><div class="skeleton-row"></div></div> }.into_any()),
                    (Some(Err(error)), _) => Err(error),
                    (Some(Ok(())), Some(service)) => Ok(view! { <ServiceHeader service /> }.into_any()),
                    (Some(Ok(())), None) => Ok(view! {
                        <div class="empty" data-testid="service-missing">
                            <h1>{name.get()}</h1>
                            <p>"No service of this name is on the platform. "<A href="/">"See all services"</A></p>
                        </div>
                    }.into_any()),
                }}
            </ErrorBoundary>
        </section>
    }
}

#[component]
fn ServiceHeader(service: ServiceSummary) -> impl IntoView {
    let repository = format!("https://github.com/{}", service.repository);
    let depends_on = service.depends_on.clone();
    view! {
        <header class="service-head" data-testid="service-header">
            <h1>{service.name.clone()}</h1>
            <p>{service.description.clone()}</p>
            <dl class="facts">
                <dt>"Owner"</dt><dd data-testid="service-owner">{service.owner.clone()}</dd>
                <dt>"Repository"</dt><dd><a href=repository rel="noreferrer">{service.repository.clone()}</a></dd>
                <dt>"Template"</dt><dd class="mono">{service.template.clone()}</dd>
                <dt>"Depends on"</dt>
                <dd>
                    {if depends_on.is_empty() {
                        view! { <span class="muted">"nothing"</span> }.into_any()
                    } else {
                        depends_on
                            .into_iter()
                            .map(|dep| view! { <A href=format!("/services/{dep}") attr:class="chip">{dep.clone()}</A> })
                            .collect_view()
                            .into_any()
                    }}
                </dd>
            </dl>
        </header>
    }
}
