//! Pipelines: the Tekton runs that build each service, the DAG of a run, and its steps' logs.
//!
//! The server keeps PipelineRuns and TaskRuns in watch caches and answers with the views below; the browser
//! computes the DAG and its layout from a run's detail with [`graph`] and [`layout`], so both are plain
//! functions tested natively. [`console`] is the log console's logic (ANSI colours, search, which lines are
//! in view), kept out of the DOM for the same reason.

pub mod console;
pub mod graph;
pub mod layout;

use serde::{Deserialize, Serialize};

use crate::url::encode_query_value;

/// Runs per page of a list.
pub const PAGE_SIZE: usize = 20;

/// The SSE event name carrying a [`LogChunk`] on a step's log stream.
pub const LOG_CHUNK_EVENT: &str = "lines";

/// Where a run stands, from its `Succeeded` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Created, no task started yet (or no condition yet).
    Pending,
    /// `Unknown`: tasks are running.
    Running,
    /// `True` (Tekton's `Succeeded` or `Completed`, the latter when a task was skipped).
    Succeeded,
    /// `False`, for any reason but a cancellation or timeout.
    Failed,
    /// `False` with a cancelled reason.
    Cancelled,
    /// `False` with `PipelineRunTimeout` / `TaskRunTimeout`.
    TimedOut,
}

impl RunStatus {
    /// Every status, in the order a filter offers them.
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Running,
        RunStatus::Pending,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::TimedOut,
    ];

    /// As the URL and the API spell it.
    pub fn param(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
        }
    }

    /// Reads [`RunStatus::param`] back.
    pub fn from_param(param: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.param() == param)
    }

    /// In words, for people.
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Pending => "Pending",
            RunStatus::Running => "Running",
            RunStatus::Succeeded => "Succeeded",
            RunStatus::Failed => "Failed",
            RunStatus::Cancelled => "Cancelled",
            RunStatus::TimedOut => "Timed out",
        }
    }

    /// Whether the run has ended.
    pub fn is_finished(self) -> bool {
        !matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

/// Where one pipeline task of a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started (no TaskRun yet) and not skipped.
    Pending,
    /// Its TaskRun runs.
    Running,
    /// Its TaskRun succeeded.
    Succeeded,
    /// Its TaskRun failed (or timed out).
    Failed,
    /// Its TaskRun was cancelled.
    Cancelled,
    /// Tekton skipped it; [`TaskView::skip_reason`] says why.
    Skipped,
}

impl TaskStatus {
    /// In words, for people.
    pub fn label(self) -> &'static str {
        match self {
            TaskStatus::Pending => "Pending",
            TaskStatus::Running => "Running",
            TaskStatus::Succeeded => "Succeeded",
            TaskStatus::Failed => "Failed",
            TaskStatus::Cancelled => "Cancelled",
            TaskStatus::Skipped => "Skipped",
        }
    }
}

/// Tasks of a run by how they stand, for a progress bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    /// Pipeline tasks in the run's spec, `finally` included.
    pub total: u32,
    /// Succeeded.
    pub succeeded: u32,
    /// Failed, cancelled or timed out.
    pub failed: u32,
    /// Skipped.
    pub skipped: u32,
    /// Running.
    pub running: u32,
}

/// One PipelineRun in a list: what a row shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineRunSummary {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The service it builds (its component label).
    pub service: String,
    /// The Pipeline it runs (`tekton.dev/pipeline` label or `pipelineRef`), if named.
    pub pipeline: Option<String>,
    /// Where it stands.
    pub status: RunStatus,
    /// Tekton's reason (`Succeeded`, `Completed`, `Failed`, `Running`, …).
    pub reason: Option<String>,
    /// The full commit it builds.
    pub commit: Option<String>,
    /// The commit message's first line.
    pub message: Option<String>,
    /// The branch it builds.
    pub branch: Option<String>,
    /// What started it: the Tekton Triggers EventListener, or `manual`.
    pub trigger: String,
    /// Who: the commit's author, or whoever started it by hand.
    pub author: Option<String>,
    /// When it was created (RFC 3339): the list's order.
    pub created_at: String,
    /// When it started (RFC 3339).
    pub started_at: Option<String>,
    /// When it finished (RFC 3339).
    pub finished_at: Option<String>,
    /// Its tasks by status.
    pub tasks: TaskCounts,
}

impl PipelineRunSummary {
    /// The run page's path in the app.
    pub fn page_path(&self) -> String {
        run_page_path(&self.namespace, &self.name)
    }

    /// Seconds from start to finish (or to `now` while it runs), when it has started.
    pub fn duration_seconds(&self, now: &str) -> Option<i64> {
        let start = crate::time::parse_rfc3339(self.started_at.as_deref()?)?;
        let end = crate::time::parse_rfc3339(self.finished_at.as_deref().unwrap_or(now))?;
        Some((end - start).max(0))
    }

    /// Where it sits in a newest-first list: its cursor key.
    pub fn key(&self) -> RunKey {
        RunKey {
            created_at: self.created_at.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// The run page's path in the app: `/pipelines/{namespace}/{name}`.
pub fn run_page_path(namespace: &str, name: &str) -> String {
    format!(
        "/pipelines/{}/{}",
        encode_query_value(namespace),
        encode_query_value(name)
    )
}

/// A reference to one run, e.g. the build behind a deployed version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl RunRef {
    /// The run page's path in the app.
    pub fn page_path(&self) -> String {
        run_page_path(&self.namespace, &self.name)
    }
}

/// A run's place in the newest-first order: creation time descending, then namespace and name ascending.
/// A page's cursor is the key of its last (or, going back, first) run, so runs created after a page was read
/// land before it and never shift the pages after it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunKey {
    /// Creation time, RFC 3339 in UTC (sorts as text).
    pub created_at: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl Ord for RunKey {
    /// Newest first; ties by namespace then name.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .created_at
            .cmp(&self.created_at)
            .then_with(|| self.namespace.cmp(&other.namespace))
            .then_with(|| self.name.cmp(&other.name))
    }
}

impl PartialOrd for RunKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Which way a cursor pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The runs after the key (older).
    After,
    /// The runs before the key (newer).
    Before,
}

/// An opaque page cursor: a direction and a [`RunKey`], as one URL-safe token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Which way.
    pub direction: Direction,
    /// From where (exclusive).
    pub key: RunKey,
}

/// A cursor the server did not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cursor is not one this list gave out")]
pub struct BadCursor;

impl Cursor {
    /// As a token: hex of `a|b` + created + NUL + namespace + NUL + name. Hex keeps it URL-safe without a
    /// base64 dependency in the browser's build; the browser never reads it.
    pub fn encode(&self) -> String {
        let direction = match self.direction {
            Direction::After => 'a',
            Direction::Before => 'b',
        };
        let raw = format!(
            "{direction}{}\0{}\0{}",
            self.key.created_at, self.key.namespace, self.key.name
        );
        raw.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads [`Cursor::encode`] back.
    pub fn decode(token: &str) -> Result<Self, BadCursor> {
        if !token.len().is_multiple_of(2) || token.len() > 2048 {
            return Err(BadCursor);
        }
        let bytes = (0..token.len())
            .step_by(2)
            .map(|i| {
                u8::from_str_radix(token.get(i..i + 2).ok_or(BadCursor)?, 16).map_err(|_| BadCursor)
            })
            .collect::<Result<Vec<u8>, BadCursor>>()?;
        let raw = String::from_utf8(bytes).map_err(|_| BadCursor)?;
        let mut chars = raw.chars();
        let direction = match chars.next() {
            Some('a') => Direction::After,
            Some('b') => Direction::Before,
            _ => return Err(BadCursor),
        };
        let mut parts = chars.as_str().split('\0');
        let (Some(created_at), Some(namespace), Some(name), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(BadCursor);
        };
        Ok(Cursor {
            direction,
            key: RunKey {
                created_at: created_at.into(),
                namespace: namespace.into(),
                name: name.into(),
            },
        })
    }
}

/// The filters and cursor of a run list, as the API and the pages' URLs take them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PipelineQuery {
    /// Only this service's runs (the fleet-wide list only; the service's own route names it in its path).
    pub service: Option<String>,
    /// Only runs in this status ([`RunStatus::param`]).
    pub status: Option<String>,
    /// Only runs of this branch, or of a commit starting with this.
    pub revision: Option<String>,
    /// Only runs started by this trigger.
    pub trigger: Option<String>,
    /// Where the page starts: a token from a page's `next` or `previous`.
    pub cursor: Option<String>,
}

impl PipelineQuery {
    /// As a query string (without `?`); empty fields are left out.
    pub fn to_query(&self) -> String {
        let mut query = String::new();
        for (key, value) in [
            ("service", &self.service),
            ("status", &self.status),
            ("revision", &self.revision),
            ("trigger", &self.trigger),
            ("cursor", &self.cursor),
        ] {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                if !query.is_empty() {
                    query.push('&');
                }
                query.push_str(key);
                query.push('=');
                query.push_str(&encode_query_value(value));
            }
        }
        query
    }

    /// Whether `run` passes the filters (the cursor aside): the same test the server's lists apply, so a
    /// page patched by live events keeps showing only what a reload would.
    pub fn matches(&self, run: &PipelineRunSummary) -> bool {
        let given = |value: &Option<String>| value.clone().filter(|v| !v.is_empty());
        given(&self.service).is_none_or(|service| run.service == service)
            && given(&self.status).is_none_or(|status| run.status.param() == status)
            && given(&self.trigger).is_none_or(|trigger| run.trigger == trigger)
            && given(&self.revision).is_none_or(|revision| revision_matches(&revision, run))
    }
}

/// Whether `revision` names `run`'s branch exactly, or is a commit prefix ([`is_commit_prefix`]) of its
/// commit: the `revision` filter, as the server's list and the browser's live rows both apply it.
pub fn revision_matches(revision: &str, run: &PipelineRunSummary) -> bool {
    run.branch.as_deref() == Some(revision)
        || (is_commit_prefix(revision)
            && run
                .commit
                .as_deref()
                .is_some_and(|commit| commit.starts_with(revision)))
}

/// Whether `text` can be an abbreviated commit: 4 to 40 lowercase hex digits (shorter ones would match too
/// many commits by chance).
pub fn is_commit_prefix(text: &str) -> bool {
    (4..=40).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One page of runs, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineRunPage {
    /// At most [`PAGE_SIZE`] runs.
    pub runs: Vec<PipelineRunSummary>,
    /// The cursor of the next (older) page, if there is one.
    pub next: Option<String>,
    /// The cursor of the previous (newer) page, if there is one.
    pub previous: Option<String>,
    /// Runs matching the filters in memory, all pages together.
    pub total: usize,
    /// Older runs of this list's scope that Tower dropped from memory to keep its bounded history (the
    /// cluster may still have them); 0 when nothing was dropped.
    pub dropped: u64,
    /// The bounded history: the newest runs kept per service.
    pub history_per_service: usize,
    /// The triggers seen in memory, for the filter's choices.
    pub triggers: Vec<String>,
}

/// One `when` expression of a pipeline task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhenExpression {
    /// The input, e.g. `$(params.scan-image)` in the spec, resolved in a run's outcome.
    pub input: String,
    /// `in` or `notin`.
    pub operator: String,
    /// The values compared with.
    pub values: Vec<String>,
    /// A CEL expression instead of input/operator/values.
    pub cel: Option<String>,
}

/// A parameter of a pipeline task, as the spec writes it (references unresolved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamView {
    /// Its name.
    pub name: String,
    /// Its value as text (an array or object as JSON).
    pub value: String,
}

/// One task of the Pipeline spec a run used (`status.pipelineSpec`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecTask {
    /// The pipeline task's name.
    pub name: String,
    /// Its `displayName`, references unresolved.
    pub display_name: Option<String>,
    /// The Task it runs.
    pub task_ref: Option<String>,
    /// `runAfter`.
    pub run_after: Vec<String>,
    /// Its params.
    pub params: Vec<ParamView>,
    /// Its `when` guards.
    pub when: Vec<WhenExpression>,
}

/// The Pipeline spec a run used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineSpecView {
    /// The Pipeline's `displayName`.
    pub display_name: Option<String>,
    /// `tasks`.
    pub tasks: Vec<SpecTask>,
    /// `finally`.
    pub finally: Vec<SpecTask>,
}

/// One step of a task's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepView {
    /// The step's name.
    pub name: String,
    /// Its `displayName` from the Task spec, if any.
    pub display_name: Option<String>,
    /// The container running it (`step-<name>`).
    pub container: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Its exit code, once terminated.
    pub exit_code: Option<i32>,
    /// The container state's reason (`Completed`, `Error`, `PodInitializing`, …).
    pub reason: Option<String>,
    /// When it started (RFC 3339).
    pub started_at: Option<String>,
    /// When it finished (RFC 3339).
    pub finished_at: Option<String>,
}

/// One result a task produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultView {
    /// Its name.
    pub name: String,
    /// Its value as text.
    pub value: String,
}

/// One pipeline task of a run: its TaskRun if it ran, or why it did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskView {
    /// The pipeline task's name.
    pub name: String,
    /// Its display name as the run resolved it (the TaskRun's child reference), if any.
    pub display_name: Option<String>,
    /// Whether it is a `finally` task.
    pub finally: bool,
    /// Where it stands.
    pub status: TaskStatus,
    /// Tekton's reason on its TaskRun (`Succeeded`, `Failed`, …).
    pub reason: Option<String>,
    /// Tekton's message on its TaskRun (e.g. `"step-unit" exited with code 1`).
    pub message: Option<String>,
    /// Why Tekton skipped it (`When Expressions evaluated to false`, `PipelineRun was stopping`, …).
    pub skip_reason: Option<String>,
    /// Its `when` expressions as evaluated in this run, with whether each held.
    pub when: Vec<WhenOutcome>,
    /// Its TaskRun's name.
    pub task_run: Option<String>,
    /// The pod its steps ran in.
    pub pod: Option<String>,
    /// When it started (RFC 3339).
    pub started_at: Option<String>,
    /// When it finished (RFC 3339).
    pub finished_at: Option<String>,
    /// Its steps, in order.
    pub steps: Vec<StepView>,
    /// Its results.
    pub results: Vec<ResultView>,
}

/// A `when` expression as a run evaluated it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhenOutcome {
    /// The expression, its input resolved.
    pub expression: WhenExpression,
    /// Whether it held.
    pub passed: bool,
}

/// One run, whole: what the run page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineRunDetail {
    /// The row it is in lists.
    pub summary: PipelineRunSummary,
    /// Tekton's message on the run.
    pub message: Option<String>,
    /// The run's params.
    pub params: Vec<ParamView>,
    /// The Pipeline spec it ran.
    pub spec: PipelineSpecView,
    /// A key of [`PipelineRunDetail::spec`]: equal specs have equal keys, so display names resolved once are
    /// reused for every run of the same spec.
    pub spec_key: String,
    /// Every pipeline task, `tasks` then `finally`, in spec order.
    pub tasks: Vec<TaskView>,
    /// The run's results.
    pub results: Vec<ResultView>,
    /// Whether the viewer may read the steps' logs.
    pub can_read_logs: bool,
}

/// A batch of log lines on a step's log stream ([`LOG_CHUNK_EVENT`]). Lines are sent in batches so a
/// 100,000-line log is a few hundred messages, not 100,000.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogChunk {
    /// Lines, each `<RFC 3339 timestamp> <text>` as the kubelet writes them with timestamps on.
    pub lines: Vec<String>,
    /// A sentence about the log rather than a line of it, for the console to show apart from the lines: the
    /// step has not started yet, or the log could not be read to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The query of a step's log stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct StepLogQuery {
    /// Keep streaming while the step runs.
    #[serde(default)]
    pub follow: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(created_at: &str, name: &str) -> RunKey {
        RunKey {
            created_at: created_at.into(),
            namespace: "tekton-ci".into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_cursor_reads_back_what_it_wrote() {
        let cursor = Cursor {
            direction: Direction::Before,
            key: key("2026-12-01T10:00:00Z", "payments-build-abc1234"),
        };
        let token = cursor.encode();
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(Cursor::decode(&token), Ok(cursor));
    }

    #[test]
    fn a_cursor_not_written_by_tower_is_refused() {
        for token in ["", "zz", "abc", "61", "6100", &"61".repeat(2000)] {
            assert_eq!(Cursor::decode(token), Err(BadCursor), "{token:.20}");
        }
    }

    #[test]
    fn newer_runs_sort_first_and_names_break_ties() {
        let mut keys = [
            key("2026-12-01T10:00:00Z", "b"),
            key("2026-12-01T11:00:00Z", "a"),
            key("2026-12-01T10:00:00Z", "a"),
        ];
        keys.sort();
        let names: Vec<_> = keys
            .iter()
            .map(|k| (&k.created_at[11..13], &k.name[..]))
            .collect();
        assert_eq!(names, [("11", "a"), ("10", "a"), ("10", "b")]);
    }

    #[test]
    fn a_status_reads_back_its_param() {
        for status in RunStatus::ALL {
            assert_eq!(RunStatus::from_param(status.param()), Some(status));
        }
        assert_eq!(RunStatus::from_param("green"), None);
    }

    #[test]
    fn a_run_matches_a_revision_by_branch_or_commit_prefix_and_every_other_filter_exactly() {
        let run = PipelineRunSummary {
            namespace: "tekton-ci".into(),
            name: "payments-build-abc1234".into(),
            service: "payments".into(),
            pipeline: None,
            status: RunStatus::Failed,
            reason: None,
            commit: Some("abc1234def".into()),
            message: None,
            branch: Some("main".into()),
            trigger: "github-push".into(),
            author: None,
            created_at: "2026-12-01T10:00:00Z".into(),
            started_at: None,
            finished_at: None,
            tasks: TaskCounts::default(),
        };
        let query = |f: fn(&mut PipelineQuery)| {
            let mut q = PipelineQuery::default();
            f(&mut q);
            q.matches(&run)
        };
        assert!(query(|_| {}));
        assert!(query(|q| q.revision = Some("main".into())));
        assert!(query(|q| q.revision = Some("abc12".into())));
        assert!(!query(|q| q.revision = Some("abc".into())));
        assert!(!query(|q| q.revision = Some("mai".into())));
        assert!(query(|q| q.status = Some("failed".into())));
        assert!(!query(|q| q.status = Some("running".into())));
        assert!(!query(|q| q.trigger = Some("manual".into())));
        assert!(!query(|q| q.service = Some("ledger".into())));
        assert!(query(|q| q.status = Some(String::new())));
    }

    #[test]
    fn empty_filters_stay_out_of_the_query() {
        let query = PipelineQuery {
            status: Some("failed".into()),
            revision: Some(String::new()),
            trigger: Some("github push".into()),
            ..PipelineQuery::default()
        };
        assert_eq!(query.to_query(), "status=failed&trigger=github%20push");
    }
}
