//! Calling the user back when the terminal UI needs them: a terminal bell and a desktop
//! notification (`notify-send`, where it is installed) when a question waits for an answer.
//! Both are off unless `CREW_NOTIFY` names them: `bell`, `desktop`, or `bell,desktop`.

use std::io::Write;
use std::path::PathBuf;

/// The environment variable that turns the calls on.
pub(crate) const NOTIFY_VAR: &str = "CREW_NOTIFY";

/// How the user is called when input is needed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attention {
    /// Ring the terminal's bell.
    bell: bool,
    /// The desktop notifier to run (`notify-send`), when desktop notifications are on.
    desktop: Option<PathBuf>,
}

impl Attention {
    /// What `CREW_NOTIFY` asks for; an unknown word is reported once and ignored.
    pub(crate) fn from_env() -> (Self, Option<String>) {
        match std::env::var(NOTIFY_VAR) {
            Ok(value) => Self::parse(&value, PathBuf::from("notify-send")),
            Err(_) => (Self::default(), None),
        }
    }

    /// Parses `value` (`bell`, `desktop`, separated by commas); `notifier` is the program
    /// desktop notifications run.
    pub(crate) fn parse(value: &str, notifier: PathBuf) -> (Self, Option<String>) {
        let mut attention = Self::default();
        let mut unknown = Vec::new();
        for word in value.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "bell" => attention.bell = true,
                "desktop" => attention.desktop = Some(notifier.clone()),
                other => unknown.push(other.to_string()),
            }
        }
        let warning = (!unknown.is_empty()).then(|| {
            format!(
                "{NOTIFY_VAR}: `{}` is not `bell` or `desktop`; ignored",
                unknown.join(", ")
            )
        });
        (attention, warning)
    }

    /// Calls the user: `summary` says what waits (`lead asks to run run_command`). The bell
    /// goes to `terminal`; the notifier runs in the background and its failure (not
    /// installed, no desktop) is silent.
    pub(crate) fn input_needed(&self, summary: &str, terminal: &mut dyn Write) {
        if self.bell {
            let _ = terminal.write_all(b"\x07").and_then(|()| terminal.flush());
        }
        if let Some(program) = &self.desktop {
            let text = crate::sanitize::clean_line(summary);
            let spawned = std::process::Command::new(program)
                .args(["--app-name=crew", "crew needs your answer", &text])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            if let Ok(mut child) = spawned {
                // Reaped off the UI thread, so no zombie is left behind.
                std::thread::spawn(move || child.wait());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_rings_unless_asked_and_a_bell_is_one_bel_byte() {
        let (quiet, warning) = Attention::parse("", PathBuf::from("notify-send"));
        assert_eq!((quiet.clone(), warning), (Attention::default(), None));
        let mut out = Vec::new();
        quiet.input_needed("lead asks", &mut out);
        assert!(out.is_empty());
        let (bell, warning) = Attention::parse("bell, loud", PathBuf::from("notify-send"));
        assert_eq!(
            warning.as_deref(),
            Some("CREW_NOTIFY: `loud` is not `bell` or `desktop`; ignored")
        );
        bell.input_needed("lead asks", &mut out);
        assert_eq!(out, b"\x07");
    }

    #[test]
    fn a_desktop_notification_runs_the_notifier_with_the_cleaned_summary() {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen");
        let notifier = dir.path().join("notify-send");
        std::fs::write(
            &notifier,
            format!(
                "#!/bin/sh\nprintf '%s|' \"$@\" > {}.tmp && mv {0}.tmp {0}\n",
                seen.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&notifier, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (desktop, _) = Attention::parse("desktop", notifier);
        let mut out = Vec::new();
        desktop.input_needed("lead asks to run run_command\x1b]2;evil\x07", &mut out);
        assert!(out.is_empty(), "no bell was asked for");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !seen.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let args = std::fs::read_to_string(&seen).unwrap();
        assert!(
            args.starts_with("--app-name=crew|crew needs your answer|lead asks to run run_command"),
            "{args}"
        );
        assert!(
            !args.contains('\x1b') && !args.contains('\x07'),
            "control bytes reach the notifier: {args:?}"
        );
    }
}
