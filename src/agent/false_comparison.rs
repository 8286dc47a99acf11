//! A comparison of two numbers in an answer that is false. Asked to warn when the free memory
//! fell under a limit in MB, the 1.5B model's check compared the wrong row in the
//! wrong unit and found something, and the report it wrote from the data said "The available
//! memory is 4391 MB, which is less than 500 MB" (bench/README.md, stop 43). Whether 4391 is
//! less than 500 is arithmetic, the engine's job: an answer that states a comparison of two
//! numbers in one unit that does not hold is asked once more, with the comparison as it is; the
//! second answer is taken when it states no false comparison.
//!
//! Only what the answer itself states: a number, a word that compares (`less than`, `below`,
//! `exceeds`, `低于`), and a number right after it, with nothing but a verb or punctuation
//! between the first number and the word ("4391 MB, which is less than 500 MB", "95%, above
//! 90%"); "3 more than 2" is a difference, not a comparison, and two units that differ (`GB`
//! and `MB`) are left alone.

use std::sync::LazyLock;

use regex::Regex;

use super::Agent;
use super::events::{RunEvent, TurnStats};
use crate::config::Language;
use crate::llm::Message;

/// One comparison an answer states, false as it is written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct FalseClaim {
    /// The words of the answer that state it.
    pub text: String,
    pub left: f64,
    pub right: f64,
}

static CLAIM: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?P<l>\d[\d,]*(?:\.\d+)?)\s*(?P<lu>%|(?:[kmgtp]i?b|b|bytes|ms|us|ns|s|sec|secs|min|mins|h|hr|hrs|d|days|k|m|g|t)\b)?(?P<gap>[^\d.!?\n。]{0,24}?)(?P<cmp>less than|lower than|smaller than|fewer than|below|under|more than|greater than|higher than|larger than|above|over|exceeds|exceeding|低于|少于|小于|不足|高于|超过|大于|多于)\s*(?P<r>\d[\d,]*(?:\.\d+)?)\s*(?P<ru>%|(?:[kmgtp]i?b|b|bytes|ms|us|ns|s|sec|secs|min|mins|h|hr|hrs|d|days|k|m|g|t)\b)?",
    )
    .ok()
});

/// The gap between the first number (and its unit) and the comparing word: punctuation, or a
/// verb that states the comparison ("which is", "is now", "仍然是"); not a difference ("3 more").
fn states(gap: &str) -> bool {
    let gap = gap.trim();
    if gap.is_empty() {
        return false;
    }
    if gap.chars().all(|c| ",;:()—–-，、：（）".contains(c) || c.is_whitespace()) {
        return true;
    }
    const VERBS: [&str; 9] = ["is", "are", "was", "were", "remains", "stays", "sits", "being", "now"];
    let lower = gap.to_lowercase();
    lower.split(|c: char| !c.is_alphabetic()).any(|w| VERBS.contains(&w))
        || ["是", "为", "仍", "不"].iter().any(|w| gap.contains(w))
}

fn number(text: &str) -> Option<f64> {
    text.replace(',', "").parse().ok()
}

/// The comparisons `answer` states that are false.
pub(super) fn false_claims(answer: &str) -> Vec<FalseClaim> {
    let Some(re) = CLAIM.as_ref() else { return Vec::new() };
    let mut out = Vec::new();
    for c in re.captures_iter(answer) {
        let (Some(l), Some(r), Some(cmp), Some(whole)) = (c.name("l"), c.name("r"), c.name("cmp"), c.get(0)) else {
            continue;
        };
        if !states(c.name("gap").map_or("", |g| g.as_str())) {
            continue;
        }
        // A number that is part of a time, a date or a name (`10:00`, `v2`) is no quantity.
        let before = answer[..l.start()].chars().next_back();
        let after = answer[r.end()..].chars().next();
        if before.is_some_and(|c| c.is_alphanumeric() || ":-/.".contains(c)) || after.is_some_and(|c| ":/".contains(c))
        {
            continue;
        }
        let (lu, ru) =
            (c.name("lu").map(|u| u.as_str().to_lowercase()), c.name("ru").map(|u| u.as_str().to_lowercase()));
        if let (Some(lu), Some(ru)) = (&lu, &ru)
            && lu != ru
        {
            continue;
        }
        let (Some(left), Some(right)) = (number(l.as_str()), number(r.as_str())) else { continue };
        let cmp = cmp.as_str().to_lowercase();
        let says_below = ["less", "lower", "smaller", "fewer", "below", "under", "低于", "少于", "小于", "不足"]
            .iter()
            .any(|w| cmp.starts_with(w));
        let relation = if says_below { left < right } else { left > right };
        // "1250, which is not over 1000" states the opposite relation.
        let gap = c.name("gap").map_or("", |g| g.as_str());
        let negated = gap
            .to_lowercase()
            .split(|c: char| !c.is_alphabetic() && c != '\'')
            .any(|w| w == "not" || w.ends_with("n't"))
            || gap.contains('不')
            || gap.contains('没');
        if relation == negated {
            out.push(FalseClaim { text: whole.as_str().trim().to_string(), left, right });
        }
    }
    out
}

fn shown(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { format!("{n}") }
}

impl Agent {
    /// `answer` (the reply to `messages`) when it states no false comparison; else the answer
    /// asked once more with the comparison as it is, when that one states none; noted. With
    /// `silent`, the routine's silent token, the request names it as the answer when nothing is
    /// to be reported (the task shown may have lost the sentence that names it).
    pub(super) async fn compared_right(
        &self,
        messages: &[Message],
        answer: String,
        silent: Option<&str>,
        stats: &mut TurnStats,
    ) -> String {
        if !self.opts.assists.allows("false_comparison") {
            return answer;
        }
        let claims = false_claims(&answer);
        let Some(first) = claims.first() else { return answer };
        let (l, r) = (shown(first.left), shown(first.right));
        let truth = match (self.opts.language, first.left == first.right, first.left > first.right) {
            (Language::En, true, _) => format!("{l} is equal to {r}"),
            (Language::En, false, true) => format!("{l} is more than {r}"),
            (Language::En, false, false) => format!("{l} is less than {r}"),
            (Language::Zh, true, _) => format!("{l} 等于 {r}"),
            (Language::Zh, false, true) => format!("{l} 大于 {r}"),
            (Language::Zh, false, false) => format!("{l} 小于 {r}"),
        };
        let otherwise = match (self.opts.language, silent) {
            (Language::En, Some(token)) => format!("reply {token}"),
            (Language::En, None) => "answer as the task says for that case".to_string(),
            (Language::Zh, Some(token)) => format!("就回复 {token}"),
            (Language::Zh, None) => "就按任务对这种情况的要求回答".to_string(),
        };
        let ask = match self.opts.language {
            Language::En => format!(
                "Your answer says \"{}\", which is false: {truth}. Check the data against the task again and answer it; if nothing in the data is what the task asks to report, {otherwise}.",
                first.text
            ),
            Language::Zh => format!(
                "你的回答说“{}”，这不对：{truth}。请对照任务重新检查数据并回答；如果数据中没有任务要求报告的内容，{otherwise}。",
                first.text
            ),
        };
        let again = self.asked_again("a false comparison in the answer", messages, &answer, ask, stats).await;
        let taken = !again.is_empty() && false_claims(&again).is_empty();
        self.record(RunEvent::Note {
            kind: "false_comparison",
            detail: format!(
                "the answer said \"{}\", but {truth}; asked again, {}",
                first.text,
                if taken { "and the new answer is taken" } else { "and the first answer stands" }
            ),
        });
        if taken { again } else { answer }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(answer: &str) -> Vec<String> {
        false_claims(answer).into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn a_comparison_that_does_not_hold_is_found() {
        assert_eq!(
            texts("The available memory is 4391 MB, which is less than 500 MB."),
            ["4391 MB, which is less than 500 MB"]
        );
        assert_eq!(texts("Disk usage is 45%, above the limit"), Vec::<String>::new(), "no number after the word");
        assert_eq!(texts("Usage is 45%, above 90%."), ["45%, above 90%"]);
        assert_eq!(texts("可用内存为 4391 MB，低于 500 MB。"), ["4391 MB，低于 500 MB"]);
        assert_eq!(texts("Latency 120 ms is below 100 ms."), ["120 ms is below 100 ms"]);
        assert_eq!(texts("The count 1,200 is more than 1,500."), ["1,200 is more than 1,500"]);
        assert_eq!(texts("The depth is 1250, which is not over 1000."), ["1250, which is not over 1000"]);
        assert_eq!(texts("内存 4391 MB，并不低于 500 MB。"), Vec::<String>::new(), "negated and true");
    }

    #[test]
    fn true_comparisons_differences_and_other_units_are_left_alone() {
        assert!(false_claims("Only 320 MB is available, which is less than 500 MB.").is_empty());
        assert!(false_claims("There are 5 ERROR lines, 3 more than 2 at the last check.").is_empty(), "a difference");
        assert!(false_claims("4.3 GB is available, less than 500 MB.").is_empty(), "units differ");
        assert!(false_claims("Usage is 95%, above 90%.").is_empty());
        assert!(false_claims("4391 MB is available, which is not less than 500 MB.").is_empty(), "negated, true");
        assert!(false_claims("The build took 12 minutes.").is_empty());
        assert!(false_claims("磁盘使用率 95%，超过 90%。").is_empty());
        assert!(false_claims("Since 10:00, over 50 errors were logged.").is_empty(), "a time");
        assert!(false_claims("Release v1, above 3 others.").is_empty(), "a name");
    }
}
