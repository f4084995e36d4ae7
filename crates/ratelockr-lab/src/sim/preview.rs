//! The shape of a workload before it runs: its schedule's arrivals per bin, at the bin width
//! the run chart would use for a run that long. The app's form preview and `simulate
//! --preview` both show this, so neither re-implements the patterns.

use super::workload::{Length, Pattern, Workload};
use serde::Serialize;

/// The most bins a preview holds, whatever the run's length.
const MAX_BINS: u64 = 2_000;

/// A workload's offered traffic, binned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub bin_ms: u64,
    /// First tries per bin (a retry storm adds retries on top, which depend on the limiter).
    pub offered: Vec<u32>,
    /// How long the schedule lasts: the duration asked for, or the last arrival plus one gap.
    pub duration_ms: u64,
}

impl Preview {
    /// The preview of `workload`, or None for as fast as possible (no schedule: the servers
    /// pace themselves on Redis's replies).
    pub fn of(workload: &Workload) -> Option<Preview> {
        if workload.rps == 0.0 {
            return None;
        }
        let offsets: Vec<u64> = workload.schedule().map(|us| us / 1000).collect();
        let last = offsets.last().copied().unwrap_or(0);
        let duration_ms = match (workload.length, &workload.pattern) {
            (Length::DurationMs(ms), _) => ms,
            (_, Pattern::Burst { every_ms, .. }) => last + every_ms,
            _ => last + (1000.0 / workload.rps).ceil() as u64,
        };
        let bin_ms = crate::bins::bin_ms(duration_ms).max(duration_ms.div_ceil(MAX_BINS));
        let bins = duration_ms.div_ceil(bin_ms).max(1) as usize;
        let mut offered = vec![0u32; bins];
        for t in offsets {
            let i = ((t / bin_ms) as usize).min(bins - 1);
            offered[i] = offered[i].saturating_add(1);
        }
        Some(Preview {
            bin_ms,
            offered,
            duration_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_show_as_bursts_and_as_fast_as_possible_has_no_shape() {
        let w = Workload {
            pattern: Pattern::Burst {
                size: 20,
                every_ms: 500,
            },
            length: Length::DurationMs(2_000),
            ..Workload::default()
        };
        let p = Preview::of(&w).expect("scheduled");
        assert_eq!(p.bin_ms, 10);
        assert_eq!(p.offered.iter().map(|&n| u64::from(n)).sum::<u64>(), 80);
        assert_eq!(p.offered.iter().filter(|&&n| n == 20).count(), 4);
        let flat = Workload {
            rps: 0.0,
            ..Workload::default()
        };
        assert_eq!(Preview::of(&flat), None);
    }
}
