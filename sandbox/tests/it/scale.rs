//! Scale mode: generated services seeded next to the plan's, seen by a kube-rs client over HTTP.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use sandbox::{Options, Sandbox};

fn client(sandbox: &Sandbox, cluster: &str) -> kube::Client {
    let config = kube::Config::new(sandbox.cluster_url(cluster).parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_mode_seeds_fifty_more_services_that_a_kube_client_lists() {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.scale = Some(50);
    // Each service's two builds only: the run share is checked in `tests/pipelines.rs`.
    options.scale_runs = 0;
    let sandbox = Sandbox::start_with(options).await.unwrap();

    let management = client(&sandbox, "management");
    let components: Api<shared::crd::Component> = Api::all(management.clone());
    let listed = components.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 50 + 8);
    assert!(
        listed
            .items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("svc-0050"))
    );

    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    let applications: Api<DynamicObject> = Api::all_with(management, &ApiResource::from_gvk(&gvk));
    // The services' Applications: those labelled with their component (the platform's own are not).
    let apps = applications
        .list(&ListParams::default().labels("platform.tower.dev/component"))
        .await
        .unwrap();
    assert_eq!(apps.items.len(), (50 + 8) * 2);
    let generated = apps
        .items
        .iter()
        .filter(|a| {
            a.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("svc-"))
        })
        .count();
    assert_eq!(generated, 100);

    for (env, per_service) in [("dev", 2), ("prod", 3)] {
        let pods: Api<Pod> = Api::all(client(&sandbox, env));
        let selected = pods
            .list(&ListParams::default().labels("platform.tower.dev/component=svc-0007"))
            .await
            .unwrap();
        assert_eq!(selected.items.len(), per_service, "{env}");
        let all = pods.list(&ListParams::default()).await.unwrap();
        assert!(all.items.len() >= 50 * per_service, "{env}");
    }
}

/// A benchmark more than a test: `cargo test -p sandbox --test scale -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: seeds a thousand services"]
async fn a_thousand_services_seed_in_seconds() {
    let started = std::time::Instant::now();
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.scale = Some(1_000);
    // Each service's two builds, as before runs had a share of their own.
    options.scale_runs = 0;
    let sandbox = Sandbox::start_with(options).await.unwrap();
    let elapsed = started.elapsed();
    let pods: usize = ["dev", "prod"]
        .iter()
        .map(|env| sandbox.cluster(env).unwrap().list("v1", "Pod").len())
        .sum();
    println!("seeded 1,000 services ({pods} pods) in {elapsed:?}");
    assert!(elapsed.as_secs() < 60);
}
