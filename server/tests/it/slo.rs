//! Service level objectives against the sandbox's real Prometheus: Tower's figures checked with the test's
//! own arithmetic on the raw counts Prometheus answers, the fixture's fast burner burning and entering the
//! activity feed, and the Overview's summary ordered by what is left of each budget.

use std::time::Duration;

use kube::Api;
use kube::api::DynamicObject;
use serde_json::Value;
use shared::api::{ListSloSummaries, ListSlos};
use shared::fleet::ActivityKind;
use shared::slo::{BURN_WINDOWS, Indicator, SloSummary, SloView};

use crate::{TestApp, eventually};

async fn app() -> TestApp {
    TestApp::start_over(crate::metrics::sandbox_with_prometheus().await, |_| {}).await
}

/// The objectives as the cluster holds them, by name.
async fn resources(app: &TestApp) -> Vec<DynamicObject> {
    let client =
        server::upstream::kube::client_for_url(&app.sandbox.cluster_url("management"), None, None)
            .unwrap();
    let resource = crate::metrics::pyrra_objectives();
    Api::<DynamicObject>::all_with(client, &resource)
        .list(&Default::default())
        .await
        .unwrap()
        .items
}

/// `sum(increase(selector[seconds]))` at `at`, straight from Prometheus; 0 when no series.
async fn increase(prometheus: &str, selector: &str, seconds: u64, at: i64) -> f64 {
    let answer: Value = reqwest::Client::new()
        .get(format!("{prometheus}/api/v1/query"))
        .query(&[
            ("query", format!("sum(increase({selector}[{seconds}s]))")),
            ("time", at.to_string()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["status"], "success", "{answer}");
    answer["data"]["result"][0]["value"][1]
        .as_str()
        .map_or(0.0, |v| v.parse().unwrap())
}

#[tokio::test]
async fn tower_s_slo_figures_match_the_test_s_own_arithmetic_on_the_raw_counts() {
    let app = app().await;
    let prometheus = app.sandbox.metrics_url().unwrap();
    let objects = resources(&app).await;
    assert!(objects.len() >= 5, "the fixture has objectives");

    let mut checked = 0;
    for service in app.fleet.services() {
        let (status, body) = app.get_json(&ListSlos::url(&service.name)).await;
        assert_eq!(status, 200, "{body}");
        let slos: Vec<SloView> = serde_json::from_value(body).unwrap();
        for slo in &slos {
            assert_eq!(slo.error, None, "{}", slo.name);
            let object = objects
                .iter()
                .find(|o| o.metadata.name.as_deref() == Some(slo.name.as_str()))
                .unwrap();
            let spec = &object.data["spec"];
            let target: f64 = spec["target"].as_str().unwrap().parse::<f64>().unwrap() / 100.0;
            let (counted, total, latency) = if spec["indicator"]["ratio"].is_object() {
                (
                    spec["indicator"]["ratio"]["errors"]["metric"]
                        .as_str()
                        .unwrap(),
                    spec["indicator"]["ratio"]["total"]["metric"]
                        .as_str()
                        .unwrap(),
                    false,
                )
            } else {
                (
                    spec["indicator"]["latency"]["success"]["metric"]
                        .as_str()
                        .unwrap(),
                    spec["indicator"]["latency"]["total"]["metric"]
                        .as_str()
                        .unwrap(),
                    true,
                )
            };
            assert_eq!(slo.indicator == Indicator::Latency, latency);
            assert!((slo.objective - target).abs() < 1e-12);
            // The test's own arithmetic: bad over total, over the budget.
            let expected_ratio = |c: f64, t: f64| {
                let bad = if latency { (t - c).max(0.0) } else { c };
                bad / t
            };
            for (window, seconds) in BURN_WINDOWS {
                let c = increase(&prometheus, counted, seconds, slo.evaluated_at).await;
                let t = increase(&prometheus, total, seconds, slo.evaluated_at).await;
                let burn = slo
                    .burn_rates
                    .iter()
                    .find(|b| b.window == window)
                    .unwrap()
                    .rate
                    .unwrap();
                let expected = expected_ratio(c, t) / (1.0 - target);
                assert!(
                    (burn - expected).abs() < 1e-6,
                    "{} over {window}: Tower {burn}, expected {expected}",
                    slo.name
                );
            }
            let window = shared::slo::parse_duration(spec["window"].as_str().unwrap()).unwrap();
            let c = increase(&prometheus, counted, window, slo.evaluated_at).await;
            let t = increase(&prometheus, total, window, slo.evaluated_at).await;
            let ratio = expected_ratio(c, t);
            let availability = slo.availability.unwrap();
            let remaining = slo.budget_remaining.unwrap();
            assert!((availability - (1.0 - ratio)).abs() < 1e-6, "{}", slo.name);
            assert!(
                (remaining - (1.0 - ratio / (1.0 - target))).abs() < 1e-6,
                "{}: remaining {remaining}",
                slo.name
            );
            // Each alert fires exactly when both of its windows burn faster than its factor.
            let rate = |w: &str| {
                slo.burn_rates
                    .iter()
                    .find(|b| b.window == w)
                    .and_then(|b| b.rate)
                    .unwrap()
            };
            for (alert, (long, short, factor)) in slo.alerts.iter().zip([
                ("1h", "5m", 14.4),
                ("6h", "30m", 6.0),
                ("1d", "2h", 3.0),
                ("3d", "6h", 1.0),
            ]) {
                assert_eq!((alert.long.as_str(), alert.short.as_str()), (long, short));
                assert_eq!(alert.firing, rate(long) > factor && rate(short) > factor);
            }
            assert!(
                !slo.budget_history.is_empty(),
                "{}: budget over time",
                slo.name
            );
            checked += 1;
        }
    }
    println!("{checked} objectives checked against the raw counts");
    assert_eq!(checked, objects.len(), "every objective is evaluated");
}

#[tokio::test]
async fn the_fast_burner_burns_enters_the_feed_and_leads_the_overview_s_budget_order() {
    let app = app().await;
    let (status, body) = app.get_json(&ListSlos::url("payments")).await;
    assert_eq!(status, 200, "{body}");
    let slos: Vec<SloView> = serde_json::from_value(body).unwrap();
    let availability = slos
        .iter()
        .find(|s| s.environment == "prod" && s.indicator == Indicator::Ratio)
        .expect("payments has an availability objective in prod");
    assert!(availability.burning(), "{availability:?}");
    assert!(
        availability.alerts[0].firing,
        "the bad deploy pages: 1h and 5m above 14.4"
    );

    let feed = eventually(Duration::from_secs(5), || async {
        app.fleet
            .activity()
            .into_iter()
            .find(|item| item.kind == ActivityKind::SloBurning && item.service == "payments")
    })
    .await;
    let item = feed.expect("the burning SLO is in the activity feed");
    assert_eq!(item.environment.as_deref(), Some("prod"));
    assert!(
        item.message.contains(&availability.name),
        "{}",
        item.message
    );

    let (status, body) = app.get_json(&ListSloSummaries::url()).await;
    assert_eq!(status, 200, "{body}");
    let mut summaries: Vec<SloSummary> = serde_json::from_value(body).unwrap();
    assert!(summaries.len() >= 4, "most services have objectives");
    assert!(
        summaries.len() < app.fleet.services().len(),
        "and some have none"
    );
    summaries.sort_by(|a, b| {
        let left = |s: &SloSummary| s.worst.as_ref().map_or(f64::MAX, |w| w.budget_remaining);
        left(a).total_cmp(&left(b))
    });
    assert_eq!(summaries[0].service, "payments", "the least budget left");
    assert!(summaries[0].burning);
}
