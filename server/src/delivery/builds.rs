//! Green builds: the management cluster's Tekton PipelineRuns, kept in a watch cache (handlers never list
//! from the cluster). A run carries its component as a label and its commit as an annotation; a run whose
//! `Succeeded` condition is `True` is a green build — an image tagged with that commit and a chart at it.

use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource as _};
use serde_json::Value;
use shared::delivery::BuildView;

/// The annotation carrying the full commit a PipelineRun builds.
pub const COMMIT_ANNOTATION: &str = "platform.tower.dev/commit";
/// The annotation carrying the commit message's first line, when CI sets it.
const MESSAGE_ANNOTATION: &str = "platform.tower.dev/commit-message";
/// The annotation carrying the commit's author, when CI sets it.
const AUTHOR_ANNOTATION: &str = "platform.tower.dev/author";

/// Whether a run has finished and failed.
fn failed(run: &DynamicObject) -> bool {
    run.data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                text(c, &["type"]) == Some("Succeeded") && text(c, &["status"]) == Some("False")
            })
        })
}

/// The PipelineRun cache.
#[derive(Clone)]
pub struct Builds {
    store: Store<DynamicObject>,
    component_label: String,
}

fn pipeline_runs() -> ApiResource {
    ApiResource {
        group: "tekton.dev".into(),
        version: "v1".into(),
        api_version: "tekton.dev/v1".into(),
        kind: "PipelineRun".into(),
        plural: "pipelineruns".into(),
    }
}

fn text<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
}

impl Builds {
    /// Starts watching PipelineRuns on the management cluster; each run that fails is told to `fleet`'s
    /// activity feed.
    pub fn start(
        client: Client,
        component_label: String,
        fleet: Option<crate::fleet::FleetModel>,
    ) -> Self {
        let resource = pipeline_runs();
        let api = Api::<DynamicObject>::all_with(client, &resource);
        let writer = reflector::store::Writer::new(resource);
        let store = writer.as_reader();
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            // Only labels, annotations and status are read; task specs and managed fields are most of a run.
            .modify(|run: &mut DynamicObject| {
                run.meta_mut().managed_fields = None;
                if let Some(object) = run.data.as_object_mut() {
                    object.remove("spec");
                    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
                        status.retain(|key, _| key == "conditions" || key == "completionTime");
                    }
                }
            })
            .reflect(writer);
        let label = component_label.clone();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            // Runs already reported (or failed before Tower started), so each failure is told once.
            let mut known_failed = std::collections::HashSet::new();
            let mut listed = false;
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::InitApply(run)) if failed(&run) => {
                        known_failed.insert(run.metadata.name.clone().unwrap_or_default());
                    }
                    Ok(watcher::Event::InitDone) => listed = true,
                    Ok(watcher::Event::Apply(run)) if listed && failed(&run) => {
                        let name = run.metadata.name.clone().unwrap_or_default();
                        if known_failed.len() > 10_000 {
                            known_failed.clear();
                        }
                        if known_failed.insert(name.clone())
                            && let Some(fleet) = &fleet
                        {
                            let service = run
                                .metadata
                                .labels
                                .as_ref()
                                .and_then(|l| l.get(&label))
                                .cloned()
                                .unwrap_or_default();
                            let commit: String = run
                                .metadata
                                .annotations
                                .as_ref()
                                .and_then(|a| a.get(COMMIT_ANNOTATION))
                                .map(|c| c.chars().take(7).collect())
                                .unwrap_or_default();
                            fleet.record(shared::fleet::ActivityItem {
                                at: jiff::Timestamp::now().to_string(),
                                service: service.clone(),
                                environment: None,
                                kind: shared::fleet::ActivityKind::PipelineFailed,
                                message: format!("build of {commit} failed ({name})"),
                                link: None,
                            });
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "PipelineRun watch failed; retrying with backoff")
                    }
                }
            }
        });
        Self {
            store,
            component_label,
        }
    }

    /// A cache over an existing store (tests).
    pub fn from_store(store: Store<DynamicObject>, component_label: String) -> Self {
        Self {
            store,
            component_label,
        }
    }

    /// Waits for the first list, at most `limit`; false if it has not completed.
    pub async fn wait_until_ready(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.store.wait_until_ready())
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The green builds of `service`, newest first, one per commit.
    pub fn green(&self, service: &str) -> Vec<BuildView> {
        let mut builds: Vec<BuildView> = self
            .store
            .state()
            .iter()
            .filter(|run| {
                run.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(&self.component_label))
                    .is_some_and(|c| c == service)
            })
            .filter(|run| {
                run.data
                    .get("status")
                    .and_then(|s| s.get("conditions"))
                    .and_then(Value::as_array)
                    .is_some_and(|conditions| {
                        conditions.iter().any(|c| {
                            text(c, &["type"]) == Some("Succeeded")
                                && text(c, &["status"]) == Some("True")
                        })
                    })
            })
            .filter_map(|run| {
                let annotations = run.metadata.annotations.as_ref()?;
                let commit = annotations.get(COMMIT_ANNOTATION)?.clone();
                Some(BuildView {
                    version: commit.chars().take(7).collect(),
                    message: annotations.get(MESSAGE_ANNOTATION).cloned(),
                    author: annotations.get(AUTHOR_ANNOTATION).cloned(),
                    finished_at: text(&run.data, &["status", "completionTime"]).map(String::from),
                    commit,
                })
            })
            .collect();
        // RFC 3339 in UTC sorts as text; a re-run of a commit counts once.
        builds.sort_by(|a, b| b.finished_at.cmp(&a.finished_at));
        let mut seen = std::collections::BTreeSet::new();
        builds.retain(|b| seen.insert(b.commit.clone()));
        builds
    }

    /// The green build of `service` whose commit starts with `version`, if there is one.
    pub fn find_green(&self, service: &str, version: &str) -> Option<BuildView> {
        self.green(service)
            .into_iter()
            .find(|b| b.commit.starts_with(version))
    }
}
