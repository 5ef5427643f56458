//! `web_fetch` (Claude Code's `WebFetch`): GETs an http or https URL and returns its
//! readable text — HTML as Markdown, text formats as they are (`page`). The request is
//! bounded: a timeout (`timeout_ms`, default [`DEFAULT_TIMEOUT`], at most
//! [`MAX_TIMEOUT`]), at most [`MAX_BODY_BYTES`] of the response read, at most
//! [`MAX_OUTPUT_CHARS`] of text shown, at most [`MAX_REDIRECTS`] redirects (`http`).
//!
//! Which hosts it may reach is the permission engine's to decide, before it runs
//! (`crew_policy`'s `check::web`: `WebFetch(domain:…)` rules and
//! `sandbox.network.allowedDomains`, one list; an unlisted host asks). The tool keeps to
//! that decision: it fetches only the server the engine judged, follows a redirect only
//! within it, and reports a redirect elsewhere so that the next call is judged anew. URLs
//! with credentials or another scheme are refused here too (`permission::web::FetchUrl`,
//! the engine's own check).

mod http;
mod page;

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Definition, Safety, Tool, ToolContext, ToolError, field, required, schema};
use crate::permission::web::FetchUrl;
use crate::permission::{Category, PermissionSpec, RuleName, TargetSpec};
use http::Fetched;
use page::Kind;

/// The tool's name.
pub const NAME: &str = "web_fetch";

/// How long a fetch may take when the call names no `timeout_ms`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `timeout_ms` a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);

/// Bytes of a response read at most; reading stops there.
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;

/// Characters of text returned at most; the rest is cut with a note.
pub const MAX_OUTPUT_CHARS: usize = 100_000;

/// Redirects followed (within one server) at most.
pub const MAX_REDIRECTS: usize = 5;

/// Characters of an error page's text shown with its status.
const ERROR_EXCERPT_CHARS: usize = 2_000;

/// The size limits a fetch runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Bytes of a response read at most.
    pub max_body_bytes: usize,
    /// Characters of text returned at most.
    pub max_output_chars: usize,
    /// Redirects followed at most.
    pub max_redirects: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: MAX_BODY_BYTES,
            max_output_chars: MAX_OUTPUT_CHARS,
            max_redirects: MAX_REDIRECTS,
        }
    }
}

/// The `web_fetch` tool.
pub struct WebFetch {
    def: Definition,
    limits: FetchLimits,
    /// Built on first use, then shared by every call (its connection pool too).
    client: OnceLock<Result<reqwest::Client, http::FetchError>>,
}

impl WebFetch {
    /// The tool with the default limits.
    pub fn new() -> Self {
        Self::with_limits(FetchLimits::default())
    }

    /// The tool with these limits.
    pub fn with_limits(limits: FetchLimits) -> Self {
        let description = format!(
            "Fetch a web page (an http:// or https:// URL) and return its text: HTML as \
             Markdown (scripts and styles dropped), plain text, Markdown, JSON and other text \
             formats as they are; images, PDFs and other binary content are refused. Use it \
             to read documentation, issues or API answers from the web. Fetching from a host \
             the user has not allowed asks them first. Redirects are followed within the same \
             host and port only: a redirect to another host is reported, and you fetch its \
             target with a new call. At most {} bytes of a response are read and {} \
             characters of text returned (the rest is cut with a note); the timeout is \
             timeout_ms (default {}, max {}).",
            limits.max_body_bytes,
            limits.max_output_chars,
            DEFAULT_TIMEOUT.as_millis(),
            MAX_TIMEOUT.as_millis()
        );
        let input_schema = schema::object(
            &[
                (
                    "url",
                    json!({"type": "string", "description": "The http:// or https:// URL to fetch."}),
                ),
                (
                    "timeout_ms",
                    json!({"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT.as_millis() as u64, "description": "Timeout in milliseconds for the whole fetch (default 30000, max 120000)."}),
                ),
                (
                    "prompt",
                    json!({"type": "string", "description": "What you are looking for on the page (accepted for Claude Code's WebFetch; the whole text is returned, so read it for that)."}),
                ),
            ],
            &["url"],
        );
        Self {
            def: Definition {
                name: NAME.into(),
                aliases: Vec::new(),
                description,
                input_schema,
                // It changes nothing here (a GET), so Plan Mode may research with it; the
                // engine asks before any host nobody allowed.
                safety: Safety::ReadOnly,
                system: false,
                // Above MAX_TIMEOUT, so our own limit (with its message) fires first.
                timeout: Some(MAX_TIMEOUT + Duration::from_secs(10)),
                permission: Some(PermissionSpec::new(
                    Category::Network,
                    [RuleName::WebFetch],
                    TargetSpec::url("url"),
                )),
            },
            limits,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .get_or_init(http::client)
            .as_ref()
            .map_err(|e| ToolError::Failed(e.to_string()))
    }
}

impl Default for WebFetch {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WebFetch {
    fn definition(&self) -> &Definition {
        &self.def
    }

    async fn run(&self, input: Value, ctx: ToolContext) -> Result<String, ToolError> {
        let raw: String = required(&input, "url")?;
        let url = FetchUrl::parse(&raw).map_err(|e| ToolError::InvalidInput(e.to_string()))?;
        let timeout = field::<u64>(&input, "timeout_ms")?
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_TIMEOUT)
            .min(MAX_TIMEOUT);
        let client = self.client()?;
        let limits = self.limits;
        let fetch = http::get(
            client,
            url.clone(),
            limits.max_redirects,
            limits.max_body_bytes,
        );
        let fetched = tokio::select! {
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Failed(format!("the fetch of {url} was cancelled")));
            }
            r = tokio::time::timeout(timeout, fetch) => r,
        };
        let fetched = fetched
            .map_err(|_| {
                ToolError::Failed(format!(
                    "fetching {url} timed out after {} ms: the server did not answer in time. \
                     Retry with a larger timeout_ms (at most {}), or try another URL",
                    timeout.as_millis(),
                    MAX_TIMEOUT.as_millis()
                ))
            })?
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        match fetched {
            Fetched::Page(p) => render(p, limits).await,
            Fetched::Elsewhere { from, status, to } => Ok(elsewhere(&from, status, to)),
        }
    }
}

/// The text of a fetched page, or the error a failed status or a binary body is.
async fn render(p: http::Page, limits: FetchLimits) -> Result<String, ToolError> {
    let content_type = p.content_type.clone();
    let kind = page::kind(content_type.as_deref(), &p.body);
    let shown_type = content_type.as_deref().unwrap_or("none given");
    if kind == Kind::Binary {
        return Err(ToolError::Failed(format!(
            "{} answered {} with content of type `{shown_type}` ({} bytes{}), which is not \
             text; web_fetch returns text only (HTML as Markdown)",
            p.url,
            p.status,
            p.body.len(),
            if p.cut { " read before the limit" } else { "" }
        )));
    }
    let body = p.body;
    // Converting a large page is CPU work: off the async workers.
    let text = tokio::task::spawn_blocking(move || page::text(kind, &body))
        .await
        .map_err(|e| ToolError::Failed(format!("converting the page was interrupted: {e}")))?
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    if !p.status.is_success() {
        let excerpt = page::cut(text.trim().to_string(), ERROR_EXCERPT_CHARS);
        return Err(ToolError::Failed(format!(
            "{} answered {}{}",
            p.url,
            p.status,
            if excerpt.is_empty() {
                String::new()
            } else {
                format!(":\n{excerpt}")
            }
        )));
    }
    let mut out = format!("URL: {}\nContent-Type: {shown_type}\n", p.url);
    if !p.redirected_from.is_empty() {
        let hops: Vec<String> = p.redirected_from.iter().map(ToString::to_string).collect();
        out.push_str(&format!("Redirected from: {}\n", hops.join(" → ")));
    }
    out.push('\n');
    if text.trim().is_empty() {
        out.push_str("(the page has no text)");
    } else {
        out.push_str(&page::cut(text, limits.max_output_chars));
    }
    if p.cut {
        out.push_str(&format!(
            "\n\n[web_fetch: the response is larger than {} bytes; only that much was read, \
             so the text ends early.]",
            limits.max_body_bytes
        ));
    }
    Ok(out)
}

/// What the model is told of a redirect to another server: where it points and that a
/// new call fetches it (and is judged on its own host).
fn elsewhere(
    from: &FetchUrl,
    status: reqwest::StatusCode,
    to: Result<FetchUrl, (String, crate::permission::web::UrlError)>,
) -> String {
    match to {
        Ok(to) => format!(
            "{from} answered {status}, redirecting to {to}, on another server. web_fetch \
             follows redirects within one host and port only, so that every host it reaches \
             is one the permission rules were checked for. To read the page, call web_fetch \
             again with url {to}."
        ),
        Err((location, e)) => format!(
            "{from} answered {status}, redirecting to `{location}`, which web_fetch cannot \
             fetch: {e}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    async fn run(tool: &WebFetch, input: Value) -> Result<String, ToolError> {
        tool.run(input, ToolContext::new(std::env::temp_dir(), "t"))
            .await
    }

    #[tokio::test]
    async fn a_page_comes_back_as_markdown_under_its_url() {
        let server = MockServer::start().await;
        Mock::given(path("/doc"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(
                "<html><body><h1>Title</h1><script>SECRET()</script><p>Body</p></body></html>",
                "text/html; charset=utf-8",
            ))
            .mount(&server)
            .await;
        let url = format!("{}/doc", server.uri());
        let out = run(&WebFetch::new(), json!({"url": url})).await.unwrap();
        assert!(out.starts_with(&format!("URL: {url}\n")), "{out}");
        assert!(out.contains("# Title") && out.contains("Body"), "{out}");
        assert!(!out.contains("SECRET"), "{out}");
    }

    #[tokio::test]
    async fn limits_cut_the_text_and_the_response_with_notes() {
        let server = MockServer::start().await;
        Mock::given(path("/big"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw("word ".repeat(10_000), "text/plain"),
            )
            .mount(&server)
            .await;
        let url = format!("{}/big", server.uri());
        let small = WebFetch::with_limits(FetchLimits {
            max_body_bytes: 1_000,
            max_output_chars: 300,
            max_redirects: 0,
        });
        let out = run(&small, json!({"url": url})).await.unwrap();
        assert!(out.contains("after 300 characters; 700 more"), "{out}");
        assert!(out.contains("larger than 1000 bytes"), "{out}");
    }

    #[tokio::test]
    async fn error_statuses_binary_bodies_and_bad_urls_are_errors() {
        let server = MockServer::start().await;
        Mock::given(path("/missing"))
            .respond_with(
                ResponseTemplate::new(404).set_body_raw("<p>No such page</p>", "text/html"),
            )
            .mount(&server)
            .await;
        Mock::given(path("/logo"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(vec![0x89, b'P', 0, 1], "image/png"),
            )
            .mount(&server)
            .await;
        let tool = WebFetch::new();
        let e = run(&tool, json!({"url": format!("{}/missing", server.uri())}))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("404 Not Found") && e.contains("No such page"),
            "{e}"
        );
        let e = run(&tool, json!({"url": format!("{}/logo", server.uri())}))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("image/png") && e.contains("not text"), "{e}");
        let e = run(&tool, json!({"url": "file:///etc/passwd"}))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "invalid_arguments");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out_within_the_limit() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts and then says nothing.
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                open.push(s);
            }
        });
        let url = format!("http://127.0.0.1:{port}/");
        let e = run(&WebFetch::new(), json!({"url": url, "timeout_ms": 200}))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("timed out after 200 ms") && e.contains("timeout_ms"),
            "{e}"
        );
        held.abort();
    }
}
