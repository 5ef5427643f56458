//! How a rule's specifier matches its subject: exact text, regexes, negations, command
//! and agent wildcards, and gitignore-style path globs (`parse_matcher` builds one from the
//! specifier; `str_matches` and `path_matches` apply it). Web fetches' hosts are
//! matched in `host`.

use std::path::{Path, PathBuf};

use crew_config::host_pattern::HostPattern;
use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;

use super::{RuleError, pattern_err};

/// How a specifier matches its subject.
#[derive(Debug, Clone)]
pub(super) enum Matcher {
    Any,
    Exact(String),
    Regex(Regex),
    Not(Box<Matcher>),
    /// Command or agent wildcard pattern (anchored regex), whether it has wildcards, and
    /// its literal text before the first wildcard.
    Wildcard(Regex, bool, String),
    /// A web fetch's host (`WebFetch(domain:HOST)`): the same entry syntax and matching
    /// as `sandbox.network.allowedDomains`, since the two form one list.
    Host(HostPattern),
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

pub(super) fn parse_matcher(
    rule: &str,
    spec: &str,
    path: bool,
    home: Option<&Path>,
) -> Result<Matcher, RuleError> {
    if let Some(rest) = spec.strip_prefix('!') {
        let inner = parse_matcher(rule, rest, path, home)?;
        return Ok(Matcher::Not(Box::new(inner)));
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
    Regex::new(&wildcard_regex(&spec, Trailing::AnyArguments))
        .map(|re| Matcher::Wildcard(re, wild, literal))
        .map_err(|e| pattern_err(rule, e))
}

/// What a trailing `:*` or ` *` of a wildcard pattern means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trailing {
    /// Any arguments, or none: `ls *` also matches the bare `ls` (command and agent
    /// patterns).
    AnyArguments,
    /// A wildcard like any other `*` (an MCP server's tool names).
    Wildcard,
}

/// An anchored regex for a command/agent pattern (see the module comment).
pub(super) fn wildcard_regex(spec: &str, trailing: Trailing) -> String {
    let prefix = spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *"));
    let (body, tail) = match prefix.filter(|_| trailing == Trailing::AnyArguments) {
        Some(p) => (p, "( .*)?"),
        None => (spec, ""),
    };
    let parts: Vec<String> = body.split('*').map(regex::escape).collect();
    format!("(?s)^{}{}$", parts.join(".*"), tail)
}

pub(super) fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn path_matcher(rule: &str, spec: &str, home: Option<&Path>) -> Result<Matcher, RuleError> {
    let (pattern, absolute) = if let Some(abs) = spec.strip_prefix("//") {
        (format!("/{abs}"), true)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        let no_home = || pattern_err(rule, "`~/` needs a home directory (HOME is not set)");
        let h = home.ok_or_else(no_home)?;
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

pub(super) fn str_matches(m: &Matcher, s: &str) -> bool {
    match m {
        Matcher::Any => true,
        Matcher::Exact(e) => e == s,
        Matcher::Regex(re) => re.is_match(s),
        Matcher::Not(inner) => !str_matches(inner, s),
        // Command subjects are parts whose words are already joined by single spaces.
        Matcher::Wildcard(re, ..) => re.is_match(s),
        Matcher::Path { set, .. } => set.is_match(s),
        // A host pattern matches hosts only (`host_matches`).
        Matcher::Host(_) => false,
    }
}

/// A path subject with its glob candidates built once, not once per rule.
pub(super) struct PathProbe<'a> {
    real: &'a Path,
    rels: Vec<&'a Path>,
    real_candidate: Candidate<'a>,
    rel_candidates: Vec<Candidate<'a>>,
}

impl<'a> PathProbe<'a> {
    pub(super) fn new(real: &'a Path, bases: &'a [PathBuf]) -> Self {
        let rels: Vec<&Path> = bases
            .iter()
            .filter_map(|b| crate::scopes::strip_prefix(real, b))
            .collect();
        PathProbe {
            real,
            real_candidate: Candidate::new(real),
            rel_candidates: rels.iter().map(|r| Candidate::new(*r)).collect(),
            rels,
        }
    }
}

pub(super) fn path_matches(m: &Matcher, p: &PathProbe<'_>) -> bool {
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
        Matcher::Host(_) => false,
    }
}
