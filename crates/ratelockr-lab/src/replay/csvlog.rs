//! CSV with a header row: the header names the fields, then one request per line. Fields are
//! split as RFC 4180 says (quotes around fields with commas or spaces, `""` for a quote). A
//! quoted field may hold line breaks: the reader (`read.rs`) joins a record's lines until its
//! quotes balance, bounded like one line, and hands the whole record here.

use super::line_error::LineError;
use std::borrow::Cow;

/// The header: field names, and the same lower-cased for lookups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    names: Vec<String>,
}

impl Header {
    pub fn parse(line: &str) -> Result<Self, LineError> {
        let names: Vec<String> = split(line)?
            .into_iter()
            .map(|n| n.trim().to_ascii_lowercase())
            .collect();
        if names.len() < 2 || names.iter().any(String::is_empty) {
            return Err(LineError::CsvHeader(line.to_string()));
        }
        Ok(Header { names })
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        let name = name.to_ascii_lowercase();
        self.names.iter().position(|n| *n == name)
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// One data row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvLine<'a>(pub Vec<Cow<'a, str>>);

pub fn parse<'a>(header: &Header, line: &'a str) -> Result<CsvLine<'a>, LineError> {
    let fields = split(line)?;
    if fields.len() != header.names.len() {
        return Err(LineError::FieldCount {
            found: fields.len(),
            expected: header.names.len(),
        });
    }
    Ok(CsvLine(fields))
}

impl CsvLine<'_> {
    pub fn get(&self, header: &Header, name: &str) -> Option<&str> {
        self.0.get(header.index(name)?).map(|v| v.as_ref())
    }
}

/// Splits one CSV line into fields.
fn split(line: &str) -> Result<Vec<Cow<'_, str>>, LineError> {
    let mut fields = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        if bytes.get(i) == Some(&b'"') {
            let mut value = String::new();
            let mut j = i + 1;
            loop {
                let Some(q) = memchr::memchr(b'"', &bytes[j..]) else {
                    return Err(LineError::Malformed("an unterminated quoted field"));
                };
                value.push_str(&line[j..j + q]);
                j += q + 1;
                if bytes.get(j) == Some(&b'"') {
                    value.push('"');
                    j += 1;
                } else {
                    break;
                }
            }
            fields.push(Cow::Owned(value));
            match bytes.get(j) {
                None => return Ok(fields),
                Some(b',') => i = j + 1,
                Some(_) => return Err(LineError::Malformed("text after a closing quote")),
            }
        } else {
            match memchr::memchr(b',', &bytes[i..]) {
                Some(c) => {
                    fields.push(Cow::Borrowed(&line[i..i + c]));
                    i += c + 1;
                }
                None => {
                    fields.push(Cow::Borrowed(&line[i..]));
                    return Ok(fields);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_with_commas_spaces_and_quotes() {
        let header = Header::parse("Time,IP,Path,User-Agent").expect("header");
        assert_eq!(header.index("ip"), Some(1));
        let row = parse(
            &header,
            r#"1700000000,2001:db8::1,"/a,b","Mozilla ""x"" 5""#,
        )
        .expect("row");
        assert_eq!(row.get(&header, "path"), Some("/a,b"));
        assert_eq!(row.get(&header, "user-agent"), Some(r#"Mozilla "x" 5"#));
        assert_eq!(row.get(&header, "IP"), Some("2001:db8::1"));
        let empty = parse(&header, "1,,-,").expect("empty fields");
        assert_eq!(empty.get(&header, "ip"), Some(""));
        assert!(parse(&header, "1,2,3")
            .expect_err("short")
            .to_string()
            .contains("3 fields"));
        assert!(parse(&header, r#"1,"2,3,4"#).is_err());
        assert!(Header::parse("only").is_err());
    }
}
