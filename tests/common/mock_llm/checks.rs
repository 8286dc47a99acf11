//! Protocol checks on every chat request; each problem becomes a violation string.

use std::collections::HashSet;

use serde_json::Value;

const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];

fn describe(v: Option<&Value>) -> String {
    match v {
        None => "nothing".to_string(),
        Some(Value::Null) => "null".to_string(),
        Some(Value::Bool(_)) => "a boolean".to_string(),
        Some(Value::Number(_)) => "a number".to_string(),
        Some(Value::String(s)) if s.chars().count() > 60 => {
            format!("the string {:?}...", s.chars().take(60).collect::<String>())
        }
        Some(Value::String(s)) => format!("the string {s:?}"),
        Some(Value::Array(_)) => "an array".to_string(),
        Some(Value::Object(_)) => "an object".to_string(),
    }
}

pub(super) fn validate(body: &Value, sections: Option<&[String]>, out: &mut Vec<String>) {
    let Some(obj) = body.as_object() else {
        out.push(format!("body must be a JSON object, got {}", describe(Some(body))));
        return;
    };
    match obj.get("model") {
        Some(Value::String(s)) if !s.is_empty() => {}
        other => out.push(format!("`model` must be a non-empty string, got {}", describe(other))),
    }
    match obj.get("stream") {
        None | Some(Value::Bool(_)) => {}
        other => out.push(format!("`stream` must be a boolean, got {}", describe(other))),
    }
    if obj.contains_key("stream_options") && obj.get("stream") != Some(&Value::Bool(true)) {
        out.push("`stream_options` is only allowed when `stream` is true".to_string());
    }
    match obj.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => {
            validate_messages(messages, out);
            if let Some(headings) = sections {
                validate_sections(messages, headings, out);
            }
        }
        other => out.push(format!("`messages` must be a non-empty array, got {}", describe(other))),
    }
    if let Some(tools) = obj.get("tools") {
        validate_tools(tools, out);
    }
    if let Some(choice) = obj.get("tool_choice") {
        validate_tool_choice(choice, obj.get("tools"), out);
    }
}

/// `tool_choice` as OpenAI takes it: `"none"`, `"auto"`, `"required"`, or
/// `{"type": "function", "function": {"name": NAME}}` naming one of `tools`; never without tools.
fn validate_tool_choice(choice: &Value, tools: Option<&Value>, out: &mut Vec<String>) {
    let names: Vec<&str> = tools
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(|t| t.pointer("/function/name").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    if names.is_empty() {
        out.push(format!("`tool_choice` is {} but the request has no `tools`", describe(Some(choice))));
    }
    match choice {
        Value::String(s) if ["none", "auto", "required"].contains(&s.as_str()) => {}
        Value::Object(o) => {
            if o.get("type").and_then(Value::as_str) != Some("function") {
                out.push(format!("`tool_choice.type` must be \"function\", got {}", describe(o.get("type"))));
            }
            match o.get("function").and_then(|f| f.get("name")).and_then(Value::as_str) {
                Some(name) if names.contains(&name) => {}
                Some(name) => out.push(format!("`tool_choice.function.name` {name:?} is not one of the tools {names:?}")),
                None => out.push(format!(
                    "`tool_choice.function.name` must be a string, got {}",
                    describe(o.get("function").and_then(|f| f.get("name")))
                )),
            }
            if o.len() != 2 {
                out.push("`tool_choice` object must have exactly `type` and `function`".to_string());
            }
        }
        other => out.push(format!(
            "`tool_choice` must be \"none\", \"auto\", \"required\" or {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}, got {}",
            describe(Some(other))
        )),
    }
}

fn has_content(m: &serde_json::Map<String, Value>) -> bool {
    matches!(m.get("content"), Some(Value::String(_) | Value::Array(_)))
}

fn validate_messages(messages: &[Value], out: &mut Vec<String>) {
    let first_role = messages[0].get("role").and_then(Value::as_str);
    if first_role != Some("system") {
        out.push(format!("first message must have role `system`, got {}", describe(messages[0].get("role"))));
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    // Unanswered calls of the currently open tool turn, and the assistant message index.
    let mut pending: Vec<String> = Vec::new();
    let mut turn: Option<usize> = None;

    let close_turn = |pending: &mut Vec<String>, turn: &mut Option<usize>, at: String, out: &mut Vec<String>| {
        if let Some(j) = turn.take() {
            if !pending.is_empty() {
                out.push(format!(
                    "tool call(s) {:?} of messages[{j}] (assistant) not answered by a `tool` message before {at}",
                    pending
                ));
            }
        }
        pending.clear();
    };

    for (k, message) in messages.iter().enumerate() {
        let Some(m) = message.as_object() else {
            out.push(format!("messages[{k}] must be an object, got {}", describe(Some(message))));
            continue;
        };
        let role = m.get("role").and_then(Value::as_str);
        match role {
            Some("system") | Some("user") => {
                let role = role.unwrap_or_default();
                close_turn(&mut pending, &mut turn, format!("messages[{k}] ({role})"), out);
                if !has_content(m) {
                    out.push(format!(
                        "messages[{k}] ({role}) `content` must be a string or an array, got {}",
                        describe(m.get("content"))
                    ));
                }
                if let Some(Value::Array(parts)) = m.get("content") {
                    super::images::validate_parts(k, role, parts, out);
                }
            }
            Some("assistant") => {
                close_turn(&mut pending, &mut turn, format!("messages[{k}] (assistant)"), out);
                if let Some(Value::Array(parts)) = m.get("content") {
                    super::images::validate_parts(k, "assistant", parts, out);
                }
                match m.get("tool_calls") {
                    None | Some(Value::Null) => {
                        if !has_content(m) {
                            out.push(format!("messages[{k}] (assistant) has neither `content` nor `tool_calls`"));
                        }
                    }
                    Some(Value::Array(calls)) => {
                        if calls.is_empty() {
                            out.push(format!(
                                "messages[{k}] (assistant) `tool_calls` is an empty array (omit it instead)"
                            ));
                        }
                        for (c, call) in calls.iter().enumerate() {
                            let at = format!("messages[{k}].tool_calls[{c}]");
                            match call.get("id").and_then(Value::as_str) {
                                Some(id) if !id.is_empty() => {
                                    if !seen.insert(id.to_string()) {
                                        out.push(format!("{at} repeats tool call id {id:?}"));
                                    }
                                    pending.push(id.to_string());
                                }
                                _ => out.push(format!(
                                    "{at} `id` must be a non-empty string, got {}",
                                    describe(call.get("id"))
                                )),
                            }
                            if call.get("type").and_then(Value::as_str) != Some("function") {
                                out.push(format!(
                                    "{at} `type` must be \"function\", got {}",
                                    describe(call.get("type"))
                                ));
                            }
                            let function = call.get("function");
                            if function.and_then(|f| f.get("name")).and_then(Value::as_str).is_none() {
                                out.push(format!(
                                    "{at} `function.name` must be a string, got {}",
                                    describe(function.and_then(|f| f.get("name")))
                                ));
                            }
                            let arguments = function.and_then(|f| f.get("arguments"));
                            if !matches!(arguments, Some(Value::String(_))) {
                                out.push(format!(
                                    "{at} `function.arguments` must be a JSON-encoded string, got {}",
                                    describe(arguments)
                                ));
                            }
                        }
                        turn = Some(k);
                    }
                    other => out.push(format!(
                        "messages[{k}] (assistant) `tool_calls` must be an array, got {}",
                        describe(other)
                    )),
                }
            }
            Some("tool") => {
                if !has_content(m) {
                    out.push(format!(
                        "messages[{k}] (tool) `content` must be a string or an array, got {}",
                        describe(m.get("content"))
                    ));
                }
                let Some(id) = m.get("tool_call_id").and_then(Value::as_str) else {
                    out.push(format!(
                        "messages[{k}] (tool) `tool_call_id` must be a string, got {}",
                        describe(m.get("tool_call_id"))
                    ));
                    continue;
                };
                if let Some(pos) = pending.iter().position(|p| p == id) {
                    pending.remove(pos);
                    answered.insert(id.to_string());
                } else if answered.contains(id) {
                    out.push(format!("messages[{k}] (tool) answers tool call {id:?} a second time"));
                } else if seen.contains(id) {
                    out.push(format!(
                        "messages[{k}] (tool) answers tool call {id:?} after its turn was closed by a later message"
                    ));
                } else if turn.is_none() {
                    out.push(format!(
                        "messages[{k}] (tool) is an orphan: tool_call_id {id:?} but the previous message is not an assistant message with `tool_calls` (or its tool answers)"
                    ));
                } else {
                    out.push(format!(
                        "messages[{k}] (tool) tool_call_id {id:?} does not match any tool call of an earlier assistant message (open calls: {pending:?})"
                    ));
                }
            }
            Some(other) => out.push(format!("messages[{k}] has invalid role {other:?} (expected one of {ROLES:?})")),
            None => out.push(format!("messages[{k}] `role` must be a string, got {}", describe(m.get("role")))),
        }
    }
    close_turn(&mut pending, &mut turn, "the end of `messages`".to_string(), out);
}

fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

fn validate_sections(messages: &[Value], headings: &[String], out: &mut Vec<String>) {
    let Some(system) = messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("system")) else {
        out.push(format!("expected system prompt sections {headings:?} but there is no system message"));
        return;
    };
    let prompt = message_text(system);
    let lines: Vec<&str> = prompt.lines().map(str::trim).collect();
    let mut found: Vec<(usize, &str)> = Vec::new();
    let mut missing: Vec<&str> = Vec::new();
    for heading in headings {
        match lines.iter().position(|l| *l == heading.trim()) {
            Some(line) => found.push((line + 1, heading)),
            None => missing.push(heading),
        }
    }
    if !missing.is_empty() {
        out.push(format!("system prompt lacks section heading line(s) {missing:?} (expected {headings:?})"));
    }
    if found.windows(2).any(|w| w[0].0 >= w[1].0) {
        let mut actual = found.clone();
        actual.sort();
        let actual: Vec<String> = actual.iter().map(|(line, h)| format!("{h} (line {line})")).collect();
        out.push(format!("system prompt sections out of order: expected {headings:?}, found {actual:?}"));
    }
}

fn validate_tools(tools: &Value, out: &mut Vec<String>) {
    let Some(tools) = tools.as_array() else {
        out.push(format!("`tools` must be an array, got {}", describe(Some(tools))));
        return;
    };
    let mut names = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            out.push(format!("{at} `type` must be \"function\", got {}", describe(tool.get("type"))));
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            out.push(format!("{at} `function` must be an object, got {}", describe(tool.get("function"))));
            continue;
        };
        match function.get("name").and_then(Value::as_str) {
            Some(name) => {
                let valid = !name.is_empty()
                    && name.len() <= 64
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if !valid {
                    out.push(format!("{at} function name {name:?} must match ^[a-zA-Z0-9_-]{{1,64}}$"));
                }
                if !names.insert(name.to_string()) {
                    out.push(format!("{at} repeats function name {name:?}"));
                }
            }
            None => out.push(format!("{at} `function.name` must be a string, got {}", describe(function.get("name")))),
        }
        if !matches!(function.get("description"), Some(Value::String(_))) {
            out.push(format!(
                "{at} `function.description` must be a string, got {}",
                describe(function.get("description"))
            ));
        }
        if !matches!(function.get("parameters"), Some(Value::Object(_))) {
            out.push(format!(
                "{at} `function.parameters` must be a JSON-schema object, got {}",
                describe(function.get("parameters"))
            ));
        }
    }
}
