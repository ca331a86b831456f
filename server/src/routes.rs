//! The HTTP surface: the JSON API under `/api/v1`, the event stream, the SPA, and `/healthz`.

pub mod fleet;
pub mod spa;

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use tower_http::trace::TraceLayer;

use crate::state::AppState;

/// The whole application, without a socket, so tests can call it with `oneshot`.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .nest("/v1", fleet::routes())
        .fallback(api_not_found);
    Router::new()
        .nest("/api", api)
        .merge(spa::routes(&state.assets))
        .layer(TraceLayer::new_for_http())
        // After the trace layer, so liveness probes stay out of the traces.
        .route("/healthz", get(healthz))
        .with_state(state)
}

/// Unknown API paths answer in the API's own error shape, never with the SPA's index.html.
async fn api_not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        axum::Json(shared::ApiError::not_found("No such API endpoint.")),
    )
}

async fn healthz() -> &'static str {
    "ok"
}
