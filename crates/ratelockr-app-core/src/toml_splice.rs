//! A TOML policies file edited the way a person edits it: only the policies that changed are
//! rewritten (by the engine's writer), every other `[[policies]]` table stays exactly as the
//! user wrote it, with its comments, its order, its spelling (`token-bucket`) and its layout;
//! so do the comments above a changed policy and at the end of the file.
//!
//! Anything this cannot splice (a file that also holds `[[rules]]`, policies written as an
//! inline array, text that does not parse) gives None, and the caller writes the whole file
//! with the engine's writer; so does a result that would not read back as the policies meant.

use ratelockr::policy::{parse_policies, write, Format};
use ratelockr::Policy;
use toml_edit::{ArrayOfTables, Document, Item, Table};

/// The file `old_text` (whose policies are `old`) rewritten to hold `new`: unchanged policies
/// kept verbatim, changed ones re-rendered in their place, new ones appended, removed ones
/// gone. None when the file cannot be spliced.
pub fn splice(old_text: &str, old: &[Policy], new: &[Policy]) -> Option<String> {
    let mut doc: Document = old_text.parse().ok()?;
    if doc.as_table().len() != 1 {
        return None;
    }
    let tables = doc.get("policies")?.as_array_of_tables()?;
    if tables.len() != old.len() {
        return None;
    }
    let kept: Vec<(&str, &Table)> = tables
        .iter()
        .map(|t| Some((t.get("name")?.as_str()?, t)))
        .collect::<Option<_>>()?;
    let mut out = ArrayOfTables::new();
    for (i, policy) in new.iter().enumerate() {
        let before = kept.iter().position(|(name, _)| *name == policy.name());
        let table = match before {
            Some(at) if old.get(at) == Some(policy) => kept[at].1.clone(),
            Some(at) => {
                let mut table = rendered(policy)?;
                // The comments above the policy's header are the user's: they stay.
                *table.decor_mut() = kept[at].1.decor().clone();
                table
            }
            None => {
                let mut table = rendered(policy)?;
                if i > 0 {
                    table.decor_mut().set_prefix("\n");
                }
                table
            }
        };
        out.push(table);
    }
    let mut position = 1;
    for table in out.iter_mut() {
        renumber(table, &mut position);
    }
    doc.insert("policies", Item::ArrayOfTables(out));
    let text = doc.to_string();
    // Only a file that reads back as exactly the policies meant is written.
    (parse_policies(&text, Format::Toml).ok()? == new).then_some(text)
}

/// One policy's `[[policies]]` table as the engine's writer writes it.
fn rendered(policy: &Policy) -> Option<Table> {
    let text = write::render(std::slice::from_ref(policy), Format::Toml);
    let doc: Document = text.parse().ok()?;
    doc.get("policies")?.as_array_of_tables()?.get(0).cloned()
}

/// Tables are written in the order of their positions: a table, then its sub-tables, then the
/// next, whichever document each came from.
fn renumber(table: &mut Table, position: &mut usize) {
    table.set_position(*position);
    *position += 1;
    for (_, item) in table.iter_mut() {
        match item {
            Item::Table(sub) => renumber(sub, position),
            Item::ArrayOfTables(subs) => {
                for sub in subs.iter_mut() {
                    renumber(sub, position);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"# production limits: edited by hand, reviewed in PRs

# the public API; enforce since the 3rd
[[policies]]
name = "api"
key = "ip"
mode = "enforce"   # was shadow

  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 10
  refill_per_sec = 10

  [[policies.overrides]]
  tier = "premium"
  keys = ["premium_*"]
  limits = [ { name = "per-second", algorithm = "token-bucket", capacity = 100, refill_per_sec = 100 } ]

# logins: a day's quota
[[policies]]
name = "login"

  [[policies.limits]]
  name = "daily"
  algorithm = "fixed-window"
  limit = 5
  window_ms = 86400000

# end of file
"#;

    fn policies(text: &str) -> Vec<Policy> {
        parse_policies(text, Format::Toml).expect("valid")
    }

    #[test]
    fn only_the_changed_policy_is_rewritten() {
        let old = policies(FILE);
        let mut new = old.clone();
        new[1] = policies(
            "[[policies]]\nname = \"login\"\n[[policies.limits]]\nname = \"daily\"\nalgorithm = \"fixed_window\"\nlimit = 9\nwindow_ms = 86400000\n",
        )
        .remove(0);
        let text = splice(FILE, &old, &new).expect("spliced");
        assert_eq!(policies(&text), new);
        // The api policy, its comments and its spelling, byte for byte.
        let api = &FILE
            [FILE.find("# the public API").expect("api")..FILE.find("# logins").expect("login")];
        assert!(text.contains(api), "{text}");
        assert!(
            text.contains("# logins: a day's quota\n[[policies]]\nname = \"login\""),
            "{text}"
        );
        assert!(text.contains("limit = 9"), "{text}");
        assert!(text.ends_with("# end of file\n"), "{text}");
    }

    #[test]
    fn a_new_policy_is_appended_and_a_deleted_one_goes() {
        let old = policies(FILE);
        let extra = policies(
            "[[policies]]\nname = \"search\"\nmode = \"shadow\"\n[[policies.limits]]\nname = \"s\"\nalgorithm = \"gcra\"\nlimit = 5\nwindow_ms = 1000\n",
        );
        let new = [old.clone(), extra.clone()].concat();
        let text = splice(FILE, &old, &new).expect("spliced");
        assert_eq!(policies(&text), new);
        assert!(
            text.starts_with(&FILE[..FILE.find("# end of file").expect("end")]),
            "{text}"
        );
        let gone = [old[0].clone(), extra[0].clone()];
        let text = splice(FILE, &old, &gone).expect("spliced");
        assert_eq!(policies(&text), gone);
        assert!(!text.contains("login"), "{text}");
        assert!(text.contains("mode = \"enforce\"   # was shadow"), "{text}");
    }

    #[test]
    fn a_file_it_cannot_splice_is_left_to_the_writer() {
        let rules =
            "[[rules]]\nname = \"r\"\nalgorithm = \"fixed_window\"\nlimit = 1\nwindow_ms = 1000\n";
        let old = policies(rules);
        assert_eq!(splice(rules, &old, &old), None);
        assert_eq!(splice("not toml [", &old, &old), None);
    }
}
