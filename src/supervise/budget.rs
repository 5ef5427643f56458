//! The restart budget: how many restarts a session allows in a sliding window before it
//! calls the failures a storm and ends itself with the reason, rather than restarting an
//! actor that dies again at once forever. A plain value, decided without a clock of its
//! own (the caller passes `now`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The environment variable that sets the limit: `N/Ts`, e.g. `20/10s` (at most 20
/// restarts in any 10 seconds).
pub(crate) const RESTART_LIMIT_VAR: &str = "CREW_RESTART_LIMIT";

/// At most `max` restarts in any `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartLimit {
    /// Restarts allowed within the window.
    pub max: usize,
    /// The window.
    pub window: Duration,
}

impl Default for RestartLimit {
    fn default() -> Self {
        Self {
            max: 20,
            window: Duration::from_secs(10),
        }
    }
}

/// A restart limit that is not `N/Ts` with T at least 1 (the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{RESTART_LIMIT_VAR}={0:?}: expected N/Ts, e.g. 20/10s")]
pub struct BadRestartLimit(pub String);

impl RestartLimit {
    /// Parses `N/Ts` (`20/10s`, `5/1s`).
    pub fn parse(text: &str) -> Result<Self, BadRestartLimit> {
        let bad = || BadRestartLimit(text.to_string());
        let (max, window) = text.trim().split_once('/').ok_or_else(bad)?;
        let max: usize = max.trim().parse().map_err(|_| bad())?;
        let secs: u64 = window
            .trim()
            .strip_suffix('s')
            .ok_or_else(bad)?
            .parse()
            .map_err(|_| bad())?;
        if secs == 0 {
            return Err(bad());
        }
        Ok(Self {
            max,
            window: Duration::from_secs(secs),
        })
    }

    /// The limit from `CREW_RESTART_LIMIT`, else the default; a malformed value is
    /// reported (returned beside the default, which then applies).
    pub fn from_env() -> (Self, Option<String>) {
        match std::env::var(RESTART_LIMIT_VAR) {
            Ok(text) => match Self::parse(&text) {
                Ok(limit) => (limit, None),
                Err(e) => (Self::default(), Some(e.to_string())),
            },
            Err(_) => (Self::default(), None),
        }
    }
}

/// The restarts within the current window.
#[derive(Debug, Clone)]
pub struct RestartBudget {
    limit: RestartLimit,
    recent: VecDeque<Instant>,
}

/// Too many restarts: the session ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storm {
    /// Restarts counted in the window, this one included.
    pub restarts: usize,
    /// The limit that was passed.
    pub limit: RestartLimit,
}

impl std::fmt::Display for Storm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "restart storm: {} actor restarts within {} s (the limit is {}; set {RESTART_LIMIT_VAR} to change it)",
            self.restarts,
            self.limit.window.as_secs(),
            self.limit.max
        )
    }
}

impl RestartBudget {
    /// An empty budget.
    pub fn new(limit: RestartLimit) -> Self {
        Self {
            limit,
            recent: VecDeque::new(),
        }
    }

    /// Counts a restart at `now`: the number in the window, or the storm when the limit is
    /// passed.
    pub fn spend(&mut self, now: Instant) -> Result<usize, Storm> {
        while let Some(first) = self.recent.front() {
            if now.duration_since(*first) >= self.limit.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        self.recent.push_back(now);
        if self.recent.len() > self.limit.max {
            return Err(Storm {
                restarts: self.recent.len(),
                limit: self.limit,
            });
        }
        Ok(self.recent.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_max_within_the_window_is_a_storm() {
        let limit = RestartLimit::parse("3/10s").unwrap();
        let mut b = RestartBudget::new(limit);
        let t0 = Instant::now();
        for i in 0..3 {
            assert_eq!(b.spend(t0 + Duration::from_secs(i)), Ok(i as usize + 1));
        }
        let storm = b.spend(t0 + Duration::from_secs(3)).unwrap_err();
        assert_eq!(storm.restarts, 4);
        assert!(storm.to_string().contains("CREW_RESTART_LIMIT"));
    }

    #[test]
    fn restarts_older_than_the_window_do_not_count() {
        let mut b = RestartBudget::new(RestartLimit::parse("2/5s").unwrap());
        let t0 = Instant::now();
        for i in 0..10 {
            // One restart every 3 s never has more than 2 in any 5 s.
            assert!(b.spend(t0 + Duration::from_secs(3 * i)).is_ok(), "at {i}");
        }
    }

    #[test]
    fn malformed_limits_are_refused_with_the_expected_form() {
        for bad in ["", "20", "x/10s", "20/10", "20/0s", "20/-1s"] {
            let e = RestartLimit::parse(bad).unwrap_err().to_string();
            assert!(e.contains("N/Ts"), "{bad}: {e}");
        }
        assert_eq!(
            RestartLimit::parse(" 200/60s ").unwrap(),
            RestartLimit {
                max: 200,
                window: Duration::from_secs(60)
            }
        );
    }
}
