//! Permission rules in Claude Code's syntax — `Tool` or `Tool(specifier)` — plus the
//! seed's matchers (`=exact`, `~regex`, `!negation`), and the layer precedence that picks
//! the rule deciding a call (design.md §3).
//!
//! Rule names (`spec::RuleName`): `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash`,
//! `Agent` (specifier = subagent type), `WebFetch` (specifier = `domain:HOST`, written as
//! a `sandbox.network.allowedDomains` entry: `example.com` exactly, `*.example.com` its
//! subdomains, an optional `:port`; names compare case-insensitively),
//! `mcp__server[__tool]` (globs allowed). Which tools a name covers is each tool's
//! permission spec's to say (its `Definition`); a tool's own name or alias (`write_file`,
//! `Task`) stands for its own rule name.
//!
//! Path specifiers are gitignore-style: `//abs` absolute, `~/x` home, `/x` relative to the
//! project root, `x` or `./x` relative to the project root (or the agent's cwd), matching at
//! any depth when it has no inner `/`. Command specifiers: `npm test:*` is a prefix at a
//! word boundary, `*` spans anything (spaces too), a trailing ` *` also matches the bare
//! command.
//!
//! This file holds the rule type, its parsing and the precedence (`decide`, `rank`);
//! `matcher` holds how a specifier matches (paths, wildcards, regexes), `command` how a
//! rule matches one part of a command, `host` how a `WebFetch` rule matches a host.

mod command;
mod host;
mod matcher;

use std::path::{Path, PathBuf};

use globset::Glob;
use regex::Regex;

use super::spec::RuleName;
use super::{Layer, Verdict};
use command::literal_head;
use host::{domain_matcher, host_matches};
use matcher::{
    Matcher, PathProbe, Trailing, parse_matcher, path_matches, str_matches, wildcard_regex,
};

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

/// Where everything a path rule can match lies (`Rule::anchor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor<'a> {
    /// Anywhere (a pattern matching at any depth, a regex, a negation, a whole tool).
    Anywhere,
    /// At or below this absolute path.
    Absolute(&'a str),
    /// At or below this path relative to each base (project root, agent cwd).
    Relative(&'a str),
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
    /// The server a web fetch reaches (`web::FetchUrl`'s host and port).
    Host {
        /// The host, normalised (lowercase, no trailing dot, IPv6 without brackets).
        host: &'a str,
        /// The port.
        port: u16,
    },
    /// An MCP tool name.
    Mcp(&'a str),
}

impl<'a> Subject<'a> {
    /// A command written out as `text`: no wrappers, spellings or appended arguments.
    pub fn command(text: &'a str) -> Self {
        Subject::Command {
            text,
            full: text,
            privileged: false,
            forms: &[],
            open: false,
        }
    }
}

/// Why a rule was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Not `Tool` or `Tool(specifier)`.
    #[error("rule `{0}` is malformed: expected `Tool` or `Tool(specifier)`")]
    Malformed(String),
    /// The tool name is not one the engine knows.
    #[error(
        "rule `{0}` names an unknown tool (expected Read, Write, Edit, Glob, Grep, Bash, Agent, WebFetch or mcp__server__tool)"
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
    /// The built-in rule name this rule is for (`None`: an MCP rule).
    pub fn rule_name(&self) -> Option<RuleName> {
        match &self.tool {
            RuleTool::Named(n) => Some(*n),
            RuleTool::Mcp(_) => None,
        }
    }

    /// Whether the rule covers every call of its tool (no specifier, `()` or `(*)`).
    pub fn covers_whole_tool(&self) -> bool {
        matches!(self.matcher, Matcher::Any)
    }

    /// The specifier as written (`python:*` of `Bash(python:*)`), if any.
    pub fn specifier(&self) -> Option<&str> {
        let open = self.text.find('(')?;
        self.text[open + 1..].strip_suffix(')').map(str::trim)
    }

    /// Parses one rule; `home` expands `~/` in path specifiers. `tool_rule_name` is the
    /// tool catalog's lookup of a tool's own rule name by the tool's name or alias
    /// (`write_file` → `Write`, `Task` → `Agent`; `None`: no such tool, or one without a
    /// rule name), handed in so that the engine never imports the catalog. The root crate's
    /// `Rule::parse` (`tools::rule_names::ParseRule`) passes the built-in tools' lookup.
    pub fn parse_with(
        text: &str,
        kind: RuleKind,
        layer: Layer,
        home: Option<&Path>,
        tool_rule_name: &dyn Fn(&str) -> Option<RuleName>,
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
            let re = wildcard_regex(name, Trailing::Wildcard);
            let re = format!("{}(__.*)?$", re.trim_end_matches('$'));
            RuleTool::Mcp(Regex::new(&re).map_err(|e| pattern_err(text, e))?)
        } else {
            // A tool's own name or alias: its own rule name, from its definition.
            let n = tool_rule_name(name).ok_or_else(|| RuleError::UnknownTool(text.into()))?;
            RuleTool::Named(n)
        };
        let matcher = match spec.map(str::trim) {
            None | Some("") | Some("*") => Matcher::Any,
            Some(s) if matches!(tool, RuleTool::Named(RuleName::WebFetch)) => {
                domain_matcher(text, s)?
            }
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
    pub fn path_globs(&self) -> Option<(&[Glob], bool)> {
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

    /// Text every command the rule matches starts with (empty when unknown, or not a
    /// command rule).
    pub(crate) fn command_head(&self) -> &str {
        &self.command_prefix
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
            } => self.matches_command(text, full, privileged, forms, open),
            Subject::Agent(t) => {
                matches!(self.tool, RuleTool::Named(RuleName::Agent))
                    && str_matches(&self.matcher, t)
            }
            Subject::Host { host, port } => {
                matches!(self.tool, RuleTool::Named(RuleName::WebFetch))
                    && host_matches(&self.matcher, host, port)
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
    /// (`scopes::Scopes` answers the same question for every rule at once.)
    pub fn could_match_below(&self, names: &[RuleName], dir: &Path, bases: &[PathBuf]) -> bool {
        if !self.covers(names) {
            return false;
        }
        let overlaps = |p: &Path| p.starts_with(dir) || dir.starts_with(p);
        match self.anchor() {
            Anchor::Anywhere => true,
            Anchor::Absolute(p) => overlaps(Path::new(p)),
            Anchor::Relative(p) => bases.iter().any(|b| overlaps(&b.join(p))),
        }
    }

    /// Where everything the rule's specifier can match lies: the path it names, or the
    /// directories before its first glob character.
    pub fn anchor(&self) -> Anchor<'_> {
        match &self.matcher {
            Matcher::Path {
                absolute: true,
                prefix,
                ..
            } => Anchor::Absolute(prefix),
            Matcher::Path { prefix, .. } if prefix.is_empty() => Anchor::Anywhere,
            Matcher::Path { prefix, .. } => Anchor::Relative(prefix),
            Matcher::Exact(e) if Path::new(e).is_absolute() => Anchor::Absolute(e),
            Matcher::Exact(e) => Anchor::Relative(e),
            _ => Anchor::Anywhere,
        }
    }

    /// Whether this is a deny or ask rule on commands: one that an opaque command (whose
    /// real text is unknown) might be meant to hit.
    pub fn guards_commands(&self) -> bool {
        matches!(self.tool, RuleTool::Named(RuleName::Bash)) && self.kind != RuleKind::Allow
    }
}

fn pattern_err(rule: &str, e: impl std::fmt::Display) -> RuleError {
    RuleError::Pattern {
        rule: rule.into(),
        message: e.to_string(),
    }
}

/// Picks the rule that decides a subject: a deny in any layer wins; otherwise the highest
/// layer with a match decides, and within a layer ask beats allow. `rules` may be in any
/// order.
pub fn decide<'a>(rules: &'a [Rule], subject: &Subject<'_>) -> Option<&'a Rule> {
    decide_in(rules.iter(), subject)
}

/// `decide` among some rules of a list, in list order (an index's candidates).
pub(crate) fn decide_in<'a>(
    rules: impl Iterator<Item = &'a Rule>,
    subject: &Subject<'_>,
) -> Option<&'a Rule> {
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
        if matched && best.is_none_or(|b| rank(r) < rank(b)) {
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
/// The built-in tools' own rule names, for this crate's tests (the root crate hands in
/// the catalog's lookup): `write_file(src/**)` is `Write(src/**)`.
#[cfg(test)]
impl Rule {
    pub(crate) fn parse(
        text: &str,
        kind: RuleKind,
        layer: Layer,
        home: Option<&Path>,
    ) -> Result<Rule, RuleError> {
        let builtin = |tool: &str| match tool {
            "read_file" => Some(RuleName::Read),
            "write_file" => Some(RuleName::Write),
            "edit_file" => Some(RuleName::Edit),
            "find_files" => Some(RuleName::Glob),
            "search_code" => Some(RuleName::Grep),
            "run_command" => Some(RuleName::Bash),
            "agent" | "Task" => Some(RuleName::Agent),
            "web_fetch" => Some(RuleName::WebFetch),
            _ => None,
        };
        Rule::parse_with(text, kind, layer, home, &builtin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn rule(text: &str) -> Rule {
        Rule::parse(
            text,
            RuleKind::Allow,
            Layer::Project,
            Some(Path::new("/home/u")),
        )
        .unwrap()
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
            Rule::parse("WebSearch(x)", RuleKind::Deny, Layer::User, None),
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
        let s = Subject::command("git push");
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
}
