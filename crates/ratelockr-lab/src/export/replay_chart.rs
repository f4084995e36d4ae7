//! A replay's decisions over log time, drawn by [`super::chart`]: one line per rule, allowed
//! on top and denied below, per bucket of the report's series (a second, or coarser).

use super::chart::{render_series, ChartData};
use super::ExportError;
use crate::replay::ReplayReport;
use crate::sim::{Series, SeriesPoint};
use std::path::Path;

/// Draws the candidate rules' series of `report` to `path` (PNG or SVG).
pub fn render(report: &ReplayReport, path: &Path) -> Result<(), ExportError> {
    let start = report
        .rules
        .iter()
        .filter_map(|r| r.series.points.first().map(|p| p.t_ms))
        .min()
        .ok_or(ExportError::Empty)?;
    let bucket = report
        .rules
        .iter()
        .map(|r| r.series.bucket_ms)
        .max()
        .unwrap_or(1000)
        .max(1);
    let series: Vec<Series> = report
        .rules
        .iter()
        .map(|r| {
            let mut points: Vec<SeriesPoint> = Vec::new();
            for p in &r.series.points {
                let index = (p.t_ms - start) / bucket;
                if points.last().is_none_or(|l| l.second != index) {
                    points.push(SeriesPoint {
                        second: index,
                        ..SeriesPoint::default()
                    });
                }
                if let Some(last) = points.last_mut() {
                    last.allowed += p.allowed;
                    last.denied += p.denied;
                    last.fail_open += p.fail_open;
                }
            }
            Series {
                rule: r.rule.clone(),
                algorithm: r.algorithm,
                points,
            }
        })
        .collect();
    let buckets = series
        .iter()
        .map(|s| s.points.len() as u64)
        .max()
        .unwrap_or(1);
    let per = match bucket {
        1000 => "s".to_string(),
        b if b % 86_400_000 == 0 => format!("{} d", b / 86_400_000),
        b if b % 3_600_000 == 0 => format!("{} h", b / 3_600_000),
        b if b % 60_000 == 0 => format!("{} min", b / 60_000),
        b => format!("{} s", b / 1000),
    };
    render_series(
        &ChartData {
            title: "Replay: decisions over log time",
            subtitle: format!(
                "{}: {} requests keyed by {}, {} keys",
                report.source, report.requests, report.key, report.keys
            ),
            x_desc: format!("log time since its first request, in buckets of {per}"),
            per,
            buckets,
            series: &series,
        },
        path,
    )
}
