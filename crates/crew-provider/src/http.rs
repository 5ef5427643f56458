//! The one place that talks HTTP to model APIs: sends a streaming request, reads its
//! server-sent events through an API-specific `Decoder`, and runs the retry loop
//! (policy in `retry.rs`, de-duplication of re-generated output in `replay.rs`).
//!
//! The returned stream owns the response: dropping it closes the connection, which is
//! how a cancelled turn stops the request.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_stream::stream;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::replay::Replay;
use super::retry::{self, RetryPolicy};
use super::{EventStream, ProviderError, StreamEvent};

/// Waits between attempts; tests inject one that records or skips the wait.
pub type Sleeper = Arc<dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync>;

/// A failed attempt, and whether another one may succeed.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The error reported if no retry is made.
    pub error: ProviderError,
    /// A short user-facing reason (`overloaded`, `rate limited (429)`) when worth retrying.
    pub retry_reason: Option<String>,
    /// The wait the server asked for.
    pub server_wait: Option<Duration>,
}

impl Failure {
    /// A failure worth retrying.
    pub fn retryable(reason: impl Into<String>, error: ProviderError) -> Self {
        Self {
            error,
            retry_reason: Some(reason.into()),
            server_wait: None,
        }
    }

    /// A failure that another attempt would repeat.
    pub fn fatal(error: ProviderError) -> Self {
        Self {
            error,
            retry_reason: None,
            server_wait: None,
        }
    }
}

/// Turns one API's server-sent events into normalised events. A fresh decoder is made
/// for every attempt.
pub trait Decoder: Send + 'static {
    /// Feeds one event (`event` is the SSE event name, `message` when absent).
    fn event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, Failure>;
    /// Whether the API's end-of-turn marker has arrived (stop reading).
    fn is_done(&self) -> bool;
    /// The body ended: the closing events, or a failure if the turn is incomplete.
    fn finish(&mut self) -> Result<Vec<StreamEvent>, Failure>;
}

/// One streaming API call, ready to send.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    /// The full URL.
    pub url: String,
    /// Extra headers (authentication, versions).
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
    /// Appended to 401/403 errors: what to check (e.g. `check ANTHROPIC_API_KEY`).
    pub auth_hint: String,
}

/// An HTTP client with a retry policy, shared by all turns of a provider.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    policy: RetryPolicy,
    sleep: Sleeper,
}

impl HttpClient {
    /// A client with the default policy and real sleeping.
    pub fn new() -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("crewmaster/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            // A stream idle this long is dead (Anthropic pings every few seconds).
            .read_timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| ProviderError::Config(format!("cannot build HTTP client: {e}")))?;
        Ok(Self {
            client,
            policy: RetryPolicy::default(),
            sleep: Arc::new(|d| Box::pin(tokio::time::sleep(d))),
        })
    }

    /// The same client with another retry policy.
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same client waiting through `sleep` between attempts.
    pub fn with_sleeper(mut self, sleep: Sleeper) -> Self {
        self.sleep = sleep;
        self
    }

    /// The retry policy in use.
    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// Streams one turn, retrying per the policy. A break before any output is retried
    /// within the budget; a break after output was shown is announced by a `Retrying`
    /// event and retried once from the start, with already-shown output suppressed.
    pub fn stream<D, F>(&self, request: ApiRequest, new_decoder: F) -> EventStream
    where
        D: Decoder,
        F: Fn() -> D + Send + 'static,
    {
        let this = self.clone();
        Box::pin(stream! {
            let mut replay = Replay::default();
            let mut retries = 0u32;
            let mut mid_output_retry_used = false;
            loop {
                let failure = match this.send(&request).await {
                    Err(f) => f,
                    Ok(response) => {
                        let mut decoder = new_decoder();
                        let mut events = response.bytes_stream().eventsource();
                        // Reads until the turn completes (return) or fails (break).
                        loop {
                            // `Ok((events, true))` ends the turn successfully.
                            let step = match events.next().await {
                                Some(Ok(ev)) => decoder.event(&ev.event, &ev.data).and_then(|mut out| {
                                    let done = decoder.is_done();
                                    if done {
                                        out.extend(decoder.finish()?);
                                    }
                                    Ok((out, done))
                                }),
                                Some(Err(e)) => Err(sse_failure(e)),
                                None => decoder.finish().map(|out| (out, true)),
                            };
                            match step {
                                Ok((out, done)) => {
                                    for event in out {
                                        if let Some(event) = replay.pass(event) {
                                            yield Ok(event);
                                        }
                                    }
                                    if done {
                                        return;
                                    }
                                }
                                Err(f) => break f,
                            }
                        }
                    }
                };
                let Some(reason) = failure.retry_reason.clone() else {
                    yield Err(failure.error);
                    return;
                };
                let mid_output = replay.attempt_showed_output();
                if retries >= this.policy.max_retries || (mid_output && mid_output_retry_used) {
                    yield Err(failure.error);
                    return;
                }
                retries += 1;
                let reason = if mid_output {
                    mid_output_retry_used = true;
                    format!("stream interrupted after output ({reason}); restarting the turn")
                } else {
                    reason
                };
                let delay = this.policy.delay(retries, failure.server_wait, rand::random::<f64>());
                tracing::debug!(attempt = retries + 1, ?delay, %reason, error = %failure.error, "retrying model request");
                yield Ok(StreamEvent::Retrying {
                    attempt: retries + 1,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason,
                });
                (this.sleep)(delay).await;
                replay.new_attempt();
            }
        })
    }

    /// Sends the request and checks the status: a streaming response, or a failure.
    async fn send(&self, request: &ApiRequest) -> Result<reqwest::Response, Failure> {
        let mut builder = self
            .client
            .post(&request.url)
            .header("accept", "text/event-stream")
            .json(&request.body);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let response = builder.send().await.map_err(|e| {
            let message = error_chain(&e);
            if e.is_builder() {
                Failure::fatal(ProviderError::Config(format!(
                    "invalid request to {}: {message}",
                    request.url
                )))
            } else {
                Failure::retryable("connection error", ProviderError::Connection(message))
            }
        })?;
        let status = response.status().as_u16();
        if response.status().is_success() {
            let json = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if json {
                let body = response.text().await.unwrap_or_default();
                return Err(Failure::fatal(ProviderError::Stream(format!(
                    "{} answered with JSON instead of an event stream: {}",
                    request.url,
                    error_message(&body)
                ))));
            }
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        let mut message = error_message(&body);
        if matches!(status, 401 | 403) {
            message = format!("{message} ({})", request.auth_hint);
        } else if status == 404 {
            message = format!(
                "{message} (check the model name and the base URL {})",
                request.url
            );
        }
        let error = ProviderError::Http { status, message };
        if retry::should_retry_status(status, &headers) {
            Err(Failure {
                error,
                retry_reason: Some(retry::status_reason(status)),
                server_wait: retry::server_wait(&headers, SystemTime::now()),
            })
        } else {
            Err(Failure::fatal(error))
        }
    }
}

/// The message of an API error body (`{"error":{"message":…}}` in both APIs), or the
/// body itself, shortened.
pub fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error")?;
        e.get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        return "(empty body)".to_string();
    }
    shorten(&text, 500)
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn sse_failure(e: EventStreamError<reqwest::Error>) -> Failure {
    match e {
        EventStreamError::Transport(e) => Failure::retryable(
            "connection lost",
            ProviderError::Connection(format!("stream broke: {}", error_chain(&e))),
        ),
        other => Failure::retryable(
            "malformed stream",
            ProviderError::Stream(format!("malformed event stream: {other}")),
        ),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_prefers_the_api_message() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message(
                r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#
            ),
            "Incorrect API key"
        );
        assert_eq!(error_message("  bad gateway \n"), "bad gateway");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn shorten_respects_characters() {
        assert_eq!(shorten("héllo", 2), "h…");
        assert_eq!(shorten("abc", 5), "abc");
    }
}
