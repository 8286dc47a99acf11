//! Keeping conversation history bounded and well-formed.

use crate::llm::{Message, Role};

/// Keeps at most `limit` messages, dropping the oldest, and never lets the
/// history start with a tool result (whose assistant call would be gone).
pub fn trim(history: &mut Vec<Message>, limit: usize) {
    if history.len() > limit {
        let cut = history.len() - limit;
        history.drain(..cut);
    }
    let orphans = history.iter().take_while(|m| m.role == Role::Tool).count();
    history.drain(..orphans);
}

/// Reasoning is useful within the turn that produced it; older turns drop
/// it, which keeps prompts short and is what DeepSeek and GLM expect.
pub fn clear_reasoning(history: &mut [Message]) {
    for m in history {
        m.reasoning_content = None;
    }
}

/// Drops a trailing assistant message whose tool calls have no results (left
/// by an interrupted turn), and any tool result not preceded by its call.
pub fn repair(history: &mut Vec<Message>) {
    let mut open: Vec<String> = Vec::new();
    let mut keep = Vec::with_capacity(history.len());
    for m in history.drain(..) {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap_or_default();
                if let Some(pos) = open.iter().position(|o| *o == id) {
                    open.remove(pos);
                    keep.push(m);
                }
            }
            _ => {
                if !open.is_empty() {
                    // The previous assistant call was never answered: drop it
                    // and the partial answers it got.
                    while let Some(last) = keep.last() {
                        let last: &Message = last;
                        let is_call = last.role == Role::Assistant && !last.tool_calls.is_empty();
                        keep.pop();
                        if is_call {
                            break;
                        }
                    }
                    open.clear();
                }
                if m.role == Role::Assistant {
                    open = m.tool_calls.iter().map(|c| c.id.clone()).collect();
                }
                keep.push(m);
            }
        }
    }
    if !open.is_empty() {
        while let Some(last) = keep.pop() {
            if last.role == Role::Assistant && !last.tool_calls.is_empty() {
                break;
            }
        }
    }
    *history = keep;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> Message {
        Message {
            tool_calls: vec![ToolCall { id: id.into(), name: "self_info".into(), arguments: "{}".into() }],
            content: None,
            ..Message::assistant("")
        }
    }

    #[test]
    fn trimming_never_starts_with_a_tool_result() {
        let mut h = vec![
            Message::user("q1"),
            call("a"),
            Message::tool_result("a", "r"),
            Message::tool_result("a", "r2"),
            Message::assistant("answer"),
        ];
        trim(&mut h, 3);
        assert_eq!(h, vec![Message::assistant("answer")]);
        let mut h = vec![Message::user("q1"), call("a"), Message::tool_result("a", "r"), Message::assistant("x")];
        trim(&mut h, 3);
        assert_eq!(h[0], call("a"));
    }

    #[test]
    fn repair_drops_unanswered_calls() {
        let mut h = vec![Message::user("q"), call("a")];
        repair(&mut h);
        assert_eq!(h, vec![Message::user("q")]);
        let mut h = vec![Message::user("q"), call("a"), Message::tool_result("a", "r"), Message::assistant("ok")];
        let before = h.clone();
        repair(&mut h);
        assert_eq!(h, before);
        let mut h = vec![Message::tool_result("zzz", "stray"), Message::user("q")];
        repair(&mut h);
        assert_eq!(h, vec![Message::user("q")]);
    }

    #[test]
    fn clears_reasoning_of_older_turns() {
        let mut m = Message::assistant("a");
        m.reasoning_content = Some("thinking".into());
        let mut h = vec![m];
        clear_reasoning(&mut h);
        assert_eq!(h[0].reasoning_content, None);
    }
}
