//! "Which account saw the most rejected sign-ins": the most (or the fewest) of something counted per
//! value, not the largest number a record holds. The 1.5B model, asked for `value(line)`, gave
//! every line 1, and the first user was named (bench/README.md, stop 43). Where the task asks
//! for the most or the fewest of a plural noun that no field of the records names ("the most
//! failed logins", "the most requests", 最多的请求), the model writes `key(line)` (the user, the
//! address), and the engine counts the records per key and states the counts.

use super::phrase;
use crate::agent::records::{Records, Shape};
use crate::config::Language;

/// Whether `task` asks for the most or the fewest of a plural noun (within the two words after
/// "most", "fewest" or "least") that no field of `records` names: a count per value.
pub(super) fn counts_per(task: &str, records: &Records<'_>) -> bool {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let plural = |w: &str| w.len() > 3 && w.ends_with('s') && !["ss", "us", "is"].iter().any(|e| w.ends_with(e));
    let fields: Vec<String> = match records.values.first() {
        Some(serde_json::Value::Object(first)) => first.keys().map(|k| k.to_lowercase()).collect(),
        _ => Vec::new(),
    };
    let names_field =
        |w: &str| fields.iter().any(|f| f == w || f.strip_suffix('s') == Some(w) || w.strip_suffix('s') == Some(f));
    let noun = words.iter().enumerate().find_map(|(at, w)| {
        if !["most", "fewest", "least"].contains(w) {
            return None;
        }
        words[at + 1..].iter().take(2).find(|n| plural(n)).copied()
    });
    let zh = ["最多", "最少"].iter().any(|w| task.contains(w))
        && ["次", "条", "个", "请求", "错误"].iter().any(|w| task.contains(w));
    match noun {
        Some(noun) => !names_field(noun) && !phrase::is_unit(noun),
        None => zh && records.shape == Shape::Lines,
    }
}

/// The code request's instruction for [`counts_per`]. It names what the task counts per in the
/// task's own word when it has one ("Which route ... has the most 5xx responses": the
/// route); given the examples "a user, an address, a name" there, the 1.5B model returned
/// `'user'` for every GET line and `'address'` for every POST line, and told "the endpoint" alone
/// it returned the method; told to return the part of the line that names it, the path
/// (bench/README.md, stop 47).
pub(super) fn instruction(task: &str, shape: Shape) -> String {
    let per = match subject(task) {
        Some(subject) => format!("(here: the {subject}; return the part of the line that names it)"),
        None => "(a user, an address, a name)".to_string(),
    };
    match shape {
        Shape::Lines => format!(
            "Write a Python function `key(line: str) -> str` that returns, for one line the task counts, the value it \
             counts them per {per}, or None for a line the task does not count."
        ),
        _ => "Write a Python function `key(item: dict) -> str` that returns, for one item the task counts, the value \
              it counts them per (a field's value), or None for an item the task does not count."
            .to_string(),
    }
}

/// What a task asks the most of something per, in its own words after "which" or "what": one
/// or two words before a verb, a preposition or an article ("Which route in web.log has",
/// "Which IP address made"). `None` when there is none ("Who saw the most failed attempts?").
fn subject(task: &str) -> Option<String> {
    const STOP: [&str; 26] = [
        "in", "of", "on", "at", "from", "for", "to", "with", "the", "a", "an", "has", "had", "have", "made", "makes",
        "is", "was", "are", "were", "did", "does", "do", "got", "saw", "sent",
    ];
    let lower = task.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !(c.is_alphanumeric() || c == '-')).filter(|w| !w.is_empty()).collect();
    let at = words.iter().position(|w| *w == "which" || *w == "what")?;
    let named: Vec<&str> = words[at + 1..].iter().take_while(|w| !STOP.contains(w)).take(3).copied().collect();
    (1..=2).contains(&named.len()).then(|| named.join(" "))
}

/// Each key with how many records gave it, most first (ties in the order first seen).
pub(super) fn tally(keys: &[Option<String>]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for key in keys.iter().flatten() {
        match counts.iter_mut().find(|(k, _)| k == key) {
            Some((_, n)) => *n += 1,
            None => counts.push((key.clone(), 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts
}

/// What the answer request says: the counts per key and which has the most (`most`) or the
/// fewest, with a tie named as one.
pub(super) fn note(lang: Language, source: &str, counts: &[(String, usize)], most: bool) -> Option<String> {
    let best = if most { counts.first()?.1 } else { counts.last()?.1 };
    let top: Vec<&str> = counts.iter().filter(|(_, n)| *n == best).map(|(k, _)| k.as_str()).collect();
    let listed: Vec<String> = counts.iter().take(10).map(|(k, n)| format!("{k}: {n}")).collect();
    let listed = listed.join(", ");
    let top = top.join(", ");
    Some(match (lang, most) {
        (Language::En, true) => format!("(Counted per value in `{source}`: {listed}. The most: {top}, with {best}.)"),
        (Language::En, false) => {
            format!("(Counted per value in `{source}`: {listed}. The fewest: {top}, with {best}.)")
        }
        (Language::Zh, true) => format!("（按值统计 `{source}`：{listed}。最多的是 {top}，共 {best} 条。）"),
        (Language::Zh, false) => format!("（按值统计 `{source}`：{listed}。最少的是 {top}，共 {best} 条。）"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_of_a_plural_noun_no_field_names_is_a_count_per_value() {
        let log = "Mar 02 login: bad password for ops\nMar 02 login: bad password for kim\nMar 02 login: bad password for kim\n";
        let lines = Records::of_lines_from(log, 3, true).unwrap();
        assert!(counts_per("Which account saw the most failed attempts in secure.log?", &lines));
        assert!(counts_per("Which IP made the most requests?", &lines));
        assert!(!counts_per("Which process uses the most memory?", &lines), "a mass noun");
        assert!(!counts_per("Which endpoint took the most seconds?", &lines), "a unit");
        let csv = Records::of_lines_from("name,orders\nana,4\nben,9\ncai,2\n", 3, true).unwrap();
        assert!(!counts_per("Which customer has the most orders?", &csv), "a field");
        assert!(counts_per("哪个用户的失败登录次数最多？", &lines));
    }

    #[test]
    fn the_function_is_asked_for_the_value_the_task_names() {
        assert_eq!(subject("Which route in web.log has the most 5xx responses?").as_deref(), Some("route"));
        assert_eq!(subject("Which IP address made the most requests?").as_deref(), Some("ip address"));
        assert_eq!(subject("Which account saw the most failed attempts in secure.log?").as_deref(), Some("account"));
        assert_eq!(subject("Who saw the most failed attempts?"), None);
        assert_eq!(subject("Which of the hosts sent the most alerts?"), None);
        let ask = instruction("Which route in web.log has the most 5xx responses?", Shape::Lines);
        assert!(
            ask.contains("counts them per (here: the route; return the part of the line that names it), or None"),
            "{ask}"
        );
        assert!(
            instruction("Who saw the most failed attempts?", Shape::Lines).contains("(a user, an address, a name)")
        );
    }

    #[test]
    fn the_counts_name_the_top_and_a_tie() {
        let keys = [Some("root".to_string()), Some("bob".into()), None, Some("bob".into()), Some("carol".into())];
        let counts = tally(&keys);
        assert_eq!(counts, [("bob".to_string(), 2), ("root".into(), 1), ("carol".into(), 1)]);
        assert_eq!(
            note(Language::En, "auth.log", &counts, true).as_deref(),
            Some("(Counted per value in `auth.log`: bob: 2, root: 1, carol: 1. The most: bob, with 2.)")
        );
        assert_eq!(
            note(Language::En, "auth.log", &counts, false).as_deref(),
            Some("(Counted per value in `auth.log`: bob: 2, root: 1, carol: 1. The fewest: root, carol, with 1.)")
        );
    }
}
