//! What Tower and its sandbox own on this machine, counted before and after `cargo xtask test`: a run that
//! leaves a process or a temporary folder behind fails, however its tests ended.
//!
//! Every step that starts Tower runs with a `TMPDIR` under `.tmp/` of this repository, so what the run made is
//! told apart from what another checkout's run on the same machine is making at the same time:
//! - folders whose name starts with `tower-sandbox-` (the sandbox's temporary roots) under those `TMPDIR`s, at
//!   any depth a test puts them (the signal tests give Tower a `TMPDIR` of its own inside the run's);
//! - processes whose command line names such a folder (Prometheus names its config and data there);
//! - processes running this repository's `tower` binary.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::util::repo_root;

/// The sandbox's temporary roots start with this (`sandbox::supervisor::TEMP_PREFIX`).
const TEMP_PREFIX: &str = "tower-sandbox-";
/// How deep below a `TMPDIR` temporary roots are looked for.
const DEPTH: usize = 3;

/// The `TMPDIR` the test steps start Tower with (cargo test and Playwright).
pub fn temp_dirs() -> [PathBuf; 2] {
    let tmp = repo_root().join(".tmp");
    [tmp.join("test"), tmp.join("playwright")]
}

/// Processes and folders owned by Tower and the sandbox at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Owned {
    /// By `(pid, start time)`, so a pid reused during the run is not taken for the old process.
    processes: BTreeMap<(u32, u64), String>,
    folders: Vec<PathBuf>,
}

impl Owned {
    /// What is owned now.
    pub fn now() -> Self {
        let dirs = temp_dirs();
        let mut folders = Vec::new();
        for dir in &dirs {
            collect_roots(dir, DEPTH, &mut folders);
        }
        folders.sort();
        let tower = repo_root().to_string_lossy().into_owned();
        let mut processes = BTreeMap::new();
        for process in processes_now() {
            let names_root = dirs.iter().any(|dir| {
                let dir = dir.to_string_lossy();
                process.cmdline.contains(&*dir) && process.cmdline.contains(TEMP_PREFIX)
            });
            let runs_tower = process.exe.starts_with(&tower)
                && Path::new(process.exe.trim_end_matches(" (deleted)"))
                    .file_name()
                    .is_some_and(|name| name == "tower");
            if names_root || runs_tower {
                processes.insert(
                    (process.pid, process.started),
                    format!("pid {}: {}", process.pid, process.cmdline),
                );
            }
        }
        Self { processes, folders }
    }

    /// What `self` owns that `before` did not.
    pub fn since(&self, before: &Self) -> Self {
        Self {
            processes: self
                .processes
                .iter()
                .filter(|(key, _)| !before.processes.contains_key(key))
                .map(|(key, what)| (*key, what.clone()))
                .collect(),
            folders: self
                .folders
                .iter()
                .filter(|folder| !before.folders.contains(folder))
                .cloned()
                .collect(),
        }
    }

    /// Whether nothing is owned.
    pub fn is_empty(&self) -> bool {
        self.processes.is_empty() && self.folders.is_empty()
    }
}

impl fmt::Display for Owned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} process(es), {} folder(s)",
            self.processes.len(),
            self.folders.len()
        )?;
        for what in self.processes.values() {
            write!(f, "\n  process {what}")?;
        }
        for folder in &self.folders {
            write!(f, "\n  folder  {}", folder.display())?;
        }
        Ok(())
    }
}

/// Folders named `tower-sandbox-*` in `dir` and below it, `depth` levels down.
fn collect_roots(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            found.push(path);
        } else if depth > 1 {
            collect_roots(&path, depth - 1, found);
        }
    }
}

/// One process as `/proc` shows it.
struct Process {
    pid: u32,
    /// Ticks since boot.
    started: u64,
    cmdline: String,
    /// The executable's path (`… (deleted)` once rebuilt), empty when not readable.
    exe: String,
}

/// Every living process (zombies are dead and left out).
fn processes_now() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let dir = entry.path();
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let (state, started) = parse_stat(&stat)?;
            if state == 'Z' {
                return None;
            }
            let cmdline = std::fs::read(dir.join("cmdline"))
                .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
                .unwrap_or_default();
            let exe = std::fs::read_link(dir.join("exe"))
                .map(|path| path.to_string_lossy().into_owned())
                .unwrap_or_default();
            Some(Process {
                pid,
                started,
                cmdline,
                exe,
            })
        })
        .collect()
}

/// The state and start time of a `/proc/<pid>/stat` line (`pid (comm) state ppid … starttime …`).
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    // The comm may hold spaces and parentheses: the fields start after the last `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // starttime is field 22 of stat, the 20th after the comm.
    let started = fields.get(19)?.parse().ok()?;
    Some((state, started))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn stat_is_read_past_a_comm_with_spaces_and_parentheses() {
        let stat = "4242 (tokio (rt) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 3 1 0 0 20 0 5 0 987654 1000 10";
        assert_eq!(parse_stat(stat), Some(('S', 987_654)));
        assert_eq!(parse_stat("4242 (x) Z"), None);
    }

    #[test]
    fn only_what_appeared_during_the_run_is_left_over() {
        let owned = |processes: &[(u32, u64)], folders: &[&str]| Owned {
            processes: processes
                .iter()
                .map(|key| (*key, format!("pid {}", key.0)))
                .collect(),
            folders: folders.iter().map(PathBuf::from).collect(),
        };
        let before = owned(&[(10, 1)], &["/t/tower-sandbox-a"]);
        // Pid 10 again but started later: another process, so it counts.
        let after = owned(
            &[(10, 1), (10, 9), (11, 5)],
            &["/t/tower-sandbox-a", "/t/tower-sandbox-b"],
        );
        let left = after.since(&before);
        assert_eq!(left, owned(&[(10, 9), (11, 5)], &["/t/tower-sandbox-b"]));
        assert!(!left.is_empty());
        assert!(before.since(&before).is_empty());
    }

    #[test]
    fn a_sandbox_root_is_found_below_a_test_s_own_tmpdir() {
        let tmp = std::env::temp_dir().join(format!("xtask-leftovers-{}", std::process::id()));
        let root = tmp.join("signal-test-x").join("tower-sandbox-abc");
        std::fs::create_dir_all(root.join("prometheus-1")).unwrap();
        let mut found = Vec::new();
        collect_roots(&tmp, DEPTH, &mut found);
        std::fs::remove_dir_all(&tmp).unwrap();
        // The root itself, not the folders inside it.
        assert_eq!(found, vec![root]);
    }
}
