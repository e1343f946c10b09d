//! Bounded silence: what the loop remembers as busy is re-read from OpenCode before it can leave
//! a goal silent for long. A session is remembered busy from a `busy` event (or a tick or sweep
//! that found it busy) until its idle event; when that idle is lost (OpenCode restarted
//! mid-turn, the host's stream hung), nothing else would look at the goal until the sweep. So:
//!
//! - OpenCode sends `server.heartbeat` every 10 s on its event streams. A runtime that received
//!   no payload for [`STREAM_SILENCE`] treats the host's stream as down: it sweeps its known
//!   directories at once and every [`DOWN_SWEEP`] after (a session list and a status read each:
//!   goals whose events were lost are found), and re-reads `GET /session/status` of every
//!   directory holding a remembered-busy session with an active goal every [`DOWN_RECHECK`],
//!   until payloads flow again.
//! - A heartbeat that comes more than [`HOLE`] after the one before (one went missing, so other
//!   events may have too) brings one sweep.
//! - A sweep the watch asked for that could not list every directory is owed: asked for again at
//!   each round until one does (each directory's list keeps its own backoff).
//! - While payloads flow, a session remembered busy for [`BUSY_RECHECK`] is re-read then, and
//!   again each [`BUSY_RECHECK`] it stays busy (an idle lost while heartbeats flow).
//!
//! A session the read shows idle is forgotten as busy and looked at; one still working is read
//! again later. Goals whose sessions are idle with a wake-up armed cost nothing here. Pure: the
//! clock value and the marks are passed in (`sched/actor.rs` owns the marks, `runtime/watch.rs`
//! makes the reads).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// No payload for this long: the host's stream is down (two and a half heartbeats).
pub const STREAM_SILENCE: Duration = Duration::from_secs(25);
/// While the stream is down, how often a remembered-busy session is re-read (and how often the
/// watch looks at all).
pub const DOWN_RECHECK: Duration = Duration::from_secs(5);
/// While the stream flows, how long a session stays remembered busy before it is re-read.
pub const BUSY_RECHECK: Duration = Duration::from_secs(30);
/// While the stream is down, how often the server's goals are swept.
pub const DOWN_SWEEP: Duration = Duration::from_secs(30);
/// Two heartbeats further apart than this had one lost between them (they come every 10 s).
pub const HOLE: Duration = Duration::from_secs(12);

/// Whether a heartbeat arriving at `now_ms` ends a hole: the previous one (or the runtime's
/// start) came more than [`HOLE`] before.
pub fn ends_hole(now_ms: f64, previous_heartbeat_ms: f64) -> bool {
    now_ms - previous_heartbeat_ms > HOLE.as_millis() as f64
}

/// What the watch remembers between its rounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamWatch {
    /// The stream was down at the last round.
    pub down: bool,
    /// When the last sweep of this watch ran (ms on the host's clock).
    pub swept_ms: f64,
    /// The last sweep this watch asked for did not list every directory.
    pub owed: bool,
}

/// What one round of the watch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    /// The stream is down now.
    pub down: bool,
    /// It went down (or came back) at this round: said once in the log.
    pub changed: bool,
    /// Sweep the server's goals now.
    pub sweep: bool,
}

impl StreamWatch {
    /// The round at `now_ms`, given when the last payload came and whether a payload ended a hole
    /// since the last round.
    pub fn round(&mut self, now_ms: f64, last_payload_ms: f64, hole: bool) -> Round {
        let down = stream_down(now_ms, last_payload_ms);
        let changed = down != self.down;
        let went_down = down && !self.down;
        let due = down && now_ms - self.swept_ms >= DOWN_SWEEP.as_millis() as f64;
        let sweep = hole || went_down || due || self.owed;
        self.down = down;
        if sweep {
            self.swept_ms = now_ms;
        }
        Round { down, changed, sweep }
    }

    /// The sweep this round asked for ran: it listed every directory (`complete`), or it stays
    /// owed.
    pub fn swept(&mut self, complete: bool) {
        self.owed = !complete;
    }
}

/// A session remembered busy: where it lives, and when OpenCode last said so (an event, a tick,
/// a sweep, or a re-read by this watch).
#[derive(Debug, Clone, PartialEq)]
pub struct BusyMark {
    /// The session's directory (`?directory=` of the status read).
    pub directory: String,
    /// When it was last known busy (ms on the host's clock).
    pub confirmed_ms: f64,
}

/// Whether the host's stream counts as down: no payload since `last_payload_ms` for longer than
/// [`STREAM_SILENCE`].
pub fn stream_down(now_ms: f64, last_payload_ms: f64) -> bool {
    now_ms - last_payload_ms > STREAM_SILENCE.as_millis() as f64
}

/// How long a busy mark may go unconfirmed before it is re-read.
pub fn recheck_after(stream_down: bool) -> Duration {
    if stream_down {
        DOWN_RECHECK
    } else {
        BUSY_RECHECK
    }
}

/// The remembered-busy sessions with an active goal (`active`) that are due a re-read now,
/// grouped by directory (one status read answers for all of a directory's sessions), in a
/// stable order.
pub fn due(
    marks: &HashMap<String, BusyMark>,
    now_ms: f64,
    stream_down: bool,
    active: impl Fn(&str) -> bool,
) -> BTreeMap<&str, Vec<&str>> {
    let after = recheck_after(stream_down).as_millis() as f64;
    let mut by_directory: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (session, mark) in marks {
        if now_ms - mark.confirmed_ms >= after && active(session) {
            by_directory.entry(mark.directory.as_str()).or_default().push(session.as_str());
        }
    }
    for sessions in by_directory.values_mut() {
        sessions.sort_unstable();
    }
    by_directory
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(entries: &[(&str, &str, f64)]) -> HashMap<String, BusyMark> {
        entries
            .iter()
            .map(|(session, directory, at)| {
                (session.to_string(), BusyMark { directory: directory.to_string(), confirmed_ms: *at })
            })
            .collect()
    }

    #[test]
    fn the_stream_is_down_after_two_and_a_half_heartbeats_of_silence() {
        assert!(!stream_down(125_000.0, 100_000.0), "25 s: a late heartbeat");
        assert!(stream_down(125_001.0, 100_000.0));
        assert!(!stream_down(100_000.0, 100_000.0));
    }

    #[test]
    fn a_busy_session_is_re_read_sooner_while_the_stream_is_down() {
        let marks = marks(&[("a", "/p", 0.0), ("b", "/p", 10_000.0), ("c", "/q", 0.0), ("x", "/q", 0.0)]);
        let active = |s: &str| s != "x";
        // Flowing: 30 s of busy before the first re-read.
        assert!(due(&marks, 29_999.0, false, active).is_empty());
        let flowing = due(&marks, 30_000.0, false, active);
        assert_eq!(flowing.into_iter().collect::<Vec<_>>(), vec![("/p", vec!["a"]), ("/q", vec!["c"])]);
        // Down: 5 s.
        let down = due(&marks, 15_000.0, true, active);
        assert_eq!(down.into_iter().collect::<Vec<_>>(), vec![("/p", vec!["a", "b"]), ("/q", vec!["c"])]);
        assert!(due(&marks, 4_999.0, true, active).is_empty(), "confirmed less than 5 s ago");
    }

    #[test]
    fn the_watch_sweeps_when_the_stream_goes_down_every_30_s_while_down_and_after_a_hole() {
        let mut watch = StreamWatch::default();
        let quiet = watch.round(10_000.0, 5_000.0, false);
        assert_eq!(quiet, Round { down: false, changed: false, sweep: false }, "flowing: nothing");
        let down = watch.round(40_000.0, 5_000.0, false);
        assert_eq!(down, Round { down: true, changed: true, sweep: true }, "went down: swept at once");
        assert!(!watch.round(45_000.0, 5_000.0, false).sweep);
        assert!(!watch.round(69_999.0, 5_000.0, false).sweep);
        assert!(watch.round(70_000.0, 5_000.0, false).sweep, "every 30 s while down");
        let back = watch.round(75_000.0, 74_000.0, true);
        assert_eq!(back, Round { down: false, changed: true, sweep: true }, "the hole's end: swept once");
        assert!(!watch.round(80_000.0, 79_000.0, false).sweep);
        // A sweep that could not list every directory is asked for again at each round.
        watch.swept(false);
        assert!(watch.round(85_000.0, 84_000.0, false).sweep);
        watch.swept(true);
        assert!(!watch.round(90_000.0, 89_000.0, false).sweep);
        assert!(ends_hole(17_001.0, 5_000.0) && !ends_hole(15_000.0, 5_000.0));
    }

    #[test]
    fn a_session_without_an_active_goal_costs_nothing() {
        let marks = marks(&[("a", "/p", 0.0)]);
        assert!(due(&marks, 1e9, true, |_| false).is_empty());
        assert_eq!(recheck_after(true), DOWN_RECHECK);
        assert_eq!(recheck_after(false), BUSY_RECHECK);
    }
}
