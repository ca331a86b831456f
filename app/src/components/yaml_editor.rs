//! The YAML of a platform file: highlighted and read-only for everyone, and for the service's owners an
//! editor. The editor is a textarea laid exactly over the same highlighting (its own text transparent, its
//! caret and selection visible), a line-number gutter marking the lines with problems, and the problems
//! themselves, found by `shared::config::validate` in the browser as the owner types: nothing is sent until
//! Preview, which shows the one-file diff the pull request would make; Open PR follows a preview of the text
//! as it is. Keyboard: Tab inserts two spaces, Escape leaves the text, Ctrl/Cmd+Enter previews.
//!
//! The highlighting is a small line tokenizer ([`highlight`]): keys, strings, numbers, keywords, comments and
//! punctuation, enough to read a Kubernetes resource at a glance. It never decides whether a file is valid;
//! the validator does.

use std::collections::BTreeSet;
use std::ops::Range;

use leptos::html::{Button, Textarea, Ul};
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::ApiError;
use shared::auth::Permission;
use shared::config::{Diagnostic, EditFile, RuleContext, parse_platform_path, validate};
use shared::delivery::{ChangePreview, PullRequestView};
use wasm_bindgen::JsCast as _;

use crate::api;
use crate::app::Session;
use crate::components::delivery::{change_view, pull_outcome};

/// What a piece of a YAML line is, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Indentation and the spaces between pieces.
    Space,
    /// A mapping key.
    Key,
    /// `:`, `-`, `|`, `>`, brackets, braces, commas, `---`.
    Punct,
    /// A quoted or plain string, or a line of a block scalar.
    String,
    /// An integer or a float (YAML 1.2 core schema).
    Number,
    /// `true`, `false`, `null`, `~`.
    Keyword,
    /// `# …` to the end of the line.
    Comment,
    /// `&anchor`, `*alias`, `!tag`.
    Meta,
}

impl TokenKind {
    /// Its CSS class (`style/tower.css`, Config section).
    fn class(self) -> &'static str {
        match self {
            TokenKind::Space => "",
            TokenKind::Key => "y-key",
            TokenKind::Punct => "y-punct",
            TokenKind::String => "y-str",
            TokenKind::Number => "y-num",
            TokenKind::Keyword => "y-kw",
            TokenKind::Comment => "y-comment",
            TokenKind::Meta => "y-meta",
        }
    }
}

/// One coloured piece of a line: its kind and its byte range in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where it is in its line, in bytes.
    pub range: Range<usize>,
}

/// What the tokenizer carries from one line to the next: the indentation a block scalar's (`|`, `>`) lines
/// must exceed, while one is open.
#[derive(Debug, Default)]
struct LineState {
    block_parent: Option<usize>,
}

/// The tokens of every line of `text` (lines split at `\n`; a trailing newline gives a last, empty line, as
/// the textarea shows it). The tokens of a line cover it whole, in order.
pub fn highlight(text: &str) -> Vec<Vec<Token>> {
    let mut state = LineState::default();
    text.split('\n')
        .map(|line| line_tokens(line, &mut state))
        .collect()
}

fn push(tokens: &mut Vec<Token>, kind: TokenKind, range: Range<usize>) {
    if range.is_empty() {
        return;
    }
    // Neighbours of one kind merge: fewer spans in the DOM.
    if let Some(last) = tokens.last_mut()
        && last.kind == kind
        && last.range.end == range.start
    {
        last.range.end = range.end;
        return;
    }
    tokens.push(Token { kind, range });
}

/// The number of leading spaces of `line`.
fn indentation(line: &str) -> usize {
    line.bytes().take_while(|b| *b == b' ').count()
}

fn line_tokens(line: &str, state: &mut LineState) -> Vec<Token> {
    let bytes = line.as_bytes();
    let mut tokens = Vec::new();
    let indent = indentation(line);
    // Inside a block scalar: blank lines and lines indented deeper than its parent are its text.
    if let Some(parent) = state.block_parent {
        if line.trim().is_empty() {
            push(&mut tokens, TokenKind::Space, 0..line.len());
            return tokens;
        }
        if indent > parent {
            push(&mut tokens, TokenKind::Space, 0..indent);
            push(&mut tokens, TokenKind::String, indent..line.len());
            return tokens;
        }
        state.block_parent = None;
    }
    push(&mut tokens, TokenKind::Space, 0..indent);
    let mut pos = indent;
    if bytes.get(pos) == Some(&b'#') {
        push(&mut tokens, TokenKind::Comment, pos..line.len());
        return tokens;
    }
    // Document markers.
    if indent == 0 && (line.starts_with("---") || line.starts_with("...")) {
        let end = 3;
        if bytes.get(end).is_none_or(|b| *b == b' ') {
            push(&mut tokens, TokenKind::Punct, 0..end);
            pos = end;
        }
    }
    // The node the line's value belongs to starts here: a block scalar's lines must be indented deeper.
    let mut owner = indent;
    // Sequence dashes, possibly several (`- - a`).
    loop {
        let spaces = bytes[pos..].iter().take_while(|b| **b == b' ').count();
        let at = pos + spaces;
        if bytes.get(at) == Some(&b'-') && bytes.get(at + 1).is_none_or(|b| *b == b' ') {
            push(&mut tokens, TokenKind::Space, pos..at);
            push(&mut tokens, TokenKind::Punct, at..at + 1);
            owner = at;
            pos = at + 1;
        } else {
            break;
        }
    }
    let spaces = bytes[pos..].iter().take_while(|b| **b == b' ').count();
    push(&mut tokens, TokenKind::Space, pos..pos + spaces);
    pos += spaces;
    if pos < line.len()
        && bytes[pos] != b'#'
        && let Some((key_end, colon)) = key_at(line, pos)
    {
        owner = pos;
        push(&mut tokens, TokenKind::Key, pos..key_end);
        push(&mut tokens, TokenKind::Space, key_end..colon);
        push(&mut tokens, TokenKind::Punct, colon..colon + 1);
        pos = colon + 1;
    }
    value_tokens(line, pos, owner, state, &mut tokens);
    tokens
}

/// Where a mapping key starting at `start` ends and where its `:` is, when the line has one there.
fn key_at(line: &str, start: usize) -> Option<(usize, usize)> {
    let bytes = line.as_bytes();
    let key_end = match bytes[start] {
        quote @ (b'"' | b'\'') => quoted_end(bytes, start, quote),
        b'[' | b'{' | b'&' | b'*' | b'!' | b'|' | b'>' | b'%' | b'@' | b'`' => return None,
        _ => {
            // A plain key runs to the first `: ` (or a `:` ending the line), before any ` #`.
            let mut i = start;
            loop {
                if i >= bytes.len() {
                    return None;
                }
                if bytes[i] == b'#' && i > start && bytes[i - 1] == b' ' {
                    return None;
                }
                if bytes[i] == b':' && bytes.get(i + 1).is_none_or(|b| *b == b' ') {
                    break;
                }
                i += 1;
            }
            let mut end = i;
            while end > start && bytes[end - 1] == b' ' {
                end -= 1;
            }
            return Some((end, i));
        }
    };
    let spaces = bytes[key_end..].iter().take_while(|b| **b == b' ').count();
    let colon = key_end + spaces;
    (bytes.get(colon) == Some(&b':') && bytes.get(colon + 1).is_none_or(|b| *b == b' '))
        .then_some((key_end, colon))
}

/// The end (exclusive, after the closing quote) of a quoted scalar starting at `start`, or the line's end
/// when it is not closed on this line.
fn quoted_end(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            // `''` is an escaped quote in a single-quoted scalar.
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The tokens of a line from `pos` on, after any key: scalars, flow brackets, comments, block indicators.
fn value_tokens(
    line: &str,
    mut pos: usize,
    owner: usize,
    state: &mut LineState,
    tokens: &mut Vec<Token>,
) {
    let bytes = line.as_bytes();
    let mut flow = 0_usize;
    let mut first = true;
    while pos < bytes.len() {
        let start = pos;
        match bytes[pos] {
            b' ' => {
                pos += bytes[pos..].iter().take_while(|b| **b == b' ').count();
                push(tokens, TokenKind::Space, start..pos);
                continue;
            }
            b'#' if start == 0 || bytes[start - 1] == b' ' => {
                push(tokens, TokenKind::Comment, start..bytes.len());
                return;
            }
            quote @ (b'"' | b'\'') => {
                pos = quoted_end(bytes, start, quote);
                push(tokens, TokenKind::String, start..pos);
            }
            b'|' | b'>' if first && flow == 0 => {
                pos += 1;
                pos += bytes[pos..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit() || **b == b'+' || **b == b'-')
                    .count();
                push(tokens, TokenKind::Punct, start..pos);
                state.block_parent = Some(owner);
            }
            b'&' | b'*' | b'!' => {
                pos += bytes[pos..]
                    .iter()
                    .take_while(|b| !matches!(b, b' ' | b',' | b'[' | b']' | b'{' | b'}'))
                    .count();
                push(tokens, TokenKind::Meta, start..pos);
            }
            b'[' | b'{' => {
                flow += 1;
                pos += 1;
                push(tokens, TokenKind::Punct, start..pos);
            }
            b']' | b'}' | b',' => {
                if bytes[pos] != b',' {
                    flow = flow.saturating_sub(1);
                }
                pos += 1;
                push(tokens, TokenKind::Punct, start..pos);
            }
            b':' if bytes.get(pos + 1).is_none_or(|b| *b == b' ') => {
                pos += 1;
                push(tokens, TokenKind::Punct, start..pos);
            }
            _ => {
                // A plain scalar: to a comment, or in flow to the next separator; trailing spaces are not
                // part of it.
                while pos < bytes.len() {
                    let b = bytes[pos];
                    if b == b'#' && bytes[pos - 1] == b' ' {
                        break;
                    }
                    if flow > 0 && matches!(b, b',' | b']' | b'}') {
                        break;
                    }
                    if flow > 0 && b == b':' && bytes.get(pos + 1).is_none_or(|b| *b == b' ') {
                        break;
                    }
                    pos += 1;
                }
                let mut end = pos;
                while end > start && bytes[end - 1] == b' ' {
                    end -= 1;
                }
                push(tokens, plain_kind(&line[start..end]), start..end);
                push(tokens, TokenKind::Space, end..pos);
            }
        }
        first = false;
    }
}

/// What a plain scalar resolves to under YAML 1.2's core schema, for its colour.
fn plain_kind(text: &str) -> TokenKind {
    const KEYWORDS: [&str; 10] = [
        "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~",
    ];
    if KEYWORDS.contains(&text) {
        return TokenKind::Keyword;
    }
    if is_number(text) {
        TokenKind::Number
    } else {
        TokenKind::String
    }
}

fn is_number(text: &str) -> bool {
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    if let Some(octal) = text.strip_prefix("0o") {
        return digits(octal, 8);
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return digits(hex, 16);
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    // [0-9]+ | ( \.[0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (digits(whole, 10) && (fraction.is_empty() || digits(fraction, 10)))
                || (whole.is_empty() && digits(fraction, 10))
        }
        None => digits(mantissa, 10),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e), 10));
    mantissa_ok && exponent_ok
}

/// The caret offset (in UTF-16 units, as a textarea counts) of `line`:`column` (both from 1, the column in
/// characters) in `text`; past the end of the text, its end.
pub fn caret_offset(text: &str, line: u32, column: u32) -> u32 {
    let mut offset = 0_u32;
    let wanted = usize::try_from(line.max(1)).unwrap_or(usize::MAX);
    for (index, content) in text.split('\n').enumerate() {
        let units = |s: &str| u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX);
        if index + 1 == wanted {
            let skip = usize::try_from(column.max(1) - 1).unwrap_or(usize::MAX);
            let before: String = content.chars().take(skip).collect();
            return offset.saturating_add(units(&before));
        }
        offset = offset.saturating_add(units(content)).saturating_add(1);
    }
    offset.saturating_sub(1)
}

/// The columns (from 1, in characters) at which `tokens` start and end (exclusive) in `line`.
fn columns(line: &str, range: &Range<usize>) -> (u32, u32) {
    let count = |s: &str| u32::try_from(s.chars().count()).unwrap_or(u32::MAX);
    let start = count(&line[..range.start]) + 1;
    (start, start + count(&line[range.clone()]))
}

/// `text` highlighted, one span per token; tokens where a diagnostic points are marked. `marks` holds
/// `(line, column)` pairs.
fn highlighted_lines(text: &str, marks: &BTreeSet<(u32, u32)>) -> AnyView {
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len().saturating_sub(1);
    highlight(text)
        .into_iter()
        .zip(lines)
        .enumerate()
        .map(|(index, (tokens, line))| {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            let marked: Vec<u32> = marks
                .range((number, 0)..=(number, u32::MAX))
                .map(|(_, column)| *column)
                .collect();
            let spans = tokens
                .into_iter()
                .map(|token| {
                    let piece = line[token.range.clone()].to_string();
                    let (from, to) = columns(line, &token.range);
                    let error = token.kind != TokenKind::Space
                        && marked.iter().any(|c| (from..to.max(from + 1)).contains(c));
                    match (token.kind, error) {
                        (TokenKind::Space, _) => piece.into_any(),
                        (kind, error) => {
                            let class = if error {
                                format!("{} y-err", kind.class())
                            } else {
                                kind.class().to_string()
                            };
                            view! { <span class=class>{piece}</span> }.into_any()
                        }
                    }
                })
                .collect_view();
            view! { {spans}{(index < last).then_some("\n")} }
        })
        .collect_view()
        .into_any()
}

/// YAML, highlighted and read-only.
pub fn yaml_block(text: &str, testid: &'static str) -> AnyView {
    view! { <pre class="yaml" data-testid=testid>{highlighted_lines(text, &BTreeSet::new())}</pre> }
        .into_any()
}

/// A platform file in git: its YAML for everyone; for those who may edit it (`decide(EditConfig)` on the
/// service's owner team) and only when Tower can open pull requests (`writable`), an Edit button that opens
/// the editor in its place.
#[component]
pub fn YamlFile(
    /// The service whose Config tab this is.
    service: String,
    /// The file's path in `application-repositories`.
    path: String,
    /// Its content on main.
    content: String,
    /// What the rules need, as the server sent it.
    rules: StoredValue<RuleContext>,
    /// The service's owner team.
    owner: Signal<String>,
    /// Whether Tower can open pull requests (git is connected).
    writable: bool,
) -> impl IntoView {
    let session = expect_context::<Session>();
    let decision = Memo::new(move |_| session.decide(Permission::EditConfig, Some(&owner.get())));
    let editing = RwSignal::new(false);
    let edit_button: NodeRef<Button> = NodeRef::new();
    // Leaving the editor gives the focus back to Edit, so a keyboard user stays where they were.
    let refocus = StoredValue::new(false);
    Effect::new(move |_| {
        if let Some(button) = edit_button.get()
            && refocus.get_value()
        {
            refocus.set_value(false);
            let _ = button.focus();
        }
    });
    let label = format!("Edit {path}");
    let path_attr = path.clone();
    view! {
        <div class="yaml-file" data-testid="yaml-file" data-path=path_attr>
            {move || {
                if editing.get() && decision.get().allowed() {
                    view! {
                        <YamlEditor
                            service=service.clone()
                            path=path.clone()
                            original=content.clone()
                            rules
                            on_close=Callback::new(move |()| {
                                refocus.set_value(true);
                                editing.set(false);
                            })
                        />
                    }
                    .into_any()
                } else {
                    let can_edit = writable && decision.get().allowed();
                    view! {
                        {can_edit.then(|| view! {
                            <div class="yaml-file-actions">
                                <button type="button" class="edit-button" data-testid="edit-button" node_ref=edit_button
                                    aria-label=label.clone() on:click=move |_| editing.set(true)>"Edit"</button>
                            </div>
                        })}
                        {yaml_block(&content, "intent-yaml")}
                    }
                    .into_any()
                }
            }}
        </div>
    }
}

/// Which request is under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Busy {
    Previewing,
    Opening,
}

/// The editor of one file: text over highlighting, gutter, problems, Preview and Open PR.
#[component]
fn YamlEditor(
    service: String,
    path: String,
    original: String,
    rules: StoredValue<RuleContext>,
    on_close: Callback<()>,
) -> impl IntoView {
    let text = RwSignal::new(original.clone());
    // The textarea holds the text from then on; setting it again on each change would fight the caret.
    let initial = original.clone();
    let path = StoredValue::new(path);
    let service = StoredValue::new(service);
    let kind =
        path.with_value(|p| parse_platform_path(p).map_or("platform file", |t| t.kind.name()));
    // Checked in the browser on every change, exactly as the server will check it.
    let local = Memo::new(move |_| {
        text.with(|t| path.with_value(|p| rules.with_value(|r| validate(p, t, r))))
    });
    // The server's problems with the text it was sent, shown while the text is still that text.
    let remote: RwSignal<Option<(String, Vec<Diagnostic>)>> = RwSignal::new(None);
    let shown = Memo::new(move |_| {
        let mut all = local.get();
        remote.with(|remote| {
            if let Some((sent, diagnostics)) = remote
                && text.with(|t| t == sent)
            {
                all.extend(diagnostics.iter().cloned());
            }
        });
        all.sort();
        all.dedup();
        all
    });
    let marks = Memo::new(move |_| {
        shown.with(|d| {
            d.iter()
                .map(|d| (d.line, d.column))
                .collect::<BTreeSet<_>>()
        })
    });
    let error_lines =
        Memo::new(move |_| shown.with(|d| d.iter().map(|d| d.line).collect::<BTreeSet<_>>()));
    let line_count = Memo::new(move |_| text.with(|t| t.split('\n').count()));
    let changed = Memo::new(move |_| text.with(|t| *t != original));

    let preview: RwSignal<Option<(String, ChangePreview)>> = RwSignal::new(None);
    let opened: RwSignal<Option<PullRequestView>> = RwSignal::new(None);
    let failure: RwSignal<Option<ApiError>> = RwSignal::new(None);
    let busy: RwSignal<Option<Busy>> = RwSignal::new(None);
    // The preview on screen is of the text as it is now.
    let fresh_preview = Memo::new(move |_| {
        preview.with(|p| p.as_ref().is_some_and(|(sent, _)| text.with(|t| t == sent)))
    });
    let can_preview =
        Memo::new(move |_| changed.get() && shown.with(Vec::is_empty) && busy.get().is_none());
    let can_open = Memo::new(move |_| can_preview.get() && fresh_preview.get());
    let why_not = move || {
        if !shown.with(Vec::is_empty) {
            "Mend the problems above to preview."
        } else if !changed.get() {
            "No change yet: edit the text to propose one."
        } else if !fresh_preview.get() {
            "Preview the change before opening its pull request."
        } else {
            "The preview shows exactly what the pull request writes."
        }
    };

    let send = move |submit: bool| {
        if !can_preview.get_untracked() || (submit && !can_open.get_untracked()) {
            return;
        }
        let content = text.get_untracked();
        let edit = EditFile {
            path: path.get_value(),
            content: content.clone(),
        };
        let service = service.get_value();
        failure.set(None);
        busy.set(Some(if submit {
            Busy::Opening
        } else {
            Busy::Previewing
        }));
        spawn_local(async move {
            let refused = if submit {
                match api::submit_config_edit(&service, &edit).await {
                    Ok(pr) => {
                        opened.try_set(Some(pr));
                        None
                    }
                    Err(error) => Some(error),
                }
            } else {
                match api::preview_config_edit(&service, &edit).await {
                    Ok(change) => {
                        preview.try_set(Some((content.clone(), change)));
                        None
                    }
                    Err(error) => Some(error),
                }
            };
            match refused {
                // 422: the server's own check found problems; they show like the browser's.
                Some(error) if !error.diagnostics.is_empty() => {
                    remote.try_set(Some((content, error.diagnostics)));
                }
                Some(error) => {
                    failure.try_set(Some(error));
                }
                None => {}
            }
            busy.try_set(None);
        });
    };

    let textarea: NodeRef<Textarea> = NodeRef::new();
    let problems: NodeRef<Ul> = NodeRef::new();
    let preview_button: NodeRef<Button> = NodeRef::new();
    let cancel_button: NodeRef<Button> = NodeRef::new();
    // The text gets the focus when the editor opens.
    Effect::new(move |_| {
        if let Some(area) = textarea.get() {
            let _ = area.focus();
        }
    });
    let go_to = move |line: u32, column: u32| {
        let Some(area) = textarea.get_untracked() else {
            return;
        };
        let offset = text.with_untracked(|t| caret_offset(t, line, column));
        let _ = area.focus();
        let _ = area.set_selection_range(offset, offset);
        // The textarea is as tall as its text, so the page scrolls to the line, not the textarea.
        if let Some(gutter_line) = area
            .closest(".editor-frame")
            .ok()
            .flatten()
            .and_then(|frame| {
                frame
                    .query_selector(&format!("[data-line=\"{line}\"]"))
                    .ok()
                    .flatten()
            })
        {
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_block(web_sys::ScrollLogicalPosition::Nearest);
            gutter_line.scroll_into_view_with_scroll_into_view_options(&options);
        }
    };
    // Escape leaves the text for the next control: the first problem, else Preview, else Cancel.
    let leave = move || {
        let first_problem = problems
            .get_untracked()
            .and_then(|list| list.query_selector("button").ok().flatten())
            .and_then(|b| b.dyn_into::<web_sys::HtmlElement>().ok());
        if let Some(problem) = first_problem {
            let _ = problem.focus();
        } else if let Some(button) = preview_button
            .get_untracked()
            .filter(|_| can_preview.get_untracked())
        {
            let _ = button.focus();
        } else if let Some(button) = cancel_button.get_untracked() {
            let _ = button.focus();
        }
    };
    let on_keydown = move |event: web_sys::KeyboardEvent| {
        let plain = !event.ctrl_key() && !event.meta_key() && !event.alt_key();
        match event.key().as_str() {
            "Tab" if plain && !event.shift_key() => {
                event.prevent_default();
                if let Some(area) = textarea.get_untracked() {
                    insert_text(&area, "  ");
                    text.set(area.value());
                }
            }
            "Escape" => {
                event.prevent_default();
                leave();
            }
            "Enter" if event.ctrl_key() || event.meta_key() => {
                event.prevent_default();
                send(false);
            }
            _ => {}
        }
    };
    let label = path.with_value(|p| format!("YAML of {p}"));
    let described = path.with_value(|p| format!("problems-{}", p.replace(['/', '.'], "-")));

    view! {
        <div class="yaml-editor" data-testid="yaml-editor" data-path=path.get_value()>
            <div class="editor-frame">
                <div class="editor-gutter" aria-hidden="true" data-testid="gutter">
                    {move || {
                        let errors = error_lines.get();
                        (1..=line_count.get()).map(|n| {
                            let number = u32::try_from(n).unwrap_or(u32::MAX);
                            let error = errors.contains(&number);
                            view! {
                                <span class="ln" class:ln-error=error data-testid="gutter-line" data-line=number
                                    data-error=error.then_some("true")>{number}</span>
                            }
                        }).collect_view()
                    }}
                </div>
                <div class="editor-code">
                    <div class="editor-layer">
                        <pre class="yaml editor-highlight" aria-hidden="true">
                            {move || text.with(|t| marks.with(|m| highlighted_lines(t, m)))}
                            // A last empty line has no height in a <pre>; the textarea shows it.
                            {move || text.with(|t| t.ends_with('\n')).then_some(" ")}
                        </pre>
                        <textarea
                            node_ref=textarea
                            class="editor-input"
                            data-testid="yaml-input"
                            aria-label=label
                            aria-describedby=described.clone()
                            aria-invalid=move || (!shown.with(Vec::is_empty)).to_string()
                            spellcheck="false"
                            autocomplete="off"
                            autocapitalize="off"
                            wrap="off"
                            prop:value=initial
                            on:input=move |event| text.set(event_target_value(&event))
                            on:keydown=on_keydown
                        ></textarea>
                    </div>
                </div>
            </div>
            <div class="editor-problems" id=described>
                {move || {
                    let count = shown.with(Vec::len);
                    if count == 0 {
                        view! {
                            <p class="problems-none" role="status" data-testid="diagnostics-ok">
                                <span class="glyph" aria-hidden="true">"✓"</span>
                                {format!(" Passes the {kind} schema and Tower's rules.")}
                            </p>
                        }.into_any()
                    } else {
                        view! {
                            <p class="problems-count" role="status" data-testid="diagnostics-count">
                                <span class="glyph" aria-hidden="true">"✕"</span>
                                {format!(" {count} problem{} — select one to go to it.", if count == 1 { "" } else { "s" })}
                            </p>
                        }.into_any()
                    }
                }}
                <ul class="diagnostics" data-testid="diagnostics" node_ref=problems>
                    {move || shown.get().into_iter().map(|d| {
                        let (line, column) = (d.line, d.column);
                        view! {
                            <li>
                                <button type="button" class="diagnostic" data-testid="diagnostic"
                                    data-line=line data-column=column data-field=d.field.clone()
                                    on:click=move |_| go_to(line, column)>
                                    <span class="mono diagnostic-at">{format!("{line}:{column}")}</span>
                                    {(!d.field.is_empty()).then(|| view! { <span class="mono diagnostic-field">{d.field.clone()}</span> })}
                                    <span class="diagnostic-message">{d.message.clone()}</span>
                                </button>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            </div>
            <div class="form-actions editor-actions">
                <button type="button" class="primary" data-testid="preview-button" node_ref=preview_button
                    disabled=move || !can_preview.get() on:click=move |_| send(false)>
                    {move || if busy.get() == Some(Busy::Previewing) { "Previewing…" } else { "Preview" }}
                </button>
                <button type="button" data-testid="submit-button" disabled=move || !can_open.get()
                    on:click=move |_| send(true)>
                    {move || if busy.get() == Some(Busy::Opening) { "Opening the PR…" } else { "Open PR" }}
                </button>
                <button type="button" class="link" data-testid="cancel-edit" node_ref=cancel_button
                    on:click=move |_| on_close.run(())>"Cancel"</button>
                <span class="muted small" data-testid="editor-hint">
                    {why_not}" Ctrl+Enter previews; Esc leaves the text."
                </span>
            </div>
            {move || failure.get().map(|error| view! {
                <p class="error-inline" role="alert" data-testid="edit-error">
                    {format!("Tower did not take the change: {error}")}
                </p>
            })}
            {move || preview.with(|p| p.as_ref().filter(|_| fresh_preview.get()).map(|(_, change)| change_view(change)))}
            {move || opened.get().map(|pr| view! {
                <div class="editor-outcome">
                    {pull_outcome(&pr)}
                    {pr.reused.then(|| view! { <span class="chip tone-progress" data-testid="pr-reused">
                        <span class="glyph" aria-hidden="true">"↻"</span>"reused"</span> })}
                </div>
            })}
        </div>
    }
}

/// Types `inserted` over the selection as the user would, so the browser's undo history keeps it; where
/// the browser no longer supports that, the text is spliced and the caret put after it.
fn insert_text(area: &web_sys::HtmlTextAreaElement, inserted: &str) {
    let typed = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|document| {
            let exec = js_sys::Reflect::get(&document, &"execCommand".into()).ok()?;
            let exec: js_sys::Function = exec.dyn_into().ok()?;
            exec.call3(
                &document,
                &"insertText".into(),
                &false.into(),
                &inserted.into(),
            )
            .ok()?
            .as_bool()
        })
        .unwrap_or(false);
    if typed {
        return;
    }
    let start = area.selection_start().ok().flatten().unwrap_or(0);
    let end = area.selection_end().ok().flatten().unwrap_or(start);
    if area
        .set_range_text_with_start_and_end(inserted, start, end)
        .is_ok()
    {
        let caret = start + u32::try_from(inserted.encode_utf16().count()).unwrap_or(0);
        let _ = area.set_selection_range(caret, caret);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Vec<(TokenKind, std::string::String)>> {
        let lines: Vec<&str> = text.split('\n').collect();
        highlight(text)
            .into_iter()
            .zip(lines)
            .map(|(tokens, line)| {
                tokens
                    .into_iter()
                    .filter(|t| t.kind != TokenKind::Space)
                    .map(|t| (t.kind, line[t.range].to_string()))
                    .collect()
            })
            .collect()
    }

    use TokenKind::{Comment, Key, Keyword, Meta, Number, Punct, String as Str};

    fn t(kind: TokenKind, text: &str) -> (TokenKind, std::string::String) {
        (kind, text.to_string())
    }

    #[test]
    fn keys_strings_numbers_keywords_and_comments_have_their_own_colours() {
        let got = kinds(
            "spec:\n  version: 3f2a9c1 # pinned\n  replicas: 3\n  autoDeploy: false\n  name: \"a: b\"",
        );
        assert_eq!(got[0], vec![t(Key, "spec"), t(Punct, ":")]);
        assert_eq!(
            got[1],
            vec![
                t(Key, "version"),
                t(Punct, ":"),
                t(Str, "3f2a9c1"),
                t(Comment, "# pinned")
            ]
        );
        assert_eq!(
            got[2],
            vec![t(Key, "replicas"), t(Punct, ":"), t(Number, "3")]
        );
        assert_eq!(
            got[3],
            vec![t(Key, "autoDeploy"), t(Punct, ":"), t(Keyword, "false")]
        );
        assert_eq!(
            got[4],
            vec![t(Key, "name"), t(Punct, ":"), t(Str, "\"a: b\"")]
        );
    }

    #[test]
    fn sequences_flow_collections_and_anchors_are_read() {
        let got = kinds(
            "- database: payments\n- - x\ntags: [a, 1, {k: v}]\nbase: &b 1.5e3\nuse: *b\n# all comment",
        );
        assert_eq!(
            got[0],
            vec![
                t(Punct, "-"),
                t(Key, "database"),
                t(Punct, ":"),
                t(Str, "payments")
            ]
        );
        assert_eq!(got[1], vec![t(Punct, "-"), t(Punct, "-"), t(Str, "x")]);
        assert_eq!(
            got[2],
            vec![
                t(Key, "tags"),
                t(Punct, ":"),
                t(Punct, "["),
                t(Str, "a"),
                t(Punct, ","),
                t(Number, "1"),
                t(Punct, ","),
                t(Punct, "{"),
                t(Str, "k"),
                t(Punct, ":"),
                t(Str, "v"),
                t(Punct, "}]")
            ]
        );
        assert_eq!(
            got[3],
            vec![
                t(Key, "base"),
                t(Punct, ":"),
                t(Meta, "&b"),
                t(Number, "1.5e3")
            ]
        );
        assert_eq!(got[4], vec![t(Key, "use"), t(Punct, ":"), t(Meta, "*b")]);
        assert_eq!(got[5], vec![t(Comment, "# all comment")]);
    }

    #[test]
    fn block_scalars_are_text_until_the_indentation_comes_back() {
        let got = kinds("script: |\n  echo: not a key\n\n  # not a comment\nnext: 1");
        assert_eq!(got[0], vec![t(Key, "script"), t(Punct, ":"), t(Punct, "|")]);
        assert_eq!(got[1], vec![t(Str, "echo: not a key")]);
        assert_eq!(got[2], vec![]);
        assert_eq!(got[3], vec![t(Str, "# not a comment")]);
        assert_eq!(got[4], vec![t(Key, "next"), t(Punct, ":"), t(Number, "1")]);
    }

    #[test]
    fn tokens_cover_every_line_whole() {
        for text in [
            "a: 'it''s' # c\n  - [x, \"y\\\"z\"]\n\u{e9}t\u{e9}: caf\u{e9}  \n",
            "key: \"unterminated\n: odd\n-\n--- \n",
        ] {
            for (tokens, line) in highlight(text).into_iter().zip(text.split('\n')) {
                let mut at = 0;
                for token in tokens {
                    assert_eq!(token.range.start, at, "{line:?}");
                    at = token.range.end;
                }
                assert_eq!(at, line.len(), "{line:?}");
            }
        }
    }

    #[test]
    fn numbers_follow_the_core_schema() {
        for number in [
            "0", "-12", "+3", "1.5", ".5", "1e3", "2.E-4", "0o17", "0xff", ".inf", "-.Inf", ".nan",
        ] {
            assert!(is_number(number), "{number}");
        }
        for text in ["3f2a9c1", "1.4.0", "1_000", "0o8", "e3", ".", "-", "0x"] {
            assert!(!is_number(text), "{text}");
        }
    }

    #[test]
    fn the_caret_goes_to_a_diagnostic_in_utf16_units() {
        let text = "a: 1\n\u{e9}\u{1f600}x: 2\n";
        assert_eq!(caret_offset(text, 1, 1), 0);
        assert_eq!(caret_offset(text, 2, 1), 5);
        // é is one unit, the emoji two.
        assert_eq!(caret_offset(text, 2, 3), 8);
        assert_eq!(caret_offset(text, 3, 1), 13);
        assert_eq!(caret_offset(text, 9, 1), 13);
    }
}
