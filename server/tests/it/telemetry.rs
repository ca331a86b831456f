//! Tower's own telemetry and lifecycle over a real socket: `/metrics` (and a real Prometheus scraping it),
//! `/readyz` before and after the first picture, and what a stop does to readiness, the event stream and the
//! writes in flight.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use server::shutdown::Shutdown;

use crate::{Role, TestApp, eventually};

const REPO: &str = "application-repositories";

/// The status of `GET path` on a fresh connection.
async fn status(client: &reqwest::Client, addr: SocketAddr, path: &str) -> Option<u16> {
    let response = client
        .get(format!("http://{addr}{path}"))
        .send()
        .await
        .ok()?;
    Some(response.status().as_u16())
}

/// A client that opens a new connection per request, so each one sees whether Tower still listens.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The value of the series `series` (name and labels exactly as exposed) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_a_real_prometheus_scrapes_them() {
    let installed = sandbox::metrics::Metrics::prometheus_installed();
    if !installed {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI installs prometheus: this test must not skip there"
        );
        eprintln!("note: prometheus is not installed; checking /metrics without a real scrape");
    }
    let mut options = sandbox::Options::new("127.0.0.1:0".parse().unwrap());
    options.metrics = true;
    let sandbox = sandbox::Sandbox::start_with(options).await.unwrap();
    let mut config = server::sandbox_cli::tower_config(&sandbox, "127.0.0.1:0".parse().unwrap());
    config.listen = "127.0.0.1:0".into();
    let assets = tempfile::tempdir().unwrap();
    let (trigger, shutdown) = Shutdown::manual();
    let (tell, listening) = tokio::sync::oneshot::channel();
    let serving = server::serve::run(
        config,
        assets.path().to_path_buf().into(),
        true,
        shutdown,
        |listen| {
            server::sandbox_cli::scrape_tower(&sandbox, listen);
            let _ = tell.send(listen);
        },
    );
    let check = async {
        let addr = listening.await.unwrap();
        let http = client();
        eventually(Duration::from_secs(30), || async {
            (status(&http, addr, "/readyz").await == Some(200)).then_some(())
        })
        .await
        .expect("ready");
        // The runs list after the first picture, so the CI cluster may still be syncing them; scrapes
        // are not counted, so waiting on them leaves the counts below alone.
        eventually(Duration::from_secs(30), || async {
            let text = http
                .get(format!("http://{addr}/metrics"))
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            ["management", "dev", "prod"]
                .iter()
                .all(|cluster| {
                    sample(
                        &text,
                        &format!(r#"tower_cluster_state{{cluster="{cluster}",state="connected"}}"#),
                    ) == Some(1.0)
                })
                .then_some(())
        })
        .await
        .expect("every cluster connected");
        // Anonymous, so refused: counted all the same, under the route's template.
        assert_eq!(
            status(&http, addr, "/api/v1/services/payments").await,
            Some(401)
        );
        let _ = status(&http, addr, "/no/such/page/at/all").await;
        let response = http
            .get(format!("http://{addr}/metrics"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain; version=0.0.4")
        );
        let text = response.text().await.unwrap();
        assert_eq!(
            sample(
                &text,
                r#"tower_http_requests_total{method="GET",route="/api/v1/services/{name}",status="401"}"#
            ),
            Some(1.0),
            "{text}"
        );
        assert!(
            !text.contains("route=\"/api/v1/services/payments\"") && !text.contains("/no/such"),
            "raw paths never become labels:\n{text}"
        );
        assert!(
            !text.contains("route=\"/readyz\"") && !text.contains("route=\"/metrics\""),
            "probes and scrapes are not counted:\n{text}"
        );
        assert!(
            text.contains(
                "tower_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/services/{name}\"} 1"
            ),
            "{text}"
        );
        for cluster in ["management", "dev", "prod"] {
            assert_eq!(
                sample(
                    &text,
                    &format!(r#"tower_cluster_state{{cluster="{cluster}",state="connected"}}"#)
                ),
                Some(1.0),
                "{text}"
            );
        }
        assert_eq!(
            sample(
                &text,
                r#"tower_watches{cluster="management",kind="Component",state="connected"}"#
            ),
            Some(1.0),
            "{text}"
        );
        assert!(
            sample(&text, r#"tower_cache_entries{cache="services"}"#).unwrap_or_default() > 0.0,
            "{text}"
        );
        assert!(
            sample(&text, r#"tower_cache_entries{cache="cards"}"#).unwrap_or_default() > 0.0,
            "{text}"
        );
        assert_eq!(sample(&text, "tower_sse_clients"), Some(0.0), "{text}");
        // The catalog scan reads the forge through the App as soon as Tower starts.
        assert!(
            sample(
                &text,
                r#"tower_upstream_requests_total{upstream="github",outcome="ok"}"#
            )
            .unwrap_or_default()
                > 0.0,
            "{text}"
        );

        if installed {
            let prometheus = sandbox.metrics_url().unwrap();
            let value = eventually(Duration::from_secs(60), || async {
                let answer: Value = http
                    .get(format!("{prometheus}/api/v1/query"))
                    .query(&[(
                        "query",
                        r#"sum(tower_http_requests_total{job="tower",route="/api/v1/services/{name}"})"#,
                    )])
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                answer["data"]["result"][0]["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok())
            })
            .await
            .expect("the sandbox's Prometheus scraped Tower's counter");
            assert!(value >= 1.0, "{value}");
        }
        trigger.stop();
    };
    let (served, ()) = tokio::join!(serving, check);
    served.unwrap();
}

#[tokio::test]
async fn readyz_is_503_until_every_cluster_has_listed_then_200_while_healthz_stays_200() {
    let sandbox =
        sandbox::Sandbox::start_with(sandbox::Options::new("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
    let management = sandbox.cluster("management").unwrap();
    management.set_reachable(false);
    let mut config = server::sandbox_cli::tower_config(&sandbox, "127.0.0.1:0".parse().unwrap());
    config.listen = "127.0.0.1:0".into();
    let assets = tempfile::tempdir().unwrap();
    let (trigger, shutdown) = Shutdown::manual();
    let (tell, listening) = tokio::sync::oneshot::channel();
    let serving = server::serve::run(
        config,
        assets.path().to_path_buf().into(),
        true,
        shutdown,
        |listen| {
            let _ = tell.send(listen);
        },
    );
    let check = async {
        let addr = listening.await.unwrap();
        let http = client();
        // The management cluster cannot be listed: no first picture, for as long as it lasts.
        for _ in 0..5 {
            assert_eq!(status(&http, addr, "/readyz").await, Some(503));
            assert_eq!(status(&http, addr, "/healthz").await, Some(200));
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let body = http
            .get(format!("http://{addr}/readyz"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(body.starts_with("starting"), "{body}");
        management.set_reachable(true);
        eventually(Duration::from_secs(60), || async {
            (status(&http, addr, "/readyz").await == Some(200)).then_some(())
        })
        .await
        .expect("ready once the management cluster answers");
        assert_eq!(status(&http, addr, "/healthz").await, Some(200));
        trigger.stop();
    };
    let (served, ()) = tokio::join!(serving, check);
    served.unwrap();
}

/// Tower's branches in the sandbox's `application-repositories`.
fn tower_branches(app: &TestApp) -> Vec<String> {
    app.sandbox
        .repositories()
        .git(REPO)
        .run(&["for-each-ref", "--format=%(refname)", "refs/heads/tower/"])
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn onboard_form(name: &str) -> String {
    json!({
        "name": name,
        "owner": "payments",
        "description": "Sends invoices.",
        "template": "go-service",
        "template_version": "1.4.0",
        "auto_deploy": true,
    })
    .to_string()
}

#[tokio::test]
async fn a_stop_fails_readiness_first_finishes_the_write_in_flight_refuses_new_ones_and_ends_the_event_stream()
 {
    let app = TestApp::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (trigger, shutdown) = Shutdown::manual();
    let server = tokio::spawn(server::serve::serve_on(
        listener,
        app.state.clone(),
        None,
        shutdown,
    ));
    let http = client();
    let owner = app.session_cookie(Role::Owner.identity().unwrap());
    assert_eq!(status(&http, addr, "/readyz").await, Some(200));

    // A browser on the event stream, past its snapshot.
    let mut events = http
        .get(format!("http://{addr}/api/v1/events"))
        .header("cookie", &owner)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    let mut stream_text = String::new();
    while !stream_text.contains("event: fleet") {
        let chunk = tokio::time::timeout(Duration::from_secs(20), events.chunk())
            .await
            .expect("a snapshot")
            .unwrap()
            .expect("the stream is open");
        stream_text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let metrics = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        sample(&metrics, "tower_sse_clients"),
        Some(1.0),
        "{metrics}"
    );

    // A submission, and the stop as soon as it has started writing.
    let submit = |name: &str| {
        http.post(format!(
            "http://{addr}/api/v1/templates/onboard-service/submit"
        ))
        .header("cookie", &owner)
        .header("x-tower-csrf", "1")
        .header("content-type", "application/json")
        .body(onboard_form(name))
        .send()
    };
    let in_flight = tokio::spawn(submit("invoices"));
    let branch = "refs/heads/tower/onboard/invoices".to_string();
    eventually(Duration::from_secs(20), || async {
        tower_branches(&app).contains(&branch).then_some(())
    })
    .await
    .expect("the submission started writing");
    trigger.stop();

    // Readiness fails first, while the listener still answers.
    assert_eq!(status(&http, addr, "/readyz").await, Some(503));
    assert_eq!(status(&http, addr, "/healthz").await, Some(200));
    // A new write is refused and never started.
    let refused = submit("receipts").await.unwrap();
    assert_eq!(refused.status(), 503);
    let refused: Value = refused.json().await.unwrap();
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("nothing was written"),
        "{refused}"
    );

    // The event stream ends cleanly, after telling the browser when to reconnect.
    loop {
        match tokio::time::timeout(Duration::from_secs(20), events.chunk())
            .await
            .expect("the stream ends after the stop")
        {
            Ok(Some(chunk)) => stream_text.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(None) => break,
            Err(error) => panic!("the stream broke instead of ending: {error}\n{stream_text}"),
        }
    }
    assert!(stream_text.contains("retry: 3000"), "{stream_text}");

    // The write in flight completed: its pull request is open, with its labels.
    let done = in_flight.await.unwrap().unwrap();
    assert_eq!(done.status(), 201);
    let pull: Value = done.json().await.unwrap();
    assert_eq!(pull["branch"], "tower/onboard/invoices");
    assert!(
        pull["labels"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "tower")
    );
    let github = app.state.delivery.as_ref().unwrap().github();
    let repository = app.state.delivery.as_ref().unwrap().repository();
    let open = github
        .list_pulls(&repository, "open", Some("tower/onboard/invoices"), 10, 1)
        .await
        .unwrap();
    assert_eq!(
        open.len(),
        1,
        "one pull request, opened before the stop ended"
    );
    assert!(
        !tower_branches(&app).contains(&"refs/heads/tower/onboard/receipts".to_string()),
        "the refused write wrote nothing"
    );

    tokio::time::timeout(Duration::from_secs(30), server)
        .await
        .expect("the server stopped")
        .unwrap()
        .unwrap();
    assert_eq!(
        status(&http, addr, "/healthz").await,
        None,
        "no longer listening"
    );
}
