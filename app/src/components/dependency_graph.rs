//! The dependsOn graph around one service, laid out in columns by `shared::fleet::dependency_graph::dependency_layout`:
//! callers on the left, what they call on the right. Nodes are links; edges an SVG underneath, named, described
//! by the summary and by the same edges as a list.

use std::collections::BTreeMap;

use leptos::lazy;
use leptos::prelude::*;
use shared::fleet::dependency_graph::dependency_layout;
use shared::status::{Tone, rollup};

use crate::components::status::glyph;
use crate::live::LiveFleet;

const NODE_WIDTH: usize = 180;
const NODE_HEIGHT: usize = 44;
const COLUMN_GAP: usize = 64;
const ROW_GAP: usize = 14;

/// The graph for `focus`, live: a service added or changed in the fleet redraws it. Its code is a separate
/// wasm module, fetched the first time the tab opens.
#[component]
pub fn DependencyGraph(focus: Signal<String>) -> impl IntoView {
    Suspend::new(dependency_graph(focus))
}

#[lazy]
fn dependency_graph(focus: Signal<String>) -> AnyView {
    view! { <LoadedDependencyGraph focus /> }.into_any()
}

#[component]
fn LoadedDependencyGraph(focus: Signal<String>) -> impl IntoView {
    let live = expect_context::<LiveFleet>();
    // What the picture shows: edges, owners and statuses. Redrawn only when that changes, not on every fleet
    // event, so keyboard focus on a node or the list survives the stream.
    let shown = Memo::new(move |_| {
        live.fleet.with(|fleet| {
            let graph = fleet
                .services()
                .map(|s| (s.name.clone(), s.depends_on.clone()))
                .collect::<BTreeMap<_, _>>();
            let statuses = fleet
                .services()
                .map(|s| (s.name.clone(), (s.owner.clone(), rollup(&s.environments))))
                .collect::<BTreeMap<_, _>>();
            (graph, statuses)
        })
    });
    move || {
        let (graph, statuses) = shown.get();
        let name = focus.get();
        let layout = dependency_layout(&graph, &name);
        let calls: Vec<String> = graph.get(&name).cloned().unwrap_or_default();
        let callers: Vec<String> = graph
            .iter()
            .filter(|(_, deps)| deps.contains(&name))
            .map(|(caller, _)| caller.clone())
            .collect();
        let mut column_sizes = vec![0_usize; layout.columns];
        for node in &layout.nodes {
            column_sizes[node.column] += 1;
        }
        let position = |column: usize, row: usize| {
            let x = column * (NODE_WIDTH + COLUMN_GAP);
            // Centre short columns against the tallest.
            let offset = (layout.rows - column_sizes[column]) * (NODE_HEIGHT + ROW_GAP) / 2;
            let y = offset + row * (NODE_HEIGHT + ROW_GAP);
            (x, y)
        };
        let width = layout.columns * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP;
        let height = layout.rows * (NODE_HEIGHT + ROW_GAP) - ROW_GAP;
        let edges = layout
            .edges
            .iter()
            .map(|(from, to)| {
                let (a, b) = (&layout.nodes[*from], &layout.nodes[*to]);
                let (x1, y1) = position(a.column, a.row);
                let (x2, y2) = position(b.column, b.row);
                let (x1, y1) = (x1 + NODE_WIDTH, y1 + NODE_HEIGHT / 2);
                let y2 = y2 + NODE_HEIGHT / 2;
                let mid = (x1 + x2) / 2;
                let d = format!(
                    "M{x1},{y1} C{mid},{y1} {mid},{y2} {},{y2}",
                    x2.saturating_sub(4)
                );
                view! { <path d=d marker-end="url(#arrow)" /> }
            })
            .map(IntoAny::into_any)
            .collect_view();
        // The picture in words, for screen readers and anyone who prefers a list: one line per arrow.
        let edge_lines = layout
            .edges
            .iter()
            .map(|(from, to)| {
                let line = format!(
                    "{} calls {}",
                    layout.nodes[*from].name, layout.nodes[*to].name
                );
                view! { <li>{line}</li> }
            })
            .collect_view();
        let nodes = layout
            .nodes
            .iter()
            .map(|node| {
                let (x, y) = position(node.column, node.row);
                let (owner, tone) = statuses
                    .get(&node.name)
                    .cloned()
                    .unwrap_or_else(|| ("not in the catalog".into(), Tone::Unknown));
                let status = match tone {
                    Tone::Ok => "all good",
                    Tone::Progress => "rolling out",
                    Tone::Unknown => "unknown",
                    Tone::Warn => "needs a look",
                    Tone::Bad => "failing",
                };
                view! {
                    <a
                        href=format!("/services/{}?tab=dependencies", node.name)
                        class=format!("graph-node {}", tone.class())
                        class:graph-focus=node.focus
                        class:graph-unknown=!node.known
                        data-testid="dependency-node"
                        data-service=node.name.clone()
                        aria-current=node.focus.then_some("page")
                        style:left=format!("{x}px")
                        style:top=format!("{y}px")
                        style:width=format!("{NODE_WIDTH}px")
                        style:height=format!("{NODE_HEIGHT}px")
                    >
                        <strong>{node.name.clone()}</strong>
                        <span class="muted small">
                            <span class="glyph" aria-hidden="true">{glyph(tone)}</span>
                            {format!(" {owner} · {status}")}
                        </span>
                    </a>
                }
            })
            .map(IntoAny::into_any)
            .collect_view();
        let list = |names: &[String]| {
            if names.is_empty() {
                "nothing".to_string()
            } else {
                names.join(", ")
            }
        };
        let alone = calls.is_empty() && callers.is_empty();
        view! {
            <p class="muted" id="dependency-summary" data-testid="dependency-summary">
                {format!("{name} calls {}; called by {}.", list(&calls), list(&callers))}
            </p>
            {alone.then(|| view! {
                <p class="empty" data-testid="dependencies-empty">
                    "Nothing here yet: dependencies come from dependsOn in the service's Component. Add one there by PR and it appears as soon as it merges."
                </p>
            })}
            <div class="graph-scroll">
                <div class="graph" style:width=format!("{width}px") style:height=format!("{height}px")>
                    <svg class="graph-edges" width=width height=height viewBox=format!("0 0 {width} {height}")
                        role="img" aria-labelledby="dependency-graph-title" aria-describedby="dependency-summary dependency-edges"
                        data-testid="dependency-graph">
                        <title id="dependency-graph-title">{format!("Dependency graph around {name}")}</title>
                        <defs>
                            <marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="8" markerHeight="8" orient="auto">
                                <path d="M0,0 L8,4 L0,8 z" />
                            </marker>
                        </defs>
                        {edges}
                    </svg>
                    {nodes}
                </div>
            </div>
            {(!alone).then(|| view! {
                <details class="graph-text">
                    <summary>"The graph as a list"</summary>
                    <ul id="dependency-edges" data-testid="dependency-edges">{edge_lines}</ul>
                </details>
            })}
        }
    }
}
