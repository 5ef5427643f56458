//! crewmaster (`crew`): an actor-based multi-agent coding orchestrator.
//!
//! A tool call's one path: agent → hooks (PreToolUse) → permission engine → (approver) →
//! gate → executor → hooks (PostToolUse); a command then runs in the OS sandbox profile
//! its decision chose. `docs/architecture.md` draws the actors and states the invariants.
//!
//! # Module layout
//!
//! Every top-level module, one line each, grouped by layer from the plain types up to the
//! front ends: the direction imports are meant to run. The layers that are member crates
//! (`crates/`: the protocol, the settings values, the permission decision, the OS sandbox,
//! the providers) cannot import upward at all; inside this crate the cuts that hold are
//! checked by `layering_tests`. The `module_layout` test at the end of this file fails when a module is
//! missing here or a name listed here is no longer a module.
//!
//! ## Protocol and types
//!
//! - [`protocol`] — the `crew-protocol` crate: messages, tool calls and results, usage,
//!   the tool contract's `ToolSpec`, agent mode (types only).
//! - [`events`] — the typed event stream every front end, test and transcript subscribes to.
//! - [`envelope`] — the tags crew wraps text in for the model, and their escaping.
//! - [`front_matter`] — YAML front matter and tool lists of agent, skill and command files.
//! - [`pricing`] — list prices of known models, for costs and budgets.
//! - [`sanitize`] — the one sanitizer for text drawn on a terminal.
//!
//! ## Policy: what may run
//!
//! - [`config`] — the settings files (user, project, local) read and parsed:
//!   rules, sandbox and network settings, limits, which files git tracks.
//! - [`classifier`] — auto mode's classifier: the model call that judges what would ask,
//!   its fail-closed parse, and the only `ClassifierAllow` (below the engine, which takes it).
//! - [`permission`] — the `crew-policy` crate, the permission decision, pure: hard checks,
//!   rule layers, modes, auto mode's rule suspension, grants, the sandbox profile a
//!   decision chooses; and the `Permit`, minted only here.
//! - [`engine`] — the `PermissionEngine` actor that holds the policy and hands out the
//!   decisions of [`permission`], and the hand-off of an allowed call to the gate.
//! - [`auto_mode`] — auto mode in a session: the classifier's use, its circuit breaker and
//!   tally.
//! - [`trust`] — folder trust and the content pins of a project's executable configuration.
//! - [`approver`] — turning an Ask into a human's answer (TUI or headless) and the `Approval`.
//! - [`gate`] — the Safety/Names gate: per-agent policy, Plan Mode, the only `ClearedCall`.
//!
//! ## Sandbox
//!
//! - [`sandbox`] — the `crew-sandbox` crate, the OS sandbox: profiles, Landlock (`sandbox::landlock`), mount/PID/network
//!   namespaces, hidden paths, the network proxy, protected-file snapshot and restore,
//!   resource limits, and the processes it confines (`sandbox::process`: process groups, the
//!   guardian subreaper, crew's lifeline), and the disk budget of kept tool results.
//! - `tools::beneath` — `openat2(RESOLVE_BENEATH)` opening for the file tools.
//!
//! ## Tools and their execution
//!
//! - [`tools`] — the tool contract (`Definition`, `ToolContext`), the registry, one file per tool.
//! - [`executor`] — runs cleared calls: validation, timeout, panic guard, offloading.
//! - [`offload`] — large results saved to the session's results directory; micro-compaction.
//! - [`hooks`] — Claude Code-format hooks: configuration, matching, running, their opinions.
//! - [`mcp`] — the MCP client: one actor per server, its tools as crew tools.
//! - [`skills`] — `SKILL.md` discovery and the `skill` tool.
//! - [`commands`] — custom slash commands: discovery, expansion, their calls run as the lead.
//! - [`plugins`] — Claude Code's plugins (`--plugin-dir`, enabled installed ones): manifests,
//!   discovery, and the confinement of their files to their directory.
//! - [`memory`] — `CLAUDE.md`/`AGENTS.md`/`CREW.md` discovery, imports, bounded reading.
//!
//! ## Agents and orchestration
//!
//! - [`provider`] — the `crew-provider` crate: the model interface, Anthropic, OpenAI, the
//!   scripted model and the demo, micro-compaction of old results.
//! - [`agent`] — Agent Mode and prompts, the call pipeline, the ReAct runner, lead,
//!   subagents, teammates, forks, context compaction, agent definitions.
//! - [`speculation`] — running the user's likely next prompt ahead in a copy-on-write overlay.
//! - [`tasks`] — background tasks: records on disk and the `TaskManager` actor.
//! - [`team`] — teams on disk: roster, durable inboxes, the shared work list, the watcher.
//! - [`worktree`] — git worktrees for subagents (overlay workspaces over a shared base where
//!   the kernel allows), crew's own hardened git, the manager actor.
//! - [`worker`] — worker machines over `ractor_cluster`: remote subagents and teammates, TLS.
//! - [`session`] — the root supervisor, its service actors and their restart from last good
//!   state (`session::services`), and `SessionHandle`; `session::build` assembles a lead's
//!   session (settings, model, tools, MCP servers, workers, transcript) for the CLI, the
//!   TUI and `mcp serve`.
//! - [`supervise`] — restartable `Slot`s, restart budgets and storms, test faults: the
//!   plumbing every actor uses, importing none of them.
//! - [`store`] — where state lives under `~/.crew` (projects, sessions).
//! - [`transcript`] — session transcripts: record, load, resume.
//!
//! ## Front ends
//!
//! - [`cli`] — clap arguments, the headless run, output formats, the subcommands: the top
//!   of the crate, which nothing else imports.
//! - [`tui`] — the interactive terminal UI: one component per file, app state, event loop.
//! - [`mcp_serve`] — `crew mcp serve`: crew as an MCP server whose tools run crew sessions.
//! - [`dashboard`] — the web dashboard: every live session in the browser, through their
//!   control sockets; token, Host, Origin and CSRF checks; the embedded page.
//!
//! ## Test support
//!
//! - `layering_tests` — the member crates' manifests: none depends on the root package,
//!   `crew-protocol` only on plain-data crates, `crew-provider` on nothing of the engine,
//!   `crew-policy` on no runtime or actor, `crew-sandbox` on no actor or model; and the
//!   import arrows inside this crate already cut stay cut.

// `pub(crate)` by default: the public face is only what the `crew` binary, the integration
// tests and the examples name; a `pub` item nothing outside can reach is flagged (and
// `.ci/run` denies warnings).
#![warn(unreachable_pub)]

pub mod agent;
pub mod approver;
pub mod auto_mode;
pub mod classifier;
pub mod cli;
pub(crate) mod commands;
pub(crate) mod config;
pub mod dashboard;
pub mod engine;
pub(crate) mod envelope;
pub mod events;
pub mod executor;
pub(crate) mod front_matter;
pub mod gate;
pub mod hooks;
#[cfg(test)]
mod layering_tests;
pub mod mcp;
pub(crate) mod mcp_serve;
pub mod memory;
pub mod offload;
pub mod permission;
pub(crate) mod plugins;
pub(crate) mod pricing;
pub use crew_protocol as protocol;
pub use crew_provider as provider;
pub use crew_sandbox as sandbox;
pub(crate) mod sanitize;
pub mod session;
pub mod skills;
pub mod speculation;
pub mod store;
pub mod supervise;
pub mod tasks;
pub mod team;
pub mod tools;
pub mod transcript;
pub mod trust;
pub mod tui;
pub mod worker;
pub mod worktree;

/// The layout in this file's `//!` docs names every top-level module, and nothing else.
#[cfg(test)]
mod module_layout {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// The modules `src/lib.rs` declares: `mod x;`, `pub mod x;`, `pub(crate) mod x;`, and
    /// member crates re-exported as `pub use crew_x as x;`.
    fn declared(source: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for line in source.lines().map(str::trim) {
            let rest = line
                .strip_prefix("pub ")
                .or_else(|| line.strip_prefix("pub(crate) "))
                .unwrap_or(line);
            if let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                names.insert(name.trim().to_string());
            } else if let Some(reexport) =
                rest.strip_prefix("use ").and_then(|r| r.strip_suffix(';'))
            {
                if let Some((krate, name)) = reexport.split_once(" as ") {
                    if krate.trim().starts_with("crew_") {
                        names.insert(name.trim().to_string());
                    }
                }
            }
        }
        names
    }

    /// The names the `//!` layout lists: each item `//! - [`x`] — …` or `//! - `x` — …`.
    fn listed(source: &str) -> Vec<String> {
        source
            .lines()
            .filter_map(|l| l.strip_prefix("//! - "))
            .filter_map(|item| {
                let item = item.strip_prefix('[').unwrap_or(item);
                let item = item.strip_prefix('`')?;
                Some(item[..item.find('`')?].to_string())
            })
            .collect()
    }

    /// Whether a nested module named in the layout (`sandbox::landlock`) exists as a file.
    /// A module of a member crate re-exported under its own name (`sandbox::landlock`
    /// is `crates/crew-sandbox/src/landlock.rs`) counts too.
    fn nested_exists(root: &Path, path: &str) -> bool {
        let rel = path.replace("::", "/");
        let (first, rest) = rel.split_once('/').unwrap_or((&rel, ""));
        [
            root.join(format!("src/{rel}")),
            root.join(format!("crates/crew-{first}/src/{rest}")),
        ]
        .iter()
        .any(|p| p.with_extension("rs").is_file() || p.join("mod.rs").is_file())
    }

    /// Compares the two lists and names every difference.
    fn problems(root: &Path, source: &str) -> Vec<String> {
        let declared = declared(source);
        let listed = listed(source);
        let mut out = Vec::new();
        for name in &declared {
            if !listed.iter().any(|l| l == name) {
                out.push(format!(
                    "src/lib.rs declares module `{name}` but its //! layout does not list it: add a line `//! - [`{name}`] — what it is for.` under its layer"
                ));
            }
        }
        let mut seen = BTreeSet::new();
        for name in &listed {
            if !seen.insert(name) {
                out.push(format!("the //! layout lists `{name}` twice"));
            } else if name.contains("::") {
                if !nested_exists(root, name) {
                    out.push(format!("the //! layout lists `{name}`, but src/ has no such module file: remove or rename the line"));
                }
            } else if !declared.contains(name) {
                out.push(format!("the //! layout lists `{name}`, which src/lib.rs no longer declares: remove or rename the line"));
            }
        }
        out
    }

    #[test]
    fn every_top_level_module_is_in_the_layout_and_every_listed_name_is_a_module() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        assert!(
            declared(&source).len() > 20,
            "found too few module declarations in src/lib.rs"
        );
        let problems = problems(root, &source);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn a_missing_line_an_extra_line_and_a_new_crate_are_each_named() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        let without = source.replace("//! - [`gate`]", "//! gate");
        let found = problems(root, &without);
        assert!(
            found.iter().any(|p| p.contains("module `gate`")),
            "{found:?}"
        );

        let extra = source.replacen(
            "//! ## Front ends",
            "//! - [`gone`] — removed.\n//! - `tools::gone` — removed.\n//! ## Front ends",
            1,
        );
        let found = problems(root, &extra);
        assert!(
            found.iter().any(|p| p.contains("`gone`, which")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|p| p.contains("`tools::gone`")),
            "{found:?}"
        );

        let reexport = format!("{source}\npub use crew_policy as policy;\n");
        let found = problems(root, &reexport);
        assert!(
            found.iter().any(|p| p.contains("module `policy`")),
            "{found:?}"
        );
    }
}
