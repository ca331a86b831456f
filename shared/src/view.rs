//! Pure helpers the browser uses to show the fleet: ages of timestamps, the Overview's filters and counts,
//! status roll-ups, rollout step states, card patching, the activity feed and the dependency graph's layout.
//!
//! Everything here is a plain function of its inputs (the current time is passed in, never read), so it is
//! tested natively and behaves the same in the wasm app.

use std::collections::{BTreeMap, BTreeSet};

use crate::fleet::{
    ActivityItem, CloudResourceView, ComposedResourceView, DeploymentCard, EnvironmentCell,
    EventView, Health, PodView, RolloutStep, SecretView, ServiceSummary, SyncStatus, WorkloadView,
};

// ---------------------------------------------------------------------------------------------------------
// Time

/// Seconds since the Unix epoch of an RFC 3339 timestamp (`2024-05-01T10:42:00Z`, fractions and offsets
/// allowed), or `None` when it is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    if bytes.len() < 20 {
        return None;
    }
    let digits = |from: usize, to: usize| -> Option<i64> {
        let part = text.get(from..to)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let year = digits(0, 4)?;
    let month = digits(5, 7)?;
    let day = digits(8, 10)?;
    let hour = digits(11, 13)?;
    let minute = digits(14, 16)?;
    let second = digits(17, 19)?;
    if bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
        || bytes[13] != b':'
        || bytes[16] != b':'
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        rest = &fraction[end..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let hours: i64 = rest[1..3].parse().ok()?;
            let minutes: i64 = rest[4..6].parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// How long ago `at` was as of `now`, both RFC 3339: "just now", "40 s ago", "2 min ago", "3 h ago",
/// "5 d ago". A time slightly in the future (clock skew) reads "just now". `None` when either is not a time.
pub fn age(at: &str, now: &str) -> Option<String> {
    let seconds = parse_rfc3339(now)? - parse_rfc3339(at)?;
    Some(match seconds {
        ..=9 => "just now".to_string(),
        10..=59 => format!("{seconds} s ago"),
        60..=3_599 => format!("{} min ago", seconds / 60),
        3_600..=86_399 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    })
}

/// [`age`], or the raw text when it cannot be read as a time (never hide what the server said).
pub fn age_or_raw(at: &str, now: &str) -> String {
    age(at, now).unwrap_or_else(|| at.to_string())
}

/// A moment as a reader wants it next to "since": "10:42 UTC" on the same UTC day as `now`, otherwise
/// "2024-05-01 10:42 UTC". `None` when `at` is not a time.
pub fn clock(at: &str, now: &str) -> Option<String> {
    let seconds = parse_rfc3339(at)?;
    let day = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    let hh_mm = format!("{:02}:{:02} UTC", in_day / 3600, (in_day % 3600) / 60);
    let same_day = parse_rfc3339(now).is_some_and(|now| now.div_euclid(86_400) == day);
    if same_day {
        Some(hh_mm)
    } else {
        let (y, m, d) = civil_from_days(day);
        Some(format!("{y:04}-{m:02}-{d:02} {hh_mm}"))
    }
}

/// "since 10:42 UTC (12 min ago)", the way an unreachable cluster or a stale value is dated.
pub fn since(at: &str, now: &str) -> String {
    match (clock(at, now), age(at, now)) {
        (Some(clock), Some(age)) => format!("since {clock} ({age})"),
        _ => format!("since {at}"),
    }
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

// ---------------------------------------------------------------------------------------------------------
// Status vocabulary

/// How a status feels, which picks its colour; the word always goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tone {
    /// All good.
    Ok,
    /// Moving (rolling out, paused on purpose).
    Progress,
    /// Not known: no data, or the cluster cannot be reached.
    Unknown,
    /// Needs a look (out of sync, drift, stale).
    Warn,
    /// Failing.
    Bad,
}

impl Tone {
    /// The CSS class suffix (`tone-ok`, …).
    pub fn class(self) -> &'static str {
        match self {
            Tone::Ok => "tone-ok",
            Tone::Progress => "tone-progress",
            Tone::Unknown => "tone-unknown",
            Tone::Warn => "tone-warn",
            Tone::Bad => "tone-bad",
        }
    }
}

/// The tone of a sync status.
pub fn sync_tone(sync: SyncStatus) -> Tone {
    match sync {
        SyncStatus::Synced => Tone::Ok,
        SyncStatus::OutOfSync => Tone::Warn,
        SyncStatus::Unknown => Tone::Unknown,
    }
}

/// The tone of a health status.
pub fn health_tone(health: Health) -> Tone {
    match health {
        Health::Healthy => Tone::Ok,
        Health::Progressing | Health::Suspended => Tone::Progress,
        Health::Degraded | Health::Missing => Tone::Bad,
        Health::Unknown => Tone::Unknown,
    }
}

/// One matrix cell rolled up: the worst of its sync, health and drift; an unreachable cluster makes it
/// at best unknown, since what is shown is only its last known state.
pub fn cell_tone(cell: &EnvironmentCell) -> Tone {
    let mut tone = sync_tone(cell.sync).max(health_tone(cell.health));
    if cell.drift {
        tone = tone.max(Tone::Warn);
    }
    if cell.unreachable_since.is_some() {
        tone = tone.max(Tone::Unknown);
    }
    tone
}

/// The worst tone of several (`Ok` for none).
pub fn rollup<'a>(cells: impl IntoIterator<Item = &'a EnvironmentCell>) -> Tone {
    cells.into_iter().map(cell_tone).max().unwrap_or(Tone::Ok)
}

/// A pod that keeps crashing.
pub fn is_crashloop(pod: &PodView) -> bool {
    pod.waiting_reason.as_deref() == Some("CrashLoopBackOff")
}

/// A secret worth expanding: not ready, or not refreshed within its interval.
pub fn secret_has_problem(secret: &SecretView) -> bool {
    !secret.ready || secret.stale
}

/// A Crossplane claim worth expanding: not ready, not synced, or carrying an error, itself or in a
/// resource it composed (the claim's own conditions lag behind those).
pub fn resource_has_problem(resource: &CloudResourceView) -> bool {
    !resource.ready
        || !resource.synced
        || resource.message.is_some()
        || resource.composed.iter().any(composed_has_problem)
}

/// A composed (managed) resource worth pointing at: not ready, not synced, or carrying an error.
pub fn composed_has_problem(resource: &ComposedResourceView) -> bool {
    !resource.ready || !resource.synced || resource.message.is_some()
}

/// A Deployment worth expanding: a failed condition, a rollout under way, or fewer replicas ready,
/// available or updated than it wants.
pub fn workload_has_problem(workload: &WorkloadView) -> bool {
    workload.problem.is_some()
        || workload.progressing.is_some()
        || workload.ready_replicas < workload.replicas
        || workload.available_replicas < workload.replicas
        || workload.updated_replicas < workload.replicas
}

/// A Deployment's replica counts in a line: `1/2 ready · 2 updated · 1 available`.
pub fn workload_counts(workload: &WorkloadView) -> String {
    format!(
        "{}/{} ready · {} updated · {} available",
        workload.ready_replicas,
        workload.replicas,
        workload.updated_replicas,
        workload.available_replicas
    )
}

/// What an event is about and how often, in a line: `Pod/web-1 · 31 times`, with the count left out for
/// a single occurrence.
pub fn event_subject(event: &EventView) -> String {
    let object = format!("{}/{}", event.object_kind, event.object_name);
    if event.count > 1 {
        format!("{object} · {} times", event.count)
    } else {
        object
    }
}

// ---------------------------------------------------------------------------------------------------------
// Overview filters and counts

/// The Overview's status filter (`?status=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusFilter {
    /// Anything not synced and healthy.
    Problems,
    /// Out of sync.
    OutOfSync,
    /// Degraded or missing.
    Degraded,
    /// Runs something other than its Release asks for.
    Drift,
    /// Its cluster cannot be reached.
    Unreachable,
    /// Synced, healthy and without drift.
    Healthy,
}

impl StatusFilter {
    /// Every filter, in the order the picker offers them.
    pub const ALL: [StatusFilter; 6] = [
        StatusFilter::Problems,
        StatusFilter::OutOfSync,
        StatusFilter::Degraded,
        StatusFilter::Drift,
        StatusFilter::Unreachable,
        StatusFilter::Healthy,
    ];

    /// The value in the URL.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusFilter::Problems => "problems",
            StatusFilter::OutOfSync => "out-of-sync",
            StatusFilter::Degraded => "degraded",
            StatusFilter::Drift => "drift",
            StatusFilter::Unreachable => "unreachable",
            StatusFilter::Healthy => "healthy",
        }
    }

    /// Reads the URL's value; unknown values mean no filter.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == value)
    }

    /// The words in the picker.
    pub fn label(self) -> &'static str {
        match self {
            StatusFilter::Problems => "Needs attention",
            StatusFilter::OutOfSync => "OutOfSync",
            StatusFilter::Degraded => "Degraded or Missing",
            StatusFilter::Drift => "Drifted",
            StatusFilter::Unreachable => "Cluster unreachable",
            StatusFilter::Healthy => "Synced and Healthy",
        }
    }

    /// Whether one cell is in.
    pub fn matches(self, cell: &EnvironmentCell) -> bool {
        match self {
            StatusFilter::Problems => cell_tone(cell) != Tone::Ok,
            StatusFilter::OutOfSync => cell.sync == SyncStatus::OutOfSync,
            StatusFilter::Degraded => matches!(cell.health, Health::Degraded | Health::Missing),
            StatusFilter::Drift => cell.drift,
            StatusFilter::Unreachable => cell.unreachable_since.is_some(),
            StatusFilter::Healthy => cell_tone(cell) == Tone::Ok,
        }
    }
}

/// The Overview's filters, as they live in the URL (`?q=&team=&env=&status=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverviewFilter {
    /// Free text over name, owner and description.
    pub q: String,
    /// Owner team.
    pub team: Option<String>,
    /// One environment: the matrix shows only its column, and the status filter looks only at it.
    pub env: Option<String>,
    /// Status.
    pub status: Option<StatusFilter>,
}

impl OverviewFilter {
    /// Reads the filters from query parameters (`get("team")` → its value); empty values mean no filter.
    pub fn from_query(get: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |key: &str| get(key).filter(|v| !v.trim().is_empty());
        Self {
            q: get("q").unwrap_or_default(),
            team: non_empty("team"),
            env: non_empty("env"),
            status: non_empty("status").and_then(|s| StatusFilter::parse(&s)),
        }
    }

    /// The path that shows these filters: `/` alone when there are none, parameters in a fixed order.
    pub fn to_path(&self) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        if !self.q.is_empty() {
            pairs.push(("q", &self.q));
        }
        if let Some(team) = &self.team {
            pairs.push(("team", team));
        }
        if let Some(env) = &self.env {
            pairs.push(("env", env));
        }
        if let Some(status) = self.status {
            pairs.push(("status", status.as_str()));
        }
        let query = pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", encode_query_value(v)))
            .collect::<Vec<_>>()
            .join("&");
        if query.is_empty() {
            "/".to_string()
        } else {
            format!("/?{query}")
        }
    }

    /// Whether any filter is set.
    pub fn is_active(&self) -> bool {
        !self.q.trim().is_empty()
            || self.team.is_some()
            || self.env.is_some()
            || self.status.is_some()
    }

    /// The cells of `service` the matrix shows under this filter.
    pub fn cells<'a>(
        &'a self,
        service: &'a ServiceSummary,
    ) -> impl Iterator<Item = &'a EnvironmentCell> {
        service
            .environments
            .iter()
            .filter(move |cell| self.env.as_ref().is_none_or(|env| &cell.environment == env))
    }

    /// Whether `service` is shown.
    pub fn matches(&self, service: &ServiceSummary) -> bool {
        let needle = self.q.trim().to_lowercase();
        let text = needle.is_empty()
            || service.name.to_lowercase().contains(&needle)
            || service.owner.to_lowercase().contains(&needle)
            || service.description.to_lowercase().contains(&needle);
        let team = self.team.as_ref().is_none_or(|team| &service.owner == team);
        let env = self
            .env
            .as_ref()
            .is_none_or(|env| service.environments.iter().any(|c| &c.environment == env));
        let status = self
            .status
            .is_none_or(|status| self.cells(service).any(|cell| status.matches(cell)));
        text && team && env && status
    }

    /// The services shown, in the order given.
    pub fn apply<'a>(
        &self,
        services: impl IntoIterator<Item = &'a ServiceSummary>,
    ) -> Vec<&'a ServiceSummary> {
        services.into_iter().filter(|s| self.matches(s)).collect()
    }
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Owner teams, sorted, each once.
pub fn teams<'a>(services: impl IntoIterator<Item = &'a ServiceSummary>) -> Vec<String> {
    services
        .into_iter()
        .map(|s| s.owner.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Environments in the order the services list them (the server sends cells in environment order), each once.
pub fn environments<'a>(services: impl IntoIterator<Item = &'a ServiceSummary>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for service in services {
        for cell in &service.environments {
            if !seen.contains(&cell.environment) {
                seen.push(cell.environment.clone());
            }
        }
    }
    seen
}

/// The fleet in numbers, over every service × environment cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetCounts {
    /// Services.
    pub services: usize,
    /// Distinct owner teams.
    pub teams: usize,
    /// Service × environment cells.
    pub deployments: usize,
    /// Synced, healthy, no drift, reachable.
    pub healthy: usize,
    /// Progressing or suspended.
    pub progressing: usize,
    /// Degraded or missing.
    pub degraded: usize,
    /// Out of sync.
    pub out_of_sync: usize,
    /// Drifted.
    pub drifted: usize,
    /// On a cluster that cannot be reached.
    pub unreachable: usize,
}

/// Counts `services` and their cells.
pub fn fleet_counts<'a>(services: impl IntoIterator<Item = &'a ServiceSummary>) -> FleetCounts {
    let mut counts = FleetCounts::default();
    let mut owners = BTreeSet::new();
    for service in services {
        counts.services += 1;
        owners.insert(service.owner.as_str());
        for cell in &service.environments {
            counts.deployments += 1;
            if cell_tone(cell) == Tone::Ok {
                counts.healthy += 1;
            }
            match cell.health {
                Health::Progressing | Health::Suspended => counts.progressing += 1,
                Health::Degraded | Health::Missing => counts.degraded += 1,
                Health::Healthy | Health::Unknown => {}
            }
            if cell.sync == SyncStatus::OutOfSync {
                counts.out_of_sync += 1;
            }
            if cell.drift {
                counts.drifted += 1;
            }
            if cell.unreachable_since.is_some() {
                counts.unreachable += 1;
            }
        }
    }
    counts.teams = owners.len();
    counts
}

// ---------------------------------------------------------------------------------------------------------
// Deployment cards

/// Where a rollout step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepState {
    /// Passed.
    Done,
    /// Under way.
    Current,
    /// Still to come.
    Pending,
}

impl StepState {
    /// The value of `data-state`, also the word shown to screen readers.
    pub fn as_str(self) -> &'static str {
        match self {
            StepState::Done => "done",
            StepState::Current => "current",
            StepState::Pending => "pending",
        }
    }
}

/// The state of each of `count` steps when the rollout is at `current` (equal to `count` when done; `None`
/// when the controller has not said, which shows every step as pending).
pub fn step_states(count: usize, current: Option<usize>) -> Vec<StepState> {
    (0..count)
        .map(|index| match current {
            Some(current) if index < current => StepState::Done,
            Some(current) if index == current => StepState::Current,
            _ => StepState::Pending,
        })
        .collect()
}

/// A step in words: "20% traffic", "pause 30s", "pause until promoted".
pub fn step_label(step: &RolloutStep) -> String {
    match step {
        RolloutStep::SetWeight { weight } => format!("{weight}% traffic"),
        RolloutStep::Pause {
            duration: Some(duration),
        } => format!("pause {duration}"),
        RolloutStep::Pause { duration: None } => "pause until promoted".to_string(),
        RolloutStep::Other { name } => name.clone(),
    }
}

/// Replaces the card of the same service and environment, or adds it; cards stay in the order they came.
pub fn upsert_card(cards: &mut Vec<DeploymentCard>, card: DeploymentCard) {
    match cards
        .iter_mut()
        .find(|c| c.environment == card.environment && c.service == card.service)
    {
        Some(existing) => *existing = card,
        None => cards.push(card),
    }
}

/// When the running version was deployed, as best known: the last sync's end, else its start, else the
/// oldest pod's start.
pub fn deployed_at(card: &DeploymentCard) -> Option<&str> {
    let operation = card.application.as_ref().and_then(|a| a.operation.as_ref());
    operation
        .and_then(|o| o.finished_at.as_deref().or(o.started_at.as_deref()))
        .or_else(|| {
            card.pods
                .iter()
                .filter_map(|p| p.started_at.as_deref())
                .min_by_key(|at| parse_rfc3339(at).unwrap_or(i64::MAX))
        })
}

// ---------------------------------------------------------------------------------------------------------
// Activity

/// The feed: items from the stream and from the last fetch, each once, newest first, at most `limit`.
pub fn merge_activity(
    live: &[ActivityItem],
    fetched: &[ActivityItem],
    limit: usize,
) -> Vec<ActivityItem> {
    let mut items: Vec<ActivityItem> = Vec::with_capacity(live.len() + fetched.len());
    for item in live.iter().chain(fetched) {
        if !items.contains(item) {
            items.push(item.clone());
        }
    }
    // Stable, so equal times keep the stream's order ahead of the fetch's.
    items.sort_by_key(|item| std::cmp::Reverse(parse_rfc3339(&item.at).unwrap_or(i64::MIN)));
    items.truncate(limit);
    items
}

// ---------------------------------------------------------------------------------------------------------
// Dependency graph

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
    use crate::fleet::{ActivityKind, ApplicationView, OperationView};

    const NOW: &str = "2024-05-01T10:54:00Z";

    fn cell(env: &str, sync: SyncStatus, health: Health) -> EnvironmentCell {
        EnvironmentCell {
            environment: env.into(),
            version: Some("abc1234".into()),
            sync,
            health,
            drift: false,
            unreachable_since: None,
        }
    }

    fn service(name: &str, owner: &str, cells: Vec<EnvironmentCell>) -> ServiceSummary {
        ServiceSummary {
            name: name.into(),
            owner: owner.into(),
            description: format!("The {name} service"),
            repository: format!("acme/{name}"),
            template: "go-service@1.0.0".into(),
            depends_on: vec![],
            environments: cells,
            catalog: None,
        }
    }

    fn healthy(env: &str) -> EnvironmentCell {
        cell(env, SyncStatus::Synced, Health::Healthy)
    }

    fn fleet() -> Vec<ServiceSummary> {
        let mut catalog_prod = cell("prod", SyncStatus::OutOfSync, Health::Healthy);
        catalog_prod.drift = true;
        vec![
            service(
                "catalog",
                "shop",
                vec![
                    cell("dev", SyncStatus::Synced, Health::Healthy),
                    catalog_prod,
                ],
            ),
            service(
                "payments",
                "payments",
                vec![healthy("dev"), healthy("prod")],
            ),
            service(
                "recommendations",
                "discovery",
                vec![
                    cell("dev", SyncStatus::Synced, Health::Degraded),
                    healthy("prod"),
                ],
            ),
        ]
    }

    #[test]
    fn timestamps_read_with_fractions_and_offsets() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-05-01T10:42:00Z"), Some(1_714_560_120));
        assert_eq!(
            parse_rfc3339("2024-05-01T10:42:00.123Z"),
            Some(1_714_560_120)
        );
        assert_eq!(
            parse_rfc3339("2024-05-01T12:42:00+02:00"),
            Some(1_714_560_120)
        );
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Some(1_709_164_800));
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2024-05-01T10:42:00"), None);
        assert_eq!(parse_rfc3339("2024-13-01T10:42:00Z"), None);
    }

    #[test]
    fn ages_read_as_a_person_would_say_them() {
        let age = |at: &str| age(at, NOW);
        assert_eq!(age("2024-05-01T10:53:58Z").as_deref(), Some("just now"));
        assert_eq!(age("2024-05-01T10:53:20Z").as_deref(), Some("40 s ago"));
        assert_eq!(age("2024-05-01T10:52:00Z").as_deref(), Some("2 min ago"));
        assert_eq!(age("2024-05-01T07:50:00Z").as_deref(), Some("3 h ago"));
        assert_eq!(age("2024-04-26T10:54:00Z").as_deref(), Some("5 d ago"));
        // A server clock slightly ahead of the browser's is not "in the future".
        assert_eq!(age("2024-05-01T10:54:30Z").as_deref(), Some("just now"));
        assert_eq!(age("garbage"), None);
        assert_eq!(age_or_raw("garbage", NOW), "garbage");
    }

    #[test]
    fn since_names_the_clock_time_and_the_age() {
        assert_eq!(
            since("2024-05-01T10:42:00Z", NOW),
            "since 10:42 UTC (12 min ago)"
        );
        assert_eq!(
            since("2024-04-30T23:05:00Z", NOW),
            "since 2024-04-30 23:05 UTC (11 h ago)"
        );
        assert_eq!(since("soon", NOW), "since soon");
        assert_eq!(civil_from_days(days_from_civil(2000, 2, 29)), (2000, 2, 29));
    }

    #[test]
    fn a_cell_rolls_up_to_its_worst_signal() {
        assert_eq!(cell_tone(&healthy("dev")), Tone::Ok);
        assert_eq!(
            cell_tone(&cell("dev", SyncStatus::OutOfSync, Health::Healthy)),
            Tone::Warn
        );
        assert_eq!(
            cell_tone(&cell("dev", SyncStatus::OutOfSync, Health::Degraded)),
            Tone::Bad
        );
        let mut drifted = healthy("dev");
        drifted.drift = true;
        assert_eq!(cell_tone(&drifted), Tone::Warn);
        let mut unreachable = healthy("prod");
        unreachable.unreachable_since = Some("2024-05-01T10:42:00Z".into());
        assert_eq!(cell_tone(&unreachable), Tone::Unknown);
        assert_eq!(rollup(&fleet()[2].environments), Tone::Bad);
        assert_eq!(rollup(&[]), Tone::Ok);
    }

    #[test]
    fn filters_combine_text_team_environment_and_status() {
        let services = fleet();
        let names = |filter: &OverviewFilter| {
            filter
                .apply(&services)
                .into_iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&OverviewFilter::default()),
            ["catalog", "payments", "recommendations"]
        );
        let by_text = OverviewFilter {
            q: "PAY".into(),
            ..Default::default()
        };
        assert_eq!(names(&by_text), ["payments"]);
        let by_team = OverviewFilter {
            team: Some("shop".into()),
            ..Default::default()
        };
        assert_eq!(names(&by_team), ["catalog"]);
        let problems = OverviewFilter {
            status: Some(StatusFilter::Problems),
            ..Default::default()
        };
        assert_eq!(names(&problems), ["catalog", "recommendations"]);
        // The status filter looks only at the chosen environment.
        let problems_in_prod = OverviewFilter {
            env: Some("prod".into()),
            ..problems.clone()
        };
        assert_eq!(names(&problems_in_prod), ["catalog"]);
        let degraded = OverviewFilter {
            status: Some(StatusFilter::Degraded),
            ..Default::default()
        };
        assert_eq!(names(&degraded), ["recommendations"]);
        let out_of_sync = OverviewFilter {
            status: Some(StatusFilter::OutOfSync),
            ..Default::default()
        };
        assert_eq!(names(&out_of_sync), ["catalog"]);
        assert_eq!(
            problems_in_prod
                .cells(&services[0])
                .map(|c| c.environment.as_str())
                .collect::<Vec<_>>(),
            ["prod"]
        );
    }

    #[test]
    fn filters_round_trip_through_the_url() {
        let filter = OverviewFilter {
            q: "pay ments&".into(),
            team: Some("payments".into()),
            env: Some("prod".into()),
            status: Some(StatusFilter::OutOfSync),
        };
        assert_eq!(
            filter.to_path(),
            "/?q=pay%20ments%26&team=payments&env=prod&status=out-of-sync"
        );
        let query = [
            ("q", "pay ments&"),
            ("team", "payments"),
            ("env", "prod"),
            ("status", "out-of-sync"),
        ];
        let read = OverviewFilter::from_query(|key| {
            query
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        });
        assert_eq!(read, filter);
        assert_eq!(OverviewFilter::default().to_path(), "/");
        let only_text = OverviewFilter {
            q: "ledger".into(),
            ..Default::default()
        };
        assert_eq!(only_text.to_path(), "/?q=ledger");
        // Unknown or empty values mean "no filter", so an old link still opens.
        let lenient = OverviewFilter::from_query(|key| match key {
            "status" => Some("sparkly".into()),
            "team" => Some(String::new()),
            _ => None,
        });
        assert_eq!(lenient, OverviewFilter::default());
        assert!(!lenient.is_active());
    }

    #[test]
    fn counts_cover_every_cell() {
        let counts = fleet_counts(&fleet());
        assert_eq!(counts.services, 3);
        assert_eq!(counts.teams, 3);
        assert_eq!(counts.deployments, 6);
        assert_eq!(counts.healthy, 4);
        assert_eq!(counts.degraded, 1);
        assert_eq!(counts.out_of_sync, 1);
        assert_eq!(counts.drifted, 1);
        assert_eq!(counts.unreachable, 0);
        assert_eq!(teams(&fleet()), ["discovery", "payments", "shop"]);
        assert_eq!(environments(&fleet()), ["dev", "prod"]);
    }

    #[test]
    fn rollout_steps_are_done_current_or_pending() {
        use StepState::*;
        assert_eq!(step_states(4, Some(2)), [Done, Done, Current, Pending]);
        assert_eq!(step_states(3, Some(3)), [Done, Done, Done]);
        assert_eq!(step_states(2, None), [Pending, Pending]);
        assert_eq!(
            step_label(&RolloutStep::SetWeight { weight: 20 }),
            "20% traffic"
        );
        assert_eq!(
            step_label(&RolloutStep::Pause { duration: None }),
            "pause until promoted"
        );
    }

    fn card(env: &str, version: &str) -> DeploymentCard {
        DeploymentCard {
            service: "payments".into(),
            environment: env.into(),
            unreachable_since: None,
            release: None,
            running_version: Some(version.into()),
            previous_version: None,
            changes: vec![],
            application: None,
            rollout: None,
            pods: vec![],
            schema: None,
            secrets: vec![],
            cloud_resources: vec![],
            deployments: vec![],
            events: vec![],
        }
    }

    fn worker(replicas: u32, ready: u32) -> WorkloadView {
        WorkloadView {
            name: "ledger-worker".into(),
            replicas,
            ready_replicas: ready,
            updated_replicas: replicas,
            available_replicas: ready,
            progressing: None,
            problem: None,
        }
    }

    #[test]
    fn a_deployment_with_all_replicas_ready_folds_and_a_short_one_does_not() {
        assert!(!workload_has_problem(&worker(1, 1)));
        assert!(workload_has_problem(&worker(2, 1)));
        let failed = WorkloadView {
            problem: Some("ReplicaSet \"x\" has timed out progressing.".into()),
            ..worker(1, 1)
        };
        assert!(workload_has_problem(&failed));
        let rolling = WorkloadView {
            progressing: Some("ReplicaSet \"x\" is progressing.".into()),
            ..worker(1, 1)
        };
        assert!(workload_has_problem(&rolling));
        assert_eq!(
            workload_counts(&worker(2, 1)),
            "1/2 ready · 2 updated · 1 available"
        );
    }

    fn instance(ready: bool) -> ComposedResourceView {
        ComposedResourceView {
            kind: "Instance".into(),
            name: "payments-x7k2p-9fz4q".into(),
            ready,
            synced: true,
            message: (!ready).then(|| "DBInstanceNotFound".into()),
        }
    }

    #[test]
    fn a_claim_folds_only_while_what_it_composed_is_fine() {
        // A card from a server that predates composed resources still reads.
        let mut claim: CloudResourceView = serde_json::from_value(serde_json::json!({
            "kind": "PostgreSQLInstance", "name": "payments", "ready": true, "synced": true, "message": null,
        }))
        .expect("a claim without composed resources");
        assert!(claim.composed.is_empty());
        assert!(!resource_has_problem(&claim));
        claim.composed = vec![instance(true)];
        assert!(!resource_has_problem(&claim));
        // The claim's own conditions still say Ready: the managed resource is the first to know.
        claim.composed.push(instance(false));
        assert!(composed_has_problem(&claim.composed[1]));
        assert!(resource_has_problem(&claim));
    }

    #[test]
    fn an_event_names_its_object_and_counts_only_repeats() {
        let mut event = EventView {
            reason: "BackOff".into(),
            message: "Back-off restarting failed container".into(),
            object_kind: "Pod".into(),
            object_name: "web-1".into(),
            count: 1,
            last_seen: None,
        };
        assert_eq!(event_subject(&event), "Pod/web-1");
        event.count = 31;
        assert_eq!(event_subject(&event), "Pod/web-1 · 31 times");
    }

    #[test]
    fn a_card_update_replaces_its_environment_in_place() {
        let mut cards = vec![card("dev", "aaa"), card("prod", "bbb")];
        upsert_card(&mut cards, card("dev", "ccc"));
        let versions: Vec<_> = cards
            .iter()
            .map(|c| (c.environment.as_str(), c.running_version.as_deref()))
            .collect();
        assert_eq!(versions, [("dev", Some("ccc")), ("prod", Some("bbb"))]);
        upsert_card(&mut cards, card("staging", "ddd"));
        assert_eq!(cards.len(), 3);
    }

    #[test]
    fn deployed_at_prefers_the_last_sync() {
        let mut with_sync = card("dev", "aaa");
        with_sync.application = Some(ApplicationView {
            name: "payments-dev".into(),
            sync: SyncStatus::Synced,
            revision: None,
            health: Health::Healthy,
            health_message: None,
            operation: Some(OperationView {
                phase: "Succeeded".into(),
                message: None,
                started_at: Some("2024-05-01T10:00:00Z".into()),
                finished_at: Some("2024-05-01T10:01:00Z".into()),
            }),
            external_urls: vec![],
            reconciled_at: None,
        });
        assert_eq!(deployed_at(&with_sync), Some("2024-05-01T10:01:00Z"));
        assert_eq!(deployed_at(&card("dev", "aaa")), None);
    }

    #[test]
    fn the_feed_is_newest_first_without_repeats() {
        let item = |at: &str, message: &str| ActivityItem {
            at: at.into(),
            service: "payments".into(),
            environment: Some("prod".into()),
            kind: ActivityKind::Deploy,
            message: message.into(),
            link: None,
        };
        let live = [item("2024-05-01T10:50:00Z", "new")];
        let fetched = [
            item("2024-05-01T10:40:00Z", "old"),
            item("2024-05-01T10:50:00Z", "new"),
            item("2024-05-01T10:45:00Z", "middle"),
        ];
        let merged = merge_activity(&live, &fetched, 2);
        let messages: Vec<_> = merged.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(messages, ["new", "middle"]);
    }

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
