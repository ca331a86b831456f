//! The Platform page's Components and Crossplane packages: one row per component (or package), one column
//! per cluster, each cell the component's Application there. Above them, the platform's Applications counted
//! by standing and the ones waiting for another one's CRD, with what they wait for.
//!
//! Live without flicker: the answer is read again whenever the stream says one of the platform's
//! Applications changed, main moved (a bump) or the stream reconnected, at most once per
//! [`REFRESH_EVERY`]; the old answer stays on screen until the new one arrives, and rows and cells are keyed,
//! each redrawn only when what it shows changed, so the focus stays where it was.

use std::time::Duration;

use leptos::prelude::*;
use shared::ApiError;
use shared::platform::{
    Bump, ComponentCell, ComponentRow, PlatformCluster, PlatformView, ResourceApplication,
    Standing, StandingCounts, TOWER_COMPONENT,
};
use shared::time::age_or_raw;

use super::{Section, section_frame, shows};
use crate::api;
use crate::components::platform::{
    application_name, count_entries, count_label, is_web_url, standing_look,
};
use crate::components::status::{health_chip, sync_chip};
use crate::live::{LiveFleet, browser_now, fetched};
use crate::pages::show_errors;

/// At most one reading of `/platform` per this long while changes stream in (a bring-up changes dozens of
/// Applications a second); the last change of a burst is always read.
const REFRESH_EVERY: Duration = Duration::from_millis(500);

/// `/platform`'s answer as the page shows it.
#[derive(Clone, Copy)]
pub(super) struct PlatformAnswer {
    /// The newest good answer and when it was read, kept while a newer reading is under way or failed.
    shown: Memo<Option<(PlatformView, String)>>,
    /// The newest reading's error, when it failed.
    error: Memo<Option<ApiError>>,
}

/// Reads `/platform` once `on`, then again whenever the stream reports a change to the platform.
pub(super) fn platform_answer(on: Memo<bool>) -> PlatformAnswer {
    let live = expect_context::<LiveFleet>();
    let refresh = throttled(move || {
        live.platform_changes.track();
        live.releases.track();
        live.resyncs.track();
    });
    let answer = fetched(move || {
        let on = on.get();
        refresh.track();
        async move {
            if on {
                Some((api::get_platform().await, browser_now()))
            } else {
                None
            }
        }
    });
    let shown = Memo::new(move |kept: Option<&Option<(PlatformView, String)>>| {
        match answer.get().flatten() {
            Some((Ok(view), read_at)) => Some((view, read_at)),
            _ => kept.cloned().flatten(),
        }
    });
    let error = Memo::new(move |_| {
        answer.with(|answer| match answer {
            Some(Some((Err(error), _))) => Some(error.clone()),
            _ => None,
        })
    });
    PlatformAnswer { shown, error }
}

/// A counter bumped [`REFRESH_EVERY`] after what `changes` reads changes, once however many changes arrive
/// in between.
fn throttled(changes: impl Fn() + 'static) -> RwSignal<u32> {
    let bumps = RwSignal::new(0_u32);
    let pending = StoredValue::new(false);
    Effect::new(move |ran: Option<()>| {
        changes();
        if ran.is_none() || pending.get_value() {
            return;
        }
        pending.set_value(true);
        set_timeout(
            move || {
                pending.try_set_value(false);
                bumps.try_update(|n| *n += 1);
            },
            REFRESH_EVERY,
        );
    });
    bumps
}

/// What the part shows: a skeleton until the first answer, the error when there is no answer to show, else
/// the answer.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Loading,
    Failed(ApiError),
    Ready,
}

/// The counts, the waiting Applications, and the Components and packages sections the address shows.
#[component]
pub(super) fn PlatformPart(
    answer: PlatformAnswer,
    section: Memo<Option<Section>>,
) -> impl IntoView {
    let phase = Memo::new(move |_| {
        if answer.shown.with(Option::is_some) {
            Phase::Ready
        } else {
            match answer.error.get() {
                Some(error) => Phase::Failed(error),
                None => Phase::Loading,
            }
        }
    });
    view! {
        <ErrorBoundary fallback=show_errors>
            {move || match phase.get() {
                Phase::Loading => Ok(skeleton()),
                Phase::Failed(error) => Err::<AnyView, ApiError>(error),
                Phase::Ready => Ok(view! { <PlatformLoaded answer section /> }.into_any()),
            }}
        </ErrorBoundary>
    }
}

/// Shaped like the part: the counts, then a heading and the matrix's rows.
fn skeleton() -> AnyView {
    view! {
        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading the platform" data-testid="loading">
            <div class="skeleton-row skeleton-title"></div>
            {(0..6).map(|_| view! { <div class="skeleton-row"></div> }).collect_view()}
        </div>
    }
    .into_any()
}

/// The answer: when it was read (and that reading it again failed, when it did), the counts, the waiting
/// Applications, then the matrices.
#[component]
fn PlatformLoaded(answer: PlatformAnswer, section: Memo<Option<Section>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let read_at = Memo::new(move |_| {
        answer
            .shown
            .with(|shown| shown.as_ref().map(|(_, at)| at.clone()).unwrap_or_default())
    });
    let age = move || live.now.with(|now| age_or_raw(&read_at.get(), now));
    let counts = Memo::new(move |_| {
        answer.shown.with(|shown| {
            shown
                .as_ref()
                .map(|(view, _)| view.counts.clone())
                .unwrap_or_default()
        })
    });
    let waiting = Memo::new(move |_| {
        answer.shown.with(|shown| {
            shown
                .as_ref()
                .map(|(view, _)| view.waiting.clone())
                .unwrap_or_default()
        })
    });
    let components = Memo::new(move |_| shows(section.get(), Section::Components));
    let packages = Memo::new(move |_| shows(section.get(), Section::Packages));
    view! {
        <p class="muted small config-about" data-testid="platform-about">
            {move || format!("Read {}; read again whenever Argo CD reports a change to one of the platform's Applications.", age())}
        </p>
        {move || answer.error.get().map(|error| view! {
            <p class="error-inline small" role="alert" data-testid="platform-stale">
                {format!("Reading the platform again failed: {error} What follows is the reading of {}.", age())}
            </p>
        })}
        <Summary counts waiting />
        {move || components.get().then(|| view! { <Matrix answer rows=Rows::Components /> })}
        {move || packages.get().then(|| view! { <Matrix answer rows=Rows::Packages /> })}
    }
}

/// The platform's Applications by standing, waiting kept apart from failing; then the waiting ones.
#[component]
fn Summary(counts: Memo<StandingCounts>, waiting: Memo<Vec<ResourceApplication>>) -> impl IntoView {
    let total = move || {
        counts.with(|counts| {
            count_entries(counts)
                .into_iter()
                .map(|(_, n)| n)
                .sum::<u32>()
        })
    };
    view! {
        <p class="platform-counts" data-testid="platform-counts">
            {move || (total() == 0).then(|| view! { <span class="muted">"No platform Applications to count yet."</span> })}
            {move || (total() > 0).then(|| count_entries(&counts.get()).into_iter().map(|(standing, n)| {
                let (tone, glyph, slug) = standing_look(standing);
                // A zero is shown without its colour: nothing there needs a look.
                let class = if n == 0 { "chip platform-count-zero".to_string() } else { format!("chip {}", tone.class()) };
                view! {
                    <span class=class data-testid=format!("platform-count-{slug}") data-value=n.to_string()>
                        <span class="glyph" aria-hidden="true">{glyph}</span>
                        {count_label(standing, n)}
                    </span>
                }
            }).collect_view())}
            {move || (total() > 0).then(|| view! {
                <span class="muted small">{format!("of {} platform Applications", total())}</span>
            })}
        </p>
        {move || waiting.with(|waiting| (!waiting.is_empty()).then(|| {
            let items = waiting.iter().map(|app| {
                let words = app.problem().unwrap_or_default();
                view! {
                    <li data-testid="waiting-application" data-name=app.application.name.clone()>
                        <span class="glyph" aria-hidden="true">"◌ "</span>
                        {application_name(app, "waiting-application-link")}
                        " "{words}
                    </li>
                }
            }).collect_view();
            view! {
                <section class="platform-waiting" aria-labelledby="platform-waiting-title">
                    <h2 id="platform-waiting-title" class="platform-subhead">
                        {format!("Waiting for a CRD ({})", waiting.len())}
                    </h2>
                    <p class="muted small">
                        "Not failures: Argo CD does not order the Applications it generates, so these wait for another Application to install a CustomResourceDefinition they need, and converge by themselves once it has synced."
                    </p>
                    <ul class="config-list" data-testid="platform-waiting">{items}</ul>
                </section>
            }
        }))}
    }
}

/// Which rows a matrix shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    Components,
    Packages,
}

impl Rows {
    fn of(self, view: &PlatformView) -> &[ComponentRow] {
        match self {
            Rows::Components => &view.components,
            Rows::Packages => &view.packages,
        }
    }
}

/// One matrix in its section: a row per component (or package), a column per cluster.
#[component]
fn Matrix(answer: PlatformAnswer, rows: Rows) -> impl IntoView {
    let clusters = Memo::new(move |_| {
        answer.shown.with(|shown| {
            shown
                .as_ref()
                .map(|(view, _)| view.clusters.clone())
                .unwrap_or_default()
        })
    });
    let names = Memo::new(move |_| {
        answer.shown.with(|shown| {
            shown
                .as_ref()
                .map(|(view, _)| rows.of(view).iter().map(|r| r.name.clone()).collect())
                .unwrap_or_else(Vec::new)
        })
    });
    let serving = Memo::new(move |_| {
        answer.shown.with(|shown| {
            shown
                .as_ref()
                .map(|(view, _)| view.serving_version.clone())
                .unwrap_or_default()
        })
    });
    let (section, about, testid, first, caption) = match rows {
        Rows::Components => (
            Section::Components,
            "What infra/ in application-repositories installs on each cluster: taskapp-infra makes one Application per infra/<component>/<cluster>.yaml. Each cell shows the version the file asks for, Argo CD's sync and health, the file's last change, and links to the file and to the Application.",
            "platform-matrix",
            "Component",
            "Platform components by cluster",
        ),
        Rows::Packages => (
            Section::Packages,
            "The Crossplane packages packages/ in application-repositories installs on each cluster: taskapp-packages makes one Application per packages/<package>/<cluster>.yaml.",
            "platform-packages",
            "Package",
            "Crossplane packages by cluster",
        ),
    };
    let body = move || {
        if names.with(Vec::is_empty) {
            return empty(rows);
        }
        view! {
            <div class="matrix-wrap platform-matrix-wrap">
                <table class="fleet platform-matrix" data-testid=testid>
                    <caption class="visually-hidden">{caption}</caption>
                    <thead>
                        <tr>
                            <th scope="col">{first}</th>
                            <For each=move || clusters.get() key=|c| (c.name.clone(), c.environment.clone()) let:cluster>
                                {column_head(&cluster)}
                            </For>
                        </tr>
                    </thead>
                    <tbody>
                        <For each=move || names.get() key=Clone::clone let:name>
                            <MatrixRow name answer rows clusters serving />
                        </For>
                    </tbody>
                </table>
            </div>
        }
        .into_any()
    };
    section_frame(section, about, view! { {body} }.into_any())
}

/// Nothing generated yet: where the rows come from.
fn empty(rows: Rows) -> AnyView {
    match rows {
        Rows::Components => view! {
            <p class="empty" data-testid="platform-empty">
                "Argo CD generated no platform Applications yet. taskapp-infra generates one for each infra/<component>/<cluster>.yaml in application-repositories; they appear here as soon as Argo CD creates them."
            </p>
        }
        .into_any(),
        Rows::Packages => view! {
            <p class="empty" data-testid="packages-empty">
                "Argo CD generated no Crossplane package Applications yet. taskapp-packages generates one for each packages/<package>/<cluster>.yaml in application-repositories."
            </p>
        }
        .into_any(),
    }
}

/// A column's head: the cluster, and its environment when it has one of another name.
fn column_head(cluster: &PlatformCluster) -> AnyView {
    let environment = cluster
        .environment
        .clone()
        .filter(|env| *env != cluster.name);
    view! {
        <th scope="col" data-cluster=cluster.name.clone()>
            <span class="mono platform-cluster">{cluster.name.clone()}</span>
            {environment.map(|env| view! { <span class="platform-env">{env}</span> })}
        </th>
    }
    .into_any()
}

/// One component across the clusters: its name, its skew in words, Tower's versions on Tower's row.
#[component]
fn MatrixRow(
    name: String,
    answer: PlatformAnswer,
    rows: Rows,
    clusters: Memo<Vec<PlatformCluster>>,
    serving: Memo<String>,
) -> impl IntoView {
    let row = {
        let name = name.clone();
        Memo::new(move |_| {
            answer.shown.with(|shown| {
                shown
                    .as_ref()
                    .and_then(|(view, _)| rows.of(view).iter().find(|r| r.name == name).cloned())
            })
        })
    };
    let skew = Memo::new(move |_| row.with(|r| r.as_ref().and_then(|r| r.skew.clone())));
    let tower = (rows == Rows::Components && name == TOWER_COMPONENT).then(|| {
        let versions = Memo::new(move |_| {
            row.with(|r| {
                let asked = r.as_ref().map(asked_versions).unwrap_or_default();
                tower_versions(&serving.get(), &asked)
            })
        });
        view! {
            <p class="small platform-tower" data-testid="platform-serving" data-serving=move || serving.get()>
                {move || versions.get()}
            </p>
        }
    });
    let component = name.clone();
    view! {
        <tr data-testid="platform-row" data-name=name.clone() data-skew=move || skew.with(Option::is_some).to_string()>
            <th scope="row">
                <span class="mono platform-name">{name.clone()}</span>
                {move || skew.get().map(|words| view! {
                    <p class="platform-skew small" data-testid="skew">
                        <span class="chip tone-warn"><span class="glyph" aria-hidden="true">"≠"</span>"Skew"</span>
                        {words}
                    </p>
                })}
                {tower}
            </th>
            <For each=move || clusters.get() key=|c| c.name.clone() let:cluster>
                <MatrixCell component=component.clone() cluster=cluster.name row />
            </For>
        </tr>
    }
}

/// The versions a row's files ask for, as `(cluster, version)`.
fn asked_versions(row: &ComponentRow) -> Vec<(String, String)> {
    row.cells
        .iter()
        .flatten()
        .filter_map(|cell| Some((cell.cluster.clone(), cell.version.clone()?)))
        .collect()
}

/// Which Tower serves this page beside what `infra/` asks for: `This page is served by Tower 0.9.0, the
/// version infra/ asks for.`, or `…; infra/ asks for 0.9.1 on management, 0.9.0 on dev.`
fn tower_versions(serving: &str, asked: &[(String, String)]) -> String {
    let same = |a: &str, b: &str| a.trim_start_matches('v') == b.trim_start_matches('v');
    let lead = format!("This page is served by Tower {serving}");
    if asked.is_empty() {
        return format!("{lead}; infra/ names no version for it.");
    }
    if asked.iter().all(|(_, version)| same(version, serving)) {
        return format!("{lead}, the version infra/ asks for.");
    }
    let mut by_version: Vec<(&str, Vec<&str>)> = Vec::new();
    for (cluster, version) in asked {
        match by_version.iter_mut().find(|(v, _)| same(v, version)) {
            Some((_, clusters)) => clusters.push(cluster),
            None => by_version.push((version, vec![cluster])),
        }
    }
    let groups: Vec<String> = by_version
        .into_iter()
        .map(|(version, clusters)| {
            let clusters = match clusters.as_slice() {
                [one] => (*one).to_string(),
                [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
                [] => String::new(),
            };
            format!("{version} on {clusters}")
        })
        .collect();
    format!("{lead}; infra/ asks for {}.", groups.join(", "))
}

/// One component on one cluster; `—` where it is not installed.
#[component]
fn MatrixCell(
    component: String,
    cluster: String,
    row: Memo<Option<ComponentRow>>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let cell = {
        let cluster = cluster.clone();
        Memo::new(move |_| {
            row.with(|r| {
                r.as_ref().and_then(|r| {
                    r.cells
                        .iter()
                        .flatten()
                        .find(|c| c.cluster == cluster)
                        .cloned()
                })
            })
        })
    };
    let look = Memo::new(move |_| {
        cell.with(|c| c.as_ref().map(|c| standing_look(c.application.standing())))
    });
    let testid = format!("platform-cell-{component}-{cluster}");
    let absent = format!("{component} is not installed on {cluster}");
    view! {
        <td
            class=move || match look.get() {
                Some((tone, _, _)) => format!("platform-cell {}", tone.class()),
                None => "platform-cell platform-absent".to_string(),
            }
            data-testid=testid
            data-cluster=cluster.clone()
            data-standing=move || look.get().map_or("absent", |(_, _, slug)| slug)
            data-version=move || cell.with(|c| c.as_ref().and_then(|c| c.version.clone()))
        >
            {move || match cell.get() {
                Some(cell) => cell_body(cell, live.now),
                None => view! {
                    <span class="muted" aria-hidden="true">"—"</span>
                    <span class="visually-hidden">{absent.clone()}</span>
                }
                .into_any(),
            }}
        </td>
    }
}

/// What a cell says: the version asked for, sync and health, what it waits for or what fails, the last bump,
/// and links to the file and to the Application.
fn cell_body(cell: ComponentCell, now: RwSignal<String>) -> AnyView {
    let app = &cell.application;
    let note = match (&app.waiting, app.standing()) {
        (Some(waiting), _) => Some(
            view! {
                <p class="platform-note platform-waiting-note small" data-testid="platform-cell-waiting">
                    <span class="glyph" aria-hidden="true">"◌ "</span>
                    {waiting.words()}
                </p>
            }
            .into_any(),
        ),
        (None, Standing::Failing) => app.problem().map(|problem| {
            view! {
                <p class="platform-note platform-problem small" data-testid="platform-cell-problem">
                    <span class="glyph" aria-hidden="true">"✕ "</span>
                    {problem}
                </p>
            }
            .into_any()
        }),
        _ => None,
    };
    let name = app.application.name.clone();
    let file = match cell.file_url.clone().filter(|url| is_web_url(url)) {
        Some(url) => view! {
            <a href=url target="_blank" rel="noreferrer" title=cell.file.clone() data-testid="platform-file-link">
                "file"<span class="visually-hidden">{format!(" {}", cell.file)}</span>
            </a>
        }
        .into_any(),
        None => view! { <span class="mono muted" data-testid="platform-file-link">{cell.file.clone()}</span> }.into_any(),
    };
    let application = match app.url.clone().filter(|url| is_web_url(url)) {
        Some(url) => view! {
            <a href=url target="_blank" rel="noreferrer" title=format!("Application {name} in Argo CD")
                data-testid="platform-application-link">
                "Argo CD"<span class="visually-hidden">{format!(" Application {name}")}</span>
            </a>
        }
        .into_any(),
        None => view! {
            <span class="mono muted" title="The Application's name in Argo CD" data-testid="platform-application-link">{name}</span>
        }
        .into_any(),
    };
    view! {
        <span class="mono platform-version" data-testid="platform-version">
            {cell.version.clone().unwrap_or_else(|| "no version".into())}
        </span>
        <span class="chips">{sync_chip(app.application.sync)}{health_chip(app.application.health)}</span>
        {note}
        {cell.last_bump.clone().map(|bump| bump_line(bump, now))}
        <p class="small platform-links">{file}<span class="muted">" · "</span>{application}</p>
    }
    .into_any()
}

/// The newest commit that changed the file: short commit (linked), author (a bot's too), how long ago.
fn bump_line(bump: Bump, now: RwSignal<String>) -> AnyView {
    let short: String = bump.commit.chars().take(7).collect();
    let commit = match bump.url.clone().filter(|url| is_web_url(url)) {
        Some(url) => view! {
            <a class="mono" href=url target="_blank" rel="noreferrer" title=bump.message.clone() data-testid="platform-bump-commit">{short}</a>
        }
        .into_any(),
        None => view! { <span class="mono" title=bump.message.clone() data-testid="platform-bump-commit">{short}</span> }.into_any(),
    };
    let at = bump.at.clone();
    view! {
        <p class="small muted platform-bump" data-testid="platform-bump" data-sha=bump.commit.clone() data-author=bump.author.clone()>
            {commit}" "
            <span class="platform-author" data-testid="platform-bump-author">{bump.author.clone()}</span>
            " · "
            <time datetime=bump.at.clone() title=bump.at.clone()>{move || age_or_raw(&at, &now.get())}</time>
        </p>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(cluster, version)| (cluster.to_string(), version.to_string()))
            .collect()
    }

    #[test]
    fn towers_row_says_which_version_serves_the_page_and_which_infra_asks_for() {
        assert_eq!(
            tower_versions("0.9.0", &asked(&[("management", "v0.9.0")])),
            "This page is served by Tower 0.9.0, the version infra/ asks for."
        );
        assert_eq!(
            tower_versions(
                "0.9.0",
                &asked(&[("management", "0.9.1"), ("dev", "0.9.1"), ("prod", "0.9.0")])
            ),
            "This page is served by Tower 0.9.0; infra/ asks for 0.9.1 on management and dev, 0.9.0 on prod."
        );
        assert_eq!(
            tower_versions("0.9.0", &[]),
            "This page is served by Tower 0.9.0; infra/ names no version for it."
        );
    }
}
