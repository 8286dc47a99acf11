//! A `key` that returns a status where the task counts something else. A count of the different
//! users who logged in without error, over `07:40 login ok user=mara` lines: the 1.5B model's `key`
//! returned `ok` and `failed`, the word after `login`, and the answer counted 4 (bench/README.md,
//! stops 45 and 46). When every value the function returned is a status word and the task
//! counts the different values of something that is not a status, the function is asked for
//! once more, naming what it returned and what the task counts.

/// Words that say how something went or stands, not what it is.
const STATUS_WORDS: [&str; 30] = [
    "ok",
    "okay",
    "success",
    "successful",
    "succeeded",
    "fail",
    "failed",
    "failure",
    "error",
    "errors",
    "pass",
    "passed",
    "true",
    "false",
    "yes",
    "no",
    "up",
    "down",
    "active",
    "inactive",
    "enabled",
    "disabled",
    "open",
    "closed",
    "pending",
    "done",
    "denied",
    "accepted",
    "rejected",
    "invalid",
];

/// What a task counts the different values of: the word after "different", "distinct" or
/// "unique" (`users`).
fn counted(task: &str) -> Option<String> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let at = words.iter().position(|w| ["different", "distinct", "unique"].contains(w))?;
    words.get(at + 1).map(|w| w.to_string())
}

/// The values `keys` holds (in the order first seen) when every one is a status word and the
/// task counts something that is not a status; `None` otherwise.
pub(super) fn statuses(task: &str, keys: &[Option<String>]) -> Option<(Vec<String>, String)> {
    let noun = counted(task)?;
    const ABOUT_STATUS: [&str; 10] =
        ["status", "statuses", "state", "states", "result", "results", "outcome", "outcomes", "level", "levels"];
    if ABOUT_STATUS.contains(&noun.as_str()) {
        return None;
    }
    let mut seen: Vec<String> = Vec::new();
    for key in keys.iter().flatten() {
        let key = key.trim().to_lowercase();
        if !STATUS_WORDS.contains(&key.as_str()) {
            return None;
        }
        if !seen.contains(&key) {
            seen.push(key);
        }
    }
    (!seen.is_empty()).then_some((seen, noun))
}

/// The request for the function again (English: it asks for code).
pub(super) fn message(statuses: &[String], noun: &str) -> String {
    let returned: Vec<String> = statuses.iter().map(|s| format!("`{s}`")).collect();
    format!(
        "Your function returned {}: how a line went, not which of the {noun} it is about, and the task counts \
         the different {noun}. Write `key` again: return the one of the {noun} a line is about, and None for a \
         line the task leaves out.",
        returned.join(" and ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(values: &[&str]) -> Vec<Option<String>> {
        values.iter().map(|v| Some(v.to_string())).collect()
    }

    #[test]
    fn statuses_returned_for_a_count_of_users_are_found() {
        let task = "How many unique users had a successful login in auth.log?";
        let (found, noun) = statuses(task, &keys(&["ok", "ok", "failed", "ok"])).unwrap();
        assert_eq!((found, noun.as_str()), (vec!["ok".to_string(), "failed".to_string()], "users"));
        let ask = message(&["ok".into(), "failed".into()], "users");
        assert!(ask.starts_with("Your function returned `ok` and `failed`: how a line went"), "{ask}");
    }

    #[test]
    fn names_or_a_count_of_statuses_are_left_alone() {
        let task = "How many unique users had a successful login in auth.log?";
        assert_eq!(statuses(task, &keys(&["alice", "bob", "ok"])), None, "a name is no status");
        assert_eq!(statuses("How many different statuses are there?", &keys(&["ok", "failed"])), None);
        assert_eq!(statuses("How many users logged in?", &keys(&["ok"])), None, "no different values asked");
        assert_eq!(statuses(task, &[None, None]), None);
    }
}
