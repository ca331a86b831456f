//! A platform resource's own Application (`shared::platform::ResourceApplication`) as the deployment card,
//! the Databases tab, the database page and the Platform page show it: how it stands in one word, a compact
//! line `Release release-payments-prod: Synced · Healthy` linking to Argo CD, and what is wrong in words.
//! Waiting for another Application's CRD is told apart from failing: it converges by retry, so it is shown
//! calmly, never as a red error. The counts' words are the Overview's and the Platform page's.

use leptos::prelude::*;
use shared::platform::{ResourceApplication, Standing, StandingCounts};
use shared::status::{Tone, health_tone, sync_tone};

use crate::components::status::{banner, tone_chip};

/// How a standing looks: its tone, its glyph and its slug (for `data-standing`).
pub fn standing_look(standing: Standing) -> (Tone, &'static str, &'static str) {
    match standing {
        Standing::Healthy => (Tone::Ok, "✓", "healthy"),
        Standing::Progressing => (Tone::Progress, "◔", "progressing"),
        Standing::OutOfSync => (Tone::Warn, "!", "out_of_sync"),
        // Calm on purpose: Argo CD retries, and it converges once the CRD is installed.
        Standing::Waiting => (Tone::Progress, "◌", "waiting"),
        Standing::Failing => (Tone::Bad, "✕", "failing"),
        Standing::Unknown => (Tone::Unknown, "?", "unknown"),
    }
}

/// A link to the Application in Argo CD when Tower knows Argo CD's address, else its name; only web
/// addresses become links.
pub fn application_name(app: &ResourceApplication, testid: &'static str) -> AnyView {
    let name = app.application.name.clone();
    match app.url.clone().filter(|url| is_web_url(url)) {
        Some(url) => view! {
            <a class="mono" href=url rel="noreferrer" target="_blank" data-testid=testid
                title=format!("Application {name} in Argo CD")>{name.clone()}</a>
        }
        .into_any(),
        None => view! { <span class="mono" data-testid=testid>{name}</span> }.into_any(),
    }
}

/// Whether `url` is a web page (`http(s)://`): an address from elsewhere never becomes a `javascript:` link.
pub fn is_web_url(url: &str) -> bool {
    let scheme = |prefix: &str| {
        url.get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
    };
    scheme("https://") || scheme("http://")
}

/// `<kind> <application>: Synced · Healthy` in one line (`testid`); the chips say it in words, and the line
/// carries its standing, sync and health as `data-` attributes. Its problem is shown apart
/// ([`resource_application_problem`]), where a reader looks first.
pub fn resource_application_line(
    kind: &'static str,
    app: &ResourceApplication,
    testid: &'static str,
) -> AnyView {
    let (_, _, slug) = standing_look(app.standing());
    let view_of = &app.application;
    view! {
        <p class="resource-application" data-testid=testid data-standing=slug
            data-sync=view_of.sync.label() data-health=view_of.health.label()>
            <span class="muted">{kind}" "</span>
            {application_name(app, "resource-application-link")}
            <span class="muted">": "</span>
            {tone_chip(sync_tone(view_of.sync), view_of.sync.label(), None)}
            {tone_chip(health_tone(view_of.health), view_of.health.label(), None)}
        </p>
    }
    .into_any()
}

/// What is wrong with a resource's Application, in words, as a banner in its standing's tone; `None` when
/// nothing is.
pub fn resource_application_problem(
    app: &ResourceApplication,
    testid: &'static str,
) -> Option<AnyView> {
    let problem = app.problem()?;
    let (tone, glyph, _) = standing_look(app.standing());
    // A problem while the standing reads fine (a failed sync that left it Synced) is still worth a look.
    let tone = if tone == Tone::Ok { Tone::Warn } else { tone };
    Some(banner(tone, glyph, testid, problem))
}

/// The platform's counts in the order they are read, worst last: healthy, progressing, out of sync, waiting,
/// failing, then unknown when there are any.
pub fn count_entries(counts: &StandingCounts) -> Vec<(Standing, u32)> {
    let mut entries = vec![
        (Standing::Healthy, counts.healthy),
        (Standing::Progressing, counts.progressing),
        (Standing::OutOfSync, counts.out_of_sync),
        (Standing::Waiting, counts.waiting),
        (Standing::Failing, counts.failing),
    ];
    if counts.unknown > 0 {
        entries.push((Standing::Unknown, counts.unknown));
    }
    entries
}

/// One count in words: `41 healthy`, `1 out of sync`, `3 waiting for CRDs`, `1 failing`.
pub fn count_label(standing: Standing, n: u32) -> String {
    let what = match standing {
        Standing::Healthy => "healthy",
        Standing::Progressing => "progressing",
        Standing::OutOfSync => "out of sync",
        Standing::Waiting if n == 1 => "waiting for a CRD",
        Standing::Waiting => "waiting for CRDs",
        Standing::Failing => "failing",
        Standing::Unknown => "unknown",
    };
    format!("{n} {what}")
}

/// The counts in one line, the healthy ones and whatever else there is: `41 healthy · 3 waiting for CRDs ·
/// 1 failing`; or that there is nothing to count yet.
pub fn counts_in_words(counts: &StandingCounts) -> String {
    let entries = count_entries(counts);
    if entries.iter().all(|(_, n)| *n == 0) {
        return "no platform Applications yet".into();
    }
    entries
        .into_iter()
        .filter(|(standing, n)| *n > 0 || *standing == Standing::Healthy)
        .map(|(standing, n)| count_label(standing, n))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The standing that colours the counts as a whole: the worst one any Application is in (waiting is calmer
/// than out of sync); `Healthy` when there are none.
pub fn worst_standing(counts: &StandingCounts) -> Standing {
    let order = [
        Standing::Failing,
        Standing::OutOfSync,
        Standing::Waiting,
        Standing::Progressing,
        Standing::Unknown,
    ];
    let entries = count_entries(counts);
    order
        .into_iter()
        .find(|worst| entries.iter().any(|(s, n)| s == worst && *n > 0))
        .unwrap_or(Standing::Healthy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_addresses_become_links() {
        assert!(is_web_url(
            "https://argocd.acme.example/applications/argocd/platform-payments"
        ));
        assert!(is_web_url("HTTP://argocd.local/applications/x"));
        for refused in [
            "javascript:alert(1)",
            "//evil.example",
            "/applications/x",
            "",
        ] {
            assert!(!is_web_url(refused), "{refused:?}");
        }
    }

    #[test]
    fn the_counts_read_as_a_line_with_waiting_apart_from_failing() {
        let counts = StandingCounts {
            healthy: 41,
            waiting: 3,
            failing: 1,
            ..StandingCounts::default()
        };
        assert_eq!(
            counts_in_words(&counts),
            "41 healthy · 3 waiting for CRDs · 1 failing"
        );
        assert_eq!(worst_standing(&counts), Standing::Failing);
        let waiting = StandingCounts {
            waiting: 1,
            ..StandingCounts::default()
        };
        assert_eq!(counts_in_words(&waiting), "0 healthy · 1 waiting for a CRD");
        assert_eq!(worst_standing(&waiting), Standing::Waiting);
        assert_eq!(
            counts_in_words(&StandingCounts::default()),
            "no platform Applications yet"
        );
        assert_eq!(
            worst_standing(&StandingCounts::default()),
            Standing::Healthy
        );
        assert_eq!(
            count_entries(&StandingCounts {
                unknown: 2,
                ..StandingCounts::default()
            })
            .last(),
            Some(&(Standing::Unknown, 2))
        );
    }

    #[test]
    fn waiting_is_calm_and_failing_is_not() {
        assert_eq!(standing_look(Standing::Waiting).0, Tone::Progress);
        assert_eq!(standing_look(Standing::Failing).0, Tone::Bad);
        assert_ne!(
            standing_look(Standing::Waiting).1,
            standing_look(Standing::Failing).1,
            "a glyph as well as a colour"
        );
    }
}
