//! The switch of the assists (`agent.assist`, `agent.assist_off`, SPEC §13): every place where
//! the engine steps into a turn beyond the plain loop asks [`Assists::allows`] with its name
//! first. The names and what each assist does are in [`crate::config::assist::ASSISTS`].

use crate::config::AssistLevel;

/// Which assists a turn may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assists {
    pub level: AssistLevel,
    /// Assists turned off by name (the engine's and the routine's lists together).
    pub off: Vec<String>,
}

impl Assists {
    /// The assists of a routine: its level, else the engine's; both lists of names turned off.
    pub fn of(engine: (AssistLevel, &[String]), routine: Option<(Option<AssistLevel>, &[String])>) -> Assists {
        let (level, mut off) = (engine.0, engine.1.to_vec());
        let level = match routine {
            Some((own, names)) => {
                off.extend(names.iter().filter(|n| !off.contains(n)).cloned().collect::<Vec<_>>());
                own.unwrap_or(level)
            }
            None => level,
        };
        Assists { level, off }
    }

    /// Whether the assist `name` may step in.
    pub fn allows(&self, name: &str) -> bool {
        debug_assert!(crate::config::assist::is_assist(name), "`{name}` is not in the table of assists");
        let in_level = match self.level {
            AssistLevel::Off => false,
            AssistLevel::Evidence => crate::config::assist::EVIDENCE.contains(&name),
            AssistLevel::Full => true,
        };
        in_level && !self.off.iter().any(|n| n == name)
    }

    /// Whether the turn is the plain loop.
    pub fn off(&self) -> bool {
        self.level == AssistLevel::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routine_level_wins_and_the_lists_are_merged() {
        let engine = ["named_all_used".to_string()];
        let routine = ["code_check".to_string(), "named_all_used".to_string()];
        let a = Assists::of((AssistLevel::Full, &engine), Some((None, &routine)));
        assert_eq!(a.off, ["named_all_used", "code_check"]);
        assert!(!a.allows("code_check") && !a.allows("named_all_used") && a.allows("questions_reask"));
        let a = Assists::of((AssistLevel::Full, &[]), Some((Some(AssistLevel::Off), &[])));
        assert!(a.off() && !a.allows("questions_reask"));
        let a = Assists::of((AssistLevel::Off, &[]), Some((Some(AssistLevel::Full), &[])));
        assert!(!a.off() && a.allows("questions_reask"));
        let a = Assists::of((AssistLevel::Evidence, &[]), None);
        assert!(!a.off() && a.allows("failed_check_reask") && !a.allows("questions_reask") && !a.allows("code_check"));
    }
}
