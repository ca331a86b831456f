//! The sandbox's Loki: a deleted pod's lines are kept, within bounds, and answered over HTTP in Loki's
//! documented shapes; queries other than a stream selector of equality matchers are refused as Loki
//! refuses what it cannot parse.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use sandbox::apiserver::ContainerLines;
use sandbox::loki::{Limits, LogStore, TENANT};
use sandbox::{Options, Sandbox, Simulate};
use serde_json::{Value, json};

async fn sandbox(simulate: Simulate) -> Sandbox {
    let mut options = Options::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    options.simulate = simulate;
    Sandbox::start_with(options).await.unwrap()
}

/// A GET of Loki's API as `tenant`; the status and the body (JSON when it parses, else a string).
async fn loki(
    sandbox: &Sandbox,
    path: &str,
    query: &[(&str, &str)],
    tenant: Option<&str>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .get(format!("{}/loki/api/v1/{path}", sandbox.loki_url()))
        .query(query);
    if let Some(tenant) = tenant {
        request = request.header("X-Scope-OrgID", tenant);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The first pod of `namespace` on `cluster` and its first container.
fn first_pod(sandbox: &Sandbox, cluster: &str, namespace: &str) -> (String, String) {
    let pods = sandbox
        .cluster(cluster)
        .unwrap()
        .list_namespaced("v1", "Pod", namespace);
    let pod = &pods[0];
    (
        pod["metadata"]["name"].as_str().unwrap().to_string(),
        pod["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[tokio::test]
async fn a_deleted_pods_lines_are_answered_in_lokis_shape() {
    let sandbox = sandbox(Simulate::Off).await;
    let dev = sandbox.cluster("dev").unwrap();
    let (pod, container) = first_pod(&sandbox, "dev", "payments");
    for n in 1..=5 {
        dev.append_log("payments", &pod, &container, &format!("line {n}"));
    }
    dev.delete("v1", "Pod", Some("payments"), &pod).unwrap();

    let selector =
        format!(r#"{{cluster="dev",namespace="payments",pod="{pod}",container="{container}"}}"#);
    let (status, body) = loki(
        &sandbox,
        "query_range",
        &[("query", &selector), ("limit", "3")],
        Some(TENANT),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "success");
    assert_eq!(body["data"]["resultType"], "streams");
    // Three lines returned, but the statistics count all five the selector matched (and any the pod logged
    // before), as Loki's do.
    let summary = &body["data"]["stats"]["summary"];
    assert!(
        summary["totalLinesProcessed"].as_u64().unwrap() >= 5,
        "{summary}"
    );
    assert!(
        summary["totalBytesProcessed"].as_u64().unwrap() > 0,
        "{summary}"
    );
    let streams = body["data"]["result"].as_array().unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(
        streams[0]["stream"],
        json!({"cluster": "dev", "namespace": "payments", "pod": pod, "container": container})
    );
    // Backward by default: the newest lines, newest first, as many as the limit.
    let values = streams[0]["values"].as_array().unwrap();
    let texts: Vec<&str> = values.iter().map(|v| v[1].as_str().unwrap()).collect();
    assert_eq!(texts, ["line 5", "line 4", "line 3"]);
    // Times are nanoseconds since the epoch, as strings.
    let newest: i128 = values[0][0].as_str().unwrap().parse().unwrap();
    let now = jiff::Timestamp::now().as_nanosecond();
    assert!(newest <= now && now - newest < 60_000_000_000, "{newest}");

    // Forward from an RFC3339 start: the oldest first.
    let start = (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5)).to_string();
    let (_, body) = loki(
        &sandbox,
        "query_range",
        &[
            ("query", &selector),
            ("direction", "forward"),
            ("start", &start),
            ("limit", "1000"),
        ],
        Some(TENANT),
    )
    .await;
    let values = body["data"]["result"][0]["values"].as_array().unwrap();
    let texts: Vec<&str> = values.iter().map(|v| v[1].as_str().unwrap()).collect();
    let ours: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| t.starts_with("line "))
        .collect();
    assert_eq!(ours, ["line 1", "line 2", "line 3", "line 4", "line 5"]);

    // The gone pod is listed for its namespace by `series` and `label/pod/values`.
    let namespace = r#"{cluster="dev",namespace="payments"}"#;
    let (status, body) = loki(&sandbox, "series", &[("match[]", namespace)], Some(TENANT)).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["pod"] == pod.as_str() && s["container"] == container.as_str()),
        "{body}"
    );
    let (_, body) = loki(
        &sandbox,
        "label/pod/values",
        &[("query", namespace)],
        Some(TENANT),
    )
    .await;
    assert_eq!(body["data"], json!([pod]));
    // Another cluster's namespace of the same name has no gone pods.
    let (_, body) = loki(
        &sandbox,
        "series",
        &[("match[]", r#"{cluster="prod",namespace="payments"}"#)],
        Some(TENANT),
    )
    .await;
    assert_eq!(body["data"], json!([]));
}

#[tokio::test]
async fn queries_other_than_equality_selectors_and_requests_without_a_tenant_are_refused() {
    let sandbox = sandbox(Simulate::Off).await;
    for query in [
        r#"{pod=~".+"}"#,
        r#"{pod="x"} |= "secret""#,
        r#"sum(rate({pod="x"}[1m]))"#,
        r#"{pod="x"#,
        "",
    ] {
        let (status, body) = loki(&sandbox, "query_range", &[("query", query)], Some(TENANT)).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.is_string(), "Loki's errors are plain text: {body}");
    }
    for (key, value) in [
        ("direction", "sideways"),
        ("limit", "0"),
        ("limit", "50000"),
        ("start", "yesterday"),
    ] {
        let (status, body) = loki(
            &sandbox,
            "query_range",
            &[("query", r#"{pod="x"}"#), (key, value)],
            Some(TENANT),
        )
        .await;
        assert_eq!(status, 400, "{key}={value}: {body}");
    }
    let (status, body) = loki(&sandbox, "query_range", &[("query", r#"{pod="x"}"#)], None).await;
    assert_eq!((status, body), (401, json!("no org id")));
    // Another tenant sees nothing.
    let dev = sandbox.cluster("dev").unwrap();
    let (pod, container) = first_pod(&sandbox, "dev", "ledger");
    dev.append_log("ledger", &pod, &container, "hello");
    dev.delete("v1", "Pod", Some("ledger"), &pod).unwrap();
    let selector = format!(r#"{{pod="{pod}"}}"#);
    let (_, ours) = loki(
        &sandbox,
        "query_range",
        &[("query", &selector)],
        Some(TENANT),
    )
    .await;
    assert_eq!(ours["data"]["result"].as_array().unwrap().len(), 1);
    let (_, theirs) = loki(
        &sandbox,
        "query_range",
        &[("query", &selector)],
        Some("other"),
    )
    .await;
    assert_eq!(theirs["data"]["result"], json!([]));
}

fn lines(count: usize, at: jiff::Timestamp, size: usize) -> Vec<ContainerLines> {
    vec![ContainerLines {
        container: "app".into(),
        lines: (0..count).map(|n| (at, format!("{n:0size$}"))).collect(),
    }]
}

#[test]
fn the_store_keeps_what_its_bounds_allow_oldest_streams_going_first() {
    let store = LogStore::new(Limits {
        max_bytes: 10_000,
        max_age: Duration::from_secs(3600),
    });
    let now = jiff::Timestamp::now();
    for pod in 0..10 {
        store.keep(
            "dev",
            "payments",
            &format!("pod-{pod}"),
            lines(20, now, 100),
        );
    }
    let (streams, bytes) = store.retained();
    assert!(bytes <= 10_000, "{bytes}");
    // Each stream costs its lines' text and slots (about 150 bytes a line here): three fit.
    assert_eq!(streams, 3, "{bytes} bytes");
    // Lines past the retention are not kept at all.
    let old = now - jiff::SignedDuration::from_hours(2);
    store.keep("dev", "payments", "ancient", lines(5, old, 10));
    assert_eq!(store.retained().0, streams);
    // A stream larger than the store keeps its newest lines.
    store.keep("dev", "payments", "chatty", lines(500, now, 100));
    let (streams, bytes) = store.retained();
    assert_eq!(streams, 1);
    assert!(bytes <= 10_000, "{bytes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_a_rollout_replaces_leave_their_last_lines_in_the_store() {
    let sandbox = sandbox(Simulate::Manual).await;
    let simulator = sandbox.simulator().unwrap();
    let before: Vec<String> = sandbox
        .cluster("dev")
        .unwrap()
        .list_namespaced("v1", "Pod", "search")
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!before.is_empty());
    simulator
        .push_commit("search", "Add synonyms", true)
        .unwrap();
    let mut gone = Vec::new();
    for _ in 0..180 {
        simulator.advance(Duration::from_secs(5));
        let (_, body) = loki(
            &sandbox,
            "label/pod/values",
            &[("query", r#"{cluster="dev",namespace="search"}"#)],
            Some(TENANT),
        )
        .await;
        gone = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        if before.iter().all(|p| gone.contains(p)) {
            break;
        }
    }
    assert!(
        before.iter().all(|p| gone.contains(p)),
        "{before:?} gone: {gone:?}"
    );
    let (_, body) = loki(
        &sandbox,
        "query_range",
        &[
            (
                "query",
                &format!(r#"{{cluster="dev",pod="{}"}}"#, before[0]),
            ),
            ("limit", "5"),
        ],
        Some(TENANT),
    )
    .await;
    let values = body["data"]["result"][0]["values"].as_array().unwrap();
    assert!(!values.is_empty(), "{body}");
}
