//! What tokens cost: a small table of list prices for well-known Anthropic and OpenAI
//! models, so the status line can show the cost of a session so far. Unknown models get
//! no price (the status line then shows tokens only) rather than a guess.

use crate::protocol::Usage;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Price {
    input: f64,
    output: f64,
    /// Writing to the prompt cache.
    cache_write: f64,
    /// Reading from the prompt cache.
    cache_read: f64,
}

const fn anthropic(input: f64, output: f64) -> Price {
    // Anthropic bills cache writes at 1.25x and cache reads at 0.1x the input price.
    Price {
        input,
        output,
        cache_write: input * 1.25,
        cache_read: input * 0.1,
    }
}

const fn openai(input: f64, output: f64, cached: f64) -> Price {
    Price {
        input,
        output,
        cache_write: input,
        cache_read: cached,
    }
}

/// Model-name prefixes and their prices; the longest matching prefix wins.
const TABLE: &[(&str, Price)] = &[
    ("claude-opus-4-5", anthropic(5.0, 25.0)),
    ("claude-opus-4", anthropic(15.0, 75.0)),
    ("claude-sonnet-4", anthropic(3.0, 15.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("claude-3-5-sonnet", anthropic(3.0, 15.0)),
    ("claude-haiku-4-5", anthropic(1.0, 5.0)),
    ("claude-3-5-haiku", anthropic(0.8, 4.0)),
    ("claude-3-haiku", anthropic(0.25, 1.25)),
    ("gpt-4o-mini", openai(0.15, 0.6, 0.075)),
    ("gpt-4o", openai(2.5, 10.0, 1.25)),
    ("gpt-4.1-nano", openai(0.1, 0.4, 0.025)),
    ("gpt-4.1-mini", openai(0.4, 1.6, 0.1)),
    ("gpt-4.1", openai(2.0, 8.0, 0.5)),
    ("gpt-5-nano", openai(0.05, 0.4, 0.005)),
    ("gpt-5-mini", openai(0.25, 2.0, 0.025)),
    ("gpt-5", openai(1.25, 10.0, 0.125)),
    ("o4-mini", openai(1.1, 4.4, 0.275)),
    ("o3-mini", openai(1.1, 4.4, 0.55)),
    ("o3", openai(2.0, 8.0, 0.5)),
];

fn price(model: &str) -> Option<Price> {
    // Accept `anthropic:NAME` / `openai:NAME` as well as the bare name.
    let name = model.rsplit(':').next().unwrap_or(model);
    TABLE
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, p)| *p)
}

/// The cost in US dollars of `usage` on `model`; `None` when the model's price is unknown.
pub(crate) fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    let p = price(model)?;
    let m = 1_000_000.0;
    Some(
        usage.input_tokens as f64 * p.input / m
            + usage.output_tokens as f64 * p.output / m
            + usage.cache_creation_input_tokens as f64 * p.cache_write / m
            + usage.cache_read_input_tokens as f64 * p.cache_read / m,
    )
}

/// All tokens of a usage, for display.
pub(crate) fn total_tokens(usage: &Usage) -> u64 {
    usage.input_tokens
        + usage.output_tokens
        + usage.cache_creation_input_tokens
        + usage.cache_read_input_tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn known_models_are_priced_by_longest_prefix() {
        let c = cost_usd("claude-sonnet-4-20250514", &usage(1_000_000, 1_000_000)).unwrap();
        assert!((c - 18.0).abs() < 1e-9, "{c}");
        // gpt-4o-mini must not be priced as gpt-4o.
        let mini = cost_usd("openai:gpt-4o-mini", &usage(1_000_000, 0)).unwrap();
        assert!((mini - 0.15).abs() < 1e-9, "{mini}");
        let cached = Usage {
            cache_read_input_tokens: 1_000_000,
            ..Usage::default()
        };
        let c = cost_usd("claude-opus-4-1", &cached).unwrap();
        assert!((c - 1.5).abs() < 1e-9, "{c}");
    }

    #[test]
    fn unknown_models_have_no_price() {
        assert_eq!(cost_usd("script", &usage(10, 10)), None);
        assert_eq!(cost_usd("llama-3", &usage(10, 10)), None);
        assert_eq!(total_tokens(&usage(10, 5)), 15);
    }
}
