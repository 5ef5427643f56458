//! The written files of programs with a syntax of their own, for `commands::writes`:
//! `dd of=`, `sed -i`, git's output options and subcommands that create files, and `tar`.

use super::Writes;

/// `dd of=FILE`.
pub(super) fn dd(words: &[String]) -> Writes {
    Writes {
        targets: (1..words.len())
            .filter(|&i| words[i].starts_with("of="))
            .map(|i| (i, 3))
            .collect(),
        ..Writes::default()
    }
}

/// `sed -i … FILE…`: with `-i`/`--in-place`, every file operand is rewritten.
pub(super) fn sed(words: &[String]) -> Writes {
    let s = crate::commands::sed::parse(&words[1..]);
    Writes {
        targets: match s.in_place {
            true => s.files.iter().map(|&i| (i + 1, 0)).collect(),
            false => Vec::new(),
        },
        ..Writes::default()
    }
}

/// Git's own file outputs: `--output=F` on diff-like commands, `format-patch -o DIR`,
/// `archive -o F`, `bundle create F`, `init DIR`, `worktree add DIR`, `clone URL DIR`.
pub(super) fn git(words: &[String]) -> Writes {
    let g = super::super::git::parse(words);
    let mut out = Writes::default();
    let Some(sub) = g.sub else {
        return out;
    };
    let rest = (sub + 1)..words.len();
    for i in rest.clone() {
        let w = words[i].as_str();
        if w.starts_with("--output=") || w.starts_with("--output-directory=") {
            out.targets.push((i, w.find('=').map_or(0, |e| e + 1)));
        } else if matches!(w, "--output" | "--output-directory") && i + 1 < words.len() {
            out.targets.push((i + 1, 0));
        }
    }
    let operands: Vec<usize> = rest
        .clone()
        .filter(|&i| !words[i].starts_with('-'))
        .collect();
    match words[sub].as_str() {
        "format-patch" | "archive" => {
            for i in rest {
                if words[i] == "-o" && i + 1 < words.len() {
                    out.targets.push((i + 1, 0));
                }
            }
        }
        "bundle" if operands.len() >= 2 && words[operands[0]] == "create" => {
            out.targets.push((operands[1], 0));
        }
        "init" => match operands.last() {
            Some(&d) => out.targets.push((d, 0)),
            None => out.cwd = true,
        },
        "worktree" if operands.len() >= 2 && words[operands[0]] == "add" => {
            out.targets.push((operands[1], 0));
        }
        "clone" if operands.len() >= 2 => out.targets.extend(operands.last().map(|&i| (i, 0))),
        "clone" => out.cwd = true,
        _ => {}
    }
    out
}

/// `tar`: extracting writes below `-C DIR` (or the cwd); creating writes the archive
/// `-f FILE`. The first word may be a bundle without a dash (`tar xzf a.tgz`).
pub(super) fn tar(words: &[String]) -> Writes {
    let mut out = Writes::default();
    let mut extract = false;
    let mut create = false;
    let mut dir = None;
    let mut archive = None;
    let mut i = 1;
    while i < words.len() {
        let w = words[i].as_str();
        let bundle = i == 1 && !w.starts_with('-');
        if let Some(long) = w.strip_prefix("--") {
            let (name, glued) = long
                .split_once('=')
                .map_or((long, false), |(n, _)| (n, true));
            let value = if glued {
                (i, name.len() + 3)
            } else {
                (i + 1, 0)
            };
            match name {
                "extract" | "get" => extract = true,
                "create" | "append" | "update" | "concatenate" => create = true,
                "directory" => dir = Some(value),
                "file" => archive = Some(value),
                _ => {}
            }
            if matches!(name, "directory" | "file") && !glued {
                i += 1;
            }
        } else if bundle || w.starts_with('-') {
            let letters = w.trim_start_matches('-');
            let mut takes = 0;
            for c in letters.chars() {
                match c {
                    'x' => extract = true,
                    'c' | 'r' | 'u' | 'A' => create = true,
                    'f' => {
                        takes += 1;
                        archive = Some((i + takes, 0));
                    }
                    'C' => {
                        takes += 1;
                        dir = Some((i + takes, 0));
                    }
                    _ => {}
                }
            }
            i += takes;
        }
        i += 1;
    }
    if extract {
        match dir.filter(|&(d, _)| d < words.len()) {
            Some(d) => out.targets.push(d),
            None => out.cwd = true,
        }
    }
    if create && let Some(a) = archive.filter(|&(a, _)| a < words.len()) {
        out.targets.push(a);
    }
    out
}
