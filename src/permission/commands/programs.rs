//! Commands that programs run from their own options or program text: awk's `system()`
//! and pipes, sed's `e`, vim's `-c '!…'`, tar's checkpoint actions and compressors,
//! rsync's and scp's remote shells, ssh's `ProxyCommand`, man's pager, zip's test
//! command. Each becomes an `Embedded` (like `find -exec`): literal text is judged as a
//! command of its own; text the engine cannot read makes the part opaque.

use super::Embedded;

/// What `argv` (program already unwrapped) runs through its options or program text.
pub fn embedded(prog: &str, argv: &[String]) -> Vec<Embedded> {
    let args = argv.get(1..).unwrap_or_default();
    match prog {
        "awk" | "gawk" | "mawk" | "nawk" => awk(args),
        "sed" | "gsed" => sed(args),
        "vim" | "vi" | "nvim" | "ex" | "view" | "vimdiff" | "gvim" | "rvim" => vim(args),
        "tar" | "gtar" | "bsdtar" => tar(args),
        "rsync" => option_values(args, &[("-e", "--rsh")], "rsync -e", true),
        "ssh" | "scp" | "sftp" | "slogin" => ssh(prog, args),
        "man" => option_values(args, &[("-P", "--pager"), ("-H", "--html")], "man -P", true),
        "zip" => option_values(args, &[("-TT", "--unzip-command")], "zip -TT", true),
        _ => Vec::new(),
    }
}

fn script(via: &str, text: &str) -> Embedded {
    Embedded::Script {
        via: format!("({via})"),
        script: text.to_string(),
    }
}

/// Values of options given as `-X v`, `-Xv`, `--long v` or `--long=v`; `shell` says
/// whether the value is shell source (else a program name).
fn option_values(args: &[String], opts: &[(&str, &str)], via: &str, shell: bool) -> Vec<Embedded> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        for (short, long) in opts {
            let value = if a == short || a == long {
                args.get(i + 1).cloned()
            } else if let Some(v) = a.strip_prefix(&format!("{long}=")) {
                Some(v.to_string())
            } else if short.len() == 2 && a.starts_with(short) && !a.starts_with("--") {
                Some(a[2..].to_string())
            } else if short.len() == 2
                && a.starts_with('-')
                && !a.starts_with("--")
                && a.ends_with(&short[1..])
                && a.len() > 2
            {
                // A cluster ending in the flag (`rsync -avze CMD`).
                args.get(i + 1).cloned()
            } else {
                None
            };
            if let Some(v) = value {
                out.push(if shell {
                    script(via, &v)
                } else {
                    Embedded::Command {
                        via: format!("({via})"),
                        argv: vec![v],
                    }
                });
            }
        }
    }
    out
}

fn ssh(prog: &str, args: &[String]) -> Vec<Embedded> {
    let mut out = Vec::new();
    if prog == "scp" || prog == "sftp" {
        out.extend(option_values(args, &[("-S", "-S")], "scp -S", false));
    }
    for (i, a) in args.iter().enumerate() {
        let opt = if a == "-o" {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix("-o")
        };
        if let Some(o) = opt.filter(|_| !a.starts_with("--")) {
            let (key, value) = o
                .split_once(['=', ' '])
                .map_or((o, ""), |(k, v)| (k, v.trim_start_matches(['=', ' '])));
            let key = key.to_ascii_lowercase();
            if matches!(
                key.as_str(),
                "proxycommand" | "localcommand" | "knownhostscommand" | "remotecommand"
            ) {
                out.push(script(&format!("{prog} -o {key}"), value));
            } else if key == "include" {
                out.push(Embedded::Opaque(format!(
                    "`{prog} -o {o}` reads configuration that may run commands"
                )));
            }
        }
        if a == "-F" || (a.starts_with("-F") && a.len() > 2) {
            out.push(Embedded::Opaque(format!(
                "`{prog} -F` reads a configuration file that may run commands (ProxyCommand)"
            )));
        }
    }
    out
}

fn tar(args: &[String]) -> Vec<Embedded> {
    let mut out = option_values(
        args,
        &[
            ("-I", "--use-compress-program"),
            ("--to-command", "--to-command"),
        ],
        "tar -I",
        true,
    );
    out.extend(option_values(
        args,
        &[
            ("-F", "--info-script"),
            ("--new-volume-script", "--new-volume-script"),
            ("--rsh-command", "--rsh-command"),
        ],
        "tar -F",
        false,
    ));
    for (i, a) in args.iter().enumerate() {
        let action = match a.strip_prefix("--checkpoint-action") {
            Some(v) if v.starts_with('=') => Some(v[1..].to_string()),
            Some("") => args.get(i + 1).cloned(),
            _ => None,
        };
        if let Some(act) = action
            && let Some(cmd) = act.strip_prefix("exec=")
        {
            out.push(script("tar --checkpoint-action", cmd));
        }
    }
    out
}

/// vim's `-c CMD`, `--cmd CMD` and `+CMD`: `!cmd` runs a shell command; anything else
/// that can run one (`system()`, `:terminal`, an interpreter) is opaque.
fn vim(args: &[String]) -> Vec<Embedded> {
    let mut out = Vec::new();
    let mut cmds = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a == "-c" || a == "--cmd" {
            cmds.extend(args.get(i + 1).cloned());
        } else if let Some(c) = a.strip_prefix('+') {
            cmds.push(c.to_string());
        } else if a == "-S" || a == "-u" || a == "-U" {
            out.push(Embedded::Opaque(format!(
                "`vim {a}` sources a script that may run commands"
            )));
        }
    }
    for c in cmds {
        let c = c.trim().trim_start_matches(':').trim();
        if let Some(rest) = c.strip_prefix('!') {
            out.push(script("vim -c !", rest));
        } else if c.contains('!')
            || [
                "sys", "call", "exe", "py", "lua", "perl", "ruby", "term", "so", "mzs", "tcl",
            ]
            .iter()
            .any(|w| c.contains(w))
        {
            out.push(Embedded::Opaque(format!(
                "vim command `{c}` may run a program"
            )));
        }
    }
    out
}

/// sed's `e` command (`1e CMD` runs CMD; bare `e` runs the pattern space) and the `e`
/// flag of `s` (runs the result), in the scripts on its command line.
fn sed(args: &[String]) -> Vec<Embedded> {
    let mut out = Vec::new();
    for s in super::sed::parse(args).scripts {
        for line in s.lines() {
            sed_line(line, &mut out);
        }
    }
    out
}

fn sed_line(line: &str, out: &mut Vec<Embedded>) {
    let mut rest = line;
    loop {
        let cmd = strip_address(rest);
        if let Some(c) = cmd.strip_prefix('e') {
            // `e CMD` runs the rest of the line; bare `e` runs the pattern space.
            let c = c.trim();
            if c.is_empty() || c.starts_with(';') || c.starts_with('}') {
                out.push(Embedded::Opaque(
                    "sed `e` runs the pattern space as a command".into(),
                ));
            } else {
                out.push(script("sed e", c));
                return;
            }
        }
        if let Some(after) = cmd.strip_prefix('s')
            && let Some(flags) = s_flags(after)
            && flags.contains('e')
        {
            out.push(Embedded::Opaque(
                "sed `s///e` runs the substitution's result as a command".into(),
            ));
        }
        match rest.find(';') {
            Some(i) => rest = &rest[i + 1..],
            None => return,
        }
    }
}

/// A sed command without its address (`1`, `$`, `/re/`, `1,5`, `!`, `{`).
fn strip_address(s: &str) -> &str {
    let mut s = s.trim_start();
    loop {
        let before = s;
        s = s.trim_start_matches(|c: char| {
            c.is_ascii_digit()
                || matches!(c, '$' | ',' | '!' | '{' | '~' | '+')
                || c.is_whitespace()
        });
        if let Some(r) = s.strip_prefix('/')
            && let Some(end) = r.find('/')
        {
            s = &r[end + 1..];
        }
        if s == before {
            return s;
        }
    }
}

/// The flags of `s<d>re<d>rep<d>flags`, given what follows the `s`.
fn s_flags(after: &str) -> Option<&str> {
    let d = after.chars().next()?;
    if d.is_alphanumeric() || d.is_whitespace() {
        return None;
    }
    let body = &after[d.len_utf8()..];
    let mut seen = 0;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == d {
            seen += 1;
            if seen == 2 {
                let flags = &body[i + d.len_utf8()..];
                let end = flags.find([';', '}']).unwrap_or(flags.len());
                return Some(&flags[..end]);
            }
        }
    }
    None
}

/// awk programs: `system("cmd")`, `print | "cmd"`, `"cmd" | getline`, `|&` coprocesses.
/// Literal strings are commands; anything else is opaque. The program is the first
/// operand unless `-f`/`-e`/`--source` give it.
fn awk(args: &[String]) -> Vec<Embedded> {
    let mut programs = Vec::new();
    let mut from_option = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" => {
                from_option = true;
                i += 1;
            }
            "-e" | "--source" => {
                programs.extend(args.get(i + 1).cloned());
                from_option = true;
                i += 1;
            }
            "-F" | "-v" | "--assign" | "--field-separator" => i += 1,
            "--" => {}
            _ if a.starts_with('-') && a.len() > 1 => {}
            _ => {
                if !from_option && programs.is_empty() {
                    programs.push(a.to_string());
                }
                break;
            }
        }
        i += 1;
    }
    programs.iter().flat_map(|p| awk_program(p)).collect()
}

fn awk_program(src: &str) -> Vec<Embedded> {
    let tokens = awk_tokens(src);
    let mut out = Vec::new();
    let opaque = |what: &str| {
        Embedded::Opaque(format!(
            "awk {what} runs a command that is not a literal string"
        ))
    };
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Tok::Word(w) if w == "system" => {
                match (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3)) {
                    (Some(Tok::Punct('(')), Some(Tok::Str(s)), Some(Tok::Punct(')'))) => {
                        out.push(script("awk system", s))
                    }
                    _ => out.push(opaque("system()")),
                }
            }
            Tok::Pipe => {
                // `print | "cmd"` or `"cmd" | getline`.
                let next = tokens.get(i + 1);
                let prev = i.checked_sub(1).and_then(|j| tokens.get(j));
                match (prev, next) {
                    (_, Some(Tok::Word(g))) if g == "getline" => match prev {
                        Some(Tok::Str(s)) => out.push(script("awk getline", s)),
                        _ => out.push(opaque("`| getline`")),
                    },
                    (_, Some(Tok::Str(s)))
                        if !matches!(tokens.get(i + 2), Some(Tok::Punct('('))) =>
                    {
                        out.push(script("awk print |", s))
                    }
                    _ => out.push(opaque("`|`")),
                }
            }
            _ => {}
        }
    }
    out
}

#[derive(Debug)]
enum Tok {
    Str(String),
    Word(String),
    Pipe,
    Punct(char),
}

/// Just enough of awk's lexer: strings, words, `|`/`|&` (not `||`), and regex literals
/// skipped where a regex may start.
fn awk_tokens(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                    s.push(match chars[i] {
                        'n' => '\n',
                        't' => '\t',
                        o => o,
                    });
                } else {
                    s.push(chars[i]);
                }
                i += 1;
            }
            out.push(Tok::Str(s));
            i += 1;
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && regex_may_start(&out) {
            i += 1;
            while i < chars.len() && chars[i] != '/' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push(Tok::Punct('/'));
            i += 1;
        } else if c == '|' {
            if chars.get(i + 1) == Some(&'|') {
                out.push(Tok::Punct('|'));
                i += 2;
            } else {
                out.push(Tok::Pipe);
                i += if chars.get(i + 1) == Some(&'&') { 2 } else { 1 };
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Word(chars[start..i].iter().collect()));
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// Whether a `/` here starts a regex rather than dividing.
fn regex_may_start(prev: &[Tok]) -> bool {
    match prev.last() {
        None => true,
        Some(Tok::Punct(p)) => "(,{;!~&|=<>+-*%?:".contains(*p),
        Some(Tok::Pipe) => true,
        Some(Tok::Word(w)) => matches!(w.as_str(), "return" | "print" | "printf" | "in"),
        Some(Tok::Str(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(s: &[&str]) -> Vec<Embedded> {
        let argv: Vec<String> = s.iter().map(|a| a.to_string()).collect();
        let prog = argv[0].clone();
        embedded(&prog, &argv)
    }

    fn scripts(s: &[&str]) -> Vec<String> {
        runs(s)
            .into_iter()
            .map(|e| match e {
                Embedded::Script { script, .. } => script,
                Embedded::Command { argv, .. } => argv.join(" "),
                Embedded::Opaque(_) => "OPAQUE".into(),
            })
            .collect()
    }

    #[test]
    fn commands_in_options_and_programs_are_found() {
        assert_eq!(scripts(&["awk", "BEGIN{system(\"rm x\")}"]), ["rm x"]);
        assert_eq!(scripts(&["awk", "{print | \"sh\"}"]), ["sh"]);
        assert_eq!(scripts(&["gawk", "BEGIN{\"date\" | getline d}"]), ["date"]);
        assert_eq!(scripts(&["awk", "{system($0)}"]), ["OPAQUE"]);
        assert!(scripts(&["awk", "/a|b/ {print $1 || 0}", "f"]).is_empty());
        assert!(scripts(&["awk", "-F:", "{print $1}", "/etc/passwd"]).is_empty());
        assert_eq!(scripts(&["sed", "1e rm x", "f"]), ["rm x"]);
        assert_eq!(scripts(&["sed", "-e", "s/a/b/e", "f"]), ["OPAQUE"]);
        assert!(scripts(&["sed", "-n", "s/a/b/gp;3p", "f"]).is_empty());
        assert_eq!(scripts(&["sed", "-ne", "1e rm x", "f"]), ["rm x"]);
        assert_eq!(scripts(&["sed", "-l", "5", "1e rm x", "f"]), ["rm x"]);
        // POSIXLY_CORRECT stops options at the first operand: it may be the script.
        assert_eq!(scripts(&["sed", "1e rm x", "-e", "p", "f"]), ["rm x"]);
        assert_eq!(scripts(&["vim", "-c", "!rm x", "-c", "q"]), ["rm x"]);
        assert_eq!(scripts(&["vim", "+:call system('x')"]), ["OPAQUE"]);
        assert_eq!(
            scripts(&["tar", "-cf", "a", "--checkpoint-action=exec=rm x", "f"]),
            ["rm x"]
        );
        assert_eq!(scripts(&["tar", "-I", "rm x", "-xf", "a.tar"]), ["rm x"]);
        assert_eq!(scripts(&["tar", "--to-command=rm x", "-xf", "a"]), ["rm x"]);
        assert_eq!(scripts(&["rsync", "-avze", "rm x", "a", "b:c"]), ["rm x"]);
        assert_eq!(scripts(&["rsync", "--rsh=rm x", "a", "b:c"]), ["rm x"]);
        assert_eq!(scripts(&["ssh", "-o", "ProxyCommand=rm x", "h"]), ["rm x"]);
        assert_eq!(scripts(&["ssh", "-oLocalCommand rm x", "h"]), ["rm x"]);
        assert_eq!(scripts(&["scp", "-S", "evil", "a", "h:b"]), ["evil"]);
        assert_eq!(scripts(&["man", "-P", "rm x", "ls"]), ["rm x"]);
        assert_eq!(
            scripts(&["zip", "-T", "-TT", "rm x", "a.zip", "f"]),
            ["rm x"]
        );
        assert!(scripts(&["ssh", "h", "ls"]).is_empty());
    }
}
