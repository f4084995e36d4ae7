//! What a run's figures are of: one of the five scripts, the naive GET/SET demo, or a policy's
//! stacked decision. Records, summaries, series, replay reports and chart styles carry it as a
//! [`Subject`], and it reads and writes as the label CSVs, JSON and the app have always shown
//! (`token_bucket`, ..., `naive_get_set`, `policy`).

use ratelockr::rule::AlgorithmKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// The limiter a record, a summary or a line is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    /// A rule's script.
    Algorithm(AlgorithmKind),
    /// THE BROKEN APPROACH of the race demo: GET, decide in the application, SET.
    NaiveGetSet,
    /// A policy, decided all or nothing over its limits.
    Policy,
}

impl Subject {
    /// Every subject, the five scripts first.
    pub const ALL: [Subject; 7] = [
        Subject::Algorithm(AlgorithmKind::TokenBucket),
        Subject::Algorithm(AlgorithmKind::Gcra),
        Subject::Algorithm(AlgorithmKind::SlidingWindowLog),
        Subject::Algorithm(AlgorithmKind::SlidingWindowCounter),
        Subject::Algorithm(AlgorithmKind::FixedWindow),
        Subject::NaiveGetSet,
        Subject::Policy,
    ];

    /// The label in CSVs, JSON and summaries: the script's name, `naive_get_set` or `policy`.
    pub fn as_str(self) -> &'static str {
        match self {
            Subject::Algorithm(kind) => kind.as_str(),
            Subject::NaiveGetSet => "naive_get_set",
            Subject::Policy => "policy",
        }
    }

    /// The script, for a rule's.
    pub fn kind(self) -> Option<AlgorithmKind> {
        match self {
            Subject::Algorithm(kind) => Some(kind),
            Subject::NaiveGetSet | Subject::Policy => None,
        }
    }
}

impl From<AlgorithmKind> for Subject {
    fn from(kind: AlgorithmKind) -> Self {
        Subject::Algorithm(kind)
    }
}

/// A record built field by field (`..Default::default()`) is a token bucket's until told.
impl Default for Subject {
    fn default() -> Self {
        Subject::Algorithm(AlgorithmKind::TokenBucket)
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A label that names no subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm {0:?}: expected one of token_bucket, gcra, sliding_window_log, sliding_window_counter, fixed_window, naive_get_set, policy")]
pub struct UnknownSubject(pub String);

impl FromStr for Subject {
    type Err = UnknownSubject;

    /// Every kind's label, not only [`Subject::ALL`]'s: a run of a concurrency limit is read
    /// back from its CSV too.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "naive_get_set" => Ok(Subject::NaiveGetSet),
            "policy" => Ok(Subject::Policy),
            _ => AlgorithmKind::ALL
                .into_iter()
                .find(|kind| kind.as_str() == s)
                .map(Subject::Algorithm)
                .ok_or_else(|| UnknownSubject(s.to_string())),
        }
    }
}

impl Serialize for Subject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let label = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        label.parse().map_err(serde::de::Error::custom)
    }
}

impl PartialEq<str> for Subject {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Subject {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_as_the_strings_records_always_carried() {
        for subject in Subject::ALL {
            assert_eq!(subject.as_str().parse::<Subject>(), Ok(subject));
            let json = serde_json::to_string(&subject).expect("serializes");
            assert_eq!(json, format!("\"{subject}\""));
            assert_eq!(
                serde_json::from_str::<Subject>(&json).expect("reads"),
                subject
            );
        }
        for kind in AlgorithmKind::ALL {
            assert_eq!(
                kind.as_str().parse::<Subject>(),
                Ok(Subject::Algorithm(kind))
            );
        }
        assert_eq!(Subject::NaiveGetSet.to_string(), "naive_get_set");
        assert_eq!(Subject::Policy.to_string(), "policy");
        assert_eq!(Subject::from(AlgorithmKind::Gcra).to_string(), "gcra");
        let err = "leaky_bucket"
            .parse::<Subject>()
            .expect_err("no such subject");
        assert!(err.to_string().contains("\"leaky_bucket\""), "{err}");
        assert!(serde_json::from_str::<Subject>("\"nope\"").is_err());
    }
}
