//! The sandbox's world read by Tower from the sandbox's emulated API servers and from real ones holding the same
//! objects: the service list and every service page answer the same, apart from what a server assigns
//! (resourceVersions, uids, creation times).

use serde_json::Value;

use crate::Tower;

/// `value` without what differs between two servers holding the same objects: resourceVersions and uids are
/// the server's, and a real server stamps `creationTimestamp` itself, so every time is blanked. What the
/// catalog scan of the forge adds is left out too: each Tower scans on its own schedule.
fn comparable(value: &Value) -> Value {
    match value {
        Value::Object(fields) => fields
            .iter()
            .filter(|(key, _)| {
                !matches!(
                    key.as_str(),
                    "resourceVersion" | "uid" | "catalog" | "catalog_state"
                )
            })
            .map(|(key, value)| (key.clone(), comparable(value)))
            .collect(),
        Value::Array(items) => items
            .iter()
            .filter(|item| !made_by_the_servers_ip_repair(item))
            .map(comparable)
            .collect(),
        Value::String(text) if text.parse::<jiff::Timestamp>().is_ok() => "<time>".into(),
        other => other.clone(),
    }
}

/// Whether `item` is the Warning a real API server records when its Service IP repair sees a Service before
/// the IPAddress allocated with it (`repairip.go`: two informers, no order between them). Loading a copy
/// creates every Service at once, so now and then one gets it; it is the server's bookkeeping, not part of
/// the world copied, and Tower shows it as it would any Warning.
fn made_by_the_servers_ip_repair(item: &Value) -> bool {
    item["reason"] == "ClusterIPNotAllocated"
}

/// The services of a list that have a Component (the catalog scan adds the others when it gets to them).
fn onboarded(services: &Value) -> Value {
    services
        .as_array()
        .into_iter()
        .flatten()
        .filter(|service| service["catalog_state"] != "not_onboarded")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fleet_from_real_api_servers_equals_the_fleet_from_the_sandbox() {
    if !testbed::binaries_present() {
        return;
    }
    let (sandbox, platform) = crate::sandbox_and_copy().await;
    let listen = "127.0.0.1:0".parse().unwrap();
    let emulated = Tower::start(&server::sandbox_cli::tower_config(&sandbox, listen)).await;
    // Tower's own tokens, bound only to the roles `cargo xtask manifests` generates: every watch must work.
    let real = Tower::start(&platform.tower_config(&sandbox, listen).unwrap()).await;

    let expected = same_answer(&emulated, &real, "/api/v1/services", onboarded).await;
    let names: Vec<&str> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(|service| service["name"].as_str().unwrap())
        .collect();
    assert!(
        names.len() >= 8,
        "the fixture fleet has eight services: {names:?}"
    );
    for name in names {
        same_answer(
            &emulated,
            &real,
            &format!("/api/v1/services/{name}"),
            Clone::clone,
        )
        .await;
    }
}

/// Waits until both Towers answer `path` alike (after `select`), and returns the answer. Both read the code
/// (migrations, changes) from the forge's repositories in the background, each at its own pace, so the first
/// answers may differ for a moment; what comes from the API servers must not, and is what stays different.
async fn same_answer(
    emulated: &Tower,
    real: &Tower,
    path: &str,
    select: impl Fn(&Value) -> Value,
) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, from_real) = real.get_json(path).await;
        assert_eq!(status, 200, "{path}: {from_real}");
        let (_, from_emulated) = emulated.get_json(path).await;
        let (from_real, from_emulated) = (
            comparable(&select(&from_real)),
            comparable(&select(&from_emulated)),
        );
        if from_real == from_emulated {
            return select(&from_emulated);
        }
        if std::time::Instant::now() > deadline {
            assert_eq!(from_real, from_emulated, "{path}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
