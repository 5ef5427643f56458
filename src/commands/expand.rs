//! Turning `/name args` into the first user message of a turn. In order:
//! 1. each `` !`cmd` `` in the body runs as a `run_command` call of the lead, through
//!    the whole call path (permission engine → gate → executor: a denied command does
//!    not run, and its refusal is what gets inlined), on the text as written — the
//!    arguments are never spliced into a shell command;
//! 2. `$ARGUMENTS`, `$1`… are substituted in the rest of the body (command output is
//!    inlined as it is, never substituted or scanned for `@`);
//! 3. each `@path` naming an existing file is read with a `read_file` call of the lead
//!    (so Read deny rules and the credential check apply) and appended.
//!
//! The calls go through a [`CallRunner`], so this module stays free of actors.

use std::path::Path;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::SlashCommand;
use crate::gate::{LimitOwner, NameLimit};
use crate::protocol::ToolResult;

/// Runs one tool call as the lead, through the permission engine, gate and executor.
#[async_trait]
pub(crate) trait CallRunner: Send + Sync {
    /// Runs `tool` with `input`; a refusal comes back as an error result.
    async fn run(&self, tool: &str, input: Value) -> ToolResult;
}

/// An invocation, `/name args`, when `text` is one: the name must be a command name
/// (`/etc/hosts is slow` is not an invocation, it is text).
pub(crate) fn invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    crate::skills::valid_name(name).then(|| (name, args.trim()))
}

/// A command ready to run: the first user message and what applies to its turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expanded {
    /// The first user message.
    pub text: String,
    /// The command's `allowed-tools` for the turn (`None`: it does not narrow).
    pub limit: Option<NameLimit>,
    /// The command's `model` for the turn.
    pub model: Option<String>,
}

/// The command's limit, if its front matter sets `allowed-tools`.
pub(crate) fn limit(cmd: &SlashCommand) -> Option<NameLimit> {
    cmd.allowed_tools.as_ref().map(|names| NameLimit {
        owner: LimitOwner::Command(cmd.name.clone()),
        names: Some(names.iter().cloned().collect()),
    })
}

/// Expands `cmd` invoked with `args`; `cwd` and `home` locate `@path` files. The
/// caller has put the command's limit in force before (so `!` commands obey it too).
pub(crate) async fn expand(
    cmd: &SlashCommand,
    args: &str,
    cwd: &Path,
    home: Option<&Path>,
    runner: &dyn CallRunner,
) -> Expanded {
    let mut text = String::new();
    let mut files: Vec<String> = Vec::new();
    for piece in pieces(&cmd.body) {
        match piece {
            Piece::Text(t) => {
                let t = substitute(t, args);
                for f in file_refs(&t) {
                    if !files.contains(&f) {
                        files.push(f);
                    }
                }
                text.push_str(&t);
            }
            Piece::Shell(command) => {
                let result = runner
                    .run("run_command", json!({ "command": command }))
                    .await;
                text.push_str(result.content.trim_end());
            }
        }
    }
    if !cmd.body.contains("$ARGUMENTS") && !has_positional(&cmd.body) && !args.is_empty() {
        // As Claude Code does: arguments the template does not place are appended.
        text.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    for f in files {
        if !exists(&f, cwd, home) {
            continue;
        }
        let result = runner.run("read_file", json!({ "path": f })).await;
        if result.is_error {
            text.push_str(&format!("\n\n(@{f} was not included: {})", result.content));
        } else {
            text.push_str(&format!(
                "\n\n<file path=\"{f}\">\n{}\n</file>",
                result.content.trim_end()
            ));
        }
    }
    Expanded {
        text,
        limit: limit(cmd),
        model: cmd.model.clone(),
    }
}

fn exists(path: &str, cwd: &Path, home: Option<&Path>) -> bool {
    let p = match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(path),
    };
    p.is_file()
}

/// A part of a command body.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    /// The command of a `` !`cmd` ``.
    Shell(&'a str),
}

fn pieces(body: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("!`") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('`') else { break };
        let command = &after[..end];
        if command.trim().is_empty() || command.contains('\n') {
            out.push(Piece::Text(&rest[..start + 2]));
            rest = after;
            continue;
        }
        out.push(Piece::Text(&rest[..start]));
        out.push(Piece::Shell(command.trim()));
        rest = &after[end + 1..];
    }
    out.push(Piece::Text(rest));
    out
}

fn has_positional(body: &str) -> bool {
    body.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'$' && w[1].is_ascii_digit() && w[1] != b'0')
}

/// The arguments split as a shell would split plain words (`"two words"` is one).
pub(crate) fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for ch in args.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Substitutes `$ARGUMENTS` (all of `args`) and `$1`, `$2`… (its words; missing ones
/// are empty). Other `$` text is left alone.
pub(crate) fn substitute(text: &str, args: &str) -> String {
    let words = split_args(args);
    let mut out = String::with_capacity(text.len() + args.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            rest = tail;
            continue;
        }
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) if n > 0 => {
                out.push_str(words.get(n - 1).map_or("", String::as_str));
                rest = &after[digits..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The `@path` references in `text`: an `@` at the start or after white space or `(`,
/// followed by a path (trailing punctuation dropped). `user@example.com` is not one.
pub(crate) fn file_refs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    for (i, ch) in text.char_indices() {
        if ch == '@' && prev.is_none_or(|p| p.is_whitespace() || p == '(') {
            let tail = &text[i + 1..];
            let end = tail
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ')' | '<' | '>')
                })
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
            if !path.is_empty() && !out.iter().any(|p| p == path) {
                out.push(path.to_string());
            }
        }
        prev = Some(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn invocations_are_command_names_not_paths() {
        assert_eq!(
            invocation("/review src/main.rs"),
            Some(("review", "src/main.rs"))
        );
        assert_eq!(
            invocation("  /frontend:test  "),
            Some(("frontend:test", ""))
        );
        assert_eq!(invocation("/etc/hosts is slow"), None);
        assert_eq!(invocation("fix /review"), None);
        assert_eq!(invocation("/"), None);
    }

    #[test]
    fn substitutes_arguments_and_positions() {
        assert_eq!(substitute("Review $ARGUMENTS now", "a b"), "Review a b now");
        assert_eq!(
            substitute("PR $1 by $2, $3; cost $ and $0 $10", "42 \"Ann Lee\""),
            "PR 42 by Ann Lee, ; cost $ and $0 "
        );
        assert_eq!(split_args("a  'b c' \"\" d"), ["a", "b c", "", "d"]);
    }

    #[test]
    fn finds_file_references_and_shell_snippets() {
        assert_eq!(
            file_refs("See @src/main.rs, (@a.md) and mail me@x.org or @~/notes.txt."),
            ["src/main.rs", "a.md", "~/notes.txt"]
        );
        assert_eq!(
            pieces("Status: !`git status`\nBad: !` ` and !`x"),
            [
                Piece::Text("Status: "),
                Piece::Shell("git status"),
                Piece::Text("\nBad: !`"),
                Piece::Text(" ` and !`x"),
            ]
        );
    }

    struct Recorder(Mutex<Vec<(String, Value)>>);

    #[async_trait]
    impl CallRunner for Recorder {
        async fn run(&self, tool: &str, input: Value) -> ToolResult {
            self.0.lock().unwrap().push((tool.into(), input.clone()));
            match tool {
                "run_command" => ToolResult::ok("c", "M src/main.rs $1 @secret.txt"),
                _ if input["path"] == "denied.txt" => {
                    ToolResult::error("c", "permission_denied", "Read(denied.txt) is denied")
                }
                _ => ToolResult::ok("c", "     1\tfn main() {}"),
            }
        }
    }

    #[tokio::test]
    async fn commands_run_before_substitution_and_files_are_read_through_the_runner() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["src.rs", "denied.txt", "secret.txt"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        let cmd = super::super::parse(
            "---\nallowed-tools: Read\n---\nChanges: !`git status --short $1`\nReview @$1 and @denied.txt and @missing.rs",
            "review",
            None,
            Path::new("review.md"),
            crate::skills::Scope::Project,
        )
        .unwrap();
        let runner = Recorder(Mutex::new(Vec::new()));
        let out = expand(&cmd, "src.rs", dir.path(), None, &runner).await;
        let calls = runner.0.lock().unwrap().clone();
        // The command ran as written; the file references were read, the missing one not.
        assert_eq!(
            calls[0],
            (
                "run_command".into(),
                json!({"command": "git status --short $1"})
            )
        );
        assert_eq!(calls[1], ("read_file".into(), json!({"path": "src.rs"})));
        assert_eq!(
            calls[2],
            ("read_file".into(), json!({"path": "denied.txt"}))
        );
        assert_eq!(calls.len(), 3);
        // Command output is inlined verbatim (its `$1` and `@secret.txt` untouched).
        assert!(
            out.text
                .starts_with("Changes: M src/main.rs $1 @secret.txt\nReview @src.rs"),
            "{}",
            out.text
        );
        assert!(
            out.text
                .contains("<file path=\"src.rs\">\n     1\tfn main() {}\n</file>")
        );
        assert!(
            out.text.contains("(@denied.txt was not included: "),
            "{}",
            out.text
        );
        let limit = out.limit.unwrap();
        assert_eq!(limit.owner, LimitOwner::Command("review".into()));
        assert_eq!(limit.names, Some(["read_file".to_string()].into()));
    }

    #[tokio::test]
    async fn unplaced_arguments_are_appended() {
        let cmd = super::super::parse(
            "Summarise the changes.",
            "sum",
            None,
            Path::new("s.md"),
            crate::skills::Scope::User,
        )
        .unwrap();
        let runner = Recorder(Mutex::new(Vec::new()));
        let out = expand(&cmd, "since monday", Path::new("/"), None, &runner).await;
        assert_eq!(
            out.text,
            "Summarise the changes.\n\nARGUMENTS: since monday"
        );
        assert_eq!(out.limit, None);
    }
}
