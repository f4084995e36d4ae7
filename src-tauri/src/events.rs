//! Simulator events to the window: `refetch-stats` and `sim-progress` (each at most one per `EVENT_GAP`), `sim-finished`;
//! replay events: `replay-progress` (at most one per `EVENT_GAP`, 500 ms), `replay-finished`.

use ratelockr_app_core::replay::{ReplayEvents, ReplayStatus};
use ratelockr_app_core::sim::{SimEvents, SimFinished, SimProgress};
use ratelockr_lab::replay::ReplayProgress;
use tauri::{AppHandle, Emitter, Runtime};

pub const REFETCH_STATS: &str = "refetch-stats";
pub const SIM_PROGRESS: &str = "sim-progress";
pub const SIM_FINISHED: &str = "sim-finished";
pub const REPLAY_PROGRESS: &str = "replay-progress";
pub const REPLAY_FINISHED: &str = "replay-finished";

pub struct WindowEvents<R: Runtime> {
    app: AppHandle<R>,
}

impl<R: Runtime> std::fmt::Debug for WindowEvents<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WindowEvents")
    }
}

impl<R: Runtime> WindowEvents<R> {
    pub fn new(app: AppHandle<R>) -> Self {
        WindowEvents { app }
    }
}

impl<R: Runtime> SimEvents for WindowEvents<R> {
    fn refetch_stats(&self) {
        let _ = self.app.emit(REFETCH_STATS, ());
    }

    fn progress(&self, progress: &SimProgress) {
        let _ = self.app.emit(SIM_PROGRESS, progress);
    }

    fn finished(&self, finished: &SimFinished) {
        let _ = self.app.emit(SIM_FINISHED, finished);
    }
}

impl<R: Runtime> ReplayEvents for WindowEvents<R> {
    fn progress(&self, progress: &ReplayProgress) {
        let _ = self.app.emit(REPLAY_PROGRESS, progress);
    }

    fn finished(&self, status: &ReplayStatus) {
        let _ = self.app.emit(REPLAY_FINISHED, status);
    }
}
