"""A program written against the official Claude Agent SDK for Python, pointed at crew.

tests/suite/claude_agent_sdk.rs runs it with the SDK's venv python:

    agent_sdk_client.py SCENARIO CREW_PATH CWD MODEL

and reads what it prints: one JSON object a line, {"message": <type>, ...} for each
message the SDK parsed, {"callback": ...} for each can_use_tool call, and {"error": ...}
if the SDK raised. Scenarios:

  query        query() with a string prompt (stdin closes after it)
  client       a ClaudeSDKClient conversation: two prompts, one session, then
               set_permission_mode("acceptEdits") and a third prompt
  deny         query() with a can_use_tool callback that denies every call
  allow        query() with a can_use_tool callback that allows every call
"""

import json
import sys

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)
from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny


def emit(obj):
    print(json.dumps(obj), flush=True)


def report(message):
    """Prints what the SDK made of one message."""
    if isinstance(message, SystemMessage):
        emit({"message": "system", "subtype": message.subtype,
              "session_id": message.data.get("session_id")})
    elif isinstance(message, AssistantMessage):
        blocks = []
        for b in message.content:
            if isinstance(b, TextBlock):
                blocks.append({"text": b.text})
            elif isinstance(b, ToolUseBlock):
                blocks.append({"tool_use": b.name, "input": b.input})
        emit({"message": "assistant", "model": message.model, "blocks": blocks})
    elif isinstance(message, UserMessage):
        results = [
            {"tool_use_id": b.tool_use_id, "is_error": bool(b.is_error), "content": b.content}
            for b in (message.content if isinstance(message.content, list) else [])
            if isinstance(b, ToolResultBlock)
        ]
        emit({"message": "user", "results": results})
    elif isinstance(message, ResultMessage):
        emit({"message": "result", "subtype": message.subtype, "is_error": message.is_error,
              "result": message.result, "num_turns": message.num_turns,
              "session_id": message.session_id, "duration_api_ms": message.duration_api_ms,
              "total_cost_usd": message.total_cost_usd,
              "permission_denials": message.permission_denials})


async def deny(tool_name, tool_input, context):
    emit({"callback": tool_name, "input": tool_input})
    return PermissionResultDeny(message="the SDK test denies every tool call")


async def allow(tool_name, tool_input, context):
    emit({"callback": tool_name, "input": tool_input})
    return PermissionResultAllow()


async def one_prompt(text):
    # can_use_tool needs the streaming form of the prompt.
    yield {"type": "user", "message": {"role": "user", "content": text},
           "parent_tool_use_id": None, "session_id": ""}


async def main(scenario, crew, cwd, model):
    options = ClaudeAgentOptions(cli_path=crew, cwd=cwd, model=model, max_turns=8)
    if scenario == "query":
        async for m in query(prompt="say hello", options=options):
            report(m)
    elif scenario in ("deny", "allow"):
        options.can_use_tool = deny if scenario == "deny" else allow
        async for m in query(prompt=one_prompt("write out.txt"), options=options):
            report(m)
    elif scenario == "client":
        async with ClaudeSDKClient(options=options) as client:
            for prompt in ["first question", "second question"]:
                await client.query(prompt)
                async for m in client.receive_response():
                    report(m)
            await client.set_permission_mode("acceptEdits")
            await client.query("now write out.txt")
            async for m in client.receive_response():
                report(m)
    else:
        raise SystemExit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    try:
        anyio.run(main, *sys.argv[1:5])
    except Exception as e:  # the test reads the failure, not a traceback
        emit({"error": f"{type(e).__name__}: {e}"})
        sys.exit(1)
