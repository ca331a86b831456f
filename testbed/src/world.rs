//! What goes onto the testbed's clusters: the CRDs (Tower's own from `deploy/crds/`, the upstream ones vendored
//! in `sandbox/tests/reference/`), the sandbox's fixture world copied object by object through kube-rs, and
//! Tower's generated RBAC from `deploy/kubernetes/`, with tokens of the service accounts it binds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::pinned_kind;
use kube::{Client, ResourceExt as _};
use sandbox::apiserver::ResourceType;
use serde_json::{Value, json};

/// The field manager of everything the testbed applies.
const MANAGER: &str = "tower-testbed";
/// How many objects of one type are created at once.
const CONCURRENCY: usize = 16;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    let testbed = Path::new(env!("CARGO_MANIFEST_DIR"));
    testbed.parent().unwrap_or(testbed).to_path_buf()
}

/// Every YAML document of the `.yaml` files in `dirs` (relative to the repository), in file order.
pub fn documents_in(dirs: &[&str]) -> Result<Vec<Value>> {
    let mut documents = Vec::new();
    for dir in dirs {
        let dir = repo_root().join(dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
            .collect();
        files.sort();
        for file in files {
            documents.extend(documents_of(&file)?);
        }
    }
    Ok(documents)
}

/// The YAML documents of one file (empty ones left out).
pub fn documents_of(file: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let documents: Vec<Value> = serde_saphyr::from_str_multiple(&text)
        .with_context(|| format!("parsing {}", file.display()))?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The CRDs the testbed installs: Tower's platform CRDs, the vendored upstream CRDs, and for each custom type
/// the sandbox serves that none of those defines (Argo CD's ApplicationSet and AppProject, Tekton's Task,
/// External Secrets' stores, Crossplane's own kinds and the claim, composite and managed kinds its providers
/// would generate) a CRD with the type's names that keeps any fields, as those projects' CRDs are not vendored.
pub fn crds(types: &[ResourceType]) -> Result<Vec<Value>> {
    let mut crds: Vec<Value> = documents_in(&[
        "deploy/crds",
        "sandbox/tests/reference/argocd",
        "sandbox/tests/reference/argo-rollouts",
        "sandbox/tests/reference/external-secrets",
        "sandbox/tests/reference/pyrra",
        "sandbox/tests/reference/tekton",
    ])?
    .into_iter()
    .filter(|document| document["kind"] == "CustomResourceDefinition")
    .collect();
    for ty in types {
        if ty.group.is_empty() || ty.group == "apps" {
            continue;
        }
        let defined = crds.iter().any(|crd| {
            crd["spec"]["group"] == ty.group.as_str()
                && crd["spec"]["names"]["plural"] == ty.plural.as_str()
        });
        if !defined {
            crds.push(open_crd(ty));
        }
    }
    Ok(crds)
}

/// A CRD for `ty` whose schema keeps any fields, with a status subresource.
fn open_crd(ty: &ResourceType) -> Value {
    let open = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{}.{}", ty.plural, ty.group) },
        "spec": {
            "group": ty.group,
            "names": {
                "kind": ty.kind,
                "listKind": format!("{}List", ty.kind),
                "plural": ty.plural,
                "singular": ty.kind.to_lowercase(),
            },
            "scope": if ty.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": ty.version,
                "served": true,
                "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": { "spec": open, "status": open },
                }},
            }],
        },
    })
}

/// Applies `crds` and waits until the server has established every one. A CRD the server rejects fails
/// with the server's message and the CRD's name.
pub async fn install_crds(client: &Client, crds: &[Value]) -> Result<()> {
    apply_documents(client, crds).await?;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        loop {
            let established = api.get(name).await.ok().is_some_and(|crd| {
                crd.status
                    .and_then(|status| status.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
            if established {
                break;
            }
            if Instant::now() > deadline {
                bail!("the CRD {name} was never established");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// The API resource of a type the sandbox serves.
pub fn api_resource(ty: &ResourceType) -> ApiResource {
    ApiResource {
        group: ty.group.clone(),
        version: ty.version.clone(),
        api_version: ty.api_version(),
        kind: ty.kind.clone(),
        plural: ty.plural.clone(),
    }
}

/// Copies a sandbox cluster's objects (as [`sandbox::apiserver::ClusterStore::objects`] lists them, namespaces
/// first) onto a real server: each is created without what the server assigns (uid, resourceVersion,
/// timestamps of its own), then its status is written through the status subresource where the create
/// dropped it, as the platform's controllers would.
pub async fn load(client: &Client, types: &[ResourceType], objects: Vec<Value>) -> Result<usize> {
    let mut count = 0;
    for ty in types {
        let api_version = ty.api_version();
        let of_type: Vec<Value> = objects
            .iter()
            .filter(|o| o["apiVersion"] == api_version.as_str() && o["kind"] == ty.kind.as_str())
            .cloned()
            .collect();
        count += of_type.len();
        let resource = api_resource(ty);
        futures::stream::iter(of_type)
            .map(|object| create_with_status(client, &resource, ty.namespaced, object))
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;
    }
    Ok(count)
}

async fn create_with_status(
    client: &Client,
    resource: &ApiResource,
    namespaced: bool,
    mut object: Value,
) -> Result<()> {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for assigned in [
            "resourceVersion",
            "uid",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            metadata.remove(assigned);
        }
    }
    let wanted_status = object.get("status").cloned();
    let dynamic: DynamicObject = serde_json::from_value(object)?;
    let dynamic = &dynamic;
    let name = dynamic.name_any();
    let api: Api<DynamicObject> = match dynamic.namespace() {
        Some(namespace) if namespaced => Api::namespaced_with(client.clone(), &namespace, resource),
        _ => Api::all_with(client.clone(), resource),
    };
    let what = || {
        format!(
            "{} {}/{}",
            resource.kind,
            dynamic.namespace().unwrap_or_default(),
            name
        )
    };
    let created = api
        .create(&PostParams::default(), dynamic)
        .await
        .with_context(|| format!("creating {}", what()))?;
    let stored = match wanted_status {
        Some(status) if created.data.get("status") != Some(&status) => {
            let mut with_status = created;
            with_status.data["status"] = status;
            api.replace_status(&name, &PostParams::default(), &with_status)
                .await
                .with_context(|| format!("writing the status of {}", what()))?
        }
        _ => created,
    };
    // A field the CRD's schema does not declare is pruned without an error: the fixture would then say
    // something the real server never stores, and Tower would read it only from the sandbox.
    for part in ["spec", "status"] {
        if let Some(pruned) = first_difference(dynamic.data.get(part), stored.data.get(part), part)
        {
            bail!(
                "the API server did not store {} as written: {pruned}",
                what()
            );
        }
    }
    Ok(())
}

/// Where `stored` lacks or changed what `wanted` says (`None` when it keeps all of it); defaults the server adds
/// are not differences.
fn first_difference(wanted: Option<&Value>, stored: Option<&Value>, path: &str) -> Option<String> {
    match (wanted, stored) {
        (None, _) => None,
        (Some(Value::Object(wanted)), Some(Value::Object(stored))) => {
            wanted.iter().find_map(|(key, value)| {
                first_difference(Some(value), stored.get(key), &format!("{path}.{key}"))
            })
        }
        (Some(Value::Array(wanted)), Some(Value::Array(stored)))
            if wanted.len() == stored.len() =>
        {
            wanted
                .iter()
                .zip(stored)
                .enumerate()
                .find_map(|(i, (w, s))| first_difference(Some(w), Some(s), &format!("{path}[{i}]")))
        }
        (Some(wanted), stored) if Some(wanted) == stored => None,
        (Some(wanted), Some(stored)) => Some(format!("{path} is {stored}, not {wanted}")),
        (Some(_), None) => Some(format!("{path} was dropped")),
    }
}

/// Applies any documents (namespaces, service accounts, roles and bindings), finding each kind's resource
/// through discovery. Secrets of type `service-account-token` are left out: no controller manager fills them;
/// [`token_for`] asks the server for a token instead.
pub async fn apply_documents(client: &Client, documents: &[Value]) -> Result<()> {
    // One discovery per kind, not per document: the CRDs alone are thirty documents of one kind.
    let mut discovered = std::collections::HashMap::new();
    for document in documents {
        if document["type"] == "kubernetes.io/service-account-token" {
            continue;
        }
        let api_version = document["apiVersion"].as_str().unwrap_or_default();
        let kind = document["kind"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, capabilities) = match discovered.get(&gvk) {
            Some(found) => found,
            None => {
                let found = pinned_kind(client, &gvk)
                    .await
                    .with_context(|| format!("discovering {api_version} {kind}"))?;
                discovered.entry(gvk).or_insert(found)
            }
        };
        let name = document["metadata"]["name"].as_str().unwrap_or_default();
        let api: Api<DynamicObject> = match document["metadata"]["namespace"].as_str() {
            Some(namespace) if capabilities.scope == kube::discovery::Scope::Namespaced => {
                Api::namespaced_with(client.clone(), namespace, resource)
            }
            _ => Api::all_with(client.clone(), resource),
        };
        api.patch(
            name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(document),
        )
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    }
    Ok(())
}

/// A token of the service account `namespace/name`, valid for a day, from the server's TokenRequest API.
pub async fn token_for(client: &Client, namespace: &str, name: &str) -> Result<String> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(24 * 60 * 60),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let answer = api
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .with_context(|| format!("requesting a token of {namespace}/{name}"))?;
    answer
        .status
        .and_then(|status| status.token)
        .context("the TokenRequest answer has no token")
}

/// Tower's generated read-only RBAC on the management cluster (`deploy/kubernetes/base`): its namespace,
/// service account and roles.
pub fn management_rbac() -> Result<Vec<Value>> {
    let base = repo_root().join("deploy/kubernetes/base");
    let mut documents = Vec::new();
    for file in [
        "namespace.yaml",
        "serviceaccount.yaml",
        "rbac-management.yaml",
    ] {
        documents.extend(documents_of(&base.join(file))?);
    }
    Ok(documents)
}

/// The service account [`management_rbac`] binds.
pub const MANAGEMENT_ACCOUNT: (&str, &str) = ("tower", "tower");

/// Tower's generated read-only RBAC on a workload cluster (`deploy/kubernetes/workload-cluster/rbac.yaml`).
pub fn workload_rbac() -> Result<Vec<Value>> {
    documents_of(&repo_root().join("deploy/kubernetes/workload-cluster/rbac.yaml"))
}

/// The service account [`workload_rbac`] binds.
pub const WORKLOAD_ACCOUNT: (&str, &str) = ("tower", "tower-reader");
