//! The files of a service repository at each commit of its plan: code, a Helm chart, `catalog-info.yaml`
//! (Backstage's format; none for [`SERVICE_WITHOUT_CATALOG`]) and migrations; and the history of the
//! repository that is only in the catalog ([`crate::world::CATALOG_ONLY`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::stream::{CommitSpec, Signature, Stream};
use super::{Result, people, yaml};
use crate::world::{
    CatalogOnlyPlan, DAY, HOUR, ON_CALL, ORGANISATION, REGISTRY, SERVICE_WITHOUT_CATALOG,
    ServicePlan, Timeline, team,
};

/// The login of the team member who authored commit `index` of `plan`: members take turns.
pub fn author(plan: &ServicePlan, index: usize) -> &'static str {
    team(plan.team)
        .and_then(|t| t.members.get(index % t.members.len().max(1)).copied())
        .unwrap_or("root")
}

/// A planned commit as written into the stream.
pub struct Planned {
    /// Its fast-import mark.
    pub mark: usize,
    /// The author's login.
    pub author: &'static str,
    /// Commit time.
    pub time: i64,
    /// Migrations present at this commit, in order.
    pub migrations: Vec<String>,
}

/// Writes `plan`'s whole history onto `refs/heads/main` of `stream`.
pub fn write_history(
    stream: &mut Stream,
    plan: &ServicePlan,
    service_index: usize,
    timeline: &Timeline,
) -> Result<Vec<Planned>> {
    let mut planned = Vec::new();
    let mut migrations = Vec::new();
    let mut changelog = String::from("# Changelog\n\n");
    let mut previous = None;
    for (index, commit) in plan.commits.iter().enumerate() {
        let login = author(plan, index);
        let who = people::identity(login);
        let time = timeline.commit_time(service_index, index);
        let signature = Signature {
            name: who.name,
            email: who.email,
            time,
        };
        let mut files = if index == 0 {
            scaffold(plan)?
        } else {
            BTreeMap::new()
        };
        changelog.push_str(&format!("- {}\n", commit.message));
        files.insert("CHANGELOG.md".into(), changelog.clone().into_bytes());
        if index > 0 {
            let (path, content) = feature_file(plan, commit.message);
            files.insert(path, content.into_bytes());
        }
        if let Some(file) = commit.migration {
            migrations.push(file.to_string());
            files.insert(
                format!("migrations/{file}"),
                migration_sql(plan.name, file).into_bytes(),
            );
        }
        let mark = stream.commit(&CommitSpec {
            branch: "refs/heads/main".into(),
            author: signature.clone(),
            committer: signature,
            message: commit.message.into(),
            from: previous,
            merge: None,
            files,
        });
        previous = Some(mark);
        planned.push(Planned {
            mark,
            author: login,
            time,
            migrations: migrations.clone(),
        });
    }
    Ok(planned)
}

/// Backstage's catalog entity for a service.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CatalogInfo {
    api_version: &'static str,
    kind: &'static str,
    metadata: CatalogMetadata,
    spec: CatalogSpec,
}

#[derive(Serialize)]
struct CatalogMetadata {
    name: String,
    description: String,
    annotations: BTreeMap<&'static str, String>,
    tags: Vec<String>,
    links: Vec<CatalogLink>,
}

/// One of `metadata.links`.
#[derive(Serialize)]
struct CatalogLink {
    url: String,
    title: &'static str,
    icon: &'static str,
    #[serde(rename = "type")]
    type_: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CatalogSpec {
    #[serde(rename = "type")]
    type_: &'static str,
    lifecycle: &'static str,
    owner: String,
    system: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<String>,
}

/// The catalog system a team's services belong to.
fn system(team: &str) -> &'static str {
    match team {
        "payments" => "payments",
        "shop" => "storefront",
        _ => "discovery",
    }
}

/// The documentation link every catalog entry has.
fn docs_link(name: &str) -> CatalogLink {
    CatalogLink {
        url: format!("https://docs.acme.example/services/{name}"),
        title: "Documentation",
        icon: "docs",
        type_: "docs",
    }
}

/// The annotations every repository's catalog entry has: where its source and TechDocs are.
fn base_annotations(name: &str) -> BTreeMap<&'static str, String> {
    [
        ("github.com/project-slug", format!("{ORGANISATION}/{name}")),
        ("backstage.io/techdocs-ref", "dir:.".to_string()),
        (
            "backstage.io/source-location",
            format!("url:https://github.com/{ORGANISATION}/{name}/tree/main/"),
        ),
    ]
    .into()
}

/// A service's `catalog-info.yaml`: Backstage's Component with its description, tags, links (docs,
/// runbook, dashboard), annotations (source, TechDocs, the Kubernetes selector, and PagerDuty for the
/// services in [`ON_CALL`]), type, lifecycle, owner, system and dependencies.
fn catalog_info(plan: &ServicePlan) -> CatalogInfo {
    let mut annotations = base_annotations(plan.name);
    annotations.insert(
        "backstage.io/kubernetes-label-selector",
        format!("{}={}", shared::crd::COMPONENT_LABEL, plan.name),
    );
    if let Some((_, id)) = ON_CALL.iter().find(|(service, _)| *service == plan.name) {
        annotations.insert("pagerduty.com/service-id", (*id).to_string());
    }
    let mut tags = vec![language(plan).to_string(), system(plan.team).to_string()];
    if plan.database {
        tags.push("postgres".into());
    }
    CatalogInfo {
        api_version: "backstage.io/v1alpha1",
        kind: "Component",
        metadata: CatalogMetadata {
            name: plan.name.into(),
            description: plan.description.into(),
            annotations,
            tags,
            links: vec![
                docs_link(plan.name),
                CatalogLink {
                    url: format!("https://runbooks.acme.example/{}", plan.name),
                    title: "Runbook",
                    icon: "help",
                    type_: "runbook",
                },
                CatalogLink {
                    url: format!("https://grafana.acme.example/d/{0}/{0}-overview", plan.name),
                    title: "Dashboard",
                    icon: "dashboard",
                    type_: "dashboard",
                },
            ],
        },
        spec: CatalogSpec {
            type_: "service",
            lifecycle: "production",
            owner: format!("group:{}", plan.team),
            system: system(plan.team),
            depends_on: plan
                .depends_on
                .iter()
                .map(|d| format!("component:{d}"))
                .collect(),
        },
    }
}

/// A Helm chart's `Chart.yaml`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChartYaml {
    api_version: &'static str,
    name: String,
    description: String,
    #[serde(rename = "type")]
    type_: &'static str,
    version: &'static str,
    app_version: &'static str,
}

/// The chart's default values; the release operator's derived values file overrides the image tag.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ChartValues {
    replica_count: u32,
    image: ImageValues,
    service: ServiceValues,
    ingress: IngressValues,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImageValues {
    repository: String,
    tag: String,
    pull_policy: &'static str,
}

#[derive(Serialize)]
struct ServiceValues {
    port: u16,
}

#[derive(Serialize)]
struct IngressValues {
    host: String,
}

/// The files of the scaffold commit.
fn scaffold(plan: &ServicePlan) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    if plan.name != SERVICE_WITHOUT_CATALOG {
        files.insert(
            "catalog-info.yaml".into(),
            yaml(&catalog_info(plan))?.into_bytes(),
        );
    }
    let chart = ChartYaml {
        api_version: "v2",
        name: plan.name.into(),
        description: plan.description.into(),
        type_: "application",
        version: "0.1.0",
        app_version: "1.0.0",
    };
    files.insert("chart/Chart.yaml".into(), yaml(&chart)?.into_bytes());
    let values = ChartValues {
        replica_count: 2,
        image: ImageValues {
            repository: format!("{REGISTRY}/{}", plan.name),
            tag: String::new(),
            pull_policy: "IfNotPresent",
        },
        service: ServiceValues { port: 8080 },
        ingress: IngressValues {
            host: plan.host.into(),
        },
    };
    files.insert("chart/values.yaml".into(), yaml(&values)?.into_bytes());
    // Helm templates are templates by nature: they are the chart's source, not data this sandbox emits.
    files.insert(
        "chart/templates/deployment.yaml".into(),
        DEPLOYMENT_TEMPLATE.as_bytes().to_vec(),
    );
    files.insert(
        "chart/templates/service.yaml".into(),
        SERVICE_TEMPLATE.as_bytes().to_vec(),
    );
    files.insert(
        "README.md".into(),
        format!(
            "# {}\n\n{}\n\nOwned by the {} team. Scaffolded from `{}` {}.\n",
            plan.name,
            plan.description,
            plan.team,
            plan.template,
            crate::world::TEMPLATE_VERSION
        )
        .into_bytes(),
    );
    files.insert(
        "docs/index.md".into(),
        format!("# {}\n\n{}\n", plan.name, plan.description).into_bytes(),
    );
    files.insert("Dockerfile".into(), dockerfile(plan).into_bytes());
    for (path, content) in entry_point(plan) {
        files.insert(path, content.into_bytes());
    }
    Ok(files)
}

fn language(plan: &ServicePlan) -> &'static str {
    match plan.template {
        "node-service" => "node",
        "rust-service" => "rust",
        "python-service" => "python",
        _ => "go",
    }
}

fn dockerfile(plan: &ServicePlan) -> String {
    match language(plan) {
        "node" => "FROM node:22-alpine\nWORKDIR /app\nCOPY . .\nRUN npm ci --omit=dev\nCMD [\"node\", \"src/index.js\"]\n".into(),
        "rust" => "FROM rust:1.88 AS build\nWORKDIR /src\nCOPY . .\nRUN cargo build --release\n\nFROM gcr.io/distroless/cc\nCOPY --from=build /src/target/release/service /service\nCMD [\"/service\"]\n".into(),
        "python" => "FROM python:3.12-slim\nWORKDIR /app\nCOPY . .\nRUN pip install .\nCMD [\"python\", \"-m\", \"app.main\"]\n".into(),
        _ => "FROM golang:1.23 AS build\nWORKDIR /src\nCOPY . .\nRUN go build -o /service ./cmd/server\n\nFROM gcr.io/distroless/static\nCOPY --from=build /service /service\nCMD [\"/service\"]\n".into(),
    }
}

fn entry_point(plan: &ServicePlan) -> Vec<(String, String)> {
    let name = plan.name;
    let description = plan.description;
    match language(plan) {
        "node" => vec![
            (
                "package.json".into(),
                format!(
                    "{{\n  \"name\": \"{name}\",\n  \"version\": \"1.0.0\",\n  \"main\": \"src/index.js\"\n}}\n"
                ),
            ),
            (
                "src/index.js".into(),
                format!(
                    "// {name}: {description}\nconst http = require('http');\nhttp.createServer((req, res) => res.end('ok')).listen(8080);\n"
                ),
            ),
        ],
        "rust" => vec![
            (
                "Cargo.toml".into(),
                format!("[package]\nname = \"{name}\"\nversion = \"1.0.0\"\nedition = \"2024\"\n"),
            ),
            (
                "src/main.rs".into(),
                format!(
                    "//! {name}: {description}\n\nfn main() {{\n    println!(\"listening on :8080\");\n}}\n"
                ),
            ),
        ],
        "python" => vec![
            (
                "pyproject.toml".into(),
                format!("[project]\nname = \"{name}\"\nversion = \"1.0.0\"\n"),
            ),
            (
                "app/main.py".into(),
                format!(
                    "\"\"\"{name}: {description}\"\"\"\n\n\ndef main():\n    print(\"listening on :8080\")\n"
                ),
            ),
        ],
        _ => vec![
            (
                "go.mod".into(),
                format!("module github.com/{ORGANISATION}/{name}\n\ngo 1.22\n"),
            ),
            (
                "cmd/server/main.go".into(),
                format!(
                    "// Command server runs {name}: {description}\npackage main\n\nimport \"net/http\"\n\nfunc main() {{\n\thttp.ListenAndServe(\":8080\", nil)\n}}\n"
                ),
            ),
        ],
    }
}

/// Writes the history of the repository that is only in the catalog onto `refs/heads/main` of `stream`:
/// a few commits by its team's members, the last two days before the start.
pub fn write_catalog_only_history(
    stream: &mut Stream,
    plan: &CatalogOnlyPlan,
    timeline: &Timeline,
) -> Result<()> {
    let members = team(plan.team).map_or(&["root"][..], |t| t.members);
    let mut previous = None;
    let mut changelog = String::from("# Changelog\n\n");
    for (index, message) in plan.commits.iter().enumerate() {
        let login = members[index % members.len()];
        let who = people::identity(login);
        let days_before = (plan.commits.len() - index + 1) as i64;
        let signature = Signature {
            name: who.name,
            email: who.email,
            time: timeline.start().as_second() - days_before * DAY - 3 * HOUR,
        };
        let mut files = if index == 0 {
            catalog_only_scaffold(plan)?
        } else {
            BTreeMap::new()
        };
        changelog.push_str(&format!("- {message}\n"));
        files.insert("CHANGELOG.md".into(), changelog.clone().into_bytes());
        if index > 0 {
            let slug = slug(message);
            files.insert(
                format!("src/{slug}.ts"),
                format!("// {message}\nexport function {slug}(): boolean {{\n  return true;\n}}\n")
                    .into_bytes(),
            );
        }
        let mark = stream.commit(&CommitSpec {
            branch: "refs/heads/main".into(),
            author: signature.clone(),
            committer: signature,
            message: (*message).into(),
            from: previous,
            merge: None,
            files,
        });
        previous = Some(mark);
    }
    Ok(())
}

/// The first commit of [`crate::world::CATALOG_ONLY`]: its catalog entry, a README, docs and a TypeScript entry point;
/// no chart, since nothing deploys it yet.
fn catalog_only_scaffold(plan: &CatalogOnlyPlan) -> Result<BTreeMap<String, Vec<u8>>> {
    let catalog = CatalogInfo {
        api_version: "backstage.io/v1alpha1",
        kind: "Component",
        metadata: CatalogMetadata {
            name: plan.name.into(),
            description: plan.description.into(),
            annotations: base_annotations(plan.name),
            tags: plan.tags.iter().map(|t| t.to_string()).collect(),
            links: vec![docs_link(plan.name)],
        },
        spec: CatalogSpec {
            type_: "service",
            lifecycle: plan.lifecycle,
            owner: format!("group:{}", plan.team),
            system: system(plan.team),
            depends_on: vec!["component:catalog".into()],
        },
    };
    let name = plan.name;
    let description = plan.description;
    let mut files = BTreeMap::new();
    files.insert("catalog-info.yaml".into(), yaml(&catalog)?.into_bytes());
    files.insert(
        "README.md".into(),
        format!(
            "# {name}\n\n{description}.\n\nOwned by the {} team. An experiment: not on the platform yet.\n",
            plan.team
        )
        .into_bytes(),
    );
    files.insert(
        "docs/index.md".into(),
        format!("# {name}\n\n{description}.\n").into_bytes(),
    );
    files.insert(
        "package.json".into(),
        format!(
            "{{\n  \"name\": \"{name}\",\n  \"version\": \"0.1.0\",\n  \"main\": \"dist/index.js\"\n}}\n"
        )
        .into_bytes(),
    );
    files.insert(
        "src/index.ts".into(),
        format!("// {name}: {description}.\nexport const port = 8080;\n").into_bytes(),
    );
    Ok(files)
}

/// The first words of a commit message as an identifier (`add_card_authorisation`).
fn slug(message: &str) -> String {
    message
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(4)
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .join("_")
}

/// The source file a feature commit adds, named after its message.
fn feature_file(plan: &ServicePlan, message: &str) -> (String, String) {
    let slug = slug(message);
    match language(plan) {
        "node" => (
            format!("src/{slug}.js"),
            format!("// {message}\nmodule.exports = function {slug}() {{ return true; }};\n"),
        ),
        "rust" => (
            format!("src/{slug}.rs"),
            format!("//! {message}\n\npub fn {slug}() -> bool {{\n    true\n}}\n"),
        ),
        "python" => (
            format!("app/{slug}.py"),
            format!("\"\"\"{message}\"\"\"\n\n\ndef {slug}():\n    return True\n"),
        ),
        _ => (
            format!("internal/{}/{slug}.go", plan.name),
            format!(
                "// {message}\npackage {}\n\nfunc {}() bool {{ return true }}\n",
                plan.name,
                slug.replace('_', "")
            ),
        ),
    }
}

fn migration_sql(service: &str, file: &str) -> String {
    let what = file
        .split_once('_')
        .map(|(_, rest)| rest.trim_end_matches(".sql").replace('_', " "))
        .unwrap_or_default();
    format!("-- {service}: {what}\nBEGIN;\n-- {file}\nCOMMIT;\n")
}

const DEPLOYMENT_TEMPLATE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    platform.tower.dev/component: {{ .Chart.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Chart.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
        platform.tower.dev/component: {{ .Chart.Name }}
    spec:
      containers:
        - name: {{ .Chart.Name }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - containerPort: {{ .Values.service.port }}
"#;

const SERVICE_TEMPLATE: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    app.kubernetes.io/name: {{ .Chart.Name }}
  ports:
    - port: 80
      targetPort: {{ .Values.service.port }}
"#;
