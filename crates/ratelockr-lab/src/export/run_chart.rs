//! The run chart as a file: a [`ChartView`], the one the app's screen shows or the CLI's
//! default for a run, drawn with plotters. Colours and dashes come with the view from the
//! style table the screen reads too ([`super::style`]); the layout follows the screen's: every
//! line once in a legend, the panels in rows on the view's x range, the chosen key's state
//! under them.

use super::canvas::{self, Chart, DrawResult, Picture};
use super::chart::SIZE;
use super::style::{key_state_style, rgb, KeyStateLine};
use super::timeline::{Timeline, TimelineBuilder};
use super::view::{ChartView, KeyStateView, Look, ViewLine};
use super::ExportError;
use crate::sim::{Report, SimSpec};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::path::Path;

/// Room for the title and subtitle, a legend row, the key-state panel.
const HEAD_PX: u32 = 64;
const LEGEND_ROW_PX: u32 = 24;
const KEY_PX: u32 = 200;
/// A row of panels beyond the default two.
const ROW_PX: u32 = 340;

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

/// Draws the CLI's view of `timeline` ([`ChartView::of_timeline`]) to `path`, PNG or SVG by its
/// extension.
pub fn render_run_chart(timeline: &Timeline, title: &str, path: &Path) -> Result<(), ExportError> {
    if timeline.bins() == 0 {
        return Err(ExportError::Empty);
    }
    let subtitle = format!("bins of {} ms", timeline.bin_ms);
    render_view(&ChartView::of_timeline(timeline, title, &subtitle), path)
}

/// Draws `view` to `path`, PNG or SVG by its extension (never another path). A view that
/// cannot be drawn as it says is refused, naming the field.
pub fn render_view(view: &ChartView, path: &Path) -> Result<(), ExportError> {
    view.validate()?;
    // Two rows of panels fill the default size; a third (requests in flight) adds its own.
    let columns = (view.columns as usize).clamp(1, view.panels.len().max(1));
    let extra_rows = view.panels.len().div_ceil(columns).saturating_sub(2) as u32;
    let height = SIZE.1 + extra_rows * ROW_PX + if view.key_state.is_some() { KEY_PX } else { 0 };
    canvas::render(view, (SIZE.0, height), path)
}

fn colour(hex: &str) -> RGBColor {
    let (r, g, b) = rgb(hex);
    RGBColor(r, g, b)
}

fn shape(look: &Look) -> ShapeStyle {
    colour(&look.colour).stroke_width(look.width.round().max(1.0) as u32)
}

/// `[dash, gap]` of a look, if it is dashed.
fn dashes(look: &Look) -> Option<(u32, u32)> {
    match look.dash.as_slice() {
        [dash, gap, ..] if *dash > 0 => Some((*dash, (*gap).max(1))),
        _ => None,
    }
}

/// The legend: every line once, by its label, in the order drawn (as the screen's).
fn legend(view: &ChartView) -> Vec<(&str, &Look)> {
    let mut seen = std::collections::HashSet::new();
    view.panels
        .iter()
        .flat_map(|p| &p.lines)
        .filter(|l| seen.insert(l.label.as_str()))
        .map(|l| (l.label.as_str(), &l.look))
        .collect()
}

/// The legend's items laid out in rows that fit `width` pixels: `(row, x)` per item.
fn legend_layout<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(&str, &Look)],
    width: u32,
) -> Vec<(u32, i32)> {
    let font: TextStyle = ("sans-serif", 14).into();
    let (mut row, mut x) = (0u32, 24i32);
    items
        .iter()
        .map(|(label, _)| {
            let text = area
                .estimate_text_size(label, &font)
                .map_or(label.len() as u32 * 8, |(w, _)| w);
            let item = 28 + 6 + text as i32 + 18;
            if x > 24 && x + item > width as i32 - 16 {
                row += 1;
                x = 24;
            }
            let at = (row, x);
            x += item;
            at
        })
        .collect()
}

impl Picture for ChartView {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let (width, height) = root.dim_in_pixel();
        let (head, body) = root.split_vertically(HEAD_PX);
        head.draw(&Text::new(
            self.title.clone(),
            (24, 10),
            ("sans-serif", 24).into_font().color(&BLACK),
        ))?;
        head.draw(&Text::new(
            self.subtitle.clone(),
            (24, 40),
            ("sans-serif", 16).into_font().color(&RGBColor(80, 80, 80)),
        ))?;
        let items = legend(self);
        let layout = legend_layout(root, &items, width);
        let rows = layout.last().map_or(0, |(r, _)| r + 1);
        let (legend_area, body) = body.split_vertically(rows * LEGEND_ROW_PX + 6);
        for ((label, look), (row, x)) in items.iter().zip(&layout) {
            let y = (row * LEGEND_ROW_PX + LEGEND_ROW_PX / 2) as i32;
            let ends = vec![(*x, y), (x + 28, y)];
            match dashes(look) {
                Some((dash, gap)) => legend_area.draw(&DashedPathElement::new(
                    ends,
                    dash.min(8),
                    gap.min(5),
                    shape(look).stroke_width(3),
                ))?,
                None => legend_area.draw(&PathElement::new(ends, shape(look).stroke_width(3)))?,
            }
            legend_area.draw(&Text::new(
                label.to_string(),
                (x + 34, y - 8),
                ("sans-serif", 14).into_font().color(&RGBColor(51, 65, 85)),
            ))?;
        }
        let body_height = height.saturating_sub(HEAD_PX + rows * LEGEND_ROW_PX + 6);
        let (panels_area, key_area) = match &self.key_state {
            Some(_) => {
                let (a, b) = body.split_vertically(body_height.saturating_sub(KEY_PX));
                (a, Some(b))
            }
            None => (body, None),
        };
        let columns = (self.columns as usize).clamp(1, self.panels.len().max(1));
        let grid_rows = self.panels.len().div_ceil(columns);
        let areas = panels_area.split_evenly((grid_rows, columns));
        let (lo, hi) = self.range();
        for (panel, area) in self.panels.iter().zip(&areas) {
            let top = panel.y_max.or(self.y_max).unwrap_or_else(|| {
                panel
                    .lines
                    .iter()
                    .flat_map(|l| l.values.iter().flatten())
                    .fold(0.0f64, |a, b| a.max(*b))
            });
            let (title, plot) = area.split_vertically(24);
            title.draw(&Text::new(
                panel.title.clone(),
                (18, 4),
                ("sans-serif", 16).into_font().color(&BLACK),
            ))?;
            let mut chart = canvas::panel(
                &plot,
                lo..hi,
                0.0..(top.max(1.0) * 1.08),
                70,
                "seconds since the run started",
                &panel.y_label,
            )?;
            for line in &panel.lines {
                draw_line(&mut chart, &self.x, line, (lo, hi))?;
            }
        }
        if let (Some(area), Some(key)) = (key_area, &self.key_state) {
            draw_key(&area, key, (lo, hi))?;
        }
        Ok(())
    }
}

fn draw_line<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    x: &[f64],
    line: &ViewLine,
    range: (f64, f64),
) -> DrawResult<DB> {
    for points in segments(x, &line.values, line.stepped) {
        for part in clip(&points, range.0, range.1) {
            path(chart, part, &line.look)?;
        }
    }
    Ok(())
}

fn path<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    points: Vec<(f64, f64)>,
    look: &Look,
) -> DrawResult<DB> {
    match dashes(look) {
        Some((dash, gap)) => {
            chart.draw_series(DashedLineSeries::new(points, dash, gap, shape(look)))?;
        }
        None => {
            chart.draw_series(LineSeries::new(points, shape(look)))?;
        }
    }
    Ok(())
}

/// The key's state under the panels: its steps and the rule's ceiling, on the same x range.
fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    key: &KeyStateView,
    range: (f64, f64),
) -> DrawResult<DB> {
    let (title, plot) = area.split_vertically(24);
    title.draw(&Text::new(
        format!(
            "Key state: {} ({} after each decision; dashed: the most it can hold)",
            key.title, key.label
        ),
        (18, 4),
        ("sans-serif", 16).into_font().color(&BLACK),
    ))?;
    let top = key
        .values
        .iter()
        .flatten()
        .copied()
        .chain(key.ceiling)
        .fold(1.0f64, f64::max);
    let mut chart = canvas::panel(
        &plot,
        range.0..range.1,
        0.0..top * 1.1,
        70,
        "seconds since the run started",
        &key.label,
    )?;
    let state: Look = key_state_style(KeyStateLine::State).into();
    for points in segments(&key.x, &key.values, true) {
        for part in clip(&points, range.0, range.1) {
            path(&mut chart, part, &state)?;
        }
    }
    if let Some(ceiling) = key.ceiling {
        let look: Look = key_state_style(KeyStateLine::Ceiling).into();
        path(
            &mut chart,
            vec![(range.0, ceiling), (range.1, ceiling)],
            &look,
        )?;
    }
    Ok(())
}

/// The runs of known values as polylines: a stepped line holds each value until the next
/// point; a gap (null) ends a run.
fn segments(x: &[f64], values: &[Option<f64>], stepped: bool) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let Some(v) = *v else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        };
        cur.push((x[i], v));
        if stepped {
            if let Some(next) = x.get(i + 1) {
                cur.push((*next, v));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `points` cut to `lo..=hi` on x (a zoom): the parts inside, ends interpolated.
fn clip(points: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Vec<(f64, f64)>> {
    if let [only] = points {
        return if (lo..=hi).contains(&only.0) {
            vec![vec![*only]]
        } else {
            Vec::new()
        };
    }
    let mut out = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b.0 < lo || a.0 > hi {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let at = |x: f64| {
            if b.0 == a.0 {
                a.1
            } else {
                a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
            }
        };
        let p = if a.0 < lo { (lo, at(lo)) } else { a };
        let q = if b.0 > hi { (hi, at(hi)) } else { b };
        if cur.last() != Some(&p) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(p);
        }
        cur.push(q);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::view::{ViewLine, ViewPanel};

    fn line(label: &str, colour: &str, dash: &[u32], values: &[f64], stepped: bool) -> ViewLine {
        ViewLine {
            label: label.into(),
            look: Look {
                colour: colour.into(),
                dash: dash.to_vec(),
                width: 2.0,
            },
            values: values.iter().map(|v| Some(*v)).collect(),
            stepped,
        }
    }

    fn view(panels: Vec<ViewPanel>) -> ChartView {
        ChartView {
            title: "login-burst".into(),
            subtitle: "token bucket, capacity 20".into(),
            x: vec![0.0, 0.5, 1.0, 1.5],
            x_range: None,
            y_max: None,
            columns: 1,
            panels,
            key_state: None,
        }
    }

    /// A scratch file of this test process.
    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("ratelockr-view-{}-{name}", std::process::id()))
    }

    /// The texts of the SVG `view` draws: titles, legend, axis labels.
    fn svg(view: &ChartView, name: &str) -> Vec<String> {
        let path = scratch(name);
        render_view(view, &path).expect("drawn");
        let svg = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn a_cumulative_view_exports_cumulative_and_nothing_else() {
        let cumulative = view(vec![ViewPanel {
            title: "login".into(),
            y_max: None,
            y_label: "so far".into(),
            lines: vec![
                line("allowed", "#2ca02c", &[], &[3.0, 8.0, 12.0, 20.0], false),
                line(
                    "envelope",
                    "#444444",
                    &[3, 3],
                    &[20.0, 25.0, 30.0, 35.0],
                    false,
                ),
            ],
        }]);
        let text = svg(&cumulative, "cumulative.svg");
        let has = |t: &str| text.iter().any(|x| x == t);
        assert!(
            has("so far") && has("envelope") && has("allowed"),
            "{text:?}"
        );
        // The screen showed one measure: the file does not add the per-bin panel the old
        // export always stacked on top.
        assert!(
            !text
                .iter()
                .any(|t| t.contains("requests /") || t.contains("Requests per")),
            "{text:?}"
        );
        assert!(has("35"), "the y axis reaches the totals: {text:?}");
        // The same view in PNG.
        let png = scratch("cumulative.png");
        render_view(&cumulative, &png).expect("png");
        assert_eq!(&std::fs::read(&png).expect("read")[..4], b"\x89PNG");
        let _ = std::fs::remove_file(&png);
    }

    #[test]
    fn an_overlay_exports_both_runs_and_the_key_state() {
        let mut overlay = view(vec![ViewPanel {
            title: "Runs overlaid".into(),
            y_max: None,
            y_label: "per 500 ms".into(),
            lines: vec![
                line(
                    "Token bucket allowed · capacity 10",
                    "#4f46e5",
                    &[],
                    &[5.0, 2.0, 2.0, 2.0],
                    true,
                ),
                line(
                    "Token bucket allowed · capacity 30",
                    "#db2777",
                    &[],
                    &[5.0, 5.0, 4.0, 2.0],
                    true,
                ),
            ],
        }]);
        overlay.key_state = Some(KeyStateView {
            title: "client-3 on login".into(),
            label: "tokens left".into(),
            x: vec![0.0, 0.2, 0.9, 1.5],
            values: vec![None, Some(9.0), Some(0.0), None],
            ceiling: Some(10.0),
        });
        let text = svg(&overlay, "overlay.svg");
        for name in [
            "Token bucket allowed · capacity 10",
            "Token bucket allowed · capacity 30",
            "tokens left",
        ] {
            assert!(text.iter().any(|t| t == name), "{name} missing: {text:?}");
        }
        assert!(
            text.iter().any(|t| t.contains("client-3 on login")),
            "{text:?}"
        );
    }

    #[test]
    fn a_zoomed_view_draws_only_its_range_and_steps_hold_their_bin() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let steps = segments(&x, &[Some(1.0), Some(4.0), None, Some(2.0)], true);
        assert_eq!(
            steps,
            vec![
                vec![(0.0, 1.0), (1.0, 1.0), (1.0, 4.0), (2.0, 4.0)],
                vec![(3.0, 2.0)]
            ]
        );
        let joined = segments(&x, &[Some(0.0), Some(2.0), Some(4.0), Some(6.0)], false);
        assert_eq!(
            clip(&joined[0], 0.5, 2.5),
            vec![vec![(0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.5, 5.0)]]
        );
        assert!(clip(&joined[0], 4.0, 5.0).is_empty());
        assert_eq!(clip(&[(3.0, 2.0)], 0.0, 1.0), Vec::<Vec<(f64, f64)>>::new());
    }

    #[test]
    fn a_view_that_cannot_be_drawn_is_refused_naming_the_field() {
        let mut bad = view(vec![ViewPanel {
            title: "p".into(),
            y_max: None,
            y_label: "y".into(),
            lines: vec![line("a", "#112233", &[], &[1.0, 2.0], true)],
        }]);
        let field = |v: &ChartView| match v.validate() {
            Err(ExportError::InvalidView { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(&bad), "panels[0].lines[0].values");
        bad.panels[0].lines[0].values = vec![Some(1.0); 4];
        bad.panels[0].lines[0].look.colour = "blue".into();
        assert_eq!(field(&bad), "panels[0].lines[0].look.colour");
        bad.panels[0].lines[0].look.colour = "#0000ff".into();
        bad.x_range = Some([2.0, 1.0]);
        assert_eq!(field(&bad), "x_range");
        bad.x_range = Some([0.5, 1.0]);
        assert!(bad.validate().is_ok());
        bad.x = vec![0.0, 2.0, 1.0, 3.0];
        assert_eq!(field(&bad), "x");
    }
}
