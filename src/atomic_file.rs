//! Files written whole or not at all: every export goes to a temporary file in the
//! destination's own folder (so the rename cannot cross a file system), is synced, and only then
//! renamed over the destination. A write that fails (a full disk, a vanished folder, a killed
//! run) leaves the old file exactly as it was and no partial or empty file beside it.
//!
//! Whether an existing file may be replaced is the caller's word ([`Replace`]): the app's save
//! dialog has asked the user; the CLI replaces only with `--force`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// May an existing destination be replaced?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// The user confirmed (a save dialog, `--force`): replace it.
    Allow,
    /// Keep an existing file: refuse before writing, and never rename over one.
    Never,
}

/// A destination's contents in the making: a temporary file beside it until [`commit`].
///
/// Dropped without a commit, the temporary file is removed and the destination is untouched.
///
/// [`commit`]: AtomicFile::commit
#[derive(Debug)]
pub struct AtomicFile {
    temp: tempfile::NamedTempFile,
    dest: PathBuf,
    replace: Replace,
}

impl AtomicFile {
    /// A temporary file beside `dest`, its name ending in `dest`'s extension (so a library that
    /// picks a format by extension, as plotters does, picks the right one).
    pub fn create(dest: &Path, replace: Replace) -> io::Result<Self> {
        check(dest, replace)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let suffix = dest
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(&format!(".tmp{suffix}"))
            .tempfile_in(folder(dest))?;
        Ok(AtomicFile {
            temp,
            dest: dest.to_path_buf(),
            replace,
        })
    }

    /// The temporary file, to write through.
    pub fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// The temporary file's path, for a writer that opens a path itself.
    pub fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// The destination.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs the temporary file and renames it over the destination. With [`Replace::Never`]
    /// a destination that appeared meanwhile is kept, and so is the new file, under the name
    /// the error gives.
    pub fn commit(self) -> io::Result<()> {
        // What a writer wrote through its own handle (by path) is synced through ours: the
        // same inode.
        File::open(self.temp.path())?.sync_all()?;
        match self.replace {
            Replace::Allow => self.temp.persist(&self.dest).map(drop).map_err(|e| e.error),
            Replace::Never => match self.temp.persist_noclobber(&self.dest) {
                Ok(_) => Ok(()),
                Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                    let kept = e.file.keep().map(|(_, p)| p).map_err(|k| k.error)?;
                    Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "it appeared while this one was written and is kept; the new file is {}",
                            kept.display()
                        ),
                    ))
                }
                Err(e) => Err(e.error),
            },
        }
    }
}

/// Refuses, before anything is written, what [`AtomicFile::create`] would: a destination that is
/// a folder, one that exists under [`Replace::Never`], or a folder that cannot be written (a
/// temporary file is made there and removed: nothing is left behind, nothing is replaced).
pub fn check_writable(dest: &Path, replace: Replace) -> io::Result<()> {
    check(dest, replace)?;
    tempfile::Builder::new()
        .prefix(".ratelockr-check.")
        .tempfile_in(folder(dest))
        .map(drop)
}

/// Copies `src` to `dest` whole or not at all.
pub fn copy(src: &Path, dest: &Path, replace: Replace) -> io::Result<u64> {
    let out = AtomicFile::create(dest, replace)?;
    let copied = io::copy(&mut File::open(src)?, &mut out.file())?;
    out.commit()?;
    Ok(copied)
}

fn check(dest: &Path, replace: Replace) -> io::Result<()> {
    if dest.is_dir() {
        return Err(io::Error::other("it is a folder"));
    }
    if replace == Replace::Never && dest.symlink_metadata().is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "it already exists and is kept (add --force to replace it)",
        ));
    }
    Ok(())
}

/// The folder a destination lives in (`.` for a bare file name).
fn folder(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_commit_replaces_whole_and_leaves_nothing_beside_it() {
        let d = dir();
        let dest = d.path().join("run.csv");
        std::fs::write(&dest, "old").expect("old");
        let out = AtomicFile::create(&dest, Replace::Allow).expect("create");
        assert!(out.temp_path().to_string_lossy().ends_with(".csv"));
        out.file().write_all(b"new").expect("write");
        // Until the commit the old file is what is there.
        assert_eq!(std::fs::read_to_string(&dest).expect("read"), "old");
        out.commit().expect("commit");
        assert_eq!(std::fs::read_to_string(&dest).expect("read"), "new");
        assert_eq!(names(d.path()), ["run.csv"]);
    }

    #[test]
    fn a_write_abandoned_leaves_the_old_file_and_no_other() {
        let d = dir();
        let dest = d.path().join("chart.png");
        std::fs::write(&dest, "old").expect("old");
        let out = AtomicFile::create(&dest, Replace::Allow).expect("create");
        out.file().write_all(b"half").expect("write");
        drop(out);
        assert_eq!(std::fs::read_to_string(&dest).expect("read"), "old");
        assert_eq!(names(d.path()), ["chart.png"]);
    }

    #[test]
    fn never_refuses_an_existing_file_and_keeps_a_late_one() {
        let d = dir();
        let dest = d.path().join("run.csv");
        std::fs::write(&dest, "old").expect("old");
        let err = check_writable(&dest, Replace::Never).expect_err("exists");
        assert!(err.to_string().contains("--force"), "{err}");
        assert!(AtomicFile::create(&dest, Replace::Never).is_err());
        assert_eq!(names(d.path()), ["run.csv"]);

        // A file that appears while the new one is written is kept, and so is the new one.
        let late = d.path().join("late.csv");
        let out = AtomicFile::create(&late, Replace::Never).expect("create");
        out.file().write_all(b"new").expect("write");
        std::fs::write(&late, "theirs").expect("theirs");
        let err = out.commit().expect_err("appeared");
        assert_eq!(std::fs::read_to_string(&late).expect("read"), "theirs");
        assert_eq!(names(d.path()).len(), 3, "{err}");
    }

    #[test]
    fn a_folder_or_an_unwritable_place_is_refused_before_writing() {
        let d = dir();
        assert!(check_writable(d.path(), Replace::Allow)
            .expect_err("folder")
            .to_string()
            .contains("folder"));
        let missing = d.path().join("no/such/folder/run.csv");
        assert!(check_writable(&missing, Replace::Allow).is_err());
        assert!(names(d.path()).is_empty());
    }
}
