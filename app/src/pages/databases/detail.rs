//! `/databases/:env/:name`: one database — whether it is available and where, its schema against the code,
//! the migrations of the version asked for, every schema check (a failed one's database error for owners of a
//! bound service; for anyone else, who may read it), the commits that changed its schema, and the services
//! bound to it.

use leptos::prelude::*;
use leptos_router::components::A;
use shared::databases::DatabaseDetail;
use shared::delivery::schema_version_of;
use shared::fleet::SchemaCheckView;
use shared::time::age_or_raw;

use super::{available_chip, check_chip, list_path, schema_changes, schema_summary};
use crate::api;
use crate::components::platform::{resource_application_line, resource_application_problem};
use crate::live::{LiveFleet, fetched};
use crate::pages::show_errors;

/// One database's page.
#[component]
pub fn DatabasePage(env: String, name: String) -> impl IntoView {
    let changes = schema_changes();
    let crumb = (list_path(Some(&env)), env.clone(), name.clone());
    let detail = fetched(move || {
        changes.track();
        let (env, name) = (env.clone(), name.clone());
        async move { api::get_database(&env, &name).await }
    });
    view! {
        <section class="page">
            <nav class="crumbs" aria-label="Breadcrumb">
                <A href="/databases">"Databases"</A>" / "
                <A href=crumb.0>{crumb.1}</A>
                " / "{crumb.2}
            </nav>
            <ErrorBoundary fallback=show_errors>
                {move || match detail.get() {
                    None => Ok(view! {
                        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading the database" data-testid="loading">
                            <div class="skeleton-row skeleton-title"></div><div class="skeleton-row"></div><div class="skeleton-row"></div>
                        </div>
                    }.into_any()),
                    Some(Err(error)) => Err(error),
                    Some(Ok(detail)) => Ok(view! { <Database detail /> }.into_any()),
                }}
            </ErrorBoundary>
        </section>
    }
}

/// Who may read a failed check's error text: the owners of the services bound to the database.
fn owners_of(services: &[String]) -> String {
    match services {
        [] => "its services".into(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn check(check: &SchemaCheckView, owners: &str) -> AnyView {
    let error = match (&check.error, check.error_hidden) {
        (Some(error), _) => {
            Some(view! { <pre class="db-error" data-testid="database-error">{error.clone()}</pre> }.into_any())
        }
        (None, true) => Some(
            view! {
                <p class="permission-reason" data-testid="database-error-hidden">
                    {format!("Failed — the database's error text is shown to the owners of {owners}.")}
                </p>
            }
            .into_any(),
        ),
        (None, false) => None,
    };
    view! {
        <li data-testid="schema-check" data-state=check.state.clone() data-name=check.name.clone()>
            {check_chip(&check.state)}" "<span class="mono">{check.name.clone()}</span>
            {error}
        </li>
    }
    .into_any()
}

#[component]
fn Database(detail: DatabaseDetail) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let db = &detail.database;
    let owners = owners_of(&detail.services);
    let applied = db.applied_version.clone();
    let migrations = detail
        .migrations
        .iter()
        .map(|m| {
            // Applied when its number is at most the applied version's (both zero-padded, so text order works).
            let done = match (schema_version_of(m), applied.as_deref()) {
                (Some(n), Some(applied)) => n <= applied,
                _ => false,
            };
            view! {
                <li data-testid="migration" data-applied=done.to_string()>
                    <span class="mono">{m.clone()}</span>
                    <span class="muted small">{if done { " applied" } else { " not applied yet" }}</span>
                </li>
            }
        })
        .collect_view();
    let history = detail
        .history
        .iter()
        .map(|change| {
            let short: String = change.sha.chars().take(7).collect();
            let at = change.at.clone();
            let title = change.at.clone();
            view! {
                <tr data-testid="schema-change" data-sha=change.sha.clone()>
                    <td class="mono">{change.version.clone().unwrap_or_else(|| "?".into())}</td>
                    <td>{change.message.clone()}" "<span class="mono muted small">{short}</span></td>
                    <td>{change.author.clone()}</td>
                    <td class="muted" title=title>{move || age_or_raw(&at, &live.now.get())}</td>
                    <td data-testid="schema-change-pr">{match change.pr_number {
                        Some(n) => format!("#{n}"),
                        None => "direct commit".into(),
                    }}</td>
                </tr>
            }
        })
        .collect_view();
    let services = if detail.services.is_empty() {
        view! { <span class="muted">"no service in the fleet"</span> }.into_any()
    } else {
        detail
            .services
            .iter()
            .map(|s| {
                let (href, label) = (format!("/services/{s}"), s.clone());
                view! { <A href=href attr:class="chip" attr:data-testid="database-service">{label}</A> }
            })
            .collect_view()
            .into_any()
    };
    view! {
        <article data-testid="database-detail" data-database=db.name.clone() data-env=db.environment.clone()>
            <header class="service-head">
                <h1>{db.name.clone()}</h1>
                <p class="muted">{format!("{} · {} · {}", db.environment, if db.engine.is_empty() { "engine unknown" } else { &db.engine }, db.size)}</p>
                <dl class="facts">
                    <dt>"Status"</dt><dd>{available_chip(db)}</dd>
                    <dt>"Endpoint"</dt>
                    <dd class="mono">{db.endpoint.clone().unwrap_or_else(|| "none yet".into())}</dd>
                    <dt>"Schema"</dt><dd>{schema_summary(db)}</dd>
                    <dt>"Asked for"</dt>
                    <dd class="mono" data-testid="database-published">{detail.published_version.clone().unwrap_or_else(|| "no DatabaseSchema".into())}</dd>
                    <dt>"Bound services"</dt><dd>{services}</dd>
                    <dt>"Applied by Argo CD"</dt>
                    <dd>
                        {match &db.application {
                            Some(app) => resource_application_line("Database", app, "database-application"),
                            None => view! { <span class="muted" data-testid="no-database-application">"No Application applies this Database: Argo CD has not generated one for its file yet."</span> }.into_any(),
                        }}
                        {db.schema_application.as_ref().map(|app| resource_application_line("DatabaseSchema", app, "schema-application"))}
                    </dd>
                </dl>
                {db.application.as_ref().and_then(|app| resource_application_problem(app, "database-application-problem"))}
                {db.schema_application.as_ref().and_then(|app| resource_application_problem(app, "schema-application-problem"))}
            </header>
            <h2>"Migrations"</h2>
            {if detail.migrations.is_empty() {
                view! { <p class="muted">"No schema version is asked for, so no migrations."</p> }.into_any()
            } else {
                view! { <ol class="commits" data-testid="migrations">{migrations}</ol> }.into_any()
            }}
            <h2>"Checks"</h2>
            {if db.checks.is_empty() {
                view! { <p class="muted" data-testid="no-checks">"The schema operator has run no checks on it yet."</p> }.into_any()
            } else {
                view! { <ul class="checks" data-testid="schema-checks">{db.checks.iter().map(|c| check(c, &owners)).collect_view()}</ul> }.into_any()
            }}
            <h2>"History"</h2>
            {if detail.history.is_empty() {
                view! { <p class="muted" data-testid="no-history">"No commit has changed its DatabaseSchema yet."</p> }.into_any()
            } else {
                view! {
                    <table class="fleet" data-testid="schema-history">
                        <thead><tr>
                            <th scope="col">"Version"</th><th scope="col">"Commit"</th><th scope="col">"Who"</th>
                            <th scope="col">"When"</th><th scope="col">"PR"</th>
                        </tr></thead>
                        <tbody>{history}</tbody>
                    </table>
                }.into_any()
            }}
        </article>
    }
}
