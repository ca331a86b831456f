//! Sessions ended by signing out, so a copy of the cookie (a shared machine, a proxy's log, a stolen laptop)
//! is refused afterwards even though it still decrypts and has not expired.
//!
//! Why a revocation list rather than short sessions rotated on use: a short expiry still honours a replayed
//! cookie until it runs out, and rotation on every request makes each of a browser's parallel requests race
//! to replace the cookie. The list is small — one line per signed-out session, dropped once that session would
//! have expired anyway — and, kept in a file (`auth.revoked_sessions_file`), it survives restarts and can be
//! shared by replicas on one volume: each replica reads lines the others appended before trusting a session.
//! Without the file it lives in memory, which is complete when `TOWER_SESSION_SECRET` is unset too (every
//! session then ends with the process anyway).

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a replica trusts its copy of the list before looking for lines other replicas appended.
const REREAD_AFTER: Duration = Duration::from_secs(1);

/// Failures reading or writing the revocation file.
#[derive(Debug, thiserror::Error)]
pub enum RevocationError {
    /// The file could not be read or written.
    #[error("the revoked-sessions file {path}: {source}")]
    File {
        /// Which file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Signed-out sessions by id, each with the Unix second it would have expired at.
#[derive(Debug)]
pub struct RevokedSessions {
    file: Option<PathBuf>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    expiry_by_id: HashMap<String, u64>,
    /// The file's length when last read: it only grows between compactions, so a longer file has news.
    read_length: u64,
    read_at: Option<Instant>,
}

impl RevokedSessions {
    /// A list kept in memory only.
    pub fn in_memory() -> Self {
        Self {
            file: None,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The list kept in `path`, created if missing; lines of sessions that have expired since are dropped.
    pub fn open(path: &Path, now: u64) -> Result<Self, RevocationError> {
        let file_error = |source| RevocationError::File {
            path: path.to_path_buf(),
            source,
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(file_error(error)),
        };
        let mut expiry_by_id = parse(&text);
        let listed = expiry_by_id.len();
        expiry_by_id.retain(|_, expires_at| *expires_at > now);
        let mut read_length = text.len() as u64;
        // Rewritten whole when some lines are void (through a temporary file and a rename, so a crash
        // leaves the old list) to keep the file from growing with sessions that have expired anyway.
        if expiry_by_id.len() < listed {
            let compacted: String = expiry_by_id
                .iter()
                .map(|(id, expires_at)| format!("{id} {expires_at}\n"))
                .collect();
            let temporary = path.with_extension("compacting");
            std::fs::write(&temporary, &compacted).map_err(file_error)?;
            std::fs::rename(&temporary, path).map_err(file_error)?;
            read_length = compacted.len() as u64;
        }
        Ok(Self {
            file: Some(path.to_path_buf()),
            inner: Mutex::new(Inner {
                expiry_by_id,
                read_length,
                read_at: Some(Instant::now()),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ends session `id` (valid until `expires_at`) for good. The file is appended to before the list in
    /// memory changes, so a sign-out Tower reports as done is on disk.
    pub fn revoke(&self, id: &str, expires_at: u64) -> Result<(), RevocationError> {
        if let Some(path) = &self.file {
            let line = format!("{id} {expires_at}\n");
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(line.as_bytes()))
                .map_err(|source| RevocationError::File {
                    path: path.clone(),
                    source,
                })?;
        }
        self.lock().expiry_by_id.insert(id.to_string(), expires_at);
        Ok(())
    }

    /// Whether session `id` was signed out (here or, through the shared file, on another replica).
    pub fn is_revoked(&self, id: &str) -> bool {
        let mut inner = self.lock();
        if let Some(path) = &self.file
            && inner.read_at.is_none_or(|at| at.elapsed() >= REREAD_AFTER)
        {
            inner.read_at = Some(Instant::now());
            match std::fs::metadata(path) {
                Ok(metadata) if metadata.len() != inner.read_length => {
                    match std::fs::read_to_string(path) {
                        Ok(text) => {
                            inner.read_length = text.len() as u64;
                            inner.expiry_by_id.extend(parse(&text));
                        }
                        Err(error) => {
                            tracing::warn!(path = %path.display(), %error, "cannot reread revoked sessions")
                        }
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "cannot reread revoked sessions")
                }
            }
        }
        inner.expiry_by_id.contains_key(id)
    }
}

/// The `id expires_at` lines of `text`; a torn last line (a crash mid-append) is skipped.
fn parse(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (id, expires_at) = line.split_once(' ')?;
            Some((id.to_string(), expires_at.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_revoked_session_stays_revoked_after_a_restart_until_it_would_have_expired() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("revoked");
        let first = RevokedSessions::open(&path, 100).unwrap();
        first.revoke("short", 150).unwrap();
        first.revoke("long", 1_000).unwrap();
        assert!(first.is_revoked("short") && first.is_revoked("long"));
        assert!(!first.is_revoked("other"));

        // Restarted after "short" would have expired: it is dropped, "long" still refused.
        let restarted = RevokedSessions::open(&path, 200).unwrap();
        assert!(restarted.is_revoked("long"));
        assert!(!restarted.is_revoked("short"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "long 1000\n");
    }

    #[test]
    fn a_replica_sees_a_sign_out_another_replica_wrote_to_the_shared_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("revoked");
        let one = RevokedSessions::open(&path, 100).unwrap();
        let other = RevokedSessions::open(&path, 100).unwrap();
        assert!(!other.is_revoked("session"));
        one.revoke("session", 1_000).unwrap();
        std::thread::sleep(REREAD_AFTER);
        assert!(other.is_revoked("session"));
    }

    #[test]
    fn a_torn_line_is_skipped_and_the_rest_kept() {
        let parsed = parse("a 10\nb\nc x\nd 20");
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed["a"], 10);
        assert_eq!(parsed["d"], 20);
    }
}
