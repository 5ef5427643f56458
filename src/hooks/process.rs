//! Running one hook command: `bash -c COMMAND` in the caller's directory, with the event's
//! JSON on stdin, as the leader of its own session and process group (the same builder and
//! group runner as `run_command`, `sandbox::process`). At its timeout, or when it exits
//! leaving children behind, the whole group is killed: nothing a hook starts outlives it.
//!
//! Hooks from the user's own settings run outside the command sandbox, as in Claude Code;
//! hooks that came with the project run in the sandbox the caller gives (the write
//! profile, like an agent's command: their command line may be `npm run lint`, whose files
//! no trust pin can list). Their environment is the commands' scrubbed one: provider
//! keys and secret-looking variables are withheld unless `commandEnv.passthrough` names
//! them (a hook from a cloned repository must not read the user's keys); Claude Code passes
//! the whole environment, which is the one difference. `CLAUDE_PROJECT_DIR` and
//! `CREW_PROJECT_DIR` name the project root, and `CLAUDE_PLUGIN_ROOT` a plugin's hook's
//! plugin directory.

use std::io::{Seek, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::protocol::HookRun;
use crate::sandbox::CommandSandbox;
use crate::sandbox::process::{ProcessError, run_command_in_group, shell_command};

/// The variables a hook gets besides the scrubbed environment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HookEnv<'a> {
    /// The project root (`CLAUDE_PROJECT_DIR`, `CREW_PROJECT_DIR`).
    pub(crate) project_dir: &'a Path,
    /// A plugin's hook's plugin directory (`CLAUDE_PLUGIN_ROOT`).
    pub(crate) plugin_root: Option<&'a Path>,
}

/// Runs `command` with `input` on stdin; never fails, a problem is a `HookRun::Failed`.
pub(crate) async fn run_hook(
    command: &str,
    cwd: &Path,
    env: HookEnv<'_>,
    timeout: Duration,
    input: &[u8],
    sandbox: &CommandSandbox,
    cancel: &CancellationToken,
) -> HookRun {
    // Stdin is an unlinked temporary file rather than a pipe: the hook may ignore it, and
    // the group runner then needs nothing besides the command.
    let stdin = match stdin_file(input) {
        Ok(f) => f,
        Err(e) => return HookRun::Failed(format!("could not prepare its input: {e}")),
    };
    let mut shell = match shell_command(command, cwd, sandbox) {
        Ok(s) => s,
        Err(e) => return HookRun::Failed(e.to_string()),
    };
    shell
        .cmd
        .stdin(Stdio::from(stdin))
        .env("CLAUDE_PROJECT_DIR", env.project_dir)
        .env("CREW_PROJECT_DIR", env.project_dir);
    if let Some(root) = env.plugin_root {
        shell.cmd.env(crate::plugins::ROOT_VARIABLE, root);
    }
    let ran = run_command_in_group(&mut shell.cmd, cwd, timeout, cancel).await;
    // A confined hook's protected-file snapshot is restored here; what it changed there
    // is reported with its output.
    let restored = shell.guard.finish();
    match ran {
        Ok(out) => match out.exit_code() {
            Some(code) => HookRun::Exited {
                code,
                stdout: out.stdout.text(),
                stderr: match &restored {
                    Some(note) => format!("{}{note}\n", out.stderr.text()),
                    None => out.stderr.text(),
                },
            },
            None => HookRun::Failed(format!(
                "was killed by signal {}",
                out.signal().map(|s| s.to_string()).unwrap_or("?".into())
            )),
        },
        Err(ProcessError::TimedOut { limit, pgid, .. }) => HookRun::Failed(format!(
            "did not finish within its timeout of {} s; its whole process group ({pgid}) was killed (raise `timeout` in its settings entry if it needs longer)",
            limit.as_secs_f64()
        )),
        Err(e) => HookRun::Failed(e.to_string()),
    }
}

fn stdin_file(input: &[u8]) -> std::io::Result<std::fs::File> {
    let mut f = tempfile::tempfile()?;
    f.write_all(input)?;
    f.rewind()?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_stdin_and_sees_the_project_and_plugin_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_hook(
            r#"read -r line; echo "$line|$CLAUDE_PROJECT_DIR|$CREW_PROJECT_DIR|${CLAUDE_PLUGIN_ROOT}"; echo err >&2; exit 2"#,
            dir.path(),
            HookEnv {
                project_dir: Path::new("/proj"),
                plugin_root: Some(Path::new("/plugins/kit")),
            },
            Duration::from_secs(30),
            b"{\"a\":1}\n",
            &CommandSandbox::None,
            &CancellationToken::new(),
        )
        .await;
        let HookRun::Exited {
            code,
            stdout,
            stderr,
        } = run
        else {
            panic!("{run:?}")
        };
        assert_eq!(code, 2);
        assert_eq!(stdout, "{\"a\":1}|/proj|/proj|/plugins/kit\n");
        assert_eq!(stderr, "err\n");
    }

    #[tokio::test]
    async fn a_missing_directory_is_a_failure_naming_it() {
        let run = run_hook(
            "true",
            Path::new("/no/such/crew/dir"),
            HookEnv {
                project_dir: Path::new("/"),
                plugin_root: None,
            },
            Duration::from_secs(30),
            b"",
            &CommandSandbox::None,
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(run, HookRun::Failed(m) if m.contains("/no/such/crew/dir")));
    }
}
