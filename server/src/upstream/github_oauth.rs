//! GitHub's OAuth web flow for signing members in: the authorize redirect, the code exchange, and reading
//! who the user is and which of the organisation's teams they belong to. The user's token is used for those
//! two reads and then dropped: Tower never acts with a person's token.

use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;
use shared::url::encode_query_value;

/// Failures talking to the OAuth provider. Their text goes to the log, never to a browser.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The provider could not be reached or answered garbage.
    #[error("OAuth provider request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// The code was refused (expired, reused, wrong client).
    #[error("the OAuth provider refused the code: {0}")]
    Refused(String),
}

/// `Result` for OAuth calls.
pub type Result<T, E = OAuthError> = std::result::Result<T, E>;

/// Where and as whom Tower signs users in.
#[derive(Clone)]
pub struct OAuthClient {
    http: reqwest::Client,
    /// e.g. `https://github.com/login/oauth/authorize`.
    pub authorize_url: String,
    /// e.g. `https://github.com/login/oauth/access_token`.
    pub token_url: String,
    /// e.g. `https://api.github.com/` (with a trailing slash).
    pub api_url: String,
    /// The OAuth app's client id (public).
    pub client_id: String,
    client_secret: SecretString,
    /// Only teams of this organisation count.
    pub organisation: String,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("authorize_url", &self.authorize_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"[redacted]")
            .finish()
    }
}

/// Who signed in, as the provider reports them.
#[derive(Debug, Clone)]
pub struct OAuthUser {
    /// Login.
    pub login: String,
    /// Display name.
    pub name: Option<String>,
    /// Avatar URL.
    pub avatar_url: Option<String>,
    /// Team slugs within the organisation.
    pub teams: Vec<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct User {
    login: String,
    name: Option<String>,
    avatar_url: Option<String>,
}

#[derive(Deserialize)]
struct Team {
    slug: String,
    organization: Organization,
}

#[derive(Deserialize)]
struct Organization {
    login: String,
}

impl OAuthClient {
    /// A client for the given endpoints and credentials.
    pub fn new(
        authorize_url: String,
        token_url: String,
        api_url: String,
        client_id: String,
        client_secret: SecretString,
        organisation: String,
    ) -> Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(15))
            .user_agent("tower")
            .build()?;
        let api_url = if api_url.ends_with('/') {
            api_url
        } else {
            format!("{api_url}/")
        };
        Ok(Self {
            http,
            authorize_url,
            token_url,
            api_url,
            client_id,
            client_secret,
            organisation,
        })
    }

    /// Where to send the browser: the provider's consent page, coming back to `redirect_uri` with `state`.
    pub fn authorize_redirect(&self, redirect_uri: &str, state: &str) -> String {
        let query = [
            ("client_id", self.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("scope", "read:org"),
            ("state", state),
        ];
        let encoded: Vec<String> = query
            .iter()
            .map(|(k, v)| format!("{k}={}", encode_query_value(v)))
            .collect();
        format!("{}?{}", self.authorize_url, encoded.join("&"))
    }

    /// Exchanges `code` for the user's identity and teams.
    pub async fn sign_in(&self, code: &str, redirect_uri: &str) -> Result<OAuthUser> {
        let token: TokenResponse = self
            .http
            .post(&self.token_url)
            .header("Accept", "application/json")
            .form(&[
                ("client_id", self.client_id.as_str()),
                ("client_secret", self.client_secret.expose_secret()),
                ("code", code),
                ("redirect_uri", redirect_uri),
            ])
            .send()
            .await?
            .json()
            .await?;
        let Some(access_token) = token.access_token.map(SecretString::from) else {
            return Err(OAuthError::Refused(
                token.error.unwrap_or_else(|| "no token".into()),
            ));
        };
        let user: User = self.get(&access_token, "user").await?;
        let teams: Vec<Team> = self.get(&access_token, "user/teams?per_page=100").await?;
        Ok(OAuthUser {
            login: user.login,
            name: user.name,
            avatar_url: user.avatar_url,
            teams: teams
                .into_iter()
                .filter(|t| {
                    t.organization
                        .login
                        .eq_ignore_ascii_case(&self.organisation)
                })
                .map(|t| t.slug)
                .collect(),
        })
    }

    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        token: &SecretString,
        path: &str,
    ) -> Result<T> {
        Ok(self
            .http
            .get(format!("{}{path}", self.api_url))
            .header("Accept", "application/vnd.github+json")
            .bearer_auth(token.expose_secret())
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }
}
