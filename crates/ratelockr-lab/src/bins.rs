//! The bin width that fits a run of a given length: one rule for the run chart, its timeline
//! and the workload preview (the app's screen reads the same steps through
//! [`crate::export::style::chart_style`]). It lives below `sim` and `export`, which both bin.

use serde::Serialize;

/// Bin widths by run length: the first step whose `up_to_ms` covers the run. Runs of a few
/// seconds get 100 ms or finer (a burst every 500 ms shows as bursts), long runs coarser, so a
/// chart holds about 100 to 300 bins.
pub const BIN_STEPS: [BinStep; 10] = [
    BinStep::new(3_000, 10),
    BinStep::new(6_000, 20),
    BinStep::new(15_000, 50),
    BinStep::new(30_000, 100),
    BinStep::new(60_000, 200),
    BinStep::new(150_000, 500),
    BinStep::new(300_000, 1_000),
    BinStep::new(600_000, 2_000),
    BinStep::new(1_500_000, 5_000),
    BinStep::new(u64::MAX, 10_000),
];

/// One step of [`BIN_STEPS`].
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BinStep {
    /// Runs up to this long (ms) use `bin_ms`. The last step's is `null` (no bound) in JSON.
    #[serde(serialize_with = "bound")]
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub up_to_ms: u64,
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub bin_ms: u64,
}

fn bound<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    if *v == u64::MAX {
        s.serialize_none()
    } else {
        s.serialize_u64(*v)
    }
}

impl BinStep {
    const fn new(up_to_ms: u64, bin_ms: u64) -> Self {
        BinStep { up_to_ms, bin_ms }
    }
}

/// The bin width for a run of `duration_ms`.
pub fn bin_ms(duration_ms: u64) -> u64 {
    BIN_STEPS
        .iter()
        .find(|s| duration_ms <= s.up_to_ms)
        .map_or(10_000, |s| s.bin_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_get_fine_bins_and_long_ones_coarse() {
        assert_eq!(bin_ms(0), 10);
        assert_eq!(bin_ms(2_000), 10);
        assert_eq!(bin_ms(5_000), 20);
        assert!(bin_ms(10_000) <= 100, "a run of a few seconds");
        assert!(bin_ms(30_000) <= 100);
        assert_eq!(bin_ms(3_600_000), 10_000);
        for w in BIN_STEPS.windows(2) {
            assert!(w[0].up_to_ms < w[1].up_to_ms && w[0].bin_ms < w[1].bin_ms);
            // At most 300 bins at each step's longest run.
            assert!(w[0].up_to_ms / w[0].bin_ms <= 300, "{:?}", w[0]);
        }
    }
}
