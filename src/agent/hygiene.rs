//! Final-answer hygiene (SPEC §8, Grounding): what a final reply may not carry to the output.
//!
//! Small models end turns with things that are not answers: a tool call written as text (JSON
//! shaped like a call, `<tool_call>` tags, a fenced JSON call), pieces of their chat template
//! (`<|im_end|>`, a made-up `<tool_response>`), their reasoning (`<think>`), or nothing at all.
//! [`settle`] judges a final reply: a clean answer, a call to run, or a reply to ask again for.

use crate::config::Language;
use crate::llm::{ToolCall, json_calls};

/// What a final reply (one without native tool calls) turns out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// An answer, cleaned of template tokens and reasoning.
    Answer(String),
    /// The whole reply is one call of a known tool written as text.
    Call(ToolCall),
    /// Not an answer.
    Bad(BadReply),
}

/// Why a final reply is not an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadReply {
    /// Nothing, an empty JSON value, or only template tokens.
    Empty,
    /// A tool call written as text, not one the engine may run (a call inside prose, or of a
    /// tool this agent does not have).
    CallAsText,
    /// The whole reply repeats, as text, a call already made in this turn.
    RepeatedCall,
    /// The reply only echoed a tool result (`<tool_response>...`): the model lost its place in
    /// the task, which may still need a tool (the write it was asked for).
    Echo,
    /// The reply describes how it would use its tools instead of answering ("I would use the
    /// `file_read` function to read the file, then parse the CSV ..."); see [`describes_tool_use`].
    Plan,
}

impl BadReply {
    /// What the run's error says when the reply stayed bad after one more request.
    pub fn describe(self) -> &'static str {
        match self {
            BadReply::Empty => "its final reply was empty",
            BadReply::CallAsText => "its final reply was a tool call written as text, not an answer",
            BadReply::RepeatedCall => "its final reply repeated, as text, a tool call it had already made",
            BadReply::Echo => "its final reply only repeated a tool result",
            BadReply::Plan => "its final reply described how it would use its tools instead of answering",
        }
    }

    /// The kind of the note recorded when the agent asks again.
    pub(super) fn note_kind(self) -> &'static str {
        match self {
            BadReply::Empty => "empty_reply",
            BadReply::CallAsText => "call_as_text",
            BadReply::RepeatedCall => "repeated_call_as_text",
            BadReply::Echo => "echoed_result",
            BadReply::Plan => "plan_as_answer",
        }
    }

    /// Whether the request that asks again goes out without tools: after an empty reply or a
    /// repeated call the model has what it needs and must answer; after a call in prose it may
    /// still make that call properly.
    pub(super) fn withholds_tools(self) -> bool {
        !matches!(self, BadReply::CallAsText | BadReply::Echo)
    }

    /// The message that asks again.
    pub(super) fn request(self, lang: Language) -> &'static str {
        match (self, lang) {
            (BadReply::Empty | BadReply::RepeatedCall | BadReply::Plan, Language::En) => {
                "Now give your final answer in plain words, based on the tool results above. Do not call tools."
            }
            (BadReply::Empty | BadReply::RepeatedCall | BadReply::Plan, Language::Zh) => {
                "请根据上面的工具结果，用平实的文字给出最终答案，不要再调用工具。"
            }
            (BadReply::CallAsText, Language::En) => {
                "Do not write tool calls as text: they are not run. If you need a tool, call it through the tool-calling interface; otherwise reply with the final answer in plain words."
            }
            (BadReply::CallAsText, Language::Zh) => {
                "不要把工具调用写成文本：那样不会被执行。如果需要工具，请通过工具调用接口调用；否则请用平实的文字给出最终答案。"
            }
            (BadReply::Echo, Language::En) => {
                "Do not repeat tool results. Go on with the task: if it needs another step (writing a file, another look), call that tool now; otherwise give your final answer in plain words."
            }
            (BadReply::Echo, Language::Zh) => {
                "不要重复工具结果。继续完成任务：如果还需要下一步（写文件、再查看），现在就调用那个工具；否则请用平实的文字给出最终答案。"
            }
        }
    }
}

/// Judges a final reply. `known` says which tool names this agent has: a reply that is entirely
/// one call of such a tool may be run ([`Verdict::Call`]); any other call-shaped text is
/// [`BadReply::CallAsText`]. Reasoning blocks and chat-template tokens are removed from an
/// answer; what is left empty is [`BadReply::Empty`].
pub(super) fn settle(reply: &str, known: &dyn Fn(&str) -> bool) -> Verdict {
    let text = strip_thinking(reply);
    if let Some(call) = json_calls::whole(&text, known) {
        return Verdict::Call(call);
    }
    if text.trim_start().starts_with("<tool_response>") && !is_empty(&strip_tags(&text)) {
        return Verdict::Bad(BadReply::Echo);
    }
    let text = strip_template(&text);
    if json_calls::mentions_call(&text) {
        return Verdict::Bad(BadReply::CallAsText);
    }
    if is_empty(&text) {
        return Verdict::Bad(BadReply::Empty);
    }
    Verdict::Answer(text)
}

/// Whether an answer describes how the agent would use its own tools rather than giving what
/// they returned: it names one of them (`known`; a name with `_` as a word, any name in
/// backticks) and says what it would do or what one could do ("I would", "let me", "you can",
/// "these steps", "我将"). A 1.5B model that had read a CSV file answered with a plan for finding
/// the top region: "I would follow these steps: 1. Read the file using the
/// `file_read` function. 2. Parse the CSV ...". A report of what a tool did ("file_read
/// failed: `a.md` does not exist") names a tool without such words.
pub(super) fn describes_tool_use(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    const INTENT: [&str; 19] = [
        "i would ",
        "i will ",
        "i'll ",
        "i can ",
        "let me ",
        "let's ",
        "we can ",
        "you can ",
        "we need to ",
        "you need to ",
        "we would ",
        "you would ",
        "these steps",
        "steps:",
        "我将",
        "我会",
        "我可以",
        "你可以",
        "步骤",
    ];
    let lower = text.to_lowercase();
    if !INTENT.iter().any(|p| lower.contains(p)) {
        return false;
    }
    let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    let named = words.filter(|w| w.contains('_')).any(known);
    let quoted = text.split('`').skip(1).step_by(2).any(|w| known(w.trim()));
    // A command to run written out for a reader: "you can use the following command: ```sh
    // git log -3 --stat --author```", delivered after a `git log` that held the answer (stop 39).
    let shell_block = ["```sh", "```bash", "```shell", "```console", "```zsh"].iter().any(|f| lower.contains(f));
    named || quoted || shell_block || lower.contains("the following command")
}

/// Whether `text` is chat-template tokens and nothing else (`<tool_response>`, `<|im_end|>`):
/// never content a tool should write.
pub(super) fn template_only(text: &str) -> bool {
    !text.trim().is_empty() && strip_template(&strip_tags(text)).is_empty() && text.contains('<')
}

/// The text without the tool-result tags around it.
fn strip_tags(text: &str) -> String {
    text.replace("<tool_response>", "").replace("</tool_response>", "")
}

/// Nothing, or an empty JSON value some models emit instead of an answer.
fn is_empty(text: &str) -> bool {
    matches!(text.trim(), "" | "{}" | "[]" | "\"\"" | "null")
}

/// Removes `<think>...</think>` blocks (reasoning some servers leave in the content), and
/// everything before a lone `</think>`.
pub(super) fn strip_thinking(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(start) = out.find("<think>") {
        match out[start..].find("</think>") {
            Some(end) => out.replace_range(start..start + end + "</think>".len(), ""),
            // Unclosed: the rest is reasoning that never reached an answer.
            None => out.truncate(start),
        }
    }
    if let Some(end) = out.find("</think>") {
        out.replace_range(..end + "</think>".len(), "");
    }
    out.trim().to_string()
}

/// Tags that end what the model meant to say: past them it imitates the conversation (the
/// next turn, a made-up tool result).
const CUT_AT: [&str; 6] = ["<tool_response>", "<start_of_turn>", "<end_of_turn>", "[INST]", "</s>", "<|"];
/// Tags removed wherever they stand.
const REMOVE: [&str; 4] = ["</tool_response>", "<tool_call>", "</tool_call>", "<s>"];

/// The reply without chat-template tokens: a leading `<|im_start|>assistant` line goes, the reply
/// ends at the first token that starts or ends a turn (`<|im_end|>`, `<|endoftext|>`,
/// `<|im_start|>`, `<tool_response>`, ...), and stray call tags are removed.
pub(super) fn strip_template(text: &str) -> String {
    let mut t = text.trim_start();
    while let Some(rest) = t.strip_prefix("<|") {
        // `<|im_start|>assistant\n`, `<|assistant|>`: a turn header before the answer.
        let Some(close) = rest.find("|>") else { break };
        let after = &rest[close + 2..];
        let header_word = after.split('\n').next().unwrap_or("");
        t = if ["assistant", "system", "user"].contains(&header_word.trim()) {
            after.get(header_word.len()..).unwrap_or("")
        } else {
            after
        }
        .trim_start();
    }
    let end = CUT_AT.iter().filter_map(|tag| t.find(tag)).min().unwrap_or(t.len());
    let mut out = t[..end].to_string();
    for tag in REMOVE {
        out = out.replace(tag, "");
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(name: &str) -> bool {
        name == "file_read"
    }

    #[test]
    fn only_template_tokens_are_not_content() {
        for junk in
            ["<tool_response>", " <tool_response></tool_response>\n", "<|im_end|>", "<|im_end|>\n<|im_start|>assistant"]
        {
            assert!(template_only(junk), "{junk:?}");
        }
        for content in ["", "  ", "a < b", "<b>bold</b>", "<tool_response>Ben: invoice</tool_response>", "x <|im_end|>"]
        {
            assert!(!template_only(content), "{content:?}");
        }
    }

    #[test]
    fn a_clean_answer_passes_as_it_is() {
        assert_eq!(settle("The file has 17 lines.", &known), Verdict::Answer("The file has 17 lines.".into()));
        let data = r#"Top user: {"name": "Alice", "visits": 3}"#;
        assert_eq!(settle(data, &known), Verdict::Answer(data.into()), "JSON data is not a call");
    }

    #[test]
    fn a_whole_reply_call_of_a_known_tool_is_a_call() {
        for reply in [
            r#"{"name": "file_read", "arguments": {"path": "a.txt"}}"#,
            "<tool_call>\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
            "```json\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            "<think>I should read it.</think>\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}",
        ] {
            let Verdict::Call(call) = settle(reply, &known) else { panic!("{reply}") };
            assert_eq!((call.name.as_str(), call.arguments.as_str()), ("file_read", r#"{"path":"a.txt"}"#));
        }
    }

    #[test]
    fn a_call_in_prose_or_of_an_unknown_tool_is_never_a_call_nor_an_answer() {
        for reply in [
            "Let me read it: {\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}",
            "I will read it.\n```json\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            r#"{"name": "file_write", "arguments": {"path": "a.txt", "content": "x"}}"#,
            "<tool_call>\n{\"name\": \"wc\", \"arguments\": {}}\n</tool_call>",
        ] {
            assert_eq!(settle(reply, &known), Verdict::Bad(BadReply::CallAsText), "{reply}");
        }
    }

    #[test]
    fn template_tokens_never_reach_the_answer() {
        let cases = [
            ("17 lines.<|im_end|>", "17 lines."),
            ("17 lines.<|im_end|>\n<|im_start|>user\nthanks<|im_end|>", "17 lines."),
            ("<|im_start|>assistant\n17 lines.", "17 lines."),
            ("17 lines.<|endoftext|>", "17 lines."),
            ("17 lines.\n<tool_response>\nmade up\n</tool_response>", "17 lines."),
            ("17 lines.</tool_call>", "17 lines."),
            ("<think>count them</think>17 lines.", "17 lines."),
            ("long reasoning</think>\n17 lines.", "17 lines."),
        ];
        for (reply, answer) in cases {
            assert_eq!(settle(reply, &known), Verdict::Answer(answer.into()), "{reply}");
        }
    }

    #[test]
    fn nothing_left_is_an_empty_reply() {
        for reply in ["", "  ", "{}", "null", "<tool_response></tool_response>", "<|im_end|>", "<think>hmm"] {
            assert_eq!(settle(reply, &known), Verdict::Bad(BadReply::Empty), "{reply:?}");
        }
    }

    #[test]
    fn an_echoed_tool_result_is_asked_again_with_the_tools() {
        let reply = "<tool_response>\n# Weekly sync\n- Dana will renew the domain.\n</tool_response>";
        assert_eq!(settle(reply, &known), Verdict::Bad(BadReply::Echo));
        assert!(!BadReply::Echo.withholds_tools());
        assert!(BadReply::Echo.request(Language::En).contains("call that tool now"));
    }

    #[test]
    fn a_plan_that_names_its_tools_is_not_an_answer() {
        let known = |name: &str| ["file_read", "shell", "memory_store"].contains(&name);
        for plan in [
            "To find the store with the most sales, I would follow these steps:\n\n1. Read the file using the `file_read` function.\n2. Parse the CSV.",
            "I would use the file_read function to read the file and then use Python to find the maximum.",
            "Let me run `shell` with `wc -l data.csv` to count them.",
            "You can call memory_store to remember it.",
            "我将使用 file_read 读取文件，然后统计行数。",
            "To list the commits, you can use the following command:\n\n```sh\ngit log -3 --stat --author\n```",
            "You can run this:\n```bash\ngrep -c ERROR app.log\n```",
        ] {
            assert!(describes_tool_use(plan, &known), "{plan}");
        }
        for answer in [
            "Store 7 had the most sales: 182,000.",
            "file_read failed: `a.md` does not exist, so the report could not be made.",
            "I will renew the domain by Friday (Dana); Omar will resize the database.",
            "You can find the settings in config/app.toml: the port is 8420.",
            "Let me know if the `web_server` needs a restart: it answered 502.",
            "The shell of the building is done; I would say the work is on time.",
            "The last commit (Chloe, 02:13) fixed the VAT rounding:\n```\ninvoice.py | 1 +\n```",
        ] {
            assert!(!describes_tool_use(answer, &known), "{answer}");
        }
        assert!(BadReply::Plan.withholds_tools(), "the model has looked: the answer comes from the evidence");
        assert!(BadReply::Plan.request(Language::En).contains("final answer"));
    }

    #[test]
    fn asking_again_after_a_call_in_prose_keeps_the_tools() {
        assert!(!BadReply::CallAsText.withholds_tools());
        assert!(BadReply::Empty.withholds_tools());
        assert!(BadReply::RepeatedCall.request(Language::En).contains("final answer"));
        assert!(BadReply::CallAsText.request(Language::Zh).contains("工具调用接口"));
    }
}
