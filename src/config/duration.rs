//! Human durations as written in YAML: `90s`, `10m`, `10min`, `2h`, `1h 30m`, `5 minutes`,
//! `2 days`, `500ms`.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration read from configuration. A bare number is refused: `30` could
/// mean seconds or minutes, so the unit is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const fn from_secs(secs: u64) -> Self {
        Duration(std::time::Duration::from_secs(secs))
    }

    pub fn get(self) -> std::time::Duration {
        self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration `{input}`: {reason}; write a number with a unit, e.g. 90s, 10m, 10min, 2h, 1h 30m or 2 days")]
pub struct DurationError {
    input: String,
    reason: String,
}

/// The units a duration may use, each with its length in milliseconds: the short forms
/// (`ms`, `s`, `m`, `h`, `d`, `w`) and the words people write (`min`, `minutes`, `hrs`, `days`).
const UNITS: [(&[&str], u128); 6] = [
    (&["ms", "msec", "msecs", "millisecond", "milliseconds"], 1),
    (&["s", "sec", "secs", "second", "seconds"], 1_000),
    (&["m", "min", "mins", "minute", "minutes"], 60_000),
    (&["h", "hr", "hrs", "hour", "hours"], 3_600_000),
    (&["d", "day", "days"], 86_400_000),
    (&["w", "wk", "wks", "week", "weeks"], 604_800_000),
];

/// The length in milliseconds of `unit`, matched without regard to case except `M`, which
/// some tools read as months.
fn unit_millis(unit: &str) -> Option<u128> {
    if unit == "M" {
        return None;
    }
    let unit = unit.to_ascii_lowercase();
    UNITS.iter().find(|(names, _)| names.contains(&unit.as_str())).map(|(_, ms)| *ms)
}

impl FromStr for Duration {
    type Err = DurationError;

    /// One or more parts, each a number (decimals allowed: `1.5h`) and a unit, with optional
    /// spaces between them: `90s`, `10min`, `1h30m`, `1h 30m`, `5 minutes`, `2 days`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| DurationError { input: s.to_string(), reason: reason.to_string() };
        let text = s.trim();
        if text.is_empty() {
            return Err(err("it is empty"));
        }
        let mut total: u128 = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            if digits == 0 || rest[..digits].chars().all(|c| c == '.') {
                return Err(err("expected a number"));
            }
            let (whole, fraction) = rest[..digits].split_once('.').unwrap_or((&rest[..digits], ""));
            if fraction.contains('.') {
                return Err(err("the number is malformed"));
            }
            rest = rest[digits..].trim_start();
            let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
            if unit_len == 0 {
                return Err(err("a unit is missing"));
            }
            let unit = &rest[..unit_len];
            let millis = unit_millis(unit)
                .ok_or_else(|| err(&format!("unknown unit `{unit}` (use ms, s, min, h, d or w, or their words)")))?;
            rest = rest[unit_len..].trim_start();
            let part = part_millis(whole, fraction, millis).ok_or_else(|| err("it is too long"))?;
            total = total.checked_add(part).ok_or_else(|| err("it is too long"))?;
        }
        let millis = u64::try_from(total).map_err(|_| err("it is too long"))?;
        Ok(Duration(std::time::Duration::from_millis(millis)))
    }
}

/// `whole.fraction` units of `millis` each, in whole milliseconds (rounded down); `None` when
/// it overflows.
fn part_millis(whole: &str, fraction: &str, millis: u128) -> Option<u128> {
    let whole: u128 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut total = whole.checked_mul(millis)?;
    let mut scale = millis;
    for digit in fraction.chars().take(9) {
        scale /= 10;
        total = total.checked_add(u128::from(digit.to_digit(10)?) * scale)?;
    }
    Some(total)
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        let units = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1_000, "s"), (1, "ms")];
        if ms == 0 {
            return write!(f, "0s");
        }
        let mut rest = ms;
        for (size, unit) in units {
            if rest >= size {
                write!(f, "{}{unit}", rest / size)?;
                rest %= size;
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as 90s, 10min, 2h or 2 days")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Duration, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Duration, E> {
                Err(E::custom(format!("invalid duration `{v}`: a unit is missing; write e.g. {v}s or {v}m")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Duration, E> {
                Err(E::custom(format!("invalid duration `{v}`: a unit is missing; write e.g. {v}s or {v}m")))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with a unit: 500ms, 90s, 10m, 10min, 2h, 1h 30m, 5 minutes, 2 days",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(text: &str) -> Result<u128, DurationError> {
        text.parse::<Duration>().map(|d| d.0.as_millis())
    }

    #[test]
    fn parses_units_and_compounds() {
        let cases = [
            ("90s", 90_000),
            ("10m", 600_000),
            ("2h", 7_200_000),
            ("1d", 86_400_000),
            ("1h30m", 5_400_000),
            ("500ms", 500),
            ("1h 5s", 3_605_000),
            ("2w", 1_209_600_000),
        ];
        for (text, ms) in cases {
            assert_eq!(millis(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn parses_what_people_write() {
        let cases = [
            ("10min", 600_000),
            ("1h 30m", 5_400_000),
            ("5 minutes", 300_000),
            ("1 minute", 60_000),
            ("2 days", 172_800_000),
            ("3 hours 15 mins", 11_700_000),
            ("45 sec", 45_000),
            ("1.5h", 5_400_000),
            ("2 Hours", 7_200_000),
            ("1 week", 604_800_000),
            (" 90s ", 90_000),
        ];
        for (text, ms) in cases {
            assert_eq!(millis(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn refuses_missing_or_unknown_units() {
        assert_eq!(
            millis("30").unwrap_err().to_string(),
            "invalid duration `30`: a unit is missing; write a number with a unit, e.g. 90s, 10m, 10min, 2h, 1h 30m or 2 days"
        );
        let unknown = millis("5 fortnights").unwrap_err().to_string();
        assert!(unknown.contains("unknown unit `fortnights` (use ms, s, min, h, d or w"), "{unknown}");
        // `M` means months to some tools: refused rather than read as minutes.
        assert!(millis("5M").unwrap_err().to_string().contains("unknown unit `M`"));
        assert!(millis("m").unwrap_err().to_string().contains("expected a number"));
        assert!(millis("1..5h").unwrap_err().to_string().contains("malformed"));
        assert!(millis("10 minutes and 5s").unwrap_err().to_string().contains("expected a number"));
        assert!(millis("").is_err());
        assert!(millis("99999999999999999999999d").is_err());
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(Duration::from_secs(5400).to_string(), "1h30m");
        assert_eq!(Duration::from_secs(0).to_string(), "0s");
    }
}
