//! The HTTP surface: the JSON API under `/api/v1`, the event stream, sign-in, the SPA, and `/healthz`.
//!
//! Every API route is registered through [`ApiRoutes`], which makes it declare its [`Access`] where it is
//! registered; the guard enforces it. A route added to the API any other way answers 500 (deny by default):
//! the outer check refuses any API response that did not pass a guard.

pub mod delivery;
pub mod fleet;
pub mod session;
pub mod spa;

use axum::Router;
use axum::extract::{RawPathParams, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use shared::auth::{Decision, Permission};
use shared::{ApiError, ErrorCode};
use tower_http::trace::TraceLayer;

use axum_extra::extract::PrivateCookieJar;

use crate::auth::CurrentUser;
use crate::state::AppState;

/// How a route is guarded, declared where it is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, signed in or not: only the session routes themselves.
    Public,
    /// A permission not tied to one service.
    Fleet(Permission),
    /// A permission on the service named by the route's `{name}` parameter: owner-only permissions need
    /// membership of that service's owner team.
    Service(Permission),
}

impl Access {
    /// The permission it needs, if any.
    pub fn permission(self) -> Option<Permission> {
        match self {
            Access::Public => None,
            Access::Fleet(p) | Access::Service(p) => Some(p),
        }
    }

    /// Whether attempts are audited and rate limited: everything that changes something.
    pub fn is_write(self) -> bool {
        matches!(
            self.permission(),
            Some(
                Permission::RunTemplates
                    | Permission::Promote
                    | Permission::Rollback
                    | Permission::Sync
            )
        )
    }
}

/// One API route as declared: method, full path, access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    /// HTTP method.
    pub method: Method,
    /// Full path with `{param}` placeholders, e.g. `/api/v1/services/{name}`.
    pub path: String,
    /// What it needs.
    pub access: Access,
}

/// Marks a response that went through a route guard.
#[derive(Clone, Copy)]
struct Guarded;

/// Builds the API so that each route states its access when registered.
pub struct ApiRoutes {
    prefix: &'static str,
    state: AppState,
    router: Router<AppState>,
    specs: Vec<RouteSpec>,
}

impl ApiRoutes {
    /// An empty API whose paths start with `prefix` (e.g. `/api/v1`).
    pub fn new(prefix: &'static str, state: AppState) -> Self {
        Self {
            prefix,
            state,
            router: Router::new(),
            specs: Vec::new(),
        }
    }

    /// Registers `handler` for `method` on `path` (relative to the prefix), guarded by `access`.
    pub fn route(
        mut self,
        method: Method,
        path: &str,
        access: Access,
        handler: MethodRouter<AppState>,
    ) -> Self {
        let guarded = handler.route_layer(middleware::from_fn_with_state(
            (self.state.clone(), access),
            guard,
        ));
        self.router = self.router.route(path, guarded);
        self.specs.push(RouteSpec {
            method,
            path: format!("{}{path}", self.prefix),
            access,
        });
        self
    }

    /// Shorthand for a GET route.
    pub fn get<H, T>(self, path: &str, access: Access, handler: H) -> Self
    where
        H: axum::handler::Handler<T, AppState>,
        T: 'static,
    {
        self.route(Method::GET, path, access, axum::routing::get(handler))
    }

    /// Shorthand for a POST route.
    pub fn post<H, T>(self, path: &str, access: Access, handler: H) -> Self
    where
        H: axum::handler::Handler<T, AppState>,
        T: 'static,
    {
        self.route(Method::POST, path, access, axum::routing::post(handler))
    }

    /// Every route declared so far.
    pub fn specs(&self) -> &[RouteSpec] {
        &self.specs
    }

    /// The router and the declared routes.
    pub fn finish(self) -> (Router<AppState>, Vec<RouteSpec>) {
        (self.router, self.specs)
    }
}

/// The API's routes, each with its access. One list, so the route × role test walks exactly what is served.
pub fn api(state: &AppState) -> ApiRoutes {
    let api = ApiRoutes::new("/api/v1", state.clone());
    let api = session::routes(api);
    let api = fleet::routes(api);
    delivery::routes(api)
}

/// The whole application, without a socket, so tests can call it with `oneshot`.
pub fn router(state: AppState) -> Router {
    let (api, _) = api(&state).finish();
    router_with_api(state, api)
}

/// The application around a given API router; tests use it to show what happens to a route added without
/// declaring its access.
pub fn router_with_api(state: AppState, api: Router<AppState>) -> Router {
    let api = Router::new()
        .nest("/v1", api)
        .fallback(api_not_found)
        .layer(middleware::from_fn(deny_unguarded));
    Router::new()
        .nest("/api", api)
        .merge(session::browser_routes())
        .merge(spa::routes(&state.assets))
        .layer(middleware::from_fn_with_state(state.clone(), csrf))
        .layer(TraceLayer::new_for_http())
        .layer(middleware::from_fn(security_headers))
        // After the trace layer, so liveness probes stay out of the traces.
        .route("/healthz", get(healthz))
        .with_state(state)
}

/// Enforces a route's declared access, audits writes and rate-limits them.
async fn guard(
    State((state, access)): State<(AppState, Access)>,
    params: RawPathParams,
    mut request: Request,
    next: Next,
) -> Response {
    let jar = PrivateCookieJar::from_headers(request.headers(), state.auth.key.clone());
    let user = state.auth.identity_in(&jar);
    // Handlers that need the user read it from here instead of decrypting the cookie again.
    request.extensions_mut().insert(CurrentUser(user.clone()));
    let action = format!("{} {}", request.method(), request.uri().path());
    // Previews of a write (and reads guarded by a write permission) change nothing: they are neither audited
    // nor counted against the write limit, so looking before acting is never throttled.
    let writes = access.is_write()
        && request.method() != Method::GET
        && !request.uri().path().ends_with("/preview");
    let service = params
        .iter()
        .find(|(key, _)| *key == "name")
        .map(|(_, value)| value.to_string());
    let decision = match access {
        Access::Public => Decision::Allow,
        Access::Fleet(permission) => state.auth.policy.decide(user.as_ref(), permission, None),
        Access::Service(permission) => {
            let owner = service
                .as_deref()
                .and_then(|name| state.fleet.service(name))
                .map(|s| s.owner);
            match (&user, owner) {
                (None, _) => Decision::SignInRequired,
                // Say "not found" only to those who may browse the catalog at all.
                (Some(_), None) => {
                    let may_browse =
                        state
                            .auth
                            .policy
                            .decide(user.as_ref(), Permission::ReadCatalog, None);
                    if may_browse.allowed() {
                        let name = service.unwrap_or_default();
                        return with_guard_mark(
                            (
                                StatusCode::NOT_FOUND,
                                axum::Json(ApiError::not_found(format!(
                                    "service {name} not found"
                                ))),
                            )
                                .into_response(),
                        );
                    }
                    may_browse
                }
                (Some(_), Some(owner)) => {
                    state
                        .auth
                        .policy
                        .decide(user.as_ref(), permission, Some(&owner))
                }
            }
        }
    };
    let login = user
        .as_ref()
        .map(|u| u.login.as_str())
        .unwrap_or("anonymous");
    if writes {
        tracing::info!(
            target: "audit",
            user = login,
            action = %action,
            target = service.as_deref().unwrap_or("-"),
            allowed = decision.allowed(),
            "write attempt"
        );
    }
    let response = match decision {
        Decision::Allow => {
            if writes && state.write_limiter.check_key(&login.to_string()).is_err() {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    axum::Json(ApiError::new(
                        ErrorCode::TooManyRequests,
                        "Too many changes in a short time; wait a minute and try again.",
                    )),
                )
                    .into_response()
            } else {
                next.run(request).await
            }
        }
        Decision::SignInRequired => (
            StatusCode::UNAUTHORIZED,
            axum::Json(ApiError::new(
                ErrorCode::Unauthenticated,
                "Sign in first: continue as a guest or with GitHub.",
            )),
        )
            .into_response(),
        Decision::Deny { reason } => (
            StatusCode::FORBIDDEN,
            axum::Json(ApiError::new(ErrorCode::Forbidden, reason)),
        )
            .into_response(),
    };
    with_guard_mark(response)
}

fn with_guard_mark(mut response: Response) -> Response {
    response.extensions_mut().insert(Guarded);
    response
}

/// Deny by default: an API response that no guard saw comes from a route that declared no access.
async fn deny_unguarded(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let response = next.run(request).await;
    if response.extensions().get::<Guarded>().is_some() {
        return response;
    }
    tracing::error!(%path, "API route without a declared permission; refusing it");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        axum::Json(ApiError::new(
            ErrorCode::Internal,
            "This endpoint is not available.",
        )),
    )
        .into_response()
}

/// Unknown API paths answer in the API's own error shape, never with the SPA's index.html.
async fn api_not_found() -> Response {
    with_guard_mark(
        (
            StatusCode::NOT_FOUND,
            axum::Json(ApiError::not_found("No such API endpoint.")),
        )
            .into_response(),
    )
}

/// The header every state-changing request from Tower's own page carries. A cross-site form cannot set it,
/// and a cross-site `fetch` with it needs a CORS preflight that Tower never grants.
pub const CSRF_HEADER: &str = "x-tower-csrf";

/// Refuses state-changing requests without the CSRF header or from another origin.
async fn csrf(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let method = request.method();
    if method == Method::GET || method == Method::HEAD || method == Method::OPTIONS {
        return next.run(request).await;
    }
    let headers = request.headers();
    let has_header = headers.get(CSRF_HEADER).is_some();
    let origin_ok = match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        None => true,
        Some(origin) => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            origin == state.auth.public_origin
                || origin.strip_prefix("http://") == Some(host)
                || origin.strip_prefix("https://") == Some(host)
        }
    };
    if has_header && origin_ok {
        return next.run(request).await;
    }
    tracing::warn!(path = %request.uri().path(), has_header, origin_ok, "refused a cross-site or header-less write");
    (
        StatusCode::FORBIDDEN,
        axum::Json(ApiError::new(
            ErrorCode::Forbidden,
            "This request did not come from Tower's own page (CSRF check).",
        )),
    )
        .into_response()
}

/// Headers every response carries: a CSP that lets the wasm module compile and allows nothing inline.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let pairs: [(&str, &str); 5] = [
        (
            "content-security-policy",
            "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
             img-src 'self' data: https:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'",
        ),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
    ];
    for (name, value) in pairs {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn healthz() -> &'static str {
    "ok"
}
