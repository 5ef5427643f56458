//! From a simple command's words to the part that runs: wrappers are stripped
//! (`commands::unwrap`), shell source becomes parts of its own (`bash -c`, `eval`), and
//! so do the commands a command runs besides itself (`find -exec`, git aliases and
//! command-valued settings, `GIT_SSH_COMMAND=`). What cannot be followed (a shell
//! reading its program from stdin, an unknown wrapper option) makes the part opaque.

use super::{Ctx, Inherit, MAX_DEPTH, Redirect, ShellError, program};
use crate::commands::{self, Embedded, Unwrap};

impl Ctx {
    /// Strips wrappers from `argv` and stores the rest in part `index`; nested source
    /// and embedded commands become parts whose parent is this part.
    pub(super) fn unwrap(
        &mut self,
        index: usize,
        mut argv: Vec<String>,
        depth: usize,
        inh: &Inherit,
    ) -> Result<(), ShellError> {
        if depth > MAX_DEPTH {
            return Err(ShellError("wrappers nest too deeply".into()));
        }
        let mut part = std::mem::take(&mut self.script.parts[index]);
        // Shell source to parse as parts of this one.
        let mut nested: Option<String> = None;
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
                    // The expanded target is filled in by the caller.
                    for (write, target) in writes.chain(reads) {
                        let r = Redirect {
                            write,
                            target,
                            ..Redirect::default()
                        };
                        part.redirects.push(r);
                    }
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
                    nested = Some(script);
                    argv = Vec::new();
                    break;
                }
                Unwrap::Stdin { wrapper, .. } => {
                    // What stdin holds is not read: `echo 'x' | bash`, `bash <<< x`.
                    part.opaque = Some(format!(
                        "`{wrapper}` reads its program from stdin, which is not read here"
                    ));
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
            opaque: part.opaque.clone().or_else(|| inh.opaque.clone()),
            nested: true,
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
                    self.unwrap(at, argv, depth + 1, &inh)?;
                }
                Embedded::Script { via, script } => {
                    let mut inh = child.clone();
                    inh.wrappers.push(via);
                    // Run by another program, later or elsewhere (a git alias at the
                    // repository's top, a trap at exit): the directory is not known.
                    let saved = std::mem::replace(&mut self.dir, super::Dir::Unknown);
                    let parsed = self.parse_into(&script, depth + 1, &inh);
                    self.dir = saved;
                    parsed?;
                }
            }
        }
        if let Some(script) = nested {
            return self.parse_into(&script, depth + 1, &child);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::{Part, parse};

    fn parts(cmd: &str) -> Vec<Part> {
        parse(cmd).unwrap().parts
    }

    fn runs(cmd: &str, text: &str) -> bool {
        parts(cmd).iter().any(|p| p.text() == text)
    }

    #[test]
    #[rustfmt::skip]
    fn a_shell_reading_its_program_from_stdin_is_opaque() {
        // What stdin holds is not read, literal or not: the shell is opaque.
        for cmd in [
            "echo 'git push' | bash", "printf 'git push\\n' | sh", "bash <<< 'git push'",
            "bash <<'EOF'\ngit push\nEOF", "cat <<EOF | sh -s\ngit push\nEOF",
            "echo 'git push' | bash /dev/stdin", "echo 'git push' | source /dev/stdin",
            "{ bash; } <<< 'git push'", "cat f | bash", "bash <<< \"$X\"",
            "bash <<EOF\n$(cat f)\nEOF", "f() { bash; }", "echo 'x' | xargs sh -c",
            "echo 'git push' | { cat | bash; }", "bash",
        ] {
            let ps = parts(cmd);
            let shells = crate::commands::SHELLS.iter().chain(&["source"]);
            let shell = |p: &Part| shells.clone().any(|s| p.program() == *s);
            assert!(ps.iter().any(|p| p.opaque.is_some() && shell(p)), "{cmd}: {ps:?}");
        }
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
