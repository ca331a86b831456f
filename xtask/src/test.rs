//! `cargo xtask test`: everything CI checks, in order, stopping at the first failure, ending with
//! one `summary: <P> passed, <F> failed, <S> skipped` line over Rust and Playwright tests, and failing if the
//! run left a process or temporary folder of Tower's behind (see [`crate::leftovers`]).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::dist;
use crate::leftovers::{self, Owned};
use crate::util::{self, repo_root};

/// Where Debian's Chromium lives; `end2end/playwright.config.ts` launches it from here.
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the leftover check waits for processes that are still stopping when the last step returns.
const SETTLE: Duration = Duration::from_secs(10);

/// Test counts, summed over every runner.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Tests that passed (Playwright's flaky ones included: they passed on retry).
    pub passed: u64,
    /// Tests that failed or were interrupted.
    pub failed: u64,
    /// Ignored Rust tests and skipped or not-run Playwright tests.
    pub skipped: u64,
    /// Playwright tests that needed a retry; reported separately because a flaky test is a bug.
    pub flaky: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, other: Self) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
        self.flaky += other.flaky;
    }
}

/// Runs every check; `skip_e2e` leaves out the browser build and Playwright for quick local runs.
pub fn test(skip_e2e: bool) -> Result<()> {
    let mut counts = Counts::default();
    let mut timings: Vec<(&str, Duration)> = Vec::new();
    let before = Owned::now();
    let outcome = run_steps(skip_e2e, &mut counts, &mut timings);
    let left = left_over(&before);

    println!();
    for (name, took) in &timings {
        println!("  {:>7.1}s  {name}", took.as_secs_f64());
    }
    if counts.flaky > 0 {
        println!(
            "warning: {} flaky Playwright test(s) — a flaky test is a bug",
            counts.flaky
        );
    }
    println!("left behind: {left}");
    println!(
        "summary: {} passed, {} failed, {} skipped",
        counts.passed, counts.failed, counts.skipped
    );
    outcome?;
    if counts.failed > 0 {
        bail!("{} test(s) failed", counts.failed);
    }
    if !left.is_empty() {
        bail!("the run left processes or temporary folders of Tower's behind");
    }
    Ok(())
}

/// What the run left that was not there before it, once stopping processes had [`SETTLE`] to go.
fn left_over(before: &Owned) -> Owned {
    let deadline = Instant::now() + SETTLE;
    loop {
        let left = Owned::now().since(before);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `TMPDIR` a step starting Tower runs with, created if missing.
fn step_tmpdir(dir: &Path) -> Result<&Path> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// A step's name and what it runs; returns the counts it observed, if it runs tests.
type Step = (&'static str, Box<dyn FnOnce() -> Result<Counts>>);

fn run_steps(
    skip_e2e: bool,
    counts: &mut Counts,
    timings: &mut Vec<(&'static str, Duration)>,
) -> Result<()> {
    // The Go build of kube-apiserver and etcd (minutes when cold, mostly downloading and compiling on all
    // cores) runs beside the checks below, which leave cores idle between crates; the step before
    // `cargo test` waits for it.
    let kube_build = std::thread::spawn(crate::kube::test_step);
    let mut steps: Vec<Step> = vec![
        ("fmt", Box::new(|| cargo_step(&["fmt", "--all", "--check"]))),
        (
            "clippy (native)",
            // `--workspace` here and for `cargo test`: the same package set unifies features the
            // same way, so the test step reuses clippy's dependency builds instead of redoing them.
            Box::new(|| {
                cargo_step(&[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--",
                    "-D",
                    "warnings",
                ])
            }),
        ),
        (
            "clippy (app, wasm32)",
            Box::new(|| {
                cargo_step(&[
                    "clippy",
                    "-p",
                    "app",
                    "--target",
                    "wasm32-unknown-unknown",
                    "--",
                    "-D",
                    "warnings",
                ])
            }),
        ),
        (
            "server without the sandbox",
            Box::new(server_without_sandbox),
        ),
        (
            "kube-apiserver and etcd (built alongside)",
            Box::new(move || {
                kube_build
                    .join()
                    .map_err(|_| anyhow::anyhow!("the kube-apiserver build panicked"))??;
                Ok(Counts::default())
            }),
        ),
        ("cargo test", Box::new(cargo_test)),
        (
            "kubernetes manifests",
            Box::new(|| crate::manifests::validate().map(|()| Counts::default())),
        ),
    ];
    if !skip_e2e {
        steps.push((
            "dist",
            Box::new(|| dist::dist(None).map(|()| Counts::default())),
        ));
        steps.push((
            "build server",
            // The `tower` that `cargo test --workspace` built for the server's integration tests, with the
            // features that step unified: `cargo build -p server` would unify them differently and rebuild
            // a hundred crates. After the test step this is a no-op; it stays so the binary is never stale.
            Box::new(|| cargo_step(&["test", "--workspace", "--no-run"])),
        ));
        steps.push(("playwright", Box::new(playwright)));
        steps.push((
            "image and its smoke test",
            // From the dist/ built above; skipped without buildah or musl-gcc, except on CI.
            Box::new(|| {
                crate::image::test_step().map(|ran| Counts {
                    skipped: u64::from(!ran),
                    ..Counts::default()
                })
            }),
        ));
    }

    let total = steps.len();
    for (i, (name, step)) in steps.into_iter().enumerate() {
        println!("\n==> [{}/{total}] {name}", i + 1);
        let started = Instant::now();
        let result = step();
        timings.push((name, started.elapsed()));
        let step_counts = result.with_context(|| format!("step `{name}` failed"))?;
        *counts += step_counts;
        if step_counts.failed > 0 {
            bail!("step `{name}`: {} test(s) failed", step_counts.failed);
        }
    }
    Ok(())
}

fn cargo_step(args: &[&str]) -> Result<Counts> {
    util::run(&mut util::cargo(args))?;
    Ok(Counts::default())
}

/// The production `tower` (`--no-default-features`) must not link the sandbox: its dependency tree has no
/// `sandbox` package, and it still compiles without warnings (the feature gates stay complete).
fn server_without_sandbox() -> Result<Counts> {
    let tree = util::read(&mut util::cargo([
        "tree",
        "-p",
        "server",
        "--no-default-features",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]))?;
    let linked = packages_named(&tree, "sandbox");
    if linked > 0 {
        bail!("`cargo tree -p server --no-default-features` lists `sandbox` {linked} time(s)");
    }
    cargo_step(&[
        "clippy",
        "-p",
        "server",
        "--no-default-features",
        "--",
        "-D",
        "warnings",
    ])
}

/// How many lines of a `cargo tree --prefix none --format {p}` listing name the package `name`.
fn packages_named(tree: &str, name: &str) -> usize {
    tree.lines()
        .filter(|line| line.split_whitespace().next() == Some(name))
        .count()
}

/// `cargo test --workspace`, streamed to the terminal and parsed for its result lines.
///
/// The real-API-server tests (`testbed`) spend most of their time waiting on servers starting, watches
/// backing off and faults healing, as do many of the server's: so once everything is compiled, testbed's test
/// binaries run beside `cargo test` of the rest rather than after it. They run as plain executables, since a
/// second `cargo test` would wait for the first's lock on the target folder.
fn cargo_test() -> Result<Counts> {
    let [tmp, _] = leftovers::temp_dirs();
    let tmp = step_tmpdir(&tmp)?.to_path_buf();
    let testbed_binaries = compile_tests()?;
    let testbed = {
        let tmp = tmp.clone();
        std::thread::spawn(move || -> Result<Counts> {
            let mut counts = Counts::default();
            for binary in testbed_binaries {
                let mut run = util::command(&binary);
                run.current_dir(repo_root().join("testbed"))
                    .env("TMPDIR", &tmp);
                counts += counted(&util::tee(&mut run)?, "a testbed test binary")?;
            }
            Ok(counts)
        })
    };
    let mut test = util::cargo(["test", "--workspace", "--exclude", "testbed"]);
    test.env("TMPDIR", &tmp);
    let rest = util::tee(&mut test).and_then(|out| counted(&out, "`cargo test`"));
    let testbed = testbed
        .join()
        .map_err(|_| anyhow::anyhow!("running testbed's tests panicked"))?;
    let mut counts = rest?;
    counts += testbed?;
    Ok(counts)
}

/// The counts of a test run's output; an error when it failed without reporting a failing test (a compile
/// error, a crashed test binary).
fn counted(out: &util::Teed, what: &str) -> Result<Counts> {
    let counts = parse_cargo_test(&out.stdout);
    if !out.success && counts.failed == 0 {
        bail!("{what} failed before reporting a failing test");
    }
    Ok(counts)
}

/// Compiles every test of the workspace; returns the paths of testbed's test executables.
fn compile_tests() -> Result<Vec<std::path::PathBuf>> {
    let json = util::read(&mut util::cargo([
        "test",
        "--workspace",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]))?;
    Ok(json
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact"
                && message["profile"]["test"] == true
                && message["package_id"]
                    .as_str()
                    .is_some_and(|id| id.contains("/testbed#") || id.contains("testbed@"))
        })
        .filter_map(|message| message["executable"].as_str().map(std::path::PathBuf::from))
        .collect())
}

/// Sums `test result: ok. N passed; M failed; K ignored; …` lines (unit, integration, doc tests).
fn parse_cargo_test(stdout: &str) -> Counts {
    let mut counts = Counts::default();
    for line in stdout.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            continue;
        };
        for part in rest.split([';', '.']) {
            let mut words = part.split_whitespace();
            let (Some(n), Some(what)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => counts.passed += n,
                "failed" => counts.failed += n,
                "ignored" => counts.skipped += n,
                _ => {}
            }
        }
    }
    counts
}

/// Playwright against the freshly built server binary and `dist/`: the main suite (sandbox at speed 10),
/// then the demo's own (a fresh sandbox at real speed, as `cargo xtask run` shows it).
fn playwright() -> Result<Counts> {
    let tower = repo_root().join("target/debug/tower");
    let mut counts = playwright_with("playwright.config.ts", &tower)?;
    counts += playwright_with("playwright.demo.config.ts", &tower)?;
    Ok(counts)
}

fn playwright_with(config: &str, tower: &Path) -> Result<Counts> {
    let out = util::tee(&mut playwright_command(config, tower)?)?;
    let counts = parse_playwright(&out.stdout);
    if !out.success && counts.failed == 0 {
        // Not a test: the web server did not start, or a global teardown failed (`secrets-teardown.ts`
        // fails the run when a secret shows up in Tower's log or a recorded response).
        bail!(
            "Playwright failed outside any test (its web server, or a global teardown such as the secrets check)"
        );
    }
    Ok(counts)
}

/// `npx playwright test --config <config>` in `end2end/`, against `tower` and `dist/`, in Debian's Chromium
/// (installed first when missing); the benchmarks run their browser half through it too.
pub fn playwright_command(config: &str, tower: &Path) -> Result<std::process::Command> {
    ensure_chromium()?;
    util::ensure_node_modules()?;
    // Chromium leaves profile folders in TMPDIR; keep them inside the (ignored) repo scratch space, where the
    // leftover check also looks for the sandbox's folders.
    let [_, tmp] = leftovers::temp_dirs();
    let mut npx = util::command("npx");
    npx.args(["playwright", "test", "--config", config])
        .current_dir(util::end2end_dir())
        .env("TMPDIR", step_tmpdir(&tmp)?)
        .env("TOWER_BIN", tower)
        .env("TOWER_ASSETS", repo_root().join("dist"));
    Ok(npx)
}

/// Reads Playwright's closing summary (`  3 passed (4.1s)`, `  1 failed`, `  2 skipped`,
/// `  1 flaky`, `  1 did not run`, `  1 interrupted`), as the list, line and dot reporters print it.
fn parse_playwright(stdout: &str) -> Counts {
    let mut counts = Counts::default();
    for line in stdout.lines() {
        let line = line.trim();
        let Some((n, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let what = rest.split(" (").next().unwrap_or(rest).trim();
        match what {
            "passed" => counts.passed += n,
            "flaky" => {
                counts.passed += n;
                counts.flaky += n;
            }
            "failed" | "interrupted" => counts.failed += n,
            "skipped" | "did not run" => counts.skipped += n,
            _ => {}
        }
    }
    counts
}

/// Makes sure Debian's Chromium is installed, installing it when running as root (CI images).
fn ensure_chromium() -> Result<()> {
    if Path::new(CHROMIUM).exists() {
        return Ok(());
    }
    let uid = util::read(util::command("id").arg("-u")).context("checking the user id")?;
    if uid.trim() != "0" {
        bail!("{CHROMIUM} is missing; install it with `sudo apt-get install chromium`");
    }
    util::run(util::command("apt-get").arg("update"))?;
    util::run(
        util::command("apt-get")
            .args(["install", "-y", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_test_result_lines_are_summed_across_binaries_and_doctests() {
        let out = "\
running 3 tests
test a ... ok
test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

test result: FAILED. 4 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s
   Doc-tests shared
test result: ok. 0 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        let counts = parse_cargo_test(out);
        assert_eq!((counts.passed, counts.failed, counts.skipped), (7, 2, 4));
    }

    #[test]
    fn a_package_in_the_tree_is_found_by_its_exact_name() {
        let tree = "\
server v0.1.0 (/work/tower/server)
sandbox v0.1.0 (/work/tower/sandbox)
shared v0.1.0 (/work/tower/shared)
sandbox v0.1.0 (/work/tower/sandbox) (*)
";
        assert_eq!(packages_named(tree, "sandbox"), 2);
        // A path or another package's name containing the word is not the package.
        let tree = "server v0.1.0 (/home/sandbox/tower/server)\nsandbox-rs v1.0.0\n";
        assert_eq!(packages_named(tree, "sandbox"), 0);
    }

    #[test]
    fn test_names_that_look_like_counts_are_not_counted() {
        let out = "test passed_3_times ... ok\n";
        assert_eq!(parse_cargo_test(out), Counts::default());
    }

    #[test]
    fn playwright_summary_is_read_including_flaky_and_not_run() {
        let out = "\
Running 9 tests using 2 workers

  ✓  1 [chromium] › fleet.spec.ts:3:1 › guest sees the fleet (1.2s)
  ✘  2 [chromium] › releases.spec.ts:8:1 › promote opens a PR (3.0s)

  1 failed
    [chromium] › releases.spec.ts:8:1 › promote opens a PR
  1 flaky
    [chromium] › fleet.spec.ts:9:1 › live updates arrive
  2 skipped
  1 did not run
  4 passed (12.3s)
";
        let counts = parse_playwright(out);
        assert_eq!(
            counts,
            Counts {
                passed: 5,
                failed: 1,
                skipped: 3,
                flaky: 1
            }
        );
    }
}
