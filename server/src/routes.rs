//! The HTTP surface: the JSON API under `/api/v1`, the event stream, sign-in, the SPA, `/healthz` (liveness),
//! `/readyz` (readiness) and `/metrics` (Tower's own telemetry, see [`crate::telemetry`]).
//!
//! Every API route is served through [`ApiRoutes`] by its endpoint type from [`shared::api`], which
//! declares its method, path and access; the guard enforces that access. A route added to the API any
//! other way answers 500 (deny by default): the outer check refuses any API response that did not pass a
//! guard.

pub mod config;
pub mod databases;
pub mod delivery;
pub mod fleet;
pub mod logs;
pub mod metrics;
pub mod pipelines;
pub mod platform;
pub mod session;
pub mod slo;
pub mod spa;
pub mod webhooks;

use std::time::{Duration, Instant};

use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{MatchedPath, RawPathParams, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, get};
use axum::{Extension, Json, Router};
use axum_extra::extract::PrivateCookieJar;
use shared::api::{self, Access, Endpoint, Route};
use shared::auth::{Decision, Identity, Permission};
use tower_http::trace::TraceLayer;

use crate::auth::CurrentUser;
use crate::error::Error;
use crate::shutdown::Shutdown;
use crate::state::AppState;
use crate::telemetry::Telemetry;

/// What a serving router hands every request beside the state: the stop (readiness, writes, the event
/// stream) and the metrics. Handlers read it as an `Extension`.
#[derive(Debug, Clone)]
pub struct Serving {
    /// Requested on SIGTERM; writes hold it while they run.
    pub shutdown: Shutdown,
    /// This server's metrics.
    pub telemetry: Telemetry,
}

/// Marks a response that went through a route guard.
#[derive(Clone, Copy)]
struct Guarded;

/// Builds the API from the contract's endpoints, so that each route is served exactly as `shared::api`
/// declares it: method, path and access come from the endpoint's type, never from a string here.
pub struct ApiRoutes {
    state: AppState,
    router: Router<AppState>,
    routes: Vec<Route>,
}

impl ApiRoutes {
    /// An empty API, nested under [`api::PREFIX`] by [`router_with_api`].
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            router: Router::new(),
            routes: Vec::new(),
        }
    }

    /// Serves `E` with `handler`, behind the guard enforcing `E`'s declared access.
    pub fn serve<E, H, T>(mut self, handler: H) -> Self
    where
        E: Endpoint,
        H: axum::handler::Handler<T, AppState>,
        T: 'static,
    {
        let route = E::ROUTE;
        let filter = match route.method {
            api::Method::Get => MethodFilter::GET,
            api::Method::Post => MethodFilter::POST,
        };
        let guarded = axum::routing::on(filter, handler).route_layer(
            middleware::from_fn_with_state((self.state.clone(), route), guard),
        );
        self.router = self.router.route(route.relative_path(), guarded);
        self.routes.push(route);
        self
    }

    /// Every route served so far.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The router and the routes it serves.
    pub fn finish(self) -> (Router<AppState>, Vec<Route>) {
        (self.router, self.routes)
    }
}

/// The API's routes, each with its access. One list, so the route × role test walks exactly what is served.
pub fn api(state: &AppState) -> ApiRoutes {
    let api = ApiRoutes::new(state.clone());
    let api = session::routes(api);
    let api = fleet::routes(api);
    let api = databases::routes(api);
    let api = logs::routes(api);
    let api = metrics::routes(api);
    let api = slo::routes(api);
    let api = pipelines::routes(api);
    let api = config::routes(api);
    let api = platform::routes(api);
    let api = webhooks::routes(api);
    delivery::routes(api)
}

/// The whole application, without a socket, so tests can call it with `oneshot`; it is never stopped, and its
/// metrics have no per-watch series.
pub fn router(state: AppState) -> Router {
    let (api, _) = api(&state).finish();
    router_with_api(state, api)
}

/// The application as `tower serve` runs it: stopped by `shutdown`, counted in `telemetry`.
pub fn serving(state: AppState, shutdown: Shutdown, telemetry: Telemetry) -> Router {
    let (api, _) = api(&state).finish();
    assemble(
        state,
        api,
        Serving {
            shutdown,
            telemetry,
        },
    )
}

/// The application around a given API router; tests use it to show what happens to a route added without
/// declaring its access.
pub fn router_with_api(state: AppState, api: Router<AppState>) -> Router {
    let serving = Serving {
        shutdown: Shutdown::manual().1,
        telemetry: Telemetry::new(&state, None),
    };
    assemble(state, api, serving)
}

fn assemble(state: AppState, api: Router<AppState>, serving: Serving) -> Router {
    let api = Router::new()
        .nest("/v1", api)
        .fallback(api_not_found)
        .layer(middleware::from_fn(deny_unguarded));
    Router::new()
        .nest("/api", api)
        .merge(session::browser_routes())
        .merge(spa::routes(&state.assets))
        .layer(middleware::from_fn(api_root))
        .route_layer(middleware::from_fn(keep_matched_path))
        .layer(middleware::from_fn_with_state(state.clone(), csrf))
        .layer(middleware::from_fn(record_request))
        .layer(TraceLayer::new_for_http())
        .layer(middleware::from_fn(security_headers))
        // After the trace and metrics layers, so probes and scrapes stay out of the traces and the counts.
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(Extension(serving))
        .with_state(state)
}

/// Hands the matched route template to [`record_request`], which runs outside routing and so cannot see it.
async fn keep_matched_path(request: Request, next: Next) -> Response {
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(request).await;
    if let Some(matched) = matched {
        response.extensions_mut().insert(matched);
    }
    response
}

/// Counts every request by method, route template and status, and times it. The label is the template
/// (`/api/v1/services/{name}`), never the path, so a crawler cannot grow the series without bound.
async fn record_request(
    Extension(serving): Extension<Serving>,
    request: Request,
    next: Next,
) -> Response {
    let method = match *request.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let started = Instant::now();
    let response = next.run(request).await;
    let route = response
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
        // A nested router's fallback is matched as a private catch-all: it matched nothing of ours.
        .filter(|route| !route.contains("__private__"))
        .unwrap_or("unmatched");
    serving
        .telemetry
        .observe(method, route, response.status().as_u16(), started.elapsed());
    response
}

/// Readiness: 503 until the fleet's first picture is complete (every cluster's watches have listed once or
/// been found unreachable), 200 after, and 503 again from the moment a stop is requested, so a load balancer
/// stops sending requests before the listener closes. `/healthz` is liveness and stays 200 throughout.
async fn readyz(State(state): State<AppState>, Extension(serving): Extension<Serving>) -> Response {
    if serving.shutdown.is_requested() {
        return (StatusCode::SERVICE_UNAVAILABLE, "stopping\n").into_response();
    }
    match state.fleet.loading() {
        None => (StatusCode::OK, "ready\n").into_response(),
        Some(loading) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("starting: the fleet's first picture is not complete yet. {loading}\n"),
        )
            .into_response(),
    }
}

/// Tower's own metrics in Prometheus' text format. Public on the same listener: restrict it with a
/// NetworkPolicy in production (see ARCHITECTURE.md).
async fn metrics(Extension(serving): Extension<Serving>) -> Response {
    match serving.telemetry.encode() {
        Ok(text) => (
            [(header::CONTENT_TYPE, crate::telemetry::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        Err(error) => {
            Error::Internal(anyhow::anyhow!("encoding the metrics: {error}")).into_response()
        }
    }
}

/// What a write asked for after a stop began gets: nothing was started, and a retry reaches a Tower that runs.
fn stopping() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "5")],
        Json(shared::ApiError::new(
            shared::ErrorCode::Unavailable,
            "Tower is restarting, so this change was not started and nothing was written. Try again in a \
             moment.",
        )),
    )
        .into_response()
}

/// Runs a write to its end under a [`crate::shutdown::Hold`]: on its own task, so neither a browser that
/// goes away nor a stop that stops waiting cuts it in half, and a stop waits for it. After a stop began, the
/// write is not started at all.
async fn run_write(request: Request, next: Next) -> Response {
    let hold = match request.extensions().get::<Serving>() {
        Some(serving) => match serving.shutdown.hold() {
            Some(hold) => Some(hold),
            None => return stopping(),
        },
        None => None,
    };
    let write = tokio::spawn(async move {
        let response = next.run(request).await;
        drop(hold);
        response
    });
    match write.await {
        Ok(response) => response,
        Err(error) => {
            Error::Internal(anyhow::anyhow!("a write's task failed: {error}")).into_response()
        }
    }
}

/// Enforces a route's declared access, audits writes and rate-limits them.
async fn guard(
    State((state, route)): State<(AppState, Route)>,
    params: Result<RawPathParams, RawPathParamsRejection>,
    mut request: Request,
    next: Next,
) -> Response {
    // A segment that does not decode (`%ff`) is the client's mistake; unanswered here, the extractor's
    // plain-text rejection would pass no guard and become a 500.
    let Ok(params) = params else {
        return with_guard_mark(
            Error::Invalid(shared::delivery::FieldError::new(
                "path",
                "The path has a segment that is not UTF-8 once decoded.",
            ))
            .into_response(),
        );
    };
    let jar = PrivateCookieJar::from_headers(request.headers(), state.auth.key.clone());
    let user = state.auth.identity_in(&jar);
    // Handlers that need the user read it from here instead of decrypting the cookie again.
    request.extensions_mut().insert(CurrentUser(user.clone()));
    let service = params
        .iter()
        .find(|(key, _)| *key == "name")
        .map(|(_, value)| value.to_string());
    // Services and environments are DNS labels; anything else is refused before any lookup, so no
    // handler (and no upstream query built from the path) ever sees another shape.
    if let Err(problem) = labels_in_path(&params) {
        return with_guard_mark(Error::Invalid(problem).into_response());
    }
    let login = user
        .as_ref()
        .map(|u| u.login.as_str())
        .unwrap_or("anonymous");
    let decision = decide(&state, &route, user.as_ref(), service.as_deref());
    // Previews and reads change nothing: they are neither audited nor counted against the write limit, so
    // looking before acting is never throttled.
    if route.writes() {
        tracing::info!(
            target: "audit",
            user = login,
            action = %format!("{} {}", request.method(), request.uri().path()),
            target = service.as_deref().unwrap_or("-"),
            allowed = decision.is_ok(),
            "write attempt"
        );
    }
    let limited = match decision {
        Ok(()) if route.writes() => state.write_limiter.check_key(&login.to_string()).err(),
        _ => None,
    };
    let response = match decision {
        Ok(()) if let Some(not_until) = limited => {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(
                &governor::clock::DefaultClock::default(),
            ));
            Error::TooManyRequests {
                retry_after_secs: crate::error::retry_after_seconds(wait),
            }
            .into_response()
        }
        Ok(()) if route.writes() => run_write(request, next).await,
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    };
    with_guard_mark(response)
}

/// The `{name}` (a service), `{env}`, `{database}`, `{namespace}`, `{task}`, `{step}` and `{template}`
/// placeholders must be DNS labels, and `{run}` a DNS name, as Kubernetes, Tekton and the template catalog
/// name them.
fn labels_in_path(params: &RawPathParams) -> Result<(), shared::delivery::FieldError> {
    use shared::delivery::{FieldError, validate_label};
    for (key, value) in params {
        match key {
            "name" => validate_label("name", value)?,
            "env" => validate_label("env", value)?,
            "database" => validate_label("database", value)?,
            "namespace" => validate_label("namespace", value)?,
            "task" => validate_label("task", value)?,
            "step" => validate_label("step", value)?,
            "template" => validate_label("template", value)?,
            "run" if !logs::is_pod_name(value) => {
                return Err(FieldError::new(
                    "run",
                    "A run's name is lowercase letters, digits, '-' and '.', starting and ending with a \
                     letter or digit.",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `user` may call `route` (on `service`, for a service's route).
fn decide(
    state: &AppState,
    route: &Route,
    user: Option<&Identity>,
    service: Option<&str>,
) -> Result<(), Error> {
    let policy = &state.auth.policy;
    let decision = match route.access {
        Access::Public => Decision::Allow,
        Access::Fleet(permission) => policy.decide(user, permission, None),
        Access::Service(permission) => {
            let owner = service
                .and_then(|name| state.fleet.service(name))
                .map(|s| s.owner);
            match (user, owner) {
                (None, _) => Decision::SignInRequired,
                (Some(_), Some(owner)) => policy.decide(user, permission, Some(&owner)),
                // Say "not found" only to those who may browse the catalog at all.
                (Some(_), None) => match policy.decide(user, Permission::ReadCatalog, None) {
                    Decision::Allow => {
                        return Err(Error::NotFound(format!(
                            "service {}",
                            service.unwrap_or_default()
                        )));
                    }
                    denied => denied,
                },
            }
        }
    };
    match decision {
        Decision::Allow => Ok(()),
        Decision::SignInRequired => Err(Error::Unauthenticated),
        Decision::Deny { reason } => Err(Error::Forbidden(reason)),
    }
}

/// How long a request waits for a cold cache's first picture before answering 503.
pub(crate) const READY_WAIT: Duration = Duration::from_secs(10);

/// Waits for the fleet's first picture, at most [`READY_WAIT`]: a request to a Tower that just started
/// answers once the watches have listed, or 503 if they take too long.
pub(crate) async fn ready(state: &AppState) -> Result<(), Error> {
    if state.fleet.wait_until_ready(READY_WAIT).await {
        Ok(())
    } else {
        Err(Error::Syncing("services"))
    }
}

/// Answers at once: `Ok` once the fleet's first picture is complete, else 503 saying how far it is
/// ([`Error::Loading`], `Retry-After: 1`). For the service list, which a starting Tower's page polls to show
/// that progress rather than wait [`READY_WAIT`] for it.
pub(crate) fn loaded(state: &AppState) -> Result<(), Error> {
    match state.fleet.loading() {
        None => Ok(()),
        Some(loading) => Err(Error::Loading(loading)),
    }
}

fn with_guard_mark(mut response: Response) -> Response {
    response.extensions_mut().insert(Guarded);
    response
}

/// Deny by default: an API response that no guard saw comes from a route that declared no access.
async fn deny_unguarded(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let method = request.method().clone();
    let response = next.run(request).await;
    if response.extensions().get::<Guarded>().is_some() {
        return response;
    }
    // The path is a declared route's but the method none of its: the router answered before any guard or
    // handler ran, so nothing was served and there is no access to check; the client is told which methods
    // the route takes, in the API's error shape.
    if response.status() == StatusCode::METHOD_NOT_ALLOWED {
        return method_not_allowed(&method);
    }
    Error::Internal(anyhow::anyhow!(
        "API route {path} has no declared permission; refused"
    ))
    .into_response()
}

/// A query string read into `T`, refused in the API's error shape: axum's own `Query` answers a malformed
/// query with a plain-text 400, which no client of the API can read.
pub struct ApiQuery<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S>
    for ApiQuery<T>
{
    type Rejection = Error;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::try_from_uri(&parts.uri)
            .map(|axum::extract::Query(query)| ApiQuery(query))
            .map_err(|rejection| {
                Error::Invalid(shared::delivery::FieldError::new(
                    "query",
                    rejection.body_text(),
                ))
            })
    }
}

/// A 405 in the API's error shape (the router adds the `Allow` header, which lists the methods the route
/// takes, on the way out).
fn method_not_allowed(method: &Method) -> Response {
    let body = shared::ApiError::new(
        shared::ErrorCode::BadRequest,
        format!("This endpoint does not take {method}; its Allow header says what it takes."),
    );
    (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}

/// `/api/` is no route of the nested API (a nested router's tail cannot be empty), so without this the SPA
/// would answer it: with index.html, or a bare 405 for a write.
async fn api_root(request: Request, next: Next) -> Response {
    if request.uri().path() == "/api/" {
        return api_not_found().await;
    }
    next.run(request).await
}

/// Unknown API paths answer in the API's own error shape, never with the SPA's index.html.
async fn api_not_found() -> Response {
    with_guard_mark(Error::NotFound("API endpoint".into()).into_response())
}

/// Refuses state-changing requests without the CSRF header or from another origin.
async fn csrf(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let method = request.method();
    if method == Method::GET || method == Method::HEAD || method == Method::OPTIONS {
        return next.run(request).await;
    }
    // GitHub's webhook comes from GitHub, not a browser: its HMAC signature is its credential (checked by
    // `webhooks`), and no cookie of Tower's means anything to it.
    let webhook = api::GithubWebhook::ROUTE;
    if method == Method::POST && request.uri().path() == webhook.path {
        return next.run(request).await;
    }
    let headers = request.headers();
    let has_header = headers.get(api::CSRF_HEADER).is_some();
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
    Error::Forbidden("This request did not come from Tower's own page (CSRF check).".into())
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
