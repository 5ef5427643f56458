//! sed's command line, read once for the three things the engine asks of it: the files
//! `-i` rewrites (`writes`), the scripts whose `e` commands run programs (`programs`),
//! and whether it only prints (`read_only`). A script file (`-f`) is not read here.

/// What a sed command line gives.
#[derive(Debug, Default)]
pub(super) struct Sed<'a> {
    /// Scripts on the command line: `-e`/`--expression` values, and the first operand
    /// unless such an option came before it (`POSIXLY_CORRECT` stops options there).
    pub scripts: Vec<&'a str>,
    /// The files it reads (and with `-i` rewrites), as indexes into its arguments.
    pub files: Vec<usize>,
    /// `-n`, `--quiet`, `--silent`.
    pub quiet: bool,
    /// `-i[SUFFIX]`, `--in-place[=SUFFIX]`.
    pub in_place: bool,
    /// Any option but `-n`, or `--`.
    pub other_options: bool,
}

/// Parses sed's arguments (without the program name).
pub(super) fn parse<'a>(args: &'a [String]) -> Sed<'a> {
    let mut out = Sed::default();
    let mut operands = Vec::new();
    // Where the first `-e`/`-f` was: the first operand is a file after it.
    let mut script_option: Option<usize> = None;
    let value = |i: usize, glued: Option<&'a str>| glued.or(args.get(i + 1).map(String::as_str));
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let w = args[i].as_str();
        let at = i;
        if ended || w == "-" || !w.starts_with('-') {
            operands.push(i);
        } else if w == "--" {
            ended = true;
            out.other_options = true;
        } else if let Some(long) = w.strip_prefix("--") {
            let (name, glued) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            match name {
                "quiet" | "silent" => out.quiet = true,
                "in-place" => out.in_place = true,
                "expression" => out.scripts.extend(value(i, glued)),
                _ => {}
            }
            out.other_options |= !matches!(name, "quiet" | "silent");
            if matches!(name, "expression" | "file") {
                script_option.get_or_insert(at);
            }
            let takes = matches!(name, "expression" | "file" | "line-length");
            i += usize::from(takes && glued.is_none());
        } else {
            for (j, c) in w[1..].char_indices() {
                let rest = &w[1 + j + c.len_utf8()..];
                out.other_options |= c != 'n';
                match c {
                    'n' => out.quiet = true,
                    // `-i[SUFFIX]`: the rest of the cluster is the suffix.
                    'i' => out.in_place = true,
                    'e' => out
                        .scripts
                        .extend(value(i, Some(rest).filter(|r| !r.is_empty()))),
                    _ => {}
                }
                if matches!(c, 'e' | 'f') {
                    script_option.get_or_insert(at);
                }
                if matches!(c, 'e' | 'f' | 'l') {
                    i += usize::from(rest.is_empty());
                }
                if matches!(c, 'i' | 'e' | 'f' | 'l') {
                    break;
                }
            }
        }
        i += 1;
    }
    match (operands.first(), script_option) {
        (Some(&first), None) => {
            out.scripts.push(&args[first]);
            operands.remove(0);
        }
        (Some(&first), Some(opt)) if first < opt => out.scripts.push(&args[first]),
        _ => {}
    }
    out.files = operands;
    out
}
