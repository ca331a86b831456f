//! No response body, header or log line ever carries a secret: the App private key, an installation token,
//! an OAuth token, the OAuth client secret, the Argo CD token, or the session key.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, Response};
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

use crate::TestApp;

/// Every log line of the test binary, from the moment the first test asks for it.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = {
            let buffer = buffer.clone();
            move || Capture(buffer.clone())
        };
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("debug,hyper=info,hyper_util=info,h2=info,rustls=info,tower=info")
            .with_writer(writer)
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        buffer
    })
    .clone()
}

struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends a request and returns the response with its whole body as text, plus headers as text.
async fn exchange(app: &TestApp, request: Request<Body>) -> (Response<()>, String) {
    into_text(app.router.clone().oneshot(request).await.unwrap()).await
}

/// A response's headers and whole body as text, beside the response without its body.
async fn into_text(response: Response<Body>) -> (Response<()>, String) {
    let (parts, body) = response.into_parts();
    // Streams (SSE, logs) are read for a moment only.
    let bytes = tokio::time::timeout(Duration::from_millis(700), body.collect())
        .await
        .ok()
        .and_then(Result::ok)
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let headers = format!("{:?}", parts.headers);
    (
        Response::from_parts(parts, ()),
        format!("{headers}\n{}", String::from_utf8_lossy(&bytes)),
    )
}

fn location(response: &Response<()>) -> String {
    response.headers()["location"].to_str().unwrap().to_string()
}

fn set_cookie(response: &Response<()>) -> String {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::test]
async fn no_response_and_no_log_line_carries_a_secret() {
    let logs = captured_logs();
    let app = TestApp::start().await;
    let mut seen = String::new();

    // Sign in as ada through the sandbox forge's OAuth flow, as a browser would.
    let (start, signed_in) = app
        .sign_in_through_forge("return_to=/services/payments", "ada")
        .await;
    seen.push_str(&format!("{:?}\n", start.headers()));
    seen.push_str(&crate::body_text(start).await);
    let (signed_in, text) = into_text(signed_in).await;
    seen.push_str(&text);
    assert_eq!(location(&signed_in), "/services/payments");
    let session = set_cookie(&signed_in);
    let session = session
        .split("; ")
        .find(|c| c.starts_with("tower_session="))
        .unwrap()
        .to_string();

    let get = |path: &str| {
        Request::get(path)
            .header("cookie", &session)
            .body(Body::empty())
            .unwrap()
    };
    let (_, text) = exchange(&app, get("/api/v1/session")).await;
    assert!(text.contains("\"login\":\"ada\""), "{text}");
    assert!(text.contains("payments"));
    seen.push_str(&text);

    // Reading cards makes Tower mint an installation token for the repository facts.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = exchange(&app, get("/api/v1/services/payments")).await;
        seen.push_str(&text);
        if text.contains("\"changes\":[{") || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for path in [
        "/api/v1/services",
        "/api/v1/services/payments/databases",
        "/api/v1/environments",
        "/api/v1/activity",
    ] {
        let (_, text) = exchange(&app, get(path)).await;
        seen.push_str(&text);
    }
    let (_, detail) = exchange(&app, get("/api/v1/services/payments")).await;
    let pod = detail
        .split("\"name\":\"payments-")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default();
    let (_, text) = exchange(
        &app,
        get(&format!(
            "/api/v1/services/payments/environments/prod/logs?pod=payments-{pod}&tail=5"
        )),
    )
    .await;
    seen.push_str(&text);

    // An owner's sync goes to Argo CD with its token.
    let (sync, text) = exchange(
        &app,
        Request::builder()
            .method(Method::POST)
            .uri("/api/v1/services/payments/environments/prod/sync")
            .header("cookie", &session)
            .header("x-tower-csrf", "1")
            .header("content-type", "application/json")
            .body(Body::from("{\"force\":false}"))
            .unwrap(),
    )
    .await;
    assert_eq!(
        sync.status(),
        200,
        "{text}\n{}",
        String::from_utf8_lossy(&logs.lock().unwrap())
            .lines()
            .filter(|l| l.contains("upstream"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    seen.push_str(&text);
    let (out, text) = exchange(
        &app,
        Request::post("/api/v1/session/sign-out")
            .header("cookie", &session)
            .header("x-tower-csrf", "1")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(out.status(), 204);
    seen.push_str(&text);

    let (_, private_key) = sandbox::forge::Forge::demo_app();
    let key_line = private_key.lines().nth(3).unwrap().to_string();
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logged.contains("member signed in"), "logs were captured");
    let secrets = [
        ("an installation token", "ghs_".to_string()),
        ("an OAuth token", "gho_".to_string()),
        ("the App private key", key_line),
        (
            "the OAuth client secret",
            sandbox::forge::DEMO_CLIENT_SECRET.to_string(),
        ),
        ("the Argo CD token", sandbox::ARGOCD_TOKEN.to_string()),
        (
            "the session key",
            format!("{:?}", app.state.auth.key.master())
                .chars()
                .skip(1)
                .take(24)
                .collect(),
        ),
    ];
    for (what, secret) in &secrets {
        assert!(!seen.contains(secret.as_str()), "a response carried {what}");
        assert!(
            !logged.contains(secret.as_str()),
            "a log line carried {what}"
        );
    }
}
