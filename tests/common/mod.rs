//! The integration tests' harness: a real `redis-server` per test, started through the engine's
//! own [`EmbeddedRedis`] (free loopback port, killed on Drop), and unique key prefixes so that
//! nothing a test writes can meet another test's keys.
//!
//! The server program is `redis-server`, or the one `RATELOCKR_REDIS_SERVER` names
//! (`make test-valkey` points it at Valkey). Every failure then says which it ran on: the first
//! server a test binary starts installs a panic hook that adds the program's name and version.
//!
//! Each test binary uses a subset of these helpers, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod models;
mod tempdir;

#[allow(unused_imports)] // not every test binary makes a directory
pub use tempdir::{tempdir, TempDir};

use ratelockr::{
    At, DecidedBy, Decision, EmbeddedRedis, FailureKind, KeySpace, Limiter, LimiterOptions,
    RedisTarget, Rule,
};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A deadline far above any healthy decision, so that a loaded 2-core CI box (40 CLI processes
/// starting at once, other suites compiling) never turns an exact count into a fail-open one.
/// Tests about deadlines set their own.
pub const GENEROUS_DEADLINE: Duration = Duration::from_secs(20);

/// An explicit clock origin (ms since the epoch) for tests that drive time themselves.
pub const T0: u64 = 1_700_000_000_000;

/// A private redis-server for one test.
pub fn redis() -> EmbeddedRedis {
    name_the_server_on_panic();
    EmbeddedRedis::start().unwrap_or_else(|err| match err {
        ratelockr::EmbeddedError::ChosenNotFound(_) | ratelockr::EmbeddedError::NotInstalled => {
            panic!("{err}")
        }
        _ => panic!("{} does not start: {err}", server()),
    })
}

/// The server program the tests run on, as `make test` prints it: `Valkey 9.1.2
/// (/path/to/valkey-server)`, from the program's `--version`.
pub fn server() -> &'static str {
    static SERVER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SERVER.get_or_init(|| {
        let binary = match ratelockr::embedded::server_binary() {
            Ok(binary) => binary,
            Err(err) => return format!("no server ({err})"),
        };
        let version = Command::new(&binary)
            .arg("--version")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default();
        format!("{} ({})", name_version(&version), binary.display())
    })
}

/// `Redis server v=7.0.15 sha=…` → `Redis 7.0.15`; `Valkey server v=9.1.2 …` → `Valkey 9.1.2`.
fn name_version(text: &str) -> String {
    let name = text.split_whitespace().next().unwrap_or("unknown");
    let version = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("v="))
        .unwrap_or("?");
    format!("{name} {version}")
}

/// Adds "ran on <server>" to every panic message of this test binary (once per process).
fn name_the_server_on_panic() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let server = server();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            eprintln!("(this test ran on {server})");
        }));
    });
}

/// A prefix no other test (in this or another test binary) uses.
pub fn unique(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "t-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Options with a unique prefix and a generous deadline; telemetry on, failing open.
pub fn options(name: &str) -> LimiterOptions {
    LimiterOptions {
        keys: KeySpace::new(unique(name)),
        deadline: GENEROUS_DEADLINE,
        ..LimiterOptions::default()
    }
}

/// Options with a unique prefix and the engine's own default deadline (250 ms): what a user
/// gets without `--deadline-ms`.
pub fn options_with_default_deadline(name: &str) -> LimiterOptions {
    LimiterOptions {
        keys: KeySpace::new(unique(name)),
        ..LimiterOptions::default()
    }
}

/// A limiter on `server` under a unique prefix. Call from inside a tokio runtime.
pub fn limiter(server: &EmbeddedRedis, name: &str) -> Limiter {
    limiter_with(&server.url(), options(name))
}

pub fn limiter_with(url: &str, options: LimiterOptions) -> Limiter {
    name_the_server_on_panic();
    Limiter::new(&RedisTarget::parse(url).expect("a valid URL"), options)
}

/// A two-worker runtime, for the tests that start a cluster outside any runtime (it blocks
/// while it forms) and run their async parts inside this one.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A loopback server that answers every connection's first bytes with `answer`, then closes
/// it, as a web server answers a line it cannot parse. Its URL as `redis://`.
pub fn not_redis(answer: &'static [u8]) -> String {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 256];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(answer);
        }
    });
    format!("redis://127.0.0.1:{port}")
}

/// `redis://127.0.0.1:<port>` where nothing listens (the port was free a moment ago).
pub fn dead_url() -> String {
    let listener =
        TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("bind a free port");
    let port = listener.local_addr().expect("local addr").port();
    drop(listener);
    format!("redis://127.0.0.1:{port}")
}

/// One decision at `T0 + offset_ms` that Redis must have answered.
pub async fn decide_at(
    limiter: &Limiter,
    rule: &Rule,
    key: &str,
    cost: u64,
    offset_ms: u64,
) -> Decision {
    let decision = limiter
        .check_at(rule, key, cost, At::Millis(T0 + offset_ms))
        .await
        .expect("a valid request");
    assert_not_degraded(limiter, &decision);
    decision
}

/// One decision on the Redis clock that Redis must have answered.
pub async fn decide_now(limiter: &Limiter, rule: &Rule, key: &str, cost: u64) -> Decision {
    let decision = limiter
        .check_cost(rule, key, cost)
        .await
        .expect("a valid request");
    assert_not_degraded(limiter, &decision);
    decision
}

fn assert_not_degraded(limiter: &Limiter, decision: &Decision) {
    assert!(
        decision.by == DecidedBy::Redis,
        "Redis should have decided, got {decision:?}; failures so far: {:?}",
        limiter.ledger().failures()
    );
}

/// A plain Redis command through the limiter's own connection.
pub async fn query<T: redis::FromRedisValue>(limiter: &Limiter, cmd: &redis::Cmd) -> T {
    cmd.query_async(&mut limiter.connection())
        .await
        .unwrap_or_else(|err| panic!("{cmd:?} failed: {err}"))
}

/// PTTL of a key in milliseconds (-2: no key, -1: no TTL).
pub async fn pttl(limiter: &Limiter, key: &str) -> i64 {
    query(limiter, redis::cmd("PTTL").arg(key)).await
}

pub async fn exists(limiter: &Limiter, key: &str) -> bool {
    query::<i64>(limiter, redis::cmd("EXISTS").arg(key)).await == 1
}

/// Copies a limiter's state to another key, to probe "what if" without disturbing the original.
pub async fn fork(limiter: &Limiter, from: &str, to: &str) {
    let copied: i64 = query(limiter, redis::cmd("COPY").arg(from).arg(to).arg("REPLACE")).await;
    assert_eq!(copied, 1, "COPY {from} {to}");
}

/// How many failures of `kind` the limiter's ledger holds.
pub fn failures_of(limiter: &Limiter, kind: FailureKind) -> u64 {
    limiter
        .ledger()
        .failures()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .map_or(0, |(_, n)| n)
}

/// Polls `probe` every 100 ms for at most `limit`; true as soon as it holds.
pub async fn eventually<F, Fut>(limit: Duration, mut probe: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    loop {
        if probe().await {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A token bucket's stored state: 16 bytes, `struct.pack('<dd', tokens, last_refill_ms)`.
pub fn unpack_bucket(state: &[u8]) -> (f64, f64) {
    assert_eq!(state.len(), 16, "a bucket is 16 bytes: {state:?}");
    let double = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
    (double(&state[..8]), double(&state[8..]))
}

/// Sends SIGCONT when dropped, so a failing test never leaves a frozen redis-server behind.
pub struct Thaw(pub u32);

impl Drop for Thaw {
    fn drop(&mut self) {
        signal("CONT", self.0);
    }
}

pub fn signal(name: &str, pid: u32) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// One HTTP/1.1 request on a fresh connection: status, headers (lower-cased names), body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, std::collections::BTreeMap<String, String>, String) {
    http_with(addr, method, path, &[], body).await
}

/// [`http`] with extra request headers (`(name, value)`, sent as given).
pub async fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, std::collections::BTreeMap<String, String>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let raw = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers end");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

/// Writes `text` to `path` through a rename, as editors and deploy tools do, with the
/// modification time set to `stamp_secs` since the epoch, so that a filesystem with coarse
/// timestamps still sees each version as a change (the policies file watch).
#[allow(dead_code)]
pub fn replace_file(path: &std::path::Path, text: &str, stamp_secs: u64) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write");
    let file = std::fs::File::options()
        .write(true)
        .open(&tmp)
        .expect("open");
    file.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(stamp_secs))
        .expect("set the modification time");
    drop(file);
    std::fs::rename(&tmp, path).expect("rename");
}

/// A property test's world: a limiter on its own redis-server, and a current-thread runtime
/// to drive it from proptest's synchronous cases. Fields drop in order: the limiter, its
/// runtime, then the server.
#[allow(dead_code)]
pub struct World {
    pub limiter: Limiter,
    pub rt: tokio::runtime::Runtime,
    _server: EmbeddedRedis,
}

/// [`World`] under a unique prefix made from `name`.
#[allow(dead_code)]
pub fn world(name: &str) -> World {
    let server = redis();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let limiter = rt.block_on(async { limiter(&server, name) });
    World {
        limiter,
        rt,
        _server: server,
    }
}

/// The directory and port of the embedded server started by process `owner`, once it is up.
pub fn embedded_server_of(owner: u32) -> (std::path::PathBuf, u16) {
    use ratelockr::embedded::ping;
    use std::time::Instant;
    let prefix = format!("ratelockr-redis-{owner}-");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = std::fs::read_dir(std::env::temp_dir())
            .expect("the temp dir")
            .flatten()
            .find_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let port: u16 = name.strip_prefix(&prefix)?.parse().ok()?;
                let dir = entry.path();
                (dir.join("redis.pid").exists() && ping(port)).then_some((dir, port))
            });
        if let Some(found) = found {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "process {owner} started no embedded redis-server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
