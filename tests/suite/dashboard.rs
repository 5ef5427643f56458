//! The web dashboard over real HTTP against the real server (`crew -p … --dashboard`,
//! `crew dashboard`): the printed URL works as it is; a request without the token gets
//! 401 and no page; a foreign Host (DNS rebinding) or Origin gets 403; a state-changing
//! request needs the token in its header, and a refused one changes nothing; an approval
//! answered over HTTP goes through the session's approver and the call runs; no provider
//! key appears in any page or API answer; a non-loopback address needs `--allow-remote`,
//! which warns; the standalone dashboard shows a session started elsewhere; worktrees
//! are diffed, merged and discarded over HTTP, a discard of work only once confirmed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support;
use crate::support::dashboard::{Events, Served, client, crew_command, serve};

const FAKE_KEY: &str = "sk-ant-api03-FAKEFAKEFAKE0123456789";

/// A git repository in a temporary directory, with `script.json` as the model.
fn project(script: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("repo");
    let home = tmp.path().canonicalize().unwrap().join("home");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    support::put(&dir, "README.md", "hello\n");
    support::git(&dir, &["init", "-q", "-b", "main"]);
    support::git(&dir, &["add", "-A"]);
    support::git(&dir, &["commit", "-q", "-m", "init"]);
    std::fs::write(dir.join("script.json"), script).unwrap();
    (tmp, dir, home)
}

/// A lead that asks to run `touch approved.txt` (default mode asks for a write), then
/// waits for `release` before its last turn.
fn asking_script(release: &Path) -> String {
    format!(
        r#"{{"turns":[
            {{"tool_calls":[{{"name":"run_command","input":{{"command":"touch approved.txt"}}}}]}},
            {{"text":"all done","wait_for":"{}"}}]}}"#,
        release.display()
    )
}

/// POSTs `body` to `url` with `headers`; answers the status and the JSON body.
async fn post_reply(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let mut request = client().post(url).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let r = request.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// POSTs `body` to `url` with `headers`; answers the status.
async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> u16 {
    post_reply(url, headers, body).await.0
}

fn run_with_dashboard(dir: &Path, home: &Path, task: &str) -> Served {
    let mut cmd = crew_command(
        dir,
        home,
        &["-p", task, "--model", "script:script.json", "--dashboard"],
    );
    cmd.env("ANTHROPIC_API_KEY", FAKE_KEY);
    serve(cmd)
}

#[tokio::test]
async fn without_the_token_or_from_a_foreign_host_or_origin_nothing_is_served() {
    let (tmp, dir, home) = project(&asking_script(&PathBuf::from("/nonexistent/never")));
    let served = run_with_dashboard(&dir, &home, "touch it");
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
    assert_ne!(served.port, 0, "the URL names the real port");
    let http = client();
    let base = &served.base;

    // The printed URL works as it is and sets an HttpOnly, SameSite=Strict cookie.
    let r = http.get(&served.url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let page = r.text().await.unwrap();
    assert!(page.contains("<title>crew dashboard</title>"));
    let cookie = cookie.split(';').next().unwrap().to_string();
    let r = http
        .get(format!("{base}/app.js"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the cookie stands for the token");

    // No token, a wrong token, a wrong cookie: 401 and no page, on every path.
    for path in [
        "/",
        "/app.js",
        "/api/sessions",
        "/api/events",
        "/nope",
        "/?token=0000",
    ] {
        let r = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 401, "{path}");
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("<html") && !body.contains("crew-token"),
            "{path}: {body}"
        );
    }
    let r = http
        .get(format!("{base}/api/sessions"))
        .header("cookie", "crew_dashboard=0000")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // DNS rebinding: a page on another name that resolves to 127.0.0.1 sends its Host.
    let r = http
        .get(&served.url)
        .header("host", format!("rebind.attacker.example:{}", served.port))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(!r.text().await.unwrap().contains("<html"));

    // Another site's page reading the API with the token it somehow has: refused.
    let r = http
        .get(format!("{base}/api/sessions"))
        .header("x-crew-token", &served.token)
        .header("origin", "http://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // With the token, the API lists the session.
    let r = http
        .get(format!("{base}/api/sessions"))
        .header("x-crew-token", &served.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let sessions: Value = r.json().await.unwrap();
    assert_eq!(
        sessions["sessions"][0]["project"],
        dir.display().to_string()
    );
    drop(tmp);
}

#[tokio::test]
async fn an_approval_is_answered_only_with_the_token_header_and_through_the_approver() {
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    let (_tmp, dir, home) = project(&asking_script(&release));
    let served = run_with_dashboard(&dir, &home, "touch it");
    let mut events = Events::open(&served).await;
    let asked = events
        .until("the approval question", |e| e["type"] == "approval_asked")
        .await;
    let session = asked["s"].as_str().unwrap().to_string();
    let id = asked["e"]["id"].as_u64().unwrap();
    assert_eq!(asked["e"]["request"]["call"]["name"], "run_command");
    let answer = json!({"session": session, "id": id, "answer": {"answer": "allow_once"}});
    let url = format!("{}/api/answer", served.base);
    let token = served.token.clone();
    let cookie = format!("crew_dashboard={token}");
    let rebinding = format!("attacker.example:{}", served.port);
    let refused: [(&str, Vec<(&str, &str)>); 4] = [
        // A cross-site form post: the browser would send the cookie, never the header.
        (url.as_str(), vec![("cookie", cookie.as_str())]),
        // The token in the query does not do for a POST either.
        (&format!("{url}?token={token}"), vec![]),
        // Another origin with the header (a page that stole the token).
        (
            &url,
            vec![
                ("x-crew-token", &token),
                ("origin", "http://attacker.example"),
            ],
        ),
        // A rebinding host with the header.
        (&url, vec![("x-crew-token", &token), ("host", &rebinding)]),
    ];
    for (to, headers) in &refused {
        assert_eq!(post(to, headers, &answer).await, 403, "{to} {headers:?}");
    }
    // Nothing changed: the call still waits and did not run.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!dir.join("approved.txt").exists());
    let r = client()
        .get(format!("{}/api/sessions", served.base))
        .header("x-crew-token", &token)
        .send()
        .await
        .unwrap();
    let sessions: Value = r.json().await.unwrap();
    assert_eq!(
        sessions["sessions"][0]["agents"][0]["state"],
        "waiting for approval"
    );

    // The page's own request: the header, same origin. The approver takes the answer.
    let page = [
        ("x-crew-token", token.as_str()),
        ("origin", served.base.as_str()),
    ];
    assert_eq!(post(&url, &page, &answer).await, 200);
    let decided = events
        .until("the user's decision", |e| e["type"] == "permission_decided")
        .await;
    assert_eq!(decided["e"]["verdict"], "allow");
    assert_eq!(decided["e"]["source"], "user");
    events
        .until("the command's end", |e| e["type"] == "tool_call_finished")
        .await;
    assert!(
        dir.join("approved.txt").exists(),
        "the approved command ran"
    );
    // A second answer to the same question is refused.
    assert_eq!(post(&url, &page, &answer).await, 409);
    std::fs::write(&release, "").unwrap();
}

#[tokio::test]
async fn no_provider_key_appears_in_any_page_or_api_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    let script = format!(
        r#"{{"turns":[
            {{"tool_calls":[{{"name":"run_command","input":{{"command":"echo {FAKE_KEY}","run_in_background":true}}}}]}},
            {{"text":"the key is {FAKE_KEY}","wait_for":"{}"}}]}}"#,
        release.display()
    );
    let (_tmp, dir, home) = project(&script);
    let mut cmd = crew_command(
        &dir,
        &home,
        &[
            "-p",
            &format!("use the key {FAKE_KEY}"),
            "--model",
            "script:script.json",
            "--permission-mode",
            "bypassPermissions",
            "--dashboard",
        ],
    );
    cmd.env("ANTHROPIC_API_KEY", FAKE_KEY);
    let served = serve(cmd);
    let mut events = Events::open(&served).await;
    let task = events
        .until("the background command", |e| {
            e["type"] == "task_changed" && e["kind"] == "command" && e["status"] != "running"
        })
        .await;
    let session = task["s"].as_str().unwrap().to_string();
    let task_id = task["e"]["id"].as_str().unwrap().to_string();
    events
        .until("the lead's text", |e| {
            e["type"] == "text_delta"
                || e["type"] == "message_appended" && e["message"]["role"] == "assistant"
        })
        .await;
    let http = client();
    let mut bodies = vec![events.raw.clone()];
    for path in [
        format!("/?token={}", served.token),
        "/app.js".into(),
        "/app.css".into(),
        "/api/sessions".into(),
        format!("/api/worktrees?session={session}"),
        format!("/api/output?session={session}&task={task_id}"),
    ] {
        let r = http
            .get(format!("{}{path}", served.base))
            .header("x-crew-token", &served.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        bodies.push(r.text().await.unwrap());
    }
    for body in &bodies {
        assert!(!body.contains(FAKE_KEY), "the key leaked: {body}");
    }
    // The key was there to leak (in the task, the text and the command's output): masked.
    assert!(
        bodies[0].contains("use the key [redacted]"),
        "{}",
        bodies[0]
    );
    assert!(
        bodies.last().unwrap().contains("[redacted]"),
        "{}",
        bodies.last().unwrap()
    );
    std::fs::write(&release, "").unwrap();
}

#[test]
fn a_non_loopback_address_needs_the_explicit_flag_which_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = support::crew(tmp.path(), &home, &["dashboard", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--allow-remote") && err.contains("0.0.0.0:0"),
        "{err}"
    );
    let out = support::crew(tmp.path(), &home, &["dashboard", "--listen", "localhost"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen"));

    let served = serve(crew_command(
        tmp.path(),
        &home,
        &["dashboard", "--listen", "0.0.0.0:0", "--allow-remote"],
    ));
    // The warning (stderr) and the URL (stdout) come through two pipes, in either order.
    let mut warning = served.before.join("\n");
    while !warning.contains("beyond this machine") {
        match served.output.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => warning.push_str(&line),
            Err(_) => break,
        }
    }
    assert!(
        warning.contains("warning") && warning.contains("beyond this machine"),
        "{warning}"
    );
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
}

#[tokio::test]
async fn the_standalone_dashboard_shows_a_session_started_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    let (_tmp, dir, home) = project(&asking_script(&release));
    let run = run_with_dashboard(&dir, &home, "touch it");
    let standalone = serve(crew_command(&dir, &home, &["dashboard"]));
    assert_ne!(standalone.token, run.token, "a token per run");
    let mut events = Events::open(&standalone).await;
    let asked = events
        .until("the other session's question", |e| {
            e["type"] == "approval_asked"
        })
        .await;
    let r = client()
        .post(format!("{}/api/answer", standalone.base))
        .header("x-crew-token", &standalone.token)
        .json(&json!({
            "session": asked["s"], "id": asked["e"]["id"],
            "answer": {"answer": "deny", "message": "not now"}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let finished = events
        .until("the refused call", |e| e["type"] == "tool_call_finished")
        .await;
    assert_eq!(finished["e"]["is_error"], true);
    assert!(!dir.join("approved.txt").exists());
    std::fs::write(&release, "").unwrap();
}

/// A lead that starts two background writers (`w1` writes one.txt, `w2` two.txt), then
/// waits for `release`.
fn writers_script(release: &Path) -> String {
    let writer = |file: &str| {
        format!(
            r#"{{"turns":[{{"tool_calls":[{{"name":"write_file","input":{{"path":"{file}","content":"{file}\n"}}}}]}},{{"text":"written"}}]}}"#
        )
    };
    format!(
        r#"{{"turns":[
            {{"tool_calls":[
              {{"name":"agent","input":{{"description":"writer one","prompt":"p","subagent_type":"w1","run_in_background":true}}}},
              {{"name":"agent","input":{{"description":"writer two","prompt":"p","subagent_type":"w2","run_in_background":true}}}}]}},
            {{"text":"started","wait_for":"{}"}},
            {{"text":"noted"}},{{"text":"noted"}}],
          "agents":{{"w1":{},"w2":{}}}}}"#,
        release.display(),
        writer("one.txt"),
        writer("two.txt"),
    )
}

#[tokio::test]
async fn worktrees_are_diffed_merged_and_discarded_and_a_discard_of_work_asks_first() {
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    let (_tmp, dir, home) = project(&writers_script(&release));
    support::put(&home, ".gitconfig", "[user]\n\tname = t\n\temail = t@t\n");
    for w in ["w1", "w2"] {
        support::put(
            &dir,
            &format!(".crew/agents/{w}.md"),
            &format!(
                "---\nname: {w}\ndescription: writer {w}\nisolation: worktree\ntools: write_file\n---\nWrite.\n"
            ),
        );
    }
    let served = run_with_dashboard(&dir, &home, "write both");
    let mut events = Events::open(&served).await;
    let mut finished = 0;
    let mut session = String::new();
    while finished < 2 {
        let line = events
            .until("the writers to finish", |e| {
                e["type"] == "run_finished" && e["agent"] != "lead"
            })
            .await;
        session = line["s"].as_str().unwrap().to_string();
        finished += 1;
    }
    let token = served.token.clone();
    let page = [("x-crew-token", token.as_str())];
    let list = || async {
        let r = client()
            .get(format!("{}/api/worktrees?session={session}", served.base))
            .header("x-crew-token", &token)
            .send()
            .await
            .unwrap();
        r.json::<Value>().await.unwrap()["worktrees"]
            .as_array()
            .unwrap()
            .clone()
    };
    let listed = list().await;
    let id_of = |what: &str| {
        let w = listed.iter().find(|w| w["description"] == what).unwrap();
        assert_eq!(w["confirm_discard"], true, "it holds work: {w}");
        (
            w["id"].as_str().unwrap().to_string(),
            PathBuf::from(w["path"].as_str().unwrap()),
        )
    };
    let ((one, _), (two, two_path)) = (id_of("writer one"), id_of("writer two"));
    let review = format!("{}/api/review", served.base);
    let act = |id: &str, action: &str, confirmation: &str| json!({"session": session, "id": id, "action": action, "confirmation": confirmation});

    // The diff shows the work.
    let (_, diff) = post_reply(&review, &page, &act(&one, "diff", "not_given")).await;
    assert!(
        diff["text"].as_str().unwrap().contains("+one.txt"),
        "{diff}"
    );
    // A cross-site discard (the cookie, no header) is refused and changes nothing.
    let cookie = format!("crew_dashboard={token}");
    let csrf = [("cookie", cookie.as_str())];
    assert_eq!(
        post(&review, &csrf, &act(&two, "discard", "given")).await,
        403
    );
    assert!(two_path.exists());
    // Unconfirmed, a discard of work is not done: the answer asks for confirmation.
    let (_, asked) = post_reply(&review, &page, &act(&two, "discard", "not_given")).await;
    assert!(
        asked["confirm"].as_str().unwrap().contains("holds work"),
        "{asked}"
    );
    assert!(two_path.exists(), "kept until confirmed");
    // Confirmed, it goes; the merge lands writer one's file on main.
    assert_eq!(
        post(&review, &page, &act(&two, "discard", "given")).await,
        200
    );
    assert!(!two_path.exists());
    assert_eq!(
        post(&review, &page, &act(&one, "merge", "not_given")).await,
        200
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("one.txt")).unwrap(),
        "one.txt\n"
    );
    assert!(!dir.join("two.txt").exists());
    assert!(list().await.is_empty(), "both reviewed");
    std::fs::write(&release, "").unwrap();
}
