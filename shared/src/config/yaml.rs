//! A YAML document as a tree in which every node and every key knows its line and column, so a diagnostic
//! points at what the user typed. Built from granit-parser's events (the parser under serde-saphyr, which the
//! server deserializes platform files with), so the browser and the server read a file the same way.
//!
//! Plain (unquoted) scalars resolve as Kubernetes resolves them, since the cluster decides what a file means:
//! the API server, kubectl and Argo CD read YAML through sigs.k8s.io/yaml, which is go-yaml v2 and so YAML
//! 1.1's rules, not YAML 1.2's core schema. `yes`/`no`/`on`/`off`/`y`/`n` are booleans; `0x1f`, `0o17`,
//! `017` (octal), `0b1010` and `1_000` are integers; a float that overflows (`8e40213`) stays text; see
//! [`plain_scalar`]. Quoted, block and `!!str`-tagged scalars are strings. Aliases are resolved to a copy of
//! what their anchor names. An empty document (a file ending in `---`) is no document, as kubectl and Argo CD
//! skip it.

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
        describe(&self.value)
    }
}

/// What `value` is, in words.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "nothing (null)".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Integer(i) => format!("the number {i}"),
        Value::Float(f) if f.is_nan() => "NaN (not a number)".into(),
        Value::Float(f) if f.is_infinite() => if *f > 0.0 {
            "infinity"
        } else {
            "minus infinity"
        }
        .into(),
        Value::Float(f) => format!("the number {f}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
    }
}

/// A plain scalar Kubernetes reads as a boolean or a number though it is not written as that value plainly
/// is (`no`, `On`, `0012`, `1_000`, `1e3`, `.inf`): a diagnostic about it should say how it was written as
/// well as what it is, or "the boolean false" leaves the developer looking for a `false` they never typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Spelling {
    /// Where the scalar is (its node's position).
    pub at: Position,
    /// The scalar as written.
    pub written: String,
    /// What Kubernetes reads it as.
    pub value: Value,
}

impl Spelling {
    /// What [`Node::describe`] says of the node: "the boolean false".
    pub fn plainly(&self) -> String {
        describe(&self.value)
    }

    /// What it is with how it was written: "`no`, which Kubernetes reads as the boolean false".
    pub fn spelled(&self) -> String {
        format!(
            "`{}`, which Kubernetes reads as {}",
            self.written,
            describe(&self.value)
        )
    }

    /// The spelling of a plain scalar that resolved to `value`, if it differs from the value's own.
    fn of(at: Position, written: &str, value: &Value) -> Option<Spelling> {
        let plainly = match value {
            Value::Bool(b) => b.to_string(),
            Value::Integer(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            _ => return None,
        };
        (written != plainly).then(|| Spelling {
            at,
            written: written.to_string(),
            value: value.clone(),
        })
    }
}

/// A file read: its one document's root (`None` when it holds none) and the plain scalars whose spelling a
/// diagnostic should quote.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The root node.
    pub root: Option<Node>,
    /// Plain values (not keys) Kubernetes reads as booleans or numbers and that are written otherwise.
    pub spellings: Vec<Spelling>,
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
        /// Each key so far: as written, and as the JSON key Kubernetes makes of it.
        keys: Vec<(String, String)>,
        /// A key read, waiting for its value.
        key: Option<(String, Position)>,
    },
}

/// Reads one YAML document: `None` for an empty text, the root otherwise. More than one document, a
/// duplicate key, a key that is not a scalar and an alias to no anchor are errors, as are the parser's own.
pub fn parse(text: &str) -> Result<Option<Node>, SyntaxError> {
    read(text).map(|document| document.root)
}

/// How many nodes aliases may copy into one file, in all. Without a bound, anchors that each alias the one
/// before twice (a "billion laughs") make a few lines expand to 2^lines nodes and exhaust memory, in the
/// browser as the owner types and on the server that validates the file again; go-yaml, which Kubernetes
/// reads files with, refuses such "excessive aliasing" as well. A platform file has a few dozen nodes.
pub const MAX_ALIASED_NODES: usize = 10_000;

/// [`parse`], with the spellings of the plain values Kubernetes reads as booleans or numbers.
pub fn read(text: &str) -> Result<Document, SyntaxError> {
    let mut open: Vec<Open> = Vec::new();
    // Each anchor's node and how many nodes it holds, itself included.
    let mut anchors: HashMap<usize, (Node, usize)> = HashMap::new();
    // How many nodes each open collection holds so far, itself included (parallel to `open`).
    let mut sizes: Vec<usize> = Vec::new();
    // How many nodes aliases have copied so far.
    let mut aliased = 0usize;
    let mut root: Option<Node> = None;
    let mut spellings = Vec::new();
    let mut documents = 0usize;
    // Where the document being read starts (its `---`, or its first line).
    let mut document_at = Position::START;
    // Where the text between documents (or before the first) begins: its character index and line.
    let mut between = (0usize, 1usize);
    for item in Parser::new_from_str(text) {
        let (event, span) =
            item.map_err(|e| SyntaxError::new(Position::of(e.marker()), e.info()))?;
        let at = Position::of(&span.start);
        if open.is_empty()
            && matches!(
                event,
                Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::MappingStart(..)
                    | Event::Alias(_)
                    | Event::UnresolvedAlias(_)
            )
        {
            // A document's root. The parser gives an empty document (`---` and nothing after, as some
            // editors leave at a file's end) an empty `~` of its own making; kubectl and Argo CD skip such a
            // document, and so does this.
            let nothing = matches!(&event, Event::Scalar(_, ScalarStyle::Plain, 0, None))
                && span.start.index() == span.end.index();
            if nothing {
                continue;
            }
            documents += 1;
            if documents > 1 {
                return Err(SyntaxError::new(
                    document_at,
                    "A platform file holds one YAML document; remove the second `---` and what follows.",
                ));
            }
        }
        let finished = match event {
            Event::StreamStart | Event::DocumentEnd => {
                between = (span.end.index(), span.end.line().max(1));
                None
            }
            Event::DocumentStart(explicit, _) => {
                if explicit {
                    directive(text, between, span.start.index())?;
                }
                document_at = at;
                None
            }
            Event::Alias(id) => {
                let (node, size) = anchors.get(&id).cloned().ok_or_else(|| {
                    SyntaxError::new(at, "This alias names no anchor defined before it.")
                })?;
                aliased = aliased.saturating_add(size);
                if aliased > MAX_ALIASED_NODES {
                    return Err(SyntaxError::new(
                        at,
                        format!(
                            "Aliases here copy more than {MAX_ALIASED_NODES} values; write the values out instead (Kubernetes refuses such excessive aliasing)."
                        ),
                    ));
                }
                Some((node, size, None))
            }
            Event::UnresolvedAlias(name) => {
                return Err(SyntaxError::new(
                    at,
                    format!("The alias *{name} names no anchor defined before it."),
                ));
            }
            Event::Scalar(text, style, anchor, tag) => {
                let value = resolve_scalar(&text, style, tag.as_deref());
                let is_key = matches!(open.last(), Some(Open::Mapping { key: None, .. }));
                if !is_key
                    && style == ScalarStyle::Plain
                    && tag.is_none()
                    && let Some(spelling) = Spelling::of(at, &text, &value)
                {
                    spellings.push(spelling);
                }
                let node = Node { value, at };
                if anchor != 0 {
                    anchors.insert(anchor, (node.clone(), 1));
                }
                Some((node, 1, Some(text.into_owned())))
            }
            Event::SequenceStart(_, anchor, _) => {
                sizes.push(1);
                open.push(Open::Sequence {
                    at,
                    anchor,
                    items: Vec::new(),
                });
                None
            }
            Event::MappingStart(_, anchor, _) => {
                sizes.push(1);
                open.push(Open::Mapping {
                    at,
                    anchor,
                    entries: Vec::new(),
                    keys: Vec::new(),
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
                let size = sizes.pop().unwrap_or(1);
                if anchor != 0 {
                    anchors.insert(anchor, (node.clone(), size));
                }
                Some((node, size, None))
            }
            _ => None,
        };
        if let Some((node, size, raw)) = finished {
            if let Some(parent) = sizes.last_mut() {
                *parent = parent.saturating_add(size);
            }
            place(&mut open, &mut root, node, raw)?;
        }
    }
    Ok(Document { root, spellings })
}

/// Refuses a `%YAML` or `%TAG` directive in the text between documents, from character `between.0` (on line
/// `between.1`) to `end`. kubectl and Argo CD cut a file at its `---` lines and read each piece alone, so a
/// directive is a piece that is no document to them and the file does not apply; the API server itself
/// refuses any YAML version but 1.1.
fn directive(text: &str, between: (usize, usize), end: usize) -> Result<(), SyntaxError> {
    let gap: String = text
        .chars()
        .skip(between.0)
        .take(end.saturating_sub(between.0))
        .collect();
    for (i, line) in gap.split('\n').enumerate() {
        if line.starts_with('%') {
            let name = line.split_whitespace().next().unwrap_or(line);
            return Err(SyntaxError::new(
                Position {
                    line: u32::try_from(between.1 + i).unwrap_or(u32::MAX),
                    column: 1,
                },
                format!(
                    "Remove the `{name}` line: kubectl and Argo CD cannot read a file with a `%` directive (Kubernetes reads YAML 1.1, and the API server refuses a file that declares 1.2)."
                ),
            ));
        }
    }
    Ok(())
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
        Some(Open::Mapping {
            entries, keys, key, ..
        }) => {
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
            // Kubernetes turns the mapping into JSON, whose keys are text: a key that resolves to a boolean
            // or a number becomes its text (`yes` is "true", `0x10` is "16"), and one that resolves to null
            // has none (sigs.k8s.io/yaml refuses the file).
            let Some(json) = json_key(&node.value) else {
                return Err(SyntaxError::new(
                    node.at,
                    format!(
                        "`{name}` as a key is null to Kubernetes, which refuses it; quote it (\"{name}\") or name the key."
                    ),
                ));
            };
            if let Some((other, _)) = keys.iter().find(|(_, other)| *other == json) {
                let message = if *other == name {
                    format!("`{name}` appears twice in this mapping; keep one.")
                } else {
                    format!(
                        "`{name}` and `{other}` are the same key to Kubernetes (both read as {json:?}); keep one."
                    )
                };
                return Err(SyntaxError::new(node.at, message));
            }
            keys.push((name.clone(), json));
            *key = Some((name, node.at));
            Ok(())
        }
    }
}

/// The JSON key sigs.k8s.io/yaml makes of a mapping key that resolved to `value`; `None` for null, which it
/// refuses. A float is written as Go's `strconv.FormatFloat(f, 'g', -1, 32)` writes it.
fn json_key(value: &Value) -> Option<String> {
    Some(match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => go_float_key(*f),
        Value::Null | Value::Sequence(_) | Value::Mapping(_) => return None,
    })
}

/// Go's `FormatFloat(f, 'g', -1, 32)` with go-yaml's names for the non-finite: the shortest digits of the
/// float32, in exponent form (`1e+06`, `1.5e-05`) when the exponent is below -4 or above 5.
fn go_float_key(f: f64) -> String {
    let single = f as f32;
    if single.is_nan() {
        return ".nan".into();
    }
    if single.is_infinite() {
        return if single > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let scientific = format!("{single:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return single.to_string();
    };
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if single == 0.0 || (-4..6).contains(&exponent) {
        return single.to_string();
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// A scalar's value as Kubernetes reads it: quoted, block and `!!str`-tagged scalars are strings, plain ones
/// resolve by [`plain_scalar`].
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    if let Some(tag) = tag
        && tag.suffix() == "str"
    {
        return Value::String(text.to_string());
    }
    if style != ScalarStyle::Plain {
        return Value::String(text.to_string());
    }
    plain_scalar(text)
}

/// What a plain (unquoted) scalar is to Kubernetes: go-yaml v2's `resolve` (resolve.go, v2.4, which
/// sigs.k8s.io/yaml vendors as goyaml.v2), with Go's `strconv` under it.
///
/// - `~`, `null`, `Null`, `NULL` and nothing are null.
/// - `y`, `Y`, `yes`, `Yes`, `YES`, `on`, `On`, `ON`, `true`, `True`, `TRUE` are true; `n`, `N`, `no`, `No`,
///   `NO`, `off`, `Off`, `OFF`, `false`, `False`, `FALSE` false. Other cases (`yES`) are text.
/// - `.inf`, `+.inf`, `-.inf`, `.nan`, each also as `.Inf`/`.INF`, `.NaN`/`.NAN`, are floats.
/// - A scalar starting with a digit, `+` or `-` has its `_`s removed, then is an integer if Go's
///   `ParseInt(s, 0, 64)` reads it: decimal, `0x`/`0X` hex, `0o`/`0O` or leading-`0` octal (`017` is 15),
///   `0b`/`0B` binary, signed or not. Beyond an i64 it may still be a u64 integer; this keeps it as a float.
///   Else it is a float if it matches `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` and does not
///   overflow (`08` is the float 8, `1e3` the float 1000, `8e40213` text). Last, `0b` followed by a signed
///   binary number (`0b-101`) is an integer too.
/// - A scalar starting with `.` is a float if Go's `ParseFloat` reads it whole (`.5`, `.5e3`, `.5_5`; `_`
///   only between digits) and it does not overflow.
/// - Anything else is text, timestamps included (go-yaml v2 hands `2024-01-01` to JSON as written).
///
/// A whole float that fits an i64 is then an integer, as the API server reads it (see [`json_number`]). A
/// real kube-apiserver agreed with every case of this module's tests (as a Release's `spec.version`, its
/// dry-run verdict naming the type it read).
pub fn plain_scalar(text: &str) -> Value {
    let value = match text {
        "" | "~" | "null" | "Null" | "NULL" => Some(Value::Null),
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            Some(Value::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            Some(Value::Bool(false))
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Some(Value::Float(f64::INFINITY)),
        "-.inf" | "-.Inf" | "-.INF" => Some(Value::Float(f64::NEG_INFINITY)),
        ".nan" | ".NaN" | ".NAN" => Some(Value::Float(f64::NAN)),
        _ => match text.as_bytes().first() {
            Some(b'.') => dot_float(text).map(Value::Float),
            Some(b'0'..=b'9' | b'+' | b'-') => number(text),
            _ => None,
        },
    };
    match value {
        Some(Value::Float(float)) => json_number(float),
        Some(value) => value,
        None => Value::String(text.to_string()),
    }
}

/// The number a float is once the API server has it: sigs.k8s.io/yaml hands the object on as JSON, where
/// Go writes a whole float in its shortest digits without a fraction (`1e3` as `1000`, below 1e21) and the
/// server reads that back as an integer when it fits an int64. So `1e3`, `1.` and `08` are integers to the
/// CRD's schema, `1.5` and `1e20` numbers. (-2^63 is written `-9223372036854776000`, which does not fit.)
fn json_number(float: f64) -> Value {
    const TWO_TO_THE_63: f64 = 9_223_372_036_854_775_808.0;
    if float.fract() == 0.0 && float > -TWO_TO_THE_63 && float < TWO_TO_THE_63 {
        Value::Integer(float as i64)
    } else {
        Value::Float(float)
    }
}

/// go-yaml v2's reading of a plain scalar that starts with a digit or a sign: an integer, a float, or not a
/// number (`None`).
fn number(text: &str) -> Option<Value> {
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    if let Some(integer) = go_parse_int(&plain, None) {
        return Some(Value::Integer(integer));
    }
    if let Some(unsigned) = go_parse_uint(&plain, None) {
        // Above i64::MAX: an integer to Kubernetes too, which `Value` has no room for.
        return Some(Value::Float(unsigned as f64));
    }
    if is_float(&plain)
        && let Some(float) = finite(&plain)
    {
        return Some(Value::Float(float));
    }
    // resolve.go's own binary branch, after `ParseInt(s, 0, 64)` already read `0b101` and `-0b101`: what is
    // left is a sign after the prefix, which `ParseInt(s[2:], 2, 64)` allows.
    if let Some(bits) = plain.strip_prefix("0b") {
        if let Some(integer) = go_parse_int(bits, Some(2)) {
            return Some(Value::Integer(integer));
        }
        if let Some(unsigned) = go_parse_uint(bits, Some(2)) {
            return Some(Value::Float(unsigned as f64));
        }
    }
    None
}

/// Go's `strconv.ParseInt(s, base, 64)`, `base` `None` meaning 0 (the prefix decides). No `_`s: go-yaml
/// removed them before.
fn go_parse_int(s: &str, base: Option<u32>) -> Option<i64> {
    let (negative, magnitude) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = i128::from(go_parse_uint(magnitude, base)?);
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// Go's `strconv.ParseUint(s, base, 64)`, `base` `None` meaning 0: `0b`/`0B` binary, `0o`/`0O` octal and
/// `0x`/`0X` hex when digits follow, a leading `0` octal, decimal otherwise. No sign.
fn go_parse_uint(s: &str, base: Option<u32>) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (radix, digits) = match (base, s.as_bytes()) {
        (Some(radix), _) => (radix, s),
        (None, [b'0', b'b' | b'B', _, ..]) => (2, &s[2..]),
        (None, [b'0', b'o' | b'O', _, ..]) => (8, &s[2..]),
        (None, [b'0', b'x' | b'X', _, ..]) => (16, &s[2..]),
        (None, [b'0', ..]) => (8, &s[1..]),
        (None, _) => (10, s),
    };
    if digits.is_empty() {
        // `0` alone: octal with no digits after the `0`.
        return Some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseFloat(s, 64)` of a scalar that starts with `.`: `.` and digits, an optional exponent,
/// `_` allowed only between two digits; `None` if it is not one or overflows.
fn dot_float(text: &str) -> Option<f64> {
    let mut previous = '^';
    for c in text.chars() {
        if c == '_' && !previous.is_ascii_digit() {
            return None;
        }
        if previous == '_' && !c.is_ascii_digit() {
            return None;
        }
        previous = c;
    }
    if previous == '_' {
        return None;
    }
    let plain: String = text.chars().filter(|&c| c != '_').collect();
    if !is_float(&plain) {
        return None;
    }
    finite(&plain)
}

/// The float `text` holds, unless it overflows: Go's `ParseFloat` then fails, and go-yaml keeps the text.
fn finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`: go-yaml v2's `yamlStyleFloat`, the form a float
/// must have (the same as YAML 1.2's core schema).
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
    fn scalars_resolve_as_kubernetes_reads_them() {
        let doc = root(
            "a: 3\nb: '3'\nc: true\nd: ~\ne: 1.5\nf: 3f2a9c1\ng: !!str 12\nh: 0x1f\ni: 1e3\nj: yes\nk: .inf\nl: \"no\"\nm: |\n  no\n",
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
        assert_eq!(value("i"), Value::Integer(1000));
        // YAML 1.1's boolean, as sigs.k8s.io/yaml (go-yaml v2) reads it for the API server, kubectl and Argo
        // CD: `autoDeploy: yes` is true to the cluster, and `environment: no` is not the text "no".
        assert_eq!(value("j"), Value::Bool(true));
        assert_eq!(value("k"), Value::Float(f64::INFINITY));
        // Quoted and block scalars are text, whatever they spell.
        assert_eq!(value("l"), Value::String("no".into()));
        assert_eq!(value("m"), Value::String("no\n".into()));
    }

    #[test]
    fn booleans_and_nulls_are_yaml_1_1s() {
        for yes in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
        ] {
            assert_eq!(plain_scalar(yes), Value::Bool(true), "{yes}");
        }
        for no in [
            "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ] {
            assert_eq!(plain_scalar(no), Value::Bool(false), "{no}");
        }
        for null in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(plain_scalar(null), Value::Null, "{null:?}");
        }
        // Only those spellings: go-yaml looks them up whole.
        for text in [
            "yES", "oN", "nO", "tRUE", "nULL", "yes!", "Norway", "none", "nil",
        ] {
            assert_eq!(plain_scalar(text), Value::String(text.into()), "{text}");
        }
    }

    #[test]
    fn integers_are_gos_parse_int_after_the_underscores_go() {
        for (text, integer) in [
            ("0", 0),
            ("-0", 0),
            ("+12", 12),
            ("-12", -12),
            ("4081275", 4_081_275),
            ("1_000", 1000),
            ("1__0_", 10),
            ("0x1f", 31),
            ("0X1F", 31),
            ("-0x10", -16),
            ("0o17", 15),
            ("0O17", 15),
            ("017", 15),
            ("0004", 4),
            ("0012", 10),
            ("-017", -15),
            ("0b1010", 10),
            ("0B11", 3),
            ("-0b11", -3),
            ("0b10_10", 10),
            ("0b-101", -5),
            ("0b+101", 5),
            ("9223372036854775807", i64::MAX),
            ("-9223372036854775808", i64::MIN),
        ] {
            assert_eq!(plain_scalar(text), Value::Integer(integer), "{text}");
        }
    }

    #[test]
    fn floats_are_gos_and_an_overflow_stays_text() {
        for (text, float) in [
            ("1.5", 1.5),
            ("+.5", 0.5),
            ("1_000.5", 1000.5),
            ("09.5", 9.5),
            (".5", 0.5),
            (".5_5", 0.55),
            // Above i64::MAX: a u64 to go-yaml, and past that a float; either way a number, not an integer,
            // once JSON has carried it to the server.
            ("9223372036854775808", 9_223_372_036_854_775_808_f64),
            ("-9223372036854775809", -9_223_372_036_854_775_808_f64),
            ("18446744073709551615", 18_446_744_073_709_551_615_f64),
            ("99999999999999999999", 1e20),
        ] {
            assert_eq!(plain_scalar(text), Value::Float(float), "{text}");
        }
        // A whole float is an integer by the time the server checks it (JSON writes `1e3` as 1000).
        for (text, integer) in [
            ("1.", 1),
            ("-.5e2", -50),
            ("1e3", 1000),
            ("1E+3", 1000),
            ("+1e3", 1000),
            (".5e3", 500),
            ("0.5e1_0", 5_000_000_000),
            // A leading 0 makes it octal; an 8 or a 9 makes it no octal, and then it is a decimal float.
            ("08", 8),
            ("0089", 89),
            ("1e-400", 0),
            ("0e0", 0),
        ] {
            assert_eq!(plain_scalar(text), Value::Integer(integer), "{text}");
        }
        assert_eq!(plain_scalar("-.inf"), Value::Float(f64::NEG_INFINITY));
        assert_eq!(plain_scalar("+.INF"), Value::Float(f64::INFINITY));
        assert!(matches!(plain_scalar(".NaN"), Value::Float(f) if f.is_nan()));
        // `ParseFloat` overflows, so go-yaml keeps the text: a commit id, not infinity.
        for text in [
            "8e40213",
            "1e400",
            ".1e999",
            "3f2a9c1",
            "1.4.0",
            "0x",
            "0b",
            "0b2",
            "0o8",
            "0xg",
            "._5",
            ".5_",
            ".5__5",
            ".",
            "-",
            "+",
            "e3",
            "-.nan",
            "-inf",
            "1:30",
            "2024-01-01",
            "2024-01-01T10:00:00Z",
            "12abc",
            "0x1FFFFFFFFFFFFFFFFF",
        ] {
            assert_eq!(plain_scalar(text), Value::String(text.into()), "{text}");
        }
    }

    #[test]
    fn an_empty_document_is_no_document() {
        let trailing = parse("a: 1\n---\n")
            .expect("a trailing `---`")
            .expect("a root");
        assert_eq!(trailing.get("a").expect("a").value, Value::Integer(1));
        assert!(parse("a: 1\n---").expect("without a newline").is_some());
        assert!(
            parse("a: 1\n---\n# nothing more\n")
                .expect("a comment")
                .is_some()
        );
        assert!(parse("a: 1\n...\n---\n").expect("after `...`").is_some());
        let leading = parse("---\n---\na: 1\n").expect("an empty first document");
        assert_eq!(leading.expect("a root").at.line, 3);
        assert_eq!(parse("---\n").expect("only `---`"), None);
        // A document that says null is one.
        assert_eq!(
            parse("--- ~\n").expect("null"),
            Some(Node {
                value: Value::Null,
                at: Position { line: 1, column: 5 }
            })
        );
        let err = parse("a: 1\n--- ~\n").expect_err("a null second document");
        assert_eq!(err.at.line, 2);
        let err =
            parse("a: 1\n---\n---\nb: 2\n").expect_err("a second document after an empty one");
        assert_eq!(err.at.line, 3);
    }

    #[test]
    fn directives_are_refused_as_kubectl_and_argo_cd_cannot_read_them() {
        for text in [
            "%YAML 1.2\n---\na: 1\n",
            "%YAML 1.1\n---\na: 1\n",
            "# a platform file\n%TAG !e! tag:example.com,2000:\n---\na: 1\n",
        ] {
            let err = parse(text).expect_err(text);
            assert_eq!(
                err.at,
                Position {
                    line: text
                        .lines()
                        .position(|l| l.starts_with('%'))
                        .map_or(0, |i| i as u32 + 1),
                    column: 1
                },
                "{text}"
            );
            assert!(err.message.contains("directive"), "{}", err.message);
        }
        let err = parse("a: 1\n...\n%YAML 1.2\n---\nb: 2\n").expect_err("before a second document");
        assert_eq!(err.at.line, 3);
        // A `%` in a value is text.
        let doc = root("a: \"%x\"\nb: |\n  %YAML 1.2\n");
        assert_eq!(
            doc.get("b").expect("b").value,
            Value::String("%YAML 1.2\n".into())
        );
    }

    #[test]
    fn keys_are_the_json_keys_kubernetes_makes() {
        let err = parse("yes: 1\ntrue: 2\n").expect_err("both true");
        assert_eq!(err.at.line, 2);
        assert!(
            err.message.contains("`true` and `yes` are the same key"),
            "{}",
            err.message
        );
        assert!(parse("0x10: a\n16: b\n").is_err());
        assert!(parse("1: a\n'1': b\n").is_err());
        assert!(parse("1.0: a\n1: b\n").is_err());
        let err = parse("~: a\n").expect_err("a null key");
        assert!(
            err.message.contains("null to Kubernetes"),
            "{}",
            err.message
        );
        assert!(parse("? \n: a\n").is_err(), "an empty key");
        // Keys keep their spelling: diagnostics name what was written.
        let doc = root("on: 1\n'null': 2\n");
        assert_eq!(doc.entry("on").expect("on").key_at.line, 1);
        assert!(doc.entry("null").is_some());
    }

    #[test]
    fn float_keys_are_written_as_go_writes_them() {
        for (float, key) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (123_456.0, "123456"),
            (1e6, "1e+06"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (0.0, "0"),
            (f64::INFINITY, ".inf"),
            (f64::NAN, ".nan"),
        ] {
            assert_eq!(go_float_key(float), key, "{float}");
        }
    }

    #[test]
    fn spellings_are_kept_for_the_values_kubernetes_reads_otherwise() {
        let document = read(
            "a: no\nb: false\nc: 0012\nd: '0012'\ne: [on, 7]\nno: x\nf: 1e3\ng: 4081275\nh: !!str off\n",
        )
        .expect("parses");
        let spelled: Vec<(u32, &str, String)> = document
            .spellings
            .iter()
            .map(|s| (s.at.line, s.written.as_str(), s.spelled()))
            .collect();
        assert_eq!(
            spelled,
            [
                (
                    1,
                    "no",
                    "`no`, which Kubernetes reads as the boolean false".to_string()
                ),
                (
                    3,
                    "0012",
                    "`0012`, which Kubernetes reads as the number 10".to_string()
                ),
                (
                    5,
                    "on",
                    "`on`, which Kubernetes reads as the boolean true".to_string()
                ),
                (
                    7,
                    "1e3",
                    "`1e3`, which Kubernetes reads as the number 1000".to_string()
                ),
            ]
        );
        assert_eq!(document.spellings[0].plainly(), "the boolean false");
        assert_eq!(document.spellings[0].at, Position { line: 1, column: 4 });
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
