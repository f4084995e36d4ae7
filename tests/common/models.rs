//! Exact models of the algorithms, in integers (micro-tokens for the token bucket, whose script
//! uses doubles): what tests/engine/waits.rs checks each script against, and what tests/policy_*.rs
//! compose into stacks.

/// An exact model of one client's limiter.
pub trait Model {
    /// Would a request of `cost` pass at `now`?
    fn admits(&self, now: u64, cost: u64) -> bool;
    /// Decides a request (cost >= 1), changing the state as the script must.
    fn decide(&mut self, now: u64, cost: u64) -> bool;
    /// The remaining allowance at `now`, exactly, in `unit`ths of a request.
    fn left(&self, now: u64) -> u128;
    /// The denominator of `left`.
    fn unit(&self) -> u128 {
        1
    }
    /// The whole allowance, in requests.
    fn full(&self) -> u64;
    /// Where the model's decision may differ from the script's (the token bucket's doubles
    /// at an exact boundary).
    fn on_edge(&self, _now: u64, _cost: u64) -> bool {
        false
    }
    /// Takes the script's decision on an edge.
    fn follow(&mut self, now: u64, cost: u64, allowed: bool);
}

/// The least `w >= from` with `pred(w)`, for a predicate that stays true once true.
pub fn least(from: u64, pred: impl Fn(u64) -> bool) -> u64 {
    let mut hi = from.max(1);
    while !pred(hi) {
        hi = hi.checked_mul(2).expect("the wait is finite");
    }
    let mut lo = from;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

// --- token bucket: micro-tokens --------------------------------------------------------------

/// Refill `permille` / 1000 tokens a second is `permille` micro-tokens a millisecond.
pub struct Bucket {
    pub capacity: u128,
    pub permille: u128,
    /// Stored (micro-tokens, last_refill) after the last admission; None = a full bucket.
    pub state: Option<(u128, u64)>,
}

pub const MICRO: u128 = 1_000_000;

impl Bucket {
    pub fn tokens(&self, now: u64) -> u128 {
        match self.state {
            None => self.capacity * MICRO,
            Some((tokens, last)) => {
                let elapsed = u128::from(now.saturating_sub(last));
                (tokens + elapsed * self.permille).min(self.capacity * MICRO)
            }
        }
    }
}

impl Model for Bucket {
    fn admits(&self, now: u64, cost: u64) -> bool {
        self.tokens(now) >= u128::from(cost) * MICRO
    }
    fn decide(&mut self, now: u64, cost: u64) -> bool {
        let allowed = self.admits(now, cost);
        self.follow(now, cost, allowed);
        allowed
    }
    fn follow(&mut self, now: u64, cost: u64, allowed: bool) {
        if allowed {
            let tokens = self.tokens(now).saturating_sub(u128::from(cost) * MICRO);
            let last = self.state.map_or(now, |(_, last)| last.max(now));
            self.state = Some((tokens, last));
        }
    }
    fn left(&self, now: u64) -> u128 {
        self.tokens(now)
    }
    fn unit(&self) -> u128 {
        MICRO
    }
    fn full(&self) -> u64 {
        self.capacity as u64
    }
    fn on_edge(&self, now: u64, cost: u64) -> bool {
        self.tokens(now) == u128::from(cost) * MICRO
    }
}

// --- GCRA: units of 1/limit ms ---------------------------------------------------------------

pub struct Gcra {
    pub limit: u128,
    pub period: u128,
    pub burst: u128,
    /// The TAT in units of 1/limit ms; 0 = a full allowance.
    pub tat: u128,
}

impl Gcra {
    pub fn diff(&self, now: u64) -> u128 {
        self.tat.saturating_sub(u128::from(now) * self.limit)
    }
}

impl Model for Gcra {
    fn admits(&self, now: u64, cost: u64) -> bool {
        self.diff(now) + u128::from(cost) * self.period <= self.burst * self.period
    }
    fn decide(&mut self, now: u64, cost: u64) -> bool {
        let allowed = self.admits(now, cost);
        self.follow(now, cost, allowed);
        allowed
    }
    fn follow(&mut self, now: u64, cost: u64, allowed: bool) {
        if allowed {
            let t = self.tat.max(u128::from(now) * self.limit);
            self.tat = t + u128::from(cost) * self.period;
        }
    }
    /// What is left, in units of 1/period request: burst x T - diff, in 1/limit ms.
    fn left(&self, now: u64) -> u128 {
        (self.burst * self.period).saturating_sub(self.diff(now))
    }
    fn unit(&self) -> u128 {
        self.period
    }
    fn full(&self) -> u64 {
        self.burst as u64
    }
}

// --- sliding window counter: units of 1/window request ----------------------------------------

pub struct Counter {
    pub limit: u128,
    pub window: u64,
    /// (window index, its count, the previous window's count, latest now); None = empty.
    pub state: Option<(u64, u128, u128, u64)>,
}

impl Counter {
    /// (the clock the estimate uses, this window's index, elapsed, current, previous).
    pub fn at(&self, now: u64) -> (u64, u64, u64, u128, u128) {
        let at = self.state.map_or(now, |(_, _, _, last)| now.max(last));
        let (index, elapsed) = (at / self.window, at % self.window);
        let (current, previous) = match self.state {
            None => (0, 0),
            Some((w, c, p, _)) if w == index => (c, p),
            Some((w, c, _, _)) if w + 1 == index => (0, c),
            Some(_) => (0, 0),
        };
        (at, index, elapsed, current, previous)
    }

    /// previous x (window - elapsed) + current x window.
    pub fn used(&self, now: u64) -> u128 {
        let (_, _, elapsed, current, previous) = self.at(now);
        let w = u128::from(self.window);
        previous * (w - u128::from(elapsed)) + current * w
    }
}

impl Model for Counter {
    fn admits(&self, now: u64, cost: u64) -> bool {
        self.used(now) + u128::from(cost) * u128::from(self.window)
            <= self.limit * u128::from(self.window)
    }
    fn decide(&mut self, now: u64, cost: u64) -> bool {
        let allowed = self.admits(now, cost);
        self.follow(now, cost, allowed);
        allowed
    }
    fn follow(&mut self, now: u64, cost: u64, allowed: bool) {
        if allowed {
            let (at, index, _, current, previous) = self.at(now);
            self.state = Some((index, current + u128::from(cost), previous, at));
        }
    }
    fn left(&self, now: u64) -> u128 {
        (self.limit * u128::from(self.window)).saturating_sub(self.used(now))
    }
    fn unit(&self) -> u128 {
        u128::from(self.window)
    }
    fn full(&self) -> u64 {
        self.limit as u64
    }
}

// --- sliding window log ----------------------------------------------------------------------

pub struct Log {
    pub limit: u64,
    pub window: u64,
    /// (time, cost) of logged requests, oldest first.
    pub entries: Vec<(u64, u64)>,
}

impl Log {
    /// The clock the script uses: never earlier than the newest entry.
    pub fn clock(&self, now: u64) -> u64 {
        self.entries.last().map_or(now, |&(t, _)| now.max(t))
    }

    pub fn count(&self, now: u64) -> u64 {
        let at = self.clock(now);
        self.entries
            .iter()
            .filter(|&&(t, _)| t + self.window > at)
            .map(|&(_, c)| c)
            .sum()
    }
}

impl Model for Log {
    fn admits(&self, now: u64, cost: u64) -> bool {
        self.count(now) + cost <= self.limit
    }
    fn decide(&mut self, now: u64, cost: u64) -> bool {
        let allowed = self.admits(now, cost);
        self.follow(now, cost, allowed);
        allowed
    }
    fn follow(&mut self, now: u64, cost: u64, allowed: bool) {
        if allowed {
            let at = self.clock(now);
            self.entries.push((at, cost));
        }
    }
    fn left(&self, now: u64) -> u128 {
        u128::from(self.limit.saturating_sub(self.count(now)))
    }
    fn full(&self) -> u64 {
        self.limit
    }
}

// --- fixed window on an explicit clock (fixed_window.lua's CLOCK MODE) -----------------------

/// A window opens at a client's first request and holds while `now - start <= window`; a
/// clock that goes backwards stays in the open window.
pub struct FixedWindowClock {
    pub limit: u64,
    pub window: u64,
    /// (start, count) of the open window; None = none yet.
    pub state: Option<(u64, u64)>,
}

impl FixedWindowClock {
    /// The count of the window open at `now`, if one is.
    fn open(&self, now: u64) -> Option<(u64, u64)> {
        self.state
            .filter(|&(start, _)| now.saturating_sub(start) <= self.window)
    }
}

impl Model for FixedWindowClock {
    fn admits(&self, now: u64, cost: u64) -> bool {
        self.open(now).map_or(0, |(_, count)| count) + cost <= self.limit
    }
    fn decide(&mut self, now: u64, cost: u64) -> bool {
        let allowed = self.admits(now, cost);
        self.follow(now, cost, allowed);
        allowed
    }
    fn follow(&mut self, now: u64, cost: u64, allowed: bool) {
        if allowed {
            self.state = Some(match self.open(now) {
                Some((start, count)) => (start, count + cost),
                None => (now, cost),
            });
        }
    }
    fn left(&self, now: u64) -> u128 {
        u128::from(
            self.limit
                .saturating_sub(self.open(now).map_or(0, |(_, count)| count)),
        )
    }
    fn full(&self) -> u64 {
        self.limit
    }
}
