//! Signing in and out: `shared::api::GetSession` and its siblings for the app, `/auth/github/…` for the browser's OAuth redirects.

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum_extra::extract::PrivateCookieJar;
use axum_extra::extract::cookie::Cookie;
use serde::Deserialize;
use shared::api::{ContinueAsGuest, GetSession, SignOut};
use shared::auth::Identity;
use shared::session::SessionInfo;

use crate::auth::{CurrentUser, OAUTH_STATE_COOKIE, SESSION_COOKIE, random_token};
use crate::error::Error;
use crate::routes::ApiRoutes;
use crate::sinks;
use crate::state::AppState;

/// The session routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<GetSession, _, _>(session)
        .serve::<ContinueAsGuest, _, _>(continue_as_guest)
        .serve::<SignOut, _, _>(sign_out)
}

/// The browser-facing OAuth redirects (not JSON, so outside `/api`).
pub fn browser_routes() -> Router<AppState> {
    Router::new()
        .route("/auth/github/start", get(github_start))
        .route("/auth/github/callback", get(github_callback))
}

fn info(state: &AppState, identity: Option<Identity>) -> SessionInfo {
    SessionInfo {
        identity,
        policy: state.auth.policy.clone(),
        github: state.auth.github.is_some(),
        sandbox: state.auth.sandbox,
    }
}

async fn session(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Json<SessionInfo> {
    Json(info(&state, user))
}

async fn continue_as_guest(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
) -> Result<impl IntoResponse, Error> {
    let identity = Identity::guest();
    let jar = jar.add(state.auth.session_cookie(identity.clone())?);
    tracing::info!(target: "audit", user = "guest", action = "sign-in", "guest session started");
    Ok((jar, Json(info(&state, Some(identity)))))
}

/// Ends the session: the browser forgets the cookie, and the server refuses any copy of it from now on.
async fn sign_out(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    jar: PrivateCookieJar,
) -> Response {
    let revoked = state.auth.revoke_session_in(&jar);
    let jar = jar.remove(Cookie::build(SESSION_COOKIE).path("/"));
    match revoked {
        Ok(()) => {
            if let Some(user) = user {
                tracing::info!(target: "audit", user = %user.login, action = "sign-out", "session ended");
            }
            (jar, StatusCode::NO_CONTENT).into_response()
        }
        // The browser still forgets the cookie, but a copy would still be honoured: say so, not "done".
        Err(error) => (jar, Error::Internal(error.into())).into_response(),
    }
}

#[derive(Deserialize)]
struct StartQuery {
    return_to: Option<String>,
}

/// What the sign-in redirects answer when this Tower has no OAuth app.
const NOT_CONFIGURED: Error = Error::NotConfigured("GitHub sign-in");

fn callback_url(state: &AppState) -> String {
    format!("{}/auth/github/callback", state.auth.public_origin)
}

async fn github_start(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    Query(query): Query<StartQuery>,
) -> Result<Response, Error> {
    let github = state.auth.github.as_ref().ok_or(NOT_CONFIGURED)?;
    let token = random_token()?;
    let return_to = sinks::return_path(&state.auth.public_origin, query.return_to.as_deref());
    let cookie = state.auth.cookie(
        OAUTH_STATE_COOKIE,
        format!("{token} {return_to}"),
        Some(std::time::Duration::from_secs(600)),
    );
    let location = github.authorize_redirect(&callback_url(&state), &token);
    Ok((jar.add(cookie), sinks::see_other_elsewhere(&location)).into_response())
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

async fn github_callback(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(github) = &state.auth.github else {
        return NOT_CONFIGURED.into_response();
    };
    let expected = jar.get(OAUTH_STATE_COOKIE).map(|c| c.value().to_string());
    let jar = jar.remove(Cookie::build(OAUTH_STATE_COOKIE).path("/"));
    let Some((expected_state, return_to)) = expected.as_deref().and_then(|v| v.split_once(' '))
    else {
        return sign_in_failed(
            jar,
            "The sign-in took too long or was started elsewhere; please try again.",
        );
    };
    // Checked again: the cookie is ours, but a path stored by an older Tower was checked by older rules.
    let return_to = sinks::return_path(&state.auth.public_origin, Some(return_to));
    if query.error.is_some() {
        return sign_in_failed(jar, "GitHub did not sign you in.");
    }
    let (Some(code), Some(got_state)) = (query.code, query.state) else {
        return sign_in_failed(jar, "GitHub's answer was incomplete; please try again.");
    };
    if got_state != expected_state {
        return sign_in_failed(jar, "The sign-in could not be verified; please try again.");
    }
    match github.sign_in(&code, &callback_url(&state)).await {
        Ok(user) => {
            let identity =
                state
                    .auth
                    .identity_for(user.login, user.name, user.teams, user.avatar_url);
            tracing::info!(target: "audit", user = %identity.login, action = "sign-in", teams = ?identity.teams, "member signed in");
            match state.auth.session_cookie(identity) {
                Ok(session) => (jar.add(session), sinks::see_other(&return_to)).into_response(),
                Err(error) => {
                    tracing::warn!(%error, "cannot start a session");
                    sign_in_failed(jar, "Tower could not start your session; please try again.")
                }
            }
        }
        Err(error) => {
            tracing::warn!(%error, "GitHub sign-in failed");
            sign_in_failed(jar, "GitHub sign-in failed; please try again.")
        }
    }
}

fn sign_in_failed(jar: PrivateCookieJar, message: &str) -> Response {
    let location = format!(
        "/sign-in?error={}",
        shared::url::encode_query_value(message)
    );
    (jar, sinks::see_other(&location)).into_response()
}
