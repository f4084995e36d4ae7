//! What every exported chart shares: the embedded font, the file (PNG or SVG by the name's
//! extension, exactly that path), and the look of a panel's axes and grid.

use super::ExportError;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use ratelockr::atomic_file::{AtomicFile, Replace};
use std::path::Path;
use std::sync::Once;

/// The font is embedded (DejaVu Sans, see the crate's assets/DejaVuSans.LICENSE) so that charts render the
/// same on a machine without fontconfig or fonts.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
static REGISTER_FONT: Once = Once::new();

fn register_font() {
    REGISTER_FONT.call_once(|| {
        // Registering a valid embedded font cannot fail; if it did, text would be missing, not
        // the chart.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// A chart file's format, from its name's extension.
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

/// What drawing on a backend returns.
pub(crate) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A panel's chart: seconds on x, numbers on y.
pub(crate) type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart that can draw itself on any plotters backend (a bitmap or an SVG).
pub(crate) trait Picture {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// Draws `picture` at `size` to `path`, PNG or SVG by its extension (never another path), whole
/// or not at all: drawn to a temporary file beside `path` and renamed over it when complete, so
/// a failed export leaves an existing file as it was.
pub(crate) fn render(
    picture: &impl Picture,
    size: (u32, u32),
    path: &Path,
) -> Result<(), ExportError> {
    let format = ChartFormat::from_path(path)?;
    register_font();
    let fail = |e: &dyn std::fmt::Display| ExportError::Chart {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let out = AtomicFile::create(path, Replace::Allow).map_err(|e| ExportError::io(path, e))?;
    let temp = out.temp_path();
    match format {
        ChartFormat::Png => {
            let root = BitMapBackend::new(temp, size).into_drawing_area();
            picture.draw(&root).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))?;
        }
        ChartFormat::Svg => {
            let root = SVGBackend::new(temp, size).into_drawing_area();
            picture.draw(&root).map_err(|e| fail(&e))?;
            root.present().map_err(|e| fail(&e))?;
        }
    }
    out.commit().map_err(|e| ExportError::io(path, e))
}

/// A panel of numbers over seconds: the margins, label areas, fonts and grid every exported
/// line chart uses, with its axes described. `y_label_area` is the room for the y labels.
pub(crate) fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    y_label_area: u32,
    x_desc: &str,
    y_desc: &str,
) -> Result<Chart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(area)
        .margin_left(16)
        .margin_right(28)
        .margin_top(8)
        .margin_bottom(8)
        .x_label_area_size(44)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| trim(*v))
        .y_label_formatter(&|v| trim(*v))
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    Ok(chart)
}

/// A tick label without trailing zeros: `2`, `2.5`, `0.25`.
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
