//! The answer in a reply to a request that asks for it after a marker (`ANSWER:`), without the
//! line of values the worked comparisons teach to write first. Kept apart from `evidence.rs`,
//! which asks, and `comparison.rs`, which checks copies, so neither imports the other.

use std::borrow::Cow;

/// The answer in a reply to the request of `evidence::messages`: what follows the last line that starts
/// with the marker it asks for (`ANSWER:`, `答案：`), or, when nothing follows it, what precedes
/// it; the whole reply when it has no marker. Marker lines one after the other are one answer,
/// a list written with a marker on each line ("ANSWER: DiskAlmostFull, db-2" then "ANSWER:
/// CertificateExpiring, api-gw"): all of them, without the markers. A first line of values
/// written the way the comparison examples show is left out of the last two where more follows
/// it.
pub(super) fn answer_of(reply: &str) -> Cow<'_, str> {
    const MARKERS: [&str; 5] = ["ANSWER:", "Answer:", "答案：", "答案:", "**ANSWER:**"];
    // Of each marker line: where the line starts, where its marker starts and ends, where the
    // line ends.
    let mut found: Vec<(usize, usize, usize, usize)> = Vec::new();
    let mut at = 0;
    for line in reply.split_inclusive('\n') {
        let lead = line.len() - line.trim_start().len();
        if let Some(m) = MARKERS.iter().find(|m| line.trim_start().starts_with(**m)) {
            found.push((at, at + lead, at + lead + m.len(), at + line.len()));
        }
        at += line.len();
    }
    let Some(&(_, start, end, _)) = found.last() else {
        return Cow::Borrowed(without_values(reply));
    };
    // The run of marker lines the last one ends: each starts where the one before it ended.
    let mut first = found.len() - 1;
    while first > 0 && found[first - 1].3 == found[first].0 {
        first -= 1;
    }
    if first < found.len() - 1 {
        let items: Vec<&str> =
            found[first..].iter().map(|&(_, _, e, l)| reply[e..l].trim()).filter(|t| !t.is_empty()).collect();
        let rest = reply[found[found.len() - 1].3..].trim();
        let mut answer = items.join("\n");
        if !rest.is_empty() {
            answer = format!("{answer}\n{rest}");
        }
        return Cow::Owned(answer);
    }
    match reply[end..].trim() {
        "" => Cow::Borrowed(without_values(&reply[..start])),
        after => Cow::Borrowed(after),
    }
}

/// The reply without the line of values that the examples teach to write first, where
/// something else remains.
pub(super) fn without_values(reply: &str) -> &str {
    match reply.trim_start().split_once('\n') {
        Some((first, rest)) if first.starts_with("Values:") && !rest.trim().is_empty() => rest.trim(),
        _ => reply.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_what_follows_the_marker() {
        assert_eq!(answer_of("ANSWER: North, 182000"), "North, 182000");
        assert_eq!(answer_of("ANSWER:\n- two\n- three\n"), "- two\n- three");
        assert_eq!(answer_of("North: 182000\nSouth: 97000\n\nANSWER: North"), "North", "what precedes is not output");
        assert_eq!(answer_of("17\n\nANSWER:"), "17", "nothing after the marker: what precedes it");
        assert_eq!(answer_of("答案：正常"), "正常");
        assert_eq!(answer_of("  **ANSWER:** 3"), "3");
        assert_eq!(answer_of("Answer: 3\nOn second thought:\nANSWER: 4"), "4", "the last marker counts");
        assert_eq!(
            answer_of("Values: a, b.\nANSWER: DiskAlmostFull, db-2\nANSWER: CertificateExpiring, api-gw\n"),
            "DiskAlmostFull, db-2\nCertificateExpiring, api-gw",
            "marker lines one after the other are one list"
        );
        assert_eq!(
            answer_of("The ANSWER: is inside a line\n"),
            "The ANSWER: is inside a line",
            "only at a line's start"
        );
        assert_eq!(answer_of(" 3 lines \n"), "3 lines", "no marker: the whole reply");
        assert_eq!(answer_of("ANSWER:"), "", "nothing at all: empty, asked again as an empty reply");
        assert_eq!(answer_of("Values: a 1, b 2.\nb is higher.\nANSWER:"), "b is higher.", "the values are not output");
        assert_eq!(answer_of("Values: a 1, b 2.\nb is higher."), "b is higher.");
    }

    #[test]
    fn the_line_of_values_is_left_out_of_the_answer() {
        assert_eq!(without_values("Values: a 1, b 2.\nb is higher."), "b is higher.");
        assert_eq!(without_values("Values: a 1, b 2. b is higher."), "Values: a 1, b 2. b is higher.", "nothing else");
        assert_eq!(without_values("b is higher.\n"), "b is higher.");
    }
}
