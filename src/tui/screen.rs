//! The terminal the TUI owns: raw mode, the alternate screen, bracketed paste and the one
//! stream of terminal input, set up once before the trust prompt and kept until the
//! session ends, so that nothing is lost between the prompt and the main screen.
//!
//! Why one of each: crossterm reads the terminal through one shared reader, woken by each
//! `EventStream`'s waker. Dropping a stream (the prompt's, once answered) leaves a wake-up
//! pending; the next stream's first poll returned on that wake-up and dropped the
//! terminal's readiness reported beside it, so keys typed in between sat unread until the
//! next keystroke. Leaving raw mode in between also echoed them and turned Enter into a
//! newline (Ctrl-J in raw mode).

use std::io;

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, EventStream};
use crossterm::execute;
use ratatui::DefaultTerminal;
use ratatui::layout::Rect;
use ratatui::widgets::Paragraph;

/// The terminal in raw mode on the alternate screen, and its input; restored when dropped
/// (on every way out, errors included).
pub(super) struct Screen {
    /// Where frames are drawn.
    pub terminal: DefaultTerminal,
    /// Every key, paste and resize, for the trust prompt and then the main screen.
    pub keys: EventStream,
}

impl Screen {
    /// Takes over the terminal.
    pub(super) fn enter() -> io::Result<Screen> {
        let terminal = ratatui::try_init()?;
        // Paste arrives as one event instead of a stream of keys (and Enters).
        let _ = execute!(io::stdout(), EnableBracketedPaste);
        Ok(Screen {
            terminal,
            keys: EventStream::new(),
        })
    }

    /// Says the session is starting, while it loads (keys typed meanwhile wait).
    pub(super) fn starting(&mut self) -> io::Result<()> {
        self.terminal.draw(|f| {
            let area = f.area();
            let line = Rect {
                height: area.height.min(1),
                ..area
            };
            f.render_widget(Paragraph::new("crew: starting the session…"), line);
        })?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), DisableBracketedPaste);
        ratatui::restore();
    }
}
