//! The tool executor: runs cleared calls with argument validation, a timeout, a panic
//! guard and result offloading (`offload`: large results are saved to the session's
//! `results` directory and previewed). `run_cleared` is the whole procedure, private to this
//! module; the actor in `actor.rs` only spawns it so its mailbox never waits on a tool.
//! Outside code cannot run a call without the executor actor (and so without the gate):
//!
//! ```compile_fail,E0603
//! use crewmaster::executor::run_cleared;
//! ```

pub mod actor;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use crate::gate::ClearedCall;
use crate::offload::{ResultsDir, offload};
use crate::protocol::{ToolCall, ToolResult};
use crate::tools::Registry;

/// The executor's default per-call timeout when a tool sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Results longer than this many characters are cut in the middle when they cannot be
/// offloaded (no session directory).
pub const MAX_RESULT_CHARS: usize = 30_000;

/// Runs one cleared call to completion (only the executor actor calls it) and returns the result the model will see.
/// Never panics: a panicking tool becomes a `panicked` error result.
async fn run_cleared(
    registry: Arc<Registry>,
    cleared: ClearedCall,
    default_timeout: Duration,
    results: Option<Arc<ResultsDir>>,
) -> ToolResult {
    let (call, name, mut ctx) = cleared.into_parts();
    // A tool that streams its output (run_command) writes it here as it comes.
    let streams = registry.get(&name).is_some_and(|t| t.streams_output());
    let spill = results
        .as_ref()
        .filter(|_| streams)
        .map(|r| r.fresh_path(&call.id));
    ctx.offload_to = spill.clone();
    let mut result = run_tool(registry, &call, &name, ctx, default_timeout).await;
    let streamed = spill.filter(|p| p.exists());
    if streamed.is_some() && result.content.len() <= crate::offload::OFFLOAD_ABOVE_BYTES {
        // The tool saved its whole output and shows a preview already.
        result.saved_to = streamed;
        return result;
    }
    // A short result is shown as it is: no file to write, so no hop to the blocking pool.
    if result.content.len() < crate::offload::SAVE_ABOVE_BYTES {
        result.saved_to = streamed;
        return result;
    }
    let id = call.id.clone();
    let text = std::mem::take(&mut result.content);
    let shown = tokio::task::spawn_blocking(move || offload(results.as_deref(), &id, text)).await;
    match shown {
        Ok(shown) => {
            result.content = shown.text;
            result.saved_to = shown.saved_to.or(streamed);
        }
        Err(e) => {
            let reason = format!("the tool ran, but preparing its result failed: {e}");
            return ToolResult::error(&call.id, "failed", reason);
        }
    }
    result
}

/// Runs the tool of a cleared call: validation, timeout, panic guard.
async fn run_tool(
    registry: Arc<Registry>,
    call: &ToolCall,
    name: &str,
    ctx: crate::tools::ToolContext,
    default_timeout: Duration,
) -> ToolResult {
    let name = name.to_string();
    let Some(tool) = registry.get(&name) else {
        return ToolResult::error(
            &call.id,
            "unknown_tool",
            format!("no tool named `{name}` exists"),
        );
    };
    let input: serde_json::Value = match serde_json::from_str(&call.arguments) {
        Ok(v) => v,
        Err(e) => {
            return ToolResult::error(
                &call.id,
                "invalid_arguments",
                format!(
                    "arguments are not valid JSON ({e}); send a JSON object matching the tool's schema"
                ),
            );
        }
    };
    if let Err(e) = registry.validate(&tool, &input) {
        return ToolResult::error(&call.id, "invalid_arguments", e.to_string());
    }
    let timeout = tool.definition().timeout.unwrap_or(default_timeout);
    let cancel = ctx.cancel.clone();
    // The tool runs in this task (the executor already gave the call a task of its own):
    // `catch_unwind` turns a panic into an error result, as a second task would, without
    // the extra hop between tasks on every call.
    let mut run = std::pin::pin!(AssertUnwindSafe(tool.run(input, ctx)).catch_unwind());
    match tokio::time::timeout(timeout, &mut run).await {
        Ok(Ok(Ok(text))) => ToolResult::ok(&call.id, text),
        Ok(Ok(Err(e))) => ToolResult::error(&call.id, e.code(), e.to_string()),
        Ok(Err(panic)) => ToolResult::error(
            &call.id,
            "panicked",
            format!("tool `{name}` crashed: {}", panic_message(panic)),
        ),
        Err(_) => {
            // Tell the tool to clean up (kill its processes); the run is dropped on return.
            cancel.cancel();
            ToolResult::error(
                &call.id,
                "timeout",
                format!(
                    "tool `{name}` did not finish within {} s and was stopped",
                    timeout.as_secs_f64()
                ),
            )
        }
    }
}

/// The message a panic carried, for error results and failed tasks.
pub fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Cutting a text to its head and tail (defined with the results it shapes in
/// `offload`, re-exported here for its old paths).
pub use crate::offload::{truncate, truncate_with};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_head_and_tail_and_counts_the_cut() {
        let text: String = (0..1000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let out = truncate(&text, 100);
        assert!(out.starts_with(&text[..80]));
        assert!(out.ends_with(&text[980..]));
        assert!(out.contains("900 characters cut of 1000"));
        assert_eq!(truncate("short", 100), "short");
    }
}
