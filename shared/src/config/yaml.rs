//! A YAML document as a tree in which every node and every key knows its line and column, so a diagnostic
//! points at what the user typed. Built from granit-parser's events (the parser under serde-saphyr, which the
//! server deserializes platform files with), so the browser and the server read a file the same way.
//!
//! Scalars resolve by YAML 1.2's core schema: `null`/`~`/empty, `true`/`false`, integers (decimal, `0o`,
//! `0x`), floats (`.inf`, `.nan` included); quoted or `!!str`-tagged scalars are strings. Aliases are
//! resolved to a copy of what their anchor names.

use std::collections::HashMap;

use granit_parser::{Event, Marker, Parser, ScalarStyle, Tag};
use serde::{Deserialize, Serialize};

/// A place in the text: line and column, both counted from 1 (columns in characters).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Position {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

impl Position {
    /// The start of the text.
    pub const START: Position = Position { line: 1, column: 1 };

    fn of(marker: &Marker) -> Position {
        Position {
            line: u32::try_from(marker.line()).unwrap_or(u32::MAX).max(1),
            column: u32::try_from(marker.col())
                .unwrap_or(u32::MAX)
                .saturating_add(1),
        }
    }
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Integer(i64),
    /// A number with a fraction or exponent, or `.inf`/`.nan`.
    Float(f64),
    /// Any other scalar.
    String(String),
    /// `- a` items.
    Sequence(Vec<Node>),
    /// `key: value` entries, in the order written.
    Mapping(Vec<Entry>),
}

/// A value and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where it starts.
    pub at: Position,
}

/// One `key: value` of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, as written.
    pub key: String,
    /// Where the key starts: diagnostics about the entry point here.
    pub key_at: Position,
    /// The value.
    pub value: Node,
}

impl Node {
    /// The entry `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Mapping(entries) => entries.iter().find(|e| e.key == key).map(|e| &e.value),
            _ => None,
        }
    }

    /// The entry `key` of a mapping, with its key's position.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Mapping(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// The string it holds, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// What it is, in words: "a mapping", "the number 3", "the string \"x\"".
    pub fn describe(&self) -> String {
        match &self.value {
            Value::Null => "nothing (null)".into(),
            Value::Bool(b) => format!("the boolean {b}"),
            Value::Integer(i) => format!("the number {i}"),
            Value::Float(f) => format!("the number {f}"),
            Value::String(s) => format!("the string {s:?}"),
            Value::Sequence(_) => "a list".into(),
            Value::Mapping(_) => "a mapping".into(),
        }
    }
}

/// Text that is not YAML, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {}, column {}: {message}", at.line, at.column)]
pub struct SyntaxError {
    /// Where the parser stopped.
    pub at: Position,
    /// What it expected, in its words.
    pub message: String,
}

impl SyntaxError {
    fn new(at: Position, message: impl Into<String>) -> Self {
        SyntaxError {
            at,
            message: message.into(),
        }
    }
}

/// A collection being read, until its end event.
enum Open {
    Sequence {
        at: Position,
        anchor: usize,
        items: Vec<Node>,
    },
    Mapping {
        at: Position,
        anchor: usize,
        entries: Vec<Entry>,
        /// A key read, waiting for its value.
        key: Option<(String, Position)>,
    },
}

/// Reads one YAML document: `None` for an empty text, the root otherwise. More than one document, a
/// duplicate key, a key that is not a scalar and an alias to no anchor are errors, as are the parser's own.
pub fn parse(text: &str) -> Result<Option<Node>, SyntaxError> {
    let mut open: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    for item in Parser::new_from_str(text) {
        let (event, span) =
            item.map_err(|e| SyntaxError::new(Position::of(e.marker()), e.info()))?;
        let at = Position::of(&span.start);
        let finished = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(SyntaxError::new(
                        at,
                        "A platform file holds one YAML document; remove the second `---` and what follows.",
                    ));
                }
                None
            }
            Event::Alias(id) => Some((
                anchors.get(&id).cloned().ok_or_else(|| {
                    SyntaxError::new(at, "This alias names no anchor defined before it.")
                })?,
                None,
            )),
            Event::UnresolvedAlias(name) => {
                return Err(SyntaxError::new(
                    at,
                    format!("The alias *{name} names no anchor defined before it."),
                ));
            }
            Event::Scalar(text, style, anchor, tag) => {
                let node = Node {
                    value: resolve_scalar(&text, style, tag.as_deref()),
                    at,
                };
                if anchor != 0 {
                    anchors.insert(anchor, node.clone());
                }
                Some((node, Some(text.into_owned())))
            }
            Event::SequenceStart(_, anchor, _) => {
                open.push(Open::Sequence {
                    at,
                    anchor,
                    items: Vec::new(),
                });
                None
            }
            Event::MappingStart(_, anchor, _) => {
                open.push(Open::Mapping {
                    at,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match open.pop() {
                    Some(Open::Sequence { at, anchor, items }) => (
                        Node {
                            value: Value::Sequence(items),
                            at,
                        },
                        anchor,
                    ),
                    Some(Open::Mapping {
                        at,
                        anchor,
                        entries,
                        ..
                    }) => (
                        Node {
                            value: Value::Mapping(entries),
                            at,
                        },
                        anchor,
                    ),
                    None => {
                        return Err(SyntaxError::new(at, "A collection ends that never began."));
                    }
                };
                if anchor != 0 {
                    anchors.insert(anchor, node.clone());
                }
                Some((node, None))
            }
            _ => None,
        };
        if let Some((node, raw)) = finished {
            place(&mut open, &mut root, node, raw)?;
        }
    }
    Ok(root)
}

/// Puts a finished node where it belongs: the root, a list's next item, a mapping's next key or value.
fn place(
    open: &mut [Open],
    root: &mut Option<Node>,
    node: Node,
    raw: Option<String>,
) -> Result<(), SyntaxError> {
    match open.last_mut() {
        None => {
            *root = Some(node);
            Ok(())
        }
        Some(Open::Sequence { items, .. }) => {
            items.push(node);
            Ok(())
        }
        Some(Open::Mapping { entries, key, .. }) => {
            if let Some((name, key_at)) = key.take() {
                entries.push(Entry {
                    key: name,
                    key_at,
                    value: node,
                });
                return Ok(());
            }
            let Some(name) = raw else {
                return Err(SyntaxError::new(
                    node.at,
                    "A key must be a plain name, not a list or a mapping.",
                ));
            };
            if entries.iter().any(|e| e.key == name) {
                return Err(SyntaxError::new(
                    node.at,
                    format!("`{name}` appears twice in this mapping; keep one."),
                ));
            }
            *key = Some((name, node.at));
            Ok(())
        }
    }
}

/// A scalar's value by YAML 1.2's core schema.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    if let Some(tag) = tag
        && tag.suffix() == "str"
    {
        return Value::String(text.to_string());
    }
    if style != ScalarStyle::Plain {
        return Value::String(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(integer) = integer(text) {
        return Value::Integer(integer);
    }
    if is_float(text)
        && let Ok(float) = text.parse::<f64>()
    {
        return Value::Float(float);
    }
    Value::String(text.to_string())
}

/// `[-+]?[0-9]+`, `0o[0-7]+` or `0x[0-9a-fA-F]+`, when it fits an `i64`.
fn integer(text: &str) -> Option<i64> {
    if let Some(octal) = text.strip_prefix("0o") {
        return i64::from_str_radix(octal, 8)
            .ok()
            .filter(|_| !octal.is_empty());
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16)
            .ok()
            .filter(|_| !hex.is_empty());
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`: what the core schema reads as a float.
fn is_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = digits(whole)
        && fraction.is_none_or(digits)
        && (!whole.is_empty() || fraction.is_some_and(|f| !f.is_empty()));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        parse(text).expect("parses").expect("has a root")
    }

    #[test]
    fn keys_and_values_know_their_lines_and_columns() {
        let doc = root(
            "kind: Release\nspec:\n  version: 3f2a9c1\n  databases:\n    - database: ledger\n",
        );
        let spec = doc.entry("spec").expect("spec");
        assert_eq!(spec.key_at, Position { line: 2, column: 1 });
        let version = spec.value.entry("version").expect("version");
        assert_eq!(version.key_at, Position { line: 3, column: 3 });
        assert_eq!(
            version.value.at,
            Position {
                line: 3,
                column: 12
            }
        );
        let Value::Sequence(items) = &spec.value.get("databases").expect("databases").value else {
            panic!("a list");
        };
        assert_eq!(items[0].entry("database").expect("key").key_at.line, 5);
    }

    #[test]
    fn scalars_resolve_by_the_core_schema() {
        let doc = root(
            "a: 3\nb: '3'\nc: true\nd: ~\ne: 1.5\nf: 3f2a9c1\ng: !!str 12\nh: 0x1f\ni: 1e3\nj: yes\nk: .inf\n",
        );
        let value = |k: &str| doc.get(k).expect(k).value.clone();
        assert_eq!(value("a"), Value::Integer(3));
        assert_eq!(value("b"), Value::String("3".into()));
        assert_eq!(value("c"), Value::Bool(true));
        assert_eq!(value("d"), Value::Null);
        assert_eq!(value("e"), Value::Float(1.5));
        assert_eq!(value("f"), Value::String("3f2a9c1".into()));
        assert_eq!(value("g"), Value::String("12".into()));
        assert_eq!(value("h"), Value::Integer(31));
        assert_eq!(value("i"), Value::Float(1000.0));
        // YAML 1.1's `yes` is a string in 1.2, as Kubernetes' strict decoding would want it quoted anyway.
        assert_eq!(value("j"), Value::String("yes".into()));
        assert_eq!(value("k"), Value::Float(f64::INFINITY));
    }

    #[test]
    fn aliases_copy_their_anchor() {
        let doc = root("base: &b {x: 1}\ncopy: *b\n");
        assert_eq!(
            doc.get("copy").expect("copy").get("x").expect("x").value,
            Value::Integer(1)
        );
    }

    #[test]
    fn mistakes_are_reported_where_they_are() {
        let err = parse("a: 1\na: 2\n").expect_err("duplicate");
        assert_eq!(err.at.line, 2);
        assert!(err.message.contains("twice"), "{}", err.message);

        let err = parse("a: 1\n---\nb: 2\n").expect_err("two documents");
        assert_eq!(err.at.line, 2);

        let err = parse("spec:\n  version: [1, 2\n").expect_err("unclosed flow list");
        assert!(err.at.line >= 2, "{err}");

        let err = parse("a: *nowhere\n").expect_err("alias without anchor");
        assert_eq!(err.at.line, 1);

        assert_eq!(parse("").expect("empty parses"), None);
        assert_eq!(parse("# only a comment\n").expect("comment parses"), None);
    }
}
