//! A pipeline run's DAG as SVG: one focusable node per task with its status (colour, glyph and word), a
//! `when` marker on guarded tasks, edges with arrowheads and the result they pass, and the `finally` group
//! boxed and labelled. The graph and its layout come from `shared::pipelines`; this only draws them.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use shared::pipelines::TaskStatus;
use shared::pipelines::graph::{EdgeKind, GraphEdge, GraphNode, PipelineGraph};
use shared::pipelines::layout::{GraphLayout, NODE_HEIGHT, NODE_WIDTH, PADDING};

/// Characters of a label that fit in a node beside its glyph; longer labels end in "…" (the whole label is
/// in the node's tooltip).
const LABEL_CHARS: usize = 28;

/// A laid-out DAG and how long computing it took.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnGraph {
    /// The DAG.
    pub graph: PipelineGraph,
    /// Its layout.
    pub layout: GraphLayout,
    /// Milliseconds the graph and its layout took, as `performance.now()` measured them.
    pub layout_ms: f64,
}

/// `label` cut to what fits in a node.
fn fitted(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let mut cut: String = label.chars().take(LABEL_CHARS - 1).collect();
        cut.push('…');
        cut
    }
}

/// The glyph of a task's status, drawn in its node.
fn glyph(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "○",
        TaskStatus::Running => "◔",
        TaskStatus::Succeeded => "✓",
        TaskStatus::Failed => "✕",
        TaskStatus::Cancelled => "⊘",
        TaskStatus::Skipped => "↷",
    }
}

/// The CSS class of a task's status.
fn status_class(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "s-pending",
        TaskStatus::Running => "s-running",
        TaskStatus::Succeeded => "s-succeeded",
        TaskStatus::Failed => "s-failed",
        TaskStatus::Cancelled => "s-cancelled",
        TaskStatus::Skipped => "s-skipped",
    }
}

/// The result an edge passes, if it passes one (a param's, else a `when` guard's).
fn passed_result(edge: &GraphEdge) -> Option<&str> {
    edge.kinds
        .iter()
        .find_map(|k| match k {
            EdgeKind::Result { result } => Some(result.as_str()),
            _ => None,
        })
        .or_else(|| {
            edge.kinds.iter().find_map(|k| match k {
                EdgeKind::When { result } => Some(result.as_str()),
                _ => None,
            })
        })
}

/// Why `to` waits for `from`, in words, for an edge's tooltip.
fn edge_title(graph: &PipelineGraph, edge: &GraphEdge) -> String {
    let name = |i: usize| graph.nodes.get(i).map_or("?", |n| n.name.as_str());
    let reasons: Vec<String> = edge
        .kinds
        .iter()
        .map(|k| match k {
            EdgeKind::RunAfter => "runs after it".to_string(),
            EdgeKind::Result { result } => format!("reads its result {result}"),
            EdgeKind::When { result } => format!("is guarded by its result {result}"),
            EdgeKind::Finally => "runs finally, after every task".to_string(),
        })
        .collect();
    format!(
        "{} → {}: {}",
        name(edge.from),
        name(edge.to),
        reasons.join("; ")
    )
}

/// The SVG path through `points`.
fn path_of(points: &[(f64, f64)]) -> String {
    let mut d = String::new();
    for (i, (x, y)) in points.iter().enumerate() {
        d.push_str(if i == 0 { "M" } else { " L" });
        d.push_str(&format!("{x:.1},{y:.1}"));
    }
    d
}

/// Where a label sits on a path: the middle of its middle segment.
fn label_point(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let segment = (points.len() - 2) / 2;
    let (a, b) = (points[segment], points[segment + 1]);
    Some(((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0 - 4.0))
}

/// What a node shows that changes while a run goes on.
#[derive(Debug, Clone, PartialEq)]
struct NodeState {
    status: TaskStatus,
    skip_reason: Option<String>,
}

/// The drawing without the nodes' states: redrawn only when the shape of the graph changes, so a run going
/// on patches its nodes in place and keyboard focus on one survives it.
fn shape_of(drawn: &DrawnGraph) -> (PipelineGraph, GraphLayout) {
    let mut graph = drawn.graph.clone();
    for node in &mut graph.nodes {
        node.status = TaskStatus::Pending;
        node.skip_reason = None;
    }
    (graph, drawn.layout.clone())
}

/// The DAG of a run. `selected` is the task whose panel is open; `on_select` opens a task's panel.
#[component]
pub fn PipelineGraph(
    drawn: Signal<Option<DrawnGraph>>,
    selected: Signal<Option<String>>,
    on_select: Callback<String>,
) -> impl IntoView {
    let shape = Memo::new(move |_| drawn.with(|d| d.as_ref().map(shape_of)));
    let layout_ms = Memo::new(move |_| {
        drawn.with(|d| {
            d.as_ref()
                .map(|d| format!("{:.2}", d.layout_ms))
                .unwrap_or_default()
        })
    });
    let states = Memo::new(move |_| {
        drawn.with(|d| {
            d.as_ref()
                .map(|d| {
                    d.graph
                        .nodes
                        .iter()
                        .map(|n| NodeState {
                            status: n.status,
                            skip_reason: n.skip_reason.clone(),
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    move || {
        shape.with(|shape| {
            let (graph, layout) = shape.as_ref()?;
            Some(graph_view(
                graph, layout, layout_ms, states, selected, on_select,
            ))
        })
    }
}

fn graph_view(
    graph: &PipelineGraph,
    layout: &GraphLayout,
    layout_ms: Memo<String>,
    states: Memo<Vec<NodeState>>,
    selected: Signal<Option<String>>,
    on_select: Callback<String>,
) -> AnyView {
    let width = layout.width.max(NODE_WIDTH + 2.0 * PADDING);
    let height = layout.height.max(NODE_HEIGHT + 2.0 * PADDING);
    let finally_box = layout.finally_x.map(|x| {
        let left = x - PADDING / 2.0;
        view! {
            <g class="finally-group" data-testid="finally-group">
                <rect x=left y=4 width=(width - left - 4.0).max(0.0) height=(height - 8.0).max(0.0) rx=8 />
                <text x=left + 8.0 y=18 class="finally-label">"finally"</text>
            </g>
        }
    });
    let edges = graph
        .edges
        .iter()
        .zip(&layout.edges)
        .filter(|(_, path)| path.points.len() >= 2)
        .map(|(edge, path)| {
            let when_only = edge.kinds.iter().all(|k| matches!(k, EdgeKind::When { .. }));
            let finally = edge.kinds.iter().all(|k| matches!(k, EdgeKind::Finally));
            let class = if finally {
                "dag-edge finally"
            } else if when_only {
                "dag-edge when"
            } else {
                "dag-edge"
            };
            let label = passed_result(edge).map(str::to_string).and_then(|result| {
                let (x, y) = label_point(&path.points)?;
                Some(view! { <text class="edge-label" x=x y=y text-anchor="middle" data-testid="edge-label">{result}</text> })
            });
            let from = graph.nodes.get(edge.from).map(|n| n.name.clone()).unwrap_or_default();
            let to = graph.nodes.get(edge.to).map(|n| n.name.clone()).unwrap_or_default();
            view! {
                <g class=class data-testid="dag-edge" data-from=from data-to=to>
                    <title>{edge_title(graph, edge)}</title>
                    <path d=path_of(&path.points) marker-end="url(#dag-arrow)" />
                    {label}
                </g>
            }
        })
        .collect_view();
    let nodes = graph
        .nodes
        .iter()
        .zip(&layout.nodes)
        .enumerate()
        .map(|(index, (node, place))| {
            let state = Memo::new(move |_| {
                states.with(|s| {
                    s.get(index).cloned().unwrap_or(NodeState {
                        status: TaskStatus::Pending,
                        skip_reason: None,
                    })
                })
            });
            node_view(node, place.x, place.y, state, selected, on_select)
        })
        .collect_view();
    let problems = (!graph.cycle.is_empty() || !graph.dangling.is_empty()).then(|| {
        let mut words = Vec::new();
        if !graph.cycle.is_empty() {
            words.push(format!(
                "These tasks wait on each other in a cycle, which Tekton refuses: {}.",
                graph.cycle.join(", ")
            ));
        }
        for (task, missing) in &graph.dangling {
            words.push(format!("{task} refers to {missing}, which this pipeline does not have."));
        }
        view! { <p class="banner tone-warn" data-testid="dag-problems" role="status">{words.join(" ")}</p> }
    });
    view! {
        {problems}
        <div class="dag-scroll">
            <svg
                class="dag"
                data-testid="dag"
                data-layout-ms=move || layout_ms.get()
                width=width
                height=height
                viewBox=format!("0 0 {width:.1} {height:.1}")
                role="group"
                aria-label=format!("The tasks of this run: {} tasks", graph.nodes.len())
            >
                <defs>
                    <marker id="dag-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                        <path d="M0,0 L10,5 L0,10 z" class="dag-arrowhead" />
                    </marker>
                </defs>
                {finally_box}
                <g class="dag-edges">{edges}</g>
                <g class="dag-nodes">{nodes}</g>
            </svg>
        </div>
    }
    .into_any()
}

fn node_view(
    node: &GraphNode,
    x: f64,
    y: f64,
    state: Memo<NodeState>,
    selected: Signal<Option<String>>,
    on_select: Callback<String>,
) -> impl IntoView + use<> {
    let name = node.name.clone();
    let is_selected = {
        let name = name.clone();
        move || selected.with(|s| s.as_deref() == Some(name.as_str()))
    };
    let pressed = is_selected.clone();
    let open = {
        let name = name.clone();
        move || on_select.run(name.clone())
    };
    let open_by_key = open.clone();
    let on_key = move |event: KeyboardEvent| {
        if matches!(event.key().as_str(), "Enter" | " ") {
            event.prevent_default();
            open_by_key();
        }
    };
    let (label, guarded) = (node.label.clone(), node.guarded);
    let tooltip = {
        let (label, name) = (label.clone(), name.clone());
        move || {
            state.with(|s| {
                let mut tooltip = format!("{label} ({name}): {}", s.status.label());
                if let Some(reason) = &s.skip_reason {
                    tooltip.push_str(&format!(". Skipped: {reason}"));
                }
                if guarded {
                    tooltip.push_str(". Runs only when its when expressions hold.");
                }
                tooltip
            })
        }
    };
    let aria_label = {
        let name = name.clone();
        move || format!("{name}: {}", state.with(|s| s.status.label()))
    };
    let when = guarded.then(|| {
        view! {
            <g class="when-marker" data-testid="when-marker" transform=format!("translate({:.1},-7)", NODE_WIDTH - 44.0)>
                <rect width=38 height=14 rx=7 />
                <text x=19 y=10.5 text-anchor="middle">"when"</text>
            </g>
        }
    });
    let skipped = move || {
        state.with(|s| {
            s.skip_reason.clone().map(|reason| {
                view! { <text class="dag-skip" x=30 y=NODE_HEIGHT - 7.0 data-testid="dag-skip-reason">{fitted(&reason)}</text> }
            })
        })
    };
    let label_y = move || {
        if state.with(|s| s.skip_reason.is_some()) {
            17.0
        } else {
            NODE_HEIGHT / 2.0 + 4.5
        }
    };
    view! {
        <g
            class="dag-node"
            class:s-pending=move || state.with(|s| s.status == TaskStatus::Pending)
            class:s-running=move || state.with(|s| s.status == TaskStatus::Running)
            class:s-succeeded=move || state.with(|s| s.status == TaskStatus::Succeeded)
            class:s-failed=move || state.with(|s| s.status == TaskStatus::Failed)
            class:s-cancelled=move || state.with(|s| s.status == TaskStatus::Cancelled)
            class:s-skipped=move || state.with(|s| s.status == TaskStatus::Skipped)
            class:selected=is_selected
            class:finally=node.finally
            transform=format!("translate({x:.1},{y:.1})")
            role="button"
            tabindex="0"
            aria-label=aria_label
            aria-pressed=move || if pressed() { "true" } else { "false" }
            data-testid=format!("dag-node-{name}")
            data-status=move || status_class(state.with(|s| s.status)).trim_start_matches("s-")
            on:click=move |_| open()
            on:keydown=on_key
        >
            <title>{tooltip}</title>
            <rect class="dag-box" width=NODE_WIDTH height=NODE_HEIGHT rx=6 />
            <text class="dag-glyph" x=14 y=NODE_HEIGHT / 2.0 + 5.0 text-anchor="middle" aria-hidden="true">{move || glyph(state.with(|s| s.status))}</text>
            <text class="dag-label" x=30 y=label_y>{fitted(&label)}</text>
            {skipped}
            {when}
        </g>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_label_is_cut_with_an_ellipsis_and_a_short_one_kept() {
        assert_eq!(fitted("Run the unit tests"), "Run the unit tests");
        let cut = fitted("Push the chart at 3f2a1c9d8e7f6a5b4c3d2e1f");
        assert_eq!(cut.chars().count(), LABEL_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn an_edge_is_labelled_with_the_result_it_passes_before_the_one_it_guards_with() {
        let edge = GraphEdge {
            from: 0,
            to: 1,
            kinds: vec![
                EdgeKind::RunAfter,
                EdgeKind::When {
                    result: "HIGH_CVES".into(),
                },
                EdgeKind::Result {
                    result: "IMAGE_DIGEST".into(),
                },
            ],
        };
        assert_eq!(passed_result(&edge), Some("IMAGE_DIGEST"));
        let plain = GraphEdge {
            from: 0,
            to: 1,
            kinds: vec![EdgeKind::RunAfter],
        };
        assert_eq!(passed_result(&plain), None);
    }

    #[test]
    fn a_path_goes_through_every_point_and_its_label_sits_mid_way() {
        let points = [(0.0, 0.0), (10.0, 0.0), (20.0, 10.0)];
        assert_eq!(path_of(&points), "M0.0,0.0 L10.0,0.0 L20.0,10.0");
        assert_eq!(label_point(&points), Some((5.0, -4.0)));
        assert_eq!(label_point(&points[..1]), None);
    }
}
