//! Putting requests in time order, and giving whole-second times their milliseconds.
//!
//! **Out of order.** Real logs are a little out of order: nginx writes a line when a request
//! *ends*, stamped with the time it ended or began. Requests are held in a heap and released
//! once a request at least `lookahead_ms` later has been read (or when the heap holds
//! [`MAX_HELD`]), so any disorder within the lookahead (default 10 s) is sorted. A request
//! older than one already released is refused: counted, reported with its line number, and not
//! decided, because deciding it late would misdecide it.
//!
//! **Whole seconds.** The common and combined formats stamp whole seconds. The requests of one
//! second are spread evenly over it by arrival order: the i-th of n gets `second + floor(i ×
//! 1000 / n)` ms. Deterministic, and it keeps the second's rate without inventing a burst at
//! its first millisecond. A second with more than [`MAX_PER_SECOND`] requests is spread in
//! runs of that many, each over what is left of the second after the run before (memory stays
//! bounded, order is kept). Requests whose times carry milliseconds keep them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Requests held for sorting at most; beyond it the oldest is released early.
pub const MAX_HELD: usize = 200_000;
/// Requests of one second spread together at most.
pub const MAX_PER_SECOND: usize = 100_000;
/// The default lookahead.
pub const DEFAULT_LOOKAHEAD_MS: u64 = 10_000;

/// A request on its way to the decider. `T` is what it carries (its key and cost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed<T> {
    /// Its time in ms (whole-second times: the second's first ms, until spread).
    pub ms: u64,
    pub whole_second: bool,
    /// The log line it came from.
    pub line: u64,
    pub item: T,
}

impl<T> PartialOrd for Timed<T>
where
    T: Eq,
{
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Eq> Ord for Timed<T> {
    /// By time, then by line: equal times keep their arrival order.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.ms, self.line).cmp(&(other.ms, other.line))
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLate {
    pub line: u64,
    /// How far behind the last released request it was.
    pub behind_ms: u64,
}

/// Sorts within a lookahead, then spreads whole seconds.
#[derive(Debug)]
pub struct Reorder<T: Eq> {
    lookahead_ms: u64,
    heap: BinaryHeap<Reverse<Timed<T>>>,
    newest_ms: u64,
    /// The time of the last request released from the heap.
    released_ms: Option<u64>,
    /// Released requests of the second being gathered for spreading.
    second: VecDeque<Timed<T>>,
    /// Spread requests ready to go out.
    ready: VecDeque<Timed<T>>,
    /// The last ms handed out by spreading, so a second spread in several runs stays in order.
    spread_floor: u64,
    /// Requests sorted that arrived out of order.
    pub reordered: u64,
}

impl<T: Eq> Reorder<T> {
    pub fn new(lookahead_ms: u64) -> Self {
        Reorder {
            lookahead_ms,
            heap: BinaryHeap::new(),
            newest_ms: 0,
            released_ms: None,
            second: VecDeque::new(),
            ready: VecDeque::new(),
            spread_floor: 0,
            reordered: 0,
        }
    }

    /// Takes one request; refuses it when it is older than one already released.
    pub fn push(&mut self, timed: Timed<T>) -> Result<(), TooLate> {
        if let Some(released) = self.released_ms {
            if timed.ms < released {
                return Err(TooLate {
                    line: timed.line,
                    behind_ms: released - timed.ms,
                });
            }
        }
        if timed.ms < self.newest_ms {
            self.reordered += 1;
        }
        self.newest_ms = self.newest_ms.max(timed.ms);
        self.heap.push(Reverse(timed));
        while let Some(Reverse(oldest)) = self.heap.peek() {
            if oldest.ms + self.lookahead_ms <= self.newest_ms || self.heap.len() > MAX_HELD {
                self.release();
            } else {
                break;
            }
        }
        Ok(())
    }

    /// Everything held, at the end of the input.
    pub fn finish(&mut self) {
        while !self.heap.is_empty() {
            self.release();
        }
        self.spread();
    }

    /// The next request in order, when one is ready.
    pub fn pop(&mut self) -> Option<Timed<T>> {
        self.ready.pop_front()
    }

    fn release(&mut self) {
        let Some(Reverse(timed)) = self.heap.pop() else {
            return;
        };
        self.released_ms = Some(timed.ms);
        let same_second = self
            .second
            .front()
            .is_some_and(|first| first.ms / 1000 == timed.ms / 1000);
        if !same_second || self.second.len() >= MAX_PER_SECOND {
            self.spread();
        }
        self.second.push_back(timed);
    }

    /// Spreads the gathered second's whole-second requests evenly over it, in arrival order.
    fn spread(&mut self) {
        let n = self.second.iter().filter(|t| t.whole_second).count() as u64;
        let mut i = 0;
        let mut gathered: Vec<Timed<T>> = self.second.drain(..).collect();
        let floor = self.spread_floor;
        for t in &mut gathered {
            if t.whole_second {
                let second = t.ms / 1000 * 1000;
                let base = second.max(floor);
                t.ms = base + i * (second + 1000 - base) / n;
                i += 1;
                self.spread_floor = t.ms;
            }
        }
        // Millisecond times may sit between spread ones; a stable sort keeps lines in order.
        gathered.sort_by_key(|t| t.ms);
        self.ready.extend(gathered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(ms: u64, whole_second: bool, line: u64) -> Timed<()> {
        Timed {
            ms,
            whole_second,
            line,
            item: (),
        }
    }

    fn drain(r: &mut Reorder<()>) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| r.pop())
            .map(|t| (t.line, t.ms))
            .collect()
    }

    #[test]
    fn spreads_each_second_evenly_by_arrival() {
        let mut r = Reorder::new(10_000);
        for (line, s) in [(1, 5), (2, 5), (3, 5), (4, 5), (5, 6)] {
            r.push(timed(s * 1000, true, line)).expect("in order");
        }
        r.finish();
        assert_eq!(
            drain(&mut r),
            [(1, 5000), (2, 5250), (3, 5500), (4, 5750), (5, 6000)]
        );
    }

    #[test]
    fn sorts_within_the_lookahead_and_refuses_beyond_it() {
        let mut r = Reorder::new(2_000);
        r.push(timed(10_000, true, 1)).expect("first");
        r.push(timed(12_000, true, 2)).expect("ok");
        r.push(timed(11_000, true, 3)).expect("2 s late is sorted");
        r.push(timed(14_000, true, 4)).expect("ok");
        // 10, 11 and 12 are released now (14 - 2 >= 12); line 5 is older than what went out.
        let late = r.push(timed(10_500, false, 5)).expect_err("too late");
        assert_eq!(
            late,
            TooLate {
                line: 5,
                behind_ms: 1_500
            }
        );
        r.finish();
        assert_eq!(
            drain(&mut r),
            [(1, 10_000), (3, 11_000), (2, 12_000), (4, 14_000)]
        );
        assert_eq!(r.reordered, 1);
    }

    #[test]
    fn millisecond_times_keep_their_milliseconds() {
        let mut r = Reorder::new(1_000);
        r.push(timed(7_000, true, 1)).expect("ok");
        r.push(timed(7_400, false, 2)).expect("ok");
        r.push(timed(7_000, true, 3)).expect("ok");
        r.finish();
        assert_eq!(drain(&mut r), [(1, 7_000), (2, 7_400), (3, 7_500)]);
    }
}
