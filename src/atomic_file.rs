//! Files written whole or not at all: every export goes to a temporary file in the
//! destination's own folder (so the rename cannot cross a file system), is synced, and only then
//! renamed over the destination. A write that fails (a full disk, a vanished folder, a killed
//! run) leaves the old file exactly as it was and no partial or empty file beside it.
//!
//! What a user set up around a file survives a replacement: a destination that is a symbolic
//! link is written through to the file it points at (the link stays a link), and a replaced
//! file keeps its permissions (and, where the process may set them, its owner and group). A new
//! file gets the permissions any program's new file gets (0666 less the umask), not a
//! temporary file's private 0600.
//!
//! A place that cannot be written is named by its real cause (`read-only file system`, `the
//! folder … does not exist`, a proc file system that takes no new files), never by the name of
//! the temporary file that could not be made.
//!
//! Whether an existing file may be replaced is the caller's word ([`Replace`]): the app's save
//! dialog has asked the user; the CLI replaces only with `--force`.

use std::fs::{self, File};
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
    /// The path the caller named (a link, perhaps).
    dest: PathBuf,
    /// The file the rename replaces: `dest`, or the file a link at `dest` points at.
    target: PathBuf,
    replace: Replace,
}

impl AtomicFile {
    /// A temporary file beside the file `dest` names (through a symbolic link, the file the
    /// link points at), its name ending in `dest`'s extension (so a library that picks a format
    /// by extension, as plotters does, picks the right one), and with the permissions the
    /// finished file will have.
    pub fn create(dest: &Path, replace: Replace) -> io::Result<Self> {
        check(dest, replace)?;
        let target = resolve(dest)?;
        let existing = fs::metadata(&target).ok();
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let suffix = dest
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let (prefix, suffix) = (format!(".{name}."), format!(".tmp{suffix}"));
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(&suffix);
        #[cfg(unix)]
        builder.permissions(mode::initial(existing.as_ref()));
        let temp = builder
            .tempfile_in(folder(&target))
            .map_err(|e| cannot_create(folder(&target), e))?;
        if let Some(existing) = &existing {
            mode::keep(temp.path(), existing)?;
        }
        Ok(AtomicFile {
            temp,
            dest: dest.to_path_buf(),
            target,
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

    /// The destination, as the caller named it.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The file the commit replaces: the destination, or the file a link there points at.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the temporary file and renames it over the destination. With [`Replace::Never`]
    /// a destination that appeared meanwhile is kept, and so is the new file, under the name
    /// the error gives.
    pub fn commit(self) -> io::Result<()> {
        // What a writer wrote through its own handle (by path) is synced through ours: the
        // same inode.
        File::open(self.temp.path())?.sync_all()?;
        match self.replace {
            Replace::Allow => self
                .temp
                .persist(&self.target)
                .map(drop)
                .map_err(|e| e.error),
            Replace::Never => match self.temp.persist_noclobber(&self.target) {
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
    let target = resolve(dest)?;
    tempfile::Builder::new()
        .prefix(".ratelockr-check.")
        .tempfile_in(folder(&target))
        .map(drop)
        .map_err(|e| cannot_create(folder(&target), e))
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

/// The file `dest` names: `dest` itself, or, when it is a symbolic link, the file at the end of
/// its chain of links (which need not exist yet: a dangling link is written through too).
fn resolve(dest: &Path) -> io::Result<PathBuf> {
    let mut path = dest.to_path_buf();
    // As many hops as Linux follows before ELOOP.
    for _ in 0..40 {
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&path)?;
                path = if link.is_absolute() {
                    link
                } else {
                    folder(&path).join(link)
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::other(format!(
        "{} is a loop of symbolic links",
        dest.display()
    )))
}

/// Why no file can be made in `folder`, in words that name the place and the cause. The
/// temporary file's name (which tempfile puts in its error) means nothing to the user.
fn cannot_create(folder: &Path, err: io::Error) -> io::Error {
    let kind = err.kind();
    let cause = match os_error(&err, folder) {
        Some(code) => io::Error::from_raw_os_error(code).to_string(),
        None => kind.to_string(),
    };
    // "Read-only file system (os error 30)" -> "read-only file system"
    let cause = cause
        .split(" (os error")
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let message = match (kind, fs::metadata(folder)) {
        (io::ErrorKind::NotFound, Err(_)) => {
            format!("the folder {} does not exist", folder.display())
        }
        (_, Ok(meta)) if !meta.is_dir() => format!("{} is not a folder", folder.display()),
        _ => match mode::virtual_fs(folder) {
            Some(what) => format!(
                "{} is on {what}, which takes no new files",
                folder.display()
            ),
            None => format!("{}: {cause}", folder.display()),
        },
    };
    io::Error::new(kind, message)
}

/// The system's error code behind `err`. tempfile wraps it in an error of its own (the one that
/// names its temporary file) that hides the code, so the folder is asked again where it can be.
fn os_error(err: &io::Error, folder: &Path) -> Option<i32> {
    err.raw_os_error().or_else(|| mode::write_denied(folder))
}

/// The folder a destination lives in (`.` for a bare file name).
fn folder(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Permissions and the kind of file system, where the platform has them.
#[cfg(unix)]
mod mode {
    use std::fs::{self, Metadata, Permissions};
    use std::io;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;

    /// What the temporary file is created with: an existing file's permissions (never more
    /// open than the file it replaces, even for a moment), else 0666 less the umask, as any
    /// program's new file.
    pub(super) fn initial(existing: Option<&Metadata>) -> Permissions {
        Permissions::from_mode(existing.map_or(0o666, |m| m.mode() & 0o7777))
    }

    /// Gives the temporary file the replaced file's exact permissions (creation applied the
    /// umask) and, where this process may, its owner and group.
    pub(super) fn keep(temp: &Path, existing: &Metadata) -> io::Result<()> {
        fs::set_permissions(temp, Permissions::from_mode(existing.mode() & 0o7777))?;
        let made = fs::metadata(temp)?;
        if (made.uid(), made.gid()) != (existing.uid(), existing.gid()) {
            // Only root may give a file away; anyone else keeps the new file as theirs.
            let _ = std::os::unix::fs::chown(temp, Some(existing.uid()), Some(existing.gid()));
        }
        Ok(())
    }

    /// The kernel's file systems that hold no user files, by their magic (linux/magic.h).
    #[cfg(target_os = "linux")]
    pub(super) fn virtual_fs(folder: &Path) -> Option<&'static str> {
        const PROC_SUPER_MAGIC: i64 = 0x9fa0;
        const SYSFS_MAGIC: i64 = 0x6265_6572;
        let stat = rustix::fs::statfs(folder).ok()?;
        #[allow(clippy::unnecessary_cast)] // its width differs between targets
        match stat.f_type as i64 {
            PROC_SUPER_MAGIC => Some("a proc file system (the kernel's process data)"),
            SYSFS_MAGIC => Some("a sysfs file system (the kernel's device data)"),
            _ => None,
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn virtual_fs(_: &Path) -> Option<&'static str> {
        None
    }

    /// Why this process may not write in `folder` (`access(2)`), if the system says.
    #[cfg(target_os = "linux")]
    pub(super) fn write_denied(folder: &Path) -> Option<i32> {
        rustix::fs::access(folder, rustix::fs::Access::WRITE_OK)
            .err()
            .map(|e| e.raw_os_error())
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn write_denied(_: &Path) -> Option<i32> {
        None
    }
}

#[cfg(not(unix))]
mod mode {
    use std::fs::Metadata;
    use std::io;
    use std::path::Path;

    pub(super) fn keep(temp: &Path, existing: &Metadata) -> io::Result<()> {
        std::fs::set_permissions(temp, existing.permissions())
    }

    pub(super) fn virtual_fs(_: &Path) -> Option<&'static str> {
        None
    }

    pub(super) fn write_denied(_: &Path) -> Option<i32> {
        None
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
    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_permissions_and_a_new_one_gets_a_new_files() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o7777;
        let d = dir();
        let dest = d.path().join("policies.toml");
        std::fs::write(&dest, "old").expect("old");
        for kept in [0o640, 0o755, 0o600] {
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(kept)).expect("chmod");
            let out = AtomicFile::create(&dest, Replace::Allow).expect("create");
            assert_eq!(
                mode(out.temp_path()),
                kept,
                "never more open, even before the rename"
            );
            out.file().write_all(b"new").expect("write");
            out.commit().expect("commit");
            assert_eq!(mode(&dest), kept);
        }
        // A new file gets what any new file gets here (umask applied), not tempfile's 0600.
        let plain = d.path().join("plain");
        std::fs::write(&plain, "").expect("plain");
        let fresh = d.path().join("fresh.csv");
        let out = AtomicFile::create(&fresh, Replace::Never).expect("create");
        out.commit().expect("commit");
        assert_eq!(mode(&fresh), mode(&plain));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_written_through_and_stays_a_link() {
        let d = dir();
        std::fs::create_dir(d.path().join("real")).expect("dir");
        let target = d.path().join("real/policies.toml");
        std::fs::write(&target, "old").expect("old");
        // A relative link, and a link to that link.
        let link = d.path().join("policies.toml");
        std::os::unix::fs::symlink("real/policies.toml", &link).expect("link");
        let link2 = d.path().join("current.toml");
        std::os::unix::fs::symlink(&link, &link2).expect("link");
        let out = AtomicFile::create(&link2, Replace::Allow).expect("create");
        assert_eq!(out.target(), d.path().join("real/policies.toml"));
        out.file().write_all(b"new").expect("write");
        out.commit().expect("commit");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "new");
        for l in [&link, &link2] {
            let meta = std::fs::symlink_metadata(l).expect("meta");
            assert!(
                meta.file_type().is_symlink(),
                "{} is still a link",
                l.display()
            );
        }
        assert_eq!(names(&d.path().join("real")), ["policies.toml"]);
        // A dangling link makes the file it names.
        let dangling = d.path().join("next.csv");
        std::os::unix::fs::symlink("real/next.csv", &dangling).expect("link");
        let out = AtomicFile::create(&dangling, Replace::Allow).expect("create");
        out.file().write_all(b"made").expect("write");
        out.commit().expect("commit");
        let made = d.path().join("real/next.csv");
        assert_eq!(std::fs::read_to_string(made).expect("read"), "made");
        // A loop is named as one.
        let a = d.path().join("a.csv");
        std::os::unix::fs::symlink("b.csv", &a).expect("link");
        std::os::unix::fs::symlink("a.csv", d.path().join("b.csv")).expect("link");
        let err = AtomicFile::create(&a, Replace::Allow).expect_err("loop");
        assert!(err.to_string().contains("loop"), "{err}");
    }

    #[test]
    fn an_unwritable_place_is_named_by_its_cause_not_a_temporary_file() {
        let d = dir();
        let missing = d.path().join("no/such/folder/run.csv");
        let err = check_writable(&missing, Replace::Allow).expect_err("missing");
        let text = err.to_string();
        assert!(
            text.contains("does not exist") && text.contains("no/such/folder"),
            "{text}"
        );
        assert!(!text.contains(".ratelockr-check."), "{text}");
        let file = d.path().join("a-file");
        std::fs::write(&file, "").expect("file");
        let err = AtomicFile::create(&file.join("run.csv"), Replace::Allow).expect_err("file");
        assert!(err.to_string().contains("is not a folder"), "{err}");
        #[cfg(target_os = "linux")]
        {
            let err =
                AtomicFile::create(Path::new("/proc/x.csv"), Replace::Allow).expect_err("proc");
            let text = err.to_string();
            assert!(text.starts_with("/proc is on a proc file system"), "{text}");
            assert!(!text.contains(".tmp") && !text.contains("x.csv."), "{text}");
        }
    }
}
