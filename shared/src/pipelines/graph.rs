//! The DAG of a pipeline run: one node per pipeline task, edges from `runAfter`, from result references
//! (`$(tasks.X.results.Y)` in params and `when` inputs) and from `when` guards, and the `finally` tasks as
//! their own group after everything else.

use serde::{Deserialize, Serialize};

use super::TaskStatus;

/// Why one task comes after another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EdgeKind {
    /// `runAfter`.
    RunAfter,
    /// A param of the later task reads a result of the earlier one.
    Result {
        /// The result passed.
        result: String,
    },
    /// A `when` guard of the later task reads a result of the earlier one.
    When {
        /// The result the guard reads.
        result: String,
    },
    /// Every `finally` task runs after the last of the `tasks`.
    Finally,
}

/// One pipeline task on the DAG.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// The pipeline task's name.
    pub name: String,
    /// What a reader sees: its display name, or its name.
    pub label: String,
    /// Whether it is in the `finally` group.
    pub finally: bool,
    /// Where it stands in the run.
    pub status: TaskStatus,
    /// Why it was skipped, if it was.
    pub skip_reason: Option<String>,
    /// Whether it has a `when` guard.
    pub guarded: bool,
}

/// One edge: `from` must finish (or produce a result) before `to` runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphEdge {
    /// Index into [`PipelineGraph::nodes`].
    pub from: usize,
    /// Index into [`PipelineGraph::nodes`].
    pub to: usize,
    /// Why; several reasons between the same two tasks are one edge with all its kinds.
    pub kinds: Vec<EdgeKind>,
}

/// The DAG of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineGraph {
    /// Every pipeline task, `tasks` then `finally`, in spec order.
    pub nodes: Vec<GraphNode>,
    /// Every edge.
    pub edges: Vec<GraphEdge>,
    /// Tasks named in `runAfter` or a result reference that the spec does not have, as `(task, missing)`.
    pub dangling: Vec<(String, String)>,
    /// Tasks on a cycle, if the spec has one (Tekton refuses such a Pipeline; the page says so).
    pub cycle: Vec<String>,
}
