//! Output de-duplication across attempts of one turn. When a stream breaks after the
//! user already saw some output, the turn is retried from the start; the new attempt
//! re-generates that output, and this filter suppresses what was already shown: the
//! shown text prefix (by length), and the first N thinking blocks and tool calls (by
//! position), so nothing is shown, and no tool call is run, twice.

use super::StreamEvent;

/// What earlier attempts showed, and how far the current attempt has caught up.
#[derive(Debug, Default)]
pub struct Replay {
    shown_text_len: usize,
    shown_thinking: usize,
    shown_calls: usize,
    attempt_text_len: usize,
    attempt_thinking: usize,
    attempt_calls: usize,
    attempt_new_output: bool,
}

impl Replay {
    /// Starts counting a new attempt against everything shown so far.
    pub fn new_attempt(&mut self) {
        self.attempt_text_len = 0;
        self.attempt_thinking = 0;
        self.attempt_calls = 0;
        self.attempt_new_output = false;
    }

    /// Whether the current attempt has shown anything new (text, thinking, a call).
    pub fn attempt_showed_output(&self) -> bool {
        self.attempt_new_output
    }

    /// Passes `event` through, trimmed of anything an earlier attempt showed, or `None`
    /// when it is entirely a repeat.
    pub fn pass(&mut self, event: StreamEvent) -> Option<StreamEvent> {
        match event {
            StreamEvent::TextDelta { text } => {
                let start = self.attempt_text_len;
                self.attempt_text_len += text.len();
                let skip = self.shown_text_len.saturating_sub(start);
                if skip >= text.len() {
                    return None;
                }
                // A re-generated text that diverged may put the cut inside a character;
                // move it forward to the next boundary rather than split one.
                let mut cut = skip;
                while !text.is_char_boundary(cut) {
                    cut += 1;
                }
                let rest = text[cut..].to_string();
                self.shown_text_len = self.attempt_text_len;
                self.attempt_new_output = true;
                Some(StreamEvent::TextDelta { text: rest })
            }
            StreamEvent::Thinking { .. } => {
                self.attempt_thinking += 1;
                if self.attempt_thinking <= self.shown_thinking {
                    return None;
                }
                self.shown_thinking += 1;
                self.attempt_new_output = true;
                Some(event)
            }
            StreamEvent::ToolCall { .. } => {
                self.attempt_calls += 1;
                if self.attempt_calls <= self.shown_calls {
                    return None;
                }
                self.shown_calls += 1;
                self.attempt_new_output = true;
                Some(event)
            }
            other => Some(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_protocol::ToolCall;

    fn text(t: &str) -> StreamEvent {
        StreamEvent::TextDelta { text: t.into() }
    }

    fn call(id: &str) -> StreamEvent {
        StreamEvent::ToolCall {
            call: ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            },
        }
    }

    #[test]
    fn first_attempt_passes_everything() {
        let mut r = Replay::default();
        assert_eq!(r.pass(text("Hel")), Some(text("Hel")));
        assert!(r.attempt_showed_output());
        assert_eq!(r.pass(call("a")), Some(call("a")));
    }

    #[test]
    fn retried_attempt_suppresses_the_shown_prefix() {
        let mut r = Replay::default();
        r.pass(text("Hello, "));
        r.pass(text("wor"));
        r.new_attempt();
        assert!(!r.attempt_showed_output());
        assert_eq!(r.pass(text("Hello")), None);
        assert!(!r.attempt_showed_output());
        assert_eq!(r.pass(text(", world")), Some(text("ld")));
        assert_eq!(r.pass(text("!")), Some(text("!")));
        assert!(r.attempt_showed_output());
    }

    #[test]
    fn never_splits_a_character() {
        let mut r = Replay::default();
        r.pass(text("ab"));
        r.new_attempt();
        // "é" is two bytes; the shown length (2) falls inside it.
        assert_eq!(r.pass(text("aé!")), Some(text("!")));
    }

    #[test]
    fn tool_calls_and_thinking_are_never_repeated() {
        let mut r = Replay::default();
        let thinking = StreamEvent::Thinking {
            thinking: "t".into(),
            signature: None,
        };
        r.pass(thinking.clone());
        r.pass(call("a"));
        r.new_attempt();
        assert_eq!(r.pass(thinking.clone()), None);
        assert_eq!(r.pass(call("a2")), None);
        assert_eq!(r.pass(call("b")), Some(call("b")));
    }

    fn chunked(text: &str, sizes: &[usize]) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        for size in sizes.iter().cycle() {
            if i >= chars.len() {
                break;
            }
            let end = (i + size).min(chars.len());
            out.push(chars[i..end].iter().collect());
            i = end;
        }
        out
    }

    proptest::proptest! {
        /// However both attempts chunk the same text, and wherever the first broke,
        /// the user sees the text exactly once.
        #[test]
        fn a_replayed_text_is_shown_exactly_once(
            text in "[a-zé ✓]{0,40}",
            cut in 0usize..40,
            first in proptest::collection::vec(1usize..6, 1..5),
            second in proptest::collection::vec(1usize..6, 1..5),
        ) {
            let shown_first: String = text.chars().take(cut).collect();
            let mut r = Replay::default();
            let mut seen = String::new();
            for c in chunked(&shown_first, &first) {
                if let Some(StreamEvent::TextDelta { text }) = r.pass(StreamEvent::TextDelta { text: c }) {
                    seen.push_str(&text);
                }
            }
            r.new_attempt();
            for c in chunked(&text, &second) {
                if let Some(StreamEvent::TextDelta { text }) = r.pass(StreamEvent::TextDelta { text: c }) {
                    seen.push_str(&text);
                }
            }
            proptest::prop_assert_eq!(seen, text);
        }
    }
}
