//! Who a request counts against: the client key a rule limits.
//!
//! The peer address needs the server to record it: serve the router with
//! `into_make_service_with_connect_info::<SocketAddr>()`, which puts a
//! [`ConnectInfo<SocketAddr>`] in every request's extensions.
//!
//! A forwarded client address (`Forwarded: for=`, else `X-Forwarded-For`) is believed only from
//! configured proxies: anyone can send those headers, so from any other peer they are ignored
//! and the peer address is the key.

use axum::extract::{ConnectInfo, Request};
use axum::http::header::FORWARDED;
use axum::http::{HeaderMap, HeaderName};
use ipnet::IpNet;
use ratelockr::key_expr::{segment, KeyExpr, KeyExprError, KeyTerm};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Why a key expression cannot key live requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpressionError {
    /// Not a key expression at all.
    Invalid(KeyExprError),
    /// `field:NAME`: a log line's field, which a live request has not.
    LogField {
        /// The expression as written.
        expr: String,
        /// The field it names.
        name: String,
    },
}

impl fmt::Display for ExpressionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpressionError::Invalid(err) => err.fmt(f),
            ExpressionError::LogField { expr, name } => write!(
                f,
                "key {expr:?}: field:{name} names a field of a log line, which a live request has not; use header:NAME"
            ),
        }
    }
}

impl std::error::Error for ExpressionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExpressionError::Invalid(err) => Some(err),
            ExpressionError::LogField { .. } => None,
        }
    }
}

/// The conventional header a proxy appends the address it received a request from to.
pub const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

type KeyFn = dyn Fn(&Request) -> Option<String> + Send + Sync;

/// Finds a request's client key. Cheap to clone.
#[derive(Clone)]
pub struct KeyExtractor {
    /// What the key is, for the answer to a request that has none ("header x-api-key").
    what: Arc<str>,
    extract: Arc<KeyFn>,
}

impl fmt::Debug for KeyExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyExtractor")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl KeyExtractor {
    /// The peer's IP address (without the port), from [`ConnectInfo<SocketAddr>`].
    pub fn peer_ip() -> Self {
        KeyExtractor::new(
            "the peer address (serve with ConnectInfo<SocketAddr>)",
            |req| peer(req).map(|ip| ip.to_string()),
        )
    }

    /// The client's IP address as forwarded by `trusted` proxies (CIDRs such as
    /// `10.0.0.0/8`; a single address is `/32` or `/128`).
    ///
    /// From a peer that is not trusted, the forwarding headers are ignored and the peer's
    /// address is the key. From a trusted one, the hops of `Forwarded` (`for=`), or of
    /// `X-Forwarded-For` when there is no `Forwarded`, are walked from the nearest back:
    /// the first hop that is not a trusted proxy is the client. A hop that is not an IP
    /// address (`unknown`, an obfuscated name) ends the walk at the last trusted hop, since
    /// nothing before it can be believed; when every hop is trusted, the farthest is the key.
    pub fn forwarded_ip(trusted: impl IntoIterator<Item = IpNet>) -> Self {
        let trusted: Arc<[IpNet]> = trusted.into_iter().collect();
        KeyExtractor::new(
            "the client address (serve with ConnectInfo<SocketAddr>)",
            move |req| {
                let peer = peer(req)?;
                Some(forwarded_client(peer, req.headers(), &trusted).to_string())
            },
        )
    }

    /// The value of header `name` (an API key, say). A request without it, or with a value
    /// that is not visible ASCII, has no key.
    pub fn header(name: HeaderName) -> Self {
        KeyExtractor::new(format!("header {name}"), move |req| {
            let value = req.headers().get(&name)?.to_str().ok()?.trim();
            (!value.is_empty()).then(|| value.to_string())
        })
    }

    /// A policy's key expression (`ip`, `header:x-api-key`, `ip+path[1]`, `method+path`: see
    /// [`ratelockr::key_expr`]), read from each request as replay reads it from a log line, so
    /// the policy file's `key` means the same in every front. `ip` is the peer address (serve
    /// with [`ConnectInfo<SocketAddr>`]); `field:NAME`, a log line's field, is refused.
    pub fn expression(expr: &str) -> Result<Self, ExpressionError> {
        let parsed: KeyExpr = expr.parse().map_err(ExpressionError::Invalid)?;
        if let Some(KeyTerm::Field(name)) = parsed
            .terms()
            .iter()
            .find(|t| matches!(t, KeyTerm::Field(_)))
        {
            return Err(ExpressionError::LogField {
                expr: expr.to_string(),
                name: name.clone(),
            });
        }
        let what = match parsed.terms() {
            [KeyTerm::Ip] => "the peer address (serve with ConnectInfo<SocketAddr>)".to_string(),
            [KeyTerm::Header(name)] => format!("header {name}"),
            _ => format!("the key {expr}"),
        };
        Ok(KeyExtractor::new(what, move |req| {
            parsed
                .join(|term| match term {
                    KeyTerm::Ip => peer(req).map(|ip| ip.to_string().into()),
                    KeyTerm::Method => Some(req.method().as_str().into()),
                    KeyTerm::Path => Some(req.uri().path().into()),
                    KeyTerm::Segment(n) => segment(req.uri().path(), *n).map(Into::into),
                    KeyTerm::Header(name) => req
                        .headers()
                        .get(name.as_str())
                        .and_then(|v| v.to_str().ok())
                        .map(|v| v.trim().into()),
                    KeyTerm::Field(_) => None,
                })
                .ok()
        }))
    }

    /// Whatever `extract` returns; `what` names it in the answer to a request without one.
    pub fn from_fn(
        what: impl Into<String>,
        extract: impl Fn(&Request) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        KeyExtractor::new(what, extract)
    }

    fn new(
        what: impl Into<String>,
        extract: impl Fn(&Request) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        KeyExtractor {
            what: what.into().into(),
            extract: Arc::new(extract),
        }
    }

    /// The key of `request`, if it has one.
    pub fn extract(&self, request: &Request) -> Option<String> {
        (self.extract)(request)
    }

    /// What the key is, in words.
    pub fn what(&self) -> &str {
        &self.what
    }
}

fn peer(req: &Request) -> Option<IpAddr> {
    let ConnectInfo(addr) = req.extensions().get::<ConnectInfo<SocketAddr>>()?;
    Some(canonical(addr.ip()))
}

/// IPv4-mapped IPv6 (`::ffff:1.2.3.4`, a dual-stack listener's view) as the IPv4 address, so
/// one client has one key and IPv4 CIDRs match it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The client behind `peer`, believing forwarding headers only from `trusted` proxies.
pub(crate) fn forwarded_client(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let mut client = peer;
    for hop in hops(headers).into_iter().rev() {
        match hop {
            Some(ip) if is_trusted(&ip) => client = ip,
            Some(ip) => return ip,
            None => return client,
        }
    }
    client
}

/// The forwarded hops, farthest (the original client) first; `None` for a hop that is not
/// an IP address. `Forwarded` (RFC 7239) wins over `X-Forwarded-For` when both are present.
fn hops(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let joined = |name: &HeaderName| -> Option<String> {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap_or("unknown"))
            .collect();
        (!values.is_empty()).then(|| values.join(","))
    };
    if let Some(forwarded) = joined(&FORWARDED) {
        return forwarded
            .split(',')
            .map(|element| {
                let value = element.split(';').find_map(|pair| {
                    let (name, value) = pair.trim().split_once('=')?;
                    name.trim()
                        .eq_ignore_ascii_case("for")
                        .then(|| value.trim())
                });
                value.and_then(parse_node)
            })
            .collect();
    }
    joined(&X_FORWARDED_FOR)
        .map(|xff| xff.split(',').map(|hop| parse_node(hop.trim())).collect())
        .unwrap_or_default()
}

/// An address as a proxy writes it: `1.2.3.4`, `1.2.3.4:80`, `"[2001:db8::1]:80"`, `2001:db8::1`.
fn parse_node(node: &str) -> Option<IpAddr> {
    let node = node.trim_matches('"');
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (ip, _port) = rest.split_once(']')?;
        return ip.parse().ok().map(canonical);
    }
    node.parse::<SocketAddr>().ok().map(|a| canonical(a.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an IP")
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        map
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = ["10.0.0.0/8".parse().expect("cidr")];
        let h = headers(&[("x-forwarded-for", "1.1.1.1"), ("forwarded", "for=2.2.2.2")]);
        assert_eq!(
            forwarded_client(ip("203.0.113.9"), &h, &trusted),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn the_nearest_untrusted_hop_is_the_client() {
        let trusted = ["10.0.0.0/8".parse().expect("cidr")];
        // The client claims to be 6.6.6.6 (spoofed, first); 1.1.1.1 is what our edge saw.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 1.1.1.1, 10.0.0.2")]);
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &h, &trusted),
            ip("1.1.1.1")
        );
        let all_trusted = headers(&[("x-forwarded-for", "10.1.1.1,10.0.0.2")]);
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &all_trusted, &trusted),
            ip("10.1.1.1")
        );
        let none = headers(&[]);
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &none, &trusted),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn forwarded_wins_and_its_forms_parse() {
        let trusted = ["10.0.0.0/8".parse().expect("cidr")];
        let h = headers(&[
            (
                "forwarded",
                "for=\"[2001:db8::7]:4711\";proto=https, For=10.0.0.3:80",
            ),
            ("x-forwarded-for", "9.9.9.9"),
        ]);
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &h, &trusted),
            ip("2001:db8::7")
        );
    }

    #[test]
    fn a_hop_that_is_no_address_stops_at_the_last_trusted_one() {
        let trusted = ["10.0.0.0/8".parse().expect("cidr")];
        let h = headers(&[("forwarded", "for=1.1.1.1, for=unknown, for=10.0.0.5")]);
        assert_eq!(
            forwarded_client(ip("10.0.0.1"), &h, &trusted),
            ip("10.0.0.5")
        );
    }

    #[test]
    fn ipv4_mapped_peers_match_ipv4_proxies() {
        let trusted = ["127.0.0.1/32".parse().expect("cidr")];
        let h = headers(&[("x-forwarded-for", "192.0.2.1")]);
        let mapped = canonical(ip("::ffff:127.0.0.1"));
        assert_eq!(forwarded_client(mapped, &h, &trusted), ip("192.0.2.1"));
    }

    #[test]
    fn a_policys_key_expression_reads_a_request_as_replay_reads_a_line() {
        let request = |path: &str, key: Option<&str>| {
            let mut req = Request::builder().method("POST").uri(path);
            if let Some(key) = key {
                req = req.header("x-api-key", key);
            }
            let mut req = req.body(axum::body::Body::empty()).expect("request");
            let peer: SocketAddr = "[::ffff:203.0.113.9]:5000".parse().expect("addr");
            req.extensions_mut().insert(ConnectInfo(peer));
            req
        };
        let key =
            |expr: &str, req: &Request| KeyExtractor::expression(expr).expect(expr).extract(req);
        let req = request("/api/v1/users?id=3", Some("alice"));
        assert_eq!(key("ip", &req).as_deref(), Some("203.0.113.9"));
        assert_eq!(key("ip+path[1]", &req).as_deref(), Some("203.0.113.9|api"));
        assert_eq!(
            key("method + path", &req).as_deref(),
            Some("POST|/api/v1/users")
        );
        assert_eq!(key("header:x-api-key", &req).as_deref(), Some("alice"));
        // A term the request lacks: no key (the layer answers it as a request without one).
        assert_eq!(key("header:x-api-key", &request("/", None)), None);
        assert_eq!(key("path[4]", &req), None);
        let err = KeyExtractor::expression("field:user").expect_err("a log's field");
        assert!(err.to_string().contains("header:NAME"), "{err}");
        assert!(KeyExtractor::expression("cookie").is_err());
        assert_eq!(
            KeyExtractor::expression("header:x-api-key")
                .expect("valid")
                .what(),
            "header x-api-key"
        );
    }
}
