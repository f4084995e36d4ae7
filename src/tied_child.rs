//! Child processes that end with their owner. A managed redis-server whose owner is killed
//! outright (SIGKILL, a crash, the app's window killed from a task manager) would otherwise run
//! on until the next start on the machine reaps it ([`crate::embedded::reap_orphans`]).
//!
//! On Linux the child is started through `setpriv --pdeathsig TERM` (util-linux, on every
//! Debian and most other systems), which asks the kernel to send it SIGTERM when its parent
//! dies, then execs the program (same process, same pid). The kernel ties that signal to the
//! *thread* that forked, not the process, so every tied child is spawned from one thread that
//! lives as long as the process: a child spawned from a pool thread would be stopped when the
//! pool retired that thread. Without setpriv the child is spawned as before, and the reaping
//! at the next start remains.

use std::io;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{mpsc, Mutex, OnceLock};

/// A command for `program` that, spawned with [`spawn`], ends when this process dies;
/// `setpriv` is that program's path, where the system has it (Linux).
pub(crate) fn command(program: &Path, setpriv: Option<&Path>) -> Command {
    match setpriv {
        Some(setpriv) => {
            let mut cmd = Command::new(setpriv);
            cmd.args(["--pdeathsig", "TERM", "--"]).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

type Job = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `cmd` from the process's long-lived spawner thread (see the module's note).
pub(crate) fn spawn(mut cmd: Command) -> io::Result<Child> {
    let Some(spawner) = spawner() else {
        return cmd.spawn();
    };
    let (reply, answer) = mpsc::channel();
    let sent = spawner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, reply));
    match sent {
        Ok(()) => answer
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the spawner thread ended"))),
        // The thread is gone (it never ends, but a send can still fail): spawn here.
        Err(mpsc::SendError((mut cmd, _))) => cmd.spawn(),
    }
}

fn spawner() -> Option<&'static Mutex<mpsc::Sender<Job>>> {
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("ratelockr-spawner".into())
                .spawn(move || {
                    for (mut cmd, reply) in queue {
                        let _ = reply.send(cmd.spawn());
                    }
                })
                .ok()
                .map(|_| Mutex::new(jobs))
        })
        .as_ref()
}
