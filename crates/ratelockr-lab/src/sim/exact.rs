//! The sliding window counter judged against the exact sliding window log, on the counter's own
//! traffic: for each decision, what the log would have decided given the requests the counter
//! actually admitted in the window before it.
//!
//! This is the measure Cloudflare reported for its counter (0.003 % of 400 M requests wrongly
//! allowed or limited): judged decision by decision, not by two runs that would drift apart
//! after their first difference.

use std::collections::{HashMap, VecDeque};

/// Per client key, the counter's admissions of the last window.
#[derive(Debug)]
pub(crate) struct ExactLogJudge {
    limit: u64,
    window_ms: u64,
    keys: HashMap<String, Window>,
    /// Admitted although the window ending at the request already held `limit - cost + 1`.
    pub(crate) wrongly_allowed: u64,
    /// Denied although the window ending at the request had room for its cost.
    pub(crate) wrongly_denied: u64,
}

#[derive(Debug, Default)]
struct Window {
    /// (time, cost) of admissions, oldest first.
    admitted: VecDeque<(u64, u64)>,
    /// Their summed cost.
    total: u64,
}

impl ExactLogJudge {
    pub(crate) fn new(limit: u64, window_ms: u64) -> Self {
        ExactLogJudge {
            limit,
            window_ms,
            keys: HashMap::new(),
            wrongly_allowed: 0,
            wrongly_denied: 0,
        }
    }

    /// Judges one decision the counter made for `key` at `at_ms` (records arrive in completion
    /// order, which is Redis's order up to requests in flight at once).
    pub(crate) fn judge(&mut self, key: &str, at_ms: u64, cost: u64, allowed: bool) {
        if !self.keys.contains_key(key) {
            self.keys.insert(key.to_string(), Window::default());
        }
        let Some(window) = self.keys.get_mut(key) else {
            return;
        };
        // The log's window is (at - window_ms, at]: an entry exactly one window old is out.
        while let Some(&(t, c)) = window.admitted.front() {
            if t + self.window_ms > at_ms {
                break;
            }
            window.admitted.pop_front();
            window.total -= c;
        }
        let fits = window.total + cost <= self.limit;
        if allowed {
            if !fits {
                self.wrongly_allowed += 1;
            }
            window.admitted.push_back((at_ms, cost));
            window.total += cost;
        } else if fits {
            self.wrongly_denied += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_each_decision_by_the_window_before_it() {
        let mut judge = ExactLogJudge::new(2, 1000);
        judge.judge("a", 0, 1, true);
        judge.judge("a", 500, 1, true);
        // A third in (0, 1000]: the log would deny it.
        judge.judge("a", 999, 1, true);
        assert_eq!((judge.wrongly_allowed, judge.wrongly_denied), (1, 0));
        // At 1 500 the entries at 0 and 500 are out (500 + 1000 <= 1500): room for one more.
        judge.judge("a", 1_500, 1, false);
        assert_eq!((judge.wrongly_allowed, judge.wrongly_denied), (1, 1));
        // Keys are judged apart, and a correct denial counts nothing.
        judge.judge("b", 0, 2, true);
        judge.judge("b", 10, 1, false);
        assert_eq!((judge.wrongly_allowed, judge.wrongly_denied), (1, 1));
    }
}
