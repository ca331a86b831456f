//! From a merged Release to running pods: taskapp-platform's Application of a `platform/` file applying it,
//! the release operator's derived files, taskapp-catalog's Application pointed at them, Argo CD's sync and
//! Argo Rollouts' canary. Every commit the simulator makes to `application-repositories` wakes the
//! ApplicationSet controller ([`super::appsets`]).

use std::collections::BTreeMap;

use anyhow::Context as _;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::appsets::sources_of;
use super::{Action, Inner, RolloutRun, State, secs, str_at};
use crate::fixtures::argocd::applications;
use crate::fixtures::workloads::{self, ROLLOUT_HASH_LABEL, canary_steps, pod_template_hash};
use crate::fixtures::{argocd as argo_fixtures, stamp};
use crate::git::people;
use crate::world::{
    self, ARGOCD_NAMESPACE, Commit, GITOPS_REPOSITORY, Histories, PLATFORM_NAMESPACE, REGISTRY,
    ServicePlan,
};

/// The Rollout's type.
pub(super) const ROLLOUT: (&str, &str) = ("argoproj.io/v1alpha1", "Rollout");
/// The Application's type.
pub(super) const APPLICATION: (&str, &str) = (crate::argocd::API_VERSION, crate::argocd::KIND);
/// The platform resources' `apiVersion`.
pub(super) const PLATFORM_API: &str = "platform.tower.dev/v1alpha1";
/// Syncs Argo CD keeps in an Application's history.
pub(super) const HISTORY_KEPT: usize = 10;
/// ReplicaSets a Rollout keeps (its `revisionHistoryLimit` plus the current one).
const REPLICA_SETS_KEPT: usize = 3;

/// `plan` reduced to one commit that runs everywhere, so the fixture builders (which find what runs by
/// position in a history) build objects for an arbitrary commit.
pub(super) fn at_commit(plan: &ServicePlan, commit: &Commit) -> (ServicePlan, Histories) {
    let mut single = *plan;
    single.commits = &ONE_COMMIT;
    single.dev = 0;
    single.prod = 0;
    single.prod_previous = None;
    single.prod_schema_behind = None;
    let histories = Histories {
        services: [(plan.name.to_string(), vec![commit.clone()])].into(),
        ..Histories::default()
    };
    (single, histories)
}

static ONE_COMMIT: [world::CommitPlan; 1] = [world::CommitPlan {
    message: "simulated",
    green: true,
    migration: None,
}];

impl Inner {
    /// taskapp-platform's Application of `path` synced commit `sha`: the file is applied to the management
    /// cluster as-is, and the operators react. A file gone at `sha` is left alone (its Application is
    /// deleted, and with `preserveResourcesOnDeletion` the resource stays).
    pub(super) fn apply_platform_file(
        &self,
        state: &mut State,
        at: Timestamp,
        sha: &str,
        path: &str,
    ) -> anyhow::Result<()> {
        let gitops = self.world.repositories.git(GITOPS_REPOSITORY);
        let management = self.management().context("no management cluster")?;
        let Some(text) = gitops.try_run(&["show", &format!("{sha}:{path}")])? else {
            return Ok(());
        };
        let object: Value =
            serde_saphyr::from_str(&text).with_context(|| format!("parsing {path} at {sha}"))?;
        let kind = str_at(&object, "/kind").to_string();
        let name = str_at(&object, "/metadata/name").to_string();
        let (previous, stored) = apply_spec(&management, object, at)?;
        state.note(at, format!("taskapp-platform: applied {kind} {name}"));
        let env = str_at(&stored, "/spec/environment").to_string();
        match kind.as_str() {
            "Release" => {
                let service = str_at(&stored, "/spec/component").to_string();
                if str_at(&stored, "/spec/version") != str_at(&stored, "/status/observedVersion") {
                    state.schedule(secs(at, 2), Action::DeriveRelease { service, env });
                }
            }
            "Component" if previous.is_none() => self.onboard(state, at, &name)?,
            "Database" if previous.is_none() => {
                let service = str_at(&stored, "/spec/name").to_string();
                self.database_created(state, at, &service, &env)?;
            }
            "DatabaseSchema" => self.schema_published(state, at, previous.as_ref(), &stored)?,
            _ => {}
        }
        Ok(())
    }

    /// The release operator: writes the derived files of the Release's version as its own commit on main
    /// of `application-repositories`, then reports it in the Release's status.
    pub(super) fn derive_release(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        env: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let name = crate::platform::release_name(service, env);
        let release = management
            .get(PLATFORM_API, "Release", Some(PLATFORM_NAMESPACE), &name)
            .with_context(|| format!("Release {name} is gone"))?;
        let version = str_at(&release, "/spec/version").to_string();
        let plan = self.plan(service)?;
        let Some(sha) = self.world.repositories.git(service).resolve(&version)? else {
            self.update(
                &management,
                ("platform.tower.dev/v1alpha1", "Release"),
                Some(PLATFORM_NAMESPACE),
                &name,
                |r| {
                    r["status"]["conditions"] = json!([condition(
                        "Ready",
                        "False",
                        "VersionNotFound",
                        &format!("No commit {version} in {}/{service}", world::ORGANISATION),
                        at
                    )]);
                },
            )?;
            state.note(
                at,
                format!("release-operator: {name} names unknown version {version}"),
            );
            return Ok(());
        };
        let commit = self.commit_of(service, &sha)?;
        let files = crate::git::derived_release_files(&plan, env, &commit)?;
        let derived = self.commit_gitops(
            state,
            people::RELEASE_OPERATOR,
            at,
            &format!("Derive {service} {env} files for {}", commit.short()),
            files,
        )?;
        self.update(
            &management,
            (PLATFORM_API, "Release"),
            Some(PLATFORM_NAMESPACE),
            &name,
            |r| {
                r["status"] = json!({
                    "observedVersion": version,
                    "derivedCommit": derived,
                    "conditions": [
                        condition("Derived", "True", "FilesWritten", &format!("Wrote components/{service}/environments/{env}.yaml and values/{env}.yaml to {GITOPS_REPOSITORY}"), at),
                        condition("Ready", "True", "VersionDerived", &format!("Version {version} is derived"), at),
                    ],
                });
            },
        )?;
        state.note(
            at,
            format!(
                "release-operator: derived {service} {env} {} in {}",
                commit.short(),
                &derived[..7.min(derived.len())]
            ),
        );
        Ok(())
    }

    /// taskapp-catalog: points `service`'s Application on `cluster_name` (`<svc>-<cluster>`) at `sha`, the
    /// chart source and image its derived file pins, creating it for a new service; a new revision makes it
    /// OutOfSync, and the automated sync policy starts a sync.
    pub(super) fn point_application(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        env: &str,
        cluster_name: &str,
        sha: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let app = argo_fixtures::application_name(service, cluster_name);
        if management
            .get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), &app)
            .is_none()
        {
            let plan = self.plan(service)?;
            let commit = self.commit_of(service, sha)?;
            let (single, histories) = at_commit(&plan, &commit);
            let mut created =
                argo_fixtures::application_on(&single, env, cluster_name, &histories, at)
                    .context("building the Application")?;
            created["metadata"]["creationTimestamp"] = json!(stamp(at));
            self.own(&management, &mut created, super::Set::Catalog);
            created["status"]["sync"]["status"] = json!("OutOfSync");
            created["status"]["sync"]["revision"] = json!("");
            created["status"]["health"] =
                json!({"status": "Missing", "lastTransitionTime": stamp(at)});
            created["status"]["history"] = json!([]);
            if let Some(map) = created["status"].as_object_mut() {
                map.remove("operationState");
            }
            management.apply(created)?;
            self.refresh_set(super::Set::Catalog);
            state.note(
                at,
                format!("applicationset: created {app} at {}", &sha[..7]),
            );
            state.schedule(secs(at, 3), Action::SyncStart { app });
            return Ok(());
        }
        let tag = sha[..7].to_string();
        let mut changed = false;
        self.update(
            &management,
            APPLICATION,
            Some(ARGOCD_NAMESPACE),
            &app,
            |a| {
                a["spec"]["source"]["targetRevision"] = json!(sha);
                set_image_tag(&mut a["spec"]["source"], &tag);
                let source = a["spec"]["source"].clone();
                a["status"]["sync"]["comparedTo"]["source"] = source;
                a["status"]["reconciledAt"] = json!(stamp(at));
                if str_at(a, "/status/sync/revision") != sha {
                    a["status"]["sync"]["status"] = json!("OutOfSync");
                    mark_resource(a, "Rollout", "status", json!("OutOfSync"));
                }
            },
        )?;
        if let Some(a) = management.get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), &app)
        {
            changed = str_at(&a, "/status/sync/status") == "OutOfSync";
        }
        if changed {
            state.note(at, format!("applicationset: {app} wants {tag}: OutOfSync"));
            state.schedule(secs(at, 3), Action::SyncStart { app });
        }
        Ok(())
    }

    /// Argo CD's automated sync policy starts a sync of an OutOfSync Application.
    pub(super) fn sync_start(
        &self,
        state: &mut State,
        at: Timestamp,
        app: &str,
    ) -> anyhow::Result<()> {
        if !state.syncing.insert(app.to_string()) {
            return Ok(());
        }
        let management = self.management().context("no management cluster")?;
        let head = self.gitops_head()?;
        let retries = state.retries.get(app).copied();
        self.update(&management, APPLICATION, Some(ARGOCD_NAMESPACE), app, |a| {
            let sources = sources_of(a);
            let revisions = applications::revisions(&sources, &head);
            let mut sync = json!({"syncOptions": ["CreateNamespace=true", "ServerSideApply=true"], "syncStrategy": {"hook": {}}});
            if let Some(map) = sync.as_object_mut() {
                let mut fields = applications::revision_fields(&sources, &revisions);
                fields.remove("source");
                fields.remove("sources");
                map.extend(fields);
            }
            let retry = a
                .pointer("/spec/syncPolicy/retry")
                .cloned()
                .unwrap_or_else(|| json!({"limit": 5, "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"}}));
            a["status"]["operationState"] = json!({
                "operation": {
                    "sync": sync,
                    "initiatedBy": {"automated": true},
                    "retry": retry,
                },
                "phase": "Running",
                "message": "one or more tasks are running",
                "startedAt": stamp(at),
            });
            if let Some(count) = retries {
                a["status"]["operationState"]["retryCount"] = json!(count);
            }
        })?;
        state.note(at, format!("argocd: {app} syncing"));
        state.schedule(secs(at, 4), Action::SyncFinish { app: app.into() });
        Ok(())
    }

    /// Argo CD finishes a sync: Synced at the revision, history appended, operation Succeeded; a new
    /// revision leaves health Progressing until the Rollout settles.
    pub(super) fn sync_finish(
        &self,
        state: &mut State,
        at: Timestamp,
        app: &str,
    ) -> anyhow::Result<()> {
        state.syncing.remove(app);
        let management = self.management().context("no management cluster")?;
        let Some(current) =
            management.get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), app)
        else {
            return Ok(());
        };
        if let Some(set) = super::Set::owning(&current)
            && set != super::Set::Catalog
        {
            return self.finish_platform_sync(state, at, set, &current);
        }
        let target = str_at(&current, "/spec/source/targetRevision").to_string();
        let asked = str_at(&current, "/status/operationState/operation/sync/revision");
        let revision = if asked.len() == 40 && asked.bytes().all(|b| b.is_ascii_hexdigit()) {
            asked.to_string()
        } else {
            target
        };
        let moved = str_at(&current, "/status/sync/revision") != revision;
        let tag = tag_of(&current["spec"]["source"]);
        let service = str_at(
            &current,
            &format!("/metadata/labels/{}", esc(shared::crd::COMPONENT_LABEL)),
        )
        .to_string();
        let env = str_at(
            &current,
            &format!("/metadata/labels/{}", esc(shared::crd::ENVIRONMENT_LABEL)),
        );
        // The cluster it deploys to: the one it names, else its environment's only one.
        let cluster_name = match str_at(&current, "/spec/destination/name") {
            "" => env.to_string(),
            named => named.to_string(),
        };
        self.update(&management, APPLICATION, Some(ARGOCD_NAMESPACE), app, |a| {
            let source = a["spec"]["source"].clone();
            let destination = a["spec"]["destination"].clone();
            if let Some(map) = a.as_object_mut() {
                map.remove("operation");
            }
            let operation = a["status"]["operationState"]["operation"].clone();
            let initiated = operation
                .get("initiatedBy")
                .cloned()
                .unwrap_or_else(|| json!({"automated": true}));
            let started = a["status"]["operationState"]["startedAt"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| stamp(at));
            let resources = a["status"]["operationState"]["syncResult"]["resources"].clone();
            a["status"]["sync"] = json!({"status": "Synced", "revision": revision, "comparedTo": {"source": source, "destination": destination}});
            if let Some(list) = a["status"]["resources"].as_array_mut() {
                for r in list {
                    r["status"] = json!("Synced");
                }
            }
            let mut history = a["status"]["history"].as_array().cloned().unwrap_or_default();
            let id = history.iter().filter_map(|h| h["id"].as_i64()).max().unwrap_or(0) + 1;
            history.push(json!({
                "id": id,
                "revision": revision,
                "deployStartedAt": started,
                "deployedAt": stamp(at),
                "source": source,
                "initiatedBy": initiated,
            }));
            let excess = history.len().saturating_sub(HISTORY_KEPT);
            history.drain(..excess);
            a["status"]["history"] = json!(history);
            a["status"]["reconciledAt"] = json!(stamp(at));
            a["status"]["operationState"] = json!({
                "operation": operation,
                "phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "startedAt": started,
                "finishedAt": stamp(at),
                "syncResult": {"resources": if resources.is_null() { json!([]) } else { resources }, "revision": revision, "source": source},
            });
            if moved {
                a["status"]["health"] = json!({"status": "Progressing", "lastTransitionTime": stamp(at)});
                mark_resource(a, "Rollout", "health", json!({"status": "Progressing", "message": "more replicas need to be updated"}));
                a["status"]["summary"]["images"] = json!([format!("{REGISTRY}/{service}:{tag}")]);
            }
        })?;
        self.refresh_set_entry(app);
        state.note(
            at,
            format!(
                "argocd: {app} Synced at {}",
                &revision[..7.min(revision.len())]
            ),
        );
        if moved && !service.is_empty() {
            state.schedule(
                secs(at, 2),
                Action::RolloutStart {
                    service,
                    cluster: cluster_name,
                },
            );
        }
        Ok(())
    }

    /// Argo Rollouts sees the new pod template: a new ReplicaSet, canary step 0.
    pub(super) fn rollout_start(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        cluster_name: &str,
    ) -> anyhow::Result<()> {
        let plan = self.plan(service)?;
        let management = self.management().context("no management cluster")?;
        let app = argo_fixtures::application_name(service, cluster_name);
        let application = management
            .get(APPLICATION.0, APPLICATION.1, Some(ARGOCD_NAMESPACE), &app)
            .context("the Application is gone")?;
        let sha = str_at(&application, "/spec/source/targetRevision").to_string();
        let commit = self.commit_of(service, &sha)?;
        let (cluster, workload) = self.workload(cluster_name)?;
        let env = workload.environment;
        let key = format!("{service}/{cluster_name}");
        let Some(rollout) = cluster.get(ROLLOUT.0, ROLLOUT.1, Some(service), service) else {
            // A new service: its chart's objects appear at once, already rolled out.
            let (single, histories) = at_commit(&plan, &commit);
            let mut objects = vec![workloads::namespace(service, Some(env), at)];
            objects.extend(workloads::objects(&single, env, &histories, at));
            crate::fixtures::apply_all(&cluster, crate::fixtures::placed_on(objects, &workload))?;
            state.note(at, format!("rollouts: created {service} in {cluster_name}"));
            state.schedule(
                secs(at, 3),
                Action::AppHealth {
                    service: service.into(),
                    cluster: cluster_name.into(),
                },
            );
            return Ok(());
        };
        let new_hash = pod_template_hash(service, &commit);
        let stable = str_at(&rollout, "/status/stableRS").to_string();
        if let Some(previous) = state.rollouts.remove(&key) {
            // A newer revision supersedes an unfinished canary: its pods go.
            self.delete_pods(&cluster, service, |hash| {
                hash == previous.new_hash && hash != stable
            });
        }
        if new_hash == stable {
            self.delete_pods(&cluster, service, |hash| hash != stable);
            self.update(&cluster, ROLLOUT, Some(service), service, |r| {
                settle(r, &stable, at);
            })?;
            state.schedule(
                secs(at, 3),
                Action::AppHealth {
                    service: service.into(),
                    cluster: cluster_name.into(),
                },
            );
            return Ok(());
        }
        let revision = str_at(
            &rollout,
            "/metadata/annotations/rollout.argoproj.io~1revision",
        )
        .parse::<u64>()
        .unwrap_or(1)
            + 1;
        state.generation += 1;
        let generation = state.generation;
        let image = workloads::image(&plan, &commit);
        let short = commit.short().to_string();
        let updated = self
            .update(&cluster, ROLLOUT, Some(service), service, |r| {
                let containers = &mut r["spec"]["template"]["spec"]["containers"][0];
                containers["image"] = json!(image);
                if let Some(vars) = containers["env"].as_array_mut() {
                    for var in vars {
                        if var["name"] == "VERSION" {
                            var["value"] = json!(short);
                        }
                    }
                }
                r["metadata"]["annotations"]["rollout.argoproj.io/revision"] =
                    json!(revision.to_string());
                let status = &mut r["status"];
                status["phase"] = json!("Progressing");
                status["message"] = json!("more replicas need to be updated");
                status["currentPodHash"] = json!(new_hash);
                status["currentStepIndex"] = json!(0);
                status["updatedReplicas"] = json!(0);
                status["canary"] = weights(&new_hash, &stable, 0);
                if let Some(map) = status.as_object_mut() {
                    map.remove("abort");
                    map.remove("pauseConditions");
                    map.remove("controllerPause");
                }
                status["conditions"] =
                    conditions(false, &format!("Rollout \"{service}\" is progressing."), at);
            })?
            .context("the Rollout is gone")?;
        let generation_now = updated["metadata"]["generation"].as_i64().unwrap_or(1);
        self.update(&cluster, ROLLOUT, Some(service), service, |r| {
            r["status"]["observedGeneration"] = json!(generation_now.to_string());
        })?;
        // The new ReplicaSet: the stable one's shape with the new template and hash.
        let stable_rs = cluster.get(
            "apps/v1",
            "ReplicaSet",
            Some(service),
            &format!("{service}-{stable}"),
        );
        if let Some(mut rs) = stable_rs {
            let name = format!("{service}-{new_hash}");
            let mut template = updated["spec"]["template"].clone();
            template["metadata"]["labels"][ROLLOUT_HASH_LABEL] = json!(new_hash);
            rs["metadata"] = json!({
                "name": name,
                "namespace": service,
                "labels": template["metadata"]["labels"].clone(),
                "annotations": {
                    "rollout.argoproj.io/revision": revision.to_string(),
                    "rollout.argoproj.io/desired-replicas": workloads::replicas(env).to_string(),
                },
                "ownerReferences": rs["metadata"]["ownerReferences"].clone(),
                "creationTimestamp": stamp(at),
            });
            rs["spec"]["replicas"] = json!(0);
            rs["spec"]["selector"]["matchLabels"][ROLLOUT_HASH_LABEL] = json!(new_hash);
            rs["spec"]["template"] = template;
            rs["status"] = json!({"replicas": 0, "observedGeneration": 1});
            cluster.apply(rs)?;
        }
        for (reason, message) in [
            (
                "RolloutUpdated",
                format!("Rollout updated to revision {revision}"),
            ),
            (
                "NewReplicaSetCreated",
                format!("Created ReplicaSet {service}-{new_hash} (revision {revision})"),
            ),
        ] {
            self.rollout_event(state, at, &cluster, service, reason, &message, false)?;
        }
        let bad = commit.message.contains("(breaks");
        state.rollouts.insert(
            key,
            RolloutRun {
                generation,
                commit,
                new_hash,
                old_hash: stable,
                revision,
                step: 0,
                paused: false,
                bad,
            },
        );
        state.note(
            at,
            format!("rollouts: {service} {cluster_name} revision {revision} started (step 0)"),
        );
        state.schedule(
            secs(at, 3),
            Action::RolloutStep {
                service: service.into(),
                cluster: cluster_name.into(),
                generation,
            },
        );
        Ok(())
    }

    /// Runs the canary's current step: a weight moves pods, a pause waits.
    pub(super) fn rollout_step(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        cluster_name: &str,
        generation: u64,
    ) -> anyhow::Result<()> {
        let key = format!("{service}/{cluster_name}");
        let Some(mut run) = state.rollouts.get(&key).cloned() else {
            return Ok(());
        };
        if run.generation != generation {
            return Ok(());
        }
        let (cluster, _) = self.workload(cluster_name)?;
        let steps = canary_steps();
        let total = steps.as_array().map_or(0, Vec::len);
        let step = steps[run.step].clone();
        let next = Action::RolloutStep {
            service: service.into(),
            cluster: cluster_name.into(),
            generation,
        };
        if let Some(weight) = step["setWeight"].as_i64() {
            let updated = self.scale_canary(state, at, service, cluster_name, &run, weight)?;
            run.step += 1;
            let index = run.step;
            self.update(&cluster, ROLLOUT, Some(service), service, |r| {
                let status = &mut r["status"];
                status["currentStepIndex"] = json!(index);
                status["canary"] = weights(&run.new_hash, &run.old_hash, weight);
                status["updatedReplicas"] = json!(updated);
                status["phase"] = json!("Progressing");
            })?;
            let message = format!("Rollout step {index}/{total} completed (setWeight: {weight})");
            self.rollout_event(
                state,
                at,
                &cluster,
                service,
                "RolloutStepCompleted",
                &message,
                false,
            )?;
            state.note(
                at,
                format!("rollouts: {service} {cluster_name} step {index} (setWeight {weight})"),
            );
            if run.bad {
                state.schedule(
                    secs(at, 30),
                    Action::RolloutAbort {
                        service: service.into(),
                        cluster: cluster_name.into(),
                        generation,
                    },
                );
            } else if index >= total {
                return self.rollout_complete(state, at, service, cluster_name, &run);
            } else {
                state.schedule(secs(at, 5), next);
            }
        } else {
            let duration = step["pause"]["duration"]
                .as_str()
                .unwrap_or("30s")
                .to_string();
            let seconds = parse_duration(&duration);
            if run.paused {
                run.paused = false;
                run.step += 1;
                let index = run.step;
                self.update(&cluster, ROLLOUT, Some(service), service, |r| {
                    let status = &mut r["status"];
                    status["currentStepIndex"] = json!(index);
                    status["phase"] = json!("Progressing");
                    status["message"] = json!("more replicas need to be updated");
                    if let Some(map) = status.as_object_mut() {
                        map.remove("pauseConditions");
                        map.remove("controllerPause");
                    }
                })?;
                let message = format!("Rollout step {index}/{total} completed (pause: {duration})");
                self.rollout_event(
                    state,
                    at,
                    &cluster,
                    service,
                    "RolloutStepCompleted",
                    &message,
                    false,
                )?;
                state.note(
                    at,
                    format!(
                        "rollouts: {service} {cluster_name} step {index} (pause {duration} over)"
                    ),
                );
                state.schedule(secs(at, 1), next);
            } else {
                run.paused = true;
                self.update(&cluster, ROLLOUT, Some(service), service, |r| {
                    let status = &mut r["status"];
                    status["phase"] = json!("Paused");
                    status["message"] = json!("CanaryPauseStep");
                    status["controllerPause"] = json!(true);
                    status["pauseConditions"] =
                        json!([{"reason": "CanaryPauseStep", "startTime": stamp(at)}]);
                })?;
                self.rollout_event(
                    state,
                    at,
                    &cluster,
                    service,
                    "RolloutPaused",
                    "Rollout is paused (CanaryPauseStep)",
                    false,
                )?;
                state.note(
                    at,
                    format!("rollouts: {service} {cluster_name} paused for {duration}"),
                );
                state.schedule(secs(at, seconds), next);
            }
        }
        state.rollouts.insert(key, run);
        Ok(())
    }

    /// Records an event of Argo Rollouts' controller about `service`'s Rollout, as `kubectl describe` and the
    /// card's Events show it.
    #[allow(clippy::too_many_arguments)]
    fn rollout_event(
        &self,
        state: &mut State,
        at: Timestamp,
        cluster: &crate::apiserver::ClusterStore,
        service: &str,
        reason: &str,
        message: &str,
        warning: bool,
    ) -> anyhow::Result<()> {
        let event = workloads::event(
            service,
            ("argoproj.io/v1alpha1", "Rollout", service),
            reason,
            message,
            warning,
            1,
            (at, at),
            "rollouts-controller",
        );
        self.put(state, at, cluster, event)?;
        Ok(())
    }

    /// The last step is done: the new ReplicaSet is stable, the old one scaled to zero.
    fn rollout_complete(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        cluster_name: &str,
        run: &RolloutRun,
    ) -> anyhow::Result<()> {
        let (cluster, _) = self.workload(cluster_name)?;
        state.rollouts.remove(&format!("{service}/{cluster_name}"));
        self.delete_pods(&cluster, service, |hash| hash != run.new_hash);
        self.update(&cluster, ROLLOUT, Some(service), service, |r| {
            settle(r, &run.new_hash, at);
            r["status"]["conditions"][1]["message"] = json!(format!(
                "Rollout completed update to revision {} ({}): Completed all 5 canary steps",
                run.revision, run.new_hash
            ));
        })?;
        // Old ReplicaSets scale to zero; beyond the history limit they go.
        let mut sets = cluster.list_namespaced("apps/v1", "ReplicaSet", service);
        sets.retain(|rs| rs["metadata"]["labels"].get(ROLLOUT_HASH_LABEL).is_some());
        sets.sort_by_key(|rs| {
            str_at(rs, "/metadata/annotations/rollout.argoproj.io~1revision")
                .parse::<u64>()
                .unwrap_or(0)
        });
        let excess = sets.len().saturating_sub(REPLICA_SETS_KEPT);
        for (position, rs) in sets.iter().enumerate() {
            let name = str_at(rs, "/metadata/name").to_string();
            if position < excess {
                let _ = cluster.delete("apps/v1", "ReplicaSet", Some(service), &name);
            } else if !name.ends_with(&run.new_hash) {
                self.update(
                    &cluster,
                    ("apps/v1", "ReplicaSet"),
                    Some(service),
                    &name,
                    |rs| {
                        rs["spec"]["replicas"] = json!(0);
                        rs["status"] = json!({"replicas": 0, "observedGeneration": 2});
                    },
                )?;
            }
        }
        let message = format!(
            "Rollout completed update to revision {} ({}): Completed all 5 canary steps",
            run.revision, run.new_hash
        );
        self.rollout_event(
            state,
            at,
            &cluster,
            service,
            "RolloutCompleted",
            &message,
            false,
        )?;
        state.note(
            at,
            format!(
                "rollouts: {service} {cluster_name} Healthy at {}",
                run.commit.short()
            ),
        );
        state.schedule(
            secs(at, 3),
            Action::AppHealth {
                service: service.into(),
                cluster: cluster_name.into(),
            },
        );
        Ok(())
    }

    /// A canary whose pods crash loop: Argo Rollouts aborts it and the Rollout is Degraded.
    pub(super) fn rollout_abort(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        cluster_name: &str,
        generation: u64,
    ) -> anyhow::Result<()> {
        let key = format!("{service}/{cluster_name}");
        let Some(run) = state.rollouts.get(&key).cloned() else {
            return Ok(());
        };
        if run.generation != generation {
            return Ok(());
        }
        state.rollouts.remove(&key);
        let (cluster, _) = self.workload(cluster_name)?;
        let message = format!(
            "RolloutAborted: Rollout aborted update to revision {}",
            run.revision
        );
        self.update(&cluster, ROLLOUT, Some(service), service, |r| {
            let status = &mut r["status"];
            status["phase"] = json!("Degraded");
            status["abort"] = json!(true);
            status["message"] = json!(message);
            status["canary"] = weights(&run.new_hash, &run.old_hash, 0);
            status["conditions"] = conditions(
                false,
                &format!(
                    "ReplicaSet \"{service}-{}\" has timed out progressing.",
                    run.new_hash
                ),
                at,
            );
        })?;
        self.rollout_event(
            state,
            at,
            &cluster,
            service,
            "RolloutAborted",
            &format!("Rollout aborted update to revision {}", run.revision),
            true,
        )?;
        state.note(
            at,
            format!(
                "rollouts: {service} {cluster_name} Degraded (aborted revision {})",
                run.revision
            ),
        );
        state.schedule(
            secs(at, 3),
            Action::AppHealth {
                service: service.into(),
                cluster: cluster_name.into(),
            },
        );
        Ok(())
    }

    /// Argo CD reads the Rollout's health into the Application's.
    pub(super) fn app_health(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        cluster_name: &str,
    ) -> anyhow::Result<()> {
        let (cluster, _) = self.workload(cluster_name)?;
        let management = self.management().context("no management cluster")?;
        let (health, message) = match cluster.get(ROLLOUT.0, ROLLOUT.1, Some(service), service) {
            Some(r) => match str_at(&r, "/status/phase") {
                "Healthy" => ("Healthy", None),
                "Degraded" => ("Degraded", Some(str_at(&r, "/status/message").to_string())),
                _ => ("Progressing", None),
            },
            None => ("Healthy", None),
        };
        let app = argo_fixtures::application_name(service, cluster_name);
        self.update(
            &management,
            APPLICATION,
            Some(ARGOCD_NAMESPACE),
            &app,
            |a| {
                if a["status"]["health"]["status"] != health {
                    a["status"]["health"] =
                        json!({"status": health, "lastTransitionTime": stamp(at)});
                }
                let mut resource = json!({"status": health});
                if let Some(message) = &message {
                    resource["message"] = json!(message);
                    a["status"]["health"]["message"] = json!(message);
                }
                mark_resource(a, "Rollout", "health", resource);
            },
        )?;
        self.refresh_set_entry(&app);
        state.note(at, format!("argocd: {app} {health}"));
        Ok(())
    }

    /// Moves the canary to `weight`: new pods up, old pods down. Returns how many pods run the new image.
    fn scale_canary(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        cluster_name: &str,
        run: &RolloutRun,
        weight: i64,
    ) -> anyhow::Result<i64> {
        let plan = self.plan(service)?;
        let (cluster, workload) = self.workload(cluster_name)?;
        let env = workload.environment;
        let desired = workloads::replicas(env);
        let wanted = (desired * weight + 99) / 100;
        let pods = cluster.list_namespaced("v1", "Pod", service);
        let (new, old): (Vec<&Value>, Vec<&Value>) = pods
            .iter()
            .partition(|p| p["metadata"]["labels"][ROLLOUT_HASH_LABEL] == run.new_hash.as_str());
        let (single, histories) = at_commit(&plan, &run.commit);
        let built = crate::fixtures::placed_on(
            workloads::pods(&single, env, &run.commit, &histories, at),
            &workload,
        );
        let existing: Vec<&str> = new.iter().map(|p| str_at(p, "/metadata/name")).collect();
        let mut created = 0;
        for mut pod in built.into_iter().take(wanted as usize) {
            let name = str_at(&pod, "/metadata/name").to_string();
            if existing.contains(&name.as_str()) {
                continue;
            }
            set_pod_state(&mut pod, at, run.bad);
            let rs = format!("{service}-{}", run.new_hash);
            if let Some(uid) = cluster
                .get("apps/v1", "ReplicaSet", Some(service), &rs)
                .and_then(|r| r["metadata"]["uid"].as_str().map(str::to_string))
            {
                pod["metadata"]["ownerReferences"][0]["uid"] = json!(uid);
            }
            let stored = cluster.apply(pod)?;
            created += 1;
            let container = str_at(&stored, "/spec/containers/0/name").to_string();
            let lines = if run.bad {
                crash_lines(service, &run.commit, at)
            } else {
                startup_lines(service, run.commit.short(), at)
            };
            for line in lines {
                cluster.append_log(service, &name, &container, &line);
            }
            let node = str_at(&stored, "/spec/nodeName").to_string();
            let image = workloads::image(&plan, &run.commit);
            let involved = ("v1", "Pod", name.as_str());
            let mut events = vec![
                (
                    "Scheduled",
                    format!("Successfully assigned {service}/{name} to {node}"),
                    false,
                    "default-scheduler",
                ),
                (
                    "Pulled",
                    format!("Container image \"{image}\" already present on machine"),
                    false,
                    "kubelet",
                ),
                (
                    "Created",
                    format!("Created container: {container}"),
                    false,
                    "kubelet",
                ),
                (
                    "Started",
                    format!("Started container {container}"),
                    false,
                    "kubelet",
                ),
            ];
            if run.bad {
                events.push((
                    "BackOff",
                    format!(
                        "Back-off restarting failed container {container} in pod {name}_{service}"
                    ),
                    true,
                    "kubelet",
                ));
            }
            for (reason, message, warning, component) in events {
                let event = workloads::event(
                    service,
                    involved,
                    reason,
                    &message,
                    warning,
                    1,
                    (at, at),
                    component,
                );
                self.put(state, at, &cluster, event)?;
            }
        }
        let running_new = new.len() as i64 + created;
        let keep_old = (desired - running_new).max(0) as usize;
        let mut old_names: Vec<String> = old
            .iter()
            .map(|p| str_at(p, "/metadata/name").to_string())
            .collect();
        old_names.sort();
        for name in old_names.iter().skip(keep_old) {
            let _ = cluster.delete("v1", "Pod", Some(service), name);
        }
        let ready_new = if run.bad { 0 } else { running_new };
        self.update(&cluster, ("apps/v1", "ReplicaSet"), Some(service), &format!("{service}-{}", run.new_hash), |rs| {
            rs["spec"]["replicas"] = json!(running_new);
            rs["status"] = json!({"replicas": running_new, "fullyLabeledReplicas": running_new, "readyReplicas": ready_new, "availableReplicas": ready_new, "observedGeneration": 1});
        })?;
        let old_count = keep_old.min(old_names.len()) as i64;
        self.update(&cluster, ("apps/v1", "ReplicaSet"), Some(service), &format!("{service}-{}", run.old_hash), |rs| {
            rs["spec"]["replicas"] = json!(old_count);
            rs["status"] = json!({"replicas": old_count, "fullyLabeledReplicas": old_count, "readyReplicas": old_count, "availableReplicas": old_count, "observedGeneration": 2});
        })?;
        self.update(&cluster, ROLLOUT, Some(service), service, |r| {
            r["status"]["readyReplicas"] = json!(old_count + ready_new);
            r["status"]["availableReplicas"] = json!(old_count + ready_new);
            r["status"]["replicas"] = json!(old_count + running_new);
        })?;
        Ok(running_new)
    }

    /// Deletes the Rollout's pods whose pod-template hash `doomed` picks.
    fn delete_pods(
        &self,
        cluster: &crate::apiserver::ClusterStore,
        service: &str,
        doomed: impl Fn(&str) -> bool,
    ) {
        for pod in cluster.list_namespaced("v1", "Pod", service) {
            let hash = pod["metadata"]["labels"][ROLLOUT_HASH_LABEL]
                .as_str()
                .unwrap_or_default();
            if !hash.is_empty() && doomed(hash) {
                let _ = cluster.delete("v1", "Pod", Some(service), str_at(&pod, "/metadata/name"));
            }
        }
    }

    /// Commits `files` onto main of `application-repositories` as `login`, retrying if main moves. Its push
    /// wakes the ApplicationSet controller.
    pub(super) fn commit_gitops(
        &self,
        state: &mut State,
        login: &str,
        at: Timestamp,
        message: &str,
        files: BTreeMap<String, Vec<u8>>,
    ) -> anyhow::Result<String> {
        let git = self.world.repositories.git(GITOPS_REPOSITORY);
        let who = people::identity(login);
        let mut last = None;
        for _ in 0..3 {
            let parent = git
                .resolve("refs/heads/main")?
                .context("main has no commit")?;
            match git.commit_files(
                "main",
                &parent,
                &who,
                at.as_second(),
                message,
                files.clone(),
            ) {
                Ok(sha) => {
                    self.world.forge.announce_push(
                        GITOPS_REPOSITORY,
                        "refs/heads/main",
                        &parent,
                        &sha,
                        login,
                    );
                    state.wake_application_sets(at);
                    return Ok(sha);
                }
                Err(error) => last = Some(error),
            }
        }
        Err(last
            .map(anyhow::Error::from)
            .unwrap_or_else(|| anyhow::anyhow!("could not commit")))
    }

    /// The plan of a service: the fixture plan, or one made up from an onboarded Component.
    pub(super) fn plan(&self, service: &str) -> anyhow::Result<ServicePlan> {
        if let Some(plan) = world::service(service) {
            return Ok(*plan);
        }
        let management = self.management().context("no management cluster")?;
        let component = management
            .get(PLATFORM_API, "Component", Some(PLATFORM_NAMESPACE), service)
            .with_context(|| format!("no Component {service}"))?;
        Ok(onboarded_plan(service, &component))
    }

    /// A new Component: its namespace on every workload cluster. Its Applications follow its Releases.
    fn onboard(&self, state: &mut State, at: Timestamp, service: &str) -> anyhow::Result<()> {
        for workload in self.world.topology.workload_clusters() {
            if let Some(cluster) = self.cluster(&workload.name) {
                cluster.apply(workloads::namespace(
                    service,
                    Some(workload.environment),
                    at,
                ))?;
            }
        }
        state.note(at, format!("platform: onboarded {service}"));
        Ok(())
    }
}

/// A plan for a Component onboarded while the sandbox runs. The builders want `&'static str`s, so the
/// strings are leaked: once per onboarding, which only a merged pull request causes, so the leak is bounded
/// by what people do, not by time.
fn onboarded_plan(service: &str, component: &Value) -> ServicePlan {
    fn leak(text: &str) -> &'static str {
        Box::leak(text.to_string().into_boxed_str())
    }
    ServicePlan {
        name: leak(service),
        team: leak(str_at(component, "/spec/owner")),
        description: leak(str_at(component, "/spec/description")),
        template: leak(str_at(component, "/spec/template/name")),
        depends_on: &[],
        database: false,
        commits: &ONE_COMMIT,
        dev: 0,
        prod: 0,
        prod_previous: None,
        prod_schema_behind: None,
        host: leak(&format!("{service}.acme.example")),
    }
}

/// Applies a `platform/` object as taskapp-platform does: its spec and labels, keeping the operators'
/// status. Returns the object before and after.
fn apply_spec(
    store: &crate::apiserver::ClusterStore,
    mut object: Value,
    at: Timestamp,
) -> anyhow::Result<(Option<Value>, Value)> {
    if str_at(&object, "/metadata/namespace").is_empty() {
        object["metadata"]["namespace"] = json!(PLATFORM_NAMESPACE);
    }
    let api = str_at(&object, "/apiVersion").to_string();
    let kind = str_at(&object, "/kind").to_string();
    let namespace = str_at(&object, "/metadata/namespace").to_string();
    let name = str_at(&object, "/metadata/name").to_string();
    let previous = store.get(&api, &kind, Some(&namespace), &name);
    let stored = match &previous {
        Some(current) => {
            let mut next = current.clone();
            next["spec"] = object["spec"].clone();
            if let Some(labels) = object.pointer("/metadata/labels") {
                next["metadata"]["labels"] = labels.clone();
            }
            store.apply(next)?
        }
        None => {
            object["metadata"]["creationTimestamp"] = json!(stamp(at));
            store.apply(object)?
        }
    };
    Ok((previous, stored))
}

/// A status condition of the platform's operators.
pub(super) fn condition(
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    at: Timestamp,
) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp(at)})
}

/// JSON-pointer escaping of a key.
fn esc(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The image tag a source's Helm parameters set.
fn tag_of(source: &Value) -> String {
    source["helm"]["parameters"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "image.tag"))
        .and_then(|p| p["value"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn set_image_tag(source: &mut Value, tag: &str) {
    if let Some(ps) = source["helm"]["parameters"].as_array_mut() {
        for p in ps {
            if p["name"] == "image.tag" {
                p["value"] = json!(tag);
            }
        }
    }
}

/// Sets `field` of the Application's resource entries of `kind`.
fn mark_resource(app: &mut Value, kind: &str, field: &str, value: Value) {
    if let Some(list) = app["status"]["resources"].as_array_mut() {
        for r in list.iter_mut().filter(|r| r["kind"] == kind) {
            r[field] = value.clone();
        }
    }
}

/// The canary's traffic split as `status.canary` reports it.
fn weights(canary: &str, stable: &str, weight: i64) -> Value {
    json!({"weights": {
        "canary": {"podTemplateHash": canary, "weight": weight},
        "stable": {"podTemplateHash": stable, "weight": 100 - weight},
    }})
}

/// A Rollout at rest on `hash`: Healthy, every step done.
fn settle(r: &mut Value, hash: &str, at: Timestamp) {
    let service = str_at(r, "/metadata/name").to_string();
    let status = &mut r["status"];
    status["phase"] = json!("Healthy");
    status["stableRS"] = json!(hash);
    status["currentPodHash"] = json!(hash);
    status["currentStepIndex"] = json!(5);
    status["canary"] = json!({});
    let replicas = r["spec"]["replicas"].clone();
    let status = &mut r["status"];
    for field in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
    ] {
        status[field] = replicas.clone();
    }
    if let Some(map) = status.as_object_mut() {
        map.remove("message");
        map.remove("abort");
        map.remove("pauseConditions");
        map.remove("controllerPause");
    }
    status["conditions"] = conditions(
        true,
        &format!("Rollout \"{service}\" has successfully progressed."),
        at,
    );
}

/// The Rollout's conditions, healthy or still progressing.
fn conditions(healthy: bool, progress: &str, at: Timestamp) -> Value {
    let t = stamp(at);
    let c = |kind: &str, status: bool, reason: &str, message: &str| json!({"type": kind, "status": if status { "True" } else { "False" }, "reason": reason, "message": message, "lastTransitionTime": t, "lastUpdateTime": t});
    json!([
        c(
            "Available",
            true,
            "AvailableReason",
            "Rollout has minimum availability"
        ),
        c(
            "Completed",
            healthy,
            if healthy {
                "RolloutCompleted"
            } else {
                "RolloutNotCompleted"
            },
            if healthy {
                "Rollout completed"
            } else {
                "Rollout not completed, started update"
            }
        ),
        c(
            "Healthy",
            healthy,
            "RolloutHealthy",
            if healthy {
                "Rollout is healthy"
            } else {
                "Rollout is not healthy"
            }
        ),
        c("Paused", false, "RolloutResumed", "Rollout is resumed"),
        c(
            "Progressing",
            true,
            if healthy {
                "NewReplicaSetAvailable"
            } else {
                "RolloutUpdated"
            },
            progress
        ),
    ])
}

/// `30s`, `2m`, `1h0m0s` in seconds.
pub(super) fn parse_duration(text: &str) -> i64 {
    let mut total = 0;
    let mut number = 0;
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            number = number * 10 + i64::from(d);
        } else {
            total += number
                * match c {
                    'h' => 3_600,
                    'm' => 60,
                    _ => 1,
                };
            number = 0;
        }
    }
    total + number
}

/// A freshly started pod: born at `at`, running (or crash-looping when its image is bad).
fn set_pod_state(pod: &mut Value, at: Timestamp, crashing: bool) {
    let t = stamp(at);
    pod["metadata"]["creationTimestamp"] = json!(t);
    let status = &mut pod["status"];
    status["startTime"] = json!(t);
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for c in conditions {
            c["lastTransitionTime"] = json!(t);
            let readiness = c["type"] == "Ready" || c["type"] == "ContainersReady";
            if readiness {
                c["status"] = json!(if crashing { "False" } else { "True" });
                if let Some(map) = c.as_object_mut() {
                    if crashing {
                        map.insert("reason".into(), json!("ContainersNotReady"));
                    } else {
                        map.remove("reason");
                        map.remove("message");
                    }
                }
            }
        }
    }
    let started = stamp(secs(at, 4));
    let cs = &mut status["containerStatuses"][0];
    cs["ready"] = json!(!crashing);
    cs["started"] = json!(!crashing);
    if crashing {
        cs["restartCount"] = json!(1);
        cs["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}});
        cs["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": stamp(secs(at, 6))}});
    } else {
        cs["restartCount"] = json!(0);
        cs["state"] = json!({"running": {"startedAt": started}});
        cs["lastState"] = json!({});
    }
}

/// A healthy container's first lines.
fn startup_lines(service: &str, version: &str, at: Timestamp) -> Vec<String> {
    vec![
        json!({"time": stamp(at), "level": "info", "msg": "starting", "service": service, "version": version}).to_string(),
        json!({"time": stamp(at), "level": "info", "msg": "listening", "addr": ":8080"}).to_string(),
    ]
}

/// One crashed run of a bad image: start-up, then the failure its commit message names.
pub(super) fn crash_lines(service: &str, commit: &Commit, at: Timestamp) -> Vec<String> {
    let reason = commit
        .message
        .split("(breaks")
        .nth(1)
        .map(|r| r.trim_end_matches(')').trim().to_string())
        .unwrap_or_else(|| "start-up".into());
    vec![
        json!({"time": stamp(at), "level": "info", "msg": "starting", "service": service, "version": commit.short()}).to_string(),
        json!({"time": stamp(at), "level": "fatal", "msg": format!("start-up check failed: {reason}"), "error": format!("{reason}: dial tcp 10.0.0.1:443: connect: connection refused")}).to_string(),
    ]
}
