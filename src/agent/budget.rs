//! Cost accounting per request and the run's budget (`--max-budget-usd`, the
//! `maxBudgetUsd` setting). Every agent of a session charges one shared [`Budget`] after
//! each model turn, at the model's list price with cache reads and writes included
//! (`pricing`); the agent loop checks it before each request, so a run stops between
//! turns: the tool calls of the turn that crossed the limit finish first, and nothing is
//! killed mid-write.

use std::sync::{Arc, Mutex};

use crate::events::{EventBus, EventKind};
use crate::protocol::Usage;

/// The session's spending limit and what its agents have spent, shared by clones.
#[derive(Debug, Clone, Default)]
pub struct Budget(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    limit: Option<f64>,
    spent: Mutex<Spent>,
}

#[derive(Debug, Default)]
struct Spent {
    usd: f64,
    /// A model without a price was used while a limit is set.
    unpriced: Option<String>,
}

impl Budget {
    /// A budget of `limit` US dollars (`None`: no limit, spending is still counted).
    pub fn new(limit: Option<f64>) -> Self {
        Self(Arc::new(Inner {
            limit,
            spent: Mutex::default(),
        }))
    }

    /// The limit, if any.
    pub fn limit(&self) -> Option<f64> {
        self.0.limit
    }

    /// US dollars spent so far (priced models only).
    pub fn spent(&self) -> f64 {
        self.lock().usd
    }

    /// Charges one request's usage on `model`; returns its cost when the model is priced.
    pub fn charge(&self, model: &str, usage: &Usage) -> Option<f64> {
        let cost = crate::pricing::cost_usd(model, usage);
        let mut spent = self.lock();
        match cost {
            Some(c) => spent.usd += c,
            None if self.0.limit.is_some() => spent.unpriced = Some(model.to_string()),
            None => {}
        }
        cost
    }

    /// Why no further request may be sent, once the spending has passed the limit (or
    /// cannot be known: a limit with an unpriced model fails closed).
    pub fn stop_reason(&self) -> Option<String> {
        let limit = self.0.limit?;
        let spent = self.lock();
        if let Some(model) = &spent.unpriced {
            return Some(format!(
                "budget_exhausted: the budget of ${limit:.2} cannot be enforced because model `{model}` has no known price; \
run without --max-budget-usd (and the maxBudgetUsd setting) or use a priced model"
            ));
        }
        (spent.usd > limit).then(|| {
            format!(
                "budget_exhausted: this run has cost ${:.4}, past its budget of ${limit:.2} (--max-budget-usd or maxBudgetUsd); \
it stopped after the last turn's tool calls finished",
                spent.usd
            )
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spent> {
        // A poisoned lock only means a charge panicked mid-add; the numbers are usable.
        self.0.spent.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Charges a finished turn's usage to `budget` and publishes what its request cost and
/// how much of its input the prompt cache served.
pub fn after_turn(
    budget: &Budget,
    events: &EventBus,
    agent: &str,
    model: &str,
    turn: u32,
    usage: &Usage,
) {
    let cost_usd = budget.charge(model, usage);
    events.publish(
        agent,
        EventKind::RequestUsage {
            turn,
            model: model.to_string(),
            cached: usage.cache_read_input_tokens,
            created: usage.cache_creation_input_tokens,
            uncached: usage.input_tokens,
            output: usage.output_tokens,
            cost_usd,
        },
    );
}

/// The share of input tokens read from the cache (0 when there was no input).
pub fn cache_share(usage: &Usage) -> f64 {
    let input =
        usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
    if input == 0 {
        0.0
    } else {
        usage.cache_read_input_tokens as f64 / input as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            ..Usage::default()
        }
    }

    #[test]
    fn the_budget_stops_once_spending_passes_the_limit() {
        // claude-sonnet-4: $3 per million input tokens.
        let b = Budget::new(Some(0.01));
        assert_eq!(b.charge("claude-sonnet-4-5", &usage(3000)), Some(0.009));
        assert!(b.stop_reason().is_none());
        b.clone().charge("claude-sonnet-4-5", &usage(1000));
        let reason = b.stop_reason().unwrap();
        assert!(
            reason.contains("budget_exhausted") && reason.contains("$0.01"),
            "{reason}"
        );
    }

    #[test]
    fn a_limit_with_an_unpriced_model_fails_closed_and_no_limit_never_stops() {
        let b = Budget::new(Some(5.0));
        assert_eq!(b.charge("llama-3", &usage(10)), None);
        assert!(b.stop_reason().unwrap().contains("no known price"));
        let free = Budget::new(None);
        free.charge("llama-3", &usage(10));
        free.charge("claude-opus-4-1", &usage(10_000_000));
        assert!(free.stop_reason().is_none());
        assert!(free.spent() > 100.0);
    }

    #[test]
    fn cache_share_is_read_over_all_input() {
        let u = Usage {
            input_tokens: 5,
            cache_creation_input_tokens: 5,
            cache_read_input_tokens: 90,
            output_tokens: 7,
        };
        assert!((cache_share(&u) - 0.9).abs() < 1e-9);
        assert_eq!(cache_share(&Usage::default()), 0.0);
    }
}
