//! Faults a hand-written apiserver cannot be trusted to act out, on real ones: etcd killed under running API
//! servers, an API server restarted, etcd's history compacted under Tower's watches. In each, Tower's cards
//! say what is wrong and come back by themselves, with what changed meanwhile.

use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use serde_json::Value;

use crate::Tower;

/// The sandbox's world on real API servers, and Tower reading it with its own tokens.
async fn tower_on_real_servers() -> (sandbox::Sandbox, testbed::Platform, Tower) {
    let (sandbox, platform) = crate::sandbox_and_copy().await;
    let tower = Tower::start(
        &platform
            .tower_config(&sandbox, "127.0.0.1:0".parse().unwrap())
            .unwrap(),
    )
    .await;
    (sandbox, platform, tower)
}

/// `payments`' card in `environment`, once `ready` holds for it.
async fn card_when(
    tower: &Tower,
    environment: &str,
    what: &str,
    within: Duration,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    tower
        .card_when("payments", environment, what, within, ready)
        .await
}

fn lost(card: &Value) -> bool {
    !card["unreachable_since"].is_null()
}

fn pod_names(card: &Value) -> Vec<String> {
    card["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pod| pod["name"].as_str().unwrap().to_owned())
        .collect()
}

/// How long Tower may take to notice a lost cluster and to see it back: kube-rs' watcher backs off up to
/// 30 s between attempts, and CI's two cores are slow.
const NOTICE: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_api_server_is_shown_lost_then_live_with_what_changed_meanwhile() {
    if !testbed::binaries_present() {
        return;
    }
    let (_sandbox, mut platform, tower) = tower_on_real_servers().await;
    let before = card_when(&tower, "prod", "the first prod card", NOTICE, |c| {
        !lost(c) && !pod_names(c).is_empty()
    })
    .await;
    let gone = pod_names(&before)[0].clone();

    platform.testbed.stop_server("prod");
    card_when(&tower, "prod", "prod shown unreachable", NOTICE, lost).await;
    // Dev's cluster is another server: its card stays live.
    assert!(!lost(
        &card_when(&tower, "dev", "dev", NOTICE, |_| true).await
    ));

    platform.testbed.start_server("prod").await.unwrap();
    // A pod deleted while Tower could not watch: the relist after reconnecting drops it.
    let prod = platform.testbed.admin("prod").unwrap();
    // At once: with no kubelet to confirm it, a graceful deletion would leave the pod terminating.
    Api::<Pod>::namespaced(prod, "payments")
        .delete(&gone, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    card_when(
        &tower,
        "prod",
        "prod live again without the deleted pod",
        NOTICE,
        |card| !lost(card) && !pod_names(card).contains(&gone),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_history_makes_tower_relist_and_catch_up() {
    if !testbed::binaries_present() {
        return;
    }
    let (_sandbox, mut platform, tower) = tower_on_real_servers().await;
    let before = card_when(&tower, "dev", "the first dev card", NOTICE, |c| {
        !pod_names(c).is_empty()
    })
    .await;
    let gone = pod_names(&before)[0].clone();

    // The server goes away; the pod is deleted in etcd meanwhile and the history compacted past Tower's
    // last resourceVersion. When the server is back, resuming the watch answers 410 Gone, and only a
    // relist can show the pod gone: no server saw the deletion to tell a watch about it.
    platform.testbed.stop_server("dev");
    card_when(&tower, "dev", "dev shown unreachable", NOTICE, lost).await;
    platform
        .testbed
        .delete_from_etcd(&format!("/dev/pods/payments/{gone}"))
        .await
        .unwrap();
    platform.testbed.compact().await.unwrap();
    platform.testbed.start_server("dev").await.unwrap();
    // What any client resuming from before the compaction is told.
    let dev = platform.testbed.admin("dev").unwrap();
    let stale = Api::<Pod>::all(dev)
        .watch(&kube::api::WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed()
        .next()
        .await;
    assert!(
        matches!(&stale, Some(Err(kube::Error::Api(status))) if status.code == 410)
            || matches!(&stale, Some(Ok(kube::api::WatchEvent::Error(status))) if status.code == 410),
        "{stale:?}"
    );
    card_when(
        &tower,
        "dev",
        "dev without the pod deleted before the compaction",
        NOTICE,
        |card| !lost(card) && !pod_names(card).contains(&gone),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_etcd_shows_the_clusters_lost_until_it_is_back() {
    if !testbed::binaries_present() {
        return;
    }
    let (_sandbox, mut platform, tower) = tower_on_real_servers().await;
    card_when(&tower, "prod", "the first prod card", NOTICE, |c| !lost(c)).await;

    platform.testbed.stop_etcd();
    // The API servers still take requests but cannot answer them (a list waits for etcd until the server's
    // own timeout), while the watches they serve stay open and silent: Tower must not show the last
    // picture as current.
    let prod = platform.testbed.admin("prod").unwrap();
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        Api::<Pod>::all(prod).list(&kube::api::ListParams::default().limit(1)),
    )
    .await;
    assert!(
        !matches!(answer, Ok(Ok(_))),
        "a list without etcd answered {answer:?}"
    );
    card_when(&tower, "prod", "prod shown lost", NOTICE, lost).await;

    platform.testbed.start_etcd().unwrap();
    card_when(&tower, "prod", "prod live again", NOTICE, |c| !lost(c)).await;
}
