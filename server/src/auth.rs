//! Sign-in, sessions and the permission check every API route goes through.
//!
//! Sessions live in one private (encrypted and authenticated) cookie holding the identity, a random session id
//! and its expiry; no token of any kind is ever put in it, returned, or logged. Signing out puts the id on the
//! [`revoked`] list, so a copy of the cookie is refused afterwards. GitHub's OAuth web flow signs members in; in
//! sandbox mode the sandbox forge plays GitHub, so the demo runs the production code path.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use serde::{Deserialize, Serialize};
use shared::auth::{AccountKind, Identity, Policy};

use crate::error::Error;
use crate::upstream::github_oauth::OAuthClient;

pub mod revoked;

pub use revoked::{RevocationError, RevokedSessions};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "tower_session";
/// Name of the cookie carrying the OAuth `state` between the redirect and the callback.
pub const OAUTH_STATE_COOKIE: &str = "tower_oauth";

/// Everything sign-in and permission checks need, part of [`crate::state::AppState`].
#[derive(Clone)]
pub struct AuthState {
    /// Encrypts and authenticates the cookies.
    pub key: Key,
    /// The access policy (guest allowlist).
    pub policy: Policy,
    /// Forge logins with every permission.
    pub admins: BTreeSet<String>,
    /// How long a session lasts.
    pub session_ttl: Duration,
    /// Sessions ended by signing out.
    pub revoked: std::sync::Arc<RevokedSessions>,
    /// Whether cookies get `Secure` (Tower is served over TLS).
    pub secure_cookies: bool,
    /// The origin browsers reach Tower at (`scheme://host:port`), for the CSRF origin check.
    pub public_origin: String,
    /// GitHub (or the sandbox forge) OAuth, when configured.
    pub github: Option<OAuthClient>,
    /// Whether the OAuth provider is the sandbox forge (the sign-in page then speaks of demo identities).
    pub sandbox: bool,
}

impl FromRef<crate::state::AppState> for Key {
    fn from_ref(state: &crate::state::AppState) -> Self {
        state.auth.key.clone()
    }
}

/// What the session cookie holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SessionData {
    identity: Identity,
    /// Random, so signing out can revoke this session alone. Cookies from before ids existed have none and
    /// are refused: they could not be revoked.
    #[serde(default)]
    id: String,
    /// Unix seconds after which the session is void.
    expires_at: u64,
}

/// Seconds since the Unix epoch, as session expiries are kept.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl AuthState {
    /// The identity a forge user signs in as: admin when configured, else member.
    pub fn identity_for(
        &self,
        login: String,
        name: Option<String>,
        teams: Vec<String>,
        avatar_url: Option<String>,
    ) -> Identity {
        let kind = if self.admins.contains(&login) {
            AccountKind::Admin
        } else {
            AccountKind::Member
        };
        Identity {
            name: name
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| login.clone()),
            login,
            kind,
            teams,
            avatar_url,
        }
    }

    /// A cookie starting a new session for `identity`.
    pub fn session_cookie(&self, identity: Identity) -> Result<Cookie<'static>, Error> {
        let data = SessionData {
            identity,
            id: random_token()?,
            expires_at: unix_now() + self.session_ttl.as_secs(),
        };
        // Serializing our own plain struct cannot fail.
        let value = serde_json::to_string(&data).unwrap_or_default();
        Ok(self.cookie(SESSION_COOKIE, value, Some(self.session_ttl)))
    }

    /// A cookie with Tower's attributes: HttpOnly, SameSite=Lax, Path=/, Secure behind TLS.
    pub fn cookie(
        &self,
        name: &'static str,
        value: String,
        max_age: Option<Duration>,
    ) -> Cookie<'static> {
        let mut cookie = Cookie::build((name, value))
            .http_only(true)
            .same_site(SameSite::Lax)
            .path("/")
            .secure(self.secure_cookies)
            .build();
        if let Some(age) = max_age.and_then(|a| cookie::time::Duration::try_from(a).ok()) {
            cookie.set_max_age(age);
        }
        cookie
    }

    /// The session in `jar`, if it is ours, unexpired and not signed out.
    fn session_in(&self, jar: &PrivateCookieJar) -> Option<SessionData> {
        let cookie = jar.get(SESSION_COOKIE)?;
        let data: SessionData = serde_json::from_str(cookie.value()).ok()?;
        let valid = data.expires_at > unix_now()
            && !data.id.is_empty()
            && !self.revoked.is_revoked(&data.id);
        valid.then_some(data)
    }

    /// The identity of the session in `jar`, if it is ours, unexpired and not signed out.
    pub fn identity_in(&self, jar: &PrivateCookieJar) -> Option<Identity> {
        self.session_in(jar).map(|data| data.identity)
    }

    /// Ends the session in `jar` for good, so a copy of its cookie is refused from now on; no session, no-op.
    pub fn revoke_session_in(&self, jar: &PrivateCookieJar) -> Result<(), RevocationError> {
        match self.session_in(jar) {
            Some(data) => self.revoked.revoke(&data.id, data.expires_at),
            None => Ok(()),
        }
    }
}

/// The signed-in user of a request, if any. Never fails: anonymous requests get `None`, and the permission
/// check decides what that means.
#[derive(Debug, Clone)]
pub struct CurrentUser(pub Option<Identity>);

impl FromRequestParts<crate::state::AppState> for CurrentUser {
    type Rejection = Error;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &crate::state::AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(user) = parts.extensions.get::<CurrentUser>() {
            return Ok(user.clone());
        }
        let jar = PrivateCookieJar::from_headers(&parts.headers, state.auth.key.clone());
        let user = CurrentUser(state.auth.identity_in(&jar));
        parts.extensions.insert(user.clone());
        Ok(user)
    }
}

/// A random URL-safe token (OAuth state).
pub fn random_token() -> Result<String, Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Internal(anyhow::anyhow!("no randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
