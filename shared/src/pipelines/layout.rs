//! The DAG laid out in layers, left to right, fewer crossings first; `finally` tasks in a last layer of
//! their own.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::graph::{GraphEdge, PipelineGraph};
use super::{
    ParamView, PipelineRunDetail, PipelineRunSummary, PipelineSpecView, RunStatus, SpecTask,
    TaskCounts, TaskStatus, TaskView, WhenExpression,
};

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

/// A node's width: a label of about 28 characters at 13px plus a status icon and padding.
pub const NODE_WIDTH: f64 = 240.0;
/// A node's height.
pub const NODE_HEIGHT: f64 = 40.0;
/// The horizontal gap between two layers, where edges run.
pub const LAYER_GAP: f64 = 72.0;
/// The vertical gap between two nodes of a layer (and between a node and an edge passing through its layer).
pub const ROW_GAP: f64 = 16.0;
/// The margin around the drawing; edges that point back run in its top half.
pub const PADDING: f64 = 24.0;

/// Most down-and-up sweeps of crossing reduction.
const SWEEPS: usize = 12;
/// Sweeps without fewer crossings before giving up.
const PATIENCE: usize = 3;
/// Rounds of swapping neighbours within a layer per sweep.
const TRANSPOSE_ROUNDS: usize = 4;

/// One item of the proper layered graph: a task, or a point where a long edge crosses a layer.
#[derive(Debug, Clone, Default)]
struct Item {
    layer: usize,
    /// Items in the layer before with a segment to this one.
    up: Vec<usize>,
    /// Items in the layer after with a segment from this one.
    down: Vec<usize>,
    /// Whether it is a point of a long edge rather than a task.
    virtual_point: bool,
}

/// Lays the DAG out left to right (Sugiyama-style): a task's layer is the longest path to it from a task
/// without predecessors; `finally` tasks form one extra last layer; an edge spanning several layers passes
/// each layer between through a gap of its own; the order within layers comes from barycentre sweeps and
/// neighbour swaps, keeping the order with the fewest crossings. Edges closing a cycle (and any edge that
/// does not point right, such as one between two `finally` tasks) run above the drawing.
/// Deterministic; edges whose ends are out of range get no points.
pub fn layout(graph: &PipelineGraph) -> GraphLayout {
    let n = graph.nodes.len();
    if n == 0 {
        return GraphLayout {
            edges: (0..graph.edges.len())
                .map(|edge| EdgePath {
                    edge,
                    points: Vec::new(),
                })
                .collect(),
            ..GraphLayout::default()
        };
    }
    let valid = |e: &GraphEdge| e.from < n && e.to < n;
    let layer = assign_layers(graph);
    let layers = layer.iter().copied().max().unwrap_or(0) + 1;

    // The proper layered graph: every right-pointing edge split into one segment per layer gap.
    let mut items: Vec<Item> = layer
        .iter()
        .map(|&layer| Item {
            layer,
            ..Item::default()
        })
        .collect();
    let mut chains: Vec<Vec<usize>> = vec![Vec::new(); graph.edges.len()];
    for (index, edge) in graph.edges.iter().enumerate() {
        if !valid(edge) || layer[edge.from] >= layer[edge.to] {
            continue;
        }
        let mut previous = edge.from;
        for l in layer[edge.from] + 1..layer[edge.to] {
            let point = items.len();
            items.push(Item {
                layer: l,
                virtual_point: true,
                ..Item::default()
            });
            chains[index].push(point);
            items[previous].down.push(point);
            items[point].up.push(previous);
            previous = point;
        }
        items[previous].down.push(edge.to);
        items[edge.to].up.push(previous);
    }

    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for (index, item) in items.iter().enumerate() {
        rows[item.layer].push(index);
    }
    let rows = order_layers(&items, rows);

    // Coordinates: x by layer; y by order, then pulled towards neighbours without reordering or overlap.
    let x_of = |l: usize| PADDING + l as f64 * (NODE_WIDTH + LAYER_GAP);
    let y = place_rows(&items, &rows);
    let min_y = y.iter().copied().fold(f64::INFINITY, f64::min);
    let shift = PADDING - if min_y.is_finite() { min_y } else { 0.0 };
    let y: Vec<f64> = y.into_iter().map(|v| v + shift).collect();
    let bottom = items
        .iter()
        .zip(&y)
        .map(|(item, y)| y + if item.virtual_point { 0.0 } else { NODE_HEIGHT })
        .fold(0.0, f64::max);

    let mut order = vec![0; items.len()];
    for row in &rows {
        for (position, &item) in row.iter().enumerate() {
            order[item] = position;
        }
    }
    let nodes: Vec<NodePlace> = (0..n)
        .map(|i| NodePlace {
            layer: layer[i],
            order: order[i],
            x: x_of(layer[i]),
            y: y[i],
        })
        .collect();

    let middle = |i: usize| y[i] + NODE_HEIGHT / 2.0;
    let edges = graph
        .edges
        .iter()
        .enumerate()
        .map(|(index, edge)| {
            let points = if !valid(edge) {
                Vec::new()
            } else if layer[edge.from] < layer[edge.to] {
                let mut points = vec![(x_of(layer[edge.from]) + NODE_WIDTH, middle(edge.from))];
                for &point in &chains[index] {
                    let x = x_of(items[point].layer);
                    points.push((x, y[point]));
                    points.push((x + NODE_WIDTH, y[point]));
                }
                points.push((x_of(layer[edge.to]), middle(edge.to)));
                points
            } else {
                // Back (or level) edge: out to the right, up above every node, and in from the left.
                let out = x_of(layer[edge.from]) + NODE_WIDTH + LAYER_GAP / 2.0;
                let into = x_of(layer[edge.to]) - LAYER_GAP / 2.0;
                let top = PADDING / 2.0;
                vec![
                    (out - LAYER_GAP / 2.0, middle(edge.from)),
                    (out, middle(edge.from)),
                    (out, top),
                    (into, top),
                    (into, middle(edge.to)),
                    (into + LAYER_GAP / 2.0, middle(edge.to)),
                ]
            };
            EdgePath {
                edge: index,
                points,
            }
        })
        .collect();

    let finally_layer = graph
        .nodes
        .iter()
        .zip(&layer)
        .find(|(node, _)| node.finally)
        .map(|(_, &l)| l);
    GraphLayout {
        nodes,
        edges,
        width: x_of(layers) - LAYER_GAP + PADDING,
        height: bottom + PADDING,
        finally_x: finally_layer.map(x_of),
    }
}

/// Each node's layer: among `tasks`, the longest path from a task without predecessors, ignoring the edges
/// that close a cycle; every `finally` task one layer after the last task.
fn assign_layers(graph: &PipelineGraph) -> Vec<usize> {
    let n = graph.nodes.len();
    let in_tasks = |i: usize| graph.nodes.get(i).is_some_and(|node| !node.finally);
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
    for edge in &graph.edges {
        if edge.from != edge.to && in_tasks(edge.from) && in_tasks(edge.to) {
            successors[edge.from].push(edge.to);
        }
    }
    for list in &mut successors {
        list.sort_unstable();
        list.dedup();
    }

    // Depth-first search (iterative, so a long chain cannot overflow the stack) marking the edges into a
    // task still on the path: removing them leaves a DAG.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut mark = vec![Mark::New; n];
    let mut back: BTreeSet<(usize, usize)> = BTreeSet::new();
    for root in (0..n).filter(|&i| in_tasks(i)) {
        if mark[root] != Mark::New {
            continue;
        }
        mark[root] = Mark::OnPath;
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            if let Some(&succ) = successors[node].get(next) {
                top.1 += 1;
                match mark[succ] {
                    Mark::New => {
                        mark[succ] = Mark::OnPath;
                        stack.push((succ, 0));
                    }
                    Mark::OnPath => {
                        back.insert((node, succ));
                    }
                    Mark::Done => {}
                }
            } else {
                mark[node] = Mark::Done;
                stack.pop();
            }
        }
    }

    // Longest path by Kahn's algorithm over what remains.
    let mut indegree = vec![0usize; n];
    for (from, list) in successors.iter().enumerate() {
        for &to in list {
            if !back.contains(&(from, to)) {
                indegree[to] += 1;
            }
        }
    }
    let mut layer = vec![0usize; n];
    let mut ready: VecDeque<usize> = (0..n)
        .filter(|&i| in_tasks(i) && indegree[i] == 0)
        .collect();
    while let Some(node) = ready.pop_front() {
        for &to in &successors[node] {
            if back.contains(&(node, to)) {
                continue;
            }
            layer[to] = layer[to].max(layer[node] + 1);
            indegree[to] -= 1;
            if indegree[to] == 0 {
                ready.push_back(to);
            }
        }
    }
    let finally_layer = (0..n)
        .filter(|&i| in_tasks(i))
        .map(|i| layer[i] + 1)
        .max()
        .unwrap_or(0);
    for (i, l) in layer.iter_mut().enumerate() {
        if !in_tasks(i) {
            *l = finally_layer;
        }
    }
    layer
}

/// Orders each layer to reduce crossings: barycentre sweeps down and up, each followed by swaps of
/// neighbours that remove crossings, keeping the best order seen.
fn order_layers(items: &[Item], mut rows: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let mut position = vec![0usize; items.len()];
    let reposition = |rows: &[Vec<usize>], position: &mut [usize]| {
        for row in rows {
            for (p, &item) in row.iter().enumerate() {
                position[item] = p;
            }
        }
    };
    reposition(&rows, &mut position);
    let mut best = rows.clone();
    let mut best_crossings = total_crossings(items, &rows, &position);
    let mut stale = 0;
    let mut scratch = Scratch::default();
    for sweep in 0..SWEEPS {
        if best_crossings == 0 || stale >= PATIENCE {
            break;
        }
        // Down on even sweeps (each layer by the layer before), up on odd ones.
        let down = sweep % 2 == 0;
        let sequence: Vec<usize> = if down {
            (1..rows.len()).collect()
        } else {
            (0..rows.len().saturating_sub(1)).rev().collect()
        };
        for l in sequence {
            let mut keyed: Vec<(f64, usize, usize)> = rows[l]
                .iter()
                .map(|&item| {
                    let neighbours = if down {
                        &items[item].up
                    } else {
                        &items[item].down
                    };
                    let key = if neighbours.is_empty() {
                        position[item] as f64
                    } else {
                        neighbours.iter().map(|&m| position[m] as f64).sum::<f64>()
                            / neighbours.len() as f64
                    };
                    (key, position[item], item)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            rows[l] = keyed.into_iter().map(|(_, _, item)| item).collect();
            for (p, &item) in rows[l].iter().enumerate() {
                position[item] = p;
            }
        }
        for row in &mut rows {
            transpose(items, row, &mut position, &mut scratch);
        }
        let crossings = total_crossings(items, &rows, &position);
        if crossings < best_crossings {
            best_crossings = crossings;
            best = rows.clone();
            stale = 0;
        } else {
            stale += 1;
        }
    }
    best
}

/// Swaps neighbours in one layer while that removes crossings with the layers on either side.
fn transpose(items: &[Item], row: &mut [usize], position: &mut [usize], scratch: &mut Scratch) {
    if row.len() < 2 {
        return;
    }
    // Neighbours sit in other layers, which do not move here: their positions are read once, sorted, into
    // one flat buffer (`ends[k]..ends[k + 1]` for the k-th item's up neighbours, then its down ones).
    scratch.flat.clear();
    scratch.ends.clear();
    scratch.ends.push(0);
    for &item in row.iter() {
        for list in [&items[item].up, &items[item].down] {
            let start = scratch.flat.len();
            scratch.flat.extend(list.iter().map(|&m| position[m]));
            scratch.flat[start..].sort_unstable();
            scratch.ends.push(scratch.flat.len());
        }
    }
    let (flat, ends) = (&scratch.flat, &scratch.ends);
    let up = |k: usize| &flat[ends[2 * k]..ends[2 * k + 1]];
    let down = |k: usize| &flat[ends[2 * k + 1]..ends[2 * k + 2]];
    scratch.slot.clear();
    scratch.slot.extend(0..row.len());
    let slot = &mut scratch.slot;
    for _ in 0..TRANSPOSE_ROUNDS {
        let mut improved = false;
        for p in 0..row.len() - 1 {
            let (a, b) = (slot[p], slot[p + 1]);
            let kept = pair_crossings(up(a), up(b)) + pair_crossings(down(a), down(b));
            let swapped = pair_crossings(up(b), up(a)) + pair_crossings(down(b), down(a));
            if swapped < kept {
                slot.swap(p, p + 1);
                improved = true;
            }
        }
        if !improved {
            break;
        }
    }
    scratch.order.clear();
    scratch.order.extend(slot.iter().map(|&k| row[k]));
    for (p, &item) in scratch.order.iter().enumerate() {
        row[p] = item;
        position[item] = p;
    }
}

/// Buffers reused by every [`transpose`], so a sweep allocates nothing per item.
#[derive(Default)]
struct Scratch {
    flat: Vec<usize>,
    ends: Vec<usize>,
    slot: Vec<usize>,
    order: Vec<usize>,
}

/// Crossings between the segments of an item above and those of an item below it, given each one's
/// neighbour positions sorted: pairs where the upper item's neighbour lies below the lower item's.
fn pair_crossings(upper: &[usize], lower: &[usize]) -> usize {
    let mut count = 0;
    let mut j = 0;
    for &u in upper {
        while j < lower.len() && lower[j] < u {
            j += 1;
        }
        count += j;
    }
    count
}

/// Crossings of the whole layered graph: for each pair of adjacent layers, going down the upper layer in
/// order, the segments seen so far whose lower end lies below a segment's lower end, counted with a Fenwick
/// tree (O(E log V), no sorting).
fn total_crossings(items: &[Item], rows: &[Vec<usize>], position: &[usize]) -> usize {
    let mut total = 0;
    let mut tree: Vec<usize> = Vec::new();
    for pair in rows.windows(2) {
        let (upper, lower) = (&pair[0], &pair[1]);
        tree.clear();
        tree.resize(lower.len() + 1, 0);
        let mut seen = 0;
        for &item in upper {
            // Segments sharing their upper end do not cross: count them all before adding any.
            for &to in &items[item].down {
                let mut at_or_before = 0;
                let mut i = position[to] + 1;
                while i > 0 {
                    at_or_before += tree[i];
                    i -= i & i.wrapping_neg();
                }
                total += seen - at_or_before;
            }
            for &to in &items[item].down {
                let mut i = position[to] + 1;
                while i < tree.len() {
                    tree[i] += 1;
                    i += i & i.wrapping_neg();
                }
                seen += 1;
            }
        }
    }
    total
}

/// The top of each item: items of a layer stacked in order with [`ROW_GAP`] between them, then pulled
/// towards the middle of their neighbours (down, up and down again) as far as order and gaps allow.
fn place_rows(items: &[Item], rows: &[Vec<usize>]) -> Vec<f64> {
    let height = |i: usize| {
        if items[i].virtual_point {
            0.0
        } else {
            NODE_HEIGHT
        }
    };
    // Where an item's edges attach: a node's middle, a passing edge's own line.
    let anchor = |i: usize, y: &[f64]| y[i] + height(i) / 2.0;
    let mut y = vec![0.0; items.len()];
    let tallest = rows
        .iter()
        .map(|row| stack_height(row, &height))
        .fold(0.0, f64::max);
    for row in rows {
        // Centred to start with.
        let mut top = (tallest - stack_height(row, &height)) / 2.0;
        for &item in row {
            y[item] = top;
            top += height(item) + ROW_GAP;
        }
    }
    let passes: [bool; 3] = [true, false, true];
    for down in passes {
        let sequence: Vec<usize> = if down {
            (1..rows.len()).collect()
        } else {
            (0..rows.len().saturating_sub(1)).rev().collect()
        };
        for l in sequence {
            let row = &rows[l];
            let wanted: Vec<f64> = row
                .iter()
                .map(|&item| {
                    let neighbours = if down {
                        &items[item].up
                    } else {
                        &items[item].down
                    };
                    if neighbours.is_empty() {
                        y[item]
                    } else {
                        neighbours.iter().map(|&m| anchor(m, &y)).sum::<f64>()
                            / neighbours.len() as f64
                            - height(item) / 2.0
                    }
                })
                .collect();
            let placed = closest_in_order(row, &wanted, &height);
            for (&item, top) in row.iter().zip(placed) {
                y[item] = top;
            }
        }
    }
    y
}

/// The height of a layer's items stacked with gaps.
fn stack_height(row: &[usize], height: &dyn Fn(usize) -> f64) -> f64 {
    let items: f64 = row.iter().map(|&i| height(i)).sum();
    items + ROW_GAP * row.len().saturating_sub(1) as f64
}

/// Tops as close as possible (least squares) to `wanted` while keeping the order and the gaps: with each
/// top shifted by the space the items above it need, this is isotonic regression, solved by pooling
/// adjacent violators in linear time.
fn closest_in_order(row: &[usize], wanted: &[f64], height: &dyn Fn(usize) -> f64) -> Vec<f64> {
    let mut offset = Vec::with_capacity(row.len());
    let mut space = 0.0;
    for &item in row {
        offset.push(space);
        space += height(item) + ROW_GAP;
    }
    // Blocks of (mean, count); shifted targets must come out non-decreasing.
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(row.len());
    for (w, o) in wanted.iter().zip(&offset) {
        let mut block = (w - o, 1usize);
        while let Some(&(mean, count)) = blocks.last() {
            if mean <= block.0 {
                break;
            }
            blocks.pop();
            let total = count + block.1;
            block = (
                (mean * count as f64 + block.0 * block.1 as f64) / total as f64,
                total,
            );
        }
        blocks.push(block);
    }
    let mut tops = Vec::with_capacity(row.len());
    for (mean, count) in blocks {
        for _ in 0..count {
            let o = offset.get(tops.len()).copied().unwrap_or(0.0);
            tops.push(mean + o);
        }
    }
    tops
}

/// A deterministic pipeline run of `tasks` pipeline tasks (two of them `finally` when there are at least
/// three) shaped like a large real one: a clone, then stages that alternately fan out (up to 14 tasks) and
/// fan in, `runAfter` to the stage before, result references reaching back a few stages, some `when`
/// guards (a few reading results), and the run part-way through. For benchmarks and tests of the DAG and
/// its layout, natively and in the browser.
pub fn synthetic_pipeline(tasks: usize, seed: u64) -> PipelineRunDetail {
    let mut rng = SplitMix(crate::random::SplitMix64::new(seed));
    let finally_count = if tasks >= 3 {
        2
    } else {
        tasks.saturating_sub(1)
    };
    let main = tasks - finally_count;

    let mut stages: Vec<Vec<usize>> = Vec::new();
    let mut spec_tasks: Vec<SpecTask> = Vec::new();
    let kinds = [
        "lint", "unit", "build", "image", "scan", "deploy", "verify", "package",
    ];
    while spec_tasks.len() < main {
        let stage = stages.len();
        let width = if stage == 0 {
            1
        } else if stage % 2 == 1 {
            3 + rng.below(12)
        } else {
            1 + rng.below(2)
        }
        .min(main - spec_tasks.len());
        let kind = kinds[stage % kinds.len()];
        let mut members = Vec::with_capacity(width);
        for i in 0..width {
            let name = if stage == 0 {
                "clone".to_string()
            } else {
                format!("{kind}-{stage}-{i}")
            };
            let mut run_after = Vec::new();
            let mut params = vec![ParamView {
                name: "revision".into(),
                value: "$(params.revision)".into(),
            }];
            let mut when = Vec::new();
            if let Some(previous) = stages.last() {
                // A fan-in waits for its whole stage before; others for one or two of it.
                let picks = if width <= 2 {
                    previous.clone()
                } else {
                    let mut picks: Vec<usize> = (0..1 + rng.below(2))
                        .map(|_| previous[rng.below(previous.len())])
                        .collect();
                    picks.sort_unstable();
                    picks.dedup();
                    picks
                };
                run_after = picks.iter().map(|&p| spec_tasks[p].name.clone()).collect();
            }
            if stage >= 3 && rng.below(4) == 0 {
                let back = &stages[stage - 2 - rng.below(stage.min(4) - 1)];
                let source = &spec_tasks[back[rng.below(back.len())]].name;
                params.push(ParamView {
                    name: "input-digest".into(),
                    value: format!("$(tasks.{source}.results.digest)"),
                });
            }
            if stage >= 2 && rng.below(12) == 0 {
                let input = match stages.get(stage - 1) {
                    Some(previous) if rng.below(3) == 0 => {
                        let source = &spec_tasks[previous[rng.below(previous.len())]].name;
                        format!("$(tasks.{source}.results.passed)")
                    }
                    _ => "$(params.run-extra)".to_string(),
                };
                when.push(WhenExpression {
                    input,
                    operator: "in".into(),
                    values: vec!["true".into()],
                    cel: None,
                });
            }
            members.push(spec_tasks.len());
            spec_tasks.push(SpecTask {
                display_name: (rng.below(3) == 0)
                    .then(|| format!("{kind} $(params.component) part {i}")),
                name,
                task_ref: Some(kind.to_string()),
                run_after,
                params,
                when,
            });
        }
        stages.push(members);
    }
    let finally: Vec<SpecTask> = ["notify", "cleanup"]
        .iter()
        .take(finally_count)
        .map(|&name| SpecTask {
            name: name.to_string(),
            display_name: Some(format!("{name} $(params.component)")),
            task_ref: Some(name.to_string()),
            run_after: Vec::new(),
            params: vec![ParamView {
                name: "status".into(),
                value: if name == "notify" {
                    "$(tasks.status)".into()
                } else {
                    "$(tasks.clone.results.commit)".into()
                },
            }],
            when: Vec::new(),
        })
        .collect();

    // The run part-way through: the first 60% of tasks done (guarded ones skipped), a few running.
    let done = main * 3 / 5;
    let views: Vec<TaskView> = spec_tasks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < done + 3)
        .map(|(i, task)| {
            let (status, skip_reason) = if i >= done {
                (TaskStatus::Running, None)
            } else if task.when.is_empty() {
                (TaskStatus::Succeeded, None)
            } else {
                (
                    TaskStatus::Skipped,
                    Some("When Expressions evaluated to false".to_string()),
                )
            };
            TaskView {
                name: task.name.clone(),
                display_name: None,
                finally: false,
                status,
                reason: None,
                message: None,
                skip_reason,
                when: Vec::new(),
                task_run: Some(format!("synthetic-{}", task.name)),
                pod: Some(format!("synthetic-{}-pod", task.name)),
                started_at: Some("2026-12-01T10:00:00Z".into()),
                finished_at: None,
                steps: Vec::new(),
                results: Vec::new(),
            }
        })
        .collect();
    PipelineRunDetail {
        summary: PipelineRunSummary {
            namespace: "tekton-ci".into(),
            name: format!("synthetic-{tasks}-{seed}"),
            service: "synthetic".into(),
            pipeline: Some("synthetic".into()),
            status: RunStatus::Running,
            reason: Some("Running".into()),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            message: Some("A synthetic run".into()),
            branch: Some("main".into()),
            trigger: "manual".into(),
            author: None,
            created_at: "2026-12-01T10:00:00Z".into(),
            started_at: Some("2026-12-01T10:00:00Z".into()),
            finished_at: None,
            tasks: TaskCounts::default(),
        },
        message: None,
        params: vec![
            ParamView {
                name: "component".into(),
                value: "synthetic".into(),
            },
            ParamView {
                name: "revision".into(),
                value: "0123456789abcdef0123456789abcdef01234567".into(),
            },
        ],
        spec: PipelineSpecView {
            display_name: Some("Synthetic".into()),
            tasks: spec_tasks,
            finally,
        },
        spec_key: format!("synthetic-{tasks}-{seed}"),
        tasks: views,
        results: Vec::new(),
        can_read_logs: true,
    }
}

/// [`crate::random::SplitMix64`] drawing indexes.
struct SplitMix(crate::random::SplitMix64);

impl SplitMix {
    /// An index in `0..bound` (0 when `bound` is 0).
    fn below(&mut self, bound: usize) -> usize {
        self.0.below(bound as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipelines::graph::tests::{service_build, service_build_views, task};
    use crate::pipelines::graph::{EdgeKind, GraphNode, graph, graph_of};
    use proptest::prelude::*;

    /// A bare graph of `n` nodes (the last `finally` of them in the `finally` group) and these edges.
    fn bare(n: usize, finally: usize, edges: &[(usize, usize)]) -> PipelineGraph {
        PipelineGraph {
            nodes: (0..n)
                .map(|i| GraphNode {
                    name: format!("t{i}"),
                    label: format!("t{i}"),
                    finally: i + finally >= n,
                    status: TaskStatus::Pending,
                    skip_reason: None,
                    guarded: false,
                })
                .collect(),
            edges: edges
                .iter()
                .map(|&(from, to)| GraphEdge {
                    from,
                    to,
                    kinds: vec![EdgeKind::RunAfter],
                })
                .collect(),
            ..PipelineGraph::default()
        }
    }

    /// Pairs of drawn segments of different edges that cross, counted on the drawing itself (not from the
    /// layout's own bookkeeping). Segments meeting at an end (a shared node) do not count.
    fn drawn_crossings(layout: &GraphLayout) -> usize {
        type Point = (f64, f64);
        let segments: Vec<(usize, Point, Point)> = layout
            .edges
            .iter()
            .flat_map(|e| e.points.windows(2).map(move |w| (e.edge, w[0], w[1])))
            .collect();
        let cross = |a: Point, b: Point, c: Point, d: Point| {
            let orient = |p: Point, q: Point, r: Point| {
                let v = (q.0 - p.0) * (r.1 - p.1) - (q.1 - p.1) * (r.0 - p.0);
                if v.abs() < 1e-9 { 0.0 } else { v.signum() }
            };
            let (o1, o2) = (orient(a, b, c), orient(a, b, d));
            let (o3, o4) = (orient(c, d, a), orient(c, d, b));
            o1 * o2 < 0.0 && o3 * o4 < 0.0
        };
        let mut count = 0;
        for (i, s) in segments.iter().enumerate() {
            for t in &segments[i + 1..] {
                if s.0 != t.0 && cross(s.1, s.2, t.1, t.2) {
                    count += 1;
                }
            }
        }
        count
    }

    /// Checks what every layout must hold: a place per node, no two nodes overlapping, every edge that goes
    /// to a later layer pointing right at each step and passing no node, and everything inside the size.
    fn assert_sound(graph: &PipelineGraph, layout: &GraphLayout) {
        assert_eq!(layout.nodes.len(), graph.nodes.len());
        assert_eq!(layout.edges.len(), graph.edges.len());
        for (i, a) in layout.nodes.iter().enumerate() {
            assert!(a.x >= 0.0 && a.y >= 0.0, "{a:?}");
            assert!(
                a.x + NODE_WIDTH <= layout.width + 1e-6,
                "{a:?} {}",
                layout.width
            );
            assert!(
                a.y + NODE_HEIGHT <= layout.height + 1e-6,
                "{a:?} {}",
                layout.height
            );
            for b in &layout.nodes[i + 1..] {
                let apart = a.x + NODE_WIDTH <= b.x
                    || b.x + NODE_WIDTH <= a.x
                    || a.y + NODE_HEIGHT + ROW_GAP <= b.y + 1e-6
                    || b.y + NODE_HEIGHT + ROW_GAP <= a.y + 1e-6;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
        for (edge, path) in graph.edges.iter().zip(&layout.edges) {
            let (Some(from), Some(to)) = (layout.nodes.get(edge.from), layout.nodes.get(edge.to))
            else {
                assert!(path.points.is_empty());
                continue;
            };
            assert!(path.points.len() >= 2, "{edge:?}");
            if from.layer < to.layer {
                for step in path.points.windows(2) {
                    assert!(
                        step[1].0 >= step[0].0,
                        "{edge:?} turns left: {:?}",
                        path.points
                    );
                }
                let first = path.points[0];
                let last = path.points[path.points.len() - 1];
                assert_eq!(first, (from.x + NODE_WIDTH, from.y + NODE_HEIGHT / 2.0));
                assert_eq!(last, (to.x, to.y + NODE_HEIGHT / 2.0));
                // The points between pass through no node's box.
                for p in &path.points[1..path.points.len() - 1] {
                    for n in &layout.nodes {
                        let inside = p.0 >= n.x
                            && p.0 <= n.x + NODE_WIDTH
                            && p.1 > n.y - ROW_GAP / 2.0
                            && p.1 < n.y + NODE_HEIGHT + ROW_GAP / 2.0;
                        assert!(!inside, "{edge:?} passes through {n:?} at {p:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn nothing_lays_out_as_nothing() {
        let layout = layout(&PipelineGraph::default());
        assert!(layout.nodes.is_empty() && layout.edges.is_empty());
        assert_eq!(
            (layout.width, layout.height, layout.finally_x),
            (0.0, 0.0, None)
        );
    }

    #[test]
    fn one_task_sits_in_the_corner() {
        let g = bare(1, 0, &[]);
        let l = layout(&g);
        assert_eq!(l.nodes[0].x, PADDING);
        assert_eq!(l.nodes[0].y, PADDING);
        assert_eq!(l.width, NODE_WIDTH + 2.0 * PADDING);
        assert_eq!(l.height, NODE_HEIGHT + 2.0 * PADDING);
        assert_eq!(l.finally_x, None);
    }

    #[test]
    fn the_service_build_pipeline_is_a_row_with_finally_last() {
        let g = graph_of(&service_build(), &service_build_views(), &[]);
        let l = layout(&g);
        assert_sound(&g, &l);
        let layers: Vec<usize> = l.nodes.iter().map(|n| n.layer).collect();
        assert_eq!(layers, [0, 1, 2, 3, 4, 5]);
        assert_eq!(l.finally_x, Some(l.nodes[5].x));
        assert_eq!(drawn_crossings(&l), 0);
        // clone → build-image skips a layer, so it passes `test`'s layer through a gap of its own.
        let long = g
            .edges
            .iter()
            .position(|e| e.from == 0 && e.to == 2)
            .expect("clone feeds build-image");
        assert_eq!(l.edges[long].points.len(), 4);
    }

    #[test]
    fn finally_tasks_form_one_last_layer_after_the_longest_chain() {
        let spec = crate::pipelines::PipelineSpecView {
            tasks: vec![
                task("a", &[], &[]),
                task("b", &["a"], &[]),
                task("c", &["b"], &[]),
                task("lone", &[], &[]),
            ],
            finally: vec![task("notify", &[], &[]), task("cleanup", &[], &[])],
            ..Default::default()
        };
        let g = graph_of(&spec, &[], &[]);
        let l = layout(&g);
        assert_sound(&g, &l);
        assert_eq!(l.nodes[4].layer, 3);
        assert_eq!(l.nodes[5].layer, 3);
        assert_eq!(l.nodes[3].layer, 0);
        assert_eq!(l.finally_x, Some(l.nodes[4].x));
        assert!(l.nodes.iter().take(4).all(|n| n.x < l.nodes[4].x));
    }

    #[test]
    fn crossing_edges_are_uncrossed_when_the_graph_allows() {
        // Two layers wired in reverse: drawn in the given order every pair of edges would cross.
        let g = bare(6, 0, &[(0, 5), (1, 4), (2, 3)]);
        let l = layout(&g);
        assert_sound(&g, &l);
        assert_eq!(drawn_crossings(&l), 0);

        // Two interleaved chains with long edges and a fan-in: plain order crosses, a good one does not.
        let g = bare(
            9,
            0,
            &[
                (0, 3),
                (1, 2),
                (2, 4),
                (3, 5),
                (4, 6),
                (5, 7),
                (0, 7),
                (1, 6),
                (6, 8),
                (7, 8),
            ],
        );
        let l = layout(&g);
        assert_sound(&g, &l);
        assert_eq!(drawn_crossings(&l), 0);
    }

    #[test]
    fn a_graph_that_must_cross_keeps_its_fewest_crossings() {
        // K(3,3) between two layers: every order has exactly 9 choose … = 9 crossings.
        let mut edges = Vec::new();
        for a in 0..3 {
            for b in 3..6 {
                edges.push((a, b));
            }
        }
        let g = bare(6, 0, &edges);
        let l = layout(&g);
        assert_sound(&g, &l);
        assert_eq!(drawn_crossings(&l), 9);
    }

    #[test]
    fn cycles_are_laid_out_with_the_closing_edge_running_above() {
        let spec = crate::pipelines::PipelineSpecView {
            tasks: vec![
                task("a", &["c"], &[]),
                task("b", &["a"], &[]),
                task("c", &["b"], &[]),
                task("self", &["self"], &[]),
            ],
            finally: vec![task("notify", &[], &[])],
            ..Default::default()
        };
        let g = graph_of(&spec, &[], &[]);
        assert!(!g.cycle.is_empty());
        let l = layout(&g);
        assert_sound(&g, &l);
        let back = g
            .edges
            .iter()
            .position(|e| l.nodes[e.from].layer >= l.nodes[e.to].layer)
            .expect("one edge closes the cycle");
        let top = l.nodes.iter().map(|n| n.y).fold(f64::INFINITY, f64::min);
        assert!(l.edges[back].points.iter().any(|p| p.1 < top));
    }

    #[test]
    fn edges_to_nodes_that_do_not_exist_get_no_points() {
        let g = bare(2, 0, &[(0, 1), (0, 7), (9, 1)]);
        let l = layout(&g);
        assert_eq!(l.edges[0].points.len(), 2);
        assert!(l.edges[1].points.is_empty() && l.edges[2].points.is_empty());
        let empty = layout(&bare(0, 0, &[(0, 1)]));
        assert_eq!(empty.edges.len(), 1);
    }

    #[test]
    fn the_same_graph_lays_out_the_same_way() {
        let g = graph(&synthetic_pipeline(120, 5));
        assert_eq!(layout(&g), layout(&g));
        assert_eq!(synthetic_pipeline(120, 5), synthetic_pipeline(120, 5));
    }

    #[test]
    fn a_synthetic_pipeline_has_the_tasks_asked_for_and_a_sound_layout() {
        for (tasks, seed) in [(0, 1), (1, 1), (2, 1), (3, 1), (40, 2), (300, 3)] {
            let detail = synthetic_pipeline(tasks, seed);
            let g = graph(&detail);
            assert_eq!(g.nodes.len(), tasks);
            assert!(g.dangling.is_empty() && g.cycle.is_empty(), "{g:?}");
            let l = layout(&g);
            assert_sound(&g, &l);
            assert_eq!(
                detail.spec.finally.len(),
                if tasks >= 3 {
                    2
                } else {
                    tasks.saturating_sub(1)
                }
            );
            if tasks >= 40 {
                assert!(g.nodes.iter().any(|n| n.guarded));
                assert!(
                    g.edges
                        .iter()
                        .any(|e| e.kinds.iter().any(|k| matches!(k, EdgeKind::Result { .. })))
                );
                assert!(
                    g.edges
                        .iter()
                        .any(|e| e.kinds.iter().any(|k| matches!(k, EdgeKind::Finally)))
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn random_dags_lay_out_without_overlaps_and_with_every_edge_pointing_right(
            n in 1usize..40,
            finally in 0usize..3,
            raw in proptest::collection::vec((0usize..40, 0usize..40), 0..80),
        ) {
            let finally = finally.min(n - 1);
            let edges: Vec<(usize, usize)> = raw
                .into_iter()
                .map(|(a, b)| (a % n, b % n))
                .filter(|(a, b)| a < b && *b < n - finally)
                .collect();
            let mut g = bare(n, finally, &edges);
            g.edges.sort_by_key(|e| (e.from, e.to));
            g.edges.dedup_by_key(|e| (e.from, e.to));
            let l = layout(&g);
            assert_sound(&g, &l);
        }

        #[test]
        fn any_graph_at_all_lays_out_without_panicking(
            n in 0usize..30,
            finally in 0usize..4,
            raw in proptest::collection::vec((0usize..35, 0usize..35), 0..90),
        ) {
            let g = bare(n, finally.min(n), &raw);
            let l = layout(&g);
            prop_assert_eq!(l.nodes.len(), n);
            prop_assert_eq!(l.edges.len(), raw.len());
            prop_assert!(l.width.is_finite() && l.height.is_finite());
        }
    }
}
