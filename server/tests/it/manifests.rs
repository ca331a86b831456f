//! `deploy/kubernetes/`: the kustomizations list every file, and what the Deployment hands Tower (the example
//! configuration, the environment) is what Tower reads. The roles are generated and drift-checked by
//! `server::fleet::watched`; `cargo xtask manifests --check` validates every file against Kubernetes' schemas.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_kustomization_lists_every_file_of_its_folder() {
    for folder in ["base", "overlays/example", "workload-cluster"] {
        let folder = dir().join(folder);
        let kustomization = yaml(&folder.join("kustomization.yaml"));
        let listed: BTreeSet<String> = kustomization["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            // Another kustomization (`../../base`) is a folder, not a file of this one.
            .filter(|r| !r.starts_with(".."))
            .map(str::to_string)
            .collect();
        let present: BTreeSet<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
            .collect();
        assert_eq!(listed, present, "{}", folder.display());
    }
}

#[test]
fn the_example_configuration_loads_with_the_secrets_the_deployment_references() {
    let deployment = yaml(&dir().join("base/deployment.yaml"));
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let env = container["env"].as_array().unwrap();
    let names: BTreeSet<&str> = env.iter().filter_map(|e| e["name"].as_str()).collect();
    // Every variable is one Tower (or kube-rs, for KUBECONFIG) reads.
    let known: BTreeSet<&str> = server::config::ENV_OVERRIDES
        .iter()
        .chain(server::config::ENV_ONLY.iter())
        .map(|(name, _)| *name)
        .chain(["KUBECONFIG"])
        .collect();
    assert!(names.is_subset(&known), "{names:?} ⊄ {known:?}");
    // The secrets come from a Secret by reference, never as values in the manifest.
    for secret in [
        "TOWER_GITHUB_APP_PRIVATE_KEY",
        "TOWER_GITHUB_CLIENT_SECRET",
        "TOWER_SESSION_SECRET",
        "TOWER_ARGOCD_TOKEN",
    ] {
        let var = env.iter().find(|e| e["name"] == secret).unwrap();
        assert!(
            var.get("value").is_none(),
            "{secret} is written in the manifest"
        );
        assert_eq!(var["valueFrom"]["secretKeyRef"]["name"], "tower-secrets");
    }

    // The ConfigMap's tower.yaml, with those variables set as the Secret would, is a valid configuration.
    let config_map = yaml(&dir().join("base/configmap.yaml"));
    let text = config_map["data"]["tower.yaml"].as_str().unwrap();
    let given = |name: &str| -> Option<String> {
        let var = env.iter().find(|e| e["name"] == name)?;
        match var["value"].as_str() {
            Some(value) => Some(value.to_string()),
            None if name == "TOWER_GITHUB_APP_PRIVATE_KEY" => {
                Some("-----BEGIN PRIVATE KEY-----\n…\n-----END PRIVATE KEY-----".into())
            }
            None => Some(format!("a {name} from tower-secrets")),
        }
    };
    let config = server::config::parse("configmap.yaml", text, given)
        .unwrap_or_else(|e| panic!("the example tower.yaml does not load: {e}"));
    // The port Tower listens on is the one the probes and the Service use.
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert!(
        config.listen.ends_with(&format!(":{port}")),
        "{}",
        config.listen
    );
    let management = config
        .clusters
        .iter()
        .find(|c| c.environment.is_none())
        .unwrap();
    assert!(management.in_cluster);
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"], "/readyz",
        "readiness is /readyz"
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
}
