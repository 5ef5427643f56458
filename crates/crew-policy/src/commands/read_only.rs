//! Read-only commands as allow-lists, in the spirit of codex's `is_safe_command`: for each
//! program, the options known not to write files or run programs. Any other option makes
//! the command not read-only (category Exec), so a flag we never heard of
//! (`sort --compress-program=sh`, `tree -o FILE`, `xxd -r`) cannot pass as a read.
//! Option values that name files are reported (`path_operands`) so the caller checks
//! them like any other path (`file -f ~/.ssh/id_rsa`).

use super::flags::{self, Parsed, Spec};
use super::table::{self, Operand, Read};
use super::{find, git, search};
use crate::shell::Part;

/// The allow-list of a program read-only by its options alone.
pub(super) fn spec(prog: &str) -> Option<Spec> {
    table::program(prog)
        .filter(|p| matches!(p.read, Read::Options(_)))
        .map(|p| p.spec)
}

/// Parses a read-only program's arguments with its allow-list.
pub(super) fn parsed(part: &Part) -> Option<Parsed> {
    let args = part.argv.get(1..)?;
    flags::parse(&spec(part.program())?, args, flags::Until::End).ok()
}

/// Whether a part only observes: a known read-only program with known-good options, no
/// redirection that writes, no substitution or variable, not in the background.
pub fn is_read_only(part: &Part) -> bool {
    if part.dynamic || part.background || part.privileged || part.opaque.is_some() {
        return false;
    }
    if part
        .redirects
        .iter()
        .any(|r| r.write && r.target != "/dev/null")
    {
        return false;
    }
    if part.argv.is_empty() {
        return true;
    }
    let prog = part.program();
    match prog {
        "git" => return git::read_only(&part.argv),
        "find" => return find::read_only(&part.argv),
        "sed" => return sed_read_only(&part.argv[1..]),
        _ => {}
    }
    // cargo is not in the table, so never a read: even `cargo metadata` runs
    // `build.rustc-wrapper` and other programs named by the project's `.cargo/config.toml`.
    let operand = match table::program(prog).map(|p| p.read) {
        Some(Read::AnyArgs) => return true,
        Some(Read::Options(o)) => o,
        _ => return false,
    };
    let Some(p) = parsed(part) else {
        return false;
    };
    let ops = &p.operands;
    p.outputs.is_empty()
        && match operand {
            Operand::Any => true,
            Operand::AtMostOne => ops.len() <= 1,
            Operand::None => ops.is_empty(),
            Operand::Format => ops.iter().all(|o| o.starts_with('+')),
            Operand::NoPlus => !ops.iter().any(|o| o.starts_with('+')),
        }
}

/// The words of a part that may name files: for a program with an allow-list, its
/// operands and the values of its file options; otherwise every word that could be a
/// path (operands, `--opt=value` values, values glued to short flags that look like
/// paths). Substitution placeholders are skipped by the caller.
pub fn path_operands(part: &Part) -> Vec<String> {
    let args = part.argv.get(1..).unwrap_or_default();
    if let Some(p) = parsed(part) {
        let mut out = p.operands;
        out.extend(p.paths);
        out.extend(
            p.outputs
                .iter()
                .map(|&(i, from)| args[i][from..].to_string()),
        );
        return out;
    }
    let mut out: Vec<String> = args
        .iter()
        .filter_map(|a| flags::path_candidates(a))
        .map(String::from)
        .collect();
    if part.program() == "git" {
        out.extend(git::parse(&part.argv).paths);
        // `git show HEAD:secrets/key` prints `secrets/key`.
        out.extend(search::object_paths(&part.argv));
    }
    out
}

/// `sed -n '3p'`, `sed -n '1,20p'`: printing only, no other option (never `-i`), no
/// `w` or `e`.
fn sed_read_only(args: &[String]) -> bool {
    let s = super::sed::parse(args);
    s.quiet
        && !s.other_options
        && s.scripts.len() == 1
        && s.scripts[0].split(';').all(|cmd| {
            let cmd = cmd.trim();
            cmd.ends_with('p')
                && cmd[..cmd.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ',' || c == '$')
        })
}
