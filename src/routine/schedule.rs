//! When time triggers fire: cron (croner, in the trigger's IANA zone),
//! `every` (aligned to multiples of the interval since the Unix epoch, so
//! every process computes the same instants), and `at` (once).

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

use super::{Routine, TimeTrigger};

/// Parses 5- or 6-field cron (seconds optional), with `L`, `W`, `#` and
/// `@daily`-style macros. Day-of-month and day-of-week combine with OR, as
/// in Vixie cron.
pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    CronParser::builder().seconds(Seconds::Optional).build().parse(expr).map_err(|e| e.to_string())
}

/// One upcoming fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fire {
    /// In the zone of the trigger.
    pub at: DateTime<Tz>,
    pub kind: &'static str,
}

/// The next `n` fires of a routine's time triggers strictly after `after`,
/// earliest first, without duplicates.
pub fn next_fires(routine: &Routine, after: DateTime<Utc>, n: usize) -> Vec<Fire> {
    let mut fires: Vec<Fire> = Vec::new();
    for t in &routine.time_triggers {
        match t {
            TimeTrigger::Cron { cron, zone, .. } => {
                let mut from = after.with_timezone(zone);
                for _ in 0..n {
                    match cron.find_next_occurrence(&from, false) {
                        Ok(next) => {
                            fires.push(Fire { at: next, kind: "cron" });
                            from = next;
                        }
                        Err(_) => break,
                    }
                }
            }
            TimeTrigger::Every(every) => {
                let step = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
                let mut next = (after.timestamp_millis().div_euclid(step) + 1) * step;
                for _ in 0..n {
                    if let Some(at) = Utc.timestamp_millis_opt(next).single() {
                        fires.push(Fire { at: at.with_timezone(&routine.zone), kind: "every" });
                    }
                    next = next.saturating_add(step);
                }
            }
            TimeTrigger::At(at) => {
                if at.with_timezone(&Utc) > after {
                    fires.push(Fire { at: at.with_timezone(&routine.zone), kind: "at" });
                }
            }
        }
    }
    fires.sort_by_key(|f| f.at.with_timezone(&Utc));
    fires.dedup_by_key(|f| f.at.with_timezone(&Utc));
    fires.truncate(n);
    fires
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_five_and_six_fields_and_macros() {
        assert!(parse_cron("0 9 * * 1-5").is_ok());
        assert!(parse_cron("30 0 9 * * 1-5").is_ok());
        assert!(parse_cron("@daily").is_ok());
        assert!(parse_cron("0 0 L * *").is_ok());
        assert!(parse_cron("0 0 * * 5#2").is_ok());
        assert!(parse_cron("61 * * * *").is_err());
        assert!(parse_cron("* * *").is_err());
    }
}
