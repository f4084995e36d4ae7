//! The common and combined log formats (Apache's and nginx's defaults):
//!
//! ```text
//! %h %l %u [%t] "%r" %>s %b                                   common
//! %h %l %u [%t] "%r" %>s %b "%{Referer}i" "%{User-agent}i"     combined
//! ```
//!
//! Fields after the user agent (quoted or bare) are kept as extras, which is how a log captures
//! other request headers (`"$http_x_api_key"` in an nginx `log_format`); `--extra-fields` names
//! them in order. `-` is a missing value. Quoted fields may hold spaces and `\"`; their text is
//! taken as logged (escapes are kept: a key needs to be stable, not pretty). The client address
//! may be IPv6. Hand-written over bytes: at 300,000 lines a second there are 3 µs for each.

use super::line_error::LineError;
use super::time::{self, Timestamp};

/// One parsed line, borrowing from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClfLine<'a> {
    pub host: &'a str,
    pub ident: &'a str,
    pub user: &'a str,
    pub time: Timestamp,
    /// The request line as logged (`GET /a?b HTTP/1.1`, or `-`).
    pub request: &'a str,
    pub method: Option<&'a str>,
    /// The request target, query included.
    pub target: Option<&'a str>,
    pub status: &'a str,
    pub bytes: &'a str,
    /// Referer, user agent, then any extra fields, in order.
    pub trailing: Vec<&'a str>,
}

/// The named fields of a line, for `field:NAME` (extras are named by `--extra-fields`).
pub const FIELD_NAMES: [&str; 10] = [
    "host", "ident", "user", "time", "request", "method", "path", "status", "bytes", "protocol",
];

impl<'a> ClfLine<'a> {
    pub fn referer(&self) -> Option<&'a str> {
        self.trailing.first().copied()
    }

    pub fn user_agent(&self) -> Option<&'a str> {
        self.trailing.get(1).copied()
    }

    /// The extra field at `index` (0 = the first after the user agent).
    pub fn extra(&self, index: usize) -> Option<&'a str> {
        self.trailing.get(2 + index).copied()
    }

    /// A field by its name in [`FIELD_NAMES`].
    pub fn field(&self, name: &str) -> Option<&'a str> {
        match name {
            "host" | "ip" | "remote_addr" => Some(self.host),
            "ident" => Some(self.ident),
            "user" | "remote_user" => Some(self.user),
            "request" => Some(self.request),
            "method" => self.method,
            "path" => self.target,
            "protocol" => self.request.split(' ').nth(2),
            "status" => Some(self.status),
            "bytes" => Some(self.bytes),
            "referer" => self.referer(),
            "user_agent" | "user-agent" => self.user_agent(),
            _ => None,
        }
    }
}

/// Parses one line. `combined` requires the referer and user agent.
pub fn parse(line: &str, combined: bool) -> Result<ClfLine<'_>, LineError> {
    let mut s = Scanner { line, pos: 0 };
    let host = s.token().ok_or(LineError::Malformed("no client address"))?;
    let ident = s.token().ok_or(LineError::Malformed("no ident field"))?;
    s.skip_spaces();
    let user = if s.peek() == Some(b'"') {
        s.quoted()
            .ok_or(LineError::Malformed("an unterminated quoted user"))?
    } else {
        s.token().ok_or(LineError::Malformed("no user field"))?
    };
    s.skip_spaces();
    if s.peek() != Some(b'[') {
        return Err(LineError::Malformed("no [time] after the user field"));
    }
    let time_text = s
        .bracketed()
        .ok_or(LineError::Malformed("an unterminated [time]"))?;
    let time = time::parse_clf(time_text)?;
    s.skip_spaces();
    if s.peek() != Some(b'"') {
        return Err(LineError::Malformed(
            "no quoted request line after the time",
        ));
    }
    let request = s
        .quoted()
        .ok_or(LineError::Malformed("an unterminated request line"))?;
    let status = s.token().ok_or(LineError::Malformed("no status"))?;
    if !(status.len() == 3 && status.bytes().all(|b| b.is_ascii_digit())) && status != "-" {
        return Err(LineError::Status(status.to_string()));
    }
    let bytes = s.token().ok_or(LineError::Malformed("no byte count"))?;
    let mut trailing = Vec::new();
    loop {
        s.skip_spaces();
        match s.peek() {
            None => break,
            Some(b'"') => trailing.push(
                s.quoted()
                    .ok_or(LineError::Malformed("an unterminated quoted field"))?,
            ),
            Some(_) => trailing.extend(s.token()),
        }
    }
    if combined && trailing.len() < 2 {
        return Err(LineError::Malformed(
            "no quoted referer and user agent (the combined format); for the common format pass --format common",
        ));
    }
    let mut parts = request.splitn(3, ' ');
    let (method, target) = if request == "-" {
        (None, None)
    } else {
        (parts.next().filter(|m| !m.is_empty()), parts.next())
    };
    Ok(ClfLine {
        host,
        ident,
        user,
        time,
        request,
        method,
        target,
        status,
        bytes,
        trailing,
    })
}

struct Scanner<'a> {
    line: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') || self.peek() == Some(b'\t') {
            self.pos += 1;
        }
    }

    /// Up to the next space.
    fn token(&mut self) -> Option<&'a str> {
        self.skip_spaces();
        let start = self.pos;
        let bytes = self.line.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos] != b' ' && bytes[self.pos] != b'\t' {
            self.pos += 1;
        }
        (self.pos > start).then(|| &self.line[start..self.pos])
    }

    /// `[...]`, without the brackets.
    fn bracketed(&mut self) -> Option<&'a str> {
        let start = self.pos + 1;
        let end = start + memchr::memchr(b']', &self.line.as_bytes()[start..])?;
        self.pos = end + 1;
        Some(&self.line[start..end])
    }

    /// `"..."`, without the quotes; `\"` and `\\` inside do not end it.
    fn quoted(&mut self) -> Option<&'a str> {
        let bytes = self.line.as_bytes();
        let start = self.pos + 1;
        let mut i = start;
        loop {
            i += memchr::memchr2(b'"', b'\\', &bytes[i..])?;
            if bytes[i] == b'\\' {
                i += 2;
                if i > bytes.len() {
                    return None;
                }
                continue;
            }
            self.pos = i + 1;
            return Some(&self.line[start..i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_combined_line() {
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
        let p = parse(line, true).expect("valid");
        assert_eq!(p.host, "127.0.0.1");
        assert_eq!(p.user, "frank");
        assert_eq!(p.time.ms, 971_211_336_000);
        assert_eq!(p.method, Some("GET"));
        assert_eq!(p.target, Some("/apache_pb.gif?x=1"));
        assert_eq!(p.field("protocol"), Some("HTTP/1.0"));
        assert_eq!((p.status, p.bytes), ("200", "2326"));
        assert_eq!(p.referer(), Some("http://www.example.com/start.html"));
        assert_eq!(p.user_agent(), Some("Mozilla/4.08 [en] (Win98; I ;Nav)"));
    }

    #[test]
    fn real_world_quirks() {
        // IPv6, '-' for missing values, a request line of '-' (Apache's 408), an escaped quote
        // and spaces inside quoted fields, an extra captured header, a +0530 zone.
        let line = r#"2001:db8::7 - - [11/Oct/2000:02:25:36 +0530] "-" 408 - "-" "curl/8 \"quoted\" ua" "key-42""#;
        let p = parse(line, true).expect("valid");
        assert_eq!(p.host, "2001:db8::7");
        assert_eq!(p.time.ms, 971_211_336_000);
        assert_eq!((p.method, p.target), (None, None));
        assert_eq!(p.bytes, "-");
        assert_eq!(p.referer(), Some("-"));
        assert_eq!(p.user_agent(), Some(r#"curl/8 \"quoted\" ua"#));
        assert_eq!(p.extra(0), Some("key-42"));
        // A quoted user name with a space; the common format has no trailing fields.
        let line =
            r#"::1 - "jane doe" [10/Oct/2000:13:55:36 -0700] "POST /api/v1/x HTTP/1.1" 201 12"#;
        let p = parse(line, false).expect("valid common");
        assert_eq!(p.user, "jane doe");
        assert_eq!(p.method, Some("POST"));
        assert!(parse(line, true)
            .expect_err("not combined")
            .to_string()
            .contains("common"));
    }

    #[test]
    fn names_what_is_wrong() {
        for (line, why) in [
            ("", "address"),
            (
                "1.2.3.4 - - 10/Oct/2000:13:55:36 -0700 \"GET / HTTP/1.1\" 200 1",
                "[time]",
            ),
            (
                "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700 \"GET / HTTP/1.1\" 200 1",
                "time",
            ),
            (
                "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1 200 1",
                "request line",
            ),
            (
                "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" OK 1",
                "status",
            ),
            ("1.2.3.4 - - [yesterday] \"GET / HTTP/1.1\" 200 1", "time"),
        ] {
            let err = parse(line, false).expect_err(line);
            assert!(err.to_string().contains(why), "{line:?}: {err}");
        }
    }
}
