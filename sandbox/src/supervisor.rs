//! The one place the sandbox starts child processes (Prometheus and promtool today; etcd, kube-apiservers and
//! whatever the fault suite stops and restarts later), and the one temporary root their folders live in.
//!
//! Nothing the sandbox starts may outlive it, however it ends:
//! - dropped (a test ends, `tower` returns after SIGTERM or SIGINT): [`Supervisor`]'s `Drop` kills every child,
//!   reaps it, then removes the run's temporary root;
//! - killed outright (SIGKILL, a crash): on Linux every child is started with a parent-death signal, so the
//!   kernel kills it when Tower's process dies. Only the temporary root stays behind then; its name starts with
//!   [`TEMP_PREFIX`], so it is easy to find.
//!
//! The kernel sends the parent-death signal when the *thread* that forked the child exits, not the process. So
//! every child is forked by one dedicated thread that lives as long as the process; a child forked on a tokio
//! blocking thread would be killed when that thread idles out after ten seconds.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, mpsc};
use std::time::Duration;

/// Prefix of every run's temporary root (`$TMPDIR/tower-sandbox-XXXXXX`).
pub const TEMP_PREFIX: &str = "tower-sandbox-";

/// How often [`Process::wait`] looks whether the child has exited.
const WAIT_POLL: Duration = Duration::from_millis(50);

/// What can go wrong preparing a folder or starting a child.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The run's temporary root could not be created.
    #[error("creating the sandbox's temporary root in {}", std::env::temp_dir().display())]
    Root(#[source] io::Error),
    /// A folder under the root could not be created.
    #[error("creating {}", path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The child could not be started.
    #[error("starting {name}")]
    Spawn {
        /// The child's name, as given to [`Supervisor::spawn`].
        name: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// The result of supervisor operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Owns every child process of one sandbox run and the run's temporary root; dropping it stops the children
/// and removes the root.
#[derive(Debug)]
pub struct Supervisor {
    /// Every child started and not yet reaped by its own handle; shared with the [`Process`] handles.
    children: Mutex<Vec<Arc<Mutex<Child>>>>,
    /// Removed by `Drop`, after the children are reaped (a `TempDir` would not say when removing fails).
    root: PathBuf,
}

impl Supervisor {
    /// Creates the run's temporary root, `$TMPDIR/tower-sandbox-XXXXXX`.
    pub fn new() -> Result<Self> {
        let root = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempdir()
            .map_err(Error::Root)?
            .keep();
        tracing::debug!(root = %root.display(), "sandbox temporary root");
        Ok(Self {
            children: Mutex::new(Vec::new()),
            root,
        })
    }

    /// The run's temporary root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates a fresh folder `<root>/<name>-XXXXXX` (a child's config and data, the git repositories) and
    /// returns its path. It goes away with the root at the latest.
    pub fn folder(&self, name: &str) -> Result<PathBuf> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir_in(&self.root)
            .map_err(|source| Error::Folder {
                path: self.root.join(name),
                source,
            })?;
        Ok(dir.keep())
    }

    /// Starts `command` as a child that dies with this process (on Linux) and is stopped when the supervisor
    /// drops, if its [`Process`] handle has not stopped it before. `name` names it in errors and logs.
    pub fn spawn(&self, name: &str, mut command: Command) -> Result<Process> {
        let error = |source| Error::Spawn {
            name: name.to_owned(),
            source,
        };
        die_with_parent(&mut command);
        let child = spawner::spawn(command).map_err(error)?;
        tracing::debug!(name, pid = child.id(), "child started");
        let child = Arc::new(Mutex::new(child));
        let mut children = lock(&self.children);
        // Children whose handle is gone were stopped and reaped by it; only running ones are kept.
        children.retain(|child| Arc::strong_count(child) > 1);
        children.push(child.clone());
        Ok(Process {
            name: name.to_owned(),
            child,
        })
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        let children = std::mem::take(&mut *lock(&self.children));
        // Every child is told first and reaped after, so they die in parallel. SIGKILL rather than SIGTERM:
        // everything they write lives in the root about to be removed, so there is nothing to flush.
        for child in &children {
            let _ = lock(child).kill();
        }
        for child in &children {
            let _ = lock(child).wait();
        }
        if let Err(error) = std::fs::remove_dir_all(&self.root) {
            tracing::warn!(root = %self.root.display(), %error, "could not remove the sandbox's temporary root");
        }
    }
}

/// A child started by a [`Supervisor`]; dropping the handle stops the child.
#[derive(Debug)]
pub struct Process {
    name: String,
    child: Arc<Mutex<Child>>,
}

impl Process {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        lock(&self.child).id()
    }

    /// The child's exit status if it has exited, without waiting.
    pub fn try_wait(&self) -> io::Result<Option<ExitStatus>> {
        lock(&self.child).try_wait()
    }

    /// Waits for the child to exit without blocking a runtime thread. Dropping the future leaves the child
    /// running; dropping the handle stops it.
    pub async fn wait(&self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }

    /// Kills the child and reaps it (nothing if it already exited).
    pub fn stop(&self) {
        let mut child = lock(&self.child);
        if let Err(error) = child.kill() {
            tracing::warn!(name = %self.name, %error, "could not kill child");
        }
        let _ = child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A lock that a panic elsewhere does not poison for the cleanup paths.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Asks the kernel to SIGKILL the child when its parent dies, so not even a SIGKILL of Tower orphans it.
#[cfg(target_os = "linux")]
// `pre_exec` is unsafe because the hook runs in the forked child, where only async-signal-safe work is
// allowed. This hook makes two system calls through rustix's safe wrappers and returns an error that needs no
// allocation: it allocates nothing and takes no lock. It is the workspace's one exception to `unsafe_code`.
#[allow(unsafe_code)]
fn die_with_parent(command: &mut Command) {
    use rustix::process::{Signal, getpid, getppid, set_parent_process_death_signal};
    use std::os::unix::process::CommandExt as _;

    let parent = getpid();
    // SAFETY: see above; the closure only calls prctl and getppid.
    unsafe {
        command.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::KILL))?;
            // The parent may have died between fork and prctl; the signal would then never come.
            if getppid() != Some(parent) {
                return Err(io::ErrorKind::Other.into());
            }
            Ok(())
        });
    }
}

/// Elsewhere the supervisor's `Drop` is the only guarantee.
#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// The thread every child is forked from. It never exits, so a parent-death signal fires only when the whole
/// process dies.
mod spawner {
    use super::*;

    type Request = (Command, mpsc::SyncSender<io::Result<Child>>);

    static REQUESTS: OnceLock<Option<mpsc::Sender<Request>>> = OnceLock::new();

    /// Spawns `command` on the spawner thread, starting that thread the first time.
    pub(super) fn spawn(command: Command) -> io::Result<Child> {
        let requests = REQUESTS.get_or_init(|| {
            let (sender, receiver) = mpsc::channel::<Request>();
            let thread = std::thread::Builder::new()
                .name("tower-spawner".into())
                .spawn(move || {
                    // Ends only when every sender is gone, and the one in `REQUESTS` never goes.
                    for (mut command, reply) in receiver {
                        let _ = reply.send(command.spawn());
                    }
                });
            match thread {
                Ok(_) => Some(sender),
                Err(error) => {
                    tracing::error!(%error, "could not start the process spawner thread");
                    None
                }
            }
        });
        let gone = || io::Error::other("the process spawner thread is not running");
        let requests = requests.as_ref().ok_or_else(gone)?;
        let (reply, answer) = mpsc::sync_channel(1);
        requests.send((command, reply)).map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}
