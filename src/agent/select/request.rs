//! The request for the model's function over the records: `keep`, `value` or `key`, by what
//! the task asks and the shape of the records.

use super::{Ask, dates, frequency, noun};
use crate::agent::records::Shape;

/// The request for the function. English whatever the routine's language: it asks for code.
pub(super) fn request(
    task: &str,
    ask: Ask,
    per_value: bool,
    shape: Shape,
    source: &str,
    shown: &str,
) -> Vec<crate::llm::Message> {
    use crate::llm::Message;
    let of = format!("The {} of `{source}`", noun(shape));
    // The records are what a tool returned, fenced like every outside text in a prompt (SPEC §8).
    let shown = crate::routine::template::fence(shown);
    let ask_kind = ask;
    let per_value_ask = per_value.then(|| frequency::instruction(task, shape));
    let ask = match (ask, shape) {
        _ if per_value => per_value_ask.as_deref().unwrap_or_default(),
        (Ask::Least | Ask::Most, Shape::Lines) => {
            "Write a Python function `value(line: str) -> float` that returns the number the task compares, for one \
             line (a date as it is written), or None for a line without one."
        }
        (Ask::Least | Ask::Most, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number the task compares, for one \
             item."
        }
        (Ask::Average, Shape::Lines) => {
            "Write a Python function `value(line: str) -> float` that returns the number of one line that the task \
             averages, or None for a line without one."
        }
        (Ask::Average, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number of one item that the task \
             averages. If the task averages only some of the items, return None for the others."
        }
        (Ask::Total, Shape::Lines) => {
            "Write a Python function `value(line: str) -> float` that returns the number of one line that the task \
             adds up, or None for a line without one."
        }
        (Ask::Total, _) => {
            "Write a Python function `value(item: dict) -> float` that returns the number of one item that the task \
             adds up. If the task adds up only some of the items, return 0 for the others."
        }
        (Ask::Distinct, Shape::Lines) => {
            "Write a Python function `key(line: str) -> str` that returns, for one line, the value whose different \
             values the task counts (an address, a name), or None for a line without one."
        }
        (Ask::Distinct, _) => {
            "Write a Python function `key(item: dict) -> str` that returns, for one item, the value whose different \
             values the task counts (a field's value), or None for an item without one."
        }
        (_, Shape::Lines) => {
            "Write a Python function `keep(line: str) -> bool` that returns True for the lines the task asks about and \
             False for the others. Test for a word or a value the line contains; do not list lines by number."
        }
        _ => {
            "Write a Python function `keep(item: dict) -> bool` that returns True for the items the task asks about \
             and False for the others. Test the value of a field (a status, a number); do not list items by name."
        }
    };
    let keeps = matches!(ask_kind, Ask::Count | Ask::Which | Ask::Share | Ask::Last);
    let date = keeps.then(|| dates::hint(task, &shown)).flatten().map(|h| format!(" {h}")).unwrap_or_default();
    vec![
        Message::system("You write Python. Reply with one code block only."),
        Message::user(format!("Task: {}\n\n{of}:\n{shown}\n\n{ask}{date}", task.trim())),
    ]
}
