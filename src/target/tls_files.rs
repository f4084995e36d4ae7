//! The TLS settings a `rediss://` URL comes with: the CA, client certificate and key files read
//! once and checked, and the explicit insecure opt-out. What a TLS client is built from.

use std::path::{Path, PathBuf};
use std::sync::Once;

/// TLS settings beside a `rediss://` URL, as the user gave them (file paths, not contents).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    /// PEM file of the CA(s) to trust instead of the system's roots.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// PEM client certificate (chain), for servers that require mutual TLS.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// Do not verify the server's certificate at all (also `#insecure` in the URL). Marked
    /// wherever the connection is shown.
    #[serde(default)]
    pub insecure: bool,
}

impl TlsOptions {
    /// True when nothing is set: a `redis://` URL may only come with these.
    pub fn is_empty(&self) -> bool {
        *self == TlsOptions::default()
    }
}

/// Which TLS option an error is about: the CLI flag and the app's field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsField {
    Ca,
    Cert,
    Key,
    Insecure,
}

impl TlsField {
    /// `--tls-ca`, ... (with `$REDIS_TLS_CA`, ... in the CLI).
    pub fn flag(self) -> &'static str {
        match self {
            TlsField::Ca => "--tls-ca",
            TlsField::Cert => "--tls-cert",
            TlsField::Key => "--tls-key",
            TlsField::Insecure => "--tls-insecure",
        }
    }

    /// `tls_ca`, ...: the field in the app's connection form.
    pub fn field(self) -> &'static str {
        match self {
            TlsField::Ca => "tls_ca",
            TlsField::Cert => "tls_cert",
            TlsField::Key => "tls_key",
            TlsField::Insecure => "tls_insecure",
        }
    }
}

/// A TLS option that cannot be used. Names the option (`--tls-ca`) and the file, never a
/// file's contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {}{}: {reason}", .field.flag(), shown_path(.path.as_deref()))]
pub struct TlsError {
    pub field: TlsField,
    pub path: Option<PathBuf>,
    pub reason: String,
}

fn shown_path(path: Option<&Path>) -> String {
    path.map(|p| format!(" {}", p.display()))
        .unwrap_or_default()
}

impl TlsError {
    fn new(field: TlsField, path: Option<&Path>, reason: impl Into<String>) -> Self {
        TlsError {
            field,
            path: path.map(Path::to_path_buf),
            reason: reason.into(),
        }
    }
}

/// The options with their files read and checked: what a client is built from.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct TlsMaterial {
    pub options: TlsOptions,
    ca: Option<Vec<u8>>,
    /// Certificate and key, PEM.
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Paths only: a private key never reaches a log.
        f.debug_struct("TlsMaterial")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TlsMaterial {
    /// Reads and checks the files: a missing file, a file without a PEM certificate, a
    /// certificate without its key (or the reverse) are refused here, naming the option.
    pub(crate) fn load(options: &TlsOptions) -> Result<Self, TlsError> {
        let ca = match &options.ca {
            Some(path) => {
                let pem = read(TlsField::Ca, path)?;
                require_pem(TlsField::Ca, path, &pem, "CERTIFICATE")?;
                Some(pem)
            }
            None => None,
        };
        let identity = match (&options.cert, &options.key) {
            (Some(cert), Some(key)) => {
                let cert_pem = read(TlsField::Cert, cert)?;
                require_pem(TlsField::Cert, cert, &cert_pem, "CERTIFICATE")?;
                let key_pem = read(TlsField::Key, key)?;
                require_pem(TlsField::Key, key, &key_pem, "PRIVATE KEY")?;
                Some((cert_pem, key_pem))
            }
            (Some(cert), None) => {
                return Err(TlsError::new(
                    TlsField::Key,
                    Some(cert),
                    "a client certificate needs its private key: give --tls-key too",
                ))
            }
            (None, Some(key)) => {
                return Err(TlsError::new(
                    TlsField::Cert,
                    Some(key),
                    "a private key needs its client certificate: give --tls-cert too",
                ))
            }
            (None, None) => None,
        };
        Ok(TlsMaterial {
            options: options.clone(),
            ca,
            identity,
        })
    }

    /// What redis-rs builds a TLS client from.
    pub(crate) fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: self
                .identity
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.ca.clone(),
        }
    }
}

fn read(field: TlsField, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path)
        .map_err(|err| TlsError::new(field, Some(path), format!("cannot read it: {err}")))
}

/// A PEM file holds a block whose label ends with `label` (`CERTIFICATE`; `PRIVATE KEY` also
/// matches `RSA PRIVATE KEY` and `EC PRIVATE KEY`).
fn require_pem(field: TlsField, path: &Path, pem: &[u8], label: &str) -> Result<(), TlsError> {
    let text = String::from_utf8_lossy(pem);
    let found = text.lines().any(|line| {
        line.strip_prefix("-----BEGIN ")
            .and_then(|rest| rest.strip_suffix("-----"))
            .is_some_and(|l| l.ends_with(label))
    });
    match found {
        true => Ok(()),
        false => Err(TlsError::new(
            field,
            Some(path),
            format!("no PEM block '-----BEGIN {label}-----' in it"),
        )),
    }
}

/// Installs rustls's crypto provider (ring) for the process, once. Another part of the process
/// may have installed one first; that one is then used, which is as good.
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_needs_its_key_and_files_must_hold_pem() {
        let dir = std::env::temp_dir().join(format!("ratelockr-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let not_pem = dir.join("not.pem");
        std::fs::write(&not_pem, "hello").expect("write");
        let err = TlsMaterial::load(&TlsOptions {
            ca: Some(not_pem.clone()),
            ..TlsOptions::default()
        })
        .expect_err("not PEM");
        assert_eq!(err.field, TlsField::Ca);
        assert!(err.to_string().starts_with("invalid --tls-ca "), "{err}");
        let err = TlsMaterial::load(&TlsOptions {
            cert: Some(not_pem.clone()),
            ..TlsOptions::default()
        })
        .expect_err("no key");
        assert_eq!(err.field, TlsField::Key);
        let err = TlsMaterial::load(&TlsOptions {
            ca: Some(dir.join("missing.pem")),
            ..TlsOptions::default()
        })
        .expect_err("missing");
        assert!(err.to_string().contains("cannot read it"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
