//! The rmcp `ServerHandler` of `crew mcp serve`: lists crew's tools (schema, and
//! `readOnlyHint` from each tool's Safety) and the delegation tools, and answers
//! `tools/call` from the [`Backend`]. Only a tool's name and arguments are read from a
//! request; `_meta` and the client's capabilities never reach a decision.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use super::Backend;
use super::delegate::{DelegateRequest, DelegationError};
use crate::tasks::TaskRecord;
use crate::tools::Safety;

/// The MCP face of a [`Backend`]; clones share it (one per HTTP session).
#[derive(Clone)]
pub(crate) struct CrewServer {
    backend: Arc<Backend>,
}

impl CrewServer {
    /// Serves `backend`.
    pub(crate) fn new(backend: Arc<Backend>) -> Self {
        Self { backend }
    }

    /// Every tool a client sees: crew's, then the delegation tools.
    pub(crate) fn tool_list(&self) -> Vec<Tool> {
        let crew = self.backend.tools().iter().map(|d| {
            let annotations = ToolAnnotations::new().read_only(d.safety == Safety::ReadOnly);
            tool(&d.name, &d.description, d.input_schema.clone(), annotations)
        });
        crew.chain(delegation_tools()).collect()
    }

    async fn call(&self, name: &str, args: Option<JsonObject>) -> CallToolResult {
        let delegates = self.backend.delegates();
        let args = args.unwrap_or_default();
        match name {
            "delegate" => {
                let req = match delegate_request(&args) {
                    Ok(r) => r,
                    Err(e) => return error(e),
                };
                let wait = args.get("wait").and_then(Value::as_bool).unwrap_or(false);
                let rec = match delegates.start(req).await {
                    Ok(rec) => rec,
                    Err(e) => return error(e),
                };
                if !wait {
                    return success(
                        format!(
                            "started crew lead task {id}; follow it with task_status / task_output {{\"task_id\": \"{id}\"}}, stop it with task_stop",
                            id = rec.id
                        ),
                        Some(status_json(&rec)),
                    );
                }
                match delegates.wait(&rec.id).await {
                    Ok(rec) => finished(rec),
                    Err(e) => error(e),
                }
            }
            "task_status" => match task_id(&args) {
                Ok(id) => match delegates.get(id).await {
                    Ok(rec) => success(status_json(&rec).to_string(), Some(status_json(&rec))),
                    Err(e) => error(e),
                },
                Err(e) => error(e),
            },
            "task_output" => {
                let id = match task_id(&args) {
                    Ok(id) => id,
                    Err(e) => return error(e),
                };
                let wait = args.get("wait").and_then(Value::as_bool).unwrap_or(false);
                let rec = if wait {
                    delegates.wait(id).await
                } else {
                    delegates.get(id).await
                };
                match rec {
                    Ok(rec) => {
                        let log = delegates.output(&rec).await;
                        let result = rec.result.as_deref().unwrap_or("(still running)");
                        let text = format!(
                            "status: {}\nresult:\n{result}\n\nlog:\n{log}",
                            rec.status.as_str()
                        );
                        success(text, Some(status_json(&rec)))
                    }
                    Err(e) => error(e),
                }
            }
            "task_stop" => match task_id(&args) {
                Ok(id) => match delegates.stop(id).await {
                    Ok(rec) => success(
                        format!("task {} ended: {}", rec.id, rec.status.as_str()),
                        Some(status_json(&rec)),
                    ),
                    Err(e) => error(e),
                },
                Err(e) => error(e),
            },
            _ => {
                let result = self.backend.call(name, Some(args)).await;
                let content = vec![ContentBlock::text(result.content)];
                if result.is_error {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                }
            }
        }
    }
}

impl ServerHandler for CrewServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("crew", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "crew's tools on this project, under the serving side's permission mode ({}); \
                 calls that would need approval are refused. `delegate` hands a whole task to a crew lead and its team.",
                self.backend.permission_mode()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(self.call(&request.name, request.arguments).await.into())
    }
}

fn tool(name: &str, description: &str, schema: Value, annotations: ToolAnnotations) -> Tool {
    let schema = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(name.to_string(), description.to_string(), schema).with_annotations(annotations)
}

fn delegation_tools() -> Vec<Tool> {
    let id_schema = |extra: Value| {
        let mut props =
            json!({"task_id": {"type": "string", "description": "The id `delegate` returned."}});
        if let (Some(p), Value::Object(e)) = (props.as_object_mut(), extra) {
            p.extend(e);
        }
        json!({"type": "object", "properties": props, "required": ["task_id"]})
    };
    let ro = ToolAnnotations::new().read_only(true);
    vec![
        tool(
            "delegate",
            "Hand a task to a crew lead agent, which works on this repository with its subagents and team \
             (each in its own git worktree) under the server's permissions. Returns the result (wait=true) or a task id.",
            json!({"type": "object", "properties": {
                "task": {"type": "string", "description": "What the crew lead should do."},
                "agents": {"type": "array", "items": {"type": "string"},
                           "description": "Agent types of this project the lead should use."},
                "wait": {"type": "boolean", "description": "Wait for the result (default false: return a task id)."}
            }, "required": ["task"]}),
            ToolAnnotations::new().read_only(false),
        ),
        tool(
            "task_status",
            "Status of a delegated task.",
            id_schema(json!({})),
            ro.clone(),
        ),
        tool(
            "task_output",
            "Result and log of a delegated task.",
            id_schema(
                json!({"wait": {"type": "boolean", "description": "Wait until the task has ended."}}),
            ),
            ro,
        ),
        tool(
            "task_stop",
            "Stop a delegated task.",
            id_schema(json!({})),
            ToolAnnotations::new().read_only(false),
        ),
    ]
}

fn delegate_request(args: &JsonObject) -> Result<DelegateRequest, DelegationError> {
    let task = args
        .get("task")
        .and_then(Value::as_str)
        .ok_or(DelegationError::NoTask)?;
    let agents = match args.get("agents") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or(DelegationError::BadAgents)?,
        Some(_) => return Err(DelegationError::BadAgents),
    };
    Ok(DelegateRequest {
        task: task.to_string(),
        agents,
    })
}

fn task_id(args: &JsonObject) -> Result<&str, DelegationError> {
    args.get("task_id")
        .and_then(Value::as_str)
        .ok_or(DelegationError::NoTaskId)
}

fn status_json(rec: &TaskRecord) -> Value {
    json!({
        "task_id": rec.id,
        "status": rec.status.as_str(),
        "description": rec.description,
        "result": rec.result,
        "tool_calls": rec.tool_calls,
        "last_activity": rec.last_activity,
    })
}

fn finished(rec: TaskRecord) -> CallToolResult {
    let text = format!(
        "task {} {}:\n{}",
        rec.id,
        rec.status.as_str(),
        rec.result.as_deref().unwrap_or("(no result)")
    );
    let ok = rec.status == crate::tasks::TaskStatus::Completed;
    let mut result = if ok {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(status_json(&rec));
    result
}

fn success(text: String, structured: Option<Value>) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = structured;
    result
}

fn error(e: DelegationError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(e.to_string())])
}
