//! The Platform page (`/platform?section=&q=`): the platform as Argo CD runs it, and its configuration.
//!
//! - Components: every platform component (`infra/<component>/<cluster>.yaml`) on every cluster, with the
//!   version the file asks for, sync and health, the file's last bump and links to the file and to the
//!   Application; skew between clusters in words; Tower's own row says which version serves this page.
//!   Above it, the platform's Applications counted by standing (waiting for a CRD apart from failing) and
//!   the waiting ones with what they wait for ([`matrix`]).
//! - Crossplane packages: the same matrix for `packages/<package>/<cluster>.yaml`.
//! - ApplicationSets with their generators and the Applications each generated, the clusters Tower reads and
//!   how their watches stand, and Tower's settings as loaded (a secret only says whether it is set).
//!
//! Without `section` the page shows every part, the Components first; `section` narrows it to one, so each
//! can be linked. `q` filters the settings by key. `/config`, the page's old address, redirects here with its
//! query.
//!
//! Its code is a separate wasm module, fetched the first time the page opens, so the Overview's first load
//! does not carry it. Each of its two answers (`/platform`, `/config`) is read once a section showing it is
//! first opened and kept while the visitor moves between sections; `/platform`'s is read again as the stream
//! reports changes, the old one shown until the new one arrives.

mod matrix;

use leptos::html::Input;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::{LazyRoute, NavigateOptions, lazy_route};
use shared::ApiError;
use shared::config::{
    ApplicationSetView, ClusterView, GeneratedApplication, PlatformConfig, Setting,
};
use shared::fleet::{Fleet, Health, SourceState, SyncStatus};
use shared::status::{Tone, health_tone, sync_tone};
use shared::url::encode_query_value;

use crate::api;
use crate::components::status::tone_chip;
use crate::components::yaml_editor::yaml_block;
use crate::live::{LiveFleet, browser_now, fetched};
use crate::pages::show_errors;

/// `/platform`, fetched as its own wasm module on the first visit.
#[derive(Debug)]
pub struct PlatformRoute;

#[lazy_route]
impl LazyRoute for PlatformRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <PlatformPage /> }.into_any()
    }
}

/// One part of the page, as `?section=` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Components,
    Packages,
    ApplicationSets,
    Clusters,
    Settings,
}

impl Section {
    const ALL: [Section; 5] = [
        Section::Components,
        Section::Packages,
        Section::ApplicationSets,
        Section::Clusters,
        Section::Settings,
    ];

    /// Its name in the URL, which is also its element's id.
    fn slug(self) -> &'static str {
        match self {
            Section::Components => "components",
            Section::Packages => "packages",
            Section::ApplicationSets => "application-sets",
            Section::Clusters => "clusters",
            Section::Settings => "settings",
        }
    }

    /// Its heading.
    fn title(self) -> &'static str {
        match self {
            Section::Components => "Components",
            Section::Packages => "Crossplane packages",
            Section::ApplicationSets => "ApplicationSets",
            Section::Clusters => "Clusters",
            Section::Settings => "Tower's settings",
        }
    }

    /// Whether it shows `/platform`'s answer (else `/config`'s).
    fn reads_platform(self) -> bool {
        matches!(self, Section::Components | Section::Packages)
    }

    fn parse(slug: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.slug() == slug)
    }
}

/// What `?section=` shows: one section, or every one (`None`) without it or with a name this build does not
/// know.
fn shown_section(param: Option<&str>) -> Option<Section> {
    param.and_then(Section::parse)
}

/// Whether `section` is on the page when `shown` is.
fn shows(shown: Option<Section>, section: Section) -> bool {
    shown.is_none_or(|only| only == section)
}

/// The page's address for a section (every one when `None`) and a settings filter.
fn page_href(section: Option<Section>, q: &str) -> String {
    let mut pairs = Vec::new();
    if let Some(section) = section {
        pairs.push(format!("section={}", section.slug()));
    }
    if !q.is_empty() {
        pairs.push(format!("q={}", encode_query_value(q)));
    }
    if pairs.is_empty() {
        "/platform".into()
    } else {
        format!("/platform?{}", pairs.join("&"))
    }
}

/// True from the first time `wanted` is, and then for good: an answer once asked for is kept.
fn once(wanted: impl Fn() -> bool + Send + Sync + 'static) -> Memo<bool> {
    Memo::new(move |was: Option<&bool>| was.copied().unwrap_or(false) || wanted())
}

/// The whole page: the section picker, then the chosen sections, each half from its own answer.
#[component]
fn PlatformPage() -> impl IntoView {
    let query = use_query_map();
    let section = Memo::new(move |_| query.with(|q| shown_section(q.get("section").as_deref())));
    let q = Memo::new(move |_| query.with(|q| q.get("q").unwrap_or_default()));
    let shows_platform = Memo::new(move |_| {
        let shown = section.get();
        Section::ALL
            .into_iter()
            .any(|s| s.reads_platform() && shows(shown, s))
    });
    let shows_config = Memo::new(move |_| {
        let shown = section.get();
        Section::ALL
            .into_iter()
            .any(|s| !s.reads_platform() && shows(shown, s))
    });
    let platform = matrix::platform_answer(once(move || shows_platform.get()));
    let config_on = once(move || shows_config.get());
    let config = fetched(move || {
        let on = config_on.get();
        async move {
            if on {
                Some((api::get_platform_config().await, browser_now()))
            } else {
                None
            }
        }
    });

    // `/` jumps to the settings filter, as it jumps to the search box on the Overview.
    let filter_box: NodeRef<Input> = NodeRef::new();
    crate::pages::focus_on_slash(filter_box);

    let picker_link = move |choice: Option<Section>, label: &'static str| {
        let testid = match choice {
            Some(s) => format!("section-{}", s.slug()),
            None => "section-all".to_string(),
        };
        view! {
            <a
                href=move || page_href(choice, &q.get())
                aria-current=move || (section.get() == choice).then_some("true")
                data-testid=testid
            >
                {label}
            </a>
        }
    };
    view! {
        <section class="page platform-config" data-testid="platform-config">
            <div class="page-head">
                <h1>"Platform"</h1>
                <p class="counts">"The platform as Argo CD runs it on every cluster, what Argo CD generates and from where, the clusters Tower reads, and Tower's own settings."</p>
            </div>
            <nav class="config-sections" aria-label="Sections" data-testid="config-sections">
                {picker_link(None, "All")}
                {Section::ALL.into_iter().map(|s| picker_link(Some(s), s.title())).collect_view()}
            </nav>
            {move || shows_platform.get().then(|| view! { <matrix::PlatformPart answer=platform section /> })}
            {move || shows_config.get().then(|| view! {
                <ErrorBoundary fallback=show_errors>
                    {move || match config.get().flatten() {
                        None => Ok(skeleton()),
                        Some((Err(error), _)) => Err::<AnyView, ApiError>(error),
                        Some((Ok(config), read_at)) => Ok(view! {
                            <PlatformConfigView config read_at section q filter_box />
                        }.into_any()),
                    }}
                </ErrorBoundary>
            })}
        </section>
    }
}

/// Shaped like the configuration's sections: a heading and a few rows each.
fn skeleton() -> AnyView {
    view! {
        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading the platform configuration" data-testid="loading">
            {(0..3).map(|_| view! {
                <div class="skeleton-row skeleton-title"></div>
                <div class="skeleton-row"></div>
                <div class="skeleton-row"></div>
            }).collect_view()}
        </div>
    }
    .into_any()
}

/// The configuration's answer: when it was read, then its chosen sections (all of them without `?section=`).
#[component]
fn PlatformConfigView(
    config: PlatformConfig,
    read_at: String,
    section: Memo<Option<Section>>,
    q: Memo<String>,
    filter_box: NodeRef<Input>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let config = StoredValue::new(config);
    let about = move || {
        let age = live.now.with(|now| shared::time::age_or_raw(&read_at, now));
        format!(
            "Configuration read {age}. The clusters' states follow the live stream; open the page again for newer ApplicationSets and Applications."
        )
    };
    view! {
        <p class="muted small config-about" data-testid="platform-config-about">{about}</p>
        {move || {
            let only = section.get();
            Section::ALL
                .into_iter()
                .filter(|s| !s.reads_platform() && shows(only, *s))
                .map(|s| match s {
                    Section::ApplicationSets => config.with_value(|c| application_sets_view(&c.application_sets)),
                    Section::Clusters => config.with_value(|c| view! { <ClustersView clusters=c.clusters.clone() /> }.into_any()),
                    Section::Settings => config.with_value(|c| view! {
                        <SettingsView settings=c.settings.clone() section q filter_box />
                    }.into_any()),
                    Section::Components | Section::Packages => ().into_any(),
                })
                .collect_view()
        }}
    }
}

/// A section's frame: its id (so it can be linked), heading and a sentence on what it shows.
fn section_frame(section: Section, about: &'static str, body: AnyView) -> AnyView {
    let title_id = format!("{}-title", section.slug());
    let labelled_by = title_id.clone();
    view! {
        <section class="config-env platform-section" id=section.slug() data-testid=format!("config-{}", section.slug())
            aria-labelledby=labelled_by>
            <h2 id=title_id>{section.title()}</h2>
            <p class="muted small">{about}</p>
            {body}
        </section>
    }
    .into_any()
}

// ---------------------------------------------------------------------------------------------------------
// ApplicationSets

/// Every ApplicationSet as a card, or a word on why there are none.
fn application_sets_view(sets: &[ApplicationSetView]) -> AnyView {
    let body = if sets.is_empty() {
        view! {
            <p class="empty" data-testid="no-application-sets">
                "Argo CD has no ApplicationSets on the management cluster, so it generates no Applications. They come from the platform's bootstrap in application-repositories."
            </p>
        }
        .into_any()
    } else {
        sets.iter()
            .map(|set| view! { <ApplicationSetCard set=set.clone() /> })
            .collect_view()
            .into_any()
    };
    section_frame(
        Section::ApplicationSets,
        "Argo CD renders each set's template once for every combination its generators yield; each result is an Application.",
        body,
    )
}

/// The tone and word of an Application's sync status; a word Argo CD added later is shown as it is.
fn sync_look(sync: Option<&str>) -> (Tone, String) {
    match sync {
        Some(word) => (sync_tone(SyncStatus::parse(word)), word.to_string()),
        None => (Tone::Unknown, SyncStatus::Unknown.label().to_string()),
    }
}

/// The tone and word of an Application's health.
fn health_look(health: Option<&str>) -> (Tone, String) {
    match health {
        Some(word) => (health_tone(Health::parse(word)), word.to_string()),
        None => (Tone::Unknown, Health::Unknown.label().to_string()),
    }
}

/// How a set's Applications stand, at a glance: how many are in each state other than Synced and Healthy,
/// worst first.
fn set_summary(applications: &[GeneratedApplication]) -> AnyView {
    if applications.is_empty() {
        return ().into_any();
    }
    let mut counts: Vec<(Tone, String, usize)> = Vec::new();
    for app in applications {
        let sync = sync_look(app.sync.as_deref());
        let health = health_look(app.health.as_deref());
        for (what, (tone, word)) in [("sync", sync), ("health", health)] {
            if tone == Tone::Ok {
                continue;
            }
            // "Unknown" is a word of both vocabularies: say which.
            let word = if word == "Unknown" {
                format!("{what} Unknown")
            } else {
                word
            };
            match counts.iter_mut().find(|(_, w, _)| *w == word) {
                Some(count) => count.2 += 1,
                None => counts.push((tone, word, 1)),
            }
        }
    }
    if counts.is_empty() {
        return tone_chip(
            Tone::Ok,
            "All Synced and Healthy",
            Some("application-set-summary"),
        );
    }
    counts.sort_by_key(|count| std::cmp::Reverse(count.0));
    view! {
        <span class="chips" data-testid="application-set-summary">
            {counts.into_iter().map(|(tone, word, n)| tone_chip(tone, format!("{n} {word}"), None)).collect_view()}
        </span>
    }
    .into_any()
}

/// One ApplicationSet: generators, the Applications it owns, its YAML folded.
#[component]
fn ApplicationSetCard(set: ApplicationSetView) -> impl IntoView {
    let count = set.applications.len();
    let generators = if set.generators.is_empty() {
        view! { <p class="muted small" data-testid="no-generators">"No generators: the set yields no Applications."</p> }
            .into_any()
    } else {
        view! {
            <ul class="config-list generator-list">
                {set.generators.iter().map(|g| view! {
                    <li data-testid="generator" data-value=g.clone()>{generator_view(g)}</li>
                }).collect_view()}
            </ul>
        }
        .into_any()
    };
    let applications = if set.applications.is_empty() {
        view! {
            <p class="muted small" data-testid="no-generated-applications">
                "No Application names this set as its owner: its generators yield nothing yet, or Argo CD has not reconciled it."
            </p>
        }
        .into_any()
    } else {
        let rows = set
            .applications
            .iter()
            .map(|app| view! { <GeneratedApplicationRow app=app.clone() /> })
            .collect_view();
        view! {
            <table class="fleet generated-applications" data-testid="generated-applications">
                <thead><tr><th scope="col">"Application"</th><th scope="col">"Sync and health"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    view! {
        <article class="config-resource" data-testid="application-set" data-name=set.name.clone()>
            <header class="config-resource-head">
                <h3>"ApplicationSet "<span class="mono">{set.name.clone()}</span></h3>
                {set_summary(&set.applications)}
            </header>
            <h4 class="platform-subhead">"Generators"</h4>
            {generators}
            <h4 class="platform-subhead">{format!("Applications ({count})")}</h4>
            {applications}
            <details class="config-fold" data-testid="application-set-yaml-fold">
                <summary>"YAML"<span class="muted small">" · the object on the management cluster"</span></summary>
                {yaml_block(&set.yaml, "application-set-yaml")}
            </details>
        </article>
    }
}

/// `matrix of (a; b)` (or `merge of`) split into its kind and its generators; nesting is kept whole.
fn combinator(words: &str) -> Option<(&str, Vec<&str>)> {
    let (kind, rest) = words.split_once(" of (")?;
    let inner = rest.strip_suffix(')')?;
    if kind.contains(' ') {
        return None;
    }
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0_i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' if depth == 0 => {
                parts.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(inner[start..].trim());
    (depth == 0 && parts.iter().all(|p| !p.is_empty())).then_some((kind, parts))
}

/// A generator in words; a matrix or merge as a list of the generators it combines.
fn generator_view(words: &str) -> AnyView {
    match combinator(words) {
        Some((kind, parts)) => {
            let how = match kind {
                "matrix" => "matrix: every combination of".to_string(),
                other => format!("{other} of"),
            };
            view! {
                <span>{how}</span>
                <ul class="config-list generator-list">
                    {parts.into_iter().map(|p| view! { <li>{generator_view(p)}</li> }).collect_view()}
                </ul>
            }
            .into_any()
        }
        None => view! { <span class="mono">{words.to_string()}</span> }.into_any(),
    }
}

/// The service page an Application belongs to, as `(service, environment)`: its name is `<service>-<env>`,
/// the service is in the live fleet and runs in that environment. The longest service name wins, so
/// `search-api-dev` is `search-api`'s when both `search` and `search-api` exist.
fn service_of(application: &str, fleet: &Fleet) -> Option<(String, String)> {
    application
        .rmatch_indices('-')
        .map(|(i, _)| (&application[..i], &application[i + 1..]))
        .find(|(service, env)| {
            !env.is_empty()
                && fleet
                    .service(service)
                    .is_some_and(|s| s.environments.iter().any(|c| c.environment == *env))
        })
        .map(|(service, env)| (service.to_string(), env.to_string()))
}

/// One generated Application: its name (a link to its service page when it is a service's), sync, health.
#[component]
fn GeneratedApplicationRow(app: GeneratedApplication) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let (sync_tone, sync_word) = sync_look(app.sync.as_deref());
    let (health_tone, health_word) = health_look(app.health.as_deref());
    let name = app.name.clone();
    // The fleet arrives over the stream, maybe after this answer: the link appears once the service is known.
    let target = Memo::new(move |_| live.fleet.with(|fleet| service_of(&name, fleet)));
    let label = app.name.clone();
    let (sync_value, health_value) = (sync_word.clone(), health_word.clone());
    view! {
        <tr data-testid="generated-application" data-name=app.name.clone()
            data-sync=sync_value data-health=health_value>
            <td>
                {move || match target.get() {
                    Some((service, env)) => view! {
                        <a class="mono" href=format!("/services/{service}?env={env}") data-testid="application-link">{label.clone()}</a>
                    }.into_any(),
                    None => view! { <span class="mono">{label.clone()}</span> }.into_any(),
                }}
            </td>
            // One cell for both, so a phone (which hides every table's third column) still shows health.
            <td>
                {tone_chip(sync_tone, sync_word, Some("chip-sync"))}
                {tone_chip(health_tone, health_word, Some("chip-health"))}
            </td>
        </tr>
    }
}

// ---------------------------------------------------------------------------------------------------------
// Clusters

/// A cluster's state: slug, tone, word, and a sentence saying what it means.
fn cluster_look(state: &SourceState, now: &str) -> (&'static str, Tone, &'static str, String) {
    match state {
        SourceState::Connected => (
            "connected",
            Tone::Ok,
            "Connected",
            "Watching; what Tower shows is current.".into(),
        ),
        SourceState::Syncing => (
            "syncing",
            Tone::Progress,
            "Syncing",
            "The first list is under way; its services appear when it completes.".into(),
        ),
        SourceState::Relisting => (
            "relisting",
            Tone::Warn,
            "Relisting",
            "Listing again after a gap in the watch; values may be a little behind.".into(),
        ),
        SourceState::Unreachable { since, reason } => (
            "unreachable",
            Tone::Bad,
            "Unreachable",
            format!(
                "Unreachable {}: {reason}. Its services show their last known state.",
                shared::time::since(since, now)
            ),
        ),
    }
}

/// The clusters Tower reads; each state follows the event stream once it reports on the cluster.
#[component]
fn ClustersView(clusters: Vec<ClusterView>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let body = if clusters.is_empty() {
        view! {
            <p class="empty" data-testid="no-clusters">
                "Tower reads no clusters. List them under " <span class="mono">"clusters"</span>
                " in its configuration file: one management cluster and one per environment."
            </p>
        }
        .into_any()
    } else {
        let rows = clusters
            .into_iter()
            .map(|cluster| {
                let name = cluster.name.clone();
                let answered = cluster.state.clone();
                let state = Memo::new(move |_| {
                    live.sources.with(|sources| {
                        sources
                            .iter()
                            .find(|s| s.cluster == name)
                            .map(|s| s.state.clone())
                            .unwrap_or_else(|| answered.clone())
                    })
                });
                let look = move || live.now.with(|now| cluster_look(&state.get(), now));
                view! {
                    <tr data-testid="cluster" data-name=cluster.name.clone() data-state=move || look().0>
                        <th scope="row" class="mono">{cluster.name.clone()}</th>
                        <td>{match cluster.environment.clone() {
                            Some(env) => env.into_any(),
                            None => view! { <span class="muted">"management"</span> }.into_any(),
                        }}</td>
                        <td class="mono cluster-connection">{cluster.connection.clone()}</td>
                        <td>
                            {move || {
                                let (_, tone, word, sentence) = look();
                                view! {
                                    {tone_chip(tone, word, Some("cluster-state"))}
                                    <span class="small muted" data-testid="cluster-state-detail">{sentence}</span>
                                }
                            }}
                        </td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table class="fleet platform-clusters" data-testid="clusters">
                <thead><tr>
                    <th scope="col">"Cluster"</th><th scope="col">"Environment"</th>
                    <th scope="col">"Connection"</th><th scope="col">"State"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    section_frame(
        Section::Clusters,
        "The management cluster holds the platform's objects and Argo CD; each environment's cluster runs its services.",
        body,
    )
}

// ---------------------------------------------------------------------------------------------------------
// Settings

/// What a secret's cell says: `set`, or the server's `not set …` sentence; anything else is never shown.
fn secret_word(value: &str) -> &str {
    if value == "set" || value.starts_with("not set") {
        value
    } else {
        "hidden"
    }
}

/// Whether `key` passes the filter (case-insensitive; an empty filter passes everything).
fn key_matches(key: &str, filter: &str) -> bool {
    let filter = filter.trim().to_lowercase();
    filter.is_empty() || key.to_lowercase().contains(&filter)
}

/// The settings as a key/value table, filtered by key.
#[component]
fn SettingsView(
    settings: Vec<Setting>,
    section: Memo<Option<Section>>,
    q: Memo<String>,
    filter_box: NodeRef<Input>,
) -> impl IntoView {
    let total = settings.len();
    let settings = StoredValue::new(settings);
    let navigate = use_navigate();
    let set_q = move |text: String| {
        navigate(
            &page_href(section.get_untracked(), &text),
            NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };
    let shown = Memo::new(move |_| {
        let filter = q.get();
        settings.with_value(|all| {
            all.iter()
                .filter(|s| key_matches(&s.key, &filter))
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let body = if total == 0 {
        view! { <p class="empty" data-testid="no-settings">"Tower reported no settings."</p> }
            .into_any()
    } else {
        view! {
            <div class="filters" role="search">
                <label class="search">
                    <span class="visually-hidden">"Filter settings by key"</span>
                    <input
                        type="search"
                        node_ref=filter_box
                        placeholder="Filter settings by key (press /)"
                        data-testid="settings-filter"
                        prop:value=move || q.get()
                        on:input=move |event| set_q(event_target_value(&event))
                    />
                </label>
                <span class="muted small" data-testid="settings-count" aria-live="polite">
                    {move || format!("{} of {total} settings", shown.with(Vec::len))}
                </span>
            </div>
            {move || {
                let rows = shown.get();
                if rows.is_empty() {
                    view! {
                        <p class="empty" data-testid="no-matching-settings">
                            {format!("No setting's key contains “{}”. Clear the filter to see all {total}.", q.get().trim())}
                        </p>
                    }
                    .into_any()
                } else {
                    view! {
                        <table class="fleet platform-settings" data-testid="settings">
                            <thead><tr><th scope="col">"Key"</th><th scope="col">"Value"</th></tr></thead>
                            <tbody>{rows.into_iter().map(setting_row).collect_view()}</tbody>
                        </table>
                    }
                    .into_any()
                }
            }}
        }
        .into_any()
    };
    section_frame(
        Section::Settings,
        "Tower's configuration as it was loaded at start. Secrets say only whether they are set; their values never leave the server.",
        body,
    )
}

/// One setting; a secret shows a lock and whether it is set, never a value.
fn setting_row(setting: Setting) -> AnyView {
    let value = if setting.secret {
        view! {
            <span class="secret-value">
                // Drawn rather than an emoji, as the permission reason's lock is.
                <svg class="lock" aria-hidden="true" viewBox="0 0 16 16" width="12" height="12">
                    <path d="M4.5 7V5a3.5 3.5 0 0 1 7 0v2" fill="none" stroke="currentColor" stroke-width="1.6"/>
                    <rect x="2.5" y="7" width="11" height="8" rx="1.5" fill="currentColor"/>
                </svg>
                <span class="visually-hidden">"Secret: "</span>
                {secret_word(&setting.value).to_string()}
            </span>
        }
        .into_any()
    } else {
        view! { <span class="mono">{setting.value.clone()}</span> }.into_any()
    };
    view! {
        <tr data-testid="setting" data-key=setting.key.clone() data-secret=setting.secret.to_string()>
            <th scope="row" class="mono">{setting.key.clone()}</th>
            <td data-testid="setting-value">{value}</td>
        </tr>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::fleet::EnvironmentCell;

    fn fleet(services: &[(&str, &[&str])]) -> Fleet {
        Fleet::from_services(services.iter().map(|(name, envs)| {
            shared::fleet::ServiceSummary {
                name: name.to_string(),
                owner: "team".into(),
                description: String::new(),
                repository: String::new(),
                template: String::new(),
                depends_on: Vec::new(),
                environments: envs
                    .iter()
                    .map(|env| EnvironmentCell {
                        environment: env.to_string(),
                        version: None,
                        sync: SyncStatus::Synced,
                        health: Health::Healthy,
                        drift: false,
                        unreachable_since: None,
                        unreachable_clusters: Vec::new(),
                        problems: Vec::new(),
                    })
                    .collect(),
                catalog: None,
                catalog_state: Default::default(),
            }
        }))
    }

    #[test]
    fn an_application_links_to_the_service_it_is_named_after_in_an_environment_it_runs_in() {
        let fleet = fleet(&[
            ("payments", &["dev", "prod"]),
            ("search", &["dev"]),
            ("search-api", &["dev"]),
        ]);
        let of = |name| service_of(name, &fleet);
        assert_eq!(
            of("payments-prod"),
            Some(("payments".into(), "prod".into()))
        );
        assert_eq!(
            of("search-api-dev"),
            Some(("search-api".into(), "dev".into()))
        );
        assert_eq!(of("search-prod"), None, "search does not run in prod");
        assert_eq!(of("infra-cert-manager-dev"), None);
        assert_eq!(of("payments"), None);
        assert_eq!(of("payments-"), None);
    }

    #[test]
    fn a_matrix_generator_reads_as_the_generators_it_combines() {
        assert_eq!(
            combinator("matrix of (git files a/*.yaml; clusters env=dev, x=y)"),
            Some((
                "matrix",
                vec!["git files a/*.yaml", "clusters env=dev, x=y"]
            ))
        );
        assert_eq!(
            combinator("merge of (matrix of (a; b); c)"),
            Some(("merge", vec!["matrix of (a; b)", "c"]))
        );
        assert_eq!(combinator("git directories platform/*"), None);
        assert_eq!(combinator("clusters (all)"), None);
    }

    #[test]
    fn a_secret_shows_whether_it_is_set_and_nothing_else() {
        assert_eq!(secret_word("set"), "set");
        assert_eq!(secret_word("not set"), "not set");
        assert_eq!(
            secret_word("not set (sessions end when Tower restarts)"),
            "not set (sessions end when Tower restarts)"
        );
        assert_eq!(secret_word("-----BEGIN PRIVATE KEY-----"), "hidden");
    }

    #[test]
    fn the_address_keeps_the_section_and_the_filter() {
        assert_eq!(page_href(None, ""), "/platform");
        assert_eq!(
            page_href(Some(Section::Components), ""),
            "/platform?section=components"
        );
        assert_eq!(
            page_href(Some(Section::Clusters), ""),
            "/platform?section=clusters"
        );
        assert_eq!(
            page_href(Some(Section::Settings), "github app"),
            "/platform?section=settings&q=github%20app"
        );
        assert_eq!(page_href(None, "x"), "/platform?q=x");
        for section in Section::ALL {
            assert_eq!(Section::parse(section.slug()), Some(section));
            assert_eq!(shown_section(Some(section.slug())), Some(section));
        }
        assert!(key_matches("github.app_private_key", "GITHUB.APP"));
        assert!(!key_matches("organisation", "github"));
    }

    #[test]
    fn every_section_is_shown_unless_the_address_names_one() {
        assert_eq!(shown_section(None), None);
        assert_eq!(shown_section(Some("no-such-section")), None);
        assert_eq!(shown_section(Some("packages")), Some(Section::Packages));
        assert!(shows(None, Section::Settings));
        assert!(shows(Some(Section::Packages), Section::Packages));
        assert!(!shows(Some(Section::Packages), Section::Components));
    }
}
