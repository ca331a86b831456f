//! GitHub's response shapes, as in the OpenAPI description's examples: users, organisations,
//! repositories, commits. URLs point back at the forge the client called.

use serde_json::{Value, json};

use super::ApiBase;
use crate::git::{CommitInfo, Person, people};
use crate::world::ORGANISATION;

/// A numeric id for the organisation.
pub const ORGANISATION_ID: u64 = 7_000_001;

/// A GitHub node id: opaque, stable for a kind and a number.
pub fn node_id(kind: &str, id: u64) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(format!("{kind}:{id}"))
}

/// The numeric part of a commit's node id.
fn commit_number(sha: &str) -> u64 {
    u64::from_str_radix(sha.get(..12).unwrap_or("0"), 16).unwrap_or(0)
}

/// The simple user object (`simple-user`) for `login`.
pub fn user(base: &ApiBase, html: &str, login: &str) -> Value {
    let who = people::identity(login);
    // GitHub escapes a bot's brackets in its URLs (`/users/dependabot%5Bbot%5D`): a bare `[` is no URI.
    let api = format!(
        "{}/users/{}",
        base.url,
        login.replace('[', "%5B").replace(']', "%5D")
    );
    // A bot's page is its App's (`https://github.com/apps/dependabot`).
    let page = match login.strip_suffix("[bot]") {
        Some(app) => format!("{html}/apps/{app}"),
        None => format!("{html}/{login}"),
    };
    json!({
        "login": login,
        "id": who.id,
        "node_id": node_id(if who.bot { "Bot" } else { "User" }, who.id),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", who.id),
        "gravatar_id": "",
        "url": api,
        "html_url": page,
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": if who.bot { "Bot" } else { "User" },
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// The organisation as a repository owner (a `simple-user` of type Organization).
pub fn org_owner(base: &ApiBase, html: &str) -> Value {
    let api = format!("{}/users/{ORGANISATION}", base.url);
    json!({
        "login": ORGANISATION,
        "id": ORGANISATION_ID,
        "node_id": node_id("Organization", ORGANISATION_ID),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{ORGANISATION_ID}?v=4"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("{html}/{ORGANISATION}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{}/orgs/{ORGANISATION}/repos", base.url),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": "Organization",
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// The organisation (`organization-simple`).
pub fn organization(base: &ApiBase) -> Value {
    let api = format!("{}/orgs/{ORGANISATION}", base.url);
    json!({
        "login": ORGANISATION,
        "id": ORGANISATION_ID,
        "node_id": node_id("Organization", ORGANISATION_ID),
        "url": api,
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events"),
        "hooks_url": format!("{api}/hooks"),
        "issues_url": format!("{api}/issues"),
        "members_url": format!("{api}/members{{/member}}"),
        "public_members_url": format!("{api}/public_members{{/member}}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{ORGANISATION_ID}?v=4"),
        "description": "Acme's services and their platform.",
    })
}

/// The organisation as `GET /orgs/{org}` shows it (`organization-full`), with `public_repos` of them.
pub fn organization_full(base: &ApiBase, html: &str, public_repos: usize) -> Value {
    let mut organization = organization(base);
    if let Value::Object(object) = &mut organization {
        let full = json!({
            "name": "Acme",
            "blog": "https://acme.example",
            "is_verified": false,
            "html_url": format!("{html}/{ORGANISATION}"),
            "has_organization_projects": false,
            "has_repository_projects": false,
            "public_repos": public_repos,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "type": "Organization",
            "created_at": "2026-10-01T09:00:00Z",
            "updated_at": "2026-10-01T09:00:00Z",
            "archived_at": null,
        });
        if let Value::Object(full) = full {
            object.extend(full);
        }
    }
    organization
}

/// A stable id for a repository name.
pub fn repository_id(name: &str) -> u64 {
    800_000
        + name
            .bytes()
            .fold(0u64, |h, b| (h * 131 + u64::from(b)) % 100_000)
}

/// The full repository object. The organisation's repositories are public, as their reads are.
pub fn repository(base: &ApiBase, html_base: &str, name: &str, description: &str) -> Value {
    let id = repository_id(name);
    let api = format!("{}/repos/{ORGANISATION}/{name}", base.url);
    let html = format!("{html_base}/{ORGANISATION}/{name}");
    let head = json!({
        "id": id,
        "node_id": node_id("Repository", id),
        "name": name,
        "full_name": format!("{ORGANISATION}/{name}"),
        "private": false,
        "owner": org_owner(base, html_base),
        "html_url": html,
        "description": description,
        "fork": false,
        "url": api,
    });
    let urls = json!({
        "archive_url": format!("{api}/{{archive_format}}{{/ref}}"),
        "blobs_url": format!("{api}/git/blobs{{/sha}}"),
        "branches_url": format!("{api}/branches{{/branch}}"),
        "commits_url": format!("{api}/commits{{/sha}}"),
        "compare_url": format!("{api}/compare/{{base}}...{{head}}"),
        "contents_url": format!("{api}/contents/{{+path}}"),
        "git_commits_url": format!("{api}/git/commits{{/sha}}"),
        "git_refs_url": format!("{api}/git/refs{{/sha}}"),
        "git_tags_url": format!("{api}/git/tags{{/sha}}"),
        "issues_url": format!("{api}/issues{{/number}}"),
        "labels_url": format!("{api}/labels{{/name}}"),
        "pulls_url": format!("{api}/pulls{{/number}}"),
        "statuses_url": format!("{api}/statuses/{{sha}}"),
        "trees_url": format!("{api}/git/trees{{/sha}}"),
        "clone_url": format!("{html}.git"),
        "git_url": format!("git://github.com/{ORGANISATION}/{name}.git"),
        "ssh_url": format!("git@github.com:{ORGANISATION}/{name}.git"),
        "svn_url": html,
        "mirror_url": null,
    });
    // The URLs of what the forge does not emulate (forks, releases, deployments, …): GitHub requires them
    // in every repository object, so they are there, under the forge's base as GitHub's format puts them.
    let elsewhere = json!({
        "assignees_url": format!("{api}/assignees{{/user}}"),
        "collaborators_url": format!("{api}/collaborators{{/collaborator}}"),
        "comments_url": format!("{api}/comments{{/number}}"),
        "contributors_url": format!("{api}/contributors"),
        "deployments_url": format!("{api}/deployments"),
        "downloads_url": format!("{api}/downloads"),
        "events_url": format!("{api}/events"),
        "forks_url": format!("{api}/forks"),
        "hooks_url": format!("{api}/hooks"),
        "issue_comment_url": format!("{api}/issues/comments{{/number}}"),
        "issue_events_url": format!("{api}/issues/events{{/number}}"),
        "keys_url": format!("{api}/keys{{/key_id}}"),
        "languages_url": format!("{api}/languages"),
        "merges_url": format!("{api}/merges"),
        "milestones_url": format!("{api}/milestones{{/number}}"),
        "notifications_url": format!("{api}/notifications{{?since,all,participating}}"),
        "releases_url": format!("{api}/releases{{/id}}"),
        "stargazers_url": format!("{api}/stargazers"),
        "subscribers_url": format!("{api}/subscribers"),
        "subscription_url": format!("{api}/subscription"),
        "tags_url": format!("{api}/tags"),
        "teams_url": format!("{api}/teams"),
    });
    let settings = json!({
        "homepage": null,
        "language": null,
        "size": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "forks_count": 0,
        "forks": 0,
        "open_issues_count": 0,
        "open_issues": 0,
        "network_count": 0,
        "subscribers_count": 0,
        "license": null,
        "default_branch": "main",
        "visibility": "public",
        "archived": false,
        "disabled": false,
        "is_template": false,
        "topics": [],
        "has_issues": true,
        "has_projects": false,
        "has_wiki": false,
        "has_pages": false,
        "has_discussions": false,
        "has_downloads": true,
        "allow_merge_commit": true,
        "allow_squash_merge": false,
        "allow_rebase_merge": false,
        "delete_branch_on_merge": false,
        "created_at": "2026-10-01T09:00:00Z",
        "updated_at": "2026-11-10T09:00:00Z",
        "pushed_at": "2026-11-10T09:00:00Z",
        "permissions": {"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
    });
    let mut repository = head;
    if let Some(object) = repository.as_object_mut() {
        for part in [urls, elsewhere, settings] {
            if let Value::Object(part) = part {
                object.extend(part);
            }
        }
    }
    repository
}

/// A commit's author or committer inside a git commit object.
pub fn git_person(person: &Person) -> Value {
    json!({"name": person.name, "email": person.email, "date": person.date})
}

/// The `verification` object of an unsigned commit.
pub fn unsigned() -> Value {
    json!({"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null})
}

/// The git commit object (`git-commit`).
pub fn git_commit(base: &ApiBase, html: &str, repo: &str, commit: &CommitInfo) -> Value {
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    json!({
        "sha": commit.sha,
        "node_id": node_id("Commit", commit_number(&commit.sha)),
        "url": format!("{api}/git/commits/{}", commit.sha),
        "html_url": format!("{html}/{ORGANISATION}/{repo}/commit/{}", commit.sha),
        "author": git_person(&commit.author),
        "committer": git_person(&commit.committer),
        "message": commit.message,
        "tree": {"sha": commit.tree, "url": format!("{api}/git/trees/{}", commit.tree)},
        "parents": commit.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{api}/git/commits/{p}"),
            "html_url": format!("{html}/{ORGANISATION}/{repo}/commit/{p}"),
        })).collect::<Vec<_>>(),
        "verification": unsigned(),
    })
}

/// The commit object of the commits API (`commit`), without `files` and `stats`.
pub fn commit(base: &ApiBase, html: &str, repo: &str, commit: &CommitInfo) -> Value {
    let api = format!("{}/repos/{ORGANISATION}/{repo}", base.url);
    json!({
        "sha": commit.sha,
        "node_id": node_id("Commit", commit_number(&commit.sha)),
        "commit": {
            "author": git_person(&commit.author),
            "committer": git_person(&commit.committer),
            "message": commit.message,
            "tree": {"sha": commit.tree, "url": format!("{api}/git/trees/{}", commit.tree)},
            "url": format!("{api}/git/commits/{}", commit.sha),
            "comment_count": 0,
            "verification": unsigned(),
        },
        "url": format!("{api}/commits/{}", commit.sha),
        "html_url": format!("{html}/{ORGANISATION}/{repo}/commit/{}", commit.sha),
        "comments_url": format!("{api}/commits/{}/comments", commit.sha),
        "author": user(base, html, &commit.author.login),
        "committer": user(base, html, &commit.committer.login),
        "parents": commit.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{api}/commits/{p}"),
            "html_url": format!("{html}/{ORGANISATION}/{repo}/commit/{p}"),
        })).collect::<Vec<_>>(),
    })
}
