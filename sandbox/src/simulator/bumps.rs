//! The platform shipping itself: a green build of an in-house component (`release-operator`,
//! `schema-operator`, `tower`) has its CI bot (`<component>-ci[bot]`) commit the version bump to
//! `infra/<component>/<cluster>.yaml` (and the image tag in `values/`) on dev first, management a minute
//! and a half later; prod follows ten minutes later, one version behind (to what dev ran before). The
//! ApplicationSet controller and Argo CD take it from there: the Application's version annotation and chart
//! revision change, it goes OutOfSync, syncs (Running, Succeeded) and settles (Progressing, Healthy).
//!
//! [`Inner::bump`] is one such commit, which `POST /sandbox/platform/bump` also makes on demand
//! ([`super::control`]); a third-party component's bump is committed by the platform admin.

use anyhow::Context as _;
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Action, Inner, State, secs};
use crate::git::people;
use crate::platform::{InfraFile, infra_path, values_path};
use crate::world::{
    GITOPS_REPOSITORY, MANAGEMENT_ENVIRONMENT, PLATFORM_COMPONENTS, platform_component,
};

/// Seconds between two green builds of an in-house component in the demo, as a range to draw from.
pub(super) const BUILD_INTERVAL: (u64, u64) = (20 * 60, 40 * 60);
/// When the demo's first builds of the in-house components come, in seconds from its start.
const FIRST_BUILD: (u64, u64) = (4 * 60, 12 * 60);
/// How long after dev's bump the management cluster's follows.
const MANAGEMENT_DELAY: i64 = 90;
/// How long after dev's bump prod follows, one version behind.
const PROD_DELAY: i64 = 10 * 60;
/// Who bumps a third-party component when asked to ([`Inner::bump`]): the platform admin.
const THIRD_PARTY_AUTHOR: &str = "root";

/// One version bump committed to `application-repositories`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bumped {
    /// The platform component.
    pub component: String,
    /// The cluster it moved on.
    pub cluster: String,
    /// The version it moved to.
    pub version: String,
    /// The version it ran before.
    pub previous: String,
    /// The commit on main of `application-repositories`.
    pub commit: String,
    /// The infra file the commit changed (`infra/release-operator/dev.yaml`).
    pub file: String,
    /// Who committed it (`release-operator-ci[bot]`).
    pub author: String,
}

/// Why a bump was not made.
#[derive(Debug, thiserror::Error)]
pub enum BumpError {
    /// No platform component has that name.
    #[error("no platform component named `{name}`; there are {known}")]
    UnknownComponent {
        /// The name asked for.
        name: String,
        /// The components there are, comma-separated.
        known: String,
    },
    /// The component does not run on that cluster.
    #[error("{component} does not run on a cluster named `{cluster}`; it runs on {clusters}")]
    NotOnCluster {
        /// The component.
        component: String,
        /// The cluster asked for.
        cluster: String,
        /// The clusters it runs on, comma-separated.
        clusters: String,
    },
    /// The version asked for is empty.
    #[error("the version must not be empty")]
    EmptyVersion,
    /// Reading or committing the files failed.
    #[error("committing the bump failed")]
    Failed(#[from] anyhow::Error),
}

/// Schedules the demo's first green build of each in-house component.
pub(super) fn schedule_builds(state: &mut State, now: Timestamp) {
    for component in PLATFORM_COMPONENTS.iter().filter(|c| c.in_house) {
        let first = state.rng.range(FIRST_BUILD.0, FIRST_BUILD.1) as i64;
        state.schedule(
            secs(now, first),
            Action::ComponentBuild {
                component: component.name.into(),
            },
        );
    }
}

/// The next patch version: `1.9.0` gives `1.9.1`, `v0.62.9` gives `v0.62.10`; a version not ending in a
/// number gets `.1` appended.
pub fn next_patch(version: &str) -> String {
    match version.rsplit_once('.') {
        Some((head, last)) if last.parse::<u64>().is_ok() => {
            let next = last.parse::<u64>().unwrap_or_default().saturating_add(1);
            format!("{head}.{next}")
        }
        _ => format!("{version}.1"),
    }
}

impl Inner {
    /// The version `component` runs on `cluster` according to main, if it has a file there.
    fn version_on(&self, component: &str, cluster: &str) -> anyhow::Result<Option<String>> {
        let git = self.world.repositories.git(GITOPS_REPOSITORY);
        let path = infra_path(component, cluster);
        let Some(text) = git.try_run(&["show", &format!("refs/heads/main:{path}")])? else {
            return Ok(None);
        };
        let file: InfraFile = serde_saphyr::from_str(&text)
            .with_context(|| format!("{path} is not an infra file"))?;
        Ok(Some(file.chart.version))
    }

    /// Commits `component` moving to `version` (by default the next patch version) on `cluster`: its infra
    /// file's chart version and, for an in-house component, its image tag, as its CI bot.
    pub(super) fn bump(
        &self,
        state: &mut State,
        at: Timestamp,
        component: &str,
        cluster: &str,
        version: Option<&str>,
    ) -> Result<Bumped, BumpError> {
        let Some(plan) = platform_component(component) else {
            return Err(BumpError::UnknownComponent {
                name: component.into(),
                known: PLATFORM_COMPONENTS
                    .iter()
                    .map(|c| c.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let clusters = crate::platform::clusters_running(&self.world.topology, plan.environments);
        let previous = match self.version_on(component, cluster)? {
            Some(previous) if clusters.iter().any(|c| c == cluster) => previous,
            _ => {
                return Err(BumpError::NotOnCluster {
                    component: component.into(),
                    cluster: cluster.into(),
                    clusters: clusters.join(", "),
                });
            }
        };
        let version = match version.map(str::trim) {
            Some("") => return Err(BumpError::EmptyVersion),
            Some(version) => version.to_owned(),
            None => next_patch(&previous),
        };
        let git = self.world.repositories.git(GITOPS_REPOSITORY);
        let path = infra_path(component, cluster);
        let mut infra: InfraFile = serde_saphyr::from_str(
            &git.run(&["show", &format!("refs/heads/main:{path}")])
                .context("reading the infra file")?,
        )
        .with_context(|| format!("{path} is not an infra file"))?;
        infra.chart.version = version.clone();
        let mut files = std::collections::BTreeMap::new();
        files.insert(
            path.clone(),
            serde_saphyr::to_string(&infra)
                .context("writing the infra file")?
                .into_bytes(),
        );
        let values = values_path(component, cluster);
        if plan.in_house
            && let Some(text) = git
                .try_run(&["show", &format!("refs/heads/main:{values}")])
                .context("reading the values")?
        {
            let mut parsed: Value =
                serde_saphyr::from_str(&text).with_context(|| format!("{values} is not YAML"))?;
            parsed["image"]["tag"] = json!(version);
            files.insert(
                values,
                serde_saphyr::to_string(&parsed)
                    .context("writing the values")?
                    .into_bytes(),
            );
        }
        let (author, message) = if plan.in_house {
            (
                people::ci_bot(component),
                crate::git::bump_message(component, &version, cluster),
            )
        } else {
            (
                THIRD_PARTY_AUTHOR.to_owned(),
                format!("Bump {component} to {version} on {cluster}"),
            )
        };
        let commit = self.commit_gitops(state, &author, at, &message, files)?;
        state.note(
            at,
            format!("{author}: {component} {previous} -> {version} on {cluster}"),
        );
        Ok(Bumped {
            component: component.into(),
            cluster: cluster.into(),
            version,
            previous,
            commit,
            file: path,
            author,
        })
    }

    /// A green build of `component`: its bot bumps dev (or management, where it only runs there) to the
    /// next patch version, and schedules management's bump and prod's, one version behind.
    pub(super) fn component_build(
        &self,
        state: &mut State,
        at: Timestamp,
        component: &str,
    ) -> anyhow::Result<()> {
        let plan = platform_component(component)
            .with_context(|| format!("no platform component {component}"))?;
        let lead_environment = if plan.runs_in("dev") {
            "dev"
        } else {
            MANAGEMENT_ENVIRONMENT
        };
        let topology = &self.world.topology;
        let lead = topology
            .cluster_names_of(lead_environment)
            .into_iter()
            .next()
            .with_context(|| format!("no cluster runs {lead_environment}"))?;
        let before = self
            .version_on(component, &lead)?
            .with_context(|| format!("{component} has no file for {lead}"))?;
        let bumped = self.bump(state, at, component, &lead, None)?;
        let mut follow = Vec::new();
        if lead_environment == "dev" && plan.runs_in(MANAGEMENT_ENVIRONMENT) {
            for cluster in topology.cluster_names_of(MANAGEMENT_ENVIRONMENT) {
                follow.push((MANAGEMENT_DELAY, cluster, bumped.version.clone()));
            }
        }
        if plan.runs_in("prod") {
            for cluster in topology.cluster_names_of("prod") {
                follow.push((PROD_DELAY, cluster, before.clone()));
            }
        }
        for (delay, cluster, version) in follow {
            state.schedule(
                secs(at, delay),
                Action::ComponentBump {
                    component: component.into(),
                    cluster,
                    version,
                },
            );
        }
        Ok(())
    }

    /// A scheduled bump of `component` on `cluster` to `version`, unless it runs that already.
    pub(super) fn component_bump(
        &self,
        state: &mut State,
        at: Timestamp,
        component: &str,
        cluster: &str,
        version: &str,
    ) -> anyhow::Result<()> {
        if self.version_on(component, cluster)?.as_deref() == Some(version) {
            return Ok(());
        }
        self.bump(state, at, component, cluster, Some(version))
            .map(drop)
            .map_err(anyhow::Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_patch_version_counts_on_from_the_last_number() {
        assert_eq!(next_patch("1.9.0"), "1.9.1");
        assert_eq!(next_patch("v0.62.9"), "v0.62.10");
        assert_eq!(next_patch("1.0.0-rc"), "1.0.0-rc.1");
        assert_eq!(next_patch("latest"), "latest.1");
    }
}
