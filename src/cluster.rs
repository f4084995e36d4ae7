//! Redis Cluster: the `redis+cluster://` URL and the topology a cluster reports.
//!
//! A cluster is named by its seed nodes, `redis+cluster://[user:password@]host:port[,host:port…]`:
//! any one that answers is enough, the client learns every node and slot from it. Over TLS the
//! scheme is `rediss+cluster://` (every node then speaks TLS, `tls-cluster yes`), with
//! `#insecure` or the same TLS settings as a `rediss://` URL. The topology (`CLUSTER NODES`) is
//! read for what must reach every master (reset's SCAN) and for display.

use crate::target::TargetError;

/// The scheme of a Redis Cluster URL.
pub const SCHEME: &str = "redis+cluster://";
/// The scheme of a Redis Cluster reached over TLS.
pub const TLS_SCHEME: &str = "rediss+cluster://";

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
        crate::tls::install_crypto_provider();
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

/// What a node is in its cluster.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    Master,
    Replica,
}

/// One node of a cluster as `CLUSTER NODES` describes it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterNode {
    pub id: String,
    pub host: String,
    pub port: u16,
    pub role: NodeRole,
    /// A replica's master (its id); None for a master.
    pub master_id: Option<String>,
    /// The node is marked failed (`fail`) or suspected of failing (`fail?`).
    pub failing: bool,
    /// The slot ranges a master serves, inclusive.
    pub slots: Vec<(u16, u16)>,
}

impl ClusterNode {
    /// `host:port`.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Parses `CLUSTER NODES`: one line per node, `<id> <ip:port@cport[,hostname]> <flags> <master>
/// <ping-sent> <pong-recv> <epoch> <link-state> <slot>...`. Nodes without an address (a
/// forgotten node's `:0`) and importing/migrating markers (`[slot->-id]`) are skipped.
pub fn parse_nodes(text: &str) -> Vec<ClusterNode> {
    let mut nodes = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 {
            continue;
        }
        let addr = fields[1].split(['@', ',']).next().unwrap_or("");
        let Some((host, port)) = addr.rsplit_once(':') else {
            continue;
        };
        let Ok(port) = port.parse::<u16>() else {
            continue;
        };
        if port == 0 || host.is_empty() {
            continue;
        }
        let flags: Vec<&str> = fields[2].split(',').collect();
        let role = if flags.contains(&"master") {
            NodeRole::Master
        } else {
            NodeRole::Replica
        };
        let slots = fields[8..]
            .iter()
            .filter(|s| !s.starts_with('['))
            .filter_map(|s| match s.split_once('-') {
                Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                None => s.parse().ok().map(|n| (n, n)),
            })
            .collect();
        nodes.push(ClusterNode {
            id: fields[0].to_string(),
            host: host.trim_start_matches('[').trim_end_matches(']').into(),
            port,
            role,
            master_id: (fields[3] != "-").then(|| fields[3].to_string()),
            failing: flags.iter().any(|f| *f == "fail" || *f == "fail?"),
            slots,
        });
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn parses_cluster_nodes() {
        let text = "\
07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected
e7d1 127.0.0.1:30001@40001,host1 myself,master - 0 0 1 connected 0-5460 7000 [5461->-292f]
292f 127.0.0.1:30002@40002 master,fail? - 0 1426238316232 2 connected 5461-10922
bad line
";
        let nodes = parse_nodes(text);
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].role, NodeRole::Replica);
        assert_eq!(nodes[0].master_id.as_deref(), Some("e7d1"));
        assert_eq!(nodes[1].address(), "127.0.0.1:30001");
        assert_eq!(nodes[1].slots, [(0, 5460), (7000, 7000)]);
        assert!(nodes[2].failing && !nodes[1].failing);
    }
}
