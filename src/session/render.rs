//! A session's events as text, as a person reads them: the lead's streamed answer on
//! `out`; tool calls, retries, errors, hooks, compaction, task endings (with the worktree
//! each kept) and team news on `err`, each
//! subagent's lines prefixed with its name. The headless run (`crew -p`) and the logs of
//! `crew mcp serve`'s delegated leads write this.

use std::io::Write;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::events::{Event, EventKind};

/// Consumes events until the bus closes, writing them as text. Output errors (a closed
/// pipe) do not stop the session: what cannot be written is dropped.
pub(crate) async fn text(
    mut rx: UnboundedReceiver<Event>,
    mut out: impl Write + Send,
    mut err: impl Write + Send,
) {
    let mut at_line_start = true;
    // An event's lines for `err` go out in one write: stderr is unbuffered, and a line
    // written piece by piece costs a system call a piece.
    let mut lines = Vec::new();
    while let Some(event) = rx.recv().await {
        let _ = render_text(&event, &mut out, &mut lines, &mut at_line_start);
        // What was published with it (a batch of calls starting or ending) goes out in
        // the same writes; nothing waits for more.
        while let Ok(event) = rx.try_recv() {
            let _ = render_text(&event, &mut out, &mut lines, &mut at_line_start);
        }
        let _ = out.flush();
        if !lines.is_empty() {
            let _ = err.write_all(&lines);
            lines.clear();
        }
    }
    if !at_line_start {
        let _ = writeln!(out);
    }
}

/// Whether `render_text` writes anything for `event`: the printer subscribes with it, so
/// the events text leaves out (whole messages, decisions, usage) neither are cloned for
/// it nor wake it.
pub(crate) fn shown_as_text(event: &Event) -> bool {
    match &event.kind {
        EventKind::TextDelta { .. } | EventKind::RunFinished { .. } => event.agent == "lead",
        EventKind::TaskChanged { status, .. } => matches!(
            &**status,
            "completed" | "failed" | "cancelled" | "max_turns"
        ),
        EventKind::ToolCallStarted { .. }
        | EventKind::ToolCallFinished { .. }
        | EventKind::Retrying { .. }
        | EventKind::Error { .. }
        | EventKind::AutoModeOff { .. }
        | EventKind::ActorRestarted { .. }
        | EventKind::Hook { .. }
        | EventKind::Compacted { .. }
        | EventKind::TeamMemberChanged { .. }
        | EventKind::TeamMessage { .. } => true,
        _ => false,
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
        EventKind::TaskChanged {
            id,
            kind,
            status,
            description,
            result,
        } if matches!(
            &**status,
            "completed" | "failed" | "cancelled" | "max_turns"
        ) =>
        {
            let result = result.as_deref().unwrap_or_default();
            let first = result
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            let first: String = first.chars().take(300).collect();
            let sep = if first.is_empty() { "" } else { ": " };
            writeln!(
                err,
                "{prefix}task {id} ({kind} \"{description}\") {status}{sep}{first}"
            )?;
            // What became of its worktree: where the work waits for review.
            for line in result.lines().filter(|l| l.starts_with("[worktree]")) {
                writeln!(err, "{prefix}  {line}")?;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventBus;

    /// A writer the test reads back after the renderer is done.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[tokio::test]
    async fn the_leads_answer_goes_to_out_and_tool_activity_to_err_with_the_agents_name() {
        let bus = EventBus::new();
        let (out, err) = (Shared::default(), Shared::default());
        // Subscribed as the headless run subscribes: what text shows passes the filter.
        let printer = tokio::spawn(text(
            bus.subscribe_where(shown_as_text),
            out.clone(),
            err.clone(),
        ));
        let text_delta = |t: &str| EventKind::TextDelta { text: t.into() };
        bus.publish("lead", text_delta("Hello"));
        // A subagent's text is its log's, not the lead's answer.
        bus.publish("sub1", text_delta("hidden"));
        bus.publish(
            "sub1",
            EventKind::ToolCallFinished {
                call_id: "c1".into(),
                name: "write_file".into(),
                is_error: true,
                error_code: Some("permission_denied".into()),
                summary: "refused".into(),
            },
        );
        bus.publish(
            "lead",
            EventKind::ToolCallFinished {
                call_id: "c2".into(),
                name: "read_file".into(),
                is_error: false,
                error_code: None,
                summary: "3 lines".into(),
            },
        );
        bus.publish("lead", text_delta(" world"));
        let task = |status: &str, result: Option<&str>| EventKind::TaskChanged {
            id: "t1234567".into(),
            kind: "agent".into(),
            status: status.into(),
            description: "fix the bug".into(),
            result: result.map(str::to_string),
        };
        // A task's start is not news; its end is, with the worktree it kept.
        bus.publish("lead", task("running", None));
        let kept = "Fixed it.\n\n[worktree] kept at /w/t1 on branch crew/t1/fix";
        bus.publish("lead", task("completed", Some(kept)));
        bus.close();
        printer.await.unwrap();
        // The answer ends on a line of its own once the bus closes.
        assert_eq!(out.text(), "Hello world\n");
        assert_eq!(
            err.text(),
            "[sub1] ✗ write_file [permission_denied] refused\n✓ read_file 3 lines\n\
             task t1234567 (agent \"fix the bug\") completed: Fixed it.\n  \
             [worktree] kept at /w/t1 on branch crew/t1/fix\n"
        );
    }

    /// What the filter leaves out, text would not have shown: whole messages, decisions,
    /// refusals (their call's end shows them), run starts and usage reports.
    #[test]
    fn the_events_the_filter_leaves_out_render_as_nothing() {
        use crate::protocol::Message;
        use crate::protocol::decision::{Source, Verdict};
        let left_out = [
            EventKind::MessageAppended {
                message: Message::user_text("a whole tool result"),
            },
            EventKind::PermissionDecided {
                call_id: "c1".into(),
                verdict: Verdict::Allow,
                source: Source::Mode,
                reason: "reads are allowed".into(),
            },
            EventKind::ApprovalRefused {
                call_id: "c1".into(),
                reason: "headless".into(),
            },
            EventKind::RunStarted {
                mode: "do".into(),
                task: "t".into(),
            },
            EventKind::RequestUsage {
                turn: 1,
                model: "m".into(),
                cached: 1,
                created: 2,
                uncached: 3,
                output: 4,
                cost_usd: None,
            },
        ];
        for kind in left_out {
            let event = Event {
                agent: "lead".into(),
                kind,
            };
            assert!(!shown_as_text(&event), "{event:?}");
            let (mut out, mut err) = (Vec::new(), Vec::new());
            render_text(&event, &mut out, &mut err, &mut false).unwrap();
            assert!(out.is_empty() && err.is_empty(), "{event:?} rendered");
        }
    }
}
