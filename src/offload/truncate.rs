//! Plain truncation of a text to about a number of characters, keeping its head and tail
//! and saying how much was cut: for tool results the executor and the tools shorten, and
//! for results that cannot be saved to a file.

/// Cuts `text` to at most about `max` characters, keeping the head and the tail and
/// saying how much was cut.
pub fn truncate(text: &str, max: usize) -> String {
    truncate_with(
        text,
        max,
        "narrow the request (offset/limit, a tighter pattern, head_limit) to see them",
    )
}

/// [`truncate`] with `note` saying why the cut text cannot be seen, or how to see it.
pub fn truncate_with(text: &str, max: usize, note: &str) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head_len = max * 4 / 5;
    let tail_len = max - head_len;
    let head: String = text.chars().take(head_len).collect();
    let tail: String = text.chars().skip(total - tail_len).collect();
    format!(
        "{head}\n[… {} characters cut of {total}; {note} …]\n{tail}",
        total - head_len - tail_len
    )
}
