//! The instant of a one-shot `at`: RFC 3339 with an offset as is, or a local date and time
//! (what a model writes for "tomorrow at 9") in the user's zone.

use chrono::offset::LocalResult;
use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// Why an `at` is not a usable instant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtError {
    #[error("`{0}` is not a date and time; write it as YYYY-MM-DDTHH:MM in the user's zone, e.g. 2026-11-23T09:00")]
    Unreadable(String),
    #[error("{input} does not exist in {zone}: the clocks skip it that day; choose another time")]
    Skipped { input: String, zone: String },
    #[error("{input} has already passed; it is now {now}; give a later time")]
    Past { input: String, now: String },
}

const LOCAL_FORMATS: [&str; 4] = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"];

/// The instant `text` means: with an offset as written, else a local time in `zone` (of two
/// instants in a fall-back hour, the first). It must lie after `now`.
pub fn parse_at(text: &str, zone: Tz, now: DateTime<Utc>) -> Result<DateTime<FixedOffset>, AtError> {
    let input = text.trim();
    let at = match DateTime::parse_from_rfc3339(input) {
        Ok(at) => at,
        Err(_) => {
            let naive = LOCAL_FORMATS
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(input, f).ok())
                .ok_or_else(|| AtError::Unreadable(input.to_string()))?;
            match zone.from_local_datetime(&naive) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.fixed_offset(),
                LocalResult::None => {
                    return Err(AtError::Skipped { input: input.to_string(), zone: zone.name().to_string() });
                }
            }
        }
    };
    if at <= now {
        let now = now.with_timezone(&zone).format("%Y-%m-%d %H:%M %:z").to_string();
        return Err(AtError::Past { input: input.to_string(), now });
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 27, 12, 0, 0).unwrap()
    }

    #[test]
    fn local_times_are_in_the_zone_and_offsets_are_kept() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let shanghai: Tz = "Asia/Shanghai".parse().unwrap();
        let at = |s: &str, z| parse_at(s, z, now()).map(|t| t.to_rfc3339());
        assert_eq!(at("2026-03-28T09:00", shanghai), Ok("2026-03-28T09:00:00+08:00".into()));
        assert_eq!(at("2026-03-28 09:00:30", berlin), Ok("2026-03-28T09:00:30+01:00".into()));
        // After the spring change the offset is the summer one.
        assert_eq!(at("2026-03-30T09:00", berlin), Ok("2026-03-30T09:00:00+02:00".into()));
        assert_eq!(at("2026-03-28T09:00:00-05:00", berlin), Ok("2026-03-28T09:00:00-05:00".into()));
        assert!(matches!(at("2026-03-29T02:30", berlin), Err(AtError::Skipped { .. })));
        // A fall-back hour happens twice: the first one.
        assert_eq!(at("2026-10-25T02:30", berlin), Ok("2026-10-25T02:30:00+02:00".into()));
        assert!(matches!(at("tomorrow at 9", berlin), Err(AtError::Unreadable(_))));
        assert_eq!(
            at("2026-03-27T12:00", berlin),
            Err(AtError::Past { input: "2026-03-27T12:00".into(), now: "2026-03-27 13:00 +01:00".into() })
        );
    }
}
