//! Tasks whose answer is a comparison: a yes-or-no check ("Does the release in setup.cfg
//! match ...?") or a superlative ("Which team closed the most tickets?"). Asked for the
//! answer from the evidence, a 1.5B model answers these from the look of the values rather than
//! their order: `Yes` for 2.3.0 against 2.4.0, East's 143,500 as the highest of four regions.
//! Shown two worked answers first, in which the values are written out before the verdict
//! (`Values: ... ANSWER: ...`), it writes the values out too and compares right more often:
//! replayed on 14 recorded and constructed comparisons at two clock times, 21 of 28 right
//! against 10 of 28 (bench/README.md, "Stop 32"). Tasks of other kinds (lists, counts, the
//! next open to-do) got worse with the same examples, so they are shown only to tasks
//! that this module recognizes as comparisons, in English; the examples are in English.

use crate::config::Language;
use crate::llm::Message;

/// Words that open a yes-or-no question.
const YES_NO: [&str; 16] = [
    "does", "do", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could", "should", "will", "would",
    "shall",
];

/// Superlatives that do not end in "-est".
const SUPERLATIVES: [&str; 7] = ["most", "least", "max", "maximum", "min", "minimum", "best"];

/// Words of five letters or more that end in "-est" and are not superlatives.
const NOT_SUPERLATIVES: [&str; 16] = [
    "request", "interest", "suggest", "digest", "manifest", "contest", "forest", "honest", "modest", "protest",
    "invest", "arrest", "harvest", "earnest", "attest", "ingest",
];

/// Whether `task` asks for a comparison: a sentence that opens with a yes-or-no word, the
/// words "yes or no", or a superlative.
pub(super) fn asks_to_compare(task: &str) -> bool {
    let lower = task.to_lowercase();
    if lower.contains("yes or no") {
        return true;
    }
    let opens_yes_no = lower
        .split(['.', '?', '!', '\n', ':'])
        .filter_map(|sentence| sentence.split_whitespace().next())
        .any(|first| YES_NO.contains(&first.trim_matches(|c: char| !c.is_alphabetic())));
    opens_yes_no
        || lower.split(|c: char| !c.is_alphabetic()).any(|word| {
            SUPERLATIVES.contains(&word)
                || (word.len() >= 5 && word.ends_with("est") && !NOT_SUPERLATIVES.contains(&word))
        })
}

/// The worked answers shown before a comparison task: (request, reply) pairs in the form of
/// the evidence request. `None` for languages without them.
pub(super) fn examples(lang: Language, ask: &str) -> Option<Vec<Message>> {
    if lang != Language::En {
        return None;
    }
    let pairs = [
        (
            "Data:\n--- file_read {\"path\":\"inventory.csv\"} ---\nitem,count\nbolts,40\nnuts,120\nwashers,75\n---\n\n\
             Task: Which item do we have the fewest of, and how many?",
            "Values: bolts 40, nuts 120, washers 75. From fewest to most: bolts 40, washers 75, nuts 120. \
             Fewest: bolts.\nANSWER:\nWe have the fewest bolts: 40.",
        ),
        (
            "Data:\n--- file_read {\"path\":\"shop/price.txt\"} ---\nprice: 12.00\n--- file_read {\"path\":\"web/price.txt\"} \
             ---\nprice: 12.50\n---\n\nTask: Does the shop's price match the web price? Reply yes or no and state both prices.",
            "Values: shop 12.00, web 12.50. 12.00 is not 12.50.\nANSWER:\nNo: the shop's price is 12.00 and the web \
             price is 12.50.",
        ),
    ];
    Some(
        pairs
            .into_iter()
            .flat_map(|(request, reply)| [Message::user(format!("{request}\n\n{ask}")), Message::assistant(reply)])
            .collect(),
    )
}

/// What marks an answer copied from a worked example: all the values of one example's answer.
const EXAMPLE_VALUES: [&[&str]; 2] = [&["bolts", "40"], &["12.00", "12.50"]];

/// Whether `answer` is copied from a worked example: it holds all the values of one example's
/// answer, and the request it answers (`request`, the data and the task) holds none of them.
/// A task that set the pending orders against the previous run: shown the
/// examples, the 1.5B model answered "Yes: the shop's price is 12.00 and the web price is
/// 12.50." twice (bench/README.md, stop 44).
pub(super) fn copied(answer: &str, request: &str) -> bool {
    let (answer, request) = (answer.to_lowercase(), request.to_lowercase());
    EXAMPLE_VALUES
        .iter()
        .any(|values| values.iter().all(|v| answer.contains(v)) && !values.iter().any(|v| request.contains(v)))
}

impl super::Agent {
    /// `answer` (after `ANSWER:`) to the evidence request `messages`, or, when it is copied from
    /// a worked example, the answer to the request without the examples (empty when that one
    /// is copied too, or the call failed); noted.
    pub(super) async fn not_copied(
        &self,
        messages: &[Message],
        answer: String,
        stats: &mut super::events::TurnStats,
    ) -> String {
        if !self.opts.assists.allows("example_copied") {
            return answer;
        }
        let request = messages.last().map(Message::text).unwrap_or_default();
        if !copied(&answer, request) {
            return answer;
        }
        let plain: Vec<Message> = messages.first().into_iter().chain(messages.last()).cloned().collect();
        let what = "the answer without the worked examples";
        let again = self.side_call(what, plain, self.opts.temperature, self.opts.max_tokens, stats).await;
        let again = again.map(|r| super::answer::answer_of(&r).trim().to_string()).unwrap_or_default();
        let again = if copied(&again, request) { String::new() } else { again };
        self.record(super::events::RunEvent::Note {
            kind: "example_copied",
            detail: format!(
                "the answer was copied from a worked example; asked without the examples, {}",
                if again.is_empty() { "and no answer came" } else { "and that answer is taken" }
            ),
        });
        again
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_or_no_questions_and_superlatives_are_comparisons() {
        for task in [
            "Does the tag in Cargo.toml match the top entry of RELEASES.md? Yes or no, please.",
            "Which store had the highest takings in shops.csv, and how much?",
            "Who authored the most recent change in this repo?",
            "Check certs/api.txt. Is it valid for more than 30 days?",
            "Which rack is the warmest right now?",
            "Tell me yes or no: did the backup run?",
            "Which host has the least disk left?",
        ] {
            assert!(asks_to_compare(task), "{task}");
        }
    }

    #[test]
    fn an_answer_with_the_values_of_an_example_the_data_lacks_is_copied() {
        let request =
            "Data:\n--- file_read {\"path\":\"orders.csv\"} ---\nid,status\n7,pending\n---\n\nTask: How many?";
        assert!(copied("Yes: the shop's price is 12.00 and the web price is 12.50.", request));
        assert!(copied("We have the fewest bolts: 40.", request));
        assert!(!copied("1 order is still pending.", request));
        let prices = "Data:\nprice: 12.00\nprice: 12.50\n\nTask: Do the prices match?";
        assert!(!copied("No: 12.00 and 12.50 differ.", prices), "the data's own values");
    }

    #[test]
    fn other_tasks_are_not() {
        for task in [
            "What's the first unticked box in plan.md?",
            "List the last day's commits with one line per commit: author and change.",
            "How many FATAL lines does logs/queue.log hold?",
            "Compare rates/q1.csv with rates/q2.csv. Which plan changed its rate?",
            "Look at logs/api.log for failures. Quote any you find; otherwise answer NO_REPLY.",
            "Run the tests and send the request log to the west team; note any interest.",
            "看一下 notes/sprint.md，列出这周做完的事情。",
        ] {
            assert!(!asks_to_compare(task), "{task}");
        }
    }

    #[test]
    fn the_examples_are_in_the_evidence_requests_form_and_only_in_english() {
        let m = examples(Language::En, "Give your answer after a line that says ANSWER:").unwrap();
        assert_eq!(m.len(), 4);
        assert!(m[0].text().starts_with("Data:\n--- file_read ") && m[0].text().ends_with("says ANSWER:"));
        assert!(m[1].text().starts_with("Values: ") && m[1].text().contains("\nANSWER:\n"));
        assert!(examples(Language::Zh, "").is_none());
    }
}
