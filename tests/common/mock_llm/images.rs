//! Images in requests: the content-parts form of a user message, checked to the exact wire
//! shape OpenAI documents, and decoded for tests.
//!
//! ```json
//! {"role": "user", "content": [
//!   {"type": "text", "text": "..."},
//!   {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}
//! ]}
//! ```

use base64::Engine as _;
use serde_json::Value;

/// One image of a request: its declared media type and its decoded bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentImage {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

const MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// The media type the first bytes of an image show.
fn sniffed(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Decodes a `data:` URL of an image; `Err` says what is wrong with it.
fn decode(url: &str) -> Result<SentImage, String> {
    let rest = url.strip_prefix("data:").ok_or_else(|| format!("url is not a data: URL ({:.40})", url))?;
    let (media_type, data) = rest.split_once(";base64,").ok_or("data: URL without `;base64,`")?;
    if !MEDIA_TYPES.contains(&media_type) {
        return Err(format!("media type {media_type:?} is not one of {MEDIA_TYPES:?}"));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("invalid base64: {e}"))?;
    match sniffed(&bytes) {
        Some(t) if t == media_type => Ok(SentImage { media_type: media_type.to_string(), bytes }),
        Some(t) => Err(format!("declared {media_type} but the bytes are {t}")),
        None => Err(format!("declared {media_type} but the bytes are no known image")),
    }
}

/// Checks the content-parts array of `messages[k]` with role `role`.
pub(super) fn validate_parts(k: usize, role: &str, parts: &[Value], out: &mut Vec<String>) {
    let at = format!("messages[{k}] ({role})");
    if parts.is_empty() {
        out.push(format!("{at} `content` is an empty array"));
    }
    let mut texts = 0;
    for (i, part) in parts.iter().enumerate() {
        let Some(p) = part.as_object() else {
            out.push(format!("{at} content[{i}] must be an object"));
            continue;
        };
        let mut keys: Vec<&str> = p.keys().map(String::as_str).collect();
        keys.sort_unstable();
        match p.get("type").and_then(Value::as_str) {
            Some("text") => {
                texts += 1;
                if keys != ["text", "type"] || !p["text"].is_string() {
                    out.push(format!(
                        "{at} content[{i}] must be exactly {{\"type\":\"text\",\"text\":STRING}}, got {part}"
                    ));
                }
            }
            Some("image_url") => {
                if role != "user" {
                    out.push(format!("{at} content[{i}]: images belong in user messages only"));
                }
                let image = p.get("image_url").and_then(Value::as_object);
                let url = image.and_then(|o| o.get("url")).and_then(Value::as_str);
                let extra = image.is_some_and(|o| o.keys().any(|k| k != "url" && k != "detail"));
                match url {
                    Some(url) if keys == ["image_url", "type"] && !extra => {
                        if let Err(e) = decode(url) {
                            out.push(format!("{at} content[{i}] image_url: {e}"));
                        }
                    }
                    _ => out.push(format!(
                        "{at} content[{i}] must be exactly {{\"type\":\"image_url\",\"image_url\":{{\"url\":STRING}}}}, got {:.200}",
                        part.to_string()
                    )),
                }
            }
            other => out.push(format!("{at} content[{i}] has unknown type {other:?}")),
        }
    }
    if texts != 1 {
        out.push(format!("{at} content parts must hold exactly one text part, found {texts}"));
    }
}

/// The images of the last user message of a request, in order (none for string content).
pub fn images(request: &Value) -> Vec<SentImage> {
    let Some(messages) = request["messages"].as_array() else { return Vec::new() };
    let Some(user) = messages.iter().rev().find(|m| m["role"] == "user") else { return Vec::new() };
    user["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["image_url"]["url"].as_str())
                .map(|url| decode(url).unwrap_or_else(|e| panic!("mock_llm: a sent image is broken: {e}")))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the last user message of a request, whichever form its content has.
pub fn user_text(request: &Value) -> String {
    let Some(messages) = request["messages"].as_array() else { return String::new() };
    let Some(user) = messages.iter().rev().find(|m| m["role"] == "user") else { return String::new() };
    match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}
