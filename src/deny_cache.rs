//! The local deny cache (opt-in): a client key that Redis has just denied until `t` is denied in
//! process until `t`, without a round trip. What an attack costs Redis is then one script call
//! per attacking key and retry period, not one per request.
//!
//! It can only deny, and only while Redis's own answer still holds:
//! - an entry's end is the moment the request was *sent* plus Redis's `retry_after_ms`, so it
//!   ends no later than the time Redis named (Redis measured from a moment after the send);
//! - it denies only requests of at least the cost Redis denied (a cheaper one might pass) and of
//!   the very same algorithm and parameters (an edited rule asks Redis again);
//! - it is consulted for decisions on the Redis clock only; an explicit `now_ms` (tests,
//!   replays) always asks Redis.
//!
//! It is bounded in entries and in bytes (the keys' lengths plus a fixed cost per entry).
//! Expired entries are dropped when met and swept when a shard is full; when a shard is full of
//! live entries, a new denial is simply not cached (that key keeps asking Redis: safe, and
//! counted in `DenyCache::stats`).

use crate::decision::DecidedBy;
use crate::rule::Algorithm;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How big the deny cache may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DenyCacheOptions {
    /// The most keys held at once.
    pub max_entries: usize,
    /// The most bytes the entries account for: each key's length plus `ENTRY_OVERHEAD`.
    pub max_bytes: usize,
}

impl Default for DenyCacheOptions {
    /// 100,000 keys in at most 16 MiB: an attack by that many distinct keys at once.
    fn default() -> Self {
        DenyCacheOptions {
            max_entries: 100_000,
            max_bytes: 16 << 20,
        }
    }
}

/// The bytes an entry costs besides its key: the entry itself, the key's box and the hash
/// table's slot, rounded up.
pub(crate) const ENTRY_OVERHEAD: usize = 96;

/// Most shards; small caches get fewer, so the bounds divide evenly.
const MAX_SHARDS: usize = 16;
/// A full shard sweeps its expired entries at most this often, so that a shard full of live
/// entries does not walk itself on every denial.
const SWEEP_EVERY: Duration = Duration::from_millis(50);

/// What the cache holds and has done, for metrics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DenyCacheStats {
    pub entries: usize,
    pub bytes: usize,
    /// Requests denied from the cache.
    pub hits: u64,
    /// Denials not cached because a shard was full of live entries.
    pub rejected: u64,
}

/// A denial Redis made, held until it ends.
#[derive(Debug, Clone, Copy)]
struct Entry {
    algorithm: Algorithm,
    /// The cost Redis denied: cheaper requests may pass and are not denied here.
    cost: u64,
    remaining: u64,
    /// When Redis's `retry_after` ends, measured from the request's send.
    until: Instant,
    /// When Redis's `reset_after` ends.
    reset: Instant,
}

#[derive(Debug)]
struct Shard {
    map: HashMap<Box<str>, Entry>,
    bytes: usize,
    next_sweep: Instant,
}

/// The cache itself; see the module docs.
#[derive(Debug)]
pub(crate) struct DenyCache {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    max_entries: usize,
    max_bytes: usize,
    hits: AtomicU64,
    rejected: AtomicU64,
}

/// A cached denial's figures at the moment of a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachedDenial {
    pub remaining: u64,
    /// The rest of Redis's wait, in whole milliseconds rounded up.
    pub retry_after_ms: u64,
    pub reset_after_ms: u64,
}

impl DenyCache {
    pub(crate) fn new(options: DenyCacheOptions) -> Self {
        // Each shard holds an even part of both bounds, so a small cache gets fewer shards
        // (one shard per 64 entries and per 16 KiB at most) and its bounds stay usable.
        let shards = (options.max_entries / 64)
            .min(options.max_bytes / (16 << 10))
            .clamp(1, MAX_SHARDS);
        let now = Instant::now();
        DenyCache {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::new(),
                        bytes: 0,
                        next_sweep: now,
                    })
                })
                .collect(),
            hasher: RandomState::new(),
            max_entries: options.max_entries / shards,
            max_bytes: options.max_bytes / shards,
            hits: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, Shard> {
        let i = (self.hasher.hash_one(key) as usize) % self.shards.len();
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The denial that still holds for a request of `cost` under `algorithm` at `now`, if any.
    pub(crate) fn lookup(
        &self,
        key: &str,
        algorithm: &Algorithm,
        cost: u64,
        now: Instant,
    ) -> Option<CachedDenial> {
        let mut shard = self.shard(key);
        let entry = *shard.map.get(key)?;
        if now >= entry.until {
            shard.remove(key);
            return None;
        }
        if entry.algorithm != *algorithm || cost < entry.cost {
            return None;
        }
        drop(shard);
        self.hits.fetch_add(1, Ordering::Relaxed);
        let retry = ceil_ms(entry.until - now);
        Some(CachedDenial {
            remaining: entry.remaining,
            retry_after_ms: retry,
            reset_after_ms: ceil_ms(entry.reset.saturating_duration_since(now)).max(retry),
        })
    }

    /// Remembers that Redis denied a request of `cost`, sent at `sent`, for `retry_after_ms`.
    pub(crate) fn insert(
        &self,
        key: &str,
        algorithm: &Algorithm,
        cost: u64,
        sent: Instant,
        decision: &crate::Decision,
    ) {
        // Only Redis's own denials are repeated (not a fallback's, nor the cache's own), and
        // never a concurrency limit's: its wait is only an upper bound, since a release frees
        // a slot sooner.
        if decision.allowed
            || decision.retry_after_ms == 0
            || decision.by != DecidedBy::Redis
            || matches!(algorithm, Algorithm::Concurrency { .. })
        {
            return;
        }
        let entry = Entry {
            algorithm: *algorithm,
            cost,
            remaining: decision.remaining,
            until: sent + Duration::from_millis(decision.retry_after_ms),
            reset: sent + Duration::from_millis(decision.reset_after_ms),
        };
        let mut shard = self.shard(key);
        if let Some(existing) = shard.map.get_mut(key) {
            *existing = entry;
            return;
        }
        let size = key.len() + ENTRY_OVERHEAD;
        if !shard.fits(size, self.max_entries, self.max_bytes) {
            if sent >= shard.next_sweep {
                shard.sweep(sent);
            }
            if !shard.fits(size, self.max_entries, self.max_bytes) {
                self.rejected.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        shard.bytes += size;
        shard.map.insert(key.into(), entry);
    }

    /// Forgets a key Redis has admitted: its cached denial is over.
    pub(crate) fn forget(&self, key: &str) {
        let mut shard = self.shard(key);
        if !shard.map.is_empty() {
            shard.remove(key);
        }
    }

    /// Forgets every cached denial.
    pub(crate) fn clear(&self) {
        for shard in self.shards.iter() {
            let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            shard.map.clear();
            shard.bytes = 0;
        }
    }

    pub(crate) fn stats(&self) -> DenyCacheStats {
        let (entries, bytes) = self.shards.iter().fold((0, 0), |(n, b), shard| {
            let shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            (n + shard.map.len(), b + shard.bytes)
        });
        DenyCacheStats {
            entries,
            bytes,
            hits: self.hits.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }
}

impl Shard {
    fn fits(&self, size: usize, max_entries: usize, max_bytes: usize) -> bool {
        self.map.len() < max_entries && self.bytes + size <= max_bytes
    }

    fn remove(&mut self, key: &str) {
        if self.map.remove(key).is_some() {
            self.bytes -= key.len() + ENTRY_OVERHEAD;
        }
    }

    fn sweep(&mut self, now: Instant) {
        let mut freed = 0;
        self.map.retain(|key, entry| {
            let live = entry.until > now;
            if !live {
                freed += key.len() + ENTRY_OVERHEAD;
            }
            live
        });
        self.bytes -= freed;
        self.next_sweep = now + SWEEP_EVERY;
    }
}

/// Whole milliseconds, rounded up: a client told to wait that long is never told too little.
fn ceil_ms(d: Duration) -> u64 {
    let ms = d.as_millis();
    let ms = if d.as_nanos() % 1_000_000 == 0 {
        ms
    } else {
        ms + 1
    };
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Decision;

    const FW: Algorithm = Algorithm::FixedWindow {
        limit: 5,
        window_ms: 1000,
    };

    fn denied(retry_after_ms: u64) -> Decision {
        Decision::by_redis(false, 0, retry_after_ms, retry_after_ms)
    }

    #[test]
    fn denies_until_the_end_redis_named_and_not_after() {
        let cache = DenyCache::new(DenyCacheOptions::default());
        let t0 = Instant::now();
        cache.insert("k", &FW, 1, t0, &denied(300));
        let hit = cache
            .lookup("k", &FW, 1, t0 + Duration::from_millis(100))
            .expect("still denied");
        assert_eq!(hit.retry_after_ms, 200);
        assert!(cache
            .lookup("k", &FW, 1, t0 + Duration::from_micros(299_999))
            .is_some());
        assert_eq!(
            cache.lookup("k", &FW, 1, t0 + Duration::from_millis(300)),
            None
        );
        assert_eq!(
            cache.stats().entries,
            0,
            "an expired entry is dropped when met"
        );
        assert_eq!(cache.stats().hits, 2);
    }

    #[test]
    fn a_cheaper_request_or_another_rule_asks_redis() {
        let cache = DenyCache::new(DenyCacheOptions::default());
        let t0 = Instant::now();
        cache.insert("k", &FW, 3, t0, &denied(1000));
        assert!(cache.lookup("k", &FW, 3, t0).is_some());
        assert!(cache.lookup("k", &FW, 4, t0).is_some());
        assert_eq!(cache.lookup("k", &FW, 2, t0), None);
        let edited = Algorithm::FixedWindow {
            limit: 6,
            window_ms: 1000,
        };
        assert_eq!(cache.lookup("k", &edited, 3, t0), None);
        cache.forget("k");
        assert_eq!(cache.lookup("k", &FW, 3, t0), None);
    }

    #[test]
    fn admissions_and_fail_open_decisions_are_never_cached() {
        let cache = DenyCache::new(DenyCacheOptions::default());
        let t0 = Instant::now();
        let admitted = Decision::by_redis(true, 3, 0, 500);
        cache.insert("a", &FW, 1, t0, &admitted);
        cache.insert("b", &FW, 1, t0, &Decision::FAIL_OPEN);
        cache.insert("c", &FW, 1, t0, &Decision::FAIL_CLOSED);
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn bounded_in_entries_and_bytes() {
        let cache = DenyCache::new(DenyCacheOptions {
            max_entries: 1000,
            max_bytes: usize::MAX,
        });
        let t0 = Instant::now();
        for i in 0..5000 {
            cache.insert(&format!("key-{i}"), &FW, 1, t0, &denied(10_000));
        }
        let stats = cache.stats();
        assert!(stats.entries <= 1000, "{stats:?}");
        assert!(stats.entries >= 900, "the shards fill evenly: {stats:?}");
        assert_eq!(stats.rejected, 5000 - stats.entries as u64);

        let cache = DenyCache::new(DenyCacheOptions {
            max_entries: 1000,
            max_bytes: 10 * (ENTRY_OVERHEAD + 100),
        });
        let long = "x".repeat(100);
        for i in 0..100 {
            cache.insert(&format!("{long}{i:03}"), &FW, 1, t0, &denied(10_000));
        }
        let stats = cache.stats();
        assert!(stats.bytes <= 10 * (ENTRY_OVERHEAD + 100), "{stats:?}");
        assert!(stats.entries >= 1, "{stats:?}");
    }

    #[test]
    fn a_full_cache_makes_room_from_expired_entries() {
        let cache = DenyCache::new(DenyCacheOptions {
            max_entries: 10,
            max_bytes: usize::MAX,
        });
        let t0 = Instant::now();
        for i in 0..10 {
            cache.insert(&format!("old-{i}"), &FW, 1, t0, &denied(10));
        }
        let later = t0 + Duration::from_millis(20);
        cache.insert("new", &FW, 1, later, &denied(1000));
        assert!(cache.lookup("new", &FW, 1, later).is_some());
        assert_eq!(cache.stats().entries, 1);
    }

    #[test]
    fn waits_round_up() {
        assert_eq!(ceil_ms(Duration::from_micros(1)), 1);
        assert_eq!(ceil_ms(Duration::from_millis(7)), 7);
        assert_eq!(ceil_ms(Duration::from_micros(7_001)), 8);
    }
}
