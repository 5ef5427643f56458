//! What a hook reads on stdin, crew against the real Claude Code CLI: the same scripted
//! session (one file write, then a final text) through `claude -p` and `crew -p`, with a
//! user-level hook on every event that appends its stdin to a file. The two sides' key
//! sets must match per event, except the keys listed below with the reason each side
//! has them alone; a key either side adds or drops fails the test until it is listed (or
//! sent). The write's `tool_input.file_path` is absolute on both sides, although crew's
//! model wrote a relative path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::{CLAUDE_TIMEOUT, oracle_or_skip, tool_results};
use crate::support;
use support::provider::{a_end, a_message_start, a_text_turn, a_tool_block, anthropic_sse};

/// The events each side's hook is configured for.
const EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
];

/// Keys Claude Code sends that crew does not, and why.
const CLAUDE_ONLY: &[(&str, &str)] = &[
    ("prompt_id", "crew gives the user's prompts no ids"),
    ("effort", "crew has no reasoning-effort setting"),
    (
        "duration_ms",
        "crew does not time a call apart from its approval wait",
    ),
    (
        "background_tasks",
        "crew's Stop hook is not told the background tasks",
    ),
    ("session_crons", "crew has no scheduled prompts"),
];

/// Keys crew sends that Claude Code does not, and why.
const CREW_ONLY: &[(&str, &str)] = &[
    (
        "agent_id",
        "crew names every calling agent, the lead too (Claude Code only subagents)",
    ),
    (
        "crew_tool_name",
        "crew's own tool name beside Claude Code's `tool_name`",
    ),
    (
        "team_name",
        "every crew session has a team; Claude Code sends it only with team events",
    ),
];

/// The file the scripted write creates, relative to the project.
const NOTE: &str = "note.txt";

/// A fresh case: `proj`, `home` with the dumping hooks in `~/.claude/settings.json`, and
/// the dump file beside them (outside the project).
struct Dirs {
    _tmp: tempfile::TempDir,
    proj: PathBuf,
    home: PathBuf,
    dump: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (proj, home, dump) = (
        base.join("proj"),
        base.join("home"),
        base.join("dump.jsonl"),
    );
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    support::put(&proj, "README.md", "# readme\n");
    let command = format!("cat >> '{0}'; echo >> '{0}'", dump.to_str().unwrap());
    let hook = json!([{"matcher": "", "hooks": [{"type": "command", "command": command}]}]);
    let hooks: serde_json::Map<String, Value> = EVENTS
        .iter()
        .map(|e| (e.to_string(), hook.clone()))
        .collect();
    support::put(
        &home,
        ".claude/settings.json",
        &json!({ "hooks": hooks }).to_string(),
    );
    Dirs {
        _tmp: tmp,
        proj,
        home,
        dump,
    }
}

/// Every JSON document the hooks appended, by event name.
fn dumped(d: &Dirs) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(&d.dump).unwrap_or_default();
    let mut by_event = BTreeMap::new();
    for doc in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let doc = doc.unwrap_or_else(|e| panic!("a hook's stdin was not JSON ({e}):\n{text}"));
        let event = doc["hook_event_name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        by_event.entry(event).or_insert(doc);
    }
    by_event
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The scripted Anthropic server: to a request offering `Write` with no tool result yet,
/// one `Write` of `file_path`; to anything else a final text.
struct WriteOracle {
    file_path: String,
}

impl Respond for WriteOracle {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().unwrap_or(Value::Null);
        let offers_write = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "Write"));
        let answered = !tool_results(&body).is_empty();
        if offers_write && !answered && body["stream"] == true {
            let input = json!({"file_path": self.file_path, "content": "hi\n"}).to_string();
            let mut e = vec![a_message_start(10, 0)];
            e.extend(a_tool_block(0, "toolu_01", "Write", &[&input]));
            e.extend(a_end("tool_use", 5));
            return support::provider::sse_response(anthropic_sse(&e));
        }
        if body["stream"] == true {
            return support::provider::sse_response(a_text_turn(&["done"]));
        }
        ResponseTemplate::new(200).set_body_json(json!({"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "done"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}}))
    }
}

/// `claude -p` writes the note (its model gives the absolute path Claude Code's tools
/// take); returns what its hooks read.
async fn run_claude(claude: &Path) -> (Dirs, BTreeMap<String, Value>) {
    let d = dirs();
    let trust = json!({"projects": {d.proj.to_str().unwrap(): {"hasTrustDialogAccepted": true}}});
    support::put(&d.home, ".claude.json", &trust.to_string());
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(WriteOracle {
            file_path: d.proj.join(NOTE).to_str().unwrap().to_string(),
        })
        .mount(&server)
        .await;
    let mut cmd = tokio::process::Command::new(claude);
    cmd.args(["-p", "go", "--output-format", "json"])
        .args(["--permission-mode", "acceptEdits"])
        .current_dir(&d.proj)
        .env("HOME", &d.home)
        .env("ANTHROPIC_BASE_URL", server.uri())
        .env("ANTHROPIC_API_KEY", "anything")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("CLAUDE_CODE_USE_BEDROCK")
        .env_remove("CLAUDE_CODE_USE_VERTEX")
        .kill_on_drop(true);
    let out = tokio::time::timeout(CLAUDE_TIMEOUT, cmd.output())
        .await
        .expect("claude -p finishes")
        .expect("claude runs");
    assert!(
        d.proj.join(NOTE).exists(),
        "claude -p did not write the note\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = dumped(&d);
    (d, seen)
}

/// `crew -p` writes the note from a relative path; returns what its hooks read.
fn run_crew() -> (Dirs, BTreeMap<String, Value>) {
    let d = dirs();
    let script = json!({"turns": [
        {"text": "go", "tool_calls": [{"name": "write_file", "input": {"path": NOTE, "content": "hi\n"}}]},
        {"text": "done"}
    ]});
    let (out, _) = support::crew_scripted_output(
        &d.proj,
        &d.home,
        &script,
        &["-p", "go", "--permission-mode", "acceptEdits"],
    );
    assert!(
        out.status.success() && d.proj.join(NOTE).exists(),
        "crew -p did not write the note: {out:?}"
    );
    let seen = dumped(&d);
    (d, seen)
}

/// What differs between the two sides' keys of one object, beyond the listed keys.
fn unlisted(event: &str, theirs: &BTreeSet<String>, ours: &BTreeSet<String>) -> Vec<String> {
    let listed = |list: &[(&str, &str)], k: &str| list.iter().any(|(key, _)| *key == k);
    let mut out: Vec<String> = theirs
        .difference(ours)
        .filter(|k| !listed(CLAUDE_ONLY, k))
        .map(|k| format!("{event}: Claude Code sends `{k}`, crew does not"))
        .collect();
    out.extend(
        ours.difference(theirs)
            .filter(|k| !listed(CREW_ONLY, k))
            .map(|k| format!("{event}: crew sends `{k}`, Claude Code does not")),
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_stdin_carries_claude_codes_keys_and_an_absolute_file_path() {
    let Some(claude) = oracle_or_skip(
        "hook_input::hook_stdin_carries_claude_codes_keys_and_an_absolute_file_path",
    ) else {
        return;
    };
    let (cd, theirs) = run_claude(&claude).await;
    let (rd, ours) = tokio::task::block_in_place(run_crew);
    let mut broken = Vec::new();
    for event in EVENTS {
        let (Some(t), Some(o)) = (theirs.get(*event), ours.get(*event)) else {
            broken.push(format!(
                "{event}: fired by Claude Code: {}, by crew: {}",
                theirs.contains_key(*event),
                ours.contains_key(*event)
            ));
            continue;
        };
        eprintln!("{event}\n  claude: {t}\n  crew:   {o}");
        broken.extend(unlisted(event, &keys(t), &keys(o)));
        // The fields every hook reads mean the same on both sides.
        for (side, v, d) in [("claude", t, &cd), ("crew", o, &rd)] {
            assert_eq!(v["cwd"], d.proj.to_str().unwrap(), "{side} {event}: {v}");
            let transcript = v["transcript_path"].as_str().unwrap_or_default();
            assert!(
                Path::new(transcript).is_absolute()
                    && transcript.contains(v["session_id"].as_str().unwrap_or("?")),
                "{side} {event}: {v}"
            );
        }
        assert_eq!(t["permission_mode"], o["permission_mode"], "{event}");
    }
    for event in ["PreToolUse", "PostToolUse"] {
        let (t, o) = (&theirs[event], &ours[event]);
        assert_eq!(
            (&t["tool_name"], &o["tool_name"]),
            (&json!("Write"), &json!("Write"))
        );
        assert_eq!(t["permission_mode"], "acceptEdits", "{t}");
        // Absolute on both sides, though crew's model wrote `note.txt`.
        assert_eq!(
            t["tool_input"]["file_path"],
            cd.proj.join(NOTE).to_str().unwrap()
        );
        assert_eq!(
            o["tool_input"]["file_path"],
            rd.proj.join(NOTE).to_str().unwrap()
        );
        assert_eq!(
            o["tool_input"]["path"], NOTE,
            "ours stays as the model wrote it"
        );
        let (ti, oi) = (keys(&t["tool_input"]), keys(&o["tool_input"]));
        let extra: Vec<_> = oi.difference(&ti).collect();
        assert!(ti.is_subset(&oi) && extra == ["path"], "{ti:?} vs {oi:?}");
    }
    assert_eq!(ours["Stop"]["last_assistant_message"], "done");
    assert_eq!(theirs["Stop"]["last_assistant_message"], "done");
    // A listed key neither side shows any more is stale: drop it from the list.
    let all = |side: &BTreeMap<String, Value>| -> BTreeSet<String> {
        side.values().flat_map(keys).collect()
    };
    let (all_theirs, all_ours) = (all(&theirs), all(&ours));
    for (k, _) in CLAUDE_ONLY {
        if !all_theirs.contains(*k) || all_ours.contains(*k) {
            broken.push(format!(
                "`{k}` is listed as Claude Code's alone, and no longer is"
            ));
        }
    }
    for (k, _) in CREW_ONLY {
        if !all_ours.contains(*k) || all_theirs.contains(*k) {
            broken.push(format!("`{k}` is listed as crew's alone, and no longer is"));
        }
    }
    assert!(
        broken.is_empty(),
        "hook input differs from Claude Code's beyond the listed keys; send the key, or \
         list it with its reason (and in docs/coming-from-claude-code.md):\n{}",
        broken.join("\n")
    );
}
