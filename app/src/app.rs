//! The app shell: the session first, then the header, the routes, and the live fleet in context.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::Lazy;
use leptos_router::NavigateOptions;
use leptos_router::components::{A, Redirect, Route, Router, Routes};
use leptos_router::hooks::use_location;
use leptos_router::path;
use shared::ApiError;
use shared::session::SessionInfo;

use crate::api;
use crate::live::LiveFleet;
use crate::pages::databases::DatabasesRoute;
use crate::pages::delivery::create::CreateRoute;
use crate::pages::delivery::pulls::PullsRoute;
use crate::pages::delivery::releases::{ReleaseDetailRoute, ReleasesRoute};
use crate::pages::fleet::overview::Overview;
use crate::pages::fleet::service::ServiceRoute;
use crate::pages::not_found::NotFound;
use crate::pages::pipelines::{PipelineRunRoute, PipelinesRoute};
use crate::pages::platform::PlatformRoute;
use crate::pages::session::SignIn;
use crate::pages::show_errors;

/// The session, provided once as context: `None` while it loads.
#[derive(Clone, Copy)]
pub struct Session(pub RwSignal<Option<Result<SessionInfo, ApiError>>>);

impl Session {
    /// The session info, once loaded and valid.
    pub fn info(&self) -> Option<SessionInfo> {
        self.0.get().and_then(Result::ok)
    }

    /// What the signed-in user may do with `permission` on a service owned by `owner` (or fleet-wide with
    /// none); sign-in required until the session is loaded.
    pub fn decide(
        &self,
        permission: shared::auth::Permission,
        owner: Option<&str>,
    ) -> shared::auth::Decision {
        self.info()
            .map(|info| info.decide(permission, owner))
            .unwrap_or(shared::auth::Decision::SignInRequired)
    }

    /// Replaces the session after signing in or out.
    pub fn set(&self, info: SessionInfo) {
        self.0.set(Some(Ok(info)));
    }
}

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let session = Session(RwSignal::new(None));
    provide_context(session);
    spawn_local(async move {
        session.0.set(Some(api::get_session().await));
    });
    // The shell is rebuilt only when who is signed in changes, not on every session update.
    let signed_in = Memo::new(move |_| {
        session
            .info()
            .and_then(|info| info.identity)
            .map(|id| id.login)
    });

    view! {
        <Router>
            <ErrorBoundary fallback=show_errors>
                {move || match session.0.get() {
                    None => Ok(view! { <div class="splash" aria-busy="true">"Tower"</div> }.into_any()),
                    Some(Err(error)) => Err(error),
                    Some(Ok(_)) => Ok(match signed_in.get() {
                        None => view! { <SignIn /> }.into_any(),
                        Some(_) => view! { <Shell /> }.into_any(),
                    }),
                }}
            </ErrorBoundary>
        </Router>
    }
}

/// What a signed-in user sees: header and pages, fed by the live fleet.
#[component]
fn Shell() -> impl IntoView {
    let live = LiveFleet::start();
    provide_context(live);
    view! {
        <header class="topbar">
            <A href="/" attr:class="brand">"Tower"</A>
            <nav aria-label="Main">
                <A href="/" exact=true>"Overview"</A>
                <A href="/create" attr:data-testid="nav-create">"Create"</A>
                <A href="/releases" attr:data-testid="nav-releases">"Releases"</A>
                <A href="/prs" attr:data-testid="nav-prs">"PRs"</A>
                <A href="/pipelines" attr:data-testid="nav-pipelines">"Pipelines"</A>
                <A href="/databases" attr:data-testid="nav-databases">"Databases"</A>
                <A href="/platform" attr:data-testid="nav-platform">"Platform"</A>
            </nav>
            <StreamIndicator connected=live.connected />
            <UserMenu />
        </header>
        <main id="main">
            <Routes fallback=NotFound>
                <Route path=path!("/") view=Overview />
                <Route path=path!("/sign-in") view=Overview />
                <Route path=path!("/services/:name") view={Lazy::<ServiceRoute>::new()} />
                // Rarely the first page of a visit: each is its own wasm module, fetched when first opened.
                <Route path=path!("/create") view={Lazy::<CreateRoute>::new()} />
                <Route path=path!("/releases") view={Lazy::<ReleasesRoute>::new()} />
                <Route path=path!("/releases/:sha") view={Lazy::<ReleaseDetailRoute>::new()} />
                <Route path=path!("/prs") view={Lazy::<PullsRoute>::new()} />
                <Route path=path!("/pipelines") view={Lazy::<PipelinesRoute>::new()} />
                <Route path=path!("/pipelines/:namespace/:name") view={Lazy::<PipelineRunRoute>::new()} />
                <Route path=path!("/platform") view={Lazy::<PlatformRoute>::new()} />
                <Route path=path!("/config") view=ConfigRedirect />
                <Route path=path!("/databases") view={Lazy::<DatabasesRoute>::new()} />
                <Route path=path!("/databases/:env/:name") view={Lazy::<DatabasesRoute>::new()} />
            </Routes>
        </main>
    }
}

/// `/config` was the Platform page's address: old links land on `/platform` with the same query and
/// fragment, in place of the old entry in the history (so Back does not bounce).
#[component]
fn ConfigRedirect() -> impl IntoView {
    let location = use_location();
    let path = moved_path(
        "/platform",
        &location.search.get_untracked(),
        &location.hash.get_untracked(),
    );
    view! {
        <Redirect
            path
            options=NavigateOptions {
                replace: true,
                ..Default::default()
            }
        />
    }
}

/// `to` with a query (without its `?`) and a fragment (with or without its `#`) carried over.
fn moved_path(to: &str, search: &str, hash: &str) -> String {
    let mut path = to.to_string();
    if !search.is_empty() {
        path.push('?');
        path.push_str(search);
    }
    if !hash.is_empty() {
        if !hash.starts_with('#') {
            path.push('#');
        }
        path.push_str(hash);
    }
    path
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

/// Who you are, your teams, and sign-in / sign-out.
#[component]
fn UserMenu() -> impl IntoView {
    let session = expect_context::<Session>();
    let sign_out = Action::new_local(move |_: &()| async move {
        let result = api::sign_out().await;
        if result.is_ok()
            && let Some(mut info) = session.info()
        {
            info.identity = None;
            session.set(info);
        }
        result
    });
    view! {
        <div class="user" data-testid="user-menu">
            {move || session.info().and_then(|info| info.identity).map(|identity| {
                let teams = if identity.teams.is_empty() {
                    String::from("no teams")
                } else {
                    identity.teams.join(", ")
                };
                let guest = identity.kind == shared::auth::AccountKind::Guest;
                view! {
                    <span class="who" data-testid="user-name">{identity.name.clone()}</span>
                    <span class="teams muted" data-testid="user-teams">{if guest { "guest, read-only".to_string() } else { teams }}</span>
                    {guest.then(|| view! { <a href="/auth/github/start" rel="external" data-testid="sign-in-github">"Sign in with GitHub"</a> })}
                }
            })}
            <button type="button" class="link" data-testid="sign-out" on:click=move |_| { sign_out.dispatch(()); }>"Sign out"</button>
            {move || sign_out.value().get().and_then(Result::err).map(|error| view! { <span class="error-inline" role="alert">{error.to_string()}</span> })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_config_link_keeps_its_section_and_filter_on_the_platform_page() {
        assert_eq!(moved_path("/platform", "", ""), "/platform");
        assert_eq!(
            moved_path("/platform", "section=settings&q=github", ""),
            "/platform?section=settings&q=github"
        );
        assert_eq!(
            moved_path("/platform", "section=clusters", "#clusters"),
            "/platform?section=clusters#clusters"
        );
        assert_eq!(
            moved_path("/platform", "", "clusters"),
            "/platform#clusters"
        );
    }
}
