//! Fuzzing the label and field selector parsers: no panic on any text (a watch's query string is anyone's),
//! and a selector printed the way kubectl and client-go print one parses back to what was printed and
//! selects exactly what its clauses say. There is no printer in the sandbox (it only reads selectors), so
//! the printer here is the Kubernetes syntax itself. Bounded for `cargo xtask test`.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::{FieldSelector, LabelSelector, Requirement};
use crate::apiserver::store::Stored;

/// A label key: an optional DNS prefix and a name, as Kubernetes allows them.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9]{0,8}",
        "[a-z][a-z0-9-]{0,6}[a-z0-9]\\.[a-z]{2,5}/[A-Za-z0-9][A-Za-z0-9_.-]{0,8}[A-Za-z0-9]",
        Just("app.kubernetes.io/name".to_string()),
    ]
}

/// A label value (possibly empty, which Kubernetes allows).
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        6 => "[A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?",
    ]
}

fn requirement() -> impl Strategy<Value = Requirement> {
    prop_oneof![
        (key(), value()).prop_map(|(k, v)| Requirement::Equals(k, v)),
        (key(), value()).prop_map(|(k, v)| Requirement::NotEquals(k, v)),
        (
            key(),
            prop::collection::vec(
                value().prop_filter("a set holds values", |v| !v.is_empty()),
                1..4
            )
        )
            .prop_map(|(k, set)| Requirement::In(k, set)),
        (
            key(),
            prop::collection::vec(
                value().prop_filter("a set holds values", |v| !v.is_empty()),
                1..4
            )
        )
            .prop_map(|(k, set)| Requirement::NotIn(k, set)),
        key().prop_map(Requirement::Exists),
        key().prop_map(Requirement::DoesNotExist),
    ]
}

/// `requirement` as kubectl writes it, with the optional spaces and `==` a person may use.
fn print(requirement: &Requirement, spaced: bool, double: bool) -> String {
    let eq = if double { "==" } else { "=" };
    let sp = if spaced { " " } else { "" };
    match requirement {
        Requirement::Equals(k, v) => format!("{k}{sp}{eq}{sp}{v}"),
        Requirement::NotEquals(k, v) => format!("{k}{sp}!={sp}{v}"),
        Requirement::In(k, set) => format!("{k} in ({})", set.join(&format!(",{sp}"))),
        Requirement::NotIn(k, set) => format!("{k} notin ({})", set.join(&format!(",{sp}"))),
        Requirement::Exists(k) => k.clone(),
        Requirement::DoesNotExist(k) => format!("!{k}"),
    }
}

/// Whether `labels` satisfy `requirement`, straight from the Kubernetes documentation's wording.
fn holds(requirement: &Requirement, labels: &Map<String, Value>) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    match requirement {
        Requirement::Equals(k, v) => label(k) == Some(v),
        Requirement::NotEquals(k, v) => label(k) != Some(v),
        Requirement::In(k, set) => label(k).is_some_and(|l| set.iter().any(|v| v == l)),
        Requirement::NotIn(k, set) => !label(k).is_some_and(|l| set.iter().any(|v| v == l)),
        Requirement::Exists(k) => label(k).is_some(),
        Requirement::DoesNotExist(k) => label(k).is_none(),
    }
}

/// Text a client, a proxy or an attacker could put in `labelSelector=` or `fieldSelector=`.
fn hostile_selector() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            "=",
            "==",
            "!=",
            "!",
            ",",
            "(",
            ")",
            " in ",
            " notin ",
            "in",
            "notin",
            " ",
            "\t",
            "a",
            "app",
            "x.io/y",
            "/",
            "..",
            "../",
            "%2C",
            "\u{0}",
            "\n",
            "é",
            "🦀",
            "((((",
            "))))",
            "a in (",
            "a in ()",
            "!!",
            "=(",
            "in (x,y)",
            "metadata.name",
            "status.phase",
            ".",
            "metadata..name",
            "\u{202e}",
        ])
        .prop_map(str::to_string),
        any::<char>().prop_map(String::from),
        "[a-z=!(), ]{1,8}",
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// Any text: parsed or refused with a 400, never a panic; and matching whatever parsed never panics.
    #[test]
    fn fuzz_selectors_never_panic_on_any_text(text in hostile_selector()) {
        let object = serde_json::json!({
            "metadata": {"name": "a", "namespace": "x", "labels": {"app": "web"}},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]},
        });
        if let Ok(labels) = LabelSelector::parse(&text) {
            let _ = labels.matches(object.pointer("/metadata/labels"));
            let _ = labels.matches(None);
        }
        if let Ok(fields) = FieldSelector::parse(&text) {
            let _ = fields.unsupported("", "Pod");
            let _ = fields.matches_stored(&("x".into(), "a".into()), &Stored::new(&object));
        }
    }

    /// A valid selector, printed as Kubernetes spells it, parses back to its clauses and selects exactly the
    /// objects whose labels satisfy every clause.
    #[test]
    fn fuzz_label_selectors_round_trip_and_select_as_written(
        requirements in prop::collection::vec(requirement(), 1..5),
        spaced in any::<bool>(),
        double in any::<bool>(),
        labels in prop::collection::btree_map(key(), value(), 0..4),
        shared_keys in prop::collection::vec((any::<prop::sample::Index>(), value()), 0..4),
    ) {
        let text = requirements
            .iter()
            .map(|r| print(r, spaced, double))
            .collect::<Vec<_>>()
            .join(",");
        let parsed = LabelSelector::parse(&text);
        prop_assert_eq!(parsed.as_ref().ok(), Some(&LabelSelector(requirements.clone())), "{}", text);
        // Labels that share keys with the selector, so clauses are tested both ways, not only vacuously.
        let mut labels: Map<String, Value> =
            labels.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        for (index, v) in shared_keys {
            let k = match &requirements[index.index(requirements.len())] {
                Requirement::Equals(k, _) | Requirement::NotEquals(k, _) | Requirement::In(k, _)
                | Requirement::NotIn(k, _) | Requirement::Exists(k) | Requirement::DoesNotExist(k) => k,
            };
            labels.insert(k.clone(), Value::String(v));
        }
        let expected = requirements.iter().all(|r| holds(r, &labels));
        let labels = Value::Object(labels);
        prop_assert_eq!(parsed.map(|s| s.matches(Some(&labels))).ok(), Some(expected), "{}", text);
    }

    /// A valid field selector parses back to its clauses and compares the object's fields as written.
    #[test]
    fn fuzz_field_selectors_round_trip(
        clauses in prop::collection::vec(
            (prop::sample::select(vec!["metadata.name", "metadata.namespace", "status.phase", "spec.nodeName"]),
             any::<bool>(), value()),
            1..4,
        ),
        double in any::<bool>(),
    ) {
        let text = clauses
            .iter()
            .map(|(path, equal, value)| {
                let op = match (equal, double) { (false, _) => "!=", (true, true) => "==", (true, false) => "=" };
                format!("{path}{op}{value}")
            })
            .collect::<Vec<_>>()
            .join(",");
        let expected: Vec<(String, bool, String)> =
            clauses.iter().map(|(p, e, v)| ((*p).to_string(), *e, v.clone())).collect();
        prop_assert_eq!(FieldSelector::parse(&text).ok(), Some(FieldSelector(expected)), "{}", text);
    }
}
