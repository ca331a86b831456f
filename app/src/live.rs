//! The live fleet: loaded once over the JSON API, then kept current by the one event stream.
//!
//! The stream is read through an envelope of this module's own ([`decode`]) rather than
//! `shared::fleet::FleetEvent::decode`: what the first paint needs (services, cluster states, activity) is
//! decoded here, while a card, a pipeline run or a pull request is kept as the text it came as and decoded by
//! the page that shows it, which loads on demand. Decoding those types here would put their deserializers
//! (a deployment card is a dozen nested structs) in the first load, for pages most visits never open. The
//! platform's counts (six numbers) are decoded here: the Overview shows them.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use gloo_net::eventsource::futures::EventSource;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde::Deserialize;
use shared::ApiError;
use shared::api;
use shared::fleet::{
    ActivityItem, DeploymentCard, Fleet, FleetEvent, ServiceSummary, SourceStatus,
};
use shared::pipelines::PipelineRunSummary;
use shared::platform::StandingCounts;

use crate::api as calls;

/// How many streamed activity items the browser keeps (the feed shows the newest 50 anyway).
const ACTIVITY_KEPT: usize = 50;

/// How many pipeline runs' latest changes the browser keeps: far more than a page shows, so a page fetched a
/// while ago still finds every change since; the oldest are forgotten first.
const RUN_UPDATES_KEPT: usize = 1_000;

/// How many pull request changes the browser keeps, oldest forgotten first: far more than Tower has open.
const PULL_UPDATES_KEPT: usize = 200;

/// How often ages ("2 min ago") are recomputed.
const CLOCK_TICK: Duration = Duration::from_secs(15);
/// How often the service list is asked again while Tower is still loading the fleet.
const LOAD_RETRY: Duration = Duration::from_secs(1);

/// One event of the stream as the first load reads it.
#[derive(Debug, Clone, PartialEq)]
enum Delta {
    /// Every service and cluster state and the platform's counts, first on every connection.
    Snapshot(Vec<ServiceSummary>, Vec<SourceStatus>, StandingCounts),
    /// A service appeared or changed (boxed: the other events are small).
    Upserted(Box<ServiceSummary>),
    /// A service went away, by name.
    Removed(String),
    /// A cluster's connection changed.
    Source(SourceStatus),
    /// Something happened.
    Activity(ActivityItem),
    /// A card changed: its service, its environment, and the event as sent.
    Card(String, String, String),
    /// A pipeline run changed (the event as sent) or went away (`None`), by namespace and name.
    Run(String, String, Option<String>),
    /// One of Tower's pull requests changed: the event as sent.
    Pull(String),
    /// The GitOps repository's main moved.
    ReleasesChanged,
    /// One of the platform's own Applications changed: the platform's counts now.
    PlatformChanged(StandingCounts),
}

/// Reads one event as the server serializes it (`FleetEvent`, tagged by `type`); `None` for a kind this
/// build does not know, so the stream goes on. Fields of other kinds are skipped unread.
fn decode(text: &str) -> Option<Delta> {
    #[derive(Deserialize)]
    struct Envelope {
        #[serde(rename = "type")]
        kind: String,
        services: Option<Vec<ServiceSummary>>,
        sources: Option<Vec<SourceStatus>>,
        service: Option<ServiceSummary>,
        name: Option<String>,
        namespace: Option<String>,
        source: Option<SourceStatus>,
        item: Option<ActivityItem>,
        card: Option<CardKey>,
        run: Option<RunKey>,
        /// The snapshot's `platform` and `platform_changed`'s `counts`: one field, so the first load carries
        /// one copy of their deserializer.
        #[serde(alias = "counts")]
        platform: Option<StandingCounts>,
    }
    /// Which card an event is of; the rest of it is read by the page that shows it.
    #[derive(Deserialize)]
    struct CardKey {
        service: String,
        environment: String,
    }
    /// Which run an event is of.
    #[derive(Deserialize)]
    struct RunKey {
        namespace: String,
        name: String,
    }
    let e: Envelope = serde_json::from_str(text).ok()?;
    Some(match e.kind.as_str() {
        "snapshot" => Delta::Snapshot(
            e.services?,
            e.sources.unwrap_or_default(),
            e.platform.unwrap_or_default(),
        ),
        "service_upserted" => Delta::Upserted(Box::new(e.service?)),
        "service_removed" => Delta::Removed(e.name?),
        "source_changed" => Delta::Source(e.source?),
        "activity" => Delta::Activity(e.item?),
        "card_updated" => {
            let card = e.card?;
            Delta::Card(card.service, card.environment, text.to_string())
        }
        "pipeline_run_updated" => {
            let run = e.run?;
            Delta::Run(run.namespace, run.name, Some(text.to_string()))
        }
        "pipeline_run_removed" => Delta::Run(e.namespace?, e.name?, None),
        "pull_request_updated" => Delta::Pull(text.to_string()),
        "releases_changed" => Delta::ReleasesChanged,
        "platform_changed" => Delta::PlatformChanged(e.platform?),
        _ => return None,
    })
}

/// The fleet every page reads, provided once as context.
#[derive(Clone, Copy)]
pub struct LiveFleet {
    /// Services by name, patched by every delta.
    pub fleet: RwSignal<Fleet>,
    /// `None` while the first load is under way; then whether it worked.
    pub loaded: RwSignal<Option<Result<(), ApiError>>>,
    /// While Tower is still building its first picture of the fleet, how far it has got, in its words.
    pub progress: RwSignal<Option<String>>,
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
    /// Every `pull_request_updated` the stream has sent, for the PRs page and the service page's pending
    /// pull requests to patch theirs.
    pub pulls: RwSignal<PullUpdates>,
    /// Counts `releases_changed`: the GitOps repository's main moved, so the Releases page fetches again.
    pub releases: RwSignal<u32>,
    /// The platform's own Applications by standing, from the snapshot and then `platform_changed`; `None`
    /// until the first snapshot, so nothing shows zeros that were never reported.
    pub platform: RwSignal<Option<StandingCounts>>,
    /// Counts `platform_changed`: one of the platform's Applications changed, so the Platform page fetches
    /// again.
    pub platform_changes: RwSignal<u32>,
    /// Counts snapshots after the first: each means the stream reconnected and card deltas may have been
    /// missed, so pages holding cards (or pull requests) fetch them again.
    pub resyncs: RwSignal<u32>,
    /// The browser's clock (RFC 3339), ticking, so every "2 min ago" stays true without a reload.
    pub now: RwSignal<String>,
}

/// The latest card per service and environment, as the stream sent it, each stamped with the order it
/// arrived in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardUpdates {
    seq: u64,
    latest: BTreeMap<(String, String), (u64, String)>,
}

/// The card of one `card_updated` event's text.
fn decode_card(event: &str) -> Option<DeploymentCard> {
    #[derive(Deserialize)]
    struct CardUpdated {
        card: DeploymentCard,
    }
    serde_json::from_str::<CardUpdated>(event)
        .ok()
        .map(|e| e.card)
}

impl CardUpdates {
    /// The stamp of the newest update; a page records it when it starts fetching cards.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Cards of `service` that arrived after the stamp `after`.
    pub fn newer_than(&self, service: &str, after: u64) -> Vec<DeploymentCard> {
        self.latest
            .iter()
            .filter(|((name, _), (seq, _))| name == service && *seq > after)
            .filter_map(|(_, (_, event))| decode_card(event))
            .collect()
    }

    /// The newest version of every card the stream has sent.
    pub fn all(&self) -> Vec<DeploymentCard> {
        self.latest
            .values()
            .filter_map(|(_, event)| decode_card(event))
            .collect()
    }

    fn record(&mut self, service: String, environment: String, event: String) {
        self.seq += 1;
        self.latest
            .insert((service, environment), (self.seq, event));
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

/// The latest change per pipeline run (by namespace and name): the event as the stream sent it, or `None`
/// once it went away; each stamped with the order it arrived in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunUpdates {
    seq: u64,
    latest: BTreeMap<(String, String), (u64, Option<String>)>,
}

/// The run of one `pipeline_run_updated` event's text.
fn decode_run(event: &str) -> Option<PipelineRunSummary> {
    #[derive(Deserialize)]
    struct RunUpdated {
        run: PipelineRunSummary,
    }
    serde_json::from_str::<RunUpdated>(event)
        .ok()
        .map(|e| e.run)
}

impl RunUpdates {
    /// The stamp of the newest change; a page records it when it starts fetching runs.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Changes that arrived after the stamp `after`, oldest first, as `((namespace, name), change)`.
    pub fn newer_than(&self, after: u64) -> Vec<((String, String), RunChange)> {
        let mut changes: Vec<_> = self
            .latest
            .iter()
            .filter(|(_, (seq, _))| *seq > after)
            .collect();
        changes.sort_by_key(|(_, (seq, _))| *seq);
        changes
            .into_iter()
            .filter_map(|(key, (_, event))| {
                let change = match event {
                    Some(event) => RunChange::Updated(Box::new(decode_run(event)?)),
                    None => RunChange::Removed,
                };
                Some((key.clone(), change))
            })
            .collect()
    }

    /// The stamp of the newest change of one run, if the stream sent any.
    pub fn stamp_of(&self, namespace: &str, name: &str) -> Option<u64> {
        self.latest
            .get(&(namespace.to_string(), name.to_string()))
            .map(|(seq, _)| *seq)
    }

    fn record(&mut self, namespace: String, name: String, event: Option<String>) {
        self.seq += 1;
        self.latest.insert((namespace, name), (self.seq, event));
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

/// Pull request changes as the stream sent them (each a `pull_request_updated` event's JSON), stamped with
/// the order they arrived in; [`crate::components::delivery::patch_pulls`] reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PullUpdates {
    seq: u64,
    events: Vec<(u64, String)>,
}

impl PullUpdates {
    /// The stamp of the newest change; a page records it when it starts fetching pull requests.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The events that arrived after the stamp `after`, oldest first.
    pub fn newer_than(&self, after: u64) -> impl Iterator<Item = &str> {
        self.events
            .iter()
            .filter(move |(seq, _)| *seq > after)
            .map(|(_, text)| text.as_str())
    }

    /// Records `event` as if the stream had sent it (for other modules' tests).
    #[cfg(test)]
    pub fn record_for_tests(&mut self, event: String) {
        self.record(event);
    }

    fn record(&mut self, event: String) {
        self.seq += 1;
        self.events.push((self.seq, event));
        if self.events.len() > PULL_UPDATES_KEPT {
            self.events.remove(0);
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
            progress: RwSignal::new(None),
            connected: RwSignal::new(false),
            sources: RwSignal::new(Vec::new()),
            activity: RwSignal::new(Vec::new()),
            cards: RwSignal::new(CardUpdates::default()),
            runs: RwSignal::new(RunUpdates::default()),
            pulls: RwSignal::new(PullUpdates::default()),
            releases: RwSignal::new(0),
            platform: RwSignal::new(None),
            platform_changes: RwSignal::new(0),
            resyncs: RwSignal::new(0),
            now: RwSignal::new(browser_now()),
        };
        live.load();
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

    /// Loads the service list. A Tower that has just started answers 503 with how far its first picture has
    /// got ("Loading the fleet: 6,200 of 10,000 services loaded."): that is shown as progress and asked
    /// again every second, until the list or the stream's snapshot arrives.
    fn load(self) {
        spawn_local(async move {
            let answer = calls::list_services().await;
            // A snapshot from the stream may have landed first; it is at least as new.
            if self.loaded.get_untracked().is_some() {
                return;
            }
            match answer {
                Ok(services) => {
                    self.fleet.set(Fleet::from_services(services));
                    self.loaded.set(Some(Ok(())));
                }
                Err(error) if shared::fleet::is_loading(&error) => {
                    self.progress.set(Some(error.message));
                    set_timeout(move || self.load(), LOAD_RETRY);
                }
                Err(error) => self.loaded.set(Some(Err(error))),
            }
        });
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
                        let Some(delta) = event.data().as_string().as_deref().and_then(decode)
                        else {
                            continue;
                        };
                        self.apply(delta, &mut snapshots);
                    }
                    Err(_) => self.connected.set(false),
                }
            }
        });
    }

    fn apply(self, delta: Delta, snapshots: &mut u32) {
        match delta {
            Delta::Snapshot(services, sources, platform) => {
                self.sources.set(sources);
                self.platform.set(Some(platform));
                self.fleet.set(Fleet::from_services(services));
                self.loaded.set(Some(Ok(())));
                *snapshots += 1;
                if *snapshots > 1 {
                    self.resyncs.update(|n| *n += 1);
                }
            }
            // Through the shared `Fleet::apply`, so applying one twice stays harmless.
            Delta::Upserted(service) => self
                .fleet
                .update(|fleet| fleet.apply(FleetEvent::ServiceUpserted { service: *service })),
            Delta::Removed(name) => self
                .fleet
                .update(|fleet| fleet.apply(FleetEvent::ServiceRemoved { name })),
            Delta::Source(source) => {
                self.sources.update(|sources| {
                    match sources.iter_mut().find(|s| s.cluster == source.cluster) {
                        Some(existing) => *existing = source,
                        None => sources.push(source),
                    }
                });
            }
            Delta::Activity(item) => {
                self.activity.update(|items| {
                    items.insert(0, item);
                    items.truncate(ACTIVITY_KEPT);
                });
            }
            Delta::Card(service, environment, event) => {
                self.cards
                    .update(|cards| cards.record(service, environment, event));
            }
            Delta::Run(namespace, name, event) => {
                self.runs.update(|runs| runs.record(namespace, name, event));
            }
            Delta::Pull(event) => self.pulls.update(|pulls| pulls.record(event)),
            Delta::ReleasesChanged => self.releases.update(|n| *n += 1),
            Delta::PlatformChanged(counts) => {
                self.platform.set(Some(counts));
                self.platform_changes.update(|n| *n += 1);
            }
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
    use shared::delivery::PullRequestView;
    use shared::fleet::{ActivityKind, SourceState};

    /// An event as the server writes it.
    fn wire(event: &FleetEvent) -> String {
        serde_json::to_string(event).unwrap_or_default()
    }

    fn card(service: &str, environment: &str, version: &str) -> DeploymentCard {
        DeploymentCard {
            running_version: Some(version.into()),
            ..DeploymentCard::empty(service, environment)
        }
    }

    fn versions(updates: &CardUpdates, service: &str, after: u64) -> Vec<String> {
        updates
            .newer_than(service, after)
            .into_iter()
            .filter_map(|c| c.running_version)
            .collect()
    }

    /// Records `cards` as the stream would and returns the stamp after the first, as a page that fetched then.
    fn recorded(cards: &[(&str, &str, &str)]) -> (CardUpdates, u64) {
        let mut updates = CardUpdates::default();
        let mut fetched_at = 0;
        for (index, (service, environment, version)) in cards.iter().enumerate() {
            let event = wire(&FleetEvent::CardUpdated {
                card: card(service, environment, version),
            });
            let Some(Delta::Card(service, environment, event)) = decode(&event) else {
                panic!("a card event reads as one: {event}");
            };
            updates.record(service, environment, event);
            if index == 0 {
                fetched_at = updates.seq();
            }
        }
        (updates, fetched_at)
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

    fn pull() -> PullRequestView {
        serde_json::from_value(serde_json::json!({
            "number": 7, "url": "https://github.example/acme/application-repositories/pull/7",
            "branch": "tower/promote/payments", "title": "Promote payments to prod", "state": "open",
            "checks": [], "ci": "none", "mergeable": true, "reused": false, "intent": null,
            "service": "payments", "environment": "prod", "author": "tower[bot]",
            "created_at": "2026-12-02T10:00:00Z", "merged_at": null, "labels": [],
        }))
        .unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn every_event_the_server_sends_reads_as_the_first_load_needs_it() {
        let service = shared::fleet::ServiceSummary {
            name: "payments".into(),
            owner: "payments".into(),
            description: "Takes payments.".into(),
            repository: "acme/payments".into(),
            template: "go-service@1.4.0".into(),
            depends_on: vec![],
            environments: vec![],
            catalog: None,
            catalog_state: shared::fleet::CatalogState::Found,
        };
        let source = SourceStatus {
            cluster: "prod".into(),
            environment: Some("prod".into()),
            state: SourceState::Unreachable {
                since: "2026-12-02T10:00:00Z".into(),
                reason: "connection refused".into(),
            },
        };
        let counts = StandingCounts {
            healthy: 41,
            waiting: 3,
            ..StandingCounts::default()
        };
        let item = ActivityItem {
            at: "2026-12-02T10:00:00Z".into(),
            service: "payments".into(),
            environment: Some("prod".into()),
            kind: ActivityKind::Deploy,
            message: "Deployed abc1234".into(),
            link: None,
        };
        let events = [
            FleetEvent::Snapshot {
                services: vec![service.clone()],
                sources: vec![source.clone()],
                platform: counts.clone(),
            },
            FleetEvent::ServiceUpserted {
                service: service.clone(),
            },
            FleetEvent::ServiceRemoved {
                name: "payments".into(),
            },
            FleetEvent::CardUpdated {
                card: card("payments", "prod", "abc1234"),
            },
            FleetEvent::SourceChanged {
                source: source.clone(),
            },
            FleetEvent::Activity { item: item.clone() },
            FleetEvent::PipelineRunUpdated {
                run: run("a", shared::pipelines::RunStatus::Running),
            },
            FleetEvent::PipelineRunRemoved {
                namespace: "tekton-ci".into(),
                name: "a".into(),
            },
            FleetEvent::PullRequestUpdated { pull: pull() },
            FleetEvent::ReleasesChanged,
            FleetEvent::PlatformChanged {
                counts: StandingCounts {
                    failing: 1,
                    ..counts.clone()
                },
            },
        ];
        // A new kind of event does not compile here until it has a sample above.
        for event in &events {
            match event {
                FleetEvent::Snapshot { .. }
                | FleetEvent::ServiceUpserted { .. }
                | FleetEvent::ServiceRemoved { .. }
                | FleetEvent::CardUpdated { .. }
                | FleetEvent::SourceChanged { .. }
                | FleetEvent::Activity { .. }
                | FleetEvent::PipelineRunUpdated { .. }
                | FleetEvent::PipelineRunRemoved { .. }
                | FleetEvent::PullRequestUpdated { .. }
                | FleetEvent::ReleasesChanged
                | FleetEvent::PlatformChanged { .. } => {}
            }
        }
        let read: Vec<Option<Delta>> = events.iter().map(|e| decode(&wire(e))).collect();
        let text = |index: usize| wire(&events[index]);
        assert_eq!(
            read,
            [
                Some(Delta::Snapshot(
                    vec![service.clone()],
                    vec![source.clone()],
                    counts.clone()
                )),
                Some(Delta::Upserted(Box::new(service))),
                Some(Delta::Removed("payments".into())),
                Some(Delta::Card("payments".into(), "prod".into(), text(3))),
                Some(Delta::Source(source)),
                Some(Delta::Activity(item)),
                Some(Delta::Run("tekton-ci".into(), "a".into(), Some(text(6)))),
                Some(Delta::Run("tekton-ci".into(), "a".into(), None)),
                Some(Delta::Pull(text(8))),
                Some(Delta::ReleasesChanged),
                Some(Delta::PlatformChanged(StandingCounts {
                    failing: 1,
                    ..counts
                })),
            ]
        );
        // A snapshot from a server that counts no platform yet reads as no Applications.
        assert_eq!(
            decode(r#"{"type":"snapshot","services":[]}"#),
            Some(Delta::Snapshot(vec![], vec![], StandingCounts::default()))
        );
        // What is kept as text decodes to what was sent.
        assert_eq!(
            decode_card(&text(3)),
            Some(card("payments", "prod", "abc1234"))
        );
        assert_eq!(
            decode_run(&text(6)),
            Some(run("a", shared::pipelines::RunStatus::Running))
        );
        // A kind from a newer server is skipped, not an error.
        assert_eq!(decode(r#"{"type":"something_new","x":1}"#), None);
        assert_eq!(decode("not json"), None);
    }

    #[test]
    fn a_page_sees_the_pull_request_events_that_arrived_after_it_fetched_and_old_ones_are_forgotten()
     {
        let mut updates = PullUpdates::default();
        updates.record("a".into());
        let fetched_at = updates.seq();
        updates.record("b".into());
        updates.record("c".into());
        assert_eq!(
            updates.newer_than(fetched_at).collect::<Vec<_>>(),
            ["b", "c"]
        );
        for n in 0..PULL_UPDATES_KEPT {
            updates.record(n.to_string());
        }
        assert_eq!(updates.newer_than(0).count(), PULL_UPDATES_KEPT);
        assert_eq!(updates.newer_than(0).next(), Some("0"));
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
        assert_eq!(updates.all().len(), 3);
    }

    #[test]
    fn a_page_sees_each_run_changed_after_it_fetched_once_in_its_newest_state_in_arrival_order() {
        use shared::pipelines::RunStatus;
        let updated = |name: &str, status| {
            Some(wire(&FleetEvent::PipelineRunUpdated {
                run: run(name, status),
            }))
        };
        let mut updates = RunUpdates::default();
        updates.record(
            "tekton-ci".into(),
            "a".into(),
            updated("a", RunStatus::Running),
        );
        let fetched_at = updates.seq();
        updates.record(
            "tekton-ci".into(),
            "b".into(),
            updated("b", RunStatus::Running),
        );
        updates.record(
            "tekton-ci".into(),
            "a".into(),
            updated("a", RunStatus::Succeeded),
        );
        updates.record("tekton-ci".into(), "c".into(), None);
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
            updates.record("tekton-ci".into(), format!("r{i}"), None);
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
