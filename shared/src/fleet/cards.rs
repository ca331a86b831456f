//! The deployment card's logic: rollout step states, what is worth expanding, one-line summaries, and
//! patching a service's cards with an update from the stream.

use crate::fleet::{
    CloudResourceView, ComposedResourceView, DeploymentCard, EventView, PodView, RolloutStep,
    SecretView, WorkloadView,
};
use crate::time::parse_rfc3339;

/// A pod that keeps crashing.
pub fn is_crashloop(pod: &PodView) -> bool {
    pod.waiting_reason.as_deref() == Some("CrashLoopBackOff")
}

/// A secret worth expanding: not ready, or not refreshed within its interval.
pub fn secret_has_problem(secret: &SecretView) -> bool {
    !secret.ready || secret.stale
}

/// A Crossplane claim worth expanding: not ready, not synced, or carrying an error, itself or in a
/// resource it composed (the claim's own conditions lag behind those).
pub fn resource_has_problem(resource: &CloudResourceView) -> bool {
    !resource.ready
        || !resource.synced
        || resource.message.is_some()
        || resource.composed.iter().any(composed_has_problem)
}

/// A composed (managed) resource worth pointing at: not ready, not synced, or carrying an error.
pub fn composed_has_problem(resource: &ComposedResourceView) -> bool {
    !resource.ready || !resource.synced || resource.message.is_some()
}

/// A Deployment worth expanding: a failed condition, a rollout under way, or fewer replicas ready,
/// available or updated than it wants.
pub fn workload_has_problem(workload: &WorkloadView) -> bool {
    workload.problem.is_some()
        || workload.progressing.is_some()
        || workload.ready_replicas < workload.replicas
        || workload.available_replicas < workload.replicas
        || workload.updated_replicas < workload.replicas
}

/// A Deployment's replica counts in a line: `1/2 ready · 2 updated · 1 available`.
pub fn workload_counts(workload: &WorkloadView) -> String {
    format!(
        "{}/{} ready · {} updated · {} available",
        workload.ready_replicas,
        workload.replicas,
        workload.updated_replicas,
        workload.available_replicas
    )
}

/// What an event is about and how often, in a line: `Pod/web-1 · 31 times`, with the count left out for
/// a single occurrence.
pub fn event_subject(event: &EventView) -> String {
    let object = format!("{}/{}", event.object_kind, event.object_name);
    if event.count > 1 {
        format!("{object} · {} times", event.count)
    } else {
        object
    }
}
/// Where a rollout step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// Passed.
    Done,
    /// Under way.
    Current,
    /// Still to come.
    Pending,
}

impl StepState {
    /// The value of `data-state`, also the word shown to screen readers.
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Done => "done",
            StepState::Current => "current",
            StepState::Pending => "pending",
        }
    }
}

/// The state of each of `count` steps when the rollout is at `current` (equal to `count` when done; `None`
/// when the controller has not said, which shows every step as pending).
pub fn step_states(count: usize, current: Option<usize>) -> Vec<StepState> {
    (0..count)
        .map(|index| match current {
            Some(current) if index < current => StepState::Done,
            Some(current) if index == current => StepState::Current,
            _ => StepState::Pending,
        })
        .collect()
}

/// A step in words: "20% traffic", "pause 30s", "pause until promoted".
pub fn step_label(step: &RolloutStep) -> String {
    match step {
        RolloutStep::SetWeight { weight } => format!("{weight}% traffic"),
        RolloutStep::Pause {
            duration: Some(duration),
        } => format!("pause {duration}"),
        RolloutStep::Pause { duration: None } => "pause until promoted".to_string(),
        RolloutStep::Other { name } => name.clone(),
    }
}

/// Replaces the card of the same service and environment, or adds it; cards stay in the order they came.
pub fn upsert_card(cards: &mut Vec<DeploymentCard>, card: DeploymentCard) {
    match cards
        .iter_mut()
        .find(|c| c.environment == card.environment && c.service == card.service)
    {
        Some(existing) => *existing = card,
        None => cards.push(card),
    }
}

/// When the running version was deployed, as best known: the last sync's end, else its start, else the
/// oldest pod's start.
pub fn deployed_at(card: &DeploymentCard) -> Option<&str> {
    let operation = card.application.as_ref().and_then(|a| a.operation.as_ref());
    operation
        .and_then(|o| o.finished_at.as_deref().or(o.started_at.as_deref()))
        .or_else(|| {
            card.pods
                .iter()
                .filter_map(|p| p.started_at.as_deref())
                .min_by_key(|at| parse_rfc3339(at).unwrap_or(i64::MAX))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{ApplicationView, Health, OperationView, SyncStatus};

    #[test]
    fn rollout_steps_are_done_current_or_pending() {
        use StepState::*;
        assert_eq!(step_states(4, Some(2)), [Done, Done, Current, Pending]);
        assert_eq!(step_states(3, Some(3)), [Done, Done, Done]);
        assert_eq!(step_states(2, None), [Pending, Pending]);
        assert_eq!(
            step_label(&RolloutStep::SetWeight { weight: 20 }),
            "20% traffic"
        );
        assert_eq!(
            step_label(&RolloutStep::Pause { duration: None }),
            "pause until promoted"
        );
    }

    fn card(env: &str, version: &str) -> DeploymentCard {
        DeploymentCard {
            service: "payments".into(),
            environment: env.into(),
            unreachable_since: None,
            clusters: vec![],
            release: None,
            running_version: Some(version.into()),
            previous_version: None,
            changes: vec![],
            application: None,
            rollout: None,
            pods: vec![],
            schema: None,
            secrets: vec![],
            cloud_resources: vec![],
            deployments: vec![],
            events: vec![],
            build: None,
            release_application: None,
        }
    }

    fn worker(replicas: u32, ready: u32) -> WorkloadView {
        WorkloadView {
            name: "ledger-worker".into(),
            replicas,
            ready_replicas: ready,
            updated_replicas: replicas,
            available_replicas: ready,
            progressing: None,
            problem: None,
        }
    }

    #[test]
    fn a_deployment_with_all_replicas_ready_folds_and_a_short_one_does_not() {
        assert!(!workload_has_problem(&worker(1, 1)));
        assert!(workload_has_problem(&worker(2, 1)));
        let failed = WorkloadView {
            problem: Some("ReplicaSet \"x\" has timed out progressing.".into()),
            ..worker(1, 1)
        };
        assert!(workload_has_problem(&failed));
        let rolling = WorkloadView {
            progressing: Some("ReplicaSet \"x\" is progressing.".into()),
            ..worker(1, 1)
        };
        assert!(workload_has_problem(&rolling));
        assert_eq!(
            workload_counts(&worker(2, 1)),
            "1/2 ready · 2 updated · 1 available"
        );
    }

    fn instance(ready: bool) -> ComposedResourceView {
        ComposedResourceView {
            kind: "Instance".into(),
            name: "payments-x7k2p-9fz4q".into(),
            ready,
            synced: true,
            message: (!ready).then(|| "DBInstanceNotFound".into()),
        }
    }

    #[test]
    fn a_claim_folds_only_while_what_it_composed_is_fine() {
        // A card from a server that predates composed resources still reads.
        let mut claim: CloudResourceView = serde_json::from_value(serde_json::json!({
            "kind": "PostgreSQLInstance", "name": "payments", "ready": true, "synced": true, "message": null,
        }))
        .expect("a claim without composed resources");
        assert!(claim.composed.is_empty());
        assert!(!resource_has_problem(&claim));
        claim.composed = vec![instance(true)];
        assert!(!resource_has_problem(&claim));
        // The claim's own conditions still say Ready: the managed resource is the first to know.
        claim.composed.push(instance(false));
        assert!(composed_has_problem(&claim.composed[1]));
        assert!(resource_has_problem(&claim));
    }

    #[test]
    fn an_event_names_its_object_and_counts_only_repeats() {
        let mut event = EventView {
            reason: "BackOff".into(),
            message: "Back-off restarting failed container".into(),
            object_kind: "Pod".into(),
            object_name: "web-1".into(),
            count: 1,
            last_seen: None,
        };
        assert_eq!(event_subject(&event), "Pod/web-1");
        event.count = 31;
        assert_eq!(event_subject(&event), "Pod/web-1 · 31 times");
    }

    #[test]
    fn a_card_update_replaces_its_environment_in_place() {
        let mut cards = vec![card("dev", "aaa"), card("prod", "bbb")];
        upsert_card(&mut cards, card("dev", "ccc"));
        let versions: Vec<_> = cards
            .iter()
            .map(|c| (c.environment.as_str(), c.running_version.as_deref()))
            .collect();
        assert_eq!(versions, [("dev", Some("ccc")), ("prod", Some("bbb"))]);
        upsert_card(&mut cards, card("staging", "ddd"));
        assert_eq!(cards.len(), 3);
    }

    #[test]
    fn deployed_at_prefers_the_last_sync() {
        let mut with_sync = card("dev", "aaa");
        with_sync.application = Some(ApplicationView {
            name: "payments-dev".into(),
            sync: SyncStatus::Synced,
            revision: None,
            health: Health::Healthy,
            health_message: None,
            operation: Some(OperationView {
                phase: "Succeeded".into(),
                message: None,
                started_at: Some("2024-05-01T10:00:00Z".into()),
                finished_at: Some("2024-05-01T10:01:00Z".into()),
            }),
            external_urls: vec![],
            reconciled_at: None,
        });
        assert_eq!(deployed_at(&with_sync), Some("2024-05-01T10:01:00Z"));
        assert_eq!(deployed_at(&card("dev", "aaa")), None);
    }
}
