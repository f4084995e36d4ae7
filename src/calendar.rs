//! Calendar quotas: a limit per calendar hour, day, week or month in a time zone, the way
//! "2,000 requests a day" is sold (a day of the customer's, midnight to midnight, 23 or 25 hours
//! across a daylight-saving change), not a rolling 86,400,000 ms.
//!
//! Lua in Redis has no time-zone database, so the engine works out where the periods begin
//! around its own clock (from the IANA database bundled by `jiff`) and hands the script that
//! list of instants; the script takes the window that holds the Redis server's time. An
//! instance whose clock is off by up to [`REACH_MS`] still counts into Redis's window.
//!
//! **Where a period begins.** A window is the time whose local date (and hour) in the zone falls
//! in one calendar period; it begins at the period's first local instant: its civil start (the
//! hour's :00, midnight, the week's first day at midnight, the 1st at midnight) resolved as
//! `jiff`'s compatible disambiguation does: a start skipped by a clock change begins where the
//! clock lands (a day that starts at 01:00), a repeated one at its first occurrence (so a
//! repeated local hour is one window of two real hours, as a 25-hour day is one day).

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

/// A calendar word that is not one (a period, a zone, a week's first day): the field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {parameter}: {reason}")]
pub struct CalendarError {
    pub parameter: &'static str,
    pub reason: String,
}

/// How far the windows sent with a decision reach either side of the engine's own clock: a
/// Redis clock up to this far from it still finds its window among them.
pub const REACH_MS: i64 = 2 * 3600 * 1000;

/// The latest time a calendar quota decides: 9999-10-01T00:00:00Z, so that every window the
/// engine works out around it (a month, and the reach either side) is still a date the
/// time-zone library holds (years up to 9999). A caller's `now_ms` past it is refused.
pub const LATEST_MS: i64 = 253_394_352_000_000;

/// An explicit time a calendar quota can decide at, or the error naming `now_ms`.
pub fn check_time(at_ms: u64) -> Result<(), CalendarError> {
    if at_ms > LATEST_MS as u64 {
        return Err(CalendarError {
            parameter: "now_ms",
            reason: format!(
                "{at_ms} is past the latest time a calendar quota decides ({LATEST_MS} ms since the epoch, 9999-10-01)"
            ),
        });
    }
    Ok(())
}

/// The calendar period a quota counts in.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Hour,
    Day,
    Week,
    Month,
}

impl Period {
    pub const ALL: [Period; 4] = [Period::Hour, Period::Day, Period::Week, Period::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The period's usual length: what a long-run rate and comparisons take it as.
    pub fn nominal_ms(self) -> u64 {
        const HOUR: u64 = 3_600_000;
        match self {
            Period::Hour => HOUR,
            Period::Day => 24 * HOUR,
            Period::Week => 7 * 24 * HOUR,
            // 365.2425 days / 12: the Gregorian calendar's mean month.
            Period::Month => 2_629_746_000,
        }
    }

    /// The shortest a window of this period can be: a local hour skipped in part by a
    /// 30-minute clock change (Lord Howe Island), a 23-hour day, a week or a 28-day February
    /// with a spring-forward change in it.
    pub fn shortest_ms(self) -> u64 {
        const HOUR: u64 = 3_600_000;
        match self {
            Period::Hour => HOUR / 2,
            Period::Day => 23 * HOUR,
            Period::Week => 7 * 24 * HOUR - HOUR,
            Period::Month => 28 * 24 * HOUR - HOUR,
        }
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Period {
    type Err = CalendarError;
    fn from_str(s: &str) -> Result<Self, CalendarError> {
        Period::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| CalendarError {
                parameter: "period",
                reason: format!("must be hour, day, week or month, got {s:?}"),
            })
    }
}

/// The first day of a week.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeekStart {
    #[default]
    Monday,
    Sunday,
}

impl WeekStart {
    pub fn as_str(self) -> &'static str {
        match self {
            WeekStart::Monday => "monday",
            WeekStart::Sunday => "sunday",
        }
    }

    /// Days since the week began, on `date`.
    fn days_into(self, date: Date) -> i8 {
        match self {
            WeekStart::Monday => date.weekday().to_monday_zero_offset(),
            WeekStart::Sunday => date.weekday().to_sunday_zero_offset(),
        }
    }
}

impl std::str::FromStr for WeekStart {
    type Err = CalendarError;
    fn from_str(s: &str) -> Result<Self, CalendarError> {
        match s {
            "monday" => Ok(WeekStart::Monday),
            "sunday" => Ok(WeekStart::Sunday),
            _ => Err(CalendarError {
                parameter: "week_start",
                reason: format!("must be monday or sunday, got {s:?}"),
            }),
        }
    }
}

/// An IANA time zone the bundled database knows (`Europe/Berlin`, `UTC`), by its canonical
/// spelling. A copyable name: each zone's name is kept once for the life of the process (there
/// are some 600), with its parsed rules beside it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimeZoneName(&'static str);

/// Every zone named so far, by the spelling it was asked for and by its canonical one.
static ZONES: LazyLock<Mutex<BTreeMap<String, (TimeZoneName, TimeZone)>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

impl TimeZoneName {
    pub const UTC: TimeZoneName = TimeZoneName("UTC");

    /// Looks the zone up in the bundled IANA database (case does not matter); an unknown
    /// zone is refused with its name.
    pub fn new(name: &str) -> Result<Self, CalendarError> {
        let mut zones = ZONES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((known, _)) = zones.get(name) {
            return Ok(*known);
        }
        let unknown = || {
            CalendarError {
            parameter: "time_zone",
            reason: format!(
                "unknown time zone {name:?}: use an IANA name such as UTC, Europe/Berlin or America/New_York"
            ),
        }
        };
        let zone = TimeZone::get(name).map_err(|_| unknown())?;
        let canonical = zone.iana_name().ok_or_else(unknown)?.to_string();
        let entry = match zones.get(&canonical) {
            Some(entry) => entry.clone(),
            None => {
                let leaked: &'static str = Box::leak(canonical.clone().into_boxed_str());
                (TimeZoneName(leaked), zone)
            }
        };
        zones.insert(canonical, entry.clone());
        zones.insert(name.to_string(), entry.clone());
        Ok(entry.0)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The zone's rules.
    pub fn zone(self) -> TimeZone {
        if self == TimeZoneName::UTC {
            return TimeZone::UTC;
        }
        let zones = ZONES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match zones.get(self.0) {
            Some((_, zone)) => zone.clone(),
            // Only `new` makes a name other than UTC, and it keeps the rules.
            None => TimeZone::UTC,
        }
    }
}

impl Default for TimeZoneName {
    fn default() -> Self {
        TimeZoneName::UTC
    }
}

impl fmt::Debug for TimeZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for TimeZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::str::FromStr for TimeZoneName {
    type Err = CalendarError;
    fn from_str(s: &str) -> Result<Self, CalendarError> {
        TimeZoneName::new(s)
    }
}

impl Serialize for TimeZoneName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for TimeZoneName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        TimeZoneName::new(&name).map_err(serde::de::Error::custom)
    }
}

/// A calendar quota's calendar: the period, the zone and the week's first day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Calendar {
    pub period: Period,
    pub time_zone: TimeZoneName,
    pub week_start: WeekStart,
}

impl Calendar {
    /// The window that holds `at_ms`: its start and its end, in ms since the epoch.
    pub fn window_at(&self, at_ms: i64) -> (i64, i64) {
        self.with_list(at_ms, |list| {
            // (Within the list: a time past the library's dates has the last window.)
            let i = list
                .edges
                .partition_point(|&edge| edge <= at_ms)
                .clamp(1, list.edges.len() - 1);
            (list.edges[i - 1], list.edges[i])
        })
    }

    /// Where the windows begin from the one holding `from_ms` to the first beginning after
    /// `to_ms`, ascending: every window of the span, whole.
    pub fn edges(&self, from_ms: i64, to_ms: i64) -> Vec<i64> {
        // Within the dates the library holds (a caller's time is checked against LATEST_MS
        // before it gets here; this only keeps a stray one from looping).
        let (from_ms, to_ms) = (from_ms.clamp(0, LATEST_MS), to_ms.clamp(0, LATEST_MS));
        let zone = self.time_zone.zone();
        let civil = |ms: i64| {
            Timestamp::from_millisecond(ms)
                .unwrap_or(Timestamp::UNIX_EPOCH)
                .to_zoned_datetime(zone.clone())
                .datetime()
        };
        // Every period's civil start from one before `from_ms`'s to one after `to_ms`'s,
        // resolved; a clock change may resolve two starts out of order or to one instant, so
        // they are sorted and each kept once.
        let mut start = self.civil_start(civil(from_ms));
        start = self.step(start, -1);
        let mut edges = Vec::new();
        let mut past_end = 0;
        // Bounded however the calendar steps: a span of hours holds a few dozen periods.
        let mut steps = 0;
        while past_end < 2 && steps < 10_000 {
            steps += 1;
            let edge = self.resolve(start, &zone);
            if edge > to_ms {
                past_end += 1;
            }
            edges.push(edge);
            start = self.step(start, 1);
        }
        edges.sort_unstable();
        edges.dedup();
        // Keep from the last edge at or before from_ms to the first after to_ms.
        let first = edges.partition_point(|&edge| edge <= from_ms).max(1) - 1;
        let last = edges.partition_point(|&edge| edge <= to_ms);
        edges[first..=last.min(edges.len() - 1)].to_vec()
    }

    /// The civil start of the period that holds `dt`.
    fn civil_start(&self, dt: DateTime) -> DateTime {
        let date = dt.date();
        match self.period {
            Period::Hour => DateTime::from_parts(
                date,
                Time::new(dt.hour(), 0, 0, 0).unwrap_or(Time::midnight()),
            ),
            Period::Day => DateTime::from_parts(date, Time::midnight()),
            Period::Week => {
                let back = jiff::Span::new().days(i64::from(self.week_start.days_into(date)));
                DateTime::from_parts(date.checked_sub(back).unwrap_or(date), Time::midnight())
            }
            Period::Month => DateTime::from_parts(date.first_of_month(), Time::midnight()),
        }
    }

    /// The civil start `n` periods after `start` (one of [`Calendar::civil_start`]'s).
    fn step(&self, start: DateTime, n: i64) -> DateTime {
        let span = match self.period {
            Period::Hour => jiff::Span::new().hours(n),
            Period::Day => jiff::Span::new().days(n),
            Period::Week => jiff::Span::new().weeks(n),
            Period::Month => jiff::Span::new().months(n),
        };
        start.checked_add(span).unwrap_or(start)
    }

    /// A civil start as an instant: jiff's compatible disambiguation (a skipped start begins
    /// where the clock lands, a repeated one at its first occurrence).
    fn resolve(&self, start: DateTime, zone: &TimeZone) -> i64 {
        start
            .to_zoned_datetime(zone.clone())
            .map(|zdt| zdt.timestamp().as_millisecond())
            .unwrap_or(0)
    }

    /// The windows' beginnings a decision at `at_ms` sends (the script's windows argument):
    /// [`REACH_MS`] either side, as text `b0,b1,...`.
    pub fn windows_arg(&self, at_ms: i64) -> Arc<str> {
        self.with_list(at_ms, |list| list.text.clone())
    }

    /// `f` of the windows around `at_ms`, [`REACH_MS`] either side at least. Kept per thread and
    /// calendar, and worked out again only when `at_ms` comes within [`REACH_MS`] of the list's
    /// ends: a decision, and its headers' window, do no time-zone arithmetic.
    fn with_list<R>(&self, at_ms: i64, f: impl FnOnce(&WindowList) -> R) -> R {
        thread_local! {
            static LISTS: std::cell::RefCell<Vec<WindowList>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        LISTS.with(|lists| {
            let mut lists = lists.borrow_mut();
            let covers = |list: &WindowList| {
                list.calendar == *self
                    && list.edges[0] <= at_ms - REACH_MS
                    && at_ms + REACH_MS < list.edges[list.edges.len() - 1]
            };
            if let Some(list) = lists.iter().find(|list| covers(list)) {
                return f(list);
            }
            // Reach further than needed, so the list serves a while.
            let edges = self.edges(at_ms - 2 * REACH_MS, at_ms + 2 * REACH_MS);
            let text: Arc<str> = edges
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(",")
                .into();
            let entry = WindowList {
                calendar: *self,
                edges,
                text,
            };
            let answer = f(&entry);
            match lists.iter_mut().find(|list| list.calendar == *self) {
                Some(slot) => *slot = entry,
                None => {
                    // A process has few calendars; a bound keeps a pathological one in check.
                    if lists.len() >= 64 {
                        lists.remove(0);
                    }
                    lists.push(entry);
                }
            }
            answer
        })
    }
}

/// A calendar's windows as last worked out on a thread: where they begin (ascending, the span
/// it covers from the first to the last), and the same as the script's argument.
#[derive(Debug)]
struct WindowList {
    calendar: Calendar,
    edges: Vec<i64>,
    text: Arc<str>,
}

/// Milliseconds since the epoch by this machine's clock.
pub(crate) fn local_now_ms() -> i64 {
    Timestamp::now().as_millisecond()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().expect("an instant").as_millisecond()
    }

    fn calendar(period: Period, zone: &str) -> Calendar {
        Calendar {
            period,
            time_zone: TimeZoneName::new(zone).expect("a zone"),
            week_start: WeekStart::Monday,
        }
    }

    #[test]
    fn a_day_across_daylight_saving_changes_is_23_or_25_hours() {
        let berlin = calendar(Period::Day, "Europe/Berlin");
        // 2026-03-29: clocks go from 02:00 to 03:00.
        let (start, end) = berlin.window_at(ms("2026-03-29T10:00:00Z"));
        assert_eq!(start, ms("2026-03-28T23:00:00Z"));
        assert_eq!(end, ms("2026-03-29T22:00:00Z"));
        assert_eq!(end - start, 23 * 3_600_000);
        // 2026-10-25: from 03:00 back to 02:00.
        let (start, end) = berlin.window_at(ms("2026-10-25T10:00:00Z"));
        assert_eq!(end - start, 25 * 3_600_000);
    }

    #[test]
    fn a_repeated_local_hour_is_one_window_and_a_skipped_half_hour_shortens_one() {
        let new_york = calendar(Period::Hour, "America/New_York");
        // 2026-11-01 01:00 EDT .. 02:00 EST: 01:xx happens twice.
        let (start, end) = new_york.window_at(ms("2026-11-01T06:30:00Z"));
        assert_eq!(
            (start, end),
            (ms("2026-11-01T05:00:00Z"), ms("2026-11-01T07:00:00Z"))
        );
        // Lord Howe, 2026-10-04: 02:00 (+10:30) becomes 02:30 (+11): the 2 o'clock hour is 30 min.
        let lord_howe = calendar(Period::Hour, "Australia/Lord_Howe");
        let (start, end) = lord_howe.window_at(ms("2026-10-03T15:40:00Z"));
        assert_eq!(end - start, 30 * 60_000);
    }

    #[test]
    fn weeks_and_months_begin_where_the_calendar_says() {
        let mut kolkata = calendar(Period::Week, "Asia/Kolkata");
        // Wednesday 2026-12-09 12:00 IST.
        let at = ms("2026-12-09T06:30:00Z");
        assert_eq!(kolkata.window_at(at).0, ms("2026-12-06T18:30:00Z")); // Monday 00:00 IST
        kolkata.week_start = WeekStart::Sunday;
        assert_eq!(kolkata.window_at(at).0, ms("2026-12-05T18:30:00Z"));
        let utc = calendar(Period::Month, "UTC");
        let (start, end) = utc.window_at(ms("2028-02-15T00:00:00Z"));
        assert_eq!(
            (start, end),
            (ms("2028-02-01T00:00:00Z"), ms("2028-03-01T00:00:00Z"))
        );
    }

    #[test]
    fn the_windows_argument_reaches_either_side_of_the_clock() {
        let hourly = calendar(Period::Hour, "Europe/Berlin");
        let at = ms("2026-12-07T10:20:00Z");
        let edges: Vec<i64> = hourly
            .windows_arg(at)
            .split(',')
            .map(|edge| edge.parse().expect("ms"))
            .collect();
        assert!(edges.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(edges[0] <= at - REACH_MS && at + REACH_MS < edges[edges.len() - 1]);
        // The same list serves a minute later.
        assert_eq!(hourly.windows_arg(at + 60_000), hourly.windows_arg(at));
    }

    #[test]
    fn a_time_past_the_librarys_dates_is_refused_and_never_loops() {
        assert!(check_time(LATEST_MS as u64).is_ok());
        let err = check_time(LATEST_MS as u64 + 1).expect_err("past 9999-10-01");
        assert_eq!(err.parameter, "now_ms");
        // A stray one (not checked first) still ends, with windows of the latest dates.
        let monthly = calendar(Period::Month, "Pacific/Kiritimati");
        assert!(!monthly.edges(i64::MAX - 1, i64::MAX).is_empty());
        assert!(!calendar(Period::Hour, "UTC").edges(-5, 0).is_empty());
    }

    #[test]
    fn unknown_zones_are_refused_by_name_and_names_are_canonical() {
        let err = TimeZoneName::new("Europe/Berln").expect_err("no such zone");
        assert!(err.to_string().contains("Europe/Berln"), "{err}");
        assert_eq!(
            TimeZoneName::new("europe/berlin").map(TimeZoneName::as_str),
            Ok("Europe/Berlin")
        );
    }
}
