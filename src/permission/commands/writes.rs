//! Which files a command writes by naming them: `cp`/`mv`/`install`/`ln` destinations,
//! `tee`, `touch`, `mkdir`, `rm` operands, `sort -o`, `sed -i` files, `dd of=`, `curl -o`,
//! `git … --output`, `tar -C` and the like. The caller (`check/writes.rs`) judges each
//! target as a write: sandbox roots, protected paths, write rules and the mode. Redirects
//! are the caller's too (they are on the part, not in its words).
//!
//! The options are parsed leniently (`flags::lenient`): only the words that name written
//! files must be found. An option not in the table means the command does not count as
//! "only edits files" on a guess.

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
    let Some(first) = words.first() else {
        return Writes::default();
    };
    let name = first.rsplit('/').next().unwrap_or(first);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// The texts of what `s` writes (plus `.` for its cwd).
    fn targets(s: &str) -> Vec<String> {
        let words = w(s);
        let t = writes(&words);
        let mut out: Vec<String> = t
            .targets
            .iter()
            .map(|&(i, from)| words[i][from..].to_string())
            .collect();
        if t.cwd {
            out.push(".".into());
        }
        out
    }

    #[test]
    fn destinations_of_copies_moves_and_links() {
        assert_eq!(
            targets("cp README.md /home/u/.profile"),
            ["/home/u/.profile"]
        );
        assert_eq!(targets("cp -r a b dest"), ["dest"]);
        assert_eq!(targets("cp -t dir a b"), ["dir"]);
        assert_eq!(targets("cp --target-directory=dir a"), ["dir"]);
        assert_eq!(targets("cp -S .bak a b"), ["b"]);
        assert_eq!(targets("mv a b"), ["a", "b"]);
        assert_eq!(targets("install -m 644 f /home/u/.y"), ["/home/u/.y"]);
        assert_eq!(targets("install -d a b"), ["a", "b"]);
        assert_eq!(targets("ln -sf target link"), ["link"]);
        assert_eq!(targets("ln -s /etc/passwd"), ["."]);
        assert_eq!(targets("cp -- -x y"), ["y"]);
    }

    #[test]
    fn every_operand_of_creators_and_removers() {
        assert_eq!(targets("tee -a x y"), ["x", "y"]);
        assert_eq!(targets("touch -d 2020-01-01 m"), ["m"]);
        assert_eq!(targets("touch -r ref m"), ["m"]);
        assert_eq!(targets("mkdir -p -m 700 a/b"), ["a/b"]);
        assert_eq!(targets("rm -rf build"), ["build"]);
        assert_eq!(targets("truncate -s 0 log"), ["log"]);
        assert_eq!(targets("chmod 600 a b"), ["a", "b"]);
        assert_eq!(targets("chmod -x a"), ["a"]);
        assert_eq!(targets("chown --reference=r a"), ["a"]);
        assert_eq!(targets("uniq -c in out"), ["out"]);
        assert!(targets("uniq -c in").is_empty());
    }

    #[test]
    fn output_options() {
        assert_eq!(targets("sort -o out f"), ["out"]);
        assert_eq!(targets("sort -oout f"), ["out"]);
        assert_eq!(targets("sort --output=out f"), ["out"]);
        assert_eq!(targets("sort -rn -k 2 f"), Vec::<String>::new());
        assert_eq!(targets("sed -i s/a/b/ f g"), ["f", "g"]);
        assert_eq!(targets("sed -i.bak -e s/a/b/ f"), ["f"]);
        assert_eq!(targets("sed --in-place s/a/b/ f"), ["f"]);
        assert_eq!(targets("sed -ie s/a/b/ f"), ["f"]);
        assert_eq!(targets("sed -i -l 5 s/a/b/ f"), ["f"]);
        assert_eq!(targets("sed -i s/a/b/ -e p f"), ["s/a/b/", "f"]);
        assert!(targets("sed -n 1p f").is_empty());
        assert_eq!(targets("dd if=/dev/zero of=/home/u/x bs=1"), ["/home/u/x"]);
        assert_eq!(targets("curl -sSLo out https://x"), ["out"]);
        assert_eq!(targets("curl -o out https://x"), ["out"]);
        assert_eq!(targets("curl --output=out https://x"), ["out"]);
        assert_eq!(targets("curl -O https://x/y"), ["."]);
        assert!(targets("curl -H a:b https://x").is_empty());
        assert_eq!(targets("wget -O out https://x"), ["out"]);
        assert_eq!(targets("wget https://x"), ["."]);
        assert_eq!(targets("git diff --output=/tmp/x"), ["/tmp/x"]);
        assert_eq!(targets("git format-patch -o out HEAD~1"), ["out"]);
        assert_eq!(targets("git clone https://x dir"), ["dir"]);
        assert_eq!(targets("git worktree add ../wt"), ["../wt"]);
        assert_eq!(targets("tar xzf a.tgz -C /home/u"), ["/home/u"]);
        assert_eq!(targets("tar -xf a.tar"), ["."]);
        assert_eq!(targets("tar czf out.tgz src"), ["out.tgz"]);
        assert_eq!(targets("tar --create --file=out.tar src"), ["out.tar"]);
        assert!(targets("tar tf a.tar").is_empty());
        assert!(targets("git status --short").is_empty());
        assert!(targets("ls -la").is_empty());
    }

    #[test]
    fn only_known_editors_with_known_options_only_edit() {
        assert!(writes(&w("mkdir -p a")).edits_only);
        assert!(writes(&w("touch m")).edits_only);
        assert!(writes(&w("cp -r a b")).edits_only);
        assert!(writes(&w("mv a b")).edits_only);
        assert!(!writes(&w("cp --frobnicate a b")).edits_only);
        assert!(!writes(&w("rm a")).edits_only);
        assert!(!writes(&w("tee a")).edits_only);
        assert!(!writes(&w("ln -s a b")).edits_only);
    }
}
