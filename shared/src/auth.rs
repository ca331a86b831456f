//! Who may do what. Permissions are a closed set; the policy is a pure function, so the server enforces it
//! and the browser uses the same function to hide what a user may not do (and say why).
//!
//! The rules (design document 002): anyone can sign in as a guest and browse; guests get exactly the
//! configured allowlist; members read; owners (members of a Component's owner team) also act on their own
//! services; admins do everything; everything else is denied. A permission a new feature introduces is
//! denied to guests until it is added to the allowlist.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Everything Tower lets someone do, one variant per capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Services, owners, repositories, dependencies.
    ReadCatalog,
    /// Deployment state: versions, sync, health, rollouts, pods (not their logs).
    ReadFleet,
    /// Release records and their diffs.
    ReadReleases,
    /// Tower's pull requests and their checks.
    ReadPullRequests,
    /// A service's metrics: the fixed queries of the Metrics tab.
    ReadMetrics,
    /// The platform's own components, packages and Applications per cluster (`/platform`).
    ReadPlatform,
    /// Pod logs (owner-only).
    ReadLogs,
    /// A failed migration's database error text (owner-only).
    ReadDatabaseErrors,
    /// Golden-path forms and their previews (owner-only for a service; any member to onboard for their team).
    RunTemplates,
    /// Open a Promote-to-prod pull request (owner-only).
    Promote,
    /// Open a Rollback pull request (owner-only).
    Rollback,
    /// Sync or refresh an Argo CD Application (owner-only).
    Sync,
    /// Edit a service's `platform/` files in the Config tab and open the pull request (owner-only).
    EditConfig,
}

impl Permission {
    /// Every permission, for exhaustive tests and the UI's explanations.
    pub const ALL: [Permission; 13] = [
        Permission::ReadCatalog,
        Permission::ReadFleet,
        Permission::ReadReleases,
        Permission::ReadPullRequests,
        Permission::ReadMetrics,
        Permission::ReadPlatform,
        Permission::ReadLogs,
        Permission::ReadDatabaseErrors,
        Permission::RunTemplates,
        Permission::Promote,
        Permission::Rollback,
        Permission::Sync,
        Permission::EditConfig,
    ];

    /// Whether exercising it changes something (a pull request, an Argo CD sync): such requests are audited
    /// and rate limited, and only owners have them.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Permission::RunTemplates
                | Permission::Promote
                | Permission::Rollback
                | Permission::Sync
                | Permission::EditConfig
        )
    }

    /// Whether only the owners of the service concerned (and admins) have it: every write, and the reads
    /// that may reveal a service's internals.
    pub fn is_owner_only(self) -> bool {
        self.is_write() || matches!(self, Permission::ReadLogs | Permission::ReadDatabaseErrors)
    }

    /// What it allows, as a verb phrase ("see logs").
    pub fn phrase(self) -> &'static str {
        match self {
            Permission::ReadCatalog => "browse the catalog",
            Permission::ReadFleet => "see deployments",
            Permission::ReadReleases => "see releases",
            Permission::ReadPullRequests => "see pull requests",
            Permission::ReadMetrics => "see metrics",
            Permission::ReadPlatform => "see the platform",
            Permission::ReadLogs => "see logs",
            Permission::ReadDatabaseErrors => "see database errors",
            Permission::RunTemplates => "run templates",
            Permission::Promote => "promote",
            Permission::Rollback => "roll back",
            Permission::Sync => "sync",
            Permission::EditConfig => "edit config",
        }
    }

    /// The guest allowlist used when the configuration names none.
    pub fn default_guest_allowlist() -> BTreeSet<Permission> {
        [
            Permission::ReadCatalog,
            Permission::ReadFleet,
            Permission::ReadReleases,
            Permission::ReadPullRequests,
            Permission::ReadMetrics,
            Permission::ReadPlatform,
        ]
        .into()
    }
}

/// What kind of account a signed-in user has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccountKind {
    /// "Continue as guest": no account.
    Guest,
    /// Signed in with the forge; their teams decide what they own.
    Member,
    /// Listed as an admin in the configuration.
    Admin,
}

/// A signed-in user, as the session holds them and `/api/v1/session` reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Forge login, or `guest`.
    pub login: String,
    /// Display name.
    pub name: String,
    /// Guest, member or admin.
    pub kind: AccountKind,
    /// Slugs of the organisation teams they belong to.
    pub teams: Vec<String>,
    /// Avatar image URL, when the forge has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
}

impl Identity {
    /// The identity "Continue as guest" signs in as.
    pub fn guest() -> Self {
        Self {
            login: "guest".into(),
            name: "Guest".into(),
            kind: AccountKind::Guest,
            teams: Vec::new(),
            avatar_url: None,
        }
    }

    /// Whether they belong to `team`.
    pub fn in_team(&self, team: &str) -> bool {
        self.teams.iter().any(|t| t == team)
    }
}

/// The outcome of a permission check; a denial says why, in words for the person denied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Nobody is signed in.
    SignInRequired,
    /// Signed in, but not allowed; `reason` is a sentence such as "Owners of payments can see logs."
    Deny {
        /// Why, and who can.
        reason: String,
    },
}

impl Decision {
    /// Whether it allows.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// The access policy: the guest allowlist; the rest is fixed by the rules above.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// What guests may do.
    pub guest_allowlist: BTreeSet<Permission>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            guest_allowlist: Permission::default_guest_allowlist(),
        }
    }
}

impl Policy {
    /// May `who` exercise `permission`, on the service owned by `owner_team` when the action concerns one?
    ///
    /// An owner-only permission asked without a service (`owner_team: None`) is allowed to members of any
    /// team (e.g. onboarding a new service for one's own team) and to admins.
    pub fn decide(
        &self,
        who: Option<&Identity>,
        permission: Permission,
        owner_team: Option<&str>,
    ) -> Decision {
        let Some(who) = who else {
            return Decision::SignInRequired;
        };
        match who.kind {
            AccountKind::Admin => Decision::Allow,
            AccountKind::Guest => {
                if self.guest_allowlist.contains(&permission) {
                    Decision::Allow
                } else {
                    Decision::Deny {
                        reason: match owner_team {
                            Some(team) if permission.is_owner_only() => {
                                format!(
                                    "Owners of {team} can {}. Sign in with GitHub if you are one.",
                                    permission.phrase()
                                )
                            }
                            _ => format!(
                                "Guests cannot {}. Sign in with GitHub to do more.",
                                permission.phrase()
                            ),
                        },
                    }
                }
            }
            AccountKind::Member => {
                if !permission.is_owner_only() {
                    return Decision::Allow;
                }
                match owner_team {
                    Some(team) if who.in_team(team) => Decision::Allow,
                    Some(team) => Decision::Deny {
                        reason: format!("Owners of {team} can {}.", permission.phrase()),
                    },
                    None if !who.teams.is_empty() => Decision::Allow,
                    None => Decision::Deny {
                        reason: format!("Members of a team can {}.", permission.phrase()),
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(teams: &[&str]) -> Identity {
        Identity {
            login: "ada".into(),
            name: "Ada".into(),
            kind: AccountKind::Member,
            teams: teams.iter().map(|t| (*t).to_string()).collect(),
            avatar_url: None,
        }
    }

    #[test]
    fn nobody_signed_in_may_do_nothing() {
        let policy = Policy::default();
        for permission in Permission::ALL {
            assert_eq!(
                policy.decide(None, permission, None),
                Decision::SignInRequired
            );
        }
    }

    #[test]
    fn guests_get_exactly_the_allowlist() {
        let policy = Policy::default();
        let guest = Identity::guest();
        let allowed: BTreeSet<_> = Permission::ALL
            .into_iter()
            .filter(|p| policy.decide(Some(&guest), *p, Some("payments")).allowed())
            .collect();
        assert_eq!(allowed, Permission::default_guest_allowlist());
        assert!(!allowed.contains(&Permission::ReadDatabaseErrors));
        assert!(!allowed.contains(&Permission::ReadLogs));
    }

    #[test]
    fn a_narrower_allowlist_narrows_guests_only() {
        let policy = Policy {
            guest_allowlist: [Permission::ReadCatalog].into(),
        };
        let guest = Identity::guest();
        assert!(
            !policy
                .decide(Some(&guest), Permission::ReadReleases, None)
                .allowed()
        );
        assert!(
            policy
                .decide(Some(&member(&[])), Permission::ReadReleases, None)
                .allowed()
        );
    }

    #[test]
    fn owners_act_on_their_own_services_only() {
        let policy = Policy::default();
        let ada = member(&["payments"]);
        for permission in Permission::ALL.into_iter().filter(|p| p.is_owner_only()) {
            assert!(
                policy
                    .decide(Some(&ada), permission, Some("payments"))
                    .allowed()
            );
            assert_eq!(
                policy.decide(Some(&ada), permission, Some("shop")),
                Decision::Deny {
                    reason: format!("Owners of shop can {}.", permission.phrase())
                }
            );
        }
    }

    #[test]
    fn members_read_everything_that_is_not_owner_only() {
        let policy = Policy::default();
        let outsider = member(&[]);
        for permission in Permission::ALL {
            assert_eq!(
                policy
                    .decide(Some(&outsider), permission, Some("payments"))
                    .allowed(),
                !permission.is_owner_only(),
                "{permission:?}"
            );
        }
    }

    #[test]
    fn admins_may_do_everything() {
        let policy = Policy::default();
        let admin = Identity {
            kind: AccountKind::Admin,
            ..member(&[])
        };
        for permission in Permission::ALL {
            assert!(
                policy
                    .decide(Some(&admin), permission, Some("payments"))
                    .allowed()
            );
        }
    }

    #[test]
    fn a_guest_denied_an_owner_action_is_told_who_can() {
        let policy = Policy::default();
        let decision = policy.decide(
            Some(&Identity::guest()),
            Permission::ReadLogs,
            Some("payments"),
        );
        assert_eq!(
            decision,
            Decision::Deny {
                reason: "Owners of payments can see logs. Sign in with GitHub if you are one."
                    .into()
            }
        );
    }
}
