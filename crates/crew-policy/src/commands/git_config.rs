//! git's `-c key=value` settings, classified: safe (presentation, identity), a shell
//! command git may run (`core.pager`, `core.sshCommand`, `*.textconv`, `filter.*`,
//! `credential.helper`, …), opaque (`core.hooksPath`, `include.path`: code or config we
//! cannot see), or unknown (not read-only, fail closed).

/// What a `-c key=value` setting does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigEffect {
    /// Changes only presentation or identity.
    Safe,
    /// Its value is a shell command git may run.
    Shell(String),
    /// It makes git run programs we cannot see (`core.hooksPath`, `include.path`).
    Opaque(String),
    /// Not on either list: not read-only.
    Unknown,
}

#[rustfmt::skip]
const SAFE_SECTIONS: &[&str] = &["user.", "color.", "advice.", "i18n.", "column.", "status."];
#[rustfmt::skip]
const SAFE_KEYS: &[&str] = &[
    "init.defaultbranch", "core.quotepath", "core.abbrev", "core.autocrlf", "core.safecrlf",
    "core.filemode", "core.ignorecase", "diff.renames", "diff.algorithm", "diff.noprefix",
    "diff.mnemonicprefix", "diff.context", "diff.interhunkcontext", "diff.relative",
    "diff.statgraphwidth", "diff.colormoved", "log.date", "log.decorate", "log.abbrevcommit",
    "log.follow", "format.pretty", "grep.linenumber", "grep.patterntype",
    "grep.extendedregexp", "grep.fullname", "grep.column", "gc.auto", "maintenance.auto",
    "fetch.prune", "pull.rebase", "push.default", "merge.conflictstyle", "protocol.version",
];
/// Keys (or key suffixes after the last dot) whose value is a command.
#[rustfmt::skip]
const SHELL_KEYS: &[&str] = &[
    "core.pager", "core.editor", "sequence.editor", "core.sshcommand", "core.askpass",
    "core.gitproxy", "core.fsmonitor", "diff.external", "gpg.program",
    "uploadpack.packobjectshook", "web.browser", "man.viewer", "interactive.difffilter",
    "sendemail.sendmailcmd", "sendemail.tocmd", "sendemail.cccmd", "credential.helper",
];
#[rustfmt::skip]
const SHELL_SUFFIXES: &[&str] = &[
    ".textconv", ".command", ".cmd", ".program", ".driver", ".clean", ".smudge", ".process",
    ".helper", ".receivepack", ".uploadpack", ".path", ".hook", ".sshcommand",
];

/// Classifies one `-c` setting.
pub fn config_effect(key: &str, value: &str) -> ConfigEffect {
    let key = key.to_ascii_lowercase();
    if key.starts_with("alias.") {
        // Resolved where the alias is used (`alias_of`); defining one runs nothing.
        return ConfigEffect::Unknown;
    }
    // `protocol.ext.allow` lets an `ext::` URL run a command; the others widen trust.
    let unseen = key == "core.hookspath"
        || key.starts_with("include")
        || key == "safe.directory"
        || key.starts_with("protocol.") && key.ends_with("allow");
    if unseen {
        return ConfigEffect::Opaque(format!("`-c {key}` makes git run or trust unseen code"));
    }
    if key.starts_with("pager.") && !is_bool(value) {
        return ConfigEffect::Shell(value.to_string());
    }
    let shell =
        SHELL_KEYS.contains(&key.as_str()) || SHELL_SUFFIXES.iter().any(|s| key.ends_with(s));
    if shell {
        if key == "core.fsmonitor" && is_bool(value) {
            return ConfigEffect::Safe;
        }
        if key.ends_with("helper") && !value.starts_with('!') && !value.starts_with('/') {
            // `credential.helper=store` runs `git credential-store`.
            return ConfigEffect::Shell(format!("git credential-{value}"));
        }
        return ConfigEffect::Shell(value.strip_prefix('!').unwrap_or(value).to_string());
    }
    if SAFE_KEYS.contains(&key.as_str()) || SAFE_SECTIONS.iter().any(|s| key.starts_with(s)) {
        return ConfigEffect::Safe;
    }
    ConfigEffect::Unknown
}

fn is_bool(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
    )
}
