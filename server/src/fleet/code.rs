//! What the service repositories say about a version: the commits since the previous one and the migrations
//! it ships. Fetched in the background through the GitHub App and cached by commit (immutable), so cards are
//! computed without waiting on GitHub and handlers never call it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use shared::fleet::CommitView;
use tokio::sync::{Semaphore, mpsc};

use super::Dirty;
use crate::upstream::github::GithubApp;

/// How long an entry nobody asks for is kept: between one and two of these (see [`Generations`]).
const GENERATION: Duration = Duration::from_secs(10 * 60);
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

/// A map that forgets what was not asked for in a while: every [`GENERATION`] the current entries become
/// the previous ones (dropping those before), and an entry asked for moves back to the current ones.
///
/// Bounded by count instead (emptied when 20,000 entries were reached, as this cache was), a fleet with
/// more lookups than that fetched forever: each answer marks its service for recompute, whose cards ask
/// again for what the emptying forgot (at 10,000 services, a hundred lookups of every repository in 90 s).
/// By age, an entry in use is never fetched twice, and what is kept is what a few minutes asked for.
struct Generations<K, V> {
    started: Instant,
    current: HashMap<K, V>,
    previous: HashMap<K, V>,
}

impl<K: std::hash::Hash + Eq + Clone, V> Generations<K, V> {
    fn new(now: Instant) -> Self {
        Self {
            started: now,
            current: HashMap::new(),
            previous: HashMap::new(),
        }
    }

    fn turn(&mut self, now: Instant) {
        if now.duration_since(self.started) >= GENERATION {
            self.previous = std::mem::take(&mut self.current);
            self.started = now;
        }
    }

    /// The entry of `key`, keeping it for another generation.
    fn get(&mut self, key: &K, now: Instant) -> Option<&V> {
        self.turn(now);
        if !self.current.contains_key(key) {
            let value = self.previous.remove(key)?;
            self.current.insert(key.clone(), value);
        }
        self.current.get(key)
    }

    fn insert(&mut self, key: K, value: V, now: Instant) {
        self.turn(now);
        self.previous.remove(&key);
        self.current.insert(key, value);
    }
}

struct Caches {
    changes: Generations<(String, String, String), Entry<Vec<CommitView>>>,
    migrations: Generations<(String, String), Entry<Vec<String>>>,
}

impl Default for Caches {
    fn default() -> Self {
        Self {
            changes: Generations::new(Instant::now()),
            migrations: Generations::new(Instant::now()),
        }
    }
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
        match caches.changes.get(&key, Instant::now()) {
            Some(Entry::Ready(commits)) => return Some(commits.clone()),
            Some(Entry::Pending | Entry::Failed) => return None,
            None => {}
        }
        caches
            .changes
            .insert(key.clone(), Entry::Pending, Instant::now());
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
            caches.changes.insert(key, entry, Instant::now());
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
        match caches.migrations.get(&key, Instant::now()) {
            Some(Entry::Ready(files)) => return Some(files.clone()),
            Some(Entry::Pending | Entry::Failed) => return None,
            None => {}
        }
        caches
            .migrations
            .insert(key.clone(), Entry::Pending, Instant::now());
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
            caches.migrations.insert(key, entry, Instant::now());
        });
        None
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::{GENERATION, Generations};

    #[test]
    fn an_entry_asked_for_every_generation_stays_and_one_nobody_asks_for_goes() {
        let start = Instant::now();
        let mut cache = Generations::new(start);
        // Far more keys than any count bound, all in use: asked for round after round as recomputes do.
        for key in 0..50_000 {
            cache.insert(key, key * 10, start);
        }
        cache.insert(-1, 0, start);
        for round in 1..5 {
            let now = start + GENERATION * round;
            for key in 0..50_000 {
                assert_eq!(
                    cache.get(&key, now),
                    Some(&(key * 10)),
                    "{key} was forgotten"
                );
            }
        }
        // Nobody asked for -1 for two generations: gone, so a lookup fetches it again once.
        assert_eq!(cache.get(&-1, start + GENERATION * 5), None);
        // One asked for within a generation is kept across it.
        cache.insert(-2, 0, start + GENERATION * 5);
        assert_eq!(cache.get(&-2, start + GENERATION * 6), Some(&0));
    }
}
