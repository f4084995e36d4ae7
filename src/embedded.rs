//! A private, managed `redis-server`: started on a free loopback port with persistence off,
//! stopped when dropped. Serves the CLI's `--embedded`, the desktop app and the tests.
//!
//! A process that is killed outright (SIGKILL, a crash) cannot stop its server. On Linux the
//! kernel stops it instead: the server is started tied to its owner ([`crate::tied_child`]),
//! and gets SIGTERM when the owner dies. Where that cannot be had, and for its files, each
//! server lives in a directory named after its owner's pid and its port, with a pidfile; the
//! next start on the machine shuts down the servers whose owner is gone ([`reap_orphans`],
//! Linux) and removes their files.
//!
//! The program is `redis-server` from PATH, or the one named by `RATELOCKR_REDIS_SERVER` (a path,
//! or a name looked up on PATH): `valkey-server` speaks the same protocol and takes the same
//! flags, so the CLI's `--embedded`, the app and the tests run on Valkey with that one variable.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a fresh redis-server may take to answer PING.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The data directory of each embedded server, under the system's temp dir:
/// `ratelockr-redis-<owner pid>-<port>`.
const DIR_PREFIX: &str = "ratelockr-redis-";

/// The environment variable that names the server program to start instead of `redis-server`.
pub const SERVER_ENV: &str = "RATELOCKR_REDIS_SERVER";

/// The process titles a managed server sets (`<program> 127.0.0.1:<port>`).
const SERVER_TITLES: [&str; 2] = ["redis-server", "valkey-server"];

/// Why the embedded Redis could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(
        "redis-server was not found on PATH. Install it: `sudo apt-get install redis-server` \
         (Debian/Ubuntu), `brew install redis` (macOS), or point --redis / REDIS_URL at a running Redis"
    )]
    NotInstalled,
    #[error(
        "{SERVER_ENV} names {0:?}, which is neither a file nor a program on PATH: point it at a \
         redis-server or valkey-server binary, or unset it to use redis-server"
    )]
    ChosenNotFound(String),
    #[error("could not start redis-server: {0}")]
    Spawn(std::io::Error),
    #[error("redis-server did not start: {reason}\n--- its log ---\n{log}")]
    NotReady { reason: String, log: String },
}

/// A running private redis-server. Dropping it stops the server and removes its files. One
/// that dies (killed, out of memory) can be started again on the same port
/// ([`EmbeddedRedis::restart_if_exited`]), so connections to it recover by themselves.
#[derive(Debug)]
pub struct EmbeddedRedis {
    child: Mutex<Child>,
    port: u16,
    dir: PathBuf,
    binary: PathBuf,
    extra: Vec<String>,
}

impl EmbeddedRedis {
    /// Starts `redis-server` from PATH on a free port of 127.0.0.1 and waits until it answers.
    pub fn start() -> Result<Self, EmbeddedError> {
        Self::start_with(&[])
    }

    /// As [`EmbeddedRedis::start`], with extra `redis-server` arguments (`["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> Result<Self, EmbeddedError> {
        let binary = server_binary()?;
        let reaped = reap_orphans();
        if reaped > 0 {
            tracing::info!(
                reaped,
                "stopped embedded redis-servers whose owner had died"
            );
        }
        // A port can be taken between probing and binding; a few tries make that harmless.
        let mut last = None;
        for _ in 0..5 {
            match Self::try_start(&binary, extra, None) {
                Ok(server) => return Ok(server),
                Err(err @ EmbeddedError::NotReady { .. }) => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or(EmbeddedError::NotInstalled))
    }

    /// As [`EmbeddedRedis::start`], on `port` when it is free, so a server started again (the
    /// app's, across restarts) keeps its address; on a free port when `port` is taken or the
    /// server cannot start there. [`EmbeddedRedis::port`] says which one it got.
    pub fn start_on(port: u16) -> Result<Self, EmbeddedError> {
        let binary = server_binary()?;
        reap_orphans();
        // Only a port nothing listens on: a server already there (another app's) would answer
        // the readiness PING for the one that could not bind.
        let free =
            port != 0 && TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_ok();
        if free {
            match Self::try_start(&binary, &[], Some(port)) {
                Ok(server) => return Ok(server),
                Err(err @ EmbeddedError::NotReady { .. }) => {
                    tracing::warn!(
                        port,
                        "embedded redis-server could not start on its port: {err}"
                    )
                }
                Err(err) => return Err(err),
            }
        }
        Self::start_with(&[])
    }

    fn try_start(binary: &Path, extra: &[&str], port: Option<u16>) -> Result<Self, EmbeddedError> {
        let port = match port {
            Some(port) => port,
            None => free_port().map_err(EmbeddedError::Spawn)?,
        };
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{port}", std::process::id()));
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn(binary, port, &dir, &extra)?;
        let mut server = EmbeddedRedis {
            child: Mutex::new(child),
            port,
            dir,
            binary: binary.to_path_buf(),
            extra,
        };
        server.wait_ready()?;
        tracing::info!(port, "started embedded redis-server");
        Ok(server)
    }

    /// True when the server process has ended (killed, crashed).
    pub fn exited(&self) -> bool {
        matches!(self.lock().try_wait(), Ok(Some(_)))
    }

    /// Starts the server again, on the same port and with the same arguments, when its
    /// process has ended; true when it did. Connections to the old one reconnect to it by
    /// themselves (its data is gone: the limiters start full). Fails when the port was taken
    /// meanwhile or the new server does not answer.
    pub fn restart_if_exited(&self) -> Result<bool, EmbeddedError> {
        let mut child = self.lock();
        if !matches!(child.try_wait(), Ok(Some(_))) {
            return Ok(false);
        }
        *child = spawn(&self.binary, self.port, &self.dir, &self.extra)?;
        drop(child);
        self.wait_until_ready()?;
        tracing::warn!(
            port = self.port,
            "the embedded redis-server had stopped: started it again"
        );
        Ok(true)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait_ready(&mut self) -> Result<(), EmbeddedError> {
        self.wait_until_ready()
    }

    fn wait_until_ready(&self) -> Result<(), EmbeddedError> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.lock().try_wait() {
                return Err(self.not_ready(format!("it exited with {status}")));
            }
            if ping(self.port) {
                return Ok(());
            }
            if started.elapsed() > STARTUP_TIMEOUT {
                return Err(self.not_ready(format!(
                    "no PONG on port {} within {} s",
                    self.port,
                    STARTUP_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn not_ready(&self, reason: String) -> EmbeddedError {
        EmbeddedError::NotReady {
            reason,
            log: self.log(),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id, for tests that freeze (SIGSTOP) or kill the server.
    pub fn pid(&self) -> u32 {
        self.lock().id()
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server program this instance runs (`redis-server`, or [`SERVER_ENV`]'s choice).
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The server's log so far, for error messages and failing tests.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for EmbeddedRedis {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The program to start: [`SERVER_ENV`] when it is set (a path, or a name on PATH), else
/// `redis-server` from PATH.
pub fn server_binary() -> Result<PathBuf, EmbeddedError> {
    match std::env::var(SERVER_ENV) {
        Ok(chosen) if !chosen.trim().is_empty() => {
            let path = PathBuf::from(&chosen);
            if chosen.contains('/') {
                return path
                    .is_file()
                    .then_some(path)
                    .ok_or(EmbeddedError::ChosenNotFound(chosen));
            }
            find_on_path(&chosen).ok_or(EmbeddedError::ChosenNotFound(chosen))
        }
        _ => find_on_path("redis-server").ok_or(EmbeddedError::NotInstalled),
    }
}

/// Starts `redis-server` on `port` with its files in `dir` (created if need be).
fn spawn(binary: &Path, port: u16, dir: &Path, extra: &[String]) -> Result<Child, EmbeddedError> {
    std::fs::create_dir_all(dir).map_err(EmbeddedError::Spawn)?;
    let mut cmd = crate::tied_child::command(binary, setpriv());
    cmd.args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1", "--protected-mode", "yes"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"))
        // Written even without --daemonize, so that an orphan can be found (reap_orphans).
        .arg("--pidfile")
        .arg(dir.join("redis.pid"))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    crate::tied_child::spawn(cmd).map_err(EmbeddedError::Spawn)
}

/// Shuts down the embedded redis-servers whose owning process has died without stopping them
/// (killed, crashed), and removes their directories; returns how many it shut down.
///
/// A server is only touched when its directory names a dead owner, its pidfile names a live
/// process, and that process is a `redis-server` on the directory's port. Linux only (it reads
/// `/proc`); elsewhere it does nothing. [`EmbeddedRedis::start`] calls it first.
pub fn reap_orphans() -> usize {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    let mut reaped = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((owner, port)) = name.to_str().and_then(parse_dir_name) else {
            continue;
        };
        if owner == std::process::id() || is_running(proc, owner) {
            continue;
        }
        let dir = entry.path();
        let pid = std::fs::read_to_string(dir.join("redis.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok());
        if let Some(pid) = pid.filter(|pid| is_redis_server_on(proc, *pid, port)) {
            if shutdown(port) && wait_gone(proc, pid) {
                reaped += 1;
            } else {
                tracing::warn!(
                    pid,
                    port,
                    "could not stop an orphaned embedded redis-server"
                );
                continue;
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    reaped
}

/// `ratelockr-redis-<owner pid>-<port>` → (owner pid, port).
fn parse_dir_name(name: &str) -> Option<(u32, u16)> {
    let (owner, port) = name.strip_prefix(DIR_PREFIX)?.split_once('-')?;
    Some((owner.parse().ok()?, port.parse().ok()?))
}

/// Whether `pid` is a redis-server (or valkey-server) serving 127.0.0.1:`port` (each sets its
/// process title to `<program> 127.0.0.1:<port>`).
fn is_redis_server_on(proc: &Path, pid: u32, port: u16) -> bool {
    std::fs::read(proc.join(pid.to_string()).join("cmdline")).is_ok_and(|cmdline| {
        let title = String::from_utf8_lossy(&cmdline);
        SERVER_TITLES.iter().any(|name| title.contains(name))
            && title.contains(&format!("127.0.0.1:{port}"))
    })
}

/// Asks the server on `port` to exit without saving; true once it has closed the connection.
fn shutdown(port: u16) -> bool {
    let Some(mut stream) = send(port, b"SHUTDOWN NOSAVE\r\n", Duration::from_secs(2)) else {
        return false;
    };
    // A shutting-down server closes the connection without a reply.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).is_ok() && rest.is_empty()
}

/// Whether a process is alive: it exists and is not a zombie (exited, not yet reaped by
/// whichever process adopted it).
fn is_running(proc: &Path, pid: u32) -> bool {
    std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).is_ok_and(|stat| {
        // The state follows the parenthesised command name: "<pid> (<comm>) <state> ...".
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

/// Waits up to two seconds for a process to exit.
fn wait_gone(proc: &Path, pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    while is_running(proc, pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `setpriv` (util-linux) on Linux, where it is on PATH: what ties a server to its owner.
fn setpriv() -> Option<&'static Path> {
    static SETPRIV: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    SETPRIV
        .get_or_init(|| {
            cfg!(target_os = "linux")
                .then(|| find_on_path("setpriv"))
                .flatten()
        })
        .as_deref()
}

/// Looks a program up on PATH like a shell would: the first `program` file there.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    Ok(listener.local_addr()?.port())
}

/// A blocking PING to 127.0.0.1:`port` with short timeouts; true on `+PONG`.
pub fn ping(port: u16) -> bool {
    let Some(mut stream) = send(port, b"PING\r\n", Duration::from_millis(500)) else {
        return false;
    };
    let mut buf = [0u8; 7];
    stream.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// Connects to 127.0.0.1:`port` (200 ms at most) and sends one inline command; the stream,
/// with `read_timeout` set, for the reply.
fn send(port: u16, command: &[u8], read_timeout: Duration) -> Option<TcpStream> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    let _ = stream.set_read_timeout(Some(read_timeout));
    stream.write_all(command).ok()?;
    Some(stream)
}
