//! The guards between untrusted text and the places it could do harm. Text from a request, an upstream or git
//! reaches a response header, an upstream URL or a redirect only through one of these functions; each parses
//! the text the way its consumer will (the browser, the upstream's router) instead of pattern-matching it.
//! ARCHITECTURE.md lists every sink and the guard that covers it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use url::Url;

/// Where a browser may be sent back to after signing in: `raw` resolved against Tower's own origin by a
/// WHATWG URL parser (the one the browser uses will read the `Location` the same way), accepted only if it
/// stays on that origin, and returned as the parsed URL's path, query and fragment, never as the raw text.
/// Anything else, or nothing, is `/`.
///
/// Pattern checks on the raw string miss what browsers do before resolving a URL: they strip leading and
/// trailing C0 controls and spaces, drop every tab and newline, and read `\` as `/` in http(s) URLs, so
/// `/\t/evil.example` is `//evil.example`.
pub fn return_path(public_origin: &str, raw: Option<&str>) -> String {
    const HOME: &str = "/";
    let (Some(raw), Ok(origin)) = (raw, Url::parse(public_origin)) else {
        return HOME.into();
    };
    let Ok(resolved) = origin.join(raw) else {
        return HOME.into();
    };
    if resolved.origin() != origin.origin() {
        return HOME.into();
    }
    let mut local = resolved.path().to_string();
    // A path that starts with `//` (from `/.//host`, say) is scheme-relative once it stands alone in a
    // `Location` header: the browser would read its first segment as a host.
    if local.starts_with("//") {
        return HOME.into();
    }
    if let Some(query) = resolved.query() {
        local.push('?');
        local.push_str(query);
    }
    if let Some(fragment) = resolved.fragment() {
        local.push('#');
        local.push_str(fragment);
    }
    local
}

/// A header value, refused if it holds anything outside visible ASCII and spaces: control characters would
/// split or smuggle headers, and other bytes are read differently by different clients.
pub fn header_value(text: &str) -> Option<HeaderValue> {
    if text.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
        HeaderValue::from_str(text).ok()
    } else {
        None
    }
}

/// `303 See Other` to a location on Tower, built from text Tower made (a [`return_path`], a fixed page with
/// an encoded query). A location that is not a clean header value goes to `/` instead: axum's own
/// `Redirect::to` would panic on it.
pub fn see_other(location: &str) -> Response {
    let value = header_value(location)
        .filter(|_| location.starts_with('/') && !location.starts_with("//"))
        .unwrap_or_else(|| HeaderValue::from_static("/"));
    (StatusCode::SEE_OTHER, [(header::LOCATION, value)]).into_response()
}

/// `303 See Other` to a configured upstream page (GitHub's consent page): an absolute http(s) URL that is a
/// clean header value, or a plain 502 page if configuration made it anything else.
pub fn see_other_elsewhere(location: &str) -> Response {
    let absolute = Url::parse(location)
        .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some());
    match header_value(location).filter(|_| absolute) {
        Some(value) => (StatusCode::SEE_OTHER, [(header::LOCATION, value)]).into_response(),
        None => {
            tracing::error!(%location, "refusing a redirect that is not an absolute http(s) URL");
            StatusCode::BAD_GATEWAY.into_response()
        }
    }
}

/// Why an upstream URL could not be built.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// The configured base URL cannot carry a path (e.g. `mailto:`).
    #[error("{0} cannot be a base URL")]
    NotABase(String),
    /// The configured base URL does not parse.
    #[error("invalid base URL: {0}")]
    Invalid(#[from] url::ParseError),
}

/// An upstream URL: `base` with `segments` appended, each one percent-encoded as a single path segment by
/// the URL type, so a `/`, `?`, `#` or `..` inside a value stays inside its segment and cannot change which
/// resource the upstream reads.
pub fn upstream_url<'a>(
    base: &str,
    segments: impl IntoIterator<Item = &'a str>,
) -> Result<Url, UrlError> {
    let mut url = Url::parse(base)?;
    url.path_segments_mut()
        .map_err(|()| UrlError::NotABase(base.to_string()))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// A path relative to an API root (`/repos/…`), each segment percent-encoded by the URL type, for clients
/// that take a path rather than a URL (octocrab). `git_path` values (a branch `tower/deploy/x`, a file
/// `platform/registry/x.yaml`) split on `/` into their own segments, as GitHub's routes expect, and every
/// other character of them is encoded.
pub fn api_path<'a>(segments: impl IntoIterator<Item = PathPart<'a>>) -> String {
    // A fixed, valid base only carries the segments; its own path is dropped.
    let Ok(mut url) = Url::parse("http://api.invalid/") else {
        return String::new();
    };
    if let Ok(mut path) = url.path_segments_mut() {
        path.clear();
        for part in segments {
            match part {
                PathPart::Segment(segment) => {
                    path.push(segment);
                }
                PathPart::GitPath(git_path) => {
                    path.extend(git_path.split('/'));
                }
            }
        }
    }
    let mut path = url.path().to_string();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    path
}

/// One part of an [`api_path`].
#[derive(Debug, Clone, Copy)]
pub enum PathPart<'a> {
    /// One segment: a `/` inside it is encoded.
    Segment(&'a str),
    /// A git ref or a file path whose `/`s separate segments; every segment is encoded.
    GitPath(&'a str),
}

/// `path` with `pairs` as its query string, each key and value form-encoded.
pub fn with_query(path: &str, pairs: &[(&str, &str)]) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOWER: &str = "http://127.0.0.1:8080";

    /// Open-redirect payloads from public cheat sheets (PayloadsAllTheThings, the OWASP testing guide,
    /// PortSwigger's URL validation bypass list), as the query string delivers them. The same table drives the
    /// Playwright sign-in test (`end2end/tests/open-redirect.spec.ts`), so the two cannot drift apart.
    const PAYLOADS: &str = include_str!("../../end2end/data/open-redirect-payloads.json");

    #[derive(serde::Deserialize)]
    struct Payload {
        payload: String,
        why: String,
    }

    fn payloads() -> Vec<Payload> {
        serde_json::from_str(PAYLOADS).expect("the payload table is valid JSON")
    }

    /// Whether `location`, as a browser resolves it against Tower, stays on Tower.
    fn stays_on_tower(location: &str) -> bool {
        let tower = Url::parse(TOWER).expect("test origin parses");
        tower
            .join(location)
            .is_ok_and(|url| url.origin() == tower.origin())
    }

    #[test]
    fn every_open_redirect_payload_returns_to_tower() {
        let payloads = payloads();
        assert!(
            payloads.len() >= 30,
            "the table has {} payloads",
            payloads.len()
        );
        for Payload { payload, why } in &payloads {
            let location = return_path(TOWER, Some(payload));
            assert!(
                stays_on_tower(&location)
                    && location.starts_with('/')
                    && !location.starts_with("//"),
                "{payload:?} ({why}) redirected to {location:?}"
            );
            assert!(
                header_value(&location).is_some(),
                "{payload:?} ({why}) gave a location that is not a clean header: {location:?}"
            );
        }
    }

    #[test]
    fn the_reported_tab_payload_returns_home() {
        assert_eq!(return_path(TOWER, Some("/\t/evil.example/x")), "/");
    }

    #[test]
    fn local_paths_survive_with_their_query_and_fragment() {
        assert_eq!(
            return_path(TOWER, Some("/services/payments?env=prod#cards")),
            "/services/payments?env=prod#cards"
        );
        assert_eq!(return_path(TOWER, Some("/")), "/");
        assert_eq!(return_path(TOWER, None), "/");
        // Relative forms resolve against Tower's root.
        assert_eq!(return_path(TOWER, Some("releases")), "/releases");
        // Controls inside a local path are dropped or encoded, never passed to the header.
        assert_eq!(return_path(TOWER, Some("/prs?q=a\tb")), "/prs?q=ab");
        assert_eq!(return_path(TOWER, Some("/a b")), "/a%20b");
    }

    #[test]
    fn an_unparseable_origin_sends_everyone_home() {
        assert_eq!(return_path("not a url", Some("/services")), "/");
    }

    #[test]
    fn header_values_refuse_control_characters_and_non_ascii() {
        assert!(header_value("/services/payments").is_some());
        assert!(header_value("/x\r\nSet-Cookie: a=b").is_none());
        assert!(header_value("/x\ty").is_none());
        assert!(header_value("/caf\u{e9}").is_none());
    }

    #[test]
    fn see_other_never_sends_a_browser_off_tower() {
        for location in ["//evil.example", "https://evil.example", "/x\r\ny"] {
            let response = see_other(location);
            assert_eq!(response.status(), StatusCode::SEE_OTHER);
            assert_eq!(response.headers()[header::LOCATION], "/", "{location:?}");
        }
        assert_eq!(see_other("/prs").headers()[header::LOCATION], "/prs");
    }

    #[test]
    fn redirects_to_a_provider_must_be_absolute_and_clean() {
        let ok = see_other_elsewhere("https://github.com/login/oauth/authorize?client_id=x");
        assert_eq!(ok.status(), StatusCode::SEE_OTHER);
        for bad in ["/local", "javascript:alert(1)", "https://github.com/\r\nx"] {
            assert_eq!(
                see_other_elsewhere(bad).status(),
                StatusCode::BAD_GATEWAY,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn upstream_segments_cannot_change_the_resource() {
        let url = upstream_url(
            "https://argocd.example/",
            ["api", "v1", "applications", "../../settings?x=1#y", "sync"],
        )
        .expect("a valid base");
        assert_eq!(
            url.as_str(),
            "https://argocd.example/api/v1/applications/..%2F..%2Fsettings%3Fx=1%23y/sync"
        );
        // A base with a path keeps it.
        let url = upstream_url("https://example/argo", ["api", "v1"]).expect("a valid base");
        assert_eq!(url.as_str(), "https://example/argo/api/v1");
        assert!(upstream_url("mailto:x@example", ["a"]).is_err());
    }

    #[test]
    fn git_paths_keep_their_slashes_and_encode_everything_else() {
        let path = api_path([
            PathPart::Segment("repos"),
            PathPart::Segment("acme"),
            PathPart::Segment("application-repositories"),
            PathPart::Segment("git"),
            PathPart::Segment("ref"),
            PathPart::Segment("heads"),
            PathPart::GitPath("tower/deploy/pay ments?x#y"),
        ]);
        assert_eq!(
            path,
            "/repos/acme/application-repositories/git/ref/heads/tower/deploy/pay%20ments%3Fx%23y"
        );
        // A segment's own slash is encoded: a repository owner cannot reach another route.
        assert_eq!(
            api_path([PathPart::Segment("repos"), PathPart::Segment("a/../b")]),
            "/repos/a%2F..%2Fb"
        );
    }

    #[test]
    fn query_values_are_form_encoded() {
        assert_eq!(
            with_query("/repos/a/b/contents/x.yaml", &[("ref", "main&admin=1")]),
            "/repos/a/b/contents/x.yaml?ref=main%26admin%3D1"
        );
        assert_eq!(with_query("/x", &[]), "/x");
    }

    /// HTML's guard is Leptos' escaping: every text the app renders goes through it unless code asks for
    /// raw HTML, which no code in the app may do.
    #[test]
    fn the_app_never_renders_raw_html() {
        fn scan(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir)
                .expect("app/src is readable")
                .flatten()
            {
                let path = entry.path();
                if path.is_dir() {
                    scan(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    for (number, line) in text.lines().enumerate() {
                        if line.contains("inner_html") || line.contains("set_outer_html") {
                            found.push(format!("{}:{}", path.display(), number + 1));
                        }
                    }
                }
            }
        }
        let app = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../app/src");
        let mut found = Vec::new();
        scan(&app, &mut found);
        assert!(found.is_empty(), "raw HTML in the app: {found:?}");
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;
        use super::{TOWER, stays_on_tower};

        proptest! {
            /// Whatever a link carries, the browser ends up on Tower.
            #[test]
            fn any_return_to_resolves_to_tower(raw in any::<String>()) {
                let location = return_path(TOWER, Some(&raw));
                prop_assert!(stays_on_tower(&location), "{raw:?} -> {location:?}");
                prop_assert!(header_value(&location).is_some(), "{raw:?} -> {location:?}");
            }

            /// The same for strings made of the characters that make URL tricks.
            #[test]
            fn any_mix_of_separators_and_controls_resolves_to_tower(
                raw in r#"[/\\\t\n\r .@:%?#a-z0-9\x00-\x1f\u{ff0f}\u{3002}]{0,24}"#
            ) {
                let location = return_path(TOWER, Some(&raw));
                prop_assert!(stays_on_tower(&location), "{raw:?} -> {location:?}");
                prop_assert!(location.starts_with('/') && !location.starts_with("//"));
            }
        }
    }
}
