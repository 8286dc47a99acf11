//! Tool calls written as JSON in the reply text.
//!
//! Used in `provider.tool_calls: json` mode (tools described in the prompt,
//! for models without native tool calling), and as a fallback when a native
//! reply carries a call only in its text, as some llama.cpp versions do.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::{ToolCall, ToolSpec};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Calls found in a reply, and the text around them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub calls: Vec<ToolCall>,
    pub text: String,
}

/// How tools are described in the system prompt in JSON mode.
pub fn describe(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "To use a tool, reply with only a JSON object and nothing else: {\"name\": \"<tool>\", \"arguments\": {...}}. \
         You will get the result in the next message. When you have the answer, reply in plain text without JSON.\n",
    );
    for t in tools {
        out.push_str(&format!("- {}({}): {}\n", t.name, signature(&t.parameters), t.description));
    }
    out
}

/// `path: string, limit?: integer` from a JSON schema of an object.
pub fn signature(schema: &Value) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let ty = match p.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => {
                    ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("any").to_string()
                }
                _ if p.get("enum").is_some() => "string".into(),
                _ => "any".into(),
            };
            let opt = if required.contains(&name.as_str()) { "" } else { "?" };
            format!("{name}{opt}: {ty}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Finds tool calls in `text`: the whole text as JSON, a fenced block, or the
/// first JSON object in it. `accept` decides which tool names count; a
/// candidate naming any other tool is not a call.
pub fn parse(text: &str, accept: &dyn Fn(&str) -> bool) -> Option<Parsed> {
    let trimmed = text.trim();
    let mut candidates: Vec<(usize, usize)> = Vec::new();
    let start = text.len() - text.trim_start().len();
    candidates.push((start, start + trimmed.len()));
    candidates.extend(fenced_blocks(text));
    if let Some(span) = first_object(text) {
        candidates.push(span);
    }
    for (a, b) in candidates {
        let Ok(value) = serde_json::from_str::<Value>(&text[a..b]) else {
            continue;
        };
        let calls = calls_in(&value);
        if calls.is_empty() || !calls.iter().all(|c| accept(&c.name)) {
            continue;
        }
        let mut rest = String::new();
        rest.push_str(strip_fence_open(&text[..a]));
        rest.push_str(strip_fence_close(&text[b..]));
        return Some(Parsed { calls, text: rest.trim().to_string() });
    }
    None
}

/// The call of a reply that is nothing but one call: the whole text as JSON, also inside
/// `<tool_call>` tags or a code fence, naming a tool `accept` takes. Prose around the JSON, or
/// several calls, make it no call: in native mode a call quoted in a reply's prose must never be
/// run, only a reply that is entirely a call may be taken as one.
pub fn whole(text: &str, accept: &dyn Fn(&str) -> bool) -> Option<ToolCall> {
    let mut t = text.trim();
    if let Some(inner) = t.strip_prefix("<tool_call>") {
        t = inner.trim();
        t = t.strip_suffix("</tool_call>").unwrap_or(t).trim();
    }
    if let Some(inner) = t.strip_prefix("```") {
        let inner = inner.strip_prefix("json").or_else(|| inner.strip_prefix("JSON")).unwrap_or(inner);
        t = inner.trim().strip_suffix("```")?.trim();
    }
    let value = serde_json::from_str::<Value>(t).ok()?;
    let mut calls = calls_in(&value);
    if calls.len() != 1 || !accept(&calls[0].name) {
        return None;
    }
    calls.pop()
}

/// Whether `text` holds something shaped like a tool call: a `<tool_call>` tag, or a JSON object
/// naming a tool together with its arguments (`{"name": ..., "arguments": ...}`, the OpenAI
/// `{"function": {...}}` or `{"tool_calls": [...]}`). Such text is not an answer.
pub fn mentions_call(text: &str) -> bool {
    if text.contains("<tool_call>") || text.contains("</tool_call>") {
        return true;
    }
    objects(text)
        .take(MAX_OBJECTS_SCANNED)
        .any(|(a, b)| serde_json::from_str::<Value>(&text[a..b]).is_ok_and(|v| call_shaped(&v)))
}

/// How many JSON objects of one reply [`mentions_call`] looks at.
const MAX_OBJECTS_SCANNED: usize = 64;

/// A call with its arguments written out: an object with only a `name` is more likely data.
fn call_shaped(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    if o.get("tool_calls").is_some_and(Value::is_array) {
        return true;
    }
    if o.get("function").and_then(Value::as_object).is_some_and(|f| f.get("name").is_some_and(Value::is_string)) {
        return true;
    }
    let named = ["name", "tool", "tool_name", "function"].iter().any(|k| o.get(*k).is_some_and(Value::is_string));
    named && ["arguments", "args", "parameters", "input"].iter().any(|k| o.contains_key(*k))
}

fn strip_fence_open(s: &str) -> &str {
    let t = s.trim_end();
    for fence in ["```json", "```JSON", "```"] {
        if let Some(x) = t.strip_suffix(fence) {
            return x;
        }
    }
    s
}

fn strip_fence_close(s: &str) -> &str {
    let t = s.trim_start();
    t.strip_prefix("```").unwrap_or(s)
}

fn calls_in(v: &Value) -> Vec<ToolCall> {
    match v {
        Value::Array(items) => items.iter().filter_map(one_call).collect(),
        Value::Object(o) => match o.get("tool_calls").and_then(Value::as_array) {
            Some(items) => items.iter().filter_map(one_call).collect(),
            None => one_call(v).into_iter().collect(),
        },
        _ => Vec::new(),
    }
}

fn one_call(v: &Value) -> Option<ToolCall> {
    let o = v.as_object()?;
    if let Some(f) = o.get("function").and_then(Value::as_object) {
        return make(f.get("name")?.as_str()?, f.get("arguments"));
    }
    let name = ["name", "tool", "tool_name", "function"].iter().find_map(|k| o.get(*k).and_then(Value::as_str))?;
    let args = ["arguments", "args", "parameters", "input"].iter().find_map(|k| o.get(*k));
    // An object with a name and unrelated fields is more likely data than a call.
    if args.is_none() && o.len() > 1 {
        return None;
    }
    make(name, args)
}

fn make(name: &str, args: Option<&Value>) -> Option<ToolCall> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return None;
    }
    let arguments = match args {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    Some(ToolCall {
        id: format!("json_call_{}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
        name: name.to_string(),
        arguments,
    })
}

/// Byte spans of the contents of ``` fenced blocks.
fn fenced_blocks(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(open) = text[pos..].find("```") {
        let open = pos + open;
        let after = open + 3;
        let Some(nl) = text[after..].find('\n') else { break };
        let body_start = after + nl + 1;
        let Some(close) = text[body_start..].find("```") else { break };
        out.push((body_start, body_start + close));
        pos = body_start + close + 3;
    }
    out
}

/// Byte span of the first balanced `{...}` that is valid JSON (strings and escapes respected).
fn first_object(text: &str) -> Option<(usize, usize)> {
    objects(text).next()
}

/// Byte spans of the balanced `{...}` of `text` that are valid JSON, outermost first, in order.
fn objects(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut search = 0;
    std::iter::from_fn(move || {
        while let Some(rel) = text.get(search..)?.find('{') {
            let start = search + rel;
            match balanced_end(text.as_bytes(), start) {
                Some(end) if serde_json::from_str::<Value>(&text[start..end]).is_ok() => {
                    search = end;
                    return Some((start, end));
                }
                _ => search = start + 1,
            }
        }
        None
    })
}

/// The end (exclusive) of the balanced object opening at `start`.
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn any(_: &str) -> bool {
        true
    }

    fn names(p: &Parsed) -> Vec<(String, Value)> {
        p.calls.iter().map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).unwrap())).collect()
    }

    #[test]
    fn parses_plain_json() {
        let p = parse(r#" {"name": "file_read", "arguments": {"path": "a.txt"}} "#, &any).unwrap();
        assert_eq!(names(&p), vec![("file_read".into(), json!({"path": "a.txt"}))]);
        assert_eq!(p.text, "");
    }

    #[test]
    fn parses_a_fenced_block_and_keeps_the_prose() {
        let text = "Let me read it.\n```json\n{\"tool\": \"file_read\", \"args\": {\"path\": \"b\"}}\n```\n";
        let p = parse(text, &any).unwrap();
        assert_eq!(names(&p), vec![("file_read".into(), json!({"path": "b"}))]);
        assert_eq!(p.text, "Let me read it.");
    }

    #[test]
    fn parses_the_first_object_in_text_and_openai_shapes() {
        let text = r#"Sure: {"function": {"name": "self_info", "arguments": "{}"}} then more {"x": 1}"#;
        let p = parse(text, &any).unwrap();
        assert_eq!(names(&p), vec![("self_info".into(), json!({}))]);
        let text = r#"{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": "}"}}]}"#;
        assert_eq!(parse(text, &any).unwrap().calls.len(), 2);
    }

    #[test]
    fn ignores_json_that_is_not_a_known_call() {
        let known = |n: &str| n == "file_read";
        assert_eq!(parse(r#"{"name": "Alice", "age": 3}"#, &known), None);
        assert_eq!(parse(r#"{"name": "weather", "arguments": {}}"#, &known), None);
        assert_eq!(parse("The answer is 42.", &known), None);
        assert_eq!(parse("{broken", &known), None);
    }

    #[test]
    fn a_whole_reply_is_a_call_only_when_nothing_else_is_in_it() {
        let known = |n: &str| n == "file_read";
        let call = r#"{"name": "file_read", "arguments": {"path": "a"}}"#;
        for text in [
            call.to_string(),
            format!("<tool_call>\n{call}\n</tool_call>"),
            format!("```json\n{call}\n```"),
            format!("<tool_call>\n{call}"),
        ] {
            let c = whole(&text, &known).unwrap_or_else(|| panic!("{text}"));
            assert_eq!((c.name.as_str(), c.arguments.as_str()), ("file_read", r#"{"path":"a"}"#));
        }
        assert_eq!(whole(&format!("I will read it: {call}"), &known), None, "prose around it");
        assert_eq!(whole(&format!("[{call}, {call}]"), &known), None, "two calls");
        assert_eq!(whole(r#"{"name": "rm", "arguments": {}}"#, &known), None, "unknown tool");
    }

    #[test]
    fn call_shaped_text_is_found_anywhere_but_plain_data_is_not() {
        assert!(mentions_call(r#"Sure. {"name": "wc", "arguments": {"file": "x"}} done"#));
        assert!(mentions_call("<tool_call>\n</tool_call>"));
        assert!(mentions_call(r#"{"function": {"name": "a", "arguments": "{}"}}"#));
        assert!(!mentions_call(r#"The record is {"name": "Alice", "age": 3}."#));
        assert!(!mentions_call("Totals: {a} and {b}"));
        assert!(!mentions_call("17 lines"));
    }

    #[test]
    fn describes_tools_compactly() {
        let spec = ToolSpec {
            name: "file_read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": ["integer", "null"]}}, "required": ["path"]}),
        };
        assert!(describe(&[spec]).ends_with("- file_read(limit?: integer, path: string): Read a file.\n"));
    }
}
