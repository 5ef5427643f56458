//! The terminal shows exactly what will run: the real `crew` binary in a pseudo-terminal,
//! driven by a scripted model whose commands, plan text and command output carry escape
//! sequences (OSC 52 clipboard writes, OSC 2 title changes, CSI cursor moves and line
//! erases), bidi overrides and whitespace padding. Each test reads the screen through a
//! terminal emulator (`vt100`), checks the raw bytes crew wrote to the terminal, and
//! checks the disk after answering the approval dialog. With `--dashboard`, an Ask
//! answered in the web dashboard runs the call and leaves the terminal's dialog.

use crate::support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};
use serde_json::{Value, json};

const ROWS: u16 = 40;
const COLS: u16 = 120;
/// How long any one expected screen may take to appear (a loaded CI machine is slow).
const PATIENCE: Duration = Duration::from_secs(120);

/// `crew` running in a pseudo-terminal: the screen as an emulator shows it, and every
/// byte crew wrote.
struct Tui {
    screen: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    fn start(dir: &Path, script: &Path, extra: &[&str]) -> Tui {
        Tui::start_with_env(dir, script, extra, &[])
    }

    /// [`Tui::start`] with `env` added to crew's environment.
    fn start_with_env(dir: &Path, script: &Path, extra: &[&str], env: &[(&str, &str)]) -> Tui {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_crew"));
        cmd.arg("--model");
        cmd.arg(format!("script:{}", script.display()));
        cmd.arg("--cwd");
        cmd.arg(dir.join("work"));
        cmd.args(extra);
        cmd.env("HOME", dir.join("home"));
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("ANTHROPIC_API_KEY");
        cmd.env_remove("OPENAI_API_KEY");
        // The bell is opt-in; a developer's own setting must not ring in these tests.
        cmd.env_remove("CREW_NOTIFY");
        for (key, value) in env {
            cmd.env(key, value);
        }
        cmd.cwd(dir.join("work"));
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let (sink, bytes) = (screen.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                bytes.lock().unwrap().extend_from_slice(&buf[..n]);
                sink.lock().unwrap().process(&buf[..n]);
            }
        });
        let writer = pty.master.take_writer().unwrap();
        Tui {
            screen,
            raw,
            writer,
            child,
            _master: pty.master,
        }
    }

    fn text(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Polls until the screen holds every needle; returns that screen.
    fn wait_for(&self, needles: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let screen = self.text();
            if needles.iter().all(|n| screen.contains(n)) {
                return screen;
            }
            if start.elapsed() > PATIENCE {
                panic!("gave up waiting for {needles:?}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    fn line(&mut self, text: &str) {
        self.send(text);
        self.send("\r");
    }

    /// The title and clipboard as the emulator saw them, and the raw bytes' sins: no
    /// OSC, no DCS, no BEL, no bidi override ever reaches the terminal.
    fn assert_clean_output(&self) {
        let raw = self.raw.lock().unwrap().clone();
        let find = |needle: &[u8]| raw.windows(needle.len()).position(|w| w == needle);
        for (what, needle) in [
            ("an OSC sequence (ESC ])", &b"\x1b]"[..]),
            ("a DCS sequence (ESC P)", b"\x1bP"),
            ("a BEL", b"\x07"),
            ("a C1 OSC", "\u{9d}".as_bytes()),
            ("a right-to-left override", "\u{202e}".as_bytes()),
            ("a zero-width space", "\u{200b}".as_bytes()),
        ] {
            if let Some(at) = find(needle) {
                let from = at.saturating_sub(60);
                panic!(
                    "crew wrote {what} to the terminal at byte {at}: {:?}",
                    String::from_utf8_lossy(&raw[from..(at + 60).min(raw.len())])
                );
            }
        }
        let parser = self.screen.lock().unwrap();
        assert_eq!(parser.screen().title(), "", "the title was set");
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup(script: &Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    (dir, path)
}

/// A script whose one turn runs `command`, then ends.
fn command_script(command: &str) -> Value {
    json!({"turns": [
        {"text": "Running it.", "tool_calls": [
            {"id": "c1", "name": "run_command", "input": {"command": command}}]},
        {"text": "TURN-OVER"}
    ]})
}

/// The approval dialog's part of the screen (from its title down).
fn dialog(screen: &str) -> String {
    screen
        .find("Permission needed")
        .map_or(String::new(), |at| screen[at..].to_string())
}

/// Answers the dialog on screen with deny (4, then Esc: no message) and waits for the
/// turn to end.
fn deny(tui: &mut Tui) {
    tui.send("4");
    tui.wait_for(&["message for the model"]);
    tui.send("\x1b");
    tui.wait_for(&["TURN-OVER"]);
}

#[test]
fn with_crew_notify_bell_a_question_rings_the_terminal_once_and_a_bel_in_it_never_does() {
    // The command carries a BEL of its own: that one must be shown, not rung.
    let (dir, script) = setup(&command_script("echo hi \u{7} && touch RUNG"));
    let bels = |tui: &Tui| {
        tui.raw
            .lock()
            .unwrap()
            .iter()
            .filter(|b| **b == 0x07)
            .count()
    };
    let mut quiet = Tui::start(dir.path(), &script, &[]);
    quiet.wait_for(&["type a task"]);
    quiet.line("run it");
    quiet.wait_for(&["lead wants to run run_command", "4. Deny"]);
    assert_eq!(bels(&quiet), 0, "the bell rang without CREW_NOTIFY");
    deny(&mut quiet);
    drop(quiet);
    let mut tui = Tui::start_with_env(dir.path(), &script, &[], &[("CREW_NOTIFY", "bell")]);
    tui.wait_for(&["type a task"]);
    tui.line("run it");
    let screen = tui.wait_for(&["lead wants to run run_command", "4. Deny"]);
    assert!(
        screen.contains("␇"),
        "the command's BEL is shown:\n{screen}"
    );
    let start = Instant::now();
    while bels(&tui) == 0 && start.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(bels(&tui), 1, "one ring for one question");
    deny(&mut tui);
    assert_eq!(bels(&tui), 1);
    assert!(!dir.path().join("work/RUNG").exists());
}

#[test]
fn osc_52_and_osc_2_in_a_command_never_reach_the_terminal() {
    let command = "echo hi \u{1b}]52;c;dG91Y2ggUFdORUQ=\u{7}\u{1b}]2;PWNED-TITLE\u{1b}\\ && touch PWNED \u{202e}gpj.exe";
    let (dir, script) = setup(&command_script(command));
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("run it");
    let screen = tui.wait_for(&["lead wants to run run_command", "4. Deny"]);
    for visible in [
        "␛]52;c;dG91Y2ggUFdORUQ=␇",
        "␛]2;PWNED-TITLE␛\\",
        "touch PWNED",
        "\\u{202e}gpj.exe",
        "change how text displays",
    ] {
        assert!(screen.contains(visible), "{visible}:\n{screen}");
    }
    tui.assert_clean_output();
    deny(&mut tui);
    tui.assert_clean_output();
    assert!(!dir.path().join("work/PWNED").exists());
}

#[test]
fn csi_sequences_cannot_hide_a_touch_behind_echo_hello() {
    // On a raw terminal this shows as `echo hello`: the line is erased and rewritten, or
    // the rest is concealed.
    for command in [
        "touch PWNED; \u{1b}[2K\u{1b}[1Gecho hello",
        "echo hello\u{1b}[8m; touch PWNED\u{1b}[0m",
        "echo hello\r; touch PWNED\u{1b}[1A",
        "echo hello \u{9b}8m; touch PWNED",
    ] {
        let (dir, script) = setup(&command_script(command));
        let mut tui = Tui::start(dir.path(), &script, &[]);
        tui.wait_for(&["type a task"]);
        tui.line("run it");
        let screen = tui.wait_for(&["lead wants to run run_command", "4. Deny"]);
        assert!(screen.contains("touch PWNED"), "{command:?}:\n{screen}");
        assert!(
            screen.contains("⚠") && screen.contains("change how text displays"),
            "{command:?}: no warning:\n{screen}"
        );
        let raw = tui.raw.lock().unwrap().clone();
        for hidden in [&b"\x1b[8m"[..], b"\x1b[1A", "\u{9b}".as_bytes()] {
            let model_wrote = command
                .as_bytes()
                .windows(hidden.len())
                .any(|w| w == hidden);
            let crew_wrote = raw.windows(hidden.len()).any(|w| w == hidden);
            assert!(
                !(model_wrote && crew_wrote),
                "{command:?}: the model's {hidden:?} reached the terminal"
            );
        }
        deny(&mut tui);
        assert!(
            !dir.path().join("work/PWNED").exists(),
            "{command:?}: a denied command ran"
        );
    }
}

#[test]
fn whitespace_padding_cannot_push_the_touch_or_the_choices_off_screen() {
    for (pad, breaks) in [(5000, 0), (0, 400), (3000, 300)] {
        let command = format!(
            "echo hi{}{}; touch PWNED{}{}; echo bye",
            " ".repeat(pad),
            "\n".repeat(breaks),
            " ".repeat(pad),
            "\n".repeat(breaks)
        );
        let (dir, script) = setup(&command_script(&command));
        let mut tui = Tui::start(dir.path(), &script, &[]);
        tui.wait_for(&["type a task"]);
        tui.line("run it");
        let screen = tui.wait_for(&[
            "lead wants to run run_command",
            "1. Allow once",
            "4. Deny",
            "touch PWNED",
            "long runs of whitespace",
        ]);
        assert!(screen.contains("echo bye"), "{pad}/{breaks}:\n{screen}");
        deny(&mut tui);
        assert!(!dir.path().join("work/PWNED").exists(), "{pad}/{breaks}");
    }
}

#[test]
fn a_command_longer_than_the_dialog_scrolls_with_the_choices_in_view() {
    let words: Vec<String> = (0..600).map(|i| format!("w{i:03}")).collect();
    let command = format!("echo {} && touch PWNED", words.join(" "));
    let (dir, script) = setup(&command_script(&command));
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("run it");
    let screen = tui.wait_for(&["lead wants to run run_command", "4. Deny", "⇅ more"]);
    assert!(!dialog(&screen).contains("touch PWNED"), "{screen}");
    // End shows the end of the command, with the choices still there.
    tui.send("\x1b[F");
    let start = Instant::now();
    while !dialog(&tui.text()).contains("touch PWNED") {
        assert!(start.elapsed() < PATIENCE, "{}", tui.text());
        std::thread::sleep(Duration::from_millis(30));
    }
    let screen = dialog(&tui.text());
    assert!(
        screen.contains("1. Allow once") && screen.contains("4. Deny"),
        "{screen}"
    );
    deny(&mut tui);
    assert!(!dir.path().join("work/PWNED").exists());
}

#[test]
fn plan_review_and_task_log_show_escape_sequences_visibly() {
    // The command's text does not hold the marker; only its output does.
    let marker = "LOG-END";
    let script = json!({"turns": [
        {"text": "PLAN-STEP-1 \u{1b}]52;c;cm0gLXJmIH4=\u{7} then \u{1b}]2;PLAN-TITLE\u{7} \u{202e}done"},
        {"text": "Starting the job.", "tool_calls": [
            {"id": "b1", "name": "run_command", "input": {
                "command": format!("printf 'out \\033]52;c;aGk=\\007 \\033]2;LOG-TITLE\\033\\\\ \\342\\200\\256 LOG-%s\\n' END"),
                "run_in_background": true}}]},
        {"text": "JOB-STARTED"}
    ]});
    let (dir, script) = setup(&script);
    let mut tui = Tui::start(
        dir.path(),
        &script,
        &["--permission-mode", "bypassPermissions"],
    );
    tui.wait_for(&["type a task"]);
    tui.line("/plan");
    tui.wait_for(&["Plan Mode: describe the task"]);
    tui.line("make a plan");
    let screen = tui.wait_for(&["Plan ready for review", "PLAN-STEP-1", "1. Approve"]);
    assert!(
        screen.contains("␛]52;c;cm0gLXJmIH4=␇") && screen.contains("␛]2;PLAN-TITLE␇"),
        "{screen}"
    );
    assert!(screen.contains("\\u{202e}done"), "{screen}");
    tui.assert_clean_output();
    tui.send("1");
    tui.wait_for(&["JOB-STARTED"]);
    // The job's log in the tasks panel: live, so it shows the output once written.
    tui.line("/tasks");
    tui.wait_for(&["Tasks (↑↓ select", "completed"]);
    tui.send("\r");
    let screen = tui.wait_for(&["log of", marker]);
    assert!(
        screen.contains("␛]52;c;aGk=␇") && screen.contains("␛]2;LOG-TITLE␛\\"),
        "{screen}"
    );
    assert!(screen.contains("\\u{202e} LOG-END"), "{screen}");
    tui.assert_clean_output();
}

/// A script whose text and command output carry escape sequences and a bidi override.
fn headless_script() -> Value {
    json!({"turns": [
        {"text": "before", "tool_calls": [
            {"id": "c1", "name": "run_command", "input": {
                "command": "printf 'cmd \\033]2;CMD-TITLE\\007 out\\n'"}}]},
        {"text": "answer \u{1b}]52;c;aGk=\u{7}\u{1b}]2;TITLE\u{1b}\\ \u{202e}end \u{1b}[2J"}
    ]})
}

#[test]
fn headless_text_to_a_terminal_is_sanitized() {
    let (dir, script) = setup(&headless_script());
    let mut tui = Tui::start(
        dir.path(),
        &script,
        &["--permission-mode", "bypassPermissions", "-p", "go"],
    );
    let screen = tui.wait_for(&["answer", "end"]);
    assert!(
        screen.contains("answer ␛]52;c;aGk=␇␛]2;TITLE␛\\ \\u{202e}end ␛[2J"),
        "{screen}"
    );
    let _ = tui.child.wait();
    tui.assert_clean_output();
    let raw = tui.raw.lock().unwrap().clone();
    assert!(
        !raw.windows(4).any(|w| w == b"\x1b[2J"),
        "the model's screen clear reached the terminal"
    );
}

#[test]
fn headless_output_to_a_pipe_stays_exact() {
    let (dir, script) = setup(&headless_script());
    let run = |format: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_crew"))
            .arg("--model")
            .arg(format!("script:{}", script.display()))
            .arg("--cwd")
            .arg(dir.path().join("work"))
            .args(["--permission-mode", "bypassPermissions"])
            .args(["--output-format", format, "-p", "go"])
            .env("HOME", dir.path().join("home"))
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .current_dir(dir.path().join("work"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let exact = "answer \u{1b}]52;c;aGk=\u{7}\u{1b}]2;TITLE\u{1b}\\ \u{202e}end \u{1b}[2J";
    let text = run("text");
    assert!(text.contains(exact), "{text:?}");
    let stream = run("stream-json");
    // The model's text arrives exactly, in one of the events' strings.
    let found = stream.lines().any(|line| {
        let v: Value = serde_json::from_str(line).unwrap();
        holds(&v, "\u{1b}]52;c;aGk=\u{7}\u{1b}]2;TITLE")
    });
    assert!(found, "{stream}");
    let json: Value = serde_json::from_str(run("json").trim()).unwrap();
    assert!(holds(&json, exact), "{json}");
}

/// Whether a string somewhere in `v` contains `needle`.
fn holds(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|i| holds(i, needle)),
        Value::Object(map) => map.values().any(|i| holds(i, needle)),
        _ => false,
    }
}

#[test]
fn outside_the_sandbox_is_offered_only_after_the_sandbox_stopped_the_command() {
    use support::kernel::{Feature, require};
    // The sandbox must stop the first run: that is what unlocks the choice.
    if !require(&[Feature::Landlock, Feature::MountNamespaces]) {
        return;
    }
    let (dir, _) = setup(&json!({}));
    let target = dir.path().join("home/outside.txt");
    // The write is in a script, where the permission engine cannot see it: only the
    // OS sandbox stops it.
    let script_file = dir.path().join("work/write.sh");
    std::fs::write(&script_file, format!("echo out > '{}'\n", target.display())).unwrap();
    let command = "sh write.sh".to_string();
    let script = json!({"turns": [
        {"text": "First try.", "tool_calls": [
            {"id": "c1", "name": "run_command", "input": {"command": command}}]},
        {"text": "Again outside.", "tool_calls": [
            {"id": "c2", "name": "run_command", "input": {"command": command, "outside_sandbox": true}}]},
        {"text": "TURN-OVER"}
    ]});
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut tui = Tui::start(dir.path(), &script_path, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("write it");
    let screen = tui.wait_for(&["First try.", "lead wants to run run_command", "4. Deny"]);
    assert!(
        !dialog(&screen).contains("outside the sandbox"),
        "offered before the sandbox stopped anything:\n{screen}"
    );
    // `o` is no answer here: the dialog stays.
    tui.send("o");
    std::thread::sleep(Duration::from_millis(300));
    assert!(tui.text().contains("4. Deny") && !target.exists());
    // Allowed once, it runs sandboxed, and the sandbox stops the write.
    tui.send("1");
    let screen = tui.wait_for(&["Again outside.", "lead wants to run run_command", "4. Deny"]);
    assert!(!target.exists(), "the sandbox let the write through");
    assert!(
        dialog(&screen).contains("o. Run once outside the sandbox"),
        "{screen}"
    );
    tui.send("o");
    tui.wait_for(&["TURN-OVER"]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "out\n");
}

#[test]
fn an_approval_answered_in_the_dashboard_closes_the_terminal_dialog() {
    let (dir, script) = setup(&command_script("touch DASHED"));
    let mut tui = Tui::start(dir.path(), &script, &["--dashboard"]);
    let screen = tui.wait_for(&["Dashboard: http://127.0.0.1:", "type a task"]);
    let url: String = screen[screen.find("http://").unwrap()..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    let (base, token) = url.split_once("/?token=").unwrap();
    assert_eq!(token.len(), 64, "{url}");
    tui.line("run it");
    tui.wait_for(&["lead wants to run run_command", "4. Deny"]);
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut events = support::dashboard::Events::open_at(base, token).await;
        let asked = events
            .until("the question", |e| e["type"] == "approval_asked")
            .await;
        let r = support::dashboard::client()
            .post(format!("{base}/api/answer"))
            .header("x-crew-token", token)
            .json(&json!({"session": asked["s"], "id": asked["e"]["id"], "answer": {"answer": "allow_once"}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    });
    tui.wait_for(&["TURN-OVER"]);
    support::wait_until_blocking("the dialog to close", || {
        !tui.text().contains("Permission needed")
    });
    assert!(dir.path().join("work/DASHED").exists(), "the command ran");
}

/// The recorded requests of a run with `--record-requests path`.
fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The texts of a request's user messages, in order.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(String::from))
        .collect()
}

#[test]
fn ctrl_u_clears_what_was_typed_and_only_the_new_text_is_sent() {
    let (dir, script) = setup(&json!({"turns": [{"text": "TURN-OVER"}]}));
    let requests = dir.path().join("requests.jsonl");
    let mut tui = Tui::start(
        dir.path(),
        &script,
        &["--record-requests", requests.to_str().unwrap()],
    );
    tui.wait_for(&["type a task"]);
    tui.send("delete every branch");
    tui.wait_for(&["delete every branch"]);
    tui.send("\u{15}");
    support::wait_until_blocking("the input to be cleared", || {
        !tui.text().contains("delete every branch")
    });
    tui.line("list the branches");
    tui.wait_for(&["TURN-OVER"]);
    let sent = recorded(&requests);
    assert_eq!(sent.len(), 1);
    let texts = user_texts(&sent[0]);
    assert!(
        texts.iter().any(|t| t.contains("list the branches")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("delete every branch")),
        "the cleared text was sent: {texts:?}"
    );
}

#[test]
fn clear_starts_a_new_session_and_resume_returns_to_the_old_conversation() {
    // Each session's model replays the script from its start.
    let (dir, script) = setup(&json!({"turns": [{"text": "ANSWER-ONE"}]}));
    let requests = dir.path().join("requests.jsonl");
    // The session hooks see each switch as Claude Code reports it.
    let dump = dir.path().join("session-hooks.jsonl");
    let hook = json!([{"hooks": [{"type": "command",
        "command": format!("cat >> '{0}'; echo >> '{0}'", dump.display())}]}]);
    support::put(
        &dir.path().join("home"),
        ".claude/settings.json",
        &json!({"hooks": {"SessionStart": hook, "SessionEnd": hook}}).to_string(),
    );
    let seen = || -> Vec<String> {
        let text = std::fs::read_to_string(&dump).unwrap_or_default();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .map(|v| {
                let v = v.unwrap();
                let why = v.get("source").or_else(|| v.get("reason")).unwrap();
                format!(
                    "{} {}",
                    v["hook_event_name"].as_str().unwrap(),
                    why.as_str().unwrap()
                )
            })
            .collect()
    };
    let mut tui = Tui::start(
        dir.path(),
        &script,
        &["--record-requests", requests.to_str().unwrap()],
    );
    tui.wait_for(&["type a task"]);
    tui.line("the first task");
    tui.wait_for(&["ANSWER-ONE"]);
    tui.line("/clear");
    let screen = tui.wait_for(&["is saved: /resume"]);
    // `Session ID is saved: /resume ID …`
    let old: String = screen[screen.find("Session ").unwrap() + 8..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    assert_eq!(old.len(), 36, "{screen}");
    assert!(
        !screen.contains("the first task"),
        "the transcript view was not cleared:\n{screen}"
    );
    tui.line("the second task");
    support::wait_until_blocking("the second session's answer", || {
        recorded(&requests).len() == 2
    });
    let sent = recorded(&requests);
    assert_eq!(
        user_texts(&sent[1]).concat(),
        "the second task",
        "the new session starts with an empty conversation"
    );
    // The list names the old session; a prefix of its id resumes it.
    tui.line("/resume");
    tui.wait_for(&["Recent sessions", &old[..8]]);
    tui.line(&format!("/resume {}", &old[..8]));
    let screen = tui.wait_for(&["Resumed session", "the first task", "ANSWER-ONE"]);
    assert!(screen.contains(&old), "{screen}");
    tui.line("the third task");
    support::wait_until_blocking("the resumed session's answer", || {
        recorded(&requests).len() == 3
    });
    let texts = user_texts(&recorded(&requests)[2]);
    assert_eq!(
        texts.first().map(String::as_str),
        Some("the first task"),
        "{texts:?}"
    );
    assert!(
        texts.last().is_some_and(|t| t.contains("the third task")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("the second task")),
        "{texts:?}"
    );
    assert_eq!(
        seen(),
        [
            "SessionStart startup",
            "SessionEnd clear",
            "SessionStart clear",
            "SessionEnd other",
            "SessionStart resume"
        ]
    );
}

#[test]
fn model_switches_the_leads_model_for_the_next_turn() {
    let (dir, script) = setup(&json!({"turns": [{"text": "FROM-FIRST-MODEL"}]}));
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        json!({"model": "other-model", "turns": [{"text": "FROM-OTHER-MODEL"}]}).to_string(),
    )
    .unwrap();
    let mut tui = Tui::start(dir.path(), &script, &[]);
    tui.wait_for(&["type a task"]);
    tui.line("/model");
    tui.wait_for(&["/model NAME switches the lead"]);
    tui.line(&format!("/model script:{}", other.display()));
    tui.wait_for(&["The lead uses other-model from its next turn"]);
    tui.line("who answers?");
    let screen = tui.wait_for(&["FROM-OTHER-MODEL"]);
    assert!(!screen.contains("FROM-FIRST-MODEL"), "{screen}");
    tui.line("/model nonsense-model");
    tui.wait_for(&["/model nonsense-model: unknown model"]);
}
