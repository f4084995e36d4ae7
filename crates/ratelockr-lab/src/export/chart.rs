//! A run's decisions per second as a chart: allowed on top, denied below, one line per
//! algorithm, drawn with plotters to PNG or SVG (chosen by the file's extension).
//!
//! Compared at equal nominal limits, some algorithms draw the very same line (GCRA with burst =
//! limit decides exactly as the token bucket; the counter often tracks the log). So each has a
//! stroke as well as a colour: GCRA and the counter are dashed, drawn over the solid lines, and
//! an equal pair shows as a solid line with dashes of the other colour along it.

pub use super::canvas::ChartFormat;
use super::canvas::{self, DrawResult, Picture};
use super::ExportError;
use crate::sim::{Report, Series, Subject};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use ratelockr::rule::AlgorithmKind;
use std::path::Path;

/// The chart's size in pixels.
pub const SIZE: (u32, u32) = (1200, 820);

/// One colour per algorithm, readable on white.
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),  // token bucket: blue
    RGBColor(148, 103, 189), // GCRA: purple
    RGBColor(44, 160, 44),   // sliding log: green
    RGBColor(140, 86, 75),   // sliding counter: brown
    RGBColor(255, 127, 14),  // fixed window: orange
    RGBColor(214, 39, 40),   // naive: red
    RGBColor(227, 119, 194), // concurrency: pink
    RGBColor(188, 189, 34),  // calendar: olive
    RGBColor(127, 127, 127), // anything else: grey
];

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stroke {
    Solid,
    /// Dashes and gaps, in pixels.
    Dashed(u32, u32),
}

/// What a chart shows: series of allowed and denied counts per bucket (a second, or
/// coarser), one line per rule.
#[derive(Debug, Clone)]
pub struct ChartData<'a> {
    pub title: &'a str,
    pub subtitle: String,
    /// The x axis's description.
    pub x_desc: String,
    /// The bucket's name in the y axes' descriptions (`s`: "allowed / s").
    pub per: String,
    /// Buckets to show.
    pub buckets: u64,
    pub series: &'a [Series],
}

/// Draws `report` to `path`, PNG or SVG by its extension.
pub fn render_chart(report: &Report, path: &Path) -> Result<(), ExportError> {
    // A last second the run barely entered would draw a misleading drop to zero.
    let covered = ((report.duration_ms + 500) / 1000).max(1);
    let seconds = report
        .series
        .iter()
        .map(|s| s.points.len() as u64)
        .max()
        .unwrap_or(1)
        .min(covered);
    render_series(
        &ChartData {
            title: "Decisions per second",
            subtitle: report.workload.clone(),
            x_desc: "seconds since the run started".into(),
            per: "s".into(),
            buckets: seconds,
            series: &report.series,
        },
        path,
    )
}

/// Draws `data` to `path`, PNG or SVG by its extension.
pub fn render_series(data: &ChartData<'_>, path: &Path) -> Result<(), ExportError> {
    ChartFormat::from_path(path)?;
    if data.series.iter().all(|s| s.points.is_empty()) {
        return Err(ExportError::Empty);
    }
    canvas::render(data, SIZE, path)
}

impl Picture for ChartData<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        draw(root, self)
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ChartData<'_>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (title_area, body) = root.split_vertically(70);
    title_area.draw(&Text::new(
        data.title,
        (24, 12),
        ("sans-serif", 28).into_font().color(&BLACK),
    ))?;
    title_area.draw(&Text::new(
        data.subtitle.clone(),
        (24, 46),
        ("sans-serif", 17).into_font().color(&RGBColor(80, 80, 80)),
    ))?;
    let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
    let buckets = data.buckets.max(2);
    let allowed = format!("allowed / {}", data.per);
    let denied = format!("denied / {}", data.per);
    panel(&top, data, buckets, &allowed, |p| p.allowed, true)?;
    panel(&bottom, data, buckets, &denied, |p| p.denied, false)?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    data: &ChartData<'_>,
    seconds: u64,
    label: &str,
    value: fn(&crate::sim::SeriesPoint) -> u64,
    legend: bool,
) -> DrawResult<DB> {
    let peak = data
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(value))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut chart = canvas::panel(
        area,
        0.0..(seconds - 1) as f64,
        0.0..(peak + peak / 8 + 1) as f64,
        70,
        &data.x_desc,
        label,
    )?;
    // The naive limiter is drawn first and thinner, so the real limiters stay on top of it;
    // dashed lines come last, so a solid line they coincide with shows between their dashes.
    let mut order: Vec<&Series> = data.series.iter().collect();
    order.sort_by_key(|s| (!is_naive(s), stroke(s) != Stroke::Solid));
    for series in order {
        let color = colour(series);
        let style = ShapeStyle::from(&color).stroke_width(if is_naive(series) { 2 } else { 3 });
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .take(seconds as usize)
            .map(|p| (p.second as f64, value(p) as f64))
            .collect();
        let drawn = match stroke(series) {
            Stroke::Solid => chart.draw_series(LineSeries::new(points, style))?,
            Stroke::Dashed(dash, gap) => {
                chart.draw_series(DashedLineSeries::new(points, dash, gap, style))?
            }
        };
        let mark = stroke(series);
        drawn.label(legend_label(series)).legend(
            move |(x, y)| -> DynElement<'static, DB, (i32, i32)> {
                let ends = vec![(x, y), (x + 24, y)];
                let style = color.stroke_width(3);
                match mark {
                    Stroke::Solid => PathElement::new(ends, style).into_dyn(),
                    Stroke::Dashed(dash, gap) => {
                        DashedPathElement::new(ends, dash.min(7), gap.min(4), style).into_dyn()
                    }
                }
            },
        );
    }
    if !legend {
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 15))
        .draw()?;
    Ok(())
}

/// Each algorithm keeps its colour from chart to chart.
fn colour(series: &Series) -> RGBColor {
    PALETTE[match series.algorithm {
        Subject::Algorithm(AlgorithmKind::TokenBucket) => 0,
        Subject::Algorithm(AlgorithmKind::Gcra) => 1,
        Subject::Algorithm(AlgorithmKind::SlidingWindowLog) => 2,
        Subject::Algorithm(AlgorithmKind::SlidingWindowCounter) => 3,
        Subject::Algorithm(AlgorithmKind::FixedWindow) => 4,
        Subject::NaiveGetSet => 5,
        Subject::Algorithm(AlgorithmKind::Concurrency) => 6,
        Subject::Algorithm(AlgorithmKind::Calendar) => 8,
        Subject::Policy => 7,
    }]
}

/// GCRA's long dashes over the token bucket, the counter's short ones over the log.
fn stroke(series: &Series) -> Stroke {
    match series.algorithm {
        Subject::Algorithm(AlgorithmKind::Gcra) => Stroke::Dashed(14, 10),
        Subject::Algorithm(AlgorithmKind::SlidingWindowCounter) => Stroke::Dashed(5, 7),
        _ => Stroke::Solid,
    }
}

fn is_naive(series: &Series) -> bool {
    series.algorithm == Subject::NaiveGetSet
}

fn legend_label(series: &Series) -> String {
    let algorithm = match series.algorithm {
        Subject::NaiveGetSet => "naive GET then SET: broken, races",
        Subject::Algorithm(AlgorithmKind::TokenBucket) => "token bucket",
        Subject::Algorithm(AlgorithmKind::Gcra) => "GCRA",
        Subject::Algorithm(AlgorithmKind::SlidingWindowLog) => "sliding window log",
        Subject::Algorithm(AlgorithmKind::SlidingWindowCounter) => "sliding window counter",
        Subject::Algorithm(AlgorithmKind::FixedWindow) => "fixed window",
        Subject::Algorithm(AlgorithmKind::Concurrency) => "concurrency",
        Subject::Algorithm(AlgorithmKind::Calendar) => "calendar",
        Subject::Policy => "policy",
    };
    if series
        .rule
        .replace('-', " ")
        .eq_ignore_ascii_case(algorithm)
        || (is_naive(series) && series.rule == "naive")
    {
        algorithm.to_string()
    } else {
        format!("{} ({algorithm})", series.rule)
    }
}
