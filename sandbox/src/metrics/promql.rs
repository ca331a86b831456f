//! A PromQL subset, evaluated straight from the generator: enough for request rates, latency quantiles,
//! CPU, memory and restarts of the sandbox's services.
//!
//! Supported: vector selectors with `=`, `!=`, `=~`, `!~` matchers; range selectors inside `rate`
//! and `increase`; `sum`/`avg`/`min`/`max`/`count` with `by (…)` or `without (…)` on either side;
//! `histogram_quantile(φ, …)`; number literals (`Inf` and `NaN` included); unary `-`/`+`; and the
//! arithmetic operators `*`, `/`, `+`, `-` with Prometheus' precedence (`*` and `/` bind tighter than
//! `+` and `-`, all left-associative) and parentheses.
//!
//! Arithmetic follows Prometheus: between two numbers it gives a number; between a vector and a number
//! it applies to every sample; between two vectors it matches samples one-to-one on their labels
//! without `__name__` (what Prometheus does without `on`/`ignoring`), drops samples without a partner,
//! and fails when one side has two samples with the same labels. Results lose `__name__`. Division by
//! zero gives `NaN`, `+Inf` or `-Inf` as IEEE 754 (and Go) have it. `%`, `^`, comparisons, set
//! operators and the `on`/`ignoring`/`group_left`/`group_right`/`bool` modifiers are not supported.
//!
//! Anything else is a parse error naming what is not supported, so a query beyond the subset fails
//! loudly rather than returning nothing.

use std::collections::BTreeMap;

use super::series::{Generator, Series};

/// A parse or evaluation failure, worded like Prometheus' errors: the API answers a parse (or type) error
/// as `bad_data`, an evaluation error as `execution`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

type Result<T> = std::result::Result<T, QueryError>;

fn fail<T>(message: impl Into<String>) -> Result<T> {
    Err(QueryError(message.into()))
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number literal.
    Number(f64),
    /// `-expr`: every value negated (`__name__` dropped).
    Negate(Box<Expr>),
    /// `lhs op rhs` for an arithmetic operator.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        lhs: Box<Expr>,
        /// The right operand.
        rhs: Box<Expr>,
    },
    /// `name{matchers}` or `name{matchers}[range]`.
    Selector {
        /// The matchers, the metric name included as `__name__`.
        matchers: Vec<Matcher>,
        /// The range in seconds, for range selectors.
        range: Option<f64>,
    },
    /// `rate(…)` or `increase(…)` of a range selector.
    Rate {
        /// `increase` rather than `rate`.
        increase: bool,
        /// The range selector.
        selector: Box<Expr>,
    },
    /// `histogram_quantile(φ, …)`.
    Quantile {
        /// φ.
        phi: Box<Expr>,
        /// The buckets.
        expr: Box<Expr>,
    },
    /// An aggregation.
    Aggregate {
        /// `sum`, `avg`, `min`, `max` or `count`.
        op: Aggregation,
        /// The grouping labels.
        grouping: Vec<String>,
        /// `without` rather than `by`.
        without: bool,
        /// What is aggregated.
        expr: Box<Expr>,
    },
}

/// The aggregation operators supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// `sum`.
    Sum,
    /// `avg`.
    Avg,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `count`.
    Count,
}

/// The arithmetic operators supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
}

impl BinaryOp {
    /// `lhs op rhs` in IEEE 754 arithmetic, as Go (and so Prometheus) computes it.
    pub fn apply(self, lhs: f64, rhs: f64) -> f64 {
        match self {
            Self::Add => lhs + rhs,
            Self::Sub => lhs - rhs,
            Self::Mul => lhs * rhs,
            Self::Div => lhs / rhs,
        }
    }

    fn from_punct(punct: &str) -> Option<Self> {
        match punct {
            "+" => Some(Self::Add),
            "-" => Some(Self::Sub),
            "*" => Some(Self::Mul),
            "/" => Some(Self::Div),
            _ => None,
        }
    }

    /// Binding power: `*` and `/` bind tighter than `+` and `-`.
    fn precedence(self) -> u8 {
        match self {
            Self::Add | Self::Sub => 1,
            Self::Mul | Self::Div => 2,
        }
    }
}

/// A label matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    /// The label name.
    pub label: String,
    /// The operator.
    pub op: MatchOp,
    /// The value (a regex for `=~`/`!~`).
    pub value: String,
    regex: Option<regex::Regex>,
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && self.op == other.op && self.value == other.value
    }
}

/// A matcher's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOp {
    /// `=`.
    Equal,
    /// `!=`.
    NotEqual,
    /// `=~`.
    Regex,
    /// `!~`.
    NotRegex,
}

impl Matcher {
    fn new(label: String, op: MatchOp, value: String) -> Result<Self> {
        let regex = match op {
            MatchOp::Regex | MatchOp::NotRegex => Some(
                // Prometheus anchors label regexes at both ends.
                regex::Regex::new(&format!("^(?:{value})$")).map_err(|e| {
                    QueryError(format!(
                        "parse error: invalid regular expression {value:?}: {e}"
                    ))
                })?,
            ),
            _ => None,
        };
        Ok(Self {
            label,
            op,
            value,
            regex,
        })
    }

    fn matches(&self, value: Option<&str>) -> bool {
        let value = value.unwrap_or("");
        match (self.op, &self.regex) {
            (MatchOp::Equal, _) => value == self.value,
            (MatchOp::NotEqual, _) => value != self.value,
            (MatchOp::Regex, Some(re)) => re.is_match(value),
            (MatchOp::NotRegex, Some(re)) => !re.is_match(value),
            _ => false,
        }
    }
}

// ---- lexer ----

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Number(f64),
    Duration(f64),
    Punct(&'static str),
}

fn lex(input: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() {
                let d = chars[i];
                // The sign of an exponent (`1e-3`) belongs to the number, not to an operator.
                let exponent_sign = (d == '+' || d == '-')
                    && i > start
                    && matches!(chars[i - 1], 'e' | 'E')
                    && chars[start..i - 1]
                        .iter()
                        .all(|c| c.is_ascii_digit() || *c == '.');
                if d.is_ascii_alphanumeric() || d == '.' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let text: String = chars[start..i].iter().collect();
            match text.parse::<f64>() {
                Ok(n) => tokens.push(Token::Number(n)),
                Err(_) => tokens.push(Token::Duration(duration(&text)?)),
            }
        } else if c == '"' || c == '\'' || c == '`' {
            let mut value = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return fail("parse error: unterminated quoted string"),
                    Some(&q) if q == c => break,
                    Some('\\') if c != '`' => {
                        let escaped = chars.get(i + 1).copied().unwrap_or('\\');
                        value.push(match escaped {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                        i += 2;
                        continue;
                    }
                    Some(&other) => value.push(other),
                }
                i += 1;
            }
            i += 1;
            tokens.push(Token::Str(value));
        } else {
            let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let punct = match two.as_str() {
                "!=" => Some("!="),
                "=~" => Some("=~"),
                "!~" => Some("!~"),
                "==" | ">=" | "<=" => {
                    return fail(format!(
                        "parse error: comparison operator {two:?} is not supported by the sandbox's PromQL subset"
                    ));
                }
                _ => None,
            };
            if let Some(p) = punct {
                tokens.push(Token::Punct(p));
                i += 2;
                continue;
            }
            let p = match c {
                '(' => "(",
                ')' => ")",
                '{' => "{",
                '}' => "}",
                '[' => "[",
                ']' => "]",
                ',' => ",",
                '=' => "=",
                '+' => "+",
                '-' => "-",
                '*' => "*",
                '/' => "/",
                '%' | '^' | '>' | '<' => {
                    return fail(format!(
                        "parse error: binary operator \"{c}\" is not supported by the sandbox's PromQL subset"
                    ));
                }
                other => {
                    return fail(format!("parse error: unexpected character: {other:?}"));
                }
            };
            tokens.push(Token::Punct(p));
            i += 1;
        }
    }
    Ok(tokens)
}

/// Parses a PromQL duration like `5m`, `1h30m`, `90s`, `500ms` into seconds.
pub fn duration(text: &str) -> Result<f64> {
    let bad = || QueryError(format!("parse error: bad duration {text:?}"));
    let mut total = 0.0;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "w" => 604_800.0,
            "y" => 31_536_000.0,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

// ---- parser ----

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

/// Parses an expression of the subset.
pub fn parse(query: &str) -> Result<Expr> {
    let tokens = lex(query)?;
    if tokens.is_empty() {
        return fail("parse error: no expression found in input");
    }
    let mut parser = Parser { tokens, pos: 0 };
    let expr = parser.expr()?;
    if let Some(token) = parser.peek() {
        return fail(format!(
            "parse error: unexpected {} after a complete expression",
            describe(token)
        ));
    }
    type_of(&expr)?;
    Ok(expr)
}

/// What an expression evaluates to, as Prometheus' parser types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Scalar,
    InstantVector,
    RangeVector,
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Self::Scalar => "scalar",
            Self::InstantVector => "instant vector",
            Self::RangeVector => "range vector",
        }
    }
}

/// Types `expr` as Prometheus does while parsing, so a misplaced range vector or scalar is a parse error
/// (`bad_data`, 400) and whatever fails during evaluation is an execution error (422).
fn type_of(expr: &Expr) -> Result<Type> {
    let expect = |want: Type, got: Type, context: &str| {
        if want == got {
            Ok(())
        } else {
            fail(format!(
                "parse error: expected type {} in {context}, got {}",
                want.name(),
                got.name()
            ))
        }
    };
    match expr {
        Expr::Number(_) => Ok(Type::Scalar),
        Expr::Negate(inner) => match type_of(inner)? {
            Type::RangeVector => fail(
                "parse error: unary expression only allowed on expressions of type scalar or instant vector, got \"range vector\"",
            ),
            other => Ok(other),
        },
        Expr::Binary { lhs, rhs, .. } => match (type_of(lhs)?, type_of(rhs)?) {
            (Type::Scalar, Type::Scalar) => Ok(Type::Scalar),
            (Type::RangeVector, _) | (_, Type::RangeVector) => fail(
                "parse error: binary expression must contain only scalar and instant vector types",
            ),
            _ => Ok(Type::InstantVector),
        },
        Expr::Selector { range: Some(_), .. } => Ok(Type::RangeVector),
        Expr::Selector { range: None, .. } | Expr::Rate { .. } => Ok(Type::InstantVector),
        Expr::Quantile { phi, expr } => {
            let context = "call to function \"histogram_quantile\"";
            expect(Type::Scalar, type_of(phi)?, context)?;
            expect(Type::InstantVector, type_of(expr)?, context)?;
            Ok(Type::InstantVector)
        }
        Expr::Aggregate { expr, .. } => {
            expect(
                Type::InstantVector,
                type_of(expr)?,
                "aggregation expression",
            )?;
            Ok(Type::InstantVector)
        }
    }
}

/// A series' labels and its raw `(time, value)` samples.
pub type RawSeries = (Labels, Vec<(f64, f64)>);

/// The raw samples of a range selector over `(t - range, t]`, one every `interval` seconds on multiples of
/// it (where a scraper would have taken them), for an instant query of a bare range selector, which
/// Prometheus answers with a matrix. `None` when `expr` is not a range selector.
pub fn range_samples(
    expr: &Expr,
    generator: &Generator,
    t: f64,
    interval: f64,
) -> Option<Vec<RawSeries>> {
    let Expr::Selector {
        matchers,
        range: Some(range),
    } = expr
    else {
        return None;
    };
    let first = ((t - range) / interval).floor() * interval + interval;
    let times: Vec<f64> = (0..)
        .map(|k: u32| first + f64::from(k) * interval)
        .take_while(|at| *at <= t)
        .filter(|at| *at >= generator.origin())
        .collect();
    Some(
        select(matchers, generator)
            .map(|(labels, series)| {
                let samples = times
                    .iter()
                    .map(|at| (*at, generator.sample(series, *at)))
                    .collect();
                (labels, samples)
            })
            .filter(|(_, samples): &RawSeries| !samples.is_empty())
            .collect(),
    )
}

fn describe(token: &Token) -> String {
    match token {
        Token::Ident(s) => format!("identifier {s:?}"),
        Token::Str(s) => format!("string {s:?}"),
        Token::Number(n) => format!("number {n}"),
        Token::Duration(d) => format!("duration {d}s"),
        Token::Punct(p) => format!("\"{p}\""),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        token
    }

    fn eat(&mut self, punct: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(p)) if *p == punct) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, punct: &str) -> Result<()> {
        if self.eat(punct) {
            Ok(())
        } else {
            let found = self
                .peek()
                .map(describe)
                .unwrap_or_else(|| "end of input".into());
            fail(format!("parse error: expected \"{punct}\", found {found}"))
        }
    }

    /// A whole expression: operands joined by arithmetic operators.
    fn expr(&mut self) -> Result<Expr> {
        self.binary(0)
    }

    /// Precedence climbing: operands and operators binding tighter than `min`, left-associative.
    fn binary(&mut self, min: u8) -> Result<Expr> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.operator()? {
            if op.precedence() <= min {
                break;
            }
            self.pos += 1;
            self.unsupported_modifier()?;
            let rhs = self.binary(op.precedence())?;
            lhs = binary(op, lhs, rhs)?;
        }
        Ok(lhs)
    }

    /// The arithmetic operator at the cursor, if any; an operator outside the subset is an error.
    fn operator(&self) -> Result<Option<BinaryOp>> {
        match self.peek() {
            Some(Token::Punct(p)) => {
                if *p == "!=" {
                    return fail(
                        "parse error: comparison operator \"!=\" is not supported by the sandbox's PromQL subset",
                    );
                }
                Ok(BinaryOp::from_punct(p))
            }
            Some(Token::Ident(word)) if matches!(word.as_str(), "and" | "or" | "unless") => {
                fail(format!(
                    "parse error: set operator \"{word}\" is not supported by the sandbox's PromQL subset"
                ))
            }
            _ => Ok(None),
        }
    }

    /// Fails on the vector-matching modifiers after an operator, which the subset does not have.
    fn unsupported_modifier(&self) -> Result<()> {
        match self.peek() {
            Some(Token::Ident(word))
                if matches!(
                    word.as_str(),
                    "on" | "ignoring" | "group_left" | "group_right" | "bool"
                ) =>
            {
                fail(format!(
                    "parse error: \"{word}\" is not supported by the sandbox's PromQL subset"
                ))
            }
            _ => Ok(()),
        }
    }

    /// `-x`, `+x` or an operand. A sign binds tighter than every operator of the subset.
    fn unary(&mut self) -> Result<Expr> {
        if self.eat("-") {
            return Ok(match self.unary()? {
                Expr::Number(n) => Expr::Number(-n),
                expr => {
                    check_operand(&expr)?;
                    Expr::Negate(Box::new(expr))
                }
            });
        }
        if self.eat("+") {
            let expr = self.unary()?;
            check_operand(&expr)?;
            return Ok(expr);
        }
        self.primary()
    }

    /// A literal, a parenthesised expression, a selector, a function call or an aggregation.
    fn primary(&mut self) -> Result<Expr> {
        match self.next() {
            Some(Token::Number(n)) => Ok(Expr::Number(n)),
            Some(Token::Punct("(")) => {
                let inner = self.expr()?;
                self.expect(")")?;
                Ok(inner)
            }
            Some(Token::Punct("{")) => {
                self.pos -= 1;
                self.selector(None)
            }
            Some(Token::Ident(name)) => match name.as_str() {
                _ if name.eq_ignore_ascii_case("inf") => Ok(Expr::Number(f64::INFINITY)),
                _ if name.eq_ignore_ascii_case("nan") => Ok(Expr::Number(f64::NAN)),
                "sum" | "avg" | "min" | "max" | "count" => self.aggregate(&name),
                "rate" | "increase" => {
                    self.expect("(")?;
                    let selector = self.expr()?;
                    self.expect(")")?;
                    match selector {
                        Expr::Selector { range: Some(_), .. } => Ok(Expr::Rate {
                            increase: name == "increase",
                            selector: Box::new(selector),
                        }),
                        _ => fail(format!(
                            "parse error: expected type range vector in call to function \"{name}\", got instant vector"
                        )),
                    }
                }
                "histogram_quantile" => {
                    self.expect("(")?;
                    let phi = self.expr()?;
                    self.expect(",")?;
                    let expr = self.expr()?;
                    self.expect(")")?;
                    Ok(Expr::Quantile {
                        phi: Box::new(phi),
                        expr: Box::new(expr),
                    })
                }
                _ if self.peek() == Some(&Token::Punct("(")) => fail(format!(
                    "parse error: function or aggregation \"{name}\" is not supported by the sandbox's PromQL subset"
                )),
                "by" | "without" | "offset" | "bool" | "on" | "ignoring" => fail(format!(
                    "parse error: \"{name}\" is not supported here by the sandbox's PromQL subset"
                )),
                _ => self.selector(Some(name)),
            },
            Some(other) => fail(format!("parse error: unexpected {}", describe(&other))),
            None => fail("parse error: unexpected end of input"),
        }
    }

    fn selector(&mut self, name: Option<String>) -> Result<Expr> {
        let mut matchers = Vec::new();
        if let Some(name) = name {
            matchers.push(Matcher::new("__name__".into(), MatchOp::Equal, name)?);
        }
        if self.eat("{") {
            while !self.eat("}") {
                let label = match self.next() {
                    Some(Token::Ident(label)) => label,
                    other => {
                        let found = other
                            .as_ref()
                            .map(describe)
                            .unwrap_or_else(|| "end of input".into());
                        return fail(format!("parse error: expected a label name, found {found}"));
                    }
                };
                let op = match self.next() {
                    Some(Token::Punct("=")) => MatchOp::Equal,
                    Some(Token::Punct("!=")) => MatchOp::NotEqual,
                    Some(Token::Punct("=~")) => MatchOp::Regex,
                    Some(Token::Punct("!~")) => MatchOp::NotRegex,
                    _ => return fail("parse error: expected a label matching operator"),
                };
                let value = match self.next() {
                    Some(Token::Str(value)) => value,
                    _ => return fail("parse error: expected a quoted label value"),
                };
                matchers.push(Matcher::new(label, op, value)?);
                if !self.eat(",") {
                    self.expect("}")?;
                    break;
                }
            }
        }
        if matchers.is_empty() {
            return fail(
                "parse error: vector selector must contain at least one non-empty matcher",
            );
        }
        let range = if self.eat("[") {
            let range = match self.next() {
                Some(Token::Duration(d)) => d,
                Some(Token::Number(n)) => n,
                _ => return fail("parse error: expected a duration in a range selector"),
            };
            self.expect("]")?;
            Some(range)
        } else {
            None
        };
        if matches!(self.peek(), Some(Token::Ident(word)) if word == "offset") {
            return fail("parse error: \"offset\" is not supported by the sandbox's PromQL subset");
        }
        Ok(Expr::Selector { matchers, range })
    }

    fn grouping(&mut self) -> Result<Vec<String>> {
        self.expect("(")?;
        let mut labels = Vec::new();
        while !self.eat(")") {
            match self.next() {
                Some(Token::Ident(label)) => labels.push(label),
                _ => return fail("parse error: expected a label name in grouping"),
            }
            if !self.eat(",") {
                self.expect(")")?;
                break;
            }
        }
        Ok(labels)
    }

    fn modifier(&mut self) -> Result<Option<(Vec<String>, bool)>> {
        match self.peek() {
            Some(Token::Ident(word)) if word == "by" || word == "without" => {
                let without = word == "without";
                self.pos += 1;
                Ok(Some((self.grouping()?, without)))
            }
            _ => Ok(None),
        }
    }

    fn aggregate(&mut self, name: &str) -> Result<Expr> {
        let op = match name {
            "sum" => Aggregation::Sum,
            "avg" => Aggregation::Avg,
            "min" => Aggregation::Min,
            "max" => Aggregation::Max,
            _ => Aggregation::Count,
        };
        let before = self.modifier()?;
        self.expect("(")?;
        let expr = self.expr()?;
        self.expect(")")?;
        let after = self.modifier()?;
        let (grouping, without) = before.or(after).unwrap_or_default();
        Ok(Expr::Aggregate {
            op,
            grouping,
            without,
            expr: Box::new(expr),
        })
    }
}

/// Prometheus refuses range vectors as operands: only numbers and instant vectors combine.
fn check_operand(expr: &Expr) -> Result<()> {
    if matches!(expr, Expr::Selector { range: Some(_), .. }) {
        return fail(
            "parse error: binary expression must contain only scalar and instant vector types",
        );
    }
    Ok(())
}

/// `lhs op rhs`, once both operands are known to be numbers or instant vectors.
fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Result<Expr> {
    check_operand(&lhs)?;
    check_operand(&rhs)?;
    Ok(Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    })
}

// ---- evaluation ----

/// Labels of one result series, `__name__` included while it survives.
pub type Labels = BTreeMap<String, String>;

/// What an expression evaluates to at one instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A number.
    Scalar(f64),
    /// Series and their values.
    Vector(Vec<(Labels, f64)>),
}

/// Evaluates `expr` at Unix time `t`.
pub fn evaluate(expr: &Expr, generator: &Generator, t: f64) -> Result<Value> {
    match expr {
        Expr::Number(n) => Ok(Value::Scalar(*n)),
        Expr::Negate(inner) => Ok(match evaluate(inner, generator, t)? {
            Value::Scalar(v) => Value::Scalar(-v),
            Value::Vector(samples) => Value::Vector(
                samples
                    .into_iter()
                    .map(|(mut labels, v)| {
                        labels.remove("__name__");
                        (labels, -v)
                    })
                    .collect(),
            ),
        }),
        Expr::Binary { op, lhs, rhs } => {
            let lhs = evaluate(lhs, generator, t)?;
            let rhs = evaluate(rhs, generator, t)?;
            arithmetic(*op, lhs, rhs)
        }
        Expr::Selector { range: Some(_), .. } => fail(
            "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector",
        ),
        Expr::Selector {
            matchers,
            range: None,
        } => Ok(Value::Vector(
            select(matchers, generator)
                .map(|(labels, series)| (labels, generator.sample(series, t)))
                .collect(),
        )),
        Expr::Rate { increase, selector } => {
            let Expr::Selector {
                matchers,
                range: Some(range),
            } = selector.as_ref()
            else {
                return fail("parse error: expected a range vector");
            };
            // Before the series started there are no samples in the window, so no result.
            if t <= generator.origin() {
                return Ok(Value::Vector(Vec::new()));
            }
            let from = (t - range).max(generator.origin());
            let out = select(matchers, generator)
                .map(|(mut labels, series)| {
                    labels.remove("__name__");
                    let delta = generator.sample(series, t) - generator.sample(series, from);
                    (labels, if *increase { delta } else { delta / range })
                })
                .collect();
            Ok(Value::Vector(out))
        }
        Expr::Quantile { phi, expr } => {
            let Value::Scalar(phi) = evaluate(phi, generator, t)? else {
                return fail(
                    "parse error: expected type scalar in call to function \"histogram_quantile\"",
                );
            };
            let Value::Vector(buckets) = evaluate(expr, generator, t)? else {
                return fail(
                    "parse error: expected type instant vector in call to function \"histogram_quantile\"",
                );
            };
            Ok(Value::Vector(quantiles(phi, buckets)))
        }
        Expr::Aggregate {
            op,
            grouping,
            without,
            expr,
        } => {
            let Value::Vector(input) = evaluate(expr, generator, t)? else {
                return fail("parse error: expected type instant vector in aggregation expression");
            };
            let mut groups: BTreeMap<Labels, Vec<f64>> = BTreeMap::new();
            for (labels, value) in input {
                let key: Labels = labels
                    .into_iter()
                    .filter(|(k, _)| {
                        if *without {
                            k != "__name__" && !grouping.contains(k)
                        } else {
                            grouping.contains(k)
                        }
                    })
                    .collect();
                groups.entry(key).or_default().push(value);
            }
            Ok(Value::Vector(
                groups
                    .into_iter()
                    .map(|(labels, values)| (labels, aggregate(*op, &values)))
                    .collect(),
            ))
        }
    }
}

/// `lhs op rhs` on evaluated operands, with Prometheus' one-to-one vector matching.
fn arithmetic(op: BinaryOp, lhs: Value, rhs: Value) -> Result<Value> {
    let unnamed = |mut labels: Labels| {
        labels.remove("__name__");
        labels
    };
    match (lhs, rhs) {
        (Value::Scalar(a), Value::Scalar(b)) => Ok(Value::Scalar(op.apply(a, b))),
        (Value::Vector(samples), Value::Scalar(b)) => Ok(Value::Vector(
            samples
                .into_iter()
                .map(|(labels, a)| (unnamed(labels), op.apply(a, b)))
                .collect(),
        )),
        (Value::Scalar(a), Value::Vector(samples)) => Ok(Value::Vector(
            samples
                .into_iter()
                .map(|(labels, b)| (unnamed(labels), op.apply(a, b)))
                .collect(),
        )),
        (Value::Vector(left), Value::Vector(right)) => {
            let mut partners: BTreeMap<Labels, f64> = BTreeMap::new();
            for (labels, value) in right {
                let signature = unnamed(labels);
                if partners.insert(signature.clone(), value).is_some() {
                    return fail(format!(
                        "found duplicate series for the match group {} on the right hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side",
                        show(&signature)
                    ));
                }
            }
            let mut out: BTreeMap<Labels, f64> = BTreeMap::new();
            for (labels, a) in left {
                let signature = unnamed(labels);
                let Some(&b) = partners.get(&signature) else {
                    continue;
                };
                if out.insert(signature, op.apply(a, b)).is_some() {
                    return fail(
                        "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)",
                    );
                }
            }
            Ok(Value::Vector(out.into_iter().collect()))
        }
    }
}

/// Labels as Prometheus prints a match group: `{a="1", b="2"}`.
fn show(labels: &Labels) -> String {
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", pairs.join(", "))
}

fn aggregate(op: Aggregation, values: &[f64]) -> f64 {
    let n = values.len() as f64;
    match op {
        Aggregation::Sum => values.iter().sum(),
        Aggregation::Avg => values.iter().sum::<f64>() / n,
        Aggregation::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        Aggregation::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Aggregation::Count => n,
    }
}

/// The generator's series a selector matches, with their labels (`__name__` included).
fn select<'g>(
    matchers: &[Matcher],
    generator: &'g Generator,
) -> impl Iterator<Item = (Labels, &'g Series)> + use<'g> {
    let matchers = matchers.to_vec();
    generator.series().iter().filter_map(move |series| {
        let all = matchers.iter().all(|m| {
            let value = if m.label == "__name__" {
                Some(series.name)
            } else {
                series.labels.get(&m.label).map(String::as_str)
            };
            m.matches(value)
        });
        all.then(|| {
            let mut labels = series.labels.clone();
            labels.insert("__name__".into(), series.name.to_owned());
            (labels, series)
        })
    })
}

/// Groups buckets by their labels without `le` and computes each group's quantile.
fn quantiles(phi: f64, buckets: Vec<(Labels, f64)>) -> Vec<(Labels, f64)> {
    let mut groups: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
    for (mut labels, count) in buckets {
        let Some(le) = labels.remove("le") else {
            continue;
        };
        let upper = match le.as_str() {
            "+Inf" => f64::INFINITY,
            other => match other.parse::<f64>() {
                Ok(v) => v,
                Err(_) => continue,
            },
        };
        labels.remove("__name__");
        groups.entry(labels).or_default().push((upper, count));
    }
    groups
        .into_iter()
        .map(|(labels, mut buckets)| {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            (labels, bucket_quantile(phi, &buckets))
        })
        .collect()
}

/// Prometheus' `bucketQuantile`: linear interpolation inside the bucket holding the rank; a rank in
/// the `+Inf` bucket answers the highest finite bound.
fn bucket_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    let Some(&(last_upper, total)) = buckets.last() else {
        return f64::NAN;
    };
    if !last_upper.is_infinite() || buckets.len() < 2 || total == 0.0 {
        return f64::NAN;
    }
    let rank = q * total;
    let index = buckets
        .iter()
        .position(|&(_, count)| count >= rank)
        .unwrap_or(buckets.len() - 1);
    if index == buckets.len() - 1 {
        return buckets[buckets.len() - 2].0;
    }
    let (upper, count) = buckets[index];
    if index == 0 && upper <= 0.0 {
        return upper;
    }
    let (start, below) = if index == 0 {
        (0.0, 0.0)
    } else {
        buckets[index - 1]
    };
    let in_bucket = count - below;
    if in_bucket <= 0.0 {
        return upper;
    }
    start + (upper - start) * ((rank - below) / in_bucket)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const ORIGIN: f64 = 1_700_000_000.0;

    fn generator() -> Generator {
        Generator::new(7, ORIGIN, &crate::world::SERVICES)
    }

    /// `query` evaluated an hour after the origin.
    fn eval(query: &str) -> Value {
        evaluate(&parse(query).unwrap(), &generator(), ORIGIN + 3600.0).unwrap()
    }

    fn scalar(query: &str) -> f64 {
        match eval(query) {
            Value::Scalar(v) => v,
            other => panic!("{query} gave {other:?}"),
        }
    }

    fn vector(query: &str) -> Vec<(Labels, f64)> {
        match eval(query) {
            Value::Vector(samples) => samples,
            other => panic!("{query} gave {other:?}"),
        }
    }

    #[test]
    fn products_and_quotients_bind_tighter_than_sums_and_all_associate_left() {
        assert_eq!(scalar("1 + 2 * 3"), 7.0);
        assert_eq!(scalar("(1 + 2) * 3"), 9.0);
        assert_eq!(scalar("2 * 3 - 4 / 2"), 4.0);
        assert_eq!(scalar("8 / 2 / 2"), 2.0);
        assert_eq!(scalar("2 - 3 - 4"), -5.0);
        assert_eq!(scalar("10 - (3 - 4)"), 11.0);
        assert_eq!(scalar("-2 * 3"), -6.0);
        assert_eq!(scalar("- (1 + 2)"), -3.0);
        assert_eq!(scalar("1e-3 * 1000"), 1.0);
        assert_eq!(scalar("2e+1+1"), 21.0);
    }

    #[test]
    fn division_by_zero_gives_nan_and_infinities_as_prometheus_does() {
        assert_eq!(scalar("1 / 0"), f64::INFINITY);
        assert_eq!(scalar("-1 / 0"), f64::NEG_INFINITY);
        assert!(scalar("0 / 0").is_nan());
        assert_eq!(scalar("Inf - 1"), f64::INFINITY);
        assert!(scalar("NaN * 0").is_nan());
        let selector = r#"http_requests_total{service="payments",environment="prod"}"#;
        let samples = vector(&format!("{selector} / 0"));
        assert_eq!(samples.len(), 3);
        assert!(
            samples.iter().all(|(_, v)| *v == f64::INFINITY),
            "{samples:?}"
        );
        let samples = vector(&format!("({selector} - {selector}) / 0"));
        assert!(samples.iter().all(|(_, v)| v.is_nan()), "{samples:?}");
    }

    #[test]
    fn vectors_match_one_to_one_on_their_labels_without_the_metric_name() {
        let selector = r#"service="payments",environment="prod""#;
        // Same labels, different names: the mean latency.
        let mean = vector(&format!(
            "http_request_duration_seconds_sum{{{selector}}} / http_request_duration_seconds_count{{{selector}}}"
        ));
        assert_eq!(mean.len(), 1, "{mean:?}");
        assert!(!mean[0].0.contains_key("__name__"));
        assert_eq!(mean[0].0["service"], "payments");
        assert!(mean[0].1 > 0.0 && mean[0].1 < 5.0, "{mean:?}");

        // Each status class divided by itself, labels kept.
        let ones = vector(&format!(
            "http_requests_total{{{selector}}} / http_requests_total{{{selector}}}"
        ));
        let codes: Vec<&str> = ones.iter().map(|(l, _)| l["code"].as_str()).collect();
        assert_eq!(codes, ["2xx", "4xx", "5xx"]);
        assert!(ones.iter().all(|(_, v)| *v == 1.0), "{ones:?}");

        // Only the 5xx series has a partner; the others drop out.
        let ratio = vector(&format!(
            r#"rate(http_requests_total{{{selector}}}[5m]) / rate(http_requests_total{{{selector},code="5xx"}}[5m])"#
        ));
        assert_eq!(ratio.len(), 1, "{ratio:?}");
        assert_eq!(ratio[0].1, 1.0);

        // `{code=…}` never matches `{}`: nothing, as in Prometheus.
        let none = vector(&format!(
            "sum by (code) (rate(http_requests_total{{{selector}}}[5m])) / sum(rate(http_requests_total{{{selector}}}[5m]))"
        ));
        assert!(none.is_empty(), "{none:?}");

        // The error ratio: one sample, between 0 and 1.
        let errors = vector(&format!(
            r#"sum(rate(http_requests_total{{{selector},code=~"5.."}}[5m])) / sum(rate(http_requests_total{{{selector}}}[5m]))"#
        ));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].0.is_empty());
        assert!(errors[0].1 > 0.0 && errors[0].1 < 0.01, "{errors:?}");
    }

    #[test]
    fn vectors_and_numbers_combine_sample_by_sample_and_lose_the_metric_name() {
        let selector =
            r#"container_memory_working_set_bytes{service="payments",environment="prod"}"#;
        let bytes = vector(selector);
        let mebibytes = vector(&format!("{selector} / 1024 / 1024"));
        let doubled = vector(&format!("2 * {selector} + 0"));
        let negated = vector(&format!("-{selector}"));
        assert_eq!(bytes.len(), 2);
        for (i, (labels, value)) in bytes.iter().enumerate() {
            assert_eq!(labels["__name__"], "container_memory_working_set_bytes");
            let mut unnamed = labels.clone();
            unnamed.remove("__name__");
            assert_eq!(mebibytes[i], (unnamed.clone(), value / 1024.0 / 1024.0));
            assert_eq!(doubled[i], (unnamed.clone(), 2.0 * value));
            assert_eq!(negated[i], (unnamed, -value));
        }
    }

    #[test]
    fn duplicate_label_sets_on_one_side_are_an_error() {
        let both = r#"{__name__=~"http_request_duration_seconds_(sum|count)",service="payments",environment="prod"}"#;
        let single =
            r#"http_request_duration_seconds_count{service="payments",environment="prod"}"#;
        let generator = generator();
        let err = evaluate(
            &parse(&format!("{single} / {both}")).unwrap(),
            &generator,
            ORIGIN,
        )
        .unwrap_err();
        assert!(
            err.0.contains("duplicate series for the match group"),
            "{err}"
        );
        let err = evaluate(
            &parse(&format!("{both} / {single}")).unwrap(),
            &generator,
            ORIGIN,
        )
        .unwrap_err();
        assert!(err.0.contains("multiple matches for labels"), "{err}");
    }

    #[test]
    fn queries_outside_the_subset_name_what_is_unsupported() {
        let err = parse("sum(rate(x[5m])) % sum(rate(y[5m]))").unwrap_err();
        assert!(err.0.contains("binary operator \"%\""), "{err}");
        let err = parse("x ^ 2").unwrap_err();
        assert!(err.0.contains("binary operator \"^\""), "{err}");
        let err = parse("x / on (a) y").unwrap_err();
        assert!(err.0.contains("\"on\""), "{err}");
        let err = parse("x / ignoring (a) y").unwrap_err();
        assert!(err.0.contains("\"ignoring\""), "{err}");
        let err = parse("x and y").unwrap_err();
        assert!(err.0.contains("set operator \"and\""), "{err}");
        let err = parse("x != 1").unwrap_err();
        assert!(err.0.contains("comparison operator"), "{err}");
        let err = parse("x > 1").unwrap_err();
        assert!(err.0.contains("\">\""), "{err}");
        let err = parse("x[5m] / 2").unwrap_err();
        assert!(err.0.contains("scalar and instant vector"), "{err}");
        assert!(parse("rate(x[5m] * 2)").is_err());
        assert!(parse("x /").is_err());
        assert!(parse("* x").is_err());
        let err = parse("irate(x[5m])").unwrap_err();
        assert!(err.0.contains("\"irate\""), "{err}");
        assert!(parse("rate(x)").is_err());
        assert!(parse("x{a=\"b\"").is_err());
        assert_eq!(duration("1h30m").unwrap(), 5400.0);
    }

    #[test]
    fn misplaced_range_vectors_and_scalars_are_parse_errors_as_in_prometheus() {
        let err = parse("sum(x[5m])").unwrap_err();
        assert!(
            err.0.contains(
                "expected type instant vector in aggregation expression, got range vector"
            ),
            "{err}"
        );
        let err = parse("sum(1)").unwrap_err();
        assert!(err.0.contains("got scalar"), "{err}");
        let err = parse("histogram_quantile(x, y)").unwrap_err();
        assert!(err.0.contains("expected type scalar"), "{err}");
        let err = parse("histogram_quantile(0.9, y[5m])").unwrap_err();
        assert!(err.0.contains("got range vector"), "{err}");
        assert!(parse("-x[5m]").is_err());
        assert!(parse("x[5m]").is_ok());
        assert!(parse("-(1 + 2) * x").is_ok());
    }

    #[test]
    fn a_range_selector_samples_its_window_at_the_scrape_interval() {
        let generator = generator();
        let t = ORIGIN + 3600.0;
        let expr =
            parse(r#"http_requests_total{service="payments",environment="prod"}[2m]"#).unwrap();
        let series = range_samples(&expr, &generator, t, 30.0).unwrap();
        assert!(!series.is_empty());
        for (labels, samples) in &series {
            assert_eq!(labels["__name__"], "http_requests_total");
            let times: Vec<f64> = samples.iter().map(|(at, _)| *at).collect();
            assert_eq!(times.len(), 4, "{times:?}");
            assert!(
                times
                    .iter()
                    .all(|at| *at > t - 120.0 && *at <= t && at % 30.0 == 0.0)
            );
        }
        assert!(range_samples(&parse("x").unwrap(), &generator, t, 30.0).is_none());
    }

    #[test]
    fn quantiles_interpolate_inside_the_bucket() {
        let buckets = [(0.1, 50.0), (0.5, 90.0), (f64::INFINITY, 100.0)];
        assert!((bucket_quantile(0.5, &buckets) - 0.1).abs() < 1e-9);
        assert!((bucket_quantile(0.7, &buckets) - 0.3).abs() < 1e-9);
        assert_eq!(bucket_quantile(0.99, &buckets), 0.5);
    }
}
