//! Where a chart export may go: exactly the path the user confirmed, in the format its name
//! asks for. A dialog that confirmed `precious.svg` never leads to writing `precious.png`.

use crate::error::{AppError, ErrorCode};
use serde::{Deserialize, Serialize};
use std::path::Path;
use ts_rs::TS;

/// A file written by an export.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Exported {
    pub path: String,
}

/// Chart formats for [`AppCore::export_chart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ChartFormat {
    Png,
    Svg,
}

impl ChartFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ChartFormat::Png => "png",
            ChartFormat::Svg => "svg",
        }
    }
}

/// The name the save dialog offers for an export of `name` (a run's or a replay's name in the
/// history): `capacity-30.csv`, `capacity-30-chart.png`. Letters, digits, `.`, `_` and `-`
/// are kept; anything else becomes one `-`; at most 60 characters; `fallback` when nothing
/// is left.
pub fn file_name_for(name: &str, fallback: &str, suffix: &str, extension: &str) -> String {
    let mut stem = String::new();
    for c in name.chars() {
        let keep = c.is_alphanumeric() || matches!(c, '.' | '_' | '-');
        match keep {
            true => stem.push(c),
            false if !stem.ends_with('-') => stem.push('-'),
            false => {}
        }
    }
    let stem: String = stem.trim_matches(['-', '.']).chars().take(60).collect();
    let stem = stem.trim_end_matches(['-', '.']);
    let stem = if stem.is_empty() { fallback } else { stem };
    format!("{stem}{suffix}.{extension}")
}

/// The format a file name asks for, if it names one.
pub fn format_of(path: &Path) -> Option<ChartFormat> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("png") => Some(ChartFormat::Png),
        Some("svg") => Some(ChartFormat::Svg),
        _ => None,
    }
}

/// The format to write `chosen` in: the one its name asks for (the user typed it and
/// confirmed it), else a refusal. The path itself is never changed.
pub fn confirmed_format(chosen: &Path) -> Result<ChartFormat, AppError> {
    format_of(chosen).ok_or_else(|| {
        AppError::new(
            ErrorCode::Export,
            format!(
                "{} does not end in .png or .svg, so nothing was written; export again and end the name with .png or .svg",
                chosen.display()
            ),
        )
        .with_field("path")
    })
}

/// Refuses to write `format` to a path whose name says otherwise.
pub fn check_extension(dest: &Path, format: ChartFormat) -> Result<(), AppError> {
    if format_of(dest) == Some(format) {
        return Ok(());
    }
    Err(AppError::new(
        ErrorCode::Export,
        format!(
            "{} does not end in .{}, so nothing was written",
            dest.display(),
            format.extension()
        ),
    )
    .with_field("path"))
}

/// Copies a kept CSV (a run's or a replay's decisions) to `dest`, whole or not at all: the kept
/// copy stays, and a failed export leaves an existing `dest` as it was, so nothing is lost and
/// it can be retried. The save dialog asked before replacing a file.
pub fn copy_export(kept: &Path, dest: &Path) -> Result<Exported, AppError> {
    ratelockr::atomic_file::copy(kept, dest, ratelockr::atomic_file::Replace::Allow).map_err(
        |e| {
            AppError::new(
                ErrorCode::Export,
                format!("cannot write {}: {e}", dest.display()),
            )
        },
    )?;
    Ok(Exported {
        path: dest.display().to_string(),
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_export_is_offered_under_the_runs_own_name() {
        assert_eq!(
            file_name_for("capacity 30", "ratelockr-run", "", "csv"),
            "capacity-30.csv"
        );
        assert_eq!(
            file_name_for("api: bursts / 30 s?", "ratelockr-run", "-chart", "png"),
            "api-bursts-30-s-chart.png"
        );
        assert_eq!(
            file_name_for("../..", "ratelockr-run", "", "csv"),
            "ratelockr-run.csv"
        );
        assert_eq!(
            file_name_for("", "ratelockr-replay", "-heatmap", "svg"),
            "ratelockr-replay-heatmap.svg"
        );
        assert_eq!(file_name_for(&"x".repeat(200), "r", "", "csv").len(), 64);
    }

    use super::*;

    #[test]
    fn the_confirmed_name_decides_the_format_and_is_never_changed() {
        // Defect 1: `precious.svg` typed in the PNG dialog is written as SVG at that path.
        assert_eq!(
            confirmed_format(Path::new("/home/u/precious.svg")).expect("svg"),
            ChartFormat::Svg
        );
        assert_eq!(
            confirmed_format(Path::new("chart.PNG")).expect("png"),
            ChartFormat::Png
        );
        let err = confirmed_format(Path::new("/home/u/precious")).expect_err("no extension");
        assert!(err.message.contains("nothing was written"), "{err:?}");
        assert!(confirmed_format(Path::new("notes.txt")).is_err());
        assert!(check_extension(Path::new("a.svg"), ChartFormat::Svg).is_ok());
        assert!(check_extension(Path::new("precious.png"), ChartFormat::Svg).is_err());
    }
}
