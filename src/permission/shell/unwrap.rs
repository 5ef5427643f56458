//! From a simple command's words to the part that runs: wrappers are stripped
//! (`commands::unwrap`), shell source becomes parts of its own (`bash -c`, `eval`, and
//! literal text fed to a shell's stdin), and so do the commands a command runs besides
//! itself (`find -exec`, git aliases and command-valued settings, `GIT_SSH_COMMAND=`).
//! What cannot be followed makes the part opaque.

use super::cwd::State;
use super::stdin::{self, Feed};
use super::{Ctx, Inherit, MAX_DEPTH, Redirect, ShellError};
use crate::permission::commands::{self, Embedded, Unwrap};

impl Ctx {
    /// Strips wrappers from `argv` and stores the rest in part `index`; nested source
    /// and embedded commands become parts whose parent is this part. `feed` is what the
    /// part's stdin holds, if anything.
    pub(super) fn unwrap(
        &mut self,
        index: usize,
        mut argv: Vec<String>,
        depth: usize,
        feed: Option<Feed>,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        if depth > MAX_DEPTH {
            return Err(ShellError("wrappers nest too deeply".into()));
        }
        let mut part = std::mem::take(&mut self.script.parts[index]);
        // Shell source to parse as parts of this one, and what its commands read.
        let mut nested: Option<(String, Option<Feed>)> = None;
        while let Some(step) = commands::unwrap(&argv) {
            match step {
                Unwrap::Command {
                    wrapper,
                    rest,
                    privileged,
                    dynamic,
                    open,
                    effects,
                } => {
                    part.wrappers.push(wrapper);
                    part.privileged |= privileged;
                    part.dynamic |= dynamic;
                    part.open |= open;
                    part.env.extend(effects.env);
                    part.chdir = effects.chdir.or(part.chdir);
                    let writes = effects.writes.into_iter().map(|target| (true, target));
                    let reads = effects.reads.into_iter().map(|target| (false, target));
                    part.redirects.extend(
                        writes
                            .chain(reads)
                            // The expanded target is filled in by the caller.
                            .map(|(write, target)| Redirect {
                                write,
                                target,
                                ..Redirect::default()
                            }),
                    );
                    argv = rest;
                }
                Unwrap::Script {
                    wrapper,
                    script,
                    privileged,
                } => {
                    if part.open {
                        part.opaque = Some(format!(
                            "`{wrapper}` runs shell source built from `xargs` input"
                        ));
                        break;
                    }
                    part.wrappers.push(wrapper);
                    part.privileged |= privileged;
                    nested = Some((script, feed.clone()));
                    argv = Vec::new();
                    break;
                }
                Unwrap::Stdin {
                    wrapper,
                    privileged,
                } => {
                    // A function body's stdin is whatever its caller feeds it.
                    let unknown_caller = part.open || inh.in_function;
                    // `bash < FILE` reads FILE, not the pipe or group stdin: like
                    // `bash FILE`; `bash < <(…)` reads a process substitution's output.
                    let file = part
                        .redirects
                        .iter()
                        .find(|r| !r.write && !r.target.starts_with('&'))
                        .map(|r| r.target.clone());
                    // Inside `>(bash)` stdin is the parent's output (a substitution's
                    // stdin is not the literal feed of its enclosing command).
                    let feed = match &file {
                        Some(t) if t == "<(…)" => Some(Feed::Unknown),
                        Some(_) => None,
                        None if part.substituted => Some(Feed::Unknown),
                        None => feed.clone(),
                    };
                    match &feed {
                        Some(Feed::Literal(text)) if !part.open => {
                            part.wrappers.push(wrapper);
                            part.privileged |= privileged;
                            // The program consumed stdin; what is left is unknown.
                            nested = Some((text.clone(), Some(Feed::Unknown)));
                            argv = Vec::new();
                        }
                        Some(_) => {
                            part.opaque = Some(format!(
                                "`{wrapper}` reads its program from stdin, and that text is not literal"
                            ));
                        }
                        None if unknown_caller => {
                            part.opaque = Some(format!(
                                "`{wrapper}` reads its program from its caller's stdin"
                            ));
                        }
                        // Nothing is fed: stdin is closed, the shell runs nothing.
                        None => {}
                    }
                    break;
                }
                Unwrap::Opaque { reason, .. } => {
                    part.opaque = Some(reason);
                    break;
                }
            }
        }
        if part.open && part.opaque.is_none() && commands::INTERPRETERS.contains(&program(&argv)) {
            part.opaque = Some("an interpreter runs source built from `xargs` input".into());
        }
        part.argv = argv;
        let embedded = commands::embedded(&part.argv, &part.env);
        let child = Inherit {
            wrappers: part.wrappers.clone(),
            substituted: false,
            piped: part.piped,
            privileged: part.privileged,
            background: part.background,
            parent: Some(index),
            dynamic: part.dynamic,
            // What the command runs inherits its stdin (`git -c alias.a='!sh' a <<< …`).
            stdin: feed.clone(),
            in_function: inh.in_function,
        };
        let (pipeline, pipe_pos) = (part.pipeline, part.pipe_pos);
        for e in &embedded {
            if let Embedded::Opaque(why) = e {
                part.opaque.get_or_insert_with(|| why.clone());
            }
        }
        self.script.parts[index] = part;
        for e in embedded {
            match e {
                Embedded::Opaque(_) => {}
                Embedded::Command { via, argv } => {
                    let mut inh = child.clone();
                    // `find -exec rm {} ;`: `{}` is a file name known only at run time.
                    inh.dynamic |= via.starts_with("(find");
                    inh.wrappers.push(via);
                    let at = self.push(self.base(&inh, pipeline, pipe_pos));
                    let stdin = inh.stdin.clone();
                    self.unwrap(at, argv, depth + 1, stdin, &inh)?;
                }
                Embedded::Script { via, script } => {
                    let mut inh = child.clone();
                    inh.wrappers.push(via);
                    // Run by another program, later or elsewhere (a git alias at the
                    // repository's top, a trap at exit): nothing of the shell's directory
                    // or variables is known there, and nothing it sets comes back.
                    let saved = std::mem::replace(&mut self.state, State::unknown());
                    let parsed = self.parse_into(&script, depth + 1, &inh);
                    self.state = saved;
                    parsed?;
                }
            }
        }
        if let Some((script, stdin)) = nested {
            let mut inh = child;
            inh.stdin = stdin;
            return self.parse_into(&script, depth + 1, &inh);
        }
        Ok(())
    }

    /// What the member at `pos` of pipeline `id` (directly under `parent`) writes to
    /// its stdout, when known without running anything.
    pub(super) fn output_of(&self, id: usize, pos: usize, parent: Option<usize>) -> Feed {
        let mut members = self
            .script
            .parts
            .iter()
            .filter(|p| p.pipeline == id && p.pipe_pos == pos && p.parent == parent);
        match (members.next(), members.next()) {
            (Some(p), None) => stdin::output_of(p),
            _ => Feed::Unknown,
        }
    }
}

fn program(argv: &[String]) -> &str {
    argv.first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use crate::permission::shell::{Part, parse};

    fn parts(cmd: &str) -> Vec<Part> {
        parse(cmd).unwrap().parts
    }

    fn runs(cmd: &str, text: &str) -> bool {
        parts(cmd).iter().any(|p| p.text() == text)
    }

    #[test]
    fn literal_stdin_is_parsed_as_a_nested_script() {
        for cmd in [
            "echo 'git push' | bash",
            "printf 'git push\\n' | sh",
            "bash <<< 'git push'",
            "bash <<'EOF'\ngit push\nEOF",
            "f() { echo 'git push' | bash; }",
            "cat <<EOF | sh -s\ngit push\nEOF",
            "echo 'git push' | bash /dev/stdin",
            "echo 'git push' | source /dev/stdin",
            "{ bash; } <<< 'git push'",
        ] {
            assert!(runs(cmd, "git push"), "{cmd}: {:?}", parts(cmd));
            assert!(parts(cmd).iter().all(|p| p.opaque.is_none()), "{cmd}");
        }
    }

    #[test]
    fn unknown_stdin_makes_the_shell_opaque() {
        for cmd in [
            "cat f | bash",
            "bash <<< \"$X\"",
            "bash <<EOF\n$(cat f)\nEOF",
            "f() { bash; }",
            "echo 'x' | xargs sh -c",
            // `cat` passes its input on, but we do not follow it: fail closed.
            "echo 'git push' | { cat | bash; }",
        ] {
            assert!(
                parts(cmd).iter().any(|p| p.opaque.is_some()),
                "{cmd}: {:?}",
                parts(cmd)
            );
        }
        // Nothing fed: a bare shell reads a closed stdin and runs nothing.
        assert!(parts("bash").iter().all(|p| p.opaque.is_none()));
    }

    #[test]
    fn embedded_commands_become_parts_with_their_parent() {
        let ps = parts("find . -exec rm -rf {} \\;");
        let rm = ps.iter().find(|p| p.program() == "rm").unwrap();
        assert_eq!((rm.parent, rm.dynamic), (Some(0), true));
        assert!(rm.full_text().starts_with("(find -exec)"));
        assert!(runs("git -c alias.p='!git push' p", "git push"));
        assert!(runs("git -c core.pager='rm x' log", "rm x"));
        assert!(runs("GIT_SSH_COMMAND='rm x' git fetch", "rm x"));
        assert!(runs("env GIT_SSH_COMMAND='rm x' git fetch", "rm x"));
        let p = &parts("/usr/bin/time -o out true")[0];
        assert!(p.redirects.iter().any(|r| r.write && r.target == "out"));
        assert_eq!(parts("env -C /etc cat x")[0].chdir.as_deref(), Some("/etc"));
    }
}
