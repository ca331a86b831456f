//! The history of `application-repositories`: a bootstrap of the platform's own components and Crossplane
//! packages on every cluster of the topology, their version bumps (an in-house component's by its CI bot, dev
//! first and prod a day later, a third-party one's by people's pull requests), then per service an onboarding
//! pull request, the release operator's dev moves after each green build, prod promotions by pull request,
//! schema publications and the operators' derived files.
//!
//! [`planned_head`] gives the files at the end of that history without writing it, for the fixtures.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::stream::{CommitSpec, Signature, Stream};
use super::{Error, MergedPull, Result, import, people, rfc3339, sha_of, yaml};
use crate::platform;
use crate::topology::Topology;
use crate::world::{
    Commit, ComponentPlan, DEV_RELEASE_DELAY, HOUR, Histories, MINUTE, ORGANISATION, PACKAGES,
    PLATFORM_COMPONENTS, PROMOTE_DELAY, PackagePlan, REGISTRY, REVIEW_DELAY, SERVICES, ServicePlan,
    Timeline, team,
};

/// A pull request's part of an event: the branch it came from and who merged it.
struct PullPlan {
    branch: String,
    body: String,
    merger: String,
}

/// One change to main: a direct commit, or a pull request's branch commit plus its merge commit.
struct Event {
    time: i64,
    author: String,
    message: String,
    files: BTreeMap<String, Vec<u8>>,
    pull: Option<PullPlan>,
}

/// A pull request as written, by marks, before fast-import names the commits.
struct Recorded {
    number: u64,
    title: String,
    body: String,
    branch: String,
    author: String,
    merger: String,
    created: i64,
    merged: i64,
    head: usize,
    base: usize,
    merge: usize,
    files: Vec<String>,
    /// The files the branch changed, with their content, until the merge commit applies them.
    contents: BTreeMap<String, Vec<u8>>,
}

/// `wanted`, or a minute after the previous commit when that is later: commits on main never share a time.
fn tick(clock: &mut i64, wanted: i64) -> i64 {
    *clock = wanted.max(*clock + MINUTE);
    *clock
}

fn signature(who: &people::Identity, time: i64) -> Signature {
    Signature {
        name: who.name.clone(),
        email: who.email.clone(),
        time,
    }
}

/// Writes the repository at `dir` and returns the pull requests its history merged.
pub fn build(
    dir: &Path,
    histories: &Histories,
    release_history: Option<usize>,
    timeline: &Timeline,
    topology: &Topology,
) -> Result<Vec<MergedPull>> {
    let mut events = vec![bootstrap(timeline, topology)?];
    events.extend(platform_bumps(timeline, topology)?);
    for (index, plan) in SERVICES.iter().enumerate() {
        let commits = histories
            .services
            .get(plan.name)
            .ok_or_else(|| Error::Plan(format!("no history for {}", plan.name)))?;
        let length = if plan.name == "payments" {
            release_history
        } else {
            None
        };
        events.extend(service_events(plan, index, commits, length, timeline)?);
    }
    // Events sort by when they start; ties keep plan order so the history is deterministic.
    events.sort_by_key(|event| event.time);

    let mut stream = Stream::default();
    let mut head: Option<usize> = None;
    let mut clock = i64::MIN / 2;
    let mut recorded: Vec<Recorded> = Vec::new();
    // Pull requests opened and not merged yet, by when they merge: main moves on in between (the release
    // operator does not wait for a review elsewhere), so a merge lands at its own time, on main as it is then.
    // Keyed by when each should merge, then by number, so ties merge in the order they were opened.
    let mut open: BTreeMap<(i64, u64), Recorded> = BTreeMap::new();
    for event in events.into_iter().map(Some).chain([None]) {
        let until = event.as_ref().map_or(i64::MAX, |e| e.time);
        while let Some(due) = open.first_entry()
            && due.key().0 <= until
        {
            let ((wanted, _), mut pull) = due.remove_entry();
            let merged = tick(&mut clock, wanted);
            let merger = people::identity(&pull.merger);
            let files = std::mem::take(&mut pull.contents);
            // The merge commit starts from main's tree and applies the branch's files: the merge result,
            // since nothing else touches a pull request's files while it is open.
            pull.merge = stream.commit(&CommitSpec {
                branch: "refs/heads/main".into(),
                author: signature(&merger, merged),
                committer: signature(&merger, merged),
                message: format!(
                    "Merge pull request #{} from {ORGANISATION}/{}\n\n{}",
                    pull.number, pull.branch, pull.title
                ),
                from: head,
                merge: Some(pull.head),
                files,
            });
            pull.merged = merged;
            head = Some(pull.merge);
            recorded.push(pull);
        }
        let Some(event) = event else { break };
        let author = people::identity(&event.author);
        let created = tick(&mut clock, event.time);
        let branch_mark = stream.commit(&CommitSpec {
            branch: "refs/heads/main".into(),
            author: signature(&author, created),
            committer: signature(&author, created),
            message: event.message.clone(),
            from: head,
            merge: None,
            files: event.files.clone(),
        });
        let Some(pull) = event.pull else {
            head = Some(branch_mark);
            continue;
        };
        let base = head.ok_or_else(|| Error::Plan("a pull request needs a base".into()))?;
        let number = (recorded.len() + open.len()) as u64 + 1;
        open.insert(
            (created + REVIEW_DELAY, number),
            Recorded {
                number,
                title: event.message,
                body: pull.body,
                branch: pull.branch,
                author: event.author,
                merger: pull.merger,
                created,
                merged: created,
                head: branch_mark,
                base,
                merge: branch_mark,
                files: event.files.keys().cloned().collect(),
                contents: event.files,
            },
        );
    }
    recorded.sort_by_key(|r| r.number);
    if let Some(head) = head {
        stream.reset("refs/heads/main", head);
    }
    let marks = import(dir, stream.finish())?;
    recorded
        .into_iter()
        .map(|r| {
            Ok(MergedPull {
                number: r.number,
                title: r.title,
                body: r.body,
                branch: r.branch,
                author: r.author,
                merged_by: r.merger,
                created_at: rfc3339(r.created),
                merged_at: rfc3339(r.merged),
                head_sha: sha_of(&marks, r.head)?,
                base_sha: sha_of(&marks, r.base)?,
                merge_sha: sha_of(&marks, r.merge)?,
                files: r.files,
            })
        })
        .collect()
}

/// Derived by the release operator: where a service's chart comes from in an environment.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChartSource {
    component: String,
    environment: String,
    #[serde(rename = "repoURL")]
    repo_url: String,
    path: String,
    target_revision: String,
}

/// Derived by the release operator: the Helm values that pin the image.
#[derive(Serialize)]
struct DerivedValues {
    image: ImageValue,
}

#[derive(Serialize)]
struct ImageValue {
    repository: String,
    tag: String,
}

/// Derived by the schema operator: the schema package to apply.
#[derive(Serialize)]
struct DerivedSchema {
    database: String,
    environment: String,
    version: String,
    migrations: Vec<String>,
    package: String,
}

/// The bootstrap: the README, and every platform component and Crossplane package at its first version on
/// every cluster it runs on.
fn bootstrap(timeline: &Timeline, topology: &Topology) -> Result<Event> {
    let mut files = BTreeMap::new();
    files.insert(
        "README.md".to_string(),
        b"# application-repositories\n\nEvery change to what runs is a commit here.\n\n\
- `platform/`: Components, Releases, Databases and DatabaseSchemas, by pull request.\n\
- `components/`: files the release and schema operators derive. Never edit by hand.\n\
- `infra/`, `values/`: cluster infrastructure, by people and CI.\n\
- `packages/`: Crossplane package versions.\n"
            .to_vec(),
    );
    for component in &PLATFORM_COMPONENTS {
        let first = component.versions.first().copied().unwrap_or_default();
        for cluster in platform::clusters_running(topology, component.environments) {
            files.extend(component_files(component, &cluster, first)?);
        }
    }
    for package in &PACKAGES {
        let first = package.versions.first().copied().unwrap_or_default();
        for cluster in topology.cluster_names() {
            files.extend(package_files(package, cluster, first)?);
        }
    }
    Ok(Event {
        time: timeline.bootstrapped(),
        author: "root".into(),
        message:
            "Bootstrap the platform: Argo CD, Tekton, Crossplane, monitoring and the operators"
                .into(),
        files,
        pull: None,
    })
}

/// A platform component's infra file and values on `cluster` at `version`, by path.
fn component_files(
    component: &ComponentPlan,
    cluster: &str,
    version: &str,
) -> Result<BTreeMap<String, Vec<u8>>> {
    Ok([
        (
            platform::infra_path(component.name, cluster),
            yaml(&platform::infra_file(component, cluster, version))?.into_bytes(),
        ),
        (
            platform::values_path(component.name, cluster),
            yaml(&platform::infra_values(component, cluster, version))?.into_bytes(),
        ),
    ]
    .into())
}

/// A Crossplane package's file on `cluster` at `version`, by path.
fn package_files(
    package: &PackagePlan,
    cluster: &str,
    version: &str,
) -> Result<BTreeMap<String, Vec<u8>>> {
    Ok([(
        platform::package_path(package.name, cluster),
        yaml(&platform::package_manifest(package, version))?.into_bytes(),
    )]
    .into())
}

/// The version bumps of the platform's components and packages after the bootstrap
/// ([`Timeline::component_bumps`], [`Timeline::package_bumps`]): an in-house component's CI bot commits
/// each cluster's bump directly; people bump third-party components and packages by pull request.
fn platform_bumps(timeline: &Timeline, topology: &Topology) -> Result<Vec<Event>> {
    let mut events = Vec::new();
    for bump in timeline.component_bumps() {
        let component = crate::world::platform_component(bump.name)
            .ok_or_else(|| Error::Plan(format!("unknown platform component {}", bump.name)))?;
        let previous = component
            .versions
            .iter()
            .position(|v| *v == bump.version)
            .and_then(|n| n.checked_sub(1))
            .and_then(|n| component.versions.get(n))
            .copied()
            .unwrap_or_default();
        for (offset, cluster) in topology
            .cluster_names_of(bump.environment)
            .into_iter()
            .enumerate()
        {
            let files = component_files(component, &cluster, bump.version)?;
            let time = bump.at + offset as i64 * MINUTE;
            events.push(if component.in_house {
                Event {
                    time,
                    author: people::ci_bot(component.name),
                    message: bump_message(component.name, bump.version, &cluster),
                    // Only the infra file and the image tag change; both are the bot's.
                    files,
                    pull: None,
                }
            } else {
                Event {
                    time,
                    author: "root".into(),
                    message: format!("Bump {} to {} on {cluster}", component.name, bump.version),
                    // A third-party chart's values name no version: only its infra file changes.
                    files: files
                        .into_iter()
                        .filter(|(path, _)| path.starts_with("infra/"))
                        .collect(),
                    pull: Some(PullPlan {
                        branch: format!("bump/{}/{cluster}", component.name),
                        body: format!(
                            "Upgrades {} from {previous} to {} on {cluster}.",
                            component.name, bump.version
                        ),
                        merger: crate::world::PLATFORM_TEAM.members[0].into(),
                    }),
                }
            });
        }
    }
    for bump in timeline.package_bumps() {
        let package = PACKAGES
            .iter()
            .find(|p| p.name == bump.name)
            .ok_or_else(|| Error::Plan(format!("unknown package {}", bump.name)))?;
        let mut files = BTreeMap::new();
        for cluster in topology.cluster_names() {
            files.extend(package_files(package, cluster, bump.version)?);
        }
        events.push(Event {
            time: bump.at,
            author: "root".into(),
            message: format!("Bump {} to {}", package.name, bump.version),
            files,
            pull: Some(PullPlan {
                branch: format!("bump/{}", package.name),
                body: format!("Moves every cluster to {} {}.", package.name, bump.version),
                merger: crate::world::PLATFORM_TEAM.members[0].into(),
            }),
        });
    }
    Ok(events)
}

/// The message of a CI bot's bump: `release-operator: bump to 1.9.0 on dev`.
pub(crate) fn bump_message(component: &str, version: &str, cluster: &str) -> String {
    format!("{component}: bump to {version} on {cluster}")
}

/// The files of `application-repositories` at the head of main, as the plan has them, without building the
/// repository: the same builders write the same final content, so this is what `git show main:<path>`
/// gives for every path (the README aside). The fixtures generate their Applications from it.
pub(crate) fn planned_head(
    histories: &Histories,
    topology: &Topology,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    for plan in &SERVICES {
        files.insert(
            platform::component_path(plan.name),
            yaml(&platform::component(plan))?.into_bytes(),
        );
        for environment in crate::world::ENVIRONMENTS {
            let Some(commit) = histories.running(plan, environment) else {
                continue;
            };
            files.insert(
                platform::release_path(plan.name, environment),
                yaml(&platform::release(plan, environment, commit))?.into_bytes(),
            );
            files.extend(derived_release_files(plan, environment, commit)?);
            if plan.database {
                let migrations = platform::applied_migrations(plan, environment, histories);
                files.extend(database_files(plan, environment, &migrations)?);
                files.extend(derived_schema_file(plan, environment, &migrations)?);
            }
        }
    }
    for component in &PLATFORM_COMPONENTS {
        for cluster in platform::clusters_running(topology, component.environments) {
            let environment = topology.environment_of(&cluster).unwrap_or_default();
            files.extend(component_files(
                component,
                &cluster,
                component.version_in(environment),
            )?);
        }
    }
    for package in &PACKAGES {
        for cluster in topology.cluster_names() {
            files.extend(package_files(package, cluster, package.newest())?);
        }
    }
    Ok(files)
}

fn commit_at<'a>(commits: &'a [Commit], index: usize, plan: &ServicePlan) -> Result<&'a Commit> {
    commits
        .get(index)
        .ok_or_else(|| Error::Plan(format!("{} has no commit {index}", plan.name)))
}

/// The versions prod runs over time, as indices into the history: by default an early build, the Rollback
/// target and the current one; with `length`, a long history ending at those two.
fn prod_sequence(plan: &ServicePlan, length: Option<usize>) -> Vec<usize> {
    let previous = plan.prod_previous;
    match length {
        None => {
            let mut sequence = Vec::new();
            if let Some(previous) = previous {
                if previous > 0 && plan.commits.first().is_some_and(|c| c.green) {
                    sequence.push(0);
                }
                sequence.push(previous);
            }
            sequence.push(plan.prod);
            sequence
        }
        Some(length) => {
            let greens: Vec<usize> = (0..=plan.prod)
                .filter(|i| plan.commits.get(*i).is_some_and(|c| c.green))
                .collect();
            let mut reversed = vec![plan.prod];
            if let Some(previous) = previous {
                reversed.push(previous);
            }
            let mut cursor = 0;
            while reversed.len() < length && greens.len() > 1 {
                let candidate = greens[cursor % greens.len()];
                cursor += 1;
                if reversed.last() != Some(&candidate) {
                    reversed.push(candidate);
                }
            }
            reversed.reverse();
            reversed
        }
    }
}

fn service_events(
    plan: &ServicePlan,
    index: usize,
    commits: &[Commit],
    length: Option<usize>,
    timeline: &Timeline,
) -> Result<Vec<Event>> {
    let members: Vec<&str> = team(plan.team)
        .map(|t| t.members.to_vec())
        .unwrap_or_else(|| vec!["root"]);
    let member = |n: usize| members[n % members.len()].to_string();
    let schema_cap = plan.prod_schema_behind.unwrap_or(usize::MAX);
    let sequence = prod_sequence(plan, length);
    let first_prod = commit_at(
        commits,
        sequence.first().copied().unwrap_or(plan.prod),
        plan,
    )?;
    let scaffold = commit_at(commits, 0, plan)?;
    let mut events = Vec::new();

    // Onboarding: the Component, both Releases and, with a database, its Databases and schemas.
    let onboarded = timeline.onboarded(index);
    let mut files = BTreeMap::new();
    files.insert(
        platform::component_path(plan.name),
        yaml(&platform::component(plan))?.into_bytes(),
    );
    files.insert(
        platform::release_path(plan.name, "dev"),
        yaml(&platform::release(plan, "dev", scaffold))?.into_bytes(),
    );
    files.insert(
        platform::release_path(plan.name, "prod"),
        yaml(&platform::release(plan, "prod", first_prod))?.into_bytes(),
    );
    let mut schema: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    if plan.database {
        for environment in ["dev", "prod"] {
            let migrations = if environment == "prod" {
                capped(&first_prod.migrations, schema_cap)
            } else {
                scaffold.migrations.clone()
            };
            files.extend(database_files(plan, environment, &migrations)?);
            schema.insert(environment, migrations);
        }
    }
    events.push(Event {
        time: onboarded,
        author: member(0),
        message: format!("Onboard {}", plan.name),
        files,
        pull: Some(PullPlan {
            branch: format!("tower/onboard/{}", plan.name),
            body: format!(
                "Adds the {} Component and its dev and prod Releases{}.\n\nCreated from the {} template {}.",
                plan.name,
                if plan.database {
                    ", Databases and schemas"
                } else {
                    ""
                },
                plan.template,
                crate::world::TEMPLATE_VERSION
            ),
            merger: member(1),
        }),
    });
    let mut derived = BTreeMap::new();
    for (environment, commit) in [("dev", scaffold), ("prod", first_prod)] {
        derived.extend(derived_release_files(plan, environment, commit)?);
    }
    events.push(Event {
        time: onboarded + 30 * MINUTE,
        author: people::RELEASE_OPERATOR.into(),
        message: format!(
            "Derive {} files: dev {}, prod {}",
            plan.name,
            scaffold.short(),
            first_prod.short()
        ),
        files: derived,
        pull: None,
    });
    if plan.database {
        let mut derived = BTreeMap::new();
        for (environment, migrations) in &schema {
            derived.extend(derived_schema_file(plan, environment, migrations)?);
        }
        events.push(Event {
            time: onboarded + 35 * MINUTE,
            author: people::SCHEMA_OPERATOR.into(),
            message: format!("Derive {} schema packages", plan.name),
            files: derived,
            pull: None,
        });
    }

    // dev follows main: every green build up to what dev runs now, by the release operator.
    for (position, commit) in commits.iter().enumerate().take(plan.dev + 1).skip(1) {
        if !commit.green {
            continue;
        }
        let built = timeline.commit_time(index, position) + DEV_RELEASE_DELAY;
        events.push(Event {
            time: built,
            author: people::RELEASE_OPERATOR.into(),
            message: format!("Deploy {} {} to dev", plan.name, commit.short()),
            files: [(
                platform::release_path(plan.name, "dev"),
                yaml(&platform::release(plan, "dev", commit))?.into_bytes(),
            )]
            .into(),
            pull: None,
        });
        events.push(Event {
            time: built + MINUTE,
            author: people::RELEASE_OPERATOR.into(),
            message: format!("Derive {} dev files for {}", plan.name, commit.short()),
            files: derived_release_files(plan, "dev", commit)?,
            pull: None,
        });
        if plan.database && schema.get("dev") != Some(&commit.migrations) {
            events.extend(schema_events(
                plan,
                "dev",
                &commit.migrations,
                built + 30 * MINUTE,
                member(position),
                member(position + 1),
            )?);
            schema.insert("dev", commit.migrations.clone());
        }
    }

    // prod moves by pull request only.
    let mut time = onboarded;
    let mut running = sequence.first().copied().unwrap_or(plan.prod);
    for (step, position) in sequence.iter().copied().enumerate().skip(1) {
        let commit = commit_at(commits, position, plan)?;
        let before = commit_at(commits, running, plan)?;
        time = (timeline.commit_time(index, position) + PROMOTE_DELAY).max(time + HOUR);
        let author = member(step);
        let verb = if position < running {
            "Roll back"
        } else {
            "Promote"
        };
        events.push(Event {
            time,
            author: author.clone(),
            message: format!("{verb} {} to {} in prod", plan.name, commit.short()),
            files: [(
                platform::release_path(plan.name, "prod"),
                yaml(&platform::release(plan, "prod", commit))?.into_bytes(),
            )]
            .into(),
            pull: Some(PullPlan {
                branch: format!("tower/promote/{}/prod", plan.name),
                body: format!(
                    "Moves {} in prod from {} to {} ({} commits).\n\nOpened from Tower.",
                    plan.name,
                    before.short(),
                    commit.short(),
                    position.abs_diff(running)
                ),
                merger: member(step + 1),
            }),
        });
        events.push(Event {
            time: time + 30 * MINUTE,
            author: people::RELEASE_OPERATOR.into(),
            message: format!("Derive {} prod files for {}", plan.name, commit.short()),
            files: derived_release_files(plan, "prod", commit)?,
            pull: None,
        });
        let wanted = capped(&commit.migrations, schema_cap);
        if plan.database && schema.get("prod") != Some(&wanted) {
            events.extend(schema_events(
                plan,
                "prod",
                &wanted,
                time + 40 * MINUTE,
                author,
                member(step + 1),
            )?);
            schema.insert("prod", wanted);
        }
        running = position;
    }
    Ok(events)
}

fn capped(migrations: &[String], cap: usize) -> Vec<String> {
    migrations.iter().take(cap).cloned().collect()
}

fn schema_events(
    plan: &ServicePlan,
    environment: &str,
    migrations: &[String],
    time: i64,
    author: String,
    merger: String,
) -> Result<Vec<Event>> {
    let version = platform::schema_version(migrations);
    Ok(vec![
        Event {
            time,
            author,
            message: format!("Publish {} schema {version} to {environment}", plan.name),
            files: [(
                platform::schema_path(plan.name, environment),
                yaml(&platform::database_schema(plan, environment, migrations))?.into_bytes(),
            )]
            .into(),
            pull: Some(PullPlan {
                branch: format!("tower/schema/{}/{environment}", plan.name),
                body: format!(
                    "Applies migrations up to {version} to the {environment} database of {}.",
                    plan.name
                ),
                merger,
            }),
        },
        Event {
            time: time + 30 * MINUTE,
            author: people::SCHEMA_OPERATOR.into(),
            message: format!(
                "Derive {} {environment} schema package {version}",
                plan.name
            ),
            files: derived_schema_file(plan, environment, migrations)?,
            pull: None,
        },
    ])
}

pub(crate) fn derived_release_files(
    plan: &ServicePlan,
    environment: &str,
    commit: &Commit,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let source = ChartSource {
        component: plan.name.into(),
        environment: environment.into(),
        repo_url: format!("https://github.com/{ORGANISATION}/{}.git", plan.name),
        path: "chart".into(),
        target_revision: commit.short().into(),
    };
    let values = DerivedValues {
        image: ImageValue {
            repository: format!("{REGISTRY}/{}", plan.name),
            tag: commit.short().into(),
        },
    };
    Ok([
        (
            format!("components/{}/environments/{environment}.yaml", plan.name),
            yaml(&source)?.into_bytes(),
        ),
        (
            format!("components/{}/values/{environment}.yaml", plan.name),
            yaml(&values)?.into_bytes(),
        ),
    ]
    .into())
}

/// The intent files of `plan`'s database in `environment`: its Database and its DatabaseSchema publishing
/// `migrations`.
fn database_files(
    plan: &ServicePlan,
    environment: &str,
    migrations: &[String],
) -> Result<[(String, Vec<u8>); 2]> {
    Ok([
        (
            platform::database_path(plan.name, environment),
            yaml(&platform::database(plan, environment))?.into_bytes(),
        ),
        (
            platform::schema_path(plan.name, environment),
            yaml(&platform::database_schema(plan, environment, migrations))?.into_bytes(),
        ),
    ])
}

pub(crate) fn derived_schema_file(
    plan: &ServicePlan,
    environment: &str,
    migrations: &[String],
) -> Result<BTreeMap<String, Vec<u8>>> {
    let version = platform::schema_version(migrations);
    let schema = DerivedSchema {
        database: plan.name.into(),
        environment: environment.into(),
        version: version.clone(),
        migrations: migrations.to_vec(),
        package: format!("{REGISTRY}/{}-schema:{version}", plan.name),
    };
    Ok([(
        format!("components/{}/schema/{environment}.yaml", plan.name),
        yaml(&schema)?.into_bytes(),
    )]
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Repositories;

    /// Every file main holds under the directories the ApplicationSets and operators read.
    fn main_files(repositories: &Repositories) -> BTreeMap<String, Vec<u8>> {
        let git = repositories.git(crate::world::GITOPS_REPOSITORY);
        let listing = git
            .run(&["ls-tree", "-r", "--name-only", "main"])
            .unwrap_or_default();
        listing
            .lines()
            .filter(|path| *path != "README.md")
            .map(|path| {
                let content = git
                    .run_with(&["show", &format!("main:{path}")], None, &[])
                    .unwrap_or_default();
                (path.to_owned(), content)
            })
            .collect()
    }

    #[test]
    fn the_planned_head_is_what_main_holds_for_one_or_two_prod_clusters() {
        for prod_clusters in [1, 2] {
            let topology = Topology::with_prod_clusters(prod_clusters).expect("a topology");
            let repositories = Repositories::builder()
                .topology(topology.clone())
                .build()
                .expect("the repositories build");
            let planned = planned_head(repositories.histories(), &topology).expect("planned");
            let held = main_files(&repositories);
            let planned_paths: Vec<&String> = planned.keys().collect();
            let held_paths: Vec<&String> = held.keys().collect();
            assert_eq!(planned_paths, held_paths, "{prod_clusters} prod clusters");
            for (path, content) in &planned {
                assert_eq!(
                    String::from_utf8_lossy(content),
                    String::from_utf8_lossy(&held[path]),
                    "{path}"
                );
            }
        }
    }

    #[test]
    fn prod_runs_release_operator_and_argo_rollouts_one_version_behind_dev() {
        let topology = Topology::default();
        let planned = planned_head(&Histories::synthetic(), &topology).expect("planned");
        let version = |path: &str| {
            let file: platform::InfraFile =
                serde_saphyr::from_slice(&planned[path]).expect("an infra file");
            file.chart.version
        };
        assert_eq!(version("infra/release-operator/dev.yaml"), "1.9.0");
        assert_eq!(version("infra/release-operator/management.yaml"), "1.9.0");
        assert_eq!(version("infra/release-operator/prod.yaml"), "1.8.2");
        assert_eq!(version("infra/argo-rollouts/prod.yaml"), "2.37.7");
        assert_eq!(version("infra/schema-operator/prod.yaml"), "0.6.1");
        assert!(!planned.contains_key("infra/argo-rollouts/management.yaml"));
        assert!(!planned.contains_key("infra/tower/dev.yaml"));
        let package =
            String::from_utf8_lossy(&planned["packages/provider-aws-rds/prod.yaml"]).into_owned();
        assert!(
            package.contains("xpkg.upbound.io/upbound/provider-aws-rds:v1.14.0")
                && package.contains("apiVersion: pkg.crossplane.io/v1"),
            "{package}"
        );
    }
}
