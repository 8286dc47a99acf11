//! How many questions a task asks: one that asks which files a folder holds "and which one is
//! the largest?" asks two. Answering in its own conversation, the 1.5B model answered the second
//! alone ("The largest log file is worker.log"); asked from the evidence (`evidence.rs`), it
//! answered both, in this and two more such tasks at two clock times (bench/README.md, stop 36).
//! A task of several questions answered in the turn is therefore asked from the evidence once.

/// The words that start a question after a comma or an "and".
const STARTS: [&str; 20] = [
    "which", "what", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was", "were", "does", "do",
    "did", "has", "have", "had", "can",
];

/// Where a question sentence splits into more questions: a question word after a comma or after
/// "and" (", and which ...", ", what ...", " and when ...").
fn splits(sentence: &str) -> usize {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| {
            let next = w[1].trim_end_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
            STARTS.contains(&next.as_str()) && (w[0].ends_with(',') || w[0].eq_ignore_ascii_case("and"))
        })
        .count()
}

/// The questions of `task`: each sentence that ends with a question mark, split at a comma or an
/// "and" followed by a question word; in Chinese, each sentence that ends with `？`.
pub(super) fn count(task: &str) -> usize {
    let mut n = 0;
    let mut sentence = String::new();
    for c in task.chars() {
        sentence.push(c);
        let end = matches!(c, '?' | '？' | '.' | '!' | '。' | '！' | '\n');
        if end {
            if c == '?' {
                n += 1 + splits(&sentence);
            } else if c == '？' {
                n += 1;
            }
            sentence.clear();
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_questions_of_a_task_are_counted() {
        for (task, n) in [
            ("Which reports sit in the archive directory, and which of them is oldest?", 2),
            ("Which store had the highest takings in shops.txt, and how much were they?", 2),
            (
                "A message came in at inbox/a.txt. Who wrote it, what does it cost in total, and when must it be paid?",
                3,
            ),
            ("How many accounts in staff.json are owners? List them.", 1),
            ("Does the tag in Cargo.toml match the top entry of RELEASES.md?", 1),
            ("Tell me which hosts are offline and their last alert.", 0),
            ("How many admins are there? Who are they?", 2),
            ("这个文件是谁发的？总金额是多少？", 2),
            ("Compare the lists of apples and oranges?", 1),
        ] {
            assert_eq!(count(task), n, "{task}");
        }
    }
}
