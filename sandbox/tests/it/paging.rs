//! The forge pages like GitHub: absolute `Link` targets built from the request's host and the forge's
//! mount path, which a client (octocrab) follows without credentials, since the repositories are public.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use octocrab::params::State;
use sandbox::world::GITOPS_REPOSITORY;
use serde_json::json;

use crate::forge::TestForge;

#[tokio::test]
async fn link_headers_are_absolute_urls_on_the_host_and_mount_path_the_client_called() {
    let forge = TestForge::start().await;
    let response = forge
        .http
        .get(forge.api(&format!(
            "/repos/acme/{GITOPS_REPOSITORY}/pulls?state=all&per_page=2"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let link = response.headers()["link"].to_str().unwrap().to_string();
    let next = format!(
        "<http://{}/github/repos/acme/{GITOPS_REPOSITORY}/pulls?state=all&per_page=2&page=2>; rel=\"next\"",
        forge.addr
    );
    assert!(link.starts_with(&next), "{link}");
    assert!(link.contains("; rel=\"last\""), "{link}");
}

#[tokio::test]
async fn octocrab_follows_next_links_through_every_pull_and_commit_once() {
    let forge = TestForge::start().await;
    // A few open pull requests beside the merged ones the history left.
    for n in 0..3 {
        forge
            .open_pull(
                &format!("paging/{n}"),
                &format!("Paging {n}"),
                &[(&format!("platform/notes-{n}.txt"), "x\n")],
            )
            .await;
    }
    let held = forge.forge.repositories().merged_pulls().len() + 3;
    assert!(held > 7, "too few pull requests to page: {held}");

    let octo = forge.installation();
    let mut page = octo
        .pulls("acme", GITOPS_REPOSITORY)
        .list()
        .state(State::All)
        .per_page(4)
        .send()
        .await
        .unwrap();
    let next = page.next.clone().unwrap();
    assert_eq!(next.host(), Some("127.0.0.1"));
    assert!(next.path().starts_with("/github/repos/acme/"), "{next}");
    let mut numbers = Vec::new();
    let mut pages = 1;
    loop {
        numbers.extend(page.items.iter().map(|p| p.number));
        // An absolute link: octocrab sends no token with it, and the public repository answers anyway.
        match octo.get_page(&page.next).await.unwrap() {
            Some(following) => {
                page = following;
                pages += 1;
            }
            None => break,
        }
    }
    assert!(pages >= 3, "{pages}");
    let distinct: BTreeSet<u64> = numbers.iter().copied().collect();
    assert_eq!(distinct.len(), numbers.len(), "a pull request came twice");
    assert_eq!(numbers.len(), held);

    let mut page = octo
        .repos("acme", GITOPS_REPOSITORY)
        .list_commits()
        .per_page(100)
        .send()
        .await
        .unwrap();
    let mut shas = Vec::new();
    loop {
        shas.extend(page.items.iter().map(|c| c.sha.clone()));
        match octo.get_page(&page.next).await.unwrap() {
            Some(following) => page = following,
            None => break,
        }
    }
    let on_main = forge.git(GITOPS_REPOSITORY, &["rev-list", "--count", "main"]);
    let distinct: BTreeSet<&String> = shas.iter().collect();
    assert_eq!(distinct.len(), shas.len(), "a commit came twice");
    assert_eq!(shas.len(), on_main.trim().parse::<usize>().unwrap());
    assert!(shas.len() > 100, "the commits fit one page: {}", shas.len());
}

#[tokio::test]
async fn anyone_reads_a_public_repository_but_writes_and_private_reads_need_a_valid_token() {
    let forge = TestForge::start().await;
    let (number, head) = forge
        .open_pull("public/reads", "Public reads", &[("platform/x.txt", "x\n")])
        .await;
    for path in [
        format!("/repos/acme/{GITOPS_REPOSITORY}"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}/files"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}/reviews"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/commits/{head}/check-runs"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/contents/platform/registry/payments.yaml"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/comments"),
        format!("/repos/acme/{GITOPS_REPOSITORY}/labels"),
        "/repos/acme/payments/commits".to_string(),
        "/orgs/acme/repos".to_string(),
    ] {
        let response = forge.http.get(forge.api(&path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    for path in ["/installation/repositories", "/user", "/user/teams"] {
        let response = forge.http.get(forge.api(path)).send().await.unwrap();
        assert_eq!(response.status(), 401, "{path}");
    }
    // A token that is sent must be good, even where none is needed.
    let response = forge
        .http
        .get(forge.api("/repos/acme/payments"))
        .bearer_auth("ghs_not_a_token")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let writes = [
        (
            format!("/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/comments"),
            json!({"body": "hi"}),
        ),
        (
            format!("/repos/acme/{GITOPS_REPOSITORY}/pulls/{number}/reviews"),
            json!({"event": "APPROVE"}),
        ),
        (
            format!("/repos/acme/{GITOPS_REPOSITORY}/issues/{number}/labels"),
            json!({"labels": ["x"]}),
        ),
    ];
    for (path, body) in writes {
        let response = forge
            .http
            .post(forge.api(&path))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{path}");
    }
}
