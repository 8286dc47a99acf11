//! A class of HTTP statuses the task names ("5xx", "4xx"), told apart by the engine. Asked what
//! share of the requests ended in a 5xx, the 1.5B model's `keep` tested for the text
//! `5xx`, twice, and the answer then counted 4 of 10 for 2 (bench/README.md, stop 42). `5xx` is
//! no text of a log line; a status of 500 to 599 is.

use std::sync::LazyLock;

use regex::Regex;

static CLASS: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?i)\b([1-5])xx\b").ok());

/// The status of a line: a number of three digits from 100 to 599 standing alone (between
/// spaces, quotes, `=` or `:`), the first such after the request's path when a line has more.
fn statuses(line: &str) -> Vec<u16> {
    line.split(|c: char| c.is_whitespace() || "\"'=:,;[](){}".contains(c))
        .filter(|t| t.len() == 3 && t.chars().all(|c| c.is_ascii_digit()))
        .filter_map(|t| t.parse::<u16>().ok())
        .filter(|n| (100..600).contains(n))
        .collect()
}

/// For a task that names one class of statuses, where each of `lines` holds exactly one
/// status: the class as the task writes it, and which lines hold a status of it.
pub(super) fn by_class(task: &str, lines: &[String]) -> Option<(String, Vec<bool>)> {
    let class = CLASS.as_ref()?;
    let mut named = class.captures_iter(task).map(|c| (c[0].to_string(), c[1].to_string()));
    let (written, digit) = named.next()?;
    if named.any(|(_, d)| d != digit) || lines.len() < 2 {
        return None;
    }
    let first = u16::from(digit.as_bytes()[0] - b'0');
    let mut flags = Vec::with_capacity(lines.len());
    for line in lines {
        let [status] = statuses(line)[..] else { return None };
        flags.push(status / 100 == first);
    }
    Some((written, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn the_lines_whose_status_is_of_the_class_are_kept() {
        let log =
            lines("GET /api/orders 200\nPOST /api/pay 502\nGET /api/users 500\nGET /api/users 404\nGET /health 200");
        let task = "What percentage of calls in web.log returned a 5xx code?";
        assert_eq!(by_class(task, &log), Some(("5xx".to_string(), vec![false, true, true, false, false])));
        assert_eq!(
            by_class("How many 4XX errors?", &log).map(|(_, f)| f),
            Some(vec![false, false, false, true, false])
        );
        let json = lines("{\"path\": \"/a\", \"status\": 503}\n{\"path\": \"/b\", \"status\": 200}");
        assert_eq!(by_class("Which requests got a 5xx?", &json).map(|(_, f)| f), Some(vec![true, false]));
    }

    #[test]
    fn a_line_with_no_status_or_two_or_a_task_of_two_classes_is_left_to_the_model() {
        let task = "How many 5xx responses are there?";
        assert_eq!(by_class(task, &lines("GET / 200\nGET /x took 12 ms")), None, "no status");
        assert_eq!(by_class(task, &lines("GET / 200 512\nGET / 500 100")), None, "two numbers of a status's shape");
        assert_eq!(by_class("How many 4xx or 5xx?", &lines("GET / 200\nGET / 500")), None, "two classes");
        assert_eq!(by_class("How many errors?", &lines("GET / 200\nGET / 500")), None, "no class");
    }
}
