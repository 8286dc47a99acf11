//! How the pages write times, durations and numbers: short, in the
//! engine's zone, for a person reading them over coffee.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// `2025-03-01 09:00` in `zone`.
pub fn local(t: DateTime<Utc>, zone: &Tz) -> String {
    t.with_timezone(zone).format("%Y-%m-%d %H:%M").to_string()
}

/// `2025-03-01 09:00:05 +01:00` in `zone`: for a title or a run's details.
pub fn local_full<Z: TimeZone>(t: DateTime<Utc>, zone: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    t.with_timezone(zone).format("%Y-%m-%d %H:%M:%S %:z").to_string()
}

/// `3 min ago`, `in 20 s`, `now`: how far `t` is from `now`, in the past or the future, so a
/// fire 20 s ahead never reads as if it had happened.
pub fn relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (t - now).num_seconds();
    let span = span(secs.unsigned_abs());
    match secs {
        0 => "now".to_string(),
        s if s < 0 => format!("{span} ago"),
        _ => format!("in {span}"),
    }
}

/// A span in its largest unit, rounded to the nearest: `45 s`, `12 min`, `3 h`, `2 d`; 150 s
/// is `3 min` and 3,570 s `1 h`, not `2 min` and `59 min`.
fn span(secs: u64) -> String {
    let nearest = |unit: u64| (secs + unit / 2) / unit;
    if secs < 60 {
        format!("{secs} s")
    } else if nearest(60) < 60 {
        format!("{} min", nearest(60))
    } else if nearest(3600) < 24 {
        format!("{} h", nearest(3600))
    } else {
        format!("{} d", nearest(86_400))
    }
}

/// A duration in milliseconds: `850 ms`, `12.3 s`, `4 min 03 s`, `1 h 02 min`.
pub fn duration_ms(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000),
        _ => format!("{} h {:02} min", ms / 3_600_000, (ms % 3_600_000) / 60_000),
    }
}

/// An axis label for a duration in milliseconds: `0`, `500 ms`, `30 s`,
/// `5 min`, `1 h 30 min`.
pub fn duration_tick(ms: u64) -> String {
    match ms {
        0 => "0".to_string(),
        1..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{} s", trim_zero(format!("{:.1}", ms as f64 / 1000.0))),
        60_000..3_600_000 if ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        60_000..3_600_000 => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
        _ if ms % 3_600_000 == 0 => format!("{} h", ms / 3_600_000),
        _ => format!("{} h {} min", ms / 3_600_000, (ms % 3_600_000) / 60_000),
    }
}

/// How long a run took, if it started and finished.
pub fn took(started: Option<DateTime<Utc>>, finished: Option<DateTime<Utc>>) -> Option<u64> {
    let (a, b) = (started?, finished?);
    u64::try_from((b - a).num_milliseconds()).ok()
}

/// `12,345`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A compact count for chart labels: `950`, `12k`, `3.4M`.
pub fn compact(n: f64) -> String {
    match n {
        n if n >= 1e6 => trim_zero(format!("{:.1}", n / 1e6)) + "M",
        n if n >= 1e3 => trim_zero(format!("{:.1}", n / 1e3)) + "k",
        n => format!("{}", n.round()),
    }
}

fn trim_zero(s: String) -> String {
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// The first line of `text`, cut to `max` characters with an ellipsis.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max).collect::<String>())
    } else {
        line.to_string()
    }
}

/// `text` as indented JSON if it is JSON, else as it is.
pub fn pretty_json(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_string())
}

/// `timed_out` → `timed out`.
pub fn words(status: &str) -> String {
    status.replace('_', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_ms(0), "0 ms");
        assert_eq!(duration_ms(850), "850 ms");
        assert_eq!(duration_ms(12_340), "12.3 s");
        assert_eq!(duration_ms(243_000), "4 min 03 s");
        assert_eq!(duration_ms(3_720_000), "1 h 02 min");
        let ticks: Vec<String> =
            [0, 250, 2500, 30_000, 300_000, 90_000, 5_400_000, 7_200_000].map(duration_tick).into();
        assert_eq!(ticks, ["0", "250 ms", "2.5 s", "30 s", "5 min", "1 min 30 s", "1 h 30 min", "2 h"]);
    }

    #[test]
    fn relative_times_name_the_direction() {
        let now = DateTime::parse_from_rfc3339("2025-03-01T12:00:00Z").unwrap().with_timezone(&Utc);
        let at = |s: i64| now + chrono::Duration::seconds(s);
        assert_eq!(relative(at(20), now), "in 20 s", "a fire ahead reads as ahead");
        assert_eq!(relative(at(-20), now), "20 s ago");
        assert_eq!(relative(at(0), now), "now");
        assert_eq!(relative(at(150), now), "in 3 min", "rounded to the nearest minute");
        assert_eq!(relative(at(-600), now), "10 min ago");
        assert_eq!(relative(at(3570), now), "in 1 h", "59.5 min is an hour, not 59 min");
        assert_eq!(relative(at(7200), now), "in 2 h");
        assert_eq!(relative(at(-3 * 86_400), now), "3 d ago");
    }

    #[test]
    fn counts_have_separators_and_compact_labels() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(compact(950.0), "950");
        assert_eq!(compact(12_000.0), "12k");
        assert_eq!(compact(3_460_000.0), "3.5M");
    }

    #[test]
    fn first_line_skips_blank_lines_and_cuts() {
        assert_eq!(first_line("\n  disk full\nmore", 80), "disk full");
        assert_eq!(first_line("abcdef", 3), "abc…");
    }

    #[test]
    fn local_times_are_in_the_zone() {
        let t = DateTime::parse_from_rfc3339("2025-07-01T07:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(local(t, &chrono_tz::Europe::Berlin), "2025-07-01 09:00");
        assert_eq!(local_full(t, &chrono_tz::Asia::Shanghai), "2025-07-01 15:00:00 +08:00");
        assert_eq!(pretty_json(r#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(pretty_json("not json"), "not json");
    }
}
