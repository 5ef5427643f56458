//! The transcript lines of the events that carry messages (`message_appended`, and
//! `compacted` with the conversation it leaves), written without serde: the bulk of
//! what a turn writes is its messages' text (a tool result's file, a model's answer), and
//! serde_json escapes a string a byte at a time. Here the bytes that need no escape are
//! skipped eight at a time and copied in runs, which takes about 0.6 of the time on
//! source text (2.5 KB of numbered lines: 0.95 µs against 1.5 µs), where a tab, a newline
//! or a quote comes every few dozen bytes.
//!
//! Each line is byte for byte what `serde_json::to_string` makes of the [`Event`] (tests
//! hold the two to each other on arbitrary messages), so readers see no difference.

use std::fmt::Write;

use super::{Event, EventKind};
use crate::protocol::{ContentBlock, Message, Role, ToolCall, ToolResult};

/// `event`'s line when it carries messages; `None` for other events, and when serde
/// would refuse it too (a result saved to a path that is not UTF-8).
pub(super) fn line(event: &Event) -> Option<String> {
    match &event.kind {
        EventKind::MessageAppended { message } => {
            message_line(&event.agent, message).map(|(line, _, _)| line)
        }
        EventKind::Compacted {
            trigger,
            tokens_before,
            tokens_after,
            usage,
            messages,
        } => {
            let bytes: usize = messages.iter().map(text_bytes).sum();
            let mut out = String::with_capacity(256 + bytes * 9 / 8);
            out.push_str("{\"agent\":");
            push_str(&mut out, &event.agent);
            out.push_str(",\"type\":\"compacted\",\"trigger\":");
            push_str(&mut out, trigger);
            let usage = serde_json::to_string(usage).ok()?;
            write!(
                out,
                ",\"tokens_before\":{tokens_before},\"tokens_after\":{tokens_after},\"usage\":{usage},\"messages\":["
            )
            .ok()?;
            for (i, message) in messages.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_message(&mut out, message)?;
            }
            out.push_str("]}");
            Some(out)
        }
        _ => None,
    }
}

/// The line of `agent`'s `message_appended` event for `message`, and the byte range the
/// message's own JSON takes in it. `None` when serde would refuse the message too (a
/// result saved to a path that is not UTF-8).
pub(super) fn message_line(agent: &str, message: &Message) -> Option<(String, usize, usize)> {
    let mut out = String::with_capacity(96 + text_bytes(message) * 9 / 8);
    out.push_str("{\"agent\":");
    push_str(&mut out, agent);
    out.push_str(",\"type\":\"message_appended\",\"message\":");
    let start = out.len();
    push_message(&mut out, message)?;
    let end = out.len();
    out.push('}');
    Some((out, start, end))
}

/// About how many bytes of text the message carries (for the line's first allocation).
fn text_bytes(message: &Message) -> usize {
    message
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::ToolUse(call) => call.arguments.len() + 64,
            ContentBlock::ToolResult(result) => result.content.len() + 64,
        })
        .sum()
}

fn push_message(out: &mut String, message: &Message) -> Option<()> {
    out.push_str(match message.role {
        Role::User => "{\"role\":\"user\",\"content\":[",
        Role::Assistant => "{\"role\":\"assistant\",\"content\":[",
    });
    for (i, block) in message.content.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_block(out, block)?;
    }
    out.push_str("]}");
    Some(())
}

fn push_block(out: &mut String, block: &ContentBlock) -> Option<()> {
    match block {
        ContentBlock::Text { text } => {
            out.push_str("{\"type\":\"text\",\"text\":");
            push_str(out, text);
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => {
            out.push_str("{\"type\":\"thinking\",\"thinking\":");
            push_str(out, thinking);
            if let Some(signature) = signature {
                out.push_str(",\"signature\":");
                push_str(out, signature);
            }
        }
        ContentBlock::ToolUse(ToolCall {
            id,
            name,
            arguments,
        }) => {
            out.push_str("{\"type\":\"tool_use\",\"id\":");
            push_str(out, id);
            out.push_str(",\"name\":");
            push_str(out, name);
            out.push_str(",\"arguments\":");
            push_str(out, arguments);
        }
        ContentBlock::ToolResult(ToolResult {
            tool_use_id,
            content,
            is_error,
            error_code,
            saved_to,
        }) => {
            out.push_str("{\"type\":\"tool_result\",\"tool_use_id\":");
            push_str(out, tool_use_id);
            out.push_str(",\"content\":");
            push_str(out, content);
            out.push_str(if *is_error {
                ",\"is_error\":true"
            } else {
                ",\"is_error\":false"
            });
            if let Some(code) = error_code {
                out.push_str(",\"error_code\":");
                push_str(out, code);
            }
            if let Some(path) = saved_to {
                out.push_str(",\"saved_to\":");
                push_str(out, path.to_str()?);
            }
        }
    }
    out.push('}');
    Some(())
}

/// Appends `s` as a JSON string, escaped as serde_json escapes it: `"` and `\`, the
/// control characters with their short forms where JSON has one and `\u00XX` (lower-case
/// hex) otherwise; everything else, DEL and non-ASCII included, as it is.
pub(super) fn push_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    out.push('"');
    let mut start = 0;
    let mut i = 0;
    while let Some(at) = next_escape(bytes, i) {
        // Every byte that needs an escape is ASCII, so `at` is a character boundary.
        out.push_str(&s[start..at]);
        push_escape(out, bytes[at]);
        i = at + 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Whether byte `b` needs an escape.
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The index of the first byte at or after `from` that needs an escape.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().ok()?);
        // The high bit of each byte below 0x20, equal to `"` or equal to `\` (borrows
        // may also mark bytes after the first such byte, never one before it).
        let below = word.wrapping_sub(ONES * 0x20);
        let quote = (word ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES);
        let backslash = (word ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
        let found = (below | quote | backslash) & !word & HIGHS;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    bytes
        .get(i..)?
        .iter()
        .position(|&b| needs_escape(b))
        .map(|p| i + p)
}

fn push_escape(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = match b {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        b'\n' => "\\n",
        b'\t' => "\\t",
        b'\r' => "\\r",
        0x08 => "\\b",
        0x0c => "\\f",
        _ => {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
            return;
        }
    };
    out.push_str(short);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;
    use proptest::prelude::*;

    fn serde_line(agent: &str, message: &Message) -> Option<String> {
        serde_json::to_string(&Event {
            agent: agent.to_string(),
            kind: EventKind::MessageAppended {
                message: message.clone(),
            },
        })
        .ok()
    }

    #[test]
    fn every_ascii_byte_and_some_others_are_escaped_as_serde_escapes_them() {
        for b in 0u8..=0x7f {
            for s in [
                format!("{}", char::from(b)),
                format!("ab{}cdefghijklmnop", char::from(b)),
                format!("abcdefgh{}", char::from(b)),
            ] {
                let mut out = String::new();
                push_str(&mut out, &s);
                assert_eq!(out, serde_json::to_string(&s).unwrap(), "byte {b:#x}");
            }
        }
        for s in [
            "",
            "é\u{7f}\u{80}ü€😀\u{2028}",
            "\"\"\"\"\"\"\"\"\"",
            "x\u{1}",
        ] {
            let mut out = String::new();
            push_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn a_result_saved_to_a_path_that_is_not_utf8_is_refused_as_serde_refuses_it() {
        use std::os::unix::ffi::OsStrExt;
        let mut result = ToolResult::ok("c1", "text");
        result.saved_to = Some(std::ffi::OsStr::from_bytes(b"/tmp/\xff").into());
        let message = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(result)],
        };
        assert!(message_line("lead", &message).is_none());
        assert!(serde_line("lead", &message).is_none());
    }

    fn text() -> impl Strategy<Value = String> {
        // Source-like text, control characters and quotes, and anything at all.
        prop_oneof![
            "[ -~\t\n]{0,80}",
            "[\\x00-\\x1f\"\\\\a]{0,20}",
            any::<String>(),
        ]
    }

    fn block() -> impl Strategy<Value = ContentBlock> {
        prop_oneof![
            text().prop_map(|text| ContentBlock::Text { text }),
            (text(), proptest::option::of(text())).prop_map(|(thinking, signature)| {
                ContentBlock::Thinking {
                    thinking,
                    signature,
                }
            }),
            (text(), text(), text()).prop_map(|(id, name, arguments)| {
                ContentBlock::ToolUse(ToolCall {
                    id,
                    name,
                    arguments,
                })
            }),
            (
                text(),
                text(),
                any::<bool>(),
                proptest::option::of(text()),
                proptest::option::of(text())
            )
                .prop_map(|(tool_use_id, content, is_error, error_code, saved_to)| {
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        error_code,
                        saved_to: saved_to.map(Into::into),
                    })
                }),
        ]
    }

    proptest! {
        #[test]
        fn the_line_is_what_serde_makes_of_the_event(
            agent in text(),
            user in any::<bool>(),
            content in proptest::collection::vec(block(), 0..5),
        ) {
            let message = Message {
                role: if user { Role::User } else { Role::Assistant },
                content,
            };
            let (line, start, end) = message_line(&agent, &message).unwrap();
            prop_assert_eq!(Some(line.clone()), serde_line(&agent, &message));
            prop_assert_eq!(&line[start..end], serde_json::to_string(&message).unwrap());
        }

        #[test]
        fn the_compacted_line_is_what_serde_makes_of_the_event(
            agent in text(),
            trigger in text(),
            numbers in any::<[u64; 6]>(),
            messages in proptest::collection::vec(
                proptest::collection::vec(block(), 0..3).prop_map(|content| Message {
                    role: Role::User,
                    content,
                }),
                0..4,
            ),
        ) {
            let [tokens_before, tokens_after, input, output, created, read] = numbers;
            let event = Event {
                agent,
                kind: EventKind::Compacted {
                    trigger,
                    tokens_before,
                    tokens_after,
                    usage: Usage {
                        input_tokens: input,
                        output_tokens: output,
                        cache_creation_input_tokens: created,
                        cache_read_input_tokens: read,
                    },
                    messages,
                },
            };
            prop_assert_eq!(line(&event), serde_json::to_string(&event).ok());
        }
    }
}
