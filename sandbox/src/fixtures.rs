//! A believable platform: eight services owned by three teams.

use shared::crd::{Component, ComponentSpec, PLATFORM_NAMESPACE, TemplateRef};

use crate::apiserver::{ClusterStore, StoreError};

/// One fixture service: name, owner team, description, scaffold template, the services it calls.
struct ServiceFixture {
    name: &'static str,
    team: &'static str,
    description: &'static str,
    template: &'static str,
    depends_on: &'static [&'static str],
}

/// The fleet: payments, shop and discovery teams.
const SERVICES: [ServiceFixture; 8] = [
    ServiceFixture {
        name: "payments",
        team: "payments",
        description: "Takes card and wallet payments.",
        template: "go-service",
        depends_on: &["ledger"],
    },
    ServiceFixture {
        name: "ledger",
        team: "payments",
        description: "Double-entry ledger of every money movement.",
        template: "go-service",
        depends_on: &[],
    },
    ServiceFixture {
        name: "refunds",
        team: "payments",
        description: "Refunds and chargebacks.",
        template: "go-service",
        depends_on: &["payments", "ledger"],
    },
    ServiceFixture {
        name: "checkout",
        team: "shop",
        description: "Turns a cart into an order.",
        template: "node-service",
        depends_on: &["cart", "payments", "catalog"],
    },
    ServiceFixture {
        name: "cart",
        team: "shop",
        description: "Shopping carts.",
        template: "node-service",
        depends_on: &["catalog"],
    },
    ServiceFixture {
        name: "catalog",
        team: "shop",
        description: "Products, prices and stock.",
        template: "go-service",
        depends_on: &[],
    },
    ServiceFixture {
        name: "search",
        team: "discovery",
        description: "Full-text product search.",
        template: "rust-service",
        depends_on: &["catalog"],
    },
    ServiceFixture {
        name: "recommendations",
        team: "discovery",
        description: "Products people also bought.",
        template: "python-service",
        depends_on: &["catalog", "search"],
    },
];

/// The GitHub organisation the services' repositories live in.
pub const ORGANISATION: &str = "acme";

/// The Component of fixture service `name`, as `platform/registry/<name>.yaml` declares it.
fn component(service: &ServiceFixture) -> Component {
    let mut component = Component::new(
        service.name,
        ComponentSpec {
            owner: service.team.into(),
            repository: format!("{ORGANISATION}/{}", service.name),
            template: TemplateRef {
                name: service.template.into(),
                version: "1.4.0".into(),
            },
            description: service.description.into(),
            depends_on: service
                .depends_on
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
        },
    );
    component.metadata.namespace = Some(PLATFORM_NAMESPACE.into());
    component
}

/// Puts the platform resources on the management cluster.
pub fn seed_management(cluster: &ClusterStore) -> Result<(), StoreError> {
    for service in &SERVICES {
        cluster.apply_typed(&component(service))?;
    }
    Ok(())
}
