//! From a request to a [`Change`]: the golden paths, Promote and Rollback. Each validates its form with the
//! same pure functions the browser runs, then checks what only the server knows (teams, green builds,
//! existing files, published schema versions), reads the files it changes from main and renders their new
//! content from the resource types. Nothing here writes.

use shared::auth::{AccountKind, Identity};
use shared::crd::{DatabaseSchema, Release};
use shared::delivery::{
    AddDatabaseForm, ApplySchemaForm, BASE_BRANCH, CreateDeploymentForm, DEV, FieldError, Intent,
    MovePreview, NO_BUILD_YET, OnboardForm, PROD, RenderedFile, VersionRef, binding,
    component_path, database_path, migrations_up_to, new_release, pin_release, release_path,
    render_database, render_onboard, render_release, render_schema, schema, schema_path,
    schema_version_of, validate_add_database, validate_apply_schema, validate_create_deployment,
    validate_onboard,
};
use shared::fleet::ServiceSummary;

use super::pull::Change;
use super::{Delivery, Error, Result, forge};
use crate::fleet::FleetModel;

/// Who asks, and what Tower knows: the inputs every plan reads.
pub struct Planner<'a> {
    /// Delivery's state.
    pub delivery: &'a Delivery,
    /// The fleet model.
    pub fleet: &'a FleetModel,
    /// The signed-in user.
    pub user: &'a Identity,
}

fn rendering(error: serde_saphyr::SerializeError) -> Error {
    Error::Internal(anyhow::Error::new(error).context("rendering YAML"))
}

fn unreadable(path: &str) -> Error {
    Error::Internal(anyhow::anyhow!("{path} on main does not parse"))
}

/// The registry images are pushed to, from an image a Release already names (`ghcr.io/acme/payments:…`).
fn registry_of(image: &str) -> Option<String> {
    let repository = image.rsplit_once(':').map(|(r, _)| r).unwrap_or(image);
    repository.rsplit_once('/').map(|(r, _)| r.to_string())
}

impl Planner<'_> {
    fn environments(&self) -> Vec<String> {
        self.fleet.environments()
    }

    fn service(&self, name: &str) -> Result<ServiceSummary> {
        self.fleet
            .service(name)
            .ok_or_else(|| Error::NotFound(format!("service {name}")))
    }

    fn registry(&self) -> Option<String> {
        self.fleet.services().iter().find_map(|s| {
            self.fleet
                .service_detail(&s.name)?
                .cards
                .iter()
                .find_map(|c| registry_of(&c.release.as_ref()?.image))
        })
    }

    async fn read(&self, path: &str) -> Result<Option<String>> {
        self.delivery
            .github()
            .file(&self.delivery.repository(), path, BASE_BRANCH)
            .await
            .map_err(forge("reading main"))
    }

    async fn read_release(
        &self,
        service: &str,
        environment: &str,
    ) -> Result<Option<(Release, String)>> {
        let path = release_path(service, environment);
        match self.read(&path).await? {
            Some(text) => {
                let release: Release =
                    serde_saphyr::from_str(&text).map_err(|_| unreadable(&path))?;
                Ok(Some((release, text)))
            }
            None => Ok(None),
        }
    }

    fn footer(&self, service: &str) -> String {
        let base = self.delivery.config().public_url.trim_end_matches('/');
        format!(
            "Requested in Tower by @{} ({}). Merge to apply; the operators and Argo CD take it from there.\n\n\
             [Open {service} in Tower]({base}/services/{service})",
            self.user.login, self.user.name
        )
    }

    fn files_list(files: &[RenderedFile]) -> String {
        files
            .iter()
            .map(|f| {
                let verb = if f.previous_content.is_some() {
                    "updates"
                } else {
                    "adds"
                };
                format!("- {verb} `{}`\n", f.path)
            })
            .collect()
    }

    /// Onboard Service: a Component and its first dev Release.
    pub async fn onboard(&self, form: &OnboardForm) -> Result<Change> {
        validate_onboard(form)?;
        shared::delivery::validate_scaffold(form, &self.delivery.config().scaffolds)?;
        let admin = self.user.kind == AccountKind::Admin;
        let services = self.fleet.services();
        let known =
            services.iter().any(|s| s.owner == form.owner) || self.user.in_team(&form.owner);
        if !known {
            return Err(
                FieldError::new("owner", format!("There is no team {}.", form.owner)).into(),
            );
        }
        if !admin && !self.user.in_team(&form.owner) {
            return Err(Error::Forbidden(format!(
                "Members of {} can onboard services for {}.",
                form.owner, form.owner
            )));
        }
        if services.iter().any(|s| s.name == form.name)
            || self.read(&component_path(&form.name)).await?.is_some()
        {
            return Err(
                FieldError::new("name", format!("A service named {} exists.", form.name)).into(),
            );
        }
        let builds = self.delivery.builds();
        let version = match &form.build {
            Some(build) => Some(
                builds
                    .find_green(&form.name, build)
                    .ok_or_else(|| {
                        FieldError::new(
                            "build",
                            format!("{build} is not a green build of {}.", form.name),
                        )
                    })?
                    .version,
            ),
            None => builds.green(&form.name).first().map(|b| b.version.clone()),
        };
        let context = self.delivery.render_context(self.registry());
        let files = render_onboard(form, version.as_deref(), &context).map_err(rendering)?;
        let first = match &version {
            Some(version) => format!("build `{version}`"),
            None => format!(
                "no build yet (`{NO_BUILD_YET}`){}",
                if form.auto_deploy {
                    "; the release operator moves dev to the first green build"
                } else {
                    ""
                }
            ),
        };
        let body = format!(
            "Onboards **{name}**, owned by team `{owner}`, scaffolded from `{template}` {template_version}.\n\n\
             - Component: repository `{org}/{name}`\n- dev Release: {first}, auto-deploy {auto}\n\n{files}\n{footer}",
            name = form.name,
            owner = form.owner,
            template = form.template,
            template_version = form.template_version,
            org = context.organisation,
            auto = if form.auto_deploy { "on" } else { "off" },
            files = Self::files_list(&files),
            footer = self.footer(&form.name),
        );
        Ok(Change {
            intent: Intent::Onboard {
                service: form.name.clone(),
            },
            title: format!("Onboard {}", form.name),
            body,
            files,
        })
    }

    /// Create deployment: a Release of a green build in an environment, with database bindings.
    pub async fn create_deployment(
        &self,
        service: &str,
        form: &CreateDeploymentForm,
    ) -> Result<Change> {
        validate_create_deployment(form, &self.environments())?;
        self.service(service)?;
        let build = self
            .delivery
            .builds()
            .find_green(service, &form.build)
            .ok_or_else(|| {
                FieldError::new(
                    "build",
                    format!("{} is not a green build of {service}.", form.build),
                )
            })?;
        for database in &form.databases {
            if self
                .read(&database_path(database, &form.environment))
                .await?
                .is_none()
            {
                return Err(FieldError::new(
                    "databases",
                    format!(
                        "There is no database {database} in {}; add it first.",
                        form.environment
                    ),
                )
                .into());
            }
        }
        let existing = self.read_release(service, &form.environment).await?;
        let bindings = form
            .databases
            .iter()
            .map(|d| binding(d, existing.as_ref().map(|(r, _)| r)))
            .collect();
        let release = match &existing {
            Some((release, _)) => {
                let mut release = pin_release(release, &build.version);
                release.spec.databases = bindings;
                release
            }
            None => {
                let context = self.delivery.render_context(self.registry());
                new_release(
                    service,
                    &form.environment,
                    &build.version,
                    form.environment == DEV,
                    bindings,
                    &context,
                )
            }
        };
        let files = render_release(&release, existing.map(|(_, text)| text)).map_err(rendering)?;
        if files
            .iter()
            .all(|f| f.previous_content.as_deref() == Some(f.content.as_str()))
        {
            return Err(Error::Conflict(format!(
                "{service} in {} already runs {} with these databases",
                form.environment, build.version
            )));
        }
        let body = format!(
            "Deploys **{service}** `{version}` to {env}{message}.\n\n- image and chart pinned to `{version}`\n- databases: {dbs}\n\n{files}\n{footer}",
            version = build.version,
            env = form.environment,
            message = build
                .message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default(),
            dbs = if form.databases.is_empty() {
                "none".to_string()
            } else {
                form.databases.join(", ")
            },
            files = Self::files_list(&files),
            footer = self.footer(service),
        );
        Ok(Change {
            intent: Intent::Deploy {
                service: service.into(),
                environment: form.environment.clone(),
            },
            title: format!("Deploy {service} {} to {}", build.version, form.environment),
            body,
            files,
        })
    }

    /// Add Database: a Database in an environment.
    pub async fn add_database(&self, service: &str, form: &AddDatabaseForm) -> Result<Change> {
        validate_add_database(form, &self.environments())?;
        self.service(service)?;
        if self
            .read(&database_path(&form.name, &form.environment))
            .await?
            .is_some()
        {
            return Err(FieldError::new(
                "name",
                format!(
                    "There is a database {} in {} already.",
                    form.name, form.environment
                ),
            )
            .into());
        }
        let files = render_database(service, form).map_err(rendering)?;
        let body = format!(
            "Adds a **{size}** Postgres database `{name}` in {env} for {service}.\n\nBind it with Create deployment once it is available.\n\n{files}\n{footer}",
            size = form.size,
            name = form.name,
            env = form.environment,
            files = Self::files_list(&files),
            footer = self.footer(service),
        );
        Ok(Change {
            intent: Intent::Database {
                service: service.into(),
                environment: form.environment.clone(),
                database: form.name.clone(),
            },
            title: format!("Add database {} in {}", form.name, form.environment),
            body,
            files,
        })
    }

    /// The published schema versions of `service`: one per migration on main.
    pub async fn published_migrations(&self, service: &str) -> Result<Vec<String>> {
        let summary = self.service(service)?;
        self.delivery
            .github()
            .migrations_at(&summary.repository, BASE_BRANCH)
            .await
            .map_err(forge("reading the service's migrations"))
    }

    /// Apply database schema: a DatabaseSchema at a published version; it only moves forward.
    pub async fn apply_schema(&self, service: &str, form: &ApplySchemaForm) -> Result<Change> {
        validate_apply_schema(form, &self.environments())?;
        let database = if form.database.is_empty() {
            service.to_string()
        } else {
            form.database.clone()
        };
        if self
            .read(&database_path(&database, &form.environment))
            .await?
            .is_none()
        {
            return Err(FieldError::new(
                "database",
                format!("There is no database {database} in {}.", form.environment),
            )
            .into());
        }
        let published = self.published_migrations(service).await?;
        let migrations = migrations_up_to(&published, &form.version).ok_or_else(|| {
            let versions: Vec<&str> = published
                .iter()
                .filter_map(|m| schema_version_of(m))
                .collect();
            FieldError::new(
                "version",
                format!(
                    "{} is not a published schema version of {service}; published: {}.",
                    form.version,
                    if versions.is_empty() {
                        "none".to_string()
                    } else {
                        versions.join(", ")
                    }
                ),
            )
        })?;
        let path = schema_path(&database, &form.environment);
        let existing = match self.read(&path).await? {
            Some(text) => {
                let parsed: DatabaseSchema =
                    serde_saphyr::from_str(&text).map_err(|_| unreadable(&path))?;
                Some((parsed, text))
            }
            None => None,
        };
        if let Some((current, _)) = &existing {
            let number = |v: &str| v.parse::<u64>().unwrap_or(0);
            if number(&current.spec.version) > number(&form.version) {
                return Err(FieldError::new(
                    "version",
                    format!(
                        "The schema only moves forward: {database} in {} is at {}.",
                        form.environment, current.spec.version
                    ),
                )
                .into());
            }
        }
        let adds: Vec<String> = migrations
            .iter()
            .filter(|m| {
                !existing
                    .as_ref()
                    .is_some_and(|(s, _)| s.spec.migrations.contains(m))
            })
            .cloned()
            .collect();
        if adds.is_empty() {
            return Err(Error::Conflict(format!(
                "{database} in {} already has schema {}",
                form.environment, form.version
            )));
        }
        let rendered = schema(
            service,
            &database,
            &form.environment,
            &form.version,
            migrations,
            existing.as_ref().map(|(s, _)| s),
        );
        let files = render_schema(&rendered, existing.map(|(_, text)| text)).map_err(rendering)?;
        let body = format!(
            "Applies schema **{version}** to the {env} database `{database}` of {service}. It adds:\n\n{adds}\n{files}\n{footer}",
            version = form.version,
            env = form.environment,
            adds = adds
                .iter()
                .map(|m| format!("- `{m}`\n"))
                .collect::<String>(),
            files = Self::files_list(&files),
            footer = self.footer(service),
        );
        Ok(Change {
            intent: Intent::Schema {
                service: service.into(),
                environment: form.environment.clone(),
                database,
            },
            title: format!(
                "Apply {service} schema {} to {}",
                form.version, form.environment
            ),
            body,
            files,
        })
    }

    fn version_ref(release: &Release) -> VersionRef {
        VersionRef {
            version: release.spec.version.clone(),
            image: format!(
                "{}:{}",
                release.spec.image.repository, release.spec.image.tag
            ),
            chart_revision: release.spec.chart.revision.clone(),
        }
    }

    /// Prod's Release, or a 404 saying how to create it.
    async fn prod_release(&self, service: &str) -> Result<(Release, String)> {
        self.read_release(service, PROD).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "a prod Release of {service} (use Create deployment)"
            ))
        })
    }

    async fn pending(&self, service: &str) -> Vec<shared::delivery::PullRequestView> {
        match self.delivery.pulls().await {
            Ok(pulls) => pulls
                .into_iter()
                .filter(|p| {
                    p.state == shared::delivery::PullState::Open
                        && p.service.as_deref() == Some(service)
                        && p.environment.as_deref() == Some(PROD)
                })
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "could not list pending pull requests");
                Vec::new()
            }
        }
    }

    /// Promote: prod's Release set to what dev runs now, image and chart pinned to that commit.
    pub async fn promote(&self, service: &str) -> Result<(Change, MovePreview)> {
        let summary = self.service(service)?;
        let detail = self
            .fleet
            .service_detail(service)
            .ok_or_else(|| Error::NotFound(format!("service {service}")))?;
        let dev = detail
            .cards
            .iter()
            .find(|c| c.environment == DEV)
            .and_then(|c| {
                c.running_version
                    .clone()
                    .or_else(|| c.release.as_ref().map(|r| r.version.clone()))
            })
            .ok_or_else(|| Error::NotFound(format!("a version of {service} running in dev")))?;
        let (prod, text) = self.prod_release(service).await?;
        if prod.spec.version == dev {
            return Err(Error::Conflict(format!(
                "prod already runs {dev}, as dev does"
            )));
        }
        let moved = pin_release(&prod, &dev);
        let files = render_release(&moved, Some(text)).map_err(rendering)?;
        let github = self.delivery.github();
        let commits = github
            .commits_between(&summary.repository, &prod.spec.version, &dev)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, service, "could not compare versions for a promote");
                Vec::new()
            });
        // What the prod database lacks of the code being promoted: offer the schema pull request first.
        let (missing, schema_first) = match moved.spec.databases.first() {
            Some(bound) => {
                let code = github
                    .migrations_at(&summary.repository, &dev)
                    .await
                    .map_err(forge("reading the service's migrations"))?;
                let applied = match self.read(&schema_path(&bound.database, PROD)).await? {
                    Some(text) => serde_saphyr::from_str::<DatabaseSchema>(&text)
                        .map(|s| s.spec.migrations)
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                let missing: Vec<String> = code
                    .iter()
                    .filter(|m| !applied.contains(m))
                    .cloned()
                    .collect();
                let schema_first = (!missing.is_empty())
                    .then(|| code.last().and_then(|m| schema_version_of(m)))
                    .flatten()
                    .map(|version| ApplySchemaForm {
                        environment: PROD.into(),
                        database: bound.database.clone(),
                        version: version.into(),
                    });
                (missing, schema_first)
            }
            None => (Vec::new(), None),
        };
        let from = Self::version_ref(&prod);
        let to = Self::version_ref(&moved);
        let body = format!(
            "Promotes **{service}** in prod from `{from_v}` to `{to_v}`, what dev runs now.\n\n\
             - image: `{from_i}` → `{to_i}`\n- chart: `{from_c}` → `{to_c}` (pinned to the image's commit)\n\
             - bindings unchanged\n\n**What changed** ({count} commits):\n{commits}{warning}\n{footer}",
            from_v = from.version,
            to_v = to.version,
            from_i = from.image,
            to_i = to.image,
            from_c = from.chart_revision,
            to_c = to.chart_revision,
            count = commits.len(),
            commits = commits
                .iter()
                .map(|c| format!("- `{}` {} ({})\n", c.sha, c.message, c.author))
                .collect::<String>(),
            warning = if missing.is_empty() {
                String::new()
            } else {
                format!(
                    "\n**Migrations the prod database lacks:** {}. Apply the schema first.\n",
                    missing.join(", ")
                )
            },
            footer = self.footer(service),
        );
        let change = Change {
            intent: Intent::Promote {
                service: service.into(),
            },
            title: format!("Promote {service} to {dev} in prod"),
            body,
            files,
        };
        let preview = MovePreview {
            service: service.into(),
            environment: PROD.into(),
            from,
            to,
            commits,
            missing_migrations: missing,
            schema_first,
            change: change.preview(),
            pending: self.pending(service).await,
        };
        Ok((change, preview))
    }

    /// Rollback: prod's Release back to the version that ran before, bindings kept; the schema stays.
    pub async fn rollback(&self, service: &str) -> Result<(Change, MovePreview)> {
        let summary = self.service(service)?;
        let (prod, text) = self.prod_release(service).await?;
        let card_previous = self
            .fleet
            .service_detail(service)
            .and_then(|d| d.cards.into_iter().find(|c| c.environment == PROD))
            .and_then(|c| c.previous_version)
            .filter(|v| *v != prod.spec.version);
        let previous = match card_previous {
            Some(previous) => previous,
            // Argo CD's history may be short (a fresh install); the Release file's history is not.
            None => self
                .delivery
                .releases()
                .versions_of(service, PROD)
                .await?
                .into_iter()
                .find(|v| *v != prod.spec.version)
                .ok_or_else(|| {
                    Error::NotFound(format!("a version of {service} that ran in prod before"))
                })?,
        };
        let moved = pin_release(&prod, &previous);
        let files = render_release(&moved, Some(text)).map_err(rendering)?;
        let commits = self
            .delivery
            .github()
            .commits_between(&summary.repository, &previous, &prod.spec.version)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, service, "could not compare versions for a rollback");
                Vec::new()
            });
        let from = Self::version_ref(&prod);
        let to = Self::version_ref(&moved);
        let body = format!(
            "Rolls **{service}** in prod back from `{from_v}` to `{to_v}`, the version that ran before.\n\n\
             - image: `{from_i}` → `{to_i}`\n- chart: `{from_c}` → `{to_c}` (rolls back with the image)\n\
             - bindings unchanged; the database schema does not move back\n\n**Taken out** ({count} commits):\n{commits}\n{footer}",
            from_v = from.version,
            to_v = to.version,
            from_i = from.image,
            to_i = to.image,
            from_c = from.chart_revision,
            to_c = to.chart_revision,
            count = commits.len(),
            commits = commits
                .iter()
                .map(|c| format!("- `{}` {} ({})\n", c.sha, c.message, c.author))
                .collect::<String>(),
            footer = self.footer(service),
        );
        let change = Change {
            intent: Intent::Rollback {
                service: service.into(),
            },
            title: format!("Roll back {service} to {previous} in prod"),
            body,
            files,
        };
        let preview = MovePreview {
            service: service.into(),
            environment: PROD.into(),
            from,
            to,
            commits,
            missing_migrations: Vec::new(),
            schema_first: None,
            change: change.preview(),
            pending: self.pending(service).await,
        };
        Ok((change, preview))
    }
}
