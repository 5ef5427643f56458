//! The retry policy for model requests, as pure functions: which failures are worth
//! another attempt, and how long to wait first. `http.rs` runs the loop; nothing here
//! sleeps or does I/O, so every rule is unit-tested directly.
//!
//! Rules (the same ones the official Anthropic and OpenAI SDKs follow):
//! - retry connection errors and HTTP 408, 409, 429, 5xx (including Anthropic's 529);
//! - an `x-should-retry: true|false` response header overrides the status rule;
//! - wait `retry-after-ms`, else `retry-after` (seconds or an HTTP date) when it is at
//!   most 60 s; otherwise exponential backoff from 0.5 s doubling up to 8 s, less up to
//!   25 % random jitter so that many agents do not retry in lockstep.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// How many times, and how patiently, a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` requests).
    pub max_retries: u32,
    /// The backoff before the first retry.
    pub initial_backoff: Duration,
    /// The cap on backoff.
    pub max_backoff: Duration,
    /// A server-requested wait longer than this is ignored in favour of backoff.
    pub max_retry_after: Duration,
}

/// The default number of retries for agent work.
pub const DEFAULT_MAX_RETRIES: u32 = 8;

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: DEFAULT_MAX_RETRIES,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The same policy with a different retry budget.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The wait before retry number `retry` (1-based): the server's request when it
    /// gave a usable one, else backoff. `jitter` is a random number in `[0, 1)`.
    pub fn delay(&self, retry: u32, server_wait: Option<Duration>, jitter: f64) -> Duration {
        match server_wait {
            Some(wait) if wait <= self.max_retry_after => wait,
            _ => self.backoff(retry, jitter),
        }
    }

    /// Exponential backoff for retry number `retry` (1-based), reduced by up to 25 %
    /// according to `jitter` in `[0, 1)`.
    pub fn backoff(&self, retry: u32, jitter: f64) -> Duration {
        let exp = retry.saturating_sub(1).min(16);
        let full = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        full.mul_f64(1.0 - 0.25 * jitter.clamp(0.0, 1.0))
    }
}

/// Whether an HTTP status is worth retrying, after the `x-should-retry` override.
pub fn should_retry_status(status: u16, headers: &HeaderMap) -> bool {
    match header_str(headers, "x-should-retry") {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// The wait the server asked for, if any: `retry-after-ms`, else `retry-after` as
/// seconds or an HTTP date (relative to `now`). Unparsable or negative values are
/// ignored. The 60 s cap is applied by `RetryPolicy::delay`.
pub fn server_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(parse_non_negative) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?;
    if let Some(secs) = parse_non_negative(value) {
        return Some(Duration::from_secs_f64(secs));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    // A date in the past means "now".
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A short, user-facing reason for retrying after an HTTP status.
pub fn status_reason(status: u16) -> String {
    match status {
        408 => "request timeout (408)".to_string(),
        409 => "conflict (409)".to_string(),
        429 => "rate limited (429)".to_string(),
        529 => "overloaded (529)".to_string(),
        503 => "service unavailable (503)".to_string(),
        s if (500..=599).contains(&s) => format!("server error ({s})"),
        s => format!("HTTP {s}"),
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

fn parse_non_negative(text: &str) -> Option<f64> {
    let v: f64 = text.parse().ok()?;
    // Caps absurd values so Duration construction cannot panic; the caller ignores
    // anything over its own limit anyway.
    (v.is_finite() && v >= 0.0).then_some(v.min(1.0e9))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn retryable_statuses() {
        let none = HeaderMap::new();
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(should_retry_status(s, &none), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!should_retry_status(s, &none), "{s}");
        }
    }

    #[test]
    fn x_should_retry_overrides_status() {
        assert!(!should_retry_status(
            529,
            &headers(&[("x-should-retry", "false")])
        ));
        assert!(should_retry_status(
            400,
            &headers(&[("x-should-retry", "true")])
        ));
        assert!(should_retry_status(
            500,
            &headers(&[("x-should-retry", "maybe")])
        ));
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let h = headers(&[("retry-after-ms", "1500"), ("retry-after", "30")]);
        assert_eq!(
            server_wait(&h, SystemTime::now()),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let h = headers(&[("retry-after", "2")]);
        assert_eq!(
            server_wait(&h, SystemTime::now()),
            Some(Duration::from_secs(2))
        );
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]);
        assert_eq!(server_wait(&h, now), Some(Duration::from_secs(10)));
        let h = headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")]);
        assert_eq!(server_wait(&h, now), Some(Duration::ZERO));
        let h = headers(&[("retry-after", "soon"), ("retry-after-ms", "-5")]);
        assert_eq!(server_wait(&h, now), None);
    }

    #[test]
    fn long_server_waits_fall_back_to_backoff() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(60)), 0.0),
            Duration::from_secs(60)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(61)), 0.0),
            Duration::from_millis(500)
        );
        assert_eq!(p.delay(3, None, 0.0), Duration::from_secs(2));
    }

    #[test]
    fn backoff_doubles_caps_and_jitters_down() {
        let p = RetryPolicy::default();
        let secs: Vec<f64> = (1..=7).map(|r| p.backoff(r, 0.0).as_secs_f64()).collect();
        assert_eq!(secs, vec![0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(p.backoff(1, 0.999_999).as_millis(), 375);
        assert_eq!(p.backoff(100, 0.0), Duration::from_secs(8));
    }

    #[test]
    fn status_reasons_are_readable() {
        assert_eq!(status_reason(429), "rate limited (429)");
        assert_eq!(status_reason(529), "overloaded (529)");
        assert_eq!(status_reason(500), "server error (500)");
    }
}
