//! The session as the app sees it (`GET /api/v1/session`).

use serde::{Deserialize, Serialize};

use crate::auth::{Decision, Identity, Permission, Policy};

/// Who is signed in, and the policy, so the app can hide what the user may not do and say why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Who is signed in, if anyone.
    pub identity: Option<Identity>,
    /// The access policy.
    pub policy: Policy,
    /// Whether "Sign in with GitHub" is offered.
    pub github: bool,
    /// Whether Tower runs on the sandbox (sign-in then offers demo identities).
    pub sandbox: bool,
}

impl SessionInfo {
    /// What the policy says about `permission` on a service owned by `owner_team`.
    pub fn decide(&self, permission: Permission, owner_team: Option<&str>) -> Decision {
        self.policy
            .decide(self.identity.as_ref(), permission, owner_team)
    }
}
