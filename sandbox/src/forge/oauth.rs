//! GitHub's OAuth web flow with demo identities: the authorize page lists who one can be (each team
//! member, the admins, an outside visitor); choosing one redirects back with a single-use code, which the
//! token endpoint exchanges for a user token that `/user`, `/user/teams` and `/user/orgs` answer to.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{Authed, Reader};
use super::{ApiBase, Caller, Code, Forge, GitHubError, Result, Token, shapes};
use crate::git::people;
use crate::world::{ADMINS, ORGANISATION, PLATFORM_TEAM, TEAMS};

const ERRORS_DOC: &str = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors";

/// Query of `GET /login/oauth/authorize`; `login` is the identity chosen on the page.
#[derive(Debug, Deserialize)]
pub struct AuthorizeQuery {
    client_id: Option<String>,
    redirect_uri: Option<String>,
    state: Option<String>,
    scope: Option<String>,
    login: Option<String>,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    (
        status,
        Html(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
<style>body{{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;color:#1f2328}}\
a.who{{display:block;padding:.6rem .9rem;margin:.4rem 0;border:1px solid #d0d7de;border-radius:6px;\
text-decoration:none;color:inherit}}a.who:hover{{background:#f6f8fa}}small{{color:#59636e}}</style>\
</head><body>{body}</body></html>",
            title = escape(title)
        )),
    )
        .into_response()
}

/// Teams of `login`: the service teams, then the platform team.
fn teams_of(login: &str) -> Vec<&'static crate::world::Team> {
    TEAMS
        .iter()
        .chain(std::iter::once(&PLATFORM_TEAM))
        .filter(|t| t.members.contains(&login))
        .collect()
}

/// `GET /login/oauth/authorize`: the page to pick a demo identity, or the redirect once one is picked.
pub async fn authorize(
    State(forge): State<Forge>,
    base: ApiBase,
    Query(query): Query<AuthorizeQuery>,
) -> Response {
    let config = &forge.inner.config;
    if query.client_id.as_deref() != Some(config.client_id.as_str()) {
        return page(
            StatusCode::NOT_FOUND,
            "Not Found",
            "<h1>404</h1><p>This is not the web page you are looking for: the application's client_id is unknown.</p>",
        );
    }
    let Some(redirect_uri) = query.redirect_uri.clone().filter(|r| !r.is_empty()) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Bad request",
            "<h1>Bad request</h1><p>The redirect_uri parameter is required.</p>",
        );
    };
    let scope = query.scope.clone().unwrap_or_default();
    if let Some(login) = query.login.as_deref() {
        if !people::demo_logins().contains(&login) {
            return page(
                StatusCode::NOT_FOUND,
                "Not Found",
                "<h1>Unknown identity</h1>",
            );
        }
        let code = forge.secret("");
        let expires_at = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_mins(10))
            .unwrap_or(jiff::Timestamp::MAX);
        forge.state().add_code(
            code.clone(),
            Code {
                login: login.into(),
                redirect_uri: redirect_uri.clone(),
                scope,
                expires_at,
            },
        );
        let mut pairs = vec![("code", code)];
        if let Some(state) = query.state {
            pairs.push(("state", state));
        }
        let separator = if redirect_uri.contains('?') { '&' } else { '?' };
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        return Redirect::to(&format!("{redirect_uri}{separator}{query}")).into_response();
    }
    let link = |login: &str| {
        let pairs = [
            ("client_id", config.client_id.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("state", query.state.as_deref().unwrap_or("")),
            ("scope", scope.as_str()),
            ("login", login),
        ];
        format!(
            "{}/login/oauth/authorize?{}",
            base.url,
            serde_urlencoded::to_string(pairs).unwrap_or_default()
        )
    };
    let mut items = String::new();
    for login in people::demo_logins() {
        let who = people::identity(login);
        let teams = teams_of(login);
        let role = if ADMINS.contains(&login) {
            "platform admin".to_string()
        } else if teams.is_empty() {
            "outside the organisation's teams".to_string()
        } else {
            format!(
                "member of {}",
                teams.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
            )
        };
        items.push_str(&format!(
            "<a class=\"who\" data-testid=\"identity-{login}\" href=\"{href}\"><strong>{name}</strong> @{login}<br><small>{role}</small></a>",
            href = escape(&link(login)),
            name = escape(&who.name),
            login = escape(login),
            role = escape(&role),
        ));
    }
    page(
        StatusCode::OK,
        "Sign in to Tower",
        &format!(
            "<h1>Sign in to Tower</h1><p>This sandbox forge has no passwords: choose who you are.</p>{items}"
        ),
    )
}

/// Body of `POST /login/oauth/access_token` (form or JSON).
#[derive(Debug, Default, Deserialize)]
pub struct TokenRequest {
    client_id: Option<String>,
    client_secret: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
}

fn token_response(headers: &HeaderMap, body: Value) -> Response {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("json"));
    if wants_json {
        return Json(body).into_response();
    }
    // Without `Accept: application/json` GitHub answers form-encoded.
    let pairs: Vec<(String, String)> = body
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded; charset=utf-8",
        )],
        serde_urlencoded::to_string(pairs).unwrap_or_default(),
    )
        .into_response()
}

fn oauth_error(error: &str, description: &str, anchor: &str) -> Value {
    json!({
        "error": error,
        "error_description": description,
        "error_uri": format!("{ERRORS_DOC}#{anchor}"),
    })
}

/// `POST /login/oauth/access_token`: exchanges a code once. Failures are 200s with an `error`, as GitHub does.
pub async fn access_token(State(forge): State<Forge>, headers: HeaderMap, body: Bytes) -> Response {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.contains("json"));
    let request: TokenRequest = if is_json {
        serde_json::from_slice(&body).unwrap_or_default()
    } else {
        serde_urlencoded::from_bytes(&body).unwrap_or_default()
    };
    let config = &forge.inner.config;
    if request.client_id.as_deref() != Some(config.client_id.as_str())
        || request.client_secret.as_deref() != Some(config.client_secret.as_str())
    {
        return token_response(
            &headers,
            oauth_error(
                "incorrect_client_credentials",
                "The client_id and/or client_secret passed are incorrect.",
                "incorrect-client-credentials",
            ),
        );
    }
    let bad_code = || {
        oauth_error(
            "bad_verification_code",
            "The code passed is incorrect or expired.",
            "bad-verification-code",
        )
    };
    // Taking the code out of the map makes it single-use even when the exchange then fails.
    let Some(code) = request
        .code
        .as_ref()
        .and_then(|c| forge.state().codes.remove(c))
    else {
        return token_response(&headers, bad_code());
    };
    if code.expires_at <= jiff::Timestamp::now() {
        return token_response(&headers, bad_code());
    }
    if request
        .redirect_uri
        .as_ref()
        .is_some_and(|r| *r != code.redirect_uri)
    {
        return token_response(
            &headers,
            oauth_error(
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
                "redirect-uri-mismatch2",
            ),
        );
    }
    let token = forge.secret("gho_");
    forge.state().add_token(
        token.clone(),
        Token {
            caller: Caller::User(code.login),
            expires_at: jiff::Timestamp::MAX,
        },
    );
    token_response(
        &headers,
        json!({"access_token": token, "token_type": "bearer", "scope": code.scope}),
    )
}

fn signed_in(caller: &Caller) -> Result<String> {
    match caller {
        Caller::User(login) => Ok(login.clone()),
        Caller::Installation => Err(GitHubError::forbidden(
            "Resource not accessible by integration",
        )
        .docs("/users/users#get-the-authenticated-user")),
    }
}

fn full_user(forge: &Forge, base: &ApiBase, login: &str) -> Value {
    let who = people::identity(login);
    let mut value = shapes::user(base, &forge.inner.config.html_base, login);
    if let Some(object) = value.as_object_mut() {
        let extra = json!({
            "name": who.name,
            "company": if login == people::VISITOR { Value::Null } else { Value::String(format!("@{ORGANISATION}")) },
            "blog": "",
            "location": null,
            // A bot has no public email (its commits use the no-reply address, which is no valid email).
            "email": if who.bot { Value::Null } else { Value::String(who.email) },
            "hireable": null,
            "bio": null,
            "twitter_username": null,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": "2026-01-05T09:00:00Z",
            "updated_at": "2026-10-01T09:00:00Z",
        });
        if let Some(extra) = extra.as_object() {
            object.extend(extra.clone());
        }
    }
    value
}

/// `GET /user`: the signed-in person.
pub async fn user(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
) -> Result<Json<Value>> {
    let login = signed_in(&caller)?;
    Ok(Json(full_user(&forge, &base, &login)))
}

/// `GET /users/{login}`.
pub async fn get_user(
    _: Reader,
    State(forge): State<Forge>,
    base: ApiBase,
    Path(login): Path<String>,
) -> Result<Json<Value>> {
    let known = people::demo_logins().contains(&login.as_str()) || people::identity(&login).bot;
    if !known {
        return Err(GitHubError::not_found().docs("/users/users#get-a-user"));
    }
    Ok(Json(full_user(&forge, &base, &login)))
}

/// `GET /user/teams`: the signed-in person's teams, with their organisation.
pub async fn user_teams(
    Authed(caller): Authed,
    State(forge): State<Forge>,
    base: ApiBase,
) -> Result<Json<Value>> {
    let login = signed_in(&caller)?;
    let html = &forge.inner.config.html_base;
    let teams = teams_of(&login)
        .into_iter()
        .map(|team| {
            let id = 300_000
                + team
                    .slug
                    .bytes()
                    .fold(0u64, |h, b| (h * 31 + u64::from(b)) % 10_000);
            let api = format!("{}/orgs/{ORGANISATION}/teams/{}", base.url, team.slug);
            let organization =
                shapes::organization_full(&base, html, forge.repository_names().len());
            json!({
                "id": id,
                "node_id": shapes::node_id("Team", id),
                "url": api,
                "html_url": format!("{html}/orgs/{ORGANISATION}/teams/{}", team.slug),
                "name": team.name,
                "slug": team.slug,
                "description": format!("The {} team.", team.name),
                "privacy": "closed",
                "notification_setting": "notifications_enabled",
                "permission": "pull",
                "members_url": format!("{api}/members{{/member}}"),
                "repositories_url": format!("{api}/repos"),
                "parent": null,
                "type": "organization",
                "members_count": team.members.len(),
                "repos_count": 0,
                "created_at": "2026-01-05T09:00:00Z",
                "updated_at": "2026-10-01T09:00:00Z",
                "organization": organization,
            })
        })
        .collect();
    Ok(Json(Value::Array(teams)))
}

/// `GET /user/orgs`: the organisation for its members and admins, nothing for an outside visitor.
pub async fn user_orgs(Authed(caller): Authed, base: ApiBase) -> Result<Json<Value>> {
    let login = signed_in(&caller)?;
    let member = ADMINS.contains(&login.as_str()) || !teams_of(&login).is_empty();
    Ok(Json(if member {
        json!([shapes::organization(&base)])
    } else {
        json!([])
    }))
}
