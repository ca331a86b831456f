//! GitHub App authentication: JWTs signed with the App's key (RS256) for `/app…` calls, installation access
//! tokens that expire after an hour for everything else, and user OAuth tokens.

use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, Validation, errors::ErrorKind};
use serde_json::{Value, json};

use super::{ApiBase, Caller, Forge, GitHubError, Result, Token, shapes};
use crate::world::ORGANISATION;

/// The longest an App JWT may live, `exp - iat`, as GitHub enforces.
const MAX_JWT_LIFETIME: i64 = 600;
/// Clock drift tolerated between the App and the forge, in seconds.
const LEEWAY: i64 = 60;
/// The webhook events the App subscribes to: what the forge delivers.
const EVENTS: [&str; 4] = ["check_run", "pull_request", "pull_request_review", "push"];

fn bearer(parts: &Parts) -> Option<String> {
    let value = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    matches!(scheme.to_ascii_lowercase().as_str(), "bearer" | "token")
        .then(|| token.trim().to_string())
}

/// A request authenticated as the App itself, by a valid JWT.
pub struct AppJwt;

impl FromRequestParts<Forge> for AppJwt {
    type Rejection = GitHubError;

    async fn from_request_parts(parts: &mut Parts, forge: &Forge) -> Result<Self> {
        let token = bearer(parts)
            .ok_or_else(|| GitHubError::bad_jwt("A JSON web token could not be decoded"))?;
        verify_jwt(forge, &token)?;
        Ok(Self)
    }
}

#[derive(serde::Deserialize)]
struct Claims {
    iat: i64,
    exp: i64,
    iss: Value,
}

/// Checks an App JWT the way GitHub does: RS256 signed by one of the App's keys, issued by the App, valid
/// now (with a minute's leeway) and living at most ten minutes.
fn verify_jwt(forge: &Forge, token: &str) -> Result<()> {
    let undecodable = || GitHubError::bad_jwt("A JSON web token could not be decoded");
    let header = jsonwebtoken::decode_header(token).map_err(|_| undecodable())?;
    if header.alg != Algorithm::RS256 {
        return Err(undecodable());
    }
    let mut validation = Validation::new(Algorithm::RS256);
    validation.leeway = LEEWAY as u64;
    // `iat` and `iss` are checked below: octocrab sends `iss` as a number, which the crate's own issuer
    // check (strings only) would count as missing.
    validation.set_required_spec_claims(&["exp"]);
    let mut failure = undecodable();
    let mut claims = None;
    for key in &forge.inner.keys {
        match jsonwebtoken::decode::<Claims>(token, key, &validation) {
            Ok(data) => {
                claims = Some(data.claims);
                break;
            }
            Err(error) if matches!(error.kind(), ErrorKind::ExpiredSignature) => {
                failure = GitHubError::bad_jwt(
                    "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
                );
            }
            Err(error) => tracing::debug!(%error, "App JWT rejected"),
        }
    }
    let claims = claims.ok_or(failure)?;
    let now = jiff::Timestamp::now().as_second();
    if claims.exp - claims.iat > MAX_JWT_LIFETIME {
        return Err(GitHubError::bad_jwt(
            "'Expiration time' claim ('exp') is too far in the future",
        ));
    }
    if claims.iat > now + LEEWAY {
        return Err(GitHubError::bad_jwt(
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        ));
    }
    let app = forge.inner.config.app_id;
    let issuer_matches = match &claims.iss {
        Value::Number(n) => n.as_u64() == Some(app),
        Value::String(s) => s.trim() == app.to_string(),
        _ => false,
    };
    if !issuer_matches {
        return Err(GitHubError::bad_jwt(
            "'Issuer' claim ('iss') must be an Integer",
        ));
    }
    Ok(())
}

/// A request authenticated by an unexpired installation or user token.
pub struct Authed(pub Caller);

impl FromRequestParts<Forge> for Authed {
    type Rejection = GitHubError;

    async fn from_request_parts(parts: &mut Parts, forge: &Forge) -> Result<Self> {
        let token = bearer(parts).ok_or_else(GitHubError::bad_credentials)?;
        let now = jiff::Timestamp::now();
        let state = forge.state();
        match state.tokens.get(&token) {
            Some(found) if found.expires_at > now => Ok(Self(found.caller.clone())),
            _ => Err(GitHubError::bad_credentials()),
        }
    }
}

/// A read of the organisation's public repositories: anyone may make it, as on GitHub, where a public
/// repository's reads need no token. A token that is sent must still be valid: GitHub answers a bad one
/// with 401 even where none is needed.
pub struct Reader(
    /// Who reads, when they sent a token.
    pub Option<Caller>,
);

impl FromRequestParts<Forge> for Reader {
    type Rejection = GitHubError;

    async fn from_request_parts(parts: &mut Parts, forge: &Forge) -> Result<Self> {
        if parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .is_none()
        {
            return Ok(Self(None));
        }
        let Authed(caller) = Authed::from_request_parts(parts, forge).await?;
        Ok(Self(Some(caller)))
    }
}

fn permissions() -> Value {
    json!({
        "checks": "write",
        "contents": "write",
        "metadata": "read",
        "members": "read",
        "pull_requests": "write",
        "statuses": "write",
    })
}

fn installation(forge: &Forge, base: &ApiBase) -> Value {
    let config = &forge.inner.config;
    let id = config.installation_id;
    // GitHub's description of `GET /app/installations` makes the account both a user and an enterprise
    // (`allOf`), so the organisation also carries the enterprise fields (`name`, `slug`, its dates).
    let mut account = shapes::org_owner(base, &config.html_base);
    if let Some(object) = account.as_object_mut() {
        object.insert("name".into(), "Acme".into());
        object.insert("slug".into(), ORGANISATION.into());
        object.insert("created_at".into(), "2026-10-01T09:00:00Z".into());
        object.insert("updated_at".into(), "2026-10-01T09:00:00Z".into());
    }
    json!({
        "id": id,
        "account": account,
        "repository_selection": "all",
        "access_tokens_url": format!("{}/app/installations/{id}/access_tokens", base.url),
        "repositories_url": format!("{}/installation/repositories", base.url),
        "html_url": format!("{}/organizations/{ORGANISATION}/settings/installations/{id}", config.html_base),
        "app_id": config.app_id,
        "app_slug": config.app_slug,
        "target_id": shapes::ORGANISATION_ID,
        "target_type": "Organization",
        "permissions": permissions(),
        "events": EVENTS,
        "created_at": "2026-10-01T09:00:00Z",
        "updated_at": "2026-10-01T09:00:00Z",
        "single_file_name": null,
        "has_multiple_single_files": false,
        "single_file_paths": [],
        "suspended_by": null,
        "suspended_at": null,
    })
}

/// The App's homepage (its `external_url`), which GitHub makes the `details_url` of a check run created
/// without one.
pub(super) const HOMEPAGE: &str = "https://tower.acme.example";

/// `GET /app`: the authenticated App.
pub async fn get_app(_: AppJwt, State(forge): State<Forge>, base: ApiBase) -> Json<Value> {
    Json(app(&forge, &base))
}

/// The App as GitHub shows it (`integration`): `GET /app`, and the `app` of its check runs.
pub(super) fn app(forge: &Forge, base: &ApiBase) -> Value {
    let config = &forge.inner.config;
    json!({
        "id": config.app_id,
        "slug": config.app_slug,
        "node_id": shapes::node_id("Integration", config.app_id),
        "client_id": config.client_id,
        "owner": shapes::org_owner(base, &config.html_base),
        "name": "Tower",
        "description": "The developer portal of Acme's platform.",
        "external_url": HOMEPAGE,
        "html_url": format!("{}/apps/{}", config.html_base, config.app_slug),
        "created_at": "2026-10-01T09:00:00Z",
        "updated_at": "2026-10-01T09:00:00Z",
        "permissions": permissions(),
        "events": EVENTS,
        "installations_count": 1,
    })
}

/// `GET /app/installations`.
pub async fn list_installations(
    _: AppJwt,
    State(forge): State<Forge>,
    base: ApiBase,
) -> Json<Value> {
    Json(json!([installation(&forge, &base)]))
}

/// `GET /orgs/{org}/installation`.
pub async fn org_installation(
    _: AppJwt,
    State(forge): State<Forge>,
    base: ApiBase,
    Path(org): Path<String>,
) -> Result<Json<Value>> {
    if !org.eq_ignore_ascii_case(ORGANISATION) {
        return Err(GitHubError::not_found()
            .docs("/apps/apps#get-an-organization-installation-for-the-authenticated-app"));
    }
    Ok(Json(installation(&forge, &base)))
}

/// `GET /repos/{owner}/{repo}/installation`.
pub async fn repo_installation(
    _: AppJwt,
    State(forge): State<Forge>,
    base: ApiBase,
    Path((owner, repo)): Path<(String, String)>,
) -> Result<Json<Value>> {
    forge.repo(&owner, &repo)?;
    Ok(Json(installation(&forge, &base)))
}

/// `POST /app/installations/{id}/access_tokens`: a token for the installation, valid for an hour.
pub async fn create_access_token(
    _: AppJwt,
    State(forge): State<Forge>,
    Path(id): Path<u64>,
) -> Result<(StatusCode, Json<Value>)> {
    if id != forge.inner.config.installation_id {
        return Err(GitHubError::not_found()
            .docs("/apps/apps#create-an-installation-access-token-for-an-app"));
    }
    let token = forge.secret("ghs_");
    let lifetime = jiff::SignedDuration::try_from(forge.inner.config.token_lifetime)
        .unwrap_or(jiff::SignedDuration::from_hours(1));
    let expires_at = jiff::Timestamp::now()
        .checked_add(lifetime)
        .map_err(|e| GitHubError::internal(&e))?;
    forge.state().add_token(
        token.clone(),
        Token {
            caller: Caller::Installation,
            expires_at,
        },
    );
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "token": token,
            "expires_at": expires_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "permissions": permissions(),
            "repository_selection": "all",
        })),
    ))
}
