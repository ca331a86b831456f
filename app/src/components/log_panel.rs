//! The log panel (owners only): one container's log streamed over SSE, with follow, a container picker
//! and the previous (crashed) instance. The pod picker offers the running pods and, when a log store is
//! configured, recent pods that are gone (crashed, replaced by a rollout, rolled back), whose last lines
//! come from the store and are marked so. Escape closes it.

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
use shared::api::{LOG_END_EVENT, LOG_EVENT};
use shared::fleet::PodView;
use shared::fleet::cards::is_crashloop;
use shared::logs::{LogLine, LogSource, RecentPods};
use shared::pipelines::console::strip_ansi;

use crate::api::{self, LogQuery};
use crate::components::focus::remember_focus;

/// Lines kept in the panel; older ones scroll away.
const LINES_KEPT: usize = 5_000;

/// One choice of the pod picker.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PodChoice {
    name: String,
    containers: Vec<String>,
    /// Gone: its log comes from the store.
    gone: bool,
    crash_looping: bool,
}

impl PodChoice {
    fn label(&self) -> String {
        if self.gone {
            format!("{} (gone)", self.name)
        } else if self.crash_looping {
            format!("{} (crash-looping)", self.name)
        } else {
            self.name.clone()
        }
    }
}

/// The running pods as the card has them, then the gone ones the store listed (none it lists as running).
fn pod_choices(live: &[PodView], recent: Option<&RecentPods>) -> Vec<PodChoice> {
    let mut choices: Vec<PodChoice> = live
        .iter()
        .map(|p| PodChoice {
            name: p.name.clone(),
            containers: p.containers.clone(),
            gone: false,
            crash_looping: is_crashloop(p),
        })
        .collect();
    if let Some(recent) = recent {
        for pod in recent.pods.iter().filter(|p| p.gone) {
            if !live.iter().any(|l| l.name == pod.name) {
                choices.push(PodChoice {
                    name: pod.name.clone(),
                    containers: pod.containers.clone(),
                    gone: true,
                    crash_looping: false,
                });
            }
        }
    }
    choices
}

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
    // The recent pods, asked again whenever the running pods change (a rollout replacing one, say).
    let live_names = Memo::new(move |_| {
        pods.with(|pods| pods.iter().map(|p| p.name.clone()).collect::<Vec<_>>())
    });
    let environment_for_recent = environment.clone();
    let recent = crate::live::fetched(move || {
        live_names.track();
        let service = service.get_untracked();
        let environment = environment_for_recent.clone();
        async move { api::list_log_pods(&service, &environment).await }
    });
    let recent_pods = Memo::new(move |_| {
        recent.with(|recent| match recent {
            Some(Ok(recent)) => Some(recent.clone()),
            _ => None,
        })
    });
    let choices = Memo::new(move |_| {
        pods.with(|live| recent_pods.with(|recent| pod_choices(live, recent.as_ref())))
    });
    let chosen = Memo::new(move |_| {
        let name = pod.get();
        choices.with(|choices| choices.iter().find(|c| c.name == name).cloned())
    });
    let gone = Memo::new(move |_| chosen.with(|c| c.as_ref().is_some_and(|c| c.gone)));
    let containers = Memo::new(move |_| {
        chosen.with(|c| c.as_ref().map(|c| c.containers.clone()).unwrap_or_default())
    });
    // Keep the container valid for the pod.
    Effect::new(move |_| {
        let choices = containers.get();
        if !choices.contains(&container.get_untracked()) {
            container.set(choices.first().cloned().unwrap_or_default());
        }
    });

    let lines: RwSignal<Vec<(u64, LogLine)>> = RwSignal::new(Vec::new());
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
        // A gone pod writes nothing more: its stream is the store's last lines, then the end.
        let gone = gone.get();
        let options = LogQuery {
            pod: pod.get(),
            container: Some(container.get()).filter(|c| !c.is_empty()),
            follow: follow.get() && !gone,
            previous: previous.get() && !gone,
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
                        {move || choices.get().into_iter().map(|p| {
                            let label = p.label();
                            view! { <option value=p.name.clone() data-gone=p.gone.to_string()
                                selected=p.name == pod.get_untracked()>{label}</option> }
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
                    prop:disabled=move || gone.get()
                    on:change=move |ev| follow.set(event_target_checked(&ev)) />" Follow"</label>
                <label><input type="checkbox" data-testid="log-previous" prop:checked=move || previous.get()
                    prop:disabled=move || gone.get()
                    on:change=move |ev| previous.set(event_target_checked(&ev)) />" Previous container"</label>
                {move || gone.get().then(|| view! {
                    <span class="badge log-store-badge" data-testid="log-store-badge">"From the log store: this pod is gone"</span>
                })}
                <span class="muted" role="status" data-testid="log-status">{move || match state.get() {
                    StreamState::Connecting => "Connecting…".to_string(),
                    StreamState::Streaming => if follow.get() { "● Following".into() } else { "Loading the last 200 lines…".into() },
                    StreamState::Reconnecting => "Reconnecting…".into(),
                    StreamState::Ended if gone.get() => format!("End of the stored log · {} lines", lines.with(Vec::len)),
                    StreamState::Ended => format!("End of log · {} lines", lines.with(Vec::len)),
                    StreamState::Failed(why) => why,
                }}</span>
            </div>
            {move || match recent.get() {
                Some(Ok(RecentPods { store: false, .. })) => Some(view! {
                    <p class="log-note muted" data-testid="log-live-only">
                        "Logs are live only: no log store is configured, so pods that are gone cannot be read."
                    </p>
                }.into_any()),
                Some(Ok(RecentPods { store_unavailable: true, store_unavailable_since, .. })) => Some(view! {
                    <p class="log-note muted" data-testid="log-store-unavailable">
                        "The log store did not answer, so only running pods are offered. "
                        {store_unavailable_since.map(|since| {
                            let now = use_context::<crate::live::LiveFleet>().map(|live| live.now);
                            move || match now {
                                Some(now) => now.with(|now| shared::time::since(&since, now)),
                                None => format!("since {since}"),
                            }
                        })}
                    </p>
                }.into_any()),
                _ => None,
            }}
            <div class="log-lines mono" node_ref=scroller tabindex="0" role="region" aria-label="Log lines">
                <For each=move || lines.get() key=|(id, _)| *id let:line>
                    <div class="log-line" class:log-line-stored=line.1.source == LogSource::Store
                        data-testid="log-line" data-source=line.1.source.as_str()>
                        // Terminal escapes (colours, a title, a clear-screen) are not the reader's text:
                        // dropped as the pipeline console drops those it does not draw.
                        {strip_ansi(&line.1.text).into_owned()}
                    </div>
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
    lines: RwSignal<Vec<(u64, LogLine)>>,
    state: RwSignal<StreamState>,
    mut cancel: oneshot::Receiver<()>,
) {
    let Ok(mut source) = EventSource::new(&url) else {
        state.try_set(StreamState::Failed(
            "The browser could not open the log stream.".into(),
        ));
        return;
    };
    let (Ok(lines_sent), Ok(end_sent)) =
        (source.subscribe(LOG_EVENT), source.subscribe(LOG_END_EVENT))
    else {
        state.try_set(StreamState::Failed(
            "The browser could not open the log stream.".into(),
        ));
        return;
    };
    // One stream of both: each item names its event, so the end is told from a line.
    let mut subscription = Box::pin(futures::stream::select(lines_sent, end_sent));
    let mut next_id = 0_u64;
    let mut reconnecting = false;
    loop {
        match select(subscription.next(), &mut cancel).await {
            Either::Left((Some(Ok((event, _))), _)) if event == LOG_END_EVENT => {
                // The server ended a tail: the EventSource would reconnect and send it again.
                state.try_set(StreamState::Ended);
                break;
            }
            Either::Left((Some(Ok((_, message))), _)) => {
                let Some(data) = message.data().as_string() else {
                    continue;
                };
                // Each event is a `LogLine`; anything else is shown as it came, as a live line.
                let line = serde_json::from_str::<LogLine>(&data).unwrap_or(LogLine {
                    source: LogSource::Live,
                    text: data,
                });
                if reconnecting {
                    // The server starts every connection with the tail again: replace, don't repeat.
                    lines.try_update(Vec::clear);
                    reconnecting = false;
                }
                state.try_set(StreamState::Streaming);
                next_id += 1;
                lines.try_update(|lines| {
                    lines.push((next_id, line));
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
