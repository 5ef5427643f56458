//! Which files a command writes by naming them (`cp` destinations, `tee`, `touch`, `rm`,
//! `sort -o`, `sed -i`, `dd of=`, `curl -o`, `tar -C` …), for `check/writes.rs` to judge
//! as writes (redirects are on the part, not in its words). Options are parsed leniently
//! (`flags::lenient`); an unknown one means the command does not "only edit files".

mod own;

use super::flags::{self, Spec};
use super::table::{self, Operands};

/// What a command writes, as indexes into the words it was given (0 is the program).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writes {
    /// Words that name files or directories the command creates, changes or removes:
    /// (index of the word, byte offset where the name starts: `--output=f`, `-of`, `of=f`).
    pub targets: Vec<(usize, usize)>,
    /// It also writes into its working directory (`ln -s x`, `curl -O`, `tar x`).
    pub cwd: bool,
    /// Its only effect is creating, copying or moving files (`mkdir`, `touch`, `cp`,
    /// `mv`) and every option is known: acceptEdits may let it through.
    pub edits_only: bool,
}

/// The options of `name` and how its operands are written, from the program table.
fn lookup(name: &str) -> Option<(Spec, Operands, bool)> {
    let p = table::program(name)?;
    p.writes
        .map(|(operands, edits_only)| (p.spec, operands, edits_only))
}

/// What `words` (a command's words, the program first, as bash expanded them) write.
pub fn writes(words: &[String]) -> Writes {
    // No words: no program, in the table or out of it.
    let name = crate::shell::program(words);
    match name {
        "dd" => return own::dd(words),
        "sed" | "gsed" => return own::sed(words),
        "git" => return own::git(words),
        "tar" | "gtar" | "bsdtar" => return own::tar(words),
        _ => {}
    }
    let Some((spec, operands, edits_only)) = lookup(name) else {
        return Writes::default();
    };
    let parsed = flags::lenient(&spec, &words[1..]);
    let seen = |o: &str| parsed.seen.iter().any(|s| s == o);
    let given: Vec<(usize, usize)> = parsed.outputs.iter().map(|&(i, f)| (i + 1, f)).collect();
    let ops: Vec<usize> = parsed.operand_at.iter().map(|i| i + 1).collect();
    let mut out = Writes {
        targets: given.clone(),
        cwd: false,
        edits_only: edits_only && parsed.unknown.is_none(),
    };
    let all = ops.iter().map(|&i| (i, 0));
    match operands {
        Operands::All | Operands::SourcesAndDest => out.targets.extend(all),
        Operands::Dest if given.is_empty() => match ops.as_slice() {
            [] => {}
            // `ln -s x`, `cp x` (an error): the link or copy lands in the cwd.
            [_] => out.cwd = true,
            [.., last] => out.targets.push((*last, 0)),
        },
        Operands::Dest => {}
        Operands::AfterFirst => {
            // `chmod -x f`: the mode was taken as an option.
            let mode_as_option = words[1..].iter().take_while(|w| *w != "--").any(|w| {
                w.strip_prefix('-')
                    .is_some_and(|c| !c.is_empty() && c.chars().all(|c| "rwxXstugoa".contains(c)))
            });
            let skip = usize::from(!seen("--reference") && !mode_as_option);
            out.targets.extend(all.skip(skip));
        }
        Operands::Second => out.targets.extend(ops.get(1).map(|&i| (i, 0))),
        Operands::None => {}
    }
    // `install -d DIR…` creates every operand.
    if name == "install" && (seen("-d") || seen("--directory")) {
        out.targets = ops
            .iter()
            .map(|&i| (i, 0))
            .chain(given.iter().copied())
            .collect();
    }
    // `curl -O URL` and `wget URL` save into the cwd (or `--output-dir`/`-P`).
    let remote_name = seen("-O") || seen("--remote-name") || seen("--remote-name-all");
    if name == "wget" || name == "curl" && remote_name {
        out.cwd = given.is_empty() || name == "curl";
    }
    out.targets.sort_unstable();
    out.targets.dedup();
    out
}
