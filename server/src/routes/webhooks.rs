//! GitHub's webhook (`shared::api::GithubWebhook`): the forge says what changed, so Tower reads only that
//! instead of polling everything.
//!
//! The delivery's `X-Hub-Signature-256` (`sha256=` and the hex HMAC-SHA256 of the raw body under the
//! configured secret) is the only credential: there is no session and no CSRF header, and `routes::csrf`
//! exempts exactly this route. Nothing is parsed, let alone acted on, before the signature checks out in
//! constant time; a missing or wrong signature, or a Tower without a secret, gets 401 and no effect.
//!
//! What each event does, always for the configured organisation's repositories only:
//!
//! | event | effect |
//! |---|---|
//! | `ping` | nothing (204) |
//! | `pull_request`, `pull_request_review` on the GitOps repository | that pull request is read again, if it is Tower's ([`crate::delivery::tracking`]); a merge also wakes the activity feed's merge read |
//! | `check_run` on the GitOps repository | the pull requests it names (or whose head it ran on) are read again |
//! | `push` to the GitOps repository's main | release records look main up again; open pull requests are read again (mergeability); browsers get `releases_changed` |
//! | `push` to a service repository's default branch | its `catalog-info.yaml` is read again, conditionally ([`crate::fleet::catalog`]) |
//! | `repository` deleted or renamed | its catalog entry is read again (and so goes) |
//! | anything else | nothing (204) |
//!
//! Every effect is a note in a bounded queue that a background task drains after a short debounce, so a
//! delivery is answered at once and a burst costs one read per thing named.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use secrecy::ExposeSecret as _;
use serde_json::Value;
use sha2::Sha256;
use shared::api::GithubWebhook;
use shared::delivery::BASE_BRANCH;
use shared::fleet::FleetEvent;
use shared::{ApiError, ErrorCode};

use crate::delivery::Delivery;
use crate::delivery::pull::is_tower_pull;
use crate::routes::ApiRoutes;
use crate::state::AppState;

/// The largest delivery read (GitHub caps payloads at 25 MB; Tower's events are far smaller).
pub const BODY_LIMIT: usize = 5 * 1024 * 1024;
/// The header carrying the delivery's HMAC-SHA256.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// The header naming the event.
pub const EVENT_HEADER: &str = "x-github-event";
/// Pull requests one `check_run` delivery may name that are looked at.
const PULLS_PER_CHECK_RUN: usize = 20;

/// The webhook's routes.
pub fn routes(api: ApiRoutes) -> ApiRoutes {
    api.serve::<GithubWebhook, _, _>(receive)
}

/// Why a delivery was refused.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// This Tower has no webhook secret: it cannot tell GitHub from anyone else.
    #[error("no webhook secret is configured")]
    NotConfigured,
    /// No `X-Hub-Signature-256`.
    #[error("the delivery is not signed")]
    Unsigned,
    /// The signature is malformed or does not match the body.
    #[error("the delivery's signature does not match")]
    BadSignature,
    /// The body is larger than [`BODY_LIMIT`].
    #[error("the delivery is larger than {BODY_LIMIT} bytes")]
    TooLarge,
    /// Signed, but not JSON.
    #[error("the delivery is not JSON")]
    NotJson,
}

impl IntoResponse for WebhookError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            // One answer for all three, so a caller without the secret learns nothing about the setup.
            WebhookError::NotConfigured | WebhookError::Unsigned | WebhookError::BadSignature => {
                tracing::warn!(reason = %self, "refused a webhook delivery");
                (
                    StatusCode::UNAUTHORIZED,
                    ApiError::new(
                        ErrorCode::Unauthenticated,
                        "The delivery's X-Hub-Signature-256 is missing or does not match this Tower's \
                         webhook secret.",
                    ),
                )
            }
            WebhookError::TooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                ApiError::new(
                    ErrorCode::BadRequest,
                    format!("A delivery may be at most {BODY_LIMIT} bytes."),
                ),
            ),
            WebhookError::NotJson => (
                StatusCode::BAD_REQUEST,
                ApiError::new(ErrorCode::BadRequest, "The delivery's body is not JSON."),
            ),
        };
        (status, Json(body)).into_response()
    }
}

/// Checks `signature` (`sha256=<hex>`) against the HMAC-SHA256 of `body` under `secret`, in constant time.
pub fn verify(secret: &[u8], body: &[u8], signature: Option<&str>) -> Result<(), WebhookError> {
    let signature = signature.ok_or(WebhookError::Unsigned)?;
    let expected = signature
        .strip_prefix("sha256=")
        .and_then(|hex| hex::decode(hex).ok())
        .ok_or(WebhookError::BadSignature)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| WebhookError::BadSignature)?;
    mac.update(body);
    mac.verify_slice(&expected)
        .map_err(|_| WebhookError::BadSignature)
}

/// `sha256=` and the hex HMAC-SHA256 of `body` under `secret`: what GitHub sends (tests sign with it too).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes a key of any length, so this cannot fail; an empty signature would be refused anyway.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<StatusCode, WebhookError> {
    let (delivery, secret) = match &state.delivery {
        Some(delivery) => match delivery.webhook_secret() {
            Some(secret) => (delivery, secret),
            None => return Err(WebhookError::NotConfigured),
        },
        None => return Err(WebhookError::NotConfigured),
    };
    let body = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| WebhookError::TooLarge)?;
    verify(
        secret.expose_secret().as_bytes(),
        &body,
        headers
            .get(SIGNATURE_HEADER)
            .and_then(|value| value.to_str().ok()),
    )?;
    let payload: Value = serde_json::from_slice(&body).map_err(|_| WebhookError::NotJson)?;
    let event = headers
        .get(EVENT_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let taken = dispatch(&state, delivery, event, &payload);
    tracing::debug!(event, taken, "webhook delivery");
    Ok(StatusCode::NO_CONTENT)
}

/// Acts on one verified delivery; true when it changed something.
fn dispatch(state: &AppState, delivery: &Delivery, event: &str, payload: &Value) -> bool {
    let text = |path: &[&str]| -> Option<&str> {
        path.iter()
            .try_fold(payload, |value, key| value.get(key))
            .and_then(Value::as_str)
    };
    let repository = text(&["repository", "full_name"]).unwrap_or_default();
    let gitops = repository.eq_ignore_ascii_case(&delivery.repository());
    let organisation = &delivery.config().organisation;
    let in_organisation = repository
        .split_once('/')
        .is_some_and(|(owner, name)| owner.eq_ignore_ascii_case(organisation) && !name.is_empty());
    match event {
        "pull_request" | "pull_request_review" if gitops => {
            let Some(pull) = payload.get("pull_request") else {
                return false;
            };
            let Some(number) = pull.get("number").and_then(Value::as_u64) else {
                return false;
            };
            let claimed = claims_tower(pull);
            let merged = event == "pull_request"
                && payload.get("action").and_then(Value::as_str) == Some("closed")
                && pull.get("merged").and_then(Value::as_bool) == Some(true);
            if merged {
                delivery.merges_wake().notify_one();
            }
            delivery.tracker().pull_changed(number, claimed) || merged
        }
        "check_run" if gitops => {
            let Some(run) = payload.get("check_run") else {
                return false;
            };
            let mut taken = false;
            let named = run
                .get("pull_requests")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for pull in named.iter().take(PULLS_PER_CHECK_RUN) {
                if let Some(number) = pull.get("number").and_then(Value::as_u64) {
                    taken |= delivery.tracker().pull_changed(number, claims_tower(pull));
                }
            }
            if !taken {
                // GitHub leaves `pull_requests` empty for some runs (forks, and runs created before the pull
                // request): the head commit or branch says which of Tower's pull requests it ran on.
                let head = run
                    .get("head_sha")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let branch = run
                    .get("check_suite")
                    .and_then(|suite| suite.get("head_branch"))
                    .and_then(Value::as_str);
                for number in delivery.tracker().open_with_head(head, branch) {
                    taken |= delivery.tracker().pull_changed(number, true);
                }
            }
            taken
        }
        "push" if gitops => {
            if text(&["ref"]) != Some(&format!("refs/heads/{BASE_BRANCH}")) {
                // Pushes to Tower's branches arrive again as `pull_request` (synchronize).
                return false;
            }
            delivery.releases().main_moved();
            delivery.tracker().main_moved();
            state.fleet.announce(FleetEvent::ReleasesChanged);
            true
        }
        "push" if in_organisation => {
            let Some(catalog) = delivery.catalog() else {
                return false;
            };
            let Some(branch) = text(&["repository", "default_branch"]) else {
                return false;
            };
            if text(&["ref"]) != Some(&format!("refs/heads/{branch}"))
                || payload.get("deleted").and_then(Value::as_bool) == Some(true)
                || !may_change_catalog(payload)
            {
                return false;
            }
            catalog.repository_pushed(repository, branch);
            true
        }
        "repository" if in_organisation => {
            let Some(catalog) = delivery.catalog() else {
                return false;
            };
            let branch = text(&["repository", "default_branch"]).unwrap_or(BASE_BRANCH);
            match payload.get("action").and_then(Value::as_str) {
                // Reading a deleted repository's file finds nothing, which removes its entry.
                Some("deleted") => catalog.repository_pushed(repository, branch),
                Some("renamed") => {
                    if let Some(old) = payload
                        .get("changes")
                        .and_then(|c| c.get("repository"))
                        .and_then(|r| r.get("name"))
                        .and_then(|n| n.get("from"))
                        .and_then(Value::as_str)
                    {
                        catalog.repository_pushed(&format!("{organisation}/{old}"), branch);
                    }
                    catalog.repository_pushed(repository, branch);
                }
                _ => return false,
            }
            true
        }
        _ => false,
    }
}

/// Whether a pull request as a delivery shows it (`head.ref`, `labels`) is one of Tower's.
fn claims_tower(pull: &Value) -> bool {
    let branch = pull
        .get("head")
        .and_then(|head| head.get("ref"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let labels = pull
        .get("labels")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    is_tower_pull(
        branch,
        labels
            .iter()
            .filter_map(|label| label.get("name").and_then(Value::as_str)),
    )
}

/// Whether a push may have changed `catalog-info.yaml`: false only when the delivery lists every pushed
/// commit with its files and none touches it (a forced push, or a list GitHub cut short, may hide a change).
fn may_change_catalog(payload: &Value) -> bool {
    const LISTED_AT_MOST: usize = 2048;
    let file = crate::fleet::catalog::CATALOG_FILE;
    if payload.get("forced").and_then(Value::as_bool) == Some(true) {
        return true;
    }
    let Some(commits) = payload.get("commits").and_then(Value::as_array) else {
        return true;
    };
    if commits.is_empty() || commits.len() >= LISTED_AT_MOST {
        return true;
    }
    commits.iter().any(|commit| {
        ["added", "modified", "removed"].iter().any(|list| {
            match commit.get(*list).and_then(Value::as_array) {
                Some(paths) => paths.iter().any(|p| p.as_str() == Some(file)),
                // A commit without its lists says nothing: read.
                None => true,
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_documented_example_signature_verifies() {
        // From GitHub's "Validating webhook deliveries": secret "It's a Secret to Everybody", payload
        // "Hello, World!".
        let signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            sign(b"It's a Secret to Everybody", b"Hello, World!"),
            signature
        );
        assert!(
            verify(
                b"It's a Secret to Everybody",
                b"Hello, World!",
                Some(signature)
            )
            .is_ok()
        );
        assert!(matches!(
            verify(
                b"It's a Secret to Everybody",
                b"Hello, World?",
                Some(signature)
            ),
            Err(WebhookError::BadSignature)
        ));
        assert!(matches!(
            verify(b"another secret", b"Hello, World!", Some(signature)),
            Err(WebhookError::BadSignature)
        ));
        for malformed in [
            "sha1=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            "sha256=757107ea",
            "sha256=zz",
            "sha256=",
            "",
        ] {
            assert!(
                matches!(
                    verify(
                        b"It's a Secret to Everybody",
                        b"Hello, World!",
                        Some(malformed)
                    ),
                    Err(WebhookError::BadSignature)
                ),
                "{malformed}"
            );
        }
        assert!(matches!(
            verify(b"It's a Secret to Everybody", b"Hello, World!", None),
            Err(WebhookError::Unsigned)
        ));
    }

    #[test]
    fn a_push_that_lists_its_files_reads_the_catalog_only_when_it_touched_the_file() {
        let push =
            |commits: Value| serde_json::json!({"ref": "refs/heads/main", "commits": commits});
        assert!(!may_change_catalog(&push(serde_json::json!([
            {"added": [], "modified": ["src/main.go"], "removed": []}
        ]))));
        assert!(may_change_catalog(&push(serde_json::json!([
            {"added": [], "modified": ["src/main.go"], "removed": []},
            {"added": [], "modified": [], "removed": ["catalog-info.yaml"]}
        ]))));
        assert!(may_change_catalog(&push(
            serde_json::json!([{"id": "abc"}])
        )));
        assert!(may_change_catalog(&push(serde_json::json!([]))));
        assert!(may_change_catalog(
            &serde_json::json!({"forced": true, "commits": [
                {"added": [], "modified": ["README.md"], "removed": []}
            ]})
        ));
    }

    #[test]
    fn tower_claims_a_pull_request_by_its_branch_or_label() {
        assert!(claims_tower(
            &serde_json::json!({"head": {"ref": "tower/promote/payments/prod"}})
        ));
        assert!(claims_tower(
            &serde_json::json!({"head": {"ref": "fix"}, "labels": [{"name": "tower"}]})
        ));
        assert!(!claims_tower(
            &serde_json::json!({"head": {"ref": "someone/typo"}})
        ));
    }
}
