//! The lead's model can be switched between runs (the TUI's `/model`): the next run asks
//! the new provider for the new model, with the conversation so far; the old provider is
//! asked nothing more.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use crewmaster::agent::lead_actor::LeadMsg;
use crewmaster::agent::mode::AgentMode;
use crewmaster::agent::runner::RunRequest;
use crewmaster::provider::scripted::ScriptedProvider;

fn chat(task: &str) -> RunRequest {
    RunRequest {
        mode: AgentMode::Chat,
        task: task.into(),
        plan: None,
    }
}

#[tokio::test]
async fn the_next_run_goes_to_the_new_provider_and_model_with_the_conversation() {
    let t = support::start(support::Setup::new(
        r#"{"turns": [{"text": "from the first model"}]}"#,
        Vec::new(),
    ))
    .await;
    let first = t.session.run(chat("one")).await.unwrap();
    assert_eq!(first.result, "from the first model");
    let script = ScriptedProvider::parse(
        r#"{"turns": [{"text": "from the second model"}]}"#,
        Path::new("second.json"),
    )
    .unwrap();
    let second = ScriptedProvider::new(script);
    t.session
        .lead()
        .cast(LeadMsg::SetModel {
            provider: Arc::new(second.clone()),
            model: "second-model".into(),
        })
        .unwrap();
    let next = t.session.run(chat("two")).await.unwrap();
    assert_eq!(next.result, "from the second model");
    assert_eq!(
        t.provider.requests().len(),
        1,
        "the first model was asked again"
    );
    let asked = second.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].model, "second-model");
    let texts: Vec<String> = asked[0]
        .messages
        .to_vec()
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            crewmaster::protocol::ContentBlock::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("one"))
            && texts.iter().any(|t| t.contains("from the first model")),
        "the conversation did not come along: {texts:?}"
    );
}
