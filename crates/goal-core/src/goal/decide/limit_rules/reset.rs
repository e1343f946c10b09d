//! When a provider's limit resets, and how long a parked goal waits for it.
//!
//! Providers state the reset in their own headers (see `docs/opencode.md`, "Provider
//! failures"): `retry-after` (seconds, or an HTTP date), `retry-after-ms`, OpenAI's
//! `x-ratelimit-reset-*` (durations such as `7s`, `6m0s`, `1h2m3.5s`) and Anthropic's
//! `anthropic-ratelimit-*-reset` (RFC 3339 times). The latest stated reset wins; relative ones
//! are measured from the failed reply's completion. A header that does not parse, or that lies
//! in the past or beyond a year, is ignored; with none left the wait is a backoff of 1, 5, 15
//! and then 60 minutes. A margin of 2 s and a jitter of up to 10 % of (wait + margin) are
//! added, and one wait is capped. Pure: the clock value is passed in.

use crate::record::check_id::fnv1a_bytes;
use crate::record::provider_error::ProviderError;
use crate::time::stamp::{http_date_ms, rfc3339_ms};

/// Added to every wait, so the continuation lands after the reset, not on it.
pub const RESET_MARGIN_MS: f64 = 2_000.0;
/// Jitter bound, as a share of (wait + margin): hosts and goals do not wake all at once.
pub const JITTER_SHARE: f64 = 0.10;
/// Waits used when no header states the reset: 1, 5, 15, then 60 minutes.
pub const BACKOFF_MS: [f64; 4] = [60_000.0, 300_000.0, 900_000.0, 3_600_000.0];
/// A stated reset further away than this is not believed (a malformed or hostile header).
pub const MAX_BELIEVED_RESET_MS: f64 = 366.0 * 24.0 * 3600.0 * 1000.0;

/// The reset the headers state, in epoch ms (the latest one), or `None` when no header states
/// a usable reset. `completed_ms` is the failed reply's completion time.
pub fn stated_reset(error: &ProviderError, completed_ms: f64) -> Option<f64> {
    error
        .headers
        .iter()
        .filter_map(|(name, value)| header_reset(name, value, completed_ms))
        .filter(|reset| *reset > completed_ms && *reset - completed_ms <= MAX_BELIEVED_RESET_MS)
        .reduce(f64::max)
}

fn header_reset(name: &str, value: &str, completed_ms: f64) -> Option<f64> {
    let value = value.trim();
    if name == "retry-after" {
        return match seconds(value) {
            Some(secs) => Some(completed_ms + secs * 1000.0),
            None => http_date_ms(value),
        };
    }
    if name == "retry-after-ms" {
        return seconds(value).map(|ms| completed_ms + ms);
    }
    if name.starts_with("x-ratelimit-reset") {
        return go_duration_ms(value).or_else(|| seconds(value).map(|s| s * 1000.0)).map(|ms| completed_ms + ms);
    }
    if name.starts_with("anthropic-ratelimit-") && name.ends_with("-reset") {
        return rfc3339_ms(value);
    }
    None
}

/// A non-negative decimal number (at most 12 characters: anything longer is not a wait).
fn seconds(text: &str) -> Option<f64> {
    if text.is_empty() || text.len() > 12 || !text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite() && *n >= 0.0)
}

/// A Go-style duration: one or more `<number><unit>` with units `h`, `m`, `s`, `ms`, `us`/`µs`,
/// `ns` (`7s`, `6m0s`, `1h2m3.5s`, `250ms`). At most 40 characters.
pub fn go_duration_ms(text: &str) -> Option<f64> {
    if text.is_empty() || text.len() > 40 {
        return None;
    }
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (scale, unit_len) = if rest.starts_with("ms") {
            (1.0, 2)
        } else if rest.starts_with("us") {
            (0.001, 2)
        } else if rest.starts_with("µs") {
            (0.001, "µs".len())
        } else if rest.starts_with("ns") {
            (0.000_001, 2)
        } else if rest.starts_with('h') {
            (3_600_000.0, 1)
        } else if rest.starts_with('m') {
            (60_000.0, 1)
        } else if rest.starts_with('s') {
            (1000.0, 1)
        } else {
            return None;
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    total.is_finite().then_some(total)
}

/// The backoff for the `nth` park in a row (1-based) when no header states a reset.
pub fn backoff_ms(nth: u64) -> f64 {
    let index = nth.saturating_sub(1).min(BACKOFF_MS.len() as u64 - 1) as usize;
    BACKOFF_MS[index]
}

/// A stable number in `[0, 1)` from a key (goal id and failed reply): every host computes the
/// same jitter for the same park, and different goals spread out.
pub fn jitter_unit(key: &str) -> f64 {
    let hash = fnv1a_bytes(key.as_bytes());
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// How long one park lasts and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParkWait {
    /// When the continuation may go out (epoch ms).
    pub until: f64,
    /// Whether a header stated the reset (otherwise the backoff applied).
    pub stated: bool,
    /// Whether the cap cut the wait short.
    pub capped: bool,
}

/// The end of a park: the stated reset (or the backoff for the `nth` park in a row) measured
/// from `completed_ms`, plus the margin and the jitter, at most `max_wait_ms` after
/// `completed_ms`. `jitter` is in `[0, 1)` (see [`jitter_unit`]).
pub fn park_until(error: &ProviderError, completed_ms: f64, nth: u64, jitter: f64, max_wait_ms: u64) -> ParkWait {
    let reset = stated_reset(error, completed_ms);
    let wait = reset.map_or_else(|| backoff_ms(nth), |at| at - completed_ms);
    let padded = wait + RESET_MARGIN_MS;
    let jitter = jitter.clamp(0.0, 1.0) * JITTER_SHARE * padded;
    let total = padded + jitter;
    let cap = max_wait_ms as f64;
    // Whole milliseconds: the time is stored, logged and compared across hosts.
    ParkWait { until: (completed_ms + total.min(cap)).ceil(), stated: reset.is_some(), capped: total > cap }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const T0: f64 = 1_800_000_000_000.0; // 2027-01-15T08:00:00Z

    fn with_headers(headers: Value) -> ProviderError {
        ProviderError::from_value(&json!({"name": "APIError", "data": {"statusCode": 429, "responseHeaders": headers}}))
            .unwrap()
    }

    #[test]
    fn each_header_format() {
        let reset = |headers: Value| stated_reset(&with_headers(headers), T0).map(|at| at - T0);
        assert_eq!(reset(json!({"retry-after": "7"})), Some(7_000.0));
        assert_eq!(reset(json!({"Retry-After": "1.5"})), Some(1_500.0));
        assert_eq!(reset(json!({"retry-after": "Fri, 15 Jan 2027 08:00:30 GMT"})), Some(30_000.0));
        assert_eq!(reset(json!({"retry-after-ms": "250"})), Some(250.0));
        assert_eq!(reset(json!({"x-ratelimit-reset-requests": "7s"})), Some(7_000.0));
        assert_eq!(reset(json!({"x-ratelimit-reset-tokens": "6m0s"})), Some(360_000.0));
        assert_eq!(reset(json!({"x-ratelimit-reset-tokens": "1h2m3.5s"})), Some(3_723_500.0));
        assert_eq!(reset(json!({"x-ratelimit-reset-requests": "20ms"})), Some(20.0));
        assert_eq!(reset(json!({"anthropic-ratelimit-requests-reset": "2027-01-15T08:01:00Z"})), Some(60_000.0));
        assert_eq!(reset(json!({"anthropic-ratelimit-tokens-reset": "2027-01-15T09:01:00+01:00"})), Some(60_000.0));
        assert_eq!(reset(json!({"x-request-id": "7"})), None);
    }

    #[test]
    fn the_latest_reset_wins() {
        let error = with_headers(json!({
            "retry-after": "7",
            "x-ratelimit-reset-requests": "3s",
            "x-ratelimit-reset-tokens": "6m0s",
            "anthropic-ratelimit-requests-reset": "2027-01-15T08:02:00Z",
        }));
        assert_eq!(stated_reset(&error, T0), Some(T0 + 360_000.0));
    }

    #[test]
    fn bad_headers_are_ignored() {
        let reset = |headers: Value| stated_reset(&with_headers(headers), T0);
        for bad in [
            json!({"retry-after": ""}),
            json!({"retry-after": "soon"}),
            json!({"retry-after": "-5"}),
            json!({"retry-after": "1e9"}),
            json!({"retry-after": "99999999999999999999"}),
            json!({"retry-after": "Fri, 15 Jan 2027 07:00:00 GMT"}), // in the past
            json!({"retry-after": "0"}),                             // now: nothing to wait for
            json!({"x-ratelimit-reset-requests": "7x"}),
            json!({"x-ratelimit-reset-requests": "s"}),
            json!({"x-ratelimit-reset-requests": "9999999h"}), // years ahead
            json!({"anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z"}),
            json!({"anthropic-ratelimit-requests-reset": "yesterday"}),
            json!({"anthropic-ratelimit-requests-reset": "2027-01-15T07:00:00Z"}),
            json!({"retry-after": "x".repeat(500)}),
        ] {
            assert_eq!(reset(bad.clone()), None, "{bad}");
        }
        // One bad header does not hide a good one.
        assert_eq!(reset(json!({"retry-after": "soon", "x-ratelimit-reset-requests": "9s"})), Some(T0 + 9_000.0));
    }

    #[test]
    fn margin_jitter_backoff_and_cap() {
        let stated = with_headers(json!({"retry-after": "10"}));
        let wait = park_until(&stated, T0, 1, 0.0, crate::config::ProviderLimits::default().max_wait_ms);
        assert_eq!(wait, ParkWait { until: T0 + 12_000.0, stated: true, capped: false });
        let jittered = park_until(&stated, T0, 1, 0.999_999, crate::config::ProviderLimits::default().max_wait_ms);
        assert!(jittered.until > T0 + 13_199.0 && jittered.until <= T0 + 13_200.0, "{jittered:?}");
        assert_eq!(jittered.until.fract(), 0.0, "whole milliseconds");
        let none = with_headers(json!({}));
        let minutes: Vec<f64> = (1..=6)
            .map(|n| (park_until(&none, T0, n, 0.0, u64::MAX).until - T0 - RESET_MARGIN_MS) / 60_000.0)
            .collect();
        assert_eq!(minutes, [1.0, 5.0, 15.0, 60.0, 60.0, 60.0]);
        let far = with_headers(json!({"x-ratelimit-reset-tokens": "30h"}));
        assert_eq!(
            park_until(&far, T0, 1, 0.5, crate::config::ProviderLimits::default().max_wait_ms),
            ParkWait { until: T0 + 21_600_000.0, stated: true, capped: true }
        );
        assert_eq!(park_until(&stated, T0, 1, 0.0, 500).until, T0 + 500.0);
        assert_eq!(backoff_ms(0), 60_000.0);
        assert_eq!(backoff_ms(u64::MAX), 3_600_000.0);
    }

    #[test]
    fn jitter_is_stable_and_bounded() {
        assert_eq!(jitter_unit("g1/msg_a"), jitter_unit("g1/msg_a"));
        assert_ne!(jitter_unit("g1/msg_a"), jitter_unit("g2/msg_a"));
        for i in 0..1000 {
            let unit = jitter_unit(&format!("goal-{i}"));
            assert!((0.0..1.0).contains(&unit));
        }
    }
}
