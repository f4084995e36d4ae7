//! A private, managed `redis-server`: started on a free loopback port with persistence off,
//! stopped when dropped. Serves the CLI's `--embedded`, the desktop app and the tests.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a fresh redis-server may take to answer PING.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the embedded Redis could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(
        "redis-server was not found on PATH. Install it: `sudo apt-get install redis-server` \
         (Debian/Ubuntu), `brew install redis` (macOS), or point --redis / REDIS_URL at a running Redis"
    )]
    NotInstalled,
    #[error("could not start redis-server: {0}")]
    Spawn(std::io::Error),
    #[error("redis-server did not start: {reason}\n--- its log ---\n{log}")]
    NotReady { reason: String, log: String },
}

/// A running private redis-server. Dropping it stops the server and removes its files.
#[derive(Debug)]
pub struct EmbeddedRedis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl EmbeddedRedis {
    /// Starts `redis-server` from PATH on a free port of 127.0.0.1 and waits until it answers.
    pub fn start() -> Result<Self, EmbeddedError> {
        Self::start_with(&[])
    }

    /// As [`EmbeddedRedis::start`], with extra `redis-server` arguments (`["--maxmemory", "1mb"]`).
    pub fn start_with(extra: &[&str]) -> Result<Self, EmbeddedError> {
        let binary = find_on_path("redis-server").ok_or(EmbeddedError::NotInstalled)?;
        // A port can be taken between probing and binding; a few tries make that harmless.
        let mut last = None;
        for _ in 0..5 {
            match Self::try_start(&binary, extra) {
                Ok(server) => return Ok(server),
                Err(err @ EmbeddedError::NotReady { .. }) => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or(EmbeddedError::NotInstalled))
    }

    fn try_start(binary: &Path, extra: &[&str]) -> Result<Self, EmbeddedError> {
        let port = free_port().map_err(EmbeddedError::Spawn)?;
        let dir =
            std::env::temp_dir().join(format!("ratelockr-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(EmbeddedError::Spawn)?;
        let log = dir.join("redis.log");
        let child = Command::new(binary)
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--protected-mode", "yes"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(&log)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(EmbeddedError::Spawn)?;
        let mut server = EmbeddedRedis { child, port, dir };
        server.wait_ready()?;
        tracing::info!(port, "started embedded redis-server");
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), EmbeddedError> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
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
        self.child.id()
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The server's log so far, for error messages and failing tests.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for EmbeddedRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Looks a program up on PATH like a shell would.
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

/// A blocking PING with short timeouts; true on `+PONG`.
pub(crate) fn ping(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    stream.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}
