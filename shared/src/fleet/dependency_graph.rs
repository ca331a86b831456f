//! The dependency graph's layout: one service's neighbourhood in columns, every edge pointing right.

use std::collections::{BTreeMap, BTreeSet};

/// A service placed on the dependency graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphNode {
    /// The service.
    pub name: String,
    /// Column, 0 = leftmost (callers on the left, what they call to the right).
    pub column: usize,
    /// Row within the column.
    pub row: usize,
    /// The service the graph is about.
    pub focus: bool,
    /// Whether the fleet knows a service of this name (a dependsOn may name one that does not exist).
    pub known: bool,
}

/// The layered layout of one service's neighbourhood.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphLayout {
    /// Placed nodes.
    pub nodes: Vec<GraphNode>,
    /// `(caller, callee)` as indexes into `nodes`.
    pub edges: Vec<(usize, usize)>,
    /// Number of columns.
    pub columns: usize,
    /// Rows in the tallest column.
    pub rows: usize,
}

/// Lays out `focus`, everything it depends on (transitively) and everything that depends on it
/// (transitively) in columns, so that every edge points right: a service sits one column left of its
/// leftmost dependency. Cycles are tolerated (the edge closing one is kept but may point left).
/// `graph` maps each service to what it depends on.
pub fn dependency_layout(graph: &BTreeMap<String, Vec<String>>, focus: &str) -> GraphLayout {
    // The neighbourhood: downstream from focus, and upstream (reverse edges).
    let mut members: BTreeSet<String> = BTreeSet::new();
    let mut stack = vec![focus.to_string()];
    while let Some(name) = stack.pop() {
        if members.insert(name.clone()) {
            for dep in graph.get(&name).into_iter().flatten() {
                stack.push(dep.clone());
            }
        }
    }
    let mut stack = vec![focus.to_string()];
    let mut upstream: BTreeSet<String> = BTreeSet::new();
    while let Some(name) = stack.pop() {
        if upstream.insert(name.clone()) {
            for (caller, deps) in graph {
                if deps.contains(&name) {
                    stack.push(caller.clone());
                }
            }
        }
    }
    members.extend(upstream);

    let deps_of = |name: &str| -> Vec<String> {
        graph
            .get(name)
            .into_iter()
            .flatten()
            .filter(|d| members.contains(*d))
            .cloned()
            .collect()
    };

    // Height = longest path to a sink, by DFS that ignores back edges.
    let mut height: BTreeMap<String, usize> = BTreeMap::new();
    fn visit(
        name: &str,
        deps_of: &dyn Fn(&str) -> Vec<String>,
        height: &mut BTreeMap<String, usize>,
        on_path: &mut BTreeSet<String>,
    ) -> usize {
        if let Some(h) = height.get(name) {
            return *h;
        }
        on_path.insert(name.to_string());
        let mut h = 0;
        for dep in deps_of(name) {
            if on_path.contains(dep.as_str()) {
                continue;
            }
            h = h.max(visit(&dep, deps_of, height, on_path) + 1);
        }
        on_path.remove(name);
        height.insert(name.to_string(), h);
        h
    }
    for name in &members {
        visit(name, &deps_of, &mut height, &mut BTreeSet::new());
    }
    let max_height = height.values().copied().max().unwrap_or(0);

    // Columns: tallest on the left. Within a column, order by the mean row of the callers placed so far
    // (one barycentre pass, enough to keep small graphs uncrossed), then by name.
    let mut columns: Vec<Vec<String>> = vec![Vec::new(); max_height + 1];
    for (name, h) in &height {
        columns[max_height - h].push(name.clone());
    }
    let mut row_of: BTreeMap<String, usize> = BTreeMap::new();
    for column in &mut columns {
        let key = |name: &String| -> (usize, String) {
            let caller_rows: Vec<usize> = graph
                .iter()
                .filter(|(caller, deps)| deps.contains(name) && row_of.contains_key(*caller))
                .filter_map(|(caller, _)| row_of.get(caller).copied())
                .collect();
            let mean = if caller_rows.is_empty() {
                usize::MAX
            } else {
                caller_rows.iter().sum::<usize>() * 100 / caller_rows.len()
            };
            (mean, name.clone())
        };
        column.sort_by_cached_key(key);
        for (row, name) in column.iter().enumerate() {
            row_of.insert(name.clone(), row);
        }
    }

    let mut nodes = Vec::with_capacity(members.len());
    let mut index_of: BTreeMap<String, usize> = BTreeMap::new();
    for (column_index, column) in columns.iter().enumerate() {
        for (row, name) in column.iter().enumerate() {
            index_of.insert(name.clone(), nodes.len());
            nodes.push(GraphNode {
                name: name.clone(),
                column: column_index,
                row,
                focus: name == focus,
                known: graph.contains_key(name),
            });
        }
    }
    let mut edges = Vec::new();
    for node in &nodes {
        for dep in deps_of(&node.name) {
            if let (Some(&from), Some(&to)) = (index_of.get(&node.name), index_of.get(&dep)) {
                edges.push((from, to));
            }
        }
    }
    GraphLayout {
        columns: columns.len(),
        rows: columns.iter().map(Vec::len).max().unwrap_or(0),
        nodes,
        edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        edges
            .iter()
            .map(|(name, deps)| {
                (
                    name.to_string(),
                    deps.iter().map(|d| d.to_string()).collect(),
                )
            })
            .collect()
    }

    fn column_of(layout: &GraphLayout, name: &str) -> Option<usize> {
        layout
            .nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.column)
    }

    #[test]
    fn the_dependency_graph_puts_callers_left_of_what_they_call() {
        let fleet = graph(&[
            ("checkout", &["cart", "payments", "catalog"]),
            ("cart", &["catalog"]),
            ("payments", &["ledger"]),
            ("ledger", &[]),
            ("catalog", &[]),
            ("refunds", &["payments", "ledger"]),
            ("search", &["catalog"]),
        ]);
        let layout = dependency_layout(&fleet, "payments");
        let mut names: Vec<_> = layout.nodes.iter().map(|n| n.name.as_str()).collect();
        names.sort();
        // Its neighbourhood only: callers (checkout, refunds) and what it calls (ledger), not cart or search.
        assert_eq!(names, ["checkout", "ledger", "payments", "refunds"]);
        assert_eq!(column_of(&layout, "checkout"), Some(0));
        assert_eq!(column_of(&layout, "refunds"), Some(0));
        assert_eq!(column_of(&layout, "payments"), Some(1));
        assert_eq!(column_of(&layout, "ledger"), Some(2));
        for (from, to) in &layout.edges {
            assert!(layout.nodes[*from].column < layout.nodes[*to].column);
        }
        assert!(layout.nodes.iter().any(|n| n.focus && n.name == "payments"));

        let checkout = dependency_layout(&fleet, "checkout");
        assert_eq!(column_of(&checkout, "checkout"), Some(0));
        assert_eq!(column_of(&checkout, "cart"), Some(1));
        assert_eq!(column_of(&checkout, "catalog"), Some(2));
        assert_eq!(checkout.columns, 3);
        assert_eq!(checkout.edges.len(), 5);
    }

    #[test]
    fn the_dependency_graph_survives_cycles_and_unknown_services() {
        let fleet = graph(&[("a", &["b"]), ("b", &["a", "ghost"])]);
        let layout = dependency_layout(&fleet, "a");
        assert_eq!(layout.nodes.len(), 3);
        let ghost = layout.nodes.iter().find(|n| n.name == "ghost");
        assert_eq!(ghost.map(|n| n.known), Some(false));
        let alone = dependency_layout(&BTreeMap::new(), "lonely");
        assert_eq!(alone.nodes.len(), 1);
        assert_eq!((alone.columns, alone.rows), (1, 1));
    }
}
