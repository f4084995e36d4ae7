//! A test's own directory under the system's temp dir: shared by the engine's tests and the
//! app's (which include this file by path), and by `tls.rs`'s certificates.

/// A new, empty directory named for `name`: never an earlier run's (process ids recur across
/// CI runs, and a temp dir may outlive them).
pub fn tempdir(name: &str) -> TempDir {
    TempDir(
        tempfile::Builder::new()
            .prefix(&format!("t-{name}-"))
            .tempdir()
            .expect("temp dir"),
    )
}

/// A test's directory: a path (`dir.join(..)`, `&dir` as `&Path`), removed with everything in
/// it when the test ends, so runs leave nothing behind in the temp dir.
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl AsRef<std::path::Path> for TempDir {
    fn as_ref(&self) -> &std::path::Path {
        self.0.path()
    }
}
