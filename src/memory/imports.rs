//! `@path` imports in a memory file's text (pure). As in Claude Code, an import is an `@`
//! at the start of a line or after whitespace, followed by the path (a backslash escapes
//! a space); an `@` inside an inline code span or a fenced code block is text, not an
//! import, so `` `@decorator` `` and code samples never pull files in. Trailing sentence
//! punctuation is not part of the path.

use std::path::{Path, PathBuf};

/// The `@path` references of `text`, in order, as written (escapes undone).
pub(crate) fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    for line in text.lines() {
        if let Some(marker) = fence_marker(line) {
            match fence {
                None => {
                    fence = Some(marker);
                    continue;
                }
                Some((c, n)) if marker.0 == c && marker.1 >= n && closes(line) => {
                    fence = None;
                    continue;
                }
                Some(_) => {}
            }
        }
        if fence.is_none() {
            scan_line(&without_code_spans(line), &mut out);
        }
    }
    out
}

/// Where `raw` points when written in a file inside `dir`: `~/…` below `home`, an
/// absolute path as is, anything else relative to `dir`. `None` for `~` alone, or `~/…`
/// without a home.
pub(crate) fn resolve(raw: &str, dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let path = if let Some(rest) = raw.strip_prefix("~/") {
        home?.join(rest)
    } else if raw.starts_with('~') {
        return None;
    } else {
        dir.join(raw)
    };
    Some(crate::permission::sandbox::lexical(&path))
}

/// A fence line's character and length (```` ``` ```` or `~~~`, at most three spaces in).
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = rest.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

/// Whether a fence line can close a block: nothing but the fence and spaces.
fn closes(line: &str) -> bool {
    let t = line.trim();
    t.chars().all(|c| c == '`') || t.chars().all(|c| c == '~')
}

/// `line` with its inline code spans blanked out (a run of N backticks up to the next run
/// of exactly N; an unclosed run is literal text).
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = chars[i..].iter().take_while(|c| **c == '`').count();
        match closing_run(&chars, i + n, n) {
            Some(end) => {
                out.push(' ');
                i = end + n;
            }
            None => {
                out.extend(&chars[i..i + n]);
                i += n;
            }
        }
    }
    out
}

/// The start of the next run of exactly `n` backticks at or after `from`.
fn closing_run(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == '`' {
            let m = chars[j..].iter().take_while(|c| **c == '`').count();
            if m == n {
                return Some(j);
            }
            j += m;
        } else {
            j += 1;
        }
    }
    None
}

fn scan_line(line: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c != '@' || (i > 0 && !chars[i - 1].is_whitespace()) {
            continue;
        }
        let mut path = String::new();
        let mut j = i + 1;
        while j < chars.len() {
            match chars[j] {
                '\\' if chars.get(j + 1) == Some(&' ') => {
                    path.push(' ');
                    j += 2;
                }
                c if c.is_whitespace() => break,
                c => {
                    path.push(c);
                    j += 1;
                }
            }
        }
        let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'']);
        if !path.is_empty() && !path.starts_with('@') {
            out.push(path.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_imports_in_prose_and_lists() {
        let text =
            "See @docs/style.md for style.\n- @~/.claude/prefs.md\n@/abs/path.md, and @a\\ b.md";
        assert_eq!(
            references(text),
            [
                "docs/style.md",
                "~/.claude/prefs.md",
                "/abs/path.md",
                "a b.md"
            ]
        );
    }

    #[test]
    fn ignores_emails_code_spans_and_code_blocks() {
        let text = "mail me@example.com\nuse `@Component` or ``@x `@y` z``\n\
```ts\n@decorator\n```\n~~~~\n@not.md\n```\n@still-code.md\n~~~~\n  ```\n@no.md\n  ```\n@yes.md";
        assert_eq!(references(text), ["yes.md"]);
    }

    #[test]
    fn an_unclosed_backtick_is_text() {
        assert_eq!(references("a ` b @x.md"), ["x.md"]);
    }

    #[test]
    fn resolves_relative_home_and_absolute() {
        let home = Path::new("/h");
        let dir = Path::new("/r/sub");
        assert_eq!(resolve("a.md", dir, Some(home)), Some("/r/sub/a.md".into()));
        assert_eq!(resolve("../b.md", dir, Some(home)), Some("/r/b.md".into()));
        assert_eq!(resolve("~/c.md", dir, Some(home)), Some("/h/c.md".into()));
        assert_eq!(resolve("/d.md", dir, Some(home)), Some("/d.md".into()));
        assert_eq!(resolve("~/c.md", dir, None), None);
        assert_eq!(resolve("~root/x", dir, Some(home)), None);
    }
}
