//! The wall clock the goal record uses: milliseconds since the epoch (OpenCode's timestamps).
//!
//! A host reads it through its [`Clock`], one per shared context (`io/shared.rs`), so that the
//! simulator (`crates/goal-sim`) can run the real loop on tokio's paused clock and give a second
//! host a skewed one. [`now_ms`] is the system clock, for code that no host owns.

/// Milliseconds since the epoch, from the system clock.
pub fn now_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as f64).unwrap_or(0.0)
}

/// Where a [`Clock`] reads the time.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The system clock (every real host).
    System,
    /// `epoch_ms` plus the time tokio's clock has moved since `origin`: on a paused runtime the
    /// clock then moves only when the runtime sleeps, so a run is the same every time.
    Runtime { epoch_ms: f64, origin: tokio::time::Instant },
}

/// A host's wall clock: the system's, or tokio's clock read as wall time, with an optional
/// skew (a host whose clock runs ahead of or behind the others').
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    source: Source,
    skew_ms: f64,
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self { source: Source::System, skew_ms: 0.0 }
    }

    /// Tokio's clock of the current runtime read as wall time, starting at `epoch_ms` now. Must be
    /// made inside a runtime. On a paused runtime (a simulation) time then moves only as the
    /// runtime's timers do.
    pub fn following_runtime(epoch_ms: f64) -> Self {
        Self { source: Source::Runtime { epoch_ms, origin: tokio::time::Instant::now() }, skew_ms: 0.0 }
    }

    /// The same clock, `skew_ms` ahead (negative: behind).
    pub fn skewed(self, skew_ms: f64) -> Self {
        Self { skew_ms, ..self }
    }

    /// Milliseconds since the epoch on this clock.
    pub fn now_ms(&self) -> f64 {
        let base = match self.source {
            Source::System => now_ms(),
            Source::Runtime { epoch_ms, origin } => {
                epoch_ms + tokio::time::Instant::now().saturating_duration_since(origin).as_millis() as f64
            }
        };
        base + self.skew_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_runtime_clock_moves_with_the_paused_runtime_and_keeps_its_skew() {
        let clock = Clock::following_runtime(1_000_000.0);
        let ahead = clock.skewed(2_500.0);
        assert_eq!(clock.now_ms(), 1_000_000.0);
        tokio::time::sleep(Duration::from_millis(1_234)).await;
        assert_eq!(clock.now_ms(), 1_001_234.0);
        assert_eq!(ahead.now_ms(), 1_003_734.0);
    }

    #[test]
    fn the_system_clock_is_the_epoch_clock() {
        let (before, read, after) = (now_ms(), Clock::system().now_ms(), now_ms());
        assert!(before <= read && read <= after);
    }
}
