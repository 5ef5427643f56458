//! A session's events as text, as a person reads them: the lead's streamed answer on
//! `out`; tool calls, retries, errors, hooks, compaction and team news on `err`, each
//! subagent's lines prefixed with its name. The headless run (`crew -p`) and the logs of
//! `crew mcp serve`'s delegated leads write this.

use std::io::Write;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::events::{Event, EventKind};

/// Consumes events until the bus closes, writing them as text. Output errors (a closed
/// pipe) do not stop the session: what cannot be written is dropped.
pub async fn text(
    mut rx: UnboundedReceiver<Event>,
    mut out: impl Write + Send,
    mut err: impl Write + Send,
) {
    let mut at_line_start = true;
    while let Some(event) = rx.recv().await {
        let _ = render_text(&event, &mut out, &mut err, &mut at_line_start);
        let _ = out.flush();
    }
    if !at_line_start {
        let _ = writeln!(out);
    }
}

fn render_text(
    event: &Event,
    out: &mut impl Write,
    err: &mut impl Write,
    at_line_start: &mut bool,
) -> std::io::Result<()> {
    let prefix = if event.agent == "lead" {
        String::new()
    } else {
        format!("[{}] ", event.agent)
    };
    match &event.kind {
        // Subagents' text goes to their task logs, not into the lead's answer.
        EventKind::TextDelta { text } if event.agent == "lead" => {
            write!(out, "{text}")?;
            *at_line_start = text.ends_with('\n');
        }
        EventKind::RunFinished { .. } if event.agent == "lead" && !*at_line_start => {
            writeln!(out)?;
            *at_line_start = true;
        }
        EventKind::ToolCallStarted { call } => {
            if !*at_line_start {
                writeln!(out)?;
                *at_line_start = true;
            }
            out.flush()?;
            let args: String = call.arguments.chars().take(160).collect();
            writeln!(err, "{prefix}→ {} {args}", call.name)?;
        }
        EventKind::ToolCallFinished {
            name,
            is_error,
            error_code,
            summary,
            ..
        } => {
            if *is_error {
                writeln!(
                    err,
                    "{prefix}✗ {name} [{}] {summary}",
                    error_code.as_deref().unwrap_or("error")
                )?;
            } else {
                writeln!(err, "{prefix}✓ {name} {summary}")?;
            }
        }
        EventKind::Retrying {
            delay_ms, reason, ..
        } => {
            writeln!(
                err,
                "{prefix}retrying in {:.1}s: {reason}",
                *delay_ms as f64 / 1000.0
            )?;
        }
        EventKind::Error { message } => writeln!(err, "{prefix}error: {message}")?,
        EventKind::AutoModeOff { reason } => writeln!(
            err,
            "auto mode is off: {reason}; calls ask again (headless: they are refused)"
        )?,
        EventKind::ActorRestarted { actor, reason, .. } => writeln!(
            err,
            "session: restarted the {actor} after it failed: {reason}"
        )?,
        EventKind::Hook { message, .. } => writeln!(err, "{prefix}hook: {message}")?,
        EventKind::Compacted {
            trigger,
            tokens_before,
            tokens_after,
            ..
        } => writeln!(
            err,
            "{prefix}context compacted ({trigger}): about {tokens_before} → {tokens_after} tokens"
        )?,
        EventKind::TeamMemberChanged { name, status, .. } => {
            writeln!(err, "team: {name} is {status}")?;
        }
        EventKind::TeamMessage {
            from, to, summary, ..
        } => writeln!(err, "team: {from} → {to}: {summary}")?,
        _ => {}
    }
    Ok(())
}
