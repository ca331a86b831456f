//! Fuzzing of what `shared` reads from people and from the wire: the golden-path forms, the YAML editor's
//! validator and the event stream's decoding. Each property is bounded (its case count is in its config) so
//! the whole file runs in seconds inside `cargo xtask test`; a failure is saved under
//! `shared/proptest-regressions/` and replayed first on every later run.
//!
//! Inputs are structured but hostile: near-valid forms and files, with path escapes, unicode, control
//! characters, YAML syntax, huge numbers and deep nesting spliced in, not only random bytes.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use shared::config::{self, Diagnostic, RuleContext};
use shared::delivery::{
    self, AddDatabaseForm, ApplySchemaForm, CreateDeploymentForm, DATABASE_SIZES, OnboardForm,
};
use shared::fleet::{
    ActivityItem, ActivityKind, CatalogState, Fleet, FleetEvent, ServiceSummary, SourceState,
    SourceStatus,
};

/// Pieces of input an attacker or a careless paste would try.
const HOSTILE: &[&str] = &[
    "",
    "payments",
    "dev",
    "prod",
    "../",
    "../../etc/passwd",
    "..",
    ".",
    "/",
    "platform/../infrastructure",
    "a/b",
    "\\",
    "%2e%2e%2f",
    "\u{0}",
    "\n",
    "\r\n",
    "\t",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{202e}",
    "\u{feff}",
    "é",
    "Ω",
    "🦀",
    "ｐａｙｍｅｎｔｓ",
    "ǅ",
    ": ",
    "- ",
    "#",
    "&a",
    "*a",
    "!!binary",
    "{",
    "}",
    "[",
    "]",
    "'",
    "\"",
    "---",
    "...",
    "%YAML 1.2",
    "<script>alert(1)</script>",
    "null",
    "~",
    "yes",
    "no",
    "0x1F",
    "1e999",
    "-0",
    "99999999999999999999999999999999",
    "18446744073709551616",
    "3f2a9c1",
    "0000000",
    "1.4.0",
    "0004",
    "-",
    "a-",
    "-a",
    "A",
    "small",
];

/// A string made of hostile pieces and random characters, up to a few hundred characters.
fn hostile_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(HOSTILE).prop_map(str::to_string),
        2 => "[a-z0-9-]{1,12}",
        1 => any::<char>().prop_map(String::from),
        1 => prop::sample::select(HOSTILE).prop_map(|s| s.repeat(40)),
    ];
    prop::collection::vec(piece, 0..5).prop_map(|pieces| pieces.concat())
}

/// A valid DNS label (short, or near the 63-character limit), or a hostile string.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z][a-z0-9-]{0,10}[a-z0-9]",
        1 => "[a-z][a-z0-9-]{55,62}[a-z0-9]",
        3 => hostile_string(),
    ]
}

/// Where a failing case is saved, to be replayed first by every later run: `shared/proptest-regressions/`
/// (an integration test has no `lib.rs` beside it for proptest's default place).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct("proptest-regressions/fuzz.txt"),
        )),
        ..ProptestConfig::default()
    }
}

/// A build id that is valid, or almost.
fn build_id() -> impl Strategy<Value = String> {
    prop_oneof!["[0-9a-f]{7,40}", "[0-9a-fA-G]{5,42}", hostile_string()]
}

fn environments() -> Vec<String> {
    vec!["dev".into(), "staging".into(), "prod".into()]
}

/// Every field an error may name, per form: an error naming anything else would not be shown at a field.
const ONBOARD_FIELDS: &[&str] = &[
    "name",
    "owner",
    "description",
    "template",
    "template_version",
    "build",
];
const DEPLOYMENT_FIELDS: &[&str] = &["environment", "build", "databases"];
const DATABASE_FIELDS: &[&str] = &["environment", "name", "size"];
const SCHEMA_FIELDS: &[&str] = &["environment", "database", "version"];

prop_compose! {
    fn onboard_form()(
        name in name(),
        owner in name(),
        description in prop_oneof![".{0,80}", hostile_string()],
        template in name(),
        template_version in prop_oneof!["[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}", hostile_string()],
        auto_deploy in any::<bool>(),
        build in prop::option::of(build_id()),
    ) -> OnboardForm {
        OnboardForm { name, owner, description, template, template_version, auto_deploy, build }
    }
}

prop_compose! {
    fn deployment_form()(
        environment in prop_oneof![prop::sample::select(environments()), name()],
        build in build_id(),
        databases in prop::collection::vec(name(), 0..10),
    ) -> CreateDeploymentForm {
        CreateDeploymentForm { environment, build, databases }
    }
}

prop_compose! {
    fn database_form()(
        environment in prop_oneof![prop::sample::select(environments()), name()],
        name in name(),
        size in prop_oneof![prop::sample::select(&DATABASE_SIZES[..]).prop_map(str::to_string), hostile_string()],
    ) -> AddDatabaseForm {
        AddDatabaseForm { environment, name, size }
    }
}

prop_compose! {
    fn schema_form()(
        environment in prop_oneof![prop::sample::select(environments()), name()],
        database in prop_oneof![Just(String::new()), name()],
        version in prop_oneof!["[0-9]{1,4}", hostile_string()],
    ) -> ApplySchemaForm {
        ApplySchemaForm { environment, database, version }
    }
}

/// What a rendered file must be: under `platform/`, a path the validator reads as the kind it holds, and a
/// file the YAML editor's validator passes (what Tower proposes, Tower itself accepts).
#[cfg(feature = "crd")]
fn check_rendered(
    files: &[delivery::RenderedFile],
    service: &str,
) -> Result<(), proptest::test_runner::TestCaseError> {
    prop_assert!(!files.is_empty());
    for file in files {
        prop_assert!(
            delivery::is_writable_path(&file.path),
            "outside platform/: {}",
            file.path
        );
        prop_assert!(file.path.starts_with(delivery::PLATFORM_DIR));
        prop_assert!(
            config::parse_platform_path(&file.path).is_some(),
            "{}",
            file.path
        );
        let context = RuleContext {
            service: service.to_string(),
            ..RuleContext::default()
        };
        let found = config::validate(&file.path, &file.content, &context);
        prop_assert!(
            found.is_empty(),
            "Tower renders what its own validator refuses: {found:?}\n{}",
            file.content
        );
    }
    Ok(())
}

#[cfg(feature = "crd")]
fn render_context() -> delivery::RenderContext {
    delivery::RenderContext {
        organisation: "acme".into(),
        registry: "ghcr.io/acme".into(),
    }
}

proptest! {
    #![proptest_config(config(3_000))]

    /// Onboard Service: every form either renders files under `platform/` that read back with the same
    /// description, or is refused naming one of its fields.
    #[test]
    fn fuzz_onboard_form_renders_under_platform_or_names_a_field(form in onboard_form()) {
        match delivery::validate_onboard(&form) {
            Err(error) => {
                prop_assert!(ONBOARD_FIELDS.contains(&error.field), "{error:?}");
                prop_assert!(!error.message.is_empty());
            }
            #[cfg(feature = "crd")]
            Ok(()) => {
                let files =
                    delivery::render_onboard(&form, form.build.as_deref(), &render_context()).unwrap();
                check_rendered(&files, &form.name)?;
                let component: shared::crd::Component = serde_saphyr::from_str(&files[0].content).unwrap();
                prop_assert_eq!(&component.spec.description, &form.description);
            }
            #[cfg(not(feature = "crd"))]
            Ok(()) => {}
        }
    }

    /// Create deployment: rendered or refused naming a field.
    #[test]
    fn fuzz_create_deployment_form_renders_under_platform_or_names_a_field(form in deployment_form()) {
        match delivery::validate_create_deployment(&form, &environments()) {
            Err(error) => prop_assert!(DEPLOYMENT_FIELDS.contains(&error.field), "{error:?}"),
            #[cfg(feature = "crd")]
            Ok(()) => {
                let bindings = form.databases.iter().map(|d| delivery::binding(d, None)).collect();
                let release = delivery::new_release(
                    "payments", &form.environment, &form.build, false, bindings, &render_context(),
                );
                check_rendered(&delivery::render_release(&release, None).unwrap(), "payments")?;
            }
            #[cfg(not(feature = "crd"))]
            Ok(()) => {}
        }
    }

    /// Add Database: rendered or refused naming a field.
    #[test]
    fn fuzz_add_database_form_renders_under_platform_or_names_a_field(form in database_form()) {
        match delivery::validate_add_database(&form, &environments()) {
            Err(error) => prop_assert!(DATABASE_FIELDS.contains(&error.field), "{error:?}"),
            #[cfg(feature = "crd")]
            Ok(()) => check_rendered(&delivery::render_database("payments", &form).unwrap(), "payments")?,
            #[cfg(not(feature = "crd"))]
            Ok(()) => {}
        }
    }

    /// Apply database schema: rendered or refused naming a field.
    #[test]
    fn fuzz_apply_schema_form_renders_under_platform_or_names_a_field(form in schema_form()) {
        match delivery::validate_apply_schema(&form, &environments()) {
            Err(error) => prop_assert!(SCHEMA_FIELDS.contains(&error.field), "{error:?}"),
            #[cfg(feature = "crd")]
            Ok(()) => {
                let database = if form.database.is_empty() { "payments" } else { &form.database };
                let schema = delivery::schema(
                    "payments", database, &form.environment, &form.version,
                    vec![format!("{}_init.sql", form.version)], None,
                );
                check_rendered(&delivery::render_schema(&schema, None).unwrap(), "payments")?;
            }
            #[cfg(not(feature = "crd"))]
            Ok(()) => {}
        }
    }

    /// Paths: a path built from valid names is one Tower writes and reads back as those names; a path
    /// built from anything else is either refused or reads as valid names that stay under `platform/`.
    #[test]
    fn fuzz_paths_from_names_never_leave_platform(service in name(), environment in name()) {
        let valid = |s: &str| delivery::validate_label("name", s).is_ok();
        for (path, with_environment) in [
            (delivery::component_path(&service), false),
            (delivery::release_path(&service, &environment), true),
            (delivery::database_path(&service, &environment), true),
            (delivery::schema_path(&service, &environment), true),
        ] {
            match config::parse_platform_path(&path) {
                Some(read) => {
                    prop_assert!(delivery::is_writable_path(&path), "{path}");
                    prop_assert!(!path.split('/').any(|s| s == ".."), "{path}");
                    prop_assert!(valid(&read.name), "{path} reads as {read:?}");
                    prop_assert!(read.environment.as_deref().is_none_or(valid), "{path} reads as {read:?}");
                }
                None => prop_assert!(
                    !valid(&service) || (with_environment && !valid(&environment)),
                    "{path} from valid names is not a platform path"
                ),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// The YAML editor's validator

const RELEASE_PATH: &str = "platform/environments/prod/payments-release.yaml";

/// payments' prod Release as Tower renders it: the config tests' own fixture.
const RELEASE: &str = include_str!("../src/config/testdata/payments-release.yaml");

/// YAML an attacker would paste: nesting, anchors, tags, directives, odd line breaks.
const YAML_HOSTILE: &[&str] = &[
    "&a [*a]",
    "*a",
    "&a x",
    "<<: *a",
    "? ",
    "!!map",
    "!local",
    "%TAG ! tag:x,2000:\n",
    "--- |\n",
    "|-\n  x",
    ">+\n",
    "\r",
    "\r\n",
    "\u{85}",
    "\u{2028}",
    "\u{feff}",
    "\t",
    "\u{0}",
    "\u{1b}",
    "'unterminated",
    "\"\\u00",
    "\"\\x",
    "\"\\",
    "1e999999",
    "0o777",
    "-.inf",
    ".nan",
    "99999999999999999999999999999",
    "🦀: 🦀",
    "key: [",
    "key: {a: ",
];

/// A text of one of the shapes the validator must survive.
fn hostile_yaml() -> impl Strategy<Value = String> {
    let splice = (
        any::<prop::sample::Index>(),
        prop::collection::vec(
            prop_oneof![
                prop::sample::select(YAML_HOSTILE).prop_map(str::to_string),
                prop::sample::select(HOSTILE).prop_map(str::to_string),
                any::<char>().prop_map(String::from),
            ],
            1..6,
        ),
    )
        .prop_map(|(at, pieces)| {
            let chars: Vec<char> = RELEASE.chars().collect();
            let at = at.index(chars.len() + 1);
            let mut text: String = chars[..at].iter().collect();
            text.push_str(&pieces.concat());
            text.extend(&chars[at..]);
            text
        });
    let nested = (
        1usize..3_000,
        prop::sample::select(vec!["[", "{a: ", "- ", "  - "]),
    )
        .prop_map(|(depth, open)| {
            if open.ends_with("- ") {
                // Block sequences nest by indentation.
                (0..depth.min(400))
                    .map(|d| format!("{}- \n", " ".repeat(d * 2)))
                    .collect()
            } else {
                open.repeat(depth)
            }
        });
    // Each level aliases the one before twice: a naive reader expands 2^levels nodes.
    let laughs = (1usize..40).prop_map(|levels| {
        let mut text = String::from("spec:\n  l0: &l0 [x, x]\n");
        for level in 1..levels {
            text.push_str(&format!(
                "  l{level}: &l{level} [*l{p}, *l{p}]\n",
                p = level - 1
            ));
        }
        text
    });
    let bytes = prop::collection::vec(any::<u8>(), 0..400)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned());
    prop_oneof![6 => splice, 1 => nested, 1 => laughs, 1 => bytes]
}

/// A path the editor may be asked about: the real ones, near misses and escapes.
fn platform_path() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(RELEASE_PATH.to_string()),
        1 => Just("platform/registry/payments.yaml".to_string()),
        1 => Just("platform/environments/prod/payments-database.yaml".to_string()),
        1 => (name(), name()).prop_map(|(e, s)| format!("platform/environments/{e}/{s}-release.yaml")),
        1 => hostile_string().prop_map(|s| format!("platform/{s}.yaml")),
    ]
}

/// Whether `diagnostic` points inside `text`: a line it has (the empty one after a final line break
/// included, where an unexpected end is reported) and a column at most one past that line's last character.
fn inside(diagnostic: &Diagnostic, text: &str) -> bool {
    // YAML breaks lines at `\r\n`, `\r` and `\n`, and so do the editor's and the parser's line numbers.
    let lines: Vec<&str> = text
        .split("\r\n")
        .flat_map(|l| l.split(['\r', '\n']))
        .collect();
    let Some(line) = usize::try_from(diagnostic.line)
        .ok()
        .and_then(|l| l.checked_sub(1))
        .and_then(|l| lines.get(l))
    else {
        return false;
    };
    let width = line.chars().count();
    diagnostic.column >= 1 && usize::try_from(diagnostic.column).unwrap_or(usize::MAX) <= width + 1
}

proptest! {
    #![proptest_config(config(2_000))]

    /// The YAML editor's validator on hostile text: it answers (no panic, no hang on alias bombs or deep
    /// nesting), and every diagnostic points at a line and column inside the text.
    #[test]
    fn fuzz_yaml_validator_points_inside_the_text(path in platform_path(), text in hostile_yaml()) {
        let found = config::validate(&path, &text, &RuleContext::default());
        for diagnostic in &found {
            prop_assert!(!diagnostic.message.is_empty(), "{diagnostic:?}");
            if diagnostic.field != "path" {
                prop_assert!(inside(diagnostic, &text), "{diagnostic:?} is outside of:\n{text:?}");
            }
        }
        if config::parse_platform_path(&path).is_none() {
            prop_assert!(found.iter().any(|d| d.field == "path"), "{found:?}");
        }
    }

    /// The YAML reader alone, which the server's configuration loader also uses.
    #[test]
    fn fuzz_yaml_reader_errors_point_inside_the_text(text in hostile_yaml()) {
        if let Err(error) = config::yaml::read(&text) {
            let diagnostic = Diagnostic::new(error.at, "", error.message.clone());
            prop_assert!(inside(&diagnostic, &text), "{error:?} is outside of:\n{text:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// The event stream

prop_compose! {
    fn service()(
        name in name(), owner in name(), description in hostile_string(), repository in hostile_string(),
        depends_on in prop::collection::vec(name(), 0..3),
    ) -> ServiceSummary {
        ServiceSummary {
            name, owner, description, repository, template: "go-service@1.4.0".into(), depends_on,
            environments: Vec::new(), catalog: None, catalog_state: CatalogState::Found,
        }
    }
}

fn fleet_event() -> impl Strategy<Value = FleetEvent> {
    prop_oneof![
        prop::collection::vec(service(), 0..4).prop_map(|services| FleetEvent::Snapshot {
            services,
            sources: Vec::new(),
            platform: Default::default(),
        }),
        service().prop_map(|service| FleetEvent::ServiceUpserted { service }),
        name().prop_map(|name| FleetEvent::ServiceRemoved { name }),
        (name(), prop::option::of(name()), hostile_string()).prop_map(
            |(cluster, environment, reason)| {
                FleetEvent::SourceChanged {
                    source: SourceStatus {
                        cluster,
                        environment,
                        state: SourceState::Unreachable {
                            since: "2026-12-05T05:00:00Z".into(),
                            reason,
                        },
                    },
                }
            }
        ),
        (name(), hostile_string(), prop::option::of(hostile_string())).prop_map(
            |(service, message, link)| {
                FleetEvent::Activity {
                    item: ActivityItem {
                        at: "2026-12-05T05:00:00Z".into(),
                        service,
                        environment: None,
                        kind: ActivityKind::Deploy,
                        message,
                        link,
                    },
                }
            }
        ),
        (name(), name())
            .prop_map(|(namespace, name)| FleetEvent::PipelineRunRemoved { namespace, name }),
        Just(FleetEvent::ReleasesChanged),
        Just(FleetEvent::PlatformChanged {
            counts: Default::default()
        }),
    ]
}

/// A frame's data as a broken or hostile server (or proxy) could send it.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Truncate(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, String),
    Retag(String),
    Nest(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    let splice = prop_oneof![
        prop::sample::select(HOSTILE).prop_map(str::to_string),
        Just("\"type\":\"snapshot\",".to_string()),
        Just("null".to_string()),
        Just("1e999999".to_string()),
        Just("-99999999999999999999999".to_string()),
        Just("\"\\ud800\"".to_string()),
        Just("\\u0000".to_string()),
    ];
    prop_oneof![
        Just(Damage::None),
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<prop::sample::Index>(), splice).prop_map(|(i, s)| Damage::Insert(i, s)),
        prop_oneof![
            Just("snapshot"),
            Just("card_updated"),
            Just("pipeline_run_updated"),
            Just("pull_request_updated"),
            Just("platform_changed"),
            Just("future_kind"),
            Just(""),
        ]
        .prop_map(|s| Damage::Retag(s.to_string())),
        (1usize..5_000).prop_map(Damage::Nest),
    ]
}

fn damaged(frame: &str, damage: &Damage) -> String {
    let mut bytes = frame.as_bytes().to_vec();
    match damage {
        Damage::None => {}
        Damage::Truncate(at) => bytes.truncate(at.index(bytes.len() + 1)),
        Damage::Flip(at, byte) => {
            if !bytes.is_empty() {
                let at = at.index(bytes.len());
                bytes[at] = *byte;
            }
        }
        Damage::Insert(at, text) => {
            let at = at.index(bytes.len() + 1);
            bytes.splice(at..at, text.bytes());
        }
        Damage::Retag(kind) => {
            let value: serde_json::Value = serde_json::from_str(frame).unwrap();
            let mut value = value;
            value["type"] = serde_json::Value::String(kind.clone());
            return value.to_string();
        }
        Damage::Nest(depth) => {
            return format!("{}{frame}{}", "[".repeat(*depth), "]".repeat(*depth));
        }
    }
    // An EventSource hands the page text: invalid UTF-8 arrives replaced.
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(config(3_000))]

    /// Every event the server sends decodes to itself, and any damaged frame decodes to something or to
    /// nothing without a panic; whatever decodes applies to the fleet.
    #[test]
    fn fuzz_event_stream_frames_decode_or_are_skipped(
        events in prop::collection::vec((fleet_event(), damage()), 1..6),
    ) {
        let mut fleet = Fleet::default();
        for (event, damage) in events {
            let frame = serde_json::to_string(&event).unwrap();
            if matches!(damage, Damage::None) {
                prop_assert_eq!(FleetEvent::decode(&frame), Some(event.clone()));
            }
            if let Some(decoded) = FleetEvent::decode(&damaged(&frame, &damage)) {
                fleet.apply(decoded);
            }
            prop_assert!(fleet.services().all(|s| fleet.service(&s.name).is_some()));
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Regressions: what the fuzzers found, kept as plain tests

/// `levels` anchors, each aliasing the one before twice: 2^levels nodes to a reader that copies aliases.
fn alias_bomb(levels: usize) -> String {
    let mut text = String::from(
        "apiVersion: platform.tower.dev/v1alpha1\nkind: Release\nspec:\n  l0: &l0 [x, x]\n",
    );
    for level in 1..levels {
        text.push_str(&format!(
            "  l{level}: &l{level} [*l{p}, *l{p}]\n",
            p = level - 1
        ));
    }
    text
}

#[test]
fn regression_an_alias_bomb_is_refused_at_its_alias_instead_of_exhausting_memory() {
    let started = std::time::Instant::now();
    let found = config::validate(RELEASE_PATH, &alias_bomb(40), &RuleContext::default());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        found.iter().any(|d| d.message.contains("alias")),
        "{found:?}"
    );
}

#[test]
fn regression_deep_nesting_is_answered_without_overflowing_the_stack() {
    for open in ["[", "{a: "] {
        let text = open.repeat(100_000);
        let found = config::validate(RELEASE_PATH, &text, &RuleContext::default());
        assert!(!found.is_empty());
    }
}

#[test]
fn regression_a_database_name_too_long_for_its_secret_is_refused_by_the_forms() {
    let name = "d".repeat(61);
    let error = delivery::validate_add_database(
        &AddDatabaseForm {
            environment: "dev".into(),
            name: name.clone(),
            size: "small".into(),
        },
        &environments(),
    );
    assert_eq!(error.map_err(|e| e.field), Err("name"));
    let error = delivery::validate_create_deployment(
        &CreateDeploymentForm {
            environment: "dev".into(),
            build: "3f2a9c1".into(),
            databases: vec![name],
        },
        &environments(),
    );
    assert_eq!(error.map_err(|e| e.field), Err("databases"));
    // 60 characters still fit: `<name>-db` is 63.
    assert!(delivery::validate_database_name("name", &"d".repeat(60)).is_ok());
}

#[test]
fn regression_a_name_whose_resource_name_would_pass_63_characters_is_refused_by_the_forms() {
    // `<name>-dev`, the first Release's name, would be 64 characters.
    let onboard = OnboardForm {
        name: "s".repeat(60),
        owner: "payments".into(),
        template: "go-service".into(),
        template_version: "1.4.0".into(),
        ..OnboardForm::default()
    };
    assert_eq!(
        delivery::validate_onboard(&onboard).map_err(|e| e.field),
        Err("name")
    );
    let database = AddDatabaseForm {
        environment: "staging".into(),
        name: "d".repeat(56),
        size: "small".into(),
    };
    assert_eq!(
        delivery::validate_add_database(&database, &environments()).map_err(|e| e.field),
        Err("name")
    );
    let schema = ApplySchemaForm {
        environment: "prod".into(),
        database: "d".repeat(59),
        version: "0004".into(),
    };
    assert_eq!(
        delivery::validate_apply_schema(&schema, &environments()).map_err(|e| e.field),
        Err("database")
    );
    // One character fewer fits.
    let schema = ApplySchemaForm {
        database: "d".repeat(58),
        ..schema
    };
    assert!(delivery::validate_apply_schema(&schema, &environments()).is_ok());
}
