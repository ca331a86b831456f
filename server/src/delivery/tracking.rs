//! Tower's pull requests kept current in the background, so the PRs page and the cards' pending pull
//! requests read a cache and never call the forge per page view.
//!
//! Two things move the cache: GitHub's webhooks ([`PullTracker::pull_changed`] and friends, from
//! `routes::webhooks`), which re-read just the pull request they name, and a slow backup poll (every
//! [`BACKUP_POLL`] with webhooks, as Argo CD backs up its own webhooks) that lists everything again in case a
//! delivery was lost. Either way, each pull request whose view changed goes to browsers as
//! [`FleetEvent::PullRequestUpdated`].
//!
//! A webhook costs at most one re-read of one pull request (three forge reads: the pull request with its
//! mergeability, the checks on its head, its reviews), and only for Tower's pull requests: the number must be
//! one the cache knows or the delivery must show Tower's branch or label. Deliveries arriving together are
//! gathered for [`DEBOUNCE`] and each pull request is read once; a flood beyond [`PENDING_MAX`] numbers
//! becomes one listing instead.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use shared::delivery::{CheckView, PullRequestView, PullState, ReviewView};
use shared::fleet::FleetEvent;
use tokio::sync::{Notify, watch};

use super::pull::{self, Listing};
use super::{Delivery, Error, Result};
use crate::fleet::FleetModel;
use crate::upstream::github::Pull;

/// How often everything is listed again while webhooks bring the changes in between.
pub const BACKUP_POLL: Duration = Duration::from_secs(180);
/// How long webhooks are gathered before the pull requests they name are read.
pub const DEBOUNCE: Duration = Duration::from_millis(50);
/// Pull request numbers waiting at most; beyond, one listing replaces the single reads.
const PENDING_MAX: usize = 64;
/// A failed listing is tried again after this.
const RETRY_AFTER: Duration = Duration::from_secs(15);
/// Without the background task (a test's bare [`Delivery`]), a listing is reused this long.
const UNTRACKED_FRESH_FOR: Duration = Duration::from_secs(5);
/// How long a request waits for the first listing before answering 503.
const FIRST_LISTING_WAIT: Duration = Duration::from_secs(10);

/// A pull request as read, with its view and whether its checks and reviews were read whole.
type Read = (Pull, PullRequestView, bool);
/// A merged pull request's checks and reviews.
type Settled = (Vec<CheckView>, Vec<ReviewView>);

#[derive(Default)]
struct Tracked {
    /// Tower's open pull requests, with their head commits (a `check_run` names only that).
    open: BTreeMap<u64, (String, PullRequestView)>,
    /// The most recently merged, newest merge first.
    merged: Vec<PullRequestView>,
    /// Checks and reviews of merged pull requests, read once: they do not change after the merge.
    settled: HashMap<u64, Settled>,
    /// When everything was last listed.
    listed_at: Option<Instant>,
}

impl Tracked {
    fn find(&self, number: u64) -> Option<&PullRequestView> {
        self.open
            .get(&number)
            .map(|(_, view)| view)
            .or_else(|| self.merged.iter().find(|p| p.number == number))
    }

    fn list(&self) -> Vec<PullRequestView> {
        self.open
            .values()
            .rev()
            .map(|(_, view)| view.clone())
            .chain(self.merged.iter().cloned())
            .collect()
    }

    /// Records `view` (with its head commit); the view it replaced, if any. A merged one's checks and reviews
    /// are kept for good when `settled` (read whole).
    fn record(
        &mut self,
        head: &str,
        view: PullRequestView,
        settled: bool,
    ) -> Option<PullRequestView> {
        let number = view.number;
        let previous = self.find(number).cloned();
        self.open.remove(&number);
        self.merged.retain(|p| p.number != number);
        match view.state {
            PullState::Open => {
                self.open.insert(number, (head.to_string(), view));
            }
            PullState::Merged => {
                if settled {
                    self.settled
                        .insert(number, (view.checks.clone(), view.reviews.clone()));
                }
                self.merged.push(view);
                self.merged.sort_by(|a, b| b.merged_at.cmp(&a.merged_at));
                self.merged.truncate(pull::RECENTLY_MERGED);
            }
            // A pull request closed without merging leaves the list.
            PullState::Closed => {}
        }
        let kept: BTreeSet<u64> = self.merged.iter().map(|p| p.number).collect();
        self.settled.retain(|number, _| kept.contains(number));
        previous
    }
}

#[derive(Debug, Default)]
struct Pending {
    everything: bool,
    numbers: BTreeSet<u64>,
}

/// The cache of Tower's pull requests and what keeps it current. Part of [`Delivery`].
#[derive(Default)]
pub struct PullTracker {
    tracked: Mutex<Tracked>,
    pending: Mutex<Pending>,
    wake: Notify,
    /// True once the first listing is in.
    listed: watch::Sender<bool>,
    /// Where changes are announced; set when the background task starts (no task: no announcements, and
    /// requests list on demand).
    fleet: OnceLock<FleetModel>,
    /// One listing or read at a time, so two never race to record an older answer over a newer one.
    reading: tokio::sync::Mutex<()>,
}

impl PullTracker {
    fn tracked(&self) -> MutexGuard<'_, Tracked> {
        self.tracked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn announce(&self, pull: PullRequestView) {
        if let Some(fleet) = self.fleet.get() {
            fleet.announce(FleetEvent::PullRequestUpdated { pull });
        }
    }

    /// Tower's pull requests (open, newest first, then the most recently merged) from the cache. With the
    /// background task running, no request reaches the forge; without it, a listing older than a few
    /// seconds is read again.
    pub async fn list(&self, delivery: &Delivery) -> Result<Vec<PullRequestView>> {
        if self.fleet.get().is_some() {
            let mut listed = self.listed.subscribe();
            let first = tokio::time::timeout(FIRST_LISTING_WAIT, listed.wait_for(|l| *l)).await;
            if !first.is_ok_and(|l| l.is_ok()) {
                return Err(Error::Syncing("pull requests"));
            }
        } else {
            let stale = self
                .tracked()
                .listed_at
                .is_none_or(|at| at.elapsed() >= UNTRACKED_FRESH_FOR);
            if stale {
                self.refresh_all(delivery).await?;
            }
        }
        Ok(self.tracked().list())
    }

    /// The pull request `number` changed on the forge (opened, pushed, reviewed, merged, closed): it is read
    /// again shortly. Taken only when it is Tower's: a number the cache knows, or one whose delivery shows
    /// Tower's branch or label (`claimed`). True when taken.
    pub fn pull_changed(&self, number: u64, claimed: bool) -> bool {
        let known = self.tracked().find(number).is_some();
        if !(known || claimed) {
            return false;
        }
        {
            let mut pending = self.pending();
            if pending.numbers.len() >= PENDING_MAX && !pending.numbers.contains(&number) {
                pending.everything = true;
            } else {
                pending.numbers.insert(number);
            }
        }
        self.wake.notify_one();
        true
    }

    /// Tower's open pull requests whose head is `sha` or whose branch is `branch`: those a check run is for.
    pub fn open_with_head(&self, sha: &str, branch: Option<&str>) -> Vec<u64> {
        self.tracked()
            .open
            .iter()
            .filter(|(_, (head, view))| head == sha || branch == Some(view.branch.as_str()))
            .map(|(number, _)| *number)
            .collect()
    }

    /// Main moved: every open pull request's mergeability may have changed, so each is read again.
    pub fn main_moved(&self) {
        let open: Vec<u64> = self.tracked().open.keys().copied().collect();
        for number in open {
            self.pull_changed(number, true);
        }
    }

    /// Tower just proposed `view`: the list shows it at once and it is read again (its checks start now).
    pub fn proposed(&self, view: PullRequestView) {
        let changed = {
            let mut tracked = self.tracked();
            let head = tracked
                .open
                .get(&view.number)
                .map(|(head, _)| head.clone())
                .unwrap_or_default();
            let previous = tracked.record(&head, view.clone(), false);
            if self.fleet.get().is_none() {
                // No task reads it again: the next list does.
                tracked.listed_at = None;
            }
            previous.as_ref() != Some(&view)
        };
        if changed {
            self.announce(view.clone());
        }
        self.pull_changed(view.number, true);
    }

    /// Starts the background task: everything is listed now and every `backup` after, and webhooks' pull
    /// requests are read as they come.
    pub fn spawn(delivery: &Delivery, fleet: FleetModel, backup: Duration) {
        if delivery.tracker().fleet.set(fleet).is_err() {
            return;
        }
        let delivery = delivery.clone();
        tokio::spawn(async move {
            let tracker = delivery.tracker();
            let mut next_listing = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(next_listing) => tracker.pending().everything = true,
                    () = tracker.wake.notified() => tokio::time::sleep(DEBOUNCE).await,
                }
                let pending = std::mem::take(&mut *tracker.pending());
                if pending.everything {
                    next_listing = match tracker.refresh_all(&delivery).await {
                        Ok(()) => tokio::time::Instant::now() + backup,
                        Err(error) => {
                            tracing::warn!(%error, "could not list pull requests; trying again soon");
                            tokio::time::Instant::now() + RETRY_AFTER.min(backup)
                        }
                    };
                } else {
                    tracker.refresh_each(&delivery, pending.numbers).await;
                }
            }
        });
    }

    /// Reads each of `numbers` again and announces those that changed.
    async fn refresh_each(&self, delivery: &Delivery, numbers: BTreeSet<u64>) {
        let _one = self.reading.lock().await;
        let github = delivery.github();
        let repo = delivery.repository();
        let reads: Vec<(u64, Result<Option<Read>>)> = futures::stream::iter(numbers)
            .map(|number| {
                let repo = repo.clone();
                async move { (number, pull::read_pull(github, &repo, number).await) }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        for (number, read) in reads {
            match read {
                Ok(Some((pull, view, complete))) => {
                    let previous = self
                        .tracked()
                        .record(&pull.head.sha, view.clone(), complete);
                    if previous.as_ref() != Some(&view) {
                        self.announce(view);
                    }
                }
                Ok(None) => tracing::debug!(number, "not one of Tower's pull requests; ignored"),
                Err(error) => tracing::warn!(%error, number, "could not read a pull request"),
            }
        }
    }

    /// Lists everything again and announces each pull request whose view changed.
    async fn refresh_all(&self, delivery: &Delivery) -> Result<()> {
        let _one = self.reading.lock().await;
        let github = delivery.github();
        let repo = delivery.repository();
        let Listing {
            open,
            merged,
            closed,
        } = pull::list_tower_pulls(github, &repo).await?;
        // Merged pull requests' checks and reviews are read once, the first time each is seen merged.
        let unsettled: Vec<(u64, String)> = {
            let tracked = self.tracked();
            merged
                .iter()
                .filter(|(p, _)| !tracked.settled.contains_key(&p.number))
                .map(|(p, _)| (p.number, p.head.sha.clone()))
                .collect()
        };
        // A read that failed is not kept: the next listing asks again.
        let settled: Vec<(u64, Settled)> = futures::stream::iter(unsettled)
            .map(|(number, head)| {
                let repo = repo.clone();
                async move {
                    let read = pull::checks_and_reviews(github, &repo, number, &head).await;
                    read.complete
                        .then_some((number, (read.checks, read.reviews)))
                }
            })
            .buffered(4)
            .filter_map(std::future::ready)
            .collect()
            .await;
        let mut changed = Vec::new();
        {
            let mut tracked = self.tracked();
            tracked.settled.extend(settled);
            let was_open: BTreeSet<u64> = tracked.open.keys().copied().collect();
            let merged: Vec<PullRequestView> = merged
                .into_iter()
                .map(|(pull, listed)| match tracked.settled.get(&pull.number) {
                    Some((checks, reviews)) => {
                        pull::view(&pull, checks.clone(), reviews.clone(), false)
                    }
                    None => listed,
                })
                .collect();
            let mut next = Tracked {
                open: open
                    .into_iter()
                    .map(|(pull, view)| (pull.number, (pull.head.sha, view)))
                    .collect(),
                merged,
                settled: std::mem::take(&mut tracked.settled),
                listed_at: Some(Instant::now()),
            };
            let kept: BTreeSet<u64> = next.merged.iter().map(|p| p.number).collect();
            next.settled.retain(|number, _| kept.contains(number));
            for view in next
                .open
                .values()
                .map(|(_, view)| view)
                .chain(next.merged.iter())
            {
                if tracked.find(view.number) != Some(view) {
                    changed.push(view.clone());
                }
            }
            // One that was open and is now closed unmerged is announced once, so browsers drop it.
            changed.extend(
                closed
                    .into_iter()
                    .filter(|view| was_open.contains(&view.number)),
            );
            *tracked = next;
        }
        self.listed.send_replace(true);
        for view in changed {
            self.announce(view);
        }
        Ok(())
    }

    /// Lists everything now (a test, or a caller that cannot wait for the backup poll).
    pub async fn refresh_now(&self, delivery: &Delivery) -> Result<()> {
        self.refresh_all(delivery).await
    }
}

#[cfg(test)]
mod tests {
    use shared::delivery::CiState;

    use super::*;

    fn pull(number: u64, state: PullState, merged_at: Option<&str>) -> PullRequestView {
        PullRequestView {
            number,
            url: format!("https://github.example/acme/application-repositories/pull/{number}"),
            branch: format!("tower/promote/svc{number}/prod"),
            title: format!("Promote {number}"),
            state,
            checks: vec![],
            ci: CiState::None,
            mergeable: Some(true),
            reused: false,
            intent: None,
            service: None,
            environment: None,
            author: "tower-app[bot]".into(),
            created_at: "2026-12-02T10:00:00Z".into(),
            merged_at: merged_at.map(Into::into),
            labels: vec![],
            reviews: vec![],
            blockers: vec![],
        }
    }

    #[test]
    fn a_pull_request_moves_from_open_to_merged_and_a_closed_one_leaves_the_list() {
        let mut tracked = Tracked::default();
        assert_eq!(
            tracked.record("a1", pull(1, PullState::Open, None), true),
            None
        );
        tracked.record("b2", pull(2, PullState::Open, None), true);
        tracked.record(
            "c3",
            pull(3, PullState::Merged, Some("2026-12-02T09:00:00Z")),
            true,
        );
        let numbers = |t: &Tracked| t.list().iter().map(|p| p.number).collect::<Vec<_>>();
        assert_eq!(
            numbers(&tracked),
            [2, 1, 3],
            "open newest first, then merged"
        );

        let previous = tracked.record(
            "a1",
            pull(1, PullState::Merged, Some("2026-12-02T11:00:00Z")),
            false,
        );
        assert_eq!(previous.map(|p| p.state), Some(PullState::Open));
        assert_eq!(numbers(&tracked), [2, 1, 3], "the newest merge first");
        assert!(
            !tracked.settled.contains_key(&1),
            "an incomplete read is not kept for good"
        );
        assert!(tracked.settled.contains_key(&3));

        tracked.record("b2", pull(2, PullState::Closed, None), true);
        assert_eq!(numbers(&tracked), [1, 3]);
        assert_eq!(tracked.find(2), None);
    }
}
