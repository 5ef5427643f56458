//! Rendering a headless run: streamed text, JSON, or JSON lines. Reads events from the
//! session's bus; writes only to the writers it is given ([`for_terminal`] wraps a
//! terminal in the sanitizer for text).

use std::io::Write;

use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::OutputFormat;
use crate::agent::runner::RunOutcome;
use crate::events::{Event, EventKind};

/// `w` as headless output writes it: through the sanitizer when `format` renders text
/// and `w` is a terminal, else unchanged (pipes, files and JSON get the exact bytes).
pub(crate) fn for_terminal<W>(w: W, format: OutputFormat) -> Box<dyn Write + Send>
where
    W: Write + std::io::IsTerminal + Send + 'static,
{
    if format == OutputFormat::Text && w.is_terminal() {
        Box::new(crate::sanitize::TerminalWriter::new(w))
    } else {
        Box::new(w)
    }
}

/// Consumes events until the bus closes, rendering them in `format` (text as
/// `session::render::text` writes it).
pub(crate) async fn render_events(
    mut rx: UnboundedReceiver<Event>,
    format: OutputFormat,
    mut out: impl Write + Send,
    err: impl Write + Send,
) {
    if format == OutputFormat::Text {
        return crate::session::render::text(rx, out, err).await;
    }
    while let Some(event) = rx.recv().await {
        // Output errors (a closed pipe) must not stop the run; drop what cannot be written.
        if format == OutputFormat::StreamJson {
            let _ = serde_json::to_string(&event)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"));
        }
        let _ = out.flush();
    }
}

/// Whether `event` is one `collect_requests` keeps: the lead's usage report of a request.
pub(crate) fn is_lead_request(event: &Event) -> bool {
    event.agent == "lead" && matches!(event.kind, EventKind::RequestUsage { .. })
}

/// The lead's `RequestUsage` events of a run, as JSON objects, until the bus closes
/// (subscribe with `is_lead_request`; other events are skipped).
pub(crate) async fn collect_requests(mut rx: UnboundedReceiver<Event>) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    while let Some(event) = rx.recv().await {
        if event.agent == "lead"
            && let EventKind::RequestUsage { .. } = &event.kind
            && let Ok(mut v) = serde_json::to_value(&event.kind)
        {
            if let Some(o) = v.as_object_mut() {
                o.remove("type");
            }
            out.push(v);
        }
    }
    out
}

/// Adds each request's cache figures (`requests`), the run's totals (`cache`) and why
/// the run stopped when a budget stopped it (`stop_reason`) to the result object.
pub(crate) fn add_spend(
    json: &mut serde_json::Value,
    outcome: &RunOutcome,
    requests: Vec<serde_json::Value>,
) {
    let u = &outcome.usage;
    json["cache"] = json!({
        "cached": u.cache_read_input_tokens,
        "created": u.cache_creation_input_tokens,
        "uncached": u.input_tokens,
        "read_share": crate::agent::budget::cache_share(u),
    });
    json["requests"] = serde_json::Value::Array(requests);
    if outcome.status == crate::agent::runner::RunStatus::BudgetExhausted {
        json["stop_reason"] = json!("budget_exhausted");
    }
}

/// The final JSON object of `--output-format json` (and the last line of stream-json).
pub(crate) fn result_json(
    outcome: &RunOutcome,
    session_id: &str,
    model: &str,
    tasks: &[crate::tasks::TaskRecord],
) -> serde_json::Value {
    let tasks: Vec<serde_json::Value> = tasks
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "kind": t.kind,
                "status": t.status,
                "description": t.description,
                "result": t.result,
                "worktree": t.worktree,
                "usage": t.usage,
            })
        })
        .collect();
    json!({
        "type": "result",
        "result": outcome.result,
        "status": outcome.status.as_str(),
        "is_error": outcome.status == crate::agent::runner::RunStatus::Failed,
        "turns": outcome.turns,
        "tool_calls": outcome.tool_calls,
        "usage": outcome.usage,
        "cost_usd": crate::pricing::cost_usd(model, &outcome.usage),
        "session_id": session_id,
        "tasks": tasks,
    })
}
