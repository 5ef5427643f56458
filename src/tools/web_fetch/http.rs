//! The request itself: one GET, redirects followed by hand and only within the server the
//! permission engine decided on (same host and port; the engine judged that host, not the
//! one a page points to), at most `max_redirects` of them, and the body read until
//! `max_body_bytes`, where reading stops. Nothing here decides permissions: a redirect to
//! another server is reported back, and the model's next call for it is decided anew.

use crate::permission::web::{FetchUrl, UrlError};

/// What a fetch ended in.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// A response that is not a redirect to follow.
    Page(Page),
    /// A redirect to another server, not followed.
    Elsewhere {
        /// The URL that answered with the redirect.
        from: FetchUrl,
        /// Its status line.
        status: reqwest::StatusCode,
        /// Where it points, resolved against `from` (or why it cannot be fetched).
        to: Result<FetchUrl, (String, UrlError)>,
    },
}

/// A response and as much of its body as the limit lets through.
#[derive(Debug)]
pub(crate) struct Page {
    /// The URL that answered (after redirects within the server).
    pub(crate) url: FetchUrl,
    /// The URLs redirected from on the way, in order.
    pub(crate) redirected_from: Vec<FetchUrl>,
    /// Its status.
    pub(crate) status: reqwest::StatusCode,
    /// Its `Content-Type`, if it sent one.
    pub(crate) content_type: Option<String>,
    /// The body, up to the limit.
    pub(crate) body: Vec<u8>,
    /// Whether reading stopped at the limit with more to come.
    pub(crate) cut: bool,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The request could not be sent or answered (DNS, connection, TLS …).
    #[error("fetching {url} failed: {reason}")]
    Request {
        /// The URL.
        url: String,
        /// The error and its causes.
        reason: String,
    },
    /// More redirects within the server than the limit.
    #[error(
        "{url} redirected more than {limit} times within its server; fetch the last URL it named ({last}) if it is the page you want"
    )]
    TooManyRedirects {
        /// The URL first asked for.
        url: String,
        /// The limit.
        limit: usize,
        /// The last redirect's target.
        last: String,
    },
    /// The HTTP client could not be built (its TLS set-up).
    #[error("cannot build the HTTP client for web_fetch: {reason}")]
    Client {
        /// The error and its causes.
        reason: String,
    },
}

/// The client every fetch uses: no automatic redirects (they are followed here, checked),
/// no cookies, crew's user agent.
pub(crate) fn client() -> Result<reqwest::Client, FetchError> {
    reqwest::Client::builder()
        .user_agent(concat!(
            "crewmaster/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| FetchError::Client { reason: chain(&e) })
}

/// GETs `url`, following redirects within its server (at most `max_redirects`), and reads
/// at most `max_body_bytes` of the final body.
pub(crate) async fn get(
    client: &reqwest::Client,
    url: FetchUrl,
    max_redirects: usize,
    max_body_bytes: usize,
) -> Result<Fetched, FetchError> {
    let first = url.clone();
    let mut current = url;
    let mut redirected_from = Vec::new();
    loop {
        let mut response = client
            .get(current.url().clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/markdown, text/plain;q=0.9, */*;q=0.8",
            )
            .send()
            .await
            .map_err(|e| FetchError::Request {
                url: current.to_string(),
                reason: chain(&e),
            })?;
        let status = response.status();
        if let Some(location) = redirect_target(&response) {
            let to = current
                .url()
                .join(&location)
                .map_err(|e| UrlError::Malformed {
                    url: location.clone(),
                    reason: e.to_string(),
                })
                .and_then(FetchUrl::from_url)
                .map_err(|e| (location, e));
            match to {
                Ok(next) if next.same_server(&first) => {
                    if redirected_from.len() >= max_redirects {
                        return Err(FetchError::TooManyRedirects {
                            url: first.to_string(),
                            limit: max_redirects,
                            last: next.to_string(),
                        });
                    }
                    redirected_from.push(std::mem::replace(&mut current, next));
                    continue;
                }
                to => {
                    return Ok(Fetched::Elsewhere {
                        from: current,
                        status,
                        to,
                    });
                }
            }
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response.chunk().await.map_err(|e| FetchError::Request {
            url: current.to_string(),
            reason: format!("reading the body: {}", chain(&e)),
        })? {
            let room = max_body_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                // Dropping the response closes the connection: the rest is never read.
                break;
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Fetched::Page(Page {
            url: current,
            redirected_from,
            status,
            content_type,
            body,
            cut,
        }));
    }
}

/// The `Location` of a redirect response, if it is one.
fn redirect_target(response: &reqwest::Response) -> Option<String> {
    use reqwest::StatusCode as S;
    let redirect = matches!(
        response.status(),
        S::MOVED_PERMANENTLY
            | S::FOUND
            | S::SEE_OTHER
            | S::TEMPORARY_REDIRECT
            | S::PERMANENT_REDIRECT
    );
    if !redirect {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// An error with its causes (`connection refused` sits a few sources down).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn url(s: &str) -> FetchUrl {
        FetchUrl::parse(s).unwrap()
    }

    #[tokio::test]
    async fn the_body_is_read_up_to_the_limit_and_no_further() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/big"))
            .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(100_000)))
            .mount(&server)
            .await;
        let c = client().unwrap();
        let got = get(&c, url(&format!("{}/big", server.uri())), 5, 1000).await;
        let Ok(Fetched::Page(page)) = got else {
            panic!("{got:?}")
        };
        assert_eq!(page.body.len(), 1000);
        assert!(page.cut);
        let got = get(&c, url(&format!("{}/big", server.uri())), 5, 100_000).await;
        let Ok(Fetched::Page(page)) = got else {
            panic!("{got:?}")
        };
        assert!(!page.cut && page.body.len() == 100_000);
    }

    #[tokio::test]
    async fn redirects_are_followed_within_the_server_only_and_counted() {
        let server = MockServer::start().await;
        let other = MockServer::start().await;
        let to = |p: &str| ResponseTemplate::new(302).insert_header("Location", p);
        for (from, target) in [
            ("/a", "/b".to_string()),
            ("/b", format!("{}/c", server.uri())),
            ("/loop", "/loop".to_string()),
            ("/away", format!("{}/x", other.uri())),
            ("/file", "file:///etc/passwd".to_string()),
            ("/creds", format!("http://u:p@{}/", server.address())),
        ] {
            Mock::given(path(from))
                .respond_with(to(&target))
                .mount(&server)
                .await;
        }
        Mock::given(path("/c"))
            .respond_with(ResponseTemplate::new(200).set_body_string("landed"))
            .mount(&server)
            .await;
        Mock::given(path("/x"))
            .respond_with(ResponseTemplate::new(200))
            .expect(0)
            .mount(&other)
            .await;
        let c = client().unwrap();
        let at = |p: &str| url(&format!("{}{p}", server.uri()));

        let Ok(Fetched::Page(page)) = get(&c, at("/a"), 5, 1000).await else {
            panic!("a")
        };
        assert_eq!(page.body, b"landed");
        assert_eq!(page.url, at("/c"));
        assert_eq!(page.redirected_from, [at("/a"), at("/b")]);

        let e = get(&c, at("/loop"), 3, 1000).await.unwrap_err();
        assert!(
            matches!(e, FetchError::TooManyRedirects { limit: 3, .. }),
            "{e}"
        );

        let Ok(Fetched::Elsewhere { from, to, .. }) = get(&c, at("/away"), 5, 1000).await else {
            panic!("away")
        };
        assert_eq!(from, at("/away"));
        assert_eq!(to.unwrap(), url(&format!("{}/x", other.uri())));
        for (p, why) in [
            ("/file", "scheme `file`"),
            ("/creds", "user name or password"),
        ] {
            let Ok(Fetched::Elsewhere {
                to: Err((_, e)), ..
            }) = get(&c, at(p), 5, 1000).await
            else {
                panic!("{p}")
            };
            assert!(e.to_string().contains(why), "{p}: {e}");
        }
        // `other` verifies on drop that it was never asked.
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_url_and_the_cause() {
        // A port nothing listens on: bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = client().unwrap();
        let target = format!("http://127.0.0.1:{port}/");
        let e = get(&c, url(&target), 5, 1000)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&target) && e.to_lowercase().contains("refused"),
            "{e}"
        );
    }
}
