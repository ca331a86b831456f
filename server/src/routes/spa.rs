//! The single-page app: hashed assets cached forever, `index.html` for every client route so deep links
//! load directly, and brotli/gzip chosen from the precompressed files the build wrote.

use std::path::Path;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use tower_http::services::{ServeDir, ServeFile};

use crate::state::AppState;

/// Routes serving the built SPA from `assets`.
pub fn routes(assets: &Path) -> Router<AppState> {
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

/// Hashed assets never change under their name; everything else must be revalidated so a new deploy is
/// picked up on the next load.
async fn cache_control(request: Request, next: Next) -> Response {
    let immutable = request.uri().path().starts_with("/assets/");
    let mut response = next.run(request).await;
    let value = if immutable && response.status().is_success() {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static(value));
    response
}
