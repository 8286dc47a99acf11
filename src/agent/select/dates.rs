//! A date the task names, compared by the engine. Asked which tasks are "due before December 1,
//! 2026" over lines that say `(due 2026-11-30)`, the 1.5B model wrote `"2026-12-30" in line`
//! twice, and told the date as the lines write it and how to compare, `'2026-12-01' in line`
//! twice (bench/README.md, stop 40): it does not write a comparison of dates. Where the task
//! puts a comparison word right before its date ("before", "after", "by", "since", "earlier
//! than", 之前, 之后) and every record holds one `YYYY-MM-DD` date, the engine keeps the records
//! whose date is on the asked side, without a model call. Otherwise the code request says the
//! task's date as the records write theirs ([`hint`]).

use std::sync::LazyLock;

use crate::config::Language;
use regex::Regex;

static ISO: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})\b").ok());
static MONTH_FIRST: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b").ok());
static DAY_FIRST: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]{3,9})\.?,?\s+(\d{4})\b").ok());
static ZH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]").ok());

/// The month a name or its first three letters give, 1 to 12.
fn month(name: &str) -> Option<u32> {
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = name.to_lowercase();
    let at = NAMES.iter().position(|m| *m == lower || (lower.len() >= 3 && m.starts_with(&lower)))?;
    u32::try_from(at + 1).ok()
}

/// The first date the task writes in words or figures, as the task wrote it and as `YYYY-MM-DD`.
fn task_date(task: &str) -> Option<(String, String)> {
    task_date_at(task).map(|(written, iso, _)| (written, iso))
}

/// [`task_date`], with where the date begins in `task` and where it ends.
fn task_date_at(task: &str) -> Option<(String, String, std::ops::Range<usize>)> {
    let valid = |y: &str, m: u32, d: &str| {
        let d: u32 = d.parse().ok()?;
        chrono::NaiveDate::from_ymd_opt(y.parse().ok()?, m, d).map(|date| date.format("%Y-%m-%d").to_string())
    };
    let at = |c: &regex::Captures<'_>| c.get(0).map_or(0..0, |m| m.range());
    let found = [
        MONTH_FIRST
            .as_ref()?
            .captures(task)
            .and_then(|c| Some((c[0].to_string(), valid(&c[3], month(&c[1])?, &c[2])?, at(&c)))),
        DAY_FIRST
            .as_ref()?
            .captures(task)
            .and_then(|c| Some((c[0].to_string(), valid(&c[3], month(&c[2])?, &c[1])?, at(&c)))),
        ZH.as_ref()?
            .captures(task)
            .and_then(|c| Some((c[0].to_string(), valid(&c[1], c[2].parse().ok()?, &c[3])?, at(&c)))),
        ISO.as_ref()?
            .captures(task)
            .and_then(|c| Some((c[0].to_string(), valid(&c[1], c[2].parse().ok()?, &c[3])?, at(&c)))),
    ];
    found.into_iter().flatten().next()
}

/// Which side of the task's date it asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    ByOrBefore,
    After,
    OnOrAfter,
}

/// The side the words right before (English) or right after (Chinese) the task's date ask.
fn side(task: &str, at: &std::ops::Range<usize>) -> Option<Side> {
    let before = task[..at.start].trim_end().to_lowercase();
    let after = task[at.end..].trim_start();
    const EN: [(&str, Side); 9] = [
        ("before", Side::Before),
        ("earlier than", Side::Before),
        ("prior to", Side::Before),
        ("no later than", Side::ByOrBefore),
        ("by", Side::ByOrBefore),
        ("until", Side::ByOrBefore),
        ("after", Side::After),
        ("later than", Side::After),
        ("since", Side::OnOrAfter),
    ];
    let word_end = |w: &str| {
        before.ends_with(w) && before[..before.len() - w.len()].chars().next_back().is_none_or(|c| !c.is_alphanumeric())
    };
    if let Some((_, side)) = EN.iter().find(|(w, _)| word_end(w)) {
        return Some(*side);
    }
    const ZH: [(&str, Side); 4] =
        [("之前", Side::Before), ("以前", Side::Before), ("之后", Side::After), ("以后", Side::After)];
    ZH.iter().find(|(w, _)| after.starts_with(w)).map(|(_, s)| *s)
}

/// The engine's selection of records by the task's date: the phrase it compared by (`before
/// 2026-12-01`) and a flag per record (a record without a date, a heading, is not kept). `None`
/// when the task puts no comparison word at its date, fewer than two records hold a
/// `YYYY-MM-DD` date, or one holds more than one.
pub(super) fn by_date(task: &str, records: &[String]) -> Option<(String, Vec<bool>)> {
    let (_, iso, at) = task_date_at(task)?;
    let side = side(task, &at)?;
    let re = ISO.as_ref()?;
    let mut dated = 0;
    let flags = records
        .iter()
        .map(|r| {
            let mut dates = re.find_iter(r);
            let Some(date) = dates.next().map(|d| d.as_str()) else { return Some(false) };
            dated += 1;
            dates.next().is_none().then(|| match side {
                Side::Before => date < iso.as_str(),
                Side::ByOrBefore => date <= iso.as_str(),
                Side::After => date > iso.as_str(),
                Side::OnOrAfter => date >= iso.as_str(),
            })
        })
        .collect::<Option<Vec<bool>>>()?;
    if dated < 2 {
        return None;
    }
    let word = match side {
        Side::Before => "before",
        Side::ByOrBefore => "on or before",
        Side::After => "after",
        Side::OnOrAfter => "on or after",
    };
    Some((format!("{word} {iso}"), flags))
}

/// The sentence for the code request when the task names a date and the records write dates as
/// `YYYY-MM-DD`; `None` otherwise.
pub(super) fn hint(task: &str, shown: &str) -> Option<String> {
    let (written, iso) = task_date(task)?;
    ISO.as_ref()?.is_match(shown).then(|| {
        let same = if written == iso { String::new() } else { format!(" ({written})") };
        format!(
            "The task's date{same} is '{iso}' as the records write dates. Dates written YYYY-MM-DD compare as text: \
             find the record's date with `re.search(r\"\\d{{4}}-\\d{{2}}-\\d{{2}}\", ...)` and compare it with '{iso}'."
        )
    })
}

/// For a pick of the first or the last in time ("which certificate expires first", "the oldest
/// backup", "the newest release"), where each of `lines` holds exactly one `YYYY-MM-DD` date
/// (with a time or not): the line with the earliest date (the latest, `most`) and that date as
/// the number `YYYYMMDDhhmmss`. Asked which certificate expires first, the 1.5B model's `value`
/// returned the days since each date, and the latest one was named (bench/README.md, stop 42).
pub(super) fn by_time(task: &str, lines: &[String], most: bool) -> Option<(usize, f64)> {
    const TIME: [&str; 10] =
        ["earliest", "oldest", "first", "soonest", "sooner", "next", "newest", "latest", "recent", "youngest"];
    const ZH_TIME: [&str; 4] = ["最早", "最先", "最新", "最晚"];
    let lower = task.to_lowercase();
    let timed = lower.split(|c: char| !c.is_alphanumeric()).any(|w| TIME.contains(&w))
        || ZH_TIME.iter().any(|w| task.contains(w));
    if !timed || lines.len() < 2 {
        return None;
    }
    static STAMP: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?").ok());
    let stamp = STAMP.as_ref()?;
    let mut best: Option<(usize, f64)> = None;
    for (at, line) in lines.iter().enumerate() {
        let mut found = stamp.captures_iter(line);
        let c = found.next()?;
        if found.next().is_some() {
            return None;
        }
        let part = |i: usize| c.get(i).map_or(Some(0.0), |m| m.as_str().parse::<f64>().ok());
        let (y, mo, d, h, mi, s) = (part(1)?, part(2)?, part(3)?, part(4)?, part(5)?, part(6)?);
        let value = ((((y * 100.0 + mo) * 100.0 + d) * 100.0 + h) * 100.0 + mi) * 100.0 + s;
        if best.is_none_or(|(_, b)| if most { value > b } else { value < b }) {
            best = Some((at, value));
        }
    }
    best
}

/// For a task that asks in how many days a date comes ("expires first, and in how many
/// days"), the days from `today` to the date the engine picked (`value`: the date as the
/// number `YYYYMMDDhhmmss`, `harness.rs`), as a sentence of the note; `None` when the task does
/// not ask for days or the number is no date.
pub(super) fn days_note(lang: Language, task: &str, value: f64, today: chrono::NaiveDate) -> Option<String> {
    let lower = task.to_lowercase();
    let asks = ["how many days", "in how many days", "how long until", "how long before", "days left", "days until"]
        .iter()
        .any(|p| lower.contains(p))
        || ["多少天", "几天"].iter().any(|p| task.contains(p));
    if !asks || !value.is_finite() || value < 0.0 {
        return None;
    }
    let whole = value as i64 / 1_000_000;
    let (y, m, d) = (whole / 10_000, (whole / 100) % 100, whole % 100);
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, u32::try_from(m).ok()?, u32::try_from(d).ok()?)?;
    let days = (date - today).num_days();
    let iso = date.format("%Y-%m-%d");
    let today = today.format("%Y-%m-%d");
    Some(match (lang, days) {
        (Language::En, 0..) => format!("({iso} is {days} days after today, {today}.)"),
        (Language::En, _) => format!("({iso} was {} days before today, {today}.)", -days),
        (Language::Zh, 0..) => format!("（{iso} 在今天 {today} 之后 {days} 天。）"),
        (Language::Zh, _) => format!("（{iso} 在今天 {today} 之前 {} 天。）", -days),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_in_words_is_written_as_the_records_write_theirs() {
        let lines = "- Renew TLS certificate (due 2026-11-30)\n- Rotate API keys (due 2027-01-15)";
        let said = hint("Which tasks in tasks.md are due before December 1, 2026?", lines).unwrap();
        assert!(
            said.starts_with("The task's date (December 1, 2026) is '2026-12-01' as the records write dates."),
            "{said}"
        );
        assert!(said.contains(r#"re.search(r"\d{4}-\d{2}-\d{2}", ...)"#), "{said}");
        for (task, iso) in [
            ("Which contracts end after 3rd Jan 2027?", "2027-01-03"),
            ("哪些任务在 2026年12月1日 之前到期？", "2026-12-01"),
            ("Which invoices are older than 2026-10-31?", "2026-10-31"),
            ("Which certs expire before Sept. 9, 2026?", "2026-09-09"),
        ] {
            assert!(hint(task, lines).is_some_and(|h| h.contains(&format!("'{iso}'"))), "{task}");
        }
    }

    #[test]
    fn the_engine_keeps_the_records_on_the_side_of_the_date_the_task_asks() {
        let lines: Vec<String> =
            ["- Renew TLS (due 2026-11-30)", "- Rotate keys (due 2027-01-15)", "- Pay (due 2026-12-01)"]
                .map(String::from)
                .to_vec();
        let task = "Which tasks in tasks.md are due before December 1, 2026?";
        assert_eq!(by_date(task, &lines), Some(("before 2026-12-01".into(), vec![true, false, false])));
        let by = "Which tasks are due by 1 Dec 2026?";
        assert_eq!(by_date(by, &lines), Some(("on or before 2026-12-01".into(), vec![true, false, true])));
        let after = "Which contracts end after 2026-12-01?";
        assert_eq!(by_date(after, &lines).map(|(_, f)| f), Some(vec![false, true, false]));
        assert_eq!(
            by_date("哪些任务在2026年12月1日之前到期？", &lines).map(|(_, f)| f),
            Some(vec![true, false, false])
        );
        assert_eq!(by_date("What was due on December 1, 2026?", &lines), None, "no comparison word");
        assert_eq!(by_date("Which are due before December 1, 2026?", &["- no date".to_string()]), None);
        let headed: Vec<String> = [vec!["# Tasks".to_string()], lines.clone()].concat();
        assert_eq!(
            by_date(task, &headed).map(|(_, f)| f),
            Some(vec![false, true, false, false]),
            "a heading is no task"
        );
        let two = ["from 2026-11-01 to 2026-11-30".to_string()];
        assert_eq!(by_date(task, &two), None, "two dates in a record: which one is not known");
        assert_eq!(by_date("Which were filed nearby December 1, 2026?", &lines), None, "`by` as a word only");
    }

    #[test]
    fn the_patterns_compile() {
        assert!(ISO.is_some() && MONTH_FIRST.is_some() && DAY_FIRST.is_some() && ZH.is_some());
    }

    #[test]
    fn no_date_or_no_dates_in_the_records_give_no_hint() {
        assert_eq!(hint("Which tasks are due soon?", "a (due 2026-11-30)"), None);
        assert_eq!(hint("Which tasks are due before December 1, 2026?", "a (due 30/11/2026)"), None);
        assert_eq!(hint("Which tasks are due before February 30, 2026?", "a (due 2026-11-30)"), None, "no such day");
        assert_eq!(hint("Ship 3 boxes 2026", "a 2026-11-30"), None);
    }
}
