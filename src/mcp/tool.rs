//! An MCP server's tool as a crew `Tool`: named `mcp__<server>__<tool>`, with the server's
//! JSON schema, read-only only when the server annotates it `readOnlyHint: true` (anything
//! else is a side effect), and the MCP permission spec so rules `mcp__server`,
//! `mcp__server__tool` and `mcp__server__*` cover it. It runs like every other tool (the
//! executor's timeout and result offloading apply); the result's text is kept, images, audio and
//! resources are kept or described, and `isError` becomes a tool error.

use async_trait::async_trait;
use ractor::ActorRef;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use super::names;
use super::server_actor::McpMsg;
use crate::permission::PermissionSpec;
use crate::tools::{Definition, Safety, Tool, ToolContext, ToolError};

/// One tool of one MCP server.
pub(crate) struct McpTool {
    definition: Definition,
    server: String,
    remote: String,
    actor: ActorRef<McpMsg>,
}

impl McpTool {
    /// The tool `tool` of `server`, called through the server's actor.
    pub(crate) fn new(server: &str, tool: rmcp::model::Tool, actor: ActorRef<McpMsg>) -> Self {
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let mut description = tool.description.as_deref().unwrap_or_default().to_string();
        if description.is_empty() {
            description = tool.title.clone().unwrap_or_default();
        }
        let description = format!("{description} (MCP server `{server}`)")
            .trim()
            .to_string();
        Self {
            definition: Definition {
                name: names::tool_name(server, &tool.name),
                aliases: Vec::new(),
                description,
                input_schema: Value::Object((*tool.input_schema).clone()),
                safety: if read_only {
                    Safety::ReadOnly
                } else {
                    Safety::SideEffect
                },
                system: false,
                timeout: None,
                // `config::load` yields only servers the user configured or trusted, so
                // their annotation is believed; under dontAsk and auto any other tool is
                // denied unless a rule names it (`permission::check::mcp`).
                permission: Some(if read_only {
                    PermissionSpec::mcp_read_only()
                } else {
                    PermissionSpec::mcp()
                }),
            },
            server: server.to_string(),
            remote: tool.name.to_string(),
            actor,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &Definition {
        &self.definition
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        // The actor answers at once unless a handshake is in flight; the executor's
        // timeout bounds the rest.
        let peer = match self.actor.call(McpMsg::Peer, None).await {
            Ok(ractor::rpc::CallResult::Success(Ok(peer))) => peer,
            Ok(ractor::rpc::CallResult::Success(Err(reason))) => {
                return Err(ToolError::Failed(reason.to_string()));
            }
            _ => {
                return Err(ToolError::Failed(format!(
                    "MCP server `{}` is not running (the session may be ending)",
                    self.server
                )));
            }
        };
        let Value::Object(arguments) = input else {
            return Err(ToolError::InvalidInput(
                "arguments must be a JSON object".into(),
            ));
        };
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        let result = tokio::select! {
            r = peer.call_tool(params) => r,
            () = ctx.cancel.cancelled() => {
                return Err(ToolError::Failed(format!("the call to MCP server `{}` was cancelled", self.server)));
            }
        };
        let result = result.map_err(|e| {
            ToolError::Failed(format!("MCP server `{}` failed the call: {e}", self.server))
        })?;
        let value = serde_json::to_value(&result).map_err(|e| {
            ToolError::Failed(format!(
                "MCP server `{}`: unreadable result: {e}",
                self.server
            ))
        })?;
        // What the server says is data: it cannot forge one of crew's envelopes.
        let text = crate::envelope::body(&render(&value));
        if result.is_error == Some(true) {
            return Err(ToolError::Failed(if text.is_empty() {
                format!("MCP server `{}` reported an error", self.server)
            } else {
                text
            }));
        }
        Ok(text)
    }
}

/// The text the model sees for a `CallToolResult` (as JSON): each content block in order,
/// text as is and everything else described; `structuredContent` when there is no content.
pub(crate) fn render(result: &Value) -> String {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut parts: Vec<String> = blocks.iter().map(block).collect();
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

/// One content block as text.
fn block(b: &Value) -> String {
    let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or_default();
    match s("type") {
        "text" => s("text").to_string(),
        kind @ ("image" | "audio") => format!(
            "[{kind} content: {}, {} bytes; not shown to the model]",
            or_unknown(s("mimeType")),
            base64_len(s("data"))
        ),
        "resource" => {
            let r = b.get("resource").cloned().unwrap_or_default();
            let rs = |k: &str| {
                r.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            match r.get("text").and_then(Value::as_str) {
                Some(text) => format!(
                    "[resource {} ({})]\n{text}",
                    rs("uri"),
                    or_unknown(&rs("mimeType"))
                ),
                None => format!(
                    "[resource {}: {}, {} bytes of binary data; not shown to the model]",
                    rs("uri"),
                    or_unknown(&rs("mimeType")),
                    base64_len(&rs("blob"))
                ),
            }
        }
        "resource_link" => format!(
            "[resource link {} `{}` ({})]",
            s("uri"),
            s("name"),
            or_unknown(s("mimeType"))
        ),
        other => {
            let json: String = b.to_string().chars().take(500).collect();
            format!("[{} content: {json}]", or_unknown(other))
        }
    }
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "unknown type" } else { s }
}

/// The decoded size of base64 `data` (padding excluded).
fn base64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=').len();
    trimmed * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_kind_is_kept_or_described() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAAAA=="}},
            {"type": "resource_link", "uri": "file:///c", "name": "c", "mimeType": "text/x"},
            {"type": "hologram", "x": 1}
        ]});
        let text = render(&r);
        assert!(text.starts_with("hello\n"), "{text}");
        assert!(
            text.contains("[image content: image/png, 5 bytes"),
            "{text}"
        );
        assert!(
            text.contains("[audio content: audio/wav, 3 bytes"),
            "{text}"
        );
        assert!(
            text.contains("[resource file:///a.txt (text/plain)]\nbody"),
            "{text}"
        );
        assert!(
            text.contains("[resource file:///b.bin: unknown type, 4 bytes"),
            "{text}"
        );
        assert!(
            text.contains("[resource link file:///c `c` (text/x)]"),
            "{text}"
        );
        assert!(text.contains("[hologram content: {"), "{text}");
    }

    #[test]
    fn structured_content_stands_in_for_missing_content() {
        let r = json!({"content": [], "structuredContent": {"a": 1}});
        assert_eq!(render(&r), r#"{"a":1}"#);
    }
}
