//! The Overview's logic: its filters as they live in the URL, the fleet in numbers, the teams and
//! environments to filter by, and the activity feed. Services the catalog knows but the platform does not
//! ([`CatalogState::NotOnboarded`]) are no matrix row and count in nothing: they are listed apart
//! ([`OverviewFilter::not_onboarded`]), each with a link to onboard it ([`onboard_href`]).

use std::collections::BTreeSet;

use crate::fleet::{
    ActivityItem, CatalogState, CellProblem, EnvironmentCell, Fleet, Health, ServiceSummary,
    SyncStatus, search_needle,
};
use crate::slo::{SloSummary, budget_order};
use crate::status::{Tone, cell_tone};
use crate::time::parse_rfc3339;
use crate::url::encode_query_value;

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
    /// Synced, healthy, without drift and without any [`CellProblem`].
    Healthy,
    /// Has this problem (a stale secret, a composition error, a schema behind, a failed schema check).
    Problem(CellProblem),
}

impl StatusFilter {
    /// Every filter, in the order the picker offers them.
    pub const ALL: [StatusFilter; 10] = [
        StatusFilter::Problems,
        StatusFilter::OutOfSync,
        StatusFilter::Degraded,
        StatusFilter::Drift,
        StatusFilter::Unreachable,
        StatusFilter::Problem(CellProblem::StaleSecret),
        StatusFilter::Problem(CellProblem::CompositionError),
        StatusFilter::Problem(CellProblem::SchemaBehind),
        StatusFilter::Problem(CellProblem::SchemaCheckFailed),
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
            StatusFilter::Problem(problem) => problem.as_str(),
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
            StatusFilter::Problem(problem) => problem.label(),
        }
    }

    /// Whether one cell is in.
    pub fn matches(self, cell: &EnvironmentCell) -> bool {
        match self {
            StatusFilter::Problems => matrix_tone(cell) != Tone::Ok,
            StatusFilter::OutOfSync => cell.sync == SyncStatus::OutOfSync,
            StatusFilter::Degraded => matches!(cell.health, Health::Degraded | Health::Missing),
            StatusFilter::Drift => cell.drift,
            StatusFilter::Unreachable => cell.unreachable_since.is_some(),
            StatusFilter::Healthy => matrix_tone(cell) == Tone::Ok,
            StatusFilter::Problem(problem) => cell.problems.contains(&problem),
        }
    }
}

/// How a problem feels: a stale secret or a schema behind the code needs a look; a composition error or a
/// failed schema check is failing.
pub fn problem_tone(problem: CellProblem) -> Tone {
    match problem {
        CellProblem::StaleSecret | CellProblem::SchemaBehind => Tone::Warn,
        CellProblem::CompositionError | CellProblem::SchemaCheckFailed => Tone::Bad,
    }
}

/// A matrix cell rolled up as the Overview shows it: [`cell_tone`] (sync, health, drift, reachability) made
/// worse by each of its problems, so a cell with a stale secret is neither "healthy" nor calm.
pub fn matrix_tone(cell: &EnvironmentCell) -> Tone {
    cell.problems
        .iter()
        .map(|p| problem_tone(*p))
        .fold(cell_tone(cell), Tone::max)
}

/// Whether `service` is on the platform (it has a Component): every service but one only the catalog knows.
pub fn is_onboarded(service: &ServiceSummary) -> bool {
    service.catalog_state != CatalogState::NotOnboarded
}

/// Where Onboard goes for a service the catalog knows: the onboarding form, prefilled with its name, owner
/// and description.
pub fn onboard_href(service: &ServiceSummary) -> String {
    format!(
        "/create?template=onboard-service&name={}&owner={}&description={}",
        encode_query_value(&service.name),
        encode_query_value(&service.owner),
        encode_query_value(&service.description)
    )
}

/// The order of the Overview's services (`?sort=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OverviewSort {
    /// As the fleet lists them, by name (the default, so no parameter).
    #[default]
    Name,
    /// Least error budget left first, services without objectives last (`?sort=budget`).
    Budget,
}

impl OverviewSort {
    /// Every order, as the control offers them.
    pub const ALL: [OverviewSort; 2] = [OverviewSort::Name, OverviewSort::Budget];

    /// The value in the URL.
    pub fn as_str(self) -> &'static str {
        match self {
            OverviewSort::Name => "name",
            OverviewSort::Budget => "budget",
        }
    }

    /// Reads the URL's value; unknown values mean the default order.
    pub fn parse(value: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == value)
            .unwrap_or_default()
    }

    /// The words on the control.
    pub fn label(self) -> &'static str {
        match self {
            OverviewSort::Name => "Name",
            OverviewSort::Budget => "Error budget left",
        }
    }
}

/// `services` least error budget left first, by each one's worst objective in `slos`: those with objectives
/// but no figure yet next, those without objectives last; the given order otherwise.
pub fn sort_by_budget(services: &mut [&ServiceSummary], slos: &[SloSummary]) {
    // (has objectives, worst budget) per service; a missing summary means no objectives.
    let key = |service: &ServiceSummary| {
        let summary = slos.iter().find(|s| s.service == service.name);
        (
            summary.is_none(),
            summary.and_then(|s| s.worst.as_ref().map(|w| w.budget_remaining)),
        )
    };
    services.sort_by(|a, b| {
        let ((a_none, a_budget), (b_none, b_budget)) = (key(a), key(b));
        a_none
            .cmp(&b_none)
            .then_with(|| budget_order(a_budget, b_budget))
    });
}

/// The Overview's filters, as they live in the URL (`?q=&team=&env=&status=&sort=`).
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
    /// The order of the rows; not a filter, so "Clear filters" keeps it.
    pub sort: OverviewSort,
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
            sort: non_empty("sort")
                .map(|s| OverviewSort::parse(&s))
                .unwrap_or_default(),
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
        if self.sort != OverviewSort::default() {
            pairs.push(("sort", self.sort.as_str()));
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

    /// The same order without any filter: where "Clear filters" goes.
    pub fn cleared(&self) -> Self {
        Self {
            sort: self.sort,
            ..Self::default()
        }
    }

    /// Whether any filter is set (the order is not one).
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

    /// Whether `service`'s search text (see [`Fleet::searchable`]) has `needle`, and its owner is the team.
    fn matches_text_and_team(
        &self,
        needle: Option<&str>,
        service: &ServiceSummary,
        search_text: &str,
    ) -> bool {
        needle.is_none_or(|needle| search_text.contains(needle))
            && self.team.as_ref().is_none_or(|team| &service.owner == team)
    }

    /// Whether `service` runs where the environment and status filters ask.
    fn matches_environment_and_status(&self, service: &ServiceSummary) -> bool {
        let env = self
            .env
            .as_ref()
            .is_none_or(|env| service.environments.iter().any(|c| &c.environment == env));
        env && self
            .status
            .is_none_or(|status| self.cells(service).any(|cell| status.matches(cell)))
    }

    /// The rows of the matrix in name order: the onboarded services matching every filter. The text is
    /// looked for in the search text the fleet keeps, so a keystroke costs one pass of `contains`.
    pub fn apply<'a>(&self, fleet: &'a Fleet) -> Vec<&'a ServiceSummary> {
        let needle = search_needle(&self.q);
        fleet
            .searchable()
            .filter(|(service, text)| {
                is_onboarded(service)
                    && self.matches_text_and_team(needle.as_deref(), service, text)
                    && self.matches_environment_and_status(service)
            })
            .map(|(service, _)| service)
            .collect()
    }

    /// The services only the catalog knows that match the text and team filters, in name order; none while
    /// an environment or a status is chosen, since they run nowhere.
    pub fn not_onboarded<'a>(&self, fleet: &'a Fleet) -> Vec<&'a ServiceSummary> {
        if self.env.is_some() || self.status.is_some() {
            return Vec::new();
        }
        let needle = search_needle(&self.q);
        fleet
            .searchable()
            .filter(|(service, text)| {
                !is_onboarded(service)
                    && self.matches_text_and_team(needle.as_deref(), service, text)
            })
            .map(|(service, _)| service)
            .collect()
    }
}

/// Owner teams of the onboarded services, sorted, each once.
pub fn teams<'a>(services: impl IntoIterator<Item = &'a ServiceSummary>) -> Vec<String> {
    services
        .into_iter()
        .filter(|s| is_onboarded(s))
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

/// The fleet in numbers, over every onboarded service × environment cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FleetCounts {
    /// Onboarded services.
    pub services: usize,
    /// Distinct owner teams of those.
    pub teams: usize,
    /// Service × environment cells.
    pub deployments: usize,
    /// Synced, healthy, no drift, reachable, no problem.
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
    /// With an ExternalSecret that has not refreshed.
    pub stale_secret: usize,
    /// With a Crossplane claim or composed resource not ready or not synced.
    pub composition_error: usize,
    /// Whose database schema is behind the code running.
    pub schema_behind: usize,
    /// Whose database has a failed schema check.
    pub schema_check_failed: usize,
}

impl FleetCounts {
    /// The cells with `problem`.
    pub fn with_problem(&self, problem: CellProblem) -> usize {
        match problem {
            CellProblem::StaleSecret => self.stale_secret,
            CellProblem::CompositionError => self.composition_error,
            CellProblem::SchemaBehind => self.schema_behind,
            CellProblem::SchemaCheckFailed => self.schema_check_failed,
        }
    }
}

/// Counts the onboarded services among `services` and their cells.
pub fn fleet_counts<'a>(services: impl IntoIterator<Item = &'a ServiceSummary>) -> FleetCounts {
    let mut counts = FleetCounts::default();
    let mut owners = BTreeSet::new();
    for service in services.into_iter().filter(|s| is_onboarded(s)) {
        counts.services += 1;
        owners.insert(service.owner.as_str());
        for cell in &service.environments {
            counts.deployments += 1;
            if matrix_tone(cell) == Tone::Ok {
                counts.healthy += 1;
            }
            for problem in &cell.problems {
                *match problem {
                    CellProblem::StaleSecret => &mut counts.stale_secret,
                    CellProblem::CompositionError => &mut counts.composition_error,
                    CellProblem::SchemaBehind => &mut counts.schema_behind,
                    CellProblem::SchemaCheckFailed => &mut counts.schema_check_failed,
                } += 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::ActivityKind;
    use crate::fleet::fixtures::{cell, healthy, service};

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
    fn search_looks_in_name_owner_and_description_and_follows_changes() {
        let mut fleet = Fleet::from_services([
            service("payments", "money", vec![]),
            service("cart", "shop", vec![]),
        ]);
        let hits = |fleet: &Fleet, q: &str| {
            OverviewFilter {
                q: q.into(),
                ..Default::default()
            }
            .apply(fleet)
            .into_iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
        };
        assert_eq!(hits(&fleet, "SHOP"), ["cart"], "owner, case-insensitive");
        assert_eq!(hits(&fleet, "  pay "), ["payments"], "trimmed");
        assert_eq!(hits(&fleet, "the cart service"), ["cart"], "description");
        assert_eq!(
            hits(&fleet, "  "),
            ["cart", "payments"],
            "blank is everything"
        );
        assert!(hits(&fleet, "nothing").is_empty());
        assert!(
            hits(&fleet, "cartshop").is_empty(),
            "no match spans two fields"
        );
        let mut renamed = service("cart", "checkout-team", vec![]);
        renamed.description = "Basket and totals".into();
        fleet.apply(crate::fleet::FleetEvent::ServiceUpserted { service: renamed });
        assert!(
            hits(&fleet, "shop").is_empty(),
            "the old owner is no longer found"
        );
        assert_eq!(hits(&fleet, "basket"), ["cart"], "the new description is");
        fleet.apply(crate::fleet::FleetEvent::ServiceRemoved {
            name: "cart".into(),
        });
        assert!(hits(&fleet, "basket").is_empty());
    }

    #[test]
    fn filters_combine_text_team_environment_and_status() {
        let services = Fleet::from_services(fleet());
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
                .cells(&fleet()[0])
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
            sort: OverviewSort::Budget,
        };
        assert_eq!(
            filter.to_path(),
            "/?q=pay%20ments%26&team=payments&env=prod&status=out-of-sync&sort=budget"
        );
        let query = [
            ("q", "pay ments&"),
            ("team", "payments"),
            ("env", "prod"),
            ("status", "out-of-sync"),
            ("sort", "budget"),
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

    /// The sandbox's situations: checkout prod has a stale secret, catalog dev a composition error, payments
    /// prod a schema behind the code and a failed check; search is in the catalog only.
    fn fleet_with_problems() -> Vec<ServiceSummary> {
        let with = |env: &str, problems: &[CellProblem]| EnvironmentCell {
            problems: problems.to_vec(),
            ..healthy(env)
        };
        let mut search = service("search", "shop", vec![]);
        search.catalog_state = CatalogState::NotOnboarded;
        search.description = "Search & suggest".into();
        vec![
            service(
                "catalog",
                "shop",
                vec![
                    with("dev", &[CellProblem::CompositionError]),
                    healthy("prod"),
                ],
            ),
            service(
                "checkout",
                "shop",
                vec![healthy("dev"), with("prod", &[CellProblem::StaleSecret])],
            ),
            service(
                "payments",
                "payments",
                vec![
                    healthy("dev"),
                    with(
                        "prod",
                        &[CellProblem::SchemaBehind, CellProblem::SchemaCheckFailed],
                    ),
                ],
            ),
            search,
            service("wishlist", "discovery", vec![healthy("dev")]),
        ]
    }

    #[test]
    fn each_problem_counts_once_per_cell_and_a_cell_with_one_is_not_healthy() {
        let counts = fleet_counts(&fleet_with_problems());
        assert_eq!(counts.services, 4, "search is not onboarded");
        assert_eq!(counts.teams, 3);
        assert_eq!(counts.deployments, 7);
        assert_eq!(counts.stale_secret, 1);
        assert_eq!(counts.composition_error, 1);
        assert_eq!(counts.schema_behind, 1);
        assert_eq!(counts.schema_check_failed, 1);
        assert_eq!(counts.with_problem(CellProblem::SchemaCheckFailed), 1);
        assert_eq!(counts.healthy, 4, "three cells have problems");
        assert_eq!(counts.degraded + counts.out_of_sync + counts.drifted, 0);

        let services = fleet_with_problems();
        let tones: Vec<Tone> = services
            .iter()
            .flat_map(|s| &s.environments)
            .map(matrix_tone)
            .collect();
        assert_eq!(
            tones,
            [
                Tone::Bad,
                Tone::Ok,
                Tone::Ok,
                Tone::Warn,
                Tone::Ok,
                Tone::Bad,
                Tone::Ok
            ]
        );
    }

    #[test]
    fn each_problem_is_a_status_filter_in_the_url() {
        let services = Fleet::from_services(fleet_with_problems());
        let names = |status: StatusFilter| {
            OverviewFilter {
                status: Some(status),
                ..Default::default()
            }
            .apply(&services)
            .into_iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
        };
        for (problem, expected) in [
            (CellProblem::StaleSecret, "checkout"),
            (CellProblem::CompositionError, "catalog"),
            (CellProblem::SchemaBehind, "payments"),
            (CellProblem::SchemaCheckFailed, "payments"),
        ] {
            let status = StatusFilter::Problem(problem);
            assert_eq!(names(status), [expected], "{problem:?}");
            assert_eq!(StatusFilter::parse(problem.as_str()), Some(status));
            assert!(StatusFilter::ALL.contains(&status));
            assert_eq!(status.label(), problem.label());
        }
        assert_eq!(
            names(StatusFilter::Problems),
            ["catalog", "checkout", "payments"]
        );
        assert_eq!(
            names(StatusFilter::Healthy),
            ["catalog", "checkout", "payments", "wishlist"],
            "each has a healthy cell somewhere"
        );
        let stale_in_dev = OverviewFilter {
            env: Some("dev".into()),
            status: Some(StatusFilter::Problem(CellProblem::StaleSecret)),
            ..Default::default()
        };
        assert!(stale_in_dev.apply(&services).is_empty());
        let link = OverviewFilter {
            status: Some(StatusFilter::Problem(CellProblem::SchemaCheckFailed)),
            ..Default::default()
        };
        assert_eq!(link.to_path(), "/?status=schema-check-failed");
        assert_eq!(
            OverviewFilter::from_query(|key| (key == "status").then(|| "stale-secret".into()))
                .status,
            Some(StatusFilter::Problem(CellProblem::StaleSecret))
        );
        let every: BTreeSet<&str> = StatusFilter::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(every.len(), StatusFilter::ALL.len(), "each spelled once");
    }

    #[test]
    fn a_service_only_the_catalog_knows_is_no_row_but_is_listed_apart_with_its_onboarding_link() {
        let services = Fleet::from_services(fleet_with_problems());
        let rows: Vec<&str> = OverviewFilter::default()
            .apply(&services)
            .into_iter()
            .map(|s| s.name.as_str())
            .collect();
        assert!(!rows.contains(&"search"));
        let apart = |filter: OverviewFilter| {
            filter
                .not_onboarded(&services)
                .into_iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(apart(OverviewFilter::default()), ["search"]);
        assert_eq!(
            apart(OverviewFilter {
                q: "SUGGEST".into(),
                ..Default::default()
            }),
            ["search"]
        );
        assert!(
            apart(OverviewFilter {
                team: Some("payments".into()),
                ..Default::default()
            })
            .is_empty()
        );
        assert!(
            apart(OverviewFilter {
                env: Some("prod".into()),
                ..Default::default()
            })
            .is_empty(),
            "it runs in no environment"
        );
        assert!(
            apart(OverviewFilter {
                status: Some(StatusFilter::Healthy),
                ..Default::default()
            })
            .is_empty()
        );
        assert_eq!(
            teams(services.services()),
            ["discovery", "payments", "shop"]
        );
        let search = services.service("search").expect("in the fleet");
        let only_search = [search.clone()];
        assert!(teams(&only_search).is_empty());
        assert_eq!(fleet_counts(&only_search), FleetCounts::default());
        assert_eq!(
            onboard_href(search),
            "/create?template=onboard-service&name=search&owner=shop&description=Search%20%26%20suggest"
        );
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

    #[test]
    fn sorting_by_budget_puts_the_most_overspent_first_and_services_without_objectives_last() {
        use crate::slo::WorstBudget;
        let mut services = fleet();
        services.push(service("search", "discovery", vec![healthy("prod")]));
        services.push(service("ledger", "payments", vec![healthy("prod")]));
        let summary = |name: &str, budget: Option<f64>| SloSummary {
            service: name.into(),
            objectives: 1,
            worst: budget.map(|budget_remaining| WorstBudget {
                environment: "prod".into(),
                name: format!("{name}-prod-availability"),
                budget_remaining,
            }),
            burning: budget.is_some_and(|b| b < 0.0),
        };
        let slos = [
            summary("catalog", Some(0.9)),
            summary("payments", Some(-9.12)),
            summary("search", Some(0.3)),
            summary("ledger", None),
        ];
        let mut shown: Vec<&ServiceSummary> = services.iter().collect();
        sort_by_budget(&mut shown, &slos);
        let names: Vec<&str> = shown.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["payments", "search", "catalog", "ledger", "recommendations"]
        );

        let sorted = OverviewFilter::from_query(|key| (key == "sort").then(|| "budget".into()));
        assert_eq!(sorted.sort, OverviewSort::Budget);
        assert!(!sorted.is_active(), "an order is not a filter");
        assert_eq!(sorted.to_path(), "/?sort=budget");
        let filtered = OverviewFilter {
            team: Some("shop".into()),
            ..sorted.clone()
        };
        assert_eq!(filtered.cleared(), sorted);
        // An unknown order is the default one, so an old link still opens.
        let unknown = OverviewFilter::from_query(|key| (key == "sort").then(|| "sparkly".into()));
        assert_eq!(unknown, OverviewFilter::default());
    }
}
