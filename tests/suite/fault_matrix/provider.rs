//! A real provider (a local mock of the Anthropic API) that rate-limits, overloads, fails
//! and tears a stream mid-output: each is retried, shown, and loses or repeats nothing.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_errors_and_a_torn_stream_in_a_real_run_lose_nothing_and_are_shown() {
    use support::provider::*;
    use wiremock::{Mock, MockServer, ResponseTemplate, matchers};
    let p = place();
    support::put(&p.dir, "a.txt", "alpha-content\n");
    let turn = |blocks: Vec<Value>| {
        let mut e = vec![a_message_start(10, 0)];
        e.extend(blocks);
        e.extend(a_end("tool_use", 5));
        sse_response(anthropic_sse(&e))
    };
    let command = r#"{"command":": prov-cmd-88a1; echo ran-one"}"#;
    // A torn stream: text, then the connection ends mid-output.
    let mut torn = vec![a_message_start(5, 0)];
    torn.push(
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    );
    torn.push(json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading"}}));
    let mut second = a_text_block(0, &["Reading", " now"]);
    second.extend(a_tool_block(
        1,
        "toolu_2",
        "read_file",
        &[r#"{"path":"a.txt"}"#],
    ));
    let sequence = Sequence::new(vec![
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(json!({"type":"error","error":{"type":"rate_limit_error","message":"rate limited"}})),
        turn(a_tool_block(0, "toolu_1", "run_command", &[command])),
        ResponseTemplate::new(529)
            .set_body_json(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
        ResponseTemplate::new(500)
            .set_body_json(json!({"type":"error","error":{"type":"api_error","message":"Internal server error"}})),
        sse_response(anthropic_sse(&torn)),
        turn(second),
        sse_response(a_text_turn(&["all done"])),
    ]);
    let server = MockServer::start().await;
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/messages"))
        .respond_with(sequence.clone())
        .mount(&server)
        .await;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crew"));
    cmd.args(["-p", "go", "--permission-mode", "bypassPermissions"])
        .args(["--model", "anthropic:claude-sonnet-4-5"])
        .current_dir(&p.dir)
        .env("HOME", &p.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.uri())
        .env_remove("OPENAI_API_KEY")
        .env_remove("CREW_FAULTS");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("all done"));
    // Seven requests: each error and the torn stream were retried once.
    assert_eq!(sequence.arrivals().len(), 7);
    // No line lost or twice: both calls started, finished and answered exactly once, and
    // the torn text was not appended twice.
    let lines = transcript(&p.home);
    let ids = finished_ids(&lines);
    assert_eq!(ids.get("toolu_1"), Some(&1));
    assert_eq!(ids.get("toolu_2"), Some(&1));
    let texts: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "message_appended" && l["message"]["role"] == "assistant")
        .map(|l| l["message"].to_string())
        .collect();
    assert_eq!(
        texts.iter().filter(|t| t.contains("Reading now")).count(),
        1,
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("\"Reading\"")),
        "{texts:?}"
    );
    // The user saw each retry and its reason.
    for reason in ["429", "overloaded", "500", "interrupted"] {
        support::faults::assert_told(&err, &lines, reason);
    }
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "retrying").count(),
        4,
        "one event per retry"
    );
    support::faults::assert_no_process_with("prov-cmd-88a1");
    assert_survived(&p, &err, &lines, "retrying");
}
