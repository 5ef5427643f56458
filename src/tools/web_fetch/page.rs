//! A response body as text for the model: HTML becomes Markdown (`htmd`, with scripts,
//! styles and other non-content elements dropped), text formats (plain, Markdown, JSON,
//! XML, CSS, source code …) are shown as they are, and anything else (images, PDFs,
//! archives) is refused, since only text helps. Bytes are read as UTF-8 (invalid
//! sequences replaced). The text is cut at a character limit with a note saying so.

use std::sync::LazyLock;

/// How a body is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Converted to Markdown.
    Html,
    /// Shown as it is.
    Text,
    /// Not shown.
    Binary,
}

/// Elements whose content is not the page's text: code, styling, hidden fallbacks,
/// embedded documents and drawings.
const SKIPPED: [&str; 9] = [
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
];

/// Bytes looked at to tell text from binary when the type does not say.
const SNIFF_BYTES: usize = 8192;

/// How to show a body of this `Content-Type` (`None`: it sent none).
pub(crate) fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    let essence = content_type
        .and_then(|t| t.split(';').next())
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match essence.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "" | "application/octet-stream" | "binary/octet-stream" => sniff(body),
        t if t.starts_with("text/") => Kind::Text,
        t if t.ends_with("+json") || t.ends_with("+xml") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-javascript"
        | "application/toml"
        | "application/yaml"
        | "application/x-yaml"
        | "application/x-sh"
        | "application/sql"
        | "application/graphql"
        | "application/x-ndjson" => Kind::Text,
        _ => Kind::Binary,
    }
}

/// A body of unknown type: binary when it has NUL bytes, HTML when it starts like a page.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(SNIFF_BYTES)];
    if head.contains(&0) {
        return Kind::Binary;
    }
    let text = String::from_utf8_lossy(head);
    let start: String = text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .take(14)
        .collect::<String>()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else {
        Kind::Text
    }
}

/// The converter, built once (its built-in handlers are shareable across threads).
static CONVERTER: LazyLock<htmd::HtmlToMarkdown> = LazyLock::new(|| {
    htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build()
});

/// An HTML page the converter could not turn into Markdown.
#[derive(Debug, thiserror::Error)]
#[error("the page could not be converted to Markdown: {0}")]
pub(crate) struct ConvertError(std::io::Error);

/// `body` as text of `kind` (not `Binary`): Markdown for HTML, else the text itself.
pub(crate) fn text(kind: Kind, body: &[u8]) -> Result<String, ConvertError> {
    let raw = String::from_utf8_lossy(body);
    match kind {
        Kind::Html => CONVERTER
            .convert(&raw)
            .map(|md| md.trim().to_string())
            .map_err(ConvertError),
        Kind::Text | Kind::Binary => Ok(raw.into_owned()),
    }
}

/// Cuts `text` after `max_chars` characters, adding a note with how much was left out.
pub(crate) fn cut(mut text: String, max_chars: usize) -> String {
    let Some((at, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    let rest = text[at..].chars().count();
    text.truncate(at);
    text.push_str(&format!(
        "\n\n[web_fetch: the text was cut here, after {max_chars} characters; {rest} more \
         were left out. Fetch a more specific page if you need them.]"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let html = r#"<!doctype html><html><head><title>T</title>
            <style>body { color: red }</style><script>var LEAK = 1;</script></head>
            <body><h1>Hello <em>there</em></h1><h2>Part</h2>
            <p>See <a href="https://example.com/x">the docs</a> and <code>f()</code>.</p>
            <ul><li>one</li><li>two</li></ul>
            <noscript>NOSCRIPT</noscript><template>TEMPLATE</template>
            <svg><text>SVGTEXT</text></svg>
            <script>document.write("LEAK2")</script></body></html>"#;
        let md = text(Kind::Html, html.as_bytes()).unwrap();
        assert!(md.contains("# Hello *there*"), "{md}");
        assert!(md.contains("## Part"), "{md}");
        assert!(md.contains("[the docs](https://example.com/x)"), "{md}");
        assert!(
            md.contains("`f()`") && md.contains("one") && md.contains("two"),
            "{md}"
        );
        for hidden in [
            "LEAK",
            "color: red",
            "NOSCRIPT",
            "TEMPLATE",
            "SVGTEXT",
            "<h1>",
        ] {
            assert!(!md.contains(hidden), "{hidden} in {md}");
        }
    }

    #[test]
    fn the_type_decides_and_an_unknown_type_is_sniffed() {
        let page = b"<!DOCTYPE html><p>x</p>";
        for (ct, body, want) in [
            (Some("text/html; charset=utf-8"), &b"x"[..], Kind::Html),
            (Some("TEXT/HTML"), b"x", Kind::Html),
            (Some("application/xhtml+xml"), b"x", Kind::Html),
            (Some("text/plain"), page, Kind::Text),
            (Some("text/markdown"), b"# x", Kind::Text),
            (Some("application/json"), b"{}", Kind::Text),
            (Some("application/vnd.api+json"), b"{}", Kind::Text),
            (Some("image/png"), b"\x89PNG", Kind::Binary),
            (Some("application/pdf"), b"%PDF", Kind::Binary),
            (None, page, Kind::Html),
            (None, b"  <html><body>x", Kind::Html),
            (None, b"fn main() {}", Kind::Text),
            (Some("application/octet-stream"), b"a\0b", Kind::Binary),
            (None, b"\0\0", Kind::Binary),
        ] {
            assert_eq!(kind(ct, body), want, "{ct:?} {body:?}");
        }
    }

    #[test]
    fn long_text_is_cut_with_a_note_counting_what_was_left_out() {
        assert_eq!(cut("short".into(), 10), "short");
        let out = cut("é".repeat(15), 10);
        assert!(out.starts_with(&"é".repeat(10)), "{out}");
        assert!(!out.starts_with(&"é".repeat(11)), "{out}");
        assert!(out.contains("after 10 characters; 5 more"), "{out}");
        // Invalid UTF-8 is replaced, not refused.
        assert_eq!(text(Kind::Text, b"a\xffb").unwrap(), "a\u{fffd}b");
    }
}
