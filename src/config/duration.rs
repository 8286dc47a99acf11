//! Human durations as written in YAML: `90s`, `10m`, `2h`, `1d`, `1h30m`, `500ms`.

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
#[error("invalid duration `{input}`: {reason}; write a number with a unit, e.g. 90s, 10m, 2h, 1d or 1h30m")]
pub struct DurationError {
    input: String,
    reason: &'static str,
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| DurationError { input: s.to_string(), reason };
        let text = s.trim();
        if text.is_empty() {
            return Err(err("it is empty"));
        }
        let mut total: u128 = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            if digits == 0 {
                return Err(err("expected a number"));
            }
            let n: u128 = rest[..digits].parse().map_err(|_| err("the number is too large"))?;
            rest = &rest[digits..];
            let unit_len = rest.chars().take_while(char::is_ascii_alphabetic).count();
            if unit_len == 0 {
                return Err(err("a unit is missing"));
            }
            let millis: u128 = match &rest[..unit_len] {
                "ms" => 1,
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                "w" => 604_800_000,
                _ => return Err(err("unknown unit (use ms, s, m, h, d or w)")),
            };
            rest = rest[unit_len..].trim_start();
            total = total
                .checked_add(n.checked_mul(millis).ok_or_else(|| err("it is too long"))?)
                .ok_or_else(|| err("it is too long"))?;
        }
        let millis = u64::try_from(total).map_err(|_| err("it is too long"))?;
        Ok(Duration(std::time::Duration::from_millis(millis)))
    }
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
                f.write_str("a duration such as 90s, 10m, 2h or 1d")
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
            "description": "A duration with a unit: 500ms, 90s, 10m, 2h, 1d, 1h30m",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ];
        for (text, ms) in cases {
            assert_eq!(text.parse::<Duration>().map(|d| d.0.as_millis()), Ok(ms), "{text}");
        }
    }

    #[test]
    fn refuses_missing_or_unknown_units() {
        assert_eq!(
            "30".parse::<Duration>().unwrap_err().to_string(),
            "invalid duration `30`: a unit is missing; write a number with a unit, e.g. 90s, 10m, 2h, 1d or 1h30m"
        );
        assert!("5x".parse::<Duration>().unwrap_err().to_string().contains("unknown unit"));
        assert!("m".parse::<Duration>().unwrap_err().to_string().contains("expected a number"));
        assert!("".parse::<Duration>().is_err());
        assert!("99999999999999999999999d".parse::<Duration>().is_err());
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(Duration::from_secs(5400).to_string(), "1h30m");
        assert_eq!(Duration::from_secs(0).to_string(), "0s");
    }
}
