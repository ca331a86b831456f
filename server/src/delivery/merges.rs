//! Merged pull requests of the GitOps repository, for the Overview's activity feed.
//!
//! One background task reads the repository's most recently updated closed pull requests (one forge read,
//! however many people are looking) and records each merge it has not seen before. Without webhooks it reads
//! every few seconds; with them, a `pull_request` delivery saying one closed wakes it at once, and the
//! periodic read is only a backup.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use shared::delivery::parse_branch;
use shared::fleet::{ActivityItem, ActivityKind};

use crate::fleet::FleetModel;
use crate::upstream::github::{GithubApp, Pull};

/// Closed pull requests read per poll: more than can merge between two polls.
const READ_PER_POLL: u32 = 30;
/// On start, merges this recent are recorded too, so the feed is not empty after a restart.
const REMEMBERED_ON_START: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// Polls `repository` every `every`, and whenever `wake` is notified, and records its new merges in
/// `fleet`'s activity feed.
pub fn spawn(
    github: GithubApp,
    repository: String,
    fleet: FleetModel,
    every: Duration,
    wake: Arc<Notify>,
) {
    tokio::spawn(async move {
        let mut merges = Merges::default();
        loop {
            match github
                .recently_updated_pulls(&repository, "closed", READ_PER_POLL)
                .await
            {
                Ok(pulls) => {
                    for item in merges.new_since_last_poll(&pulls, jiff::Timestamp::now()) {
                        fleet.record(item);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "could not read merged pull requests; trying again later")
                }
            }
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                // Merges come in bursts of one delivery each; one read after a short wait sees them all.
                () = wake.notified() => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    });
}

/// Which merges have been recorded.
#[derive(Debug, Default)]
struct Merges {
    /// Numbers recorded; `None` until the first successful read.
    seen: Option<BTreeSet<u64>>,
}

impl Merges {
    /// The activity for merges in `pulls` not recorded before, oldest first. The first read records only
    /// the last day's merges: older ones are history, not activity.
    fn new_since_last_poll(&mut self, pulls: &[Pull], now: jiff::Timestamp) -> Vec<ActivityItem> {
        let first = self.seen.is_none();
        let seen = self.seen.get_or_insert_with(BTreeSet::new);
        let mut fresh: Vec<(jiff::Timestamp, &Pull)> = pulls
            .iter()
            .filter_map(|pull| {
                let merged_at = pull.merged_at.as_deref()?.parse::<jiff::Timestamp>().ok()?;
                seen.insert(pull.number).then_some((merged_at, pull))
            })
            .filter(|(merged_at, _)| {
                !first || now.duration_since(*merged_at) <= REMEMBERED_ON_START
            })
            .collect();
        fresh.sort_by_key(|(merged_at, _)| *merged_at);
        // A pull request merged long ago can only be read again by being updated, and then it is not new:
        // keeping the numbers of the last reads only is enough and keeps the set small.
        if seen.len() > 10 * READ_PER_POLL as usize {
            let recent: BTreeSet<u64> = pulls.iter().map(|p| p.number).collect();
            seen.retain(|n| recent.contains(n));
        }
        fresh
            .into_iter()
            .map(|(merged_at, pull)| activity(pull, merged_at))
            .collect()
    }
}

fn activity(pull: &Pull, merged_at: jiff::Timestamp) -> ActivityItem {
    let (service, environment) = match parse_branch(&pull.head.reference) {
        Some((_, service, environment)) => (service, environment),
        None => (String::new(), None),
    };
    ActivityItem {
        at: merged_at.to_string(),
        service,
        environment,
        kind: ActivityKind::PullRequestMerged,
        message: format!("#{} {}", pull.number, pull.title),
        link: Some(pull.html_url.clone()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pull(number: u64, branch: &str, merged_at: Option<&str>) -> Pull {
        serde_json::from_value(serde_json::json!({
            "number": number,
            "html_url": format!("https://github.example/acme/application-repositories/pull/{number}"),
            "state": "closed",
            "title": format!("change {number}"),
            "head": {"ref": branch, "sha": "0123456"},
            "merged_at": merged_at,
        }))
        .unwrap()
    }

    #[test]
    fn the_first_read_keeps_the_last_day_then_only_new_merges_appear_once() {
        let now: jiff::Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
        let mut merges = Merges::default();
        let first = merges.new_since_last_poll(
            &[
                pull(
                    3,
                    "tower/promote/payments/prod",
                    Some("2026-11-30T11:00:00Z"),
                ),
                pull(2, "someone/typo", Some("2026-11-30T10:00:00Z")),
                pull(1, "tower/deploy/shop/dev", Some("2026-11-20T10:00:00Z")),
                pull(4, "tower/rollback/shop/prod", None),
            ],
            now,
        );
        let numbers: Vec<&str> = first.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(
            numbers,
            ["#2 change 2", "#3 change 3"],
            "oldest first, last day only"
        );
        assert_eq!(first[1].service, "payments");
        assert_eq!(first[1].environment.as_deref(), Some("prod"));
        assert_eq!(first[1].at, "2026-11-30T11:00:00Z");
        assert_eq!(first[0].service, "", "a hand-made branch names no service");
        assert!(first[0].link.as_deref().unwrap().ends_with("/pull/2"));

        let later = merges.new_since_last_poll(
            &[
                pull(1, "tower/deploy/shop/dev", Some("2026-11-20T10:00:00Z")),
                pull(4, "tower/rollback/shop/prod", Some("2026-11-30T12:05:00Z")),
                pull(
                    3,
                    "tower/promote/payments/prod",
                    Some("2026-11-30T11:00:00Z"),
                ),
            ],
            now,
        );
        assert_eq!(later.len(), 1, "{later:?}");
        assert_eq!(later[0].message, "#4 change 4");
        assert_eq!(later[0].kind, ActivityKind::PullRequestMerged);
    }
}
