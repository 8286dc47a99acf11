//! `overlap` (SPEC §5): what a new run of a routine does while another of it is active. One
//! decision for `routines run` (active runs seen in the database) and the daemon (active runs
//! seen in its dispatcher).

use super::Overlap;

/// What is active of a routine when a new run of it comes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// A run of the routine is running or waiting for its turn.
    pub active: bool,
    /// The id of an active run, when one is known, for the message of a skip.
    pub run: Option<i64>,
    /// A run of the routine is waiting for its turn.
    pub waiting: bool,
}

/// What a new run does about the routine's active runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Nothing stands in its way (`allow`, or nothing active).
    Start,
    /// It waits until the active run has ended (`queue`).
    Queue,
    /// It cancels the active and waiting runs and starts (`replace`).
    Replace,
    /// It does not run; recorded `skipped` with reason `overlap`.
    Skip(OverlapSkip),
}

/// Why a run was skipped because of `overlap`: the run's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlapSkip {
    /// `overlap: skip` while a run is active.
    #[error("{} of `{routine}` is still running (overlap: skip); this run was skipped", run_name(*.run))]
    Active { routine: String, run: Option<i64> },
    /// `overlap: queue` while a run already waits.
    #[error("a run of `{routine}` is already waiting (overlap: queue keeps at most one); this run was skipped")]
    QueueFull { routine: String },
}

fn run_name(run: Option<i64>) -> String {
    run.map_or_else(|| "a run".to_string(), |id| format!("run {id}"))
}

/// What a new run of `routine` with `overlap` does, given its `activity`. A catch-up run (one
/// of several missed instants fired at once) is never skipped or replaced: catch-up runs go
/// one after another.
pub fn admit(routine: &str, overlap: Overlap, activity: Activity, catch_up: bool) -> Admission {
    if catch_up {
        return Admission::Start;
    }
    match overlap {
        Overlap::Skip if activity.active => {
            Admission::Skip(OverlapSkip::Active { routine: routine.to_string(), run: activity.run })
        }
        Overlap::Queue if activity.waiting => Admission::Skip(OverlapSkip::QueueFull { routine: routine.to_string() }),
        Overlap::Queue if activity.active => Admission::Queue,
        Overlap::Replace => Admission::Replace,
        Overlap::Skip | Overlap::Queue | Overlap::Allow => Admission::Start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Activity = Activity { active: false, run: None, waiting: false };
    const RUNNING: Activity = Activity { active: true, run: Some(7), waiting: false };
    const WAITING: Activity = Activity { active: true, run: Some(7), waiting: true };

    #[test]
    fn each_overlap_mode_decides_against_what_is_active() {
        let admit = |overlap, activity| admit("nightly", overlap, activity, false);
        for overlap in [Overlap::Skip, Overlap::Queue, Overlap::Allow] {
            assert_eq!(admit(overlap, IDLE), Admission::Start, "{overlap:?}");
        }
        assert_eq!(admit(Overlap::Replace, IDLE), Admission::Replace);
        assert_eq!(
            admit(Overlap::Skip, RUNNING),
            Admission::Skip(OverlapSkip::Active { routine: "nightly".into(), run: Some(7) })
        );
        assert_eq!(admit(Overlap::Queue, RUNNING), Admission::Queue);
        assert_eq!(
            admit(Overlap::Queue, WAITING),
            Admission::Skip(OverlapSkip::QueueFull { routine: "nightly".into() })
        );
        assert_eq!(admit(Overlap::Replace, WAITING), Admission::Replace);
        assert_eq!(admit(Overlap::Allow, WAITING), Admission::Start);
    }

    #[test]
    fn catch_up_runs_are_never_skipped_or_replaced() {
        for overlap in [Overlap::Skip, Overlap::Queue, Overlap::Replace, Overlap::Allow] {
            assert_eq!(admit("nightly", overlap, WAITING, true), Admission::Start, "{overlap:?}");
        }
    }

    #[test]
    fn a_skip_names_the_active_run_when_it_is_known() {
        let known = OverlapSkip::Active { routine: "slow".into(), run: Some(1) };
        assert_eq!(known.to_string(), "run 1 of `slow` is still running (overlap: skip); this run was skipped");
        let unknown = OverlapSkip::Active { routine: "slow".into(), run: None };
        assert_eq!(unknown.to_string(), "a run of `slow` is still running (overlap: skip); this run was skipped");
        let full = OverlapSkip::QueueFull { routine: "slow".into() };
        assert_eq!(
            full.to_string(),
            "a run of `slow` is already waiting (overlap: queue keeps at most one); this run was skipped"
        );
    }
}
