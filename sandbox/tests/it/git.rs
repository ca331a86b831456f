//! The git repositories on disk tell the plan's story, and `git` itself agrees.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use sandbox::git::{Repositories, git_log, release_history_fixture};
use sandbox::platform;
use sandbox::world::{GITOPS_REPOSITORY, SERVICES};
use shared::crd::{Component, Database, DatabaseSchema, Release};

/// The file at `path` on main, or at `<rev>:<path>` when `path` names a revision.
fn show(repositories: &Repositories, repo: &str, path: &str) -> String {
    let spec = if path.contains(':') {
        path.to_string()
    } else {
        format!("main:{path}")
    };
    repositories.git(repo).run(&["show", &spec]).unwrap()
}

#[test]
fn service_repositories_carry_the_plans_messages_authors_and_files() {
    let started = Instant::now();
    let repositories = Repositories::build().unwrap();
    assert!(
        started.elapsed().as_secs_f32() < 5.0,
        "building took {:?}",
        started.elapsed()
    );
    for plan in &SERVICES {
        let log = git_log(&repositories.path(plan.name), "main", None).unwrap();
        let messages: Vec<&str> = log.iter().rev().map(|c| c.title()).collect();
        let planned: Vec<&str> = plan.commits.iter().map(|c| c.message).collect();
        assert_eq!(messages, planned, "{}", plan.name);

        let history = &repositories.histories().services[plan.name];
        for (commit, info) in history.iter().zip(log.iter().rev()) {
            assert_eq!(commit.sha, info.sha);
            assert_eq!(commit.author, info.author.login);
            assert_eq!(commit.time, info.author.date);
        }
        let team = sandbox::world::team(plan.team).unwrap();
        assert!(
            history
                .iter()
                .all(|c| team.members.contains(&c.author.as_str()))
        );

        // One service's repository lacks its catalog file on purpose (see `catalog.rs`).
        if plan.name != sandbox::world::SERVICE_WITHOUT_CATALOG {
            let catalog = show(&repositories, plan.name, "catalog-info.yaml");
            assert!(
                catalog.contains(&format!("owner: group:{}", plan.team)),
                "{catalog}"
            );
            assert!(catalog.contains(&format!("github.com/project-slug: acme/{}", plan.name)));
            assert!(catalog.contains("lifecycle: production"));
            for dependency in plan.depends_on {
                assert!(catalog.contains(&format!("component:{dependency}")));
            }
        }
        assert!(show(&repositories, plan.name, "chart/Chart.yaml").contains("apiVersion: v2"));
        let migrations = repositories
            .git(plan.name)
            .run(&["ls-tree", "--name-only", "main", "migrations/"])
            .unwrap();
        let expected = &history.last().unwrap().migrations;
        assert_eq!(migrations.lines().count(), expected.len(), "{}", plan.name);
    }
}

#[test]
fn release_files_name_the_commits_the_plan_runs() {
    let repositories = Repositories::build().unwrap();
    let histories = repositories.histories();
    for plan in &SERVICES {
        let component: Component = serde_saphyr::from_str(&show(
            &repositories,
            GITOPS_REPOSITORY,
            &platform::component_path(plan.name),
        ))
        .unwrap();
        assert_eq!(component.spec.owner, plan.team);
        for environment in ["dev", "prod"] {
            let path = platform::release_path(plan.name, environment);
            let yaml = show(&repositories, GITOPS_REPOSITORY, &path);
            assert!(!yaml.contains("status"), "{yaml}");
            let release: Release = serde_saphyr::from_str(&yaml).unwrap();
            let running = histories.running(plan, environment).unwrap();
            assert_eq!(release.spec.version, running.short(), "{path}");
            assert_eq!(release.spec.image.tag, running.short());
            let derived = show(
                &repositories,
                GITOPS_REPOSITORY,
                &format!("components/{}/values/{environment}.yaml", plan.name),
            );
            assert!(derived.contains(running.short()), "{derived}");
            if plan.database {
                let _: Database = serde_saphyr::from_str(&show(
                    &repositories,
                    GITOPS_REPOSITORY,
                    &platform::database_path(plan.name, environment),
                ))
                .unwrap();
                let schema: DatabaseSchema = serde_saphyr::from_str(&show(
                    &repositories,
                    GITOPS_REPOSITORY,
                    &platform::schema_path(plan.name, environment),
                ))
                .unwrap();
                assert_eq!(
                    schema.spec.migrations,
                    platform::applied_migrations(plan, environment, histories)
                );
            }
        }
        // git's history simplification follows each merge into its pull request's branch commit.
        let prod = git_log(
            &repositories.path(GITOPS_REPOSITORY),
            "main",
            Some(&platform::release_path(plan.name, "prod")),
        )
        .unwrap();
        assert!(prod.len() >= 2, "{}", plan.name);
        let current = histories.running(plan, "prod").unwrap();
        let previous = histories
            .commit(plan.name, plan.prod_previous.unwrap())
            .unwrap();
        let version_at = |sha: &str| {
            let yaml = show(
                &repositories,
                GITOPS_REPOSITORY,
                &format!("{sha}:{}", platform::release_path(plan.name, "prod")),
            );
            serde_saphyr::from_str::<Release>(&yaml)
                .unwrap()
                .spec
                .version
        };
        assert_eq!(version_at(&prod[0].sha), current.short(), "{}", plan.name);
        assert_eq!(version_at(&prod[1].sha), previous.short(), "{}", plan.name);
    }
}

#[test]
fn dev_moves_are_the_release_operators_and_merges_are_peoples() {
    let repositories = Repositories::build().unwrap();
    let dev = git_log(
        &repositories.path(GITOPS_REPOSITORY),
        "main",
        Some(&platform::release_path("payments", "dev")),
    )
    .unwrap();
    assert!(
        dev.iter()
            .any(|c| c.author.login == "release-operator[bot]")
    );
    let merges: Vec<_> = git_log(&repositories.path(GITOPS_REPOSITORY), "main", None)
        .unwrap()
        .into_iter()
        .filter(|c| c.parents.len() == 2)
        .collect();
    assert!(!merges.is_empty());
    assert!(merges.iter().all(|c| !c.author.login.ends_with("[bot]")));
    assert!(
        merges
            .iter()
            .any(|c| c.title().ends_with("from acme/tower/promote/payments/prod"))
    );
    assert_eq!(merges.len(), repositories.merged_pulls().len());
    let tree = repositories
        .git(GITOPS_REPOSITORY)
        .run(&["ls-tree", "-r", "--name-only", "main"])
        .unwrap();
    for path in [
        "infra/release-operator/management.yaml",
        "values/tower/management.yaml",
        "packages/provider-aws-rds/management.yaml",
        "packages/configuration-database/prod.yaml",
        "infra/external-secrets/prod.yaml",
        "infra/argo-rollouts/dev.yaml",
        "components/payments/schema/prod.yaml",
        "components/payments/environments/dev.yaml",
    ] {
        assert!(tree.lines().any(|l| l == path), "{path} missing");
    }
}

#[test]
fn the_same_plan_builds_the_same_commit_ids() {
    let first = Repositories::build().unwrap();
    let second = Repositories::build().unwrap();
    assert_eq!(first.histories(), second.histories());
    let head = |r: &Repositories| r.git(GITOPS_REPOSITORY).resolve("main").unwrap();
    assert_eq!(head(&first), head(&second));
    assert_eq!(first.merged_pulls(), second.merged_pulls());
}

#[test]
fn the_release_history_fixture_has_a_hundred_prod_release_commits_for_payments() {
    let repositories = release_history_fixture(100).unwrap();
    let path = platform::release_path("payments", "prod");
    let git = repositories.git(GITOPS_REPOSITORY);
    assert_eq!(git.count("main", Some(&path)).unwrap(), 100);
    let release: Release =
        serde_saphyr::from_str(&show(&repositories, GITOPS_REPOSITORY, &path)).unwrap();
    let payments = sandbox::world::service("payments").unwrap();
    assert_eq!(
        release.spec.version,
        repositories
            .histories()
            .running(payments, "prod")
            .unwrap()
            .short()
    );
}
