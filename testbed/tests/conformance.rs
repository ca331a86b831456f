//! Differential conformance of the sandbox's fake Kubernetes API server (`sandbox/src/apiserver/`): one table
//! of scenarios ([`scenarios`]), each run against the fake's management cluster and against a real
//! kube-apiserver holding the same objects (the testbed's, with the platform's CRDs and the management
//! cluster's namespaces, pods, platform objects and Applications), comparing the raw JSON both answer in
//! every field Tower, kube-rs or another client reads.
//!
//! # What is not compared
//!
//! Values each server assigns its own way: `uid`, `resourceVersion` (compared only as present, numeric,
//! increasing, or equal to another version of the same server), `creationTimestamp`, `managedFields`,
//! `selfLink`, `generation` (compared as a count of changes since create, where the real server counts it:
//! the fake also stamps `1` on kinds the real one leaves without, such as ConfigMaps), continue tokens (opaque),
//! the fields a real server defaults into built-in objects, and the human text of `Status.message` and of
//! `details.causes[].message` (their `field` and `reason` are compared). `details: {}` and no `details` are
//! the same to every client. A bookmark is compared by `kind`, `apiVersion`, its numeric `resourceVersion`
//! and its annotations, which is all kube-rs and client-go read of one.
//!
//! # Where the two still differ, and why that stays
//!
//! - **Custom objects are not held to their CRD's schema.** The real server refuses (`422`) a Component whose
//!   `spec.owner` is a number, prunes fields its schema does not declare and fills defaults; the fake stores
//!   what it is sent, as it has no schemas. Tower never writes platform objects through the API (its changes
//!   are pull requests), the simulator writes in-process, and the sandbox's own tests hold the fixtures to
//!   the CRDs. The `errors` scenario checks that this still differs.
//! - **A too-new `resourceVersion`** (`NotOlderThan` or `Exact` above the server's latest) makes the real
//!   server wait up to 3 s for its cache, then answer `504 Too large resource version`; the fake answers at
//!   its latest version at once. Only clients of several API servers behind one address meet it, and a test
//!   of it would cost the wait.
//! - **Bookmarks** come from the fake every 5 s; the real server sends one only when its version moved
//!   past the watcher's, about every minute and 2 s before the watch times out. No client may count on
//!   either timing; the scenario makes both send one and compares its shape.
//! - **Compaction:** the real server's watch cache keeps serving versions etcd has compacted (and continue
//!   tokens from its snapshots) until it restarts; `ClusterStore::compact` forgets at once. The scenario
//!   restarts the real server after compacting, and both answer `410 Expired` alike. A `410` for an old
//!   continue token also carries, from the real server, a continue token for an inconsistent rest of the
//!   list, which client-go's pager and kube-rs ignore (they list again).
//! - **Deleting a pod or a namespace** is graceful on the real server (they stay, with a
//!   `deletionTimestamp`, until a kubelet or the namespace controller finishes: the testbed runs neither);
//!   the fake deletes at once. What a DELETE answers is compared on a ConfigMap and a Release.
//! - **Not compared at all:** strategic merge patches (the fake merges them as merge patches, replacing lists
//!   instead of merging them by key: Tower sends none), server-side apply (the fake merges without field
//!   ownership or conflicts; neither Tower nor the simulator applies over HTTP), aggregated discovery and
//!   `as=Table` (the fake answers the plain documents and lists, which kubectl falls back to), and pod logs
//!   (fake only: no kubelet runs behind the real server).
//!
//! # A real server's bug
//!
//! Kubernetes v1.37.2 pages a list across namespaces narrowed by `fieldSelector=metadata.namespace=…` wrongly:
//! the first page's continue token is relative to the namespace, the next page reads it from the top of all
//! namespaces, and the first items come twice. The fake pages it right; the scenario leaves that list out.
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use http::{Method, Request, header};
use http_body_util::BodyExt as _;
use kube::client::Body;
use serde_json::{Value, json};

/// One side of the comparison: a raw HTTP client of one API server.
struct Side {
    name: &'static str,
    client: kube::Client,
}

/// An answer as it came: status code and JSON body (`Null` if the body is not JSON).
#[derive(Debug)]
struct Answer {
    code: u16,
    body: Value,
    text: String,
}

impl Side {
    /// 0 for the fake, 1 for the real server: where per-side values sit in a pair.
    fn index(&self) -> usize {
        usize::from(self.name == "real")
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, &Value)>,
    ) -> Result<Answer> {
        self.send_with(method, path, &[], body).await
    }

    async fn send_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(header::HeaderName, &str)],
        body: Option<(&str, &Value)>,
    ) -> Result<Answer> {
        let mut request = Request::builder().method(method.clone()).uri(path);
        for (name, value) in headers {
            request = request.header(name, *value);
        }
        let bytes = match body {
            Some((content_type, body)) => {
                request = request.header(header::CONTENT_TYPE, content_type);
                serde_json::to_vec(body)?
            }
            None => Vec::new(),
        };
        let response = self
            .client
            .send(request.body(Body::from(bytes))?)
            .await
            .with_context(|| format!("{} {method} {path}", self.name))?;
        let code = response.status().as_u16();
        let bytes = response.into_body().collect_bytes().await?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Answer { code, body, text })
    }

    async fn get(&self, path: &str) -> Result<Answer> {
        self.send(Method::GET, path, None).await
    }

    /// A request that must succeed; its JSON body.
    async fn ok(&self, method: Method, path: &str, body: Option<(&str, &Value)>) -> Result<Value> {
        let answer = self.send(method.clone(), path, body).await?;
        if !(200..300).contains(&answer.code) {
            bail!(
                "{}: {method} {path} answered {}: {}",
                self.name,
                answer.code,
                answer.text
            );
        }
        Ok(answer.body)
    }

    async fn watch(&self, path: &str) -> Result<Watch> {
        let request = Request::get(path).body(Body::empty())?;
        let response = self.client.send(request).await?;
        Ok(Watch {
            code: response.status().as_u16(),
            body: response.into_body(),
            buffer: Vec::new(),
            ended: false,
        })
    }
}

/// A watch response read event by event.
struct Watch {
    code: u16,
    body: Body,
    buffer: Vec<u8>,
    ended: bool,
}

impl Watch {
    /// The next event, or `None` when the stream ends or nothing arrives within `wait`.
    async fn next(&mut self, wait: Duration) -> Result<Option<Value>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Some(serde_json::from_slice(&line)?));
            }
            if self.ended {
                if self.buffer.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                let rest = std::mem::take(&mut self.buffer);
                return Ok(Some(serde_json::from_slice(&rest)?));
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Ok(None),
                Ok(None) => self.ended = true,
                Ok(Some(frame)) => {
                    if let Ok(data) = frame?.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

/// Both servers, with the same objects, and what the scenarios found.
struct Servers {
    fake: Side,
    real: Side,
    sandbox: sandbox::Sandbox,
    /// Behind a lock, as restarting its API server takes `&mut`.
    testbed: tokio::sync::Mutex<testbed::Testbed>,
    findings: Mutex<Vec<String>>,
}

type Run = for<'a> fn(&'a Servers) -> Pin<Box<dyn Future<Output = Result<()>> + 'a>>;

/// One entry of the table.
struct Scenario {
    /// What both servers must agree on.
    name: &'static str,
    sides: Sides,
    run: Run,
}

/// Which servers a scenario asks.
enum Sides {
    /// Both, and they must agree.
    Both,
    /// The fake alone, for this reason: nothing to compare with.
    FakeOnly(&'static str),
}

/// The scenarios, in the order they run: each makes what it needs in a namespace of its own, but the
/// compaction restarts the real server, so what reads history runs before it.
fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "label selectors pick the same pods",
            sides: Sides::Both,
            run: |s| Box::pin(label_selectors(s)),
        },
        Scenario {
            name: "field selectors pick the same objects, and refuse the same fields",
            sides: Sides::Both,
            run: |s| Box::pin(field_selectors(s)),
        },
        Scenario {
            name: "pages of 2 to 5 add up to the whole list",
            sides: Sides::Both,
            run: |s| Box::pin(pagination(s)),
        },
        Scenario {
            name: "resourceVersion and resourceVersionMatch on lists",
            sides: Sides::Both,
            run: |s| Box::pin(resource_versions(s)),
        },
        Scenario {
            name: "a watch from a version sees later changes in order",
            sides: Sides::Both,
            run: |s| Box::pin(watch_from_a_version(s)),
        },
        Scenario {
            name: "bookmarks carry a version, and end the initial events",
            sides: Sides::Both,
            run: |s| Box::pin(bookmarks(s)),
        },
        Scenario {
            name: "a compacted version is 410 Expired, and a relist recovers",
            sides: Sides::Both,
            run: |s| Box::pin(compaction(s)),
        },
        Scenario {
            name: "errors are the same Status",
            sides: Sides::Both,
            run: |s| Box::pin(errors(s)),
        },
        Scenario {
            name: "the status subresource splits spec from status",
            sides: Sides::Both,
            run: |s| Box::pin(status_subresource(s)),
        },
        Scenario {
            name: "a DELETE answers the same shape",
            sides: Sides::Both,
            run: |s| Box::pin(deletion(s)),
        },
        Scenario {
            name: "a metadata-only list",
            sides: Sides::Both,
            run: |s| Box::pin(metadata_only(s)),
        },
        Scenario {
            name: "discovery lists the same groups, versions and resources",
            sides: Sides::Both,
            run: |s| Box::pin(discovery(s)),
        },
        Scenario {
            name: "a pod's log",
            sides: Sides::FakeOnly("no kubelet runs behind the real server"),
            run: |s| Box::pin(pod_logs(s)),
        },
    ]
}

#[tokio::test]
async fn the_fake_apiserver_answers_as_a_real_one() {
    if !testbed::binaries_present() {
        eprintln!(
            "skipped: no kube-apiserver or etcd in {}",
            testbed::bin_dir().display()
        );
        return;
    }
    let started = Instant::now();
    let servers = start().await.unwrap();
    eprintln!(
        "both servers ready in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let table = scenarios();
    eprintln!("{} scenarios", table.len());
    let mut failures = Vec::new();
    for scenario in &table {
        let began = Instant::now();
        let before = servers.findings.lock().unwrap().len();
        let outcome = (scenario.run)(&servers).await;
        let found = servers.findings.lock().unwrap().len() - before;
        let verdict = match (&outcome, found) {
            (Err(error), _) => {
                failures.push(format!("{}: {error:#}", scenario.name));
                "FAILED"
            }
            (Ok(()), 0) => "agree",
            (Ok(()), _) => "DISAGREE",
        };
        let sides = match scenario.sides {
            Sides::Both => String::new(),
            Sides::FakeOnly(why) => format!(" (fake only: {why})"),
        };
        eprintln!(
            "  {verdict:8} {:5.1}s {}{sides}",
            began.elapsed().as_secs_f64(),
            scenario.name
        );
    }
    let findings = servers.findings.lock().unwrap().clone();
    eprintln!(
        "{} scenarios in {:.1}s",
        table.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty() && findings.is_empty(),
        "the fake and the real API server disagree:\n{}\n{}",
        failures.join("\n"),
        findings.join("\n")
    );
}

/// Starts the sandbox and a testbed with the management cluster's platform CRDs and the objects the
/// scenarios read.
async fn start() -> Result<Servers> {
    let (sandbox, testbed) = tokio::join!(
        sandbox::Sandbox::start_with(sandbox::Options::new("127.0.0.1:0".parse()?)),
        testbed::Testbed::start(&["management"]),
    );
    let (sandbox, testbed) = (sandbox?, testbed?);
    let store = sandbox
        .cluster("management")
        .context("no management cluster")?;
    let real = testbed.admin("management")?;
    let types = store.resource_types();
    testbed::world::install_crds(&real, &testbed::world::crds(&types)?).await?;
    let loaded: Vec<_> = types
        .iter()
        .filter(|ty| LOADED_KINDS.contains(&ty.kind.as_str()))
        .cloned()
        .collect();
    testbed::world::load(&real, &loaded, store.objects()).await?;
    let fake =
        server::upstream::kube::client_for_url(&sandbox.cluster_url("management"), None, None)?;
    Ok(Servers {
        fake: Side {
            name: "fake",
            client: fake,
        },
        real: Side {
            name: "real",
            client: real,
        },
        sandbox,
        testbed: tokio::sync::Mutex::new(testbed),
        findings: Mutex::new(Vec::new()),
    })
}

/// The kinds copied onto the real server: what the scenarios read (TaskRuns and the rest are left out to
/// keep the start short).
const LOADED_KINDS: &[&str] = &[
    "Namespace",
    "Pod",
    "Component",
    "Release",
    "Database",
    "DatabaseSchema",
    "Application",
];

impl Servers {
    /// Records a disagreement unless `fake` and `real` are equal.
    fn expect_same(&self, what: &str, fake: &Value, real: &Value) {
        let mut differences = Vec::new();
        differ("", fake, real, &mut differences);
        if !differences.is_empty() {
            self.findings
                .lock()
                .unwrap()
                .push(format!("{what}:\n{}", differences.join("\n")));
        }
    }

    /// Records a finding if `fake` and `real` agree where the module's documentation says they differ, so the
    /// documentation stays true.
    fn expect_known_difference(&self, what: &str, fake: &Value, real: &Value) {
        if fake == real {
            self.findings.lock().unwrap().push(format!(
                "{what}: documented as a difference, but both servers now answer {}: update the module's \
                 documentation",
                short(fake)
            ));
        }
    }

    /// Both sides' answers to a GET.
    async fn get_both(&self, path: &str) -> Result<(Answer, Answer)> {
        Ok((self.fake.get(path).await?, self.real.get(path).await?))
    }

    /// Runs `run` on the fake, then on the real server, and records a disagreement unless both give the
    /// same value.
    async fn compare<F>(&self, what: &str, run: F) -> Result<()>
    where
        F: AsyncFn(&Side) -> Result<Value>,
    {
        let fake = run(&self.fake).await.context("on the fake")?;
        let real = run(&self.real).await.context("on the real server")?;
        self.expect_same(what, &fake, &real);
        Ok(())
    }

    /// As [`Self::compare`], with both sides at once: for scenarios that wait on the clock.
    async fn compare_concurrently<F>(&self, what: &str, run: F) -> Result<()>
    where
        F: AsyncFn(&Side) -> Result<Value>,
    {
        let (fake, real) = tokio::join!(run(&self.fake), run(&self.real));
        self.expect_same(
            what,
            &fake.context("on the fake")?,
            &real.context("on the real server")?,
        );
        Ok(())
    }

    /// Creates a namespace on both servers.
    async fn namespace(&self, name: &str) -> Result<()> {
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        for side in [&self.fake, &self.real] {
            side.ok(Method::POST, "/api/v1/namespaces", Some((JSON, &namespace)))
                .await?;
        }
        Ok(())
    }
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

/// Where `fake` and `real` differ, as JSON pointers with both values (at most a few per comparison).
fn differ(at: &str, fake: &Value, real: &Value, out: &mut Vec<String>) {
    const SHOWN: usize = 6;
    if fake == real || out.len() >= SHOWN {
        return;
    }
    match (fake, real) {
        (Value::Object(f), Value::Object(r)) => {
            let mut keys: Vec<&String> = f.keys().chain(r.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let (f, r) = (
                    f.get(key).unwrap_or(&Value::Null),
                    r.get(key).unwrap_or(&Value::Null),
                );
                differ(&format!("{at}/{key}"), f, r, out);
            }
        }
        (Value::Array(f), Value::Array(r)) => {
            for (index, (f, r)) in f.iter().zip(r).enumerate() {
                differ(&format!("{at}/{index}"), f, r, out);
            }
            if f.len() != r.len() {
                let (shorter, rest) = (f.len().min(r.len()), |a: &[Value]| {
                    Value::Array(a[f.len().min(r.len())..].to_vec())
                });
                out.push(format!(
                    "    {at}: {} items on the fake, {} on the real server; after the first {shorter}:\n      fake: {}\n      real: {}",
                    f.len(),
                    r.len(),
                    short(&rest(f)),
                    short(&rest(r)),
                ));
            }
        }
        _ => out.push(format!(
            "    {at}:\n      fake: {}\n      real: {}",
            short(fake),
            short(real)
        )),
    }
}

/// A value's JSON, cut short enough to read in a failure.
fn short(value: &Value) -> String {
    const SHOWN: usize = 600;
    let text = value.to_string();
    if text.chars().count() > SHOWN {
        format!("{}…", text.chars().take(SHOWN).collect::<String>())
    } else {
        text
    }
}

/// Percent-encodes a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `namespace/name` of every item of a list, in list order.
fn item_names(list: &Value) -> Value {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    let namespace = item["metadata"]["namespace"].as_str().unwrap_or_default();
                    let name = item["metadata"]["name"].as_str().unwrap_or_default();
                    json!(format!("{namespace}/{name}"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a list answer is compared by: code, kind, apiVersion and its items' names.
fn list_shape(answer: &Answer) -> Value {
    if answer.code != 200 {
        return status_shape(answer);
    }
    json!({
        "code": answer.code,
        "kind": answer.body["kind"],
        "apiVersion": answer.body["apiVersion"],
        "items": item_names(&answer.body),
    })
}

/// What an error is compared by: the `Status` fields clients branch on.
fn status_shape(answer: &Answer) -> Value {
    let body = &answer.body;
    if body.is_null() {
        // Not JSON: the real server's `404 page not found` for a path no API serves.
        return json!({"code": answer.code, "json": false});
    }
    // `details: {}` and no details are the same to clients (every field of it is optional). Causes are
    // compared by field and reason: their messages are for people.
    let details = match &body["details"] {
        Value::Object(details) if details.is_empty() => Value::Null,
        Value::Null => Value::Null,
        details => {
            let causes: Option<Vec<Value>> = details["causes"].as_array().map(|causes| {
                causes
                    .iter()
                    .map(|c| json!({"field": c["field"], "reason": c["reason"]}))
                    .collect()
            });
            json!({
                "name": details["name"],
                "group": details["group"],
                "kind": details["kind"],
                "causes": causes,
            })
        }
    };
    json!({
        "code": answer.code,
        "kind": body["kind"],
        "apiVersion": body["apiVersion"],
        "status": body["status"],
        "reason": body["reason"],
        "bodyCode": body["code"],
        "details": details,
    })
}

async fn label_selectors(s: &Servers) -> Result<()> {
    for selector in [
        "tekton.dev/task=lint",
        "tekton.dev/task!=lint",
        "tekton.dev/task in (lint,git-clone)",
        "tekton.dev/task notin (lint,git-clone)",
        "tekton.dev/pipelineTask",
        "!tekton.dev/pipelineTask",
        "platform.tower.dev/component=cart,tekton.dev/task=lint",
    ] {
        for base in ["/api/v1/namespaces/tekton-ci/pods", "/api/v1/pods"] {
            let path = format!("{base}?labelSelector={}", encode(selector));
            let (fake, real) = s.get_both(&path).await?;
            s.expect_same(
                &format!("GET {base}?labelSelector={selector}"),
                &list_shape(&fake),
                &list_shape(&real),
            );
        }
    }
    Ok(())
}

/// The name of the first pod in `tekton-ci` (the same on both sides, as lists agree).
async fn some_pod(side: &Side) -> Result<Value> {
    let list = side
        .ok(
            Method::GET,
            "/api/v1/namespaces/tekton-ci/pods?limit=1",
            None,
        )
        .await?;
    Ok(list["items"][0].clone())
}

async fn field_selectors(s: &Servers) -> Result<()> {
    let pod = some_pod(&s.fake).await?;
    let name = pod["metadata"]["name"]
        .as_str()
        .context("a pod has a name")?;
    let paths = [
        format!("/api/v1/namespaces/tekton-ci/pods?fieldSelector=metadata.name%3D{name}"),
        format!("/api/v1/pods?fieldSelector=metadata.name%3D{name}"),
        "/api/v1/pods?fieldSelector=metadata.namespace%3Dtekton-ci".to_owned(),
        format!("/api/v1/pods?fieldSelector=metadata.name!%3D{name},metadata.namespace%3Dtekton-ci"),
        format!("/api/v1/pods?fieldSelector=metadata.name%3D%3D{name}"),
        "/api/v1/pods?fieldSelector=status.phase%3DSucceeded".to_owned(),
        "/api/v1/namespaces?fieldSelector=metadata.name%3Dtekton-ci".to_owned(),
        "/apis/platform.tower.dev/v1alpha1/components?fieldSelector=metadata.name%3Dcart".to_owned(),
        "/apis/platform.tower.dev/v1alpha1/components?fieldSelector=metadata.namespace%3Dplatform".to_owned(),
        "/apis/platform.tower.dev/v1alpha1/namespaces/platform/components?fieldSelector=metadata.name!%3Dcart"
            .to_owned(),
        // A field the type does not index: the real server refuses rather than selecting nothing.
        "/apis/platform.tower.dev/v1alpha1/components?fieldSelector=spec.owner%3Dshop".to_owned(),
        "/api/v1/pods?fieldSelector=spec.nonsense%3Dx".to_owned(),
        // Both selectors at once.
        "/api/v1/pods?labelSelector=tekton.dev%2Ftask%3Dlint&fieldSelector=metadata.namespace%3Dtekton-ci".to_owned(),
        // Malformed selectors.
        "/api/v1/pods?labelSelector=tekton.dev%2Ftask%20in%20(lint".to_owned(),
        "/api/v1/pods?fieldSelector=nonsense".to_owned(),
    ];
    for path in paths {
        let (fake, real) = s.get_both(&path).await?;
        s.expect_same(
            &format!("GET {path}"),
            &list_shape(&fake),
            &list_shape(&real),
        );
    }
    // Every field the fake selects by, and a few it refuses, answered alike: the real server checks the
    // fake's table.
    let fields: &[(&str, &[&str])] = &[
        (
            "/api/v1/pods",
            &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
                "spec.containers",
            ],
        ),
        (
            "/api/v1/events",
            &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
                "message",
            ],
        ),
        ("/api/v1/secrets", &["type", "data.x"]),
        ("/api/v1/namespaces", &["status.phase", "spec.finalizers"]),
        (
            "/api/v1/services",
            &["spec.clusterIP", "spec.type", "spec.ports"],
        ),
        ("/api/v1/configmaps", &["data.x"]),
        (
            "/apis/apps/v1/replicasets",
            &["status.replicas", "spec.replicas"],
        ),
        ("/apis/apps/v1/deployments", &["spec.replicas"]),
        (
            "/apis/external-secrets.io/v1/externalsecrets",
            &[
                "spec.secretStoreRef.name",
                "spec.secretStoreRef.kind",
                "spec.target.name",
                "spec.refreshInterval",
                "spec.data",
            ],
        ),
    ];
    for (list, fields) in fields {
        for field in *fields {
            // Values the real server can convert (`status.replicas` takes a number).
            let path = format!("{list}?fieldSelector={field}%3D1");
            let (fake, real) = s.get_both(&path).await?;
            s.expect_same(&format!("GET {path}"), &json!(fake.code), &json!(real.code));
        }
    }
    Ok(())
}

async fn pagination(s: &Servers) -> Result<()> {
    let lists = [
        "/api/v1/namespaces/tekton-ci/pods",
        "/api/v1/pods",
        "/apis/platform.tower.dev/v1alpha1/releases",
        "/api/v1/pods?labelSelector=tekton.dev%2Ftask%3Dlint",
        "/api/v1/namespaces/tekton-ci/pods?fieldSelector=metadata.name!%3Dx",
        // Not `/api/v1/pods?fieldSelector=metadata.namespace=tekton-ci`: the real server's first page ends
        // in a continue token relative to the namespace, which the next page reads from the top (see the
        // module's documentation).
    ];
    for list in lists {
        for limit in 2..=5 {
            let what = format!("pages of {limit} of GET {list}");
            s.compare(&what, async |side| pages(side, list, limit).await)
                .await?;
        }
    }
    Ok(())
}

/// Pages through `list` `limit` items at a time; what the pages look like, and whether they add up to the
/// whole list.
async fn pages(side: &Side, list: &str, limit: usize) -> Result<Value> {
    let separator = if list.contains('?') { '&' } else { '?' };
    let whole = side.ok(Method::GET, list, None).await?;
    let mut names = Vec::new();
    let mut shapes = Vec::new();
    let mut token: Option<String> = None;
    let mut first_version = None;
    loop {
        let mut path = format!("{list}{separator}limit={limit}");
        if let Some(token) = &token {
            path.push_str(&format!("&continue={}", encode(token)));
        }
        let page = side.ok(Method::GET, &path, None).await?;
        let meta = &page["metadata"];
        let version = meta["resourceVersion"].clone();
        let first = first_version.get_or_insert_with(|| version.clone());
        let items = item_names(&page);
        let count = items.as_array().map_or(0, Vec::len);
        names.extend(items.as_array().cloned().unwrap_or_default());
        token = meta["continue"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        shapes.push(json!({
            "kind": page["kind"],
            "items": count,
            "continue": token.is_some(),
            "remainingItemCount": meta["remainingItemCount"],
            "sameVersionAsFirstPage": version == *first,
        }));
        if token.is_none() || shapes.len() > 200 {
            break;
        }
    }
    Ok(json!({
        "pages": shapes,
        "concatenated": names,
        "pagesAddUpToTheWholeList": Value::Array(names) == item_names(&whole),
    }))
}

async fn resource_versions(s: &Servers) -> Result<()> {
    const PODS: &str = "/api/v1/namespaces/tekton-ci/pods";
    let queries = [
        "resourceVersion=0",
        "resourceVersion=0&resourceVersionMatch=NotOlderThan",
        "resourceVersion={rv}",
        "resourceVersion={rv}&resourceVersionMatch=NotOlderThan",
        "resourceVersion={rv}&resourceVersionMatch=Exact",
        "resourceVersion={rv}&resourceVersionMatch=Exact&limit=2",
        "resourceVersion=0&limit=2",
        "resourceVersionMatch=Exact",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersion={rv}&resourceVersionMatch=Sometime",
        "resourceVersion=nonsense",
        "limit=2&sendInitialEvents=false",
    ];
    for query in queries {
        s.compare(&format!("GET {PODS}?{query}"), async |side| {
            let current = side.ok(Method::GET, PODS, None).await?;
            let rv = current["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let answer = side
                .get(&format!("{PODS}?{}", query.replace("{rv}", &rv)))
                .await?;
            let mut shape = list_shape(&answer);
            if answer.code == 200 {
                shape["continue"] = json!(answer.body["metadata"]["continue"].is_string());
                // Only `Exact` promises the version: any other list may be newer, and the real server's
                // version moves whenever it renews its own lease.
                if query.contains("Exact") {
                    shape["atTheAskedVersion"] =
                        json!(answer.body["metadata"]["resourceVersion"] == json!(rv));
                }
            }
            Ok(shape)
        })
        .await?;
    }
    // A version older than a change: `Exact` lists the world as it was then, or answers `410` if it can't.
    s.namespace("conformance-versions").await?;
    s.compare(
        "GET configmaps at an Exact version before a create",
        async |side| {
            let list = "/api/v1/namespaces/conformance-versions/configmaps";
            side.ok(
                Method::POST,
                list,
                Some((JSON, &config_map("first", json!({})))),
            )
            .await?;
            let before = side.ok(Method::GET, list, None).await?;
            let rv = before["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            side.ok(
                Method::POST,
                list,
                Some((JSON, &config_map("second", json!({})))),
            )
            .await?;
            let answer = side
                .get(&format!(
                    "{list}?resourceVersion={rv}&resourceVersionMatch=Exact"
                ))
                .await?;
            let mut shape = list_shape(&answer);
            if answer.code == 200 {
                shape["atTheAskedVersion"] =
                    json!(answer.body["metadata"]["resourceVersion"] == json!(rv));
            }
            Ok(shape)
        },
    )
    .await?;
    s.compare("pages keep the first page's version while objects change", async |side| {
        let list = "/api/v1/namespaces/conformance-versions/configmaps";
        let first = side.ok(Method::GET, &format!("{list}?limit=1"), None).await?;
        let token = first["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
        side.ok(Method::DELETE, &format!("{list}/second"), None).await?;
        side.ok(Method::POST, list, Some((JSON, &config_map("third", json!({}))))).await?;
        let rest = side.get(&format!("{list}?limit=5&continue={}", encode(&token))).await?;
        let with_version = side
            .get(&format!("{list}?limit=5&continue={}&resourceVersion=1", encode(&token)))
            .await?;
        Ok(json!({
            "first": item_names(&first),
            "rest": list_shape(&rest),
            "sameVersion": rest.body["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"],
            "now": item_names(&side.ok(Method::GET, list, None).await?),
            "continueWithAVersion": status_shape(&with_version),
        }))
    })
    .await
}

fn config_map(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"step": "created"},
    })
}

/// What a watch event is compared by: its type and the object's identity and content (not its versions).
fn event_shape(event: &Value) -> Value {
    let object = &event["object"];
    if event["type"] == "ERROR" {
        return json!({
            "type": "ERROR",
            "kind": object["kind"],
            "apiVersion": object["apiVersion"],
            "status": object["status"],
            "code": object["code"],
            "reason": object["reason"],
        });
    }
    json!({
        "type": event["type"],
        "kind": object["kind"],
        "apiVersion": object["apiVersion"],
        "name": object["metadata"]["name"],
        "namespace": object["metadata"]["namespace"],
        "labels": object["metadata"]["labels"],
        "data": object["data"],
    })
}

/// Events until `count` arrived or none came for `wait`.
async fn events(watch: &mut Watch, count: usize, wait: Duration) -> Result<Vec<Value>> {
    let mut events = Vec::new();
    while events.len() < count {
        match watch.next(wait).await? {
            Some(event) => events.push(event),
            None => break,
        }
    }
    Ok(events)
}

/// Whether each event's object carries a numeric resourceVersion above the previous one.
fn versions_increase(events: &[Value], after: u64) -> bool {
    let mut last = after;
    events.iter().all(|event| {
        let version = event["object"]["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok());
        match version {
            Some(version) if version > last => {
                last = version;
                true
            }
            _ => false,
        }
    })
}

async fn watch_from_a_version(s: &Servers) -> Result<()> {
    s.namespace("conformance-watch").await?;
    s.compare(
        "watch from a list's version: changes after it, in order",
        async |side| {
            let list = "/api/v1/namespaces/conformance-watch/configmaps";
            side.ok(
                Method::POST,
                list,
                Some((JSON, &config_map("before", json!({"app": "a"})))),
            )
            .await?;
            let listed = side.ok(Method::GET, list, None).await?;
            let rv = listed["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut all = side
                .watch(&format!("{list}?watch=true&resourceVersion={rv}"))
                .await?;
            let mut selected = side
                .watch(&format!(
                    "{list}?watch=true&resourceVersion={rv}&labelSelector=app%3Da"
                ))
                .await?;
            let mut from_now = side.watch(&format!("{list}?watch=true")).await?;
            let item = format!("{list}/watched");
            side.ok(
                Method::POST,
                list,
                Some((JSON, &config_map("watched", json!({"app": "a"})))),
            )
            .await?;
            let data = json!({"data": {"step": "modified"}});
            side.ok(Method::PATCH, &item, Some((MERGE, &data))).await?;
            let relabel = json!({"metadata": {"labels": {"app": "b"}}});
            side.ok(Method::PATCH, &item, Some((MERGE, &relabel)))
                .await?;
            side.ok(Method::DELETE, &item, None).await?;
            let wait = Duration::from_secs(3);
            let all_events = events(&mut all, 4, wait).await?;
            let selected_events = events(&mut selected, 3, wait).await?;
            let now_events = events(&mut from_now, 5, wait).await?;
            let after: u64 = rv.parse()?;
            Ok(json!({
                "codes": [all.code, selected.code, from_now.code],
                "all": all_events.iter().map(event_shape).collect::<Vec<_>>(),
                "allVersionsIncrease": versions_increase(&all_events, after),
                "selected": selected_events.iter().map(event_shape).collect::<Vec<_>>(),
                "fromNow": now_events.iter().map(event_shape).collect::<Vec<_>>(),
            }))
        },
    )
    .await
}

async fn bookmarks(s: &Servers) -> Result<()> {
    // The real server sends a watcher a bookmark about every minute and 2 s before its timeout, but only
    // when its type's version moved past the watcher's (a bookmark is progress); the fake every 5 s. A 7 s
    // timeout, and a change the watch does not select, gets each at least one.
    s.namespace("conformance-bookmarks").await?;
    s.compare_concurrently("watch with allowWatchBookmarks: bookmark shape", async |side| {
        let watched = "/api/v1/namespaces/conformance-bookmarks/configmaps";
        let listed = side.ok(Method::GET, watched, None).await?;
        let rv = listed["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned();
        let mut watch = side
            .watch(&format!(
                "{watched}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=7"
            ))
            .await?;
        let elsewhere = "/api/v1/namespaces/conformance-watch/configmaps";
        side.ok(Method::POST, elsewhere, Some((JSON, &config_map("progress", json!({}))))).await?;
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            match watch.next(Duration::from_secs(10)).await? {
                Some(event) => seen.push(event),
                None => break,
            }
        }
        let bookmarks: Vec<Value> = seen
            .iter()
            .filter(|event| event["type"] == "BOOKMARK")
            .map(|event| {
                let object = &event["object"];
                json!({
                    "kind": object["kind"],
                    "apiVersion": object["apiVersion"],
                    "numericResourceVersion": object["metadata"]["resourceVersion"]
                        .as_str()
                        .is_some_and(|v| v.parse::<u64>().is_ok()),
                    "annotations": object["metadata"]["annotations"],
                })
            })
            .collect();
        Ok(json!({
            "code": watch.code,
            "otherEvents": seen.len() - bookmarks.len(),
            "someBookmark": !bookmarks.is_empty(),
            "firstBookmark": bookmarks.first(),
            "endedByTimeout": watch.ended,
        }))
    })
    .await?;
    s.compare("watch with sendInitialEvents: current objects, then an annotated bookmark", async |side| {
        let components = "/apis/platform.tower.dev/v1alpha1/namespaces/platform/components";
        let mut watch = side
            .watch(&format!(
                "{components}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
            ))
            .await?;
        let mut added = Vec::new();
        let mut bookmark = Value::Null;
        while let Some(event) = watch.next(Duration::from_secs(5)).await? {
            if event["type"] == "BOOKMARK" {
                bookmark = json!({
                    "kind": event["object"]["kind"],
                    "apiVersion": event["object"]["apiVersion"],
                    "annotations": event["object"]["metadata"]["annotations"],
                });
                break;
            }
            added.push(event_shape(&event)["name"].clone());
        }
        // The watch cache sends the initial objects in no promised order.
        added.sort_by_key(Value::to_string);
        Ok(json!({"code": watch.code, "added": added, "bookmark": bookmark}))
    })
    .await
}

async fn compaction(s: &Servers) -> Result<()> {
    const PODS: &str = "/api/v1/namespaces/tekton-ci/pods";
    s.namespace("conformance-compaction").await?;
    let mut tokens = Vec::new();
    let mut versions = Vec::new();
    for side in [&s.fake, &s.real] {
        let page = side
            .ok(Method::GET, &format!("{PODS}?limit=2"), None)
            .await?;
        tokens.push(
            page["metadata"]["continue"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        versions.push(
            page["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        // Some history after the page, for compaction to forget.
        let list = "/api/v1/namespaces/conformance-compaction/configmaps";
        side.ok(
            Method::POST,
            list,
            Some((JSON, &config_map("history", json!({})))),
        )
        .await?;
    }
    s.sandbox
        .cluster("management")
        .context("no management cluster")?
        .compact();
    // The real server's watch cache keeps serving the history it holds after etcd compacts (and lists a
    // continue token's snapshot from it); restarted, its cache starts at the current version, and older
    // ones are gone, as after the fake's compaction.
    {
        let mut testbed = s.testbed.lock().await;
        testbed.compact().await?;
        testbed.stop_server("management");
        testbed.start_server("management").await?;
    }
    s.compare(
        "watch from a compacted version: one ERROR event, 410 Expired",
        async |side| {
            let mut watch = side
                .watch(&format!(
                    "{PODS}?watch=true&resourceVersion={}",
                    versions[side.index()]
                ))
                .await?;
            let seen = events(&mut watch, 2, Duration::from_secs(2)).await?;
            Ok(json!({
                "code": watch.code,
                "events": seen.iter().map(event_shape).collect::<Vec<_>>(),
                "ended": watch.ended,
            }))
        },
    )
    .await?;
    let (fake, real) = (
        s.fake
            .get(&format!("{PODS}?limit=2&continue={}", encode(&tokens[0])))
            .await?,
        s.real
            .get(&format!("{PODS}?limit=2&continue={}", encode(&tokens[1])))
            .await?,
    );
    s.expect_same(
        "continue with a token from before a compaction",
        &list_shape(&fake),
        &list_shape(&real),
    );
    s.compare("relist and watch again after 410", async |side| {
        let listed = side.ok(Method::GET, PODS, None).await?;
        let rv = listed["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let configmaps = "/api/v1/namespaces/conformance-compaction/configmaps";
        let mut watch = side
            .watch(&format!("{configmaps}?watch=true&resourceVersion={rv}"))
            .await?;
        side.ok(
            Method::POST,
            configmaps,
            Some((JSON, &config_map("after", json!({})))),
        )
        .await?;
        let seen = events(&mut watch, 1, Duration::from_secs(3)).await?;
        Ok(json!({
            "items": item_names(&listed),
            "events": seen.iter().map(event_shape).collect::<Vec<_>>(),
        }))
    })
    .await
}

async fn errors(s: &Servers) -> Result<()> {
    s.namespace("conformance-errors").await?;
    let configmaps = "/api/v1/namespaces/conformance-errors/configmaps";
    let components = "/apis/platform.tower.dev/v1alpha1/namespaces/conformance-errors/components";
    let existing = config_map("existing", json!({}));
    let component = |name: &str, spec: Value| json!({"apiVersion": "platform.tower.dev/v1alpha1", "kind": "Component", "metadata": {"name": name}, "spec": spec});
    let valid_spec = json!({"owner": "shop", "repository": "acme/x", "template": {"name": "go-service", "version": "1.0.0"}});
    for side in [&s.fake, &s.real] {
        side.ok(Method::POST, configmaps, Some((JSON, &existing)))
            .await?;
        side.ok(
            Method::POST,
            components,
            Some((JSON, &component("existing", valid_spec.clone()))),
        )
        .await?;
    }
    let requests = vec![
        Refused::new(
            "get a missing pod",
            Method::GET,
            "/api/v1/namespaces/conformance-errors/pods/missing",
            None,
        ),
        Refused::new(
            "get a missing namespace",
            Method::GET,
            "/api/v1/namespaces/missing",
            None,
        ),
        Refused::new(
            "get a missing component",
            Method::GET,
            format!("{components}/missing"),
            None,
        ),
        Refused::new(
            "get in a missing namespace",
            Method::GET,
            "/api/v1/namespaces/missing/configmaps/x",
            None,
        ),
        Refused::new(
            "delete a missing config map",
            Method::DELETE,
            format!("{configmaps}/missing"),
            None,
        ),
        Refused::new(
            "patch a missing config map",
            Method::PATCH,
            format!("{configmaps}/missing"),
            Some((MERGE, json!({}))),
        ),
        Refused::new(
            "create an existing config map",
            Method::POST,
            configmaps,
            Some((JSON, existing.clone())),
        ),
        Refused::new(
            "create an existing component",
            Method::POST,
            components,
            Some((JSON, component("existing", valid_spec.clone()))),
        ),
        Refused::new(
            "update with a stale resourceVersion",
            Method::PUT,
            format!("{configmaps}/existing"),
            Some((JSON, {
                let mut stale = existing.clone();
                stale["metadata"]["resourceVersion"] = json!("1");
                stale
            })),
        ),
        Refused::new(
            "create a config map with an uppercase name",
            Method::POST,
            configmaps,
            Some((JSON, config_map("Upper", json!({})))),
        ),
        Refused::new(
            "create a component with an uppercase name",
            Method::POST,
            components,
            Some((JSON, component("Upper", valid_spec.clone()))),
        ),
        Refused::new(
            "create without a name",
            Method::POST,
            configmaps,
            Some((
                JSON,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            )),
        ),
        Refused::new(
            "update with another name than the URL's",
            Method::PUT,
            format!("{configmaps}/existing"),
            Some((JSON, config_map("other", json!({})))),
        ),
        Refused::new(
            "create in another namespace than the URL's",
            Method::POST,
            configmaps,
            Some((JSON, {
                let mut elsewhere = config_map("elsewhere", json!({}));
                elsewhere["metadata"]["namespace"] = json!("default");
                elsewhere
            })),
        ),
        Refused::new(
            "patch with an unknown media type",
            Method::PATCH,
            format!("{configmaps}/existing"),
            Some(("text/plain", json!({}))),
        ),
        Refused::new(
            "delete namespaces as a collection",
            Method::DELETE,
            "/api/v1/namespaces?labelSelector=conformance%3Dnone",
            None,
        ),
        // Not a Status at all: the mux's plain `404 page not found`.
        Refused::new(
            "list a kind no CRD defines",
            Method::GET,
            "/apis/platform.tower.dev/v1alpha1/widgets",
            None,
        ),
        Refused::new(
            "list a kind of a group no API serves",
            Method::GET,
            "/apis/s3.aws.upbound.io/v1beta1/buckets",
            None,
        ),
        Refused::new(
            "an unknown subresource",
            Method::GET,
            format!("{configmaps}/existing/nonsense"),
            None,
        ),
    ];
    for Refused {
        what,
        method,
        path,
        body,
    } in requests
    {
        let body = body
            .as_ref()
            .map(|(content_type, body)| (*content_type, body));
        let fake = s.fake.send(method.clone(), &path, body).await?;
        let real = s.real.send(method.clone(), &path, body).await?;
        s.expect_same(
            &format!("{what} ({method} {path})"),
            &status_shape(&fake),
            &status_shape(&real),
        );
    }
    // Where the two still differ (see the module's documentation): the fake has no CRD schemas.
    let known = [Refused::new(
        "create a component against its schema",
        Method::POST,
        components,
        Some((JSON, component("bad-schema", json!({"owner": 42})))),
    )];
    for Refused {
        what,
        method,
        path,
        body,
    } in known
    {
        let body = body
            .as_ref()
            .map(|(content_type, body)| (*content_type, body));
        let fake = s.fake.send(method.clone(), &path, body).await?;
        let real = s.real.send(method.clone(), &path, body).await?;
        s.expect_known_difference(what, &status_shape(&fake), &status_shape(&real));
    }
    Ok(())
}

/// A request both servers refuse, and what it is.
struct Refused {
    what: &'static str,
    method: Method,
    path: String,
    body: Option<(&'static str, Value)>,
}

impl Refused {
    fn new(
        what: &'static str,
        method: Method,
        path: impl Into<String>,
        body: Option<(&'static str, Value)>,
    ) -> Self {
        Self {
            what,
            method,
            path: path.into(),
            body,
        }
    }
}

/// A Release like the fixtures' first, renamed, in `namespace`.
async fn release(namespace: &str, name: &str, s: &Servers) -> Result<Value> {
    let list = s
        .fake
        .ok(
            Method::GET,
            "/apis/platform.tower.dev/v1alpha1/releases?limit=1",
            None,
        )
        .await?;
    let mut release = list["items"][0].clone();
    release["metadata"] = json!({"name": name, "namespace": namespace});
    Ok(release)
}

async fn status_subresource(s: &Servers) -> Result<()> {
    s.namespace("conformance-status").await?;
    let releases = "/apis/platform.tower.dev/v1alpha1/namespaces/conformance-status/releases";
    let original = release("conformance-status", "subject", s).await?;
    let status_a = json!({"observedVersion": "created"});
    s.compare("a Release's spec and status through the main resource and /status", async |side| {
        let item = format!("{releases}/subject");
        let mut steps = Vec::new();
        let mut created = original.clone();
        created["status"] = status_a.clone();
        let stored = side.ok(Method::POST, releases, Some((JSON, &created))).await?;
        let generation = stored["metadata"]["generation"].as_i64().unwrap_or_default();
        let step = |what: &str, object: &Value| {
            json!({
                "step": what,
                "spec": object["spec"],
                "status": object["status"],
                "generationsSinceCreate": object["metadata"]["generation"].as_i64().unwrap_or_default() - generation,
            })
        };
        steps.push(step("create with a status", &stored));
        // PUT to the main resource: spec changes, status stays.
        let mut changed = stored.clone();
        changed["spec"]["version"] = json!("put-main");
        changed["status"] = json!({"observedVersion": "put-main"});
        let stored = side.ok(Method::PUT, &item, Some((JSON, &changed))).await?;
        steps.push(step("PUT main", &stored));
        // PUT to /status: status changes, spec stays.
        let mut changed = stored.clone();
        changed["spec"]["version"] = json!("put-status");
        changed["status"] = json!({"observedVersion": "put-status"});
        let stored = side.ok(Method::PUT, &format!("{item}/status"), Some((JSON, &changed))).await?;
        steps.push(step("PUT /status", &stored));
        let patch = json!({"spec": {"version": "patch-main"}, "status": {"observedVersion": "patch-main"}});
        let stored = side.ok(Method::PATCH, &item, Some((MERGE, &patch))).await?;
        steps.push(step("merge patch main", &stored));
        let patch = json!({"spec": {"version": "patch-status"}, "status": {"observedVersion": "patch-status"}});
        let stored = side.ok(Method::PATCH, &format!("{item}/status"), Some((MERGE, &patch))).await?;
        steps.push(step("merge patch /status", &stored));
        let read = side.ok(Method::GET, &format!("{item}/status"), None).await?;
        steps.push(step("GET /status", &read));
        // A write that changes nothing keeps the version.
        let again = side.ok(Method::PUT, &item, Some((JSON, &read))).await?;
        steps.push(json!({
            "step": "PUT unchanged",
            "sameResourceVersion": again["metadata"]["resourceVersion"] == read["metadata"]["resourceVersion"],
        }));
        Ok(Value::Array(steps))
    })
    .await?;
    // A Component's CRD has no status subresource (and no status in its schema).
    s.compare("a Component's /status and status field", async |side| {
        let components = "/apis/platform.tower.dev/v1alpha1/namespaces/conformance-status/components";
        let component = json!({
            "apiVersion": "platform.tower.dev/v1alpha1", "kind": "Component",
            "metadata": {"name": "subject"},
            "spec": {"owner": "shop", "repository": "acme/x", "template": {"name": "go-service", "version": "1.0.0"}},
            "status": {"phase": "Ready"},
        });
        let created = side.ok(Method::POST, components, Some((JSON, &component))).await?;
        let status = side.get(&format!("{components}/subject/status")).await?;
        let put = side
            .send(Method::PUT, &format!("{components}/subject/status"), Some((JSON, &created)))
            .await?;
        Ok(json!({
            "createdStatus": created["status"],
            "getStatus": status.code,
            "putStatus": put.code,
        }))
    })
    .await?;
    // An Application's CRD has no status subresource: the main resource writes status (Argo CD does).
    s.compare(
        "an Application's status through the main resource",
        async |side| {
            let applications = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications";
            let list = side
                .ok(Method::GET, &format!("{applications}?limit=1"), None)
                .await?;
            let name = list["items"][0]["metadata"]["name"]
                .as_str()
                .context("no Application")?
                .to_owned();
            let patch = json!({"status": {"sync": {"status": "Unknown"}}});
            let patched = side
                .ok(
                    Method::PATCH,
                    &format!("{applications}/{name}"),
                    Some((MERGE, &patch)),
                )
                .await?;
            let status = side.get(&format!("{applications}/{name}/status")).await?;
            Ok(json!({"syncStatus": patched["status"]["sync"]["status"], "getStatus": status.code}))
        },
    )
    .await?;
    // A pod's status through its main resource is ignored, as for every built-in type with a status.
    s.compare("a Pod's status through the main resource", async |side| {
        let pod = some_pod(side).await?;
        let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let path = format!("/api/v1/namespaces/tekton-ci/pods/{name}");
        let patch = json!({"metadata": {"labels": {"touched": "yes"}}, "status": {"phase": "Failed"}});
        let patched = side.ok(Method::PATCH, &path, Some((MERGE, &patch))).await?;
        Ok(json!({"phase": patched["status"]["phase"], "label": patched["metadata"]["labels"]["touched"]}))
    })
    .await
}

async fn deletion(s: &Servers) -> Result<()> {
    s.namespace("conformance-deletion").await?;
    s.compare("what a DELETE answers", async |side| {
        let configmaps = "/api/v1/namespaces/conformance-deletion/configmaps";
        side.ok(
            Method::POST,
            configmaps,
            Some((JSON, &config_map("doomed", json!({})))),
        )
        .await?;
        let deleted = side
            .ok(Method::DELETE, &format!("{configmaps}/doomed"), None)
            .await?;
        let releases = "/apis/platform.tower.dev/v1alpha1/namespaces/conformance-deletion/releases";
        let release = release("conformance-deletion", "doomed", s).await?;
        side.ok(Method::POST, releases, Some((JSON, &release)))
            .await?;
        let deleted_release = side
            .ok(Method::DELETE, &format!("{releases}/doomed"), None)
            .await?;
        let shape = |answer: &Value| {
            json!({
                "kind": answer["kind"],
                "apiVersion": answer["apiVersion"],
                "status": answer["status"],
                "name": answer["metadata"]["name"].as_str().or(answer["details"]["name"].as_str()),
            })
        };
        Ok(json!({"configMap": shape(&deleted), "release": shape(&deleted_release)}))
    })
    .await
}

async fn metadata_only(s: &Servers) -> Result<()> {
    const ACCEPT: &str =
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    s.compare("a metadata-only list", async |side| {
        let answer = side
            .send_with(Method::GET, "/api/v1/namespaces/tekton-ci/pods?limit=3", &[(header::ACCEPT, ACCEPT)], None)
            .await?;
        let items: Vec<Value> = answer.body["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|item| {
                json!({
                    "kind": item["kind"],
                    "apiVersion": item["apiVersion"],
                    "name": item["metadata"]["name"],
                    "labels": item["metadata"]["labels"],
                    "hasSpec": item.get("spec").is_some(),
                })
            })
            .collect();
        Ok(json!({"code": answer.code, "kind": answer.body["kind"], "apiVersion": answer.body["apiVersion"], "items": items}))
    })
    .await
}

async fn discovery(s: &Servers) -> Result<()> {
    let (fake, real) = s.get_both("/api").await?;
    s.expect_same(
        "GET /api",
        &json!({"kind": fake.body["kind"], "versions": fake.body["versions"]}),
        &json!({"kind": real.body["kind"], "versions": real.body["versions"]}),
    );
    let (fake, real) = s.get_both("/apis").await?;
    s.expect_same(
        "GET /apis: kind and apiVersion",
        &json!([fake.body["kind"], fake.body["apiVersion"]]),
        &json!([real.body["kind"], real.body["apiVersion"]]),
    );
    let real_groups = real.body["groups"].as_array().cloned().unwrap_or_default();
    let mut group_versions = vec!["v1".to_owned()];
    for group in fake.body["groups"].as_array().cloned().unwrap_or_default() {
        let name = group["name"].as_str().unwrap_or_default();
        let real_group = real_groups
            .iter()
            .find(|g| g["name"] == name)
            .cloned()
            .unwrap_or(Value::Null);
        let served = |g: &Value| -> Vec<Value> {
            g["versions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|v| v["groupVersion"].clone())
                .collect()
        };
        // The fake serves one version per group; the real one may serve more (Tekton's v1beta1).
        let fake_versions = served(&group);
        let real_versions: Vec<Value> = served(&real_group)
            .into_iter()
            .filter(|v| fake_versions.contains(v))
            .collect();
        s.expect_same(
            &format!("GET /apis: group {name}"),
            &json!({"preferred": group["preferredVersion"], "versions": fake_versions}),
            &json!({"preferred": real_group["preferredVersion"], "versions": real_versions}),
        );
        let path = format!("/apis/{name}");
        let (fake_group, real_group) = s.get_both(&path).await?;
        let shape = |answer: &Answer| json!({"code": answer.code, "kind": answer.body["kind"], "name": answer.body["name"], "preferred": answer.body["preferredVersion"]});
        s.expect_same(
            &format!("GET {path}"),
            &shape(&fake_group),
            &shape(&real_group),
        );
        group_versions.extend(
            fake_versions
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
    }
    for group_version in group_versions {
        let path = if group_version == "v1" {
            "/api/v1".to_owned()
        } else {
            format!("/apis/{group_version}")
        };
        let (fake, real) = s.get_both(&path).await?;
        let fake_resources = fake.body["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let real_resources = real.body["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // Only the kinds the fake serves: a real server serves many more.
        let kinds: Vec<&Value> = fake_resources.iter().map(|r| &r["kind"]).collect();
        let shape = |resources: &[Value]| -> Value {
            let mut shapes: Vec<Value> = resources
                .iter()
                .filter(|r| kinds.contains(&&r["kind"]))
                // The fake serves `pods/log` and `/status`; the other subresources (exec, eviction…) it leaves out.
                .filter(|r| {
                    let name = r["name"].as_str().unwrap_or_default();
                    !name.contains('/') || name.ends_with("/status") || name.ends_with("/log")
                })
                .map(|r| {
                    let mut verbs: Vec<String> = r["verbs"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect();
                    verbs.sort();
                    json!({
                        "name": r["name"],
                        "singularName": r["singularName"],
                        "namespaced": r["namespaced"],
                        "kind": r["kind"],
                        "verbs": verbs,
                        "shortNames": r["shortNames"],
                        "categories": r["categories"],
                    })
                })
                .collect();
            shapes.sort_by_key(|r| r["name"].to_string());
            Value::Array(shapes)
        };
        s.expect_same(
            &format!("GET {path}"),
            &json!({"kind": fake.body["kind"], "groupVersion": fake.body["groupVersion"], "resources": shape(&fake_resources)}),
            &json!({"kind": real.body["kind"], "groupVersion": real.body["groupVersion"], "resources": shape(&real_resources)}),
        );
    }
    Ok(())
}

async fn pod_logs(s: &Servers) -> Result<()> {
    let pod = some_pod(&s.fake).await?;
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let container = pod["spec"]["containers"][0]["name"]
        .as_str()
        .unwrap_or_default();
    let answer = s
        .fake
        .get(&format!(
            "/api/v1/namespaces/tekton-ci/pods/{name}/log?container={container}"
        ))
        .await?;
    if answer.code != 200 {
        bail!(
            "the fake's pod log answered {}: {}",
            answer.code,
            answer.text
        );
    }
    Ok(())
}
