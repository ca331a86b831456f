//! `/databases` (`?env=` for one environment): every Database of the platform (or of one environment), by
//! environment then name.
//! Each row names its environment, links to its page, and says whether it is available, how its schema
//! stands against the code, who is bound to it, its size and engine, and whether a check failed.

use leptos::prelude::*;
use leptos_router::components::A;
use shared::databases::database_path;
use shared::fleet::DatabaseView;
use shared::fleet::overview::environments;
use shared::status::Tone;

use super::{available_chip, list_path, schema_changes, schema_summary};
use crate::api;
use crate::components::status::tone_chip;
use crate::live::{LiveFleet, fetched};
use crate::pages::show_errors;

/// Every database, or one environment's.
#[component]
pub fn DatabasesPage(env: Memo<Option<String>>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let changes = schema_changes();
    let databases = fetched(move || {
        changes.track();
        api::list_all_databases()
    });
    let envs = Memo::new(move |_| live.fleet.with(|f| environments(f.services())));
    view! {
        <section class="page">
            <div class="page-head">
                <h1>"Databases"</h1>
                <p class="counts">"Every Database the platform runs, with its schema against the code and its checks."</p>
            </div>
            <nav class="env-picker" aria-label="Environment" data-testid="database-env-picker">
                <a href=list_path(None) aria-current=move || env.with(Option::is_none).then_some("true") data-testid="env-all">"All environments"</a>
                <For each=move || envs.get() key=Clone::clone let:choice>
                    <a
                        href=list_path(Some(&choice))
                        aria-current={
                            let choice = choice.clone();
                            move || (env.get().as_deref() == Some(choice.as_str())).then_some("true")
                        }
                        data-testid="env-option"
                        data-env=choice.clone()
                    >{choice.clone()}</a>
                </For>
            </nav>
            <ErrorBoundary fallback=show_errors>
                {move || match databases.get() {
                    None => Ok(view! {
                        <div class="skeleton" role="status" aria-busy="true" aria-label="Loading databases" data-testid="loading">
                            <div class="skeleton-row"></div><div class="skeleton-row"></div><div class="skeleton-row"></div>
                        </div>
                    }.into_any()),
                    Some(Err(error)) => Err(error),
                    Some(Ok(all)) => {
                        let only = env.get();
                        let rows: Vec<DatabaseView> = all
                            .into_iter()
                            .filter(|d| only.as_ref().is_none_or(|e| &d.environment == e))
                            .collect();
                        Ok(if rows.is_empty() {
                            empty(only).into_any()
                        } else {
                            view! {
                                <table class="fleet databases" data-testid="databases-table">
                                    <thead><tr>
                                        <th scope="col">"Database"</th><th scope="col">"Environment"</th><th scope="col">"Available"</th>
                                        <th scope="col">"Schema (applied of newest)"</th><th scope="col">"Bound to"</th>
                                        <th scope="col">"Size"</th><th scope="col">"Engine"</th><th scope="col">"Checks"</th>
                                    </tr></thead>
                                    <tbody>{rows.iter().map(row).collect_view()}</tbody>
                                </table>
                            }.into_any()
                        })
                    }
                }}
            </ErrorBoundary>
        </section>
    }
}

/// Nothing to list: how a database comes to exist, or that the environment has none.
fn empty(env: Option<String>) -> impl IntoView {
    view! {
        <p class="empty" data-testid="no-databases">
            {match env {
                Some(env) => view! { {format!("No database runs in {env}. ")}<A href="/databases">"See every environment"</A> }.into_any(),
                None => view! {
                    "No databases yet. A service asks for one by pull request: "
                    <A href="/create?template=add-database">"Add database"</A>
                    " on Create adds a Database in platform/environments/<env>/."
                }.into_any(),
            }}
        </p>
    }
}

/// The checks at a glance: a failed one named, running ones counted, else all passed.
fn checks_summary(db: &DatabaseView) -> AnyView {
    let failed: Vec<&str> = db
        .checks
        .iter()
        .filter(|c| c.state == "Failed")
        .map(|c| c.name.as_str())
        .collect();
    let running = db
        .checks
        .iter()
        .filter(|c| matches!(c.state.as_str(), "Pending" | "Running"))
        .count();
    if !failed.is_empty() {
        view! { <span data-testid="database-check-failed">{tone_chip(Tone::Bad, format!("Failed: {}", failed.join(", ")), None)}</span> }.into_any()
    } else if running > 0 {
        tone_chip(
            Tone::Progress,
            format!("{running} running"),
            Some("database-checks"),
        )
    } else if db.checks.is_empty() {
        view! { <span class="muted">"none"</span> }.into_any()
    } else {
        tone_chip(Tone::Ok, "All passed", Some("database-checks"))
    }
}

fn row(db: &DatabaseView) -> AnyView {
    let failed = db.checks.iter().any(|c| c.state == "Failed");
    let name = db.name.clone();
    view! {
        <tr data-testid="database-row" data-database=db.name.clone() data-env=db.environment.clone()
            data-failed=failed.to_string()>
            <th scope="row"><A href=database_path(&db.environment, &db.name) attr:class="mono" attr:data-testid="database-link">{name}</A></th>
            <td>{db.environment.clone()}</td>
            <td>{available_chip(db)}</td>
            <td>{schema_summary(db)}</td>
            <td>
                {if db.bound_components.is_empty() {
                    view! { <span class="muted">"nothing"</span> }.into_any()
                } else {
                    db.bound_components.iter().map(|c| {
                        let (href, label) = (format!("/services/{c}"), c.clone());
                        view! { <A href=href attr:class="chip">{label}</A> }
                    }).collect_view().into_any()
                }}
            </td>
            <td>{db.size.clone()}</td>
            <td>{if db.engine.is_empty() { "unknown".to_string() } else { db.engine.clone() }}</td>
            <td>{checks_summary(db)}</td>
        </tr>
    }
    .into_any()
}
