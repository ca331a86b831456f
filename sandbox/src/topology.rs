//! Which clusters the sandbox runs and which Argo CD deploys to each.
//!
//! There is always the management cluster and one workload cluster for dev, named `dev`. Prod runs on one
//! cluster named `prod`, or, with [`crate::Options::prod_clusters`] of two or more, on one cluster per
//! region (`prod-eu`, `prod-us`, …) and none named `prod`. Every prod cluster carries the same workloads and
//! gets its own Application per service (`payments-prod-eu`); `prod-us` is deployed by an Argo CD of its
//! own, as a region with its own control plane would be.
//!
//! A cluster named after its environment is that environment's only cluster: that is what keeps the
//! one-cluster world exactly as it was (`payments-prod` deploying to `prod`).

use crate::world::ENVIRONMENTS;

/// The management cluster: Components, Releases, Applications and pipelines live there.
pub const MANAGEMENT: &str = "management";
/// The environment that may span several clusters.
pub const PROD: &str = "prod";
/// The regions prod clusters are named after, in the order they are added: `prod-eu`, then `prod-us`, …
pub const PROD_REGIONS: [&str; 4] = ["eu", "us", "ap", "sa"];
/// The most prod clusters a sandbox runs: one per region.
pub const MAX_PROD_CLUSTERS: usize = PROD_REGIONS.len();
/// The Argo CD instance deploying to every cluster that has no instance of its own; served at `/argocd`.
pub const MAIN_ARGOCD: &str = "argocd";
/// The prod cluster deployed by an Argo CD of its own (named like it, served at `/argocd-us`) when prod spans
/// several clusters.
pub const SEPARATE_ARGOCD: (&str, &str) = ("argocd-us", "prod-us");

/// A workload cluster and the environment it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadCluster {
    /// One of [`ENVIRONMENTS`].
    pub environment: &'static str,
    /// The cluster's name: its path under `/clusters/`, its Argo CD cluster secret's `name`.
    pub name: String,
}

impl WorkloadCluster {
    /// Whether this cluster is its environment's only one (it is then named like it).
    pub fn is_alone(&self) -> bool {
        self.name == self.environment
    }
}

/// An Argo CD instance of the sandbox and the workload clusters it deploys to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgoCdPlan {
    /// Its name, also the path it is served under (`/argocd`).
    pub name: String,
    /// The clusters it deploys to; empty: every cluster no other instance names.
    pub clusters: Vec<String>,
}

/// The clusters of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    workloads: Vec<WorkloadCluster>,
}

impl Default for Topology {
    /// One workload cluster per environment, named like it.
    fn default() -> Self {
        Self {
            workloads: ENVIRONMENTS
                .iter()
                .map(|environment| WorkloadCluster {
                    environment,
                    name: (*environment).to_owned(),
                })
                .collect(),
        }
    }
}

impl Topology {
    /// Dev on one cluster and prod on `count` (1 to [`MAX_PROD_CLUSTERS`]).
    pub fn with_prod_clusters(count: usize) -> anyhow::Result<Self> {
        if !(1..=MAX_PROD_CLUSTERS).contains(&count) {
            anyhow::bail!("prod runs on 1 to {MAX_PROD_CLUSTERS} clusters, not {count}");
        }
        let mut topology = Self::default();
        if count > 1 {
            topology
                .workloads
                .retain(|cluster| cluster.environment != PROD);
            topology
                .workloads
                .extend(PROD_REGIONS[..count].iter().map(|region| WorkloadCluster {
                    environment: PROD,
                    name: format!("{PROD}-{region}"),
                }));
        }
        Ok(topology)
    }

    /// The workload clusters, environment by environment in [`ENVIRONMENTS`]' order.
    pub fn workload_clusters(&self) -> &[WorkloadCluster] {
        &self.workloads
    }

    /// The names of every cluster, the management cluster first.
    pub fn cluster_names(&self) -> Vec<&str> {
        std::iter::once(MANAGEMENT)
            .chain(self.workloads.iter().map(|cluster| cluster.name.as_str()))
            .collect()
    }

    /// The workload clusters running `environment`.
    pub fn clusters_of<'a>(
        &'a self,
        environment: &'a str,
    ) -> impl Iterator<Item = &'a WorkloadCluster> + 'a {
        self.workloads
            .iter()
            .filter(move |cluster| cluster.environment == environment)
    }

    /// The names of the clusters of `environment`: the management cluster for
    /// [`crate::world::MANAGEMENT_ENVIRONMENT`], else its workload clusters.
    pub fn cluster_names_of(&self, environment: &str) -> Vec<String> {
        if environment == crate::world::MANAGEMENT_ENVIRONMENT {
            return vec![MANAGEMENT.to_owned()];
        }
        self.clusters_of(environment)
            .map(|cluster| cluster.name.clone())
            .collect()
    }

    /// The environment cluster `name` runs (the management cluster's is
    /// [`crate::world::MANAGEMENT_ENVIRONMENT`]), if the sandbox has that cluster.
    pub fn environment_of(&self, name: &str) -> Option<&'static str> {
        if name == MANAGEMENT {
            return Some(crate::world::MANAGEMENT_ENVIRONMENT);
        }
        self.workload_cluster(name)
            .map(|cluster| cluster.environment)
    }

    /// The workload cluster named `name`.
    pub fn workload_cluster(&self, name: &str) -> Option<&WorkloadCluster> {
        self.workloads.iter().find(|cluster| cluster.name == name)
    }

    /// The Argo CD instances: the main one, then one per cluster that has its own.
    pub fn argocd_instances(&self) -> Vec<ArgoCdPlan> {
        let (separate, cluster) = SEPARATE_ARGOCD;
        let mut instances = vec![ArgoCdPlan {
            name: MAIN_ARGOCD.to_owned(),
            clusters: Vec::new(),
        }];
        if self.workload_cluster(cluster).is_some() {
            instances.push(ArgoCdPlan {
                name: separate.to_owned(),
                clusters: vec![cluster.to_owned()],
            });
        }
        instances
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_prod_cluster_is_named_prod_as_before() {
        let topology = Topology::with_prod_clusters(1).expect("one prod cluster");
        assert_eq!(topology, Topology::default());
        assert_eq!(topology.cluster_names(), ["management", "dev", "prod"]);
        assert!(
            topology
                .workload_clusters()
                .iter()
                .all(WorkloadCluster::is_alone)
        );
        assert_eq!(
            topology.argocd_instances(),
            [ArgoCdPlan {
                name: "argocd".into(),
                clusters: vec![]
            }]
        );
    }

    #[test]
    fn several_prod_clusters_are_named_by_region_and_prod_us_has_its_own_argo_cd() {
        let topology = Topology::with_prod_clusters(3).expect("three prod clusters");
        assert_eq!(
            topology.cluster_names(),
            ["management", "dev", "prod-eu", "prod-us", "prod-ap"]
        );
        let prod: Vec<&str> = topology
            .clusters_of("prod")
            .map(|cluster| cluster.name.as_str())
            .collect();
        assert_eq!(prod, ["prod-eu", "prod-us", "prod-ap"]);
        assert_eq!(
            topology.workload_cluster("prod-us").map(|c| c.environment),
            Some("prod")
        );
        assert!(topology.workload_cluster("prod").is_none());
        assert_eq!(
            topology.argocd_instances(),
            [
                ArgoCdPlan {
                    name: "argocd".into(),
                    clusters: vec![]
                },
                ArgoCdPlan {
                    name: "argocd-us".into(),
                    clusters: vec!["prod-us".into()]
                },
            ]
        );
    }

    #[test]
    fn prod_runs_on_at_least_one_and_at_most_one_cluster_per_region() {
        assert!(Topology::with_prod_clusters(0).is_err());
        assert!(Topology::with_prod_clusters(MAX_PROD_CLUSTERS).is_ok());
        assert!(Topology::with_prod_clusters(MAX_PROD_CLUSTERS + 1).is_err());
    }
}
