//! The dashboard's routes. Every request passes the guard first (401/403 otherwise, never
//! a page); then
//!
//! - `GET /` the page (the printed URL, `/?token=…`, also sets the cookie), `GET
//!   /app.js`, `GET /app.css`;
//! - `GET /api/events`: the sessions' lines, pushed as server-sent events (one JSON
//!   object per data line; lines ready together share an event);
//! - `GET /api/sessions`: each shown session's snapshot (what `crew ps` shows);
//! - `GET /api/worktrees?session=…`, `GET /api/output?session=…&task=…`;
//! - `POST /api/answer` `{"session","id","answer"}`: answers an approval question;
//! - `POST /api/review` `{"session","id","action","confirmation"}`: acts on a worktree.
//!
//! The POSTs are passed to the session's control socket as typed requests; the session
//! decides. Every answer is `no-store`, framed by nobody, and sends no referrer.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::guard::{Guard, Shown};
use super::{Scope, assets, feed};
use crate::approver::ApprovalAnswer;
use crate::session::live::control;
use crate::session::live::steer::Confirmation;
use crate::worktree::review::Review;

/// What the handlers share.
#[derive(Clone)]
pub(super) struct App {
    guard: Arc<Guard>,
    scope: Arc<Scope>,
}

impl App {
    /// The server's state.
    pub(super) fn new(guard: Guard, scope: Scope) -> App {
        App {
            guard: Arc::new(guard),
            scope: Arc::new(scope),
        }
    }
}

/// The routes, behind the guard.
pub(super) fn router(app: App) -> Router {
    Router::new()
        .route("/", get(page))
        .route(
            "/app.js",
            get(|| async { asset(assets::JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/app.css",
            get(|| async { asset(assets::CSS, "text/css; charset=utf-8") }),
        )
        .route("/api/events", get(events))
        .route("/api/sessions", get(sessions))
        .route("/api/worktrees", get(worktrees))
        .route("/api/output", get(output))
        .route("/api/answer", post(answer))
        .route("/api/review", post(review))
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such page") })
        .layer(middleware::from_fn_with_state(app.clone(), guarded))
        .with_state(app)
}

/// The guard, and the headers every answer carries.
async fn guarded(State(app): State<App>, request: Request, next: Next) -> Response {
    let shown = app
        .guard
        .check(request.method(), request.uri(), request.headers());
    let mut response = match shown {
        Ok(shown) => {
            let mut response = next.run(request).await;
            if shown == Shown::Query
                && let Ok(cookie) = HeaderValue::from_str(&app.guard.cookie())
            {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(refusal) => (refusal.status(), refusal.to_string()).into_response(),
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// The page, carrying the token for the requests that need it in a header.
async fn page(State(app): State<App>) -> Response {
    let html = assets::HTML.replace("{{TOKEN}}", app.guard.token());
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn bad(message: impl std::fmt::Display) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &json!({ "error": message.to_string() }),
    )
}

/// The most lines sent as one server-sent event.
const BATCH_LINES: usize = 512;

/// The sessions' lines as server-sent events: the lines ready together go as one event,
/// one line of its data each (a burst of 32 agents streaming costs one write, not 32).
async fn events(State(app): State<App>) -> impl IntoResponse {
    let stream = futures::stream::unfold(feed::start((*app.scope).clone()), |mut rx| async move {
        let mut data = rx.recv().await?;
        for _ in 1..BATCH_LINES {
            match rx.try_recv() {
                Ok(line) => {
                    data.push('\n');
                    data.push_str(&line);
                }
                Err(_) => break,
            }
        }
        Some((Ok::<_, Infallible>(Event::default().data(data)), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn sessions(State(app): State<App>) -> Response {
    let mut out = Vec::new();
    for entry in app.scope.sessions() {
        let snapshot = match &entry.socket {
            Some(socket) => control::ask(socket, "snapshot")
                .await
                .unwrap_or(Value::Null),
            None => Value::Null,
        };
        out.push(snapshot);
    }
    json_response(StatusCode::OK, &json!({ "sessions": out }))
}

/// The query's value for `key`.
fn query(request: &Request<Body>, key: &str) -> Option<String> {
    form_urlencoded::parse(request.uri().query()?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Asks session `session` (one this dashboard shows) for `request`.
async fn ask(app: &App, session: &str, request: &Value) -> Response {
    let Some(socket) = app.scope.find(session).and_then(|e| e.socket) else {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({ "error": format!("session `{session}` is not live here") }),
        );
    };
    match control::ask_within(&socket, &request.to_string(), control::REVIEW_PATIENCE).await {
        Ok(reply) if reply.get("error").is_some() => json_response(StatusCode::CONFLICT, &reply),
        Ok(reply) => json_response(StatusCode::OK, &reply),
        Err(e) => json_response(
            StatusCode::BAD_GATEWAY,
            &json!({ "error": format!("session `{session}` did not answer: {e}") }),
        ),
    }
}

async fn worktrees(State(app): State<App>, request: Request<Body>) -> Response {
    let Some(session) = query(&request, "session") else {
        return bad("name the session: ?session=ID");
    };
    ask(&app, &session, &json!({ "request": "worktrees" })).await
}

async fn output(State(app): State<App>, request: Request<Body>) -> Response {
    let (Some(session), Some(task)) = (query(&request, "session"), query(&request, "task")) else {
        return bad("name the session and the task: ?session=ID&task=ID");
    };
    ask(
        &app,
        &session,
        &json!({ "request": "output", "task": task }),
    )
    .await
}

/// `POST /api/answer`'s body.
#[derive(Deserialize)]
struct AnswerBody {
    session: String,
    id: u64,
    answer: ApprovalAnswer,
}

async fn answer(State(app): State<App>, body: Bytes) -> Response {
    let body: AnswerBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return bad(format!(
                "the body must be {{\"session\",\"id\",\"answer\"}}: {e}"
            ));
        }
    };
    if matches!(body.answer, ApprovalAnswer::AllowOutsideSandbox) {
        return bad("`allow_outside_sandbox` is answered in the terminal only");
    }
    let request = json!({ "request": "answer", "id": body.id, "answer": body.answer });
    ask(&app, &body.session, &request).await
}

/// `POST /api/review`'s body.
#[derive(Deserialize)]
struct ReviewBody {
    session: String,
    id: String,
    action: Review,
    #[serde(default)]
    confirmation: Confirmation,
}

async fn review(State(app): State<App>, body: Bytes) -> Response {
    let body: ReviewBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return bad(format!(
                "the body must be {{\"session\",\"id\",\"action\":\"diff|merge|squash|discard\"}}: {e}"
            ));
        }
    };
    let request = json!({
        "request": "review",
        "id": body.id,
        "action": body.action,
        "confirmation": body.confirmation,
    });
    ask(&app, &body.session, &request).await
}
