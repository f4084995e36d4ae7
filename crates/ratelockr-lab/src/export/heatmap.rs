//! A sweep as two heatmaps side by side: the percentage of requests denied and of keys denied
//! at least once, for each configuration of a grid of one or two parameters.

use super::canvas::{ChartFormat, DrawResult, Picture};
use super::ExportError;
use crate::replay::ReplayReport;
use crate::sweep::SweepPoint;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const SIZE: (u32, u32) = (1200, 620);

/// Draws the sweep of a replay's `report` to `path` (PNG or SVG).
pub fn render(report: &ReplayReport, path: &Path) -> Result<(), ExportError> {
    let title = format!(
        "Sweep of {} on {} ({} requests, {} keys)",
        report.rules.first().map_or("", |r| r.rule.as_str()),
        report.source,
        report.requests,
        report.keys
    );
    render_points(&report.sweep, &title, path)
}

/// Draws any sweep's `points` (a replay's or a simulation's) under `title` to `path`.
pub fn render_points(points: &[SweepPoint], title: &str, path: &Path) -> Result<(), ExportError> {
    ChartFormat::from_path(path)?;
    let grid = Grid::of(points, title).ok_or(ExportError::Empty)?;
    super::canvas::render(&grid, SIZE, path)
}

impl Picture for Grid {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        draw(root, self)
    }
}

/// The sweep as a grid: x values, y values (one row for a one-parameter sweep) and, per cell,
/// the two percentages.
struct Grid {
    x_name: String,
    y_name: Option<String>,
    xs: Vec<f64>,
    ys: Vec<f64>,
    /// (x index, y index, % requests denied, % keys denied)
    cells: Vec<(usize, usize, f64, f64)>,
    title: String,
}

impl Grid {
    fn of(sweep: &[SweepPoint], title: &str) -> Option<Grid> {
        let first = sweep.first()?;
        let mut names = first.params.keys();
        let x_name = names.next()?.clone();
        let y_name = names.next().cloned();
        let mut xs: Vec<f64> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        for p in sweep {
            let x = *p.params.get(&x_name)?;
            if !xs.contains(&x) {
                xs.push(x);
            }
            let y = y_name
                .as_ref()
                .map_or(Some(0.0), |n| p.params.get(n).copied())?;
            if !ys.contains(&y) {
                ys.push(y);
            }
        }
        xs.sort_by(f64::total_cmp);
        ys.sort_by(f64::total_cmp);
        let cells = sweep
            .iter()
            .filter_map(|p| {
                let x = *p.params.get(&x_name)?;
                let y = y_name
                    .as_ref()
                    .map_or(Some(0.0), |n| p.params.get(n).copied())?;
                Some((
                    xs.iter().position(|v| *v == x)?,
                    ys.iter().position(|v| *v == y)?,
                    p.denied_pct,
                    p.keys_denied_pct,
                ))
            })
            .collect();
        Some(Grid {
            x_name,
            y_name,
            xs,
            ys,
            cells,
            title: title.to_string(),
        })
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, grid: &Grid) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(60);
    title.draw(&Text::new(
        grid.title.clone(),
        (24, 16),
        ("sans-serif", 24).into_font().color(&BLACK),
    ))?;
    let (left, right) = body.split_horizontally(body.dim_in_pixel().0 / 2);
    panel(&left, grid, "% of requests denied", |c| c.2)?;
    panel(&right, grid, "% of keys denied at least once", |c| c.3)?;
    Ok(())
}

/// White (0 %) to deep red (100 %).
fn shade(pct: f64) -> RGBColor {
    let t = (pct / 100.0).clamp(0.0, 1.0).sqrt();
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(mix(255.0, 165.0), mix(255.0, 15.0), mix(255.0, 21.0))
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    grid: &Grid,
    caption: &str,
    value: fn(&(usize, usize, f64, f64)) -> f64,
) -> DrawResult<DB> {
    let (nx, ny) = (grid.xs.len(), grid.ys.len());
    let label = |values: &[f64], i: usize| values.get(i).map(|v| v.to_string()).unwrap_or_default();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(if grid.y_name.is_some() { 70 } else { 20 })
        // A segmented range a..b has a segment for every value from a to b inclusive; a
        // one-parameter sweep is one row drawn over two segments (a range of one would have
        // no height).
        .build_cartesian_2d(
            (0..nx.saturating_sub(1)).into_segmented(),
            (0..ny.max(2) - 1).into_segmented(),
        )?;
    let one_row = ny == 1;
    let xs = grid.xs.clone();
    let ys = grid.ys.clone();
    let has_y = grid.y_name.is_some();
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(grid.x_name.as_str())
        .y_desc(grid.y_name.as_deref().unwrap_or(""))
        .x_labels(nx)
        .y_labels(ny)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => label(&xs, *i),
            _ => String::new(),
        })
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if has_y => label(&ys, *i),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()?;
    chart.draw_series(grid.cells.iter().map(|c| {
        Rectangle::new(
            [
                (SegmentValue::Exact(c.0), SegmentValue::Exact(c.1)),
                (
                    SegmentValue::Exact(c.0 + 1),
                    SegmentValue::Exact(if one_row { 2 } else { c.1 + 1 }),
                ),
            ],
            shade(value(c)).filled(),
        )
    }))?;
    chart.draw_series(grid.cells.iter().map(|c| {
        let v = value(c);
        let color = if v > 45.0 { WHITE } else { BLACK };
        Text::new(
            format!("{v:.1}%"),
            (
                SegmentValue::CenterOf(c.0),
                if one_row {
                    SegmentValue::Exact(1)
                } else {
                    SegmentValue::CenterOf(c.1)
                },
            ),
            ("sans-serif", 15)
                .into_font()
                .color(&color)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        )
    }))?;
    Ok(())
}
