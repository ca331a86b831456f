//! Label and field selectors, parsed the way the Kubernetes apiserver reads them.

use serde_json::Value;

use super::error::{Result, StoreError};
use super::store::{Key, Stored};

/// One clause of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed `labelSelector`; all clauses must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    pub(crate) fn parse(text: &str) -> Result<Self> {
        let bad = || {
            StoreError::BadRequest(format!(
                "unable to parse requirement: invalid label selector \"{text}\""
            ))
        };
        let mut requirements = Vec::new();
        for clause in split_top_level(text) {
            let clause = clause.trim();
            if clause.is_empty() {
                continue;
            }
            let requirement = if let Some(key) = clause.strip_prefix('!') {
                Requirement::DoesNotExist(valid_key(key.trim()).ok_or_else(bad)?)
            } else if let Some((key, value)) = clause.split_once("!=") {
                Requirement::NotEquals(
                    valid_key(key.trim()).ok_or_else(bad)?,
                    value.trim().to_owned(),
                )
            } else if let Some((key, value)) =
                clause.split_once("==").or_else(|| clause.split_once('='))
            {
                Requirement::Equals(
                    valid_key(key.trim()).ok_or_else(bad)?,
                    value.trim().to_owned(),
                )
            } else if let Some((key, set)) = set_clause(clause, "notin") {
                Requirement::NotIn(valid_key(key).ok_or_else(bad)?, set.ok_or_else(bad)?)
            } else if let Some((key, set)) = set_clause(clause, "in") {
                Requirement::In(valid_key(key).ok_or_else(bad)?, set.ok_or_else(bad)?)
            } else {
                Requirement::Exists(valid_key(clause).ok_or_else(bad)?)
            };
            requirements.push(requirement);
        }
        Ok(Self(requirements))
    }

    /// Whether an object with these labels (`metadata.labels`, possibly absent) is selected.
    pub(crate) fn matches(&self, labels: Option<&Value>) -> bool {
        self.matches_labels(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// Whether an object whose label values `label` reads is selected.
    fn matches_labels<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|requirement| match requirement {
            Requirement::Equals(k, v) => label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
            Requirement::In(k, set) => label(k).is_some_and(|l| set.iter().any(|v| v == l)),
            Requirement::NotIn(k, set) => label(k).is_none_or(|l| set.iter().all(|v| v != l)),
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::DoesNotExist(k) => label(k).is_none(),
        })
    }
}

/// Splits on commas that are not inside a `( … )` value set.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Recognises `key <op> (a, b)`; the inner `Option` is `None` when the set is malformed.
fn set_clause<'a>(clause: &'a str, op: &str) -> Option<(&'a str, Option<Vec<String>>)> {
    let open = clause.find('(')?;
    let head = clause[..open].trim_end();
    let key = head.strip_suffix(op)?;
    // `op` must be a whole word: `domain in (x)`, not `domainin(x)`.
    if !key.ends_with(char::is_whitespace) {
        return None;
    }
    let set = clause[open + 1..]
        .trim_end()
        .strip_suffix(')')
        .map(|inner| {
            inner
                .split(',')
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect()
        });
    Some((key.trim(), set))
}

/// A label key may hold a DNS prefix and a name: letters, digits, `-`, `_`, `.`, `/`.
fn valid_key(key: &str) -> Option<String> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    ok.then(|| key.to_owned())
}

/// The fields a real apiserver selects objects by beyond `metadata.name` and `metadata.namespace`, which
/// every type has: the built-in types' field label conversions, and the `selectableFields` of the CRDs the
/// platform installs. By group and kind; any other field is refused with `400`.
const SELECTABLE_FIELDS: &[(&str, &str, &[&str])] = &[
    (
        "",
        "Pod",
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
        ],
    ),
    (
        "",
        "Event",
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
        ],
    ),
    ("", "Secret", &["type"]),
    ("", "Namespace", &["status.phase"]),
    ("", "Service", &["spec.clusterIP", "spec.type"]),
    (
        "external-secrets.io",
        "ExternalSecret",
        &[
            "spec.secretStoreRef.name",
            "spec.secretStoreRef.kind",
            "spec.target.name",
            "spec.refreshInterval",
        ],
    ),
];

/// A parsed `fieldSelector`: `path=value`, `path==value` or `path!=value` clauses, all of which must hold.
///
/// It reads any dotted path (`metadata.name`, `status.phase`, `involvedObject.name`), a missing field reading
/// as ""; [`FieldSelector::unsupported`] tells which paths a real apiserver would refuse for a type.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses `metadata.name=foo,metadata.namespace!=kube-system`.
    pub(crate) fn parse(text: &str) -> Result<Self> {
        let mut clauses = Vec::new();
        for clause in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            let (path, equal, value) = if let Some((p, v)) = clause.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = clause.split_once("==").or_else(|| clause.split_once('='))
            {
                (p, true, v)
            } else {
                return Err(StoreError::BadRequest(format!(
                    "invalid field selector \"{text}\": expected path=value"
                )));
            };
            clauses.push((path.trim().to_owned(), equal, value.trim().to_owned()));
        }
        Ok(Self(clauses))
    }

    /// The first path objects of `group`/`kind` cannot be selected by, if any.
    pub(crate) fn unsupported(&self, group: &str, kind: &str) -> Option<&str> {
        let selectable = SELECTABLE_FIELDS
            .iter()
            .find(|(g, k, _)| *g == group && *k == kind)
            .map_or(&[][..], |(_, _, fields)| fields);
        self.0
            .iter()
            .map(|(path, _, _)| path.as_str())
            .find(|path| {
                !matches!(*path, "metadata.name" | "metadata.namespace")
                    && !selectable.contains(path)
            })
    }

    /// Whether a stored object is selected: by its key when the selector reads only name and namespace (as
    /// nearly all do), else by its parsed tree.
    pub(crate) fn matches_stored(&self, (namespace, name): &Key, object: &Stored) -> bool {
        let mut tree = None;
        self.0.iter().all(|(path, equal, value)| {
            let found = match path.as_str() {
                "metadata.name" => name.clone(),
                // Cluster-scoped objects are stored under "", which is also what their absent field reads.
                "metadata.namespace" => namespace.clone(),
                _ => field(tree.get_or_insert_with(|| object.tree()), path),
            };
            (found == *value) == *equal
        })
    }
}

/// A field at a dotted path as a field selector compares it: strings as they are, absent or null as "".
fn field(object: &Value, path: &str) -> String {
    let found = path
        .split('.')
        .try_fold(object, |v, segment| v.get(segment));
    match found {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Which objects a list or watch request is about: a namespace (or all) and both selectors.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selection {
    /// `None` for all namespaces (or a cluster-scoped type).
    pub(crate) namespace: Option<String>,
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Selection {
    /// Whether every object is selected (no namespace, no selectors), so matching can be skipped.
    pub(crate) fn is_everything(&self) -> bool {
        self.namespace.is_none() && self.labels.0.is_empty() && self.fields.0.is_empty()
    }

    /// Whether a label or field selector narrows the list (a real apiserver then cannot tell how many items
    /// remain after a page).
    pub(crate) fn has_selectors(&self) -> bool {
        !self.labels.0.is_empty() || !self.fields.0.is_empty()
    }

    /// Whether a stored object, under its key, is in the namespace and matches both selectors; its labels
    /// are read without parsing it.
    pub(crate) fn matches_stored(&self, key: &Key, object: &Stored) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|wanted| key.0 == wanted)
            && self.labels.matches_labels(|label| object.label(label))
            && self.fields.matches_stored(key, object)
    }
}

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn every_label_operator_selects_as_kubernetes_does() {
        let labels = json!({"app": "web", "tier": "front"});
        let selects = |s: &str| LabelSelector::parse(s).unwrap().matches(Some(&labels));
        assert!(selects("app=web"));
        assert!(selects("app==web,tier"));
        assert!(selects("app!=db"));
        assert!(selects("!missing"));
        assert!(selects("app in (db, web),tier notin (back)"));
        assert!(!selects("app in (db)"));
        assert!(!selects("tier notin (front,back)"));
        assert!(!selects("missing"));
        assert!(!selects("!app"));
        assert!(LabelSelector::parse("app in (x").is_err());
    }

    #[test]
    fn field_selectors_read_dotted_paths() {
        let obj =
            json!({"metadata": {"name": "a", "namespace": "x"}, "status": {"phase": "Running"}});
        let stored = Stored::new(&obj);
        let key = ("x".to_owned(), "a".to_owned());
        let selects = |s: &str| {
            FieldSelector::parse(s)
                .unwrap()
                .matches_stored(&key, &stored)
        };
        assert!(selects("metadata.name=a,metadata.namespace!=y"));
        assert!(selects("status.phase==Running"));
        assert!(!selects("metadata.namespace=y"));
        assert!(FieldSelector::parse("nonsense").is_err());
    }
}
