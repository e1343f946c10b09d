//! Working hours: a daily window (`activeHours: {start: "HH:MM", end: "HH:MM", timeZone}`) in an
//! IANA time zone, outside which no continuation is sent. Pure arithmetic on a clock value the
//! caller passes in; time zones come from the system tzdb (bundled only where there is none).
//!
//! Membership is decided on the wall-clock time of the zone: start inclusive, end exclusive, and
//! `end < start` is a window across midnight. On a DST change day a start inside the skipped hour
//! opens the window at the transition (the first instant whose wall clock is past the start), and
//! a start inside the repeated hour opens it at the first occurrence.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde_json::{json, Value};

/// A validated daily window.
#[derive(Debug, Clone)]
pub struct ActiveHours {
    /// Start, minutes after midnight (inclusive).
    pub start_minute: u16,
    /// End, minutes after midnight (exclusive).
    pub end_minute: u16,
    /// The IANA name as given.
    pub zone_name: String,
    zone: TimeZone,
}

impl PartialEq for ActiveHours {
    fn eq(&self, other: &Self) -> bool {
        self.start_minute == other.start_minute
            && self.end_minute == other.end_minute
            && self.zone_name == other.zone_name
    }
}

/// Parses `HH:MM` (24-hour, two digits each) into minutes after midnight.
pub fn parse_hh_mm(text: &str) -> Option<u16> {
    let bytes = text.as_bytes();
    if bytes.len() != 5 || bytes[2] != b':' || !bytes.iter().enumerate().all(|(i, b)| i == 2 || b.is_ascii_digit()) {
        return None;
    }
    let hours = (bytes[0] - b'0') as u16 * 10 + (bytes[1] - b'0') as u16;
    let minutes = (bytes[3] - b'0') as u16 * 10 + (bytes[4] - b'0') as u16;
    (hours < 24 && minutes < 60).then_some(hours * 60 + minutes)
}

fn format_minute(minute: u16) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// The part of a working-hours window that was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoursPart {
    /// The start time.
    Start,
    /// The end time.
    End,
    /// Start and end together (they are equal).
    Window,
    /// The time zone.
    TimeZone,
}

/// Why a working-hours window was refused: the part at fault and what is wrong with it, worded
/// without a field name, so each surface names its own (the API its field, the CLI its flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoursProblem {
    /// The part at fault.
    pub part: HoursPart,
    /// What is wrong, e.g. `"Mars/Base" is not a known IANA time zone`.
    pub text: String,
}

impl std::fmt::Display for HoursProblem {
    /// The API's wording: the field path, then the problem.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let field = match self.part {
            HoursPart::Start => "activeHours.start",
            HoursPart::End => "activeHours.end",
            HoursPart::Window => "activeHours.start and activeHours.end",
            HoursPart::TimeZone => "activeHours.timeZone",
        };
        write!(f, "{field} {}", self.text)
    }
}

impl ActiveHours {
    /// Validates a window; the error says what is wrong, for the user, naming the API's fields.
    pub fn new(start: &str, end: &str, time_zone: &str) -> Result<ActiveHours, String> {
        ActiveHours::check(start, end, time_zone).map_err(|problem| problem.to_string())
    }

    /// Validates a window; the error names the part at fault (see [`HoursProblem`]).
    pub fn check(start: &str, end: &str, time_zone: &str) -> Result<ActiveHours, HoursProblem> {
        let refuse = |part, text: String| HoursProblem { part, text };
        let start_minute = parse_hh_mm(start.trim())
            .ok_or_else(|| refuse(HoursPart::Start, format!("must be HH:MM (00:00–23:59), got {start:?}")))?;
        let end_minute = parse_hh_mm(end.trim())
            .ok_or_else(|| refuse(HoursPart::End, format!("must be HH:MM (00:00–23:59), got {end:?}")))?;
        if start_minute == end_minute {
            return Err(refuse(HoursPart::Window, "must differ".into()));
        }
        let zone_name = time_zone.trim();
        if zone_name.is_empty() {
            return Err(refuse(HoursPart::TimeZone, "is required (an IANA name such as Europe/Berlin)".into()));
        }
        let zone = TimeZone::get(zone_name)
            .map_err(|_| refuse(HoursPart::TimeZone, format!("{zone_name:?} is not a known IANA time zone")))?;
        Ok(ActiveHours { start_minute, end_minute, zone_name: zone_name.to_string(), zone })
    }

    /// Parses the stored (or requested) value `{start, end, timeZone}`.
    pub fn from_value(value: &Value) -> Result<ActiveHours, String> {
        ActiveHours::from_object(value.as_object().ok_or("activeHours must be an object {start, end, timeZone}")?)
    }

    /// Parses the stored object `{start, end, timeZone}`.
    pub fn from_object(object: &serde_json::Map<String, Value>) -> Result<ActiveHours, String> {
        let field = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        ActiveHours::new(field("start"), field("end"), field("timeZone"))
    }

    /// The stored form.
    pub fn to_value(&self) -> Value {
        Value::Object(self.to_object())
    }

    /// The stored form, as the goal record keeps it.
    pub fn to_object(&self) -> serde_json::Map<String, Value> {
        let mut object = serde_json::Map::new();
        object.insert("start".into(), json!(format_minute(self.start_minute)));
        object.insert("end".into(), json!(format_minute(self.end_minute)));
        object.insert("timeZone".into(), json!(self.zone_name));
        object
    }

    /// A short human form, `09:00–17:00 Europe/Berlin`.
    pub fn describe(&self) -> String {
        format!("{}–{} {}", format_minute(self.start_minute), format_minute(self.end_minute), self.zone_name)
    }

    fn contains_minute(&self, minute: u16) -> bool {
        if self.start_minute < self.end_minute {
            (self.start_minute..self.end_minute).contains(&minute)
        } else {
            minute >= self.start_minute || minute < self.end_minute
        }
    }

    /// Whether the wall clock of the zone at `now_ms` is inside the window.
    pub fn contains(&self, now_ms: f64) -> bool {
        let Some(now) = timestamp(now_ms) else { return true };
        let time = now.to_zoned_datetime(self.zone.clone()).time();
        self.contains_minute(time.hour() as u16 * 60 + time.minute() as u16)
    }

    /// The next instant after `now_ms` at which the window opens (ms since epoch). `None` only
    /// for clock values outside the representable range.
    pub fn next_start(&self, now_ms: f64) -> Option<f64> {
        let now = timestamp(now_ms)?;
        let mut date = now.to_zoned_datetime(self.zone.clone()).date();
        // The start of today may have passed; tomorrow's always exists (two days cover a
        // transition that swallows one day's start).
        for _ in 0..3 {
            if let Some(opening) = self.opening_on(date) {
                if opening > now {
                    return Some(opening.as_millisecond() as f64);
                }
            }
            date = date.tomorrow().ok()?;
        }
        None
    }

    /// The first instant of `date` whose wall clock reaches the start.
    fn opening_on(&self, date: Date) -> Option<Timestamp> {
        let start = Time::new((self.start_minute / 60) as i8, (self.start_minute % 60) as i8, 0, 0).ok()?;
        let civil = DateTime::from_parts(date, start);
        let zoned = civil.to_zoned_datetime(self.zone.clone()).ok()?;
        if zoned.datetime() == civil {
            return Some(zoned.timestamp());
        }
        // The start falls in a skipped hour: the wall clock jumps past it at the transition.
        let transition = self.zone.preceding(zoned.timestamp()).next()?;
        Some(transition.timestamp())
    }
}

fn timestamp(ms: f64) -> Option<Timestamp> {
    if !ms.is_finite() {
        return None;
    }
    Timestamp::from_millisecond(ms as i64).ok()
}

/// What the working-hours gate says for a goal at `now_ms`.
#[derive(Debug, Clone, PartialEq)]
pub enum HoursGate {
    /// No window, or inside it.
    Open,
    /// Outside: wait until this instant (ms since epoch).
    WaitUntil(f64),
}

/// [`gate`] of a goal's stored working hours.
pub fn goal_gate(goal: &crate::record::Goal, now_ms: f64) -> HoursGate {
    gate(goal.active_hours.get(), now_ms)
}

/// Reads the goal's window (an invalid stored window is ignored: it was validated when set, and
/// a hand-edited one must not stop the loop) and decides.
pub fn gate(active_hours: Option<&serde_json::Map<String, Value>>, now_ms: f64) -> HoursGate {
    let Some(hours) = active_hours.and_then(|object| ActiveHours::from_object(object).ok()) else {
        return HoursGate::Open;
    };
    if hours.contains(now_ms) {
        return HoursGate::Open;
    }
    match hours.next_start(now_ms) {
        Some(at) => HoursGate::WaitUntil(at),
        None => HoursGate::Open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> f64 {
        text.parse::<Timestamp>().unwrap().as_millisecond() as f64
    }

    fn iso(ms: f64) -> String {
        Timestamp::from_millisecond(ms as i64).unwrap().to_string()
    }

    #[test]
    fn parses_and_refuses_clearly() {
        assert_eq!(parse_hh_mm("09:05"), Some(545));
        assert_eq!(parse_hh_mm("23:59"), Some(1439));
        for bad in ["9:00", "24:00", "12:60", "12-00", "ab:cd", "", "12:000", "١٢:٠٠"] {
            assert_eq!(parse_hh_mm(bad), None, "{bad}");
        }
        assert!(ActiveHours::new("09:00", "17:00", "Europe/Berlin").is_ok());
        assert!(ActiveHours::new("09:00", "17:00", "Mars/Olympus").unwrap_err().contains("not a known IANA"));
        assert!(ActiveHours::new("09:00", "17:00", "").unwrap_err().contains("required"));
        assert!(ActiveHours::new("9", "17:00", "UTC").unwrap_err().contains("start"));
        assert!(ActiveHours::new("09:00", "25:00", "UTC").unwrap_err().contains("end"));
        assert!(ActiveHours::new("09:00", "09:00", "UTC").unwrap_err().contains("differ"));
        assert_eq!(
            ActiveHours::new("09:00", "17:00", "Mars/Olympus").unwrap_err(),
            "activeHours.timeZone \"Mars/Olympus\" is not a known IANA time zone"
        );
        let problem = ActiveHours::check("09:00", "17:00", "Mars/Olympus").unwrap_err();
        assert_eq!(problem.part, HoursPart::TimeZone);
        assert_eq!(problem.text, "\"Mars/Olympus\" is not a known IANA time zone");
        assert!(ActiveHours::new("09:00", "17:00", "../../etc/passwd").is_err());
        assert!(ActiveHours::from_value(&json!("09:00-17:00")).is_err());
        let round =
            ActiveHours::from_value(&json!({"start": "08:30", "end": "18:00", "timeZone": "Asia/Tokyo"})).unwrap();
        assert_eq!(round.to_value(), json!({"start": "08:30", "end": "18:00", "timeZone": "Asia/Tokyo"}));
    }

    #[test]
    fn start_inclusive_end_exclusive() {
        let hours = ActiveHours::new("09:00", "17:00", "UTC").unwrap();
        assert!(!hours.contains(ms("2026-06-01T08:59:59Z")));
        assert!(hours.contains(ms("2026-06-01T09:00:00Z")));
        assert!(hours.contains(ms("2026-06-01T16:59:59Z")));
        assert!(!hours.contains(ms("2026-06-01T17:00:00Z")));
        assert_eq!(iso(hours.next_start(ms("2026-06-01T17:00:00Z")).unwrap()), "2026-06-02T09:00:00Z");
        assert_eq!(iso(hours.next_start(ms("2026-06-01T03:00:00Z")).unwrap()), "2026-06-01T09:00:00Z");
    }

    #[test]
    fn window_across_midnight() {
        let hours = ActiveHours::new("22:00", "06:00", "Europe/Berlin").unwrap();
        // Berlin is UTC+2 in June.
        assert!(hours.contains(ms("2026-06-01T20:00:00Z")), "22:00 local");
        assert!(hours.contains(ms("2026-06-01T23:30:00Z")), "01:30 local");
        assert!(hours.contains(ms("2026-06-02T03:59:00Z")), "05:59 local");
        assert!(!hours.contains(ms("2026-06-02T04:00:00Z")), "06:00 local");
        assert!(!hours.contains(ms("2026-06-02T12:00:00Z")));
        assert_eq!(iso(hours.next_start(ms("2026-06-02T12:00:00Z")).unwrap()), "2026-06-02T20:00:00Z");
    }

    #[test]
    fn spring_forward_day() {
        // New York, 2026-03-08: 02:00 EST jumps to 03:00 EDT.
        let hours = ActiveHours::new("09:00", "17:00", "America/New_York").unwrap();
        assert_eq!(iso(hours.next_start(ms("2026-03-07T23:00:00Z")).unwrap()), "2026-03-08T13:00:00Z", "09:00 EDT");
        assert_eq!(
            iso(hours.next_start(ms("2026-03-07T12:00:00Z")).unwrap()),
            "2026-03-07T14:00:00Z",
            "09:00 EST the day before"
        );
        // A start inside the skipped hour opens at the transition (03:00 EDT = 07:00Z).
        let skipped = ActiveHours::new("02:30", "05:00", "America/New_York").unwrap();
        let open = skipped.next_start(ms("2026-03-08T05:00:00Z")).unwrap();
        assert_eq!(iso(open), "2026-03-08T07:00:00Z");
        assert!(skipped.contains(open));
        assert!(!skipped.contains(open - 1.0));
    }

    #[test]
    fn fall_back_day() {
        // New York, 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
        let hours = ActiveHours::new("01:30", "03:00", "America/New_York").unwrap();
        let open = hours.next_start(ms("2026-11-01T04:00:00Z")).unwrap();
        assert_eq!(iso(open), "2026-11-01T05:30:00Z", "first 01:30 (EDT)");
        // Inside for the whole repeated hour and until 03:00 EST.
        assert!(hours.contains(ms("2026-11-01T05:45:00Z")), "01:45 EDT");
        assert!(!hours.contains(ms("2026-11-01T06:15:00Z")), "01:15 EST (second pass) is before the start again");
        assert!(hours.contains(ms("2026-11-01T06:45:00Z")), "01:45 EST");
        assert!(!hours.contains(ms("2026-11-01T08:00:00Z")), "03:00 EST");
        let evening = ActiveHours::new("18:00", "08:00", "America/New_York").unwrap();
        assert_eq!(iso(evening.next_start(ms("2026-11-01T14:00:00Z")).unwrap()), "2026-11-01T23:00:00Z", "18:00 EST");
    }

    #[test]
    fn gate_reads_the_goal_field() {
        let mut extra = serde_json::Map::new();
        assert_eq!(
            gate(extra.get("activeHours").and_then(Value::as_object), ms("2026-06-01T03:00:00Z")),
            HoursGate::Open
        );
        extra.insert("activeHours".into(), json!({"start": "09:00", "end": "17:00", "timeZone": "UTC"}));
        assert_eq!(
            gate(extra.get("activeHours").and_then(Value::as_object), ms("2026-06-01T03:00:00Z")),
            HoursGate::WaitUntil(ms("2026-06-01T09:00:00Z"))
        );
        assert_eq!(
            gate(extra.get("activeHours").and_then(Value::as_object), ms("2026-06-01T10:00:00Z")),
            HoursGate::Open
        );
        extra.insert("activeHours".into(), json!({"start": "nope"}));
        assert_eq!(
            gate(extra.get("activeHours").and_then(Value::as_object), ms("2026-06-01T03:00:00Z")),
            HoursGate::Open,
            "a hand-broken window never stops the loop"
        );
    }
}
