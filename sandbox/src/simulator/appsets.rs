//! The ApplicationSet controller over all five sets, and Argo CD syncing the platform's own Applications.
//!
//! A push to `application-repositories` wakes the controller ([`Inner::generate`]): it diffs main against the
//! commit it last generated from and asks the generators ([`crate::fixtures::argocd::generators`]) what the
//! changed files make, before and after. Applications no longer generated are deleted (the set preserves
//! their resources); new ones are created unsynced; changed ones are pointed at the new template (a chart
//! version, a schema package) or, when only their file's content moved, marked OutOfSync. A values file
//! changing makes its component's Application OutOfSync. `taskapp-catalog`'s Applications are pointed at
//! the commit their environments file pins ([`Inner::point_application`]), with their canaries.
//!
//! Argo CD's automated policy then syncs each OutOfSync Application ([`Inner::finish_platform_sync`]): the
//! sync is refused, as Argo CD refuses it, when a resource's kind needs a CustomResourceDefinition the
//! destination cluster does not have yet (none of its Applications that installs it is Healthy), and it is
//! retried with the set's backoff (5 s, doubling, at most 3 min); a successful sync applies a platform
//! resource's file to the management cluster, and leaves a component or package Progressing until its
//! workloads are ready ([`Action::Settled`]), after which the CRDs it installs count as on its cluster.

use std::collections::BTreeSet;

use anyhow::Context as _;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::argo::APPLICATION;
use super::{Action, Inner, Set, State, secs, str_at};
use crate::fixtures::argocd::applications::{self, Resource};
use crate::fixtures::argocd::generators::{self, Cluster, Generated};
use crate::fixtures::stamp;
use crate::world::{ARGOCD_NAMESPACE, GITOPS_REPOSITORY};

/// How long after a successful sync a Crossplane package is Healthy: the package manager unpacks it and
/// starts the provider.
const PACKAGE_SETTLE: i64 = 15;
/// The longest a fresh cluster's Applications wait before Argo CD first syncs each: it syncs what an
/// ApplicationSet generated in no declared order.
const BRING_UP_SPREAD: (u64, u64) = (1, 20);

/// An Application's sources: `spec.sources`, or its one `spec.source`.
pub(super) fn sources_of(app: &Value) -> Vec<Value> {
    match app.pointer("/spec/sources").and_then(Value::as_array) {
        Some(sources) => sources.clone(),
        None => app.pointer("/spec/source").cloned().into_iter().collect(),
    }
}

/// The revisions an Application was last compared with, joined (`1.9.0,3f2a…`): what tells one sync from
/// the next.
fn compared_revisions(app: &Value) -> String {
    match app
        .pointer("/status/sync/revisions")
        .and_then(Value::as_array)
    {
        Some(revisions) => revisions
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(","),
        None => str_at(app, "/status/sync/revision").to_owned(),
    }
}

/// The resources an Application lists in `status.resources`.
fn resources_of(app: &Value) -> Vec<Resource> {
    app.pointer("/status/resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Resource::of_status)
        .collect()
}

/// Argo CD's wait before retry `count` (1 for the first): `5s`, doubling, at most `3m`.
fn backoff(count: u32) -> i64 {
    let doubled = 5_i64.saturating_mul(1_i64 << count.saturating_sub(1).min(16));
    doubled.min(180)
}

impl Inner {
    /// The commit at the head of main of `application-repositories`.
    pub(super) fn gitops_head(&self) -> anyhow::Result<String> {
        self.world
            .repositories
            .git(GITOPS_REPOSITORY)
            .resolve("refs/heads/main")?
            .context("application-repositories has no main")
    }

    /// The CRDs on each cluster at the start: those of every Application that is Healthy.
    pub(super) fn installed_crds(&self) -> BTreeSet<(String, String)> {
        let Some(management) = self.management() else {
            return BTreeSet::new();
        };
        // Picked rather than listed: at scale there are tens of thousands of Applications.
        management
            .pick(APPLICATION.0, APPLICATION.1, None, |app| {
                (str_at(app, "/status/health/status") == "Healthy")
                    .then(|| Some((generators::destination_cluster(app)?, resources_of(app))))
                    .flatten()
            })
            .into_iter()
            .flat_map(|(cluster, resources)| {
                resources
                    .into_iter()
                    .filter(|r| r.kind == "CustomResourceDefinition")
                    .map(move |r| (cluster.clone(), r.name))
            })
            .collect()
    }

    /// The clusters Argo CD has secrets for.
    fn registered_clusters(&self) -> Vec<Cluster> {
        self.management()
            .map(|management| {
                Cluster::registered(&management.list_namespaced("v1", "Secret", ARGOCD_NAMESPACE))
            })
            .unwrap_or_default()
    }

    /// The ApplicationSet controller: regenerates the Applications of every file changed on main since it
    /// last looked.
    pub(super) fn generate(&self, state: &mut State, at: Timestamp) -> anyhow::Result<()> {
        state.generate_queued = false;
        let head = self.gitops_head()?;
        let seen = std::mem::replace(&mut state.gitops_seen, head.clone());
        if head == seen || seen.is_empty() {
            return Ok(());
        }
        let git = self.world.repositories.git(GITOPS_REPOSITORY);
        let diff = git.run(&["diff", "--name-status", "--no-renames", "-z", &seen, &head])?;
        let mut fields = diff.split('\0').filter(|field| !field.is_empty());
        let mut changes = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            changes.push((status.to_owned(), path.to_owned()));
        }
        let clusters = self.registered_clusters();
        let mut touched = BTreeSet::new();
        for (status, path) in changes {
            let result = if path.starts_with("values/") {
                self.values_changed(state, at, &path)
            } else {
                self.regenerate(state, at, (&seen, &head), &status, &path, &clusters)
                    .map(|sets| touched.extend(sets))
            };
            if let Err(error) = result {
                state.note(at, format!("applicationset: {path}: {error:#}"));
            }
        }
        if let Some(management) = self.management() {
            for set in touched {
                crate::fixtures::argocd::refresh_set_status(&management, set)?;
            }
        }
        Ok(())
    }

    /// The Applications of `path` (changed with git's `status` between `seen` and `head`) as they were and
    /// as they are: the gone deleted, the others created or changed. Returns the sets touched.
    fn regenerate(
        &self,
        state: &mut State,
        at: Timestamp,
        (seen, head): (&str, &str),
        status: &str,
        path: &str,
        clusters: &[Cluster],
    ) -> anyhow::Result<BTreeSet<Set>> {
        if !Set::ALL.into_iter().any(|set| set.reads(path)) {
            return Ok(BTreeSet::new());
        }
        let git = self.world.repositories.git(GITOPS_REPOSITORY);
        let read = |revision: &str| -> anyhow::Result<Option<Value>> {
            let Some(text) = git.try_run(&["show", &format!("{revision}:{path}")])? else {
                return Ok(None);
            };
            serde_saphyr::from_str(&text)
                .map(Some)
                .with_context(|| format!("{path} at {revision} is not YAML"))
        };
        let generated_at = |revision: &str| -> anyhow::Result<Vec<Generated>> {
            Ok(read(revision)?
                .map(|file| generators::generate_all(path, &file, clusters))
                .unwrap_or_default())
        };
        let before = if status == "A" {
            Vec::new()
        } else {
            generated_at(seen)?
        };
        let after = if status == "D" {
            Vec::new()
        } else {
            generated_at(head)?
        };
        let mut touched = BTreeSet::new();
        for gone in before
            .iter()
            .filter(|old| !after.iter().any(|new| new.name == old.name))
        {
            self.delete_application(state, at, &gone.name)?;
            touched.insert(gone.set);
        }
        for generated in &after {
            self.upsert(state, at, generated, head)?;
            touched.insert(generated.set);
        }
        Ok(touched)
    }

    /// Deletes a generated Application the set no longer makes; its resources stay
    /// (`preserveResourcesOnDeletion`).
    fn delete_application(
        &self,
        state: &mut State,
        at: Timestamp,
        name: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        if management
            .get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), name)
            .is_some()
        {
            management.delete(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), name)?;
            state.syncing.remove(name);
            state.retries.remove(name);
            state.note(at, format!("applicationset: deleted {name}"));
        }
        Ok(())
    }

    /// Creates the Application of `generated` unsynced, or brings it to the template and marks it OutOfSync;
    /// either way the automated policy syncs it next.
    fn upsert(
        &self,
        state: &mut State,
        at: Timestamp,
        generated: &Generated,
        head: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let Some(desired) = applications::desired(generated) else {
            // taskapp-catalog: the Application deploys the commit the environments file pins.
            let service = generated.text("/component");
            let environment = generated.text("/environment");
            let version = generated.text("/targetRevision");
            let Some(sha) = self.world.repositories.git(service).resolve(version)? else {
                state.note(
                    at,
                    format!("applicationset: {} names unknown {version}", generated.path),
                );
                return Ok(());
            };
            return self.point_application(
                state,
                at,
                service,
                environment,
                &generated.cluster.name,
                &sha,
            );
        };
        let name = generated.name.as_str();
        let Some(current) =
            management.get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), name)
        else {
            let mut created = applications::unsynced(generated, &desired, head, at);
            self.own(&management, &mut created, generated.set);
            management.apply(created)?;
            state.note(at, format!("applicationset: created {name}"));
            state.schedule(secs(at, 3), Action::SyncStart { app: name.into() });
            return Ok(());
        };
        let changed_spec = current.get("spec") != Some(&desired.spec);
        self.update(
            &management,
            APPLICATION,
            Some(ARGOCD_NAMESPACE),
            name,
            |app| {
                for (key, wanted) in [
                    ("labels", &desired.labels),
                    ("annotations", &desired.annotations),
                ] {
                    if let Some(wanted) = wanted.as_object() {
                        for (k, v) in wanted {
                            app["metadata"][key][k] = v.clone();
                        }
                    }
                }
                if changed_spec {
                    app["spec"] = desired.spec.clone();
                    let health: Vec<String> = desired
                        .resources
                        .iter()
                        .map(|r| resource_health(app, r).unwrap_or_else(|| "Missing".to_owned()))
                        .collect();
                    app["status"]["resources"] = json!(
                        desired
                            .resources
                            .iter()
                            .zip(health)
                            .map(|(r, health)| r.status("OutOfSync", &health))
                            .collect::<Vec<_>>()
                    );
                }
                out_of_sync(app, at);
            },
        )?;
        state.note(
            at,
            format!(
                "applicationset: {name} {}: OutOfSync",
                if changed_spec {
                    "changed"
                } else {
                    "has a new file"
                }
            ),
        );
        schedule_sync(state, at, name);
        Ok(())
    }

    /// A component's values changed: its Application on that cluster is OutOfSync.
    fn values_changed(&self, state: &mut State, at: Timestamp, path: &str) -> anyhow::Result<()> {
        let Some([component, file]) = path
            .strip_prefix("values/")
            .map(|rest| rest.splitn(2, '/').collect::<Vec<_>>())
            .and_then(|parts| <[&str; 2]>::try_from(parts).ok())
        else {
            return Ok(());
        };
        let Some(cluster) = file.strip_suffix(".yaml") else {
            return Ok(());
        };
        let name = format!("infra-{component}-{cluster}");
        let management = self.management().context("no management cluster")?;
        if self
            .update(
                &management,
                APPLICATION,
                Some(ARGOCD_NAMESPACE),
                &name,
                |app| {
                    out_of_sync(app, at);
                },
            )?
            .is_some()
        {
            state.note(
                at,
                format!("applicationset: {name}'s values changed: OutOfSync"),
            );
            schedule_sync(state, at, &name);
        }
        Ok(())
    }

    /// Points `app`'s owner reference at its ApplicationSet's uid on the cluster.
    pub(super) fn own(
        &self,
        management: &crate::apiserver::ClusterStore,
        app: &mut Value,
        set: Set,
    ) {
        if let Some(uid) = management
            .get(
                APPLICATION.0,
                "ApplicationSet",
                Some(ARGOCD_NAMESPACE),
                set.name(),
            )
            .and_then(|s| {
                s.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
        {
            app["metadata"]["ownerReferences"][0]["uid"] = json!(uid);
        }
    }

    /// Lists `set`'s Applications in its status again (after creating or deleting one).
    pub(super) fn refresh_set(&self, set: Set) {
        if let Some(management) = self.management()
            && let Err(error) = crate::fixtures::argocd::refresh_set_status(&management, set)
        {
            tracing::warn!(
                error = format!("{error:#}"),
                set = set.name(),
                "could not refresh an ApplicationSet's status"
            );
        }
    }

    /// Copies `app`'s sync and health into its ApplicationSet's status.
    pub(super) fn refresh_set_entry(&self, app: &str) {
        if let Some(management) = self.management()
            && let Err(error) = crate::fixtures::argocd::refresh_set_entry(&management, app)
        {
            tracing::warn!(
                error = format!("{error:#}"),
                app,
                "could not refresh an ApplicationSet's status"
            );
        }
    }

    /// Argo CD finishes a sync of a platform Application (not a service's): refused when a kind's CRD is not
    /// on the destination yet, else Synced, the file applied for a platform resource, a component or package
    /// Progressing until its workloads are ready.
    pub(super) fn finish_platform_sync(
        &self,
        state: &mut State,
        at: Timestamp,
        set: Set,
        current: &Value,
    ) -> anyhow::Result<()> {
        let name = str_at(current, "/metadata/name").to_owned();
        let head = self.gitops_head()?;
        let sources = sources_of(current);
        // What the sync started with; a request without one (Tower's) syncs the targets now.
        let asked: Vec<String> = match current
            .pointer("/status/operationState/operation/sync/revisions")
            .and_then(Value::as_array)
        {
            Some(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            None => {
                vec![str_at(current, "/status/operationState/operation/sync/revision").to_owned()]
            }
        };
        let revisions: Vec<String> = applications::revisions(&sources, &head)
            .into_iter()
            .zip(
                asked
                    .iter()
                    .map(String::as_str)
                    .chain(std::iter::repeat("")),
            )
            .map(|(target, asked)| {
                let resolved = asked.len() == 40 && asked.bytes().all(|b| b.is_ascii_hexdigit());
                if resolved { asked.to_owned() } else { target }
            })
            .collect();
        let cluster = generators::destination_cluster(current).unwrap_or_default();
        let resources = resources_of(current);
        let lists = |crd: &str| {
            resources
                .iter()
                .any(|r| r.kind == "CustomResourceDefinition" && r.name == crd)
        };
        let missing: Vec<&Resource> = resources
            .iter()
            .filter(|r| {
                r.needs().is_some_and(|crd| {
                    !lists(&crd) && !state.installed.contains(&(cluster.clone(), crd))
                })
            })
            .collect();
        if !missing.is_empty() {
            return self.refuse_sync(state, at, current, &sources, &revisions, &missing);
        }
        state.retries.remove(&name);
        let management = self.management().context("no management cluster")?;
        let never_synced = current
            .pointer("/status/history")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        let moved = compared_revisions(current) != revisions.join(",")
            || str_at(current, "/status/health/status") != "Healthy"
            || never_synced;
        let settle = match set {
            Set::Infra => Some(
                crate::world::platform_component(str_at(
                    current,
                    &format!(
                        "/metadata/labels/{}",
                        shared::platform::PLATFORM_COMPONENT_LABEL.replace('/', "~1")
                    ),
                ))
                .map_or(20, |plan| plan.settle),
            ),
            Set::Packages => Some(PACKAGE_SETTLE),
            Set::Platform | Set::Schemas | Set::Catalog => None,
        }
        .filter(|_| moved);
        // What the workloads run now: an in-house component's image is tagged with its chart's version.
        let images = applications::images_of(current).filter(|images| !images.is_empty());
        let health = if settle.is_some() {
            "Progressing"
        } else {
            "Healthy"
        };
        let applied: Vec<Value> = resources.iter().map(Resource::applied).collect();
        self.update(&management, APPLICATION, Some(ARGOCD_NAMESPACE), &name, |a| {
            if let Some(map) = a.as_object_mut() {
                map.remove("operation");
            }
            let destination = a["spec"]["destination"].clone();
            let fields = applications::revision_fields(&sources, &revisions);
            let mut sync = json!({"status": "Synced", "comparedTo": {"destination": destination}});
            for (key, value) in fields {
                if key.starts_with("source") {
                    sync["comparedTo"][key] = value;
                } else {
                    sync[key] = value;
                }
            }
            a["status"]["sync"] = sync;
            if let Some(list) = a["status"]["resources"].as_array_mut() {
                for entry in list {
                    entry["status"] = json!("Synced");
                    if entry.get("health").is_some() {
                        entry["health"] = json!({"status": health});
                    }
                }
            }
            let operation = a["status"]["operationState"]["operation"].clone();
            let started = a["status"]["operationState"]["startedAt"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| stamp(at));
            let mut history = a["status"]["history"].as_array().cloned().unwrap_or_default();
            let id = history.iter().filter_map(|h| h["id"].as_i64()).max().unwrap_or(0) + 1;
            let mut entry = json!({
                "id": id,
                "deployStartedAt": started,
                "deployedAt": stamp(at),
                "initiatedBy": operation.get("initiatedBy").cloned().unwrap_or_else(|| json!({"automated": true})),
            });
            if let Some(map) = entry.as_object_mut() {
                map.extend(applications::revision_fields(&sources, &revisions));
            }
            history.push(entry);
            let excess = history.len().saturating_sub(super::argo::HISTORY_KEPT);
            history.drain(..excess);
            a["status"]["history"] = json!(history);
            let retry_count = a["status"]["operationState"].get("retryCount").cloned();
            a["status"]["operationState"] = json!({
                "operation": operation,
                "phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "startedAt": started,
                "finishedAt": stamp(at),
                "syncResult": applications::sync_result(applied.clone(), &sources, &revisions),
            });
            if let Some(count) = retry_count {
                a["status"]["operationState"]["retryCount"] = count;
            }
            if let Some(map) = a["status"].as_object_mut() {
                map.remove("conditions");
            }
            if a["status"]["health"]["status"] != health {
                a["status"]["health"] = json!({"status": health, "lastTransitionTime": stamp(at)});
            }
            if let Some(images) = &images {
                a["status"]["summary"]["images"] = json!(images);
            }
            a["status"]["reconciledAt"] = json!(stamp(at));
        })?;
        let short = revisions.last().map_or("", |r| &r[..7.min(r.len())]);
        state.note(at, format!("argocd: {name} Synced at {short}"));
        match settle {
            Some(seconds) => state.schedule(
                secs(at, seconds),
                Action::Settled {
                    app: name.clone(),
                    revisions: revisions.join(","),
                },
            ),
            None => self.install_crds(state, &cluster, &resources),
        }
        if set == Set::Platform {
            let directory = str_at(current, "/spec/source/path");
            let file = str_at(current, "/spec/source/directory/include");
            if let Some(revision) = revisions.first() {
                self.apply_platform_file(state, at, revision, &format!("{directory}/{file}"))?;
            }
        }
        self.refresh_set_entry(&name);
        Ok(())
    }

    /// Argo CD refuses the sync: the destination does not serve `missing`'s kinds. Failed with Argo CD's
    /// messages, OutOfSync, and retried after the backoff until the set's retry limit.
    fn refuse_sync(
        &self,
        state: &mut State,
        at: Timestamp,
        current: &Value,
        sources: &[Value],
        revisions: &[String],
        missing: &[&Resource],
    ) -> anyhow::Result<()> {
        let name = str_at(current, "/metadata/name").to_owned();
        let management = self.management().context("no management cluster")?;
        let count = state.retries.entry(name.clone()).or_insert(0);
        *count += 1;
        let count = *count;
        let limit = current
            .pointer("/spec/syncPolicy/retry/limit")
            .and_then(Value::as_u64)
            .map_or(5, |limit| u32::try_from(limit).unwrap_or(u32::MAX));
        let retrying = count <= limit;
        let retried = count.min(limit);
        let never_synced = current
            .pointer("/status/history")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        let results: Vec<Value> = missing.iter().map(|r| r.unknown_kind()).collect();
        let condition = missing
            .first()
            .map(|r| applications::missing_crd_message(r))
            .unwrap_or_default();
        self.update(
            &management,
            APPLICATION,
            Some(ARGOCD_NAMESPACE),
            &name,
            |a| {
                if let Some(map) = a.as_object_mut() {
                    map.remove("operation");
                }
                let operation_state = &mut a["status"]["operationState"];
                operation_state["phase"] = json!("Failed");
                operation_state["message"] = json!(format!(
                    "one or more synchronization tasks are not valid (retried {retried} times)."
                ));
                operation_state["finishedAt"] = json!(stamp(at));
                operation_state["retryCount"] = json!(retried);
                operation_state["syncResult"] =
                    applications::sync_result(results.clone(), sources, revisions);
                a["status"]["conditions"] = json!([{
                    "type": "SyncError",
                    "message": condition,
                    "lastTransitionTime": stamp(at),
                }]);
                a["status"]["sync"]["status"] = json!("OutOfSync");
                if never_synced {
                    a["status"]["health"] =
                        json!({"status": "Missing", "lastTransitionTime": stamp(at)});
                }
                if let Some(list) = a["status"]["resources"].as_array_mut() {
                    for entry in list {
                        entry["status"] = json!("OutOfSync");
                        if never_synced && entry.get("health").is_some() {
                            entry["health"] = json!({"status": "Missing"});
                        }
                    }
                }
                a["status"]["reconciledAt"] = json!(stamp(at));
            },
        )?;
        let crd = missing.first().and_then(|r| r.needs()).unwrap_or_default();
        if retrying {
            let wait = backoff(count);
            state.note(
                at,
                format!("argocd: {name} sync failed: no {crd} yet; retry {count} in {wait}s"),
            );
            state.schedule(secs(at, wait), Action::SyncStart { app: name.clone() });
        } else {
            state.note(
                at,
                format!("argocd: {name} sync failed: no {crd}; gave up after {retried} retries"),
            );
        }
        self.refresh_set_entry(&name);
        Ok(())
    }

    /// A component or package is ready after its sync to `revisions`: Healthy, and its CRDs are on its
    /// cluster from now on.
    pub(super) fn settled(
        &self,
        state: &mut State,
        at: Timestamp,
        app: &str,
        revisions: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let Some(current) =
            management.get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), app)
        else {
            return Ok(());
        };
        if compared_revisions(&current) != revisions
            || str_at(&current, "/status/sync/status") != "Synced"
        {
            return Ok(());
        }
        self.update(&management, APPLICATION, Some(ARGOCD_NAMESPACE), app, |a| {
            a["status"]["health"] = json!({"status": "Healthy", "lastTransitionTime": stamp(at)});
            if let Some(list) = a["status"]["resources"].as_array_mut() {
                for entry in list.iter_mut().filter(|e| e.get("health").is_some()) {
                    entry["health"] = json!({"status": "Healthy"});
                }
            }
        })?;
        let cluster = generators::destination_cluster(&current).unwrap_or_default();
        self.install_crds(state, &cluster, &resources_of(&current));
        state.note(at, format!("argocd: {app} Healthy"));
        self.refresh_set_entry(app);
        Ok(())
    }

    /// The CRDs among `resources` are on `cluster` from now on.
    fn install_crds(&self, state: &mut State, cluster: &str, resources: &[Resource]) {
        for resource in resources
            .iter()
            .filter(|r| r.kind == "CustomResourceDefinition")
        {
            state
                .installed
                .insert((cluster.to_owned(), resource.name.clone()));
        }
    }

    /// A fresh `cluster`: none of its CRDs are there yet, and Argo CD starts syncing its components' and
    /// packages' Applications within the next seconds, in no particular order. Returns how many.
    pub(super) fn bring_up(&self, state: &mut State, now: Timestamp, cluster: &str) -> usize {
        state.installed.retain(|(on, _)| on != cluster);
        let Some(management) = self.management() else {
            return 0;
        };
        let apps: Vec<String> = management
            .list(APPLICATION.0, APPLICATION.1)
            .iter()
            .filter(|app| matches!(Set::owning(app), Some(Set::Infra | Set::Packages)))
            .filter(|app| generators::destination_cluster(app).as_deref() == Some(cluster))
            .map(|app| str_at(app, "/metadata/name").to_owned())
            .collect();
        for app in &apps {
            let delay = state.rng.range(BRING_UP_SPREAD.0, BRING_UP_SPREAD.1) as i64;
            state.schedule(secs(now, delay), Action::SyncStart { app: app.clone() });
        }
        state.note(
            now,
            format!(
                "argocd: {cluster} comes up from nothing: {} Applications to sync",
                apps.len()
            ),
        );
        apps.len()
    }
}

/// Argo CD's automated policy syncs an Application found OutOfSync a few seconds later, as a new operation
/// (its retries count from zero again); one with a sync in flight (to an older revision) is synced again
/// once that one is done.
fn schedule_sync(state: &mut State, at: Timestamp, app: &str) {
    state.retries.remove(app);
    let wait = if state.syncing.contains(app) { 8 } else { 3 };
    state.schedule(secs(at, wait), Action::SyncStart { app: app.into() });
}

/// The health `app` reports for `resource` now, if it lists it with one.
fn resource_health(app: &Value, resource: &Resource) -> Option<String> {
    app.pointer("/status/resources")?
        .as_array()?
        .iter()
        .find(|entry| {
            Resource::of_status(entry)
                .is_some_and(|r| r.kind == resource.kind && r.name == resource.name)
        })?
        .pointer("/health/status")?
        .as_str()
        .map(str::to_owned)
}

/// Marks `app` OutOfSync with git, as Argo CD's refresh after a push does: the Application and its
/// resources.
fn out_of_sync(app: &mut Value, at: Timestamp) {
    app["status"]["sync"]["status"] = json!("OutOfSync");
    if let Some(list) = app["status"]["resources"].as_array_mut() {
        for entry in list {
            entry["status"] = json!("OutOfSync");
        }
    }
    app["status"]["reconciledAt"] = json!(stamp(at));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_five_seconds_doubling_to_three_minutes() {
        let waits: Vec<i64> = (1..=8).map(backoff).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 180, 180]);
        assert_eq!(backoff(u32::MAX), 180);
    }
}
