//! How the `shell` tool describes itself to a routine's model: the commands this routine may
//! run, and an example in the form that returns what tasks ask about.
//!
//! Small models copy the example of a tool's description nearly word for word. With
//! `git log --oneline -5` as the example, a 1.5B model ran exactly that when asked about the
//! author and the files of the latest commit and, with no author or file in the output,
//! made them up; with `git log -3 --stat` it got the author, the date and the files (replays
//! in bench/README.md). Naming the commands saves the calls a model spends on a command that
//! is not allowed.

use crate::llm::ToolSpec;

/// The example shown for a command routines commonly allow: the form whose output carries
/// what a task usually needs (who, when, which files; line numbers; sizes in units). The
/// files they name are made up, so that no example is one task's answer.
const EXAMPLES: &[(&str, &str)] = &[
    ("git", "git log -3 --stat"),
    ("grep", "grep -n timeout logs/sync.log"),
    ("wc", "wc -l inbox.txt"),
    ("ls", "ls -l backups"),
    ("df", "df -h /"),
    ("du", "du -sh backups"),
    ("tail", "tail -n 20 logs/sync.log"),
    ("head", "head -n 5 inbox.txt"),
    ("cat", "cat inbox.txt"),
    ("date", "date -u"),
];

const RULES: &str = "No pipes, `;`, `&&`, `$(...)` or redirections.";

/// Rewrites the `shell` spec for a routine that may run `commands` (in the order the routine
/// listed them): the description names them, and the example is the first of them that has
/// one. A routine that may run no command is not offered `shell` at all (`Policy::offers`).
pub fn describe(spec: &mut ToolSpec, commands: &[String]) {
    spec.description = format!(
        "Run one command in the workspace and get its output and exit code. Commands this routine may run: {}.",
        commands.join(", ")
    );
    let example = commands.iter().find_map(|c| EXAMPLES.iter().find(|(name, _)| name == c).map(|(_, e)| *e));
    let command = match example {
        Some(e) => format!("One command with its arguments, e.g. `{e}`. {RULES}"),
        None => format!("One command with its arguments. {RULES}"),
    };
    if let Some(p) = spec.parameters.pointer_mut("/properties/command/description") {
        *p = command.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{DynTool, Shell};

    fn spec(commands: &[&str]) -> ToolSpec {
        let mut s = Shell.spec();
        describe(&mut s, &commands.iter().map(|c| c.to_string()).collect::<Vec<_>>());
        s
    }

    fn example(s: &ToolSpec) -> String {
        s.parameters.pointer("/properties/command/description").and_then(|v| v.as_str()).unwrap().to_string()
    }

    #[test]
    fn the_description_names_the_commands_and_the_example_is_the_first_one_that_has_one() {
        let s = spec(&["make", "git", "grep"]);
        assert!(s.description.ends_with("Commands this routine may run: make, git, grep."), "{}", s.description);
        assert_eq!(
            example(&s),
            "One command with its arguments, e.g. `git log -3 --stat`. No pipes, `;`, `&&`, `$(...)` or redirections."
        );
        assert!(example(&spec(&["grep"])).contains("`grep -n timeout logs/sync.log`"));
    }

    #[test]
    fn a_command_without_an_example_gets_none_rather_than_another_commands() {
        let s = spec(&["make"]);
        assert_eq!(example(&s), "One command with its arguments. No pipes, `;`, `&&`, `$(...)` or redirections.");
        assert!(!s.description.contains("git"));
    }
}
