//! A CSV record may span lines: a quoted field can hold line breaks (RFC 4180). The line
//! reader hands over physical lines; this joins them into records, for the replay's reader and
//! for the preview alike, so both see the same records with the same line numbers.

use super::input::MAX_LINE_BYTES;

/// What a physical line amounts to.
#[derive(Debug, PartialEq, Eq)]
pub enum Joined<'a> {
    /// A whole record starting on line `line` (the line itself, or lines joined by `\n`).
    Record { text: &'a str, line: u64 },
    /// The line opened or continued a quoted field: more lines are needed.
    Pending,
    /// The record starting on `line` grew past [`MAX_LINE_BYTES`] (an unbalanced quote?): it
    /// is dropped and joining starts afresh.
    TooLong { line: u64 },
}

/// Joins the lines of a CSV record whose quotes are still open.
#[derive(Debug, Default)]
pub struct RecordJoiner {
    record: String,
    first_line: u64,
    joined: String,
}

impl RecordJoiner {
    /// Takes line `number`. Outside CSV (`csv` false) every line is a record of its own.
    pub fn push<'a>(&'a mut self, csv: bool, number: u64, text: &'a str) -> Joined<'a> {
        if !csv || (self.record.is_empty() && !odd_quotes(text)) {
            return Joined::Record { text, line: number };
        }
        if self.record.is_empty() {
            self.first_line = number;
        } else {
            self.record.push('\n');
        }
        self.record.push_str(text);
        if self.record.len() > MAX_LINE_BYTES {
            self.record.clear();
            return Joined::TooLong {
                line: self.first_line,
            };
        }
        if odd_quotes(&self.record) {
            return Joined::Pending;
        }
        // Swapped, so both buffers keep their capacity for the next record.
        std::mem::swap(&mut self.joined, &mut self.record);
        self.record.clear();
        Joined::Record {
            text: &self.joined,
            line: self.first_line,
        }
    }

    /// At the end of the input: the first line of a record whose quote never closed.
    pub fn unterminated(&self) -> Option<u64> {
        (!self.record.is_empty()).then_some(self.first_line)
    }
}

/// The reason given for [`Joined::TooLong`].
pub fn too_long_reason() -> String {
    format!("a quoted CSV field runs on past {MAX_LINE_BYTES} bytes (an unbalanced quote?)")
}

/// The reason given for [`RecordJoiner::unterminated`].
pub const UNTERMINATED: &str = "an unterminated quoted field at the end of the log";

/// True when `text` leaves a CSV quote open: an odd number of `"` (an escaped `""` counts
/// two, so it never changes the parity).
fn odd_quotes(text: &str) -> bool {
    memchr::memchr_iter(b'"', text.as_bytes()).count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_field_with_line_breaks_is_one_record_numbered_from_its_first_line() {
        let mut j = RecordJoiner::default();
        assert_eq!(
            j.push(true, 1, "a,b"),
            Joined::Record {
                text: "a,b",
                line: 1
            }
        );
        assert_eq!(j.push(true, 2, r#"1,"x"#), Joined::Pending);
        assert_eq!(j.push(true, 3, ""), Joined::Pending);
        assert_eq!(
            j.push(true, 4, r#"y ""q"" z""#),
            Joined::Record {
                text: "1,\"x\n\ny \"\"q\"\" z\"",
                line: 2
            }
        );
        assert_eq!(j.unterminated(), None);
        assert_eq!(j.push(true, 5, r#"2,"open"#), Joined::Pending);
        assert_eq!(j.unterminated(), Some(5));
    }

    #[test]
    fn outside_csv_a_quote_joins_nothing_and_a_runaway_record_is_dropped() {
        let mut j = RecordJoiner::default();
        assert_eq!(
            j.push(false, 7, r#"{"k":"v"#),
            Joined::Record {
                text: r#"{"k":"v"#,
                line: 7
            }
        );
        let long = "x".repeat(MAX_LINE_BYTES);
        assert_eq!(j.push(true, 8, "\"start"), Joined::Pending);
        assert_eq!(j.push(true, 9, &long), Joined::TooLong { line: 8 });
        assert_eq!(j.unterminated(), None);
        assert_eq!(
            j.push(true, 10, "a,b"),
            Joined::Record {
                text: "a,b",
                line: 10
            }
        );
    }
}
