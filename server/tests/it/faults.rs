//! The fault suite (issue 17): each upstream Tower reads (a workload cluster, Argo CD, the forge, Mimir, Loki)
//! behind the sandbox's fault proxy, taken down, slowed, failing, truncating, expiring watches and rate
//! limiting in turn. Each case checks, through Tower's own API as a browser sees it: the pages still answer
//! (the part depending on the failed upstream with a clear error, never a hang), the affected card or tab
//! says what is wrong and since when, everything else keeps updating, Tower recovers by itself once the
//! fault is lifted, and it never comes back to the upstream faster than it was asked to.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

use axum::http::Method;
use sandbox::faults::{Fault, FaultProxy, Received};
use serde_json::{Value, json};
use shared::api::{GetMetrics, ListLogPods, LogQuery, Logs};
use shared::fleet::DeploymentCard;
use shared::logs::RecentPods;
use shared::metrics::{MetricsRange, MetricsView};

use crate::delivery::{send_json, tower_branches};
use crate::fleet::card_within;
use crate::{Role, TestApp, eventually};

/// How long [`Fault::Slow`] holds each answer.
const SLOW: Duration = Duration::from_secs(5);
/// A page's API answers within this, whatever an upstream does: handlers read the model, not upstreams.
const PAGE_ANSWERS_WITHIN: Duration = Duration::from_secs(4);
/// What GitHub's rate limit asks for in the rate-limit cases.
const RETRY_AFTER_SECS: u64 = 4;
/// The branch Promote of payments to prod writes.
const PROMOTE_BRANCH: &str = "tower/promote/payments/prod";

/// Runs `future`, failing the case if it takes longer than `limit`.
async fn within<T>(case: &str, what: &str, limit: Duration, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("{case}: {what} took longer than {limit:?}"))
}

/// A sandbox with no simulator and no metrics (the Mimir cases start their own store).
async fn quiet_sandbox() -> sandbox::Sandbox {
    sandbox::Sandbox::start_with(sandbox::Options::new("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap()
}

/// The pages that do not depend on the failed upstream answer 200, promptly.
async fn pages_answer(app: &TestApp, case: &str) {
    for path in [
        "/api/v1/services",
        "/api/v1/services/payments",
        "/api/v1/environments",
        "/api/v1/activity",
    ] {
        let (status, body) = within(case, path, PAGE_ANSWERS_WITHIN, app.get_json(path)).await;
        assert_eq!(status, 200, "{case}: {path} answered {status}: {body}");
    }
}

/// The `state` of `environment`'s source, as `/api/v1/environments` says it.
async fn environment_state(app: &TestApp, environment: &str) -> Value {
    let (_, environments) = app.get_json("/api/v1/environments").await;
    environments
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == environment)
        .map(|e| e["source"]["state"].clone())
        .unwrap_or(Value::Null)
}

/// Sets the restart count of one of `service`'s pods on `cluster` to `restarts` and waits (at most `limit`)
/// for the `environment` card to show it: proof that changes there still reach the fleet model.
async fn a_change_reaches_the_card(
    app: &TestApp,
    case: &str,
    cluster: &str,
    environment: &str,
    restarts: u32,
    limit: Duration,
) -> DeploymentCard {
    let store = app.sandbox.cluster(cluster).unwrap();
    let mut pod = store
        .list("v1", "Pod")
        .into_iter()
        .find(|p| p["metadata"]["labels"]["platform.tower.dev/component"] == "cart")
        .unwrap_or_else(|| panic!("{case}: cart runs on {cluster}"));
    pod["status"]["containerStatuses"][0]["restartCount"] = restarts.into();
    store.apply(pod).unwrap();
    let card = card_within(app, "cart", environment, limit, |c| {
        c.pods.iter().any(|p| p.restarts == restarts)
    })
    .await;
    assert!(
        card.pods.iter().any(|p| p.restarts == restarts),
        "{case}: a change on {cluster} did not reach the {environment} card within {limit:?}"
    );
    card
}

/// Whether a request's path and query are a Kubernetes watch.
fn is_watch(path: &str) -> bool {
    path.contains("watch=true") || path.contains("watch=1")
}

/// The most requests received within any one second of `records` from `from` to `to`.
fn busiest_second(records: &[Received], from: Instant, to: Instant) -> usize {
    let mut buckets = std::collections::BTreeMap::<u64, usize>::new();
    for record in records.iter().filter(|r| r.at >= from && r.at < to) {
        *buckets
            .entry(record.at.duration_since(from).as_secs())
            .or_default() += 1;
    }
    buckets.into_values().max().unwrap_or(0)
}

/// A timestamp Tower reported, checked to be no earlier than the fault (less a second of clock rounding).
fn since_the_fault(case: &str, since: &str, faulted_at: jiff::Timestamp) {
    let since: jiff::Timestamp = since
        .parse()
        .unwrap_or_else(|_| panic!("{case}: since {since:?} is not a time"));
    let earliest = faulted_at
        .checked_sub(jiff::SignedDuration::from_secs(1))
        .unwrap();
    assert!(
        since >= earliest,
        "{case}: since {since}, but the fault began at {faulted_at}"
    );
}

/// Runs every case of one upstream's table at once, each on its own sandbox, Tower and proxy (the cases
/// mostly wait, and CI runs two tests at a time on two cores, so one test per case would queue them), each
/// started a moment after the previous so their start-ups do not all compete; then fails naming every case
/// that failed, with its message.
async fn run_cases<Fut: Future<Output = ()>>(
    cases: Vec<(&'static str, Fault)>,
    check: impl Fn(&'static str, Fault) -> Fut,
) {
    use futures::FutureExt as _;

    let runs = cases.into_iter().enumerate().map(|(index, (case, fault))| {
        let run = check(case, fault);
        async move {
            tokio::time::sleep(START_EVERY * u32::try_from(index).unwrap()).await;
            let started = Instant::now();
            let outcome = std::panic::AssertUnwindSafe(run).catch_unwind().await;
            println!("{case}: {:.1} s", started.elapsed().as_secs_f64());
            outcome.err().map(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default();
                format!("{case}: {message}")
            })
        }
    });
    let failed: Vec<String> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert!(
        failed.is_empty(),
        "{} case(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// How far apart the cases of one table start.
const START_EVERY: Duration = Duration::from_millis(700);

/// One test per upstream, running its table of cases: `test: check { case => fault; … }`.
macro_rules! cases {
    ($test:ident: $check:ident { $($case:ident => $fault:expr;)* }) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            run_cases(vec![$((stringify!($case), $fault)),*], $check).await;
        }
    };
}

// ---------------------------------------------------------------------------------------------------------
// A workload cluster (prod): its watches and readiness probe go through the proxy.

cases! {
    a_workload_cluster_under_every_fault: cluster_case {
        prod_cluster_down => Fault::Down;
        prod_cluster_slow => Fault::Slow(SLOW);
        prod_cluster_500 => Fault::ServerError;
        prod_cluster_truncated => Fault::Truncated;
        prod_cluster_watch_410_gone => Fault::Gone;
        prod_cluster_watch_410_expired_event => Fault::GoneInStream;
    }
}

async fn cluster_case(case: &str, fault: Fault) {
    let sandbox = quiet_sandbox().await;
    let proxy = FaultProxy::start(&sandbox.cluster_url("prod"))
        .await
        .unwrap();
    let url = proxy.url();
    let app = TestApp::start_over(sandbox, |config| {
        let prod = config
            .clusters
            .iter_mut()
            .find(|c| c.name == "prod")
            .unwrap();
        prod.url = Some(url);
    })
    .await;
    assert!(
        proxy.received().iter().any(|r| is_watch(&r.path)),
        "{case}: Tower watches prod through the proxy"
    );

    let faulted_at = Instant::now();
    let faulted_at_time = jiff::Timestamp::now();
    proxy.set(fault.clone());

    match fault {
        Fault::Slow(_) => {
            // Slow is not down: the cards say nothing is wrong, and a change still arrives, late.
            a_change_reaches_the_card(&app, case, "prod", "prod", 7, SLOW * 3).await;
            let card = card_within(&app, "payments", "prod", Duration::ZERO, |_| true).await;
            assert!(
                card.unreachable_since.is_none(),
                "{case}: a slow cluster is marked unreachable"
            );
        }
        Fault::Down | Fault::ServerError | Fault::Truncated => {
            // A watch cut midway is a normal end to kube (it watches again, without an error): a truncating
            // cluster is caught by the readiness probe, every 10 s while the cluster is fine.
            let card = card_within(&app, "payments", "prod", Duration::from_secs(15), |c| {
                c.unreachable_since.is_some()
            })
            .await;
            let since = card
                .unreachable_since
                .unwrap_or_else(|| panic!("{case}: the prod card never said prod is unreachable"));
            since_the_fault(case, &since, faulted_at_time);
            let state = environment_state(&app, "prod").await;
            assert_eq!(state["state"], "unreachable", "{case}: {state}");
        }
        Fault::Gone => {
            // kube's watcher retries a watch refused with 410 from the same resourceVersion (it relists only
            // on the 410 a real API server sends inside the stream, the next case): the data goes stale, and
            // the environment says why.
            let state = eventually(Duration::from_secs(10), || async {
                let state = environment_state(&app, "prod").await;
                (state["state"] == "unreachable").then_some(state)
            })
            .await
            .unwrap_or_else(|| panic!("{case}: prod never said its watches fail"));
            let reason = state["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("Expired"), "{case}: {state}");
            since_the_fault(
                case,
                state["since"].as_str().unwrap_or_default(),
                faulted_at_time,
            );
        }
        Fault::GoneInStream => {
            // Every list answers, so what the cards show is current as of the last relist: the environment
            // says it is relisting, never that the cluster is unreachable.
            let watched_from = Instant::now();
            let mut seen = BTreeSet::new();
            while watched_from.elapsed() < Duration::from_secs(3)
                || (!seen.contains("relisting") && watched_from.elapsed() < Duration::from_secs(8))
            {
                let state = environment_state(&app, "prod").await;
                assert_ne!(state["state"], "unreachable", "{case}: {state}");
                seen.insert(state["state"].as_str().unwrap_or_default().to_string());
                let card = card_within(&app, "payments", "prod", Duration::ZERO, |_| true).await;
                assert!(card.unreachable_since.is_none(), "{case}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(
                seen.contains("relisting"),
                "{case}: prod never said it was relisting, only {seen:?}"
            );
        }
        _ => unreachable!("no such cluster case"),
    }

    pages_answer(&app, case).await;
    a_change_reaches_the_card(&app, case, "dev", "dev", 3, Duration::from_secs(10)).await;

    // Pacing, from three seconds in (every watch's first retries come within the first seconds) for four
    // seconds: no second carries more than a list and a watch per watch, and the retries have spaced out
    // (kube's backoff doubles from 0.8 s: about one more try per watch in those seconds, each a list and
    // a watch, and the readiness probe's every 2 s). Relisting on every expired watch without backing off
    // made about 60.
    let measure_from = faulted_at + Duration::from_secs(3);
    let measure_until = faulted_at + Duration::from_secs(7);
    tokio::time::sleep_until(measure_until.into()).await;
    let records = proxy.received();
    // Every kind Tower watches on prod, from the requests it sent (at start or since).
    let watches: BTreeSet<&str> = records
        .iter()
        .filter(|r| is_watch(&r.path))
        .filter_map(|r| r.path.split('?').next())
        .collect();
    let busiest = busiest_second(&records, measure_from, measure_until);
    let total = records
        .iter()
        .filter(|r| r.at >= measure_from && r.at < measure_until)
        .count();
    println!(
        "{case}: {} watches; {total} requests in 4 s, at most {busiest} in one second",
        watches.len()
    );
    assert!(
        busiest <= 2 * watches.len() + 2,
        "{case}: {busiest} requests in one second for {} watches: not backing off",
        watches.len()
    );
    // Not for a truncating cluster: kube takes each cut watch for a normal end and watches again at once,
    // without backoff and without telling Tower (here about once a second per watch, as the proxy waits a
    // second for a first chunk to cut). Reported, not fixed: it is inside kube's watcher.
    assert!(
        fault == Fault::Truncated || total <= 2 * watches.len() + 6,
        "{case}: {total} requests in four seconds for {} watches: the retries do not space out",
        watches.len()
    );

    proxy.set(Fault::None);
    let recovered_from = Instant::now();
    let recovered = card_within(&app, "payments", "prod", Duration::from_secs(40), |c| {
        c.unreachable_since.is_none()
    })
    .await;
    assert!(
        recovered.unreachable_since.is_none(),
        "{case}: prod never recovered"
    );
    a_change_reaches_the_card(&app, case, "prod", "prod", 11, Duration::from_secs(40)).await;
    println!(
        "{case}: recovered {:.1} s after the fault was lifted",
        recovered_from.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------------------
// Argo CD: Tower reads Applications from the management cluster's watch, so its one call is an owner's Sync.

cases! {
    argo_cd_under_every_fault: argocd_case {
        argocd_down => Fault::Down;
        argocd_slow => Fault::Slow(SLOW);
        argocd_500 => Fault::ServerError;
        argocd_truncated => Fault::Truncated;
    }
}

const SYNC: &str = "/api/v1/services/payments/environments/prod/sync";

async fn argocd_case(case: &str, fault: Fault) {
    let sandbox = quiet_sandbox().await;
    let main = sandbox.argocd_instances().remove(0);
    let proxy = FaultProxy::start(&main.url).await.unwrap();
    let url = proxy.url();
    let app = TestApp::start_over(sandbox, |config| {
        let instance = config
            .argocd
            .iter_mut()
            .find(|a| a.name == main.name)
            .unwrap();
        instance.url = url;
    })
    .await;

    proxy.set(fault.clone());
    // Argo CD's client gives up after 20 s; a slow answer comes after SLOW.
    let (status, body) = within(
        case,
        "a sync",
        Duration::from_secs(25),
        send_json(&app, &Role::Owner, Method::POST, SYNC, json!({})),
    )
    .await;
    let reached = app.sandbox.argocd().sync_requests().len();
    match fault {
        Fault::Slow(_) => {
            assert_eq!(status, 200, "{case}: {body}");
            assert_eq!(reached, 1, "{case}");
        }
        // The sync reached Argo CD; its answer was cut. Tower reads the status line, which said yes.
        Fault::Truncated => {
            assert!(status == 200 || status == 502, "{case}: {status} {body}");
            assert_eq!(reached, 1, "{case}: the sync reached Argo CD exactly once");
        }
        _ => {
            assert_eq!(status, 502, "{case}: {body}");
            assert_eq!(body["code"], "unavailable", "{case}: {body}");
            assert_eq!(
                body["message"], "Argo CD did not answer as expected; try again.",
                "{case}"
            );
            assert!(body["request_id"].is_string(), "{case}: {body}");
            assert_eq!(reached, 0, "{case}");
        }
    }
    pages_answer(&app, case).await;
    // Cards come from the clusters' watches, not Argo CD's API: nothing is marked.
    let card = card_within(&app, "payments", "prod", Duration::ZERO, |_| true).await;
    assert!(card.unreachable_since.is_none(), "{case}");
    a_change_reaches_the_card(&app, case, "dev", "dev", 3, Duration::from_secs(10)).await;

    proxy.set(Fault::None);
    let (status, body) = within(
        case,
        "a sync after recovery",
        Duration::from_secs(5),
        send_json(&app, &Role::Owner, Method::POST, SYNC, json!({})),
    )
    .await;
    // A sync that got through during the fault is still running: Argo CD says so, and Tower with it.
    let still_syncing = reached == 1 && status == 409 && body["code"] == "conflict";
    assert!(
        status == 200 || still_syncing,
        "{case}: after recovery: {status} {body}"
    );
}

// ---------------------------------------------------------------------------------------------------------
// The forge: repository facts, the pull-request trackers (polling every second here) and Promote.

cases! {
    the_forge_under_every_fault: forge_case {
        forge_down => Fault::Down;
        forge_slow => Fault::Slow(SLOW);
        forge_500 => Fault::ServerError;
        forge_truncated => Fault::Truncated;
        forge_rate_limited_403 => Fault::RateLimited { status: 403, retry_after_secs: RETRY_AFTER_SECS };
        forge_rate_limited_429 => Fault::RateLimited { status: 429, retry_after_secs: RETRY_AFTER_SECS };
    }
}

async fn promote(app: &TestApp) -> (u16, Value) {
    send_json(
        app,
        &Role::Owner,
        Method::POST,
        "/api/v1/services/payments/promote",
        json!({}),
    )
    .await
}

/// Every pull request of the GitOps repository (number, head branch, state), read from the forge directly.
async fn all_pulls(app: &TestApp) -> BTreeSet<(u64, String, String)> {
    let (app_id, key) = sandbox::forge::Forge::demo_app();
    let github = server::upstream::github::GithubApp::new(
        &format!("{}/github/", app.sandbox.url()),
        app_id,
        &key,
        sandbox::forge::DEMO_INSTALLATION_ID,
    )
    .unwrap();
    github
        .list_pulls(
            &format!(
                "{}/{}",
                sandbox::world::ORGANISATION,
                sandbox::world::GITOPS_REPOSITORY
            ),
            "all",
            None,
            100,
            1,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.number, p.head.reference, p.state))
        .collect()
}

/// Tower on a quiet sandbox, with every GitHub call going through a fault proxy in front of its forge.
async fn tower_behind_a_forge_proxy() -> (TestApp, FaultProxy) {
    let sandbox = quiet_sandbox().await;
    let proxy = FaultProxy::start(&format!("{}/github/", sandbox.url()))
        .await
        .unwrap();
    let url = proxy.url();
    let app = TestApp::start_over(sandbox, |config| {
        config.github.as_mut().unwrap().api_url = format!("{url}/");
    })
    .await;
    (app, proxy)
}

async fn forge_case(case: &str, fault: Fault) {
    let (app, proxy) = tower_behind_a_forge_proxy().await;
    // The first repository facts arrive through the proxy.
    card_within(&app, "payments", "prod", Duration::from_secs(10), |c| {
        !c.changes.is_empty()
    })
    .await;

    let pulls_before = all_pulls(&app).await;

    let faulted_at = Instant::now();
    proxy.set(fault.clone());
    if fault == Fault::Slow(SLOW) {
        // Each of Promote's dozen forge calls waits SLOW: meanwhile every page answers at once, and once
        // the forge is quick again the submission finishes.
        let submitted =
            async { within(case, "Promote", Duration::from_secs(40), promote(&app)).await };
        let meanwhile = async {
            pages_answer(&app, case).await;
            a_change_reaches_the_card(&app, case, "dev", "dev", 3, Duration::from_secs(10)).await;
            tokio::time::sleep_until((faulted_at + SLOW + Duration::from_secs(1)).into()).await;
            proxy.set(Fault::None);
        };
        let ((status, body), ()) = tokio::join!(submitted, meanwhile);
        assert_eq!(status, 201, "{case}: {body}");
    } else {
        let (status, body) = within(case, "Promote", PAGE_ANSWERS_WITHIN * 5, promote(&app)).await;
        assert_eq!(body["code"], "unavailable", "{case}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        if matches!(fault, Fault::RateLimited { .. }) {
            // GitHub's limit, said as such, with when to come back (never later than GitHub said).
            assert_eq!(status, 503, "{case}: {body}");
            assert!(message.contains("rate limit"), "{case}: {message}");
            let seconds: u64 = message
                .split("in ")
                .last()
                .and_then(|rest| rest.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(u64::MAX);
            assert!(
                (1..=RETRY_AFTER_SECS).contains(&seconds),
                "{case}: {message}"
            );
        } else {
            assert_eq!(status, 502, "{case}: {body}");
            assert!(message.contains("forge"), "{case}: {message}");
        }
        assert!(body["request_id"].is_string(), "{case}: {body}");
        if message.contains("pushed to branch") {
            println!("{case}: the failed Promote left branch {PROMOTE_BRANCH} for the retry");
        }
        pages_answer(&app, case).await;
        a_change_reaches_the_card(&app, case, "dev", "dev", 3, Duration::from_secs(10)).await;
    }

    if let Fault::RateLimited {
        retry_after_secs, ..
    } = fault
    {
        // Tower's pollers keep trying (every second here), and the user submits again: none of it may
        // reach the forge before GitHub's Retry-After has passed. The first limited answer starts the
        // clock; requests already on their way then are let through.
        let quiet_for = Duration::from_secs(retry_after_secs);
        let records = proxy.received_since(faulted_at);
        let first = records.first().map(|r| r.at).unwrap_or(faulted_at);
        let (again, _) = promote(&app).await;
        assert_eq!(again, 503, "{case}: a second Promote during the limit");
        tokio::time::sleep_until((first + quiet_for).into()).await;
        let early: Vec<Received> = proxy
            .received_since(first + Duration::from_millis(500))
            .into_iter()
            .filter(|r| r.at < first + quiet_for)
            .collect();
        assert!(
            early.is_empty(),
            "{case}: {} requests reached the forge within Retry-After ({retry_after_secs} s): {early:?}",
            early.len()
        );
    } else {
        let records = proxy.received_since(faulted_at);
        let busiest = busiest_second(&records, faulted_at, Instant::now());
        println!(
            "{case}: {} forge requests, at most {busiest} in one second",
            records.len()
        );
        assert!(
            busiest <= 20,
            "{case}: {busiest} forge requests in one second"
        );
    }

    proxy.set(Fault::None);
    // Submitting again after the fault: the retry finishes what was started, or starts over, and the
    // result is exactly one pull request on one branch.
    // Writes are rate limited per user (ten a minute): a few tries, a second apart.
    let mut finished = None;
    for _ in 0..5 {
        let (status, body) = promote(&app).await;
        if status == 200 || status == 201 {
            finished = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let finished = finished
        .unwrap_or_else(|| panic!("{case}: Promote never succeeded after the fault was lifted"));
    one_branch_one_pull_request(&app, case, &pulls_before, &finished).await;
}

/// Promote's branch is Tower's only branch, and since `pulls_before` exactly one pull request was opened:
/// the open one from that branch that `finished` (Promote's answer) names.
async fn one_branch_one_pull_request(
    app: &TestApp,
    case: &str,
    pulls_before: &BTreeSet<(u64, String, String)>,
    finished: &Value,
) {
    assert_eq!(
        tower_branches(app),
        [format!("refs/heads/{PROMOTE_BRANCH}")],
        "{case}: one branch"
    );
    let opened: Vec<_> = all_pulls(app)
        .await
        .difference(pulls_before)
        .cloned()
        .collect();
    assert_eq!(
        opened.len(),
        1,
        "{case}: exactly one pull request opened: {opened:?}"
    );
    assert_eq!(finished["number"], opened[0].0, "{case}");
    assert_eq!(opened[0].1, PROMOTE_BRANCH, "{case}");
    assert_eq!(opened[0].2, "open", "{case}");
}

/// Promote whose pull request cannot be opened, its branch already pushed (the forge fails only at
/// `POST …/pulls`): the answer names the branch and says submitting again is safe, and the next Promote
/// finishes the same change: one branch, one pull request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forge_failure_after_the_push_leaves_a_branch_the_next_promote_finishes() {
    let case = "forge_500_on_opening_the_pull_request";
    let (app, proxy) = tower_behind_a_forge_proxy().await;
    let pulls_before = all_pulls(&app).await;
    let open_pull = format!(
        "POST /github/repos/{}/{}/pulls",
        sandbox::world::ORGANISATION,
        sandbox::world::GITOPS_REPOSITORY
    );
    proxy.set_for(&open_pull, Fault::ServerError);

    let (status, body) = within(case, "Promote", Duration::from_secs(20), promote(&app)).await;
    assert_eq!(status, 502, "{case}: {body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(PROMOTE_BRANCH) && message.contains("Submitting again is safe"),
        "{case}: {message}"
    );
    assert!(
        proxy
            .received()
            .iter()
            .any(|r| format!("{} {}", r.method, r.path).contains(&open_pull)),
        "{case}: Tower got as far as opening the pull request"
    );
    assert_eq!(
        tower_branches(&app),
        [format!("refs/heads/{PROMOTE_BRANCH}")],
        "{case}: the pushed branch stays for the retry"
    );
    assert_eq!(
        all_pulls(&app).await,
        pulls_before,
        "{case}: no pull request yet"
    );

    proxy.set(Fault::None);
    let (status, finished) = within(
        case,
        "Promote again",
        Duration::from_secs(20),
        promote(&app),
    )
    .await;
    assert!(
        status == 201 || status == 200,
        "{case}: {status} {finished}"
    );
    one_branch_one_pull_request(&app, case, &pulls_before, &finished).await;
}

// ---------------------------------------------------------------------------------------------------------
// Mimir: the Metrics tab's fixed queries, against the sandbox's built-in Prometheus API.

cases! {
    mimir_under_every_fault: mimir_case {
        mimir_down => Fault::Down;
        mimir_slow => Fault::Slow(SLOW);
        mimir_500 => Fault::ServerError;
        mimir_truncated => Fault::Truncated;
    }
}

async fn metrics_view(
    app: &TestApp,
    case: &str,
    range: MetricsRange,
    limit: Duration,
) -> MetricsView {
    let path = GetMetrics::with_range("payments", "prod", range);
    let (status, body) = within(case, "the Metrics tab", limit, app.get_json(&path)).await;
    assert_eq!(status, 200, "{case}: {body}");
    serde_json::from_value(body).unwrap()
}

async fn mimir_case(case: &str, fault: Fault) {
    let sandbox = quiet_sandbox().await;
    let store = sandbox::metrics::Metrics::fallback(
        sandbox::metrics::Options::new(42, sandbox.timeline().start()),
        &sandbox::world::SERVICES,
    )
    .await
    .unwrap();
    let proxy = FaultProxy::start(&store.base_url()).await.unwrap();
    let url = proxy.url();
    let app = TestApp::start_over(sandbox, |config| {
        config.mimir = Some(server::config::MimirConfig::new(url));
    })
    .await;
    let healthy = metrics_view(&app, case, MetricsRange::Hour, PAGE_ANSWERS_WITHIN).await;
    assert!(
        healthy.charts.iter().all(|c| c.error.is_none()),
        "{case}: healthy first"
    );

    let faulted_at = Instant::now();
    let faulted_at_time = jiff::Timestamp::now();
    proxy.set(fault.clone());
    // A range not asked for yet, so no healthy answer is reused. Mimir's client gives up after 10 s.
    let down = metrics_view(
        &app,
        case,
        MetricsRange::SixHours,
        SLOW + PAGE_ANSWERS_WITHIN,
    )
    .await;
    match fault {
        Fault::Slow(_) => assert!(
            down.charts.iter().all(|c| c.error.is_none()),
            "{case}: a slow store still answers"
        ),
        _ => {
            for chart in &down.charts {
                let error = chart
                    .error
                    .as_ref()
                    .unwrap_or_else(|| panic!("{case}: {:?} reports the fault", chart.query));
                // A connection cut midway through the answer is the store going away, as reqwest reports it.
                let expected: &[&str] = match fault {
                    Fault::Down => &["The metrics store is unreachable"],
                    Fault::ServerError => &["The metrics store did not answer as expected"],
                    _ => &[
                        "The metrics store is unreachable",
                        "The metrics store did not answer as expected",
                    ],
                };
                assert!(
                    expected.contains(&error.message.as_str()),
                    "{case}: {:?}: {}",
                    chart.query,
                    error.message
                );
                since_the_fault(case, &error.since, faulted_at_time);
            }
        }
    }
    // The deploy markers come from the watch cache, not Mimir: still marked.
    let markers: Vec<_> = app
        .fleet
        .deploy_markers("payments", "prod")
        .into_iter()
        .filter(|d| (down.start..=down.end).contains(&d.at))
        .collect();
    assert_eq!(down.deploys, markers, "{case}");
    pages_answer(&app, case).await;
    a_change_reaches_the_card(&app, case, "dev", "dev", 3, Duration::from_secs(10)).await;

    // Viewers keep looking for three seconds: a failed answer is reused, not asked again each time.
    let watched_from = Instant::now();
    while watched_from.elapsed() < Duration::from_secs(3) {
        metrics_view(
            &app,
            case,
            MetricsRange::SixHours,
            SLOW + PAGE_ANSWERS_WITHIN,
        )
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Once per fixed query per FAILURE_REUSE (5 s) since the fault at most, with one round to spare for
    // a busy machine; without reuse every view would have asked eight more. Only the tab's own window
    // counts: the SLOs' background evaluation asks Mimir too.
    let rounds = faulted_at.elapsed().as_secs() / 5 + 2;
    let window = format!("start={}&end={}&", down.start, down.end);
    let asked = proxy
        .received_since(faulted_at)
        .iter()
        .filter(|r| r.path.contains(&window) || r.method == sandbox::faults::REFUSED)
        .count();
    let per_round = shared::metrics::MetricQuery::ALL.len();
    println!("{case}: {asked} of the tab's range queries (or refused connections) for 15+ views");
    assert!(
        asked <= per_round * usize::try_from(rounds).unwrap(),
        "{case}: {asked} queries reached the store in {rounds} rounds: failures are not reused"
    );

    proxy.set(Fault::None);
    let recovered = eventually(Duration::from_secs(15), || async {
        let view = metrics_view(
            &app,
            case,
            MetricsRange::SixHours,
            SLOW + PAGE_ANSWERS_WITHIN,
        )
        .await;
        view.charts
            .iter()
            .all(|c| c.error.is_none())
            .then_some(view)
    })
    .await;
    assert!(recovered.is_some(), "{case}: the charts never came back");
}

// ---------------------------------------------------------------------------------------------------------
// Loki: the log panel's list of gone pods, and a gone pod's tail.

cases! {
    loki_under_every_fault: loki_case {
        loki_down => Fault::Down;
        loki_slow => Fault::Slow(SLOW);
        loki_500 => Fault::ServerError;
        loki_truncated => Fault::Truncated;
    }
}

async fn log_pods(app: &TestApp, case: &str, limit: Duration) -> RecentPods {
    let path = ListLogPods::url("payments", "dev");
    let (status, body) = within(
        case,
        "the log panel's pods",
        limit,
        send_json(app, &Role::Owner, Method::GET, &path, Value::Null),
    )
    .await;
    assert_eq!(status, 200, "{case}: {body}");
    serde_json::from_value(body).unwrap()
}

async fn gone_pod_tail(app: &TestApp, case: &str, limit: Duration) -> (u16, Value) {
    let query = LogQuery {
        pod: "payments-5d8f9c7b6-gone1".into(),
        tail: Some(10),
        ..LogQuery::default()
    };
    let path = Logs::with_query("payments", "dev", &query);
    within(
        case,
        "a gone pod's tail",
        limit,
        send_json(app, &Role::Owner, Method::GET, &path, Value::Null),
    )
    .await
}

async fn loki_case(case: &str, fault: Fault) {
    let sandbox = quiet_sandbox().await;
    let proxy = FaultProxy::start(&sandbox.loki_url()).await.unwrap();
    let url = proxy.url();
    let app = TestApp::start_over(sandbox, |config| {
        config.loki.as_mut().unwrap().url = url;
    })
    .await;
    let healthy = log_pods(&app, case, PAGE_ANSWERS_WITHIN).await;
    assert!(healthy.store && !healthy.store_unavailable, "{case}");
    let (status, body) = gone_pod_tail(&app, case, PAGE_ANSWERS_WITHIN).await;
    assert_eq!(status, 400, "{case}: the store has no such pod: {body}");

    let faulted_at = jiff::Timestamp::now();
    proxy.set(fault.clone());
    // Loki's client gives up after 10 s; a slow answer comes after SLOW.
    let limit = SLOW + PAGE_ANSWERS_WITHIN;
    let listed = log_pods(&app, case, limit).await;
    assert!(
        !listed.pods.is_empty(),
        "{case}: the running pods are still listed"
    );
    let (status, body) = gone_pod_tail(&app, case, limit).await;
    match fault {
        Fault::Slow(_) => {
            assert!(!listed.store_unavailable, "{case}");
            assert_eq!(status, 400, "{case}: {body}");
        }
        _ => {
            assert!(
                listed.store_unavailable,
                "{case}: the panel says the store is unavailable"
            );
            // …and since when: no earlier than the fault.
            let since: jiff::Timestamp = listed
                .store_unavailable_since
                .as_deref()
                .and_then(|since| since.parse().ok())
                .unwrap_or_else(|| panic!("{case}: no since: {listed:?}"));
            assert!(
                since >= faulted_at,
                "{case}: since {since}, fault at {faulted_at}"
            );
            // Asked again, the store still failing: the same moment, not the latest failure.
            let again = log_pods(&app, case, limit).await;
            assert_eq!(
                again.store_unavailable_since, listed.store_unavailable_since,
                "{case}"
            );
            assert_eq!(status, 502, "{case}: {body}");
            assert_eq!(body["code"], "unavailable", "{case}: {body}");
            assert_eq!(
                body["message"], "the log store did not answer as expected; try again.",
                "{case}"
            );
        }
    }
    pages_answer(&app, case).await;
    a_change_reaches_the_card(&app, case, "dev", "dev", 3, Duration::from_secs(10)).await;

    proxy.set(Fault::None);
    let recovered = eventually(Duration::from_secs(10), || async {
        let listed = log_pods(&app, case, PAGE_ANSWERS_WITHIN).await;
        (!listed.store_unavailable).then_some(listed)
    })
    .await;
    let recovered = recovered.unwrap_or_else(|| panic!("{case}: the store never came back"));
    assert_eq!(recovered.store_unavailable_since, None, "{case}");
}
