//! The circuit breaker of auto mode: a classifier that keeps refusing is either
//! misjudging the task or watching a model go astray, and either way a human should look.
//! After `CONSECUTIVE_LIMIT` denials in a row, or `TOTAL_LIMIT` in the session, it trips:
//! auto mode switches off, calls ask again, and auto cannot be entered until `/auto reset`.
//! Plain data; `AutoMode` holds it behind a lock.

use serde::Serialize;

/// Denials in a row that trip the breaker.
pub(crate) const CONSECUTIVE_LIMIT: u32 = 3;
/// Denials in a session that trip the breaker.
pub(crate) const TOTAL_LIMIT: u32 = 20;

/// The breaker's counters and whether it tripped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Breaker {
    /// Classifier denials since its last allow.
    pub consecutive: u32,
    /// Classifier denials since the session started (or the last reset).
    pub total: u32,
    /// Why it tripped, while it is open.
    pub tripped: Option<String>,
}

impl Breaker {
    /// Records an allow: the run of denials is broken.
    pub fn allowed(&mut self) {
        self.consecutive = 0;
    }

    /// Records a denial; returns the reason when this one trips the breaker.
    pub fn denied(&mut self) -> Option<String> {
        self.consecutive += 1;
        self.total += 1;
        if self.tripped.is_some() {
            return None;
        }
        let why = if self.consecutive >= CONSECUTIVE_LIMIT {
            format!("the classifier denied {} calls in a row", self.consecutive)
        } else if self.total >= TOTAL_LIMIT {
            format!("the classifier denied {} calls this session", self.total)
        } else {
            return None;
        };
        self.tripped = Some(why.clone());
        Some(why)
    }

    /// `/auto reset`: closes the breaker and clears its counters.
    pub fn reset(&mut self) {
        *self = Breaker::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_denials_in_a_row_trip_it_and_an_allow_breaks_the_run() {
        let mut b = Breaker::default();
        assert_eq!(b.denied(), None);
        assert_eq!(b.denied(), None);
        b.allowed();
        assert_eq!(b.denied(), None);
        assert_eq!(b.denied(), None);
        let why = b.denied().unwrap();
        assert!(why.contains("3 calls in a row"), "{why}");
        assert_eq!(b.denied(), None, "trips once");
        assert!(b.tripped.is_some());
        b.reset();
        assert_eq!(b, Breaker::default());
    }

    #[test]
    fn twenty_denials_in_a_session_trip_it() {
        let mut b = Breaker::default();
        let mut tripped = None;
        for i in 1..=TOTAL_LIMIT {
            if let Some(why) = b.denied() {
                tripped = Some((i, why));
                break;
            }
            if i % 2 == 0 {
                b.allowed();
            }
        }
        let (at, why) = tripped.unwrap();
        assert_eq!(at, TOTAL_LIMIT);
        assert!(why.contains("20 calls this session"), "{why}");
    }
}
