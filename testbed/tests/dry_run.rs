//! The real API server as the oracle of the browser's validator: every file of `tests/corpus/` is sent to a
//! real kube-apiserver holding the platform CRDs, as a dry-run create, and the server's verdict (accepted, or
//! refused with 400 or 422) must be [`shared::config::validate`]'s (no diagnostics, or some).
//!
//! Each corpus file is a platform file as a developer writes it: its first line names its path in the GitOps
//! repository (`# platform/environments/prod/payments-release.yaml`; `validate` reads the kind, the name
//! and the environment from it), the next comment lines say what it shows, and an invalid file may name the
//! field to blame (`# field: spec.version`), which both the server's message and one of the validator's
//! diagnostics must then name. `valid/` holds files the server accepts, `invalid/` files it refuses (the test
//! holds the folders to that); the validator must say the same of each, except for the few files of [`KNOWN`].
//!
//! Only what both can judge from the file and its path is in the corpus. The validator checks more than the
//! CRDs declare (Tower's own rules: names are DNS labels, a version is a commit id, the environment is the
//! folder's, bound databases exist), and a file that breaks only such a rule is accepted by the server by
//! design; it is covered by `shared`'s own tests, not here.
//!
//! How the file reaches the server matters, and is chosen to be what Argo CD and `kubectl apply` do:
//! - The body is the file's YAML as written (`Content-Type: application/yaml`), so the server's own YAML
//!   reading (sigs.k8s.io/yaml) decides what a scalar is, not a Rust YAML library's.
//! - `fieldValidation=Strict`. By default (`Warn`) a structural schema silently PRUNES a field it does not
//!   declare and the create succeeds with a warning, so `spec.replicas: 3` would be "accepted" and
//!   dropped: no oracle for the typo a developer most needs to hear about. Strict is what `kubectl apply`
//!   asks for by default since 1.25 (`--validate=true` means strict), and Argo CD's sync, which applies
//!   through kubectl's code, validates too unless a sync sets `Validate=false`. (kube-rs 5's `PostParams`
//!   has no `field_validation`, so the parameter is added to the URL by hand.)
//! - `dryRun=All`, into the `platform` namespace the files name: nothing is stored, so every file is judged
//!   alone (several share a name).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::client::Body;
use shared::config::{Diagnostic, PlatformKind, RuleContext, parse_platform_path, validate};

/// The namespace the platform resources live in, as the corpus files name it.
const NAMESPACE: &str = shared::crd::PLATFORM_NAMESPACE;

/// Files the validator and the server are known to judge differently, and why. The validator reads YAML as
/// Kubernetes does (`shared/src/config/yaml.rs`: go-yaml v2's YAML 1.1 rules, through sigs.k8s.io/yaml, as
/// kubectl and Argo CD read it too), so none is known today. The test fails when one of them comes to agree,
/// so that its entry goes with the fix.
const KNOWN: &[(&str, &str)] = &[];

/// One corpus file.
struct Case {
    /// Its file, relative to the corpus folder (`invalid/release-replicas.yaml`).
    file: String,
    /// Whether it is in `valid/`.
    valid: bool,
    /// The path in the GitOps repository its first line names.
    path: String,
    /// The field its `# field:` line names.
    field: Option<String>,
    /// Its text, as written.
    text: String,
}

/// What the server said of a file.
#[derive(Debug)]
enum Verdict {
    Accepted,
    Rejected { code: u16, message: String },
}

impl Verdict {
    fn accepted(&self) -> bool {
        matches!(self, Verdict::Accepted)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Accepted => write!(f, "accepted"),
            Verdict::Rejected { code, message } => write!(f, "rejected ({code}): {message}"),
        }
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Every file of `valid/` and `invalid/`, in name order.
fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    for (folder, valid) in [("valid", true), ("invalid", false)] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir().join(folder))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let name = format!("{folder}/{}", file.file_name().unwrap().to_string_lossy());
            let text = std::fs::read_to_string(&file).unwrap();
            let path = text
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("# "))
                .unwrap_or_else(|| panic!("{name}: the first line is `# platform/…`, its path"))
                .trim()
                .to_string();
            assert!(
                parse_platform_path(&path).is_some(),
                "{name}: `{path}` is not a platform path Tower edits"
            );
            let header: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
            let field = header
                .iter()
                .find_map(|line| line.strip_prefix("# field: "))
                .map(|field| field.trim().to_string());
            assert_eq!(
                field.is_some(),
                header.iter().any(|line| line.starts_with("# field")),
                "{name}: a `# field:` line is `# field: spec.version`"
            );
            assert!(
                !(valid && field.is_some()),
                "{name}: a valid file has no field to blame"
            );
            cases.push(Case {
                file: name,
                valid,
                path,
                field,
                text,
            });
        }
    }
    cases
}

/// The plural of `kind`'s resource.
fn plural(kind: PlatformKind) -> &'static str {
    match kind {
        PlatformKind::Component => "components",
        PlatformKind::Release => "releases",
        PlatformKind::Database => "databases",
        PlatformKind::DatabaseSchema => "databaseschemas",
    }
}

/// Sends `case`'s text as a dry-run create of the resource its path says it holds.
async fn judge(client: &kube::Client, case: &Case) -> Verdict {
    let kind = parse_platform_path(&case.path).unwrap().kind;
    let url = format!(
        "/apis/{}/v1alpha1/namespaces/{NAMESPACE}/{}",
        shared::crd::GROUP,
        plural(kind)
    );
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut request = kube::core::Request::new(url)
        .create(&params, case.text.clone().into_bytes())
        .unwrap();
    // kube-rs 5's PostParams has no `field_validation` (only PatchParams does).
    *request.uri_mut() = format!("{}&fieldValidation=Strict", request.uri())
        .parse()
        .unwrap();
    request.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/yaml"),
    );
    let response = client.send(request.map(Body::from)).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    match code {
        200..=299 => Verdict::Accepted,
        400 | 422 => {
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let message = body["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
            Verdict::Rejected { code, message }
        }
        // Anything else (403, 404, 500) is the harness's fault, not a verdict on the file.
        other => panic!(
            "{}: the server answered {other}, which judges nothing: {}",
            case.file,
            String::from_utf8_lossy(&bytes)
        ),
    }
}

/// The validator's answer, with nothing known beyond the file and its path: no rule that needs the rest of
/// the platform (green builds, existing databases, the environments) runs.
fn diagnose(case: &Case) -> Vec<Diagnostic> {
    validate(&case.path, &case.text, &RuleContext::default())
}

fn list(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("\n      {} [{}] {}", d.line, d.field, d.message))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_real_server_and_the_validator_judge_every_corpus_file_alike() {
    if !testbed::binaries_present() {
        return;
    }
    let started = Instant::now();
    let cases = corpus();
    let valid = cases.iter().filter(|c| c.valid).count();
    assert!(
        valid >= 10 && cases.len() - valid >= 15,
        "a corpus of both kinds: {valid} valid, {} invalid",
        cases.len() - valid
    );
    for kind in [
        PlatformKind::Component,
        PlatformKind::Release,
        PlatformKind::Database,
        PlatformKind::DatabaseSchema,
    ] {
        for valid in [true, false] {
            assert!(
                cases
                    .iter()
                    .any(|c| c.valid == valid && parse_platform_path(&c.path).unwrap().kind == kind),
                "the corpus has no {} {}",
                if valid { "valid" } else { "invalid" },
                kind.name()
            );
        }
    }

    let testbed = testbed::Testbed::start(&["management"]).await.unwrap();
    let client = testbed.admin("management").unwrap();
    let crds = testbed::world::documents_in(&["deploy/crds"]).unwrap();
    testbed::world::install_crds(&client, &crds).await.unwrap();
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": NAMESPACE } })).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let ready = started.elapsed();

    let mut disagreements = Vec::new();
    let mut mislabeled = Vec::new();
    let mut unnamed = Vec::new();
    let mut known_differences = Vec::new();
    let mut stale = Vec::new();
    for case in &cases {
        let verdict = judge(&client, case).await;
        let diagnostics = diagnose(case);
        let report = || {
            format!(
                "  {} ({})\n    server:    {verdict}\n    validator: {}{}",
                case.file,
                case.path,
                if diagnostics.is_empty() {
                    "accepted"
                } else {
                    "rejected:"
                },
                list(&diagnostics)
            )
        };
        let known = KNOWN.iter().find(|(file, _)| *file == case.file);
        let disagree = verdict.accepted() != diagnostics.is_empty();
        match known {
            Some((_, why)) if disagree => {
                eprintln!("known difference: {}: {why}", case.file);
                known_differences.push(case.file.clone());
            }
            Some((_, why)) => stale.push(format!(
                "  {} is listed in KNOWN ({why}) but both now judge it alike: remove the entry",
                case.file
            )),
            None if disagree => disagreements.push(report()),
            None => {}
        }
        // The folder is the corpus author's claim; the server settles it. A file in the wrong folder
        // tests the opposite of what its comment says.
        if verdict.accepted() != case.valid {
            mislabeled.push(report());
        }
        if let (Some(field), Verdict::Rejected { message, .. }, None) =
            (&case.field, &verdict, known)
        {
            let validator_names_it = diagnostics.iter().any(|d| {
                d.field == *field
                    || d.field.starts_with(&format!("{field}."))
                    || d.field.starts_with(&format!("{field}["))
            });
            if !message.contains(field.as_str()) || !validator_names_it {
                unnamed.push(format!("{}\n    expected both to name `{field}`", report()));
            }
        }
    }
    eprintln!(
        "{} corpus files ({valid} valid, {} known differences) judged in {:?} (testbed ready after {ready:?})",
        cases.len(),
        known_differences.len(),
        started.elapsed()
    );
    let mut failures = Vec::new();
    if !disagreements.is_empty() {
        failures.push(format!(
            "{} file(s) where the server and the validator disagree:\n{}",
            disagreements.len(),
            disagreements.join("\n")
        ));
    }
    if !stale.is_empty() {
        failures.push(stale.join("\n"));
    }
    if !mislabeled.is_empty() {
        failures.push(format!(
            "{} file(s) in the wrong folder by the server's verdict:\n{}",
            mislabeled.len(),
            mislabeled.join("\n")
        ));
    }
    if !unnamed.is_empty() {
        failures.push(format!(
            "{} file(s) whose `# field:` the server's message or the validator's diagnostics do not name:\n{}",
            unnamed.len(),
            unnamed.join("\n")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
