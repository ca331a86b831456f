use proptest::prelude::*;

use super::*;

pub(crate) const RELEASE_PATH: &str = "platform/environments/prod/payments-release.yaml";

/// payments' prod Release as Tower renders it.
pub(crate) const RELEASE: &str = include_str!("testdata/payments-release.yaml");

const COMPONENT: (&str, &str) = (
    "platform/registry/payments.yaml",
    "\
apiVersion: platform.tower.dev/v1alpha1
kind: Component
metadata:
  name: payments
  namespace: platform
spec:
  owner: team-payments
  repository: acme/payments
  template:
    name: go-service
    version: 1.4.0
  description: Takes payments.
  dependsOn:
  - ledger
",
);

const DATABASE: (&str, &str) = (
    "platform/environments/prod/payments-database.yaml",
    "\
apiVersion: platform.tower.dev/v1alpha1
kind: Database
metadata:
  name: payments-prod
  namespace: platform
spec:
  environment: prod
  name: payments
  size: medium
  engine: postgres
",
);

const SCHEMA: (&str, &str) = (
    "platform/environments/prod/payments-schema.yaml",
    "\
apiVersion: platform.tower.dev/v1alpha1
kind: DatabaseSchema
metadata:
  name: payments-prod
  namespace: platform
spec:
  database: payments
  environment: prod
  version: '0004'
  migrations:
  - 0001_init.sql
  - 0004_refunds.sql
",
);

/// Every valid file the tests start from.
pub(crate) fn corpus() -> Vec<(&'static str, &'static str)> {
    vec![(RELEASE_PATH, RELEASE), COMPONENT, DATABASE, SCHEMA]
}

pub(crate) fn context() -> RuleContext {
    RuleContext {
        service: "payments".into(),
        environments: vec!["dev".into(), "prod".into()],
        green_builds: Some(vec!["3f2a9c1d0e".into(), "9b1c2d3".into()]),
        databases: Some(vec![DatabaseRef {
            environment: "prod".into(),
            name: "payments".into(),
        }]),
    }
}

fn check(path: &str, text: &str) -> Vec<Diagnostic> {
    validate(path, text, &context())
}

#[test]
fn the_corpus_is_valid() {
    for (path, text) in corpus() {
        assert_eq!(check(path, text), Vec::<Diagnostic>::new(), "{path}");
    }
}

/// The line of `text` that contains `needle`, from 1.
fn line_of(text: &str, needle: &str) -> u32 {
    let index = text
        .lines()
        .position(|l| l.contains(needle))
        .expect("needle in text");
    u32::try_from(index + 1).expect("few lines")
}

#[test]
fn an_unknown_field_is_marked_on_its_line() {
    let text = RELEASE.replace(
        "  autoDeploy: false\n",
        "  autoDeploy: false\n  replicas: 3\n",
    );
    let found = check(RELEASE_PATH, &text);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].line, line_of(&text, "replicas"));
    assert_eq!(found[0].column, 3);
    assert_eq!(found[0].field, "spec.replicas");
    assert!(
        found[0].message.contains("Unknown field `spec.replicas`"),
        "{}",
        found[0].message
    );

    let text = RELEASE.replace(
        "    tag: 3f2a9c1\n",
        "    tag: 3f2a9c1\n    digest: sha256\n",
    );
    let found = check(RELEASE_PATH, &text);
    assert_eq!(found[0].field, "spec.image.digest");
    assert_eq!(found[0].line, line_of(&text, "digest"));
}

#[test]
fn wrong_types_enums_and_missing_fields_name_the_field() {
    let text = RELEASE.replace("autoDeploy: false", "autoDeploy: \"no\"");
    let found = check(RELEASE_PATH, &text);
    assert_eq!(found[0].field, "spec.autoDeploy");
    assert!(
        found[0].message.contains("true or false"),
        "{}",
        found[0].message
    );

    let (path, database) = DATABASE;
    let found = check(path, &database.replace("size: medium", "size: huge"));
    assert_eq!(found[0].field, "spec.size");
    assert!(
        found[0].message.contains("small, medium, large"),
        "{}",
        found[0].message
    );

    let text = RELEASE.replace("    path: chart\n", "");
    let found = check(RELEASE_PATH, &text);
    assert_eq!(found[0].field, "spec.chart.path");
    assert_eq!(found[0].line, line_of(&text, "chart:"));
    assert!(
        found[0].message.contains("required"),
        "{}",
        found[0].message
    );

    let (path, schema) = SCHEMA;
    let found = check(path, &schema.replace("'0004'", "4"));
    assert_eq!(found[0].field, "spec.version");
    assert!(
        found[0].message.contains("Quote it"),
        "{}",
        found[0].message
    );
}

/// The first diagnostic of `found`, which must name `field`, and its message.
fn message_on<'a>(found: &'a [Diagnostic], field: &str) -> &'a str {
    let diagnostic = found
        .iter()
        .find(|d| d.field == field)
        .unwrap_or_else(|| panic!("a diagnostic on {field}: {found:#?}"));
    &diagnostic.message
}

#[test]
fn yaml_1_1_booleans_are_booleans_as_kubernetes_reads_them() {
    // `autoDeploy: yes` is true to the API server, kubectl and Argo CD (sigs.k8s.io/yaml is go-yaml v2).
    for yes in ["yes", "Yes", "YES", "y", "Y", "on", "On", "ON", "True"] {
        let text = RELEASE.replace("autoDeploy: false", &format!("autoDeploy: {yes}"));
        assert_eq!(
            check(RELEASE_PATH, &text),
            Vec::<Diagnostic>::new(),
            "{yes}"
        );
    }
    for no in ["no", "No", "NO", "n", "N", "off", "Off", "OFF"] {
        let text = RELEASE.replace("autoDeploy: false", &format!("autoDeploy: {no}"));
        assert_eq!(check(RELEASE_PATH, &text), Vec::<Diagnostic>::new(), "{no}");
    }

    // The Norway problem: a plain `no` is false, so no environment name; the server refuses it, and so must
    // the validator, saying what `no` is to Kubernetes and how to write the text.
    let path = "platform/environments/no/payments-release.yaml";
    let context = RuleContext {
        environments: vec!["no".into()],
        databases: None,
        ..context()
    };
    let norway = RELEASE
        .replace("  environment: prod\n", "  environment: no\n")
        .replace("payments-prod", "payments-no");
    let found = validate(path, &norway, &context);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].field, "spec.environment");
    assert_eq!(found[0].line, line_of(&norway, "environment: no"));
    assert_eq!(found[0].column, 16);
    assert_eq!(
        found[0].message,
        "`spec.environment` should be a string, not `no`, which Kubernetes reads as the boolean false. Quote it to make it a string."
    );
    // Quoted, it is the text.
    let quoted = norway.replace("environment: no", "environment: 'no'");
    assert_eq!(validate(path, &quoted, &context), Vec::<Diagnostic>::new());

    // A label's value `on` is true, not text.
    let (path, database) = DATABASE;
    let labelled = database.replace(
        "  namespace: platform\n",
        "  namespace: platform\n  labels:\n    backups: on\n",
    );
    assert_eq!(
        message_on(&check(path, &labelled), "metadata.labels.backups"),
        "`metadata.labels.backups` should be a string, not `on`, which Kubernetes reads as the boolean true. Quote it."
    );
}

#[test]
fn numbers_are_read_as_kubernetes_reads_them() {
    // `8e40213` overflows a float, so Go's YAML keeps it a string: a commit id like any other.
    let context = RuleContext {
        green_builds: Some(vec!["8e40213".into()]),
        ..context()
    };
    let exponent = RELEASE.replace("3f2a9c1", "8e40213");
    assert_eq!(
        validate(RELEASE_PATH, &exponent, &context),
        Vec::<Diagnostic>::new()
    );

    // Binary, underscored, octal, hex and exponent forms are numbers, named as written.
    for (written, number) in [
        ("0b1010", "the number 10"),
        ("1_000", "the number 1000"),
        ("0012", "the number 10"),
        ("0x1f", "the number 31"),
        ("1e3", "the number 1000"),
        ("+7", "the number 7"),
    ] {
        let text = RELEASE.replace("  version: 3f2a9c1", &format!("  version: {written}"));
        let found = check(RELEASE_PATH, &text);
        assert_eq!(
            message_on(&found, "spec.version"),
            format!(
                "`spec.version` should be a string, not `{written}`, which Kubernetes reads as {number}. Quote it to make it a string."
            ),
            "{written}"
        );
        // Quoted, each is text (and then no commit id, which Tower's rule says).
        let quoted = RELEASE.replace("  version: 3f2a9c1", &format!("  version: '{written}'"));
        assert!(
            message_on(&check(RELEASE_PATH, &quoted), "spec.version").contains("commit"),
            "{written}"
        );
    }

    // A plain number written as it reads keeps the short description.
    let (path, schema) = SCHEMA;
    let found = check(path, &schema.replace("'0004'", "4"));
    assert_eq!(
        message_on(&found, "spec.version"),
        "`spec.version` should be a string, not the number 4. Quote it to make it a string."
    );
    // An octal-looking version is octal.
    let found = check(path, &schema.replace("'0004'", "0012"));
    assert!(
        message_on(&found, "spec.version")
            .contains("`0012`, which Kubernetes reads as the number 10"),
        "{found:#?}"
    );
}

#[test]
fn a_file_may_end_in_an_empty_document() {
    let (path, schema) = SCHEMA;
    for ending in ["---\n", "---", "---\n# generated\n", "\n---\n\n"] {
        let text = format!("{schema}{ending}");
        assert_eq!(check(path, &text), Vec::<Diagnostic>::new(), "{ending:?}");
    }
    let two = format!("{schema}---\nkind: DatabaseSchema\n");
    let found = check(path, &two);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].line, line_of(&two, "---"));
    assert!(found[0].message.contains("one YAML document"), "{found:#?}");

    let found = check(path, "---\n");
    assert!(found[0].message.contains("empty"), "{found:#?}");
}

#[test]
fn keys_kubernetes_reads_alike_are_duplicates() {
    let text = RELEASE.replace(
        "  autoDeploy: false\n",
        "  autoDeploy: false\n  0x10: a\n  16: b\n",
    );
    let found = check(RELEASE_PATH, &text);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].line, line_of(&text, "16: b"));
    assert!(
        found[0].message.contains("the same key to Kubernetes"),
        "{}",
        found[0].message
    );
}

#[test]
fn syntax_errors_point_at_the_text() {
    let text = RELEASE.replace("  version: 3f2a9c1\n", "  version: [3f2a9c1\n");
    let found = check(RELEASE_PATH, &text);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].field, "");
    assert!(found[0].line >= line_of(&text, "version: ["), "{found:#?}");

    let found = check(RELEASE_PATH, "");
    assert!(found[0].message.contains("empty"), "{found:#?}");
}

#[test]
fn towers_rules_hold_as_the_forms_do() {
    let moved = RELEASE.replace("3f2a9c1", "abcdef1");
    let found = check(RELEASE_PATH, &moved);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].field, "spec.version");
    assert!(
        found[0].message.contains("not a green build"),
        "{}",
        found[0].message
    );

    // A green build by its full id, image and chart pinned with it.
    assert!(check(RELEASE_PATH, &RELEASE.replace("3f2a9c1", "9b1c2d3")).is_empty());

    let unpinned = RELEASE.replace("    tag: 3f2a9c1", "    tag: 9b1c2d3");
    assert_eq!(check(RELEASE_PATH, &unpinned)[0].field, "spec.image.tag");

    let elsewhere = RELEASE.replace("environment: prod", "environment: dev");
    let found = check(RELEASE_PATH, &elsewhere);
    assert_eq!(found[0].field, "spec.environment");
    assert!(
        found[0].message.contains("platform/environments/prod/"),
        "{}",
        found[0].message
    );

    let unbound = RELEASE.replace("- database: payments", "- database: ledger");
    let found = check(RELEASE_PATH, &unbound);
    assert_eq!(found[0].field, "spec.databases[0].database");
    assert!(
        found[0].message.contains("no database ledger in prod"),
        "{}",
        found[0].message
    );

    let renamed = RELEASE.replace("  name: payments-prod", "  name: Payments_Prod");
    assert_eq!(check(RELEASE_PATH, &renamed)[0].field, "metadata.name");

    let wrong_kind = RELEASE.replace("kind: Release", "kind: Database");
    assert_eq!(check(RELEASE_PATH, &wrong_kind)[0].field, "kind");

    let with_status = format!("{RELEASE}status:\n  observedVersion: 3f2a9c1\n");
    assert_eq!(check(RELEASE_PATH, &with_status)[0].field, "status");

    let cluster_field = RELEASE.replace(
        "  namespace: platform\n",
        "  namespace: platform\n  uid: 1234\n",
    );
    assert_eq!(check(RELEASE_PATH, &cluster_field)[0].field, "metadata.uid");

    assert_eq!(
        check("components/payments/values.yaml", RELEASE)[0].field,
        "path"
    );
    assert_eq!(
        check("platform/../etc/passwd.yaml", RELEASE)[0].field,
        "path"
    );
}

#[test]
fn unknown_lists_skip_their_rules() {
    let context = RuleContext {
        green_builds: None,
        databases: None,
        ..context()
    };
    let text = RELEASE
        .replace("3f2a9c1", "abcdef1")
        .replace("- database: payments", "- database: ledger");
    assert!(validate(RELEASE_PATH, &text, &context).is_empty());
}

#[test]
fn paths_say_what_they_hold() {
    assert_eq!(
        parse_platform_path(RELEASE_PATH),
        Some(PlatformPath {
            kind: PlatformKind::Release,
            name: "payments".into(),
            environment: Some("prod".into()),
        })
    );
    assert_eq!(
        parse_platform_path("platform/registry/payments.yaml").map(|p| p.kind),
        Some(PlatformKind::Component)
    );
    assert_eq!(
        parse_platform_path("platform/environments/prod/x.yaml"),
        None
    );
    assert_eq!(parse_platform_path("platform/registry/../x.yaml"), None);
}

#[test]
fn drift_names_the_fields_that_differ() {
    let git = serde_json::json!({"version": "3f2a9c1", "image": {"tag": "3f2a9c1"}, "databases": [{"database": "a"}]});
    let live = serde_json::json!({"version": "9b1c2d3", "image": {"tag": "3f2a9c1"}, "databases": [{"database": "a"}], "extra": 1});
    assert_eq!(
        drifted_fields(&git, &live, "spec"),
        ["spec.extra", "spec.version"]
    );
    assert!(drifted_fields(&git, &git, "spec").is_empty());
}

/// What a person might do to a file while typing: insert a fragment, delete a range, replace or duplicate a
/// line, change an indentation.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    ReplaceLine(usize, String),
    DuplicateLine(usize),
    Indent(usize, usize),
    Dedent(usize),
}

const FRAGMENTS: &[&str] = &[
    ":",
    "- ",
    "  ",
    "\n",
    "#",
    "'",
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&a ",
    "*a",
    "---\n",
    "\t",
    "é",
    "!!str ",
    "foo: bar\n",
    "  replicas: 3\n",
    "null",
    "~",
    "true",
    "12",
    "0x1f",
    "1e3",
    "|\n  x\n",
    "? ",
    "%YAML 1.2\n",
    "1_000",
    "off",
];

const LINES: &[&str] = &[
    "  unknownField: 1",
    "  version: 12",
    "  version: abcdef1",
    "  autoDeploy: yes",
    "  environment: no",
    "  version: 0b1010",
    "  size: huge",
    "  environment: dev",
    "  databases: {}",
    "  - database: Ledger",
    "status: {}",
    "metadata: []",
    "spec:",
    "kind: Release",
    "apiVersion: v1",
    "",
    "  name:",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), prop::sample::select(FRAGMENTS))
            .prop_map(|(at, s)| Edit::Insert(at, s.to_string())),
        (any::<usize>(), "[ -~\n]{1,6}").prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), 1usize..12).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), prop::sample::select(LINES))
            .prop_map(|(at, s)| Edit::ReplaceLine(at, s.to_string())),
        any::<usize>().prop_map(Edit::DuplicateLine),
        (any::<usize>(), 1usize..4).prop_map(|(at, n)| Edit::Indent(at, n)),
        any::<usize>().prop_map(Edit::Dedent),
    ]
}

/// `text` with `edit` applied; positions wrap around the text's length.
fn apply(text: &str, edit: &Edit) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let line = |at: usize| at % lines.len().max(1);
    match edit {
        Edit::Insert(at, s) => {
            let at = at % (chars.len() + 1);
            chars[..at]
                .iter()
                .chain(s.chars().collect::<Vec<_>>().iter())
                .chain(&chars[at..])
                .collect()
        }
        Edit::Delete(at, n) => {
            let at = at % (chars.len() + 1);
            let end = (at + n).min(chars.len());
            chars[..at].iter().chain(&chars[end..]).collect()
        }
        Edit::ReplaceLine(at, s) => {
            let i = line(*at);
            if let Some(l) = lines.get_mut(i) {
                *l = s.clone();
            }
            lines.join("\n") + "\n"
        }
        Edit::DuplicateLine(at) => {
            let i = line(*at);
            if let Some(l) = lines.get(i).cloned() {
                lines.insert(i, l);
            }
            lines.join("\n") + "\n"
        }
        Edit::Indent(at, n) => {
            let i = line(*at);
            if let Some(l) = lines.get_mut(i) {
                *l = format!("{}{l}", " ".repeat(*n));
            }
            lines.join("\n") + "\n"
        }
        Edit::Dedent(at) => {
            let i = line(*at);
            if let Some(l) = lines.get_mut(i) {
                *l = l.trim_start().to_string();
            }
            lines.join("\n") + "\n"
        }
    }
}

/// Reads an accepted file into its typed resource, as the server does before it writes one.
///
/// Its one document: `serde_saphyr::from_str` refuses a file ending in `---` ("multiple YAML documents"),
/// which Kubernetes, kubectl and Argo CD accept and so the validator does; `from_multiple` skips the empty
/// document as they do. (The server's own last check, `server/src/config_view.rs`'s `typed`, must read the
/// same way, or it refuses such a file after the validator accepted it.)
#[cfg(feature = "crd")]
fn typed(path: &str, text: &str) -> Result<(), String> {
    use crate::crd::{Component, Database, DatabaseSchema, Release};
    fn one<T: serde::de::DeserializeOwned>(text: &str) -> Result<(), String> {
        match serde_saphyr::from_multiple::<T>(text) {
            Ok(documents) if documents.len() == 1 => Ok(()),
            Ok(documents) => Err(format!("{} documents", documents.len())),
            Err(error) => Err(error.to_string()),
        }
    }
    match parse_platform_path(path).map(|p| p.kind) {
        Some(PlatformKind::Release) => one::<Release>(text),
        Some(PlatformKind::Component) => one::<Component>(text),
        Some(PlatformKind::Database) => one::<Database>(text),
        Some(PlatformKind::DatabaseSchema) => one::<DatabaseSchema>(text),
        None => Err("not a platform path".into()),
    }
}

/// What Kubernetes' YAML 1.1 reading accepts reads into the typed resources too: serde-saphyr takes `yes`,
/// `on` and `y` for a boolean and keeps `8e40213` a string.
#[cfg(feature = "crd")]
#[test]
fn what_kubernetes_accepts_reads_into_the_types() {
    for text in [
        RELEASE.replace("autoDeploy: false", "autoDeploy: yes"),
        RELEASE.replace("autoDeploy: false", "autoDeploy: On"),
        RELEASE.replace("autoDeploy: false", "autoDeploy: n"),
        RELEASE.replace("3f2a9c1", "8e40213"),
        format!("{RELEASE}---\n"),
    ] {
        assert!(
            validate(RELEASE_PATH, &text, &RuleContext::default()).is_empty(),
            "{text}"
        );
        assert_eq!(typed(RELEASE_PATH, &text), Ok(()), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// 10,000 random edits of valid platform files: the validator never panics, every rejection names a line
    /// within the file (and a field unless the YAML itself is broken), and whatever it accepts reads into the
    /// typed resource the server writes.
    #[test]
    fn random_edits_are_judged_and_never_panic(file in 0usize..4, edits in prop::collection::vec(edit(), 1..4)) {
        let (path, original) = corpus()[file];
        let text = edits.iter().fold(original.to_string(), |text, edit| apply(&text, edit));
        let found = validate(path, &text, &context());
        let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX).max(1);
        for diagnostic in &found {
            prop_assert!(diagnostic.line >= 1 && diagnostic.line <= lines + 1, "{diagnostic:?} in {lines} lines:\n{text}");
            prop_assert!(diagnostic.column >= 1, "{diagnostic:?}");
            prop_assert!(!diagnostic.message.is_empty(), "{diagnostic:?}");
        }
        #[cfg(feature = "crd")]
        if found.is_empty() {
            prop_assert!(typed(path, &text).is_ok(), "accepted but unreadable: {:?}\n{text}", typed(path, &text));
        }
    }
}

/// One case of the corpus the wasm build is checked against: what the native validator says of `text`.
#[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
struct CorpusCase {
    path: String,
    text: String,
    rules: RuleContext,
    expected: Vec<Diagnostic>,
}

/// The fixed corpus: each valid file, the Release with values Kubernetes' YAML 1.1 reads otherwise than YAML
/// 1.2 would (`yes`, `no`, `8e40213`, `0b1010`, `1_000`, `0012`, a trailing `---`), then 150 seeded edits of
/// the valid files (the proptest's kinds of edit), with the native validator's answers.
fn wasm_corpus() -> Vec<CorpusCase> {
    let mut random = crate::random::SplitMix64::new(14);
    let mut pick = |n: usize| usize::try_from(random.below(n as u64)).unwrap_or_default();
    let mut cases: Vec<(String, String)> = corpus()
        .into_iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    for (from, to) in [
        ("autoDeploy: false", "autoDeploy: yes"),
        ("  environment: prod\n", "  environment: no\n"),
        ("  version: 3f2a9c1", "  version: 8e40213"),
        ("  version: 3f2a9c1", "  version: 0b1010"),
        ("  version: 3f2a9c1", "  version: 1_000"),
        ("  version: 3f2a9c1", "  version: 0012"),
        (
            "secretName: payments-db\n",
            "secretName: payments-db\n---\n",
        ),
    ] {
        cases.push((RELEASE_PATH.to_string(), RELEASE.replace(from, to)));
    }
    for _ in 0..150 {
        let (path, original) = corpus()[pick(4)];
        let mut text = original.to_string();
        // Mostly whole-line edits: a fragment dropped at random breaks the YAML itself more often than not,
        // and the schema's and the rules' answers are what the wasm build must get right too.
        let at = pick(10_000);
        let edit = match pick(10) {
            0..=4 => Edit::ReplaceLine(at, LINES[pick(LINES.len())].to_string()),
            5 => Edit::Insert(at, FRAGMENTS[pick(FRAGMENTS.len())].to_string()),
            6 => Edit::Delete(at, 1 + pick(11)),
            7 => Edit::DuplicateLine(at),
            8 => Edit::Indent(at, 1 + pick(3)),
            _ => Edit::Dedent(at),
        };
        text = apply(&text, &edit);
        cases.push((path.to_string(), text));
    }
    let rules = context();
    cases
        .into_iter()
        .map(|(path, text)| CorpusCase {
            expected: validate(&path, &text, &rules),
            path,
            text,
            rules: rules.clone(),
        })
        .collect()
}

/// `shared/tests/config_corpus.json` is what the Playwright spec feeds the wasm build's validator; it must
/// say what the native validator says. Set `TOWER_WRITE_CONFIG_CORPUS=1` to regenerate after a change.
#[test]
fn the_wasm_corpus_holds_the_native_answers() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config_corpus.json");
    let cases = wasm_corpus();
    let json = serde_json::to_string_pretty(&cases).expect("serializes") + "\n";
    if std::env::var_os("TOWER_WRITE_CONFIG_CORPUS").is_some() {
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("create shared/tests");
        std::fs::write(&file, &json).expect("write the corpus");
    }
    let on_disk = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        on_disk == json,
        "shared/tests/config_corpus.json drifted from the validator: run `TOWER_WRITE_CONFIG_CORPUS=1 cargo test -p shared config`"
    );
    let rejected = cases.iter().filter(|c| !c.expected.is_empty()).count();
    assert!(
        rejected > 50 && rejected < cases.len() - 4,
        "a corpus of both answers: {rejected} rejected"
    );
}
