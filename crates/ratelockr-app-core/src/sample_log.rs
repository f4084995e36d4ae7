//! The sample access log the project ships (`samples/access.log.gz`: 48,599 requests of a
//! combined-format log with a scraper among them), offered by the Replay view with one click.
//! It is built into the app, so a packaged app has it too, and put in the data dir the first
//! time it is asked for: the replay reads a file like any other.

use crate::error::{AppError, ErrorCode};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The log, as shipped.
const SAMPLE: &[u8] = include_bytes!("../../../samples/access.log.gz");

/// The sample log's path under `data_dir` (`samples/access.log.gz`), written there whole if it
/// is not there yet or differs in size (an older build's, a half-copied one).
pub fn sample_log(data_dir: &Path) -> Result<PathBuf, AppError> {
    let path = data_dir.join("samples").join("access.log.gz");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == SAMPLE.len() as u64) {
        return Ok(path);
    }
    let failed = |e: std::io::Error| {
        AppError::new(
            ErrorCode::LogUnreadable,
            format!("cannot put the sample log at {}: {e}", path.display()),
        )
    };
    std::fs::create_dir_all(path.parent().unwrap_or(data_dir)).map_err(failed)?;
    let out =
        ratelockr::atomic_file::AtomicFile::create(&path, ratelockr::atomic_file::Replace::Allow)
            .map_err(failed)?;
    out.file().write_all(SAMPLE).map_err(failed)?;
    out.commit().map_err(failed)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_put_in_the_data_dir_once_and_mended_when_it_differs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = sample_log(dir.path()).expect("written");
        assert_eq!(std::fs::read(&path).expect("read"), SAMPLE);
        // A gzip file, which the replay reads by its magic.
        assert_eq!(&SAMPLE[..2], b"\x1f\x8b");
        std::fs::write(&path, b"half").expect("spoil");
        assert_eq!(sample_log(dir.path()).expect("mended"), path);
        assert_eq!(std::fs::read(&path).expect("read").len(), SAMPLE.len());
    }
}
