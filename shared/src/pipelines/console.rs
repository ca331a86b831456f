//! The log console's logic: ANSI colours, timestamps, search over every line, and which lines are in view.
//!
//! The console keeps every line in a [`LogBuffer`] (raw, and as plain text for search) and puts only the
//! lines in view into the DOM ([`crate::rows::visible_window`], or [`RowIndex`] when lines wrap), so neither opening nor
//! searching a 100,000-line log depends on the DOM.

use std::fmt::Write as _;
use std::ops::Range;

use crate::rows::{finite_non_negative, visible_window};

/// Most matches a search reports; past it [`SearchResult::capped`] is set.
pub const MAX_MATCHES: usize = 100_000;

/// Splits the kubelet's `RFC3339Nano ` timestamp (as `kubectl logs --timestamps` writes it) off a line:
/// `(Some(timestamp), text)`, or `(None, line)` when the line does not start with one.
pub fn split_timestamp(line: &str) -> (Option<&str>, &str) {
    let Some((stamp, text)) = line.split_once(' ') else {
        return if looks_like_timestamp(line) {
            (Some(line), "")
        } else {
            (None, line)
        };
    };
    if looks_like_timestamp(stamp) {
        (Some(stamp), text)
    } else {
        (None, line)
    }
}

/// `YYYY-MM-DDTHH:MM:SS`, optional fraction, then `Z` or `±HH:MM`.
fn looks_like_timestamp(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: Range<usize>| {
        b.get(range)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    if b.len() < 20 || b.len() > 40 {
        return false;
    }
    if !(digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19))
    {
        return false;
    }
    let mut rest = &b[19..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let len = fraction.iter().take_while(|d| d.is_ascii_digit()).count();
        if len == 0 {
            return false;
        }
        rest = &fraction[len..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}

/// A colour of an ANSI SGR sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Color {
    /// One of the 256 palette colours: 0–7 standard (`30`–`37`), 8–15 bright (`90`–`97`), 16–255 the
    /// xterm cube and greys (`38;5;n`).
    Indexed(u8),
    /// A true colour (`38;2;r;g;b`).
    Rgb(u8, u8, u8),
}

impl Color {
    /// As CSS: the 16 theme colours as `var(--ansi-N)` (so the page's theme picks them), others as
    /// `#rrggbb` from the xterm palette.
    pub fn css(self) -> String {
        match self {
            Color::Indexed(n) if n < 16 => format!("var(--ansi-{n})"),
            Color::Indexed(n) => {
                let (r, g, b) = xterm_rgb(n);
                format!("#{r:02x}{g:02x}{b:02x}")
            }
            Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        }
    }
}

/// The xterm palette's colour `n` for 16–255 (the 6×6×6 cube, then 24 greys); 0–15 as xterm's defaults.
fn xterm_rgb(n: u8) -> (u8, u8, u8) {
    const BASE: [(u8, u8, u8); 16] = [
        (0, 0, 0),
        (205, 0, 0),
        (0, 205, 0),
        (205, 205, 0),
        (0, 0, 238),
        (205, 0, 205),
        (0, 205, 205),
        (229, 229, 229),
        (127, 127, 127),
        (255, 0, 0),
        (0, 255, 0),
        (255, 255, 0),
        (92, 92, 255),
        (255, 0, 255),
        (0, 255, 255),
        (255, 255, 255),
    ];
    match n {
        0..=15 => BASE[usize::from(n)],
        16..=231 => {
            let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
            let i = n - 16;
            (level(i / 36), level((i / 6) % 6), level(i % 6))
        }
        _ => {
            let grey = 8 + (n - 232) * 10;
            (grey, grey, grey)
        }
    }
}

/// How a piece of text is drawn, from the SGR sequences before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Style {
    /// Foreground colour.
    pub fg: Option<Color>,
    /// Background colour.
    pub bg: Option<Color>,
    /// Bold (`1`).
    pub bold: bool,
    /// Dim (`2`).
    pub dim: bool,
    /// Italic (`3`).
    pub italic: bool,
    /// Underlined (`4`).
    pub underline: bool,
}

impl Style {
    /// Whether it is the terminal's default (nothing to draw differently).
    pub fn is_plain(&self) -> bool {
        *self == Style::default()
    }

    /// CSS classes: `ansi-fg-N` / `ansi-bg-N` for the 16 theme colours, `ansi-bold`, `ansi-dim`,
    /// `ansi-italic`, `ansi-underline`; other colours are in [`Style::inline_css`]. Empty when plain.
    pub fn classes(&self) -> String {
        let mut classes = String::new();
        let mut add = |class: &str| {
            if !classes.is_empty() {
                classes.push(' ');
            }
            classes.push_str(class);
        };
        if let Some(Color::Indexed(n)) = self
            .fg
            .filter(|c| matches!(c, Color::Indexed(n) if *n < 16))
        {
            add(&format!("ansi-fg-{n}"));
        }
        if let Some(Color::Indexed(n)) = self
            .bg
            .filter(|c| matches!(c, Color::Indexed(n) if *n < 16))
        {
            add(&format!("ansi-bg-{n}"));
        }
        for (on, class) in [
            (self.bold, "ansi-bold"),
            (self.dim, "ansi-dim"),
            (self.italic, "ansi-italic"),
            (self.underline, "ansi-underline"),
        ] {
            if on {
                add(class);
            }
        }
        classes
    }

    /// An inline `style` for the colours [`Style::classes`] has no class for (256-palette and true
    /// colours), e.g. `color:#ff8700;`. Empty when none.
    pub fn inline_css(&self) -> String {
        let mut css = String::new();
        let themed = |c: &Color| matches!(c, Color::Indexed(n) if *n < 16);
        if let Some(fg) = self.fg.filter(|c| !themed(c)) {
            let _ = write!(css, "color:{};", fg.css());
        }
        if let Some(bg) = self.bg.filter(|c| !themed(c)) {
            let _ = write!(css, "background-color:{};", bg.css());
        }
        css
    }

    /// The whole style as inline CSS (theme colours as `var(--ansi-N)`), for a page without the classes.
    pub fn css(&self) -> String {
        let mut css = String::new();
        if let Some(fg) = self.fg {
            let _ = write!(css, "color:{};", fg.css());
        }
        if let Some(bg) = self.bg {
            let _ = write!(css, "background-color:{};", bg.css());
        }
        if self.bold {
            css.push_str("font-weight:bold;");
        }
        if self.dim {
            css.push_str("opacity:0.7;");
        }
        if self.italic {
            css.push_str("font-style:italic;");
        }
        if self.underline {
            css.push_str("text-decoration:underline;");
        }
        css
    }

    /// Applies one SGR sequence's parameters (`1;31`, `38;5;208`, `0`, or empty for a reset).
    fn apply(&mut self, params: &str) {
        let mut codes = params.split([';', ':']).map(|p| {
            if p.is_empty() {
                Some(0u32)
            } else {
                p.parse::<u32>().ok()
            }
        });
        while let Some(code) = codes.next() {
            let Some(code) = code else {
                continue;
            };
            match code {
                0 => *self = Style::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                22 => {
                    self.bold = false;
                    self.dim = false;
                }
                23 => self.italic = false,
                24 => self.underline = false,
                30..=37 => self.fg = Some(Color::Indexed((code - 30) as u8)),
                90..=97 => self.fg = Some(Color::Indexed((code - 90 + 8) as u8)),
                40..=47 => self.bg = Some(Color::Indexed((code - 40) as u8)),
                100..=107 => self.bg = Some(Color::Indexed((code - 100 + 8) as u8)),
                39 => self.fg = None,
                49 => self.bg = None,
                38 | 48 => {
                    let color = match codes.next().flatten() {
                        Some(5) => codes.next().flatten().and_then(byte).map(Color::Indexed),
                        Some(2) => {
                            let r = codes.next().flatten().and_then(byte);
                            let g = codes.next().flatten().and_then(byte);
                            let b = codes.next().flatten().and_then(byte);
                            match (r, g, b) {
                                (Some(r), Some(g), Some(b)) => Some(Color::Rgb(r, g, b)),
                                _ => None,
                            }
                        }
                        _ => None,
                    };
                    if let Some(color) = color {
                        if code == 38 {
                            self.fg = Some(color);
                        } else {
                            self.bg = Some(color);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

fn byte(value: u32) -> Option<u8> {
    u8::try_from(value).ok()
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The text, escape sequences removed.
    pub text: String,
    /// How it is drawn.
    pub style: Style,
}

/// What a piece of a line is: text, or an escape sequence.
enum Token<'a> {
    /// Text to show.
    Text(&'a str),
    /// The parameters of an SGR sequence (`ESC [ … m`).
    Sgr(&'a str),
    /// Anything else: another escape sequence or a control character, not shown.
    Hidden,
}

/// Splits a line into text, SGR sequences and what is not shown: CSI sequences (`ESC [ … final`, also the
/// one-character CSI U+009B), OSC (`ESC ] … BEL` or `ESC ] … ESC \`), other escapes (`ESC` with
/// intermediates and a final byte), and control characters but tab.
fn tokens(text: &str, mut each: impl FnMut(Token<'_>)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut start = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let c1_csi = b == 0xc2 && bytes.get(i + 1) == Some(&0x9b);
        if b >= 0x20 && b != 0x7f && !c1_csi || b == b'\t' {
            i += 1;
            continue;
        }
        if start < i {
            each(Token::Text(&text[start..i]));
        }
        if b == 0x1b || c1_csi {
            let (kind, after) = if c1_csi {
                (Some(b'['), i + 2)
            } else {
                (bytes.get(i + 1).copied(), i + 2)
            };
            match kind {
                Some(b'[') => {
                    // Parameters and intermediates (0x20–0x3f), then a final byte (0x40–0x7e).
                    let mut j = after;
                    while j < bytes.len() && (0x20..=0x3f).contains(&bytes[j]) {
                        j += 1;
                    }
                    if j < bytes.len() && (0x40..=0x7e).contains(&bytes[j]) {
                        if bytes[j] == b'm' {
                            each(Token::Sgr(&text[after..j]));
                        } else {
                            each(Token::Hidden);
                        }
                        i = j + 1;
                    } else {
                        // Unterminated or malformed: drop the introducer and what was read of it.
                        each(Token::Hidden);
                        i = j;
                    }
                }
                Some(b']') => {
                    let mut j = after;
                    loop {
                        match bytes.get(j) {
                            None => break,
                            Some(0x07) => {
                                j += 1;
                                break;
                            }
                            Some(0x1b) if bytes.get(j + 1) == Some(&b'\\') => {
                                j += 2;
                                break;
                            }
                            Some(_) => j += 1,
                        }
                    }
                    each(Token::Hidden);
                    i = j;
                }
                Some(0x20..=0x2f) => {
                    // Intermediates, then one final byte (e.g. `ESC ( B`, choosing a character set).
                    let mut j = after;
                    while j < bytes.len() && (0x20..=0x2f).contains(&bytes[j]) {
                        j += 1;
                    }
                    if j < bytes.len() && (0x30..=0x7e).contains(&bytes[j]) {
                        j += 1;
                    }
                    each(Token::Hidden);
                    i = j;
                }
                Some(0x30..=0x7e) => {
                    each(Token::Hidden);
                    i = after;
                }
                _ => {
                    each(Token::Hidden);
                    i += 1;
                }
            }
        } else {
            each(Token::Hidden);
            i += 1;
        }
        // Escape sequences are ASCII, so `i` is on a character boundary unless a sequence was cut inside a
        // multi-byte character; step to the next boundary then.
        while i < bytes.len() && !text.is_char_boundary(i) {
            i += 1;
        }
        start = i;
    }
    if start < bytes.len() {
        each(Token::Text(&text[start..]));
    }
}

/// The line as runs of styled text: SGR colours and attributes (30–37, 90–97, 40–47, 100–107, 38;5;n,
/// 48;5;n, 38;2;r;g;b, 48;2;r;g;b, 0, 1, 2, 3, 4, 22, 23, 24, 39, 49) applied, every other escape sequence
/// and control character but tab dropped. Adjacent runs of one style are merged; the texts joined are
/// [`strip_ansi`] of the line.
pub fn ansi_segments(text: &str) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    let mut style = Style::default();
    tokens(text, |token| match token {
        Token::Text(piece) => match segments.last_mut() {
            Some(last) if last.style == style => last.text.push_str(piece),
            _ => segments.push(Segment {
                text: piece.to_string(),
                style,
            }),
        },
        Token::Sgr(params) => style.apply(params),
        Token::Hidden => {}
    });
    segments
}

/// The line without escape sequences or control characters (tab kept): the text a reader sees.
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    let clean =
        text.bytes().all(|b| (b >= 0x20 && b != 0x7f) || b == b'\t') && !text.contains('\u{9b}');
    if clean {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut plain = String::with_capacity(text.len());
    tokens(text, |token| {
        if let Token::Text(piece) = token {
            plain.push_str(piece);
        }
    });
    std::borrow::Cow::Owned(plain)
}

/// A piece of a line to draw: styled text, and whether (and which) search match it is part of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The text.
    pub text: String,
    /// How it is drawn.
    pub style: Style,
    /// The index into the `marks` given to [`mark_segments`] of the match it is in, if any.
    pub mark: Option<usize>,
}

/// Splits `segments` at the edges of `marks` (byte ranges into the line's plain text, as [`Match`] gives
/// them, sorted and not overlapping), so each match can be highlighted over its colours. Ranges out of
/// bounds or not on character boundaries are clamped or ignored.
pub fn mark_segments(segments: &[Segment], marks: &[Range<usize>]) -> Vec<Piece> {
    let mut pieces = Vec::with_capacity(segments.len() + 2 * marks.len());
    let mut offset = 0;
    let mut next_mark = 0;
    for segment in segments {
        let end = offset + segment.text.len();
        let mut at = offset;
        while at < end {
            while next_mark < marks.len() && marks[next_mark].end <= at {
                next_mark += 1;
            }
            let (cut, mark) = match marks.get(next_mark) {
                Some(m) if m.start <= at => (m.end.min(end), Some(next_mark)),
                Some(m) => (m.start.min(end), None),
                None => (end, None),
            };
            let local = |p: usize| p - offset;
            let Some(text) = segment.text.get(local(at)..local(cut)) else {
                // A mark not on a character boundary: the rest of this segment goes unmarked.
                pieces.push(Piece {
                    text: segment
                        .text
                        .get(local(at)..)
                        .unwrap_or_default()
                        .to_string(),
                    style: segment.style,
                    mark: None,
                });
                break;
            };
            pieces.push(Piece {
                text: text.to_string(),
                style: segment.style,
                mark,
            });
            at = cut;
        }
        offset = end;
    }
    pieces
}

/// One match of a search: a byte range of line `line`'s plain text (see [`LogBuffer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Match {
    /// The line, 0-based.
    pub line: usize,
    /// Where it starts in the line's plain text (bytes).
    pub start: usize,
    /// Where it ends (bytes, exclusive).
    pub end: usize,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchResult {
    /// The matches in line order, at most [`MAX_MATCHES`]; matches do not overlap.
    pub matches: Vec<Match>,
    /// Whether there were more than [`MAX_MATCHES`] (only the first are listed).
    pub capped: bool,
}

impl SearchResult {
    /// The matches on `line`, as byte ranges of its plain text (for [`mark_segments`]), with the index of
    /// the first one. O(log n).
    pub fn on_line(&self, line: usize) -> (usize, Vec<Range<usize>>) {
        let first = self.matches.partition_point(|m| m.line < line);
        let ranges = self.matches[first..]
            .iter()
            .take_while(|m| m.line == line)
            .map(|m| m.start..m.end)
            .collect();
        (first, ranges)
    }

    /// The first match on or after `line` (wrapping to the first match), to start from where the reader is.
    pub fn first_from_line(&self, line: usize) -> Option<usize> {
        if self.matches.is_empty() {
            return None;
        }
        let at = self.matches.partition_point(|m| m.line < line);
        Some(if at == self.matches.len() { 0 } else { at })
    }
}

/// The match after `current` among `count`, wrapping to the first; the first when there is no current one.
pub fn next_match(current: Option<usize>, count: usize) -> Option<usize> {
    if count == 0 {
        return None;
    }
    Some(match current {
        Some(c) if c + 1 < count => c + 1,
        _ => 0,
    })
}

/// The match before `current` among `count`, wrapping to the last; the last when there is no current one.
pub fn previous_match(current: Option<usize>, count: usize) -> Option<usize> {
    if count == 0 {
        return None;
    }
    Some(match current {
        Some(c) if c > 0 && c <= count => c - 1,
        _ => count - 1,
    })
}

/// Folds case for search without changing byte offsets: a character is lowercased only when its lowercase
/// is one character of the same UTF-8 length (true of ASCII and most letters); others stay as they are.
fn fold_into(text: &str, out: &mut String) {
    if text.is_ascii() {
        out.extend(text.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        return;
    }
    for c in text.chars() {
        let mut lower = c.to_lowercase();
        match (lower.next(), lower.next()) {
            (Some(l), None) if l.len_utf8() == c.len_utf8() => out.push(l),
            _ => out.push(c),
        }
    }
}

/// Every match of `term` in `lines` (ANSI escapes removed first), in line order. Case-insensitive search
/// folds case as far as byte offsets allow (ASCII and most letters). An empty term matches nothing.
pub fn find_matches<S: AsRef<str>>(lines: &[S], term: &str, case_sensitive: bool) -> SearchResult {
    let mut buffer = LogBuffer::new();
    buffer.push_plain(lines.iter().map(|l| strip_ansi(l.as_ref()).into_owned()));
    buffer.search(term, case_sensitive)
}

/// Every line of a log, raw, and its plain text (timestamp split off, escapes removed) kept together in one
/// string — once as written, once with case folded — so a search is one pass over contiguous text.
#[derive(Debug, Clone, Default)]
pub struct LogBuffer {
    /// The lines as received.
    raw: Vec<String>,
    /// The plain texts, each followed by `\n` (which no plain text contains).
    plain: String,
    /// `plain` with case folded; the same byte offsets.
    folded: String,
    /// Where each line starts in `plain`.
    starts: Vec<usize>,
}

/// One line of a [`LogBuffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLine<'a> {
    /// The line as received.
    pub raw: &'a str,
    /// Its timestamp, if it has one.
    pub timestamp: Option<&'a str>,
    /// The text after the timestamp, escapes and all: give it to [`ansi_segments`].
    pub text: &'a str,
    /// The text as a reader sees it; search offsets refer to it.
    pub plain: &'a str,
}

impl LogBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends lines as the stream delivers them (`<timestamp> <text>` or just text).
    pub fn push_lines<I>(&mut self, lines: I)
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        for line in lines {
            let line: String = line.into();
            let (_, text) = split_timestamp(&line);
            let plain = strip_ansi(text);
            self.append_plain(&plain);
            self.raw.push(line);
        }
    }

    /// Appends lines that are already plain text (no timestamp, no escapes).
    fn push_plain(&mut self, lines: impl IntoIterator<Item = String>) {
        for line in lines {
            let plain = line.replace('\n', " ");
            self.append_plain(&plain);
            self.raw.push(line);
        }
    }

    fn append_plain(&mut self, plain: &str) {
        self.starts.push(self.plain.len());
        self.plain.push_str(plain);
        self.plain.push('\n');
        fold_into(plain, &mut self.folded);
        self.folded.push('\n');
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether no line is held.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Forgets every line (a new stream replaces the old one).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Line `index` (0-based), or `None` past the end.
    pub fn line(&self, index: usize) -> Option<LogLine<'_>> {
        let raw = self.raw.get(index)?;
        let (timestamp, text) = split_timestamp(raw);
        Some(LogLine {
            raw,
            timestamp,
            text,
            plain: self.plain(index)?,
        })
    }

    /// Line `index`'s plain text.
    pub fn plain(&self, index: usize) -> Option<&str> {
        let start = *self.starts.get(index)?;
        let end = self
            .starts
            .get(index + 1)
            .copied()
            .unwrap_or(self.plain.len());
        // Without the `\n` that ends every line.
        self.plain.get(start..end.saturating_sub(1).max(start))
    }

    /// Every line as received, for a download.
    pub fn raw_lines(&self) -> &[String] {
        &self.raw
    }

    /// The longest plain line, in characters (for the width of an unwrapped console).
    pub fn widest(&self) -> usize {
        (0..self.len())
            .filter_map(|i| self.plain(i))
            .map(|p| p.chars().count())
            .max()
            .unwrap_or(0)
    }

    /// Every match of `term` in the plain texts, in order; see [`find_matches`].
    pub fn search(&self, term: &str, case_sensitive: bool) -> SearchResult {
        if term.is_empty() || term.contains('\n') {
            return SearchResult::default();
        }
        let (haystack, needle) = if case_sensitive {
            (&self.plain, std::borrow::Cow::Borrowed(term))
        } else {
            let mut folded = String::with_capacity(term.len());
            fold_into(term, &mut folded);
            (&self.folded, std::borrow::Cow::Owned(folded))
        };
        let mut result = SearchResult::default();
        let mut line = 0;
        for (at, found) in haystack.match_indices(needle.as_ref()) {
            if result.matches.len() == MAX_MATCHES {
                result.capped = true;
                break;
            }
            // Matches come in order, so the line only moves forward.
            while line + 1 < self.starts.len() && self.starts[line + 1] <= at {
                line += 1;
            }
            let start = at - self.starts.get(line).copied().unwrap_or(0);
            result.matches.push(Match {
                line,
                start,
                end: start + found.len(),
            });
        }
        result
    }
}

/// The scroll offset that puts line `line` (0-based) in the middle of the viewport (0 at the top).
pub fn scroll_top_for_line(line: usize, row_height: f64, viewport: f64) -> f64 {
    let row_height = finite_non_negative(row_height);
    let top = line as f64 * row_height + row_height / 2.0 - finite_non_negative(viewport) / 2.0;
    top.max(0.0)
}

/// Rows (screen lines) per log line when long lines wrap at `columns` characters, as prefix sums, so the
/// line at a scroll offset and the offset of a line are found in O(log n). Built in O(n); lines can be
/// appended as they stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowIndex {
    /// Characters per row.
    columns: usize,
    /// `starts[i]`: the first row of line `i`; one more entry than lines, the last being the total.
    starts: Vec<usize>,
}

/// Columns a tab advances to the next multiple of.
const TAB_WIDTH: usize = 8;

impl RowIndex {
    /// An index of no lines wrapping at `columns` (at least 1).
    pub fn new(columns: usize) -> Self {
        Self {
            columns: columns.max(1),
            starts: vec![0],
        }
    }

    /// The index of `lines` (plain texts) wrapping at `columns`.
    pub fn build<S: AsRef<str>>(lines: &[S], columns: usize) -> Self {
        let mut index = Self::new(columns);
        index.starts.reserve(lines.len());
        for line in lines {
            index.push(line.as_ref());
        }
        index
    }

    /// The index of a [`LogBuffer`]'s lines wrapping at `columns`.
    pub fn of_buffer(buffer: &LogBuffer, columns: usize) -> Self {
        let mut index = Self::new(columns);
        index.starts.reserve(buffer.len());
        for i in 0..buffer.len() {
            index.push(buffer.plain(i).unwrap_or_default());
        }
        index
    }

    /// Appends one line (plain text).
    pub fn push(&mut self, line: &str) {
        let rows = self.rows_for(line);
        let total = self.total_rows();
        self.starts.push(total.saturating_add(rows));
    }

    /// Rows `line` takes: its width (tabs to the next multiple of 8) over the columns, at least one.
    pub fn rows_for(&self, line: &str) -> usize {
        let width = if line.is_ascii() && !line.contains('\t') {
            line.len()
        } else {
            line.chars().fold(0, |w, c| {
                if c == '\t' {
                    (w / TAB_WIDTH + 1) * TAB_WIDTH
                } else {
                    w + 1
                }
            })
        };
        width.div_ceil(self.columns).max(1)
    }

    /// Characters per row.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Lines indexed.
    pub fn lines(&self) -> usize {
        self.starts.len() - 1
    }

    /// Rows of all lines.
    pub fn total_rows(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The first row of line `line`; the total past the last line.
    pub fn offset_of_line(&self, line: usize) -> usize {
        self.starts
            .get(line)
            .copied()
            .unwrap_or_else(|| self.total_rows())
    }

    /// Rows line `line` takes (0 past the end).
    pub fn rows_of(&self, line: usize) -> usize {
        match (self.starts.get(line), self.starts.get(line + 1)) {
            (Some(start), Some(end)) => end - start,
            _ => 0,
        }
    }

    /// The line that row `row` belongs to; the last line past the end (0 when there are none).
    pub fn line_at_offset(&self, row: usize) -> usize {
        let after = self.starts.partition_point(|&start| start <= row);
        after.saturating_sub(1).min(self.lines().saturating_sub(1))
    }

    /// The lines to put in the DOM for a scroll offset in pixels: those in view, plus `overscan` lines on
    /// either side.
    pub fn visible_lines(
        &self,
        scroll_top: f64,
        viewport: f64,
        row_height: f64,
        overscan: usize,
    ) -> Range<usize> {
        let lines = self.lines();
        if lines == 0 {
            return 0..0;
        }
        let rows = visible_window(scroll_top, viewport, row_height, self.total_rows(), 0);
        let first = self.line_at_offset(rows.start);
        let last = self.line_at_offset(rows.end.saturating_sub(1)) + 1;
        first.saturating_sub(overscan)..last.saturating_add(overscan).min(lines)
    }

    /// The scroll offset in pixels that puts line `line` in the middle of the viewport.
    pub fn scroll_top_for_line(&self, line: usize, row_height: f64, viewport: f64) -> f64 {
        let row_height = finite_non_negative(row_height);
        let top = self.offset_of_line(line) as f64 * row_height;
        let height = self.rows_of(line) as f64 * row_height;
        (top + height / 2.0 - finite_non_negative(viewport) / 2.0).max(0.0)
    }
}

/// Reads a line link, `#L1203` or `L1203` (1-based, as people count lines), as a 0-based line index.
pub fn parse_line_anchor(anchor: &str) -> Option<usize> {
    let digits = anchor
        .strip_prefix('#')
        .unwrap_or(anchor)
        .strip_prefix('L')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<usize>().ok()?.checked_sub(1)
}

/// The URL fragment of a 0-based line index, without `#`: `L1203` for index 1202.
pub fn line_anchor(line: usize) -> String {
    format!("L{}", line.saturating_add(1))
}

/// The text that [`synthetic_log`] writes exactly once, on the line 90% of the way through.
pub const SYNTHETIC_NEEDLE: &str = "ledger::reconciles_a_leap_month";

/// A deterministic log of `lines` lines shaped like a long `cargo test` / `go test` step with timestamps:
/// coloured `ok` lines, compiler progress, Go test output, blank lines, and one failure naming
/// [`SYNTHETIC_NEEDLE`] on line `lines * 9 / 10` (1-based: line 90,000 of 100,000). For benchmarks and tests of the console.
pub fn synthetic_log(lines: usize, seed: u64) -> Vec<String> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let crates = [
        "ledger", "payments", "checkout", "search", "cart", "catalog",
    ];
    let needle_at = (lines * 9 / 10).saturating_sub(1);
    (0..lines)
        .map(|i| {
            let seconds = i / 50;
            let stamp = format!(
                "2026-12-01T{:02}:{:02}:{:02}.{:09}Z",
                10 + seconds / 3600 % 14,
                seconds / 60 % 60,
                seconds % 60,
                (i % 50) * 20_000_000 + 123_456
            );
            let r = next();
            let krate = crates[(r % crates.len() as u64) as usize];
            let text = if i == needle_at {
                format!(
                    "thread '{SYNTHETIC_NEEDLE}' panicked at src/ledger.rs:212:9: assertion `left == right` failed"
                )
            } else {
                match (r >> 8) % 8 {
                    0 => format!(
                        "\u{1b}[1m\u{1b}[32m   Compiling\u{1b}[0m {krate} v0.{}.{} (/workspace/source/{krate})",
                        r % 9,
                        (r >> 4) % 20
                    ),
                    1 => format!("=== RUN   Test{}Handles{}", capitalised(krate), r % 997),
                    2 => format!(
                        "--- PASS: Test{}Handles{} (0.{:02}s)",
                        capitalised(krate),
                        r % 997,
                        (r >> 12) % 100
                    ),
                    3 => String::new(),
                    _ => format!(
                        "test {krate}::tests::case_{} ... \u{1b}[32mok\u{1b}[0m",
                        (r >> 16) % 100_000
                    ),
                }
            };
            format!("{stamp} {text}")
        })
        .collect()
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GREEN: Option<Color> = Some(Color::Indexed(2));
    const RED: Option<Color> = Some(Color::Indexed(1));

    fn texts(segments: &[Segment]) -> Vec<&str> {
        segments.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn the_kubelet_timestamp_is_split_off() {
        assert_eq!(
            split_timestamp("2026-12-01T10:00:00.123456789Z test ledger ... ok"),
            (Some("2026-12-01T10:00:00.123456789Z"), "test ledger ... ok")
        );
        assert_eq!(
            split_timestamp("2026-12-01T10:00:00+02:00 hello"),
            (Some("2026-12-01T10:00:00+02:00"), "hello")
        );
        assert_eq!(
            split_timestamp("2026-12-01T10:00:00Z"),
            (Some("2026-12-01T10:00:00Z"), "")
        );
        assert_eq!(
            split_timestamp("2026-12-01T10:00:00Z "),
            (Some("2026-12-01T10:00:00Z"), "")
        );
        for plain in [
            "hello world",
            "",
            "2026-12-01 10:00:00 a date but not the kubelet's",
            "2026-12-01T10:00:00.Z fraction without digits",
            "2026-12-01T10:00:00Zextra",
            "2026-1é-01T10:00:00Z multibyte",
        ] {
            assert_eq!(split_timestamp(plain), (None, plain));
        }
    }

    #[test]
    fn a_cargo_test_line_is_plain_text_then_green_ok() {
        let segments = ansi_segments("test ledger::tests::sums ... \u{1b}[32mok\u{1b}[0m");
        assert_eq!(texts(&segments), ["test ledger::tests::sums ... ", "ok"]);
        assert!(segments[0].style.is_plain());
        assert_eq!(segments[1].style.fg, GREEN);
    }

    #[test]
    fn cargo_compiler_progress_is_bold_green_then_plain() {
        let line = "\u{1b}[1m\u{1b}[32m   Compiling\u{1b}[0m ledger v0.1.0 (/workspace/source)";
        let segments = ansi_segments(line);
        assert_eq!(
            texts(&segments),
            ["   Compiling", " ledger v0.1.0 (/workspace/source)"]
        );
        assert_eq!(
            segments[0].style,
            Style {
                fg: GREEN,
                bold: true,
                ..Style::default()
            }
        );
        assert_eq!(segments[0].style.classes(), "ansi-fg-2 ansi-bold");
        assert_eq!(
            strip_ansi(line),
            "   Compiling ledger v0.1.0 (/workspace/source)"
        );
    }

    #[test]
    fn a_failing_cargo_test_is_red_and_bold_red() {
        let line = "test ledger::tests::leap ... \u{1b}[31mFAILED\u{1b}[0m\n\u{1b}[1;91merror\u{1b}[0m: test failed";
        let segments = ansi_segments(line);
        assert_eq!(
            texts(&segments),
            [
                "test ledger::tests::leap ... ",
                "FAILED",
                "error",
                ": test failed"
            ]
        );
        assert_eq!(segments[1].style.fg, RED);
        assert_eq!(segments[2].style.fg, Some(Color::Indexed(9)));
        assert!(segments[2].style.bold);
    }

    #[test]
    fn go_test_colours_from_the_256_palette_and_true_colour_are_read() {
        // gotestsum and richgo colour `go test` output with 256-palette and true colours.
        let line = "\u{1b}[38;5;34m--- PASS\u{1b}[39m: TestLedger (0.00s) \u{1b}[48;2;255;135;0;4mslow\u{1b}[24;49m done";
        let segments = ansi_segments(line);
        assert_eq!(
            texts(&segments),
            ["--- PASS", ": TestLedger (0.00s) ", "slow", " done"]
        );
        assert_eq!(segments[0].style.fg, Some(Color::Indexed(34)));
        assert_eq!(segments[0].style.inline_css(), "color:#00af00;");
        assert_eq!(segments[0].style.classes(), "");
        assert_eq!(segments[2].style.bg, Some(Color::Rgb(255, 135, 0)));
        assert!(segments[2].style.underline);
        assert_eq!(
            segments[2].style.css(),
            "background-color:#ff8700;text-decoration:underline;"
        );
        assert!(segments[3].style.is_plain());
    }

    #[test]
    fn every_sgr_attribute_turns_on_and_off() {
        let s = ansi_segments(
            "\u{1b}[1;2;3;4;33;44ma\u{1b}[22;23mb\u{1b}[24;39;49mc\u{1b}[97;107md\u{1b}[mx",
        );
        assert_eq!(texts(&s), ["a", "b", "c", "d", "x"]);
        let a = s[0].style;
        assert!(a.bold && a.dim && a.italic && a.underline);
        assert_eq!(
            (a.fg, a.bg),
            (Some(Color::Indexed(3)), Some(Color::Indexed(4)))
        );
        assert_eq!(
            a.classes(),
            "ansi-fg-3 ansi-bg-4 ansi-bold ansi-dim ansi-italic ansi-underline"
        );
        let b = s[1].style;
        assert!(!b.bold && !b.dim && !b.italic && b.underline);
        let c = s[2].style;
        assert!(c.is_plain());
        assert_eq!(
            (s[3].style.fg, s[3].style.bg),
            (Some(Color::Indexed(15)), Some(Color::Indexed(15)))
        );
        assert_eq!(
            s[3].style.css(),
            "color:var(--ansi-15);background-color:var(--ansi-15);"
        );
        assert!(s[4].style.is_plain());
    }

    #[test]
    fn other_escape_sequences_are_dropped_never_shown() {
        let cases = [
            ("\u{1b}[2K\u{1b}[1Gprogress 50%\u{1b}[K", "progress 50%"),
            (
                "\u{1b}[2A\u{1b}[?25lhidden cursor\u{1b}[?25h",
                "hidden cursor",
            ),
            (
                "\u{1b}]8;;https://example.test\u{7}link\u{1b}]8;;\u{7}",
                "link",
            ),
            ("\u{1b}]0;title\u{1b}\\after", "after"),
            ("\u{1b}(Bcharset", "charset"),
            ("bell\u{7} and\r return\u{8}", "bell and return"),
            ("tab\tkept", "tab\tkept"),
            ("cut \u{1b}[", "cut "),
            ("cut \u{1b}[38;5", "cut "),
            ("lone \u{1b}", "lone "),
            ("\u{9b}31mone-byte CSI", "one-byte CSI"),
            ("\u{1b}é accent", "é accent"),
            ("\u{1b}[1é accent", "é accent"),
            ("\u{1b}[38;5;999mbad colour\u{1b}[38;2;1m", "bad colour"),
        ];
        for (line, shown) in cases {
            assert_eq!(strip_ansi(line), shown, "{line:?}");
            let joined: String = ansi_segments(line)
                .iter()
                .map(|s| s.text.as_str())
                .collect();
            assert_eq!(joined, shown, "{line:?}");
        }
        assert_eq!(ansi_segments("\u{9b}31mred")[0].style.fg, RED);
        assert!(ansi_segments("\u{1b}[38;5;999mbad")[0].style.is_plain());
    }

    #[test]
    fn a_clean_line_is_not_copied() {
        assert!(matches!(
            strip_ansi("plain ° text"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(
            strip_ansi("no escapes é"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(ansi_segments("").is_empty());
    }

    #[test]
    fn search_marks_split_segments_across_colours() {
        let segments = ansi_segments("test a ... \u{1b}[32mok\u{1b}[0m then ok");
        let result = find_matches(&["test a ... \u{1b}[32mok\u{1b}[0m then ok"], ". ok", true);
        assert_eq!(
            result.matches,
            [Match {
                line: 0,
                start: 9,
                end: 13
            }]
        );
        let (first, ranges) = result.on_line(0);
        assert_eq!(first, 0);
        let pieces = mark_segments(&segments, &ranges);
        let view: Vec<(&str, Option<usize>, bool)> = pieces
            .iter()
            .map(|p| (p.text.as_str(), p.mark, p.style.fg.is_some()))
            .collect();
        assert_eq!(
            view,
            [
                ("test a ..", None, false),
                (". ", Some(0), false),
                ("ok", Some(0), true),
                (" then ok", None, false)
            ]
        );
        // Marks off character boundaries or past the end spoil nothing.
        let accent = ansi_segments("café au lait");
        let pieces = mark_segments(&accent, &[4..5, 30..40]);
        let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined, "café au lait");
    }

    fn buffer(lines: &[&str]) -> LogBuffer {
        let mut buffer = LogBuffer::new();
        buffer.push_lines(lines.iter().copied());
        buffer
    }

    #[test]
    fn search_counts_every_match_of_every_line_over_the_text_a_reader_sees() {
        let log = buffer(&[
            "2026-12-01T10:00:00Z error: first \u{1b}[31mERROR\u{1b}[0m here",
            "2026-12-01T10:00:01Z nothing",
            "no timestamp error errorerror",
            "",
            "2026-12-01T10:00:02Z Fehler: ÉCHEC échec",
        ]);
        assert_eq!(log.len(), 5);
        let sensitive = log.search("error", true);
        assert_eq!(
            sensitive.matches,
            [
                Match {
                    line: 0,
                    start: 0,
                    end: 5
                },
                Match {
                    line: 2,
                    start: 13,
                    end: 18
                },
                Match {
                    line: 2,
                    start: 19,
                    end: 24
                },
                Match {
                    line: 2,
                    start: 24,
                    end: 29
                },
            ]
        );
        assert!(!sensitive.capped);
        assert_eq!(log.search("error", false).matches.len(), 5);
        assert_eq!(log.search("ERROR", true).matches.len(), 1);
        let accents = log.search("échec", false);
        assert_eq!(accents.matches.len(), 2);
        let line = log.line(4).expect("five lines");
        let first = accents.matches[0];
        assert_eq!(&line.plain[first.start..first.end], "ÉCHEC");
        // The timestamp is not searched; escapes never match.
        assert!(log.search("2026", true).matches.is_empty());
        assert!(log.search("[31m", true).matches.is_empty());
        assert!(log.search("", true).matches.is_empty());
        assert!(log.search("nothing\nno", true).matches.is_empty());
        assert_eq!(
            log.line(0).map(|l| l.timestamp),
            Some(Some("2026-12-01T10:00:00Z"))
        );
        assert_eq!(log.plain(0), Some("error: first ERROR here"));
        assert_eq!(log.plain(3), Some(""));
        assert_eq!(log.plain(5), None);
        assert!(log.line(5).is_none());
        assert_eq!(log.widest(), "no timestamp error errorerror".len());
    }

    #[test]
    fn search_stops_at_the_cap_and_says_so() {
        let line = "x".repeat(100);
        let lines: Vec<&str> = (0..1001).map(|_| line.as_str()).collect();
        let result = find_matches(&lines, "x", true);
        assert_eq!(result.matches.len(), MAX_MATCHES);
        assert!(result.capped);
        assert_eq!(result.matches.last().map(|m| m.line), Some(999));
    }

    #[test]
    fn next_and_previous_wrap_around() {
        assert_eq!(next_match(None, 3), Some(0));
        assert_eq!(next_match(Some(0), 3), Some(1));
        assert_eq!(next_match(Some(2), 3), Some(0));
        assert_eq!(next_match(Some(9), 3), Some(0));
        assert_eq!(previous_match(None, 3), Some(2));
        assert_eq!(previous_match(Some(0), 3), Some(2));
        assert_eq!(previous_match(Some(2), 3), Some(1));
        assert_eq!(previous_match(Some(9), 3), Some(2));
        assert_eq!(next_match(None, 0), None);
        assert_eq!(previous_match(Some(1), 0), None);
    }

    #[test]
    fn the_first_match_is_taken_from_where_the_reader_is() {
        let log = buffer(&["a", "b", "a", "b", "a"]);
        let result = log.search("a", true);
        assert_eq!(result.first_from_line(0), Some(0));
        assert_eq!(result.first_from_line(1), Some(1));
        assert_eq!(result.first_from_line(4), Some(2));
        assert_eq!(result.first_from_line(5), Some(0));
        assert_eq!(log.search("z", true).first_from_line(0), None);
        assert_eq!(result.on_line(3), (2, vec![]));
    }

    #[test]
    fn a_line_is_centred_by_its_scroll_offset() {
        assert_eq!(scroll_top_for_line(0, 20.0, 200.0), 0.0);
        assert_eq!(
            scroll_top_for_line(1202, 20.0, 200.0),
            1202.0 * 20.0 + 10.0 - 100.0
        );
        assert_eq!(scroll_top_for_line(3, f64::NAN, 200.0), 0.0);
        let top = scroll_top_for_line(89_999, 18.0, 600.0);
        let window = visible_window(top, 600.0, 18.0, 100_000, 0);
        let middle = (window.start + window.end) / 2;
        assert!(middle.abs_diff(89_999) <= 1, "{window:?}");
    }

    #[test]
    fn wrapped_lines_take_rows_by_their_width() {
        let lines = [
            "",
            "short",
            &"x".repeat(80),
            &"x".repeat(81),
            "\tindented",
            "ééé",
        ];
        let index = RowIndex::build(&lines, 80);
        assert_eq!(
            (0..6).map(|i| index.rows_of(i)).collect::<Vec<_>>(),
            [1, 1, 1, 2, 1, 1]
        );
        assert_eq!(index.total_rows(), 7);
        assert_eq!(index.lines(), 6);
        assert_eq!(index.offset_of_line(4), 5);
        assert_eq!(index.offset_of_line(99), 7);
        assert_eq!(index.line_at_offset(3), 3);
        assert_eq!(index.line_at_offset(4), 3);
        assert_eq!(index.line_at_offset(5), 4);
        assert_eq!(index.line_at_offset(1000), 5);
        assert_eq!(index.rows_for(&"\t".repeat(11)), 2);
        assert_eq!(RowIndex::new(0).columns(), 1);
        let empty = RowIndex::new(80);
        assert_eq!((empty.line_at_offset(3), empty.total_rows()), (0, 0));
        assert_eq!(empty.visible_lines(0.0, 100.0, 20.0, 3), 0..0);
        // 20 px rows, 40 px viewport at the top: rows 0–1, which are lines 0–1; at row 4, line 3.
        assert_eq!(index.visible_lines(0.0, 40.0, 20.0, 0), 0..2);
        assert_eq!(index.visible_lines(80.0, 20.0, 20.0, 0), 3..4);
        assert_eq!(index.visible_lines(80.0, 20.0, 20.0, 10), 0..6);
        assert_eq!(
            index.scroll_top_for_line(3, 20.0, 40.0),
            3.0 * 20.0 + 20.0 - 20.0
        );
    }

    #[test]
    fn a_buffer_indexes_its_plain_text() {
        let log = buffer(&["2026-12-01T10:00:00Z \u{1b}[31mabcdef\u{1b}[0m", "abc"]);
        let index = RowIndex::of_buffer(&log, 3);
        assert_eq!(index.total_rows(), 3);
    }

    #[test]
    fn line_links_are_one_based_in_the_url_and_zero_based_in_code() {
        assert_eq!(parse_line_anchor("#L1203"), Some(1202));
        assert_eq!(parse_line_anchor("L1"), Some(0));
        assert_eq!(line_anchor(1202), "L1203");
        assert_eq!(
            parse_line_anchor(&format!("#{}", line_anchor(41))),
            Some(41)
        );
        for bad in [
            "#L0",
            "#L",
            "#l12",
            "#L-3",
            "#L+3",
            "#L12a",
            "#1203",
            "",
            "#L99999999999999999999999",
        ] {
            assert_eq!(parse_line_anchor(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_synthetic_log_names_its_needle_once_on_line_ninety_thousand() {
        let lines = synthetic_log(100_000, 7);
        assert_eq!(lines.len(), 100_000);
        let mut log = LogBuffer::new();
        log.push_lines(lines);
        let result = log.search(SYNTHETIC_NEEDLE, true);
        assert_eq!(result.matches.len(), 1);
        assert_eq!(result.matches[0].line + 1, 90_000);
        assert!(log.line(0).is_some_and(|l| l.timestamp.is_some()));
        assert!(log.search("ok", true).matches.len() > 10_000);
    }

    proptest! {
        #[test]
        fn any_text_parses_into_segments_that_join_to_its_plain_text(
            text in "(\\PC|\u{1b}|\u{9b}|\u{7}|\\[|;|m|[0-9]|\\]|\\\\){0,60}"
        ) {
            let segments = ansi_segments(&text);
            let joined: String = segments.iter().map(|s| s.text.as_str()).collect();
            prop_assert_eq!(&joined, &strip_ansi(&text));
            // Only tab and C1 controls other than CSI (which no escape introduces) may remain.
            let shown_control = joined
                .chars()
                .any(|c| c.is_control() && c != '\t' && !(c > '\u{7f}' && c != '\u{9b}'));
            prop_assert!(!shown_control, "a control character is shown: {:?}", joined);
            prop_assert!(segments.iter().all(|s| !s.text.is_empty()));
            let pieces = mark_segments(&segments, &[0..1, 3..7]);
            let marked: String = pieces.iter().map(|p| p.text.as_str()).collect();
            prop_assert_eq!(marked, joined);
        }

        #[test]
        fn search_finds_what_a_plain_scan_of_each_line_finds(
            lines in proptest::collection::vec("[abAB \u{e9}\u{c9}]{0,12}", 0..20),
            term in "[abAB\u{e9}]{1,3}",
        ) {
            let log = {
                let mut log = LogBuffer::new();
                log.push_lines(lines.iter().cloned());
                log
            };
            let expected: Vec<Match> = lines
                .iter()
                .enumerate()
                .flat_map(|(line, text)| {
                    text.match_indices(term.as_str())
                        .map(move |(start, m)| Match { line, start, end: start + m.len() })
                        .collect::<Vec<_>>()
                })
                .collect();
            prop_assert_eq!(log.search(&term, true).matches, expected);
            let folded = log.search(&term, false);
            for m in &folded.matches {
                let text = &lines[m.line][m.start..m.end];
                prop_assert_eq!(text.to_lowercase(), term.to_lowercase());
            }
            prop_assert!(folded.matches.len() >= log.search(&term, true).matches.len());
        }

        #[test]
        fn the_row_index_agrees_with_counting_row_by_row(
            widths in proptest::collection::vec(0usize..300, 0..60),
            columns in 1usize..120,
            probe in 0usize..20_000,
        ) {
            let lines: Vec<String> = widths.iter().map(|w| "x".repeat(*w)).collect();
            let index = RowIndex::build(&lines, columns);
            let mut owner = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                for _ in 0..w.div_ceil(columns).max(1) {
                    owner.push(i);
                }
            }
            prop_assert_eq!(index.total_rows(), owner.len());
            if let Some(&line) = owner.get(probe % owner.len().max(1)) {
                prop_assert_eq!(index.line_at_offset(probe % owner.len()), line);
                prop_assert!(index.offset_of_line(line) <= probe % owner.len());
            }
        }
    }
}
