//! `web_fetch` end to end: the real `crew -p` binary on a scripted model fetches from
//! HTTP servers bound to 127.0.0.1 in the test, and each test checks what came back to the
//! model and how many requests each server received. Covers the Markdown conversion, the
//! size and time limits, the permission list (`WebFetch(domain:…)` rules and
//! `sandbox.network.allowedDomains` as one list, deny first, an unlisted host refused
//! headless before any request leaves), and redirects that would leave the allowed host.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use wiremock::matchers::{any, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A project (a git repository) and a separate home, both canonical.
fn project() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let (proj, home) = (base.join("proj"), base.join("home"));
    std::fs::create_dir_all(&home).unwrap();
    support::committed_repo(&proj, &[("README.md", "# readme\n")]);
    (tmp, proj, home)
}

/// The project's own (untracked) settings.
const LOCAL: &str = ".crew/settings.local.json";

/// The rule that lets the tests' servers through.
const ALLOW_LOCAL: &str = r#"{"permissions":{"allow":["WebFetch(domain:127.0.0.1)"]}}"#;

/// One `web_fetch` call per input, one turn each, then "done".
fn script(calls: &[Value]) -> Value {
    let turns: Vec<Value> = calls
        .iter()
        .map(|input| json!({"text": "fetching", "tool_calls": [{"name": "web_fetch", "input": input}]}))
        .chain([json!({"text": "done"})])
        .collect();
    json!({ "turns": turns })
}

/// What a call came back as.
#[derive(Debug)]
struct Outcome {
    content: String,
    is_error: bool,
    code: Option<String>,
}

/// Runs the calls headless in `mode` (off the async workers: the servers run on them)
/// and returns each call's result, in order.
async fn fetch(proj: &Path, home: &Path, mode: &str, calls: &[Value]) -> Vec<Outcome> {
    let (proj, home, script) = (proj.to_path_buf(), home.to_path_buf(), script(calls));
    let mode = mode.to_string();
    let (out, requests) = tokio::task::spawn_blocking(move || {
        support::crew_scripted(
            &proj,
            &home,
            &script,
            &["-p", "go", "--permission-mode", &mode],
        )
    })
    .await
    .unwrap();
    let last = requests.last().unwrap_or_else(|| {
        panic!(
            "no request recorded: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let messages: Vec<crewmaster::protocol::Message> =
        serde_json::from_value(last["messages"].clone()).unwrap();
    let results: Vec<Outcome> = support::tool_results(&messages)
        .into_iter()
        .map(|r| Outcome {
            content: r.content,
            is_error: r.is_error,
            code: r.error_code,
        })
        .collect();
    assert_eq!(results.len(), calls.len(), "{results:?}");
    results
}

/// A server answering every request with `response`, and counting them.
async fn serving(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

async fn requests_to(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

const PAGE: &str = r#"<!doctype html><html><head><title>Widget docs</title>
<style>.hidden { display: none }</style>
<script>window.TRACKER_SECRET = "do-not-show";</script></head>
<body><h1>Widget <em>API</em></h1>
<p>Install it with <code>cargo add widget</code>, then read <a href="https://docs.example/guide">the guide</a>.</p>
<h2>Limits</h2><ul><li>fast</li><li>small</li></ul>
<script>document.write("INLINE_SCRIPT_TEXT")</script></body></html>"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_html_page_comes_back_as_markdown_without_its_scripts() {
    let (_t, proj, home) = project();
    support::put(&proj, LOCAL, ALLOW_LOCAL);
    let server = MockServer::start().await;
    Mock::given(path("/docs"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(PAGE, "text/html; charset=utf-8"))
        .mount(&server)
        .await;
    // A redirect within the server is followed, and said.
    Mock::given(path("/old"))
        .respond_with(ResponseTemplate::new(301).insert_header("Location", "/docs"))
        .mount(&server)
        .await;
    let url = format!("{}/old", server.uri());
    let got = fetch(&proj, &home, "default", &[json!({"url": url})]).await;
    let r = &got[0];
    assert!(!r.is_error, "{r:?}");
    let text = &r.content;
    assert!(
        text.starts_with(&format!("URL: {}/docs\n", server.uri())),
        "{text}"
    );
    assert!(text.contains(&format!("Redirected from: {url}")), "{text}");
    assert!(text.contains("# Widget *API*"), "{text}");
    assert!(text.contains("## Limits"), "{text}");
    assert!(
        text.contains("[the guide](https://docs.example/guide)"),
        "{text}"
    );
    assert!(
        text.contains("`cargo add widget`") && text.contains("small"),
        "{text}"
    );
    for hidden in [
        "TRACKER_SECRET",
        "do-not-show",
        "INLINE_SCRIPT_TEXT",
        "display: none",
        "<h1>",
    ] {
        assert!(!text.contains(hidden), "{hidden} leaked into {text}");
    }
    assert_eq!(requests_to(&server).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_body_is_cut_and_a_silent_server_times_out() {
    let (_t, proj, home) = project();
    support::put(&proj, LOCAL, ALLOW_LOCAL);
    // Larger than the 5 MiB read limit, and far more text than the 100,000 characters shown.
    let big = format!(
        "<html><body><p>{}</p><p>THE_END</p></body></html>",
        "lorem ipsum ".repeat(600_000)
    );
    let huge = serving(ResponseTemplate::new(200).set_body_raw(big, "text/html")).await;
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            open.push(s);
        }
    });
    let got = fetch(
        &proj,
        &home,
        "default",
        &[
            json!({"url": huge.uri()}),
            json!({"url": silent_url, "timeout_ms": 500}),
        ],
    )
    .await;
    held.abort();

    let (cut, timed_out) = (&got[0], &got[1]);
    assert!(!cut.is_error, "{cut:?}");
    // The result is large, so the executor saved it whole and shows head and tail: the
    // notes sit at the end, and the saved file holds what the tool returned.
    assert!(
        cut.content
            .contains("the text was cut here, after 100000 characters"),
        "{}",
        cut.content
    );
    assert!(
        cut.content.contains("larger than 5242880 bytes"),
        "{}",
        cut.content
    );
    assert!(!cut.content.contains("THE_END"));
    let saved = saved_result(&cut.content);
    let whole = std::fs::read_to_string(&saved).unwrap();
    assert!(whole.contains("lorem ipsum"));
    assert!(
        whole.chars().count() < 100_000 + 1_000,
        "{} chars",
        whole.chars().count()
    );

    assert!(timed_out.is_error, "{timed_out:?}");
    assert!(
        timed_out.content.contains("timed out after 500 ms"),
        "{}",
        timed_out.content
    );
    // Our own limit answered, not the executor's.
    assert_eq!(timed_out.code.as_deref(), Some("failed"), "{timed_out:?}");
}

/// The path of the file an offloaded result names ("… saved in full to PATH; …").
fn saved_result(shown: &str) -> PathBuf {
    let after = shown
        .split("saved in full to ")
        .nth(1)
        .unwrap_or_else(|| panic!("not an offloaded result: {shown}"));
    PathBuf::from(after.split(';').next().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unlisted_host_is_refused_headless_before_any_request_leaves() {
    let (_t, proj, home) = project();
    let server = serving(ResponseTemplate::new(200).set_body_string("secret page")).await;
    // A repository's shared settings cannot open the network for itself: its
    // allowedDomains entry and its allow rule (an untrusted folder) are ignored.
    support::put(
        &proj,
        ".crew/settings.json",
        r#"{"permissions":{"allow":["WebFetch(domain:127.0.0.1)"]},"sandbox":{"network":{"allowedDomains":["127.0.0.1"]}}}"#,
    );
    for mode in ["default", "acceptEdits", "dontAsk"] {
        let got = fetch(
            &proj,
            &home,
            mode,
            &[json!({"url": format!("{}/x?q=1", server.uri())})],
        )
        .await;
        let r = &got[0];
        assert!(r.is_error, "{mode}: {r:?}");
        assert!(
            r.content.contains("`WebFetch(domain:127.0.0.1)`"),
            "{mode}: {}",
            r.content
        );
        assert!(
            r.content.contains("sandbox.network.allowedDomains"),
            "{mode}: {}",
            r.content
        );
        assert!(!r.content.contains("secret page"), "{mode}");
    }
    assert_eq!(
        requests_to(&server).await,
        0,
        "a refused fetch sent a request"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allow_rule_or_an_allowed_domains_entry_lets_the_fetch_through() {
    let server =
        serving(ResponseTemplate::new(200).set_body_raw("hello from the server", "text/plain"))
            .await;
    for settings in [
        ALLOW_LOCAL,
        r#"{"sandbox":{"network":{"allowedDomains":["127.0.0.1"]}}}"#,
    ] {
        let (_t, proj, home) = project();
        support::put(&proj, LOCAL, settings);
        let got = fetch(&proj, &home, "default", &[json!({"url": server.uri()})]).await;
        assert!(!got[0].is_error, "{settings}: {:?}", got[0]);
        assert!(
            got[0].content.contains("hello from the server"),
            "{settings}: {:?}",
            got[0]
        );
    }
    // The user's own settings count too.
    let (_t, proj, home) = project();
    support::put(
        &home,
        ".crew/settings.json",
        r#"{"sandbox":{"network":{"allowedDomains":["*.example","127.0.0.1"]}}}"#,
    );
    let got = fetch(&proj, &home, "default", &[json!({"url": server.uri()})]).await;
    assert!(!got[0].is_error, "{:?}", got[0]);
    assert_eq!(requests_to(&server).await, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deny_rule_beats_every_allow_even_in_bypass_mode() {
    let (_t, proj, home) = project();
    let server = serving(ResponseTemplate::new(200).set_body_string("secret page")).await;
    support::put(
        &proj,
        LOCAL,
        r#"{"permissions":{"allow":["WebFetch(domain:127.0.0.1)","WebFetch"]},"sandbox":{"network":{"allowedDomains":["127.0.0.1"]}}}"#,
    );
    support::put(
        &home,
        ".crew/settings.json",
        r#"{"permissions":{"deny":["WebFetch(domain:127.0.0.1)"]}}"#,
    );
    for mode in ["default", "bypassPermissions", "dontAsk"] {
        let got = fetch(&proj, &home, mode, &[json!({"url": server.uri()})]).await;
        let r = &got[0];
        assert!(r.is_error, "{mode}: {r:?}");
        assert!(r.content.contains("denies"), "{mode}: {}", r.content);
        assert!(
            r.content.contains("WebFetch(domain:127.0.0.1)"),
            "{mode}: {}",
            r.content
        );
    }
    assert_eq!(requests_to(&server).await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_a_host_nobody_allowed_is_not_followed() {
    let (_t, proj, home) = project();
    support::put(&proj, LOCAL, ALLOW_LOCAL);
    let elsewhere =
        serving(ResponseTemplate::new(200).set_body_string("the other host's secret")).await;
    // Another name for this machine, which no rule allows.
    let target = format!(
        "http://localhost:{}/collect?data=1",
        elsewhere.address().port()
    );
    let allowed =
        serving(ResponseTemplate::new(302).insert_header("Location", target.as_str())).await;
    // Then the model does as told and fetches the target: that call is judged on its own.
    let got = fetch(
        &proj,
        &home,
        "default",
        &[
            json!({"url": format!("{}/start", allowed.uri())}),
            json!({"url": target}),
        ],
    )
    .await;
    let (reported, refused) = (&got[0], &got[1]);
    assert!(!reported.is_error, "{reported:?}");
    assert!(
        reported.content.contains("302 Found"),
        "{}",
        reported.content
    );
    assert!(
        reported
            .content
            .contains(&format!("call web_fetch again with url {target}")),
        "{}",
        reported.content
    );
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.content.contains("`WebFetch(domain:localhost)`"),
        "{}",
        refused.content
    );
    assert_eq!(requests_to(&allowed).await, 1);
    assert_eq!(
        requests_to(&elsewhere).await,
        0,
        "the redirect was followed"
    );
}
