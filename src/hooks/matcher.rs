//! Matchers: the `matcher` of a hook group is a regex over the event's subject (a tool's
//! name for PreToolUse/PostToolUse). It must match a whole name, so `Bash` matches the
//! shell tool and not `BashOutput`; `Edit|Write`, `mcp__github__.*` work as in Claude
//! Code. An empty matcher or `*` matches everything.

use regex::Regex;

/// A compiled matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    text: String,
    /// `None`: matches everything.
    regex: Option<Regex>,
}

impl Matcher {
    /// Compiles a matcher; an empty text or `*` matches everything.
    pub fn parse(text: &str) -> Result<Matcher, regex::Error> {
        let trimmed = text.trim();
        let regex = match trimmed {
            "" | "*" => None,
            t => Some(Regex::new(&format!("^(?:{t})$"))?),
        };
        Ok(Matcher {
            text: text.to_string(),
            regex,
        })
    }

    /// A matcher that matches everything.
    pub fn any() -> Matcher {
        Matcher {
            text: String::new(),
            regex: None,
        }
    }

    /// The matcher as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it matches any of `names` (a tool's names: ours and Claude Code's).
    pub fn matches_any(&self, names: &[String]) -> bool {
        match &self.regex {
            None => true,
            Some(r) => names.iter().any(|n| r.is_match(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn whole_names_only() {
        let m = Matcher::parse("Bash").unwrap();
        assert!(m.matches_any(&names(&["run_command", "Bash"])));
        assert!(!m.matches_any(&names(&["BashOutput"])));
        let m = Matcher::parse("Edit|Write").unwrap();
        assert!(m.matches_any(&names(&["write_file", "Write"])));
        assert!(!m.matches_any(&names(&["read_file", "Read"])));
        let m = Matcher::parse("mcp__github__.*").unwrap();
        assert!(m.matches_any(&names(&["mcp__github__create_issue"])));
        assert!(!m.matches_any(&names(&["mcp__gitlab__x"])));
    }

    #[test]
    fn empty_and_star_match_everything() {
        for t in ["", "*", "  "] {
            assert!(
                Matcher::parse(t)
                    .unwrap()
                    .matches_any(&names(&["anything"]))
            );
        }
        assert!(Matcher::parse("(").is_err());
    }
}
