//! An answer about a limit that does not say the value. Asked whether the depth in a JSON file
//! passed a limit, the 1.5B model answered only that it did ("Yes, ... is over 1000.") beside
//! `"depth": 1250` (bench/README.md, stop 44). A reader cannot tell from that whether the model
//! looked, nor by how much. When the task states a limit over a quantity it names and the
//! results give that quantity one value (`unit_limit.rs`: a key or a column the task names, in
//! the limit's kind), an answer that does not say the value is asked once more naming it and
//! which side of the limit it is on; the second answer is taken when it says the value. When it
//! does not either (the model answered "Yes" twice), the first answer is delivered with the lines
//! of the results that hold the value under it, as a report that quotes none of the lines it
//! rests on is (`quoted.rs`).

use super::Agent;
use super::events::{CallRecord, RunEvent, ToolStatus, TurnStats};
use super::{threshold, unit_limit};
use crate::config::Language;
use crate::llm::Message;

/// Whether `answer` says `value` as written (`1250`, `1.2G`), or its number (`1,250`).
fn says_value(answer: &str, value: &str) -> bool {
    let plain = |t: &str| t.replace(',', "").to_lowercase();
    let answer = plain(answer);
    let value = plain(value);
    let number: String = value.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let stands = |needle: &str| {
        answer.match_indices(needle).any(|(at, _)| {
            let before = answer[..at].chars().next_back();
            let after = answer[at + needle.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_digit() || c == '.') && !after.is_some_and(|c| c.is_ascii_digit())
        })
    };
    stands(&value) || (!number.is_empty() && stands(&number))
}

/// The one value the results give what the task names against the limit it states.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Named {
    /// As the results write it (`1250`, `1.2G`, `86%`).
    pub value: String,
    /// Which side of the limit it is on: `Greater` above.
    pub side: std::cmp::Ordering,
    /// The limit as written (`1000`, `80%`).
    pub limit: String,
    /// The task's words that state it, for the run's notes.
    pub words: String,
}

/// The one value the results give the quantity `task` names against the limit it states: a
/// limit with a unit over a key or a column the task names (`unit_limit.rs`), or a percentage
/// limit over the one line of the results that holds a name the task gives (`/var`, `web-1`)
/// and one percentage ("is /srv over 80% used": the model read `14G` and answered No beside
/// `86% /srv`). `None` when the task states no such limit or the results give none or several.
pub(super) fn named_value(task: &str, calls: &[CallRecord]) -> Option<Named> {
    let results: Vec<&str> =
        calls.iter().filter(|c| c.status == ToolStatus::Success).map(|c| c.result.as_str()).collect();
    if let Some(limit) = unit_limit::limit(std::iter::once(task)) {
        let [one] = unit_limit::values(&limit, &results).try_into().ok()?;
        let side = unit_limit::against(&limit, &one)?;
        return Some(Named { value: one, side, limit: limit.written.clone(), words: limit.words });
    }
    let limit = threshold::limit(std::iter::once(task))?;
    // Names of the task: the words with a mark of a path, a host or an identifier in them.
    let names: Vec<&str> = task
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| "?!,;:()\"'“”".contains(c)).trim_end_matches('.'))
        .filter(|w| w.len() >= 2 && w.contains(['/', '-', '_']) && !w.contains('%'))
        .collect();
    let mut found: Vec<f64> = Vec::new();
    for line in results.iter().flat_map(|r| r.lines()) {
        if names.iter().any(|n| line.split_whitespace().any(|cell| cell == *n)) {
            found.extend(threshold::percentages(line).into_iter().map(|(_, value, _)| value));
        }
    }
    found.dedup();
    let [value] = found[..] else { return None };
    let written = |v: f64| format!("{v}%");
    Some(Named {
        value: written(value),
        side: value.total_cmp(&limit.percent),
        limit: written(limit.percent),
        words: limit.words,
    })
}

impl Agent {
    /// `answer` (the reply to `messages`) when it says the value the results give the quantity
    /// the task names against its limit, or there is no such one value; else the answer asked
    /// once more naming the value, when that one says it; noted.
    pub(super) async fn value_stated(
        &self,
        task: &str,
        calls: &[CallRecord],
        messages: &[Message],
        answer: String,
        stats: &mut TurnStats,
    ) -> String {
        if !self.opts.assists.allows("value_not_said") {
            return answer;
        }
        let Some(Named { value, side, limit: limit_text, words }) = named_value(task, calls) else { return answer };
        if answer.trim().is_empty() || says_value(&answer, &value) {
            return answer;
        }
        let relation = match (self.opts.language, side) {
            (Language::En, std::cmp::Ordering::Greater) => format!("more than {limit_text}"),
            (Language::En, std::cmp::Ordering::Less) => format!("less than {limit_text}"),
            (Language::En, std::cmp::Ordering::Equal) => format!("exactly {limit_text}"),
            (Language::Zh, std::cmp::Ordering::Greater) => format!("大于 {limit_text}"),
            (Language::Zh, std::cmp::Ordering::Less) => format!("小于 {limit_text}"),
            (Language::Zh, std::cmp::Ordering::Equal) => format!("等于 {limit_text}"),
        };
        let ask = match self.opts.language {
            Language::En => format!(
                "Your answer does not say the value. The data gives {value}, which is {relation}. Answer the task again with that value, after a line that says ANSWER:"
            ),
            Language::Zh => format!(
                "你的回答没有给出数值。数据中的值是 {value}，{relation}。请带上这个数值重新回答任务，写在“答案：”那一行之后。"
            ),
        };
        let again = self.asked_again("the value the answer left out", messages, &answer, ask, stats).await;
        let taken = says_value(&again, &value);
        self.record(RunEvent::Note {
            kind: "value_not_said",
            detail: format!(
                "the answer did not say {value}, the value of \"{words}\" in the results; asked again, {}",
                if taken {
                    "and the new answer says it"
                } else {
                    "and the first answer stands with the lines that hold it"
                }
            ),
        });
        if taken {
            return again;
        }
        let looked: Vec<&CallRecord> = calls.iter().filter(|c| c.status == ToolStatus::Success).collect();
        let holding: Vec<CallRecord> = looked
            .iter()
            .map(|c| CallRecord {
                result: c.result.lines().filter(|l| says_value(l, &value)).collect::<Vec<_>>().join("\n"),
                ..(*c).clone()
            })
            .filter(|c| !c.result.is_empty())
            .collect();
        let whole: Vec<&str> = looked.iter().map(|c| c.result.as_str()).collect();
        super::quoted::with_lines(&answer, task, &holding, &whole, self.opts.language)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(result: &str) -> CallRecord {
        CallRecord {
            tool: "file_read".into(),
            arguments: "{\"path\":\"queue.json\"}".into(),
            status: ToolStatus::Success,
            result: result.into(),
        }
    }

    #[test]
    fn a_value_is_said_as_written_or_as_its_number() {
        assert!(says_value("The queue depth is 1250, over 1000.", "1250"));
        assert!(says_value("Depth: 1,250.", "1250"));
        assert!(!says_value("Yes, the backlog is over 1000.", "1250"));
        assert!(!says_value("It is 12500.", "1250"), "inside a longer number");
        assert!(says_value("/data has 1.2G left", "1.2G"));
        assert!(says_value("p99 is 950 ms", "950ms"));
    }

    #[test]
    fn the_one_value_of_the_named_quantity_is_found() {
        let task = "Look in backlog.json and say if the backlog depth goes over 1000.";
        let calls = [read("{\"queue\": \"emails\", \"depth\": 1250, \"consumers\": 3}")];
        let named = named_value(task, &calls).unwrap();
        assert_eq!(
            (named.value.as_str(), named.side, named.limit.as_str()),
            ("1250", std::cmp::Ordering::Greater, "1000")
        );
        let two = [read("{\"depth\": 1250}\n{\"depth\": 900}")];
        assert!(named_value(task, &two).is_none(), "two values: which one is unsure");
        assert!(named_value("Look in backlog.json and summarize it.", &calls).is_none(), "no limit");
    }

    /// A percentage limit over the one line that holds the name the task gives.
    #[test]
    fn the_percentage_of_the_line_the_task_names_is_found() {
        let task = "Is /srv more than 80% used in disks.txt? Say yes or no, and give the percentage.";
        let df = "Filesystem Used Use% Mounted on\n/dev/vda1 21G 44% /\n/dev/vdb1 86G 86% /srv\nshm 0 0% /dev/shm\n";
        let named = named_value(task, &[read(df)]).unwrap();
        assert_eq!(
            (named.value.as_str(), named.side, named.limit.as_str()),
            ("86%", std::cmp::Ordering::Greater, "80%")
        );
        assert!(says_value("Yes: /srv is 86% used.", &named.value));
        assert!(!says_value("No: /srv is 14G and is not more than 80%.", &named.value));
        // A name on no line, or on lines of two percentages, gives no one value.
        assert!(named_value("Is /opt more than 80% full?", &[read(df)]).is_none());
        let two = "web-1 cpu 91%\nweb-1 cpu 40%\n";
        assert!(named_value("Is web-1 above 90% CPU?", &[read(two)]).is_none());
        assert!(named_value("Is any disk more than 80% full?", &[read(df)]).is_none(), "no name: the code check's");
    }
}
