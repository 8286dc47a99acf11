//! A date the task names, compared by the engine. Asked which tasks fall due before a date in
//! words over lines that say `(due 2026-11-30)`, the 1.5B model wrote `"2026-12-30" in line`
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

/// The dates a task keeps: the lowest and the highest (each with whether that date itself is
/// kept), and how the note says it (`a date before 2026-12-01`).
struct Span {
    lo: Option<(String, bool)>,
    hi: Option<(String, bool)>,
    phrase: String,
}

impl Span {
    fn keeps(&self, date: &str) -> bool {
        let above =
            self.lo.as_ref().is_none_or(|(lo, with)| if *with { date >= lo.as_str() } else { date > lo.as_str() });
        let below =
            self.hi.as_ref().is_none_or(|(hi, with)| if *with { date <= hi.as_str() } else { date < hi.as_str() });
        above && below
    }
}

/// The span of a date the task writes after a comparison word.
fn written_span(task: &str) -> Option<Span> {
    let (_, iso, at) = task_date_at(task)?;
    let side = side(task, &at)?;
    let (lo, hi, word) = match side {
        Side::Before => (None, Some((iso.clone(), false)), "before"),
        Side::ByOrBefore => (None, Some((iso.clone(), true)), "on or before"),
        Side::After => (Some((iso.clone(), false)), None, "after"),
        Side::OnOrAfter => (Some((iso.clone(), true)), None, "on or after"),
    };
    Some(Span { lo, hi, phrase: format!("a date {word} {iso}") })
}

/// "In the next 30 days", "within 2 weeks" (of something that expires or falls due), 未来30天.
static COMING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(in|within|over)\s+(?:the\s+)?(next|coming)?\s*(\d{1,3}|a|one|two|three|four|five|six|seven|ten|fourteen|thirty|ninety)\s+(day|week|month)s?\b").ok()
});
static ZH_COMING: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?:未来|接下来|今后)\s*(\d{1,3})\s*天|(\d{1,3})\s*天(?:之内|以内|内)").ok());

/// The span a task gives relative to `today`: what has "already expired" or is "overdue" lies
/// before today; what expires "in the next 30 days" lies from today to 30 days on. `None` when
/// it says neither, or negates the past ("not expired", "still valid").
fn relative_span(task: &str, today: chrono::NaiveDate) -> Option<Span> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let has = |w: &str| words.contains(&w);
    let negated = ["not", "unexpired", "valid", "yet", "haven", "hasn", "isn", "aren", "never"].iter().any(|w| has(w))
        || ["未过期", "没有过期", "没过期", "有效"].iter().any(|w| task.contains(w));
    let past = !negated
        && (["expired", "overdue", "lapsed"].iter().any(|w| has(w))
            || lower.contains("past due")
            || lower.contains("past their")
            || ["已过期", "过期了", "逾期", "已到期", "已经到期", "已经过期"].iter().any(|w| task.contains(w)));
    let today_iso = today.format("%Y-%m-%d").to_string();
    const EVENTS: [&str; 10] =
        ["expire", "expires", "expiring", "due", "renew", "renews", "renewal", "ends", "end", "lapse"];
    let coming = COMING
        .as_ref()
        .and_then(|re| re.captures(task))
        .filter(|c| c.get(2).is_some() || words.iter().any(|w| EVENTS.contains(w)))
        .and_then(|c| {
            let n = crate::agent::count_word::number(&c.get(3)?.as_str().to_lowercase())?;
            match c.get(4)?.as_str().to_lowercase().as_str() {
                "day" => today.checked_add_days(chrono::Days::new(u64::from(n))),
                "week" => today.checked_add_days(chrono::Days::new(u64::from(n) * 7)),
                _ => today.checked_add_months(chrono::Months::new(n)),
            }
        })
        .or_else(|| {
            let c = ZH_COMING.as_ref()?.captures(task)?;
            let n: u64 = c.get(1).or_else(|| c.get(2))?.as_str().parse().ok()?;
            today.checked_add_days(chrono::Days::new(n))
        });
    match (coming, past) {
        (Some(end), false) => {
            let end = end.format("%Y-%m-%d").to_string();
            Some(Span {
                lo: Some((today_iso.clone(), true)),
                hi: Some((end.clone(), true)),
                phrase: format!("a date from today ({today_iso}) to {end}"),
            })
        }
        (Some(end), true) => {
            let end = end.format("%Y-%m-%d").to_string();
            Some(Span { lo: None, hi: Some((end.clone(), true)), phrase: format!("a date on or before {end}") })
        }
        (None, true) => Some(Span {
            lo: None,
            hi: Some((today_iso.clone(), false)),
            phrase: format!("a date before today ({today_iso})"),
        }),
        (None, false) => None,
    }
}

/// Whether the task bounds a date: one it writes after a comparison word, or one relative to
/// today ("already expired", "in the next 30 days").
pub(super) fn bounds(task: &str) -> bool {
    written_span(task).is_some()
        || chrono::NaiveDate::from_ymd_opt(2000, 1, 1).is_some_and(|d| relative_span(task, d).is_some())
}

/// The engine's selection of records by a date: the phrase it compared by (`a date before
/// 2026-12-01`) and a flag per record (a record without a date, a heading, is not kept). The
/// date is one the task writes after a comparison word, or else one its words give relative to
/// `today` ([`relative_span`]). `None` when the task bounds no date, fewer than two records hold
/// a `YYYY-MM-DD` date, or one holds more than one.
pub(super) fn by_date(task: &str, records: &[String], today: chrono::NaiveDate) -> Option<(String, Vec<bool>)> {
    let span = written_span(task).or_else(|| relative_span(task, today))?;
    let re = ISO.as_ref()?;
    let mut dated = 0;
    let flags = records
        .iter()
        .map(|r| {
            let mut dates = re.find_iter(r);
            let Some(date) = dates.next().map(|d| d.as_str()) else { return Some(false) };
            dated += 1;
            dates.next().is_none().then(|| span.keeps(date))
        })
        .collect::<Option<Vec<bool>>>()?;
    (dated >= 2).then_some((span.phrase, flags))
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

/// For a pick of the first or the last in time ("which licence expires first", "the oldest
/// backup", "the newest release"), where each of `lines` holds exactly one `YYYY-MM-DD` date
/// (with a time or not): the line with the earliest date (the latest, `most`) and that date as
/// the number `YYYYMMDDhhmmss`. Asked which of several expiry dates comes first, the 1.5B model's `value`
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

/// For a task that asks in how many days a date comes ("runs out soonest, and in how many
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

    fn day() -> chrono::NaiveDate {
        chrono::NaiveDate::from_ymd_opt(2026, 11, 28).unwrap_or_default()
    }

    #[test]
    fn a_date_in_words_is_written_as_the_records_write_theirs() {
        let lines = "- Update the privacy notice (due 2026-11-30)\n- Purge stale tickets (due 2027-01-15)";
        let said = hint("Which chores in chores.txt are due before 1 December 2026?", lines).unwrap();
        assert!(
            said.starts_with("The task's date (1 December 2026) is '2026-12-01' as the records write dates."),
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
    fn what_expired_or_comes_soon_is_dated_against_today() {
        let rows: Vec<String> =
            ["pkhan,pro,2025-03-01", "tdubois,team,2031-06-30", "lnguyen,pro,2026-11-28", "mg,free,2026-12-20"]
                .map(String::from)
                .to_vec();
        let expired = "Which members of members.csv are expired already?";
        assert_eq!(
            by_date(expired, &rows, day()),
            Some(("a date before today (2026-11-28)".into(), vec![true, false, false, false]))
        );
        assert_eq!(
            by_date("Which invoices are overdue?", &rows, day()).map(|(_, f)| f),
            Some(vec![true, false, false, false])
        );
        assert_eq!(by_date("哪些账号已过期？", &rows, day()).map(|(_, f)| f), Some(vec![true, false, false, false]));
        let soon = "Which accounts expire in the next 30 days?";
        assert_eq!(
            by_date(soon, &rows, day()),
            Some(("a date from today (2026-11-28) to 2026-12-28".into(), vec![false, false, true, true]))
        );
        let weeks = "Which renewals are due within 2 weeks?";
        assert_eq!(by_date(weeks, &rows, day()).map(|(_, f)| f), Some(vec![false, false, true, false]));
        assert_eq!(
            by_date("哪些账号未来30天内到期？", &rows, day()).map(|(_, f)| f),
            Some(vec![false, false, true, true])
        );
        for task in [
            "Which accounts have not expired?",
            "Which accounts are still valid?",
            "Which users logged in within 2 days?",
            "Which accounts are on the pro plan?",
        ] {
            assert_eq!(by_date(task, &rows, day()), None, "{task}");
        }
    }

    #[test]
    fn the_engine_keeps_the_records_on_the_side_of_the_date_the_task_asks() {
        let lines: Vec<String> =
            ["- Renew TLS (due 2026-11-30)", "- Rotate tokens (due 2027-01-15)", "- Pay (due 2026-12-01)"]
                .map(String::from)
                .to_vec();
        let task = "Which chores in chores.txt are due before 1 December 2026?";
        assert_eq!(by_date(task, &lines, day()), Some(("a date before 2026-12-01".into(), vec![true, false, false])));
        let by = "Which tasks are due by 1 Dec 2026?";
        assert_eq!(
            by_date(by, &lines, day()),
            Some(("a date on or before 2026-12-01".into(), vec![true, false, true]))
        );
        let after = "Which contracts end after 2026-12-01?";
        assert_eq!(by_date(after, &lines, day()).map(|(_, f)| f), Some(vec![false, true, false]));
        assert_eq!(
            by_date("哪些任务在2026年12月1日之前到期？", &lines, day()).map(|(_, f)| f),
            Some(vec![true, false, false])
        );
        assert_eq!(by_date("What was due on December 1, 2026?", &lines, day()), None, "no comparison word");
        assert_eq!(by_date("Which are due before 1 December 2026?", &["- no date".to_string()], day()), None);
        let headed: Vec<String> = [vec!["# Tasks".to_string()], lines.clone()].concat();
        assert_eq!(
            by_date(task, &headed, day()).map(|(_, f)| f),
            Some(vec![false, true, false, false]),
            "a heading is no task"
        );
        let two = ["from 2026-11-01 to 2026-11-30".to_string()];
        assert_eq!(by_date(task, &two, day()), None, "two dates in a record: which one is not known");
        assert_eq!(by_date("Which were filed nearby December 1, 2026?", &lines, day()), None, "`by` as a word only");
    }

    #[test]
    fn the_patterns_compile() {
        assert!(ISO.is_some() && MONTH_FIRST.is_some() && DAY_FIRST.is_some() && ZH.is_some());
        assert!(COMING.is_some() && ZH_COMING.is_some());
    }

    #[test]
    fn no_date_or_no_dates_in_the_records_give_no_hint() {
        assert_eq!(hint("Which tasks are due soon?", "a (due 2026-11-30)"), None);
        assert_eq!(hint("Which tasks are due before 1 December 2026?", "a (due 30/11/2026)"), None);
        assert_eq!(hint("Which tasks are due before February 30, 2026?", "a (due 2026-11-30)"), None, "no such day");
        assert_eq!(hint("Ship 3 boxes 2026", "a 2026-11-30"), None);
    }
}
