//! Permission rules in Claude Code's syntax — `Tool` or `Tool(specifier)` — plus the
//! seed's matchers (`=exact`, `~regex`, `!negation`), and the layer precedence that picks
//! the rule deciding a call (design.md §3).
//!
//! Rule names (`spec::RuleName`): `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash`,
//! `Agent` (specifier = subagent type), `mcp__server[__tool]` (globs allowed). Which tools
//! a name covers is said by each tool's permission spec (its `Definition`), not here: today
//! `Read` covers read_file, find_files and search_code, `Edit` covers write_file and
//! edit_file (Claude Code's Edit rules "apply to all built-in tools that edit files"). A
//! tool's own name or alias (`write_file`, `Task`) stands for its own rule name.
//!
//! Path specifiers are gitignore-style: `//abs` absolute, `~/x` home, `/x` relative to the
//! project root, `x` or `./x` relative to the project root (or the agent's cwd), matching at
//! any depth when it has no inner `/`. Command specifiers: `npm test:*` is a prefix at a
//! word boundary, `*` spans anything (spaces too), a trailing ` *` also matches the bare
//! command.

use std::path::{Path, PathBuf};

use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;

use super::spec::RuleName;
use super::{Layer, Verdict};

/// What a matching rule says: the engine's one ordered decision type (`allow`, `ask`,
/// `deny` in settings files, as before).
pub type RuleKind = Verdict;

/// The tool family a rule names.
#[derive(Debug, Clone)]
enum RuleTool {
    /// A family of built-in tools.
    Named(RuleName),
    /// An MCP name pattern (anchored regex).
    Mcp(Regex),
}

/// How a specifier matches its subject.
#[derive(Debug, Clone)]
enum Matcher {
    Any,
    Exact(String),
    Regex(Regex),
    Not(Box<Matcher>),
    /// Command or agent wildcard pattern (anchored regex), whether it has wildcards, and
    /// its literal text before the first wildcard.
    Wildcard(Regex, bool, String),
    /// Path glob, anchored at the filesystem root or relative to the project; `literal`
    /// when it names one anchored path without glob characters.
    Path {
        set: GlobSet,
        /// The globs of `set`, for the policy-wide index (`path_index.rs`).
        globs: Vec<Glob>,
        absolute: bool,
        literal: bool,
        /// The pattern's directories before its first glob character (`secrets/` of
        /// `secrets/**`; empty for `**/x`), absolute when `absolute`.
        prefix: String,
    },
}

/// One rule, with where it came from.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule as written.
    pub text: String,
    /// Allow, ask or deny.
    pub kind: RuleKind,
    /// Its layer.
    pub layer: Layer,
    /// The file it came from (none for session rules).
    pub file: Option<PathBuf>,
    /// Its index in that file's list.
    pub index: usize,
    tool: RuleTool,
    matcher: Matcher,
    /// Text every command it matches starts with (a wildcard pattern's literal head): a
    /// cheap test before the regex, since most command rules do not match most commands.
    command_prefix: String,
}

/// What a rule is matched against.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A file tool's real target.
    Path {
        /// The rule names that cover the tool (from its permission spec).
        names: &'a [RuleName],
        /// The resolved real path.
        real: &'a Path,
        /// Bases for relative patterns (project root, agent cwd).
        bases: &'a [PathBuf],
    },
    /// One part of a command.
    Command {
        /// The command without wrappers.
        text: &'a str,
        /// The command with its wrappers.
        full: &'a str,
        /// Whether wrappers raise privileges (then only `full` can be allowed).
        privileged: bool,
        /// Other spellings of what runs (`git push` for `/usr/bin/git -C . push`): seen
        /// by deny and ask rules only, so an allow rule never grows wider.
        forms: &'a [String],
        /// Arguments are appended at run time (`xargs git`).
        open: bool,
    },
    /// A subagent type.
    Agent(&'a str),
    /// An MCP tool name.
    Mcp(&'a str),
}

/// Why a rule was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Not `Tool` or `Tool(specifier)`.
    #[error("rule `{0}` is malformed: expected `Tool` or `Tool(specifier)`")]
    Malformed(String),
    /// The tool name is not one the engine knows.
    #[error(
        "rule `{0}` names an unknown tool (expected Read, Write, Edit, Glob, Grep, Bash, Agent or mcp__server__tool)"
    )]
    UnknownTool(String),
    /// The pattern does not compile.
    #[error("rule `{rule}`: {message}")]
    Pattern {
        /// The rule.
        rule: String,
        /// What is wrong.
        message: String,
    },
}

impl Rule {
    /// Parses one rule; `home` expands `~/` in path specifiers.
    pub fn parse(
        text: &str,
        kind: RuleKind,
        layer: Layer,
        home: Option<&Path>,
    ) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (name, spec) = match text.find('(') {
            Some(i) if text.ends_with(')') => (&text[..i], Some(&text[i + 1..text.len() - 1])),
            Some(_) => return Err(RuleError::Malformed(text.into())),
            None if text.contains(')') => return Err(RuleError::Malformed(text.into())),
            None => (text, None),
        };
        if name.is_empty() {
            return Err(RuleError::Malformed(text.into()));
        }
        let tool = if let Ok(n) = name.parse::<RuleName>() {
            RuleTool::Named(n)
        } else if name.starts_with("mcp__") {
            if spec.is_some() {
                return Err(RuleError::Malformed(text.into()));
            }
            // `mcp__server` covers every tool of the server.
            let re = wildcard_regex(name, false);
            let re = format!("{}(__.*)?$", re.trim_end_matches('$'));
            RuleTool::Mcp(Regex::new(&re).map_err(|e| pattern_err(text, e))?)
        } else {
            // A tool's own name or alias: its own rule name, from its definition.
            match crate::tools::builtin_permission(name).and_then(|s| s.own_rule_name()) {
                Some(n) => RuleTool::Named(n),
                None => return Err(RuleError::UnknownTool(text.into())),
            }
        };
        let matcher = match spec.map(str::trim) {
            None | Some("") | Some("*") => Matcher::Any,
            Some(s) => {
                let path = matches!(tool, RuleTool::Named(n) if n.takes_paths());
                parse_matcher(text, s, path, home)?
            }
        };
        let command_prefix = match (&tool, &matcher, spec) {
            (RuleTool::Named(RuleName::Bash), Matcher::Wildcard(..), Some(s)) => literal_head(s),
            _ => String::new(),
        };
        Ok(Rule {
            text: text.to_string(),
            kind,
            layer,
            file: None,
            index: 0,
            tool,
            matcher,
            command_prefix,
        })
    }

    /// For a path rule matched by globs alone: its globs and whether they are absolute
    /// (else relative to the project root or cwd). Used to index every path rule at once.
    pub(crate) fn path_globs(&self) -> Option<(&[Glob], bool)> {
        match (&self.tool, &self.matcher) {
            (
                RuleTool::Named(n),
                Matcher::Path {
                    globs, absolute, ..
                },
            ) if n.takes_paths() => Some((globs, *absolute)),
            _ => None,
        }
    }

    /// Whether the rule covers a tool that these rule names cover (its spec's).
    pub(crate) fn covers(&self, names: &[RuleName]) -> bool {
        matches!(self.tool, RuleTool::Named(n) if names.contains(&n))
    }

    /// Whether the rule matches the subject.
    pub fn matches(&self, subject: &Subject<'_>) -> bool {
        match *subject {
            Subject::Path { names, real, bases } => {
                self.covers(names) && path_matches(&self.matcher, &PathProbe::new(real, bases))
            }
            Subject::Command {
                text,
                full,
                privileged,
                forms,
                open,
            } => {
                if !matches!(self.tool, RuleTool::Named(RuleName::Bash)) {
                    return false;
                }
                // Deny and ask see through every wrapper and spelling, and a word computed
                // at run time could be anything; allow sees only the command as written,
                // through a wrapper only when it does not raise privileges (`sudo x` needs
                // its own rule).
                let m = |s: &str| self.command_text_matches(s);
                match self.kind {
                    RuleKind::Allow if privileged => m(full),
                    RuleKind::Allow => m(text) || (full != text && m(full)),
                    _ => {
                        std::iter::once(text)
                            .chain(forms.iter().map(String::as_str))
                            .any(|s| m(s) || could_match(&self.matcher, s, open))
                            || (full != text && m(full))
                    }
                }
            }
            Subject::Agent(t) => {
                matches!(self.tool, RuleTool::Named(RuleName::Agent))
                    && str_matches(&self.matcher, t)
            }
            Subject::Mcp(name) => match &self.tool {
                RuleTool::Mcp(re) => re.is_match(name),
                _ => false,
            },
        }
    }

    /// Whether the rule names one exact target (no wildcard, prefix, regex or negation):
    /// only such an allow rule lets a dangerous command or a protected file through.
    pub fn is_exact(&self) -> bool {
        matches!(
            self.matcher,
            Matcher::Exact(_)
                | Matcher::Wildcard(_, false, _)
                | Matcher::Path { literal: true, .. }
        )
    }

    /// Whether this rule, for a tool covered by `names`, may match something inside the
    /// directory `dir` (or `dir` itself): a recursive search of `dir` reads all of it.
    /// Fails closed: regexes, negations and patterns that match at any depth may.
    pub fn could_match_below(&self, names: &[RuleName], dir: &Path, bases: &[PathBuf]) -> bool {
        if !self.covers(names) {
            return false;
        }
        let overlaps = |p: &Path| p.starts_with(dir) || dir.starts_with(p);
        match &self.matcher {
            Matcher::Path {
                absolute: true,
                prefix,
                ..
            } => overlaps(Path::new(prefix)),
            Matcher::Path { prefix, .. } if prefix.is_empty() => true,
            Matcher::Path { prefix, .. } => bases.iter().any(|b| overlaps(&b.join(prefix))),
            Matcher::Exact(e) if Path::new(e).is_absolute() => overlaps(Path::new(e)),
            Matcher::Exact(e) => bases.iter().any(|b| overlaps(&b.join(e))),
            _ => true,
        }
    }

    /// Whether this is a deny or ask rule on commands: one that an opaque command (whose
    /// real text is unknown) might be meant to hit.
    pub fn guards_commands(&self) -> bool {
        matches!(self.tool, RuleTool::Named(RuleName::Bash)) && self.kind != RuleKind::Allow
    }

    /// Whether the specifier matches one command text. `command_prefix` is a literal
    /// head every match starts with (the regex is anchored at it), so testing it first
    /// only skips regexes that could not match: same answer, less work. It is applied to
    /// each text on its own (the command, its full text, every other spelling), never
    /// to `could_match`, which judges texts whose words are not known yet.
    fn command_text_matches(&self, s: &str) -> bool {
        s.starts_with(self.command_prefix.as_str()) && str_matches(&self.matcher, s)
    }
}

/// Whether a command whose words after the first `$` (a variable or substitution, shown
/// as `$VAR`/`$(…)`) are unknown — or, when `open`, that gets more arguments at run
/// time — could match the pattern for some value of them. Fails closed: a regex or a
/// negation could match anything.
fn could_match(m: &Matcher, s: &str, open: bool) -> bool {
    let known = match s.find('$') {
        Some(i) => &s[..i],
        None if open => s,
        None => return false,
    };
    let literal = match m {
        Matcher::Wildcard(_, _, lit) => lit.as_str(),
        Matcher::Exact(e) => e.as_str(),
        _ => return true,
    };
    literal.starts_with(known) || known.starts_with(literal)
}

fn pattern_err(rule: &str, e: impl std::fmt::Display) -> RuleError {
    RuleError::Pattern {
        rule: rule.into(),
        message: e.to_string(),
    }
}

fn parse_matcher(
    rule: &str,
    spec: &str,
    path: bool,
    home: Option<&Path>,
) -> Result<Matcher, RuleError> {
    if let Some(rest) = spec.strip_prefix('!') {
        return Ok(Matcher::Not(Box::new(parse_matcher(
            rule, rest, path, home,
        )?)));
    }
    if let Some(rest) = spec.strip_prefix('=') {
        return Ok(Matcher::Exact(rest.to_string()));
    }
    if let Some(rest) = spec.strip_prefix('~')
        && !(path && (rest.is_empty() || rest.starts_with('/')))
    {
        return Regex::new(rest)
            .map(Matcher::Regex)
            .map_err(|e| pattern_err(rule, e));
    }
    if path {
        return path_matcher(rule, spec, home);
    }
    let spec = collapse_spaces(spec);
    let wild = spec.contains('*');
    let literal = spec
        .strip_suffix(":*")
        .unwrap_or(&spec)
        .split('*')
        .next()
        .unwrap_or_default()
        .to_string();
    Regex::new(&wildcard_regex(&spec, true))
        .map(|re| Matcher::Wildcard(re, wild, literal))
        .map_err(|e| pattern_err(rule, e))
}

/// An anchored regex for a command/agent pattern (see the module comment).
fn wildcard_regex(spec: &str, command: bool) -> String {
    let (body, tail) = if let Some(p) = spec.strip_suffix(":*").filter(|_| command) {
        (p, "( .*)?")
    } else if let Some(p) = spec.strip_suffix(" *").filter(|_| command) {
        (p, "( .*)?")
    } else {
        (spec, "")
    };
    let parts: Vec<String> = body.split('*').map(regex::escape).collect();
    format!("(?s)^{}{}$", parts.join(".*"), tail)
}

/// The literal text a wildcard command pattern's matches start with: the collapsed
/// specifier up to its first `*`, without the `:` or space before it (`ls *` also
/// matches the bare `ls`).
fn literal_head(spec: &str) -> String {
    let spec = collapse_spaces(spec.trim());
    let head = spec.split('*').next().unwrap_or("");
    head.trim_end_matches([':', ' ']).to_string()
}

fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn path_matcher(rule: &str, spec: &str, home: Option<&Path>) -> Result<Matcher, RuleError> {
    let (pattern, absolute) = if let Some(abs) = spec.strip_prefix("//") {
        (format!("/{abs}"), true)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        let Some(h) = home else {
            return Err(pattern_err(
                rule,
                "`~/` needs a home directory (HOME is not set)",
            ));
        };
        (format!("{}/{rest}", h.display()), true)
    } else if let Some(rel) = spec.strip_prefix('/') {
        (rel.to_string(), false)
    } else {
        let rel = spec.strip_prefix("./").unwrap_or(spec);
        let inner = rel.trim_end_matches('/');
        if inner.contains('/') || inner.starts_with("**") {
            (rel.to_string(), false)
        } else {
            (format!("**/{rel}"), false)
        }
    };
    let base = pattern.trim_end_matches('/');
    let mut set = GlobSetBuilder::new();
    let mut globs = Vec::new();
    // A pattern naming a directory also covers everything below it (gitignore).
    for p in [base.to_string(), format!("{base}/**")] {
        let glob = GlobBuilder::new(&p)
            .literal_separator(true)
            .build()
            .map_err(|e| pattern_err(rule, e))?;
        set.add(glob.clone());
        globs.push(glob);
    }
    let set = set.build().map_err(|e| pattern_err(rule, e))?;
    let literal = !base.contains(['*', '?', '[', '{', '\\']);
    let fixed = &base[..base.find(['*', '?', '[', '{', '\\']).unwrap_or(base.len())];
    let prefix = match fixed.rfind('/') {
        _ if literal => base.to_string(),
        Some(i) => fixed[..i].to_string(),
        None => String::new(),
    };
    Ok(Matcher::Path {
        set,
        globs,
        absolute,
        literal,
        prefix,
    })
}

fn str_matches(m: &Matcher, s: &str) -> bool {
    match m {
        Matcher::Any => true,
        Matcher::Exact(e) => e == s,
        Matcher::Regex(re) => re.is_match(s),
        Matcher::Not(inner) => !str_matches(inner, s),
        // Command subjects are parts whose words are already joined by single spaces.
        Matcher::Wildcard(re, ..) => re.is_match(s),
        Matcher::Path { set, .. } => set.is_match(s),
    }
}

/// A path subject with its glob candidates built once, not once per rule.
struct PathProbe<'a> {
    real: &'a Path,
    rels: Vec<&'a Path>,
    real_candidate: Candidate<'a>,
    rel_candidates: Vec<Candidate<'a>>,
}

impl<'a> PathProbe<'a> {
    fn new(real: &'a Path, bases: &'a [PathBuf]) -> Self {
        let rels: Vec<&Path> = bases
            .iter()
            .filter_map(|b| real.strip_prefix(b).ok())
            .collect();
        PathProbe {
            real,
            real_candidate: Candidate::new(real),
            rel_candidates: rels.iter().map(|r| Candidate::new(*r)).collect(),
            rels,
        }
    }
}

fn path_matches(m: &Matcher, p: &PathProbe<'_>) -> bool {
    match m {
        Matcher::Any => true,
        Matcher::Not(inner) => !path_matches(inner, p),
        Matcher::Path {
            set,
            absolute: true,
            ..
        } => set.is_match_candidate(&p.real_candidate),
        Matcher::Path { set, .. } => p.rel_candidates.iter().any(|c| set.is_match_candidate(c)),
        Matcher::Exact(e) => {
            Path::new(e) == p.real
                || p.rels
                    .iter()
                    .any(|r| Path::new(e.trim_start_matches('/')) == *r)
        }
        Matcher::Regex(re) => {
            re.is_match(&p.real.to_string_lossy())
                || p.rels.iter().any(|r| re.is_match(&r.to_string_lossy()))
        }
        Matcher::Wildcard(re, ..) => re.is_match(&p.real.to_string_lossy()),
    }
}

/// Picks the rule that decides a subject: a deny in any layer wins; otherwise the highest
/// layer with a match decides, and within a layer ask beats allow. `rules` may be in any
/// order.
pub fn decide<'a>(rules: &'a [Rule], subject: &Subject<'_>) -> Option<&'a Rule> {
    let probe = match *subject {
        Subject::Path { names, real, bases } => Some((names, PathProbe::new(real, bases))),
        _ => None,
    };
    let mut best: Option<&Rule> = None;
    for r in rules {
        let matched = match &probe {
            Some((names, p)) => r.covers(names) && path_matches(&r.matcher, p),
            None => r.matches(subject),
        };
        if !matched {
            continue;
        }
        let better = match best {
            None => true,
            Some(b) => rank(r) < rank(b),
        };
        if better {
            best = Some(r);
        }
    }
    best
}

/// Lower is stronger: every deny beats everything, then by layer, then the stronger
/// verdict (ask before allow).
pub(crate) fn rank(r: &Rule) -> (bool, Layer, std::cmp::Reverse<Verdict>) {
    (r.kind != Verdict::Deny, r.layer, std::cmp::Reverse(r.kind))
}

/// Escapes glob metacharacters so a literal path can be used as a pattern.
pub fn escape_glob(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        Rule::parse(
            text,
            RuleKind::Allow,
            Layer::Project,
            Some(Path::new("/home/u")),
        )
        .unwrap()
    }

    fn cmd(r: &Rule, text: &str) -> bool {
        r.matches(&Subject::Command {
            text,
            full: text,
            privileged: false,
            forms: &[],
            open: false,
        })
    }

    #[test]
    fn the_literal_prefix_only_skips_what_could_not_match() {
        let patterns = [
            "Bash(git push:*)",
            "Bash(ls *)",
            "Bash(ls :*)",
            "Bash(a::*)",
            "Bash(npm  run *test*)",
            "Bash(git status)",
            "Bash(*push*)",
            "Bash(=ls *.rs)",
            "Bash(~^rm )",
            "Bash(!git *)",
        ];
        let texts = [
            "git push",
            "git push origin",
            "git pushx",
            "ls",
            "ls -la",
            "lsx",
            "a:",
            "a: x",
            "npm run my-test x",
            "git status",
            "/usr/bin/git push",
            "ls *.rs",
            "rm -rf x",
            "",
        ];
        for p in patterns {
            let r = rule(p);
            for t in texts {
                assert_eq!(
                    r.command_text_matches(t),
                    str_matches(&r.matcher, t),
                    "{p} on `{t}`"
                );
            }
        }
        // Deny rules still see other spellings and open parts past the prefix.
        let deny = Rule::parse("Bash(git push:*)", RuleKind::Deny, Layer::User, None).unwrap();
        let forms = ["git push".to_string()];
        let seen = |text: &str, forms: &[String], open: bool| {
            deny.matches(&Subject::Command {
                text,
                full: text,
                privileged: false,
                forms,
                open,
            })
        };
        assert!(seen("/usr/bin/git push", &forms, false));
        assert!(seen("git", &[], true));
        assert!(!seen("git", &[], false));
        assert!(seen("$X push", &[], false));
    }

    #[test]
    fn command_patterns() {
        let table = [
            ("Bash", "anything at all", true),
            ("Bash(*)", "rm x", true),
            ("Bash(npm run test:*)", "npm run test", true),
            ("Bash(npm run test:*)", "npm run test -- --watch", true),
            ("Bash(npm run test:*)", "npm run testx", false),
            ("Bash(npm run build)", "npm run build", true),
            ("Bash(npm run build)", "npm run build && rm -rf x", false),
            ("Bash(git * main)", "git push origin main", true),
            ("Bash(ls *)", "ls", true),
            ("Bash(ls *)", "ls -la", true),
            ("Bash(ls *)", "lsof", false),
            ("Bash(=git status)", "git status", true),
            ("Bash(=git status)", "git status -s", false),
            ("Bash(~^cargo (test|check)\\b)", "cargo test --lib", true),
            ("Bash(~^cargo (test|check)\\b)", "cargo publish", false),
            ("Bash(!git *)", "rm x", true),
            ("Bash(!git *)", "git log", false),
        ];
        for (r, c, want) in table {
            assert_eq!(cmd(&rule(r), c), want, "{r} vs {c}");
        }
    }

    #[test]
    fn path_patterns() {
        let bases = vec![PathBuf::from("/p")];
        let spec = |tool: &str| crate::tools::builtin_permission(tool).unwrap().rule_names;
        let (read_file, search_code, write_file, edit_file) = (
            spec("read_file"),
            spec("search_code"),
            spec("write_file"),
            spec("edit_file"),
        );
        let m = |r: &str, names: &[RuleName], path: &str| {
            rule(r).matches(&Subject::Path {
                names,
                real: Path::new(path),
                bases: &bases,
            })
        };
        let table = [
            ("Read(src/**)", &read_file, "/p/src/a/b.rs", true),
            ("Read(src/**)", &read_file, "/p/lib/src/b.rs", false),
            ("Read(*.env)", &read_file, "/p/deep/x/.env", true),
            ("Read(.env)", &read_file, "/p/deep/x/.env", true),
            ("Read(*.env)", &read_file, "/p/deep/prod.env", true),
            ("Read(secrets)", &read_file, "/p/a/secrets/key", true),
            ("Read(/src/*.rs)", &read_file, "/p/src/a.rs", true),
            ("Read(/src/*.rs)", &read_file, "/p/src/a/b.rs", false),
            ("Read(//etc/**)", &read_file, "/etc/hosts", true),
            ("Read(~/.env)", &read_file, "/home/u/.env", true),
            ("Read(src/**)", &search_code, "/p/src/x", true),
            ("Glob(src/**)", &read_file, "/p/src/x", false),
            ("Edit(src/**)", &write_file, "/p/src/x", true),
            ("Edit(src/**)", &edit_file, "/p/src/x", true),
            ("Write(src/**)", &edit_file, "/p/src/x", false),
            ("Edit(!src/**)", &write_file, "/p/docs/x", true),
            ("Edit(=/p/a.txt)", &write_file, "/p/a.txt", true),
            ("Edit(~^/p/.*\\.md$)", &write_file, "/p/x.md", true),
            // A tool's own name stands for its own rule name (from its definition).
            ("write_file(src/**)", &write_file, "/p/src/x", true),
            ("write_file(src/**)", &edit_file, "/p/src/x", false),
            ("read_file(src/**)", &search_code, "/p/src/x", true),
        ];
        for (r, kind, path, want) in table {
            assert_eq!(m(r, kind, path), want, "{r} vs {path}");
        }
    }

    #[test]
    fn mcp_and_agent_names() {
        let mcp = |r: &str, n: &str| rule(r).matches(&Subject::Mcp(n));
        assert!(mcp("mcp__github", "mcp__github__create_issue"));
        assert!(mcp("mcp__github__*", "mcp__github__create_issue"));
        assert!(mcp("mcp__*__read", "mcp__fs__read"));
        assert!(!mcp("mcp__github", "mcp__githubx__a"));
        assert!(!mcp("mcp__github__list", "mcp__github__delete"));
        assert!(rule("Agent(Explore)").matches(&Subject::Agent("Explore")));
        assert!(!rule("Agent(Explore)").matches(&Subject::Agent("general-purpose")));
        assert!(rule("Task").matches(&Subject::Agent("x")));
    }

    #[test]
    fn malformed_and_unknown_rules_are_errors() {
        for bad in ["Bash(unclosed", "Read)", "(x)", "mcp__a(b)"] {
            assert!(
                matches!(
                    Rule::parse(bad, RuleKind::Deny, Layer::User, None),
                    Err(RuleError::Malformed(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            Rule::parse("WebFetch(x)", RuleKind::Deny, Layer::User, None),
            Err(RuleError::UnknownTool(_))
        ));
        assert!(matches!(
            Rule::parse("Bash(~(unclosed)", RuleKind::Deny, Layer::User, None),
            Err(RuleError::Pattern { .. })
        ));
    }

    #[test]
    fn precedence_deny_anywhere_then_layer_then_ask() {
        let mk = |t: &str, k, l| Rule::parse(t, k, l, None).unwrap();
        let s = Subject::Command {
            text: "git push",
            full: "git push",
            privileged: false,
            forms: &[],
            open: false,
        };
        // A project deny beats a session allow (a cloned repo cannot be out-voted… and a
        // user deny cannot be unlocked by a project allow).
        let rules = vec![
            mk("Bash(git push)", RuleKind::Allow, Layer::Session),
            mk("Bash(git:*)", RuleKind::Deny, Layer::User),
        ];
        assert_eq!(decide(&rules, &s).unwrap().kind, RuleKind::Deny);
        // Otherwise the highest layer decides: local allow over project ask.
        let rules = vec![
            mk("Bash(git:*)", RuleKind::Ask, Layer::Project),
            mk("Bash(git push)", RuleKind::Allow, Layer::Local),
        ];
        assert_eq!(decide(&rules, &s).unwrap().kind, RuleKind::Allow);
        // Within a layer ask beats allow.
        let rules = vec![
            mk("Bash(git push)", RuleKind::Allow, Layer::Local),
            mk("Bash(git:*)", RuleKind::Ask, Layer::Local),
        ];
        assert_eq!(decide(&rules, &s).unwrap().kind, RuleKind::Ask);
    }

    #[test]
    fn allow_does_not_see_through_sudo() {
        let r = rule("Bash(npm test)");
        let s = Subject::Command {
            text: "npm test",
            full: "sudo npm test",
            privileged: true,
            forms: &[],
            open: false,
        };
        assert!(!r.matches(&s));
        let d = Rule::parse("Bash(rm:*)", RuleKind::Deny, Layer::User, None).unwrap();
        let s = Subject::Command {
            text: "rm x",
            full: "sudo rm x",
            privileged: true,
            forms: &[],
            open: false,
        };
        assert!(d.matches(&s), "deny sees through sudo");
    }

    #[test]
    fn deny_sees_other_spellings_and_unknown_words_but_allow_does_not() {
        let mk = |t: &str, k| Rule::parse(t, k, Layer::User, None).unwrap();
        let forms = vec!["git push".to_string()];
        let s = |text: &'static str, open| Subject::Command {
            text,
            full: text,
            privileged: false,
            forms: &forms,
            open,
        };
        let deny = mk("Bash(git push:*)", RuleKind::Deny);
        let allow = mk("Bash(git push:*)", RuleKind::Allow);
        assert!(deny.matches(&s("git -C . push", false)));
        assert!(!allow.matches(&s("git -C . push", false)));
        let none: Vec<String> = Vec::new();
        let bare = |text: &'static str, open| Subject::Command {
            text,
            full: text,
            privileged: false,
            forms: &none,
            open,
        };
        assert!(
            deny.matches(&bare("git $VAR", false)),
            "the word could be push"
        );
        assert!(deny.matches(&bare("git pu$VAR", false)));
        assert!(deny.matches(&bare("$(…) push", false)));
        assert!(deny.matches(&bare("git", true)), "xargs git");
        assert!(!deny.matches(&bare("git log $VAR", false)));
        assert!(!deny.matches(&bare("git", false)));
        assert!(!allow.matches(&bare("git $VAR", false)));
    }
}
