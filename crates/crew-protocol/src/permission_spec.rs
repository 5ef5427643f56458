//! A tool's permission spec: everything the permission engine needs to know about a tool —
//! its category for the mode fallback, the settings rule names that cover it, and which
//! argument names its target (a path, a command, a subagent type). It lives on the tool's
//! `Definition` (`crewmaster::tools::Definition::permission`), the one place a tool is
//! described; classification and rule matching read it from there, so no second table
//! of tool names can disagree with the tool itself.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::decision::Category;

/// A rule name as written in settings (`Read(src/**)`, `Bash(npm test)`, …): the family
/// of tools a rule covers. Which tools belong to a family is said by each tool's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RuleName {
    /// Tools that read files.
    Read,
    /// Tools that write whole files.
    Write,
    /// Tools that change files (Claude Code: "all built-in tools that edit files").
    Edit,
    /// File-name search.
    Glob,
    /// Content search.
    Grep,
    /// Shell commands.
    Bash,
    /// Subagents (specifier: the subagent type).
    Agent,
    /// Fetching web pages (specifier: `domain:HOST`, as in `WebFetch(domain:docs.rs)`).
    WebFetch,
}

impl RuleName {
    /// The name as written in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleName::Read => "Read",
            RuleName::Write => "Write",
            RuleName::Edit => "Edit",
            RuleName::Glob => "Glob",
            RuleName::Grep => "Grep",
            RuleName::Bash => "Bash",
            RuleName::Agent => "Agent",
            RuleName::WebFetch => "WebFetch",
        }
    }

    /// Whether the rule's specifier is a path pattern (else a command or agent pattern).
    pub fn takes_paths(self) -> bool {
        matches!(
            self,
            RuleName::Read | RuleName::Write | RuleName::Edit | RuleName::Glob | RuleName::Grep
        )
    }
}

impl FromStr for RuleName {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            RuleName::Read,
            RuleName::Write,
            RuleName::Edit,
            RuleName::Glob,
            RuleName::Grep,
            RuleName::Bash,
            RuleName::Agent,
            RuleName::WebFetch,
        ]
        .into_iter()
        .find(|n| n.as_str() == s)
        .ok_or(())
    }
}

/// What a call of the tool acts on, and which argument says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TargetSpec {
    /// A file or directory.
    Path {
        /// The argument holding the path.
        field: String,
        /// Whether the argument is required (else it defaults to the caller's cwd).
        required: bool,
        /// Whether the tool writes the file at the path.
        writes: bool,
        /// Arguments holding glob patterns the tool walks with (relative, no `..`).
        glob_fields: Vec<String>,
    },
    /// A shell command.
    Command {
        /// The argument holding the command.
        field: String,
    },
    /// A subagent type.
    Agent {
        /// The argument holding the type.
        field: String,
        /// The type when the argument is absent.
        default: String,
    },
    /// A URL the tool fetches: rules match its host (`WebFetch(domain:HOST)`).
    Url {
        /// The argument holding the URL.
        field: String,
    },
    /// An MCP tool: its full name is the target.
    Mcp {
        /// Whether a server the user configured or trusted annotates the tool
        /// `readOnlyHint: true`. Any other tool may change anything: no OS sandbox
        /// confines a server, so the unattended modes deny it unless a rule names it.
        #[serde(default)]
        read_only: bool,
    },
    /// Nothing rules can name (the session's own tasks).
    None,
}

/// A tool's permission spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionSpec {
    /// What the tool does, for the mode fallback.
    pub category: Category,
    /// The settings rule names that cover the tool, its own first (`write_file` is
    /// `Write`, and `Edit` rules cover it too). Empty: no rule names it.
    pub rule_names: Vec<RuleName>,
    /// What a call acts on.
    pub target: TargetSpec,
    /// String arguments that must be present besides the target (checked before any
    /// rule, so a malformed call is denied early).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
}

impl PermissionSpec {
    /// A spec of `category`, covered by `rule_names` (own first), acting on `target`.
    pub fn new(
        category: Category,
        rule_names: impl IntoIterator<Item = RuleName>,
        target: TargetSpec,
    ) -> Self {
        Self {
            category,
            rule_names: rule_names.into_iter().collect(),
            target,
            required: Vec::new(),
        }
    }

    /// The same spec, also requiring these string arguments.
    pub fn requiring(mut self, fields: &[&str]) -> Self {
        self.required.extend(fields.iter().map(|f| f.to_string()));
        self
    }

    /// The spec of an MCP tool (`mcp__server__tool`) that may change things: rules name
    /// it by its full name.
    pub fn mcp() -> Self {
        Self::new(Category::Mcp, [], TargetSpec::Mcp { read_only: false })
    }

    /// The spec of an MCP tool that its (configured or trusted) server annotates
    /// read-only.
    pub fn mcp_read_only() -> Self {
        Self::new(Category::Mcp, [], TargetSpec::Mcp { read_only: true })
    }

    /// Whether this is an MCP tool annotated read-only.
    pub fn mcp_is_read_only(&self) -> bool {
        matches!(self.target, TargetSpec::Mcp { read_only: true })
    }

    /// The rule name a grant for this tool is written with (its own), if any.
    pub fn own_rule_name(&self) -> Option<RuleName> {
        self.rule_names.first().copied()
    }

    /// Whether the tool writes the file its path names.
    pub fn writes(&self) -> bool {
        matches!(self.target, TargetSpec::Path { writes: true, .. })
    }
}

impl TargetSpec {
    /// A required path argument the tool reads.
    pub fn reads(field: &str) -> Self {
        TargetSpec::Path {
            field: field.into(),
            required: true,
            writes: false,
            glob_fields: Vec::new(),
        }
    }

    /// A required path argument the tool writes.
    pub fn writes(field: &str) -> Self {
        TargetSpec::Path {
            field: field.into(),
            required: true,
            writes: true,
            glob_fields: Vec::new(),
        }
    }

    /// A required URL argument the tool fetches.
    pub fn url(field: &str) -> Self {
        TargetSpec::Url {
            field: field.into(),
        }
    }

    /// An optional directory argument (default: the cwd) walked with these glob fields.
    pub fn walks(field: &str, glob_fields: &[&str]) -> Self {
        TargetSpec::Path {
            field: field.into(),
            required: false,
            writes: false,
            glob_fields: glob_fields.iter().map(|f| f.to_string()).collect(),
        }
    }
}
