//! The fleet as the browser sees it: services and the live deltas that keep them current.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One service of the platform, as listed on the Overview. Built from its `Component`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServiceSummary {
    /// The Component's name, which is the service's name everywhere on the platform.
    pub name: String,
    /// The team that owns it (`spec.owner`).
    pub owner: String,
    /// What it does, in a sentence.
    pub description: String,
    /// Its source repository, `org/name`.
    pub repository: String,
    /// The scaffold template it was created from, `name@version`.
    pub template: String,
    /// Services it calls.
    pub depends_on: Vec<String>,
}

/// Where the server's knowledge of a source stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    /// The first list has not completed yet.
    Syncing,
    /// Watching and current.
    Connected,
}

/// A typed delta on the event stream (`GET /api/v1/events`), applied by the browser to its signals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FleetEvent {
    /// The whole set of services, sent first on every (re)connection so the client never works from a
    /// partial picture.
    Snapshot {
        /// Every service, by name.
        services: Vec<ServiceSummary>,
    },
    /// A service appeared or changed.
    ServiceUpserted {
        /// Its new summary.
        service: ServiceSummary,
    },
    /// A service went away.
    ServiceRemoved {
        /// Its name.
        name: String,
    },
}

/// The name SSE messages carrying a [`FleetEvent`] are sent under.
pub const FLEET_EVENT_NAME: &str = "fleet";

/// The fleet as a client holds it: services by name, kept current by applying [`FleetEvent`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fleet {
    services: BTreeMap<String, ServiceSummary>,
}

impl Fleet {
    /// A fleet holding exactly `services`.
    pub fn from_services(services: impl IntoIterator<Item = ServiceSummary>) -> Self {
        Self {
            services: services.into_iter().map(|s| (s.name.clone(), s)).collect(),
        }
    }

    /// Applies one delta; applying the same delta twice is harmless.
    pub fn apply(&mut self, event: FleetEvent) {
        match event {
            FleetEvent::Snapshot { services } => *self = Self::from_services(services),
            FleetEvent::ServiceUpserted { service } => {
                self.services.insert(service.name.clone(), service);
            }
            FleetEvent::ServiceRemoved { name } => {
                self.services.remove(&name);
            }
        }
    }

    /// Services in name order.
    pub fn services(&self) -> impl Iterator<Item = &ServiceSummary> {
        self.services.values()
    }

    /// One service by name.
    pub fn service(&self, name: &str) -> Option<&ServiceSummary> {
        self.services.get(name)
    }

    /// How many services there are.
    pub fn len(&self) -> usize {
        self.services.len()
    }

    /// How many distinct teams own the services.
    pub fn team_count(&self) -> usize {
        self.services
            .values()
            .map(|s| s.owner.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }

    /// Services whose name, owner or description contains `query` (case-insensitive), in name order.
    pub fn search<'a>(&'a self, query: &'a str) -> impl Iterator<Item = &'a ServiceSummary> + 'a {
        let needle = query.trim().to_lowercase();
        self.services().filter(move |s| {
            needle.is_empty()
                || s.name.to_lowercase().contains(&needle)
                || s.owner.to_lowercase().contains(&needle)
                || s.description.to_lowercase().contains(&needle)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str, owner: &str) -> ServiceSummary {
        ServiceSummary {
            name: name.into(),
            owner: owner.into(),
            description: format!("{name} service"),
            repository: format!("acme/{name}"),
            template: "go-service@1.0.0".into(),
            depends_on: vec![],
        }
    }

    #[test]
    fn a_snapshot_replaces_whatever_the_client_held() {
        let mut fleet = Fleet::from_services([service("old", "a")]);
        fleet.apply(FleetEvent::Snapshot {
            services: vec![service("payments", "payments"), service("checkout", "shop")],
        });
        let names: Vec<_> = fleet.services().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["checkout", "payments"]);
    }

    #[test]
    fn upserts_add_and_change_services_and_removals_drop_them() {
        let mut fleet = Fleet::default();
        fleet.apply(FleetEvent::ServiceUpserted {
            service: service("payments", "payments"),
        });
        fleet.apply(FleetEvent::ServiceUpserted {
            service: service("payments", "billing"),
        });
        assert_eq!(fleet.len(), 1);
        assert_eq!(
            fleet.service("payments").map(|s| s.owner.as_str()),
            Some("billing")
        );
        fleet.apply(FleetEvent::ServiceRemoved {
            name: "payments".into(),
        });
        assert!(fleet.is_empty());
        // A removal of something unknown (a duplicate delivery) changes nothing.
        fleet.apply(FleetEvent::ServiceRemoved {
            name: "payments".into(),
        });
        assert!(fleet.is_empty());
    }

    #[test]
    fn search_matches_name_owner_or_description_ignoring_case() {
        let fleet =
            Fleet::from_services([service("payments", "money"), service("search", "discovery")]);
        let hits = |q: &str| fleet.search(q).map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(hits("PAY"), ["payments"]);
        assert_eq!(hits("discovery"), ["search"]);
        assert_eq!(hits("  "), ["payments", "search"]);
        assert!(hits("nothing").is_empty());
    }

    #[test]
    fn events_have_a_stable_wire_shape() {
        let json = serde_json::to_value(FleetEvent::ServiceRemoved { name: "x".into() }).ok();
        assert_eq!(
            json,
            Some(serde_json::json!({"type": "service_removed", "name": "x"}))
        );
    }
}
