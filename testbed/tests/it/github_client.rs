//! A second GitHub client against the sandbox's forge: go-github (`testbed/github-client`, built by
//! `cargo xtask kube build` into `target/kube/bin/`), a client Tower's authors did not write, working as a
//! GitHub App does — JWT, installation token — and reading every answer with its own types. What it prints
//! is checked against the forge's git repositories. Skipped without the binary, except on CI, where that
//! fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use sandbox::forge::Forge;
use sandbox::world::{GITOPS_REPOSITORY, ORGANISATION};

/// The client, once built; `None` (the test skips) off CI without it.
fn client() -> Option<PathBuf> {
    let path = testbed::bin_dir().join("github-client");
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing on CI: `cargo xtask kube build` must have built it",
        path.display()
    );
    eprintln!(
        "skipped: {} is missing (`cargo xtask kube build`)",
        path.display()
    );
    None
}

/// Runs the client as the demo App against the forge at `base_url`, replacing `replace` in `file` with
/// `autoDeploy: false` on branch `go-github`, with lists of two a page.
async fn run(client: &Path, base_url: &str, file: &str, replace: &str) -> Output {
    let (app_id, private_key) = Forge::demo_app();
    let mut command = Command::new(client);
    command
        .args(["-base-url", base_url, "-app-id", &app_id.to_string()])
        .args([
            "-org",
            ORGANISATION,
            "-repo",
            GITOPS_REPOSITORY,
            "-file",
            file,
        ])
        .args(["-replace", replace, "-with", "autoDeploy: false"])
        .args(["-branch", "go-github", "-per-page", "2", "-wait", "45s"])
        .env("GITHUB_APP_PRIVATE_KEY", private_key);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap());
    tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .expect("github-client did not finish within two minutes")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn go_github_as_the_app_pages_through_repositories_and_commits_and_follows_a_pull_request_to_its_review()
 {
    let Some(client) = client() else { return };
    let sandbox =
        sandbox::Sandbox::start_with(sandbox::Options::new("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
    let release = "platform/environments/dev/payments-release.yaml";
    let base_url = format!("{}/github/", sandbox.url());

    // A file without the text to replace is a mismatch: exit 1, saying so, before anything is written.
    let refused = run(&client, &base_url, release, "autoDeploy: sometimes").await;
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.starts_with(&format!(
            "mismatch: contents/{release} has no \"autoDeploy: sometimes\""
        )),
        "{said}"
    );

    // A change the forge's CI passes, so the demo reviewer approves it.
    let output = run(&client, &base_url, release, "autoDeploy: true").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "github-client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    println!("{stdout}");
    let line = |prefix: &str| -> String {
        stdout
            .lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"))
            .to_string()
    };
    let number_before = |line: &str, word: &str| -> usize {
        line.split_whitespace()
            .zip(line.split_whitespace().skip(1))
            .find(|(_, next)| *next == word)
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("no number before `{word}` in `{line}`"))
    };

    let git = sandbox.forge().repositories().git(GITOPS_REPOSITORY);
    // Every repository of the organisation, over several pages of two.
    let on_disk = std::fs::read_dir(sandbox.forge().repositories().root().join(ORGANISATION))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".git")
        })
        .count();
    let repositories = line("repositories: ");
    assert_eq!(
        number_before(&repositories, "over"),
        on_disk,
        "{repositories}"
    );
    assert!(number_before(&repositories, "pages") >= 2, "{repositories}");

    // The file as the blob on main.
    let blob = git.run(&["rev-parse", &format!("main:{release}")]).unwrap();
    assert!(
        line("file: ").starts_with(&format!("file: {release} blob {}", blob.trim())),
        "{stdout}"
    );

    // The pull request's head is the branch's commit, which changed the file as asked.
    let head = git.resolve("refs/heads/go-github").unwrap().unwrap();
    let pull = line("pull: #");
    assert!(
        pull.ends_with(&format!("go-github -> main at {head} by tower-app[bot]")),
        "{pull}"
    );
    let changed = git.run(&["show", &format!("{head}:{release}")]).unwrap();
    assert!(changed.contains("autoDeploy: false"), "{changed}");

    assert_eq!(
        line("combined status: "),
        "combined status: success, 1 status"
    );
    assert_eq!(
        line("check: "),
        "check: tower-ci / validate completed success"
    );
    assert_eq!(line("review: "), "review: APPROVED by grace");

    // Every commit of main, over pages of two.
    let commits = line("commits: ");
    let on_main: usize = git
        .run(&["rev-list", "--count", "main"])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(number_before(&commits, "over"), on_main, "{commits}");
    assert!(number_before(&commits, "pages") >= 2, "{commits}");
    assert_eq!(stdout.lines().last(), Some("ok"));
}
