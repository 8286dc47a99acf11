//! What a task asks of a list of records, from its words.

/// What a task asks of a list of records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// How many of them (the lines of a text count too).
    Count,
    /// Which of them (objects and rows only).
    Which,
    /// The one with the least, or the most, of something (objects and rows only).
    Least,
    Most,
    /// The sum of a number over them (objects and rows only).
    Total,
    /// The mean of a number over them ("the average load per host"; lines alike count too).
    Average,
    /// What share of them, as a percentage (the lines of a text count too).
    Share,
    /// How many different values of something they hold (the lines of a text count too).
    Distinct,
    /// The last of the ones the task names ("which was the last failure"; lines alike count too).
    Last,
}

/// What `task` asks, from its words: a superlative first ("which warehouse has the least
/// stock" picks one), then a share or a number of different values, then a count, then
/// "which ... are" or "which <plural noun>", then a total
/// ("the total of the amounts": the 1.5B model added 1200, 350, 800 and 150 to 3950).
pub(crate) fn ask_of(task: &str) -> Option<Ask> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has = |w: &str| words.contains(&w);
    let phrase = |p: &str| lower.contains(p);
    const LEAST: [&str; 11] = [
        "least", "lowest", "smallest", "fewest", "minimum", "cheapest", "shortest", "coldest", "slowest", "oldest",
        "earliest",
    ];
    const MOST: [&str; 12] = [
        "highest", "largest", "biggest", "greatest", "maximum", "longest", "warmest", "hottest", "fastest", "busiest",
        "most", "newest",
    ];
    const ZH_LEAST: [&str; 7] = ["最少", "最低", "最小", "最便宜", "最短", "最早", "最先"];
    const ZH_MOST: [&str; 5] = ["最多", "最高", "最大", "最贵", "最长"];
    if LEAST.iter().any(|w| has(w)) || ZH_LEAST.iter().any(|w| phrase(w)) || first_to_come(&words) {
        return Some(Ask::Least);
    }
    if MOST.iter().any(|w| has(w)) || ZH_MOST.iter().any(|w| phrase(w)) {
        return Some(Ask::Most);
    }
    if last_asked(&lower) {
        return Some(Ask::Last);
    }
    // "An average latency": the 1.5B model answered 100 for 120, 80, 200 and 100.
    if ["average", "mean", "avg"].iter().any(|w| has(w)) || phrase("平均") {
        return Some(Ask::Average);
    }
    // An amount in Chinese says 多少 too ("总额是多少", "销售额一共是多少"): the amount's word decides.
    let zh_sum = ["一共", "总共", "加起来"].iter().any(|p| phrase(p)) && lower.contains('额');
    if zh_sum || ["总额", "总和", "合计", "总计", "总金额"].iter().any(|p| phrase(p)) {
        return Some(Ask::Total);
    }
    // A share or a number of different values is asked with a count's words ("how many
    // different client IPs"): their own words decide. The 1.5B model answered 40% for 2 of
    // 10 requests, and 5 different addresses for 3 (bench/README.md, stop 39).
    const SHARE: [&str; 8] = [
        "what percentage",
        "what percent",
        "which percentage",
        "what share",
        "what fraction",
        "what proportion",
        "percentage of",
        "share of the",
    ];
    if SHARE.iter().any(|p| phrase(p)) || ["百分比", "占比", "百分之几", "比例是多少"].iter().any(|p| phrase(p))
    {
        return Some(Ask::Share);
    }
    let different = ["different", "distinct", "unique"].iter().any(|w| phrase(&format!("how many {w}")))
        || (phrase("不同的") && ["多少", "几个", "几种"].iter().any(|p| phrase(p)));
    if different {
        return Some(Ask::Distinct);
    }
    // "How many seconds in all did the jobs take": a unit of measure with a word of adding
    // up is a total, not a count of lines (the 1.5B model added 184, 97, 203 and 176 to 750).
    let summed = ["together", "total", "altogether", "combined", "sum", "all"].iter().any(|w| has(w))
        || ["一共", "总共", "加起来"].iter().any(|p| phrase(p));
    let unit = words.windows(3).any(|w| w[0] == "how" && w[1] == "many" && super::phrase::is_unit(w[2]));
    if summed && unit {
        return Some(Ask::Total);
    }
    if ["how many", "number of", "count the"].iter().any(|p| phrase(p))
        || ["多少", "几个", "几条", "几次", "几行", "行数", "条数", "个数", "次数", "数一下", "数一数"]
            .iter()
            .any(|p| phrase(p))
    {
        return Some(Ask::Count);
    }
    // "Which contracts expire ...": a plural noun after "which" asks for several.
    let plural = |w: &&str| w.len() > 3 && w.ends_with('s') && !["ss", "us", "is"].iter().any(|e| w.ends_with(e));
    let which_plural = words.windows(2).any(|p| p[0] == "which" && (plural(&p[1]) || p[1] == "of"));
    let which = has("which") && (which_plural || ["are", "were", "have", "had"].iter().any(|w| has(w)));
    if which || phrase("name them") || phrase("哪些") {
        return Some(Ask::Which);
    }
    let total = ["total", "sum", "altogether", "combined"].iter().any(|w| has(w)) || phrase("add up");
    if total || ["总共", "一共"].iter().any(|p| phrase(p)) {
        return Some(Ask::Total);
    }
    None
}

/// Whether a question asks which comes first in time among things that expire, fall due or
/// renew ("which licence expires first", "what is due next"): the earliest date, which the
/// 1.5B model took to be the one with the most days left.
fn first_to_come(words: &[&str]) -> bool {
    const EVENTS: [&str; 12] =
        ["expire", "expires", "expiring", "due", "renew", "renews", "ends", "end", "runs", "run", "lapse", "lapses"];
    let asked = words.iter().any(|w| ["which", "what", "who"].contains(w));
    asked
        && words.iter().any(|w| EVENTS.contains(w))
        && words.iter().any(|w| ["first", "soonest", "next", "sooner"].contains(w))
}

/// Whether a question asks for the last of something: "which was the last failure", "when was the
/// latest deploy" (the 1.5B model named the first of two ERROR lines, bench/README.md, stop 39).
/// Not a span ("the last 3", "last week") or a line of a file (read in part, `grounding.rs`), not
/// a commit (a git log is not lines alike), and not under a condition ("if the last backup ...").
fn last_asked(lower: &str) -> bool {
    const NOT: [&str; 17] = [
        "few", "week", "weeks", "day", "days", "hour", "hours", "month", "months", "year", "night", "time", "line",
        "lines", "commit", "commits", "one",
    ];
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    if words.iter().any(|w| ["if", "unless", "whether", "otherwise"].contains(w)) {
        return false;
    }
    // "the last X" after a question word; "their last error" is each one's, not the last one.
    words.windows(3).enumerate().any(|(at, run)| {
        let asked = words[..at].iter().any(|w| ["what", "which", "when", "who"].contains(w));
        asked
            && run[0] == "the"
            && ["last", "latest"].contains(&run[1])
            && !NOT.contains(&run[2])
            && !run[2].chars().all(|c| c.is_ascii_digit())
            && !["two", "three", "four", "five", "ten"].contains(&run[2])
    })
}
