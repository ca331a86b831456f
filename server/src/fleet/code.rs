//! What the service repositories say about a version: the commits since the previous one and the migrations
//! it ships. Fetched in the background through the GitHub App and cached by commit (immutable), so cards are
//! computed without waiting on GitHub and handlers never call it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use shared::fleet::CommitView;
use tokio::sync::{Semaphore, mpsc};

use super::Dirty;
use crate::upstream::github::GithubApp;

/// Entries kept before the oldest are forgotten.
const CAPACITY: usize = 20_000;
/// Lookups sent to GitHub at once. The first picture asks for every service's at once; unbounded, ten
/// thousand services opened thousands of connections (each a few KB of Tower's memory kept idle for 90 s),
/// and GitHub allows no more than 100 concurrent requests before its secondary rate limit.
const LOOKUPS_AT_ONCE: usize = 8;

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
    lookups: Arc<Semaphore>,
}

impl CodeCache {
    /// A cache reading through `github`.
    pub fn new(github: GithubApp) -> Self {
        Self {
            github,
            caches: Arc::default(),
            dirty: Arc::default(),
            lookups: Arc::new(Semaphore::new(LOOKUPS_AT_ONCE)),
        }
    }

    /// Runs `lookup` in the background once a lookup slot is free, stores what it found with `store`, and
    /// says `service`'s cards can be completed.
    fn fetch<T: Send + 'static>(
        &self,
        service: &str,
        lookup: impl Future<Output = T> + Send + 'static,
        store: impl FnOnce(&mut Caches, T) + Send + 'static,
    ) {
        let this = self.clone();
        let service = service.to_string();
        tokio::spawn(async move {
            // The semaphore is never closed; without a permit the lookup still runs rather than never.
            let _permit = this.lookups.acquire().await;
            let found = lookup.await;
            store(&mut this.lock(), found);
            this.done(&service);
        });
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
        let github = self.github.clone();
        let (repository, base, head) = key.clone();
        let lookup = async move {
            match github.commits_between(&repository, &base, &head).await {
                Ok(commits) => Entry::Ready(commits),
                Err(error) => {
                    tracing::warn!(%repository, %error, "could not compare versions");
                    Entry::Failed
                }
            }
        };
        self.fetch(service, lookup, move |caches, entry| {
            caches.changes.insert(key, entry);
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
        let github = self.github.clone();
        let (repository, git_ref) = key.clone();
        let lookup = async move {
            match github.migrations_at(&repository, &git_ref).await {
                Ok(files) => Entry::Ready(files),
                Err(error) => {
                    tracing::warn!(%repository, %error, "could not list migrations");
                    Entry::Failed
                }
            }
        };
        self.fetch(service, lookup, move |caches, entry| {
            caches.migrations.insert(key, entry);
        });
        None
    }
}
