//! A run's decisions per second as a chart: allowed on top, denied below, one line per
//! algorithm, drawn with plotters to PNG or SVG (chosen by the file's extension).

use super::ExportError;
use crate::sim::{Report, Series};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// The chart's size in pixels.
pub const SIZE: (u32, u32) = (1200, 820);

/// The font is embedded (DejaVu Sans, see assets/DejaVuSans.LICENSE) so that charts render the
/// same on a machine without fontconfig or fonts.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
static REGISTER_FONT: Once = Once::new();

/// One colour per algorithm, readable on white.
const PALETTE: [RGBColor; 5] = [
    RGBColor(31, 119, 180),  // token bucket: blue
    RGBColor(44, 160, 44),   // sliding log: green
    RGBColor(255, 127, 14),  // fixed window: orange
    RGBColor(214, 39, 40),   // naive: red
    RGBColor(148, 103, 189), // anything else: purple
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartFormat {
    Png,
    Svg,
}

impl ChartFormat {
    /// The format a file name asks for.
    pub fn from_path(path: &Path) -> Result<Self, ExportError> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("png") => Ok(ChartFormat::Png),
            Some("svg") => Ok(ChartFormat::Svg),
            _ => Err(ExportError::UnknownFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

pub(crate) fn register_font() {
    REGISTER_FONT.call_once(|| {
        // Registering a valid embedded font cannot fail; if it did, text would be missing, not
        // the chart.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Draws `report` to `path`, PNG or SVG by its extension.
pub fn render_chart(report: &Report, path: &Path) -> Result<(), ExportError> {
    let format = ChartFormat::from_path(path)?;
    if report.series.iter().all(|s| s.points.is_empty()) {
        return Err(ExportError::Empty);
    }
    register_font();
    let fail = |e: &dyn std::fmt::Display| ExportError::Chart {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    match format {
        ChartFormat::Png => {
            let root = BitMapBackend::new(path, SIZE).into_drawing_area();
            draw(&root, report).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))
        }
        ChartFormat::Svg => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            draw(&root, report).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))
        }
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, report: &Report) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (title_area, body) = root.split_vertically(70);
    title_area.draw(&Text::new(
        "Decisions per second",
        (24, 12),
        ("sans-serif", 28).into_font().color(&BLACK),
    ))?;
    title_area.draw(&Text::new(
        report.workload.clone(),
        (24, 46),
        ("sans-serif", 17).into_font().color(&RGBColor(80, 80, 80)),
    ))?;
    let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
    // A last second the run barely entered would draw a misleading drop to zero.
    let covered = ((report.duration_ms + 500) / 1000).max(1);
    let seconds = report
        .series
        .iter()
        .map(|s| s.points.len() as u64)
        .max()
        .unwrap_or(1)
        .min(covered)
        .max(2);
    panel(&top, report, seconds, "allowed / s", |p| p.allowed, true)?;
    panel(&bottom, report, seconds, "denied / s", |p| p.denied, false)?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    report: &Report,
    seconds: u64,
    label: &str,
    value: fn(&crate::sim::SeriesPoint) -> u64,
    legend: bool,
) -> DrawResult<DB> {
    let peak = report
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(value))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut chart = ChartBuilder::on(area)
        .margin_left(16)
        .margin_right(28)
        .margin_top(8)
        .margin_bottom(8)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0u64..seconds - 1, 0u64..(peak + peak / 8 + 1))?;
    chart
        .configure_mesh()
        .x_desc("seconds since the run started")
        .y_desc(label)
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    // The naive limiter is drawn first and thinner, so the real limiters stay on top of it.
    let mut order: Vec<&Series> = report.series.iter().collect();
    order.sort_by_key(|s| !is_naive(s));
    for series in order {
        let color = colour(series);
        let style = ShapeStyle::from(&color).stroke_width(if is_naive(series) { 2 } else { 3 });
        chart
            .draw_series(LineSeries::new(
                series
                    .points
                    .iter()
                    .take(seconds as usize)
                    .map(|p| (p.second, value(p))),
                style,
            ))?
            .label(legend_label(series))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
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
    PALETTE[match series.algorithm.as_str() {
        "token_bucket" => 0,
        "sliding_window_log" => 1,
        "fixed_window" => 2,
        crate::sim::naive::NAIVE_LABEL => 3,
        _ => 4,
    }]
}

fn is_naive(series: &Series) -> bool {
    series.algorithm == crate::sim::naive::NAIVE_LABEL
}

fn legend_label(series: &Series) -> String {
    let algorithm = if is_naive(series) {
        "naive GET then SET: broken, races"
    } else {
        match series.algorithm.as_str() {
            "token_bucket" => "token bucket",
            "sliding_window_log" => "sliding window log",
            "fixed_window" => "fixed window",
            other => other,
        }
    };
    if series.rule.replace('-', " ") == algorithm || (is_naive(series) && series.rule == "naive") {
        algorithm.to_string()
    } else {
        format!("{} ({algorithm})", series.rule)
    }
}
