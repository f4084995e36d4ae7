//! A rule's decisions over log time in bounded memory: per second, coarsened (10 s, 1 min,
//! 10 min, 1 h, 1 day) whenever the log's span grows past [`MAX_POINTS`] buckets (only logs
//! longer than four years hold more, one per day). Each step divides
//! the next, so coarsening only merges whole buckets.

use super::report::{ReplayPoint, ReplaySeries};

pub const MAX_POINTS: usize = 1500;
const STEPS_MS: [u64; 6] = [1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000];

#[derive(Debug, Clone, Default)]
pub struct SeriesBuilder {
    step: usize,
    points: Vec<ReplayPoint>,
}

impl SeriesBuilder {
    fn bucket_ms(&self) -> u64 {
        STEPS_MS[self.step]
    }

    /// Counts one decision at log time `ms`; `would_deny` with `allowed`: a shadow policy's
    /// admission its limits denied. Times arrive nearly in order: a delayed admission counts at
    /// its start time (its log time + delay_ms, at most the policy's max_delay_ms ahead), so a
    /// later, undelayed one may land in an earlier bucket, found from the back.
    pub fn add(&mut self, ms: u64, allowed: bool, fail_open: bool, would_deny: bool) {
        // Coarsen while the span from the first bucket to this one would not fit: the series
        // is filled in evenly at the end, so its length is the span, not the busy buckets.
        while let Some(first) = self.points.first().map(|p| p.t_ms) {
            let bucket = self.bucket_ms();
            if (ms / bucket * bucket).saturating_sub(first) / bucket < MAX_POINTS as u64
                || self.step + 1 == STEPS_MS.len()
            {
                break;
            }
            self.coarsen();
        }
        let bucket = self.bucket_ms();
        let t = ms / bucket * bucket;
        let at = match self.points.iter().rposition(|p| p.t_ms <= t) {
            Some(i) if self.points[i].t_ms == t => i,
            before => {
                let i = before.map_or(0, |i| i + 1);
                self.points.insert(
                    i,
                    ReplayPoint {
                        t_ms: t,
                        ..ReplayPoint::default()
                    },
                );
                i
            }
        };
        if let Some(point) = self.points.get_mut(at) {
            if fail_open {
                point.fail_open += 1;
            } else if allowed {
                point.allowed += 1;
                if would_deny {
                    point.shadow_denied += 1;
                }
            } else {
                point.denied += 1;
            }
        }
    }

    fn coarsen(&mut self) {
        self.step += 1;
        let bucket = self.bucket_ms();
        let mut merged: Vec<ReplayPoint> = Vec::new();
        for p in self.points.drain(..) {
            let t = p.t_ms / bucket * bucket;
            match merged.last_mut() {
                Some(m) if m.t_ms == t => {
                    m.allowed += p.allowed;
                    m.denied += p.denied;
                    m.fail_open += p.fail_open;
                    m.shadow_denied += p.shadow_denied;
                }
                _ => merged.push(ReplayPoint { t_ms: t, ..p }),
            }
        }
        self.points = merged;
    }

    /// The series, with empty buckets filled in so that points are evenly spaced.
    pub fn finish(self) -> ReplaySeries {
        let bucket = self.bucket_ms();
        let mut points = Vec::with_capacity(self.points.len());
        for p in self.points {
            while let Some(prev) = points.last().map(|q: &ReplayPoint| q.t_ms) {
                if prev + bucket >= p.t_ms {
                    break;
                }
                points.push(ReplayPoint {
                    t_ms: prev + bucket,
                    ..ReplayPoint::default()
                });
            }
            points.push(p);
        }
        ReplaySeries {
            bucket_ms: bucket,
            points,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_then_coarser_for_long_logs() {
        let mut s = SeriesBuilder::default();
        for ms in [1_000, 1_500, 3_200] {
            s.add(ms, true, false, false);
        }
        s.add(3_900, false, false, false);
        let series = s.finish();
        assert_eq!(series.bucket_ms, 1_000);
        let counts: Vec<(u64, u64, u64)> = series
            .points
            .iter()
            .map(|p| (p.t_ms, p.allowed, p.denied))
            .collect();
        assert_eq!(counts, [(1_000, 2, 0), (2_000, 0, 0), (3_000, 1, 1)]);

        let mut day = SeriesBuilder::default();
        for second in 0..86_400u64 {
            day.add(second * 1000, second % 2 == 0, false, false);
        }
        // Two lone requests a year apart: bounded by the span, not the busy buckets.
        let mut sparse = SeriesBuilder::default();
        sparse.add(0, true, false, false);
        sparse.add(365 * 86_400_000, true, false, false);
        let sparse = sparse.finish();
        assert_eq!((sparse.bucket_ms, sparse.points.len()), (86_400_000, 366));
        let series = day.finish();
        assert!(series.points.len() <= MAX_POINTS, "{}", series.points.len());
        assert_eq!(series.bucket_ms, 60_000);
        let total: u64 = series.points.iter().map(|p| p.allowed + p.denied).sum();
        assert_eq!(total, 86_400);
    }

    #[test]
    fn a_start_time_ahead_of_later_log_times_counts_in_its_own_bucket() {
        let mut s = SeriesBuilder::default();
        s.add(2_500, true, false, false); // delayed into the third second
        s.add(1_200, true, false, false); // logged after it, not delayed
        s.add(900, false, false, false);
        s.add(2_700, true, false, false);
        let counts: Vec<(u64, u64, u64)> = s
            .finish()
            .points
            .iter()
            .map(|p| (p.t_ms, p.allowed, p.denied))
            .collect();
        assert_eq!(counts, [(0, 0, 1), (1_000, 1, 0), (2_000, 2, 0)]);
    }
}
