//! The Config tab of a service page (`?tab=config&env=…`): for each environment, every platform resource of
//! the service as its file on main in `application-repositories` (path, last commit) beside the object on
//! the management cluster, the drift between them named field by field with its diff, the operators' derived
//! files and what runs (the Argo CD Application, ExternalSecrets, Crossplane claims). The registry's
//! Component comes last. Owners edit a file in place (`components::yaml_editor`), checked in the browser as
//! they type, previewed, and proposed as a pull request.
//!
//! Its code is a separate wasm module, fetched the first time the tab opens, so the Overview's first load
//! does not carry it, nor the validator, the YAML parser and the compiled-in CRD schemas it pulls in.

use leptos::lazy;
use leptos::prelude::*;
use shared::ApiError;
use shared::auth::Permission;
use shared::config::{
    ConfigResource, DerivedFile, EnvironmentConfig, RuleContext, RunningObject, ServiceConfig,
};
use shared::status::Tone;
use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::Closure;

use crate::api;
use crate::app::Session;
use crate::components::delivery::diff_view;
use crate::components::status::{banner, permission_reason, tone_chip};
use crate::components::yaml_editor::{YamlFile, yaml_block};
use crate::live::{LiveFleet, browser_now, fetched};
use crate::pages::show_errors;

/// The Config tab for `name`, every environment or the picker's (`env`); `owner` is the service's team.
#[component]
pub fn ConfigTab(
    name: Memo<String>,
    env: Memo<Option<String>>,
    owner: Signal<String>,
) -> impl IntoView {
    Suspend::new(config_tab(name, env, owner))
}

#[lazy]
fn config_tab(name: Memo<String>, env: Memo<Option<String>>, owner: Signal<String>) -> AnyView {
    view! { <LoadedConfigTab name env owner /> }.into_any()
}

/// Lets a test run this build's validator (`window.__towerValidateConfig(path, text, rulesJson)`, answering
/// the diagnostics as JSON) over a corpus whose expected answers come from the native build, so the browser
/// is shown to check exactly what the server checks.
fn expose_validator() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let check = Closure::<dyn Fn(String, String, String) -> Result<String, JsValue>>::new(
        |path: String, text: String, rules: String| {
            let rules: RuleContext = serde_json::from_str(&rules)
                .map_err(|error| JsValue::from_str(&format!("rules: {error}")))?;
            let diagnostics = shared::config::validate(&path, &text, &rules);
            serde_json::to_string(&diagnostics)
                .map_err(|error| JsValue::from_str(&error.to_string()))
        },
    );
    let _ = js_sys::Reflect::set(
        &window,
        &"__towerValidateConfig".into(),
        &check.into_js_value(),
    );
}

#[component]
fn LoadedConfigTab(
    name: Memo<String>,
    env: Memo<Option<String>>,
    owner: Signal<String>,
) -> impl IntoView {
    expose_validator();
    // Read once per visit of the tab; when it was read is shown, so an old answer is not taken for live.
    let answer = fetched(move || {
        let name = name.get();
        async move {
            let config = api::get_service_config(&name).await;
            (config, browser_now())
        }
    });
    view! {
        <div class="config" data-testid="config-tab">
            <ErrorBoundary fallback=show_errors>
                {move || match answer.get() {
                    None => Ok(view! {
                        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading the configuration" data-testid="loading">
                            <div class="skeleton-row skeleton-title"></div>
                            <div class="config-sides">
                                <div class="skeleton-card"></div>
                                <div class="skeleton-card"></div>
                            </div>
                        </div>
                    }.into_any()),
                    Some((Err(error), _)) => Err::<AnyView, ApiError>(error),
                    Some((Ok(config), read_at)) => Ok(view! { <ServiceConfigView config read_at env owner /> }.into_any()),
                }}
            </ErrorBoundary>
        </div>
    }
}

/// The whole answer: what it is read from and when, a word when git is not connected or the viewer may not
/// edit, then the environments and the registry.
#[component]
fn ServiceConfigView(
    config: ServiceConfig,
    read_at: String,
    env: Memo<Option<String>>,
    owner: Signal<String>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let session = expect_context::<Session>();
    let decision = Memo::new(move |_| session.decide(Permission::EditConfig, Some(&owner.get())));
    let git = config.git_configured;
    let service = config.service.clone();
    let rules = StoredValue::new(config.rules.clone());
    let sections = StoredValue::new(config.environments.clone());
    let registry = config.registry.clone();
    let all_names: Vec<String> = config
        .environments
        .iter()
        .map(|e| e.environment.clone())
        .collect();
    let shown = Memo::new(move |_| {
        let only = env.get();
        all_names
            .iter()
            .filter(|e| only.as_ref().is_none_or(|only| only == *e))
            .cloned()
            .collect::<Vec<_>>()
    });
    let about = move || {
        let age = live.now.with(|now| shared::time::age_or_raw(&read_at, now));
        if git {
            format!(
                "Files on main in application-repositories beside the objects on the management cluster · read {age}. Open the tab again for a newer reading."
            )
        } else {
            format!(
                "Objects on the management cluster · read {age}. Open the tab again for a newer reading."
            )
        }
    };
    let section_service = service.clone();
    let registry_service = service.clone();
    view! {
        {(!git).then(|| banner(
            Tone::Unknown,
            "?",
            "git-not-connected",
            "Git is not connected: this Tower has no GitHub App, so it cannot read the platform files in application-repositories or open pull requests. Only the live objects are shown.".to_string(),
        ))}
        {move || (git && !decision.get().allowed()).then(|| permission_reason(decision.get())).flatten()}
        <p class="muted small config-about" data-testid="config-about">{about}</p>
        {move || {
            let names = shown.get();
            if names.is_empty() {
                let text = match env.get() {
                    Some(env) => format!("{section_service} has no configuration in {env}. Pick another environment above."),
                    None => format!("{section_service} has no Release in any environment yet. Add one with the Create deployment golden path."),
                };
                view! {
                    <p class="empty" data-testid="config-empty">
                        {text}" "
                        <a href=format!("/create?template=create-deployment&service={section_service}")>"Create deployment"</a>
                    </p>
                }.into_any()
            } else {
                names.into_iter().filter_map(|name| {
                    sections.with_value(|all| all.iter().find(|s| s.environment == name).cloned())
                }).map(|section| view! {
                    <EnvironmentSection section service=section_service.clone() rules owner git />
                }).collect_view().into_any()
            }
        }}
        <section class="config-env" data-testid="config-registry" aria-labelledby="config-registry-title">
            <h2 id="config-registry-title">"Registry"</h2>
            <p class="muted small">"The service's Component: who owns it, where its code is, what it depends on. No environment owns it."</p>
            {match registry {
                Some(resource) => view! { <ResourceView resource service=registry_service rules owner git /> }.into_any(),
                None => view! {
                    <p class="empty" data-testid="no-registry">"No Component for this service in the registry."</p>
                }.into_any(),
            }}
        </section>
    }
}

/// One environment: its resources, then its derived files and what runs, both folded.
#[component]
fn EnvironmentSection(
    section: EnvironmentConfig,
    service: String,
    rules: StoredValue<RuleContext>,
    owner: Signal<String>,
    git: bool,
) -> impl IntoView {
    let environment = section.environment.clone();
    let title_id = format!("config-env-{environment}");
    let labelled_by = title_id.clone();
    let resources = section
        .resources
        .into_iter()
        .map(|resource| view! { <ResourceView resource service=service.clone() rules owner git /> })
        .collect_view();
    view! {
        <section class="config-env" data-testid="config-env" data-env=environment.clone() aria-labelledby=labelled_by>
            <h2 id=title_id>{environment.clone()}</h2>
            {resources}
            {derived_view(&environment, section.derived, git)}
            {running_view(&environment, section.running)}
        </section>
    }
}

/// The drift chip: which fields differ between git and the cluster, in words.
fn drift_chip(fields: &[String]) -> AnyView {
    view! {
        <span class="chip tone-warn" data-testid="drift-chip" data-fields=fields.join(",")>
            <span class="glyph" aria-hidden="true">"≠"</span>
            {format!("Drifted: {}", fields.join(", "))}
        </span>
    }
    .into_any()
}

/// One platform resource: its file in git beside its object on the cluster, and their drift.
#[component]
fn ResourceView(
    resource: ConfigResource,
    service: String,
    rules: StoredValue<RuleContext>,
    owner: Signal<String>,
    git: bool,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let kind = resource.kind.name();
    let drifted = !resource.drift.is_empty();
    let status = match (&resource.intent, &resource.applied) {
        _ if drifted => drift_chip(&resource.drift),
        (Some(_), Some(_)) => tone_chip(Tone::Ok, "Matches git", Some("sync-chip")),
        (Some(_), None) => tone_chip(Tone::Progress, "Only in git", Some("sync-chip")),
        (None, Some(_)) if git => tone_chip(Tone::Warn, "Only on the cluster", Some("sync-chip")),
        _ => ().into_any(),
    };
    let intent = match resource.intent {
        Some(file) => {
            let commit = file.commit.map(|c| {
                let at = c.at.clone();
                view! {
                    <p class="small muted intent-commit" data-testid="intent-commit" data-sha=c.sha.clone()>
                        <span class="mono">{c.sha.clone()}</span>" "
                        <span class="commit-message">{c.message.clone()}</span>
                        {format!(" · {}", c.author)}" · "
                        {move || live.now.with(|now| shared::time::age_or_raw(&at, now))}
                    </p>
                }
            });
            view! {
                <p class="mono intent-path" data-testid="intent-path">{file.path.clone()}</p>
                {commit}
                <YamlFile service path=file.path content=file.content rules owner writable=git />
            }
            .into_any()
        }
        None if !git => view! {
            <p class="empty" data-testid="no-intent">"Git is not connected, so the file cannot be read."</p>
        }
        .into_any(),
        None => view! {
            <p class="empty" data-testid="no-intent">
                {format!("No file in git for this {kind}: it exists only on the cluster, so the next sync of the platform may remove it.")}
            </p>
        }
        .into_any(),
    };
    let applied = match resource.applied {
        Some(yaml) => yaml_block(&yaml, "applied-yaml"),
        None => view! {
            <p class="empty" data-testid="not-applied">
                {format!("Not on the management cluster: the {kind} is created once its file is on main and Argo CD syncs the platform.")}
            </p>
        }
        .into_any(),
    };
    let drift = resource.drift_diff.map(|diff| {
        view! {
            <section class="config-drift" data-testid="drift-diff" aria-label="Drift">
                <h4>"Drift"</h4>
                <p class="small">
                    {format!("The object on the cluster differs from git in {}. Lines with − are git's, lines with + the cluster's.",
                        resource.drift.join(", "))}
                </p>
                {diff_view(&diff)}
            </section>
        }
    });
    view! {
        <article class="config-resource" data-testid="config-resource" data-kind=kind data-name=resource.name.clone()
            data-drifted=drifted.to_string()>
            <header class="config-resource-head">
                <h3>{kind}" "<span class="mono">{resource.name.clone()}</span></h3>
                {status}
            </header>
            <div class="config-sides">
                <section class="config-side" data-testid="config-intent" aria-label="In git">
                    <h4>"In git"</h4>
                    {intent}
                </section>
                <section class="config-side" data-testid="config-applied" aria-label="On the cluster">
                    <h4>"On the cluster"</h4>
                    {applied}
                </section>
            </div>
            {drift}
        </article>
    }
}

/// The operators' files for the environment, folded: read-only, derived from the files above.
fn derived_view(environment: &str, derived: Vec<DerivedFile>, git: bool) -> AnyView {
    if derived.is_empty() {
        let text = if git {
            format!(
                "No derived files for {environment}: the operators write them once the Release is applied."
            )
        } else {
            "Derived files live in git, which is not connected.".to_string()
        };
        return view! { <p class="muted small" data-testid="no-derived">{text}</p> }.into_any();
    }
    let count = derived.len();
    let files = derived
        .into_iter()
        .map(|file| {
            view! {
                <li data-testid="derived-file" data-path=file.path.clone()>
                    <p class="mono small">{file.path.clone()}</p>
                    {yaml_block(&file.content, "derived-yaml")}
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="config-fold" data-testid="derived-files">
            <summary>
                {format!("Derived files ({count})")}
                <span class="muted small">" · written by the operators from the files above; Tower never edits them"</span>
            </summary>
            <ul class="config-list">{files}</ul>
        </details>
    }
    .into_any()
}

/// The tone of a running object's state word.
fn state_tone(state: &str) -> Tone {
    let has = |word: &str| state.contains(word);
    if has("Degraded") || has("Not ready") || has("Missing") || has("Error") || has("Failed") {
        Tone::Bad
    } else if has("OutOfSync") {
        Tone::Warn
    } else if has("Progressing") {
        Tone::Progress
    } else if has("Unknown") {
        Tone::Unknown
    } else if has("Synced") || has("Ready") || has("Healthy") {
        Tone::Ok
    } else {
        Tone::Unknown
    }
}

/// What runs in the environment: one line each, with its state; each object's YAML folded.
fn running_view(environment: &str, running: Vec<RunningObject>) -> AnyView {
    if running.is_empty() {
        return view! {
            <p class="muted small" data-testid="no-running">
                {format!("Nothing runs in {environment} yet: no Application, ExternalSecret or claim is labelled with this service.")}
            </p>
        }
        .into_any();
    }
    let objects = running
        .into_iter()
        .map(|object| {
            let state = match &object.state {
                Some(state) => tone_chip(state_tone(state), state.clone(), Some("running-state")),
                None => tone_chip(Tone::Unknown, "No state reported", Some("running-state")),
            };
            view! {
                <li data-testid="running-object" data-kind=object.kind.clone() data-name=object.name.clone()>
                    <details class="config-fold">
                        <summary>
                            <span class="muted">{object.kind.clone()}</span>" "
                            <span class="mono">{object.name.clone()}</span>" "
                            {state}
                        </summary>
                        {yaml_block(&object.yaml, "running-yaml")}
                    </details>
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="config-running" data-testid="running" aria-label="What runs">
            <h3>"What runs"</h3>
            <ul class="config-list">{objects}</ul>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_word_takes_the_tone_it_reads_as() {
        assert_eq!(state_tone("Synced · Healthy"), Tone::Ok);
        assert_eq!(state_tone("OutOfSync · Healthy"), Tone::Warn);
        assert_eq!(state_tone("Synced · Degraded"), Tone::Bad);
        assert_eq!(state_tone("Synced · Progressing"), Tone::Progress);
        assert_eq!(state_tone("Ready (SecretSynced)"), Tone::Ok);
        assert_eq!(state_tone("Not ready (ReconcileError)"), Tone::Bad);
        assert_eq!(state_tone("whatever"), Tone::Unknown);
    }
}
