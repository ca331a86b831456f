//! An Argo Rollout as the watch cache keeps it: only what a card's rollout row reads, read straight from the
//! API server's JSON. As a `DynamicObject` even a trimmed Rollout kept a JSON tree of a dozen small maps (each
//! canary step is one), and each map of a `serde_json::Value` costs a whole B-tree node, about 600 bytes,
//! however few keys it holds.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::watched::ROLLOUTS;

/// A Rollout: its metadata, canary steps and replica counts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Rollout {
    /// Name, namespace and labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The steps and the replicas asked for.
    #[serde(default)]
    pub spec: RolloutSpec,
    /// How far it got.
    #[serde(default)]
    pub status: RolloutStatus,
}

/// The part of a Rollout's spec a card reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct RolloutSpec {
    /// Replicas asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// The strategy; only a canary's steps are read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
}

/// A Rollout's strategy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Strategy {
    /// The canary strategy, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canary>,
}

/// A canary strategy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Canary {
    /// Its steps, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// A canary step as a card shows it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(from = "Value", into = "Value")]
pub enum Step {
    /// `setWeight`: the share of traffic the canary gets.
    SetWeight(i64),
    /// `pause`, with its duration as written (`30s`, `2m`) or a number of seconds; none waits for a promote.
    Pause(Option<Value>),
    /// Any other step, by its key (`analysis`, `experiment`, …).
    Other(String),
}

impl From<Value> for Step {
    fn from(step: Value) -> Self {
        if let Some(weight) = step.get("setWeight").and_then(Value::as_i64) {
            Self::SetWeight(weight)
        } else if let Some(pause) = step.get("pause") {
            Self::Pause(pause.get("duration").cloned())
        } else {
            Self::Other(
                step.as_object()
                    .and_then(|o| o.keys().next().cloned())
                    .unwrap_or_else(|| "step".into()),
            )
        }
    }
}

impl From<Step> for Value {
    fn from(step: Step) -> Self {
        match step {
            Step::SetWeight(weight) => serde_json::json!({ "setWeight": weight }),
            Step::Pause(Some(duration)) => serde_json::json!({ "pause": { "duration": duration } }),
            Step::Pause(None) => serde_json::json!({ "pause": {} }),
            Step::Other(name) => serde_json::json!({ name: {} }),
        }
    }
}

/// The part of a Rollout's status a card reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// `Healthy`, `Progressing`, `Paused`, `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Why it is in that phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The step it is at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step_index: Option<i64>,
    /// Replicas it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i64>,
    /// Replicas ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i64>,
    /// Replicas on the newest template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i64>,
}

super::typed::watched_resource!(Rollout, ROLLOUTS);
