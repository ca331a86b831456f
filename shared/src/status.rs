//! The status vocabulary every page shares: how a sync or health status, or a whole environment cell,
//! feels ([`Tone`]), which picks its colour; the word always goes with it.

use crate::fleet::{EnvironmentCell, Health, SyncStatus};

/// How a status feels, which picks its colour; the word always goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tone {
    /// All good.
    Ok,
    /// Moving (rolling out, paused on purpose).
    Progress,
    /// Not known: no data, or the cluster cannot be reached.
    Unknown,
    /// Needs a look (out of sync, drift, stale).
    Warn,
    /// Failing.
    Bad,
}

impl Tone {
    /// The CSS class suffix (`tone-ok`, …).
    pub fn class(self) -> &'static str {
        match self {
            Tone::Ok => "tone-ok",
            Tone::Progress => "tone-progress",
            Tone::Unknown => "tone-unknown",
            Tone::Warn => "tone-warn",
            Tone::Bad => "tone-bad",
        }
    }
}

/// The tone of a sync status.
pub fn sync_tone(sync: SyncStatus) -> Tone {
    match sync {
        SyncStatus::Synced => Tone::Ok,
        SyncStatus::OutOfSync => Tone::Warn,
        SyncStatus::Unknown => Tone::Unknown,
    }
}

/// The tone of a health status.
pub fn health_tone(health: Health) -> Tone {
    match health {
        Health::Healthy => Tone::Ok,
        Health::Progressing | Health::Suspended => Tone::Progress,
        Health::Degraded | Health::Missing => Tone::Bad,
        Health::Unknown => Tone::Unknown,
    }
}

/// One matrix cell rolled up: the worst of its sync, health and drift; an unreachable cluster makes it
/// at best unknown, since what is shown is only its last known state.
pub fn cell_tone(cell: &EnvironmentCell) -> Tone {
    let mut tone = sync_tone(cell.sync).max(health_tone(cell.health));
    if cell.drift {
        tone = tone.max(Tone::Warn);
    }
    if cell.unreachable_since.is_some() {
        tone = tone.max(Tone::Unknown);
    }
    tone
}

/// The worst tone of several (`Ok` for none).
pub fn rollup<'a>(cells: impl IntoIterator<Item = &'a EnvironmentCell>) -> Tone {
    cells.into_iter().map(cell_tone).max().unwrap_or(Tone::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::fixtures::{cell, healthy};

    #[test]
    fn a_cell_rolls_up_to_its_worst_signal() {
        assert_eq!(cell_tone(&healthy("dev")), Tone::Ok);
        assert_eq!(
            cell_tone(&cell("dev", SyncStatus::OutOfSync, Health::Healthy)),
            Tone::Warn
        );
        assert_eq!(
            cell_tone(&cell("dev", SyncStatus::OutOfSync, Health::Degraded)),
            Tone::Bad
        );
        let mut drifted = healthy("dev");
        drifted.drift = true;
        assert_eq!(cell_tone(&drifted), Tone::Warn);
        let mut unreachable = healthy("prod");
        unreachable.unreachable_since = Some("2024-05-01T10:42:00Z".into());
        assert_eq!(cell_tone(&unreachable), Tone::Unknown);
        let degraded_dev = [
            cell("dev", SyncStatus::Synced, Health::Degraded),
            healthy("prod"),
        ];
        assert_eq!(rollup(&degraded_dev), Tone::Bad);
        assert_eq!(rollup(&[]), Tone::Ok);
    }
}
