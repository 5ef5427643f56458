//! `crew` itself killed with SIGKILL: no command, hook, task, MCP server or confined
//! subagent command it started is left running.

use super::*;

/// The process group of live process `pid`, from `/proc`.
fn pgid_of(pid: u32) -> u32 {
    support::faults::processes()
        .into_iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("process {pid} is not running"))
        .pgid
}

/// The pid a command wrote to `file` (waited for, bounded).
fn pid_in(file: &Path) -> u32 {
    let read = || {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
    };
    support::wait_until_blocking(&format!("{} to hold a pid", file.display()), || {
        read().is_some()
    });
    read().unwrap()
}

/// A `sleep` length unique to the process `name` of a scenario.
fn marker(name: &str) -> String {
    let n: usize = name.bytes().map(usize::from).sum::<usize>() + 1000 * name.len();
    format!("1000.{n}")
}

/// The host pid of the live `sleep MARKER` process (waited for, bounded).
fn host_pid_of(marker: &str) -> u32 {
    let cmdline = format!("sleep {marker}");
    let find = || {
        support::faults::processes()
            .into_iter()
            .find(|p| p.cmdline.trim_end() == cmdline)
            .map(|p| p.pid)
    };
    support::wait_until_blocking(&format!("`{cmdline}` to run"), || find().is_some());
    find().unwrap()
}

#[test]
fn sigkill_of_crew_leaves_no_command_hook_task_or_server_behind() {
    // Each command starts `sleep 1000` in its group, writes its pid, and waits for it.
    // The pid a command writes is its own namespace's when it runs in a PID namespace (a
    // sandboxed command does), so the test finds each sleeper on the host by its marker
    // argument (`sleep 1000.N`), once the pid file says it started.
    let sleeper = |name: &str| {
        format!(
            ": orphan-{name}-3b7e; sleep {} & echo $! > {name}.pid; wait",
            marker(name)
        )
    };
    // Or one that leaves the group and the session (`setsid -f`), with its pid written
    // after it left, while the command's shell sleeps in the group.
    let escaper = |name: &str| {
        format!(
            ": orphan-{name}-3b7e; setsid -f sh -c 'echo $$ > {name}.tmp; mv {name}.tmp {name}.pid; exec sleep {}'; sleep 1000",
            marker(name)
        )
    };
    let command = |id: &str, background: bool| {
        let run = if id.starts_with("esc") {
            escaper(id)
        } else {
            sleeper(id)
        };
        json!({"text": id, "tool_calls": [{"name": "run_command", "id": id, "input": {
            "command": run, "run_in_background": background}}]})
    };
    // Each scenario: the script, what is running when crew is killed (by the files
    // their pids are in), and whether a tool call is in flight then.
    struct Scenario {
        name: &'static str,
        script: Value,
        running: &'static [&'static str],
        call_in_flight: bool,
    }
    let scenarios = [
        // A background task, then a foreground command, both running.
        Scenario {
            name: "command and task",
            script: json!({"turns": [command("bg", true), command("fg", false), {"text": "never"}]}),
            running: &["bg", "fg"],
            call_in_flight: true,
        },
        // The same with processes that escaped the command's group and session.
        Scenario {
            name: "escaped from command and task",
            script: json!({"turns": [command("escbg", true), command("escfg", false), {"text": "never"}]}),
            running: &["escbg", "escfg"],
            call_in_flight: true,
        },
        // A PreToolUse hook running.
        Scenario {
            name: "hook",
            script: json!({"turns": [read_turn("read", "a.txt"), {"text": "never"}]}),
            running: &["hook"],
            call_in_flight: true,
        },
        // An MCP stdio server (one that never answers the handshake) running.
        Scenario {
            name: "MCP server",
            script: json!({"turns": [{"text": "never"}]}),
            running: &["mcp"],
            call_in_flight: false,
        },
    ];
    for s in scenarios {
        let p = place();
        support::put(&p.dir, "a.txt", "alpha\n");
        if s.running.contains(&"hook") {
            let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
                {"type": "command", "command": sleeper("hook")}]}]}});
            support::put(&p.home, ".crew/settings.json", &settings.to_string());
        }
        let mut crew = crew_command(&p, "go", &s.script, "bypassPermissions", &[]);
        if s.running.contains(&"mcp") {
            let config = p.home.join("mcp.json");
            let servers =
                json!({"mcpServers": {"t": {"command": "bash", "args": ["-c", sleeper("mcp")]}}});
            std::fs::write(&config, servers.to_string()).unwrap();
            crew.arg("--mcp-config").arg(&config);
        }
        let mut child = crew.spawn().unwrap();
        let scenario = s.name;

        let pids: Vec<u32> = s
            .running
            .iter()
            .map(|f| {
                pid_in(&p.dir.join(format!("{f}.pid")));
                host_pid_of(&marker(f))
            })
            .collect();
        let groups: Vec<u32> = pids.iter().map(|pid| pgid_of(*pid)).collect();
        for (pid, g) in pids.iter().zip(&groups) {
            // An escaped process leads its own group: no group kill could reach it.
            let escaped = pid == g;
            assert_eq!(
                escaped,
                scenario.starts_with("escaped"),
                "{scenario}: {pid} in {g}"
            );
        }
        for g in &groups {
            assert!(
                !support::faults::group_members(*g).is_empty(),
                "{scenario}: group {g}"
            );
        }

        // SIGKILL: crew can clean nothing up itself.
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{scenario}");

        // No command, task, hook or server, nor anything in their groups, is left.
        for g in &groups {
            support::faults::assert_no_orphans(*g);
        }
        for pid in &pids {
            assert!(
                !support::faults::processes().iter().any(|q| q.pid == *pid),
                "{scenario}: sleep {pid} outlived crew"
            );
        }
        support::faults::assert_no_process_under(&p.root);
        support::faults::assert_no_work_lost(&p.dir, &[]);
        if !s.call_in_flight {
            continue;
        }
        // The transcript is whole up to the kill, the call in flight recorded.
        let lines: Vec<Value> = support::faults::transcript_files(&p.home)
            .iter()
            .flat_map(|f| support::faults::assert_transcript_whole_but_cut(f))
            .collect();
        assert!(
            lines.iter().any(|l| l["type"] == "tool_call_started"),
            "{scenario}: the call in flight was recorded before it ran"
        );
        // The user sees what happened: resuming closes the killed call as interrupted.
        let again = p.home.join("again.json");
        std::fs::write(&again, r#"{"turns":[{"text":"resumed"}]}"#).unwrap();
        let requests = p.home.join("again.jsonl");
        let out = support::crew(
            &p.dir,
            &p.home,
            &[
                "--continue",
                "-p",
                "again",
                "--model",
                &format!("script:{}", again.display()),
                "--record-requests",
                &requests.display().to_string(),
            ],
        );
        assert!(out.status.success(), "{scenario}: {}", stderr(&out));
        let seen = std::fs::read_to_string(&requests).unwrap();
        assert!(seen.contains("interrupted"), "{scenario}: {seen}");
    }
}

#[test]
fn sigkill_of_crew_leaves_no_confined_subagent_command_behind() {
    // A subagent's command runs confined (Landlock, mount and PID namespaces) in its
    // worktree: the guardian, the namespace's intermediate and the shell inside.
    let p = place();
    support::put(
        &p.dir,
        ".crew/agents/w.md",
        "---\nname: w\ndescription: worker\nisolation: worktree\ntools: run_command\n---\nWork.\n",
    );
    support::git(&p.dir, &["add", "."]);
    support::git(&p.dir, &["commit", "-qm", "agent"]);
    let script = json!({"turns": [
        {"tool_calls": [{"name": "agent", "id": "sub", "input": {"description": "worker", "prompt": "p", "subagent_type": "w"}}]},
        {"text": "never"}],
      "agents": {"w": {"turns": [
        {"tool_calls": [{"name": "run_command", "id": "wait", "input": {"command": ": orphan-sub-3b7e; sleep 1000 & wait"}}]},
        {"text": "never"}]}}});
    let mut child = crew_command(&p, "go", &script, "bypassPermissions", &[])
        .spawn()
        .unwrap();
    let marked = || -> Vec<u32> {
        support::faults::processes()
            .into_iter()
            .filter(|q| q.cmdline.contains("orphan-sub-3b7e"))
            .map(|q| q.pgid)
            .collect()
    };
    support::wait_until_blocking("the subagent's command to start", || {
        marked()
            .iter()
            .any(|g| support::faults::group_members(*g).len() >= 2)
    });
    let groups = marked();
    child.kill().unwrap();
    let _ = child.wait_with_output().unwrap();
    for g in groups {
        support::faults::assert_no_orphans(g);
    }
    support::faults::assert_no_process_with("orphan-sub-3b7e");
    support::faults::assert_no_process_under(&p.root);
    support::faults::assert_no_work_lost(&p.dir, &[]);
}
