//! A new host asks once, in an interactive session: real sandboxed `curl`s reach a server
//! on the host's loopback (`localhost:PORT`, no DNS) through crew's proxy only when a
//! scripted human answers once / for the session / always (saved to
//! `.crew/settings.local.json`) and never when the answer is deny, under dontAsk, or with
//! no asker installed (headless). Connections waiting on the same host share one question.
//! Its own test binary: the asker and the session's allowed hosts are process-wide.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a test binary: a failed unwrap is a failed test"
)]

mod support;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crewmaster::approver::ApprovalAnswer;
use crewmaster::approver::network::{self, NETWORK_CALL};
use crewmaster::permission::PermissionMode;
use crewmaster::sandbox::net::{self as sandbox_net, NetworkPolicy};
use serde_json::Value;
use support::sandbox::{confined, repo, run};

/// A tiny HTTP server on the host's loopback answering `body`; its port and hit count.
fn server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hits);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, hits)
}

/// The scripted human: answers each question with the next queued answer (after a
/// pause, so concurrent connections pile up on one question) and logs what was asked.
struct Human {
    answers: Arc<Mutex<VecDeque<ApprovalAnswer>>>,
    asked: Arc<Mutex<Vec<(String, String, Value)>>>,
}

impl Human {
    fn start(root: &std::path::Path) -> Human {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        network::install(tx, root, PermissionMode::Default);
        let answers: Arc<Mutex<VecDeque<ApprovalAnswer>>> = Arc::default();
        let asked: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
        let (a, log) = (answers.clone(), asked.clone());
        tokio::spawn(async move {
            while let Some(q) = rx.recv().await {
                let q: crewmaster::approver::actor::PendingApproval = q;
                let args: Value = serde_json::from_str(&q.request.call.arguments).unwrap();
                log.lock().unwrap().push((
                    q.request.call.name.clone(),
                    q.request.decision.reason.clone(),
                    args,
                ));
                tokio::time::sleep(Duration::from_millis(300)).await;
                let answer = a
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or(ApprovalAnswer::Deny { message: None });
                let _ = q.reply.send(answer);
            }
        });
        Human { answers, asked }
    }

    fn will(&self, answer: ApprovalAnswer) {
        self.answers.lock().unwrap().push_back(answer);
    }

    /// How many questions named `port` so far.
    fn asked_about(&self, port: u16) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, _, a)| a["port"] == port)
            .count()
    }
}

fn curl(port: u16) -> String {
    format!("curl -s --max-time 20 http://localhost:{port}/; echo rc=$?")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_host_asks_once_and_each_answer_holds_on_the_wire() {
    require_features!(Landlock, NetworkNamespaces, Curl);
    sandbox_net::set_policy(NetworkPolicy::default());
    let (_d, root) = repo();
    let settings = root.join(".crew/settings.local.json");

    // Headless: no asker, nothing listed: refused, as before.
    let (headless, headless_hits) = server("HEADLESS-SECRET");
    let out = run(confined(&root), &curl(headless)).await;
    assert!(!out.contains("HEADLESS-SECRET"), "{out}");
    assert_eq!(headless_hits.load(Ordering::SeqCst), 0);

    let human = Human::start(&root);

    // Deny: the server sees nothing, and the refusal names the host and the setting.
    let (denied, denied_hits) = server("DENIED-SECRET");
    human.will(ApprovalAnswer::Deny { message: None });
    let out = run(confined(&root), &curl(denied)).await;
    assert!(!out.contains("DENIED-SECRET"), "{out}");
    assert!(
        out.contains(&format!("localhost:{denied}")) && out.contains("allowedDomains"),
        "{out}"
    );
    assert_eq!(denied_hits.load(Ordering::SeqCst), 0);
    assert_eq!(human.asked_about(denied), 1);
    {
        let asked = human.asked.lock().unwrap();
        let (name, reason, args) = &asked[0];
        assert_eq!(name, NETWORK_CALL);
        assert!(reason.contains(&format!("localhost:{denied}")), "{reason}");
        assert!(
            reason.contains("sandbox.network.allowedDomains"),
            "{reason}"
        );
        assert_eq!(args["host"], "localhost");
    }

    // Once: through, and the next connection asks again.
    let (once, once_hits) = server("ONCE-OK");
    human.will(ApprovalAnswer::AllowOnce);
    assert!(run(confined(&root), &curl(once)).await.contains("ONCE-OK"));
    let out = run(confined(&root), &curl(once)).await;
    assert!(!out.contains("ONCE-OK"), "a once answer lasted: {out}");
    assert_eq!(human.asked_about(once), 2);
    assert_eq!(once_hits.load(Ordering::SeqCst), 1);

    // Session: through, and later commands are not asked again; nothing saved.
    let (session, _) = server("SESSION-OK");
    human.will(ApprovalAnswer::AllowSession);
    assert!(
        run(confined(&root), &curl(session))
            .await
            .contains("SESSION-OK")
    );
    assert!(
        run(confined(&root), &curl(session))
            .await
            .contains("SESSION-OK")
    );
    assert_eq!(human.asked_about(session), 1);
    assert!(!settings.exists(), "a session answer was saved");

    // Always: through, saved to the local settings, not asked again.
    let (always, _) = server("ALWAYS-OK");
    human.will(ApprovalAnswer::AllowForever);
    assert!(
        run(confined(&root), &curl(always))
            .await
            .contains("ALWAYS-OK")
    );
    assert!(
        run(confined(&root), &curl(always))
            .await
            .contains("ALWAYS-OK")
    );
    assert_eq!(human.asked_about(always), 1);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        saved["sandbox"]["network"]["allowedDomains"],
        serde_json::json!([format!("localhost:{always}")])
    );

    // Two connections at once to a new host (curl over HTTP and over SOCKS5): one question.
    let (shared, shared_hits) = server("SHARED-OK");
    human.will(ApprovalAnswer::AllowOnce);
    let both = format!(
        "curl -s --max-time 20 http://localhost:{shared}/ & \
         curl -s --max-time 20 -x socks5h://127.0.0.1:{p} http://localhost:{shared}/ & wait",
        p = sandbox_net::PROXY_PORT
    );
    let out = run(confined(&root), &both).await;
    assert_eq!(out.matches("SHARED-OK").count(), 2, "{out}");
    assert_eq!(
        human.asked_about(shared),
        1,
        "one question for both connections"
    );
    assert_eq!(shared_hits.load(Ordering::SeqCst), 2);

    // dontAsk: refused without a question.
    network::set_dont_ask(PermissionMode::DontAsk);
    let (dont, dont_hits) = server("DONTASK-SECRET");
    human.will(ApprovalAnswer::AllowForever);
    let out = run(confined(&root), &curl(dont)).await;
    assert!(!out.contains("DONTASK-SECRET"), "{out}");
    assert_eq!(human.asked_about(dont), 0);
    assert_eq!(dont_hits.load(Ordering::SeqCst), 0);
}
