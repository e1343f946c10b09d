//! The one backoff rule of the loop: a request repeated after a failure waits twice as long as
//! the time before, never more than [`MAX_RETRY_DELAY`]. The scheduler's per-session retries and
//! the per-directory session lists (`goal/decide/list_rules.rs`, `goal/gather/list_gate.rs`) both
//! use it, so a route that keeps failing costs at most one request per [`MAX_RETRY_DELAY`] per
//! waiter once the doubling has reached the cap, and a route that answers again is asked within
//! that time. Pure.

use std::time::Duration;

/// The longest wait between two tries of a failing request (A.8: "doubling, capped at 10 s").
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(10);

/// The wait before try number `failures + 1` of a request that failed `failures` times in a row
/// (`failures` ≥ 1): `base`, `2 × base`, `4 × base`, … capped at [`MAX_RETRY_DELAY`]. A zero
/// base still waits a millisecond, so a failing route can never be asked in a tight loop.
pub fn retry_delay(base: Duration, failures: u32) -> Duration {
    let base = base.clamp(Duration::from_millis(1), MAX_RETRY_DELAY);
    let doublings = failures.saturating_sub(1).min(16);
    base.saturating_mul(1u32 << doublings).min(MAX_RETRY_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_base_and_stops_at_the_cap() {
        let ms = |n| Duration::from_millis(n);
        let delays: Vec<Duration> = (1..=8).map(|n| retry_delay(ms(150), n)).collect();
        assert_eq!(delays, [ms(150), ms(300), ms(600), ms(1200), ms(2400), ms(4800), ms(9600), ms(10_000)]);
        // The default quiet window (15 s) is over the cap: every retry waits the cap.
        assert_eq!(retry_delay(Duration::from_secs(15), 1), MAX_RETRY_DELAY);
        // Huge counts do not overflow; a zero base does not spin.
        assert_eq!(retry_delay(ms(150), u32::MAX), MAX_RETRY_DELAY);
        assert_eq!(retry_delay(Duration::ZERO, 1), ms(1));
        assert_eq!(retry_delay(ms(150), 0), ms(150), "the first retry waits the base");
    }
}
