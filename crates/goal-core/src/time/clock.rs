//! The wall clock the goal record uses: milliseconds since the epoch (OpenCode's timestamps).

/// Milliseconds since the epoch.
pub fn now_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as f64).unwrap_or(0.0)
}
