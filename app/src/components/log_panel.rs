//! The live log panel (owners only): one container's log streamed over SSE, with follow, a container picker
//! and the previous (crashed) instance. Escape closes it.

use futures::StreamExt as _;
use futures::channel::oneshot;
use futures::future::{Either, select};
use gloo_net::eventsource::State;
use gloo_net::eventsource::futures::EventSource;
use leptos::ev::KeyboardEvent;
use leptos::html::{Button, Div};
use leptos::lazy;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::api::LOG_EVENT;
use shared::fleet::PodView;
use shared::fleet::cards::is_crashloop;

use crate::api::{self, LogQuery};
use crate::components::focus::remember_focus;

/// Lines kept in the panel; older ones scroll away.
const LINES_KEPT: usize = 5_000;

/// Where the stream stands, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StreamState {
    Connecting,
    Streaming,
    Reconnecting,
    Ended,
    Failed(String),
}

/// The panel for one service in one environment. Its code is a separate wasm module, fetched the first
/// time someone opens logs.
#[component]
pub fn LogPanel(
    service: Signal<String>,
    environment: String,
    /// The environment's pods, kept current.
    pods: Signal<Vec<PodView>>,
    /// Closes the panel.
    on_close: Callback<()>,
) -> impl IntoView {
    Suspend::new(log_panel(service, environment, pods, on_close))
}

#[lazy]
fn log_panel(
    service: Signal<String>,
    environment: String,
    pods: Signal<Vec<PodView>>,
    on_close: Callback<()>,
) -> AnyView {
    view! { <LoadedLogPanel service environment pods on_close /> }.into_any()
}

#[component]
fn LoadedLogPanel(
    service: Signal<String>,
    environment: String,
    pods: Signal<Vec<PodView>>,
    on_close: Callback<()>,
) -> impl IntoView {
    // Start with the pod most likely to be why someone opened logs: a crash-looping one.
    let initial_pod = pods.with_untracked(|pods| {
        pods.iter()
            .find(|p| is_crashloop(p))
            .or(pods.first())
            .map(|p| p.name.clone())
            .unwrap_or_default()
    });
    let pod = RwSignal::new(initial_pod);
    let container = RwSignal::new(String::new());
    let follow = RwSignal::new(true);
    let previous = RwSignal::new(false);
    let containers = Memo::new(move |_| {
        let name = pod.get();
        pods.with(|pods| {
            pods.iter()
                .find(|p| p.name == name)
                .map(|p| p.containers.clone())
                .unwrap_or_default()
        })
    });
    // Keep the container valid for the pod.
    Effect::new(move |_| {
        let choices = containers.get();
        if !choices.contains(&container.get_untracked()) {
            container.set(choices.first().cloned().unwrap_or_default());
        }
    });

    let lines: RwSignal<Vec<(u64, String)>> = RwSignal::new(Vec::new());
    let state = RwSignal::new(StreamState::Connecting);
    let cancel: StoredValue<Option<oneshot::Sender<()>>, LocalStorage> =
        StoredValue::new_local(None);
    let stop = move || {
        cancel.update_value(|c| {
            if let Some(tx) = c.take() {
                let _ = tx.send(());
            }
        });
    };
    let environment_for_stream = environment.clone();
    Effect::new(move |_| {
        let options = LogQuery {
            pod: pod.get(),
            container: Some(container.get()).filter(|c| !c.is_empty()),
            follow: follow.get(),
            previous: previous.get(),
            tail: Some(200),
        };
        stop();
        lines.set(Vec::new());
        if options.pod.is_empty() || options.container.is_none() {
            state.set(StreamState::Failed(
                "No pod runs here, so there is no log to show.".into(),
            ));
            return;
        }
        let url = api::logs_url(&service.get_untracked(), &environment_for_stream, &options);
        let (tx, rx) = oneshot::channel();
        cancel.set_value(Some(tx));
        state.set(StreamState::Connecting);
        spawn_local(stream(url, options.follow, lines, state, rx));
    });
    on_cleanup(stop);

    // Follow keeps the newest line in view.
    let scroller: NodeRef<Div> = NodeRef::new();
    Effect::new(move |_| {
        lines.with(|_| ());
        if follow.get_untracked()
            && let Some(element) = scroller.get()
        {
            element.set_scroll_top(element.scroll_height());
        }
    });

    // Escape closes; focus moves into the panel when it opens and back to what opened it (the Logs button)
    // when it closes, for keyboard users.
    let close_button: NodeRef<Button> = NodeRef::new();
    Effect::new(move |_| {
        if let Some(button) = close_button.get() {
            let _ = button.focus();
        }
    });
    let give_back_focus = remember_focus();
    let close = move || {
        give_back_focus();
        on_close.run(());
    };
    let escape = window_event_listener(leptos::ev::keydown, move |event: KeyboardEvent| {
        if event.key() == "Escape" {
            close();
        }
    });
    on_cleanup(move || escape.remove());

    let title = format!("Logs · {} · {environment}", service.get_untracked());
    let aria_label = title.clone();
    view! {
        <aside class="log-panel" data-testid="log-panel" aria-label=aria_label>
            <header class="log-head">
                <h2>{title}</h2>
                <button type="button" class="link" node_ref=close_button data-testid="log-close"
                    on:click=move |_| close()>"Close (Esc)"</button>
            </header>
            <div class="log-controls">
                <label>"Pod "
                    <select data-testid="log-pod" prop:value=move || pod.get()
                        on:change=move |ev| pod.set(event_target_value(&ev))>
                        {move || pods.get().into_iter().map(|p| {
                            let label = if is_crashloop(&p) { format!("{} (crash-looping)", p.name) } else { p.name.clone() };
                            view! { <option value=p.name.clone() selected=p.name == pod.get_untracked()>{label}</option> }
                        }).map(IntoAny::into_any).collect_view()}
                    </select>
                </label>
                <label>"Container "
                    <select data-testid="log-container" prop:value=move || container.get()
                        on:change=move |ev| container.set(event_target_value(&ev))>
                        {move || containers.get().into_iter().map(|c| view! {
                            <option value=c.clone() selected=c == container.get_untracked()>{c.clone()}</option>
                        }).map(IntoAny::into_any).collect_view()}
                    </select>
                </label>
                <label><input type="checkbox" data-testid="log-follow" prop:checked=move || follow.get()
                    on:change=move |ev| follow.set(event_target_checked(&ev)) />" Follow"</label>
                <label><input type="checkbox" data-testid="log-previous" prop:checked=move || previous.get()
                    on:change=move |ev| previous.set(event_target_checked(&ev)) />" Previous container"</label>
                <span class="muted" role="status" data-testid="log-status">{move || match state.get() {
                    StreamState::Connecting => "Connecting…".to_string(),
                    StreamState::Streaming => if follow.get() { "● Following".into() } else { "Loading the last 200 lines…".into() },
                    StreamState::Reconnecting => "Reconnecting…".into(),
                    StreamState::Ended => format!("End of log · {} lines", lines.with(Vec::len)),
                    StreamState::Failed(why) => why,
                }}</span>
            </div>
            <div class="log-lines mono" node_ref=scroller tabindex="0" role="region" aria-label="Log lines">
                <For each=move || lines.get() key=|(id, _)| *id let:line>
                    <div class="log-line" data-testid="log-line">{line.1}</div>
                </For>
                {move || (lines.with(Vec::is_empty) && state.get() == StreamState::Ended).then(|| view! {
                    <p class="muted">"This container has written nothing yet."</p>
                })}
            </div>
        </aside>
    }
}

/// Streams one log into `lines` until cancelled, the server ends it (no follow) or it fails for good.
async fn stream(
    url: String,
    follow: bool,
    lines: RwSignal<Vec<(u64, String)>>,
    state: RwSignal<StreamState>,
    mut cancel: oneshot::Receiver<()>,
) {
    let Ok(mut source) = EventSource::new(&url) else {
        state.try_set(StreamState::Failed(
            "The browser could not open the log stream.".into(),
        ));
        return;
    };
    let Ok(subscription) = source.subscribe(LOG_EVENT) else {
        state.try_set(StreamState::Failed(
            "The browser could not open the log stream.".into(),
        ));
        return;
    };
    let mut subscription = Box::pin(subscription);
    let mut next_id = 0_u64;
    let mut reconnecting = false;
    loop {
        match select(subscription.next(), &mut cancel).await {
            Either::Left((Some(Ok((_, message))), _)) => {
                let Some(text) = message.data().as_string() else {
                    continue;
                };
                if reconnecting {
                    // The server starts every connection with the tail again: replace, don't repeat.
                    lines.try_update(Vec::clear);
                    reconnecting = false;
                }
                state.try_set(StreamState::Streaming);
                next_id += 1;
                lines.try_update(|lines| {
                    lines.push((next_id, text));
                    if lines.len() > LINES_KEPT {
                        lines.drain(..lines.len() - LINES_KEPT);
                    }
                });
            }
            Either::Left((Some(Err(_)), _)) => {
                if !follow && next_id > 0 {
                    // Without follow the server sends the tail and closes: that is the end, not a failure.
                    state.try_set(StreamState::Ended);
                    break;
                }
                if source.state() == State::Closed {
                    state.try_set(StreamState::Failed(
                        "Tower refused or ended the log stream (owners of the service can read logs; the pod may be gone). Pick another pod or close the panel."
                            .into(),
                    ));
                    break;
                }
                if !follow {
                    state.try_set(StreamState::Ended);
                    break;
                }
                reconnecting = true;
                state.try_set(StreamState::Reconnecting);
            }
            Either::Left((None, _)) | Either::Right(_) => break,
        }
    }
    source.close();
}
