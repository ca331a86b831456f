//! The single-page app: hashed assets cached forever, `index.html` for every client route so deep links
//! load directly, and brotli/gzip chosen from the precompressed files the build wrote.
//!
//! The build (`cargo xtask dist`'s `dist/`) is served from a folder (`tower serve --assets DIR`: development,
//! tests, Playwright) or from the copy compiled into the binary (the `embed-spa` feature, which
//! `cargo xtask image` enables after building `dist/`), so a release `tower` is one file. Both answer the same
//! way: the same paths, status codes, `cache-control` and encodings.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;
use tower_http::services::{ServeDir, ServeFile};

use crate::state::AppState;

/// Where the built SPA is served from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spa {
    /// The build carried inside the binary (the `embed-spa` feature).
    Embedded,
    /// A folder holding a build (`tower serve --assets DIR`: development, Playwright).
    Folder(PathBuf),
}

impl From<PathBuf> for Spa {
    fn from(folder: PathBuf) -> Self {
        Spa::Folder(folder)
    }
}

impl Spa {
    /// What `tower serve` serves when given no `--assets`: the embedded build when the binary carries one,
    /// else `dist` as `cargo xtask dist` writes it.
    pub fn default_for_this_build() -> Self {
        if cfg!(feature = "embed-spa") {
            Spa::Embedded
        } else {
            Spa::Folder(PathBuf::from("dist"))
        }
    }
}

/// Routes serving the built SPA from where `spa` says.
pub fn routes(spa: &Spa) -> Router<AppState> {
    let assets = match spa {
        Spa::Embedded => return embedded::<Dist, AppState>(),
        Spa::Folder(folder) => folder.as_path(),
    };
    let index = ServeFile::new(assets.join("index.html"))
        .precompressed_br()
        .precompressed_gzip();
    let hashed = ServeDir::new(assets.join("assets"))
        .precompressed_br()
        .precompressed_gzip();
    let public = ServeDir::new(assets)
        .precompressed_br()
        .precompressed_gzip()
        .fallback(index);
    Router::new()
        .nest_service("/assets", hashed)
        .fallback_service(public)
        .layer(middleware::from_fn(cache_control))
}

/// Logs a warning when `spa` has nothing to serve, saying how to build it.
pub fn warn_if_missing(spa: &Spa) {
    match spa {
        Spa::Embedded if Dist::get(INDEX).is_none() => tracing::warn!(
            "this tower embeds no SPA (dist/ was missing when it was built): run `cargo xtask dist` \
             before building with `--features embed-spa`, or give --assets DIR"
        ),
        Spa::Folder(folder) if !folder.join(INDEX).exists() => {
            tracing::warn!(assets = %folder.display(), "no index.html here: run `cargo xtask dist` to build the SPA");
        }
        Spa::Embedded | Spa::Folder(_) => {}
    }
}

/// The SPA that `cargo xtask dist` wrote, compiled in. `allow_missing`: a build with the feature but without
/// `dist/` still compiles, embeds nothing and serves [`NOT_BUILT`].
#[cfg(feature = "embed-spa")]
#[derive(RustEmbed)]
#[folder = "../dist"]
#[allow_missing = true]
struct Dist;

/// A build without the `embed-spa` feature embeds nothing.
#[cfg(not(feature = "embed-spa"))]
struct Dist;

#[cfg(not(feature = "embed-spa"))]
impl RustEmbed for Dist {
    fn get(_file_path: &str) -> Option<rust_embed::EmbeddedFile> {
        None
    }

    fn iter() -> impl Iterator<Item = Cow<'static, str>> + 'static {
        std::iter::empty()
    }
}

/// The page every client route loads.
const INDEX: &str = "index.html";

/// What an embedded build without an `index.html` answers instead of the app.
const NOT_BUILT: &str = "<!doctype html><title>Tower: no web app</title>\
    <p>This <code>tower</code> was built without its web app: run <code>cargo xtask dist</code> before \
    building with <code>--features embed-spa</code> (as <code>cargo xtask image</code> does), or serve a \
    build from disk with <code>tower serve --assets DIR</code>.</p>";

/// Routes serving the SPA embedded as `E` (the build's files: `index.html`, `assets/…`, their `.br` and `.gz`
/// copies), answering as the folder-backed [`routes`] do.
pub fn embedded<E: RustEmbed, S: Clone + Send + Sync + 'static>() -> Router<S> {
    let files = Arc::new(Files::of::<E>());
    Router::new()
        .fallback(serve_embedded)
        .with_state(files)
        .layer(middleware::from_fn(cache_control))
}

/// One embedded file and its precompressed copies.
struct File {
    /// The uncompressed content.
    plain: Bytes,
    /// The brotli copy (`<name>.br`), if the build wrote one.
    br: Option<Bytes>,
    /// The gzip copy (`<name>.gz`), if the build wrote one.
    gzip: Option<Bytes>,
    /// The type guessed from the uncompressed file's name.
    content_type: HeaderValue,
    /// The uncompressed content's SHA-256 in hex, computed when the file was embedded.
    hash: String,
}

/// The embedded build, indexed once by path (without the leading `/`).
struct Files(HashMap<String, File>);

impl Files {
    fn of<E: RustEmbed>() -> Self {
        let mut files = HashMap::new();
        let mut compressed = Vec::new();
        for name in E::iter() {
            let Some(file) = E::get(&name) else { continue };
            // Embedded data is `'static` and is not copied; only a build reading from disk owns its bytes.
            let data = match file.data {
                Cow::Borrowed(data) => Bytes::from_static(data),
                Cow::Owned(data) => Bytes::from(data),
            };
            if let Some(base) = name
                .strip_suffix(".br")
                .or_else(|| name.strip_suffix(".gz"))
            {
                // Also kept under its own name below, as a folder serves it.
                compressed.push((base.to_string(), name.ends_with(".br"), data.clone()));
            }
            let mime = mime_guess::from_path(name.as_ref()).first_or_octet_stream();
            let content_type = HeaderValue::from_str(mime.essence_str())
                .unwrap_or(HeaderValue::from_static("application/octet-stream"));
            let hash = file
                .metadata
                .sha256_hash()
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            files.insert(
                name.into_owned(),
                File {
                    plain: data,
                    br: None,
                    gzip: None,
                    content_type,
                    hash,
                },
            );
        }
        for (base, brotli, data) in compressed {
            if let Some(file) = files.get_mut(&base) {
                if brotli {
                    file.br = Some(data);
                } else {
                    file.gzip = Some(data);
                }
            }
        }
        Self(files)
    }
}

/// Serves a path of the embedded build: `assets/…` by exact name or 404, any other path by name if it is a
/// file of the build, else `index.html`.
async fn serve_embedded(State(files): State<Arc<Files>>, request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, HeaderValue::from_static("GET,HEAD"))],
        )
            .into_response();
    }
    let path = request.uri().path().trim_start_matches('/');
    let file = if path.starts_with("assets/") {
        files.0.get(path)
    } else {
        files.0.get(path).or_else(|| files.0.get(INDEX))
    };
    let Some(file) = file else {
        if path.starts_with("assets/") {
            return StatusCode::NOT_FOUND.into_response();
        }
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            )],
            NOT_BUILT,
        )
            .into_response();
    };
    respond(file, request.headers())
}

/// The representation of `file` the request accepts (brotli, then gzip, then plain), with an `ETag` per
/// representation and a 304 when the browser already holds it.
fn respond(file: &File, headers: &HeaderMap) -> Response {
    let accepted = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let (body, encoding) = match (&file.br, &file.gzip) {
        (Some(br), _) if accepts(&accepted, "br") => (br, Some("br")),
        (_, Some(gzip)) if accepts(&accepted, "gzip") => (gzip, Some("gzip")),
        _ => (&file.plain, None),
    };
    let etag = match encoding {
        Some(encoding) => format!("\"{}-{encoding}\"", file.hash),
        None => format!("\"{}\"", file.hash),
    };
    let mut response = if matches(headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = Response::new(Body::from(body.clone()));
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, file.content_type.clone());
        if let Some(encoding) = encoding {
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
        }
        response
    };
    let out = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, etag);
    }
    if file.br.is_some() || file.gzip.is_some() {
        out.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    response
}

/// Whether an `Accept-Encoding` value accepts `coding` (named, with a q-value above zero if it has one).
fn accepts(accept_encoding: &str, coding: &str) -> bool {
    accept_encoding.split(',').any(|item| {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or_default().trim();
        let quality = parts
            .filter_map(|param| param.trim().strip_prefix("q="))
            .map(|q| q.trim().parse::<f32>().unwrap_or(0.0))
            .next()
            .unwrap_or(1.0);
        name.eq_ignore_ascii_case(coding) && quality > 0.0
    })
}

/// Whether `If-None-Match` names `etag` (or `*`).
fn matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

/// Hashed assets never change under their name; everything else must be revalidated so a new deploy is
/// picked up on the next load.
async fn cache_control(request: Request, next: Next) -> Response {
    let immutable = request.uri().path().starts_with("/assets/");
    let mut response = next.run(request).await;
    // A 304 refreshes the cached response's headers, so it carries the same policy as the 200 did.
    let found = response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED;
    let value = if immutable && found {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(value));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accept_encoding_is_read_with_its_q_values() {
        assert!(accepts("gzip, deflate, br, zstd", "br"));
        assert!(accepts("gzip;q=0.8, BR", "br"));
        assert!(!accepts("gzip, br;q=0", "br"));
        assert!(!accepts("gzip, br; q=0.0", "br"));
        assert!(accepts("gzip, br;q=0", "gzip"));
        // A coding whose name merely contains another's is not it.
        assert!(!accepts("x-gzip-ish", "gzip"));
        assert!(!accepts("", "gzip"));
    }
}
