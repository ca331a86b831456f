//! The databases of the fixtures: every Database names its engine, and the DatabaseSchemas' checks show
//! every state, one failed with the database's own error text, without moving what was applied.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use jiff::Timestamp;
use sandbox::git::Repositories;
use sandbox::world::{GITOPS_REPOSITORY, Histories};
use serde_json::Value;

fn management_of_kind(kind: &str) -> Vec<Value> {
    let base: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
    sandbox::fixtures::management_objects(&Histories::synthetic(), base)
        .into_iter()
        .filter(|o| o["kind"] == kind)
        .collect()
}

#[test]
fn every_database_names_its_engine_on_the_cluster_and_in_git() {
    let databases = management_of_kind("Database");
    assert!(!databases.is_empty());
    for database in &databases {
        assert_eq!(database["spec"]["engine"], "postgres", "{database}");
    }
    let repositories = Repositories::build().unwrap();
    let git = repositories.git(GITOPS_REPOSITORY);
    let files = git
        .run(&[
            "ls-tree",
            "-r",
            "--name-only",
            "main",
            "platform/environments",
        ])
        .unwrap();
    let mut seen = 0;
    for path in files.lines().filter(|p| p.ends_with("-database.yaml")) {
        let text = git.run(&["show", &format!("main:{path}")]).unwrap();
        assert!(text.contains("engine: postgres"), "{path}: {text}");
        seen += 1;
    }
    assert_eq!(seen, databases.len());
}

#[test]
fn schema_checks_show_every_state_and_one_failure_carries_the_databases_error() {
    let schemas = management_of_kind("DatabaseSchema");
    let mut states = BTreeSet::new();
    let mut failed = Vec::new();
    for schema in &schemas {
        for check in schema["status"]["checks"].as_array().unwrap() {
            let state = check["state"].as_str().unwrap().to_string();
            if state == "Failed" {
                failed.push((
                    schema["metadata"]["name"].as_str().unwrap().to_string(),
                    check.clone(),
                ));
            }
            states.insert(state);
        }
    }
    assert_eq!(
        states,
        ["Failed", "Pending", "Running", "Succeeded"]
            .map(String::from)
            .into()
    );
    assert_eq!(failed.len(), 1, "{failed:?}");
    let (name, check) = &failed[0];
    assert_eq!(name, "catalog-dev");
    let error = check["error"].as_str().unwrap();
    assert!(
        error.starts_with("ERROR: ") && error.contains("SQLSTATE"),
        "{error}"
    );

    // What the database has applied is as before: payments prod still at 0003, behind the code's 0004.
    let payments_prod = schemas
        .iter()
        .find(|s| s["metadata"]["name"] == "payments-prod")
        .unwrap();
    assert_eq!(payments_prod["status"]["appliedVersion"], "0003");
    let catalog_dev = schemas
        .iter()
        .find(|s| s["metadata"]["name"] == "catalog-dev")
        .unwrap();
    assert_eq!(catalog_dev["status"]["appliedVersion"], "0002");
}
