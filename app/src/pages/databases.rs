//! Databases as entities of their own (`shared::databases`, `GET /api/v1/databases…`): every Database of the
//! platform (`/databases`, or one environment's with `?env=`) and one database (`/databases/:env/:name`,
//! [`shared::databases::database_path`]) with its checks and the history of its schema. Both routes show one
//! lazy route, so both pages are one wasm module fetched the first time either opens (a lazy route apiece
//! would cost the first load a loader entry and a chunk table each). Both fetch again when a
//! card's schema changes on the stream (a check ran, a version applied) and after the stream reconnects, so
//! what they show stays live without a clock.

pub mod detail;
pub mod list;

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
use leptos_router::{LazyRoute, lazy_route};
use shared::fleet::{DatabaseView, SchemaView};
use shared::status::Tone;
use shared::url::encode_query_value;

use crate::components::status::tone_chip;
use crate::live::LiveFleet;

/// `/databases` and `/databases/:env/:name`, fetched as one wasm module on the first visit: the list without
/// a name, one database's page with one.
#[derive(Debug)]
pub struct DatabasesRoute;

#[lazy_route]
impl LazyRoute for DatabasesRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <DatabasesArea /> }.into_any()
    }
}

/// The page the address names: a database when it has one, else the list (of one environment with `?env=`).
#[component]
fn DatabasesArea() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let segment = move |key: &str| params.with(|p| p.get(key).filter(|v| !v.is_empty()));
    let env = Memo::new(move |_| query.with(|q| q.get("env").filter(|v| !v.is_empty())));
    // The list stays as the environment changes (it only filters); a database's page is drawn per database.
    let database = Memo::new(move |_| segment("env").zip(segment("name")));
    let listing = Memo::new(move |_| database.with(Option::is_none));
    move || {
        if listing.get() {
            view! { <list::DatabasesPage env /> }.into_any()
        } else {
            database
                .get()
                .map(|(env, name)| view! { <detail::DatabasePage env name /> })
                .into_any()
        }
    }
}

/// The list's address: every environment, or one.
pub fn list_path(env: Option<&str>) -> String {
    match env {
        Some(env) => format!("/databases?env={}", encode_query_value(env)),
        None => "/databases".into(),
    }
}

/// Every card's schema the stream has sent, by service and environment, with the reconnections so far.
type SchemaChanges = (u32, Vec<(String, String, Option<SchemaView>)>);

/// What the stream says of databases: every card's schema (applied version, what is missing, a failed
/// check), and the reconnections. A page reads it to fetch again when it changes.
pub fn schema_changes() -> Memo<SchemaChanges> {
    let live = expect_context::<LiveFleet>();
    Memo::new(move |_| {
        let schemas = live.cards.with(|cards| {
            cards
                .all()
                .into_iter()
                .map(|c| (c.service, c.environment, c.schema))
                .collect()
        });
        (live.resyncs.get(), schemas)
    })
}

/// A schema check's state (`Pending`, `Running`, `Succeeded`, `Failed`) in the status vocabulary.
pub fn check_chip(state: &str) -> AnyView {
    let tone = match state {
        "Succeeded" => Tone::Ok,
        "Running" | "Pending" => Tone::Progress,
        "Failed" => Tone::Bad,
        _ => Tone::Unknown,
    };
    tone_chip(tone, state.to_string(), Some("check-state"))
}

/// Whether it accepts connections, in words.
pub fn available_chip(db: &DatabaseView) -> AnyView {
    if db.available {
        tone_chip(Tone::Ok, "Available", Some("database-available"))
    } else {
        tone_chip(Tone::Bad, "Not available", Some("database-available"))
    }
}

/// The schema applied beside the newest the running code ships, and whether it is behind.
pub fn schema_summary(db: &DatabaseView) -> AnyView {
    let applied = db.applied_version.clone().unwrap_or_else(|| "none".into());
    let newest = db.code_version.clone().unwrap_or_else(|| "unknown".into());
    view! {
        <span class="mono" data-testid="database-versions">{format!("{applied} of {newest} ")}</span>
        {if db.up_to_date {
            tone_chip(Tone::Ok, "Up to date", Some("database-schema"))
        } else {
            tone_chip(Tone::Warn, "Behind the code", Some("database-schema"))
        }}
    }
    .into_any()
}
