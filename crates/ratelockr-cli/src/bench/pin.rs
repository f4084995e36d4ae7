//! Redis and redis-benchmark on a core each while `bench --lua` measures what a script costs
//! Redis.
//!
//! Left to the scheduler, the two share and swap two cores with every other process, and a
//! script's Redis CPU per call swings by a third from one round to the next on the same
//! machine; pinned, the same rounds agree within a few percent (docs/benchmarks.md, issue 24).
//! A production Redis has a core of its own, so pinned is also the closer picture. Only a
//! Redis this process started (`--embedded`) is pinned, with `taskset` (util-linux), and it is
//! given back every core when the measurement ends.

use std::process::Command;

/// Redis pinned to one core, redis-benchmark to be run on another; Redis is unpinned on drop.
#[derive(Debug)]
pub struct Pinning {
    taskset: std::path::PathBuf,
    redis_pid: u32,
    redis_cpu: usize,
    benchmark_cpu: usize,
    all: String,
}

impl Pinning {
    /// Pins the Redis of process `redis_pid` to the last core this process may use and keeps
    /// the first for redis-benchmark; `None` (nothing changed) with fewer than two cores, no
    /// `taskset` on PATH, or a refusal.
    pub fn redis(redis_pid: u32) -> Option<Pinning> {
        let all = std::fs::read_to_string("/proc/self/status").ok()?;
        let all = all
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
            .trim()
            .to_string();
        let cpus = cpu_list(&all)?;
        let (&benchmark_cpu, &redis_cpu) = (cpus.first()?, cpus.last()?);
        if benchmark_cpu == redis_cpu {
            return None;
        }
        let taskset = ratelockr::embedded::find_on_path("taskset")?;
        let pinning = Pinning {
            taskset,
            redis_pid,
            redis_cpu,
            benchmark_cpu,
            all,
        };
        pinning.set(&redis_cpu.to_string()).then_some(pinning)
    }

    /// The core redis-benchmark is to run on.
    pub fn benchmark_cpu(&self) -> usize {
        self.benchmark_cpu
    }

    /// `taskset`'s path, to run redis-benchmark under.
    pub fn taskset(&self) -> &std::path::Path {
        &self.taskset
    }

    /// In words, for the report.
    pub fn describe(&self) -> String {
        format!(
            "Redis pinned to CPU {}, redis-benchmark to CPU {}",
            self.redis_cpu, self.benchmark_cpu
        )
    }

    /// Every thread of the Redis process onto `cpus` (a taskset list).
    fn set(&self, cpus: &str) -> bool {
        Command::new(&self.taskset)
            .args(["-a", "-p", "-c", cpus, &self.redis_pid.to_string()])
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for Pinning {
    fn drop(&mut self) {
        self.set(&self.all);
    }
}

/// The cores of a list such as `0-1` or `0,2-3`, in order; `None` when it does not parse.
fn cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.trim().parse::<usize>().ok()?..=b.trim().parse().ok()?),
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::cpu_list;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(cpu_list("0-1"), Some(vec![0, 1]));
        assert_eq!(cpu_list("0,2-3"), Some(vec![0, 2, 3]));
        assert_eq!(cpu_list("5"), Some(vec![5]));
        assert_eq!(cpu_list("x"), None);
    }
}
