//! HTML to readable text, for `http_request`: no scripts, styles or head,
//! block elements on their own lines, entities decoded, whitespace
//! collapsed, links kept as `text (url)`, the cells of a table row set apart
//! by ` | ` (a table's columns survive: `Red kettle | 0`, not `Red kettle 0`,
//! and the rows are records for the engine's selection, `agent/records.rs`).

use std::borrow::Cow;

use reqwest::Url;

/// Elements dropped with their content.
const SKIPPED: [&str; 8] = ["script", "style", "noscript", "head", "template", "svg", "iframe", "object"];
/// Elements that stand apart as paragraphs (a blank line around them).
const PARAGRAPHS: [&str; 26] = [
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "table",
    "ul",
    "ol",
    "dl",
    "hr",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "figure",
    "form",
    "fieldset",
    "details",
    "address",
];
/// Elements that start a new line.
const LINES: [&str; 11] = ["div", "li", "tr", "dt", "dd", "caption", "figcaption", "summary", "option", "legend", "br"];
/// Longest link target kept.
const MAX_LINK: usize = 300;

/// The readable text of an HTML document; relative links are resolved
/// against `base`.
pub fn html_to_text(html: &str, base: Option<&Url>) -> String {
    let mut out = Out::default();
    let mut link: Option<(String, usize)> = None;
    let mut pre = 0usize;
    // The cells of the table row being read so far.
    let mut cells = 0usize;
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.text(&decode(&rest[..lt]), pre > 0);
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |i| &after[i + 3..]);
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            rest = rest.find('>').map_or("", |i| &rest[i + 1..]);
            continue;
        }
        let Some(tag) = Tag::parse(rest) else {
            out.text("<", pre > 0);
            rest = &rest[1..];
            continue;
        };
        rest = &rest[tag.len..];
        let name = tag.name.as_str();
        if SKIPPED.contains(&name) {
            if !tag.closing && !tag.self_closing {
                rest = skip_element(rest, name);
            }
            continue;
        }
        if PARAGRAPHS.contains(&name) {
            out.newline(2);
        } else if LINES.contains(&name) {
            out.newline(1);
        }
        match name {
            "li" if !tag.closing => out.text("- ", false),
            "tr" if !tag.closing => cells = 0,
            "td" | "th" if !tag.closing => {
                out.text(if cells > 0 { " | " } else { " " }, false);
                cells += 1;
            }
            "td" | "th" => out.text(" ", false),
            "pre" if tag.closing => pre = pre.saturating_sub(1),
            "pre" if !tag.self_closing => pre += 1,
            "a" if tag.closing => {
                if let Some((href, start)) = link.take() {
                    out.link_suffix(&href, start, base);
                }
            }
            "a" => link = tag.href.map(|h| (h, out.buf.len())),
            _ => {}
        }
    }
    out.text(&decode(rest), pre > 0);
    out.buf.trim().to_string()
}

/// Text after the end of the element `name` (whose start tag was just
/// read); a `head` without its end tag ends where the body starts.
fn skip_element<'a>(rest: &'a str, name: &str) -> &'a str {
    let end = find_ci(rest, &format!("</{name}"));
    let end = if name == "head" { [end, find_ci(rest, "<body")].into_iter().flatten().min() } else { end };
    match end {
        Some(i) => {
            let after = &rest[i..];
            if after.starts_with("</") { after.find('>').map_or("", |j| &after[j + 1..]) } else { after }
        }
        None => "",
    }
}

/// Byte offset of `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

struct Tag {
    name: String,
    closing: bool,
    self_closing: bool,
    href: Option<String>,
    /// Bytes the tag takes, `<` to `>`.
    len: usize,
}

impl Tag {
    /// Reads the tag at the start of `s` (which starts with `<`); `None`
    /// when it is not a tag (`a < b`). A tag cut off by the end of the
    /// document takes the rest.
    fn parse(s: &str) -> Option<Tag> {
        let b = s.as_bytes();
        let closing = b.get(1) == Some(&b'/');
        let start = if closing { 2 } else { 1 };
        if !b.get(start).is_some_and(u8::is_ascii_alphabetic) {
            return None;
        }
        let name_end = b[start..].iter().position(|c| !c.is_ascii_alphanumeric()).map_or(b.len(), |i| start + i);
        let name = s[start..name_end].to_ascii_lowercase();
        let mut i = name_end;
        let mut quote: Option<u8> = None;
        while i < b.len() {
            match (quote, b[i]) {
                (Some(q), c) if c == q => quote = None,
                (None, b'"' | b'\'') => quote = Some(b[i]),
                (None, b'>') => break,
                _ => {}
            }
            i += 1;
        }
        let attrs = &s[name_end..i.min(s.len())];
        let href = if name == "a" && !closing { attribute(attrs, "href") } else { None };
        Some(Tag { name, closing, self_closing: attrs.ends_with('/'), href, len: (i + 1).min(s.len()) })
    }
}

/// The decoded value of attribute `want` in an attribute list.
fn attribute(attrs: &str, want: &str) -> Option<String> {
    let mut rest = attrs;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
        if rest.is_empty() {
            return None;
        }
        let name_end = rest.find(|c: char| c.is_whitespace() || c == '=' || c == '/').unwrap_or(rest.len());
        let name = &rest[..name_end];
        rest = rest[name_end..].trim_start();
        let value = match rest.strip_prefix('=') {
            Some(v) => {
                let v = v.trim_start();
                let (value, after) = match v.chars().next() {
                    Some(q @ ('"' | '\'')) => match v[1..].find(q) {
                        Some(end) => (&v[1..end + 1], &v[end + 2..]),
                        None => (&v[1..], ""),
                    },
                    _ => v.split_at(v.find(char::is_whitespace).unwrap_or(v.len())),
                };
                rest = after;
                value
            }
            None => "",
        };
        if name.eq_ignore_ascii_case(want) {
            return Some(decode(value).trim().to_string());
        }
    }
}

/// The text being built, with whitespace collapsed as it goes.
#[derive(Default)]
struct Out {
    buf: String,
    space: bool,
}

impl Out {
    fn text(&mut self, s: &str, pre: bool) {
        for c in s.chars() {
            if pre {
                self.buf.push(c);
                self.space = false;
            } else if c.is_whitespace() {
                self.space = true;
            } else {
                if self.space && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                    self.buf.push(' ');
                }
                self.space = false;
                self.buf.push(c);
            }
        }
    }

    /// Ends the line, leaving `n` newlines (1: next line, 2: blank line).
    fn newline(&mut self, n: usize) {
        self.space = false;
        let kept = self.buf.trim_end_matches([' ', '\t']).len();
        self.buf.truncate(kept);
        if self.buf.is_empty() {
            return;
        }
        let have = self.buf.len() - self.buf.trim_end_matches('\n').len();
        for _ in have..n {
            self.buf.push('\n');
        }
    }

    /// After a link's text (which started at byte `start`): ` (url)`,
    /// unless the text already is the URL or the target is not a plain
    /// web or mail address.
    fn link_suffix(&mut self, href: &str, start: usize, base: Option<&Url>) {
        let resolved = match base {
            Some(b) => b.join(href).ok(),
            None => Url::parse(href).ok(),
        };
        let Some(target) = resolved else { return };
        if !matches!(target.scheme(), "http" | "https" | "mailto") || href.starts_with('#') {
            return;
        }
        let target = target.to_string();
        let text = self.buf.get(start..).unwrap_or("").trim();
        if text.is_empty() || target.len() > MAX_LINK || text == target || text == href {
            return;
        }
        self.text(&format!(" ({target})"), false);
    }
}

/// Decodes character references: named ones in common use and all numeric
/// ones; anything unknown stays as written.
pub fn decode(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let reference = rest[1..].find(';').filter(|&i| i > 0 && i <= 32).and_then(|i| {
            let name = &rest[1..i + 1];
            entity(name).map(|c| (c, i + 2))
        });
        match reference {
            Some((c, len)) => {
                out.push_str(c.as_ref());
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn entity(name: &str) -> Option<Cow<'static, str>> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        let c = char::from_u32(code).filter(|&c| c != '\0').unwrap_or('\u{fffd}');
        return Some(Cow::Owned(c.to_string()));
    }
    let s = match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" | "ensp" | "emsp" | "thinsp" => " ",
        "shy" | "zwj" | "zwnj" => "",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "hellip" => "…",
        "mdash" => "—",
        "ndash" => "–",
        "lsquo" => "‘",
        "rsquo" => "’",
        "sbquo" => "‚",
        "ldquo" => "“",
        "rdquo" => "”",
        "bdquo" => "„",
        "laquo" => "«",
        "raquo" => "»",
        "bull" => "•",
        "middot" => "·",
        "euro" => "€",
        "pound" => "£",
        "yen" => "¥",
        "cent" => "¢",
        "sect" => "§",
        "para" => "¶",
        "deg" => "°",
        "plusmn" => "±",
        "times" => "×",
        "divide" => "÷",
        "frac12" => "½",
        "frac14" => "¼",
        "frac34" => "¾",
        "larr" => "←",
        "rarr" => "→",
        "uarr" => "↑",
        "darr" => "↓",
        "check" => "✓",
        _ => return None,
    };
    Some(Cow::Borrowed(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_readable_text() {
        let html = r##"<!doctype html><html lang="en"><head><title>T</title><style>p{color:red}</style></head>
<body><script>var s = "<p>not text</p>";</script><h1>Weather</h1>
<p>Sunny &amp; 25&#176;C&nbsp;today.<br>Wind:   light<br/>Rain: &#x26;none</p>
<ul><li>one</li><li><b>two</b></li></ul><!-- a <p>comment</p> -->
<p>See <a href="/more?a=1&amp;b=2">more</a>, <a href='https://x.org/'>https://x.org/</a>, <a href="#top">top</a>
and <a href="javascript:void(0)">this</a>.</p><noscript>enable JS</noscript>
<pre>a  b
  c</pre><table><tr><td>k</td><td>v</td></tr></table> 1 < 2 &unknown; &amp</body></html>"##;
        let base = Url::parse("https://example.com/dir/page").unwrap();
        assert_eq!(
            html_to_text(html, Some(&base)),
            "Weather\n\nSunny & 25°C today.\nWind: light\nRain: &none\n\n- one\n- two\n\nSee more (https://example.com/more?a=1&b=2), https://x.org/, top and this.\n\na  b\n  c\n\nk | v\n\n1 < 2 &unknown; &amp"
        );
    }

    #[test]
    fn the_cells_of_a_table_row_are_set_apart() {
        let html = "<h1>Parts</h1><table>\n<tr><th>Part</th><th>On hand</th></tr>\n<tr><td>Hex bolt</td><td>23</td></tr>\n<tr><td>Wing nut</td> <td>0</td></tr></table><p>End</p>";
        assert_eq!(html_to_text(html, None), "Parts\n\nPart | On hand\nHex bolt | 23\nWing nut | 0\n\nEnd");
    }

    #[test]
    fn survives_broken_markup() {
        assert_eq!(html_to_text("<head><title>x</title><body>hi", None), "hi");
        assert_eq!(html_to_text("<p>cut <a href=\"http://a", None), "cut");
        assert_eq!(html_to_text("<script>never closed", None), "");
        assert_eq!(html_to_text("a <!-- open", None), "a");
        assert_eq!(html_to_text("<P>Up</P><DIV>Case</DIV>", None), "Up\n\nCase");
        assert_eq!(html_to_text("&#0;&#xD800;&#99999999;é", None), "\u{fffd}\u{fffd}\u{fffd}é");
    }
}
