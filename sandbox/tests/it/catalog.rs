//! The catalog the repositories make: every service's `catalog-info.yaml` in Backstage's format, except
//! ledger's, which is missing; and one repository only in the catalog, on the platform nowhere.
#![allow(clippy::unwrap_used)]

use jiff::Timestamp;
use sandbox::git::Repositories;
use sandbox::world::{
    CATALOG_ONLY, ENVIRONMENTS, GITOPS_REPOSITORY, Histories, ON_CALL, SERVICE_WITHOUT_CATALOG,
    SERVICES,
};
use serde_json::Value;

fn catalog_info(repositories: &Repositories, repo: &str) -> Option<Value> {
    let text = repositories
        .git(repo)
        .try_run(&["show", "main:catalog-info.yaml"])
        .unwrap()?;
    Some(serde_saphyr::from_str(&text).unwrap())
}

#[test]
fn every_service_but_one_describes_itself_in_backstages_format() {
    let repositories = Repositories::build().unwrap();
    for plan in SERVICES {
        if plan.name == SERVICE_WITHOUT_CATALOG {
            continue;
        }
        let entity = catalog_info(&repositories, plan.name).unwrap();
        assert_eq!(entity["apiVersion"], "backstage.io/v1alpha1");
        assert_eq!(entity["kind"], "Component");
        let metadata = &entity["metadata"];
        assert_eq!(metadata["name"], plan.name);
        assert_eq!(metadata["description"], plan.description);
        assert!(!metadata["tags"].as_array().unwrap().is_empty());
        let links = metadata["links"].as_array().unwrap();
        let titles: Vec<&str> = links.iter().map(|l| l["title"].as_str().unwrap()).collect();
        assert_eq!(
            titles,
            ["Documentation", "Runbook", "Dashboard"],
            "{}",
            plan.name
        );
        assert!(
            links
                .iter()
                .all(|l| l["url"].as_str().unwrap().starts_with("https://"))
        );
        let annotations = &metadata["annotations"];
        assert_eq!(annotations["backstage.io/techdocs-ref"], "dir:.");
        assert_eq!(
            annotations["github.com/project-slug"],
            format!("acme/{}", plan.name)
        );
        let on_call = ON_CALL.iter().find(|(service, _)| *service == plan.name);
        assert_eq!(
            annotations["pagerduty.com/service-id"].as_str(),
            on_call.map(|(_, id)| *id),
            "{}",
            plan.name
        );
        let spec = &entity["spec"];
        assert_eq!(spec["type"], "service");
        assert_eq!(spec["lifecycle"], "production");
        assert_eq!(spec["owner"], format!("group:{}", plan.team));
        assert!(spec["system"].is_string());
    }
    assert!(
        ON_CALL.iter().any(|(service, _)| *service == "payments"),
        "payments has someone on call"
    );
}

#[test]
fn ledger_is_a_component_whose_repository_has_no_catalog_file() {
    let repositories = Repositories::build().unwrap();
    assert_eq!(SERVICE_WITHOUT_CATALOG, "ledger");
    assert!(sandbox::world::service(SERVICE_WITHOUT_CATALOG).is_some());
    assert!(catalog_info(&repositories, SERVICE_WITHOUT_CATALOG).is_none());
    // The rest of its repository is as every service's.
    let files = repositories
        .git(SERVICE_WITHOUT_CATALOG)
        .run(&["ls-tree", "--name-only", "main"])
        .unwrap();
    assert!(files.lines().any(|f| f == "chart"), "{files}");
    assert!(
        repositories
            .git(GITOPS_REPOSITORY)
            .try_run(&["show", "main:platform/registry/ledger.yaml"])
            .unwrap()
            .is_some()
    );
}

#[test]
fn the_catalog_only_repository_is_in_the_catalog_and_nowhere_on_the_platform() {
    let repositories = Repositories::build().unwrap();
    let entity = catalog_info(&repositories, CATALOG_ONLY.name).unwrap();
    assert_eq!(entity["metadata"]["name"], CATALOG_ONLY.name);
    assert_eq!(
        entity["metadata"]["description"],
        "Finds products as you type"
    );
    assert_eq!(entity["spec"]["owner"], "group:shop");
    assert_eq!(entity["spec"]["lifecycle"], "experimental");
    assert_eq!(entity["spec"]["type"], "service");
    let tags: Vec<&str> = entity["metadata"]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tags, CATALOG_ONLY.tags);
    let links = entity["metadata"]["links"].as_array().unwrap();
    assert!(links.iter().any(
        |l| l["title"] == "Documentation" && l["url"].as_str().unwrap().starts_with("https://")
    ));
    let log = sandbox::git::git_log(&repositories.path(CATALOG_ONLY.name), "main", None).unwrap();
    assert_eq!(log.len(), CATALOG_ONLY.commits.len());

    // Not a service of the plan, so nothing on the platform carries its name.
    assert!(sandbox::world::service(CATALOG_ONLY.name).is_none());
    let grep = repositories
        .git(GITOPS_REPOSITORY)
        .try_run(&["grep", "-l", CATALOG_ONLY.name, "main"])
        .unwrap();
    assert_eq!(grep, None, "application-repositories mentions it");
    let histories = Histories::synthetic();
    let base: Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
    let mut objects = sandbox::fixtures::management_objects(&histories, base);
    for environment in ENVIRONMENTS {
        objects.extend(sandbox::fixtures::workload_objects(
            environment,
            &histories,
            base,
        ));
    }
    let mentions: Vec<String> = objects
        .iter()
        .filter(|o| o.to_string().contains(CATALOG_ONLY.name))
        .map(|o| format!("{} {}", o["kind"], o["metadata"]["name"]))
        .collect();
    assert!(mentions.is_empty(), "{mentions:?}");
}

#[tokio::test]
async fn the_forge_lists_the_catalog_only_repository_with_its_description() {
    let forge = crate::forge::TestForge::start().await;
    let repo: Value = forge
        .http
        .get(forge.api(&format!("/repos/acme/{}", CATALOG_ONLY.name)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(repo["description"], CATALOG_ONLY.description);
    assert_eq!(repo["default_branch"], "main");
}
