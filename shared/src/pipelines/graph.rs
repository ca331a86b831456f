//! The DAG of a pipeline run: one node per pipeline task, edges from `runAfter`, from result references
//! (`$(tasks.X.results.Y)` in params and `when` inputs) and from `when` guards, and the `finally` tasks as
//! their own group after everything else.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use petgraph::graph::{DiGraph, NodeIndex};
use serde::{Deserialize, Serialize};

use super::{ParamView, PipelineRunDetail, PipelineSpecView, SpecTask, TaskStatus, TaskView};

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

/// The DAG of a run: its spec's tasks, their state in the run, and their display names as the run's params
/// resolve them.
pub fn graph(detail: &PipelineRunDetail) -> PipelineGraph {
    graph_of(&detail.spec, &detail.tasks, &detail.params)
}

/// The DAG of a spec with its tasks' state in a run; display names resolved with `params`.
pub fn graph_of(
    spec: &PipelineSpecView,
    tasks: &[TaskView],
    params: &[ParamView],
) -> PipelineGraph {
    graph_with_names(spec, tasks, &display_names(spec, params))
}

/// The DAG of a spec with its tasks' state in a run, labelled with `names` (from [`display_names`] or a
/// [`DisplayNameCache`]). A task's display name as the run resolved it ([`TaskView::display_name`]) wins
/// over `names`, and a task in neither is labelled with its name.
pub fn graph_with_names(
    spec: &PipelineSpecView,
    tasks: &[TaskView],
    names: &BTreeMap<String, String>,
) -> PipelineGraph {
    let spec_tasks: Vec<(&SpecTask, bool)> = spec
        .tasks
        .iter()
        .map(|t| (t, false))
        .chain(spec.finally.iter().map(|t| (t, true)))
        .collect();

    // The first task of a name wins; Tekton refuses duplicate names, so this only matters for bad input.
    let mut index_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, (task, _)) in spec_tasks.iter().enumerate() {
        index_of.entry(task.name.as_str()).or_insert(index);
    }

    let mut views: BTreeMap<(&str, bool), &TaskView> = BTreeMap::new();
    for view in tasks {
        views
            .entry((view.name.as_str(), view.finally))
            .or_insert(view);
    }
    let nodes: Vec<GraphNode> = spec_tasks
        .iter()
        .map(|(task, finally)| {
            // Names are unique across `tasks` and `finally`; prefer the view in the same group anyway.
            let view = views
                .get(&(task.name.as_str(), *finally))
                .or_else(|| views.get(&(task.name.as_str(), !*finally)))
                .copied();
            let label = view
                .and_then(|v| v.display_name.as_deref())
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .or_else(|| names.get(&task.name).cloned())
                .unwrap_or_else(|| task.name.clone());
            GraphNode {
                name: task.name.clone(),
                label,
                finally: *finally,
                status: view.map_or(TaskStatus::Pending, |v| v.status),
                skip_reason: view.and_then(|v| v.skip_reason.clone()),
                guarded: !task.when.is_empty(),
            }
        })
        .collect();

    let mut kinds: BTreeMap<(usize, usize), BTreeSet<EdgeKind>> = BTreeMap::new();
    let mut dangling: Vec<(String, String)> = Vec::new();
    let mut add = |from: &str, to: usize, kind: EdgeKind, dangling: &mut Vec<(String, String)>| {
        match index_of.get(from) {
            Some(&from) => {
                kinds.entry((from, to)).or_default().insert(kind);
            }
            None => {
                let pair = (spec_tasks[to].0.name.clone(), from.to_string());
                if !dangling.contains(&pair) {
                    dangling.push(pair);
                }
            }
        }
    };
    for (to, (task, _)) in spec_tasks.iter().enumerate() {
        for before in &task.run_after {
            add(before, to, EdgeKind::RunAfter, &mut dangling);
        }
        for param in &task.params {
            for (from, result) in result_references(&param.value) {
                add(
                    from,
                    to,
                    EdgeKind::Result {
                        result: result.to_string(),
                    },
                    &mut dangling,
                );
            }
        }
        for when in &task.when {
            let texts = std::iter::once(&when.input)
                .chain(&when.values)
                .chain(when.cel.as_ref());
            for text in texts {
                for (from, result) in result_references(text) {
                    add(
                        from,
                        to,
                        EdgeKind::When {
                            result: result.to_string(),
                        },
                        &mut dangling,
                    );
                }
            }
        }
    }

    // `finally` runs after every task has ended: draw that as an edge from each last task of `tasks` (one no
    // other task of `tasks` waits for) to each `finally` task, rather than from all of them.
    let tasks_part = spec.tasks.len();
    let has_successor: BTreeSet<usize> = kinds
        .keys()
        .filter(|(from, to)| from != to && *from < tasks_part && *to < tasks_part)
        .map(|(from, _)| *from)
        .collect();
    for to in tasks_part..spec_tasks.len() {
        for from in (0..tasks_part).filter(|f| !has_successor.contains(f)) {
            kinds
                .entry((from, to))
                .or_default()
                .insert(EdgeKind::Finally);
        }
    }

    let edges: Vec<GraphEdge> = kinds
        .into_iter()
        .map(|((from, to), kinds)| GraphEdge {
            from,
            to,
            kinds: kinds.into_iter().collect(),
        })
        .collect();
    let cycle = cycle_members(nodes.len(), &edges)
        .into_iter()
        .filter_map(|i| nodes.get(i).map(|n| n.name.clone()))
        .collect();
    PipelineGraph {
        nodes,
        edges,
        dangling,
        cycle,
    }
}

/// The graph as a petgraph graph: node `i` is `graph.nodes[i]`; edges out of range are left out.
fn petgraph_of(nodes: usize, edges: &[GraphEdge]) -> DiGraph<(), ()> {
    let mut g = DiGraph::with_capacity(nodes, edges.len());
    for _ in 0..nodes {
        g.add_node(());
    }
    for edge in edges.iter().filter(|e| e.from < nodes && e.to < nodes) {
        g.add_edge(NodeIndex::new(edge.from), NodeIndex::new(edge.to), ());
    }
    g
}

/// Indexes of the nodes on a cycle (a strongly connected component of more than one node, or a node with an
/// edge to itself), ascending.
fn cycle_members(nodes: usize, edges: &[GraphEdge]) -> Vec<usize> {
    let g = petgraph_of(nodes, edges);
    let mut members: Vec<usize> = petgraph::algo::tarjan_scc(&g)
        .into_iter()
        .filter(|scc| scc.len() > 1 || scc.iter().any(|n| g.contains_edge(*n, *n)))
        .flatten()
        .map(NodeIndex::index)
        .collect();
    members.sort_unstable();
    members
}

/// The nodes in an order where every edge points forward (ties in spec order), or `None` when the graph has
/// a cycle. Edges whose ends are out of range are ignored.
pub fn topological_order(graph: &PipelineGraph) -> Option<Vec<usize>> {
    let g = petgraph_of(graph.nodes.len(), &graph.edges);
    petgraph::algo::toposort(&g, None)
        .ok()
        .map(|order| order.into_iter().map(NodeIndex::index).collect())
}

/// Every task result reference in `text`, as `(task, result)`: `$(tasks.X.results.Y)`, also with an array
/// index or star (`Y[*]`, `Y[0]`), an object key (`Y.key`) or the bracket form (`results['Y']`).
/// `$(tasks.status)` and `$(tasks.X.status)` are not result references.
pub fn result_references(text: &str) -> Vec<(&str, &str)> {
    const OPEN: &str = "$(tasks.";
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        rest = &rest[at + OPEN.len()..];
        if let Some(reference) = result_reference(rest) {
            found.push(reference);
        }
    }
    found
}

/// Reads `X.results.Y…)` (what follows `$(tasks.`).
fn result_reference(text: &str) -> Option<(&str, &str)> {
    let end = text.find(')')?;
    let inner = &text[..end];
    let (task, after) = inner.split_once('.')?;
    if task.is_empty() || !task.chars().all(is_name_char) {
        return None;
    }
    let after = after.strip_prefix("results")?;
    let result = if let Some(dotted) = after.strip_prefix('.') {
        let len = dotted
            .find(|c: char| !is_name_char(c))
            .unwrap_or(dotted.len());
        &dotted[..len]
    } else {
        let quoted = after.strip_prefix('[')?;
        let quote = quoted.chars().next().filter(|q| *q == '\'' || *q == '"')?;
        let quoted = &quoted[1..];
        &quoted[..quoted.find(quote)?]
    };
    (!result.is_empty()).then_some((task, result))
}

/// Characters of a pipeline task's or result's name.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Each task's display name with `$(params.x)` (also `$(params['x'])` and `$(params["x"])`) resolved from
/// `params`, keyed by task name, `tasks` and `finally` alike; a task without a display name (or with an empty
/// one) is named by its name. References to params not given stay as written.
pub fn display_names(spec: &PipelineSpecView, params: &[ParamView]) -> BTreeMap<String, String> {
    spec.tasks
        .iter()
        .chain(&spec.finally)
        .map(|task| {
            let label = task
                .display_name
                .as_deref()
                .map(|d| resolve_params(d, params))
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| task.name.clone());
            (task.name.clone(), label)
        })
        .collect()
}

/// `text` with every `$(params.x)` reference to a param in `params` replaced by its value.
pub fn resolve_params(text: &str, params: &[ParamView]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("$(") {
        out.push_str(&rest[..at]);
        let reference = &rest[at..];
        let Some(end) = reference.find(')') else {
            rest = reference;
            break;
        };
        let inner = &reference[2..end];
        let value = param_name(inner).and_then(|name| params.iter().find(|p| p.name == name));
        match value {
            Some(param) => out.push_str(&param.value),
            None => out.push_str(&reference[..=end]),
        }
        rest = &reference[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The param named by `params.x`, `params['x']` or `params["x"]`.
fn param_name(inner: &str) -> Option<&str> {
    let inner = inner.trim();
    if let Some(name) = inner.strip_prefix("params.") {
        return Some(name);
    }
    let quoted = inner.strip_prefix("params[")?.strip_suffix(']')?;
    quoted
        .strip_prefix('\'')
        .and_then(|q| q.strip_suffix('\''))
        .or_else(|| quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')))
}

/// Display names resolved once per pipeline spec and params (the design's `nicknameCache`): every run of
/// the same spec with the same params reuses them. Holds at most [`DisplayNameCache::CAPACITY`] entries,
/// dropping the oldest.
#[derive(Debug, Clone, Default)]
pub struct DisplayNameCache {
    entries: BTreeMap<(String, u64), BTreeMap<String, String>>,
    /// Keys in insertion order, oldest first.
    order: VecDeque<(String, u64)>,
}

impl DisplayNameCache {
    /// Specs remembered at once.
    pub const CAPACITY: usize = 64;

    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The display names of `detail`'s tasks ([`display_names`]), computed on the first run of its spec
    /// ([`PipelineRunDetail::spec_key`]) and params.
    pub fn names(&mut self, detail: &PipelineRunDetail) -> &BTreeMap<String, String> {
        self.names_of(&detail.spec_key, &detail.spec, &detail.params)
    }

    /// The display names of `spec`'s tasks resolved with `params`, cached under `spec_key` and the params.
    pub fn names_of(
        &mut self,
        spec_key: &str,
        spec: &PipelineSpecView,
        params: &[ParamView],
    ) -> &BTreeMap<String, String> {
        let key = (spec_key.to_string(), params_hash(params));
        if !self.entries.contains_key(&key) {
            while self.entries.len() >= Self::CAPACITY {
                match self.order.pop_front() {
                    Some(oldest) => {
                        self.entries.remove(&oldest);
                    }
                    None => self.entries.clear(),
                }
            }
            self.order.push_back(key.clone());
        }
        self.entries
            .entry(key)
            .or_insert_with(|| display_names(spec, params))
    }

    /// The DAG of `detail` labelled from the cache ([`graph_with_names`]).
    pub fn graph(&mut self, detail: &PipelineRunDetail) -> PipelineGraph {
        let names = self.names(detail);
        graph_with_names(&detail.spec, &detail.tasks, names)
    }

    /// Specs and params cached.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A hash of params' names and values (FNV-1a: the same in every build, unlike std's hasher).
fn params_hash(params: &[ParamView]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for param in params {
        feed(param.name.as_bytes());
        feed(&[0]);
        feed(param.value.as_bytes());
        feed(&[0xff]);
    }
    hash
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pipelines::WhenExpression;

    pub(crate) fn task(name: &str, run_after: &[&str], params: &[(&str, &str)]) -> SpecTask {
        SpecTask {
            name: name.into(),
            display_name: None,
            task_ref: Some(name.into()),
            run_after: run_after.iter().map(|s| s.to_string()).collect(),
            params: params
                .iter()
                .map(|(name, value)| ParamView {
                    name: name.to_string(),
                    value: value.to_string(),
                })
                .collect(),
            when: Vec::new(),
        }
    }

    fn when(input: &str, values: &[&str]) -> WhenExpression {
        WhenExpression {
            input: input.into(),
            operator: "in".into(),
            values: values.iter().map(|s| s.to_string()).collect(),
            cel: None,
        }
    }

    pub(crate) fn view(name: &str, status: TaskStatus) -> TaskView {
        TaskView {
            name: name.into(),
            display_name: None,
            finally: false,
            status,
            reason: None,
            message: None,
            skip_reason: None,
            when: Vec::new(),
            task_run: None,
            pod: None,
            started_at: None,
            finished_at: None,
            steps: Vec::new(),
            results: Vec::new(),
        }
    }

    /// The sandbox's `service-build` Pipeline (`sandbox/src/fixtures/tekton.rs`).
    pub(crate) fn service_build() -> PipelineSpecView {
        let mut scan = task(
            "scan",
            &["build-image"],
            &[("image-digest", "$(tasks.build-image.results.IMAGE_DIGEST)")],
        );
        scan.when = vec![when("$(params.scan-image)", &["true"])];
        let mut clone = task(
            "clone",
            &[],
            &[
                ("url", "$(params.repo-url)"),
                ("revision", "$(params.revision)"),
            ],
        );
        clone.display_name = Some("Clone $(params.component)".into());
        PipelineSpecView {
            display_name: Some("Build a service".into()),
            tasks: vec![
                clone,
                task("test", &["clone"], &[]),
                task(
                    "build-image",
                    &["test"],
                    &[("IMAGE", "$(params.image):$(tasks.clone.results.commit)")],
                ),
                scan,
                task(
                    "push-chart",
                    &["scan"],
                    &[
                        ("image-digest", "$(tasks.build-image.results.IMAGE_DIGEST)"),
                        ("revision", "$(params.revision)"),
                    ],
                ),
            ],
            finally: vec![task(
                "notify",
                &[],
                &[("status", "$(tasks.status)"), ("sha", "$(params.revision)")],
            )],
        }
    }

    pub(crate) fn service_build_views() -> Vec<TaskView> {
        let mut scan = view("scan", TaskStatus::Skipped);
        scan.skip_reason = Some("When Expressions evaluated to false".into());
        let mut notify = view("notify", TaskStatus::Running);
        notify.finally = true;
        vec![
            view("clone", TaskStatus::Succeeded),
            view("test", TaskStatus::Succeeded),
            view("build-image", TaskStatus::Succeeded),
            scan,
            view("push-chart", TaskStatus::Succeeded),
            notify,
        ]
    }

    fn params() -> Vec<ParamView> {
        vec![ParamView {
            name: "component".into(),
            value: "payments".into(),
        }]
    }

    fn edge<'a>(g: &'a PipelineGraph, from: &str, to: &str) -> Option<&'a [EdgeKind]> {
        let index = |name: &str| g.nodes.iter().position(|n| n.name == name);
        let (from, to) = (index(from)?, index(to)?);
        g.edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .map(|e| e.kinds.as_slice())
    }

    fn result(name: &str) -> EdgeKind {
        EdgeKind::Result {
            result: name.into(),
        }
    }

    #[test]
    fn the_service_build_pipeline_has_its_tasks_edges_and_skip_reason() {
        let g = graph_of(&service_build(), &service_build_views(), &params());
        let names: Vec<_> = g.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "clone",
                "test",
                "build-image",
                "scan",
                "push-chart",
                "notify"
            ]
        );
        assert_eq!(g.nodes[0].label, "Clone payments");
        assert_eq!(g.nodes[1].label, "test");
        let scan = &g.nodes[3];
        assert_eq!(scan.status, TaskStatus::Skipped);
        assert_eq!(
            scan.skip_reason.as_deref(),
            Some("When Expressions evaluated to false")
        );
        assert!(scan.guarded);
        assert!(!g.nodes[2].guarded);
        assert!(g.nodes[5].finally && !g.nodes[4].finally);
        assert_eq!(g.nodes[5].status, TaskStatus::Running);

        assert_eq!(edge(&g, "clone", "test"), Some(&[EdgeKind::RunAfter][..]));
        assert_eq!(
            edge(&g, "clone", "build-image"),
            Some(&[result("commit")][..])
        );
        assert_eq!(
            edge(&g, "build-image", "scan"),
            Some(&[EdgeKind::RunAfter, result("IMAGE_DIGEST")][..])
        );
        assert_eq!(
            edge(&g, "build-image", "push-chart"),
            Some(&[result("IMAGE_DIGEST")][..])
        );
        assert_eq!(
            edge(&g, "scan", "push-chart"),
            Some(&[EdgeKind::RunAfter][..])
        );
        // Only the last task of `tasks` leads into `finally`.
        assert_eq!(
            edge(&g, "push-chart", "notify"),
            Some(&[EdgeKind::Finally][..])
        );
        assert_eq!(edge(&g, "clone", "notify"), None);
        assert_eq!(g.edges.len(), 7);
        assert!(g.dangling.is_empty(), "{:?}", g.dangling);
        assert!(g.cycle.is_empty());
    }

    #[test]
    fn a_task_the_run_has_not_reached_is_pending() {
        let g = graph_of(&service_build(), &[], &[]);
        assert!(g.nodes.iter().all(|n| n.status == TaskStatus::Pending));
        // Without the param the display name keeps its reference, as Tekton would show it.
        assert_eq!(g.nodes[0].label, "Clone $(params.component)");
    }

    #[test]
    fn result_references_in_when_guards_make_when_edges() {
        let mut deploy = task(
            "deploy",
            &[],
            &[("digest", "$(tasks.build.results.digest)")],
        );
        deploy.when = vec![
            when("$(tasks.test.results.passed)", &["true"]),
            when("prod", &["$(tasks.plan.results.targets[*])"]),
            WhenExpression {
                input: String::new(),
                operator: String::new(),
                values: Vec::new(),
                cel: Some("'$(tasks.build.results.meta.arch)' == 'amd64'".into()),
            },
        ];
        let spec = PipelineSpecView {
            tasks: vec![
                task("test", &[], &[]),
                task("plan", &[], &[]),
                task("build", &[], &[]),
                deploy,
            ],
            ..PipelineSpecView::default()
        };
        let g = graph_of(&spec, &[], &[]);
        let when = |result: &str| EdgeKind::When {
            result: result.into(),
        };
        assert_eq!(edge(&g, "test", "deploy"), Some(&[when("passed")][..]));
        assert_eq!(edge(&g, "plan", "deploy"), Some(&[when("targets")][..]));
        assert_eq!(
            edge(&g, "build", "deploy"),
            Some(&[result("digest"), when("meta")][..])
        );
        assert!(g.nodes[3].guarded);
    }

    #[test]
    fn result_references_are_read_in_every_form_tekton_accepts() {
        let text = "$(tasks.a.results.one) $(tasks.b.results.list[*]) $(tasks.c.results.obj.key) \
                    $(tasks.d.results['quoted']) $(tasks.e.results[\"double\"]) $(tasks.f.results.idx[0])";
        assert_eq!(
            result_references(text),
            [
                ("a", "one"),
                ("b", "list"),
                ("c", "obj"),
                ("d", "quoted"),
                ("e", "double"),
                ("f", "idx")
            ]
        );
        for not_a_result in [
            "$(tasks.status)",
            "$(tasks.build.status)",
            "$(tasks.build.results.)",
            "$(tasks.build.results",
            "$(tasks.",
            "$(tasks..results.x)",
            "$(params.tasks.a.results.b)",
            "$(tasks.a b.results.c)",
            "$(tasks.a.results['open)",
        ] {
            assert_eq!(result_references(not_a_result), [], "{not_a_result}");
        }
    }

    #[test]
    fn every_last_task_leads_into_every_finally_task_and_finally_result_references_are_edges_too() {
        let mut cleanup = task(
            "cleanup",
            &[],
            &[("commit", "$(tasks.clone.results.commit)")],
        );
        cleanup.display_name = Some("Clean up".into());
        let spec = PipelineSpecView {
            tasks: vec![
                task("clone", &[], &[]),
                task("lint", &["clone"], &[]),
                task("unit", &["clone"], &[]),
            ],
            finally: vec![task("notify", &[], &[]), cleanup],
            ..PipelineSpecView::default()
        };
        let g = graph_of(&spec, &[], &[]);
        for last in ["lint", "unit"] {
            for finally in ["notify", "cleanup"] {
                assert_eq!(edge(&g, last, finally), Some(&[EdgeKind::Finally][..]));
            }
        }
        assert_eq!(edge(&g, "clone", "notify"), None);
        assert_eq!(edge(&g, "clone", "cleanup"), Some(&[result("commit")][..]));
        assert_eq!(g.nodes[4].label, "Clean up");
    }

    #[test]
    fn a_spec_with_only_finally_tasks_has_no_finally_edges() {
        let spec = PipelineSpecView {
            finally: vec![task("notify", &[], &[])],
            ..PipelineSpecView::default()
        };
        let g = graph_of(&spec, &[], &[]);
        assert_eq!(g.nodes.len(), 1);
        assert!(g.edges.is_empty());
    }

    #[test]
    fn references_to_tasks_the_spec_lacks_are_dangling_not_edges() {
        let spec = PipelineSpecView {
            tasks: vec![
                task(
                    "build",
                    &["ghost", "ghost"],
                    &[("x", "$(tasks.phantom.results.y)")],
                ),
                task("test", &["build"], &[]),
            ],
            ..PipelineSpecView::default()
        };
        let g = graph_of(&spec, &[], &[]);
        assert_eq!(
            g.dangling,
            [
                ("build".to_string(), "ghost".to_string()),
                ("build".to_string(), "phantom".to_string())
            ]
        );
        assert_eq!(g.edges.len(), 1);
    }

    #[test]
    fn a_cycle_is_reported_with_the_tasks_on_it_and_the_graph_is_still_whole() {
        let spec = PipelineSpecView {
            tasks: vec![
                task("start", &[], &[]),
                task("a", &["start", "b"], &[]),
                task("b", &["a"], &[]),
                task("self", &["self"], &[]),
                task("end", &["b"], &[]),
            ],
            finally: vec![task("notify", &[], &[])],
            ..PipelineSpecView::default()
        };
        let g = graph_of(&spec, &[], &[]);
        assert_eq!(g.cycle, ["a", "b", "self"]);
        assert_eq!(g.nodes.len(), 6);
        assert_eq!(edge(&g, "self", "self"), Some(&[EdgeKind::RunAfter][..]));
        assert_eq!(topological_order(&g), None);
        // `self` waits only on itself, so it is one of the last tasks along with `end`.
        assert_eq!(edge(&g, "self", "notify"), Some(&[EdgeKind::Finally][..]));
        assert_eq!(edge(&g, "end", "notify"), Some(&[EdgeKind::Finally][..]));
    }

    #[test]
    fn the_topological_order_puts_every_task_after_what_it_waits_for() {
        let g = graph_of(&service_build(), &[], &[]);
        let order = topological_order(&g).expect("a DAG has an order");
        assert_eq!(order.len(), g.nodes.len());
        let place = |i: usize| order.iter().position(|&o| o == i);
        for e in &g.edges {
            assert!(place(e.from) < place(e.to), "{e:?}");
        }
    }

    #[test]
    fn display_names_resolve_params_in_every_notation_and_fall_back_to_the_name() {
        let mut spec = service_build();
        spec.tasks[1].display_name =
            Some("Test $(params['component']) at $(params[\"rev\"])".into());
        spec.tasks[2].display_name = Some("  ".into());
        spec.tasks[3].display_name = Some("Scan $(params.unknown) $(params.component".into());
        spec.finally[0].display_name = Some("Tell $(params.component)".into());
        let mut params = params();
        params.push(ParamView {
            name: "rev".into(),
            value: "abc1234".into(),
        });
        let names = display_names(&spec, &params);
        assert_eq!(names["clone"], "Clone payments");
        assert_eq!(names["test"], "Test payments at abc1234");
        assert_eq!(names["build-image"], "build-image");
        assert_eq!(names["scan"], "Scan $(params.unknown) $(params.component");
        assert_eq!(names["push-chart"], "push-chart");
        assert_eq!(names["notify"], "Tell payments");
    }

    #[test]
    fn the_display_name_the_run_resolved_wins() {
        let mut views = service_build_views();
        views[0].display_name = Some("Clone payments at abc1234".into());
        let g = graph_of(&service_build(), &views, &params());
        assert_eq!(g.nodes[0].label, "Clone payments at abc1234");
    }

    #[test]
    fn display_names_are_resolved_once_per_spec_and_params() {
        let detail = crate::pipelines::layout::synthetic_pipeline(12, 1);
        let mut cache = DisplayNameCache::new();
        let first = cache.names(&detail).clone();
        assert_eq!(first, display_names(&detail.spec, &detail.params));
        assert_eq!(cache.graph(&detail), graph(&detail));
        assert_eq!(cache.len(), 1);
        let mut other = detail.clone();
        other.params[0].value = "ledger".into();
        assert_ne!(cache.names(&other), &first);
        assert_eq!(cache.len(), 2);
        for i in 0..DisplayNameCache::CAPACITY * 2 {
            cache.names_of(&format!("spec-{i}"), &detail.spec, &detail.params);
        }
        assert_eq!(cache.len(), DisplayNameCache::CAPACITY);
    }

    #[test]
    fn several_reasons_between_two_tasks_fold_into_one_edge() {
        let mut push = task(
            "push",
            &["build", "build"],
            &[
                ("a", "$(tasks.build.results.digest)"),
                (
                    "b",
                    "$(tasks.build.results.digest) $(tasks.build.results.url)",
                ),
            ],
        );
        push.when = vec![when("$(tasks.build.results.digest)", &["x"])];
        let spec = PipelineSpecView {
            tasks: vec![task("build", &[], &[]), push],
            ..PipelineSpecView::default()
        };
        let g = graph_of(&spec, &[], &[]);
        assert_eq!(g.edges.len(), 1);
        assert_eq!(
            g.edges[0].kinds,
            [
                EdgeKind::RunAfter,
                result("digest"),
                result("url"),
                EdgeKind::When {
                    result: "digest".into()
                }
            ]
        );
    }
}
