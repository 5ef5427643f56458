//! Plain data exchanged between agents, providers and tools: messages, tool calls,
//! tool results, usage, stop reasons. Types only — no behaviour beyond small
//! constructors — so every layer can depend on this one without pulling in actors or I/O.

use serde::{Deserialize, Serialize};

/// Who wrote a message in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, or tool results sent back on the user's side of the protocol.
    User,
    /// The model.
    Assistant,
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning that some APIs require to be sent back verbatim.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The provider's signature over it, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A tool call the model made.
    ToolUse(ToolCall),
    /// The result of a tool call, sent back to the model.
    ToolResult(ToolResult),
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The author.
    pub role: Role,
    /// The content blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// The concatenated text blocks of this message.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(call) => Some(call),
            _ => None,
        })
    }
}

/// A tool call as the model sent it. `arguments` is the raw JSON text: models are
/// untrusted, so it is parsed (and may fail to parse) by the permission engine and the
/// executor, never assumed valid here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call; the result carries it back.
    pub id: String,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// The raw JSON arguments.
    pub arguments: String,
}

/// The outcome of a tool call as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub tool_use_id: String,
    /// The text shown to the model.
    pub content: String,
    /// Whether the call failed (or was refused).
    pub is_error: bool,
    /// A machine-readable error code (`tool_not_allowed`, `permission_denied`,
    /// `invalid_arguments`, `unknown_tool`, `timeout`, `panicked`, `failed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Where the whole result is saved (`offload`), when it is: micro-compaction may
    /// replace an old result in requests by a stub naming this file. Never sent to a
    /// model as a field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_to: Option<std::path::PathBuf>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(tool_use_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
            error_code: None,
            saved_to: None,
        }
    }

    /// A failed result with an error code and a reason the model can act on.
    pub fn error(
        tool_use_id: impl Into<String>,
        code: impl Into<String>,
        reason: impl AsRef<str>,
    ) -> Self {
        let code = code.into();
        Self {
            tool_use_id: tool_use_id.into(),
            content: format!("error [{code}]: {}", reason.as_ref()),
            is_error: true,
            error_code: Some(code),
            saved_to: None,
        }
    }
}

/// Token usage of one model turn (or a sum of turns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }
}

/// Why a model turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output hit the token limit.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// Anything else the provider reported.
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_blocks_are_tagged_and_unset_fields_stay_off_the_wire() {
        let m = Message {
            role: Role::User,
            content: vec![
                ContentBlock::Text { text: "hi".into() },
                ContentBlock::ToolResult(ToolResult::ok("c1", "done")),
            ],
        };
        let wire = serde_json::to_value(&m).unwrap();
        assert_eq!(
            wire,
            json!({"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_result", "tool_use_id": "c1", "content": "done", "is_error": false},
            ]})
        );
        assert_eq!(serde_json::from_value::<Message>(wire).unwrap(), m);
    }

    #[test]
    fn an_error_result_names_its_code() {
        let r = ToolResult::error("c2", "permission_denied", "writes outside the worktree");
        assert!(r.is_error);
        assert_eq!(r.error_code.as_deref(), Some("permission_denied"));
        assert_eq!(
            r.content,
            "error [permission_denied]: writes outside the worktree"
        );
    }

    #[test]
    fn usage_adds_every_counter() {
        let mut total = Usage::default();
        let turn = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cache_creation_input_tokens: 3,
            cache_read_input_tokens: 4,
        };
        total.add(&turn);
        total.add(&turn);
        assert_eq!((total.input_tokens, total.output_tokens), (2, 4));
        assert_eq!(
            (
                total.cache_creation_input_tokens,
                total.cache_read_input_tokens
            ),
            (6, 8)
        );
    }
}
