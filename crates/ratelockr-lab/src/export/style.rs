//! What the run chart looks like, decided once for the exported files and the app's screen:
//! the bin width that fits a run (defined in `crate::bins`, which the workload preview shares;
//! re-exported here), each algorithm's colour and dash, the outcome colours, a key's state, the
//! overlaid runs' colours, and the rule's envelope. The app generates a TypeScript constant
//! from [`chart_style`], so the screen and the file cannot drift apart.

pub use crate::bins::{bin_ms, BinStep, BIN_STEPS};
use crate::subject::Subject;
use ratelockr::rule::{Algorithm, AlgorithmKind};
use serde::Serialize;

/// How one line is drawn.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineStyle {
    /// `#rrggbb`.
    pub colour: &'static str,
    /// `[dash, gap]` in pixels, `[]` solid: distinct per algorithm, so equal lines stay
    /// visible (the sliding log's under the fixed window's, GCRA's on the token bucket's).
    pub dash: &'static [u32],
    pub width: u32,
}

/// Per subject (a script, the naive limiter; by its label in records, which the app's
/// generated constant is keyed by), the line's look.
pub const ALGORITHMS: [(&str, LineStyle); 9] = [
    ("token_bucket", TOKEN_BUCKET),
    ("sliding_window_log", SLIDING_WINDOW_LOG),
    ("fixed_window", FIXED_WINDOW),
    ("naive_get_set", NAIVE_GET_SET),
    ("gcra", GCRA),
    ("sliding_window_counter", SLIDING_WINDOW_COUNTER),
    ("concurrency", CONCURRENCY),
    ("calendar", CALENDAR),
    ("other", OTHER),
];

const TOKEN_BUCKET: LineStyle = line("#1f77b4", &[], 3);
const SLIDING_WINDOW_LOG: LineStyle = line("#2ca02c", &[10, 5], 3);
const FIXED_WINDOW: LineStyle = line("#ff7f0e", &[3, 4], 3);
const NAIVE_GET_SET: LineStyle = line("#d62728", &[16, 6], 2);
const GCRA: LineStyle = line("#17becf", &[8, 3], 3);
const SLIDING_WINDOW_COUNTER: LineStyle = line("#8c564b", &[5, 5], 3);
const CONCURRENCY: LineStyle = line("#e377c2", &[2, 3], 3);
const CALENDAR: LineStyle = line("#bcbd22", &[6, 2, 2, 2], 3);
/// A line that is none of the above (a policy's).
const OTHER: LineStyle = line("#9467bd", &[12, 3], 3);

/// Per outcome (by [`Outcome::as_str`]), the line's look in a single-rule chart.
pub const OUTCOMES: [(&str, LineStyle); 5] = [
    ("offered", OFFERED),
    ("allowed", ALLOWED),
    ("denied", DENIED),
    ("fail_open", FAIL_OPEN),
    ("envelope", ENVELOPE),
];

const OFFERED: LineStyle = line("#7f7f7f", &[4, 4], 2);
const ALLOWED: LineStyle = line("#2ca02c", &[], 3);
const DENIED: LineStyle = line("#d62728", &[], 3);
const FAIL_OPEN: LineStyle = line("#9467bd", &[8, 3], 3);
const ENVELOPE: LineStyle = line("#444444", &[3, 3], 2);

/// A line of a single-rule chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Offered,
    Allowed,
    Denied,
    FailOpen,
    /// The most the rule could have admitted.
    Envelope,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Offered,
        Outcome::Allowed,
        Outcome::Denied,
        Outcome::FailOpen,
        Outcome::Envelope,
    ];

    /// Its key in [`OUTCOMES`] and the app's constant: `offered`, ..., `fail_open`, `envelope`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Offered => "offered",
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::FailOpen => "fail_open",
            Outcome::Envelope => "envelope",
        }
    }
}

/// One client key's limiter state drawn under the run: its value after each decision, and the
/// most it can hold (the rule's capacity, burst or limit).
pub const KEY_STATE: [(&str, LineStyle); 2] = [("state", STATE), ("ceiling", CEILING)];

const STATE: LineStyle = line("#4f46e5", &[], 2);
const CEILING: LineStyle = line("#0f172a", &[8, 4], 1);

/// A line of a key's state panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStateLine {
    /// The key's value after each decision.
    State,
    /// The most it can hold.
    Ceiling,
}

impl KeyStateLine {
    pub const ALL: [KeyStateLine; 2] = [KeyStateLine::State, KeyStateLine::Ceiling];

    /// Its key in [`KEY_STATE`] and the app's constant.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyStateLine::State => "state",
            KeyStateLine::Ceiling => "ceiling",
        }
    }
}

/// Colours that tell overlaid runs apart (the selected run first), in this order, repeating.
pub const RUNS: [&str; 6] = [
    "#4f46e5", "#db2777", "#0891b2", "#65a30d", "#b45309", "#7c3aed",
];

/// The dash of an overlaid run's admissions in the side-by-side panels.
pub const OVERLAY_DASH: [u32; 2] = [6, 3];

const fn line(colour: &'static str, dash: &'static [u32], width: u32) -> LineStyle {
    LineStyle {
        colour,
        dash,
        width,
    }
}

/// The look of a subject's line.
pub fn algorithm_style(subject: Subject) -> LineStyle {
    match subject {
        Subject::Algorithm(AlgorithmKind::TokenBucket) => TOKEN_BUCKET,
        Subject::Algorithm(AlgorithmKind::SlidingWindowLog) => SLIDING_WINDOW_LOG,
        Subject::Algorithm(AlgorithmKind::FixedWindow) => FIXED_WINDOW,
        Subject::NaiveGetSet => NAIVE_GET_SET,
        Subject::Algorithm(AlgorithmKind::Gcra) => GCRA,
        Subject::Algorithm(AlgorithmKind::SlidingWindowCounter) => SLIDING_WINDOW_COUNTER,
        Subject::Algorithm(AlgorithmKind::Concurrency) => CONCURRENCY,
        Subject::Algorithm(AlgorithmKind::Calendar) => CALENDAR,
        Subject::Policy => OTHER,
    }
}

/// The look of a key-state line.
pub fn key_state_style(line: KeyStateLine) -> LineStyle {
    match line {
        KeyStateLine::State => STATE,
        KeyStateLine::Ceiling => CEILING,
    }
}

/// The colour of the `i`th run drawn (0: the selected run).
pub fn run_colour(i: usize) -> &'static str {
    RUNS[i % RUNS.len()]
}

/// The look of an outcome's line.
pub fn outcome_style(outcome: Outcome) -> LineStyle {
    match outcome {
        Outcome::Offered => OFFERED,
        Outcome::Allowed => ALLOWED,
        Outcome::Denied => DENIED,
        Outcome::FailOpen => FAIL_OPEN,
        Outcome::Envelope => ENVELOPE,
    }
}

/// The rule's envelope: the most it could have admitted for one client key from its first
/// request to `t_ms` later, cumulative ([`Algorithm::max_admitted`], the same bound the
/// summary's `over_admitted` checks), so a line above it is a limiter over-admitting.
pub fn envelope(algorithm: &Algorithm, t_ms: u64) -> f64 {
    algorithm.max_admitted(t_ms) as f64
}

/// Everything above, as one value for the app to export as a TypeScript constant.
#[derive(Debug, Clone, Serialize)]
pub struct ChartStyle {
    pub bins: &'static [BinStep],
    pub algorithms: std::collections::BTreeMap<&'static str, LineStyle>,
    pub outcomes: std::collections::BTreeMap<&'static str, LineStyle>,
    pub key_state: std::collections::BTreeMap<&'static str, LineStyle>,
    pub runs: &'static [&'static str],
    pub overlay_dash: &'static [u32],
}

pub fn chart_style() -> ChartStyle {
    ChartStyle {
        bins: &BIN_STEPS,
        algorithms: ALGORITHMS.into_iter().collect(),
        outcomes: OUTCOMES.into_iter().collect(),
        key_state: KEY_STATE.into_iter().collect(),
        runs: &RUNS,
        overlay_dash: &OVERLAY_DASH,
    }
}

/// `#rrggbb` as RGB.
pub fn rgb(colour: &str) -> (u8, u8, u8) {
    let hex = colour.trim_start_matches('#');
    let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    (byte(0), byte(2), byte(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithms_differ_in_dash_and_envelopes_follow_the_rules() {
        for (i, (_, a)) in ALGORITHMS.iter().enumerate() {
            for (_, b) in &ALGORITHMS[i + 1..] {
                assert!(a.dash != b.dash && a.colour != b.colour);
            }
        }
        assert_eq!(rgb("#ff7f0e"), (255, 127, 14));
        let bucket = Algorithm::TokenBucket {
            capacity: 20,
            refill_per_sec: 10.0,
        };
        assert_eq!(envelope(&bucket, 0), 20.0);
        assert_eq!(envelope(&bucket, 1_500), 35.0);
        let window = Algorithm::FixedWindow {
            limit: 5,
            window_ms: 1000,
        };
        assert_eq!(envelope(&window, 999), 5.0);
        assert_eq!(envelope(&window, 1_000), 10.0);
        let json = serde_json::to_value(chart_style()).expect("serializes");
        assert_eq!(json["bins"][9]["up_to_ms"], serde_json::Value::Null);
        assert_eq!(json["algorithms"]["fixed_window"]["colour"], "#ff7f0e");
        // The lookup and the table the app gets agree, subject by subject.
        for subject in Subject::ALL {
            let keyed = ALGORITHMS
                .iter()
                .find(|(name, _)| *name == subject.as_str())
                .map_or(ALGORITHMS[ALGORITHMS.len() - 1].1, |(_, s)| *s);
            assert_eq!(algorithm_style(subject), keyed, "{subject}");
        }
        for outcome in Outcome::ALL {
            let keyed = OUTCOMES.iter().find(|(name, _)| *name == outcome.as_str());
            assert_eq!(Some(outcome_style(outcome)), keyed.map(|(_, s)| *s));
        }
        for part in KeyStateLine::ALL {
            let keyed = KEY_STATE.iter().find(|(name, _)| *name == part.as_str());
            assert_eq!(Some(key_state_style(part)), keyed.map(|(_, s)| *s));
        }
    }
}
