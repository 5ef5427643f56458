//! Large tool results leave the conversation (issue 14): a `run_command` printing 20 MB
//! returns a preview naming the file its whole output was streamed to, and the model
//! reads the middle of that file by offset, through the real `crew -p` path.

mod common;

use common::{crew, put};

/// `seq -f 'row %08.0f' 1 ROWS`: 13 bytes a line, about 20.8 MB.
const ROWS: usize = 1_600_000;

fn rows() -> String {
    (1..=ROWS).map(|i| format!("row {i:08}\n")).collect()
}

fn text_of_results(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_20_mb_command_output_is_previewed_saved_and_read_back_by_offset() {
    let home = tempfile::tempdir().unwrap();
    let proj = tempfile::tempdir().unwrap();
    let proj = proj.path().canonicalize().unwrap();
    // Default mode: only this command is allowed, and the results directory (outside
    // the project) is readable only by the offload rule.
    put(
        &proj,
        ".crew/settings.local.json",
        r#"{"permissions":{"allow":["Bash(seq:*)"]}}"#,
    );
    let session = "offload-e2e";
    let results = home
        .path()
        .join(".crew/projects")
        .join(crewmaster::store::project_slug(&proj))
        .join(session)
        .join("results");
    let saved = results.join("call_1_1.txt");
    let script = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "run_command",
            "input": {"command": format!("seq -f 'row %08.0f' 1 {ROWS}")}}]},
        {"tool_calls": [{"name": "read_file",
            "input": {"path": saved, "offset": 800_000, "limit": 3}}]},
        {"text": "done"}
    ]});
    let script_path = home.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let record = home.path().join("requests.jsonl");
    let out = crew(
        &proj,
        home.path(),
        &[
            "-p",
            "print a lot",
            "--session-id",
            session,
            "--model",
            &format!("script:{}", script_path.display()),
            "--record-requests",
            record.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The whole output is on disk, byte for byte.
    let on_disk = std::fs::read(&saved).unwrap();
    assert_eq!(on_disk.len(), ROWS * 13);
    assert!(on_disk == rows().as_bytes(), "the saved output differs");
    let requests: Vec<serde_json::Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 3);
    // The model saw a preview: head, tail, size and path, not 20 MB.
    let preview = &text_of_results(&requests[1])[0];
    assert!(preview.len() < 20_000, "{} bytes shown", preview.len());
    assert!(preview.contains("row 00000001"), "{preview}");
    assert!(preview.contains(&format!("row {ROWS:08}")), "{preview}");
    assert!(
        preview.contains(&format!("all {} bytes ({ROWS} lines)", ROWS * 13)),
        "{preview}"
    );
    assert!(preview.contains(&saved.display().to_string()), "{preview}");
    assert!(!preview.contains("row 00800000"), "the middle was sent");
    // The model read the middle by offset, and was allowed to.
    let read = &text_of_results(&requests[2])[1];
    assert!(!read.starts_with("error"), "{read}");
    for (line, row) in [(800_000, 800_000), (800_002, 800_002)] {
        assert!(read.contains(&format!("{line}\trow {row:08}")), "{read}");
    }
    assert!(!read.contains("row 00800003"), "{read}");
}
