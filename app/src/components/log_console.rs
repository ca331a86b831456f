//! The log console of one pipeline step: its container log streamed over SSE in batches, kept whole in a
//! `shared` [`LogBuffer`] outside the reactive graph, with only the lines in view in the DOM. Follow,
//! timestamps, wrap, ANSI colours, download, line links (`#L1203`), and search over every line (not the DOM)
//! with a match count and next/previous. Its code is a separate wasm module, fetched when a step is opened.

use std::ops::Range;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::poll_fn;
use futures::{FutureExt as _, StreamExt as _};
use gloo_net::eventsource::futures::{EventSource, EventSourceSubscription};
use leptos::ev::KeyboardEvent;
use leptos::html::{Div, Input, Span};
use leptos::lazy;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::api::LOG_END_EVENT;
use shared::pipelines::console::{
    Color, LogBuffer, RowIndex, SearchResult, ansi_segments, line_anchor, mark_segments,
    next_match, previous_match, scroll_top_for_line,
};
use shared::pipelines::{LOG_CHUNK_EVENT, LogChunk};
use shared::rows::visible_window;
use wasm_bindgen::JsCast as _;
use wasm_bindgen::prelude::Closure;

use crate::api::{self, StepRef, StreamRefusal};

/// Every row's height in pixels (a wrapped line takes several rows); the CSS line height matches it.
const ROW_HEIGHT: f64 = 18.0;
/// Lines put in the DOM above and below the ones in view, so a fast scroll shows no gap.
const OVERSCAN: usize = 30;
/// Columns of the line-number gutter (`.console-ln` is this wide).
const NUMBER_COLUMNS: usize = 8;
/// Columns of the timestamp gutter when shown (`.console-ts`).
const TIMESTAMP_COLUMNS: usize = 32;
/// How often, at most, a search runs again while lines stream in.
const RESEARCH_DELAY: Duration = Duration::from_millis(250);

/// Where the stream stands, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StreamState {
    Connecting,
    Streaming,
    Ended,
    /// 403, or a guest: logs are for the service's owners.
    OwnerOnly(String),
    /// 410: the step's pod is gone and nothing kept its log; the server's words.
    Gone(String),
    /// Any other refusal, in Tower's words.
    Refused(String),
    /// The connection failed; a retry may work.
    Dropped(String),
}

/// The lines, outside the reactive graph: a 100,000-line log is one value, not 100,000 signals.
#[derive(Debug, Default)]
struct Lines {
    buffer: LogBuffer,
    /// Rows per line when wrapping, kept in step with `buffer`.
    wrap: Option<RowIndex>,
    /// The longest plain line in characters, for the width of an unwrapped console.
    widest: usize,
}

impl Lines {
    fn push(&mut self, lines: Vec<String>) {
        let from = self.buffer.len();
        self.buffer.push_lines(lines);
        for i in from..self.buffer.len() {
            let plain = self.buffer.plain(i).unwrap_or_default();
            self.widest = self.widest.max(plain.chars().count());
            if let Some(wrap) = self.wrap.as_mut() {
                wrap.push(plain);
            }
        }
    }

    fn clear(&mut self) {
        let columns = self.wrap.as_ref().map(RowIndex::columns);
        *self = Self::default();
        self.wrap = columns.map(RowIndex::new);
    }

    /// Top and height in pixels of line `i`.
    fn place(&self, i: usize) -> (f64, f64) {
        match &self.wrap {
            Some(wrap) => (
                wrap.offset_of_line(i) as f64 * ROW_HEIGHT,
                wrap.rows_of(i).max(1) as f64 * ROW_HEIGHT,
            ),
            None => (i as f64 * ROW_HEIGHT, ROW_HEIGHT),
        }
    }

    fn total_height(&self) -> f64 {
        match &self.wrap {
            Some(wrap) => wrap.total_rows() as f64 * ROW_HEIGHT,
            None => self.buffer.len() as f64 * ROW_HEIGHT,
        }
    }

    /// The lines to put in the DOM for a scroll offset and viewport.
    fn window(&self, scroll_top: f64, viewport: f64, overscan: usize) -> Range<usize> {
        match &self.wrap {
            Some(wrap) => wrap.visible_lines(scroll_top, viewport, ROW_HEIGHT, overscan),
            None => visible_window(
                scroll_top,
                viewport,
                ROW_HEIGHT,
                self.buffer.len(),
                overscan,
            ),
        }
    }

    /// The scroll offset that puts line `i` in the middle of the viewport.
    fn scroll_top_for(&self, i: usize, viewport: f64) -> f64 {
        match &self.wrap {
            Some(wrap) => wrap.scroll_top_for_line(i, ROW_HEIGHT, viewport),
            None => scroll_top_for_line(i, ROW_HEIGHT, viewport),
        }
    }
}

/// "3 of 17", "17 matches", "No match", or nothing before a search.
fn match_count(term: &str, count: usize, capped: bool, current: Option<usize>) -> String {
    if term.is_empty() {
        return String::new();
    }
    let more = if capped { "+" } else { "" };
    match (count, current) {
        (0, _) => "No match".into(),
        (n, Some(c)) => format!("{} of {n}{more}", c + 1),
        (1, None) => "1 match".into(),
        (n, None) => format!("{n}{more} matches"),
    }
}

/// The console for one step. `anchor` is the line the URL's `#L…` names (0-based); `running` starts it
/// following the end of the log.
#[component]
pub fn LogConsole(
    step: StepRef,
    can_read_logs: bool,
    running: bool,
    anchor: Memo<Option<usize>>,
) -> impl IntoView {
    Suspend::new(log_console(step, can_read_logs, running, anchor))
}

#[lazy]
fn log_console(
    step: StepRef,
    can_read_logs: bool,
    running: bool,
    anchor: Memo<Option<usize>>,
) -> AnyView {
    view! { <LoadedLogConsole step can_read_logs running anchor /> }.into_any()
}

/// Lets a benchmark read the wasm memory's size (`window.__towerWasmMemoryBytes()`): the JS heap size does not
/// include it.
fn expose_wasm_memory() {
    let Some(window) = web_sys::window() else {
        return;
    };
    let read = Closure::<dyn Fn() -> f64>::new(|| {
        wasm_bindgen::memory()
            .dyn_into::<js_sys::WebAssembly::Memory>()
            .ok()
            .and_then(|memory| memory.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
            .map_or(0.0, |buffer| f64::from(buffer.byte_length()))
    });
    let _ = js_sys::Reflect::set(
        &window,
        &"__towerWasmMemoryBytes".into(),
        &read.into_js_value(),
    );
}

#[component]
fn LoadedLogConsole(
    step: StepRef,
    can_read_logs: bool,
    running: bool,
    anchor: Memo<Option<usize>>,
) -> impl IntoView {
    expose_wasm_memory();
    let lines = StoredValue::new_local(Lines::default());
    let count = RwSignal::new(0_usize);
    // Bumped when every row must be drawn again: a new search, a new wrap width.
    let redraw = RwSignal::new(0_u64);
    let state = RwSignal::new(if can_read_logs {
        StreamState::Connecting
    } else {
        StreamState::OwnerOnly(format!(
            "Logs are owner-only: only members of the team that owns {} can read them.",
            step.service
        ))
    });
    let follow = RwSignal::new(running);
    let timestamps = RwSignal::new(false);
    let wrap = RwSignal::new(false);
    let scroll_top = RwSignal::new(0.0_f64);
    let viewport_height = RwSignal::new(400.0_f64);
    let viewport: NodeRef<Div> = NodeRef::new();
    let probe: NodeRef<Span> = NodeRef::new();
    let search_box: NodeRef<Input> = NodeRef::new();
    // Where follow last scrolled to: a scroll above it is the reader's, and stops following.
    let auto_top = StoredValue::new(0.0_f64);

    // Search, over the buffer.
    let term = RwSignal::new(String::new());
    let found = StoredValue::new_local(SearchResult::default());
    let found_count = RwSignal::new((0_usize, false));
    let current = RwSignal::new(None::<usize>);
    let research = StoredValue::new_local(None::<TimeoutHandle>);

    let scroll_to = move |top: f64| {
        if let Some(element) = viewport.get_untracked() {
            element.set_scroll_top(top.round() as i32);
            scroll_top.set(f64::from(element.scroll_top()));
        } else {
            scroll_top.set(top);
        }
    };
    let show_line = move |line: usize| {
        let top = lines.with_value(|l| l.scroll_top_for(line, viewport_height.get_untracked()));
        scroll_to(top);
    };
    // The current match into view, sideways too: after the rows are drawn, the browser scrolls to its mark.
    let reveal_current = move || {
        request_animation_frame(move || {
            let Some(element) = viewport.get_untracked() else {
                return;
            };
            if let Ok(Some(mark)) = element.query_selector("mark.current") {
                let options = web_sys::ScrollIntoViewOptions::new();
                options.set_block(web_sys::ScrollLogicalPosition::Nearest);
                options.set_inline(web_sys::ScrollLogicalPosition::Nearest);
                mark.scroll_into_view_with_scroll_into_view_options(&options);
            }
        });
    };
    let go_to_match = move |index: Option<usize>| {
        current.set(index);
        let line = index.and_then(|i| found.with_value(|f| f.matches.get(i).map(|m| m.line)));
        if let Some(line) = line {
            follow.set(false);
            show_line(line);
            reveal_current();
        }
    };
    // Runs the search over every line. A new term starts at the first match from the top line in view; a
    // search run again as lines stream keeps the current match.
    let run_search = move |fresh: bool| {
        let text = term.get_untracked();
        let result = lines.with_value(|l| l.buffer.search(&text, false));
        found_count.set((result.matches.len(), result.capped));
        let from = lines.with_value(|l| {
            l.window(
                scroll_top.get_untracked(),
                viewport_height.get_untracked(),
                0,
            )
            .start
        });
        let next = if fresh {
            result.first_from_line(from)
        } else {
            current
                .get_untracked()
                .filter(|c| *c < result.matches.len())
        };
        found.set_value(result);
        redraw.update(|n| *n += 1);
        if fresh {
            go_to_match(next);
        } else {
            current.set(next);
        }
    };

    // Rows per wrapped line follow the console's width and the gutters shown.
    let measure_wrap = move || {
        if !wrap.get_untracked() {
            lines.update_value(|l| l.wrap = None);
            redraw.update(|n| *n += 1);
            return;
        }
        let (Some(element), Some(probe)) = (viewport.get_untracked(), probe.get_untracked()) else {
            return;
        };
        let char_width = (f64::from(probe.offset_width()) / 10.0).max(1.0);
        let gutters = NUMBER_COLUMNS
            + if timestamps.get_untracked() {
                TIMESTAMP_COLUMNS
            } else {
                0
            };
        // Two columns spare: a row the browser wraps sooner than counted would be clipped.
        let fit = (f64::from(element.client_width()) / char_width).floor() as usize;
        let columns = fit.saturating_sub(gutters + 2).max(10);
        let stale = lines.with_value(|l| l.wrap.as_ref().map(RowIndex::columns) != Some(columns));
        if stale {
            lines.update_value(|l| l.wrap = Some(RowIndex::of_buffer(&l.buffer, columns)));
            redraw.update(|n| *n += 1);
        }
    };
    Effect::new(move |_| {
        wrap.track();
        timestamps.track();
        measure_wrap();
    });
    let resize = window_event_listener(leptos::ev::resize, move |_| {
        if let Some(element) = viewport.get_untracked() {
            viewport_height.set(f64::from(element.client_height()));
        }
        measure_wrap();
    });
    on_cleanup(move || resize.remove());
    Effect::new(move |_| {
        if let Some(element) = viewport.get() {
            viewport_height.set(f64::from(element.client_height()));
        }
    });

    // The stream: opened once, and again on Retry.
    let attempt = RwSignal::new(0_u32);
    let cancel = StoredValue::new_local(None::<oneshot::Sender<()>>);
    let stop = move || {
        cancel.try_update_value(|c| {
            if let Some(tx) = c.take() {
                let _ = tx.send(());
            }
        });
    };
    let url = api::step_log_url(&step, running);
    Effect::new(move |_| {
        attempt.track();
        if !can_read_logs {
            return;
        }
        stop();
        lines.update_value(Lines::clear);
        count.set(0);
        state.set(StreamState::Connecting);
        let (tx, rx) = oneshot::channel();
        cancel.set_value(Some(tx));
        spawn_local(stream(url.clone(), lines, count, state, rx));
    });
    on_cleanup(move || {
        stop();
        if let Some(Some(handle)) = research.try_update_value(Option::take) {
            handle.clear();
        }
    });

    // New lines: follow the end, and keep a search current (at most every RESEARCH_DELAY).
    Effect::new(move |_| {
        let n = count.get();
        if n == 0 {
            return;
        }
        if follow.get_untracked() {
            let bottom = lines.with_value(Lines::total_height);
            scroll_to(bottom);
            auto_top.set_value(scroll_top.get_untracked());
        }
        if !term.with_untracked(String::is_empty) && research.with_value(Option::is_none) {
            let handle = set_timeout_with_handle(
                move || {
                    research.try_set_value(None);
                    if term.try_with_untracked(|t| !t.is_empty()) == Some(true) {
                        run_search(false);
                    }
                },
                RESEARCH_DELAY,
            );
            research.set_value(handle.ok());
        }
    });
    // Turning follow on goes to the end at once.
    Effect::new(move |previous: Option<bool>| {
        let on = follow.get();
        if on && previous == Some(false) {
            let bottom = lines.with_value(Lines::total_height);
            scroll_to(bottom);
            auto_top.set_value(scroll_top.get_untracked());
        }
        on
    });
    // `#L…`: once that line has arrived, scroll to it, unless it is already in view (a click on its number).
    let jumped = StoredValue::new(None::<usize>);
    Effect::new(move |_| {
        let (Some(line), n) = (anchor.get(), count.get()) else {
            return;
        };
        if line >= n || jumped.get_value() == Some(line) {
            return;
        }
        jumped.set_value(Some(line));
        follow.set(false);
        let in_view = lines.with_value(|l| {
            l.window(
                scroll_top.get_untracked(),
                viewport_height.get_untracked(),
                0,
            )
            .contains(&line)
        });
        if !in_view {
            show_line(line);
        }
    });

    let on_scroll = move |_| {
        let Some(element) = viewport.get_untracked() else {
            return;
        };
        let top = f64::from(element.scroll_top());
        scroll_top.set(top);
        viewport_height.set(f64::from(element.client_height()));
        if follow.get_untracked() && top + ROW_HEIGHT < auto_top.get_value() {
            follow.set(false);
        }
    };
    let on_console_key = move |event: KeyboardEvent| {
        if (event.ctrl_key() || event.meta_key()) && event.key().eq_ignore_ascii_case("f") {
            event.prevent_default();
            if let Some(input) = search_box.get_untracked() {
                let _ = input.focus();
                input.select();
            }
        }
    };
    let on_search_key = move |event: KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            let (n, _) = found_count.get_untracked();
            let next = if event.shift_key() {
                previous_match(current.get_untracked(), n)
            } else {
                next_match(current.get_untracked(), n)
            };
            go_to_match(next);
        }
        "Escape" => {
            term.set(String::new());
            run_search(true);
        }
        _ => {}
    };

    let window = Memo::new(move |_| {
        count.track();
        redraw.track();
        let (top, height) = (scroll_top.get(), viewport_height.get());
        lines.with_value(|l| l.window(top, height, OVERSCAN))
    });
    let total_height = Memo::new(move |_| {
        count.track();
        redraw.track();
        lines.with_value(Lines::total_height)
    });
    let width = Memo::new(move |_| {
        count.track();
        let gutters = NUMBER_COLUMNS
            + if timestamps.get() {
                TIMESTAMP_COLUMNS
            } else {
                0
            };
        lines.with_value(|l| l.widest) + gutters + 2
    });
    let row = move |i: usize| -> AnyView {
        lines.with_value(|l| {
            let Some(line) = l.buffer.line(i) else {
                return ().into_any();
            };
            let (top, height) = l.place(i);
            let (first, marks) = found.with_value(|f| f.on_line(i));
            let pieces = mark_segments(&ansi_segments(line.text), &marks);
            let number = i + 1;
            let anchor_id = line_anchor(i);
            let text = pieces
                .into_iter()
                .map(|piece| {
                    let classes = piece.style.classes();
                    // Colours without a class (palette 16–255, true colour) go through the CSSOM: the page's
                    // content security policy refuses inline `style` attributes.
                    let themed = |c: &Color| matches!(c, Color::Indexed(n) if *n < 16);
                    let fg = piece.style.fg.filter(|c| !themed(c)).map(Color::css).unwrap_or_default();
                    let bg = piece.style.bg.filter(|c| !themed(c)).map(Color::css).unwrap_or_default();
                    match piece.mark {
                        Some(k) => {
                            let index = first + k;
                            view! {
                                <mark class=classes class:current=move || current.get() == Some(index)
                                    style:color=fg style:background-color=bg data-testid="log-match">{piece.text}</mark>
                            }
                            .into_any()
                        }
                        None if piece.style.is_plain() => piece.text.into_any(),
                        None => view! { <span class=classes style:color=fg style:background-color=bg>{piece.text}</span> }.into_any(),
                    }
                })
                .collect_view();
            view! {
                <div class="console-row" data-testid="log-line" data-line=number
                    class:selected=move || anchor.get() == Some(i)
                    style:top=format!("{top}px") style:height=format!("{height}px")>
                    <a class="console-ln" href=format!("#{anchor_id}") data-noscroll="" aria-label=format!("Line {number}")>{number}</a>
                    <span class="console-ts">{line.timestamp.unwrap_or_default().to_string()}</span>
                    <span class="console-tx">{text}</span>
                </div>
            }
            .into_any()
        })
    };
    let download = api::download_step_log_url(&step);
    let title = format!("Log · {} / {}", step.task, step.step);

    view! {
        <section class="log-console" data-testid="log-console" aria-label=title.clone()
            class:console-ts-hidden=move || !timestamps.get()
            class:console-wrapped=move || wrap.get()
            on:keydown=on_console_key>
            <header class="console-head">
                <h3>{title.clone()}</h3>
                <div class="console-controls">
                    <label><input type="checkbox" data-testid="log-follow" prop:checked=move || follow.get()
                        on:change=move |ev| follow.set(event_target_checked(&ev)) />" Follow"</label>
                    <label><input type="checkbox" data-testid="log-timestamps" prop:checked=move || timestamps.get()
                        on:change=move |ev| timestamps.set(event_target_checked(&ev)) />" Timestamps"</label>
                    <label><input type="checkbox" data-testid="log-wrap" prop:checked=move || wrap.get()
                        on:change=move |ev| wrap.set(event_target_checked(&ev)) />" Wrap"</label>
                    {can_read_logs.then(|| view! {
                        <a href=download.clone() download="" data-testid="log-download" class="button">"Download raw"</a>
                    })}
                    <span class="console-search" role="search">
                        <label class="visually-hidden" for="log-search">"Search the whole log"</label>
                        <input type="search" id="log-search" node_ref=search_box data-testid="log-search"
                            placeholder="Search the log (Ctrl+F)"
                            prop:value=move || term.get()
                            on:input=move |ev| { term.set(event_target_value(&ev)); run_search(true); }
                            on:keydown=on_search_key />
                        <span class="console-count" data-testid="log-match-count" aria-live="polite">
                            {move || { let (n, capped) = found_count.get(); term.with(|t| match_count(t, n, capped, current.get())) }}
                        </span>
                        <button type="button" data-testid="log-search-previous" aria-label="Previous match"
                            disabled=move || found_count.get().0 == 0
                            on:click=move |_| go_to_match(previous_match(current.get_untracked(), found_count.get_untracked().0))>"↑"</button>
                        <button type="button" data-testid="log-search-next" aria-label="Next match"
                            disabled=move || found_count.get().0 == 0
                            on:click=move |_| go_to_match(next_match(current.get_untracked(), found_count.get_untracked().0))>"↓"</button>
                    </span>
                </div>
                <p class="console-status muted small" role="status" data-testid="log-status">
                    {move || match state.get() {
                        StreamState::Connecting => "Connecting…".to_string(),
                        StreamState::Streaming => format!("{} lines · streaming", count.get()),
                        StreamState::Ended => format!("End of log · {} lines", count.get()),
                        StreamState::OwnerOnly(_) | StreamState::Gone(_) | StreamState::Refused(_) | StreamState::Dropped(_) => format!("{} lines", count.get()),
                    }}
                </p>
            </header>
            {move || match state.get() {
                StreamState::OwnerOnly(why) => Some(view! {
                    <p class="banner tone-unknown" data-testid="log-forbidden">
                        <span class="glyph" aria-hidden="true">"⊘"</span>
                        <span>{why}</span>
                    </p>
                }.into_any()),
                StreamState::Gone(why) => Some(view! {
                    <p class="banner tone-unknown" data-testid="log-gone"><span>{why}</span></p>
                }.into_any()),
                StreamState::Refused(why) => Some(view! {
                    <p class="banner tone-bad" data-testid="log-error" role="alert"><span>{why}</span></p>
                }.into_any()),
                StreamState::Dropped(why) => Some(view! {
                    <p class="banner tone-warn" data-testid="log-error" role="alert">
                        <span>{why}</span>" "
                        <button type="button" data-testid="log-retry" on:click=move |_| attempt.update(|n| *n += 1)>"Retry"</button>
                    </p>
                }.into_any()),
                _ => None,
            }}
            <div class="console-viewport mono" node_ref=viewport tabindex="0" role="region"
                aria-label="Log lines" data-testid="log-viewport" on:scroll=on_scroll>
                <span class="console-probe" node_ref=probe aria-hidden="true">"0000000000"</span>
                <div class="console-spacer"
                    style:height=move || format!("{}px", total_height.get())
                    style:min-width=move || format!("{}ch", width.get())>
                    <For
                        each=move || { let e = redraw.get(); window.get().map(move |i| (i, e)).collect::<Vec<_>>() }
                        key=|k| *k
                        children=move |(i, _)| row(i)
                    />
                </div>
                {move || (state.get() == StreamState::Ended && count.get() == 0).then(|| view! {
                    <p class="muted console-empty">"This step wrote nothing."</p>
                })}
            </div>
        </section>
    }
}

/// What the stream delivered next.
enum Next {
    /// A batch of lines, or the stream's failure.
    Chunk(Option<Result<String, ()>>),
    /// The end event (or the stream's failure).
    End(Option<Result<(), ()>>),
    /// The console closed.
    Cancelled,
}

/// Polls `stream` for its next item's data as text, or its failure.
fn poll_data(
    stream: &mut Pin<Box<EventSourceSubscription>>,
    cx: &mut std::task::Context<'_>,
) -> Poll<Option<Result<String, ()>>> {
    stream.poll_next_unpin(cx).map(|item| {
        item.map(|result| {
            result
                .map(|(_, message)| message.data().as_string().unwrap_or_default())
                .map_err(|_| ())
        })
    })
}

/// Streams one step's log into `lines` until the end event, a failure (then asks Tower why) or `cancel`.
async fn stream(
    url: String,
    lines: StoredValue<Lines, LocalStorage>,
    count: RwSignal<usize>,
    state: RwSignal<StreamState>,
    mut cancel: oneshot::Receiver<()>,
) {
    let Ok(mut source) = EventSource::new(&url) else {
        state.try_set(StreamState::Dropped(
            "The browser could not open the log stream.".into(),
        ));
        return;
    };
    let (Ok(chunks), Ok(end)) = (
        source.subscribe(LOG_CHUNK_EVENT),
        source.subscribe(LOG_END_EVENT),
    ) else {
        state.try_set(StreamState::Dropped(
            "The browser could not open the log stream.".into(),
        ));
        return;
    };
    let (mut chunks, mut end) = (Box::pin(chunks), Box::pin(end));
    let mut failed = false;
    loop {
        // Lines before the end: every batch sent before the end event is taken before it.
        let next = poll_fn(|cx| {
            if let Poll::Ready(item) = poll_data(&mut chunks, cx) {
                return Poll::Ready(Next::Chunk(item));
            }
            if let Poll::Ready(item) = poll_data(&mut end, cx) {
                return Poll::Ready(Next::End(item.map(|r| r.map(|_| ()))));
            }
            if cancel.poll_unpin(cx).is_ready() {
                return Poll::Ready(Next::Cancelled);
            }
            Poll::Pending
        })
        .await;
        match next {
            Next::Chunk(Some(Ok(data))) => {
                // Each event is a `LogChunk`; anything else is shown as the one line it is.
                let batch = serde_json::from_str::<LogChunk>(&data)
                    .map(|chunk| chunk.lines)
                    .unwrap_or_else(|_| vec![data]);
                if lines.try_update_value(|l| l.push(batch)).is_none() {
                    break;
                }
                let n = lines.try_with_value(|l| l.buffer.len()).unwrap_or(0);
                state.try_set(StreamState::Streaming);
                count.try_set(n);
            }
            Next::End(Some(Ok(()))) => {
                // The server ended the log: an EventSource left open would reconnect and send it again.
                state.try_set(StreamState::Ended);
                break;
            }
            Next::Chunk(Some(Err(()))) | Next::End(Some(Err(()))) => {
                failed = true;
                break;
            }
            Next::Chunk(None) | Next::End(None) | Next::Cancelled => break,
        }
    }
    // Closed before asking why, so the browser does not reconnect meanwhile.
    source.close();
    if failed {
        let why = match api::probe_stream(&url).await {
            StreamRefusal::Forbidden(message) => {
                StreamState::OwnerOnly(format!("Logs are owner-only: {message}"))
            }
            StreamRefusal::Gone(message) => StreamState::Gone(message),
            StreamRefusal::Refused(message) => StreamState::Refused(message),
            StreamRefusal::Available => {
                StreamState::Dropped("The connection to Tower dropped before the log ended.".into())
            }
            StreamRefusal::Unreachable(message) => StreamState::Dropped(message),
        };
        state.try_set(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_match_count_says_where_the_reader_is_among_the_matches() {
        assert_eq!(match_count("", 0, false, None), "");
        assert_eq!(match_count("error", 0, false, None), "No match");
        assert_eq!(match_count("error", 17, false, Some(2)), "3 of 17");
        assert_eq!(match_count("error", 1, false, None), "1 match");
        assert_eq!(match_count("e", 100_000, true, None), "100000+ matches");
    }

    #[test]
    fn wrapped_lines_take_their_rows_and_unwrapped_ones_one_each() {
        let mut lines = Lines::default();
        lines.push(vec!["short".into(), "x".repeat(25), "end".into()]);
        assert_eq!(lines.place(2), (2.0 * ROW_HEIGHT, ROW_HEIGHT));
        assert_eq!(lines.widest, 25);
        lines.wrap = Some(RowIndex::of_buffer(&lines.buffer, 10));
        assert_eq!(lines.place(1), (ROW_HEIGHT, 3.0 * ROW_HEIGHT));
        assert_eq!(lines.place(2), (4.0 * ROW_HEIGHT, ROW_HEIGHT));
        assert_eq!(lines.total_height(), 5.0 * ROW_HEIGHT);
        lines.push(vec!["y".repeat(11)]);
        assert_eq!(lines.total_height(), 7.0 * ROW_HEIGHT);
    }

    #[test]
    fn a_cleared_console_keeps_wrapping_at_the_same_width() {
        let mut lines = Lines {
            wrap: Some(RowIndex::new(40)),
            ..Lines::default()
        };
        lines.push(vec!["a".into()]);
        lines.clear();
        assert!(lines.buffer.is_empty());
        assert_eq!(lines.wrap.as_ref().map(RowIndex::columns), Some(40));
    }
}
