//! The service page (`/services/:name`): a header from the Component, an environment picker (`?env=`) and
//! tabs (`?tab=`): Deployments (one live card per environment), Metrics, Pipelines, Dependencies,
//! Databases and Config. Tabs load only when opened; the URL holds the tab and the environment (and the
//! Metrics tab's `?range=`).

use leptos::lazy;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_params_map, use_query_map};
use leptos_router::{LazyRoute, lazy_route};
use shared::ApiError;
use shared::auth::Permission;
use shared::databases::database_path;
use shared::delivery::{PullRequestView, PullState};
use shared::fleet::cards::upsert_card;
use shared::fleet::overview::{is_onboarded, onboard_href};
use shared::fleet::{
    CatalogState, DatabaseView, DeploymentCard as Card, PodView, SchemaCheckView, ServiceSummary,
};
use shared::url::encode_query_value;

use crate::api;
use crate::app::Session;
use crate::components::delivery::patch_pulls;
use crate::components::dependency_graph::DependencyGraph;
use crate::components::deployment_card::DeploymentCard;
use crate::components::log_panel::LogPanel;
use crate::components::platform::{resource_application_line, resource_application_problem};
use crate::components::status::{
    drift_chip, health_chip, permission_reason, problem_chip, sync_chip, tone_chip,
};
use crate::live::{LiveFleet, fetched};
use crate::pages::config::ConfigTab;
use crate::pages::metrics::MetricsTab;
use crate::pages::pipelines::PipelinesTab;
use crate::pages::{show_error, show_errors};

/// The tabs, by their `?tab=` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tab {
    Deployments,
    Metrics,
    Pipelines,
    Dependencies,
    Databases,
    Config,
}

impl Tab {
    const ALL: [Tab; 6] = [
        Tab::Deployments,
        Tab::Metrics,
        Tab::Pipelines,
        Tab::Dependencies,
        Tab::Databases,
        Tab::Config,
    ];

    fn parse(value: Option<&str>) -> Self {
        match value {
            Some("metrics") => Tab::Metrics,
            Some("pipelines") => Tab::Pipelines,
            Some("dependencies") => Tab::Dependencies,
            Some("databases") => Tab::Databases,
            Some("config") => Tab::Config,
            _ => Tab::Deployments,
        }
    }

    /// The `?tab=` value; the default tab has none.
    fn param(self) -> Option<&'static str> {
        match self {
            Tab::Deployments => None,
            Tab::Metrics => Some("metrics"),
            Tab::Pipelines => Some("pipelines"),
            Tab::Dependencies => Some("dependencies"),
            Tab::Databases => Some("databases"),
            Tab::Config => Some("config"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Tab::Deployments => "Deployments",
            Tab::Metrics => "Metrics",
            Tab::Pipelines => "Pipelines",
            Tab::Dependencies => "Dependencies",
            Tab::Databases => "Databases",
            Tab::Config => "Config",
        }
    }
}

/// The link to this page with a tab and an environment.
fn page_href(name: &str, tab: Tab, env: Option<&str>) -> String {
    let mut params = Vec::new();
    if let Some(tab) = tab.param() {
        params.push(format!("tab={tab}"));
    }
    if let Some(env) = env {
        params.push(format!("env={}", encode_query_value(env)));
    }
    let base = format!("/services/{name}");
    if params.is_empty() {
        base
    } else {
        format!("{base}?{}", params.join("&"))
    }
}

/// The service page as a route whose code loads when a service is first opened: the Overview, the first
/// page most people see, does not carry it.
pub struct ServiceRoute;

#[lazy_route]
impl LazyRoute for ServiceRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ServicePage /> }.into_any()
    }
}

/// One service: who owns it, where it runs and how it is doing.
#[component]
pub fn ServicePage() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let params = use_params_map();
    let query = use_query_map();
    let name = Memo::new(move |_| params.with(|p| p.get("name").unwrap_or_default()));
    let tab = Memo::new(move |_| query.with(|q| Tab::parse(q.get("tab").as_deref())));
    let env = Memo::new(move |_| query.with(|q| q.get("env").filter(|e| !e.is_empty())));
    let service = Memo::new(move |_| live.fleet.with(|fleet| fleet.service(&name.get()).cloned()));
    // Only existence rebuilds the page; changes to the summary patch the header in place.
    let exists = Memo::new(move |_| service.with(Option::is_some));
    let onboarded = Memo::new(move |_| service.with(|s| s.as_ref().is_none_or(is_onboarded)));
    let owner = Signal::derive(move || {
        service.with(|s| s.as_ref().map(|s| s.owner.clone()).unwrap_or_default())
    });

    view! {
        <section class="page">
            <nav class="crumbs" aria-label="Breadcrumb"><A href="/">"Overview"</A>" / "{move || name.get()}</nav>
            <ErrorBoundary fallback=show_errors>
                {move || match (live.loaded.get(), exists.get()) {
                    (None, _) => Ok(view! { <HeaderSkeleton /> }.into_any()),
                    (Some(Err(error)), _) => Err(error),
                    (Some(Ok(())), true) if !onboarded.get() => Ok(view! {
                        <ServiceHeader name />
                        <NotOnboarded name />
                    }.into_any()),
                    (Some(Ok(())), true) => Ok(view! {
                        <ServiceHeader name />
                        <div class="service-nav">
                            // Links, not ARIA tabs: each section is its own URL, and the Releases link leaves the
                            // page, which a tablist may not hold.
                            <nav class="tabs" aria-label="Service sections">
                                {Tab::ALL.into_iter().map(|t| view! {
                                    <a
                                        href=move || page_href(&name.get(), t, env.get().as_deref())
                                        aria-current=move || (tab.get() == t).then_some("page")
                                        class:active=move || tab.get() == t
                                        data-testid=format!("tab-{}", t.label().to_lowercase())
                                    >{t.label()}</a>
                                }).map(IntoAny::into_any).collect_view()}
                                <A href=move || format!("/releases?service={}", name.get()) attr:data-testid="tab-releases">"Releases"</A>
                            </nav>
                            <EnvironmentPicker name tab env />
                        </div>
                        <div class="tab-panel">
                            {move || match tab.get() {
                                Tab::Deployments => view! { <DeploymentsTab name env owner /> }.into_any(),
                                Tab::Metrics => view! { <MetricsTab name env /> }.into_any(),
                                Tab::Pipelines => view! { <PipelinesTab name /> }.into_any(),
                                Tab::Dependencies => view! { <DependencyGraph focus=name.into() /> }.into_any(),
                                Tab::Databases => view! { <DatabasesTab name env owner /> }.into_any(),
                                Tab::Config => view! { <ConfigTab name env owner /> }.into_any(),
                            }}
                        </div>
                    }.into_any()),
                    (Some(Ok(())), false) => Ok(view! {
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
fn HeaderSkeleton() -> impl IntoView {
    view! {
        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading the service" data-testid="loading">
            <div class="skeleton-row skeleton-title"></div>
            <div class="skeleton-row"></div>
            <div class="cards">
                <div class="skeleton-card"></div>
                <div class="skeleton-card"></div>
            </div>
        </div>
    }
}

/// Who owns it, where its code lives, what it calls, and each environment at a glance.
#[component]
fn ServiceHeader(name: Memo<String>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    move || {
        live.fleet.with(|fleet| {
            fleet.service(&name.get()).cloned().map(|service| {
                let repository = format!("https://github.com/{}", service.repository);
                let depends_on = service.depends_on.clone();
                let cells = service.environments.clone();
                let has_file = matches!(service.catalog_state, CatalogState::Found | CatalogState::NotOnboarded);
                let catalog = catalog_block(&service);
                view! {
                    <header class="service-head" data-testid="service-header">
                        <h1>{service.name.clone()}</h1>
                        <p>{service.description.clone()}</p>
                        <dl class="facts">
                            <dt>"Owner"</dt><dd data-testid="service-owner">{service.owner.clone()}</dd>
                            <dt>"Repository"</dt>
                            <dd>
                                <a href=repository.clone() rel="noreferrer">{service.repository.clone()}</a>
                                {has_file.then(|| view! { " · "<a href=format!("{repository}/blob/main/catalog-info.yaml") rel="noreferrer">"catalog-info.yaml"</a> })}
                            </dd>
                            <dt>"Template"</dt><dd class="mono">{service.template.clone()}</dd>
                            <dt>"Depends on"</dt>
                            <dd>
                                {if depends_on.is_empty() {
                                    view! { <span class="muted">"nothing"</span> }.into_any()
                                } else {
                                    depends_on
                                        .into_iter()
                                        .map(|dep| view! { <A href=format!("/services/{dep}") attr:class="chip">{dep.clone()}</A> })
                                        .map(IntoAny::into_any).collect_view()
                                        .into_any()
                                }}
                            </dd>
                            <dt>"Environments"</dt>
                            <dd class="env-summary">
                                {if cells.is_empty() {
                                    view! { <span class="muted">"not deployed anywhere yet"</span> }.into_any()
                                } else {
                                    cells.into_iter().map(|cell| view! {
                                        <span class="env-glance" data-env=cell.environment.clone()>
                                            <strong>{cell.environment.clone()}</strong>" "
                                            <span class="mono">{cell.version.clone().unwrap_or_default()}</span>" "
                                            {sync_chip(cell.sync)}
                                            {health_chip(cell.health)}
                                            {cell.drift.then(drift_chip)}
                                            {cell.problems.iter().map(|p| problem_chip(*p)).collect_view()}
                                        </span>
                                    }).map(IntoAny::into_any).collect_view().into_any()
                                }}
                            </dd>
                        </dl>
                        {catalog}
                    </header>
                }
            })
        })
    }
}

/// A link from `catalog-info.yaml` only when it goes to a web page: the file is anyone's text, and a
/// `javascript:` URL in an `href` would run in Tower's origin.
fn web_url(url: &str) -> Option<String> {
    let scheme = |prefix: &str| {
        url.get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
    };
    (scheme("https://") || scheme("http://")).then(|| url.to_string())
}

/// What the repository's `catalog-info.yaml` says (lifecycle, system, on-call, tags, links, the annotations
/// Tower knows), or that the file is missing and what to do about it.
fn catalog_block(service: &ServiceSummary) -> AnyView {
    match (service.catalog_state, &service.catalog) {
        (CatalogState::Missing, _) => {
            let new_file = format!(
                "https://github.com/{}/new/main?filename=catalog-info.yaml",
                service.repository
            );
            view! {
                <div class="banner tone-warn" data-testid="catalog-missing" role="status">
                    <span class="glyph" aria-hidden="true">"!"</span>
                    <p>
                        {format!(
                            "{} has no catalog-info.yaml, so Tower knows no lifecycle, system, tags, links or on-call for {}. \
                             Add one at the repository's root (Backstage's format, with spec.owner group:{}); Tower reads it within minutes. ",
                            service.repository, service.name, service.owner
                        )}
                        <a href=new_file rel="noreferrer" target="_blank">"Create catalog-info.yaml"</a>
                    </p>
                </div>
            }
            .into_any()
        }
        (CatalogState::Unread, _) => view! {
            <p class="muted small" data-testid="catalog-unread">"The catalog has not been read yet: lifecycle, links and on-call show once it is."</p>
        }
        .into_any(),
        (_, None) => ().into_any(),
        (_, Some(info)) => {
            let fact = |label: &'static str, testid: &'static str, value: Option<String>| {
                value.map(|value| view! { <dt>{label}</dt><dd data-testid=testid>{value}</dd> })
            };
            let on_call = info.on_call.clone().map(|a| view! {
                <dt>"On call"</dt>
                <dd data-testid="catalog-on-call"><span class="mono">{a.value}</span>" "<span class="muted small">{format!("({})", a.key)}</span></dd>
            });
            let tags = (!info.tags.is_empty()).then(|| view! {
                <dt>"Tags"</dt>
                <dd>{info.tags.iter().map(|t| view! { <span class="chip" data-testid="catalog-tag">{t.clone()}</span> }).collect_view()}</dd>
            });
            let links = (!info.links.is_empty()).then(|| view! {
                <dt>"Links"</dt>
                <dd><ul class="inline-list">{info.links.iter().map(|l| match web_url(&l.url) {
                    Some(url) => view! { <li><a href=url rel="noreferrer" target="_blank" data-testid="catalog-link">{l.title.clone()}</a></li> }.into_any(),
                    None => view! { <li data-testid="catalog-link-refused">{format!("{} ", l.title)}<span class="mono muted small">{l.url.clone()}</span></li> }.into_any(),
                }).collect_view()}</ul></dd>
            });
            let annotations = (!info.annotations.is_empty()).then(|| view! {
                <dt>"Annotations"</dt>
                <dd><ul class="inline-list">{info.annotations.iter().map(|a| view! {
                    <li data-testid="catalog-annotation" data-key=a.key.clone()><span class="mono muted">{format!("{}: ", a.key)}</span><span class="mono">{a.value.clone()}</span></li>
                }).collect_view()}</ul></dd>
            });
            view! {
                <section class="catalog" aria-label="Catalog" data-testid="catalog">
                    <dl class="facts">
                        {fact("Lifecycle", "catalog-lifecycle", info.lifecycle.clone())}
                        {fact("System", "catalog-system", info.system.clone())}
                        {fact("Type", "catalog-kind", info.kind.clone())}
                        {on_call}
                        {tags}
                        {links}
                        {annotations}
                    </dl>
                </section>
            }
            .into_any()
        }
    }
}

/// A service the catalog knows that has no Component yet: what that means, and Onboard for those who may.
#[component]
fn NotOnboarded(name: Memo<String>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let session = expect_context::<Session>();
    move || {
        let service = live.fleet.with(|f| f.service(&name.get()).cloned())?;
        let decision = session.decide(Permission::RunTemplates, Some(&service.owner));
        let action = if decision.allowed() {
            view! { <a class="button" href=onboard_href(&service) data-testid="onboard-button">"Onboard"</a> }.into_any()
        } else {
            permission_reason(decision).into_any()
        };
        Some(view! {
            <div class="banner tone-progress" data-testid="not-onboarded-notice" role="status">
                <span class="glyph" aria-hidden="true">"◔"</span>
                <div>
                    <p><strong>"In the catalog, not on the platform yet."</strong>" "
                    {format!("{}'s catalog-info.yaml names {}, but it has no Component, so it runs nowhere. Onboarding opens a pull request adding its Component and a first dev Release.", service.repository, service.name)}</p>
                    {action}
                </div>
            </div>
        })
    }
}

/// All environments, or one: `?env=`.
#[component]
fn EnvironmentPicker(
    name: Memo<String>,
    tab: Memo<Tab>,
    env: Memo<Option<String>>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let choices = Memo::new(move |_| {
        live.fleet.with(|fleet| {
            fleet
                .service(&name.get())
                .map(|s| {
                    s.environments
                        .iter()
                        .map(|c| c.environment.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    // The Metrics tab's time range stays when the environment changes.
    let query = use_query_map();
    let href = move |env: Option<&str>| {
        let href = page_href(&name.get(), tab.get(), env);
        match query
            .with(|q| q.get("range"))
            .filter(|_| tab.get() == Tab::Metrics)
        {
            Some(range) => format!("{href}&range={}", encode_query_value(&range)),
            None => href,
        }
    };
    view! {
        <nav class="env-picker" aria-label="Environment" data-testid="env-picker">
            <a href=move || href(None)
                aria-current=move || env.get().is_none().then_some("true")
                data-testid="env-all">"All environments"</a>
            // Keyed, with reactive attributes: choosing an environment keeps the same link (and the keyboard
            // focus on it) instead of drawing new ones.
            <For each=move || choices.get() key=Clone::clone let:choice>
                <a
                    href={
                        let choice = choice.clone();
                        move || href(Some(&choice))
                    }
                    aria-current={
                        let choice = choice.clone();
                        move || (env.get().as_deref() == Some(choice.as_str())).then_some("true")
                    }
                    data-testid="env-option"
                    data-env=choice.clone()
                >{choice.clone()}</a>
            </For>
        </nav>
    }
}

/// One live card per environment; the log panel for the environment whose Logs were opened.
#[component]
fn DeploymentsTab(
    name: Memo<String>,
    env: Memo<Option<String>>,
    owner: Signal<String>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    crate::components::deployment_card::preload();
    // Fetched when the tab opens and again after the stream reconnects (card deltas may have been missed).
    let detail = fetched(move || {
        let name = name.get();
        live.resyncs.track();
        let seq = live.cards.with_untracked(|c| c.seq());
        async move {
            api::get_service(&name)
                .await
                .map(|detail| (seq, detail.cards))
        }
    });
    // The fetched cards, patched by every newer `card_updated` for this service.
    let cards: Memo<Option<Result<Vec<Card>, ApiError>>> = Memo::new(move |_| {
        let fetched = detail.get()?;
        Some(fetched.map(|(seq, mut cards)| {
            let name = name.get();
            live.cards.with(|updates| {
                for card in updates.newer_than(&name, seq) {
                    upsert_card(&mut cards, card);
                }
            });
            cards
        }))
    });
    let status = Memo::new(move |_| {
        cards.with(|c| {
            c.as_ref()
                .map(|r| r.as_ref().map(|_| ()).map_err(Clone::clone))
        })
    });
    let shown = Memo::new(move |_| {
        let only = env.get();
        cards.with(|cards| {
            cards
                .as_ref()
                .and_then(|r| r.as_ref().ok())
                .map(|cards| {
                    cards
                        .iter()
                        .filter(|c| only.as_ref().is_none_or(|env| &c.environment == env))
                        .map(|c| c.environment.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    let logs: RwSignal<Option<String>> = RwSignal::new(None);
    // Pending pull requests: fetched with the tab, after a Promote or Rollback and after the stream
    // reconnects; in between, every `pull_request_updated` of this service patches them (its CI, reviews,
    // merge).
    let refresh = RwSignal::new(0_u32);
    let answer = fetched(move || {
        let name = name.get();
        refresh.track();
        live.resyncs.track();
        let seq = live.pulls.with_untracked(|p| p.seq());
        async move { api::service_pulls(&name).await.map(|list| (seq, list)) }
    });
    let pulls: Memo<Option<Result<Vec<PullRequestView>, ApiError>>> = Memo::new(move |_| {
        let answer = answer.get()?;
        Some(answer.map(|(seq, mut list)| {
            let name = name.get();
            live.pulls.with(|updates| {
                patch_pulls(&mut list, updates, seq, |pr| {
                    pr.service.as_deref() == Some(name.as_str()) && pr.state == PullState::Open
                })
            });
            list
        }))
    });
    let pulls: Signal<_> = pulls.into();

    view! {
        {move || match status.get() {
                None => view! {
                    <div class="cards" role="status" aria-busy="true" aria-label="Loading deployments" data-testid="loading">
                        <div class="skeleton-card"></div>
                        <div class="skeleton-card"></div>
                    </div>
                }.into_any(),
                Some(Err(error)) => show_error(&error),
                Some(Ok(())) => view! {
                    <Show when=move || !shown.with(Vec::is_empty) fallback=move || view! {
                        <p class="empty" data-testid="no-deployments">
                            {match env.get() {
                                Some(env) => format!("{} does not run in {env}. Pick another environment above.", name.get()),
                                None => format!("{} is not deployed anywhere yet. It appears here once its first Release exists and Argo CD has an Application for it.", name.get()),
                            }}
                        </p>
                    }>
                        <div class="cards">
                            <For each=move || shown.get() key=|env| env.clone() let:environment>
                                <DeploymentCard
                                    card=Signal::derive({
                                        let environment = environment.clone();
                                        move || cards.with(|c| c.as_ref().and_then(|r| r.as_ref().ok()).and_then(|cards| cards.iter().find(|c| c.environment == environment).cloned()))
                                    })
                                    owner
                                    logs
                                    pulls
                                    refresh
                                />
                            </For>
                        </div>
                    </Show>
                }.into_any(),
            }}
        {move || logs.get().map(|environment| {
            let pods: Signal<Vec<PodView>> = Signal::derive({
                let environment = environment.clone();
                move || cards.with(|c| c.as_ref().and_then(|r| r.as_ref().ok()).and_then(|cards| cards.iter().find(|c| c.environment == environment).map(|c| c.pods.clone())).unwrap_or_default())
            });
            view! { <LogPanel service=name.into() environment pods on_close=Callback::new(move |()| logs.set(None)) /> }
        })}
    }
}

/// Databases bound to the service, per environment: available, schema, bound components, checks. Its code
/// is a separate wasm module, fetched the first time the tab opens.
#[component]
fn DatabasesTab(
    name: Memo<String>,
    env: Memo<Option<String>>,
    owner: Signal<String>,
) -> impl IntoView {
    Suspend::new(databases_tab(name, env, owner))
}

#[lazy]
fn databases_tab(name: Memo<String>, env: Memo<Option<String>>, owner: Signal<String>) -> AnyView {
    view! { <LoadedDatabasesTab name env owner /> }.into_any()
}

#[component]
fn LoadedDatabasesTab(
    name: Memo<String>,
    env: Memo<Option<String>>,
    owner: Signal<String>,
) -> impl IntoView {
    let session = expect_context::<Session>();
    let databases = fetched(move || {
        let name = name.get();
        async move { api::list_databases(&name).await }
    });
    let hidden_reason = move || {
        session
            .info()
            .map(|info| info.decide(Permission::ReadDatabaseErrors, Some(&owner.get())))
    };
    view! {
            {move || match databases.get() {
                None => view! {
                    <div class="skeleton" role="status" aria-busy="true" aria-label="Loading databases" data-testid="loading">
                        <div class="skeleton-row"></div><div class="skeleton-row"></div>
                    </div>
                }.into_any(),
                Some(Err(error)) => show_error(&error),
                Some(Ok(list)) => {
                    let only = env.get();
                    let rows: Vec<DatabaseView> = list.into_iter().filter(|d| only.as_ref().is_none_or(|e| &d.environment == e)).collect();
                    if rows.is_empty() {
                        view! {
                            <p class="empty" data-testid="no-databases">
                                {format!("{} has no database{}. ", name.get(), only.map(|e| format!(" in {e}")).unwrap_or_default())}
                                "Ask for one by PR: a Database in platform/environments/<env>/, bound from the service's Release."
                            </p>
                        }.into_any()
                    } else {
                        view! {
                            <table class="fleet databases">
                                <thead><tr>
                                    <th scope="col">"Database"</th><th scope="col">"Available"</th><th scope="col">"Schema"</th>
                                    <th scope="col">"Bound to"</th><th scope="col">"Checks"</th>
                                </tr></thead>
                                <tbody>
                                    {rows.into_iter().map(|db| view! { <DatabaseRow db hidden_reason=hidden_reason() /> }).map(IntoAny::into_any).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }
                }
            }}
    }
}

#[component]
fn DatabaseRow(db: DatabaseView, hidden_reason: Option<shared::auth::Decision>) -> impl IntoView {
    use shared::status::Tone;
    let applied = db.applied_version.clone().unwrap_or_else(|| "none".into());
    let code = db.code_version.clone().unwrap_or_else(|| "unknown".into());
    let any_hidden = db.checks.iter().any(|c| c.error_hidden);
    view! {
        <tr data-testid="database-row" data-database=db.name.clone() data-env=db.environment.clone()>
            <th scope="row">
                <a class="mono" href=database_path(&db.environment, &db.name) data-testid="database-link">{db.name.clone()}</a>
                <span class="muted small">{format!(" {} · {}", db.environment, db.size)}</span>
                {db.endpoint.clone().map(|e| view! { <div class="mono muted small">{e}</div> })}
            </th>
            <td>
                {if db.available {
                    tone_chip(Tone::Ok, "Available", Some("database-available"))
                } else {
                    tone_chip(Tone::Bad, "Not available", Some("database-available"))
                }}
                {db.application.as_ref().map(|app| view! {
                    {resource_application_line("Database", app, "database-application")}
                    {resource_application_problem(app, "database-application-problem")}
                })}
            </td>
            <td>
                {format!("applied {applied} · newest in code {code} ")}
                {if db.up_to_date {
                    tone_chip(Tone::Ok, "Up to date", Some("database-schema"))
                } else {
                    tone_chip(Tone::Warn, "Behind the code", Some("database-schema"))
                }}
                {db.schema_application.as_ref().map(|app| view! {
                    {resource_application_line("DatabaseSchema", app, "schema-application")}
                    {resource_application_problem(app, "schema-application-problem")}
                })}
            </td>
            <td>
                {db.bound_components.iter().map(|c| view! { <a href=format!("/services/{c}") class="chip">{c.clone()}</a> }).map(IntoAny::into_any).collect_view()}
            </td>
            <td>
                <ul class="checks">{db.checks.into_iter().map(check).map(IntoAny::into_any).collect_view()}</ul>
                {any_hidden.then(|| hidden_reason.and_then(permission_reason))}
            </td>
        </tr>
    }
}

fn check(check: SchemaCheckView) -> impl IntoView {
    use shared::status::Tone;
    let tone = match check.state.as_str() {
        "Succeeded" => Tone::Ok,
        "Running" | "Pending" => Tone::Progress,
        "Failed" => Tone::Bad,
        _ => Tone::Unknown,
    };
    view! {
        <li data-testid="schema-check" data-state=check.state.clone()>
            {tone_chip(tone, check.state.clone(), Some("check-state"))}" "
            <span class="mono">{check.name.clone()}</span>
            {check.error.map(|e| view! { <pre class="db-error" data-testid="database-error">{e}</pre> })}
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_link_becomes_a_link_only_when_it_goes_to_a_web_page() {
        assert_eq!(
            web_url("https://docs.acme.example/payments").as_deref(),
            Some("https://docs.acme.example/payments")
        );
        assert!(web_url("HTTP://grafana.acme.example/d/payments").is_some());
        for refused in [
            "javascript:alert(document.cookie)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "\u{1}https://evil.example",
            "data:text/html,<script>alert(1)</script>",
            "//evil.example",
            "/services/payments",
            "https:evil.example",
            "",
        ] {
            assert_eq!(web_url(refused), None, "{refused:?}");
        }
    }
}
