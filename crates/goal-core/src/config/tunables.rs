//! How a host's raw option numbers become durations and counts: anything unusable (absent, NaN,
//! negative, below a minimum) means the default, and huge values are capped. Pure.

use std::time::Duration;

/// Longest duration an option may ask for (one day).
const MAX_MILLIS: f64 = 86_400_000.0;
/// Largest count an option may ask for.
const MAX_COUNT: f64 = 1_000_000.0;

/// A millisecond option as a duration: `default` unless it is a finite, non-negative number
/// (capped at one day).
pub fn millis(value: Option<f64>, default: Duration) -> Duration {
    match value {
        Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_millis(ms.min(MAX_MILLIS) as u64),
        _ => default,
    }
}

/// A count option: `default` unless it is a finite number of at least `min` (floored, capped).
pub fn count(value: Option<f64>, default: u64, min: u64) -> u64 {
    match value {
        Some(n) if n.is_finite() && n >= min as f64 => n.min(MAX_COUNT).floor() as u64,
        _ => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_takes_only_usable_numbers() {
        let default = Duration::from_millis(7);
        assert_eq!(millis(None, default), default);
        assert_eq!(millis(Some(f64::NAN), default), default);
        assert_eq!(millis(Some(-1.0), default), default);
        assert_eq!(millis(Some(0.0), default), Duration::ZERO);
        assert_eq!(millis(Some(1e12), default), Duration::from_millis(86_400_000));
    }

    #[test]
    fn count_floors_and_respects_the_minimum() {
        assert_eq!(count(Some(2.9), 5, 1), 2);
        assert_eq!(count(Some(0.0), 5, 1), 5);
        assert_eq!(count(Some(f64::INFINITY), 5, 1), 5);
        assert_eq!(count(Some(1e9), 5, 1), 1_000_000);
    }
}
