//! A run chart as a view: what one screen of the run chart shows (panels of styled lines over
//! one time axis, a zoomed x range, a client key's state), as data. The app sends the view the
//! user is looking at, so the exported file is that view; the CLI builds its default view from
//! a run's [`Timeline`]. Either way [`super::run_chart`] draws it, and every colour and dash
//! comes from [`super::style`], the one table the screen reads too.

use super::style::{algorithm_style, envelope, outcome_style, LineStyle, Outcome};
use super::timeline::{KeyTrace, Timeline};
use super::ExportError;
use ratelockr::rule::Algorithm;
use serde::{Deserialize, Serialize};

/// At most this many panels, lines per panel and points per line: a view is a screenful, and
/// the bound keeps a malformed one from taking the process down.
pub const MAX_PANELS: usize = 16;
pub const MAX_LINES: usize = 64;
pub const MAX_POINTS: usize = 200_000;

/// What one line looks like: the style table's colour, dash and width, as the screen drew it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Look {
    /// `#rrggbb`.
    pub colour: String,
    /// `[dash, gap]` in pixels; empty: solid.
    pub dash: Vec<u32>,
    pub width: f64,
}

impl From<LineStyle> for Look {
    fn from(s: LineStyle) -> Self {
        Look {
            colour: s.colour.to_string(),
            dash: s.dash.to_vec(),
            width: f64::from(s.width),
        }
    }
}

/// One line of a panel, its values at the view's `x`.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewLine {
    /// The legend's name for it.
    pub label: String,
    pub look: Look,
    /// One value per `x`; null where there is none (a gap).
    pub values: Vec<Option<f64>>,
    /// A count per bin holds from its bin's start to the next one (a step); a running total
    /// or a bound is joined point to point.
    pub stepped: bool,
}

/// One panel: a rule's lines (side by side), or every line (one chart).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewPanel {
    pub title: String,
    /// The y axis: `requests / 100 ms`, `admitted so far`.
    pub y_label: String,
    pub lines: Vec<ViewLine>,
    /// This panel's own y maximum, over the view's: a count of another kind (requests in
    /// flight beside requests per bin). Absent: the view's, else its own lines'.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y_max: Option<f64>,
}

/// A client key's limiter state under the panels, on the same x range.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyStateView {
    /// `client-3 on fixed-window`.
    pub title: String,
    /// `tokens left` or `remaining`.
    pub label: String,
    /// Seconds from the run's start.
    pub x: Vec<f64>,
    /// After each decision; null where nothing is known.
    pub values: Vec<Option<f64>>,
    /// The most the limiter can hold.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<f64>,
}

/// A run chart as drawn.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartView {
    pub title: String,
    pub subtitle: String,
    /// Seconds from the run's start, shared by every panel's lines.
    pub x: Vec<f64>,
    /// The x range shown (after a zoom or pan); absent: all of `x`.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_range: Option<[f64; 2]>,
    /// One y maximum for every panel (the algorithms compared on one scale); absent: each
    /// panel its own.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y_max: Option<f64>,
    /// Panels per row.
    pub columns: u32,
    pub panels: Vec<ViewPanel>,
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_state: Option<KeyStateView>,
}

fn invalid(field: &str, reason: impl Into<String>) -> ExportError {
    ExportError::InvalidView {
        field: field.to_string(),
        reason: reason.into(),
    }
}

fn finite(v: f64) -> bool {
    v.is_finite()
}

impl ChartView {
    /// Refuses a view that cannot be drawn as it says, naming the field.
    pub fn validate(&self) -> Result<(), ExportError> {
        if self.x.is_empty() {
            return Err(ExportError::Empty);
        }
        if self.x.len() > MAX_POINTS {
            return Err(invalid("x", format!("at most {MAX_POINTS} points")));
        }
        if !self.x.iter().copied().all(finite) || self.x.windows(2).any(|w| w[1] < w[0]) {
            return Err(invalid("x", "must be finite seconds in increasing order"));
        }
        if let Some([lo, hi]) = self.x_range {
            if !(finite(lo) && finite(hi) && lo < hi) {
                return Err(invalid(
                    "x_range",
                    format!("must be [from, to] with from < to, got [{lo}, {hi}]"),
                ));
            }
        }
        if self.y_max.is_some_and(|y| !finite(y) || y < 0.0) {
            return Err(invalid("y_max", "must be a finite number ≥ 0"));
        }
        if !(1..=8).contains(&self.columns) {
            return Err(invalid("columns", "must be 1 to 8"));
        }
        if self.panels.is_empty() || self.panels.len() > MAX_PANELS {
            return Err(invalid("panels", format!("must hold 1 to {MAX_PANELS}")));
        }
        for (p, panel) in self.panels.iter().enumerate() {
            if panel.y_max.is_some_and(|y| !finite(y) || y < 0.0) {
                return Err(invalid(
                    &format!("panels[{p}].y_max"),
                    "must be a finite number ≥ 0",
                ));
            }
            if panel.lines.len() > MAX_LINES {
                return Err(invalid(
                    &format!("panels[{p}].lines"),
                    format!("at most {MAX_LINES}"),
                ));
            }
            for (l, line) in panel.lines.iter().enumerate() {
                let field = format!("panels[{p}].lines[{l}]");
                if line.values.len() != self.x.len() {
                    return Err(invalid(
                        &format!("{field}.values"),
                        format!(
                            "has {} values for {} x points",
                            line.values.len(),
                            self.x.len()
                        ),
                    ));
                }
                if line.values.iter().flatten().any(|v| !finite(*v)) {
                    return Err(invalid(&format!("{field}.values"), "must be finite"));
                }
                check_look(&line.look, &format!("{field}.look"))?;
            }
        }
        if let Some(key) = &self.key_state {
            if key.x.len() != key.values.len() || key.x.len() > MAX_POINTS {
                return Err(invalid(
                    "key_state.values",
                    format!(
                        "one value per x point, at most {MAX_POINTS} (got {} for {})",
                        key.values.len(),
                        key.x.len()
                    ),
                ));
            }
            if !key.x.iter().copied().all(finite)
                || key.values.iter().flatten().any(|v| !finite(*v))
                || key.ceiling.is_some_and(|c| !finite(c))
            {
                return Err(invalid("key_state", "must hold finite numbers"));
            }
        }
        Ok(())
    }

    /// The x range to draw: the zoom, else all of `x`.
    pub fn range(&self) -> (f64, f64) {
        match self.x_range {
            Some([lo, hi]) => (lo, hi),
            None => {
                let lo = self.x.first().copied().unwrap_or(0.0);
                let hi = self.x.last().copied().unwrap_or(1.0);
                (lo, if hi > lo { hi } else { lo + 0.001 })
            }
        }
    }

    /// The CLI's view of a run: requests per bin on top (one rule: offered, allowed, denied
    /// and fail-open; several: allowed per algorithm over the offered traffic), admitted so
    /// far under each rule's envelope below.
    pub fn of_timeline(timeline: &Timeline, title: &str, subtitle: &str) -> ChartView {
        Self::of_timeline_showing(timeline, title, subtitle, Shown::Both)
    }

    /// [`ChartView::of_timeline`] with only the panels `shown`, and the traced key's state
    /// ([`super::TimelineBuilder::with_key`]) under them.
    pub fn of_timeline_showing(
        timeline: &Timeline,
        title: &str,
        subtitle: &str,
        shown: Shown,
    ) -> ChartView {
        let bins = timeline.bins();
        let secs = |bin: usize| (bin as u64 * timeline.bin_ms) as f64 / 1000.0;
        // One point per bin start and one at the end, so the last bin's step has its width.
        let x: Vec<f64> = (0..=bins).map(secs).collect();
        let per_bin = |values: &[u64]| -> Vec<Option<f64>> {
            let mut v: Vec<Option<f64>> = values.iter().map(|n| Some(*n as f64)).collect();
            v.push(values.last().map(|n| *n as f64));
            v
        };
        let line = |label: String, style: LineStyle, values, stepped| ViewLine {
            label,
            look: style.into(),
            values,
            stepped,
        };
        let mut rates = Vec::new();
        if let [one] = timeline.targets.as_slice() {
            for (outcome, values) in [
                (Outcome::Offered, &one.offered),
                (Outcome::Allowed, &one.allowed),
                (Outcome::Denied, &one.denied),
                (Outcome::FailOpen, &one.fail_open),
            ] {
                if outcome == Outcome::FailOpen && values.iter().all(|v| *v == 0) {
                    continue;
                }
                rates.push(line(
                    outcome.as_str().replace('_', "-"),
                    outcome_style(outcome),
                    per_bin(values),
                    true,
                ));
            }
        } else {
            if let Some(first) = timeline.targets.first() {
                rates.push(line(
                    "offered".into(),
                    outcome_style(Outcome::Offered),
                    per_bin(&first.offered),
                    true,
                ));
            }
            for t in &timeline.targets {
                rates.push(line(
                    format!("{} allowed", t.rule),
                    algorithm_style(t.subject),
                    per_bin(&t.allowed),
                    true,
                ));
            }
        }
        let mut so_far = Vec::new();
        // Equal envelopes (the two windows of a compare run) are one line with both names,
        // not one line hiding another.
        let mut envelopes: Vec<(Vec<Option<f64>>, usize)> = Vec::new();
        for t in &timeline.targets {
            let mut total = 0u64;
            let mut values = vec![Some(0.0)];
            values.extend(t.allowed.iter().map(|v| {
                total += v;
                Some(total as f64)
            }));
            let style = if timeline.targets.len() == 1 {
                outcome_style(Outcome::Allowed)
            } else {
                algorithm_style(t.subject)
            };
            so_far.push(line(format!("{} admitted", t.rule), style, values, false));
            // No envelope for the naive limiter, nor for a limit on requests in flight: it
            // bounds how many at once, not how many over time (its panel is in flight's).
            if t.naive || matches!(t.algorithm, Algorithm::Concurrency { .. }) {
                continue;
            }
            let keys = t.keys.max(1) as f64;
            let bound: Vec<Option<f64>> = (0..=bins)
                .map(|i| Some(envelope(&t.algorithm, i as u64 * timeline.bin_ms) * keys))
                .collect();
            if let Some((_, at)) = envelopes.iter().find(|(b, _)| *b == bound) {
                let l: &mut ViewLine = &mut so_far[*at];
                l.label = l
                    .label
                    .replacen(" envelope", &format!(", {} envelope", t.rule), 1);
                continue;
            }
            let mut style = outcome_style(Outcome::Envelope);
            if timeline.targets.len() > 1 {
                style.colour = algorithm_style(t.subject).colour;
            }
            let keys = if t.keys == 1 {
                "1 key".to_string()
            } else {
                format!("{} keys", t.keys)
            };
            envelopes.push((bound.clone(), so_far.len()));
            so_far.push(line(
                format!("{} envelope ({keys})", t.rule),
                style,
                bound,
                false,
            ));
        }
        let end = x.last().copied().unwrap_or(0.0);
        let mut panels = Vec::new();
        if shown != Shown::Cumulative {
            panels.push(ViewPanel {
                title: format!("Requests per {} ms", timeline.bin_ms),
                y_label: format!("requests / {} ms", timeline.bin_ms),
                lines: rates,
                y_max: None,
            });
        }
        if shown != Shown::PerBin {
            panels.push(ViewPanel {
                title: "Admitted so far, under the rule's envelope".into(),
                y_label: "admitted so far".into(),
                lines: so_far,
                y_max: None,
            });
        }
        if let Some(panel) = in_flight_panel(timeline, &per_bin) {
            panels.push(panel);
        }
        ChartView {
            title: title.to_string(),
            subtitle: subtitle.to_string(),
            x,
            x_range: None,
            y_max: None,
            columns: 1,
            panels,
            key_state: timeline
                .key
                .as_ref()
                .filter(|k| !k.points.is_empty())
                .map(|k| key_state(k, end)),
        }
    }
}

/// A run with holds: requests in flight per target (the busiest key's, per bin), under each
/// concurrency limit's own limit. None without holds.
fn in_flight_panel(
    timeline: &Timeline,
    per_bin: &dyn Fn(&[u64]) -> Vec<Option<f64>>,
) -> Option<ViewPanel> {
    if timeline.targets.iter().all(|t| t.in_flight.is_empty()) {
        return None;
    }
    let one = timeline.targets.len() == 1;
    let mut lines = Vec::new();
    for t in timeline.targets.iter().filter(|t| !t.in_flight.is_empty()) {
        let style = if one {
            outcome_style(Outcome::Allowed)
        } else {
            algorithm_style(t.subject)
        };
        lines.push(ViewLine {
            label: format!("{} in flight", t.rule),
            look: style.into(),
            values: per_bin(&t.in_flight),
            stepped: true,
        });
        if let (Algorithm::Concurrency { limit, .. }, false) = (t.algorithm, t.naive) {
            let mut bound = outcome_style(Outcome::Envelope);
            bound.colour = style.colour;
            lines.push(ViewLine {
                label: format!("{} limit ({limit})", t.rule),
                look: bound.into(),
                values: vec![Some(limit as f64); t.in_flight.len() + 1],
                stepped: false,
            });
        }
    }
    Some(ViewPanel {
        title: "Requests in flight at once (the busiest key)".into(),
        y_label: "in flight".into(),
        lines,
        y_max: None,
    })
}

/// Which of the timeline's two panels a view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Both,
    PerBin,
    Cumulative,
}

/// A traced key as the panel under the chart: unknown before its first decision and after its
/// last, under the most the rule can hold.
fn key_state(trace: &KeyTrace, end_s: f64) -> KeyStateView {
    let (label, ceiling) = match trace.algorithm {
        Algorithm::TokenBucket { capacity, .. } => ("tokens left", capacity),
        Algorithm::Gcra { burst, .. } => ("remaining", burst),
        Algorithm::SlidingWindowLog { limit, .. }
        | Algorithm::SlidingWindowCounter { limit, .. }
        | Algorithm::FixedWindow { limit, .. } => ("remaining", limit),
        Algorithm::Concurrency { limit, .. } => ("slots free", limit),
        Algorithm::Calendar { limit, .. } => ("remaining", limit),
    };
    let mut x = vec![0.0];
    let mut values = vec![None];
    for (t, v) in &trace.points {
        x.push(*t as f64 / 1000.0);
        values.push(v.map(|v| v as f64));
    }
    x.push(end_s.max(x.last().copied().unwrap_or(0.0)));
    values.push(None);
    KeyStateView {
        title: format!("{} on {}", trace.key, trace.rule),
        label: label.into(),
        x,
        values,
        ceiling: Some(ceiling as f64),
    }
}

fn check_look(look: &Look, field: &str) -> Result<(), ExportError> {
    let hex = look.colour.strip_prefix('#').unwrap_or("");
    if hex.len() != 6 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid(
            &format!("{field}.colour"),
            format!("must be #rrggbb, got {:?}", look.colour),
        ));
    }
    if !(look.width.is_finite() && look.width > 0.0 && look.width <= 12.0) {
        return Err(invalid(&format!("{field}.width"), "must be 0 to 12 pixels"));
    }
    if look.dash.len() > 8 || look.dash.iter().any(|d| *d > 64) {
        return Err(invalid(
            &format!("{field}.dash"),
            "at most 8 lengths of 0 to 64 pixels",
        ));
    }
    Ok(())
}
