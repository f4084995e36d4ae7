//! The run chart as a file: the run's own timeline at the bin width that fits it, in the
//! colours, dashes and markers the app's screen uses ([`super::style`]).
//!
//! Top: requests per bin. One rule: offered, allowed, denied and fail-open. Several (compare):
//! allowed per algorithm, all on one y-scale, with the offered traffic behind. Bottom: admitted
//! so far per rule, under the rule's envelope (the most it could admit for the keys it saw).

use super::chart::{register_font, ChartFormat, SIZE};
use super::style::{algorithm_style, envelope, outcome_style, rgb, LineStyle};
use super::timeline::{Timeline, TimelineBuilder};
use super::ExportError;
use crate::sim::{Report, SimSpec};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Reads a kept run's CSV into its timeline.
pub fn timeline_from_csv(
    report: &Report,
    spec: &SimSpec,
    csv: &Path,
) -> Result<Timeline, ExportError> {
    let mut builder = TimelineBuilder::new(spec, report.started_at_ms);
    super::csv::for_each_record(csv, |r| builder.add(&r))?;
    Ok(builder.finish(report.duration_ms))
}

/// Draws `timeline` to `path`, PNG or SVG by its extension (never another path).
pub fn render_run_chart(timeline: &Timeline, title: &str, path: &Path) -> Result<(), ExportError> {
    let format = ChartFormat::from_path(path)?;
    if timeline.bins() == 0 {
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
            draw(&root, timeline, title).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))
        }
        ChartFormat::Svg => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            draw(&root, timeline, title).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))
        }
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn colour(style: &LineStyle) -> RGBColor {
    let (r, g, b) = rgb(style.colour);
    RGBColor(r, g, b)
}

/// One line: its points, label and look.
struct Line {
    label: String,
    points: Vec<(f64, f64)>,
    style: LineStyle,
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    timeline: &Timeline,
    title: &str,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (title_area, body) = root.split_vertically(70);
    title_area.draw(&Text::new(
        format!("Requests per {} ms", timeline.bin_ms),
        (24, 12),
        ("sans-serif", 28).into_font().color(&BLACK),
    ))?;
    title_area.draw(&Text::new(
        title.to_string(),
        (24, 46),
        ("sans-serif", 17).into_font().color(&RGBColor(80, 80, 80)),
    ))?;
    let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 * 55 / 100);
    let secs = |bin: usize| (bin as u64 * timeline.bin_ms) as f64 / 1000.0;
    let per_bin = |values: &[u64]| -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (secs(i), *v as f64))
            .collect()
    };
    let mut rates = Vec::new();
    if let [one] = timeline.targets.as_slice() {
        for (name, values) in [
            ("offered", &one.offered),
            ("allowed", &one.allowed),
            ("denied", &one.denied),
            ("fail_open", &one.fail_open),
        ] {
            if name == "fail_open" && values.iter().all(|v| *v == 0) {
                continue;
            }
            rates.push(Line {
                label: name.replace('_', "-"),
                points: per_bin(values),
                style: outcome_style(name),
            });
        }
    } else {
        if let Some(first) = timeline.targets.first() {
            rates.push(Line {
                label: "offered".into(),
                points: per_bin(&first.offered),
                style: outcome_style("offered"),
            });
        }
        for t in &timeline.targets {
            rates.push(Line {
                label: format!("{} allowed", t.rule),
                points: per_bin(&t.allowed),
                style: algorithm_style(&t.label),
            });
        }
    }
    let end = secs(timeline.bins());
    panel(
        &top,
        &rates,
        end,
        &format!("requests / {} ms", timeline.bin_ms),
    )?;

    let mut cumulative: Vec<Line> = Vec::new();
    // Envelopes drawn so far, so that equal ones (the two windows in a compare run) are one
    // line with both names instead of one line hiding another.
    let mut envelopes: Vec<(Vec<(f64, f64)>, usize)> = Vec::new();
    for t in &timeline.targets {
        let mut total = 0u64;
        let points = t
            .allowed
            .iter()
            .enumerate()
            .map(|(i, v)| {
                total += v;
                (secs(i + 1), total as f64)
            })
            .collect();
        cumulative.push(Line {
            label: format!("{} admitted", t.rule),
            points,
            style: if timeline.targets.len() == 1 {
                outcome_style("allowed")
            } else {
                algorithm_style(&t.label)
            },
        });
        if t.naive {
            continue;
        }
        let keys = t.keys.max(1) as f64;
        let steps = timeline.bins().max(1);
        let points: Vec<(f64, f64)> = (0..=steps)
            .map(|i| {
                let t_ms = i as u64 * timeline.bin_ms;
                (secs(i), envelope(&t.algorithm, t_ms) * keys)
            })
            .collect();
        let keys = if t.keys == 1 {
            "1 key".to_string()
        } else {
            format!("{} keys", t.keys)
        };
        if let Some((_, at)) = envelopes.iter().find(|(p, _)| *p == points) {
            let line = &mut cumulative[*at];
            line.label = line
                .label
                .replacen(" envelope", &format!(", {} envelope", t.rule), 1);
            continue;
        }
        let mut style = outcome_style("envelope");
        if timeline.targets.len() > 1 {
            style.colour = algorithm_style(&t.label).colour;
        }
        envelopes.push((points.clone(), cumulative.len()));
        cumulative.push(Line {
            label: format!("{} envelope ({keys})", t.rule),
            points,
            style,
        });
    }
    panel(&bottom, &cumulative, end, "admitted so far")
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[Line],
    end_s: f64,
    label: &str,
) -> DrawResult<DB> {
    let peak = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(area)
        .margin_left(16)
        .margin_right(28)
        .margin_top(8)
        .margin_bottom(8)
        .x_label_area_size(44)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..end_s.max(0.001), 0.0..peak * 1.12)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the run started")
        .y_desc(label)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    for line in lines {
        let c = colour(&line.style);
        let shape = ShapeStyle::from(&c).stroke_width(line.style.width);
        let points = line.points.clone();
        let series = match line.style.dash {
            [dash, gap, ..] => chart.draw_series(DashedLineSeries::new(
                points.clone(),
                *dash as i32,
                *gap as i32,
                shape,
            ))?,
            _ => chart.draw_series(LineSeries::new(points.clone(), shape))?,
        };
        let style = line.style;
        series.label(line.label.clone()).legend(move |(x, y)| {
            let c = colour(&style);
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (24, 0)], c.stroke_width(3))
                + marker_at(&style, (12, 0))
        });
        // Markers on a thinned set of points, so equal lines stay told apart.
        if line.style.marker != "none" {
            let every = (points.len() / 40).max(1);
            chart.draw_series(
                points
                    .iter()
                    .step_by(every)
                    .map(|p| EmptyElement::at(*p) + marker_at(&style, (0, 0))),
            )?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 15))
        .draw()?;
    Ok(())
}

/// The marker of `style` at a pixel offset from a point, as one filled polygon (a circle is
/// drawn as an octagon), so every marker has one type whatever the backend.
fn marker_at(style: &LineStyle, at: (i32, i32)) -> Polygon<(i32, i32)> {
    let c = colour(style);
    let (x, y) = at;
    let points = match style.marker {
        "circle" => vec![
            (x - 2, y - 4),
            (x + 2, y - 4),
            (x + 4, y - 2),
            (x + 4, y + 2),
            (x + 2, y + 4),
            (x - 2, y + 4),
            (x - 4, y + 2),
            (x - 4, y - 2),
        ],
        "square" => vec![
            (x - 4, y - 4),
            (x + 4, y - 4),
            (x + 4, y + 4),
            (x - 4, y + 4),
        ],
        "triangle" => vec![(x, y - 5), (x + 5, y + 4), (x - 5, y + 4)],
        "diamond" => vec![(x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y)],
        _ => vec![(x, y)],
    };
    Polygon::new(points, c.filled())
}
