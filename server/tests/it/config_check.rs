//! `tower config check FILE`: the real binary reads a file as `tower serve --config FILE` would and names every
//! problem with its key, or says the file is ok.

use std::path::Path;
use std::process::{Command, Output};

const GOOD: &str = "
organisation: acme
clusters:
  - name: management
    url: https://mgmt.example
    token: read-only-token
  - name: dev
    environment: dev
    context: dev
mimir:
  url: https://mimir.example/prometheus
";

/// Runs `tower config check` on `text` written to a file, with no `TOWER_*` override from the test's own
/// environment.
fn check(text: &str) -> (Output, String) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tower.yaml");
    std::fs::write(&file, text).unwrap();
    let output = run(&file);
    (output, file.display().to_string())
}

fn run(file: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tower"));
    command.args(["config", "check"]).arg(file);
    for (variable, _) in std::env::vars() {
        if variable.starts_with("TOWER_") {
            command.env_remove(variable);
        }
    }
    command.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_good_file_is_ok_and_exits_zero() {
    let (output, file) = check(GOOD);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{file}: ok\n")
    );
}

#[test]
fn every_invalid_value_is_named_by_its_key_not_only_the_first() {
    let bad = "
listen: nowhere
organisation: acme
clusters:
  - name: management
    url: https://mgmt.example
  - name: dev
    environment: dev
    url: ftp://dev.example
auth:
  session_hours: 0
mimir:
  url: mimir.example
";
    let (output, file) = check(bad);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("{file} has 4 problem(s)")), "{said}");
    for line in [
        "listen: must be an address",
        "clusters[1].url: must be an http:// or https:// URL",
        "auth.session_hours: must be at least 1",
        "mimir.url: must be an http:// or https:// URL",
    ] {
        assert!(said.contains(line), "{line} missing from:\n{said}");
    }
}

#[test]
fn every_unknown_key_wrong_type_and_missing_key_is_named_with_its_line() {
    let bad = "
clusters:
  - name: management
    url: https://mgmt.example
    colour: blue
  - name: dev
    environment: dev
    in_cluster: maybe
pipelines:
  history_per_service: many
";
    let (output, _) = check(bad);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    for line in [
        "organisation: line 1, column 1: is required and missing",
        "clusters[0].colour: line 5, column 5: Unknown field",
        "clusters[1].in_cluster: line 8, column 17: should be true or false",
        "pipelines.history_per_service: line 10, column 24: should be a whole number",
    ] {
        assert!(said.contains(line), "{line} missing from:\n{said}");
    }
}

#[test]
fn a_yaml_syntax_error_names_its_line_and_column() {
    let bad =
        "organisation: acme\nclusters:\n  - name: management\n    url: [https://mgmt.example\n";
    let (output, file) = check(bad);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.starts_with(&format!("{file}: line ")), "{said}");
    assert!(said.contains("column"), "{said}");
}

#[test]
fn a_missing_file_is_named_and_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("absent.yaml");
    let output = run(&file);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("cannot read {}", file.display())),
        "{said}"
    );
}
