//! Claude Code's headless protocol, the one the Claude Agent SDKs speak: the message
//! schema of `--output-format stream-json`/`json` (`messages`, followed from the bus by
//! `printer`), and `--input-format stream-json` (`serve` below): user messages and the
//! SDK's control requests on standard input, one run of the lead per user message, and a
//! `result` after each. With `--permission-prompt-tool stdio` approval questions go to
//! the SDK's `can_use_tool` callback (`asks`) instead of being refused.
//!
//! End of input ends the input, not the session: the messages already read still run,
//! then crew exits. An approval asked once input has ended is refused (nobody can answer).

pub(crate) mod asks;
mod input;
pub(crate) mod messages;
pub(crate) mod printer;

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::time::Instant;

use anyhow::bail;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use self::input::{Control, Input};
use self::printer::{Emit, Printer};
use super::Cli;
use crate::agent::lead_actor::LeadMsg;
use crate::agent::mode::AgentMode;
use crate::agent::runner::{RunOutcome, RunRequest, RunStatus};
use crate::approver::ApprovalAnswer;
use crate::approver::actor::{ApproverPolicy, PendingApproval};
use crate::permission::PermissionMode;
use crate::session::SessionError;
use crate::session::build::{Prepared, prepare};

/// Writes one message a line; a closed pipe drops what cannot be written (the run goes
/// on, as with the other output formats).
struct Out(std::io::Stdout);

impl Out {
    fn line(&mut self, v: &Value) {
        let mut lock = self.0.lock();
        let _ = serde_json::to_writer(&mut lock, v);
        let _ = lock.write_all(b"\n");
        let _ = lock.flush();
    }
}

/// Who may answer approval questions.
fn approver_for(cli: &Cli) -> anyhow::Result<(ApproverPolicy, Option<Questions>)> {
    match cli.permission_prompt_tool.as_deref() {
        None => Ok((ApproverPolicy::Headless, None)),
        Some("stdio") => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            Ok((ApproverPolicy::Forward(tx), Some(rx)))
        }
        Some(other) => bail!(
            "--permission-prompt-tool {other}: crew asks the SDK over the control protocol only; \
             pass `stdio` (what the SDK's can_use_tool callback sets), or leave it out to refuse asks"
        ),
    }
}

type Questions = tokio::sync::mpsc::UnboundedReceiver<PendingApproval>;

/// Runs the session `--input-format stream-json` asks for; returns the exit code (1 when
/// the last run failed, was cancelled or was stopped by its budget).
pub(crate) async fn serve(cli: Cli) -> anyhow::Result<i32> {
    let mut mode = super::setup::agent_mode(&cli)?;
    let (approver, questions) = approver_for(&cli)?;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut out = Out(std::io::stdout());
    // The SDK's first line is its initialize request, which may carry agent definitions;
    // the session is assembled once it is read (a user message first is fine too).
    let mut first = Vec::new();
    let mut init_id = None;
    let mut opts = super::setup::options(&cli);
    while let Some(line) = lines.next_line().await.ok().flatten() {
        match input::parse(&line) {
            Ok(Input::Control {
                request_id,
                request: Control::Initialize { agents, hooks },
            }) => {
                if hooks {
                    // A hook the SDK registered is the caller's guard; running without it
                    // would fail open.
                    out.line(&messages::control_error(
                        &request_id,
                        "crew cannot call SDK hook callbacks back; configure the hooks in \
                         .claude/settings.json (crew runs Claude Code's command hooks) and \
                         leave `hooks` out of the options",
                    ));
                    return Ok(1);
                }
                if let Some(agents) = agents {
                    opts.agents_json = Some(merge_agents(opts.agents_json.as_deref(), agents)?);
                }
                init_id = Some(request_id);
                break;
            }
            Ok(other @ Input::User(_)) => {
                first.push(other);
                break;
            }
            Ok(_) => {}
            Err(e) => eprintln!("crew: standard input, line 1: {e}"),
        }
    }
    let prepared = prepare(&opts, approver, &mut |w| eprintln!("crew: {w}")).await?;
    let events = prepared.events.subscribe();
    let mut printer = Printer::new(&prepared.session_id, &prepared.model, emit_for(&cli));
    if let Some(id) = &init_id {
        out.line(&messages::control_success(
            id,
            initialize_response(&prepared),
        ));
    }
    out.line(&init_message(&prepared, mode).await);
    let mut state = Loop {
        queue: VecDeque::new(),
        input_open: true,
        asks: HashMap::new(),
        next_ask: 0,
        last: None,
        line_no: 1,
    };
    for input in first {
        state.act(input, &prepared, &mut mode, &mut out);
    }
    let code = state
        .run(
            &cli,
            &prepared,
            &mut mode,
            events,
            questions,
            lines,
            &mut printer,
            &mut out,
        )
        .await;
    prepared.close().await;
    Ok(code)
}

/// What the output printer emits for the flags given.
pub(crate) fn emit_for(cli: &Cli) -> Emit {
    if cli.include_partial_messages {
        Emit::MessagesAndDeltas
    } else {
        Emit::Messages
    }
}

/// `--agents` and the initialize request's `agents`, one JSON object (the request's win).
fn merge_agents(flag: Option<&str>, agents: Value) -> anyhow::Result<String> {
    let Value::Object(mut from_sdk) = agents else {
        bail!("the initialize request's `agents` is not an object of agent definitions");
    };
    if let Some(flag) = flag {
        let Ok(Value::Object(from_flag)) = serde_json::from_str::<Value>(flag) else {
            bail!("--agents is not a JSON object of agent definitions");
        };
        for (name, def) in from_flag {
            from_sdk.entry(name).or_insert(def);
        }
    }
    Ok(Value::Object(from_sdk).to_string())
}

/// The answer to `initialize`: the commands a user message may start with `/name`.
fn initialize_response(prepared: &Prepared) -> Value {
    let commands: Vec<Value> = prepared
        .commands
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "description": c.description,
                "argumentHint": c.argument_hint.clone().unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "commands": commands,
        "output_style": "default",
        "available_output_styles": ["default"],
        "models": [],
        "pid": std::process::id(),
    })
}

/// The `system` init message of `prepared`.
pub(crate) async fn init_message(prepared: &Prepared, mode: AgentMode) -> Value {
    let servers = prepared.mcp.statuses().await;
    let permission_mode = match mode {
        AgentMode::Plan => "plan",
        _ => prepared.permission_mode.as_str(),
    };
    let key = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
        .into_iter()
        .find(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
        .unwrap_or("none");
    let init = messages::Init {
        cwd: &prepared.cwd,
        tools: &prepared.tools,
        permission_mode,
        slash_commands: prepared.commands.names(),
        mcp_servers: servers.into_iter().map(|(c, _)| c.name).collect(),
        agents: prepared.agents.clone(),
        api_key_source: key,
    };
    let stamp = messages::Stamp {
        session_id: &prepared.session_id,
        model: &prepared.model,
    };
    messages::init(&stamp, &init)
}

/// The serve loop's state.
struct Loop {
    /// User messages waiting for the current run to end.
    queue: VecDeque<String>,
    /// Whether standard input may still bring lines.
    input_open: bool,
    /// Questions sent to the SDK, by request id.
    asks: HashMap<String, PendingApproval>,
    next_ask: u64,
    /// How the last run ended.
    last: Option<RunStatus>,
    line_no: u64,
}

type Lines = tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>;

impl Loop {
    /// Serves until input has ended and every message read has run.
    #[allow(
        clippy::too_many_arguments,
        reason = "the loop's parts are borrowed separately so that a run can borrow the session while the loop writes"
    )]
    async fn run(
        &mut self,
        cli: &Cli,
        prepared: &Prepared,
        mode: &mut AgentMode,
        mut events: tokio::sync::mpsc::UnboundedReceiver<crate::events::Event>,
        mut questions: Option<Questions>,
        mut lines: Lines,
        printer: &mut Printer,
        out: &mut Out,
    ) -> i32 {
        let mut running: Option<(Instant, BoxFuture<'_, Result<RunOutcome, SessionError>>)> = None;
        loop {
            if running.is_none() {
                match self.queue.pop_front() {
                    Some(task) => {
                        let request = RunRequest {
                            mode: *mode,
                            task,
                            plan: None,
                        };
                        let run = prepared.session.run_until_quiet(request, cli.max_turns);
                        running = Some((Instant::now(), Box::pin(run)));
                    }
                    None if !self.input_open => break,
                    None => {}
                }
            }
            tokio::select! {
                Some(event) = events.recv() => {
                    if let Some(v) = printer.on_event(&event) {
                        out.line(&v);
                    }
                }
                line = lines.next_line(), if self.input_open => match line {
                    Ok(Some(line)) => {
                        self.line_no += 1;
                        match input::parse(&line) {
                            Ok(input) => self.act(input, prepared, mode, out),
                            Err(e) => eprintln!("crew: standard input, line {}: {e}", self.line_no),
                        }
                    }
                    Ok(None) | Err(_) => self.end_of_input(),
                },
                Some(question) = next_question(&mut questions) => self.ask(question, out),
                outcome = finished(&mut running) => {
                    let started = running.take().map(|(t, _)| t).unwrap_or_else(Instant::now);
                    // The run's events were published before it replied: print them first.
                    while let Ok(event) = events.try_recv() {
                        if let Some(v) = printer.on_event(&event) {
                            out.line(&v);
                        }
                    }
                    let outcome = outcome.unwrap_or_else(|e| RunOutcome {
                        result: e.to_string(),
                        status: RunStatus::Failed,
                        usage: Default::default(),
                        turns: 0,
                        tool_calls: 0,
                    });
                    let (api_ms, denials) = printer.take_run();
                    let timing = messages::Timing {
                        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(0),
                        duration_api_ms: api_ms,
                    };
                    out.line(&messages::result(&printer.stamp(), &outcome, &timing, &denials));
                    self.last = Some(outcome.status);
                }
            }
        }
        match self.last {
            Some(RunStatus::BudgetExhausted | RunStatus::Cancelled | RunStatus::Failed) => 1,
            _ => 0,
        }
    }

    /// Acts on one line of input.
    fn act(&mut self, input: Input, prepared: &Prepared, mode: &mut AgentMode, out: &mut Out) {
        match input {
            Input::User(text) => self.queue.push_back(text),
            Input::Control {
                request_id,
                request,
            } => {
                let reply = control(request, prepared, mode);
                out.line(&match reply {
                    Ok(v) => messages::control_success(&request_id, v),
                    Err(e) => messages::control_error(&request_id, &e.to_string()),
                });
            }
            Input::Answer { request_id, answer } => match self.asks.remove(&request_id) {
                Some(question) => {
                    let (decision, interrupt) =
                        asks::answer(&question.request, answer.as_ref().map_err(String::as_str));
                    let _ = question.reply.send(decision);
                    if interrupt {
                        prepared.session.cancel();
                    }
                }
                None => eprintln!(
                    "crew: standard input: an answer to `{request_id}`, which crew did not ask"
                ),
            },
            Input::Ignored(_) => {}
        }
    }

    /// Input ended: nobody can answer the questions still out.
    fn end_of_input(&mut self) {
        self.input_open = false;
        for (_, question) in self.asks.drain() {
            let _ = question.reply.send(unanswerable());
        }
    }

    /// Sends `question` to the SDK's `can_use_tool` callback.
    fn ask(&mut self, question: PendingApproval, out: &mut Out) {
        if !self.input_open {
            let _ = question.reply.send(unanswerable());
            return;
        }
        self.next_ask += 1;
        let id = format!("crew-ask-{}", self.next_ask);
        out.line(&messages::control_request(
            &id,
            asks::can_use_tool(&question.request),
        ));
        self.asks.insert(id, question);
    }
}

fn unanswerable() -> ApprovalAnswer {
    ApprovalAnswer::Deny {
        message: Some(
            "the SDK closed crew's standard input, so nobody can answer this approval".into(),
        ),
    }
}

/// Why a control request got an error answer (its text is the answer's `error`).
#[derive(Debug, thiserror::Error)]
enum ControlError {
    /// A second `initialize`.
    #[error("the session is already initialized")]
    Initialized,
    /// A mode name crew does not know.
    #[error(transparent)]
    Mode(#[from] crate::protocol::permission_mode::UnknownMode),
    /// `bypassPermissions` where the settings disable it.
    #[error("bypassPermissions is disabled by permissions.disableBypassPermissionsMode")]
    BypassDisabled,
    /// A subtype crew does not serve.
    #[error(
        "crew does not support the control request `{0}` (it answers initialize, interrupt and set_permission_mode)"
    )]
    Unsupported(String),
}

/// Answers a control request other than initialize.
fn control(
    request: Control,
    prepared: &Prepared,
    mode: &mut AgentMode,
) -> Result<Value, ControlError> {
    match request {
        Control::Initialize { .. } => Err(ControlError::Initialized),
        Control::Interrupt => {
            prepared.session.cancel();
            Ok(json!({}))
        }
        Control::SetPermissionMode(name) if name == "plan" => {
            *mode = AgentMode::Plan;
            Ok(json!({"mode": "plan"}))
        }
        Control::SetPermissionMode(name) => {
            let permission: PermissionMode = name.parse()?;
            if permission == PermissionMode::BypassPermissions && prepared.bypass_disabled {
                return Err(ControlError::BypassDisabled);
            }
            let _ = prepared
                .session
                .lead()
                .cast(LeadMsg::SetPermissionMode(permission));
            if *mode == AgentMode::Plan {
                *mode = AgentMode::Chat;
            }
            Ok(json!({"mode": permission.as_str()}))
        }
        Control::Other(subtype) => Err(ControlError::Unsupported(subtype)),
    }
}

/// The next approval question, if questions are forwarded at all.
async fn next_question(questions: &mut Option<Questions>) -> Option<PendingApproval> {
    match questions {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The current run's outcome once it ends (never, while none runs).
async fn finished(
    running: &mut Option<(Instant, BoxFuture<'_, Result<RunOutcome, SessionError>>)>,
) -> Result<RunOutcome, SessionError> {
    match running {
        Some((_, run)) => run.await,
        None => std::future::pending().await,
    }
}
