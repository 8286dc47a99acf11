//! An answer that does not say the count the engine made. Shown the five ERROR lines of today's
//! log, with the note "5 of the 6 lines of `app.log` are the ones the task asks about", and the
//! memory of the last run's answer ("There are 2 ERROR lines"), the 1.5B model answered "There
//! are 2 ERROR lines" again (bench/README.md, stop 43). When the selection counted (`select/`)
//! and the answer does not hold that number, in figures or in words, the answer is asked once
//! more with the number named; the second answer is taken only when it says the number.

use super::Agent;
use super::events::{RunEvent, TurnStats};
use crate::config::Language;
use crate::llm::Message;

/// Whether `text` says `n`: as a number of its own (not inside a longer one), or as a word
/// (`three`, `三`, `两`) up to twenty.
pub(super) fn says_count(text: &str, n: usize) -> bool {
    let digits = n.to_string();
    if text.split(|c: char| !c.is_ascii_digit()).any(|run| run == digits) {
        return true;
    }
    const EN: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    const ZH: [&str; 21] = [
        "零", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二", "十三", "十四", "十五",
        "十六", "十七", "十八", "十九", "二十",
    ];
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    let (no, none) = (n == 0, ["no", "none", "nothing"].iter().any(|w| words.contains(w)));
    EN.get(n).is_some_and(|w| words.contains(w))
        || (no && (none || text.contains('没') || text.contains('无')))
        || ZH.get(n).is_some_and(|w| text.contains(w))
        || (n == 2 && text.contains('两'))
}

impl Agent {
    /// The answer of an evidence request (`messages`, whose reply was `reply`) to a count the
    /// engine made: `answer` when it says `n`, or else the answer asked once more naming `n`
    /// and the selection's `note`, when that one says it; noted.
    pub(super) async fn counted_answer(
        &self,
        n: usize,
        note: &str,
        messages: &[Message],
        reply: &str,
        answer: String,
        stats: &mut TurnStats,
    ) -> String {
        if !self.opts.assists.allows("count_not_said") {
            return answer;
        }
        if answer.trim().is_empty() || says_count(&answer, n) {
            return answer;
        }
        let ask = match self.opts.language {
            Language::En => format!(
                "Your answer does not say {n}, the number the engine counted in the data: {note}\nAnswer the task again with that number, after a line that says ANSWER:"
            ),
            Language::Zh => format!(
                "你的回答没有给出 {n}，这是从数据中数出的数目：{note}\n请用这个数目重新回答任务，写在“答案：”那一行之后。"
            ),
        };
        let again = self.asked_again("the count the answer left out", messages, reply, ask, stats).await;
        let taken = says_count(&again, n);
        self.record(RunEvent::Note {
            kind: "count_not_said",
            detail: format!(
                "the answer did not say {n}, the count of the selection; asked again, {}",
                if taken { "and the new answer says it" } else { "and the first answer stands" }
            ),
        });
        if taken { again } else { answer }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_said_in_figures_or_in_words() {
        assert!(says_count("There are 5 ERROR lines.", 5));
        assert!(!says_count("There are 15 ERROR lines.", 5), "inside a longer number");
        assert!(says_count("Three tasks are done.", 3));
        assert!(says_count("共有三条错误", 3));
        assert!(says_count("有两条", 2));
        assert!(says_count("No errors were logged.", 0));
        assert!(!says_count("There are 2 ERROR lines in worker.log.", 5));
    }
}
