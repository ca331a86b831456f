//! Real git repositories built from the plan ([`crate::world`]): one bare repository per service, the
//! GitOps repository `application-repositories` (its platform component and package files for the
//! sandbox's clusters, [`Builder::topology`]), and the one repository only in the catalog
//! ([`crate::world::CATALOG_ONLY`]), under `<root>/acme/<name>.git`. They are the forge's
//! storage, and `git log` on them tells the same story as the Kubernetes fixtures.
//!
//! Everything goes through the `git` CLI with a fixed identity, fixed dates and no user or system
//! configuration, so the same plan always gives the same commit ids. Each repository is written by one
//! `git fast-import` stream, which keeps building all of them well under a second.

mod gitops;
pub mod people;
pub(crate) use gitops::{bump_message, derived_release_files, derived_schema_file, planned_head};
mod services;
mod stream;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::world::{
    CATALOG_ONLY, Commit, GITOPS_REPOSITORY, Histories, ORGANISATION, SERVICES, Timeline,
};

/// What can go wrong building or reading a repository.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `git` could not be started or fed.
    #[error("running git {command}")]
    Spawn {
        /// The git subcommand.
        command: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `git` exited unsuccessfully.
    #[error("git {command} failed ({status}): {stderr}")]
    Failed {
        /// The git subcommand and arguments.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A file or folder of the repositories' root could not be written.
    #[error("preparing {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A resource did not serialize to YAML.
    #[error("serializing YAML")]
    Yaml(#[from] serde_saphyr::SerializeError),
    /// The plan and the repositories disagree (a bug in the builder).
    #[error("{0}")]
    Plan(String),
}

/// The result of git operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Serializes a resource to YAML the way every file of the repositories is written.
fn yaml<T: serde::Serialize>(value: &T) -> Result<String> {
    Ok(serde_saphyr::to_string(value)?)
}

/// A bare repository driven through the `git` CLI, isolated from the user's and system's configuration.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
}

impl Git {
    /// The repository whose git directory is `dir` (a bare repository's folder).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The git directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A `git --git-dir <dir>` command with the sandbox's fixed configuration.
    pub fn command(&self) -> Command {
        let mut command = git_command();
        command.arg("--git-dir").arg(&self.dir);
        command
    }

    /// Runs `git <args>` and returns its stdout as text.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.run_with(args, None, &[])?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Runs `git <args>` with `stdin` fed to it and extra environment variables, returning raw stdout.
    pub fn run_with(
        &self,
        args: &[&str],
        stdin: Option<&[u8]>,
        env: &[(&str, String)],
    ) -> Result<Vec<u8>> {
        let mut command = self.command();
        command.args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        output(command, args, stdin)
    }

    /// Runs `git <args>`; a non-zero exit is `None` instead of an error (for questions like "does this
    /// object exist").
    pub fn try_run(&self, args: &[&str]) -> Result<Option<String>> {
        match self.run(args) {
            Ok(out) => Ok(Some(out)),
            Err(Error::Failed { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The commit id `rev` resolves to, if it names a commit.
    pub fn resolve(&self, rev: &str) -> Result<Option<String>> {
        if rev.starts_with('-') {
            return Ok(None);
        }
        let spec = format!("{rev}^{{commit}}");
        Ok(self
            .try_run(&["rev-parse", "--verify", "--quiet", &spec])?
            .map(|s| s.trim().to_string()))
    }

    /// Commits reachable from `rev` (newest first) that touch `path` when given, skipping `skip` and
    /// returning at most `limit`.
    pub fn log(
        &self,
        rev: &str,
        path: Option<&str>,
        skip: usize,
        limit: usize,
    ) -> Result<Vec<CommitInfo>> {
        let skip = format!("--skip={skip}");
        let limit = format!("--max-count={limit}");
        let mut args = vec!["log", LOG_FORMAT, &skip, &limit, rev, "--"];
        if let Some(path) = path {
            args.push(path);
        }
        Ok(parse_log(&self.run(&args)?))
    }

    /// How many commits reachable from `rev` touch `path` (all of them without a path).
    pub fn count(&self, rev: &str, path: Option<&str>) -> Result<usize> {
        let mut args = vec!["rev-list", "--count", rev, "--"];
        if let Some(path) = path {
            args.push(path);
        }
        self.run(&args)?
            .trim()
            .parse()
            .map_err(|_| Error::Plan("rev-list --count printed no number".into()))
    }
}

impl Git {
    /// Writes one commit on `branch` on top of `parent`, changing `files` (path → content), and moves the
    /// branch to it only if it still points at `parent`. Returns the new commit's id.
    ///
    /// This is how the simulator's bots and developers commit into bare repositories: one `fast-import`
    /// process, no work tree, and a fixed `time` (simulated) so the same inputs give the same commit id.
    pub fn commit_files(
        &self,
        branch: &str,
        parent: &str,
        author: &people::Identity,
        time: i64,
        message: &str,
        files: BTreeMap<String, Vec<u8>>,
    ) -> Result<String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static SCRATCH: AtomicU64 = AtomicU64::new(0);
        let signature = stream::Signature {
            name: author.name.clone(),
            email: author.email.clone(),
            time,
        };
        // A scratch branch, so fast-import never moves `branch` itself: the compare-and-swap below does.
        let scratch = format!(
            "refs/tower-sim/commit-{}-{}",
            std::process::id(),
            SCRATCH.fetch_add(1, Ordering::Relaxed)
        );
        let mut stream = stream::Stream::default();
        let spec = stream::CommitSpec {
            branch: scratch.clone(),
            author: signature.clone(),
            committer: signature,
            message: message.to_string(),
            from: None,
            merge: None,
            files,
        };
        // `from` takes a mark; the parent is an existing commit, so it goes in as a `reset` first.
        let mut input = format!("reset {scratch}\nfrom {parent}\n\n").into_bytes();
        stream.commit(&spec);
        input.extend(stream.finish());
        self.run_with(
            &["fast-import", "--quiet", "--done", "--force"],
            Some(&input),
            &[],
        )?;
        let sha = self
            .resolve(&scratch)?
            .ok_or_else(|| Error::Plan(format!("fast-import wrote no commit on {scratch}")))?;
        let _ = self.try_run(&["update-ref", "-d", &scratch])?;
        let target = format!("refs/heads/{branch}");
        if self
            .try_run(&["update-ref", &target, &sha, parent])?
            .is_none()
        {
            return Err(Error::Plan(format!(
                "{target} moved while committing; try again"
            )));
        }
        Ok(sha)
    }
}

/// `git` with the sandbox's fixed configuration: never the user's global or the system's config, a fixed
/// committer, `main` as the default branch and no signing.
pub fn git_command() -> Command {
    let mut command = Command::new("git");
    command
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args([
            "-c",
            "user.name=Tower Sandbox",
            "-c",
            "user.email=sandbox@acme.example",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ]);
    command
}

fn output(mut command: Command, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>> {
    let name = args.first().copied().unwrap_or("").to_string();
    let spawn = |source| Error::Spawn {
        command: name.clone(),
        source,
    };
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(spawn)?;
    if let Some(input) = stdin {
        let mut pipe = child
            .stdin
            .take()
            .ok_or_else(|| spawn(std::io::Error::other("no stdin pipe")))?;
        // Feed stdin from a thread so a large input cannot deadlock against a full stdout pipe.
        let input = input.to_vec();
        let writer = std::thread::spawn(move || pipe.write_all(&input));
        let out = child.wait_with_output().map_err(spawn)?;
        writer
            .join()
            .map_err(|_| spawn(std::io::Error::other("stdin writer panicked")))?
            .map_err(spawn)?;
        return check(out, args);
    }
    let out = child.wait_with_output().map_err(spawn)?;
    check(out, args)
}

fn check(out: std::process::Output, args: &[&str]) -> Result<Vec<u8>> {
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(Error::Failed {
            command: args.join(" "),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// One side of a commit (author or committer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Display name.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// The forge login the address belongs to.
    pub login: String,
    /// When, RFC 3339 in UTC.
    pub date: String,
}

/// A commit as `git log` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// Commit id.
    pub sha: String,
    /// Its tree's id.
    pub tree: String,
    /// Parent commit ids.
    pub parents: Vec<String>,
    /// Who wrote it.
    pub author: Person,
    /// Who committed it.
    pub committer: Person,
    /// The full message.
    pub message: String,
}

impl CommitInfo {
    /// The first line of the message.
    pub fn title(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// Fields separated by NUL, records introduced by RS, so messages may hold anything but those.
const LOG_FORMAT: &str =
    "--format=%x1e%H%x00%T%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B";

fn parse_log(text: &str) -> Vec<CommitInfo> {
    text.split('\x1e')
        .filter(|record| !record.trim().is_empty())
        .filter_map(|record| {
            let fields: Vec<&str> = record.splitn(10, '\0').collect();
            let [sha, tree, parents, an, ae, at, cn, ce, ct, message] = fields.as_slice() else {
                return None;
            };
            let person = |name: &str, email: &str, time: &str| Person {
                name: name.into(),
                email: email.into(),
                login: people::login_of_email(email),
                date: rfc3339(time.parse().unwrap_or(0)),
            };
            Some(CommitInfo {
                sha: (*sha).into(),
                tree: (*tree).into(),
                parents: parents.split_whitespace().map(String::from).collect(),
                author: person(an, ae, at),
                committer: person(cn, ce, ct),
                message: message.trim_end().to_string(),
            })
        })
        .collect()
}

/// Seconds since the epoch as RFC 3339 in UTC, the way GitHub writes times (`2026-11-02T09:00:00Z`).
pub fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Commits of `git_dir` reachable from `rev` that touch `path` (every commit without one), newest first.
pub fn git_log(git_dir: &Path, rev: &str, path: Option<&str>) -> Result<Vec<CommitInfo>> {
    Git::at(git_dir).log(rev, path, 0, i32::MAX as usize)
}

/// A pull request the history of `application-repositories` merged, so the forge can list it as closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPull {
    /// Its number.
    pub number: u64,
    /// Title (the branch commit's message).
    pub title: String,
    /// Body.
    pub body: String,
    /// The head branch, e.g. `tower/promote/payments/prod`.
    pub branch: String,
    /// Who opened it.
    pub author: String,
    /// Who merged it.
    pub merged_by: String,
    /// When it was opened, RFC 3339.
    pub created_at: String,
    /// When it was merged, RFC 3339.
    pub merged_at: String,
    /// The head commit.
    pub head_sha: String,
    /// The base commit it was opened against.
    pub base_sha: String,
    /// The merge commit on main.
    pub merge_sha: String,
    /// Paths it changed.
    pub files: Vec<String>,
}

/// Options for building the repositories.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    root: Option<PathBuf>,
    release_history: Option<usize>,
    timeline: Timeline,
    topology: crate::topology::Topology,
}

impl Builder {
    /// Builds into `root` (which must not hold the repositories yet) instead of a temporary folder.
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// Gives `platform/environments/prod/payments-release.yaml` `commits` release commits (the fixture
    /// history the Releases tab pages through), ending at the plan's previous and current prod versions.
    pub fn release_history(mut self, commits: usize) -> Self {
        self.release_history = Some(commits.max(2));
        self
    }

    /// Lays the histories out to end just before `timeline`'s start (by default, the fixed world's).
    pub fn timeline(mut self, timeline: Timeline) -> Self {
        self.timeline = timeline;
        self
    }

    /// Writes the platform's component and package files for `topology`'s clusters (by default, one prod
    /// cluster).
    pub fn topology(mut self, topology: crate::topology::Topology) -> Self {
        self.topology = topology;
        self
    }

    /// Writes every repository.
    pub fn build(self) -> Result<Repositories> {
        let (root, temp) = match self.root {
            Some(root) => (root, None),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("tower-sandbox-git-")
                    .tempdir()
                    .map_err(|source| Error::Io {
                        path: std::env::temp_dir(),
                        source,
                    })?;
                (temp.path().to_path_buf(), Some(Arc::new(temp)))
            }
        };
        let org = root.join(ORGANISATION);
        std::fs::create_dir_all(&org).map_err(|source| Error::Io {
            path: org.clone(),
            source,
        })?;

        // Service repositories first, in parallel: the GitOps history names their commits.
        let built: Vec<Result<(String, Vec<Commit>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = SERVICES
                .iter()
                .enumerate()
                .map(|(index, plan)| {
                    let dir = org.join(format!("{}.git", plan.name));
                    let timeline = &self.timeline;
                    scope.spawn(move || build_service(&dir, plan, index, timeline))
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err(Error::Plan("a builder thread panicked".into())))
                })
                .collect()
        });
        let mut histories = Histories::default();
        for result in built {
            let (name, commits) = result?;
            histories.services.insert(name, commits);
        }
        let mut stream = stream::Stream::default();
        services::write_catalog_only_history(&mut stream, &CATALOG_ONLY, &self.timeline)?;
        import(
            &org.join(format!("{}.git", CATALOG_ONLY.name)),
            stream.finish(),
        )?;

        let gitops_dir = org.join(format!("{GITOPS_REPOSITORY}.git"));
        let pulls = gitops::build(
            &gitops_dir,
            &histories,
            self.release_history,
            &self.timeline,
            &self.topology,
        )?;
        let gitops = Git::at(&gitops_dir);
        histories.gitops_head = gitops
            .resolve("refs/heads/main")?
            .ok_or_else(|| Error::Plan(format!("{GITOPS_REPOSITORY} has no main")))?;
        histories.gitops_changes = file_changes(&gitops, "refs/heads/main")?;
        Ok(Repositories {
            root,
            _temp: temp,
            histories,
            pulls: Arc::new(pulls),
        })
    }
}

/// The commits of main's first-parent history reachable from `rev` that changed each file, oldest first: a
/// merge commit changes what its pull request brought to main.
fn file_changes(git: &Git, rev: &str) -> Result<BTreeMap<String, Vec<crate::world::FileChange>>> {
    let log = git.run(&[
        "log",
        "--first-parent",
        "-m",
        "--name-only",
        "--reverse",
        "--format=%x1e%H %ct",
        rev,
    ])?;
    let mut changes: BTreeMap<String, Vec<crate::world::FileChange>> = BTreeMap::new();
    for record in log.split('\x1e').filter(|r| !r.trim().is_empty()) {
        let mut lines = record.lines();
        let Some((commit, time)) = lines.next().and_then(|head| head.split_once(' ')) else {
            continue;
        };
        let time: i64 = time.trim().parse().unwrap_or_default();
        for path in lines.map(str::trim).filter(|line| !line.is_empty()) {
            changes
                .entry(path.to_owned())
                .or_default()
                .push(crate::world::FileChange {
                    commit: commit.to_owned(),
                    time,
                });
        }
    }
    Ok(changes)
}

/// Creates the bare repository `dir` and imports `stream` into it, returning the commit id of each mark.
fn import(dir: &Path, stream: Vec<u8>) -> Result<BTreeMap<usize, String>> {
    let dir_text = dir.to_string_lossy().into_owned();
    let mut init = git_command();
    init.args(["init", "--bare", "--quiet", &dir_text]);
    output(init, &["init"], None)?;
    let marks = dir.join("tower-marks");
    let marks_arg = format!("--export-marks={}", marks.to_string_lossy());
    Git::at(dir).run_with(
        &["fast-import", "--quiet", "--done", &marks_arg],
        Some(&stream),
        &[],
    )?;
    let text = std::fs::read_to_string(&marks).map_err(|source| Error::Io {
        path: marks.clone(),
        source,
    })?;
    // The marks file is the builder's scratch, not part of the repository.
    let _ = std::fs::remove_file(&marks);
    Ok(stream::parse_marks(&text))
}

fn sha_of(marks: &BTreeMap<usize, String>, mark: usize) -> Result<String> {
    marks
        .get(&mark)
        .cloned()
        .ok_or_else(|| Error::Plan(format!("fast-import exported no commit for mark {mark}")))
}

fn build_service(
    dir: &Path,
    plan: &crate::world::ServicePlan,
    index: usize,
    timeline: &Timeline,
) -> Result<(String, Vec<Commit>)> {
    let mut stream = stream::Stream::default();
    let planned = services::write_history(&mut stream, plan, index, timeline)?;
    let marks = import(dir, stream.finish())?;
    let commits = planned
        .iter()
        .zip(plan.commits)
        .map(|(planned, commit)| {
            Ok(Commit {
                sha: sha_of(&marks, planned.mark)?,
                message: commit.message.into(),
                author: planned.author.into(),
                time: rfc3339(planned.time),
                green: commit.green,
                migrations: planned.migrations.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((plan.name.to_string(), commits))
}

/// The built repositories. Cloning shares them; a temporary root is removed when the last clone drops.
#[derive(Debug, Clone)]
pub struct Repositories {
    root: PathBuf,
    _temp: Option<Arc<tempfile::TempDir>>,
    histories: Histories,
    pulls: Arc<Vec<MergedPull>>,
}

impl Repositories {
    /// Options for building the repositories.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Builds the plan's repositories in a temporary folder.
    pub fn build() -> Result<Self> {
        Builder::default().build()
    }

    /// The folder holding `<org>/<name>.git`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The bare repository folder of `name` in the organisation.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(ORGANISATION).join(format!("{name}.git"))
    }

    /// A git runner on repository `name`.
    pub fn git(&self, name: &str) -> Git {
        Git::at(self.path(name))
    }

    /// The real histories of the service repositories.
    pub fn histories(&self) -> &Histories {
        &self.histories
    }

    /// The pull requests `application-repositories`' history merged, oldest first.
    pub fn merged_pulls(&self) -> &[MergedPull] {
        &self.pulls
    }
}

/// The plan's repositories, with `commits` release commits on payments' prod Release (a later issue's
/// "fixture history of 100 release commits").
pub fn release_history_fixture(commits: usize) -> Result<Repositories> {
    Repositories::builder().release_history(commits).build()
}
