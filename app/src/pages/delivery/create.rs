//! Create (`/create`): the four golden paths as one generic form. `?template=` picks the path, `?service=` the
//! service of the service-scoped ones, and any other query parameter named like a field prefills it (Promote's
//! "Apply schema first" links here that way, and Onboard of a service the catalog knows with its name, owner
//! and description). Every path is validated here with the server's own functions,
//! previewed (exact files and diff), and only then submitted as a pull request.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::{LazyRoute, lazy_route};
use shared::ApiError;
use shared::auth::Permission;
use shared::delivery::{
    AddDatabaseForm, ApplySchemaForm, ChangePreview, CreateDeploymentForm, DATABASE_SIZES,
    FieldError, OnboardForm, PullRequestView, Template, schema_version_of, validate_add_database,
    validate_apply_schema, validate_create_deployment, validate_onboard,
};
use shared::fleet::overview::{environments, is_onboarded};
use shared::url::encode_query_value;

use crate::api;
use crate::app::Session;
use crate::components::delivery::{change_view, pull_outcome};
use crate::components::status::permission_reason;
use crate::live::{LiveFleet, fetched};

/// Where a field's choices come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    Text,
    Check,
    Teams,
    Environments,
    Sizes,
    Builds,
    SchemaVersions,
    /// The platform's scaffold templates (free text when it lists none).
    Scaffolds,
    /// The chosen template's versions (free text when the platform lists none).
    ScaffoldVersions,
}

/// One form field: its name in the request body (and in `field-<name>`), label, input and hint.
struct Field(&'static str, &'static str, Input, &'static str);

const ONBOARD: &[Field] = &[
    Field(
        "name",
        "Service name",
        Input::Text,
        "Lowercase letters, digits and '-'; also its repository's name.",
    ),
    Field("owner", "Owner team", Input::Teams, ""),
    Field(
        "description",
        "Description",
        Input::Text,
        "What it does, in one line.",
    ),
    Field("template", "Scaffold template", Input::Scaffolds, ""),
    Field(
        "template_version",
        "Template version",
        Input::ScaffoldVersions,
        "Newest first.",
    ),
    Field(
        "auto_deploy",
        "Auto-deploy: dev follows every green build of main",
        Input::Check,
        "",
    ),
];
const CREATE_DEPLOYMENT: &[Field] = &[
    Field("environment", "Environment", Input::Environments, ""),
    Field(
        "build",
        "Green build",
        Input::Builds,
        "Only builds whose pipeline passed can be deployed.",
    ),
    Field(
        "databases",
        "Database bindings",
        Input::Text,
        "Names of databases in that environment, comma-separated; may be empty.",
    ),
];
const ADD_DATABASE: &[Field] = &[
    Field("environment", "Environment", Input::Environments, ""),
    Field("name", "Database name", Input::Text, ""),
    Field("size", "Size", Input::Sizes, ""),
];
const APPLY_SCHEMA: &[Field] = &[
    Field("environment", "Environment", Input::Environments, ""),
    Field(
        "database",
        "Database",
        Input::Text,
        "Empty: the service's own database.",
    ),
    Field(
        "version",
        "Schema version",
        Input::SchemaVersions,
        "Published from the migrations on main.",
    ),
];

fn fields(template: Template) -> &'static [Field] {
    match template {
        Template::OnboardService => ONBOARD,
        Template::CreateDeployment => CREATE_DEPLOYMENT,
        Template::AddDatabase => ADD_DATABASE,
        Template::ApplySchema => APPLY_SCHEMA,
    }
}

fn label(template: Template) -> &'static str {
    match template {
        Template::OnboardService => "Onboard service",
        Template::CreateDeployment => "Create deployment",
        Template::AddDatabase => "Add database",
        Template::ApplySchema => "Apply database schema",
    }
}

fn purpose(template: Template) -> &'static str {
    match template {
        Template::OnboardService => {
            "A PR adding the service's Component to the registry and its first dev Release."
        }
        Template::CreateDeployment => {
            "A PR adding or changing the service's Release in an environment, at a green build."
        }
        Template::AddDatabase => "A PR adding a Database in an environment.",
        Template::ApplySchema => "A PR moving a database's schema forward to a published version.",
    }
}

fn href(template: Template, service: Option<&str>) -> String {
    match service {
        Some(service) if template != Template::OnboardService => format!(
            "/create?template={}&service={}",
            template.slug(),
            encode_query_value(service)
        ),
        _ => format!("/create?template={}", template.slug()),
    }
}

/// `/create`, fetched as its own wasm module on the first visit: most sessions never open it.
#[derive(Debug)]
pub struct CreateRoute;

#[lazy_route]
impl LazyRoute for CreateRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <CreatePage /> }.into_any()
    }
}

/// The golden paths.
#[component]
pub fn CreatePage() -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let session = expect_context::<Session>();
    let query = use_query_map();
    let template = Memo::new(move |_| {
        query
            .with(|q| q.get("template").and_then(|t| Template::from_slug(&t)))
            .unwrap_or(Template::OnboardService)
    });
    let service = Memo::new(move |_| query.with(|q| q.get("service").filter(|s| !s.is_empty())));
    let services = Memo::new(move |_| {
        live.fleet.with(|f| {
            f.services()
                .filter(|s| is_onboarded(s))
                .map(|s| (s.name.clone(), s.owner.clone()))
                .collect::<Vec<_>>()
        })
    });
    // What to show: only a change of path, service, owner or permission rebuilds the form.
    let state = Memo::new(move |_| {
        let template = template.get();
        let service = service.get();
        let decide = |owner: Option<&str>| session.decide(Permission::RunTemplates, owner);
        let decision = if template == Template::OnboardService {
            Some(decide(None))
        } else {
            let owner = services.with(|list| {
                list.iter()
                    .find(|(name, _)| Some(name) == service.as_ref())
                    .map(|(_, owner)| owner.clone())
            });
            owner.map(|owner| decide(Some(&owner)))
        };
        (template, service, decision)
    });
    let navigate = use_navigate();

    view! {
        <section class="page">
            <h1>"Create"</h1>
            // Links with aria-current, not ARIA tabs: each golden path is its own URL, and tabs would promise
            // arrow-key movement.
            <nav class="tabs" aria-label="Golden paths">
                {Template::ALL.into_iter().map(|t| view! {
                    <a href=move || href(t, service.get().as_deref())
                        aria-current=move || (template.get() == t).then_some("page")
                        class:active=move || template.get() == t
                        data-testid=format!("template-{}", t.slug())>{label(t)}</a>
                }).collect_view()}
            </nav>
            <p class="muted">{move || purpose(template.get())}</p>
            {move || (template.get() != Template::OnboardService).then(|| {
                let navigate = navigate.clone();
                view! {
                    <label class="field">
                        <span>"Service"</span>
                        <select data-testid="field-service" on:change=move |ev| {
                            navigate(&href(template.get_untracked(), Some(&event_target_value(&ev))), NavigateOptions::default());
                        }>
                            <option value="" selected=move || service.get().is_none()>"Choose a service…"</option>
                            {move || services.get().into_iter().map(|(name, _)| {
                                let selected = service.get().as_deref() == Some(name.as_str());
                                view! { <option value=name.clone() selected=selected>{name.clone()}</option> }
                            }).collect_view()}
                        </select>
                    </label>
                }
            })}
            {move || match state.get() {
                (_, _, Some(decision)) if !decision.allowed() => permission_reason(decision).into_any(),
                (template, service, Some(_)) => view! { <TemplateForm template service /> }.into_any(),
                (_, None, None) => view! { <p class="empty" data-testid="choose-service">"Choose the service this is for."</p> }.into_any(),
                (_, Some(name), None) => if live.loaded.get().is_none() {
                    view! { <div class="skeleton-row" aria-busy="true" data-testid="loading"></div> }.into_any()
                } else {
                    view! { <p class="empty" data-testid="choose-service">{format!("No service {name} is on the platform. Choose one above.")}</p> }.into_any()
                },
            }}
        </section>
    }
}

type Values = Vec<(&'static str, String)>;

fn value(values: &Values, name: &str) -> String {
    values
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

/// The request body of `template` from the form's values, checked exactly as the server checks it.
fn body(template: Template, v: &Values, envs: &[String]) -> Result<api::TemplateForm, FieldError> {
    let g = |name| value(v, name);
    Ok(match template {
        Template::OnboardService => {
            let form = OnboardForm {
                name: g("name"),
                owner: g("owner"),
                description: g("description"),
                template: g("template"),
                template_version: g("template_version"),
                auto_deploy: g("auto_deploy") == "true",
                build: None,
            };
            validate_onboard(&form)?;
            api::TemplateForm::Onboard(form)
        }
        Template::CreateDeployment => {
            let form = CreateDeploymentForm {
                environment: g("environment"),
                build: g("build"),
                databases: g("databases")
                    .split(',')
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .map(String::from)
                    .collect(),
            };
            validate_create_deployment(&form, envs)?;
            api::TemplateForm::CreateDeployment(form)
        }
        Template::AddDatabase => {
            let form = AddDatabaseForm {
                environment: g("environment"),
                name: g("name"),
                size: g("size"),
            };
            validate_add_database(&form, envs)?;
            api::TemplateForm::AddDatabase(form)
        }
        Template::ApplySchema => {
            let form = ApplySchemaForm {
                environment: g("environment"),
                database: g("database"),
                version: g("version"),
            };
            validate_apply_schema(&form, envs)?;
            api::TemplateForm::ApplySchema(form)
        }
    })
}

/// One golden path's form: fields, client-side checks, Preview, then Submit.
#[component]
fn TemplateForm(template: Template, service: Option<String>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    let session = expect_context::<Session>();
    let query = use_query_map();
    let spec = fields(template);
    let teams = session
        .info()
        .and_then(|info| info.identity)
        .map(|id| id.teams)
        .unwrap_or_default();
    // A link may name the owner (Onboard from the catalog names the team its catalog-info.yaml gives): it is
    // offered even when it is not one of the viewer's teams, and the form says who may onboard for it.
    let linked_owner = query
        .with_untracked(|q| q.get("owner"))
        .filter(|owner| !owner.is_empty() && !teams.contains(owner));
    let owners: Vec<String> = teams.iter().cloned().chain(linked_owner).collect();
    let defaults = |name: &str| -> String {
        match name {
            "owner" => teams.first().cloned().unwrap_or_default(),
            "template" => "go-service".into(),
            "template_version" => "1.4.0".into(),
            "auto_deploy" => "true".into(),
            "environment" => "dev".into(),
            "size" => "small".into(),
            "name" if template == Template::AddDatabase => service.clone().unwrap_or_default(),
            _ => String::new(),
        }
    };
    let values: RwSignal<Values> = RwSignal::new(query.with_untracked(|q| {
        spec.iter()
            .map(|f| {
                // In the address, `template` names the golden path (`?template=onboard-service`), not the
                // scaffold template field of the same name, which starts from its default.
                let linked = (f.0 != "template").then(|| q.get(f.0)).flatten();
                (f.0, linked.unwrap_or_else(|| defaults(f.0)))
            })
            .collect()
    }));
    let envs = Memo::new(move |_| live.fleet.with(|f| environments(f.services())));
    let name = service.clone().unwrap_or_default();
    let builds = (template == Template::CreateDeployment).then(|| {
        let name = name.clone();
        fetched(move || {
            let name = name.clone();
            async move { api::list_builds(&name).await }
        })
    });
    let scaffolds = (template == Template::OnboardService)
        .then(|| fetched(|| async { api::list_scaffolds().await }));
    // The versions of the chosen template, when the platform lists its templates.
    let scaffold_versions = move |chosen: &str| -> Option<Vec<String>> {
        scaffolds?.with(|s| {
            let list = s.as_ref()?.as_ref().ok()?;
            list.iter()
                .find(|s| s.name == chosen)
                .map(|s| s.versions.clone())
        })
    };
    let listed = move || {
        scaffolds.is_some_and(|s| s.with(|s| matches!(s, Some(Ok(list)) if !list.is_empty())))
    };
    let versions = (template == Template::ApplySchema).then(|| {
        let name = name.clone();
        fetched(move || {
            let name = name.clone();
            async move { api::list_schema_versions(&name).await }
        })
    });
    let databases = (template == Template::ApplySchema).then(|| {
        let name = name.clone();
        fetched(move || {
            let name = name.clone();
            async move { api::list_databases(&name).await }
        })
    });
    let set = move |field: &'static str, v: String| {
        values.update(|values| {
            if let Some(slot) = values.iter_mut().find(|(n, _)| *n == field) {
                slot.1 = v;
            }
        })
    };
    // Choose the newest green build and the newest schema version once they arrive, unless the URL chose.
    Effect::new(move |_| {
        let newest_build = builds.and_then(|b| {
            b.with(|b| {
                b.as_ref()?
                    .as_ref()
                    .ok()?
                    .first()
                    .map(|b| b.version.clone())
            })
        });
        let newest_version = versions
            .and_then(|v| v.with(|v| v.as_ref()?.as_ref().ok()?.last().map(|v| v.version.clone())));
        for (field, newest) in [("build", newest_build), ("version", newest_version)] {
            if let Some(newest) = newest
                && values.with_untracked(|v| value(v, field).is_empty())
            {
                set(field, newest);
            }
        }
        // The built-in default template stands only if the platform offers it: otherwise its first one, at
        // its newest version, so the form never starts from a choice the server refuses.
        let first_listed = scaffolds.and_then(|s| {
            s.with(|s| {
                let list = s.as_ref()?.as_ref().ok()?;
                let chosen = values.with_untracked(|v| value(v, "template"));
                if list.iter().any(|s| s.name == chosen) {
                    return None;
                }
                list.first()
                    .map(|s| (s.name.clone(), s.versions.first().cloned()))
            })
        });
        if let Some((template, newest)) = first_listed {
            set("template", template);
            set("template_version", newest.unwrap_or_default());
        }
    });

    let field_error: RwSignal<Option<(String, String)>> = RwSignal::new(None);
    let failure: RwSignal<Option<ApiError>> = RwSignal::new(None);
    let preview: RwSignal<Option<ChangePreview>> = RwSignal::new(None);
    let opened: RwSignal<Option<PullRequestView>> = RwSignal::new(None);
    let busy = RwSignal::new(false);
    let run = Callback::new(move |submit: bool| {
        let form = match values.with_untracked(|v| envs.with_untracked(|e| body(template, v, e))) {
            Ok(form) => form,
            Err(error) => {
                field_error.set(Some((error.field.to_string(), error.message)));
                return;
            }
        };
        field_error.set(None);
        failure.set(None);
        busy.set(true);
        let service = service
            .clone()
            .filter(|_| template != Template::OnboardService);
        spawn_local(async move {
            let service = service.as_deref();
            let error = if submit {
                api::submit_template(service, template.slug(), &form)
                    .await
                    .map(|pr| opened.set(Some(pr)))
                    .err()
            } else {
                api::preview_template(service, template.slug(), &form)
                    .await
                    .map(|p| preview.set(Some(p)))
                    .err()
            };
            if let Some(error) = error {
                match error
                    .field
                    .clone()
                    .filter(|f| spec.iter().any(|s| s.0 == f))
                {
                    Some(field) => field_error.set(Some((field, error.message))),
                    None => failure.set(Some(error)),
                }
            }
            busy.set(false);
        });
    });

    let inputs = spec
        .iter()
        .map(|&Field(name, label, input, hint)| {
            let current = move || values.with(|v| value(v, name));
            let owners = owners.clone();
            let not_yours = {
                let teams = teams.clone();
                move || {
                    let owner = (input == Input::Teams).then(current)?;
                    (!owner.is_empty() && !teams.contains(&owner)).then(|| {
                        permission_reason(session.decide(Permission::RunTemplates, Some(&owner)))
                    })
                }
            };
            let on_change = move |ev: leptos::ev::Event| {
                let v = if input == Input::Check {
                    event_target_checked(&ev).to_string()
                } else {
                    event_target_value(&ev)
                };
                // Another template has other versions: offer its newest.
                if name == "template"
                    && let Some(newest) = scaffold_versions(&v).and_then(|v| v.into_iter().next())
                {
                    set("template_version", newest);
                }
                set(name, v);
                if field_error.with_untracked(|e| e.as_ref().is_some_and(|(f, _)| f == name)) {
                    field_error.set(None);
                }
                // The preview showed other values; a submit must follow a fresh one.
                preview.set(None);
                opened.set(None);
            };
            let choices = move || -> Vec<(String, String)> {
                let pair = |s: &String| (s.clone(), s.clone());
                match input {
                    Input::Teams => owners.iter().map(pair).collect(),
                    Input::Environments => envs.get().iter().map(pair).collect(),
                    Input::Sizes => DATABASE_SIZES.iter().map(|s| (s.to_string(), s.to_string())).collect(),
                    Input::Builds => builds.and_then(|b| b.with(|b| b.as_ref().map(|r| match r {
                        Ok(list) => list.iter().map(|b| (b.version.clone(), format!("{} {}", b.version, b.message.clone().unwrap_or_default()))).collect(),
                        Err(error) => vec![(String::new(), format!("Could not load builds: {error}"))],
                    }))).unwrap_or_default(),
                    Input::SchemaVersions => versions.and_then(|s| s.with(|s| s.as_ref().map(|r| match r {
                        Ok(list) => list.iter().rev().map(|s| (s.version.clone(), s.version.clone())).collect(),
                        Err(error) => vec![(String::new(), format!("Could not load schema versions: {error}"))],
                    }))).unwrap_or_default(),
                    Input::Scaffolds => scaffolds.and_then(|s| s.with(|s| s.as_ref().map(|r| match r {
                        Ok(list) => list.iter().map(|s| pair(&s.name)).collect(),
                        Err(error) => vec![(String::new(), format!("Could not load templates: {error}"))],
                    }))).unwrap_or_default(),
                    Input::ScaffoldVersions => values
                        .with(|v| scaffold_versions(&value(v, "template")))
                        .unwrap_or_default()
                        .iter()
                        .map(pair)
                        .collect(),
                    Input::Text | Input::Check => Vec::new(),
                }
            };
            let text = move || view! {
                <input type="text" id=name data-testid=format!("field-{name}") prop:value=current on:input=on_change autocomplete="off" />
            };
            let select = move || {
                // A fresh copy per render: the templates' select is built again when their list arrives.
                let choices = choices.clone();
                view! {
                    <select id=name data-testid=format!("field-{name}") on:change=on_change>
                        <option value="" selected=move || current().is_empty()>"Choose…"</option>
                        {move || {
                            let now = current();
                            choices().into_iter().map(|(v, text)| {
                                let selected = v == now;
                                view! { <option value=v selected=selected>{text}</option> }
                            }).collect_view()
                        }}
                    </select>
                }
            };
            let control = match input {
                Input::Text => text().into_any(),
                Input::Check => view! {
                    <input type="checkbox" id=name data-testid=format!("field-{name}") prop:checked=move || current() == "true" on:change=on_change />
                }.into_any(),
                // A platform that lists no templates leaves them to the person filling the form.
                Input::Scaffolds | Input::ScaffoldVersions => {
                    (move || if listed() { select().into_any() } else { text().into_any() }).into_any()
                }
                _ => select().into_any(),
            };
            let error = move || field_error.with(|e| e.as_ref().filter(|(f, _)| f == name).map(|(_, m)| m.clone()));
            view! {
                <div class="field" class:field-check=input == Input::Check>
                    <label for=name>{label}</label>
                    {control}
                    {(!hint.is_empty()).then(|| view! { <span class="muted small">{hint}</span> })}
                    {not_yours}
                    {move || error().map(|m| view! { <span class="error-inline" role="alert" data-testid=format!("field-error-{name}")>{m}</span> })}
                </div>
            }
        })
        .collect_view();

    // Apply schema lists the migrations the chosen version adds to the database in that environment.
    let adds = move || {
        let (versions, databases) = (versions?, databases?);
        let (env, database, version) = values.with(|v| {
            (
                value(v, "environment"),
                value(v, "database"),
                value(v, "version"),
            )
        });
        let database = if database.is_empty() {
            name.clone()
        } else {
            database
        };
        let applied = databases.with(|d| {
            d.as_ref()?
                .as_ref()
                .ok()?
                .iter()
                .find(|d| d.environment == env && d.name == database)
                .and_then(|d| d.applied_version.clone())
        });
        let migrations = versions.with(|v| {
            v.as_ref()?
                .as_ref()
                .ok()?
                .iter()
                .find(|v| v.version == version)
                .map(|v| v.migrations.clone())
        })?;
        let adds: Vec<String> = migrations
            .into_iter()
            .filter(|m| {
                applied
                    .as_deref()
                    .is_none_or(|a| schema_version_of(m).is_some_and(|n| n > a))
            })
            .collect();
        Some(view! {
            <div class="field" data-testid="schema-migrations">
                <span>{format!("Migrations this adds to {database} in {env} (applied now: {}):", applied.unwrap_or_else(|| "none".into()))}</span>
                {if adds.is_empty() {
                    view! { <span class="muted">" none — the database already has them."</span> }.into_any()
                } else {
                    view! { <ul class="mono">{adds.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}</ul> }.into_any()
                }}
            </div>
        })
    };

    view! {
        <form class="golden-path" data-testid="template-form" data-template=template.slug()
            on:submit=move |ev| { ev.prevent_default(); run.run(false); }>
            {inputs}
            {adds}
            <div class="form-actions">
                <button type="submit" data-testid="preview-button" disabled=move || busy.get()>"Preview"</button>
                {move || preview.with(Option::is_some).then(|| view! {
                    <button type="button" class="primary" data-testid="submit-button" disabled=move || busy.get()
                        on:click=move |_| run.run(true)>"Open pull request"</button>
                })}
                {move || busy.get().then_some(view! { <span class="muted" aria-busy="true">"Working…"</span> })}
            </div>
        </form>
        {move || failure.get().map(|error| view! { <p class="error-inline" role="alert" data-testid="form-error">{error.to_string()}</p> })}
        {move || opened.get().map(|pr| pull_outcome(&pr))}
        {move || preview.with(|p| p.as_ref().map(change_view))}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&'static str, &str)]) -> Values {
        pairs.iter().map(|(k, v)| (*k, (*v).to_string())).collect()
    }

    fn envs() -> Vec<String> {
        vec!["dev".into(), "prod".into()]
    }

    #[test]
    fn a_create_deployment_body_trims_values_and_splits_the_databases() {
        let form = body(
            Template::CreateDeployment,
            &values(&[
                ("environment", " dev "),
                ("build", "3f2a9c1"),
                ("databases", "payments, ,payments-cache"),
            ]),
            &envs(),
        );
        let Ok(form) = form else {
            panic!("a valid form is accepted: {form:?}");
        };
        assert_eq!(
            serde_json::to_value(&form).ok(),
            Some(serde_json::json!({
                "environment": "dev",
                "build": "3f2a9c1",
                "databases": ["payments", "payments-cache"],
            }))
        );
    }

    #[test]
    fn an_onboard_body_reads_the_checkbox_and_sends_no_build() {
        let form = body(
            Template::OnboardService,
            &values(&[
                ("name", "invoices"),
                ("owner", "payments"),
                ("description", "Sends invoices."),
                ("template", "go-service"),
                ("template_version", "1.4.0"),
                ("auto_deploy", "true"),
            ]),
            &envs(),
        );
        let json = form.ok().and_then(|f| serde_json::to_value(f).ok());
        assert_eq!(
            json.as_ref()
                .map(|j| (j["auto_deploy"].clone(), j["build"].clone())),
            Some((serde_json::json!(true), serde_json::Value::Null))
        );
    }

    #[test]
    fn a_body_the_server_would_refuse_names_the_field_before_anything_is_sent() {
        let refused = |template, pairs: &[(&'static str, &str)]| {
            body(template, &values(pairs), &envs()).map_err(|e| e.field)
        };
        assert_eq!(
            refused(
                Template::AddDatabase,
                &[("environment", "dev"), ("name", "cache"), ("size", "huge")]
            ),
            Err("size")
        );
        assert_eq!(
            refused(
                Template::ApplySchema,
                &[
                    ("environment", "staging"),
                    ("database", "payments"),
                    ("version", "0004")
                ]
            ),
            Err("environment")
        );
        // A missing field is an empty one, and says which.
        assert_eq!(refused(Template::OnboardService, &[]), Err("name"));
    }
}
