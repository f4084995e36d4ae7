//! How the app reaches its Redis, as the connection panel shows and edits it: single node or
//! cluster, plain TCP or TLS (verified, or INSECURE), the TLS files from the form, and every
//! TLS failure put on the form field it concerns.
//!
//! The checks themselves are the engine's (`RedisTarget::with_tls` reads and checks the files,
//! `diagnose::explain`/`diagnose::diagnose` word a failed handshake); this module only translates them
//! into the app's terms: `tls_ca` instead of `--tls-ca`.

use super::error::{AppError, ErrorCode};
use ratelockr::{RedisTarget, TlsError, TlsField, TlsOptions};
use serde::Serialize;
use std::path::PathBuf;
use ts_rs::TS;

/// Which Redis the app is on, for the status pill and the connection card.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Transport {
    /// A Redis Cluster (`redis+cluster://`), not a single node.
    pub cluster: bool,
    /// TLS (`rediss://`), not plain TCP.
    pub tls: bool,
    /// TLS without verifying the server's certificate: shown as INSECURE everywhere.
    pub insecure: bool,
    /// The engine's words for it: `plain TCP (no TLS)`, `TLS, verified against the CA in
    /// ca.pem, client certificate client.pem`, `TLS WITHOUT CERTIFICATE VERIFICATION (…)`.
    pub description: String,
    /// The TLS files in use (paths only), so the form shows them again after a restart.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_options: Option<TlsOptions>,
}

impl Transport {
    pub fn of(target: &RedisTarget) -> Transport {
        Transport {
            cluster: target.is_cluster(),
            tls: target.is_tls(),
            insecure: target.is_insecure(),
            description: target.transport(),
            tls_options: target.tls_options().cloned(),
        }
    }
}

/// The form's TLS options as the engine takes them: a blank path is no path (the form sends
/// what its inputs hold), and paths lose surrounding spaces.
pub fn normalized(options: Option<TlsOptions>) -> TlsOptions {
    let path = |p: Option<PathBuf>| {
        p.map(|p| PathBuf::from(p.to_string_lossy().trim()))
            .filter(|p| !p.as_os_str().is_empty())
    };
    let options = options.unwrap_or_default();
    TlsOptions {
        ca: path(options.ca),
        cert: path(options.cert),
        key: path(options.key),
        insecure: options.insecure,
    }
}

/// `url` with `tls` applied: the URL's own errors on `redis_url`, the TLS files' on their field.
pub fn target(url: &str, tls: &TlsOptions) -> Result<RedisTarget, AppError> {
    // TLS files on a plain URL (`redis://`, `redis+cluster://`) are refused by the engine,
    // naming the field, rather than ignored; `rediss+cluster://` takes them for every node.
    RedisTarget::parse(url)?
        .with_tls(tls.clone())
        .map_err(tls_error)
}

/// TLS options with no URL: the automatic choice is a plain-TCP local Redis, so they would be
/// ignored; refused on the first one set.
pub fn without_url(tls: &TlsOptions) -> AppError {
    AppError::new(
        ErrorCode::InvalidTls,
        "TLS settings need a rediss:// URL: enter the Redis URL too (an empty URL means the automatic, plain-TCP local Redis)",
    )
    .with_field(first_set_field(tls))
}

fn first_set_field(tls: &TlsOptions) -> &'static str {
    match (&tls.ca, &tls.cert, &tls.key) {
        (Some(_), _, _) => "tls_ca",
        (_, Some(_), _) => "tls_cert",
        (_, _, Some(_)) => "tls_key",
        _ => "tls_insecure",
    }
}

/// What the form calls each TLS field.
fn label(field: TlsField) -> &'static str {
    match field {
        TlsField::Ca => "CA file",
        TlsField::Cert => "client certificate",
        TlsField::Key => "client key",
        TlsField::Insecure => "insecure option",
    }
}

/// A TLS option the engine refused, on its form field and in the form's words.
pub fn tls_error(err: TlsError) -> AppError {
    let path = err
        .path
        .as_ref()
        .map(|p| format!(" {}", p.display()))
        .unwrap_or_default();
    let reason = in_form_words(&err.reason);
    AppError::new(
        ErrorCode::InvalidTls,
        format!("invalid {}{path}: {reason}", label(err.field)),
    )
    .with_field(err.field.field())
}

/// The engine's TLS messages name the CLI's flags (`give the CA's PEM file with --tls-ca`); the
/// form's fields are what the user sees here.
pub fn in_form_words(message: &str) -> String {
    message
        // The server's own option keeps its name (without the dashes, so it is not a flag).
        .replace("--tls-ca-cert-file", "tls-ca-cert-file")
        .replace("with --tls-ca", "as the CA file")
        .replace("--tls-cert and --tls-key", "the client certificate and key")
        .replace("--tls-key", "the client key")
        .replace("--tls-cert", "the client certificate")
        .replace("--tls-ca", "the CA file")
}

/// The form field a failed connection is about, from the engine's diagnosis (`diagnose::explain`,
/// `diagnose::diagnose`): an unknown CA is the CA file's; a host name the certificate does not list
/// or a plain-TCP server behind `rediss://` is the URL's; a client certificate the server
/// wants or refuses is the certificate's. None: not the form's fault (refused, timed out...).
pub fn failure_field(message: &str) -> Option<&'static str> {
    if !message.starts_with("TLS:") && !message.contains(" TLS: ") {
        return None;
    }
    if message.contains("(unknown CA)") {
        Some("tls_ca")
    } else if message.contains("(hostname mismatch)")
        || message.contains("use redis:// for it")
        || message.contains("did not answer in TLS")
    {
        Some("redis_url")
    } else if message.contains("(mutual TLS)") || message.contains("this client's certificate") {
        Some("tls_cert")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_paths_are_no_paths() {
        let options = normalized(Some(TlsOptions {
            ca: Some(" ".into()),
            cert: Some(" /etc/client.pem ".into()),
            key: None,
            insecure: false,
        }));
        assert_eq!(options.ca, None);
        assert_eq!(options.cert, Some(PathBuf::from("/etc/client.pem")));
        assert!(normalized(None).is_empty());
    }

    #[test]
    fn a_missing_file_is_refused_on_its_field_in_the_forms_words() {
        let err = target(
            "rediss://127.0.0.1:6380",
            &TlsOptions {
                ca: Some("/nonexistent/ca.pem".into()),
                ..TlsOptions::default()
            },
        )
        .expect_err("no such file");
        assert_eq!(err.code, ErrorCode::InvalidTls);
        assert_eq!(err.field.as_deref(), Some("tls_ca"));
        assert!(
            err.message
                .starts_with("invalid CA file /nonexistent/ca.pem: cannot read it"),
            "{err:?}"
        );
        let err = target(
            "rediss://127.0.0.1:6380",
            &TlsOptions {
                cert: Some("/nonexistent/c.pem".into()),
                ..TlsOptions::default()
            },
        )
        .expect_err("a certificate without its key");
        assert_eq!(err.field.as_deref(), Some("tls_key"));
        assert!(!err.message.contains("--tls"), "{err:?}");
    }

    #[test]
    fn tls_options_on_a_plain_or_cluster_url_are_refused_not_ignored() {
        let insecure = TlsOptions {
            insecure: true,
            ..TlsOptions::default()
        };
        let err = target("redis://127.0.0.1:6379", &insecure).expect_err("plain");
        assert_eq!(err.field.as_deref(), Some("tls_insecure"));
        assert!(err.message.contains("rediss://"), "{err:?}");
        let err = target("redis+cluster://127.0.0.1:7000", &insecure).expect_err("cluster");
        assert_eq!(err.field.as_deref(), Some("tls_insecure"));
        let ok = target("redis+cluster://127.0.0.1:7000", &TlsOptions::default()).expect("ok");
        assert!(Transport::of(&ok).cluster);
        // A cluster over TLS takes them.
        let tls = target("rediss+cluster://127.0.0.1:7000", &insecure).expect("TLS cluster");
        let shown = Transport::of(&tls);
        assert!(shown.cluster && shown.tls && shown.insecure, "{shown:?}");
    }

    #[test]
    fn the_insecure_mark_comes_from_the_option_and_from_the_url() {
        for (url, insecure) in [
            ("rediss://h:6380", true),
            ("rediss://h:6380#insecure", false),
        ] {
            let t = target(
                url,
                &TlsOptions {
                    insecure,
                    ..TlsOptions::default()
                },
            )
            .expect("valid");
            let shown = Transport::of(&t);
            assert!(shown.tls && shown.insecure && !shown.cluster, "{shown:?}");
            assert!(shown
                .description
                .contains("WITHOUT CERTIFICATE VERIFICATION"));
        }
        let plain = Transport::of(&target("redis://h", &TlsOptions::default()).expect("ok"));
        assert!(!plain.tls && !plain.insecure && plain.tls_options.is_none());
    }

    #[test]
    fn each_diagnosis_lands_on_its_field() {
        // The engine's own wording, so a change there fails here.
        let explained = |raw: &str| ratelockr::diagnose::explain(raw).expect("a TLS failure");
        let cases = [
            ("invalid peer certificate: UnknownIssuer", Some("tls_ca")),
            (
                "invalid peer certificate: NotValidForName",
                Some("redis_url"),
            ),
            (
                "received fatal alert: CertificateRequired",
                Some("tls_cert"),
            ),
            ("received fatal alert: BadCertificate", Some("tls_cert")),
            ("tls handshake eof", Some("redis_url")),
            ("invalid peer certificate: Expired", None),
        ];
        for (raw, field) in cases {
            let message = in_form_words(&explained(raw));
            assert_eq!(failure_field(&message), field, "{raw}");
            assert!(!message.contains("--tls"), "the form's words: {message}");
        }
        assert_eq!(failure_field("unavailable: Connection refused"), None);
        let plain = "misconfiguration: TLS: the server at 127.0.0.1:1 did not answer in TLS, and a plain-TCP Redis answers there: use redis:// for it";
        assert_eq!(failure_field(plain), Some("redis_url"));
    }
}
