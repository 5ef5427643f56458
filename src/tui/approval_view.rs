//! How the approval dialog shows what it asks about: the complete text, sanitized
//! ([`crate::sanitize`]), with long runs of whitespace and line breaks shown as a count
//! (so padding cannot push the middle of a command out of view), hard-wrapped to the
//! dialog's width, and the warnings the user must see when the text was changed to show.

use unicode_width::UnicodeWidthChar;

use crate::sanitize::{Keep, clean};

/// Runs of more blanks than this show as `⟨N spaces⟩`.
const MAX_BLANKS: usize = 4;
/// Runs of more line breaks than this show as `⟨N line breaks⟩`.
const MAX_BREAKS: usize = 2;

/// Text as the dialog shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shown {
    /// The text to wrap and draw.
    pub text: String,
    /// Warnings for the dialog, one line each.
    pub warnings: Vec<String>,
}

/// The dialog's form of `raw`.
pub(super) fn show(raw: &str) -> Shown {
    let keep = Keep {
        newlines: true,
        tabs: true,
    };
    let sanitized = clean(raw, keep);
    let mut text = String::with_capacity(sanitized.text.len());
    let mut collapsed = false;
    let chars: Vec<char> = sanitized.text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        match c {
            ' ' | '\t' => {
                let blanks = chars[i..]
                    .iter()
                    .take_while(|d| matches!(d, ' ' | '\t'))
                    .count();
                let slice = &chars[i..i + blanks];
                if blanks > MAX_BLANKS || slice.contains(&'\t') {
                    collapsed |= blanks > MAX_BLANKS;
                    let what = if slice.contains(&'\t') {
                        "blanks (spaces and tabs)"
                    } else {
                        "spaces"
                    };
                    text.push_str(&format!("⟨{blanks} {what}⟩"));
                } else {
                    text.extend(slice);
                }
                i += blanks;
                continue;
            }
            '\n' if run > MAX_BREAKS => {
                collapsed = true;
                text.push_str(&format!("\n⟨{run} line breaks⟩\n"));
            }
            _ => text.extend(&chars[i..i + run]),
        }
        i += run;
    }
    let mut warnings = Vec::new();
    if sanitized.changed {
        warnings.push(
            "⚠ it contains characters that change how text displays (escape sequences, control, bidi or invisible characters), shown here as ␛, ␇ or \\u{…}: read it carefully".to_string(),
        );
    }
    if collapsed {
        warnings.push(
            "⚠ it contains long runs of whitespace or line breaks, shown here as ⟨N spaces⟩ or ⟨N line breaks⟩".to_string(),
        );
    }
    Shown { text, warnings }
}

/// `text` in rows of at most `width` display columns; each `\n` starts a row. Never
/// empty.
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = Vec::new();
    for line in text.split('\n') {
        let mut row = String::new();
        let mut used = 0;
        for c in line.chars() {
            let w = c.width().unwrap_or(0).max(1);
            if used + w > width && used > 0 {
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            row.push(c);
            used += w;
        }
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_shows_as_a_count_and_warns() {
        let raw = format!(
            "echo hi{}; touch PWNED{}",
            " ".repeat(5000),
            "\n".repeat(3000)
        );
        let shown = show(&raw);
        assert_eq!(
            shown.text,
            "echo hi⟨5000 spaces⟩; touch PWNED\n⟨3000 line breaks⟩\n"
        );
        assert_eq!(shown.warnings.len(), 1, "{:?}", shown.warnings);
        assert!(shown.warnings[0].contains("whitespace"));
    }

    #[test]
    fn escapes_show_visibly_and_warn() {
        let shown = show("echo hello\u{1b}[2K\u{1b}[1G; touch PWNED");
        assert_eq!(shown.text, "echo hello␛[2K␛[1G; touch PWNED");
        assert!(shown.warnings[0].contains("change how text displays"));
    }

    #[test]
    fn ordinary_commands_are_unchanged_and_tabs_are_named() {
        let shown = show("cargo test  --lib\nmake   all");
        assert_eq!(shown.text, "cargo test  --lib\nmake   all");
        assert!(shown.warnings.is_empty());
        assert_eq!(show("a\tb").text, "a⟨1 blanks (spaces and tabs)⟩b");
    }

    #[test]
    fn wrap_counts_display_columns() {
        assert_eq!(wrap("abcdef", 4), ["abcd", "ef"]);
        assert_eq!(wrap("日本語", 4), ["日本", "語"]);
        assert_eq!(wrap("a\n\nb", 4), ["a", "", "b"]);
        assert_eq!(wrap("", 4), [""]);
    }
}
