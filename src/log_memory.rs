//! What a sliding window log costs in Redis, and the warning the CLI and the app give above a
//! limit of 128.
//!
//! A log holds one sorted-set entry per admitted request in its window. Redis keeps a set of up
//! to 128 entries (`zset-max-listpack-entries`) as a compact listpack, and converts a larger one
//! to a skiplist and a hash table, which costs about four times as much per entry. The figures
//! are `MEMORY USAGE` of a full log with the engine's 16-character members on Redis 7
//! (`ratelockr bench --memory`, docs/benchmarks.md "Sliding window log memory"); the app's rule
//! editor gets the same figures ([`LOG_MEMORY`], generated into `ui/src/bindings/logMemory.ts`).

use crate::rule::Algorithm;
use serde::Serialize;

/// The largest limit whose full log Redis still keeps as a listpack.
pub const LISTPACK_MAX_ENTRIES: u64 = 128;

/// A full log's size in Redis: `base + per_entry × limit` bytes, one pair up to
/// [`LISTPACK_MAX_ENTRIES`] entries (a listpack), one past it (a skiplist and a hash table).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LogMemory {
    pub listpack_max_entries: u64,
    pub listpack_base: u64,
    pub listpack_per_entry: u64,
    pub skiplist_base: u64,
    pub skiplist_per_entry: u64,
}

/// The fitted figures: about 31 B per entry up to 128 entries, about 116 B past that.
pub const LOG_MEMORY: LogMemory = LogMemory {
    listpack_max_entries: LISTPACK_MAX_ENTRIES,
    listpack_base: 90,
    listpack_per_entry: 31,
    skiplist_base: 3_000,
    skiplist_per_entry: 116,
};

/// The bytes one client key's full log takes in Redis at `limit`, estimated from
/// [`LOG_MEMORY`].
pub fn log_bytes_per_key(limit: u64) -> u64 {
    let m = LOG_MEMORY;
    if limit <= m.listpack_max_entries {
        m.listpack_base + m.listpack_per_entry * limit
    } else {
        m.skiplist_base
            .saturating_add(m.skiplist_per_entry.saturating_mul(limit))
    }
}

/// A warning for a sliding window log above a limit of 128: what each client key costs in Redis
/// at that limit, and the sliding window counter as the alternative. None for any other rule.
pub fn log_memory_warning(name: &str, algorithm: &Algorithm) -> Option<String> {
    let Algorithm::SlidingWindowLog { limit, .. } = *algorithm else {
        return None;
    };
    if limit <= LISTPACK_MAX_ENTRIES {
        return None;
    }
    let bytes = log_bytes_per_key(limit);
    Some(format!(
        "{name}: a sliding window log with limit {limit} holds up to {limit} entries per client key, \
         about {} in Redis per key ({} for 100,000 active keys); the sliding window counter \
         (--algorithm sliding-window-counter) holds about 200 B per key, whatever the limit",
        human_bytes(bytes),
        human_bytes(bytes.saturating_mul(100_000)),
    ))
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_for_a_log_above_128() {
        let log = |limit| Algorithm::SlidingWindowLog {
            limit,
            window_ms: 1000,
        };
        assert!(log_memory_warning("r", &log(128)).is_none());
        let warning = log_memory_warning("r", &log(1000)).expect("a warning at 1,000");
        assert!(warning.contains("119.0 KB"), "{warning}");
        assert!(warning.contains("sliding window counter"), "{warning}");
        let counter = Algorithm::SlidingWindowCounter {
            limit: 1000,
            window_ms: 1000,
        };
        assert!(log_memory_warning("r", &counter).is_none());
        assert!(log_bytes_per_key(129) > log_bytes_per_key(128) * 3);
    }
}
