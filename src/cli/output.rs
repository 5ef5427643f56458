//! Rendering a headless run: streamed text, JSON, or JSON lines. Reads events from the
//! session's bus; writes only to the writers it is given ([`for_terminal`] wraps a
//! terminal in the sanitizer for text).

use std::io::Write;

use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::OutputFormat;
use super::stream::messages::Timing;
use super::stream::printer::Printer;
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

/// What the printer of a headless run needs besides the events: the format, whether to
/// stream text deltas, the session's stamp and (for stream-json) the init message.
pub(crate) struct Rendering {
    /// The output format.
    pub format: OutputFormat,
    /// The printer of Claude Code's messages (`json` and `stream-json`).
    pub printer: Printer,
    /// The `system` init message stream-json opens with.
    pub init: Option<serde_json::Value>,
}

/// Consumes events until the bus closes, rendering them as `how` says (text as
/// `session::render::text` writes it); returns the printer, which has counted what the
/// result needs (model time, refused calls).
pub(crate) async fn render_events(
    mut rx: UnboundedReceiver<Event>,
    how: Rendering,
    mut out: impl Write + Send,
    err: impl Write + Send,
) -> Printer {
    let Rendering {
        format,
        mut printer,
        init,
    } = how;
    if format == OutputFormat::Text {
        crate::session::render::text(rx, out, err).await;
        return printer;
    }
    if let Some(init) = &init {
        line(&mut out, init);
    }
    while let Some(event) = rx.recv().await {
        // The printer counts for every format; it emits messages only for stream-json.
        let message = printer.on_event(&event);
        if format == OutputFormat::Events {
            line(&mut out, &event);
        } else if let Some(v) = message {
            line(&mut out, &v);
        }
    }
    printer
}

/// Writes `v` as one line of JSON. Output errors (a closed pipe) must not stop the run:
/// what cannot be written is dropped.
fn line(out: &mut impl Write, v: &impl serde::Serialize) {
    let _ = serde_json::to_writer(&mut *out, v)
        .map_err(std::io::Error::other)
        .and_then(|()| out.write_all(b"\n"));
    let _ = out.flush();
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

/// The final JSON object of `--output-format json` (and the last line of stream-json and
/// events): Claude Code's `result` message, with crew's `tasks` beside its keys.
pub(crate) fn result_json(
    outcome: &RunOutcome,
    printer: &mut Printer,
    duration_ms: u64,
    tasks: &[crate::tasks::TaskRecord],
) -> serde_json::Value {
    let (api_ms, denials) = printer.take_run();
    let timing = Timing {
        duration_ms,
        duration_api_ms: api_ms,
    };
    let mut json = super::stream::messages::result(&printer.stamp(), outcome, &timing, &denials);
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
    json["tasks"] = serde_json::Value::Array(tasks);
    json
}
