//! Running child processes: every command is printed before it runs, starts in the repository
//! root, and loses the per-package variables `cargo run` gave xtask.

use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The repository root, fixed at compile time so `cargo xtask` works from any subdirectory.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ lives one level below the repository root")
}

/// Exact variables `cargo run` sets for xtask that must not reach inner cargo invocations.
const STRIPPED_VARS: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_BIN_NAME",
    "CARGO_CRATE_NAME",
];

/// Whether an inherited variable describes the xtask package rather than the environment.
///
/// Left in place, these leak into inner cargo runs; crates that read them (build scripts,
/// `option_env!`) then see values that differ from a plain `cargo build`, and both kinds of
/// build invalidate each other's fingerprints, so everything rebuilds every time.
fn is_stripped(name: &str) -> bool {
    STRIPPED_VARS.contains(&name) || name.starts_with("CARGO_PKG_")
}

/// A command for `program` that runs in the repository root without xtask's package variables.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(repo_root());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_stripped) {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Whether `program` is an executable file in a folder of `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// A `cargo` command with the given arguments (see [`command`]).
pub fn cargo<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = command("cargo");
    cmd.args(args);
    cmd
}

/// The path relative to the repository root when it lies inside it, for shorter messages.
pub fn display_path(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Prints the command as a shell-like line: `$ program args (in dir, with VAR=value)`.
pub fn announce(cmd: &Command) {
    let mut line = format!("$ {}", cmd.get_program().to_string_lossy());
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    let mut notes = Vec::new();
    if let Some(dir) = cmd.get_current_dir()
        && dir != repo_root()
    {
        notes.push(format!("in {}", display_path(dir)));
    }
    // Removed variables show up here as `None`; only the ones we set are worth printing.
    let set: Vec<String> = cmd
        .get_envs()
        .filter_map(|(name, value)| {
            value.map(|v| format!("{}={}", name.to_string_lossy(), v.to_string_lossy()))
        })
        .collect();
    if !set.is_empty() {
        notes.push(format!("with {}", set.join(" ")));
    }
    if !notes.is_empty() {
        line.push_str(&format!("  ({})", notes.join(", ")));
    }
    println!("{line}");
}

/// A short name for error messages: the program and its first argument.
fn short_name(cmd: &Command) -> String {
    let mut name = cmd.get_program().to_string_lossy().into_owned();
    if let Some(first) = cmd.get_args().next() {
        name.push(' ');
        name.push_str(&first.to_string_lossy());
    }
    name
}

/// Prints and runs the command with inherited stdio; fails when it exits unsuccessfully.
pub fn run(cmd: &mut Command) -> Result<()> {
    announce(cmd);
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{}`", short_name(cmd)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", short_name(cmd));
    }
    Ok(())
}

/// Prints and runs the command, returning its stdout; stderr still goes to the terminal.
pub fn read(cmd: &mut Command) -> Result<String> {
    announce(cmd);
    let output = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("could not start `{}`", short_name(cmd)))?;
    if !output.status.success() {
        bail!("`{}` failed ({})", short_name(cmd), output.status);
    }
    String::from_utf8(output.stdout)
        .with_context(|| format!("`{}` printed invalid UTF-8", short_name(cmd)))
}

/// What a teed command printed on stdout, and whether it succeeded.
pub struct Teed {
    /// Whether the process exited with status zero.
    pub success: bool,
    /// Everything it wrote to stdout, ANSI escapes removed.
    pub stdout: String,
}

/// Prints and runs the command, streaming its stdout to the terminal as it arrives while also
/// keeping a copy to parse; stderr is inherited. A failing exit status is reported, not an error,
/// so callers can still read counts from a failed test run.
pub fn tee(cmd: &mut Command) -> Result<Teed> {
    announce(cmd);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("could not start `{}`", short_name(cmd)))?;
    let pipe = child.stdout.take().context("child stdout was not piped")?;
    let mut kept = String::new();
    let mut reader = BufReader::new(pipe);
    let mut line = Vec::new();
    let mut terminal = std::io::stdout();
    loop {
        line.clear();
        // Bytes, not `lines()`: a test printing invalid UTF-8 must not abort the run.
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        terminal.write_all(&line)?;
        terminal.flush()?;
        kept.push_str(&strip_ansi(&String::from_utf8_lossy(&line)));
    }
    let status = child.wait()?;
    Ok(Teed {
        success: status.success(),
        stdout: kept,
    })
}

/// Removes ANSI escape sequences (colours, cursor moves), which appear when a tool is told to
/// colour its output (`FORCE_COLOR`, `CARGO_TERM_COLOR=always`) even though stdout is a pipe.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // A CSI sequence ends with a byte in `@`..=`~`.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

/// `end2end/` in the repository.
pub fn end2end_dir() -> PathBuf {
    repo_root().join("end2end")
}

/// Installs the end-to-end npm packages (Playwright and the wasm-opt the build uses) unless
/// `end2end/node_modules` already exists.
pub fn ensure_node_modules() -> Result<()> {
    let dir = end2end_dir();
    if node_modules_match_lock(&dir) {
        return Ok(());
    }
    let mut npm = command("npm");
    npm.arg("ci")
        .current_dir(&dir)
        // Tests drive Debian's Chromium; Playwright's own browser download is 100+ MB of waste.
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1");
    run(&mut npm).context("installing end2end/ npm packages (is Node.js installed?)")
}

/// Whether `dir/node_modules` was installed from the current `package-lock.json`: npm writes
/// `node_modules/.package-lock.json` on every install, so a lock file changed since (a pull that adds a
/// package) is newer than it, and the packages must be installed again.
fn node_modules_match_lock(dir: &Path) -> bool {
    let modified = |path: PathBuf| fs::metadata(path).and_then(|meta| meta.modified()).ok();
    match (
        modified(dir.join("node_modules/.package-lock.json")),
        modified(dir.join("package-lock.json")),
    ) {
        (Some(installed), Some(locked)) => installed >= locked,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_variables_are_stripped_but_cargo_itself_is_kept() {
        assert!(is_stripped("CARGO_PKG_VERSION"));
        assert!(is_stripped("CARGO_MANIFEST_DIR"));
        assert!(is_stripped("CARGO_PRIMARY_PACKAGE"));
        assert!(!is_stripped("CARGO"));
        assert!(!is_stripped("CARGO_HOME"));
        assert!(!is_stripped("CARGO_TARGET_DIR"));
    }

    #[test]
    fn ansi_colours_are_removed() {
        assert_eq!(
            strip_ansi("\u{1b}[32m  3 passed\u{1b}[39m (1s)"),
            "  3 passed (1s)"
        );
    }
}
