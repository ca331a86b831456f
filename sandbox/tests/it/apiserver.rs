//! The fake apiserver, driven by real clients (kube-rs, kubectl) over real TCP.
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::runtime::{reflector, watcher};
use kube::{Client, Config, ResourceExt};
use sandbox::apiserver::{ClusterStore, Clusters, ResourceType};
use serde_json::{Value, json};

/// Fails a test that waits too long instead of letting a broken server hang it.
async fn within<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), future)
        .await
        .expect("timed out waiting for the apiserver")
}

/// The platform's `Component` custom resource, written out so these tests don't depend on `shared`.
fn component_type() -> ResourceType {
    ResourceType {
        group: "platform.tower.dev".into(),
        version: "v1alpha1".into(),
        kind: "Component".into(),
        plural: "components".into(),
        namespaced: true,
    }
}

/// Clusters `dev` and `prod` served on a random local port.
struct Sandbox {
    clusters: Clusters,
    addr: SocketAddr,
}

impl Sandbox {
    async fn start() -> Self {
        let clusters = Clusters::new(&["dev", "prod"], vec![component_type()]);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = clusters.router();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { clusters, addr }
    }

    fn store(&self, cluster: &str) -> ClusterStore {
        self.clusters.cluster(cluster).unwrap()
    }

    fn url(&self, cluster: &str) -> String {
        format!("http://{}/clusters/{cluster}", self.addr)
    }

    fn client(&self, cluster: &str) -> Client {
        Client::try_from(Config::new(self.url(cluster).parse().unwrap())).unwrap()
    }

    fn config_maps(&self, cluster: &str, namespace: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client(cluster), namespace)
    }
}

fn config_map(namespace: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"v": "1"},
    })
}

fn pod(namespace: &str, name: &str, containers: &[&str]) -> Value {
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "nginx"}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": containers},
    })
}

fn names<K: ResourceExt>(objects: impl IntoIterator<Item = K>) -> Vec<String> {
    objects.into_iter().map(|o| o.name_any()).collect()
}

#[tokio::test]
async fn a_watcher_sees_existing_objects_then_each_change_in_order() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store.create(config_map("apps", "a", json!({}))).unwrap();
    store.create(config_map("apps", "b", json!({}))).unwrap();

    let mut events = watcher(
        sandbox.config_maps("dev", "apps"),
        watcher::Config::default(),
    )
    .boxed();
    let mut initial = Vec::new();
    loop {
        match within(events.next()).await.unwrap().unwrap() {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(initial, ["a", "b"]);

    store.create(config_map("apps", "c", json!({}))).unwrap();
    let mut a = store.get("v1", "ConfigMap", Some("apps"), "a").unwrap();
    a["data"]["v"] = json!("2");
    store.replace(a).unwrap();
    store.delete("v1", "ConfigMap", Some("apps"), "b").unwrap();
    // Another namespace's change must not reach a namespaced watcher.
    store.create(config_map("other", "x", json!({}))).unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        match within(events.next()).await.unwrap().unwrap() {
            watcher::Event::Apply(cm) => seen.push(format!(
                "apply {} v={}",
                cm.name_any(),
                cm.data.unwrap()["v"]
            )),
            watcher::Event::Delete(cm) => seen.push(format!("delete {}", cm.name_any())),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["apply c v=1", "apply a v=2", "delete b"]);
}

/// kube-rs's metadata-only requests (`Api<PartialObjectMeta<K>>`) get names and labels, never the data.
#[tokio::test]
async fn a_metadata_only_watcher_sees_labels_and_never_the_data() {
    use kube::core::PartialObjectMeta;
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    let mut secret_like = config_map("apps", "a", json!({"environment": "dev"}));
    secret_like["data"] = json!({"v": "credential"});
    store.create(secret_like).unwrap();

    let api: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(sandbox.client("dev"), "apps");
    let listed = within(api.list(&ListParams::default())).await.unwrap();
    assert_eq!(names(listed.items.clone()), ["a"]);
    let raw = serde_json::to_string(&listed.items).unwrap();
    assert!(!raw.contains("credential"), "{raw}");

    let mut events = watcher(api, watcher::Config::default()).boxed();
    loop {
        match within(events.next()).await.unwrap().unwrap() {
            watcher::Event::InitApply(object) => {
                assert_eq!(
                    object.labels().get("environment").map(String::as_str),
                    Some("dev")
                );
            }
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    let mut changed = store.get("v1", "ConfigMap", Some("apps"), "a").unwrap();
    changed["metadata"]["labels"]["environment"] = json!("prod");
    changed["data"]["v"] = json!("another credential");
    store.replace(changed).unwrap();
    match within(events.next()).await.unwrap().unwrap() {
        watcher::Event::Apply(object) => {
            assert_eq!(
                object.labels().get("environment").map(String::as_str),
                Some("prod")
            );
            let raw = serde_json::to_string(&object).unwrap();
            assert!(!raw.contains("credential"), "{raw}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_watch_resumed_from_a_resource_version_sees_only_later_events() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store
        .create(config_map("apps", "before", json!({})))
        .unwrap();
    let resume_from = store.current_resource_version();
    store
        .create(config_map("apps", "after-1", json!({})))
        .unwrap();
    store
        .delete("v1", "ConfigMap", Some("apps"), "before")
        .unwrap();

    let api = sandbox.config_maps("dev", "apps");
    let mut stream = api
        .watch(&WatchParams::default(), &resume_from.to_string())
        .await
        .unwrap()
        .boxed();
    store
        .create(config_map("apps", "after-2", json!({})))
        .unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        match within(stream.try_next()).await.unwrap().unwrap() {
            WatchEvent::Added(cm) => seen.push(format!("ADDED {}", cm.name_any())),
            WatchEvent::Deleted(cm) => seen.push(format!("DELETED {}", cm.name_any())),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["ADDED after-1", "DELETED before", "ADDED after-2"]);
}

#[tokio::test]
async fn a_watch_ends_when_its_timeout_is_up() {
    let sandbox = Sandbox::start().await;
    let api = sandbox.config_maps("dev", "apps");
    let mut stream = api
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    assert!(within(stream.try_next()).await.unwrap().is_none());
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_gets_410_expired() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store.create(config_map("apps", "a", json!({}))).unwrap();
    let old = store.current_resource_version();
    store.create(config_map("apps", "b", json!({}))).unwrap();
    store.compact();

    let api = sandbox.config_maps("dev", "apps");
    let mut stream = api
        .watch(&WatchParams::default(), &old.to_string())
        .await
        .unwrap()
        .boxed();
    match within(stream.try_next()).await.unwrap() {
        Some(WatchEvent::Error(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
        }
        other => panic!("expected a 410 error event, got {other:?}"),
    }
    assert!(
        within(stream.try_next()).await.unwrap().is_none(),
        "the stream ends after the error"
    );

    // Resuming from the current version is still fine: nothing after it was forgotten.
    let current = store.current_resource_version().to_string();
    let mut stream = api
        .watch(&WatchParams::default(), &current)
        .await
        .unwrap()
        .boxed();
    store.create(config_map("apps", "c", json!({}))).unwrap();
    assert!(matches!(
        within(stream.try_next()).await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
}

#[tokio::test]
async fn a_desynced_watcher_relists_and_its_reflector_converges() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    for name in ["a", "b"] {
        store.create(config_map("apps", name, json!({}))).unwrap();
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let mut events = reflector(
        writer,
        watcher(
            sandbox.config_maps("dev", "apps"),
            watcher::Config::default(),
        ),
    )
    .boxed();
    while !matches!(
        within(events.next()).await.unwrap(),
        Ok(watcher::Event::InitDone)
    ) {}

    // The watcher has listed but not yet opened its watch: change the cluster behind its back and
    // forget the history it would need to catch up.
    store.delete("v1", "ConfigMap", Some("apps"), "a").unwrap();
    store.create(config_map("apps", "c", json!({}))).unwrap();
    store.compact();

    let mut saw_expired = false;
    loop {
        match within(events.next()).await.unwrap() {
            Err(watcher::Error::WatchError(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
                saw_expired = true;
            }
            Ok(watcher::Event::InitDone) if saw_expired => break,
            Ok(_) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    let mut cached = names(reader.state().iter().map(|cm| (**cm).clone()));
    cached.sort();
    assert_eq!(cached, ["b", "c"]);
}

#[tokio::test]
async fn a_selective_watcher_sees_an_object_that_leaves_its_selection_as_deleted() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store
        .create(config_map("apps", "web", json!({"tier": "front"})))
        .unwrap();
    let api = sandbox.config_maps("dev", "apps");
    let params = WatchParams::default().labels("tier=front");
    let mut stream = api.watch(&params, "0").await.unwrap().boxed();
    assert!(matches!(
        within(stream.try_next()).await.unwrap(),
        Some(WatchEvent::Added(_))
    ));

    store
        .create(config_map("apps", "db", json!({"tier": "back"})))
        .unwrap();
    let mut web = store.get("v1", "ConfigMap", Some("apps"), "web").unwrap();
    web["metadata"]["labels"]["tier"] = json!("back");
    store.replace(web).unwrap();
    match within(stream.try_next()).await.unwrap() {
        Some(WatchEvent::Deleted(cm)) => assert_eq!(cm.name_any(), "web"),
        other => panic!("expected web to leave the selection, got {other:?}"),
    }
}

#[tokio::test]
async fn a_streaming_list_watcher_gets_initial_events_then_goes_live() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store.create(config_map("apps", "a", json!({}))).unwrap();
    let config = watcher::Config::default().streaming_lists();
    let mut events = watcher(sandbox.config_maps("dev", "apps"), config).boxed();
    let mut initial = Vec::new();
    loop {
        match within(events.next()).await.unwrap().unwrap() {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(initial, ["a"]);
    store.create(config_map("apps", "b", json!({}))).unwrap();
    match within(events.next()).await.unwrap().unwrap() {
        watcher::Event::Apply(cm) => assert_eq!(cm.name_any(), "b"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn lists_filter_by_label_and_field_selectors() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store
        .create(config_map(
            "apps",
            "web",
            json!({"app": "web", "tier": "front"}),
        ))
        .unwrap();
    store
        .create(config_map(
            "apps",
            "api",
            json!({"app": "api", "tier": "back"}),
        ))
        .unwrap();
    store
        .create(config_map("apps", "db", json!({"app": "db"})))
        .unwrap();
    store
        .create(config_map(
            "ops",
            "web",
            json!({"app": "web", "tier": "front"}),
        ))
        .unwrap();
    let all: Api<ConfigMap> = Api::all(sandbox.client("dev"));
    let apps = sandbox.config_maps("dev", "apps");

    let list = |api: &Api<ConfigMap>, params: ListParams| {
        let api = api.clone();
        async move {
            let list = within(api.list(&params)).await.unwrap();
            list.items
                .iter()
                .map(|cm| format!("{}/{}", cm.namespace().unwrap(), cm.name_any()))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        list(&apps, ListParams::default().labels("tier")).await,
        ["apps/api", "apps/web"]
    );
    assert_eq!(
        list(&apps, ListParams::default().labels("!tier")).await,
        ["apps/db"]
    );
    assert_eq!(
        list(
            &apps,
            ListParams::default().labels("app in (db,api),tier!=front")
        )
        .await,
        ["apps/api", "apps/db"]
    );
    assert_eq!(
        list(&apps, ListParams::default().labels("app notin (web)")).await,
        ["apps/api", "apps/db"]
    );
    assert_eq!(
        list(&all, ListParams::default().labels("app==web")).await,
        ["apps/web", "ops/web"]
    );
    assert_eq!(
        list(
            &all,
            ListParams::default().fields("metadata.name=web,metadata.namespace!=apps")
        )
        .await,
        ["ops/web"]
    );
    assert_eq!(
        list(
            &all,
            ListParams::default()
                .fields("metadata.namespace==apps")
                .labels("app=db")
        )
        .await,
        ["apps/db"]
    );

    let bad = within(apps.list(&ListParams::default().labels("app in (x")))
        .await
        .unwrap_err();
    assert!(matches!(bad, kube::Error::Api(s) if s.code == 400 && s.reason == "BadRequest"));
}

#[tokio::test]
async fn lists_page_with_limit_and_continue_in_namespace_and_name_order() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    for (namespace, name) in [
        ("b", "two"),
        ("a", "two"),
        ("b", "one"),
        ("a", "one"),
        ("c", "one"),
    ] {
        store
            .create(config_map(namespace, name, json!({})))
            .unwrap();
    }
    let all: Api<ConfigMap> = Api::all(sandbox.client("dev"));
    let mut pages = Vec::new();
    let mut params = ListParams::default().limit(2);
    let mut late = 0;
    let first_version = loop {
        let page = within(all.list(&params)).await.unwrap();
        pages.push(
            page.items
                .iter()
                .map(|cm| format!("{}/{}", cm.namespace().unwrap(), cm.name_any()))
                .collect::<Vec<_>>(),
        );
        // The token is a cursor, not an offset: objects created behind it don't shift what remains.
        late += 1;
        store
            .create(config_map("a", &format!("aaa-late-{late}"), json!({})))
            .unwrap();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break page.metadata.resource_version.unwrap(),
        }
    };
    assert_eq!(
        pages,
        [
            vec!["a/one", "a/two"],
            vec!["b/one", "b/two"],
            vec!["c/one"]
        ]
    );
    assert_eq!(
        first_version, "5",
        "every page is consistent with the first page's version"
    );

    // A continue token from before a compaction is too old to continue from.
    let first = within(all.list(&ListParams::default().limit(1)))
        .await
        .unwrap();
    store.create(config_map("d", "one", json!({}))).unwrap();
    store.compact();
    let token = first.metadata.continue_.unwrap();
    let expired = within(all.list(&ListParams::default().limit(1).continue_token(&token)))
        .await
        .unwrap_err();
    assert!(matches!(expired, kube::Error::Api(s) if s.code == 410 && s.reason == "Expired"));
}

#[tokio::test]
async fn paged_lists_count_what_remains_and_page_within_one_namespace() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    for (namespace, name) in [
        ("a", "one"),
        ("b", "one"),
        ("b", "two"),
        ("b", "three"),
        ("c", "one"),
    ] {
        store
            .create(config_map(namespace, name, json!({"tier": "web"})))
            .unwrap();
    }
    let page_through = |api: Api<ConfigMap>, params: ListParams| async move {
        let mut pages = Vec::new();
        let mut params = params.limit(2);
        loop {
            let page = within(api.list(&params)).await.unwrap();
            let names: Vec<String> = page.items.iter().map(ResourceExt::name_any).collect();
            pages.push((names, page.metadata.remaining_item_count));
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break pages,
            }
        }
    };
    let some = |names: &[&str], remaining| {
        (
            names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            remaining,
        )
    };
    // Later pages keep the count the first one made, less what they list.
    let all = page_through(Api::all(sandbox.client("dev")), ListParams::default()).await;
    let config_maps = all.iter().map(|(names, _)| names.len()).sum::<usize>();
    let counts: Vec<Option<i64>> = all.iter().map(|(_, remaining)| *remaining).collect();
    let mut expected = Vec::new();
    let mut left = config_maps;
    for (names, _) in &all {
        left -= names.len();
        expected.push((left > 0).then_some(left as i64));
    }
    assert_eq!(counts, expected);
    // A namespace's pages hold its objects only, however many namespaces sort after it.
    let in_b = page_through(sandbox.config_maps("dev", "b"), ListParams::default()).await;
    assert_eq!(
        in_b,
        [some(&["one", "three"], Some(1)), some(&["two"], None)]
    );
    // A selected list cannot count what remains, as a real apiserver's.
    let selected = page_through(
        sandbox.config_maps("dev", "b"),
        ListParams::default().labels("tier=web"),
    )
    .await;
    assert_eq!(
        selected,
        [some(&["one", "three"], None), some(&["two"], None)]
    );
}

#[tokio::test]
async fn errors_come_back_as_kubernetes_statuses() {
    let sandbox = Sandbox::start().await;
    let api = sandbox.config_maps("dev", "apps");
    let status = |err: kube::Error| match err {
        kube::Error::Api(status) => (status.code, status.reason),
        other => panic!("expected an API error, got {other:?}"),
    };

    assert_eq!(
        status(within(api.get("missing")).await.unwrap_err()),
        (404, "NotFound".into())
    );

    let cm: ConfigMap = serde_json::from_value(config_map("apps", "a", json!({}))).unwrap();
    let created = within(api.create(&PostParams::default(), &cm))
        .await
        .unwrap();
    assert!(created.uid().is_some() && created.creation_timestamp().is_some());
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        status(
            within(api.create(&PostParams::default(), &cm))
                .await
                .unwrap_err()
        ),
        (409, "AlreadyExists".into())
    );

    let mut first = created.clone();
    first.data = Some([("v".to_owned(), "2".to_owned())].into());
    let updated = within(api.replace("a", &PostParams::default(), &first))
        .await
        .unwrap();
    assert!(updated.resource_version() > created.resource_version());
    let mut stale = created;
    stale.data = Some([("v".to_owned(), "3".to_owned())].into());
    assert_eq!(
        status(
            within(api.replace("a", &PostParams::default(), &stale))
                .await
                .unwrap_err()
        ),
        (409, "Conflict".into())
    );

    let mut nameless = cm.clone();
    nameless.metadata.name = Some("Not_A_Name".into());
    assert_eq!(
        status(
            within(api.create(&PostParams::default(), &nameless))
                .await
                .unwrap_err()
        ),
        (422, "Invalid".into())
    );

    within(api.delete("a", &DeleteParams::default()))
        .await
        .unwrap();
    assert_eq!(
        status(
            within(api.delete("a", &DeleteParams::default()))
                .await
                .unwrap_err()
        ),
        (404, "NotFound".into())
    );
}

#[tokio::test]
async fn patches_merge_json_patch_and_server_side_apply() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store
        .create(config_map("apps", "a", json!({"keep": "me"})))
        .unwrap();
    let api = sandbox.config_maps("dev", "apps");

    let merged = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"w": "x"}, "metadata": {"labels": {"new": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.labels().len(), 2);
    assert_eq!(merged.data.unwrap().len(), 2);

    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/v", "value": "9"}]))
            .unwrap();
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["v"], "9");

    let applied = api
        .patch(
            "fresh",
            &PatchParams::apply("tower"),
            &Patch::Apply(config_map("apps", "fresh", json!({"by": "apply"}))),
        )
        .await
        .unwrap();
    assert_eq!(applied.labels()["by"], "apply");
    assert!(
        store
            .get("v1", "ConfigMap", Some("apps"), "fresh")
            .is_some()
    );

    // A status write leaves the spec alone, and a main-resource write leaves the status alone.
    let pods: Api<Pod> = Api::namespaced(sandbox.client("dev"), "apps");
    store.create(pod("apps", "p", &["app"])).unwrap();
    let status = json!({"status": {"phase": "Running"}, "spec": {"containers": []}});
    let after = pods
        .patch_status("p", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(after.spec.unwrap().containers.len(), 1);
    let after = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": null})),
        )
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().phase.as_deref(), Some("Running"));
}

#[tokio::test]
async fn two_clusters_are_independent() {
    let sandbox = Sandbox::start().await;
    sandbox
        .store("dev")
        .create(config_map("apps", "only-in-dev", json!({})))
        .unwrap();
    sandbox
        .store("dev")
        .create(config_map("apps", "x", json!({})))
        .unwrap();
    sandbox
        .store("prod")
        .create(config_map("apps", "only-in-prod", json!({})))
        .unwrap();

    let apps_in = async |cluster| {
        within(
            sandbox
                .config_maps(cluster, "apps")
                .list(&ListParams::default()),
        )
        .await
        .unwrap()
    };
    let dev = apps_in("dev").await;
    let prod = apps_in("prod").await;
    assert_eq!(names(dev.items), ["only-in-dev", "x"]);
    assert_eq!(names(prod.items), ["only-in-prod"]);
    assert_eq!(
        prod.metadata.resource_version.as_deref(),
        Some("1"),
        "each cluster counts its own versions"
    );
    assert!(sandbox.clusters.cluster("staging").is_none());
}

#[tokio::test]
async fn pod_logs_honour_tail_lines_and_follow_streams_new_lines() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store.create(pod("apps", "web-1", &["app"])).unwrap();
    for i in 1..=5 {
        store.append_log("apps", "web-1", "app", &format!("line {i}"));
    }
    let pods: Api<Pod> = Api::namespaced(sandbox.client("dev"), "apps");

    let tail = within(pods.logs(
        "web-1",
        &LogParams {
            tail_lines: Some(2),
            ..LogParams::default()
        },
    ))
    .await
    .unwrap();
    assert_eq!(tail, "line 4\nline 5\n");
    let stamped = within(pods.logs(
        "web-1",
        &LogParams {
            timestamps: true,
            tail_lines: Some(1),
            ..LogParams::default()
        },
    ))
    .await
    .unwrap();
    let (stamp, text) = stamped.trim_end().split_once(' ').unwrap();
    assert!(
        stamp.parse::<jiff::Timestamp>().is_ok(),
        "{stamp} is an RFC 3339 time"
    );
    assert_eq!(text, "line 5");

    let follow = LogParams {
        follow: true,
        tail_lines: Some(1),
        container: Some("app".into()),
        ..LogParams::default()
    };
    let mut lines = within(pods.log_stream("web-1", &follow))
        .await
        .unwrap()
        .lines();
    assert_eq!(within(lines.next()).await.unwrap().unwrap(), "line 5");
    store.append_log("apps", "web-1", "app", "line 6");
    assert_eq!(within(lines.next()).await.unwrap().unwrap(), "line 6");
    // A restart ends the stream, as the kubelet ends it when the container exits.
    store.restart_container("apps", "web-1", "app");
    assert!(within(lines.next()).await.is_none());

    let previous = within(pods.logs(
        "web-1",
        &LogParams {
            previous: true,
            ..LogParams::default()
        },
    ))
    .await
    .unwrap();
    assert!(previous.ends_with("line 5\nline 6\n"));
    assert_eq!(
        within(pods.logs("web-1", &LogParams::default()))
            .await
            .unwrap(),
        ""
    );

    let missing = within(pods.logs("nope", &LogParams::default()))
        .await
        .unwrap_err();
    assert!(matches!(missing, kube::Error::Api(s) if s.code == 404));
}

/// Runs kubectl against a cluster, with a private discovery cache and no kubeconfig.
async fn kubectl(sandbox: &Sandbox, cluster: &str, args: &[&str]) -> Option<String> {
    if !std::path::Path::new("/usr/bin/kubectl").exists() {
        println!("note: /usr/bin/kubectl is absent; skipping the kubectl check");
        return None;
    }
    let cache = std::env::temp_dir().join(format!("tower-kubectl-cache-{}", sandbox.addr.port()));
    let output = tokio::process::Command::new("/usr/bin/kubectl")
        .env("KUBECONFIG", cache.join("no-kubeconfig"))
        .arg(format!("--server={}", sandbox.url(cluster)))
        .arg(format!("--cache-dir={}", cache.display()))
        .args(args)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(20), output)
        .await
        .expect("kubectl hung")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "kubectl {args:?} failed: {stderr}");
    Some(String::from_utf8(output.stdout).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_pods_deployments_and_custom_resources() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store.create(pod("apps", "web-1", &["app"])).unwrap();
    store.create(pod("ops", "agent", &["agent"])).unwrap();
    store
        .create(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}))
        .unwrap();
    store
        .create(json!({"apiVersion": "platform.tower.dev/v1alpha1", "kind": "Component",
            "metadata": {"name": "checkout", "namespace": "platform"}, "spec": {"owner": "payments"}}))
        .unwrap();

    let Some(pods) = kubectl(&sandbox, "dev", &["get", "pods", "-A", "-o", "name"]).await else {
        return;
    };
    assert_eq!(pods, "pod/web-1\npod/agent\n");
    let table = kubectl(&sandbox, "dev", &["get", "pods", "-A"])
        .await
        .unwrap();
    assert!(table.contains("web-1") && table.contains("ops"), "{table}");
    let deployments = kubectl(
        &sandbox,
        "dev",
        &["get", "deployments", "-n", "apps", "-o", "name"],
    )
    .await
    .unwrap();
    assert_eq!(deployments, "deployment.apps/web\n");
    let components = kubectl(
        &sandbox,
        "dev",
        &["get", "components.platform.tower.dev", "-A", "-o", "name"],
    )
    .await
    .unwrap();
    assert_eq!(components, "component.platform.tower.dev/checkout\n");
    let described = kubectl(&sandbox, "dev", &["describe", "pod", "-n", "apps", "web-1"])
        .await
        .unwrap();
    assert!(
        described.contains("Containers:") && described.contains("nginx"),
        "{described}"
    );
    let none = kubectl(&sandbox, "prod", &["get", "pods", "-A", "-o", "name"])
        .await
        .unwrap();
    assert_eq!(none, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_pod_logs() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    store.create(pod("apps", "web-1", &["app"])).unwrap();
    for i in 1..=3 {
        store.append_log("apps", "web-1", "app", &format!("hello {i}"));
    }
    let Some(logs) = kubectl(
        &sandbox,
        "dev",
        &["logs", "-n", "apps", "web-1", "--tail=2"],
    )
    .await
    else {
        return;
    };
    assert_eq!(logs, "hello 2\nhello 3\n");
}

#[tokio::test]
async fn typed_helpers_round_trip_through_the_store() {
    let sandbox = Sandbox::start().await;
    let store = sandbox.store("dev");
    let cm: ConfigMap = serde_json::from_value(config_map("apps", "typed", json!({}))).unwrap();
    let created = store.create_typed(&cm).unwrap();
    assert_eq!(created.resource_version().as_deref(), Some("1"));
    let applied = store.apply_typed(&cm).unwrap();
    assert_eq!(
        applied.resource_version().as_deref(),
        Some("1"),
        "an unchanged apply is not a change"
    );
    let got: ConfigMap = store.get_typed(Some("apps"), "typed").unwrap();
    assert_eq!(got.uid(), created.uid());
    assert_eq!(names(store.list_typed::<ConfigMap>().unwrap()), ["typed"]);
    let defaulted = store
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}))
        .unwrap();
    assert_eq!(defaulted["metadata"]["namespace"], "default");
}
