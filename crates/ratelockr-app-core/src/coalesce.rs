//! At most one `refetch-stats` cue (and one `sim-progress`) per [`EVENT_GAP`]. The simulator
//! decides up to tens of thousands of requests a second; one IPC event per request kept the
//! webview busier than Redis, and so did one per 16 ms frame: each event is a script the
//! webview evaluates, and costs it far more than a command call (docs/app-performance.md).
//! The window draws streaming updates at most every 500 ms (ui/src/paint.ts) and its stats
//! throttle starts at most one fetch per 750 ms, so an event per 500 ms loses nothing.
//!
//! What the live chart's guarantees (design.md, "The live chart's refetch") need from the cue
//! stream, and what this keeps: the first decision cues at once (leading edge); a decision
//! that does not cue at once leaves the cue pending, and a pending cue goes out within one
//! frame (the run's ticker) or when the run ends ([`Coalesce::flush`]), so a cue always
//! follows the last decision.

use std::time::{Duration, Instant};

/// The least time between two events of one kind to the window (a run's first cue and its
/// last go out at once).
pub const EVENT_GAP: Duration = Duration::from_millis(500);

/// The cue's state: when it last went out, and whether one is owed.
#[derive(Debug, Clone)]
pub struct Coalesce {
    gap: Duration,
    last: Option<Instant>,
    pending: bool,
    sent: u64,
}

impl Coalesce {
    pub fn new(gap: Duration) -> Self {
        Coalesce {
            gap,
            last: None,
            pending: false,
            sent: 0,
        }
    }

    fn send(&mut self, now: Instant) -> bool {
        self.last = Some(now);
        self.pending = false;
        self.sent += 1;
        true
    }

    /// A decision at `now`: true when the cue should go out now.
    pub fn event(&mut self, now: Instant) -> bool {
        match self.last {
            Some(last) if now.saturating_duration_since(last) < self.gap => {
                self.pending = true;
                false
            }
            _ => self.send(now),
        }
    }

    /// The ticker at `now`: true when a pending cue is due.
    pub fn tick(&mut self, now: Instant) -> bool {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.gap);
        self.pending && due && self.send(now)
    }

    /// The run ended: true when a cue is still owed (it goes out at once, whatever the gap).
    pub fn flush(&mut self, now: Instant) -> bool {
        self.pending && self.send(now)
    }

    /// Cues sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 60 Hz frame: the mechanism's tests use their own gap, whatever [`EVENT_GAP`] is.
    const FRAME: Duration = Duration::from_millis(16);

    #[test]
    fn first_at_once_then_one_per_frame_and_always_one_after_the_last() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut c = Coalesce::new(FRAME);
        assert!(c.event(at(0)), "the first decision cues at once");
        // A thousand decisions within the first frame: none cues, one is owed.
        assert!((0..1000).all(|_| !c.event(at(5))));
        assert!(!c.tick(at(10)), "not before the frame is over");
        assert!(
            c.tick(at(16)),
            "the owed cue goes out one frame after the last one"
        );
        assert!(!c.tick(at(40)), "nothing owed, nothing sent");
        assert!(
            c.event(at(40)),
            "a decision after a quiet frame cues at once"
        );
        assert!(!c.event(at(41)));
        assert!(
            c.flush(at(42)),
            "the run's end sends what is owed, gap or not"
        );
        assert!(!c.flush(at(43)), "and only once");
        assert_eq!(c.sent(), 4);
    }

    #[test]
    fn a_burst_of_decisions_costs_one_cue_per_frame_at_most() {
        let t0 = Instant::now();
        let mut c = Coalesce::new(FRAME);
        let mut sent = 0;
        // 200,000 decisions over 2 s, the ticker running every frame: ~125 frames.
        for i in 0..200_000u64 {
            let now = t0 + Duration::from_micros(i * 10);
            sent += u64::from(c.event(now));
            if i % 1_600 == 0 {
                sent += u64::from(c.tick(now));
            }
        }
        sent += u64::from(c.flush(t0 + Duration::from_secs(2)));
        assert_eq!(sent, c.sent());
        assert!(sent <= 2_000 / 16 + 2, "{sent} cues for 200,000 decisions");
        assert!(sent >= 2_000 / 32, "still about one per frame: {sent}");
    }
}
