//! Green builds, read from the pipeline caches ([`crate::pipelines`]): a run of main whose `Succeeded`
//! condition is `True` and that names its commit is a green build — an image tagged with that commit and a
//! chart at it. Runs of other branches (pull requests) build images nobody deploys, so they never count.

use std::time::Duration;

use shared::delivery::BuildView;
use shared::pipelines::RunStatus;

use crate::pipelines::Pipelines;
use crate::pipelines::index::is_main;

/// The green builds of every service, over the pipeline caches.
#[derive(Clone, Debug)]
pub struct Builds {
    pipelines: Pipelines,
}

impl Builds {
    /// Green builds from `pipelines`.
    pub fn new(pipelines: Pipelines) -> Self {
        Self { pipelines }
    }

    /// Waits for the caches' first list, at most `limit`; false if it has not completed.
    pub async fn wait_until_ready(&self, limit: Duration) -> bool {
        self.pipelines.wait_until_ready(limit).await
    }

    /// The green builds of `service`, newest first, one per commit.
    pub fn green(&self, service: &str) -> Vec<BuildView> {
        let mut builds: Vec<BuildView> = self
            .pipelines
            .service_runs(service)
            .iter()
            .filter(|run| run.status == RunStatus::Succeeded && is_main(run.branch.as_deref()))
            .filter_map(|run| {
                let commit = run.commit.clone()?;
                Some(BuildView {
                    version: commit.chars().take(7).collect(),
                    message: run.message.clone(),
                    author: run.author.clone(),
                    finished_at: run.finished_at.clone(),
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
