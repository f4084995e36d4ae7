//! The policies file as the one truth: opened, edited in place, changed outside the app (validly
//! or not), and saved over a newer file only with the user's word.

use super::*;
use ratelockr::policy::{load_policies_file, Mode};
use serde_json::json;

const FILE: &str = r#"# production limits: hand-edited
[[policies]]
name = "api"
key = "ip"
mode = "shadow"

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 10
  refill_per_sec = 10

[[policies]]
name = "login"
mode = "enforce"

  [[policies.limits]]
  name = "burst"
  algorithm = "fixed-window"
  limit = 5
  window_ms = 60000
"#;

/// An editor's save: a temporary file renamed over the file (as `sed -i` does).
fn edit_outside(path: &Path, text: &str) {
    let tmp = path.with_extension("outside");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

fn mode(file: &Path, name: &str) -> Mode {
    load_policies_file(file)
        .expect("the file on disk loads")
        .iter()
        .find(|p| p.name() == name)
        .unwrap_or_else(|| panic!("{name} in the file"))
        .mode()
}

fn login(limit: u64) -> Policy {
    crate::policies::policy_from_draft(&json!({"name": "login", "limits": [
        {"name": "burst", "algorithm": "fixed_window", "limit": limit, "window_ms": 60000}]}))
    .expect("valid")
}

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("policies.toml");
    std::fs::write(&path, FILE).expect("write");
    (dir, path)
}

#[test]
fn an_edit_is_saved_in_the_file_and_leaves_the_other_policies_as_they_were() {
    let (_dir, path) = fixture();
    let mut file = PolicyFile::open(&path).expect("opens");
    assert_eq!(file.policies().len(), 2);
    assert_eq!(file.version(), &FileVersion::of(FILE.as_bytes()));
    // Production switched to enforce by hand; the app takes it at its next look.
    edit_outside(
        &path,
        &FILE.replacen("mode = \"shadow\"", "mode = \"enforce\"", 1),
    );
    assert_eq!(file.look(), Look::Reloaded);
    assert_eq!(file.policies()[0].mode(), Mode::Enforce);
    assert_eq!(file.look(), Look::Unchanged);
    // An edit of login, saved on the version the app shows: api stays enforced, in its place.
    let base = file.version().clone();
    file.save(&base, false, |book| book.upsert(Some("login"), login(9)))
        .expect("saved");
    assert_eq!(mode(&path, "api"), Mode::Enforce);
    let on_disk = load_policies_file(&path).expect("loads");
    assert_eq!(
        on_disk.iter().map(|p| p.name()).collect::<Vec<_>>(),
        ["api", "login"]
    );
    assert_eq!(on_disk[1], login(9));
    // As the user wrote it: the comment, and api's text, spelling and layout.
    let text = std::fs::read_to_string(&path).expect("read");
    let api = &FILE[..FILE.find("[[policies]]\nname = \"login\"").expect("login")];
    assert!(
        text.starts_with(&api.replacen("mode = \"shadow\"", "mode = \"enforce\"", 1)),
        "{text}"
    );
    assert_eq!(file.policies(), on_disk.as_slice());
    assert_eq!(
        file.version(),
        &FileVersion::of(&std::fs::read(&path).expect("read"))
    );
    // The app's own write is no outside change.
    assert_eq!(file.look(), Look::Unchanged);
    // Nothing but the file is left beside it.
    let names: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("policies.toml")]);
}

#[test]
fn a_save_over_a_file_changed_since_the_edit_began_is_refused_unless_overwriting() {
    let (_dir, path) = fixture();
    let mut file = PolicyFile::open(&path).expect("opens");
    let base = file.version().clone();
    let enforced = FILE.replacen("mode = \"shadow\"", "mode = \"enforce\"", 1);
    edit_outside(&path, &enforced);
    // Not looked at yet: the save itself finds the newer file and refuses.
    let err = file
        .save(&base, false, |book| book.upsert(Some("login"), login(9)))
        .expect_err("stale");
    assert_eq!(err.code, ErrorCode::FileChanged);
    assert!(
        err.message.contains("policies.toml changed on disk"),
        "{err:?}"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("read"), enforced);
    // Looked at since: still refused, for the edit began before the change.
    assert_eq!(file.look(), Look::Reloaded);
    let err = file
        .save(&base, false, |book| book.upsert(Some("login"), login(9)))
        .expect_err("still stale");
    assert_eq!(err.code, ErrorCode::FileChanged);
    // Overwrite: the edit lands on the file as it is now, api's outside change kept.
    file.save(&base, true, |book| book.upsert(Some("login"), login(9)))
        .expect("overwritten");
    assert_eq!(mode(&path, "api"), Mode::Enforce);
    assert_eq!(load_policies_file(&path).expect("loads")[1], login(9));
}

#[test]
fn an_invalid_outside_change_is_shown_and_the_last_good_policies_stay() {
    let (_dir, path) = fixture();
    let mut file = PolicyFile::open(&path).expect("opens");
    let good = file.policies().to_vec();
    let base = file.version().clone();
    let broken = FILE.replace("capacity = 10", "capacity = \"ten\"");
    edit_outside(&path, &broken);
    assert_eq!(file.look(), Look::Refused);
    let err = file.error().expect("why").clone();
    assert_eq!(err.field.as_deref(), Some("capacity"), "{err:?}");
    assert!(
        err.message.contains("policies.toml") && err.message.contains("line 10"),
        "{err:?}"
    );
    assert_eq!(file.policies(), good.as_slice());
    assert_eq!(
        file.version(),
        &base,
        "the version shown is the last good one"
    );
    assert_eq!(file.look(), Look::Unchanged, "looked at again: nothing new");
    assert!(file.error().is_some(), "and the error still shown");
    // Nothing is written: a save asks, and the file stays as the other editor left it.
    let err = file
        .save(&base, false, |book| book.upsert(Some("login"), login(9)))
        .expect_err("the file changed");
    assert_eq!(err.code, ErrorCode::FileChanged);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), broken);
    // Fixed outside: taken, and the error gone.
    edit_outside(&path, &FILE.replace("capacity = 10", "capacity = 20"));
    assert_eq!(file.look(), Look::Reloaded);
    assert!(file.error().is_none());
    assert_eq!(file.policies().len(), 2);
}

#[test]
fn a_file_that_does_not_load_is_refused_at_open_and_kept_at_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("later.json");
    let err = PolicyFile::open(&path).expect_err("missing");
    assert_eq!(err.code, ErrorCode::PolicyFile);
    assert!(err.message.contains("later.json"), "{err:?}");
    let mut file = PolicyFile::reopen(&path);
    assert!(file.error().is_some() && file.policies().is_empty());
    std::fs::write(&path, r#"{"policies": [{"name": "x", "limits": [{"name": "a", "algorithm": "gcra", "limit": 5, "window_ms": 1000}]}]}"#).expect("write");
    assert_eq!(file.look(), Look::Reloaded);
    assert_eq!(file.policies()[0].name(), "x");
    assert!(file.error().is_none());
}

#[test]
fn a_new_file_is_written_by_its_first_save_and_never_left_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("new.toml");
    let mut file = PolicyFile::create(&path).expect("new");
    assert!(!file.exists());
    assert_eq!(file.look(), Look::Unchanged);
    let base = file.version().clone();
    assert_eq!(base, FileVersion::absent());
    file.save(&base, false, |book| book.upsert(None, login(5)))
        .expect("created");
    assert!(file.exists());
    assert_eq!(
        load_policies_file(&path).expect("loads"),
        [login(5)],
        "the file serve loads"
    );
    // The last policy cannot be deleted: an empty file loads nowhere.
    let base = file.version().clone();
    let err = file
        .save(&base, false, |book| book.remove("login").map(drop))
        .expect_err("empty");
    assert_eq!(err.code, ErrorCode::InvalidPolicy);
    assert!(load_policies_file(&path).is_ok());
    // A name already in the file is refused; a new name is added after the others.
    let err = file
        .save(&base, false, |book| book.upsert(None, login(7)))
        .expect_err("exists");
    assert_eq!(err.code, ErrorCode::PolicyExists);
    // "New" on a file that exists opens it: nothing is replaced by an empty file.
    let again = PolicyFile::create(&path).expect("opens");
    assert_eq!(again.policies(), [login(5)]);
}

#[test]
fn migrated_policies_go_to_a_new_file_and_replace_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("policies.toml"), "mine").expect("write");
    let written = migrate(dir.path(), &[login(3)]).expect("written");
    assert_eq!(written, dir.path().join("policies-2.toml"));
    assert_eq!(load_policies_file(&written).expect("loads"), [login(3)]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("policies.toml")).expect("read"),
        "mine"
    );
}

#[test]
fn a_rule_goes_into_the_file_as_a_policy_of_one_limit_keeping_the_files_mode() {
    let (_dir, path) = fixture();
    let mut file = PolicyFile::open(&path).expect("opens");
    let rule = |limit| {
        ratelockr::Rule::fixed_window("search", limit, std::time::Duration::from_secs(1))
            .expect("valid")
    };
    file.apply(|book| put_rule(book, &rule(5))).expect("added");
    assert_eq!(file.policies()[2], Policy::from_rule(&rule(5)));
    // Set to shadow by hand; the rule tuned again and put in again: the limit follows, the
    // mode stays the file's.
    let text = std::fs::read_to_string(&path).expect("read");
    let shadowed = text.replace(
        "[[policies]]\nname = \"search\"\nmode = \"enforce\"",
        "[[policies]]\nname = \"search\"\nmode = \"shadow\"",
    );
    assert_ne!(text, shadowed, "{text}");
    edit_outside(&path, &shadowed);
    file.apply(|book| put_rule(book, &rule(9)))
        .expect("replaced");
    let search = load_policies_file(&path).expect("loads").remove(2);
    assert_eq!(search.mode(), Mode::Shadow);
    assert_eq!(search.limits(), Policy::from_rule(&rule(9)).limits());
    // A stacked policy of the rule's name is not flattened into a rule.
    let api =
        ratelockr::Rule::fixed_window("api", 1, std::time::Duration::from_secs(1)).expect("valid");
    let mut stacked = file.clone();
    let base = stacked.version().clone();
    stacked
        .save(&base, false, |book| {
            let two = crate::policies::policy_from_draft(&json!({"name": "api", "limits": [
                {"name": "a", "algorithm": "fixed_window", "limit": 1, "window_ms": 1000},
                {"name": "b", "algorithm": "fixed_window", "limit": 9, "window_ms": 60000}]}))?;
            book.upsert(Some("api"), two)
        })
        .expect("saved");
    let err = stacked
        .apply(|book| put_rule(book, &api))
        .expect_err("a stack");
    assert_eq!(err.code, ErrorCode::PolicyExists);
    assert!(err.message.contains("stack of 2"), "{err:?}");
}

#[test]
fn a_change_that_keeps_the_stamp_is_seen_by_its_content() {
    let (_dir, path) = fixture();
    let mut file = PolicyFile::open(&path).expect("opens");
    let base = file.version().clone();
    file.save(&base, false, |book| book.upsert(Some("login"), login(9)))
        .expect("saved");
    let saved = std::fs::metadata(&path)
        .expect("stat")
        .modified()
        .expect("mtime");
    // Same length, written in place, with the save's own modification time: the stamp is
    // the one the save left, as an edit within the same clock tick leaves it.
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replace("capacity = 10", "capacity = -1")).expect("write");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(saved))
        .expect("set mtime");
    assert_eq!(file.look(), Look::Refused);
    assert_eq!(
        file.error().and_then(|e| e.field.as_deref()),
        Some("capacity")
    );
}
