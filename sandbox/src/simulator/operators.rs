//! The periodic and database controllers: the schema operator, Crossplane, External Secrets, container logs
//! and restarts, and the simulator's own garbage collection.

use std::collections::BTreeSet;

use anyhow::Context as _;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::argo::{PLATFORM_API, crash_lines, parse_duration};
use super::{Action, Inner, State, secs, str_at, time_at};
use crate::fixtures::{crossplane, hex, secrets, stamp, workloads};
use crate::git::people;
use crate::world::{Commit, PLATFORM_NAMESPACE, SERVICES};

/// How long a new database takes to become available.
const PROVISIONING: i64 = 180;
/// How long events the simulator wrote are kept (the apiserver's default event TTL).
const EVENT_TTL: i64 = 3_600;
/// Events the simulator keeps at most, whatever their age.
const EVENTS_KEPT: usize = 5_000;
/// The crash loop's back-off between restarts.
const BACK_OFF: i64 = 300;

/// The name of a migration's check.
fn check_name(file: &str) -> String {
    format!("migrate {}", file.trim_end_matches(".sql"))
}

impl Inner {
    /// The schema operator sees a published schema: checks for migrations not applied yet, the derived
    /// schema package committed as its bot, and the first migration scheduled.
    pub(super) fn schema_published(
        &self,
        state: &mut State,
        at: Timestamp,
        previous: Option<&Value>,
        stored: &Value,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let name = str_at(stored, "/metadata/name").to_string();
        let env = str_at(stored, "/spec/environment").to_string();
        let database = str_at(stored, "/spec/database").to_string();
        let migrations: Vec<String> = stored["spec"]["migrations"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let applied: BTreeSet<String> = previous
            .and_then(|p| p["status"]["checks"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|c| c["state"] == "Succeeded")
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect();
        let checks: Vec<Value> = migrations
            .iter()
            .map(|file| {
                let check = check_name(file);
                let done = applied.contains(&check);
                json!({"name": check, "state": if done { "Succeeded" } else { "Pending" }})
            })
            .collect();
        self.update(
            &management,
            (PLATFORM_API, "DatabaseSchema"),
            Some(PLATFORM_NAMESPACE),
            &name,
            |s| {
                s["status"]["checks"] = json!(checks);
            },
        )?;
        if let Ok(plan) = self.plan(&database) {
            let files = crate::git::derived_schema_file(&plan, &env, &migrations)?;
            self.commit_gitops(
                state,
                people::SCHEMA_OPERATOR,
                at,
                &format!(
                    "Derive {database} {env} schema package {}",
                    crate::platform::schema_version(&migrations)
                ),
                files,
            )?;
        }
        state.note(
            at,
            format!(
                "schema-operator: {name} published {} migrations",
                migrations.len()
            ),
        );
        state.schedule(secs(at, 5), Action::SchemaStep { name, env });
        Ok(())
    }

    /// The schema operator runs one migration: Pending → Running → Succeeded, or Failed with the
    /// database's error; the applied version only advances past what succeeded.
    pub(super) fn schema_step(
        &self,
        state: &mut State,
        at: Timestamp,
        name: &str,
        env: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let Some(schema) = management.get(
            PLATFORM_API,
            "DatabaseSchema",
            Some(PLATFORM_NAMESPACE),
            name,
        ) else {
            return Ok(());
        };
        let checks = schema["status"]["checks"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let Some(index) = checks.iter().position(|c| c["state"] != "Succeeded") else {
            return Ok(());
        };
        let database = str_at(&schema, "/spec/database").to_string();
        let Some(file) = schema["spec"]["migrations"][index]
            .as_str()
            .map(str::to_string)
        else {
            // A check after the migrations (a backfill, a constraint) is not this loop's to run.
            return Ok(());
        };
        let check = checks[index]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match check.as_str() {
            "Pending" => {
                self.update(
                    &management,
                    (PLATFORM_API, "DatabaseSchema"),
                    Some(PLATFORM_NAMESPACE),
                    name,
                    |s| {
                        s["status"]["checks"][index]["state"] = json!("Running");
                    },
                )?;
                state.note(at, format!("schema-operator: {name} running {file}"));
                state.schedule(
                    secs(at, 8),
                    Action::SchemaStep {
                        name: name.into(),
                        env: env.into(),
                    },
                );
            }
            "Running" if file.contains("refund") => {
                // The one migration that always fails: its column already exists in the database.
                let error = format!(
                    "ERROR: column \"refund_id\" of relation \"{database}\" already exists (SQLSTATE 42701)"
                );
                self.update(
                    &management,
                    (PLATFORM_API, "DatabaseSchema"),
                    Some(PLATFORM_NAMESPACE),
                    name,
                    |s| {
                        s["status"]["checks"][index]["state"] = json!("Failed");
                        s["status"]["checks"][index]["error"] = json!(error);
                    },
                )?;
                state.note(
                    at,
                    format!("schema-operator: {name} {file} Failed: {error}"),
                );
            }
            "Running" => {
                let version = crate::platform::schema_version(std::slice::from_ref(&file));
                self.update(
                    &management,
                    (PLATFORM_API, "DatabaseSchema"),
                    Some(PLATFORM_NAMESPACE),
                    name,
                    |s| {
                        s["status"]["checks"][index]["state"] = json!("Succeeded");
                        s["status"]["appliedVersion"] = json!(version);
                    },
                )?;
                self.update(
                    &management,
                    (PLATFORM_API, "Database"),
                    Some(PLATFORM_NAMESPACE),
                    name,
                    |d| {
                        d["status"]["schemaVersion"] = json!(version);
                    },
                )?;
                state.note(at, format!("schema-operator: {name} applied {file}"));
                if index + 1 < checks.len() {
                    state.schedule(
                        secs(at, 3),
                        Action::SchemaStep {
                            name: name.into(),
                            env: env.into(),
                        },
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A new Database: Crossplane's claim, composite and managed resources appear on every cluster of `env`,
    /// not Ready yet.
    pub(super) fn database_created(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        env: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let mut plan = self.plan(service)?;
        plan.database = true;
        let name = format!("{service}-{env}");
        self.update(
            &management,
            (PLATFORM_API, "Database"),
            Some(PLATFORM_NAMESPACE),
            &name,
            |d| {
                d["status"] = json!({"available": false, "boundComponents": [service]});
            },
        )?;
        let mut objects = crossplane::objects(&plan, env, at);
        for object in &mut objects {
            object["metadata"]["creationTimestamp"] = json!(stamp(at));
            object["status"]["conditions"] = json!([
                {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": stamp(at)},
                {"type": "Ready", "status": "False", "reason": "Creating", "lastTransitionTime": stamp(at)},
            ]);
        }
        for workload in self.clusters_of(env)? {
            let (cluster, _) = self.workload(&workload.name)?;
            if cluster.get("v1", "Namespace", None, service).is_none() {
                cluster.apply(workloads::namespace(service, Some(env), at))?;
            }
            crate::fixtures::apply_all(
                &cluster,
                crate::fixtures::placed_on(objects.clone(), &workload),
            )?;
        }
        state.note(at, format!("crossplane: claim {service} in {env} Creating"));
        state.schedule(
            secs(at, PROVISIONING),
            Action::ClaimReady {
                service: service.into(),
                env: env.into(),
            },
        );
        Ok(())
    }

    /// Crossplane finishes: the claim and what it composed are Ready on every cluster of `env`, the Database
    /// available.
    pub(super) fn claim_ready(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        env: &str,
    ) -> anyhow::Result<()> {
        let management = self.management().context("no management cluster")?;
        let mut plan = self.plan(service)?;
        plan.database = true;
        for workload in self.clusters_of(env)? {
            let (cluster, _) = self.workload(&workload.name)?;
            for object in crossplane::objects(&plan, env, at) {
                let api = str_at(&object, "/apiVersion").to_string();
                let kind = str_at(&object, "/kind").to_string();
                let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
                let name = str_at(&object, "/metadata/name").to_string();
                self.update(&cluster, (&api, &kind), namespace.as_deref(), &name, |o| {
                    o["status"] = object["status"].clone();
                    if let Some(conditions) = o["status"]["conditions"].as_array_mut() {
                        for c in conditions {
                            c["lastTransitionTime"] = json!(stamp(at));
                        }
                    }
                })?;
            }
        }
        let endpoint = format!("{}:5432", crossplane::endpoint_host(&plan, env));
        self.update(
            &management,
            (PLATFORM_API, "Database"),
            Some(PLATFORM_NAMESPACE),
            &format!("{service}-{env}"),
            |d| {
                d["status"]["available"] = json!(true);
                d["status"]["endpoint"] = json!(endpoint);
            },
        )?;
        state.note(at, format!("crossplane: claim {service} in {env} Ready"));
        Ok(())
    }

    /// Every running, ready container of the fleet writes one access-log line.
    pub(super) fn write_logs(&self, state: &mut State, at: Timestamp) {
        const PATHS: [(&str, &str); 5] = [
            ("GET", "/v1/items"),
            ("GET", "/v1/items/42"),
            ("GET", "/healthz"),
            ("POST", "/v1/search?q=shoes"),
            ("GET", "/metrics"),
        ];
        for workload in self.world.topology.workload_clusters() {
            let Some(cluster) = self.cluster(&workload.name) else {
                continue;
            };
            for plan in &SERVICES {
                let serving = cluster.pick("v1", "Pod", Some(plan.name), |pod| {
                    let status = &pod["status"]["containerStatuses"][0];
                    (status["ready"] == true && status["state"].get("running").is_some()).then(
                        || {
                            (
                                str_at(pod, "/metadata/name").to_string(),
                                str_at(pod, "/spec/containers/0/name").to_string(),
                            )
                        },
                    )
                });
                for (name, container) in serving {
                    let r = state.rng.next();
                    let (method, path) = PATHS[(r % 5) as usize];
                    let code = if r.is_multiple_of(41) {
                        500
                    } else if r.is_multiple_of(13) {
                        404
                    } else {
                        200
                    };
                    let line = json!({
                        "time": stamp(at),
                        "level": if code >= 500 { "error" } else { "info" },
                        "msg": "request",
                        "method": method,
                        "path": path,
                        "status": code,
                        "duration_ms": 2 + (r >> 8) % 180,
                        "trace_id": format!("{:016x}{:016x}", r, r.rotate_left(17)),
                    })
                    .to_string();
                    cluster.append_log(plan.name, &name, &container, &line);
                }
            }
        }
    }

    /// Crash-looping containers restart after their back-off: the log moves to `previous`, the crash is
    /// logged again, the restart count goes up.
    pub(super) fn crash_loops(&self, state: &mut State, at: Timestamp) {
        for workload in self.world.topology.workload_clusters() {
            let env = workload.environment;
            let Some(cluster) = self.cluster(&workload.name) else {
                continue;
            };
            for plan in &SERVICES {
                let crashing = cluster.pick("v1", "Pod", Some(plan.name), |pod| {
                    let status = &pod["status"]["containerStatuses"][0];
                    (status["state"]["waiting"]["reason"] == "CrashLoopBackOff")
                        .then(|| pod.clone())
                });
                for pod in crashing {
                    let status = &pod["status"]["containerStatuses"][0];
                    let finished = time_at(status, "/lastState/terminated/finishedAt");
                    if finished.is_some_and(|f| at.duration_since(f).as_secs() < BACK_OFF) {
                        continue;
                    }
                    let name = str_at(&pod, "/metadata/name").to_string();
                    let container = str_at(&pod, "/spec/containers/0/name").to_string();
                    let version = pod["spec"]["containers"][0]["env"]
                        .as_array()
                        .and_then(|vars| vars.iter().find(|v| v["name"] == "VERSION"))
                        .and_then(|v| v["value"].as_str())
                        .unwrap_or_default()
                        .to_string();
                    let commit = Commit {
                        sha: version.clone(),
                        message: String::new(),
                        author: String::new(),
                        time: String::new(),
                        green: true,
                        migrations: Vec::new(),
                    };
                    let lines = if workloads::crash_loops(plan, env) {
                        workloads::crash_log(plan, &commit, secs(at, 95))
                    } else {
                        let message = self
                            .commit_of(plan.name, &version)
                            .map(|c| c.message)
                            .unwrap_or_default();
                        crash_lines(plan.name, &Commit { message, ..commit }, at)
                    };
                    cluster.restart_container(plan.name, &name, &container);
                    for line in lines {
                        cluster.append_log(plan.name, &name, &container, &line);
                    }
                    let result = self.update(&cluster, ("v1", "Pod"), Some(plan.name), &name, |p| {
                        let cs = &mut p["status"]["containerStatuses"][0];
                        let restarts = cs["restartCount"].as_i64().unwrap_or(0) + 1;
                        cs["restartCount"] = json!(restarts);
                        cs["lastState"] = json!({"terminated": {
                            "exitCode": 1,
                            "reason": "Error",
                            "startedAt": stamp(crate::fixtures::before(at, 4)),
                            "finishedAt": stamp(at),
                            "containerID": format!("containerd://{}", hex(&[&name, &restarts.to_string()], 64)),
                        }});
                    });
                    if result.is_ok() {
                        state.note(
                            at,
                            format!(
                                "kubelet: restarted {}/{name} in {}",
                                plan.name, workload.name
                            ),
                        );
                    }
                }
            }
        }
    }

    /// External Secrets refreshes every ExternalSecret whose interval has passed; the provider keeps
    /// denying the stale one, which therefore stays stale.
    pub(super) fn refresh_secrets(&self, state: &mut State, at: Timestamp) {
        let mut refreshed = 0;
        for workload in self.world.topology.workload_clusters() {
            let env = workload.environment;
            let Some(cluster) = self.cluster(&workload.name) else {
                continue;
            };
            // Picked rather than listed: at scale there are tens of thousands, and few are due.
            let due = cluster.pick("external-secrets.io/v1", "ExternalSecret", None, |secret| {
                let namespace = str_at(secret, "/metadata/namespace");
                let name = str_at(secret, "/metadata/name");
                if (namespace, env, name) == secrets::STALE {
                    return None;
                }
                let interval = parse_duration(str_at(secret, "/spec/refreshInterval")).max(60);
                let due = time_at(secret, "/status/refreshTime")
                    .is_none_or(|last| at.duration_since(last).as_secs() >= interval);
                let generation = str_at(secret, "/status/syncedResourceVersion")
                    .split('-')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(1)
                    + 1;
                due.then(|| (namespace.to_string(), name.to_string(), generation))
            });
            for (namespace, name, generation) in due {
                let result = self.update(
                    &cluster,
                    ("external-secrets.io/v1", "ExternalSecret"),
                    Some(&namespace),
                    &name,
                    |s| {
                        s["status"]["refreshTime"] = json!(stamp(at));
                        s["status"]["syncedResourceVersion"] = json!(format!(
                            "{generation}-{}",
                            hex(&[&namespace, env, &name, &generation.to_string()], 32)
                        ));
                    },
                );
                if result.is_ok() {
                    refreshed += 1;
                }
            }
        }
        if refreshed > 0 {
            state.note(
                at,
                format!("external-secrets: refreshed {refreshed} secrets"),
            );
        }
    }

    /// Deletes the simulator's Events past their TTL and PipelineRuns past the pruner's limit.
    pub(super) fn collect(&self, state: &mut State, at: Timestamp) {
        while let Some((when, cluster, namespace, name)) = state.events.front().cloned() {
            let expired = at.duration_since(when).as_secs() > EVENT_TTL;
            if !expired && state.events.len() <= EVENTS_KEPT {
                break;
            }
            state.events.pop_front();
            if let Some(store) = self.cluster(&cluster) {
                let _ = store.delete("v1", "Event", Some(&namespace), &name);
            }
        }
        self.prune_runs(state);
    }
}
