//! The numbers a webhook's data holds under a name the task asks for: "Sum up the new ticket
//! with its number, its author and its tags", and the data holds
//! `"number": 812`. An answer from the data (`payload.rs`) that leaves such a number out is asked
//! once more, told which ("the number (812)"), and the answer that holds it replaces it.
//!
//! Why: the 1.5B model summarized the issue, its author and its labels and left out the number
//! in half the passes (bench/README.md, stop 37); a number cannot be paraphrased, so whether an
//! answer holds it is a fact the engine can check. Only numbers (JSON numbers, or strings that
//! are one): words are paraphrased, and a title said in other words is still said.
//!
//! The names come from the task's own words (outside the fenced data), the values from the data
//! the request showed: the ask quotes a number the model already read.

use serde_json::Value;

use super::Agent;
use super::events::{RunEvent, TurnStats};
use crate::config::Language;
use crate::llm::Message;

/// Most names asked about in one request, and most values quoted for one name.
const MAX_ASKED: usize = 3;
const MAX_VALUES: usize = 5;

/// A field of the data whose name the task uses and whose number the answer does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Missing {
    pub name: String,
    /// Its values in the data, as written (one name may occur in several objects).
    pub values: Vec<String>,
}

/// The fields of `data` named by a word of `own` (the task's own words) whose values are numbers,
/// none of which `answer` holds as a number of its own; in the task's order, at most three.
pub(super) fn missing(own: &str, data: &[Value], answer: &str) -> Vec<Missing> {
    let mut numbers: Vec<(String, String)> = Vec::new();
    for value in data {
        numeric_fields(value, &mut numbers, 0);
    }
    let lower = own.to_lowercase();
    let mut out: Vec<Missing> = Vec::new();
    for word in lower.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| w.len() >= 2) {
        let singular = word.strip_suffix('s').unwrap_or(word);
        let values: Vec<String> = numbers
            .iter()
            .filter(|(key, _)| key == word || key == singular || key.strip_suffix('s') == Some(word))
            .map(|(_, v)| v.clone())
            .collect();
        if values.is_empty() || values.iter().any(|v| holds_number(answer, v)) || out.iter().any(|m| m.name == word) {
            continue;
        }
        out.push(Missing { name: word.to_string(), values });
        if out.len() == MAX_ASKED {
            break;
        }
    }
    out
}

/// The (lowercased key, number as written) pairs of `value`'s objects, at any depth.
fn numeric_fields(value: &Value, out: &mut Vec<(String, String)>, depth: usize) {
    if depth > 20 || out.len() >= 500 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let number = match v {
                    Value::Number(n) => Some(n.to_string()),
                    Value::String(s) if is_number(s.trim()) => Some(s.trim().to_string()),
                    _ => None,
                };
                match number {
                    Some(n) if !out.iter().any(|(k, m)| k == &key.to_lowercase() && m == &n) => {
                        out.push((key.to_lowercase(), n));
                    }
                    Some(_) => {}
                    None => numeric_fields(v, out, depth + 1),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| numeric_fields(v, out, depth + 1)),
        _ => {}
    }
}

/// Whether `s` is a number: digits with at most one `.` between them, an optional `-` first.
fn is_number(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let mut parts = digits.split('.');
    let whole = parts.next().unwrap_or_default();
    let frac = parts.next();
    parts.next().is_none()
        && !whole.is_empty()
        && whole.chars().all(|c| c.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()))
}

/// Whether `text` holds `number` with no digit (or a digit after a `.`) right before or after it:
/// `812` in "#812" and "issue 812.", not in "8120" or "1.812".
fn holds_number(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(at, _)| {
        let mut back = text[..at].chars().rev();
        let before = match back.next() {
            None => true,
            Some(c) if c.is_ascii_digit() => false,
            Some('.') => back.next().is_none_or(|c| !c.is_ascii_digit()),
            Some(_) => true,
        };
        let mut ahead = text[at + number.len()..].chars();
        let after = match ahead.next() {
            None => true,
            Some(c) if c.is_ascii_digit() => false,
            Some('.') => ahead.next().is_none_or(|c| !c.is_ascii_digit()),
            Some(_) => true,
        };
        before && after
    })
}

/// What asks for the numbers an answer left out: "Your answer leaves out the number the task
/// asks for (812)." Told "leaves out what the task asks for" with the values fenced below, or
/// "the whole answer again, including 812", the model wrote its answer again as it was; told
/// this way it added the number (bench/README.md, stop 37). The values are numbers
/// ([`is_number`]) and the names the task's own words, so nothing of the sender's text but
/// digits reaches this request unfenced.
fn ask(lang: Language, missing: &[Missing]) -> String {
    // A payload may repeat a name many times: the first few of its values say which.
    let values = |m: &Missing, sep: &str| m.values.iter().take(MAX_VALUES).cloned().collect::<Vec<_>>().join(sep);
    let parts: Vec<String> = missing.iter().map(|m| format!("the {} ({})", m.name, values(m, ", "))).collect();
    let parts = match parts.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    let zh: Vec<String> = missing.iter().map(|m| format!("{}（{}）", m.name, values(m, "、"))).collect();
    match lang {
        Language::En => format!(
            "Your answer leaves out {parts} the task asks for. Write the answer again with it, after a line that says \
             ANSWER:"
        ),
        Language::Zh => {
            format!("你的回答漏掉了任务所问的{}。把它写进去，重新回答，写在“答案：”那一行之后。", zh.join("、"))
        }
    }
}

impl Agent {
    /// `answer` to the payload request `messages` (whose reply was `reply`), or the answer asked
    /// once more when it leaves out a number the task names (the module says how); `answer`
    /// when it leaves none out, or the answer asked again holds none of them either.
    pub(super) async fn cover_fields(
        &self,
        own: &str,
        data: &[Value],
        messages: &[Message],
        reply: &str,
        answer: String,
        stats: &mut TurnStats,
    ) -> String {
        if !self.opts.assists.allows("fields_left_out") {
            return answer;
        }
        let left = missing(own, data, &answer);
        if left.is_empty() {
            return answer;
        }
        let mut more = messages.to_vec();
        more.push(Message::assistant(reply.to_string()));
        more.push(Message::user(ask(self.opts.language, &left)));
        let names = left.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ");
        let again = self
            .side_call("the numbers the answer left out", more, self.opts.temperature, self.opts.max_tokens, stats)
            .await;
        let known = |name: &str| self.tools.get(name).is_some();
        let better = again.and_then(|r| match super::hygiene::settle(&super::answer::answer_of(&r), &known) {
            super::hygiene::Verdict::Answer(text) if missing(own, data, &text).len() < left.len() => Some(text),
            _ => None,
        });
        let detail = match &better {
            Some(_) => {
                format!("the answer left out the {names} the task asks for; asked again, the new answer holds it")
            }
            None => format!("the answer left out the {names} the task asks for; asked again, it stands as it was"),
        };
        self.record(RunEvent::Note { kind: "fields_left_out", detail });
        better.unwrap_or(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issue() -> Value {
        json!({"action": "opened", "issue": {"number": 812, "title": "Search ignores accents", "user": {"login": "kwame-o", "id": 4411},
               "labels": [{"name": "bug"}, {"name": "i18n"}]}, "repository": {"full_name": "acme/ledger"}})
    }

    #[test]
    fn a_number_the_task_names_and_the_answer_lacks_is_missing() {
        let own =
            "The forge sent this event: Sum up the new issue in two lines: its number, its author and its labels.";
        let left = missing(own, &[issue()], "Search ignores accents; opened by kwame-o, labels bug and i18n.");
        assert_eq!(left, [Missing { name: "number".into(), values: vec!["812".into()] }]);
        assert!(missing(own, &[issue()], "Issue #812: Search ignores accents (kwame-o; bug, i18n).").is_empty());
        assert_eq!(missing(own, &[issue()], "Issue 8120 ...").len(), 1, "another number");
        assert!(missing("Who opened it?", &[issue()], "kwame-o").is_empty(), "no number named");
        // Plurals both ways, numbers written as strings, one name in several objects.
        let orders = json!({"orders": [{"total": "49.90"}, {"total": 12}]});
        assert_eq!(missing("Give the totals.", std::slice::from_ref(&orders), "none")[0].values, ["49.90", "12"]);
        assert!(missing("Give the totals.", std::slice::from_ref(&orders), "Totals: 12 and 49.90.").is_empty());
        assert!(missing("the total", &[json!({"totals": 7})], "7 in all").is_empty());
        assert!(missing("the total", &[json!({"total": "n/a"})], "nothing").is_empty(), "not a number");
    }

    #[test]
    fn numbers_are_found_as_numbers_of_their_own() {
        assert!(holds_number("Issue #812.", "812"));
        assert!(holds_number("812", "812"));
        assert!(!holds_number("8120 rows", "812"));
        assert!(!holds_number("1.812", "812"));
        assert!(!holds_number("812.5", "812"));
        assert!(holds_number("total 49.90, done", "49.90"));
        assert!(is_number("-3.5") && is_number("42") && !is_number("4.") && !is_number("v2") && !is_number("1.2.3"));
    }

    #[test]
    fn the_ask_names_each_number_left_out() {
        let number = Missing { name: "number".into(), values: vec!["812".into()] };
        assert_eq!(
            ask(Language::En, std::slice::from_ref(&number)),
            "Your answer leaves out the number (812) the task asks for. Write the answer again with it, after a line \
             that says ANSWER:"
        );
        let total = Missing { name: "total".into(), values: vec!["49.90".into(), "12".into()] };
        let both = ask(Language::En, &[number.clone(), total.clone()]);
        assert!(
            both.starts_with("Your answer leaves out the number (812) and the total (49.90, 12) the task"),
            "{both}"
        );
        assert!(
            ask(Language::Zh, &[number, total])
                .starts_with("你的回答漏掉了任务所问的number（812）、total（49.90、12）。")
        );
        let many = Missing { name: "id".into(), values: (1..=9).map(|i| i.to_string()).collect() };
        assert!(ask(Language::En, &[many]).starts_with("Your answer leaves out the id (1, 2, 3, 4, 5) the task"));
    }
}
