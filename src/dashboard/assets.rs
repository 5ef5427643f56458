//! The page, embedded in the binary: plain HTML, CSS and JavaScript (no framework, no
//! build step). `{{TOKEN}}` in the HTML is replaced by the run's token when it is served.

/// The page.
pub const HTML: &str = include_str!("assets/index.html");

/// Its script.
pub const JS: &str = include_str!("assets/app.js");

/// Its style.
pub const CSS: &str = include_str!("assets/app.css");
