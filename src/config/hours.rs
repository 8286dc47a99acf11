//! Hours of the day in the engine's zone: `heartbeat.active_hours`, and the
//! greeting hours that default to [`DEFAULT_GREETING_HOURS`].

use chrono::{NaiveTime, TimeDelta};

use super::{ActiveHours, DEFAULT_GREETING_HOURS, HeartbeatSettings};

/// A window of local times; one whose end is before its start crosses
/// midnight (`22:00`–`06:00`), and one that ends when it starts
/// (`00:00`–`00:00`) is the whole day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: NaiveTime,
    pub end: NaiveTime,
}

/// A time of `heartbeat.active_hours` that is not `HH:MM`. Loading the config
/// reports it with its location; this is for settings built by hand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("heartbeat.active_hours.{field} `{text}` is not a time like 08:00")]
pub struct HoursError {
    /// `start` or `end`.
    pub field: &'static str,
    pub text: String,
}

/// A local time written `HH:MM`.
pub fn parse_time(text: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(text, "%H:%M").ok()
}

impl Window {
    /// The window of `hours`.
    pub fn parse(hours: &ActiveHours) -> Result<Window, HoursError> {
        Window::of(&hours.start, &hours.end)
    }

    fn of(start: &str, end: &str) -> Result<Window, HoursError> {
        let time = |field: &'static str, text: &str| {
            parse_time(text).ok_or_else(|| HoursError { field, text: text.to_string() })
        };
        Ok(Window { start: time("start", start)?, end: time("end", end)? })
    }

    /// Whether local time `t` falls inside.
    pub fn contains(&self, t: NaiveTime) -> bool {
        if self.start == self.end {
            true
        } else if self.start < self.end {
            self.start <= t && t < self.end
        } else {
            t >= self.start || t < self.end
        }
    }

    /// How long it lasts: up to a whole day.
    pub fn length(&self) -> TimeDelta {
        let length = self.end - self.start;
        if length <= TimeDelta::zero() { length + TimeDelta::days(1) } else { length }
    }
}

impl HeartbeatSettings {
    /// The window of `active_hours`, if set.
    pub fn active_window(&self) -> Result<Option<Window>, HoursError> {
        self.active_hours.as_ref().map(Window::parse).transpose()
    }

    /// The window greetings fall in: active hours, or [`DEFAULT_GREETING_HOURS`].
    pub fn greeting_window(&self) -> Result<Window, HoursError> {
        match &self.active_hours {
            Some(hours) => Window::parse(hours),
            None => Window::of(DEFAULT_GREETING_HOURS.0, DEFAULT_GREETING_HOURS.1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> NaiveTime {
        parse_time(s).unwrap()
    }

    #[test]
    fn active_hours_may_cross_midnight() {
        let day = Window { start: t("08:00"), end: t("22:00") };
        assert!(day.contains(t("08:00")) && day.contains(t("21:59")));
        assert!(!day.contains(t("22:00")) && !day.contains(t("07:59")));
        assert_eq!(day.length(), TimeDelta::hours(14));
        let night = Window { start: t("22:00"), end: t("06:00") };
        assert!(night.contains(t("23:30")) && night.contains(t("05:59")));
        assert!(!night.contains(t("12:00")));
        assert_eq!(night.length(), TimeDelta::hours(8));
        let all_day = Window { start: t("07:00"), end: t("07:00") };
        assert!(all_day.contains(t("06:59")) && all_day.contains(t("07:00")) && all_day.contains(t("23:59")));
        assert_eq!(all_day.length(), TimeDelta::days(1));
    }

    #[test]
    fn a_time_that_is_not_hh_mm_names_its_field() {
        let bad = ActiveHours { start: "8am".into(), end: "22:00".into() };
        let e = Window::parse(&bad).unwrap_err();
        assert_eq!(e, HoursError { field: "start", text: "8am".into() });
        assert_eq!(e.to_string(), "heartbeat.active_hours.start `8am` is not a time like 08:00");
    }

    #[test]
    fn greetings_default_to_daytime_without_active_hours() {
        let settings = HeartbeatSettings::default();
        assert_eq!(settings.active_window(), Ok(None));
        assert_eq!(settings.greeting_window(), Ok(Window { start: t("08:00"), end: t("22:00") }));
    }
}
