//! The log formats, their detection, and one view of a parsed line whatever its format: its
//! time, its cost, and the values a client key is built from (address, method, path, named
//! fields and captured headers).

use super::clf::{self, ClfLine};
use super::csvlog::{self, CsvLine, Header};
use super::duration::{self, DurationUnit};
use super::jsonl::{self, JsonLine};
use super::line_error::LineError;
use super::time::{self, Timestamp};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// A log's format.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Apache's and nginx's default: the common format plus quoted referer and user agent.
    Combined,
    /// `%h %l %u [%t] "%r" %>s %b`.
    Common,
    /// One JSON object per line.
    Jsonl,
    /// CSV with a header row.
    Csv,
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Combined => "combined",
            LogFormat::Common => "common",
            LogFormat::Jsonl => "jsonl",
            LogFormat::Csv => "csv",
        }
    }

    /// The format a first line looks like: a JSON object, a combined or common log line, or
    /// (anything with commas) a CSV header.
    pub fn detect(line: &str) -> Option<LogFormat> {
        let line = line.trim_start();
        if line.starts_with('{') {
            Some(LogFormat::Jsonl)
        } else if clf::parse(line, true).is_ok() {
            Some(LogFormat::Combined)
        } else if clf::parse(line, false).is_ok() {
            Some(LogFormat::Common)
        } else if Header::parse(line).is_ok() {
            Some(LogFormat::Csv)
        } else {
            None
        }
    }
}

/// A log format's name that is none of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log format {0:?}: use combined, common, jsonl or csv")]
pub struct UnknownLogFormat(pub String);

impl std::str::FromStr for LogFormat {
    type Err = UnknownLogFormat;
    fn from_str(s: &str) -> Result<Self, UnknownLogFormat> {
        [
            LogFormat::Combined,
            LogFormat::Common,
            LogFormat::Jsonl,
            LogFormat::Csv,
        ]
        .into_iter()
        .find(|f| f.as_str() == s)
        .ok_or_else(|| UnknownLogFormat(s.to_string()))
    }
}

/// Which fields hold what, for JSON lines and CSV (and the names of the combined format's
/// extra fields).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FieldNames {
    /// The timestamp; default: the first of `time`, `timestamp`, `ts`, `@timestamp`,
    /// `time_local`, `time_iso8601`, `date`.
    pub time: Option<String>,
    /// The request's cost (an integer ≥ 1); default: every request costs 1.
    pub cost: Option<String>,
    /// The combined format's fields after the user agent, in order (`x-api-key`, ...): how
    /// `header:NAME` and `field:NAME` find a header the log captured.
    pub extra: Vec<String>,
    /// The request's duration field (a number of ms, or of seconds for nginx's
    /// `$request_time`; `250ms` and `1.5s` say their unit); default: none (a lease is held its
    /// whole `lease_ms`). In the combined and common formats, a name not among `extra` is the
    /// first field after them: nginx's `$request_time` after a combined line.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// The unit of the duration's bare numbers; default: seconds for nginx's `$request_time`
    /// (combined and common lines, a field named `request_time`), else ms.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_unit: Option<DurationUnit>,
}

const TIME_FIELDS: [&str; 7] = [
    "time",
    "timestamp",
    "ts",
    "@timestamp",
    "time_local",
    "time_iso8601",
    "date",
];
const IP_FIELDS: [&str; 9] = [
    "ip",
    "remote_addr",
    "client_ip",
    "clientip",
    "client",
    "remote_ip",
    "src_ip",
    "addr",
    "host",
];
const METHOD_FIELDS: [&str; 3] = ["method", "request_method", "verb"];
const PATH_FIELDS: [&str; 5] = ["path", "uri", "request_uri", "url", "target"];

/// A parsed line of any format.
#[derive(Debug)]
pub enum Parsed<'a> {
    Clf(ClfLine<'a>),
    Json(JsonLine),
    Csv(CsvLine<'a>),
}

/// A request: its time, its cost, its duration and the parsed line its key is built from.
#[derive(Debug)]
pub struct Request<'a> {
    pub time: Timestamp,
    pub cost: u64,
    /// How long it was in flight, in ms, when the log says (`FieldNames::duration`).
    pub duration_ms: Option<u64>,
    pub line: Parsed<'a>,
}

/// Parses the lines of one log.
#[derive(Debug, Clone)]
pub struct LogParser {
    format: LogFormat,
    fields: FieldNames,
    /// CSV: the header, once read.
    header: Option<Header>,
}

impl LogParser {
    pub fn new(format: LogFormat, fields: FieldNames) -> Self {
        LogParser {
            format,
            fields,
            header: None,
        }
    }

    pub fn format(&self) -> LogFormat {
        self.format
    }

    /// One line: a request, `Ok(None)` for a line that holds none (the CSV header), or why the
    /// line cannot be used.
    pub fn parse<'a>(&mut self, line: &'a str) -> Result<Option<Request<'a>>, LineError> {
        let parsed = match self.format {
            LogFormat::Combined | LogFormat::Common => {
                Parsed::Clf(clf::parse(line, self.format == LogFormat::Combined)?)
            }
            LogFormat::Jsonl => Parsed::Json(jsonl::parse(line)?),
            LogFormat::Csv => match &self.header {
                None => {
                    self.header = Some(Header::parse(line)?);
                    return Ok(None);
                }
                Some(header) => Parsed::Csv(csvlog::parse(header, line)?),
            },
        };
        let time = self.time(&parsed)?;
        let cost = match &self.fields.cost {
            None => 1,
            Some(name) => {
                let raw = self
                    .field(&parsed, name)
                    .ok_or_else(|| LineError::NoCostField(name.clone()))?;
                match raw.trim().parse::<u64>() {
                    Ok(c) if c >= 1 => c,
                    _ => return Err(LineError::Cost(raw.to_string())),
                }
            }
        };
        let duration_ms = match &self.fields.duration {
            None => None,
            Some(name) => Some(self.duration(&parsed, name)?),
        };
        Ok(Some(Request {
            time,
            cost,
            duration_ms,
            line: parsed,
        }))
    }

    /// The duration field `name` in ms. In a combined or common line, a name that is not a
    /// field or a named extra is the first field after the named extras ($request_time).
    fn duration(&self, parsed: &Parsed<'_>, name: &str) -> Result<u64, LineError> {
        let clf = matches!(parsed, Parsed::Clf(_));
        let raw = self.field(parsed, name).or_else(|| match parsed {
            Parsed::Clf(line) => {
                // The combined format's trailing fields start with the referer and agent.
                let skip = if self.format == LogFormat::Combined {
                    2
                } else {
                    0
                };
                let i = skip + self.fields.extra.len();
                line.trailing.get(i).map(|v| Cow::Borrowed(*v))
            }
            _ => None,
        });
        let raw = raw.ok_or_else(|| LineError::NoDurationField(name.to_string()))?;
        let unit = self
            .fields
            .duration_unit
            .unwrap_or_else(|| DurationUnit::default_for(clf, name));
        duration::parse(&raw, unit, name)
    }

    fn time(&self, parsed: &Parsed<'_>) -> Result<Timestamp, LineError> {
        match parsed {
            Parsed::Clf(line) => Ok(line.time),
            Parsed::Json(line) => {
                let (name, value) = match &self.fields.time {
                    Some(name) => (name.as_str(), line.value(name)),
                    None => TIME_FIELDS
                        .iter()
                        .find_map(|n| line.value(n).map(|v| (*n, Some(v))))
                        .unwrap_or(("time", None)),
                };
                match value {
                    Some(serde_json::Value::Number(n)) => {
                        let shown = n.to_string();
                        time::parse_epoch(n.as_f64().unwrap_or(f64::NAN), &shown)
                    }
                    Some(serde_json::Value::String(s)) => time::parse_value(s),
                    _ => Err(self.no_time(name)),
                }
            }
            Parsed::Csv(line) => {
                let header = self
                    .header
                    .as_ref()
                    .ok_or(LineError::Malformed("no CSV header"))?;
                let name = match &self.fields.time {
                    Some(name) => name.as_str(),
                    None => TIME_FIELDS
                        .iter()
                        .copied()
                        .find(|n| header.index(n).is_some())
                        .unwrap_or("time"),
                };
                let value = line.get(header, name).ok_or_else(|| self.no_time(name))?;
                time::parse_value(value)
            }
        }
    }

    fn no_time(&self, name: &str) -> LineError {
        match &self.fields.time {
            Some(_) => LineError::NoTimeField(name.to_string()),
            None => LineError::NoUsualTimeField {
                looked_for: &TIME_FIELDS,
            },
        }
    }

    /// The client address.
    pub fn ip<'a>(&'a self, parsed: &'a Parsed<'a>) -> Option<Cow<'a, str>> {
        match parsed {
            Parsed::Clf(line) => Some(Cow::Borrowed(line.host)),
            _ => IP_FIELDS.iter().find_map(|n| self.field(parsed, n)),
        }
    }

    pub fn method<'a>(&'a self, parsed: &'a Parsed<'a>) -> Option<Cow<'a, str>> {
        match parsed {
            Parsed::Clf(line) => line.method.map(Cow::Borrowed),
            _ => METHOD_FIELDS
                .iter()
                .find_map(|n| self.field(parsed, n))
                .or_else(|| self.request_part(parsed, 0)),
        }
    }

    /// The request target as logged, query included.
    pub fn path<'a>(&'a self, parsed: &'a Parsed<'a>) -> Option<Cow<'a, str>> {
        match parsed {
            Parsed::Clf(line) => line.target.map(Cow::Borrowed),
            _ => PATH_FIELDS
                .iter()
                .find_map(|n| self.field(parsed, n))
                .or_else(|| self.request_part(parsed, 1)),
        }
    }

    /// A part of a `request` field (`GET /a HTTP/1.1`), for JSON and CSV logs that keep one.
    fn request_part<'a>(&'a self, parsed: &'a Parsed<'a>, index: usize) -> Option<Cow<'a, str>> {
        match self.field(parsed, "request")? {
            Cow::Borrowed(r) => r.split(' ').nth(index).map(Cow::Borrowed),
            Cow::Owned(r) => r.split(' ').nth(index).map(|p| Cow::Owned(p.to_string())),
        }
    }

    /// The names `field:NAME` finds in `parsed`: the combined format's fields and named
    /// extras, a JSON line's fields (nested ones dotted), the CSV header's columns. What the
    /// app offers as client keys.
    pub fn field_names(&self, parsed: &Parsed<'_>) -> Vec<String> {
        match parsed {
            Parsed::Clf(_) => super::clf::FIELD_NAMES
                .iter()
                .map(|n| n.to_string())
                .chain(["referer".into(), "user_agent".into()])
                .chain(self.fields.extra.iter().cloned())
                .collect(),
            Parsed::Json(line) => {
                let mut names = Vec::new();
                for (name, value) in &line.0 {
                    match value {
                        serde_json::Value::Object(inner) => {
                            names.extend(inner.keys().map(|k| format!("{name}.{k}")))
                        }
                        _ => names.push(name.clone()),
                    }
                }
                names
            }
            Parsed::Csv(_) => self
                .header
                .as_ref()
                .map(|h| h.names().to_vec())
                .unwrap_or_default(),
        }
    }

    /// A field by name: a combined-format field (or a named extra), a JSON field (dotted for
    /// nesting), a CSV column.
    pub fn field<'a>(&'a self, parsed: &'a Parsed<'a>, name: &str) -> Option<Cow<'a, str>> {
        match parsed {
            Parsed::Clf(line) => line.field(name).map(Cow::Borrowed).or_else(|| {
                let i = self
                    .fields
                    .extra
                    .iter()
                    .position(|e| same_header(e, name))?;
                line.extra(i).map(Cow::Borrowed)
            }),
            Parsed::Json(line) => line.get(name),
            Parsed::Csv(line) => line.get(self.header.as_ref()?, name).map(Cow::Borrowed),
        }
    }

    /// A request header the log captured: in the combined format the referer, the user agent,
    /// or an extra field named by [`FieldNames::extra`]; in JSON and CSV a field named as the
    /// header, or as nginx names its variable (`http_x_api_key`).
    pub fn header<'a>(&'a self, parsed: &'a Parsed<'a>, name: &str) -> Option<Cow<'a, str>> {
        if let Parsed::Clf(line) = parsed {
            if same_header(name, "referer") {
                return line.referer().map(Cow::Borrowed);
            }
            if same_header(name, "user-agent") {
                return line.user_agent().map(Cow::Borrowed);
            }
            return self.field(parsed, name);
        }
        let lower = name.to_ascii_lowercase();
        let nginx = format!("http_{}", lower.replace('-', "_"));
        self.field(parsed, name)
            .or_else(|| self.field(parsed, &lower))
            .or_else(|| self.field(parsed, &nginx))
    }
}

/// Header names compare case-insensitively, `-` and `_` alike.
fn same_header(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes().zip(b.bytes()).all(|(x, y)| {
            let norm = |c: u8| {
                if c == b'_' {
                    b'-'
                } else {
                    c.to_ascii_lowercase()
                }
            };
            norm(x) == norm(y)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_from_its_first_line() {
        let combined =
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "ua""#;
        let common = r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1"#;
        assert_eq!(LogFormat::detect(combined), Some(LogFormat::Combined));
        assert_eq!(LogFormat::detect(common), Some(LogFormat::Common));
        assert_eq!(LogFormat::detect(r#"{"ts":1}"#), Some(LogFormat::Jsonl));
        assert_eq!(LogFormat::detect("time,ip,path"), Some(LogFormat::Csv));
        assert_eq!(LogFormat::detect("\u{7f}ELF garbage"), None);
    }

    #[test]
    fn one_view_over_every_format() {
        let mut jsonl = LogParser::new(
            LogFormat::Jsonl,
            FieldNames {
                cost: Some("units".into()),
                ..FieldNames::default()
            },
        );
        let line = r#"{"@timestamp":"2023-11-14T22:13:20.250Z","remote_addr":"::1","request":"GET /v1/x HTTP/1.1","http_x_api_key":"k","units":3}"#;
        let r = jsonl.parse(line).expect("parses").expect("a request");
        assert_eq!(
            (r.time.ms, r.time.whole_second, r.cost),
            (1_700_000_000_250, false, 3)
        );
        assert_eq!(jsonl.ip(&r.line).as_deref(), Some("::1"));
        assert_eq!(jsonl.method(&r.line).as_deref(), Some("GET"));
        assert_eq!(jsonl.path(&r.line).as_deref(), Some("/v1/x"));
        assert_eq!(jsonl.header(&r.line, "X-Api-Key").as_deref(), Some("k"));
        let err = jsonl
            .parse(r#"{"@timestamp":1700000000,"units":0}"#)
            .expect_err("cost 0");
        assert!(err.to_string().contains("cost"), "{err}");
        assert!(jsonl
            .parse(r#"{"x":1}"#)
            .expect_err("no time")
            .to_string()
            .contains("--time-field"));

        let mut csv = LogParser::new(LogFormat::Csv, FieldNames::default());
        assert!(csv
            .parse("timestamp,client_ip,method,path")
            .expect("header")
            .is_none());
        let r = csv
            .parse("14/Nov/2023:23:13:20 +0100,10.0.0.1,POST,/login")
            .expect("parses")
            .expect("a request");
        assert_eq!((r.time.ms, r.time.whole_second), (1_700_000_000_000, true));
        assert_eq!(csv.ip(&r.line).as_deref(), Some("10.0.0.1"));
        assert_eq!(csv.method(&r.line).as_deref(), Some("POST"));

        let clf = LogParser::new(
            LogFormat::Combined,
            FieldNames {
                extra: vec!["x-api-key".into()],
                ..FieldNames::default()
            },
        );
        let mut clf_parser = clf.clone();
        let line = r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 1 "-" "ua 1" "key-9""#;
        let r = clf_parser.parse(line).expect("parses").expect("a request");
        assert_eq!(clf.header(&r.line, "X_API_KEY").as_deref(), Some("key-9"));
        assert_eq!(clf.header(&r.line, "User-Agent").as_deref(), Some("ua 1"));
        assert_eq!(clf.field(&r.line, "status").as_deref(), Some("200"));
    }
}
