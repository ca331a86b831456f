//! What the service repositories say about a version: the commits since the previous one and the migrations
//! it ships. Fetched in the background through the GitHub App and cached by commit (immutable), so cards are
//! computed without waiting on GitHub and handlers never call it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use shared::fleet::CommitView;
use tokio::sync::mpsc;

use super::Dirty;
use crate::upstream::github::GithubApp;

/// Entries kept before the oldest are forgotten.
const CAPACITY: usize = 20_000;

#[derive(Clone)]
enum Entry<T> {
    Pending,
    Ready(T),
    Failed,
}

#[derive(Default)]
struct Caches {
    changes: HashMap<(String, String, String), Entry<Vec<CommitView>>>,
    migrations: HashMap<(String, String), Entry<Vec<String>>>,
}

/// The cache; cheap to clone.
#[derive(Clone)]
pub struct CodeCache {
    github: GithubApp,
    caches: Arc<Mutex<Caches>>,
    dirty: Arc<OnceLock<mpsc::UnboundedSender<Dirty>>>,
}

impl CodeCache {
    /// A cache reading through `github`.
    pub fn new(github: GithubApp) -> Self {
        Self {
            github,
            caches: Arc::default(),
            dirty: Arc::default(),
        }
    }

    /// Where to say that a service's cards can now be completed.
    pub fn set_dirty_sender(&self, dirty: mpsc::UnboundedSender<Dirty>) {
        let _ = self.dirty.set(dirty);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn done(&self, service: &str) {
        if let Some(dirty) = self.dirty.get() {
            let _ = dirty.send(Dirty::Service(service.to_string()));
        }
    }

    /// Commits after `base` up to `head`, if known; starts fetching them if not.
    pub fn changes(
        &self,
        service: &str,
        repository: &str,
        base: &str,
        head: &str,
    ) -> Option<Vec<CommitView>> {
        let key = (repository.to_string(), base.to_string(), head.to_string());
        let mut caches = self.lock();
        match caches.changes.get(&key) {
            Some(Entry::Ready(commits)) => return Some(commits.clone()),
            Some(Entry::Pending | Entry::Failed) => return None,
            None => {}
        }
        if caches.changes.len() >= CAPACITY {
            caches.changes.clear();
        }
        caches.changes.insert(key.clone(), Entry::Pending);
        drop(caches);
        let this = self.clone();
        let service = service.to_string();
        tokio::spawn(async move {
            let entry = match this.github.commits_between(&key.0, &key.1, &key.2).await {
                Ok(commits) => Entry::Ready(commits),
                Err(error) => {
                    tracing::warn!(repository = %key.0, %error, "could not compare versions");
                    Entry::Failed
                }
            };
            this.lock().changes.insert(key, entry);
            this.done(&service);
        });
        None
    }

    /// Migration files at `git_ref`, if known; starts fetching them if not.
    pub fn migrations(
        &self,
        service: &str,
        repository: &str,
        git_ref: &str,
    ) -> Option<Vec<String>> {
        let key = (repository.to_string(), git_ref.to_string());
        let mut caches = self.lock();
        match caches.migrations.get(&key) {
            Some(Entry::Ready(files)) => return Some(files.clone()),
            Some(Entry::Pending | Entry::Failed) => return None,
            None => {}
        }
        if caches.migrations.len() >= CAPACITY {
            caches.migrations.clear();
        }
        caches.migrations.insert(key.clone(), Entry::Pending);
        drop(caches);
        let this = self.clone();
        let service = service.to_string();
        tokio::spawn(async move {
            let entry = match this.github.migrations_at(&key.0, &key.1).await {
                Ok(files) => Entry::Ready(files),
                Err(error) => {
                    tracing::warn!(repository = %key.0, %error, "could not list migrations");
                    Entry::Failed
                }
            };
            this.lock().migrations.insert(key, entry);
            this.done(&service);
        });
        None
    }
}
