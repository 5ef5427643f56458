//! The page, embedded in the binary: plain HTML, CSS and JavaScript (no framework, no
//! build step). `{{TOKEN}}` in the HTML is replaced by the run's token when it is served.

/// The page.
pub(super) const HTML: &str = include_str!("assets/index.html");

/// Its script.
pub(super) const JS: &str = include_str!("assets/app.js");

/// Its style.
pub(super) const CSS: &str = include_str!("assets/app.css");
