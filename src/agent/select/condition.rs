//! A condition the task states that the model's `keep` (of the selection, or of a webhook's
//! list filter, `items.rs`) left out: "Which owner accounts are
//! inactive?" and `return not item['active']`, which keeps the inactive viewer too. The 1.5B
//! model answered right (bob and dave) from the records shown, and the engine's request for the
//! records the answer left out then added carol (bench/README.md, stop 40).
//!
//! The signal is in the records, not the code: the task names a value of a field (`admin`, a
//! `role`), and a kept record holds another value of that field. The function is asked for once
//! more, told which record and which value; a second that keeps such a record leaves the
//! records as they came. A task that negates ("not", "except", "other than") is left alone.

use serde_json::Value;

use crate::config::Language;

/// A kept record whose `field` holds `other` where the task names `named`.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::agent) struct Missed {
    pub field: String,
    pub named: String,
    pub other: String,
}

/// The first kept record (of `values`, kept by `flags`) whose field holds a value the task
/// does not name, where it names another value of that field; `None` when there is none, the
/// records are not objects, or the task negates.
pub(in crate::agent) fn missed(task: &str, values: &[Value], flags: &[bool]) -> Option<Missed> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_').collect();
    const NEGATIONS: [&str; 8] = ["not", "non", "except", "excluding", "without", "other", "besides", "never"];
    if NEGATIONS.iter().any(|n| words.contains(n)) || lower.contains("n't") || lower.contains('不') {
        return None;
    }
    let names = |v: &str| {
        let v = v.to_lowercase();
        v.chars().count() >= 3 && words.iter().any(|w| *w == v || w.strip_suffix('s') == Some(v.as_str()))
    };
    let objects: Vec<&serde_json::Map<String, Value>> = values.iter().filter_map(Value::as_object).collect();
    if objects.len() != values.len() {
        return None;
    }
    let text =
        |o: &serde_json::Map<String, Value>, field: &str| o.get(field).and_then(Value::as_str).map(str::to_string);
    let fields: Vec<&String> = objects.first()?.keys().collect();
    for field in fields {
        let all: Vec<Option<String>> = objects.iter().map(|o| text(o, field)).collect();
        let named: Vec<&String> = all.iter().flatten().filter(|v| names(v)).collect();
        // A value every record holds tells none apart.
        if named.is_empty() || all.iter().all(|v| v.as_ref() == Some(named[0])) {
            continue;
        }
        let kept_other = all.iter().zip(flags).find_map(|(v, f)| match v {
            Some(v) if *f && !names(v) => Some(v.clone()),
            _ => None,
        });
        if let Some(other) = kept_other {
            return Some(Missed { field: field.clone(), named: named[0].clone(), other });
        }
    }
    None
}

/// A kept record whose `field` holds `value`, a value the task asks about the items that are
/// not: "which parts are not healthy" and `item['status'] != 'partial_outage'`,
/// which keeps the operational ones (the 1.5B model, bench/README.md, stop 41).
#[derive(Debug, PartialEq, Eq)]
pub(in crate::agent) struct Negated {
    pub field: String,
    pub value: String,
}

/// The first kept record (of `values`, kept by `flags`) with a field whose text value is a word
/// the task negates (`not operational`, `non-active`, `isn't running`); `None` when there is none.
pub(in crate::agent) fn negated(task: &str, values: &[Value], flags: &[bool]) -> Option<Negated> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '_').collect();
    let negated: Vec<&str> = words
        .windows(2)
        .filter(|p| ["not", "non", "isn't", "aren't", "never"].contains(&p[0]) && p[1].chars().count() >= 3)
        .map(|p| p[1])
        .collect();
    if negated.is_empty() {
        return None;
    }
    values.iter().zip(flags).filter(|(_, f)| **f).find_map(|(v, _)| {
        v.as_object()?.iter().find_map(|(field, value)| {
            let text = value.as_str()?;
            negated
                .contains(&text.to_lowercase().as_str())
                .then(|| Negated { field: field.clone(), value: text.to_string() })
        })
    })
}

/// What asks for `keep` again after it kept what the task negates.
pub(in crate::agent) fn negated_message(lang: Language, negated: &Negated) -> String {
    let Negated { field, value } = negated;
    match lang {
        Language::En => format!(
            "Your function keeps an item whose `{field}` is `{value}`, and the task asks about the items whose `{field}` is not `{value}`. Write `keep` again."
        ),
        Language::Zh => format!(
            "你的函数保留了 `{field}` 为 `{value}` 的项，而任务问的是 `{field}` 不是 `{value}` 的项。请重写 `keep`。"
        ),
    }
}

/// The function asked for again, by what it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum Function {
    /// `keep`: whether the record is one the task asks about.
    Keep,
    /// `value`: the record's number the task adds up (0 for a record left out).
    Total,
    /// `value`: the record's number the task compares (None for a record left out).
    Pick,
}

/// What asks for the function again.
pub(in crate::agent) fn message(lang: Language, missed: &Missed, function: Function) -> String {
    let Missed { field, named, other } = missed;
    let none = if function == Function::Total { "0" } else { "None" };
    match (lang, function) {
        (Language::En, Function::Keep) => format!(
            "Your function keeps an item whose `{field}` is `{other}`, and the task asks about `{named}`. Write `keep` again so that it tests `{field}` too."
        ),
        (Language::En, _) => format!(
            "Your function gives a number to an item whose `{field}` is `{other}`, and the task asks about `{named}`. Write `value` again so that it tests `{field}` too and returns {none} for the other items."
        ),
        (Language::Zh, Function::Keep) => {
            format!(
                "你的函数保留了 `{field}` 为 `{other}` 的项，而任务问的是 `{named}`。请重写 `keep`，让它也检查 `{field}`。"
            )
        }
        (Language::Zh, _) => format!(
            "你的函数给 `{field}` 为 `{other}` 的项也返回了数值，而任务问的是 `{named}`。请重写 `value`，让它也检查 `{field}`，其他项返回 {none}。"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> Vec<Value> {
        serde_json::from_str(
            r#"[{"name":"alice","role":"admin","active":true},{"name":"bob","role":"admin","active":false},
                {"name":"carol","role":"viewer","active":false},{"name":"dave","role":"admin","active":false}]"#,
        )
        .unwrap()
    }

    #[test]
    fn a_kept_record_with_another_value_of_a_named_field_is_a_condition_missed() {
        let inactive = [false, true, true, true];
        let task = "Which admin users of team.json are inactive?";
        let missed = missed(task, &users(), &inactive).unwrap();
        assert_eq!(missed, Missed { field: "role".into(), named: "admin".into(), other: "viewer".into() });
        assert_eq!(
            message(Language::En, &missed, Function::Keep),
            "Your function keeps an item whose `role` is `viewer`, and the task asks about `admin`. Write `keep` again so that it tests `role` too."
        );
        assert!(super::missed("How many admins are inactive?", &users(), &inactive).is_some(), "a plural names it");
        assert_eq!(
            message(Language::En, &missed, Function::Total),
            "Your function gives a number to an item whose `role` is `viewer`, and the task asks about `admin`. Write `value` again so that it tests `role` too and returns 0 for the other items."
        );
    }

    #[test]
    fn a_kept_record_whose_value_the_task_negates_is_found() {
        let components: Vec<Value> = serde_json::from_str(
            r#"[{"name":"Auth","state":"partial_outage"},{"name":"Docs","state":"healthy"},{"name":"Billing","state":"healthy"}]"#,
        )
        .unwrap();
        let task = "Read state.json; list the parts that are not healthy, with the reason if one is given.";
        let inverted = negated(task, &components, &[false, true, true]).unwrap();
        assert_eq!(inverted, Negated { field: "state".into(), value: "healthy".into() });
        assert_eq!(
            negated_message(Language::En, &inverted),
            "Your function keeps an item whose `state` is `healthy`, and the task asks about the items whose `state` is not `healthy`. Write `keep` again."
        );
        assert_eq!(negated(task, &components, &[true, false, false]), None, "the right one kept");
        assert_eq!(negated("Which parts are healthy?", &components, &[false, true, true]), None);
    }

    #[test]
    fn a_selection_that_holds_the_named_value_or_a_task_that_negates_is_left_alone() {
        let task = "Which admin users of team.json are inactive?";
        assert_eq!(missed(task, &users(), &[false, true, false, true]), None);
        assert_eq!(
            missed("Which accounts that are not admin are inactive?", &users(), &[false, false, true, false]),
            None
        );
        assert_eq!(missed("Which accounts are inactive?", &users(), &[false, true, true, true]), None);
        let lines = [Value::String("admin x".into()), Value::String("viewer y".into())];
        assert_eq!(missed(task, &lines, &[true, true]), None, "lines have no fields");
    }
}
