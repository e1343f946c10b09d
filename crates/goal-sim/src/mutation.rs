//! Defects planted at the seam, one per promise, to show each invariant can fail (as the fault
//! suite's mutation check shows each fault class can): the transport changes what a host sends
//! or reads the way a broken loop would. `goal-sim --mutate` runs the CI seeds once per defect
//! and fails unless every one is caught.

use serde_json::Value;

use crate::world::World;

/// A planted defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// (a) Every continuation is posted a second time under a new id (ids not stable across
    /// attempts).
    SecondContinuation,
    /// (b) A stopped goal reads as active (a stale cache of the session).
    StaleStop,
    /// (c) The budgets are not read (a reader that drops guard fields).
    DroppedGuards,
    /// (d) A completed goal is written as `done`, a status OpenChamber's UI drops.
    UnknownStatus,
    /// (e) Every session reads as busy (what events said about busy, never checked).
    BusyForever,
    /// (f) A failed request is sent again at once, many times (no backoff).
    RetryStorm,
    /// (g) The silence watch is switched off: what events said about busy is re-read only by
    /// the sweep (every 5 minutes at a real host's settings), and a broken stream is never
    /// noticed.
    NoSilenceWatch,
    /// (g) A host learns directories from events only: the server's lists of every directory and
    /// of its projects come back empty, so a host started again knows no goal whose session
    /// stays silent.
    CensusBlind,
    /// (h) The loop forgets the wrap-up it posted: the goal's `wrappedUp` marker and the stored
    /// wrap-up prompt's text are lost on every read, so its reply is judged as any turn's.
    WrapUpForgotten,
}

impl Mutation {
    /// The budgets `DroppedGuards` hides from the loop's reads.
    pub const GUARD_FIELDS: [&'static str; 3] = ["tokenBudget", "costBudget", "timeBudgetMs"];

    /// Every planted defect, with the invariant it must break.
    pub const ALL: [(Mutation, char); 9] = [
        (Mutation::SecondContinuation, 'a'),
        (Mutation::StaleStop, 'b'),
        (Mutation::DroppedGuards, 'c'),
        (Mutation::UnknownStatus, 'd'),
        (Mutation::BusyForever, 'e'),
        (Mutation::RetryStorm, 'f'),
        (Mutation::NoSilenceWatch, 'g'),
        (Mutation::CensusBlind, 'g'),
        (Mutation::WrapUpForgotten, 'h'),
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mutation::SecondContinuation => "second-continuation",
            Mutation::StaleStop => "stale-stop",
            Mutation::DroppedGuards => "dropped-guards",
            Mutation::UnknownStatus => "unknown-status",
            Mutation::BusyForever => "busy-forever",
            Mutation::RetryStorm => "retry-storm",
            Mutation::NoSilenceWatch => "no-silence-watch",
            Mutation::CensusBlind => "census-blind",
            Mutation::WrapUpForgotten => "wrap-up-forgotten",
        }
    }

    /// The defect named `name`.
    pub fn named(name: &str) -> Option<Mutation> {
        Self::ALL.iter().map(|(m, _)| *m).find(|m| m.name() == name)
    }

    /// A session as the defective loop reads it.
    pub fn read_session(self, session: &mut Value) {
        let Some(goal) = session.pointer_mut("/metadata/openchamber/goal").and_then(Value::as_object_mut) else {
            return;
        };
        match self {
            Mutation::StaleStop if goal.get("status").is_some_and(|s| s != "active") => {
                goal.insert("status".into(), "active".into());
            }
            Mutation::DroppedGuards => {
                for field in Mutation::GUARD_FIELDS {
                    goal.remove(field);
                }
            }
            Mutation::WrapUpForgotten => {
                goal.remove("wrappedUp");
            }
            _ => {}
        }
    }

    /// A session's messages as the defective loop reads them.
    pub fn read_messages(self, messages: &mut Value) {
        if self != Mutation::WrapUpForgotten {
            return;
        }
        let parts = messages.as_array_mut().into_iter().flatten().filter_map(|m| m["parts"].as_array_mut()).flatten();
        for part in parts {
            if part["text"].as_str().is_some_and(|t| t.starts_with(crate::wrap_up::WRAP_UP_LEAD)) {
                part["text"] = "Keep working toward the session goal.".into();
            }
        }
    }

    /// A metadata write as the defective loop sends it.
    pub fn write_session(self, body: &mut Value) {
        if self != Mutation::UnknownStatus {
            return;
        }
        if let Some(status) = body.pointer_mut("/metadata/openchamber/goal/status").filter(|s| *s == "complete") {
            *status = "done".into();
        }
    }
}

/// `world` with `mutation` planted.
pub fn applied(mut world: World, mutation: Option<Mutation>) -> World {
    world.mutation = mutation;
    world
}
