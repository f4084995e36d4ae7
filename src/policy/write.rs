//! Policies written as a file that [`super::file`] reads back unchanged: TOML
//! (`[[policies]]`) or JSON (`{"policies": [...]}`), algorithms by their script names
//! (`token_bucket`), which every loader accepts. What the desktop app exports, so that the
//! policies tuned in the bench are the file `serve` and the layer load.

use super::file::Format;
use super::Policy;
use serde::Serialize;

#[derive(Serialize)]
struct PoliciesFile<'a> {
    policies: &'a [Policy],
}

/// The text of a policies file holding `policies`, in `format`.
pub fn render(policies: &[Policy], format: Format) -> String {
    let file = PoliciesFile { policies };
    let text = match format {
        Format::Toml => toml::to_string_pretty(&file).map_err(|e| e.to_string()),
        Format::Json => serde_json::to_string_pretty(&file).map_err(|e| e.to_string()),
    };
    // Every value of a validated policy is a string, a whole number, a finite number or a
    // list of them: nothing either format cannot hold.
    let mut text = text.unwrap_or_else(|err| format!("# could not be written: {err}\n"));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_policies;

    const FILE: &str = r#"
[[policies]]
name = "api"
key = "header:x-api-key"
mode = "shadow"
  [[policies.limits]]
  name = "per-second"
  algorithm = "token-bucket"
  capacity = 10
  refill_per_sec = 2.5
  [[policies.limits]]
  name = "daily"
  algorithm = "gcra"
  limit = 2000
  window_ms = 86400000
  burst = 50
  [[policies.overrides]]
  tier = "premium"
  keys = ["premium_*", "alice"]
  limits = [ { name = "per-second", algorithm = "sliding-window-counter", limit = 100, window_ms = 1000 } ]

[[rules]]
name = "login"
algorithm = "fixed_window"
limit = 5
window_ms = 60000
"#;

    #[test]
    fn a_written_file_reads_back_as_the_same_policies_in_both_formats() {
        let policies = parse_policies(FILE, Format::Toml).expect("valid");
        assert_eq!(policies.len(), 2);
        for format in [Format::Toml, Format::Json] {
            let text = render(&policies, format);
            let back = parse_policies(&text, format)
                .unwrap_or_else(|e| panic!("{format:?} reads back: {e}\n{text}"));
            assert_eq!(back, policies, "{format:?}\n{text}");
        }
        let toml = render(&policies, Format::Toml);
        assert!(toml.contains("[[policies]]"), "{toml}");
        assert!(toml.contains("mode = \"shadow\""), "{toml}");
    }
}
