//! The one sanitizer for text crew draws on a terminal: every piece of text that comes
//! from a model, a tool or a command passes through [`clean`] (or [`clean_line`]) before
//! the TUI or headless text output shows it.
//!
//! Nothing that changes how a terminal displays text reaches it: C0 and C1 control
//! characters (so the escape that starts every CSI, OSC and DCS sequence, and with it
//! the clipboard write OSC 52 or the title change OSC 2), DEL, bidirectional controls,
//! zero-width and other invisible format characters, line and paragraph separators and
//! look-alike spaces. Each is shown visibly instead — C0 as its control picture (`␛`, `␇`,
//! `␍`), DEL as `␡`, everything else as `\u{…}` — so the rest of a sequence (`␛]52;c;…␇`)
//! shows as plain text and the user sees what the model wrote. [`Sanitized::changed`]
//! says whether anything was replaced, for a warning.

use std::borrow::Cow;

/// How the caller treats line breaks and tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Keep {
    /// Pass `\n` through (a multi-line view); otherwise it shows as `␊`.
    pub newlines: bool,
    /// Pass `\t` through (the view expands tabs itself); otherwise a tab becomes four
    /// spaces.
    pub tabs: bool,
}

impl Keep {
    /// Multi-line text whose view does not expand tabs.
    #[cfg(test)]
    pub(crate) const LINES: Keep = Keep {
        newlines: true,
        tabs: false,
    };
    /// One line: newlines and tabs never pass.
    pub(crate) const LINE: Keep = Keep {
        newlines: false,
        tabs: false,
    };
}

/// Sanitized text, and whether anything in it was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sanitized<'a> {
    /// The text, safe to draw.
    pub text: Cow<'a, str>,
    /// Whether a character was shown in its visible form (tabs expanded do not count).
    pub changed: bool,
}

/// Whether `c` changes how text displays and so must not reach a terminal as it is.
pub(crate) fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul fillers,
        // Mongolian vowel separator.
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{180e}'
        | '\u{3164}' | '\u{ffa0}'
        // Look-alike spaces: a shell does not split words at them.
        | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}'
        | '\u{3000}'
        // Zero-width characters, LRM/RLM, line/paragraph separators, bidi embeddings
        // and overrides, word joiner, invisible operators, bidi isolates, deprecated
        // format characters.
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        // Variation selectors, byte order mark / zero-width no-break space, interlinear
        // annotation, tag characters (invisible ASCII look-alikes).
        | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}'
    )
}

/// The visible form of an unsafe character.
fn visible(c: char, out: &mut String) {
    match c {
        '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
        '\u{7f}' => out.push('␡'),
        _ => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// Sanitizes `text` for drawing; newlines and tabs are treated as `keep` says.
pub(crate) fn clean(text: &str, keep: Keep) -> Sanitized<'_> {
    let passes = |c: char| (c == '\n' && keep.newlines) || !is_unsafe(c);
    if text.chars().all(passes) {
        return Sanitized {
            text: Cow::Borrowed(text),
            changed: false,
        };
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut changed = false;
    for c in text.chars() {
        match c {
            c if passes(c) => out.push(c),
            '\t' if keep.tabs => out.push('\t'),
            '\t' => out.push_str("    "),
            c => {
                changed = true;
                visible(c, &mut out);
            }
        }
    }
    Sanitized {
        text: Cow::Owned(out),
        changed,
    }
}

/// `text` for one row of a view: newlines show as `␊`, tabs as spaces.
pub(crate) fn clean_line(text: &str) -> String {
    clean(text, Keep::LINE).text.into_owned()
}

/// A writer that sanitizes what passes through it ([`clean`], newlines and tabs kept),
/// for headless text output when it goes to a terminal. Writes may split a character
/// anywhere: an incomplete UTF-8 tail waits for the next write; bytes that are not UTF-8
/// show as `\u{fffd}`.
pub(crate) struct TerminalWriter<W: std::io::Write> {
    inner: W,
    pending: Vec<u8>,
}

/// What a drain does with an incomplete character at the end of what is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Keep it pending: the rest of it may come with the next write.
    Keep,
    /// Write it as a replacement character: nothing more will come.
    Flush,
}

impl<W: std::io::Write> TerminalWriter<W> {
    /// Sanitizes what is written to `inner`.
    pub(crate) fn new(inner: W) -> Self {
        TerminalWriter {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes the complete characters pending, and with [`Tail::Flush`] an incomplete last
    /// one too (as a replacement character).
    fn drain(&mut self, tail: Tail) -> std::io::Result<()> {
        let keep = Keep {
            newlines: true,
            tabs: true,
        };
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    let text = clean(text, keep).text.into_owned();
                    self.inner.write_all(text.as_bytes())?;
                    self.pending.clear();
                    return Ok(());
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    let head = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                    self.inner.write_all(clean(&head, keep).text.as_bytes())?;
                    match e.error_len() {
                        Some(bad) => {
                            self.inner.write_all("\u{fffd}".as_bytes())?;
                            self.pending.drain(..valid + bad);
                        }
                        None if tail == Tail::Flush => {
                            self.inner.write_all("\u{fffd}".as_bytes())?;
                            self.pending.clear();
                            return Ok(());
                        }
                        None => {
                            self.pending.drain(..valid);
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
}

impl<W: std::io::Write> std::io::Write for TerminalWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.drain(Tail::Keep)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for TerminalWriter<W> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let _ = self.drain(Tail::Flush);
        }
        let _ = self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_sequences_show_visibly_and_never_pass() {
        let osc52 = "echo hi\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}]2;pwned\u{1b}\\";
        let s = clean(osc52, Keep::LINE);
        assert!(s.changed);
        assert_eq!(s.text, "echo hi␛]52;c;cm0gLXJmIH4=␇␛]2;pwned␛\\");
        let csi = "echo hello\u{1b}[2K\u{1b}[1G\u{9b}8m; touch PWNED";
        let s = clean(csi, Keep::LINE);
        assert_eq!(s.text, "echo hello␛[2K␛[1G\\u{9b}8m; touch PWNED");
        // DCS, DEL, carriage return and backspace.
        let s = clean("a\u{1b}P1$r\u{1b}\\\u{7f}\r\u{8}b", Keep::LINE);
        assert_eq!(s.text, "a␛P1$r␛\\␡␍␈b");
    }

    #[test]
    fn bidi_and_zero_width_characters_show_as_code_points() {
        let s = clean(
            "ls \u{202e}txt.exe\u{202c} \u{200b}\u{feff}\u{2066}x\u{2069}",
            Keep::LINE,
        );
        assert!(s.changed);
        assert_eq!(
            s.text,
            "ls \\u{202e}txt.exe\\u{202c} \\u{200b}\\u{feff}\\u{2066}x\\u{2069}"
        );
        assert_eq!(clean("rm\u{a0}-rf", Keep::LINE).text, "rm\\u{a0}-rf");
        assert_eq!(clean("a\u{e0041}", Keep::LINE).text, "a\\u{e0041}");
    }

    #[test]
    fn plain_text_is_borrowed_and_newlines_and_tabs_follow_the_context() {
        let s = clean("héllo wörld — ✓ 日本", Keep::LINE);
        assert!(!s.changed);
        assert!(matches!(s.text, Cow::Borrowed(_)));
        assert_eq!(clean("a\nb", Keep::LINES).text, "a\nb");
        assert_eq!(clean("a\nb", Keep::LINE).text, "a␊b");
        let tabs = clean("a\tb", Keep::LINES);
        assert_eq!(tabs.text, "a    b");
        assert!(!tabs.changed);
        let kept = Keep {
            newlines: true,
            tabs: true,
        };
        assert_eq!(clean("a\tb", kept).text, "a\tb");
    }

    #[test]
    fn the_terminal_writer_sanitizes_across_split_writes() {
        use std::io::Write;
        let mut out = Vec::new();
        {
            let mut w = TerminalWriter::new(&mut out);
            let text = "ok \u{1b}]52;c;aGk=\u{7} \u{202e}x\n\tdone";
            // Byte by byte: the escape and the multi-byte override are split.
            for b in text.as_bytes() {
                w.write_all(std::slice::from_ref(b)).unwrap();
            }
            w.write_all(b"\xff!").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ok ␛]52;c;aGk=␇ \\u{202e}x\n\tdone\u{fffd}!"
        );
    }

    proptest! {
        #[test]
        fn output_never_contains_an_unsafe_character(s in any::<String>(), nl: bool, tabs: bool) {
            let keep = Keep { newlines: nl, tabs };
            let out = clean(&s, keep);
            for c in out.text.chars() {
                let allowed = (c == '\n' && nl) || (c == '\t' && tabs);
                prop_assert!(allowed || !is_unsafe(c), "{:?} in {:?}", c, out.text);
                prop_assert!(allowed || !c.is_control(), "{:?} in {:?}", c, out.text);
            }
            prop_assert_eq!(out.changed, s.chars().any(|c| is_unsafe(c) && c != '\t' && !(c == '\n' && nl)));
        }

        #[test]
        fn escapes_and_bidi_mixed_into_text_never_pass(
            parts in proptest::collection::vec(prop_oneof![
                Just("\u{1b}]52;c;".to_string()), Just("\u{1b}[".to_string()),
                Just("\u{202e}".to_string()), Just("\u{200d}".to_string()),
                Just("\u{9d}".to_string()), Just("\u{7}".to_string()),
                "[a-z ;]{0,8}",
            ], 0..20)
        ) {
            let s: String = parts.concat();
            let out = clean(&s, Keep::LINES);
            prop_assert!(!out.text.chars().any(is_unsafe));
        }
    }
}
