//! The scripted provider: replays a file of turns and records every request it was sent,
//! so tests and examples drive agents deterministically and can assert what a model was
//! shown (tool definitions, messages, reminders).
//!
//! The file format (turns, per-agent entries, `touch`/`wait_for` gates, `model`, `cache`)
//! is described and parsed in `scripted/format.rs`.

mod format;

pub use format::{AgentScript, Script, ScriptError, ScriptedCall, Turn};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_stream::stream;

use super::cache_sim::{CacheBill, CacheSim};
use super::{EventStream, ModelRequest, Provider, ProviderError, StreamEvent};
use crew_protocol::{StopReason, ToolCall, Usage};

/// How long a `wait_for` turn waits when the script gives no bound.
const DEFAULT_WAIT_TIMEOUT_MS: u64 = 120_000;

/// How often a `wait_for` turn looks for its file.
const WAIT_POLL: Duration = Duration::from_millis(10);

/// A script path with `{agent}` replaced by the agent id (`/` → `_`).
fn signal_path(template: &str, agent: &str) -> PathBuf {
    PathBuf::from(template.replace("{agent}", &agent.replace('/', "_")))
}

/// Waits until `path` exists, for at most `timeout`; false when it never appeared.
async fn wait_for_file(path: &Path, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if path.exists() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

#[derive(Default)]
struct Cursor {
    shared: usize,
    per_agent: HashMap<String, usize>,
}

/// Replays a `Script` and records the requests it receives.
#[derive(Clone)]
pub struct ScriptedProvider {
    script: Arc<Script>,
    cursor: Arc<Mutex<Cursor>>,
    /// Every request so far, for in-process tests (`None`: not kept; a long run would
    /// otherwise hold every conversation prefix it ever sent, quadratic in its length).
    requests: Option<Arc<Mutex<Vec<ModelRequest>>>>,
    record_to: Option<PathBuf>,
    cache: Arc<Mutex<CacheSim>>,
}

impl ScriptedProvider {
    /// A provider replaying `script`, keeping every request in memory (`requests`) for
    /// in-process tests; see [`ScriptedProvider::without_memory`].
    pub fn new(script: Script) -> Self {
        Self {
            script: Arc::new(script),
            cursor: Arc::default(),
            requests: Some(Arc::default()),
            record_to: None,
            cache: Arc::default(),
        }
    }

    /// Parses a script from JSON text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Script, ScriptError> {
        format::parse(text, origin)
    }

    /// Loads a script file.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        Ok(Self::new(format::load(path)?))
    }

    /// Keeps no request in memory (`requests` is then empty): the binary's scripted runs,
    /// which record to a file only when asked (`--record-requests`).
    pub fn without_memory(mut self) -> Self {
        self.requests = None;
        self
    }

    /// Also appends every request, as one JSON line, to `path`.
    pub fn record_to(mut self, path: PathBuf) -> Self {
        self.record_to = Some(path);
        self
    }

    /// The model the script stands in for, if it names one.
    pub fn model(&self) -> Option<&str> {
        self.script.model.as_deref()
    }

    /// Every request received so far, in order (none after `without_memory`).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .as_ref()
            .map(|r| lock(r).clone())
            .unwrap_or_default()
    }

    fn next_turn(&self, agent: &str) -> (usize, Option<Turn>) {
        let mut cursor = lock(&self.cursor);
        // `agent` is `type/id` for subagents, plain id for the lead. Each agent replays
        // its script from the start, so several subagents of one type behave alike.
        let key = agent
            .split('/')
            .rev()
            .find(|k| self.script.agents.contains_key(*k))
            .map(str::to_string);
        match key {
            Some(k) => {
                let i = cursor.per_agent.entry(agent.to_string()).or_default();
                let turn = self.script.agents[&k].turns.get(*i).cloned();
                *i += 1;
                (*i, turn)
            }
            None => {
                let i = cursor.shared;
                cursor.shared += 1;
                (i + 1, self.script.turns.get(i).cloned())
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Poisoning only means a recorder panicked mid-push; the data is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "script"
    }

    fn stream(&self, request: ModelRequest) -> EventStream {
        if let Some(path) = &self.record_to {
            if let Ok(mut line) = serde_json::to_string(&request) {
                use std::io::Write;
                // One `write` per line: agents record at once, and `writeln!` would write
                // the newline separately, so two lines could run together.
                line.push('\n');
                let written = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut f| f.write_all(line.as_bytes()));
                if let Err(e) = written {
                    tracing::warn!("cannot record request to {}: {e}", path.display());
                }
            }
        }
        let (number, turn) = self.next_turn(&request.agent);
        let touch = turn
            .as_ref()
            .and_then(|t| t.touch.as_deref())
            .map(|p| signal_path(p, &request.agent));
        let wait_for = turn
            .as_ref()
            .and_then(|t| t.wait_for.as_deref())
            .map(|p| signal_path(p, &request.agent));
        let billed = self.script.cache.then(|| lock(&self.cache).bill(&request));
        if let Some(kept) = &self.requests {
            lock(kept).push(request);
        }
        let mut turn = turn.unwrap_or_else(|| Turn {
            text: Some("[script exhausted]".into()),
            ..Turn::default()
        });
        if let (None, Some(bill)) = (&turn.usage, billed) {
            turn.usage = Some(simulated_usage(&turn, bill));
        }
        Box::pin(stream! {
            if turn.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
            }
            if let Some(path) = &touch {
                if let Err(e) = std::fs::write(path, b"") {
                    yield Err(ProviderError::Stream(format!(
                        "scripted turn {number}: cannot create touch file {}: {e}", path.display()
                    )));
                    return;
                }
            }
            if turn.panic {
                panic!("scripted turn {number} panics as the script asks");
            }
            if let Some(message) = turn.error {
                yield Err(ProviderError::Stream(message));
                return;
            }
            if let Some(thinking) = turn.thinking {
                yield Ok(StreamEvent::Thinking { thinking, signature: None });
            }
            if let Some(text) = turn.text {
                for chunk in chunks(&text) {
                    if turn.chunk_delay_ms > 0 {
                        tokio::time::sleep(Duration::from_millis(turn.chunk_delay_ms)).await;
                    }
                    yield Ok(StreamEvent::TextDelta { text: chunk });
                }
            }
            if let Some(path) = &wait_for {
                let ms = turn.wait_timeout_ms.unwrap_or(DEFAULT_WAIT_TIMEOUT_MS);
                if !wait_for_file(path, Duration::from_millis(ms)).await {
                    yield Err(ProviderError::Stream(format!(
                        "scripted turn {number}: wait_for file {} did not appear within {ms} ms", path.display()
                    )));
                    return;
                }
            }
            let has_calls = !turn.tool_calls.is_empty();
            for (i, c) in turn.tool_calls.into_iter().enumerate() {
                let arguments = match (c.arguments, c.input) {
                    (Some(raw), _) => raw,
                    (None, Some(v)) => compact(&v),
                    (None, None) => "{}".to_string(),
                };
                let id = c.id.unwrap_or_else(|| format!("call_{number}_{}", i + 1));
                yield Ok(StreamEvent::ToolCall { call: ToolCall { id, name: c.name, arguments } });
            }
            yield Ok(StreamEvent::Usage { usage: turn.usage.unwrap_or_default() });
            let reason = turn.stop_reason.unwrap_or(if has_calls { StopReason::ToolUse } else { StopReason::EndTurn });
            yield Ok(StreamEvent::Stop { reason });
        })
    }
}

/// A call's arguments as the model sends them: compact JSON, whatever the script's layout.
fn compact(input: &serde_json::value::RawValue) -> String {
    serde_json::from_str::<serde_json::Value>(input.get())
        .map_or_else(|_| input.get().to_string(), |v| v.to_string())
}

/// A turn's usage as billed by the simulated cache, output at 4 bytes a token.
fn simulated_usage(turn: &Turn, bill: CacheBill) -> Usage {
    let out_bytes = turn.text.as_ref().map_or(0, String::len)
        + turn
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.input.as_deref().map_or(2, |v| compact(v).len()))
            .sum::<usize>();
    Usage {
        input_tokens: bill.uncached,
        output_tokens: (out_bytes as u64).div_ceil(4),
        cache_creation_input_tokens: bill.created,
        cache_read_input_tokens: bill.read,
    }
}

/// Splits text into word-sized chunks so it streams like a model's output.
fn chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in text.chars() {
        cur.push(ch);
        if ch.is_whitespace() && cur.len() >= 8 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The built-in demo, run when no model is configured and no API key is set.
pub const DEMO_SCRIPT: &str = include_str!("demo.json");

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn request(agent: &str) -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: String::new(),
            messages: Default::default(),
            tools: Vec::new().into(),
            max_tokens: 100,
            agent: agent.into(),
        }
    }

    fn text_of(events: &[Result<StreamEvent, ProviderError>]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::TextDelta { text }) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn replays_turns_in_order_and_records_requests() {
        let script: Script = serde_json::from_str(
            r#"{"turns":[{"text":"hello there world","tool_calls":[{"name":"read_file","input":{"path":"a"}}]},{"text":"bye"}]}"#,
        )
        .unwrap();
        let p = ScriptedProvider::new(script);
        let first: Vec<_> = p.stream(request("lead")).collect().await;
        assert_eq!(text_of(&first), "hello there world");
        assert!(first.iter().any(|e| matches!(e, Ok(StreamEvent::ToolCall { call }) if call.name == "read_file" && call.arguments == r#"{"path":"a"}"#)));
        assert!(matches!(
            first.last(),
            Some(Ok(StreamEvent::Stop {
                reason: StopReason::ToolUse
            }))
        ));
        let second: Vec<_> = p.stream(request("lead")).collect().await;
        assert!(matches!(
            second.last(),
            Some(Ok(StreamEvent::Stop {
                reason: StopReason::EndTurn
            }))
        ));
        let third: Vec<_> = p.stream(request("lead")).collect().await;
        assert!(text_of(&third).contains("script exhausted"));
        assert_eq!(p.requests().len(), 3);
    }

    #[tokio::test]
    async fn without_memory_keeps_no_request_but_still_records_to_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("requests.jsonl");
        let script: Script =
            serde_json::from_str(r#"{"turns":[{"text":"a"},{"text":"b"}]}"#).unwrap();
        let p = ScriptedProvider::new(script)
            .without_memory()
            .record_to(file.clone());
        let _: Vec<_> = p.stream(request("lead")).collect().await;
        let _: Vec<_> = p.stream(request("lead")).collect().await;
        assert!(p.requests().is_empty());
        let lines = std::fs::read_to_string(&file).unwrap();
        assert_eq!(lines.lines().count(), 2);
    }

    #[tokio::test]
    async fn routes_agents_to_their_own_turns() {
        let script: Script = serde_json::from_str(
            r#"{"turns":[{"text":"lead"}],"agents":{"explore":{"turns":[{"text":"sub"}]}}}"#,
        )
        .unwrap();
        let p = ScriptedProvider::new(script);
        let sub: Vec<_> = p.stream(request("explore/a1")).collect().await;
        assert!(matches!(&sub[0], Ok(StreamEvent::TextDelta { text }) if text == "sub"));
        let lead: Vec<_> = p.stream(request("lead")).collect().await;
        assert!(matches!(&lead[0], Ok(StreamEvent::TextDelta { text }) if text == "lead"));
    }

    #[tokio::test]
    async fn a_gated_turn_touches_streams_its_text_then_waits_for_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let script: Script = serde_json::from_str(&format!(
            r#"{{"turns":[{{"text":"working","touch":"{d}/started-{{agent}}","wait_for":"{d}/go",
                "tool_calls":[{{"name":"read_file","input":{{"path":"a"}}}}]}}]}}"#
        ))
        .unwrap();
        let p = ScriptedProvider::new(script);
        let mut events = p.stream(request("explore/a1"));
        // The text arrives before the gate opens, and the start is signalled by a file.
        let first = events.next().await.unwrap().unwrap();
        assert!(matches!(first, StreamEvent::TextDelta { ref text } if text == "working"));
        assert!(dir.path().join("started-explore_a1").exists());
        // Without the release file the turn does not go on.
        let pending = tokio::time::timeout(Duration::from_millis(50), events.next()).await;
        assert!(
            pending.is_err(),
            "the turn went on without its wait_for file"
        );
        std::fs::write(dir.path().join("go"), b"").unwrap();
        let rest: Vec<_> = events.collect().await;
        assert!(
            rest.iter().any(
                |e| matches!(e, Ok(StreamEvent::ToolCall { call }) if call.name == "read_file")
            )
        );
        assert!(matches!(
            rest.last(),
            Some(Ok(StreamEvent::Stop {
                reason: StopReason::ToolUse
            }))
        ));
    }

    #[tokio::test]
    async fn a_wait_for_file_that_never_appears_fails_the_turn_naming_it() {
        let script: Script = serde_json::from_str(
            r#"{"turns":[{"wait_for":"/nonexistent/crew-never","wait_timeout_ms":30}]}"#,
        )
        .unwrap();
        let events: Vec<_> = ScriptedProvider::new(script)
            .stream(request("lead"))
            .collect()
            .await;
        assert!(
            matches!(events.last(), Some(Err(ProviderError::Stream(m))) if m.contains("/nonexistent/crew-never")),
            "{events:?}"
        );
    }

    #[test]
    fn parse_errors_name_file_line_and_column() {
        let err =
            ScriptedProvider::parse("{\n \"turns\": [ {\"txt\": 1} ]\n}", Path::new("s.json"))
                .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("s.json") && msg.contains("line 2"), "{msg}");
    }

    #[test]
    fn demo_script_parses() {
        ScriptedProvider::parse(DEMO_SCRIPT, Path::new("demo.json")).unwrap();
    }
}
