//! Reading a log: a file or stdin, gzip recognised by its magic bytes (not its name), and lines
//! of bounded length, so that a binary file, a truncated archive or a 10 MB line costs a
//! counted, skipped line and never the process.

use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The longest line kept. Longer lines are skipped (counted as malformed) without ever being
/// held in memory whole: a log line is a few hundred bytes, 64 KiB is generous.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Where a log comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    File(PathBuf),
    Stdin,
    /// Text held in memory (tests, previews of pasted text).
    Text(String),
}

impl LogSource {
    /// `-` is stdin; anything else a file.
    pub fn from_arg(arg: &str) -> Self {
        if arg == "-" {
            LogSource::Stdin
        } else {
            LogSource::File(PathBuf::from(arg))
        }
    }

    /// How errors name the source.
    pub fn describe(&self) -> String {
        match self {
            LogSource::File(path) => path.display().to_string(),
            LogSource::Stdin => "stdin".into(),
            LogSource::Text(_) => "the given text".into(),
        }
    }

    /// A file that cannot be opened, found before any Redis is asked or thread started; stdin
    /// and text always can.
    pub fn check_readable(&self) -> io::Result<()> {
        match self {
            LogSource::File(path) => open_file(path).map(drop),
            LogSource::Stdin | LogSource::Text(_) => Ok(()),
        }
    }

    /// Opens the source, decompressing gzip (one or more members) when it starts with gzip's
    /// magic bytes.
    pub fn open(&self) -> io::Result<Lines> {
        let (raw, total): (Box<dyn Read + Send>, Option<u64>) = match self {
            LogSource::File(path) => {
                let file = open_file(path)?;
                let len = file.metadata().ok().map(|m| m.len());
                (Box::new(file), len)
            }
            LogSource::Stdin => (Box::new(io::stdin()), None),
            LogSource::Text(text) => (
                Box::new(io::Cursor::new(text.clone().into_bytes())),
                Some(text.len() as u64),
            ),
        };
        let read = Arc::new(AtomicU64::new(0));
        let raw = Counting {
            inner: raw,
            read: read.clone(),
        };
        let mut buffered = BufReader::with_capacity(256 * 1024, raw);
        let gzip = buffered.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(
                256 * 1024,
                MultiGzDecoder::new(buffered),
            ))
        } else {
            Box::new(buffered)
        };
        Ok(Lines {
            reader,
            buf: Vec::with_capacity(1024),
            number: 0,
            gzip,
            read,
            total,
        })
    }
}

/// Counts the bytes read from the source (compressed ones, for gzip): progress.
struct Counting {
    inner: Box<dyn Read + Send>,
    read: Arc<AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn open_file(path: &Path) -> io::Result<File> {
    if path.is_dir() {
        return Err(io::Error::other("it is a directory"));
    }
    File::open(path)
}

/// One line as read: its number (from 1) and its text, or why it cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Text(&'a str),
    /// Longer than [`MAX_LINE_BYTES`]; the rest of it was skipped.
    TooLong(usize),
    /// Not UTF-8, or holding NUL bytes: a binary file, most likely.
    Binary,
}

/// Lines of bounded length from a (possibly decompressed) stream.
pub struct Lines {
    reader: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    number: u64,
    gzip: bool,
    read: Arc<AtomicU64>,
    total: Option<u64>,
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("number", &self.number)
            .field("gzip", &self.gzip)
            .finish_non_exhaustive()
    }
}

impl Lines {
    /// True when the input was gzip.
    pub fn gzip(&self) -> bool {
        self.gzip
    }

    /// Bytes read from the source so far (shared: it can be read from another thread).
    pub fn bytes_read(&self) -> Arc<AtomicU64> {
        self.read.clone()
    }

    /// The source's size, when known (a file).
    pub fn total_bytes(&self) -> Option<u64> {
        self.total
    }

    /// The next line with its number, `Ok(None)` at the end, or the read error (a truncated
    /// gzip stream, an I/O failure) that ended the input.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        let mut skipped = 0usize;
        let mut any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (chunk, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if skipped > 0 || self.buf.len() + chunk.len() > MAX_LINE_BYTES {
                skipped += self.buf.len() + chunk.len();
                self.buf.clear();
            } else {
                self.buf.extend_from_slice(chunk);
            }
            let consumed = done.unwrap_or(available.len());
            self.reader.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if skipped > 0 {
            return Ok(Some((self.number, Line::TooLong(skipped))));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        if self.buf.contains(&0) {
            return Ok(Some((self.number, Line::Binary)));
        }
        Ok(Some((
            self.number,
            match std::str::from_utf8(&self.buf) {
                Ok(text) => Line::Text(text),
                Err(_) => Line::Binary,
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(source: LogSource) -> (Vec<String>, Option<String>) {
        let mut lines = source.open().expect("opens");
        let mut out = Vec::new();
        loop {
            match lines.next_line() {
                Ok(Some((n, line))) => out.push(format!("{n}:{line:?}")),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn bounds_lines_and_flags_binary() {
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        let text = format!("a\r\n{long}\nb\u{0}c\nlast");
        let (lines, err) = all(LogSource::Text(text));
        assert_eq!(err, None);
        assert_eq!(
            lines,
            [
                "1:Text(\"a\")".to_string(),
                format!("2:TooLong({})", MAX_LINE_BYTES + 10),
                "3:Binary".into(),
                "4:Text(\"last\")".into()
            ]
        );
    }

    #[test]
    fn decompresses_gzip_and_reports_truncation() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        for i in 0..2000 {
            writeln!(gz, "line {i}").expect("write");
        }
        let bytes = gz.finish().expect("finish");
        let dir = std::env::temp_dir().join(format!("ratelockr-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let whole = dir.join("whole.log");
        std::fs::write(&whole, &bytes).expect("write");
        let (lines, err) = all(LogSource::File(whole));
        assert_eq!((lines.len(), err), (2000, None));
        let cut = dir.join("cut.log");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
        let (lines, err) = all(LogSource::File(cut));
        assert!(lines.len() < 2000, "{}", lines.len());
        assert!(
            err.is_some(),
            "a truncated gzip is an error, not a silent end"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
