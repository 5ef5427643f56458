//! Permission rules in Claude Code's syntax — `Tool` or `Tool(specifier)` — plus the
//! seed's matchers (`=exact`, `~regex`, `!negation`), and the layer precedence that picks
//! the rule deciding a call (design.md §3).
//!
//! Rule names: `Read` (read_file, find_files, search_code), `Write` (write_file), `Edit`
//! (write_file and edit_file: Claude Code's Edit rules "apply to all built-in tools that
//! edit files"), `Glob` (find_files), `Grep` (search_code), `Bash` (run_command), `Agent`
//! or `Task` (agent; specifier = subagent type), `mcp__server[__tool]` (globs allowed).
//! The snake_case tool names are accepted as well.
//!
//! Path specifiers are gitignore-style: `//abs` absolute, `~/x` home, `/x` relative to the
//! project root, `x` or `./x` relative to the project root (or the agent's cwd), matching at
//! any depth when it has no inner `/`. Command specifiers: `npm test:*` is a prefix at a
//! word boundary, `*` spans anything (spaces too), a trailing ` *` also matches the bare
//! command.

use std::path::{Path, PathBuf};

use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::Layer;
use super::classify::ToolKind;

/// What a matching rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Run without asking.
    Allow,
    /// Ask a human.
    Ask,
    /// Refuse.
    Deny,
}

/// The tool family a rule names.
#[derive(Debug, Clone)]
enum RuleTool {
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    Bash,
    Agent,
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
    /// Command or agent wildcard pattern (anchored regex) and whether it has wildcards.
    Wildcard(Regex, bool),
    /// Path glob, anchored at the filesystem root or relative to the project; `literal`
    /// when it names one anchored path without glob characters.
    Path {
        set: GlobSet,
        /// The globs of `set`, for the policy-wide index (`path_index.rs`).
        globs: Vec<Glob>,
        absolute: bool,
        literal: bool,
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
        /// The tool.
        kind: ToolKind,
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
        let tool = match name {
            "Read" | "read_file" => RuleTool::Read,
            "Write" | "write_file" => RuleTool::Write,
            "Edit" | "edit_file" => RuleTool::Edit,
            "Glob" | "find_files" => RuleTool::Glob,
            "Grep" | "search_code" => RuleTool::Grep,
            "Bash" | "run_command" => RuleTool::Bash,
            "Agent" | "Task" | "agent" => RuleTool::Agent,
            n if n.starts_with("mcp__") => {
                if spec.is_some() {
                    return Err(RuleError::Malformed(text.into()));
                }
                // `mcp__server` covers every tool of the server.
                let re = wildcard_regex(n, false);
                let re = format!("{}(__.*)?$", re.trim_end_matches('$'));
                RuleTool::Mcp(Regex::new(&re).map_err(|e| pattern_err(text, e))?)
            }
            _ => return Err(RuleError::UnknownTool(text.into())),
        };
        let matcher = match spec.map(str::trim) {
            None | Some("") | Some("*") => Matcher::Any,
            Some(s) => {
                let path = matches!(
                    tool,
                    RuleTool::Read
                        | RuleTool::Write
                        | RuleTool::Edit
                        | RuleTool::Glob
                        | RuleTool::Grep
                );
                parse_matcher(text, s, path, home)?
            }
        };
        let command_prefix = match (&tool, &matcher, spec) {
            (RuleTool::Bash, Matcher::Wildcard(..), Some(s)) => literal_head(s),
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
        match &self.matcher {
            Matcher::Path {
                globs, absolute, ..
            } if !matches!(
                self.tool,
                RuleTool::Bash | RuleTool::Agent | RuleTool::Mcp(_)
            ) =>
            {
                Some((globs, *absolute))
            }
            _ => None,
        }
    }

    /// Whether the rule covers this tool kind.
    pub(crate) fn covers(&self, kind: ToolKind) -> bool {
        use ToolKind as K;
        matches!(
            (&self.tool, kind),
            (RuleTool::Read, K::ReadFile | K::FindFiles | K::SearchCode)
                | (RuleTool::Write, K::WriteFile)
                | (RuleTool::Edit, K::WriteFile | K::EditFile)
                | (RuleTool::Glob, K::FindFiles)
                | (RuleTool::Grep, K::SearchCode)
                | (RuleTool::Bash, K::RunCommand)
                | (RuleTool::Agent, K::Agent)
        )
    }

    /// Whether the rule matches the subject.
    pub fn matches(&self, subject: &Subject<'_>) -> bool {
        match *subject {
            Subject::Path { kind, real, bases } => {
                self.covers(kind) && path_matches(&self.matcher, &PathProbe::new(real, bases))
            }
            Subject::Command {
                text,
                full,
                privileged,
            } => {
                if !matches!(self.tool, RuleTool::Bash) {
                    return false;
                }
                let p = self.command_prefix.as_str();
                if !text.starts_with(p) && !full.starts_with(p) {
                    return false;
                }
                // Deny and ask see through every wrapper; allow sees through a wrapper
                // only when it does not raise privileges (`sudo x` needs its own rule).
                let m = |s: &str| str_matches(&self.matcher, s);
                match self.kind {
                    RuleKind::Allow if privileged => m(full),
                    _ => m(text) || (full != text && m(full)),
                }
            }
            Subject::Agent(t) => {
                matches!(self.tool, RuleTool::Agent) && str_matches(&self.matcher, t)
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
            Matcher::Exact(_) | Matcher::Wildcard(_, false) | Matcher::Path { literal: true, .. }
        )
    }
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
    Regex::new(&wildcard_regex(&spec, true))
        .map(|re| Matcher::Wildcard(re, wild))
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
    Ok(Matcher::Path {
        set,
        globs,
        absolute,
        literal,
    })
}

fn str_matches(m: &Matcher, s: &str) -> bool {
    match m {
        Matcher::Any => true,
        Matcher::Exact(e) => e == s,
        Matcher::Regex(re) => re.is_match(s),
        Matcher::Not(inner) => !str_matches(inner, s),
        // Command subjects are parts whose words are already joined by single spaces.
        Matcher::Wildcard(re, _) => re.is_match(s),
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
        Matcher::Wildcard(re, _) => re.is_match(&p.real.to_string_lossy()),
    }
}

/// Picks the rule that decides a subject: a deny in any layer wins; otherwise the highest
/// layer with a match decides, and within a layer ask beats allow. `rules` may be in any
/// order.
pub fn decide<'a>(rules: &'a [Rule], subject: &Subject<'_>) -> Option<&'a Rule> {
    let probe = match *subject {
        Subject::Path { kind, real, bases } => Some((kind, PathProbe::new(real, bases))),
        _ => None,
    };
    let mut best: Option<&Rule> = None;
    for r in rules {
        let matched = match &probe {
            Some((kind, p)) => r.covers(*kind) && path_matches(&r.matcher, p),
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

/// Lower is stronger: every deny beats everything, then by layer, then ask before allow.
pub(crate) fn rank(r: &Rule) -> (u8, Layer, u8) {
    match r.kind {
        RuleKind::Deny => (0, r.layer, 0),
        RuleKind::Ask => (1, r.layer, 0),
        RuleKind::Allow => (1, r.layer, 1),
    }
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
        })
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
        let m = |r: &str, kind: ToolKind, path: &str| {
            rule(r).matches(&Subject::Path {
                kind,
                real: Path::new(path),
                bases: &bases,
            })
        };
        use ToolKind::*;
        let table = [
            ("Read(src/**)", ReadFile, "/p/src/a/b.rs", true),
            ("Read(src/**)", ReadFile, "/p/lib/src/b.rs", false),
            ("Read(*.env)", ReadFile, "/p/deep/x/.env", true),
            ("Read(.env)", ReadFile, "/p/deep/x/.env", true),
            ("Read(*.env)", ReadFile, "/p/deep/prod.env", true),
            ("Read(secrets)", ReadFile, "/p/a/secrets/key", true),
            ("Read(/src/*.rs)", ReadFile, "/p/src/a.rs", true),
            ("Read(/src/*.rs)", ReadFile, "/p/src/a/b.rs", false),
            ("Read(//etc/**)", ReadFile, "/etc/hosts", true),
            ("Read(~/.env)", ReadFile, "/home/u/.env", true),
            ("Read(src/**)", SearchCode, "/p/src/x", true),
            ("Glob(src/**)", ReadFile, "/p/src/x", false),
            ("Edit(src/**)", WriteFile, "/p/src/x", true),
            ("Edit(src/**)", EditFile, "/p/src/x", true),
            ("Write(src/**)", EditFile, "/p/src/x", false),
            ("Edit(!src/**)", WriteFile, "/p/docs/x", true),
            ("Edit(=/p/a.txt)", WriteFile, "/p/a.txt", true),
            ("Edit(~^/p/.*\\.md$)", WriteFile, "/p/x.md", true),
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
        };
        assert!(!r.matches(&s));
        let d = Rule::parse("Bash(rm:*)", RuleKind::Deny, Layer::User, None).unwrap();
        let s = Subject::Command {
            text: "rm x",
            full: "sudo rm x",
            privileged: true,
        };
        assert!(d.matches(&s), "deny sees through sudo");
    }
}
