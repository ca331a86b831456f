//! Tekton's `tekton.dev/v1` PipelineRuns and TaskRuns as the watch reads them, and what Tower keeps of each.
//!
//! The watch deserializes into the few fields below, so a run's spec, its workspaces and its managed fields
//! are never held; each object is then turned into a [`Run`] or a [`TaskRunEntry`], which is all the caches
//! keep.

use std::collections::BTreeMap;

use kube::api::{ApiResource, Object};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shared::pipelines::{
    ParamView, PipelineSpecView, ResultView, RunStatus, SpecTask, StepView, TaskStatus,
    WhenExpression,
};

use crate::config::PipelinesConfig;
use crate::fleet::typed::Packed;

/// A PipelineRun as watched: its params and Pipeline name from the spec, and its status.
pub type PipelineRunObject = Object<Option<RawRunSpec>, RawRunStatus>;
/// A TaskRun as watched: nothing of its spec, and its status.
pub type TaskRunObject = Object<Option<NoSpec>, RawTaskRunStatus>;

/// `tekton.dev/v1` `PipelineRun` (from [`crate::fleet::watched::WATCHED`], which the roles are generated from).
pub fn pipeline_runs() -> ApiResource {
    crate::fleet::watched::PIPELINE_RUNS.api_resource()
}

/// `tekton.dev/v1` `TaskRun`.
pub fn task_runs() -> ApiResource {
    crate::fleet::watched::TASK_RUNS.api_resource()
}

/// The label Tekton puts on a TaskRun naming its PipelineRun.
pub const PIPELINE_RUN_LABEL: &str = "tekton.dev/pipelineRun";
/// The label Tekton puts on a TaskRun naming its pipeline task.
pub const PIPELINE_TASK_LABEL: &str = "tekton.dev/pipelineTask";
/// The label Tekton puts on a TaskRun saying whether it is one of `tasks` or of `finally`.
pub const MEMBER_OF_LABEL: &str = "tekton.dev/memberOf";
/// The label Tekton puts on a run naming its Pipeline.
pub const PIPELINE_LABEL: &str = "tekton.dev/pipeline";

/// Nothing: a TaskRun's spec is not read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NoSpec {}

/// The parts of a PipelineRun's spec Tower reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RawRunSpec {
    pipeline_ref: Option<NameRef>,
    params: Vec<RawParam>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct NameRef {
    name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawParam {
    name: String,
    value: Value,
}

/// The parts of a PipelineRun's status Tower reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RawRunStatus {
    conditions: Vec<RawCondition>,
    start_time: Option<String>,
    completion_time: Option<String>,
    pipeline_spec: Option<RawPipelineSpec>,
    child_references: Vec<RawChildReference>,
    skipped_tasks: Vec<RawSkippedTask>,
    results: Vec<RawParam>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawCondition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawPipelineSpec {
    display_name: Option<String>,
    tasks: Vec<RawPipelineTask>,
    finally: Vec<RawPipelineTask>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawPipelineTask {
    name: String,
    display_name: Option<String>,
    task_ref: Option<NameRef>,
    run_after: Vec<String>,
    params: Vec<RawParam>,
    when: Vec<RawWhen>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawWhen {
    input: Option<String>,
    operator: Option<String>,
    values: Vec<String>,
    cel: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawChildReference {
    name: String,
    pipeline_task_name: Option<String>,
    display_name: Option<String>,
    when_expressions: Vec<RawWhen>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawSkippedTask {
    name: String,
    reason: Option<String>,
    when_expressions: Vec<RawWhen>,
}

/// The parts of a TaskRun's status Tower reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RawTaskRunStatus {
    conditions: Vec<RawCondition>,
    pod_name: Option<String>,
    start_time: Option<String>,
    completion_time: Option<String>,
    steps: Vec<RawStepState>,
    results: Vec<RawParam>,
    task_spec: Option<RawTaskSpec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawStepState {
    name: String,
    container: Option<String>,
    terminated: Option<RawTerminated>,
    running: Option<RawRunning>,
    waiting: Option<RawWaiting>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawTerminated {
    exit_code: i32,
    reason: Option<String>,
    started_at: Option<String>,
    finished_at: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawRunning {
    started_at: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawWaiting {
    reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawTaskSpec {
    steps: Vec<RawStepSpec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RawStepSpec {
    name: String,
    display_name: Option<String>,
}

/// A run or TaskRun by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// Tekton's `Succeeded` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Tekton's reason.
    pub reason: Option<String>,
    /// Tekton's message.
    pub message: Option<String>,
}

/// A pipeline task that ran: its TaskRun, as the run's `childReferences` name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    /// The TaskRun's name.
    pub task_run: String,
    /// The pipeline task.
    pub pipeline_task: String,
    /// Its display name, resolved.
    pub display_name: Option<String>,
    /// Its `when` expressions, resolved.
    pub when: Vec<WhenExpression>,
}

/// A pipeline task Tekton skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The pipeline task.
    pub name: String,
    /// Why.
    pub reason: Option<String>,
    /// Its `when` expressions, resolved.
    pub when: Vec<WhenExpression>,
}

/// What Tower keeps of one PipelineRun.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Namespace and name.
    pub id: RunId,
    /// The service it builds.
    pub service: String,
    /// The Pipeline it runs.
    pub pipeline: Option<String>,
    /// Creation time, RFC 3339 to the second in UTC.
    pub created_at: String,
    /// Start time.
    pub started_at: Option<String>,
    /// Completion time.
    pub finished_at: Option<String>,
    /// The full commit.
    pub commit: Option<String>,
    /// The commit message's first line.
    pub message: Option<String>,
    /// The branch.
    pub branch: Option<String>,
    /// Who: whoever started it by hand, else the commit's author.
    pub author: Option<String>,
    /// The EventListener, or `manual`.
    pub trigger: String,
    /// The `Succeeded` condition.
    pub condition: Option<Condition>,
    /// The run's params.
    pub params: Vec<ParamView>,
    /// The run's results.
    pub results: Vec<ResultView>,
    /// `status.pipelineSpec`, converted; the index takes it out and keeps one shared copy per distinct spec.
    pub spec: Option<PipelineSpecView>,
    /// The TaskRuns it started.
    pub children: Vec<Child>,
    /// The tasks Tekton skipped.
    pub skipped: Vec<Skipped>,
}

impl Run {
    /// Whether Tekton is done with it: its condition is `True` or `False`.
    pub fn is_finished(&self) -> bool {
        self.condition
            .as_ref()
            .is_some_and(|c| c.status == "True" || c.status == "False")
    }

    /// Leaves only what its row is counted from: what only its page reads (params, results, the
    /// condition's message, each task's display name, `when` expressions and skip reason) is read from the
    /// cluster when the page opens.
    pub fn keep_row_only(&mut self) {
        self.params = Vec::new();
        self.results = Vec::new();
        if let Some(condition) = &mut self.condition {
            condition.message = None;
        }
        for child in &mut self.children {
            child.display_name = None;
            child.when = Vec::new();
        }
        for skipped in &mut self.skipped {
            skipped.reason = None;
            skipped.when = Vec::new();
        }
    }
}

/// What Tower keeps of one TaskRun.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRunEntry {
    /// Namespace and name.
    pub id: RunId,
    /// The service it builds.
    pub service: String,
    /// Its PipelineRun's name.
    pub pipeline_run: String,
    /// Its pipeline task.
    pub pipeline_task: Option<String>,
    /// Whether it is one of `finally`.
    pub finally: bool,
    /// The `Succeeded` condition.
    pub condition: Option<Condition>,
    /// Start time.
    pub started_at: Option<String>,
    /// What only its run's page reads.
    pub details: Packed<TaskRunDetails>,
}

/// What only a run's page reads of a TaskRun. A fleet of 10,000 services holds 140,000 TaskRuns, and these
/// fields were most of each one's kilobyte, in some twenty allocations; packed, they are one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRunDetails {
    /// Its pod.
    pub pod: Option<String>,
    /// Completion time.
    pub finished_at: Option<String>,
    /// Its steps, in order.
    pub steps: Vec<StepView>,
    /// Its results.
    pub results: Vec<ResultView>,
}

/// The labels and annotations a run's facts are read from.
#[derive(Debug, Clone)]
pub struct Names {
    /// The component label.
    pub component: String,
    /// The `pipelines:` configuration.
    pub config: PipelinesConfig,
}

/// A Kubernetes time as the API's order key: RFC 3339 to the second, in UTC, so it sorts as text.
fn stamp(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    jiff::Timestamp::from_second(time.0.as_second())
        .unwrap_or(time.0)
        .to_string()
}

fn succeeded(conditions: &[RawCondition]) -> Option<Condition> {
    conditions
        .iter()
        .find(|c| c.kind == "Succeeded")
        .map(|c| Condition {
            status: c.status.clone(),
            reason: c.reason.clone().filter(|r| !r.is_empty()),
            message: c.message.clone().filter(|m| !m.is_empty()),
        })
}

/// A param's or result's value as text: a string as it is, an array or object as JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn params(raw: &[RawParam]) -> Vec<ParamView> {
    raw.iter()
        .map(|p| ParamView {
            name: p.name.clone(),
            value: value_text(&p.value),
        })
        .collect()
}

fn results(raw: &[RawParam]) -> Vec<ResultView> {
    raw.iter()
        .map(|r| ResultView {
            name: r.name.clone(),
            value: value_text(&r.value),
        })
        .collect()
}

fn when(raw: &[RawWhen]) -> Vec<WhenExpression> {
    raw.iter()
        .map(|w| WhenExpression {
            input: w.input.clone().unwrap_or_default(),
            operator: w.operator.clone().unwrap_or_default(),
            values: w.values.clone(),
            cel: w.cel.clone(),
        })
        .collect()
}

fn spec_task(raw: &RawPipelineTask) -> SpecTask {
    SpecTask {
        name: raw.name.clone(),
        display_name: raw.display_name.clone(),
        task_ref: raw.task_ref.as_ref().and_then(|r| r.name.clone()),
        run_after: raw.run_after.clone(),
        params: params(&raw.params),
        when: when(&raw.when),
    }
}

fn spec_view(raw: &RawPipelineSpec) -> PipelineSpecView {
    PipelineSpecView {
        display_name: raw.display_name.clone(),
        tasks: raw.tasks.iter().map(spec_task).collect(),
        finally: raw.finally.iter().map(spec_task).collect(),
    }
}

fn label<'a>(labels: &'a BTreeMap<String, String>, key: &str) -> Option<&'a String> {
    labels.get(key).filter(|v| !v.is_empty())
}

/// What Tower keeps of `object`; `None` for a run without its service's label, name or creation time.
pub fn run(object: &PipelineRunObject, names: &Names) -> Option<Run> {
    let meta = &object.metadata;
    let empty = BTreeMap::new();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    let annotations = meta.annotations.as_ref().unwrap_or(&empty);
    let annotation = |key: &str| label(annotations, key).cloned();
    let config = &names.config;
    let status = object.status.clone().unwrap_or_default();
    let spec = object.spec.clone().unwrap_or_default();
    // A run of a pull request may name its commit only as the `revision` param it checks out.
    let commit = annotation(&config.commit_annotation).or_else(|| {
        spec.params
            .iter()
            .find(|p| p.name == "revision" || p.name == "git-revision")
            .and_then(|p| p.value.as_str())
            .filter(|v| v.len() >= 7 && is_commit(v))
            .map(str::to_string)
    });
    Some(Run {
        id: RunId {
            namespace: meta.namespace.clone()?,
            name: meta.name.clone()?,
        },
        service: label(labels, &names.component)?.clone(),
        pipeline: label(labels, PIPELINE_LABEL)
            .cloned()
            .or_else(|| spec.pipeline_ref.and_then(|r| r.name)),
        created_at: stamp(meta.creation_timestamp.as_ref()?),
        started_at: status.start_time,
        finished_at: status.completion_time,
        commit,
        message: annotation(&config.message_annotation)
            .map(|m| m.lines().next().unwrap_or_default().to_string()),
        branch: annotation(&config.branch_annotation),
        author: annotation(&config.started_by_annotation)
            .or_else(|| annotation(&config.author_annotation)),
        trigger: label(labels, &config.trigger_label)
            .cloned()
            .unwrap_or_else(|| "manual".into()),
        condition: succeeded(&status.conditions),
        params: params(&spec.params),
        results: results(&status.results),
        spec: status.pipeline_spec.as_ref().map(spec_view),
        children: status
            .child_references
            .iter()
            .filter_map(|c| {
                Some(Child {
                    task_run: c.name.clone(),
                    pipeline_task: c.pipeline_task_name.clone()?,
                    display_name: c.display_name.clone(),
                    when: when(&c.when_expressions),
                })
            })
            .collect(),
        skipped: status
            .skipped_tasks
            .iter()
            .map(|s| Skipped {
                name: s.name.clone(),
                reason: s.reason.clone(),
                when: when(&s.when_expressions),
            })
            .collect(),
    })
}

/// Whether `text` is a commit id or its start: lowercase hex, at most 40 digits.
fn is_commit(text: &str) -> bool {
    text.len() <= 40
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What Tower keeps of `object`; `None` for a TaskRun of no PipelineRun or without its service's label.
pub fn task_run(object: &TaskRunObject, names: &Names) -> Option<TaskRunEntry> {
    let meta = &object.metadata;
    let empty = BTreeMap::new();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    let status = object.status.clone().unwrap_or_default();
    let display: BTreeMap<&str, &str> = status
        .task_spec
        .iter()
        .flat_map(|spec| spec.steps.iter())
        .filter_map(|s| Some((s.name.as_str(), s.display_name.as_deref()?)))
        .collect();
    let mut steps: Vec<StepView> = status
        .steps
        .iter()
        .map(|s| step_view(s, display.get(s.name.as_str()).copied()))
        .collect();
    // Before its pod starts, a TaskRun lists no step states; its Task spec still says what will run.
    if steps.is_empty()
        && let Some(spec) = &status.task_spec
    {
        steps = spec
            .steps
            .iter()
            .map(|s| StepView {
                name: s.name.clone(),
                display_name: s.display_name.clone(),
                container: format!("step-{}", s.name),
                status: TaskStatus::Pending,
                exit_code: None,
                reason: None,
                started_at: None,
                finished_at: None,
            })
            .collect();
    }
    Some(TaskRunEntry {
        id: RunId {
            namespace: meta.namespace.clone()?,
            name: meta.name.clone()?,
        },
        service: label(labels, &names.component)?.clone(),
        pipeline_run: label(labels, PIPELINE_RUN_LABEL)?.clone(),
        pipeline_task: label(labels, PIPELINE_TASK_LABEL).cloned(),
        finally: label(labels, MEMBER_OF_LABEL).is_some_and(|m| m == "finally"),
        condition: succeeded(&status.conditions),
        started_at: status.start_time,
        details: Packed::new(&TaskRunDetails {
            pod: status.pod_name.filter(|p| !p.is_empty()),
            finished_at: status.completion_time,
            steps,
            results: results(&status.results),
        }),
    })
}

fn step_view(raw: &RawStepState, display_name: Option<&str>) -> StepView {
    let (status, exit_code, reason, started_at, finished_at) =
        match (&raw.terminated, &raw.running, &raw.waiting) {
            (Some(t), _, _) => (
                if t.exit_code == 0 {
                    TaskStatus::Succeeded
                } else {
                    TaskStatus::Failed
                },
                Some(t.exit_code),
                t.reason.clone(),
                t.started_at.clone(),
                t.finished_at.clone(),
            ),
            (None, Some(r), _) => (TaskStatus::Running, None, None, r.started_at.clone(), None),
            (None, None, waiting) => (
                TaskStatus::Pending,
                None,
                waiting.as_ref().and_then(|w| w.reason.clone()),
                None,
                None,
            ),
        };
    StepView {
        name: raw.name.clone(),
        display_name: display_name.map(str::to_string),
        container: raw
            .container
            .clone()
            .unwrap_or_else(|| format!("step-{}", raw.name)),
        status,
        exit_code,
        reason,
        started_at,
        finished_at,
    }
}

/// Where a run stands, from its `Succeeded` condition.
pub fn run_status(condition: Option<&Condition>) -> RunStatus {
    let Some(condition) = condition else {
        return RunStatus::Pending;
    };
    let reason = condition.reason.as_deref().unwrap_or_default();
    match condition.status.as_str() {
        "True" => RunStatus::Succeeded,
        "False" if reason.contains("Cancelled") => RunStatus::Cancelled,
        "False" if reason.contains("Timeout") || reason.contains("TimedOut") => RunStatus::TimedOut,
        "False" => RunStatus::Failed,
        _ if reason == "PipelineRunPending" || reason == "Pending" => RunStatus::Pending,
        _ => RunStatus::Running,
    }
}

/// Where a TaskRun stands, from its `Succeeded` condition.
pub fn task_status(condition: Option<&Condition>) -> TaskStatus {
    let Some(condition) = condition else {
        return TaskStatus::Pending;
    };
    let reason = condition.reason.as_deref().unwrap_or_default();
    match condition.status.as_str() {
        "True" => TaskStatus::Succeeded,
        "False" if reason.contains("Cancelled") => TaskStatus::Cancelled,
        "False" => TaskStatus::Failed,
        _ if reason == "Pending" => TaskStatus::Pending,
        _ => TaskStatus::Running,
    }
}

/// Whether a `when` expression held, as far as Tower can tell: `in` and `notin` are evaluated on the
/// resolved input; a CEL expression is taken to have held only if the task ran.
pub fn held(expression: &WhenExpression, ran: bool) -> bool {
    if expression.cel.is_some() {
        return ran;
    }
    let found = expression.values.iter().any(|v| v == &expression.input);
    match expression.operator.as_str() {
        "in" => found,
        "notin" => !found,
        _ => ran,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(status: &str, reason: &str) -> Condition {
        Condition {
            status: status.into(),
            reason: Some(reason.into()),
            message: None,
        }
    }

    #[test]
    fn a_run_stands_where_its_succeeded_condition_says() {
        let cases = [
            (None, RunStatus::Pending),
            (Some(condition("Unknown", "Running")), RunStatus::Running),
            (Some(condition("Unknown", "Started")), RunStatus::Running),
            (
                Some(condition("Unknown", "PipelineRunPending")),
                RunStatus::Pending,
            ),
            (Some(condition("True", "Completed")), RunStatus::Succeeded),
            (Some(condition("False", "Failed")), RunStatus::Failed),
            (
                Some(condition("False", "PipelineRunCancelled")),
                RunStatus::Cancelled,
            ),
            (
                Some(condition("False", "PipelineRunTimeout")),
                RunStatus::TimedOut,
            ),
        ];
        for (condition, expected) in cases {
            assert_eq!(run_status(condition.as_ref()), expected, "{condition:?}");
        }
        assert_eq!(
            task_status(Some(&condition("False", "TaskRunTimeout"))),
            TaskStatus::Failed
        );
        assert_eq!(
            task_status(Some(&condition("False", "TaskRunCancelled"))),
            TaskStatus::Cancelled
        );
    }

    #[test]
    fn a_when_expression_is_evaluated_on_its_resolved_input() {
        let expression = |input: &str, operator: &str| WhenExpression {
            input: input.into(),
            operator: operator.into(),
            values: vec!["true".into()],
            cel: None,
        };
        assert!(held(&expression("true", "in"), false));
        assert!(!held(&expression("false", "in"), true));
        assert!(held(&expression("false", "notin"), false));
        let cel = WhenExpression {
            cel: Some("'$(params.x)' == 'y'".into()),
            ..expression("", "")
        };
        assert!(!held(&cel, false));
    }
}
