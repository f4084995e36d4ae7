//! The window fits the screen it opens on: tauri.conf.json asks for a comfortable size, and
//! on a smaller screen the window is shrunk to 92 % of it (never below the configured
//! minimum, which is itself at most 900×600) and centred.

use tauri::{LogicalPosition, LogicalSize, Manager, Runtime};

/// The share of the screen a shrunk window takes, leaving room for panels and docks.
const SCREEN_SHARE: f64 = 0.92;
/// The smallest window (tauri.conf.json's minWidth and minHeight).
pub const MIN_SIZE: (f64, f64) = (800.0, 560.0);

/// The size to shrink a `window` to on a `screen` (logical pixels), or None when it fits.
pub fn fit(window: (f64, f64), screen: (f64, f64)) -> Option<(f64, f64)> {
    let w = window.0.min(screen.0 * SCREEN_SHARE).max(MIN_SIZE.0);
    let h = window.1.min(screen.1 * SCREEN_SHARE).max(MIN_SIZE.1);
    (w < window.0 || h < window.1).then_some((w.floor(), h.floor()))
}

/// Where a window of `size` sits centred on a `screen` (logical pixels from its corner).
pub fn centred(size: (f64, f64), screen: (f64, f64)) -> (f64, f64) {
    (
        ((screen.0 - size.0) / 2.0).max(0.0).floor(),
        ((screen.1 - size.1) / 2.0).max(0.0).floor(),
    )
}

/// Shrinks the main window to its monitor when it would not fit. Best effort: a platform
/// that cannot say its monitor keeps the configured size.
pub fn fit_main_window<R: Runtime>(app: &tauri::AppHandle<R>) {
    let Some(window) = app.get_webview_window("main") else {
        return;
    };
    let Ok(Some(monitor)) = window.current_monitor() else {
        return;
    };
    // The size tauri.conf.json asks for, not the window's size now: on a screen smaller than
    // that, the window system may already have cut the new window down (to its minimum width,
    // under Xvfb at 1280×720).
    let Some(wanted) = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == "main")
        .map(|w| (w.width, w.height))
    else {
        return;
    };
    let scale = monitor.scale_factor();
    let screen = monitor.size().to_logical::<f64>(scale);
    if let Some((w, h)) = fit(wanted, (screen.width, screen.height)) {
        let _ = window.set_size(LogicalSize::new(w, h));
        // Placed by its new size, not by `center()`: that reads the window's size before the
        // resize lands (without a window manager, as under Xvfb, it put the window's corner
        // in the middle of a 1280×720 screen, half of it off the screen).
        let origin = monitor.position().to_logical::<f64>(scale);
        let (x, y) = centred((w, h), (screen.width, screen.height));
        let _ = window.set_position(LogicalPosition::new(origin.x + x, origin.y + y));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_screen_gets_a_window_that_fits_and_a_large_one_keeps_it() {
        assert_eq!(fit((1280.0, 800.0), (1920.0, 1080.0)), None);
        assert_eq!(fit((1280.0, 800.0), (1024.0, 640.0)), Some((942.0, 588.0)));
        // A 900×600 screen: the minimum itself fits.
        let (w, h) = fit((1280.0, 800.0), (900.0, 600.0)).expect("shrunk");
        assert!(w <= 900.0 && h <= 600.0, "{w}×{h}");
        assert!(MIN_SIZE.0 <= 900.0 && MIN_SIZE.1 <= 600.0);
    }

    #[test]
    fn a_shrunk_window_is_centred_on_its_screen() {
        assert_eq!(centred((1177.0, 662.0), (1280.0, 720.0)), (51.0, 29.0));
        // Never off the screen's corner, even when the minimum is larger than the screen.
        assert_eq!(centred((800.0, 560.0), (640.0, 480.0)), (0.0, 0.0));
    }

    #[test]
    fn the_config_agrees_with_this_minimum() {
        let conf: serde_json::Value =
            serde_json::from_str(include_str!("../../tauri.conf.json")).expect("valid JSON");
        let window = &conf["app"]["windows"][0];
        assert_eq!(window["minWidth"].as_f64(), Some(MIN_SIZE.0));
        assert_eq!(window["minHeight"].as_f64(), Some(MIN_SIZE.1));
    }
}
