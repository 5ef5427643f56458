//! The integration tests that can share one process, one module per former test file
//! (its name kept, so `cargo test --test suite sandbox_os::` runs one file's tests).
//! They share `tests/support` once. Tests that change process-wide state another test
//! would see (the sandbox's network policy, the network asker) keep binaries of their own:
//! see `tests/README.md`. [`layout`] checks that every test file is part of a binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a test binary: a failed unwrap is a failed test"
)]

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod layout;

mod agent_controls;
mod agent_fork;
mod agent_limits;
mod agent_resume;
mod auto_llama;
mod auto_mode;
mod claude_agent_sdk;
mod claude_code_differential;
mod claude_code_stream;
mod claude_corpus;
mod cli;
mod cli_claude_flags;
mod cli_providers;
mod cli_stream_json;
mod compaction;
mod confinement;
mod dashboard;
mod dashboard_browser;
mod delegation;
mod denied_oracles;
mod docs_links;
mod durability;
mod envelopes;
mod escaped_processes;
mod fault_helpers;
mod fault_matrix;
mod file_tool_races;
mod hooks;
mod hooks_agents;
mod lead_model;
mod live_sessions;
mod long_runs;
mod mcp_client;
mod mcp_peers;
mod mcp_serve;
mod mcp_serve_auth;
mod memory;
mod overlay_workspaces;
mod own_git;
mod permission_blacklist_prop;
mod permission_check;
mod permission_cli;
mod permission_commands;
mod permission_deny_prop;
mod permission_expand;
mod permission_expand_cli;
mod permission_grants;
mod permission_protected;
mod permission_sandbox_prop;
mod permission_settings;
mod permission_writes;
mod permission_writes_e2e;
mod pipeline;
mod programs_run_programs;
mod provider_anthropic;
mod provider_openai;
mod redteam;
mod resource_caps;
mod resume;
mod sandbox_hidden;
mod sandbox_os;
mod sandbox_pid_ns;
mod sandbox_profiles;
mod sandbox_settings_e2e;
mod sandbox_worktree;
mod session_projects;
mod skills;
mod slash;
mod speculation;
mod subagent_semantics;
mod subagents;
mod tasks_cli;
mod team_cli;
mod team_continue;
mod team_load;
mod team_restore;
mod team_store;
mod team_tools;
mod teammate_runs;
mod teammates;
mod tool_search;
mod tools_files;
mod tools_run_command;
mod tools_search;
mod transcript_durability;
mod trust;
mod trust_pin;
mod tui;
mod tui_terminal;
mod typed_path;
mod walk_filter;
mod web_fetch;
mod workers;
mod workers_team;
mod worktree_cli;
mod worktree_concurrent;
mod worktree_lifecycle;
mod worktree_reconcile;
mod worktree_subagents;
