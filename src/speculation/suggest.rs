//! The next-prompt suggestion: one small request through the `Provider` trait that asks
//! the model what the user will most likely type next. The answer is model output, so it
//! is treated as hostile: one line, no control characters, bounded length; anything else
//! (an error, a timeout, an empty or `NONE` answer) means no suggestion.

use std::time::Duration;

use futures::StreamExt;

use crate::protocol::{ContentBlock, Message, Role};
use crate::provider::{ModelRequest, Provider, StreamEvent};

/// The agent name suggestion requests carry (a scripted model can answer them apart).
pub(crate) const SUGGEST_AGENT: &str = "suggestion";

/// The longest suggestion kept, in characters.
pub(crate) const MAX_CHARS: usize = 200;

/// How long the suggestion request may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(20);

/// The instruction appended to the conversation for the suggestion request.
const ASK: &str = "[suggestion mode] Predict the user's next message to you in this conversation: \
the exact words they would most likely type next, as one short line. Answer with that line only, \
no quotes and no explanation. If you cannot tell, answer NONE.";

/// Asks the model for the user's likely next prompt after `conversation` (which ends
/// with the lead's finished turn). `system` and `model` are the lead's, so a provider's
/// prompt cache serves the shared prefix.
pub(crate) async fn suggest(
    provider: &dyn Provider,
    model: &str,
    system: &str,
    conversation: &[Message],
) -> Option<String> {
    let mut messages = conversation.to_vec();
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ContentBlock::Text {
            text: ASK.to_string(),
        }),
        _ => messages.push(Message::user_text(ASK)),
    }
    let request = ModelRequest {
        model: model.to_string(),
        system: system.to_string(),
        messages: messages.into(),
        tools: Vec::new().into(),
        max_tokens: 100,
        agent: SUGGEST_AGENT.to_string(),
    };
    let collect = async {
        let mut stream = provider.stream(request);
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(StreamEvent::TextDelta { text: t }) => text.push_str(&t),
                Ok(_) => {}
                Err(_) => return None,
            }
            // A runaway answer is no suggestion; stop reading it.
            if text.len() > MAX_CHARS * 8 {
                return None;
            }
        }
        Some(text)
    };
    let text = tokio::time::timeout(TIMEOUT, collect).await.ok()??;
    clean(&text)
}

/// The suggestion in a model's answer, if it is one: the first non-empty line, trimmed
/// of quotes, without control characters, at most [`MAX_CHARS`].
pub(crate) fn clean(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    if line.is_empty()
        || line.eq_ignore_ascii_case("none")
        || line.chars().count() > MAX_CHARS
        || line.chars().any(char::is_control)
        || line.starts_with('/')
    {
        return None;
    }
    Some(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_short_line_is_a_suggestion() {
        assert_eq!(
            clean("\n  \"run the tests\"  \nmore").as_deref(),
            Some("run the tests")
        );
        assert_eq!(clean("NONE"), None);
        assert_eq!(clean("   "), None);
        assert_eq!(
            clean("/plan do it"),
            None,
            "a slash command is never suggested"
        );
        assert_eq!(clean("a\u{1b}[2Jb"), None, "control characters");
        assert_eq!(clean(&"x".repeat(MAX_CHARS + 1)), None);
    }
}
