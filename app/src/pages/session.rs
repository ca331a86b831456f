//! Sign-in: continue as a guest, or sign in with GitHub (demo identities on the sandbox).

use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_query_map};

use crate::api;
use crate::app::Session;

/// Shown for any address while nobody is signed in; after signing in, the same address loads.
#[component]
pub fn SignIn() -> impl IntoView {
    let session = expect_context::<Session>();
    let query = use_query_map();
    let location = use_location();
    let return_to = move || {
        let path = location.pathname.get();
        if path == "/sign-in" {
            "/".to_string()
        } else {
            // The router's search string comes without its `?`.
            let search = location.search.get();
            let search = search.trim_start_matches('?');
            if search.is_empty() {
                path
            } else {
                format!("{path}?{search}")
            }
        }
    };
    let github_href = move || {
        format!(
            "/auth/github/start?return_to={}",
            js_sys::encode_uri_component(&return_to())
        )
    };
    let guest = Action::new_local(move |_: &()| async move {
        let result = api::continue_as_guest().await;
        if let Ok(info) = &result {
            session.set(info.clone());
        }
        result.map(|_| ())
    });
    let info = move || session.info();

    view! {
        <section class="sign-in" data-testid="sign-in">
            <h1>"Tower"</h1>
            <p>"Everything the platform runs for your services, live. Owners change it by pull request."</p>
            {move || query.with(|q| q.get("error")).map(|error| view! { <p class="error" role="alert" data-testid="sign-in-error">{error}</p> })}
            <button type="button" class="primary" data-testid="continue-as-guest" on:click=move |_| { guest.dispatch(()); }>
                "Continue as guest"
            </button>
            <p class="muted">"Guests browse read-only: services, deployments, releases and pull requests."</p>
            {move || info().filter(|i| i.github).map(|i| view! {
                <a class="button" href=github_href rel="external" data-testid="sign-in-github">
                    {if i.sandbox { "Sign in with the sandbox forge (demo identities)" } else { "Sign in with GitHub" }}
                </a>
                <p class="muted">"Members of a team own its services: they can promote, roll back, sync and read logs."</p>
                {i.sandbox.then(|| view! {
                    <p class="demo-identities" data-testid="demo-identities">
                        "Demo identities: ada and grace own payments, ledger and refunds; linus and margaret own checkout, cart and catalog; barbara and ken own search and recommendations."<br />
                        "root is an admin and may change every service; visitor belongs to no team and, like a guest, only reads."
                    </p>
                })}
            })}
            {move || guest.value().get().and_then(Result::err).map(|error| view! { <p class="error" role="alert">{error.to_string()}</p> })}
        </section>
    }
}
