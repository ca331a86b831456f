//! The live fleet: loaded once over the JSON API, then kept current by the one event stream.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use gloo_net::eventsource::futures::EventSource;
use leptos::prelude::*;
use leptos::task::spawn_local;
use shared::ApiError;
use shared::api;
use shared::fleet::{ActivityItem, DeploymentCard, Fleet, FleetEvent, SourceStatus};
use shared::pipelines::PipelineRunSummary;

use crate::api as calls;

/// How many streamed activity items the browser keeps (the feed shows the newest 50 anyway).
const ACTIVITY_KEPT: usize = 50;

/// How many pipeline runs' latest changes the browser keeps: far more than a page shows, so a page fetched a
/// while ago still finds every change since; the oldest are forgotten first.
const RUN_UPDATES_KEPT: usize = 1_000;

/// How often ages ("2 min ago") are recomputed.
const CLOCK_TICK: Duration = Duration::from_secs(15);

/// The fleet every page reads, provided once as context.
#[derive(Clone, Copy)]
pub struct LiveFleet {
    /// Services by name, patched by every delta.
    pub fleet: RwSignal<Fleet>,
    /// `None` while the first load is under way; then whether it worked.
    pub loaded: RwSignal<Option<Result<(), ApiError>>>,
    /// Whether the event stream is connected right now.
    pub connected: RwSignal<bool>,
    /// Every cluster's connection, from the snapshot and then `source_changed`.
    pub sources: RwSignal<Vec<SourceStatus>>,
    /// Activity that arrived over the stream since the page loaded, newest first.
    pub activity: RwSignal<Vec<ActivityItem>>,
    /// The newest version of every card the stream has sent, for pages that show cards to patch theirs.
    pub cards: RwSignal<CardUpdates>,
    /// The newest change of every pipeline run the stream has sent, for run lists and run pages to patch
    /// theirs.
    pub runs: RwSignal<RunUpdates>,
    /// Counts snapshots after the first: each means the stream reconnected and card deltas may have been
    /// missed, so pages holding cards fetch them again.
    pub resyncs: RwSignal<u32>,
    /// The browser's clock (RFC 3339), ticking, so every "2 min ago" stays true without a reload.
    pub now: RwSignal<String>,
}

/// The latest card per service and environment, each stamped with the order it arrived in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardUpdates {
    seq: u64,
    latest: BTreeMap<(String, String), (u64, DeploymentCard)>,
}

impl CardUpdates {
    /// The stamp of the newest update; a page records it when it starts fetching cards.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Cards of `service` that arrived after the stamp `after`.
    pub fn newer_than<'a>(
        &'a self,
        service: &'a str,
        after: u64,
    ) -> impl Iterator<Item = &'a DeploymentCard> + 'a {
        self.latest
            .iter()
            .filter(move |((name, _), (seq, _))| name == service && *seq > after)
            .map(|(_, (_, card))| card)
    }

    fn record(&mut self, card: DeploymentCard) {
        self.seq += 1;
        self.latest.insert(
            (card.service.clone(), card.environment.clone()),
            (self.seq, card),
        );
    }
}

/// What the stream last said of one pipeline run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunChange {
    /// It appeared or changed: the run as it is now (boxed: most entries are runs, and a removal is small).
    Updated(Box<PipelineRunSummary>),
    /// It went away (pruned, or dropped from Tower's bounded history).
    Removed,
}

/// The latest change per pipeline run (by namespace and name), each stamped with the order it arrived in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunUpdates {
    seq: u64,
    latest: BTreeMap<(String, String), (u64, RunChange)>,
}

impl RunUpdates {
    /// The stamp of the newest change; a page records it when it starts fetching runs.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Changes that arrived after the stamp `after`, oldest first, as `((namespace, name), change)`.
    pub fn newer_than(&self, after: u64) -> Vec<(&(String, String), &RunChange)> {
        let mut changes: Vec<_> = self
            .latest
            .iter()
            .filter(|(_, (seq, _))| *seq > after)
            .collect();
        changes.sort_by_key(|(_, (seq, _))| *seq);
        changes
            .into_iter()
            .map(|(key, (_, change))| (key, change))
            .collect()
    }

    /// The stamp of the newest change of one run, if the stream sent any.
    pub fn stamp_of(&self, namespace: &str, name: &str) -> Option<u64> {
        self.latest
            .get(&(namespace.to_string(), name.to_string()))
            .map(|(seq, _)| *seq)
    }

    fn record(&mut self, namespace: String, name: String, change: RunChange) {
        self.seq += 1;
        self.latest.insert((namespace, name), (self.seq, change));
        if self.latest.len() > RUN_UPDATES_KEPT {
            let oldest = self
                .latest
                .iter()
                .min_by_key(|(_, (seq, _))| *seq)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.latest.remove(&oldest);
            }
        }
    }
}

/// The browser's clock as RFC 3339.
pub fn browser_now() -> String {
    js_sys::Date::new_0().to_iso_string().into()
}

impl LiveFleet {
    /// Starts loading and listening; call once, at the top of the signed-in app.
    pub fn start() -> Self {
        let live = Self {
            fleet: RwSignal::new(Fleet::default()),
            loaded: RwSignal::new(None),
            connected: RwSignal::new(false),
            sources: RwSignal::new(Vec::new()),
            activity: RwSignal::new(Vec::new()),
            cards: RwSignal::new(CardUpdates::default()),
            runs: RwSignal::new(RunUpdates::default()),
            resyncs: RwSignal::new(0),
            now: RwSignal::new(browser_now()),
        };
        spawn_local(async move {
            match calls::list_services().await {
                Ok(services) => {
                    // A snapshot from the stream may have landed first; it is at least as new.
                    if live.loaded.get_untracked().is_none() {
                        live.fleet.set(Fleet::from_services(services));
                    }
                    live.loaded.set(Some(Ok(())));
                }
                Err(error) => {
                    if live.loaded.get_untracked().is_none() {
                        live.loaded.set(Some(Err(error)));
                    }
                }
            }
        });
        if let Ok(tick) = set_interval_with_handle(
            move || {
                live.now.try_set(browser_now());
            },
            CLOCK_TICK,
        ) {
            on_cleanup(move || tick.clear());
        }
        live.listen();
        live
    }

    /// Applies every delta from [`api::Events`]. The browser reconnects by itself after a drop, and the
    /// server starts every connection with a snapshot, so nothing is missed across a reconnect.
    fn listen(self) {
        let Ok(mut source) = EventSource::new(&api::Events::url()) else {
            return;
        };
        let Ok(mut deltas) = source.subscribe(api::FLEET_EVENT) else {
            return;
        };
        spawn_local(async move {
            // Dropping the EventSource closes it, so it lives as long as this task.
            let _source = source;
            let mut snapshots = 0_u32;
            while let Some(message) = deltas.next().await {
                match message {
                    Ok((_, event)) => {
                        self.connected.set(true);
                        let Some(text) = event.data().as_string() else {
                            continue;
                        };
                        let Some(delta) = FleetEvent::decode(&text) else {
                            continue;
                        };
                        self.apply(delta, &mut snapshots);
                    }
                    Err(_) => self.connected.set(false),
                }
            }
        });
    }

    fn apply(self, delta: FleetEvent, snapshots: &mut u32) {
        match &delta {
            FleetEvent::Snapshot { sources, .. } => {
                self.sources.set(sources.clone());
                *snapshots += 1;
                if *snapshots > 1 {
                    self.resyncs.update(|n| *n += 1);
                }
            }
            FleetEvent::CardUpdated { card } => {
                self.cards.update(|cards| cards.record(card.clone()));
            }
            FleetEvent::SourceChanged { source } => {
                self.sources.update(|sources| {
                    match sources.iter_mut().find(|s| s.cluster == source.cluster) {
                        Some(existing) => *existing = source.clone(),
                        None => sources.push(source.clone()),
                    }
                });
            }
            FleetEvent::Activity { item } => {
                self.activity.update(|items| {
                    items.insert(0, item.clone());
                    items.truncate(ACTIVITY_KEPT);
                });
            }
            FleetEvent::PipelineRunUpdated { run } => {
                self.runs.update(|runs| {
                    runs.record(
                        run.namespace.clone(),
                        run.name.clone(),
                        RunChange::Updated(Box::new(run.clone())),
                    );
                });
            }
            FleetEvent::PipelineRunRemoved { namespace, name } => {
                self.runs.update(|runs| {
                    runs.record(namespace.clone(), name.clone(), RunChange::Removed);
                });
            }
            FleetEvent::ServiceUpserted { .. }
            | FleetEvent::ServiceRemoved { .. }
            | FleetEvent::PullRequestUpdated { .. }
            | FleetEvent::ReleasesChanged => {}
        }
        let is_snapshot = matches!(delta, FleetEvent::Snapshot { .. });
        let changes_services = matches!(
            delta,
            FleetEvent::Snapshot { .. }
                | FleetEvent::ServiceUpserted { .. }
                | FleetEvent::ServiceRemoved { .. }
        );
        if changes_services {
            self.fleet.update(|fleet| fleet.apply(delta));
        }
        if is_snapshot {
            self.loaded.set(Some(Ok(())));
        }
    }
}

/// Loads with `load` now and again whenever a signal it reads changes, keeping the newest answer:
/// `None` until the first arrives. Answers to superseded loads are dropped. (A small stand-in for
/// `LocalResource`, whose machinery costs the first load more than it gives here.)
pub fn fetched<T, Fut>(load: impl Fn() -> Fut + 'static) -> ReadSignal<Option<T>>
where
    T: Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + 'static,
{
    let value = RwSignal::new(None);
    let latest = std::rc::Rc::new(std::cell::Cell::new(0_u64));
    Effect::new(move |_| {
        let future = load();
        let generation = latest.get() + 1;
        latest.set(generation);
        let latest = latest.clone();
        spawn_local(async move {
            let answer = future.await;
            if latest.get() == generation {
                value.try_set(Some(answer));
            }
        });
    });
    value.read_only()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(service: &str, environment: &str, version: &str) -> DeploymentCard {
        DeploymentCard {
            running_version: Some(version.into()),
            ..DeploymentCard::empty(service, environment)
        }
    }

    fn versions<'a>(updates: &'a CardUpdates, service: &'a str, after: u64) -> Vec<&'a str> {
        updates
            .newer_than(service, after)
            .filter_map(|c| c.running_version.as_deref())
            .collect()
    }

    /// Records `cards` in order and returns the stamp after the first, as a page that fetched then.
    fn recorded(cards: &[(&str, &str, &str)]) -> (CardUpdates, u64) {
        let mut updates = CardUpdates::default();
        let mut fetched_at = 0;
        for (index, (service, environment, version)) in cards.iter().enumerate() {
            updates.record(card(service, environment, version));
            if index == 0 {
                fetched_at = updates.seq();
            }
        }
        (updates, fetched_at)
    }

    #[test]
    fn a_page_sees_only_the_cards_of_its_service_that_arrived_after_it_fetched() {
        let (updates, fetched_at) = recorded(&[
            ("payments", "dev", "aaa1111"),
            ("ledger", "dev", "bbb2222"),
            ("payments", "prod", "ccc3333"),
        ]);
        assert_eq!(versions(&updates, "payments", fetched_at), ["ccc3333"]);
        assert_eq!(versions(&updates, "payments", 0), ["aaa1111", "ccc3333"]);
        assert!(versions(&updates, "refunds", 0).is_empty());
    }

    fn run(name: &str, status: shared::pipelines::RunStatus) -> PipelineRunSummary {
        PipelineRunSummary {
            namespace: "tekton-ci".into(),
            name: name.into(),
            service: "payments".into(),
            pipeline: None,
            status,
            reason: None,
            commit: None,
            message: None,
            branch: None,
            trigger: "manual".into(),
            author: None,
            created_at: "2026-12-01T10:00:00Z".into(),
            started_at: None,
            finished_at: None,
            tasks: shared::pipelines::TaskCounts::default(),
        }
    }

    #[test]
    fn a_page_sees_each_run_changed_after_it_fetched_once_in_its_newest_state_in_arrival_order() {
        use shared::pipelines::RunStatus;
        let mut updates = RunUpdates::default();
        updates.record(
            "tekton-ci".into(),
            "a".into(),
            RunChange::Updated(Box::new(run("a", RunStatus::Running))),
        );
        let fetched_at = updates.seq();
        updates.record(
            "tekton-ci".into(),
            "b".into(),
            RunChange::Updated(Box::new(run("b", RunStatus::Running))),
        );
        updates.record(
            "tekton-ci".into(),
            "a".into(),
            RunChange::Updated(Box::new(run("a", RunStatus::Succeeded))),
        );
        updates.record("tekton-ci".into(), "c".into(), RunChange::Removed);
        let seen: Vec<_> = updates
            .newer_than(fetched_at)
            .into_iter()
            .map(|((_, name), change)| match change {
                RunChange::Updated(run) => format!("{name}:{}", run.status.param()),
                RunChange::Removed => format!("{name}:removed"),
            })
            .collect();
        assert_eq!(seen, ["b:running", "a:succeeded", "c:removed"]);
        assert_eq!(updates.stamp_of("tekton-ci", "a"), Some(3));
        assert_eq!(updates.stamp_of("tekton-ci", "z"), None);
    }

    #[test]
    fn the_oldest_run_changes_are_forgotten_past_the_bound() {
        let mut updates = RunUpdates::default();
        for i in 0..=RUN_UPDATES_KEPT {
            updates.record("tekton-ci".into(), format!("r{i}"), RunChange::Removed);
        }
        assert_eq!(updates.newer_than(0).len(), RUN_UPDATES_KEPT);
        assert_eq!(updates.stamp_of("tekton-ci", "r0"), None);
        assert!(updates.stamp_of("tekton-ci", "r1").is_some());
    }

    #[test]
    fn a_newer_card_for_the_same_environment_replaces_the_older() {
        let (updates, fetched_at) = recorded(&[
            ("payments", "dev", "aaa1111"),
            ("payments", "dev", "ddd4444"),
        ]);
        assert_eq!(versions(&updates, "payments", 0), ["ddd4444"]);
        assert_eq!(versions(&updates, "payments", fetched_at), ["ddd4444"]);
        assert_eq!(updates.seq(), 2);
    }
}
