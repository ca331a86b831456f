//! The deployment card: everything about a service in one environment, top to bottom as UX.md orders it.
//! The body re-renders from the card signal whenever a `card_updated` arrives; the actions keep their state.

use leptos::lazy;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::ApiError;
use shared::auth::Permission;
use shared::fleet::cards::{
    composed_has_problem, deployed_at, event_subject, is_crashloop, resource_has_problem,
    secret_has_problem, step_label, step_states, workload_counts, workload_has_problem,
};
use shared::fleet::{
    ApplicationView, CloudResourceView, CommitView, DeploymentCard as Card, EventView, PodView,
    RolloutView, SchemaView, SecretView, SyncResponse, WorkloadView,
};
use shared::platform::ResourceApplication;
use shared::time::{age_or_raw, since};

use crate::api;
use crate::app::Session;
use crate::components::delivery::{MoveDialog, pending_pull};
use crate::components::platform::{resource_application_line, resource_application_problem};
use crate::components::status::{
    banner, chip, health_chip, permission_reason, sync_chip, tone_chip,
};
use crate::live::LiveFleet;
use shared::delivery::PullRequestView;
use shared::status::Tone;

/// How many commits "what changed" shows before folding the rest.
const COMMITS_SHOWN: usize = 5;

/// One environment of a service. `card` is `None` for a moment when the card goes away. Its code is a
/// separate wasm module, so the overview loads without it; see [`preload`].
#[component]
pub fn DeploymentCard(
    /// The card, kept current by the page.
    card: Signal<Option<Card>>,
    /// The owner team, for the permission checks.
    owner: Signal<String>,
    /// Set to this card's environment to open the log panel.
    logs: RwSignal<Option<String>>,
    /// Tower's open pull requests for the service (each card shows those for its environment).
    pulls: Signal<Option<Result<Vec<PullRequestView>, ApiError>>>,
    /// Bumped after Promote or Rollback opened a pull request, so the page fetches them again.
    refresh: RwSignal<u32>,
) -> impl IntoView {
    Suspend::new(deployment_card(card, owner, logs, pulls, refresh))
}

/// Starts fetching the cards' module, so it arrives while the page still waits for the cards.
pub fn preload() {
    // `#[lazy]` names the preload of `deployment_card` this way (`lazy_preload!` only acts when hydrating).
    spawn_local(__preload_deployment_card());
}

#[lazy]
fn deployment_card(
    card: Signal<Option<Card>>,
    owner: Signal<String>,
    logs: RwSignal<Option<String>>,
    pulls: Signal<Option<Result<Vec<PullRequestView>, ApiError>>>,
    refresh: RwSignal<u32>,
) -> AnyView {
    view! { <LoadedDeploymentCard card owner logs pulls refresh /> }.into_any()
}

#[component]
fn LoadedDeploymentCard(
    card: Signal<Option<Card>>,
    owner: Signal<String>,
    logs: RwSignal<Option<String>>,
    pulls: Signal<Option<Result<Vec<PullRequestView>, ApiError>>>,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    // A card's service and environment never change: the page keys cards by environment.
    let (service, environment) = card
        .with_untracked(|c| {
            c.as_ref()
                .map(|c| (c.service.clone(), c.environment.clone()))
        })
        .unwrap_or_default();
    // Stale as a whole only when nothing of it is live: with one cluster of several lost, the rest is.
    let unreachable = move || {
        card.with(|c| {
            c.as_ref().is_some_and(|c| {
                c.unreachable_since.is_some()
                    && c.clusters
                        .iter()
                        .all(|cluster| cluster.unreachable_since.is_some())
            })
        })
    };
    let data_env = environment.clone();
    let labelled_by = format!("card-{environment}");
    view! {
        <article
            class="card"
            class:card-stale=unreachable
            data-testid="deployment-card"
            data-env=data_env
            aria-labelledby=labelled_by
        >
            {move || {
                let now = live.now.get();
                card.with(|card| card.as_ref().map(|card| body(card, &now)))
            }}
            <Pending environment=environment.clone() pulls />
            <Actions service environment owner logs refresh />
        </article>
    }
}

fn body(card: &Card, now: &str) -> AnyView {
    let version = card
        .running_version
        .clone()
        .or_else(|| card.release.as_ref().map(|r| r.version.clone()));
    let image = card.release.as_ref().map(|r| r.image.clone());
    let asked_for = card
        .release
        .as_ref()
        .map(|r| r.version.clone())
        .filter(|asked| {
            card.running_version
                .as_ref()
                .is_some_and(|running| running != asked)
        });
    let deployed = deployed_at(card).map(|at| format!("deployed {}", age_or_raw(at, now)));
    view! {
        <header class="card-head">
            <h2 id=format!("card-{}", card.environment)>{card.environment.clone()}</h2>
            <span class="mono version" data-testid="card-version" title=image.clone()>
                {match (version, &card.build) {
                    // The run that built it, when Tower still has it: the version links to its run page.
                    (Some(version), Some(build)) => view! {
                        <a href=build.page_path() data-testid="card-build-link" title=format!("The pipeline run that built {version}")>{version.clone()}</a>
                    }.into_any(),
                    (version, _) => version.unwrap_or_else(|| "no version".into()).into_any(),
                }}
            </span>
            {deployed.map(|d| view! { <span class="muted">{d}</span> })}
            {auto_deploy(card)}
        </header>
        {image.map(|image| view! { <p class="mono muted image">{image}</p> })}
        {asked_for.map(|asked| banner(Tone::Warn, "≠", "version-drift",
            format!("The Release asks for {asked}; the pods run something else.")))}
        {unreachable_banner(card, now)}
        {forbidden_banner(card)}
        // The Release itself not applied (or waiting for a CRD) explains much of what follows: said up here.
        {card.release_application.as_ref().and_then(|app| resource_application_problem(app, "release-application-problem"))}
        {clusters(card, now)}
        {changes(card, now)}
        {card.rollout.as_ref().map(rollout)}
        {workloads(&card.deployments)}
        {application(card.application.as_ref(), now)}
        {card.release_application.as_ref().map(release_application)}
        {card.schema.as_ref().map(schema)}
        {secrets(&card.secrets, now)}
        {cloud_resources(&card.cloud_resources)}
        {pods(&card.pods, card.clusters.len() > 1, now)}
        {events(&card.events, now)}
    }
    .into_any()
}

/// What is lost: the environment's one cluster, or which of its clusters (the others stay live).
fn unreachable_banner(card: &Card, now: &str) -> Option<AnyView> {
    let at = card.unreachable_since.as_ref()?;
    let text = if card.clusters.len() > 1 {
        let lost: Vec<&str> = card
            .clusters
            .iter()
            .filter(|c| c.unreachable_since.is_some())
            .map(|c| c.name.as_str())
            .collect();
        format!(
            "{} of {} unreachable {}. What follows from {} is its last known state; the other clusters are live.",
            lost.join(", "),
            card.environment,
            since(at, now),
            if lost.len() == 1 { "it" } else { "them" },
        )
    } else {
        format!(
            "The {} cluster is unreachable {}. What follows is its last known state.",
            card.environment,
            since(at, now)
        )
    };
    Some(banner(Tone::Unknown, "⚠", "unreachable", text))
}

/// Kinds Tower's role may not list on the environment's clusters: a blank where a Rollout or a claim would
/// be would read as "there is none", so the card says what it cannot see and why.
fn forbidden_banner(card: &Card) -> Option<AnyView> {
    let lines: Vec<String> = card
        .clusters
        .iter()
        .filter(|c| !c.forbidden_kinds.is_empty())
        .map(|c| format!("{} on {}", c.forbidden_kinds.join(", "), c.name))
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(banner(
        Tone::Warn,
        "⛔",
        "forbidden",
        format!(
            "Forbidden: Tower's role may not read {}. This card shows none of them, which does not mean there are none; the platform team can grant Tower's reader role list and watch on them.",
            lines.join("; ")
        ),
    ))
}

/// Each cluster of an environment that spans several: live or lost since when, its version, Argo CD's sync
/// and health there, and its pods.
fn clusters(card: &Card, now: &str) -> Option<AnyView> {
    if card.clusters.len() < 2 {
        return None;
    }
    let rows = card
        .clusters
        .iter()
        .map(|cluster| {
            let state = if cluster.unreachable_since.is_some() { "unreachable" } else { "live" };
            // The chip says which; the time beside it may wrap in a narrow card.
            let status = match &cluster.unreachable_since {
                Some(at) => view! {
                    <span data-testid="cluster-state">
                        {tone_chip(Tone::Unknown, "unreachable", None)}" "
                        <span class="muted small">{since(at, now)}</span>
                    </span>
                }
                .into_any(),
                None => view! { <span data-testid="cluster-state">{tone_chip(Tone::Ok, "live", None)}</span> }.into_any(),
            };
            view! {
                <tr data-testid="card-cluster" data-cluster=cluster.name.clone() data-state=state>
                    <th scope="row" class="mono">{cluster.name.clone()}</th>
                    <td>{status}</td>
                    <td class="mono" data-testid="cluster-version">{cluster.running_version.clone().unwrap_or_else(|| "no version".into())}</td>
                    <td>
                        {match &cluster.application {
                            Some(application) => view! {
                                <span class="chips" title=format!("Argo CD Application {application}")>
                                    {sync_chip(cluster.sync)}{health_chip(cluster.health)}
                                </span>
                            }.into_any(),
                            None => view! { <span class="muted">"no Application"</span> }.into_any(),
                        }}
                    </td>
                    <td class="muted nowrap" title=format!("Pods ready on {}", cluster.name)>{format!("{}/{} ready", cluster.pods_ready, cluster.pods_total)}</td>
                </tr>
            }
        })
        .map(IntoAny::into_any)
        .collect_view();
    Some(
        view! {
            <section class="card-section" data-testid="card-clusters">
                <h3>"Clusters"</h3>
                <table class="clusters"><tbody>{rows}</tbody></table>
            </section>
        }
        .into_any(),
    )
}

fn auto_deploy(card: &Card) -> Option<impl IntoView> {
    let release = card.release.as_ref()?;
    if card.environment != "dev" && !release.auto_deploy {
        return None;
    }
    let on = release.auto_deploy;
    Some(view! {
        <span
            class="chip"
            class=(["tone-ok"], on)
            data-testid="auto-deploy"
            data-value=if on { "on" } else { "off" }
            title=if on { "Dev follows every green build of main" } else { "Dev moves only when someone changes its Release" }
        >
            {if on { "Auto-deploy on" } else { "Auto-deploy off" }}
        </span>
    })
}

fn changes(card: &Card, now: &str) -> impl IntoView {
    let heading = match &card.previous_version {
        Some(previous) => {
            view! { "What changed since "<span class="mono">{previous.clone()}</span> }.into_any()
        }
        None => view! { "What changed" }.into_any(),
    };
    let content = if card.changes.is_empty() {
        let text = if card.previous_version.is_some() {
            "No commits between the two versions (a redeploy of the same code)."
        } else {
            "No earlier version is known, so there is nothing to compare with."
        };
        view! { <p class="muted">{text}</p> }.into_any()
    } else {
        let shown = card
            .changes
            .iter()
            .take(COMMITS_SHOWN)
            .map(|c| commit(c, now))
            .map(IntoAny::into_any)
            .collect_view();
        let rest: Vec<_> = card
            .changes
            .iter()
            .skip(COMMITS_SHOWN)
            .map(|c| commit(c, now))
            .collect();
        let rest = (!rest.is_empty()).then(|| {
            let count = rest.len();
            view! {
                <details>
                    <summary>{format!("{count} more commit{}", if count == 1 { "" } else { "s" })}</summary>
                    <ul class="commits">{rest}</ul>
                </details>
            }
        });
        view! { <ul class="commits" data-testid="changes">{shown}</ul>{rest} }.into_any()
    };
    view! { <section class="card-section"><h3>{heading}</h3>{content}</section> }
}

fn commit(commit: &CommitView, now: &str) -> impl IntoView + use<> {
    view! {
        <li data-testid="commit">
            <span class="mono">{commit.sha.clone()}</span>" "
            <span>{commit.message.clone()}</span>" "
            <span class="muted">{format!("{} · {}", commit.author, age_or_raw(&commit.at, now))}</span>
        </li>
    }
}

fn rollout(rollout: &RolloutView) -> impl IntoView + use<> {
    let states = step_states(rollout.steps.len(), rollout.current_step);
    let steps = rollout
        .steps
        .iter()
        .zip(states)
        .map(|(step, state)| {
            view! {
                <li class=format!("step step-{}", state.as_str()) data-testid="rollout-step" data-state=state.as_str()>
                    <span class="visually-hidden">{format!("{}: ", state.as_str())}</span>
                    {step_label(step)}
                </li>
            }
        })
        .map(IntoAny::into_any).collect_view();
    view! {
        <section class="card-section">
            <h3>"Rollout"</h3>
            <p>
                <span data-testid="rollout-phase">{rollout.phase.clone()}</span>
                <span class="muted">
                    {format!(" · {}/{} ready · {} updated", rollout.ready_replicas, rollout.replicas, rollout.updated_replicas)}
                </span>
            </p>
            {(!rollout.steps.is_empty()).then(|| view! { <ol class="steps" aria-label="Canary steps">{steps}</ol> })}
            {rollout.message.clone().map(|m| view! { <p class="muted">{m}</p> })}
        </section>
    }
}

fn application(application: Option<&ApplicationView>, now: &str) -> AnyView {
    let Some(app) = application else {
        return view! {
            <section class="card-section">
                <p class="muted" data-testid="no-application">
                    "Argo CD has no Application for this environment yet. It appears once the release operator has written the derived files."
                </p>
            </section>
        }
        .into_any();
    };
    let last_sync = app.operation.as_ref().map(|op| {
        let when = op
            .finished_at
            .as_deref()
            .or(op.started_at.as_deref())
            .map(|at| age_or_raw(at, now))
            .unwrap_or_default();
        let failed = matches!(op.phase.as_str(), "Failed" | "Error");
        view! {
            <p data-testid="last-sync" class:error-inline=failed>
                {format!("Last sync {} {when}", op.phase.to_lowercase())}
                {op.message.clone().map(|m| view! { <span class="muted op-message" data-testid="operation-message">{format!(" — {m}")}</span> })}
            </p>
        }
        .into_any()
    });
    let urls = app
        .external_urls
        .iter()
        .map(|url| view! { <a href=url.clone() rel="noreferrer" target="_blank" data-testid="public-url">{url.clone()}</a>" " })
        .map(IntoAny::into_any).collect_view();
    view! {
        <section class="card-section">
            <p class="chips">
                {sync_chip(app.sync)}
                {health_chip(app.health)}
                {app.revision.clone().map(|r| view! { <span class="mono muted" title="Target revision">{r}</span> })}
            </p>
            {app.health_message.clone().map(|m| view! { <p class="muted" data-testid="health-message">{m}</p> })}
            {last_sync.unwrap_or_else(|| view! { <p class="muted" data-testid="last-sync">"Never synced"</p> }.into_any())}
            {app.reconciled_at.as_deref().map(|at| view! { <p class="muted small">{format!("Argo CD compared {}", age_or_raw(at, now))}</p> })}
            {(!app.external_urls.is_empty()).then(|| view! { <p class="urls">{urls}</p> })}
        </section>
    }
    .into_any()
}

/// The Release's own Application (`taskapp-platform` applies the Release as it is in git): whether the
/// Release itself is applied, apart from whether what it asks for runs.
fn release_application(app: &ResourceApplication) -> AnyView {
    view! {
        <section class="card-section card-release-application">
            {resource_application_line("Release", app, "release-application")}
        </section>
    }
    .into_any()
}

fn schema(schema: &SchemaView) -> impl IntoView + use<> {
    let applied = schema
        .applied_version
        .clone()
        .unwrap_or_else(|| "none".into());
    let code = schema
        .code_version
        .clone()
        .unwrap_or_else(|| "unknown".into());
    let status = if schema.behind {
        let missing = if schema.missing_migrations.is_empty() {
            String::new()
        } else {
            format!(" Missing: {}.", schema.missing_migrations.join(", "))
        };
        banner(
            Tone::Warn,
            "!",
            "schema-warning",
            format!(
                "Database {} is behind the code: applied {applied}, the running code ships {code}.{missing} \
             Publish the schema by PR before the code needs it.",
                schema.database
            ),
        )
    } else {
        view! {
            <p data-testid="schema-ok">
                {tone_chip(Tone::Ok, "Up to date", None)}
                {format!("{}: schema {applied}", schema.database)}
            </p>
        }
        .into_any()
    };
    view! {
        <section class="card-section">
            <h3>"Database schema"</h3>
            {status}
            {schema.failed_check.clone().map(|check| view! {
                <p class="banner tone-bad" data-testid="schema-check-failed">
                    <span class="glyph" aria-hidden="true">"✕"</span>
                    {format!("Applying failed at {check}. ")}
                    <a href="?tab=databases">"See the Databases tab"</a>
                </p>
            })}
        </section>
    }
}

fn secrets(secrets: &[SecretView], now: &str) -> Option<AnyView> {
    if secrets.is_empty() {
        return None;
    }
    let (problems, fine): (Vec<_>, Vec<_>) = secrets.iter().partition(|s| secret_has_problem(s));
    let problems = problems
        .into_iter()
        .map(|secret| {
            let refreshed = secret
                .refreshed_at
                .as_deref()
                .map(|at| format!("last refreshed {}", age_or_raw(at, now)))
                .unwrap_or_else(|| "never refreshed".into());
            let interval = secret
                .refresh_interval
                .as_deref()
                .map(|i| format!(", refreshes every {i}"))
                .unwrap_or_default();
            view! {
                <li class="problem">
                    <span class="mono">{secret.name.clone()}</span>" "
                    {(!secret.ready).then(|| tone_chip(Tone::Bad, "Not ready", Some("secret-not-ready")))}
                    {secret.stale.then(|| chip(Tone::Warn, "⏱", "Stale".into(), Some("secret-stale")))}
                    <span class="muted">{format!("{refreshed}{interval}")}</span>
                    {secret.message.clone().map(|m| view! { <p class="muted">{m}</p> })}
                </li>
            }
        })
        .map(IntoAny::into_any).collect_view();
    Some(
        view! {
            <section class="card-section">
                <h3>"Secrets"</h3>
                <ul class="problems">{problems}</ul>
                {folded(fine.iter().map(|s| s.name.clone()).collect(), "secret", "ready and fresh")}
            </section>
        }
        .into_any(),
    )
}

/// Crossplane claims, each with the managed resources composed for it; the fine ones folded, so what was
/// composed shows right away only under a claim with a problem (its own or a composed resource's).
fn cloud_resources(resources: &[CloudResourceView]) -> Option<AnyView> {
    if resources.is_empty() {
        return None;
    }
    let (problems, fine): (Vec<_>, Vec<_>) =
        resources.iter().partition(|r| resource_has_problem(r));
    let problems = problems
        .into_iter()
        .map(|r| {
            let conditions = format!(
                "{} · {}",
                if r.ready { "Ready" } else { "Not ready" },
                if r.synced { "Synced" } else { "Not synced" }
            );
            // The claim itself may be fine while something it composed is not (its conditions lag).
            let tone = if r.ready && r.synced { Tone::Ok } else { Tone::Bad };
            view! {
                <li class="problem" data-testid="cloud-resource" data-kind=r.kind.clone() data-name=r.name.clone()>
                    <span class="mono">{format!("{}/{}", r.kind, r.name)}</span>" "
                    {tone_chip(tone, conditions, None)}
                    {r.message.clone().map(|m| view! { <p class="composition-error" data-testid="composition-error">{m}</p> })}
                    {composed(r)}
                </li>
            }
        })
        .map(IntoAny::into_any).collect_view();
    let count = fine.len();
    let fine = fine
        .into_iter()
        .map(|r| {
            view! {
                <li data-testid="cloud-resource" data-kind=r.kind.clone() data-name=r.name.clone()>
                    <span class="mono">{format!("{}/{}", r.kind, r.name)}</span>
                    {composed(r)}
                </li>
            }
        })
        .map(IntoAny::into_any)
        .collect_view()
        .into_any();
    Some(
        view! {
            <section class="card-section" data-testid="cloud-resources">
                <h3>"Cloud resources"</h3>
                <ul class="problems">{problems}</ul>
                {folded_items(count, "resource", "ready and synced", fine)}
            </section>
        }
        .into_any(),
    )
}

/// The managed resources composed for `claim`, a line each: kind/name, Ready and Synced, and the provider's
/// message when one fails.
fn composed(claim: &CloudResourceView) -> Option<AnyView> {
    if claim.composed.is_empty() {
        return None;
    }
    let rows = claim
        .composed
        .iter()
        .map(|c| {
            view! {
                <li
                    data-testid="composed-resource"
                    data-kind=c.kind.clone()
                    data-name=c.name.clone()
                    class:problem=composed_has_problem(c)
                >
                    <span class="mono">{format!("{}/{}", c.kind, c.name)}</span>" "
                    {condition_chip(c.ready, "Ready", "Not ready", "composed-ready")}
                    {condition_chip(c.synced, "Synced", "Not synced", "composed-synced")}
                    {c.message.clone().map(|m| view! { <p class="composition-error" data-testid="composed-message">{m}</p> })}
                </li>
            }
        })
        .map(IntoAny::into_any)
        .collect_view();
    Some(
        view! {
            <ul class="composed" aria-label=format!("Composed for {}/{}", claim.kind, claim.name)>
                {rows}
            </ul>
        }
        .into_any(),
    )
}

/// A condition as a chip that says its state in words: `Ready`, or `Not ready`.
fn condition_chip(
    holds: bool,
    yes: &'static str,
    no: &'static str,
    testid: &'static str,
) -> AnyView {
    if holds {
        tone_chip(Tone::Ok, yes, Some(testid))
    } else {
        tone_chip(Tone::Bad, no, Some(testid))
    }
}

/// Plain Deployments beside the Rollout; the settled ones folded: "1 deployment ready".
fn workloads(deployments: &[WorkloadView]) -> Option<AnyView> {
    if deployments.is_empty() {
        return None;
    }
    let (problems, fine): (Vec<_>, Vec<_>) =
        deployments.iter().partition(|d| workload_has_problem(d));
    let problems = problems
        .into_iter()
        .map(|d| {
            let chip = if d.problem.is_some() {
                tone_chip(Tone::Bad, "Failing", Some("workload-failing"))
            } else if d.progressing.is_some() {
                tone_chip(Tone::Progress, "Rolling out", Some("workload-progressing"))
            } else {
                tone_chip(Tone::Warn, "Short of replicas", Some("workload-short"))
            };
            view! {
                <li class="problem" data-testid="workload" data-name=d.name.clone()>
                    <span class="mono">{format!("deployment/{}", d.name)}</span>" "
                    {chip}" "
                    <span class="muted">{workload_counts(d)}</span>
                    {d.problem.clone().or_else(|| d.progressing.clone()).map(|m| view! { <p class="muted">{m}</p> })}
                </li>
            }
        })
        .map(IntoAny::into_any)
        .collect_view();
    Some(
        view! {
            <section class="card-section" data-testid="workloads">
                <h3>"Workloads"</h3>
                <ul class="problems">{problems}</ul>
                {folded(
                    fine.iter().map(|d| format!("{} · {}", d.name, workload_counts(d))).collect(),
                    "deployment",
                    "ready",
                )}
            </section>
        }
        .into_any(),
    )
}

/// The newest Warning events of the service here; nothing when there are none.
fn events(events: &[EventView], now: &str) -> Option<AnyView> {
    if events.is_empty() {
        return None;
    }
    let rows = events
        .iter()
        .map(|event| {
            view! {
                <li class="problem" data-testid="event" data-reason=event.reason.clone()>
                    {tone_chip(Tone::Warn, event.reason.clone(), None)}" "
                    <span class="mono">{event_subject(event)}</span>" "
                    <span class="muted">{event.last_seen.as_deref().map(|at| age_or_raw(at, now))}</span>
                    <p class="muted">{event.message.clone()}</p>
                </li>
            }
        })
        .map(IntoAny::into_any)
        .collect_view();
    Some(
        view! {
            <section class="card-section" data-testid="events">
                <h3>"Events"</h3>
                <ul class="problems">{rows}</ul>
            </section>
        }
        .into_any(),
    )
}

/// The things without problems, folded: "3 secrets ready and fresh".
fn folded(names: Vec<String>, noun: &'static str, state: &'static str) -> Option<AnyView> {
    let count = names.len();
    let items = names
        .into_iter()
        .map(|n| view! { <li class="mono">{n}</li> })
        .map(IntoAny::into_any)
        .collect_view()
        .into_any();
    folded_items(count, noun, state, items)
}

/// As [`folded`], for `count` things rendered as `items` (`<li>`s) rather than named in a line each.
fn folded_items(
    count: usize,
    noun: &'static str,
    state: &'static str,
    items: AnyView,
) -> Option<AnyView> {
    if count == 0 {
        return None;
    }
    Some(
        view! {
            <details class="folded">
                <summary>
                    <span class="glyph ok" aria-hidden="true">"✓ "</span>
                    {format!("{count} {noun}{} {state}", if count == 1 { "" } else { "s" })}
                </summary>
                <ul>{items}</ul>
            </details>
        }
        .into_any(),
    )
}

fn pods(pods: &[PodView], several_clusters: bool, now: &str) -> impl IntoView + use<> {
    let content = if pods.is_empty() {
        view! { <p class="muted">"No pods run here."</p> }.into_any()
    } else {
        let rows = pods
            .iter()
            .map(|pod| {
                let crashloop = is_crashloop(pod);
                let waiting = pod.waiting_reason.clone().filter(|_| !crashloop);
                view! {
                    <tr data-testid="pod-row" data-pod=pod.name.clone() data-cluster=pod.cluster.clone() data-restarts=pod.restarts.to_string()>
                        <td class="mono">{pod.name.clone()}</td>
                        {several_clusters.then(|| view! { <td class="muted">{pod.cluster.clone()}</td> })}
                        <td>
                            {pod.phase.clone()}" "
                            {if pod.ready { tone_chip(Tone::Ok, "Ready", None) } else { tone_chip(Tone::Bad, "Not ready", None) }}
                            {crashloop.then(|| chip(Tone::Bad, "↻", "CrashLoopBackOff".into(), Some("crashloop")))}
                            {waiting.map(|w| tone_chip(Tone::Warn, w, None))}
                        </td>
                        <td class:restarts-high={pod.restarts > 0}>{format!("{} restart{}", pod.restarts, if pod.restarts == 1 { "" } else { "s" })}</td>
                        <td class="muted">{pod.started_at.as_deref().map(|at| format!("started {}", age_or_raw(at, now)))}</td>
                    </tr>
                }
            })
            .map(IntoAny::into_any).collect_view();
        view! { <table class="pods"><tbody>{rows}</tbody></table> }.into_any()
    };
    view! { <section class="card-section"><h3>"Pods"</h3>{content}</section> }
}

/// The open pull requests that would change this environment, with their CI.
#[component]
fn Pending(
    environment: String,
    pulls: Signal<Option<Result<Vec<PullRequestView>, ApiError>>>,
) -> impl IntoView {
    move || {
        pulls.with(|pulls| match pulls {
            Some(Ok(pulls)) => pulls
                .iter()
                .filter(|pr| pr.environment.as_deref() == Some(environment.as_str()))
                .map(pending_pull)
                .collect_view()
                .into_any(),
            Some(Err(error)) => view! {
                <p class="muted small">{format!("Pending pull requests could not be loaded: {error}")}</p>
            }
            .into_any(),
            None => ().into_any(),
        })
    }
}

/// Promote (dev) or Rollback (prod), Sync, Force sync and Logs for owners; the reason for everybody else.
#[component]
fn Actions(
    service: String,
    environment: String,
    owner: Signal<String>,
    logs: RwSignal<Option<String>>,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let session = expect_context::<Session>();
    let decide = move |permission| session.decide(permission, Some(&owner.get()));
    let move_service = service.clone();
    let sync = Action::new_local({
        let environment = environment.clone();
        move |force: &bool| {
            let force = *force;
            let service = service.clone();
            let environment = environment.clone();
            async move { api::sync(&service, &environment, force).await }
        }
    });
    let confirming_force = RwSignal::new(false);
    // Swapping "Force sync…" for its confirmation moves the focus along, and Cancel brings it back, so a
    // keyboard user is not dropped on the page's body.
    let confirm_button: NodeRef<leptos::html::Button> = NodeRef::new();
    let force_button: NodeRef<leptos::html::Button> = NodeRef::new();
    let refocus_force = StoredValue::new(false);
    Effect::new(move |_| {
        if let Some(button) = confirm_button.get() {
            let _ = button.focus();
        }
    });
    Effect::new(move |_| {
        if let Some(button) = force_button.get()
            && refocus_force.get_value()
        {
            refocus_force.set_value(false);
            let _ = button.focus();
        }
    });
    // Dev promotes to prod; prod rolls back; other environments move by their own Release PRs.
    let rollback = match environment.as_str() {
        shared::delivery::DEV => Some(false),
        shared::delivery::PROD => Some(true),
        _ => None,
    };
    let moving = RwSignal::new(false);

    view! {
        <footer class="card-actions">
            {rollback.map(|rollback| move || {
                let decision = decide(if rollback { Permission::Rollback } else { Permission::Promote });
                if decision.allowed() {
                    view! {
                        <button type="button" data-testid=if rollback { "rollback-button" } else { "promote-button" }
                            aria-haspopup="dialog" on:click=move |_| moving.set(true)>
                            {if rollback { "Rollback…" } else { "Promote to prod…" }}
                        </button>
                    }.into_any()
                } else {
                    permission_reason(decision).into_any()
                }
            })}
            {move || (moving.get() && rollback.is_some()).then(|| view! {
                <MoveDialog service=move_service.clone() rollback=rollback.unwrap_or_default()
                    on_close=Callback::new(move |()| moving.set(false))
                    on_opened=Callback::new(move |()| refresh.update(|n| *n += 1)) />
            })}
            {move || {
                let decision = decide(Permission::Sync);
                if decision.allowed() {
                    view! {
                        <button type="button" data-testid="sync-button" disabled=move || sync.pending().get()
                            on:click=move |_| { sync.dispatch(false); }>
                            {move || if sync.pending().get() { "Syncing…" } else { "Sync" }}
                        </button>
                        <Show when=move || confirming_force.get() fallback=move || view! {
                            <button type="button" data-testid="force-sync-button" disabled=move || sync.pending().get()
                                node_ref=force_button on:click=move |_| confirming_force.set(true)>"Force sync…"</button>
                        }>
                            <span class="confirm" role="group" aria-label="Confirm force sync">
                                "Force replaces resources that cannot be patched. "
                                <button type="button" class="danger" data-testid="force-sync-confirm" node_ref=confirm_button
                                    on:click=move |_| { confirming_force.set(false); sync.dispatch(true); }>"Force sync"</button>
                                <button type="button" class="link" data-testid="force-sync-cancel"
                                    on:click=move |_| { refocus_force.set_value(true); confirming_force.set(false); }>"Cancel"</button>
                            </span>
                        </Show>
                    }.into_any()
                } else {
                    permission_reason(decision).into_any()
                }
            }}
            {move || {
                let decision = decide(Permission::ReadLogs);
                if decision.allowed() {
                    view! {
                        <button type="button" data-testid="logs-button"
                            aria-pressed={
                                let environment = environment.clone();
                                move || (logs.get().as_deref() == Some(environment.as_str())).to_string()
                            }
                            on:click={
                                let environment = environment.clone();
                                move |_| logs.set(Some(environment.clone()))
                            }>"Logs"</button>
                    }.into_any()
                } else {
                    permission_reason(decision).into_any()
                }
            }}
            {move || sync.value().get().map(sync_outcome)}
        </footer>
    }
}

fn sync_outcome(result: Result<SyncResponse, ApiError>) -> impl IntoView {
    match result {
        Ok(response) => view! {
            <p class="outcome" role="status" data-testid="sync-result">
                {format!("Sync of {} started: {}. The card updates as Argo CD reports.", response.application, response.message)}
            </p>
        }
        .into_any(),
        Err(error) => view! {
            <p class="error-inline" role="alert" data-testid="sync-error">
                {format!("Sync did not start: {error} Try again in a moment; if it keeps failing, Argo CD may be down.")}
            </p>
        }
        .into_any(),
    }
}
