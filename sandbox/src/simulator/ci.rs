//! Commits on service repositories and their Tekton builds, task by task; dev following green builds.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context as _;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::argo::PLATFORM_API;
use super::{Action, Inner, State, secs, str_at, time_at};
use crate::fixtures::tekton::{self, pipeline_run_name};
use crate::fixtures::{before, stamp};
use crate::git::people;
use crate::world::{self, CI_NAMESPACE, Commit, PLATFORM_NAMESPACE};

/// Verdicts of pushed commits kept until their builds start.
const VERDICTS_KEPT: usize = 256;
/// PipelineRuns kept per service at least when pruning.
const RUNS_KEPT: usize = 5;
/// Where a PipelineRun names its service.
const COMPONENT_LABEL: &str = "/metadata/labels/platform.tower.dev~1component";

/// Step logs of running builds grow with the simulated clock: the management cluster reads them by it.
pub(super) fn serve_step_logs(inner: &Arc<Inner>) {
    let Some(management) = inner.management() else {
        return;
    };
    // Weak, so the cluster does not keep the simulator (which holds the cluster) alive.
    let weak = Arc::downgrade(inner);
    management.set_clock(Arc::new(move || {
        weak.upgrade()
            .map_or_else(Timestamp::now, |inner| inner.clock.now())
    }));
}

/// A build in progress: the commit and the base time its fixture shapes are computed from.
#[derive(Debug, Clone)]
pub(super) struct Build {
    commit: Commit,
    base: Timestamp,
}

/// What the demo's developers commit: (message, whether it breaks the image once deployed).
const DEMO_MESSAGES: [&str; 12] = [
    "Tidy logging",
    "Bump dependencies",
    "Add request timeout",
    "Cache configuration lookups",
    "Improve error messages",
    "Add tracing spans",
    "Refactor handlers",
    "Retry transient upstream errors",
    "Paginate list endpoint",
    "Document the API",
    "Speed up start-up",
    "Harden input validation",
];

impl Inner {
    /// The commit `sha` of `service` as the plan's histories describe commits.
    pub(super) fn commit_of(&self, service: &str, sha: &str) -> anyhow::Result<Commit> {
        let git = self.world.repositories.git(service);
        let out = git.run(&["log", "-1", "--format=%H%x00%s%x00%ae%x00%ct", sha, "--"])?;
        let fields: Vec<&str> = out.trim_end().splitn(4, '\0').collect();
        let [full, message, email, time] = fields.as_slice() else {
            anyhow::bail!("no commit {sha} in {service}");
        };
        let migrations = git
            .try_run(&["ls-tree", "--name-only", full, "migrations/"])?
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("migrations/"))
            .map(str::to_string)
            .collect();
        Ok(Commit {
            sha: (*full).to_string(),
            message: (*message).to_string(),
            author: people::login_of_email(email),
            time: crate::git::rfc3339(time.parse().unwrap_or(0)),
            green: true,
            migrations,
        })
    }

    /// A developer's commit on main of `service`; its build starts when the webhook reaches Tekton.
    pub(super) fn push_commit(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        message: &str,
        green: bool,
    ) -> anyhow::Result<String> {
        let plan = world::service(service).with_context(|| format!("no service {service}"))?;
        let git = self.world.repositories.git(service);
        let parent = git
            .resolve("refs/heads/main")?
            .context("main has no commit")?;
        let mut changelog = git
            .try_run(&["show", &format!("{parent}:CHANGELOG.md")])?
            .unwrap_or_else(|| "# Changelog\n\n".into());
        changelog.push_str(&format!("- {message}\n"));
        let files: BTreeMap<String, Vec<u8>> =
            [("CHANGELOG.md".to_string(), changelog.into_bytes())].into();
        let members = world::team(plan.team)
            .map(|t| t.members)
            .unwrap_or(&["root"]);
        let author = members[(crate::fixtures::fnv(&[message]) % members.len() as u64) as usize];
        let at = super::whole(at);
        let sha = git.commit_files(
            "main",
            &parent,
            &people::identity(author),
            at.as_second(),
            message,
            files,
        )?;
        self.world
            .forge
            .announce_push(service, "refs/heads/main", &parent, &sha, author);
        state.verdicts.push_back((sha.clone(), green));
        while state.verdicts.len() > VERDICTS_KEPT {
            state.verdicts.pop_front();
        }
        state.note(
            at,
            format!("{author}: pushed {} to {service}: {message}", &sha[..7]),
        );
        state.schedule(
            secs(at, 10),
            Action::PipelineStart {
                service: service.into(),
                sha: sha.clone(),
            },
        );
        Ok(sha)
    }

    /// One of the demo's developers pushes something.
    pub(super) fn demo_commit(&self, state: &mut State, at: Timestamp) -> anyhow::Result<()> {
        // The crash-looping service is left alone: its broken dev pod is the fixture's example of trouble,
        // and a build rolled out on top of it would quietly heal it minutes into every demo.
        let pushed: Vec<&str> = world::SERVICES
            .iter()
            .map(|plan| plan.name)
            .filter(|name| *name != crate::fixtures::workloads::CRASH_LOOPING_SERVICE)
            .collect();
        let service = pushed[state.rng.range(0, pushed.len() as u64) as usize];
        let base = DEMO_MESSAGES[state.rng.range(0, DEMO_MESSAGES.len() as u64) as usize];
        let green = state.rng.chance(80);
        let breaks = green && state.rng.chance(8);
        let message = if breaks {
            format!("{base} (breaks start-up config)")
        } else if green {
            base.to_string()
        } else {
            format!("{base} (tests fail)")
        };
        self.push_commit(state, at, service, &message, green)?;
        Ok(())
    }

    /// The fixture shapes of `build`: the finished PipelineRun and its TaskRuns.
    fn build_objects(&self, service: &str, build: &Build) -> anyhow::Result<(Value, Vec<Value>)> {
        let plan = world::service(service).with_context(|| format!("no service {service}"))?;
        let (single, histories) = super::argo::at_commit(plan, &build.commit);
        tekton::pipeline_run(&single, 0, &histories, build.base).context("building the PipelineRun")
    }

    /// Tekton's trigger creates the PipelineRun; its TaskRuns start and finish as the DAG allows.
    pub(super) fn pipeline_start(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        sha: &str,
    ) -> anyhow::Result<()> {
        let green = state
            .verdicts
            .iter()
            .find(|(s, _)| s == sha)
            .is_none_or(|(_, g)| *g);
        let mut commit = self.commit_of(service, sha)?;
        commit.green = green;
        // The builder starts a run 45 s after its commit and never later than an hour before `base`.
        commit.time = stamp(before(at, 45));
        let build = Build {
            commit,
            base: secs(at, 7_200),
        };
        let (run, task_runs) = self.build_objects(service, &build)?;
        let name = str_at(&run, "/metadata/name").to_string();
        let management = self.management().context("no management cluster")?;
        let mut running = run.clone();
        running["status"] = json!({
            "startTime": stamp(at),
            "conditions": [{"type": "Succeeded", "status": "Unknown", "reason": "Running", "message": format!("Tasks Completed: 0 (Failed: 0, Cancelled 0), Incomplete: {}, Skipped: 0", task_runs.len()), "lastTransitionTime": stamp(at)}],
            "pipelineSpec": run["status"]["pipelineSpec"],
            "childReferences": [],
        });
        management.apply(running)?;
        delete_old_pods(&management, service);
        for (index, task_run) in task_runs.iter().enumerate() {
            if let Some(start) = time_at(task_run, "/status/startTime") {
                state.schedule(
                    start,
                    Action::TaskStart {
                        service: service.into(),
                        sha: sha.into(),
                        task: index,
                    },
                );
            }
            if let Some(end) = time_at(task_run, "/status/completionTime") {
                state.schedule(
                    end,
                    Action::TaskFinish {
                        service: service.into(),
                        sha: sha.into(),
                        task: index,
                    },
                );
            }
        }
        let end = time_at(&run, "/status/completionTime").unwrap_or(secs(at, 300));
        state.schedule(
            end,
            Action::PipelineFinish {
                service: service.into(),
                sha: sha.into(),
            },
        );
        state.builds.insert(name.clone(), build);
        state.note(at, format!("tekton: {name} started"));
        Ok(())
    }

    fn build_of(&self, state: &State, service: &str, sha: &str) -> Option<Build> {
        let name = format!("{service}-build-{}", &sha[..7.min(sha.len())]);
        state.builds.get(&name).cloned()
    }

    /// A TaskRun starts: Running, its first step under way.
    pub(super) fn task_start(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        sha: &str,
        task: usize,
    ) -> anyhow::Result<()> {
        let Some(build) = self.build_of(state, service, sha) else {
            return Ok(());
        };
        let (run, task_runs) = self.build_objects(service, &build)?;
        let Some(mut task_run) = task_runs.get(task).cloned() else {
            return Ok(());
        };
        let steps: Vec<Value> = task_run["status"]["steps"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(n, step)| {
                let mut s = json!({"name": step["name"], "container": step["container"]});
                // The first step starts when the finished TaskRun says it did, once the pod has initialised.
                let started = step["terminated"]["startedAt"]
                    .as_str()
                    .map_or_else(|| stamp(at), str::to_string);
                s[if n == 0 { "running" } else { "waiting" }] = if n == 0 {
                    json!({"startedAt": started})
                } else {
                    json!({"reason": "PodInitializing"})
                };
                s
            })
            .collect();
        let spec = task_run["status"]["taskSpec"].clone();
        let pod = task_run["status"]["podName"].clone();
        task_run["status"] = json!({
            "podName": pod,
            "startTime": stamp(at),
            "conditions": [{"type": "Succeeded", "status": "Unknown", "reason": "Running", "message": "Not all Steps in the Task have finished executing", "lastTransitionTime": stamp(at)}],
            "steps": steps,
            "taskSpec": spec,
        });
        let management = self.management().context("no management cluster")?;
        let pod = tekton::pod(&task_run);
        management.apply(task_run)?;
        management.apply(pod)?;
        self.update_run_progress(&management, &run, &task_runs, at)?;
        Ok(())
    }

    /// A TaskRun finishes as the fixture says it does (the test step of a red build fails).
    pub(super) fn task_finish(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        sha: &str,
        task: usize,
    ) -> anyhow::Result<()> {
        let Some(build) = self.build_of(state, service, sha) else {
            return Ok(());
        };
        let (run, task_runs) = self.build_objects(service, &build)?;
        let Some(task_run) = task_runs.get(task).cloned() else {
            return Ok(());
        };
        let management = self.management().context("no management cluster")?;
        let pod = tekton::pod(&task_run);
        management.apply(task_run)?;
        management.apply(pod)?;
        self.update_run_progress(&management, &run, &task_runs, at)?;
        Ok(())
    }

    /// The running PipelineRun's children and progress message as of `at`.
    fn update_run_progress(
        &self,
        management: &crate::apiserver::ClusterStore,
        run: &Value,
        task_runs: &[Value],
        at: Timestamp,
    ) -> anyhow::Result<()> {
        let started: Vec<&str> = task_runs
            .iter()
            .filter(|t| time_at(t, "/status/startTime").is_some_and(|s| s <= at))
            .map(|t| str_at(t, "/metadata/name"))
            .collect();
        let done: Vec<&Value> = task_runs
            .iter()
            .filter(|t| time_at(t, "/status/completionTime").is_some_and(|s| s <= at))
            .collect();
        let failed = done
            .iter()
            .filter(|t| t["status"]["conditions"][0]["status"] == "False")
            .count();
        let children: Vec<Value> = run["status"]["childReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| started.contains(&c["name"].as_str().unwrap_or_default()))
            .collect();
        let message = format!(
            "Tasks Completed: {} (Failed: {failed}, Cancelled 0), Incomplete: {}, Skipped: 0",
            done.len(),
            task_runs.len() - done.len()
        );
        let name = str_at(run, "/metadata/name");
        self.update(
            management,
            ("tekton.dev/v1", "PipelineRun"),
            Some(CI_NAMESPACE),
            name,
            |r| {
                r["status"]["childReferences"] = json!(children);
                r["status"]["conditions"][0]["message"] = json!(message);
            },
        )?;
        Ok(())
    }

    /// The PipelineRun completes; a green build of a service whose dev Release auto-deploys moves dev.
    pub(super) fn pipeline_finish(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        sha: &str,
    ) -> anyhow::Result<()> {
        let Some(build) = self.build_of(state, service, sha) else {
            return Ok(());
        };
        let (run, _) = self.build_objects(service, &build)?;
        let name = pipeline_run_name(service, &build.commit);
        state.builds.remove(&name);
        let management = self.management().context("no management cluster")?;
        management.apply(run)?;
        let green = build.commit.green;
        state.note(
            at,
            format!(
                "tekton: {name} {}",
                if green { "Succeeded" } else { "Failed" }
            ),
        );
        if !green {
            return Ok(());
        }
        let auto = management
            .get(
                PLATFORM_API,
                "Release",
                Some(PLATFORM_NAMESPACE),
                &crate::platform::release_name(service, "dev"),
            )
            .is_some_and(|r| r["spec"]["autoDeploy"].as_bool().unwrap_or(false));
        if auto {
            state.schedule(
                secs(at, 15),
                Action::AutoDeploy {
                    service: service.into(),
                    sha: sha.into(),
                },
            );
        }
        Ok(())
    }

    /// The release operator moves dev's Release to a green build, as a direct commit on main.
    pub(super) fn auto_deploy(
        &self,
        state: &mut State,
        at: Timestamp,
        service: &str,
        sha: &str,
    ) -> anyhow::Result<()> {
        let plan = world::service(service).with_context(|| format!("no service {service}"))?;
        let commit = self.commit_of(service, sha)?;
        let release = crate::platform::release(plan, "dev", &commit);
        let path = crate::platform::release_path(service, "dev");
        let yaml = serde_saphyr::to_string(&release)?;
        self.commit_gitops(
            state,
            people::RELEASE_OPERATOR,
            at,
            &format!("Deploy {service} {} to dev", commit.short()),
            [(path.clone(), yaml.into_bytes())].into(),
        )?;
        state.note(
            at,
            format!(
                "release-operator: dev {service} -> {} (autoDeploy)",
                commit.short()
            ),
        );
        Ok(())
    }

    /// PipelineRuns per service the pruner keeps: those seeded, at least [`RUNS_KEPT`].
    pub(super) fn seeded_runs(&self) -> BTreeMap<String, usize> {
        let mut kept: BTreeMap<String, usize> = world::SERVICES
            .iter()
            .map(|plan| (plan.name.to_string(), 0))
            .collect();
        if let Some(management) = self.management() {
            // Picked rather than listed: at scale there are tens of thousands of runs.
            let services =
                management.pick("tekton.dev/v1", "PipelineRun", Some(CI_NAMESPACE), |run| {
                    Some(str_at(run, COMPONENT_LABEL).to_string())
                });
            for service in services {
                if let Some(count) = kept.get_mut(&service) {
                    *count += 1;
                }
            }
        }
        for count in kept.values_mut() {
            *count = (*count).max(RUNS_KEPT);
        }
        kept
    }

    /// Prunes each service's oldest PipelineRuns and their TaskRuns, as Tekton's pruner keeps the last
    /// few per pipeline; runs still building stay.
    pub(super) fn prune_runs(&self, state: &mut State) {
        let Some(management) = self.management() else {
            return;
        };
        let mut by_service: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        let runs = management.pick("tekton.dev/v1", "PipelineRun", Some(CI_NAMESPACE), |run| {
            Some((
                str_at(run, COMPONENT_LABEL).to_string(),
                str_at(run, "/metadata/creationTimestamp").to_string(),
                str_at(run, "/metadata/name").to_string(),
            ))
        });
        for (service, created, name) in runs {
            by_service.entry(service).or_default().push((created, name));
        }
        let mut doomed = Vec::new();
        for (service, mut runs) in by_service {
            let Some(&kept) = state.runs_kept.get(&service) else {
                continue;
            };
            // RFC 3339 in UTC sorts as time; names break ties.
            runs.sort();
            let excess = runs.len().saturating_sub(kept);
            doomed.extend(
                runs.into_iter()
                    .take(excess)
                    .map(|(_, name)| name)
                    .filter(|name| !state.builds.contains_key(name)),
            );
        }
        if doomed.is_empty() {
            return;
        }
        let doomed_task_runs =
            management.pick("tekton.dev/v1", "TaskRun", Some(CI_NAMESPACE), |task_run| {
                let owner = str_at(task_run, "/metadata/labels/tekton.dev~1pipelineRun");
                doomed
                    .iter()
                    .any(|name| name == owner)
                    .then(|| str_at(task_run, "/metadata/name").to_string())
            });
        for task_run in doomed_task_runs {
            let _ = management.delete("tekton.dev/v1", "TaskRun", Some(CI_NAMESPACE), &task_run);
        }
        let doomed_pods = management.pick("v1", "Pod", Some(CI_NAMESPACE), |pod| {
            let owner = str_at(pod, "/metadata/labels/tekton.dev~1pipelineRun");
            doomed
                .iter()
                .any(|name| name == owner)
                .then(|| str_at(pod, "/metadata/name").to_string())
        });
        for pod in doomed_pods {
            // Already gone is as good.
            let _ = management.delete("v1", "Pod", Some(CI_NAMESPACE), &pod);
        }
        for name in doomed {
            let _ = management.delete("tekton.dev/v1", "PipelineRun", Some(CI_NAMESPACE), &name);
        }
    }
}

/// Deletes the TaskRun pods of `service`'s runs older than its newest [`tekton::RUNS_WITH_PODS`], as a
/// cluster's pod garbage collection leaves only recent builds' pods (their logs go with them).
fn delete_old_pods(management: &crate::apiserver::ClusterStore, service: &str) {
    let mut runs = management.pick("tekton.dev/v1", "PipelineRun", Some(CI_NAMESPACE), |run| {
        (str_at(run, COMPONENT_LABEL) == service).then(|| {
            (
                str_at(run, "/metadata/creationTimestamp").to_string(),
                str_at(run, "/metadata/name").to_string(),
            )
        })
    });
    // RFC 3339 in UTC sorts as time; names break ties. Newest first.
    runs.sort_by(|a, b| b.cmp(a));
    let kept: Vec<String> = runs
        .into_iter()
        .take(tekton::RUNS_WITH_PODS)
        .map(|(_, name)| name)
        .collect();
    let doomed = management.pick("v1", "Pod", Some(CI_NAMESPACE), |pod| {
        let run = str_at(pod, "/metadata/labels/tekton.dev~1pipelineRun");
        (str_at(pod, COMPONENT_LABEL) == service && !kept.iter().any(|k| k == run))
            .then(|| str_at(pod, "/metadata/name").to_string())
    });
    for pod in doomed {
        // Already gone is as good.
        let _ = management.delete("v1", "Pod", Some(CI_NAMESPACE), &pod);
    }
}
