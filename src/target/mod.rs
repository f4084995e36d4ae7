//! A Redis URL that can be shown: its password never leaves this type in clear. Every URL is
//! parsed here: `redis://`, `unix://`, `rediss://` with its TLS settings ([`tls_files`]), and a
//! Redis Cluster's seed nodes, `redis+cluster://[user:password@]host:port[,host:port…]` (any one
//! that answers is enough, the client learns every node and slot from it; over TLS
//! `rediss+cluster://`, every node then speaking TLS, `tls-cluster yes`, with `#insecure` or the
//! same TLS settings as a `rediss://` URL). So [`RedisTarget::client`] stays the one place a
//! client is made.

mod tls_files;

use std::fmt;
use std::sync::Arc;
pub(crate) use tls_files::{install_crypto_provider, TlsMaterial};
pub use tls_files::{TlsError, TlsField, TlsOptions};

/// The default Redis when neither `--redis` nor `$REDIS_URL` says otherwise.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// A validated Redis URL. `Display` and `Debug` show it with the password replaced by `***`
/// (and, for TLS without verification, marked as insecure).
#[derive(Clone, PartialEq, Eq)]
pub struct RedisTarget {
    url: String,
    redacted: String,
    /// A Redis Cluster's seed nodes (`redis+cluster://`), each as a `redis://` URL carrying
    /// the user and password; empty for a single Redis.
    seeds: Vec<String>,
    /// Present exactly for `rediss://` URLs.
    tls: Option<Arc<TlsMaterial>>,
}

/// Why a Redis URL was refused. Holds only the redacted form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Redis URL {shown}: {reason}")]
pub struct TargetError {
    pub shown: String,
    pub reason: String,
}

impl RedisTarget {
    pub fn parse(input: &str) -> Result<Self, TargetError> {
        let input = input.trim();
        if let Some(seeds) = seed_urls(input)? {
            let redacted = redact_seeds(input);
            // Over TLS, the settings of a rediss:// URL; the cluster client takes them
            // (conn.rs), and each seed is checked with them as a rediss:// URL is.
            let tls = match seeds.tls {
                false => None,
                true => {
                    let options = TlsOptions {
                        insecure: seeds.insecure,
                        ..TlsOptions::default()
                    };
                    let material = TlsMaterial::load(&options).map_err(|err| TargetError {
                        shown: redacted.clone(),
                        reason: err.to_string(),
                    })?;
                    Some(Arc::new(material))
                }
            };
            return Ok(RedisTarget {
                url: input.to_string(),
                redacted,
                seeds: seeds.urls,
                tls,
            });
        }
        let fail = |shown: String, reason: &str| TargetError {
            shown,
            reason: reason.to_string(),
        };
        let parsed = url::Url::parse(input).map_err(|_| {
            fail(
                "(unparsable, not shown)".into(),
                "expected redis://[user:password@]host[:port][/db]",
            )
        })?;
        let redacted = redact(&parsed);
        match parsed.scheme() {
            "redis" | "rediss" => {}
            "unix" | "redis+unix" => {}
            _ => {
                return Err(fail(
                    redacted,
                    "the scheme must be redis://, rediss:// (TLS), redis+cluster:// (a Redis Cluster) or unix:// (a socket)",
                ))
            }
        }
        if matches!(parsed.scheme(), "redis" | "rediss")
            && parsed.host_str().is_none_or(str::is_empty)
        {
            return Err(fail(redacted, "it names no host"));
        }
        match parsed.fragment() {
            None => {}
            Some("insecure") if parsed.scheme() == "rediss" => {}
            Some(_) => {
                return Err(fail(
                    redacted,
                    "the only fragment a URL may carry is #insecure, on a rediss:// URL",
                ))
            }
        }
        if matches!(parsed.scheme(), "redis" | "rediss") {
            let db = parsed.path().trim_start_matches('/');
            if !db.is_empty() && db.parse::<u32>().is_err() {
                return Err(fail(
                    redacted,
                    "the database (after the /) must be a whole number, 0 to 2^32-1",
                ));
            }
        }
        redis::Client::open(input).map_err(|err| {
            // redis-rs's reason names a part of the URL, never its password.
            let reason = err
                .to_string()
                .replace(parsed.password().unwrap_or("\0"), "***");
            fail(
                redacted.clone(),
                &format!("the Redis client refused it: {reason}"),
            )
        })?;
        let mut target = RedisTarget {
            url: input.to_string(),
            redacted,
            seeds: Vec::new(),
            tls: None,
        };
        if parsed.scheme() == "rediss" {
            let options = TlsOptions {
                insecure: parsed.fragment() == Some("insecure"),
                ..TlsOptions::default()
            };
            // No files to read: this cannot fail, and the client is checked just below.
            let material = TlsMaterial::load(&options)
                .map_err(|err| fail(target.redacted.clone(), &err.to_string()))?;
            tls_client(&target.url, &material).map_err(|err| {
                fail(
                    target.redacted.clone(),
                    &format!("the TLS client refused it: {err}"),
                )
            })?;
            target.tls = Some(Arc::new(material));
        }
        Ok(target)
    }

    /// The URL with any password replaced by `***`: safe for logs, errors and the UI.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// The one place a single-node client is made, TLS or not.
    pub fn client(&self) -> redis::Client {
        // parse() already opened a client from this very string (or, for a cluster, from its
        // first seed: a single-node client of a cluster reaches one node only).
        let url = self.seeds.first().unwrap_or(&self.url);
        if let Some(tls) = &self.tls {
            return tls_client(url, tls).expect("built once in RedisTarget::with_tls");
        }
        redis::Client::open(url.as_str()).expect("validated in RedisTarget::parse")
    }

    /// True for a Redis Cluster (`redis+cluster://` or `rediss+cluster://`).
    pub fn is_cluster(&self) -> bool {
        !self.seeds.is_empty()
    }

    /// A Redis Cluster's seed nodes as `redis://` (`rediss://`) URLs (empty for a single Redis).
    pub fn cluster_seeds(&self) -> &[String] {
        &self.seeds
    }

    /// True when the URL carries a password.
    pub fn has_password(&self) -> bool {
        self.url != self.redacted
    }
}

// --- TLS (rediss://) --------------------------------------------------------------------------

impl RedisTarget {
    /// The target with TLS settings: a CA file, a client certificate and key, or no
    /// verification at all (`insecure`, which also shows as `#insecure` in the URL). The files
    /// are read now, so a missing or wrong one is an error naming the option, not a failed
    /// connection later. Settings on a `redis://` URL are refused: they would be ignored.
    pub fn with_tls(mut self, options: TlsOptions) -> Result<Self, TlsError> {
        let was_insecure = self.is_insecure();
        let Some(previous) = &self.tls else {
            if options.is_empty() {
                return Ok(self);
            }
            let field = [
                (options.ca.is_some(), TlsField::Ca),
                (options.cert.is_some(), TlsField::Cert),
                (options.key.is_some(), TlsField::Key),
            ]
            .into_iter()
            .find_map(|(set, field)| set.then_some(field))
            .unwrap_or(TlsField::Insecure);
            return Err(TlsError {
                field,
                path: None,
                reason: format!(
                    "TLS settings need a rediss:// URL, and {} is not one",
                    self.redacted
                ),
            });
        };
        let options = TlsOptions {
            insecure: options.insecure || previous.options.insecure,
            ..options
        };
        let material = TlsMaterial::load(&options)?;
        if options.insecure && !was_insecure {
            self.url = with_insecure_fragment(&self.url);
            self.redacted = with_insecure_fragment(&self.redacted);
            for seed in &mut self.seeds {
                *seed = with_insecure_fragment(seed);
            }
        }
        // A cluster's client is built from its seeds (conn.rs); a seed is checked here.
        let url = self.seeds.first().unwrap_or(&self.url);
        tls_client(url, &material).map_err(|err| TlsError {
            field: match options.cert.is_some() {
                true => TlsField::Key,
                false => TlsField::Ca,
            },
            path: None,
            reason: format!("the TLS client refused it: {err}"),
        })?;
        self.tls = Some(Arc::new(material));
        Ok(self)
    }

    /// True for `rediss://` and `rediss+cluster://`.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// True when TLS is on but the server's certificate is not verified.
    pub fn is_insecure(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.options.insecure) || self.url.ends_with("#insecure")
    }

    /// The TLS settings (file paths), for `rediss://` URLs.
    pub fn tls_options(&self) -> Option<&TlsOptions> {
        self.tls.as_ref().map(|t| &t.options)
    }

    /// Host and port of a `rediss://` target.
    pub(crate) fn tls_endpoint(&self) -> Option<(String, u16)> {
        self.tls.as_ref()?;
        match self.client().get_connection_info().addr() {
            redis::ConnectionAddr::TcpTls { host, port, .. } => Some((host.clone(), *port)),
            _ => None,
        }
    }

    /// Host and port of a plain-TCP single-node target (`redis://`).
    pub(crate) fn tcp_endpoint(&self) -> Option<(String, u16)> {
        if self.is_cluster() || self.tls.is_some() {
            return None;
        }
        match self.client().get_connection_info().addr() {
            redis::ConnectionAddr::Tcp(host, port) => Some((host.clone(), *port)),
            _ => None,
        }
    }

    /// The certificates for redis-rs builders other than [`RedisTarget::client`] (a cluster
    /// client, say), for `rediss://` URLs.
    pub fn tls_certificates(&self) -> Option<redis::TlsCertificates> {
        self.tls.as_ref().map(|t| t.certificates())
    }

    /// A line for people: `TLS, verified against the system's CAs`, `TLS, CA ca.pem, client
    /// certificate client.pem`, `TLS WITHOUT CERTIFICATE VERIFICATION`, or `plain TCP`.
    pub fn transport(&self) -> String {
        let Some(tls) = &self.tls else {
            return "plain TCP (no TLS)".into();
        };
        let o = &tls.options;
        if o.insecure {
            return "TLS WITHOUT CERTIFICATE VERIFICATION (insecure: anyone on the path can pose as this Redis)".into();
        }
        let mut line = match &o.ca {
            Some(ca) => format!("TLS, verified against the CA in {}", ca.display()),
            None => "TLS, verified against the system's CAs".to_string(),
        };
        if let Some(cert) = &o.cert {
            line.push_str(&format!(", client certificate {}", cert.display()));
        }
        line
    }
}

/// A client for one node of a cluster (`host:port`), with the seed URL's credentials and
/// `tls` (the target's [`RedisTarget::tls_certificates`]): a master's own connection, a
/// replica's ping.
pub(crate) fn node_client(
    seed: &url::Url,
    tls: Option<&redis::TlsCertificates>,
    host: &str,
    port: u16,
) -> redis::RedisResult<redis::Client> {
    let mut url = seed.clone();
    let _ = url.set_host(Some(host));
    let _ = url.set_port(Some(port));
    match tls {
        Some(certificates) => {
            install_crypto_provider();
            redis::Client::build_with_tls(url.as_str(), certificates.clone())
        }
        None => redis::Client::open(url.as_str()),
    }
}

fn tls_client(url: &str, tls: &TlsMaterial) -> redis::RedisResult<redis::Client> {
    install_crypto_provider();
    redis::Client::build_with_tls(url, tls.certificates())
}

/// `url` with the fragment redis-rs reads as "do not verify the certificate".
fn with_insecure_fragment(url: &str) -> String {
    match url.split_once('#') {
        Some((base, _)) => format!("{base}#insecure"),
        None => format!("{url}#insecure"),
    }
}

fn redact(url: &url::Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

impl fmt::Display for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)?;
        if self.is_insecure() {
            f.write_str(" (INSECURE: TLS certificate not verified)")?;
        }
        Ok(())
    }
}

impl fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedisTarget")
            .field(&self.to_string())
            .finish()
    }
}

// --- Redis Cluster (redis+cluster://) ------------------------------------------------------

/// The scheme of a Redis Cluster URL.
pub(crate) const SCHEME: &str = "redis+cluster://";
/// The scheme of a Redis Cluster reached over TLS.
pub(crate) const TLS_SCHEME: &str = "rediss+cluster://";

/// A cluster URL's seed nodes and whether it asks for TLS (and, with `#insecure`, no
/// certificate verification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seeds {
    /// Each seed as a `redis://` (`rediss://` over TLS) URL with the URL's user and password.
    pub urls: Vec<String>,
    pub tls: bool,
    pub insecure: bool,
}

/// The seed nodes of a `redis+cluster://` or `rediss+cluster://` URL; `None` when `input` is
/// not a cluster URL. Errors show the URL redacted.
pub(crate) fn seed_urls(input: &str) -> Result<Option<Seeds>, TargetError> {
    let Some((rest, tls)) = strip_scheme(input) else {
        return Ok(None);
    };
    let (rest, insecure) = match rest.strip_suffix("#insecure") {
        Some(rest) if tls => (rest, true),
        _ => (rest, false),
    };
    let fail = |reason: &str| TargetError {
        shown: redact_seeds(input),
        reason: reason.to_string(),
    };
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((user, hosts)) => (Some(user), hosts),
        None => (None, rest),
    };
    // A cluster has one database, 0: a path could only be a mistake.
    let hosts = match hosts.split_once('/') {
        Some((hosts, "" | "0")) => hosts,
        Some(_) => return Err(fail("a Redis Cluster has only database 0; remove the /db")),
        None => hosts,
    };
    if hosts.contains('?') {
        return Err(fail("a cluster URL takes no ?parameters"));
    }
    if hosts.contains('#') {
        return Err(fail(
            "the only fragment a cluster URL may carry is #insecure, on rediss+cluster://",
        ));
    }
    let scheme = if tls { "rediss" } else { "redis" };
    let mut seeds = Vec::new();
    for host in hosts.split(',').map(str::trim) {
        if host.is_empty() {
            return Err(fail(
                "expected redis+cluster://[user:password@]host:port[,host:port...]",
            ));
        }
        let mut url = match userinfo {
            Some(user) => format!("{scheme}://{user}@{host}"),
            None => format!("{scheme}://{host}"),
        };
        let parsed = url::Url::parse(&url)
            .map_err(|_| fail("a seed node is not host:port (an IPv6 host goes in [brackets])"))?;
        if parsed.host_str().is_none_or(str::is_empty) || parsed.path() != "" {
            return Err(fail("a seed node is not host:port"));
        }
        if insecure {
            // How redis-rs reads "do not verify the certificate" from a URL.
            url.push_str("#insecure");
        }
        install_crypto_provider();
        redis::Client::open(url.as_str())
            .map_err(|_| fail("the Redis client refused a seed node"))?;
        seeds.push(url);
    }
    Ok(Some(Seeds {
        urls: seeds,
        tls,
        insecure,
    }))
}

/// The URL after its cluster scheme, and whether the scheme asks for TLS.
fn strip_scheme(input: &str) -> Option<(&str, bool)> {
    [(SCHEME, false), (TLS_SCHEME, true)]
        .into_iter()
        .find_map(|(prefix, tls)| {
            let (scheme, rest) = input.split_at_checked(prefix.len())?;
            scheme.eq_ignore_ascii_case(prefix).then_some((rest, tls))
        })
}

/// A cluster URL with its password replaced by `***`.
pub(crate) fn redact_seeds(input: &str) -> String {
    let Some((rest, tls)) = strip_scheme(input) else {
        return "(unparsable, not shown)".into();
    };
    let scheme = if tls { TLS_SCHEME } else { SCHEME };
    match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let user = match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:***"),
                None => userinfo.to_string(),
            };
            format!("{scheme}{user}@{hosts}")
        }
        None => input.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_shows_the_password() {
        let t = RedisTarget::parse("redis://app:s3cr3t@10.0.0.5:6380/2").expect("valid");
        assert_eq!(t.redacted(), "redis://app:***@10.0.0.5:6380/2");
        assert!(!format!("{t} {t:?}").contains("s3cr3t"));
        assert!(t.has_password());
        let t = RedisTarget::parse("redis://:only-pass@localhost").expect("valid");
        assert!(!t.to_string().contains("only-pass"));
    }

    #[test]
    fn refuses_bad_urls_without_echoing_secrets() {
        for bad in [
            "http://user:hunter2@localhost",
            "localhost:6379",
            "redis://",
            "rediss://x:hunter2@h#verify-nothing",
        ] {
            let err = RedisTarget::parse(bad).expect_err(bad);
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
    }

    #[test]
    fn insecure_tls_is_marked_wherever_the_target_is_shown() {
        let t = RedisTarget::parse("rediss://app:s3cr3t@h:6380").expect("valid");
        assert!(t.is_tls() && !t.is_insecure());
        assert!(!t.to_string().contains("INSECURE"));
        let t = t
            .with_tls(TlsOptions {
                insecure: true,
                ..TlsOptions::default()
            })
            .expect("insecure");
        assert_eq!(t.redacted(), "rediss://app:***@h:6380#insecure");
        assert!(t.to_string().contains("INSECURE"), "{t}");
        assert!(t.transport().contains("WITHOUT CERTIFICATE VERIFICATION"));
        let t = RedisTarget::parse("rediss://h:6380/#insecure").expect("valid");
        assert!(t.is_insecure() && format!("{t:?}").contains("INSECURE"));
    }

    #[test]
    fn tls_settings_need_a_rediss_url() {
        let err = RedisTarget::parse("redis://h:6379")
            .expect("valid")
            .with_tls(TlsOptions {
                insecure: true,
                ..TlsOptions::default()
            })
            .expect_err("plain");
        assert_eq!(err.field, TlsField::Insecure);
        assert!(err.to_string().contains("rediss://"), "{err}");
    }

    #[test]
    fn seeds_keep_credentials_and_errors_hide_them() {
        let seeds = seed_urls("redis+cluster://app:s3cr3t@10.0.0.1:7000,10.0.0.2:7001")
            .expect("valid")
            .expect("a cluster URL");
        assert!(!seeds.tls);
        assert_eq!(
            seeds.urls,
            [
                "redis://app:s3cr3t@10.0.0.1:7000",
                "redis://app:s3cr3t@10.0.0.2:7001"
            ]
        );
        assert_eq!(
            redact_seeds("redis+cluster://app:s3cr3t@h:1,h:2"),
            "redis+cluster://app:***@h:1,h:2"
        );
        assert_eq!(seed_urls("redis://h:1").expect("not a cluster"), None);
        // Over TLS: rediss:// seeds, and #insecure read, not taken for a host.
        let tls = seed_urls("rediss+cluster://app:s3cr3t@h:1,h:2#insecure")
            .expect("valid")
            .expect("a cluster URL");
        assert!(tls.tls && tls.insecure);
        assert_eq!(
            tls.urls,
            [
                "rediss://app:s3cr3t@h:1#insecure",
                "rediss://app:s3cr3t@h:2#insecure"
            ]
        );
        assert_eq!(
            redact_seeds("rediss+cluster://app:s3cr3t@h:1"),
            "rediss+cluster://app:***@h:1"
        );
        for bad in [
            "redis+cluster://app:hunter2@",
            "redis+cluster://app:hunter2@h:1,,h:2",
            "redis+cluster://app:hunter2@h:1/3",
            "redis+cluster://app:hunter2@h:notaport",
            "redis+cluster://app:hunter2@h:1#insecure",
            "rediss+cluster://app:hunter2@h:1#verify-nothing",
        ] {
            let err = seed_urls(bad).expect_err(bad);
            assert!(!err.to_string().contains("hunter2"), "{err}");
            assert!(err.to_string().contains("***"), "{err}");
        }
    }
}
