//! The DAG laid out in layers, left to right, fewer crossings first; `finally` tasks in a last layer of
//! their own.

use serde::{Deserialize, Serialize};

/// One node's place.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodePlace {
    /// Layer (column), 0 leftmost.
    pub layer: usize,
    /// Order within the layer, 0 topmost.
    pub order: usize,
    /// Left edge, in SVG user units.
    pub x: f64,
    /// Top edge, in SVG user units.
    pub y: f64,
}

/// One edge's path as points through which a drawn line passes, from the source's right side to the
/// target's left side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgePath {
    /// Index into the graph's edges.
    pub edge: usize,
    /// Points, source first.
    pub points: Vec<(f64, f64)>,
}

/// A laid-out graph.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphLayout {
    /// A place per node, in the graph's node order.
    pub nodes: Vec<NodePlace>,
    /// A path per edge, in the graph's edge order.
    pub edges: Vec<EdgePath>,
    /// Total width.
    pub width: f64,
    /// Total height.
    pub height: f64,
    /// The x where the `finally` group starts, if there is one.
    pub finally_x: Option<f64>,
}
