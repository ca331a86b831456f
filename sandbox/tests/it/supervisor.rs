//! The supervisor owns every child and the run's temporary root: dropping it leaves neither behind.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sandbox::supervisor::{Supervisor, TEMP_PREFIX};

fn sleeper() -> Command {
    let mut command = Command::new("sleep");
    command.arg("300");
    command
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            Some(state != "Z")
        })
        .unwrap_or(false)
}

#[test]
fn dropping_the_supervisor_stops_every_child_and_removes_the_temporary_root() {
    let supervisor = Supervisor::new().unwrap();
    let root = supervisor.root().to_path_buf();
    assert!(
        root.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(TEMP_PREFIX),
        "{root:?}"
    );
    let data = supervisor.folder("prometheus").unwrap();
    assert!(data.starts_with(&root));
    std::fs::write(data.join("wal"), b"samples").unwrap();
    let first = supervisor.spawn("first", sleeper()).unwrap();
    let second = supervisor.spawn("second", sleeper()).unwrap();
    let pids = [first.id(), second.id()];
    assert!(pids.iter().all(|pid| running(*pid)));

    // The handles are still held, as a Prometheus handle may be when Tower is told to stop.
    drop(supervisor);
    assert!(!pids.iter().any(|pid| running(*pid)), "{pids:?}");
    assert!(!root.exists(), "{root:?} is still there");
    assert!(first.try_wait().unwrap().is_some() && second.try_wait().unwrap().is_some());
}

#[test]
fn dropping_a_handle_stops_that_child_only() {
    let supervisor = Supervisor::new().unwrap();
    let kept = supervisor.spawn("kept", sleeper()).unwrap();
    let dropped = supervisor.spawn("dropped", sleeper()).unwrap();
    let dropped_pid = dropped.id();
    drop(dropped);
    assert!(!running(dropped_pid));
    assert!(running(kept.id()));
    assert_eq!(kept.try_wait().unwrap(), None);
}

#[test]
fn folders_of_the_same_name_do_not_collide() {
    let supervisor = Supervisor::new().unwrap();
    let one = supervisor.folder("prometheus").unwrap();
    let two = supervisor.folder("prometheus").unwrap();
    assert_ne!(one, two);
    assert!(one.is_dir() && two.is_dir());
}

#[test]
fn a_child_outlives_the_short_lived_thread_that_asked_for_it() {
    // The parent-death signal fires when the forking *thread* exits; children must be forked by a thread that
    // lives as long as the process, or a child started from a tokio blocking thread dies when it idles out.
    let supervisor = Supervisor::new().unwrap();
    let child = std::thread::scope(|scope| {
        scope
            .spawn(|| supervisor.spawn("sleeper", sleeper()).unwrap())
            .join()
            .unwrap()
    });
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline {
        assert!(
            running(pid),
            "the child died with the thread that asked for it"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn waiting_for_a_short_lived_child_gives_its_exit_status() {
    let supervisor = Supervisor::new().unwrap();
    let mut command = Command::new("sh");
    command.args(["-c", "exit 3"]);
    let status = supervisor
        .spawn("sh", command)
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(status.code(), Some(3));
    let missing = supervisor.spawn("missing", Command::new(Path::new("/nonexistent/tool")));
    assert!(missing.is_err());
}
