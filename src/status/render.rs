//! Templates compiled into the binary, the stylesheet, and the headers
//! every answer of the status page carries.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use minijinja::Environment;

use super::StatusError;

/// Where the stylesheet is served (outside the token: it holds nothing secret).
pub const STYLE_PATH: &str = "/static/style.css";

const STYLE: &str = include_str!("templates/style.css");

/// The templates, by name; `.html` names turn on HTML auto-escaping.
const TEMPLATES: [(&str, &str); 7] = [
    ("base.html", include_str!("templates/base.html")),
    ("macros.html", include_str!("templates/macros.html")),
    ("routines.html", include_str!("templates/routines.html")),
    ("runs.html", include_str!("templates/runs.html")),
    ("run.html", include_str!("templates/run.html")),
    ("charts.html", include_str!("templates/charts.html")),
    ("message.html", include_str!("templates/message.html")),
];

/// The compiled templates.
pub struct Pages {
    env: Environment<'static>,
}

impl Pages {
    pub fn new() -> Result<Self, StatusError> {
        let mut env = Environment::new();
        // Every value a page shows is escaped by default, and a value the
        // templates forget is an error rather than an empty string.
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        for (name, source) in TEMPLATES {
            env.add_template(name, source).map_err(|cause| StatusError::Template { name, cause })?;
        }
        env.add_global("style_path", format!("{STYLE_PATH}?v={}", style_version()));
        Ok(Pages { env })
    }

    /// Renders template `name` with `ctx`.
    pub fn render(&self, name: &'static str, ctx: minijinja::Value) -> Result<String, StatusError> {
        self.env.get_template(name).and_then(|t| t.render(ctx)).map_err(|cause| StatusError::Template { name, cause })
    }
}

/// A short hash of the stylesheet, so a new build's style is fetched anew.
fn style_version() -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(STYLE.as_bytes())[..6])
}

/// `GET /static/style.css`.
pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400")),
        ],
        STYLE,
    )
        .into_response()
}

/// Headers on every answer: no scripts, frames, plugins or foreign
/// resources; no referrer (an address may have held the token); pages are
/// not cached, since they change with every run.
pub async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let csp = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; \
               frame-ancestors 'none'; base-uri 'none'";
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(csp));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// A page with a message: not found, a bad filter, an error.
pub fn message(pages: &Pages, status: StatusCode, title: &str, text: &str) -> Response {
    let ctx = minijinja::context! { title, text, nav => "", code => status.as_u16() };
    match pages.render("message.html", ctx) {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => failure(&e),
    }
}

/// The answer when a page could not be made: the error is logged and shown
/// without markup.
pub fn failure(error: &StatusError) -> Response {
    tracing::error!(%error, "The status page failed.");
    (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile_and_escape_every_value() {
        let pages = Pages::new().unwrap();
        let ctx = minijinja::context! { title => "<b>bold</b>", text => "\"><img src=x onerror=alert(1)>", nav => "" };
        let html = pages.render("message.html", ctx).unwrap();
        assert!(html.contains("&lt;b&gt;bold&lt;&#x2f;b&gt;"), "{html}");
        assert!(!html.contains("<img") && !html.contains("<b>"), "{html}");
        assert!(html.contains("style.css?v="), "the stylesheet is versioned: {html}");
    }

    #[test]
    fn a_value_a_template_forgets_is_an_error() {
        let pages = Pages::new().unwrap();
        let err = pages.render("message.html", minijinja::context! { nav => "" }).unwrap_err();
        assert!(matches!(err, StatusError::Template { name: "message.html", .. }), "{err}");
    }
}
