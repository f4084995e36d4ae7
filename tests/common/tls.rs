//! A TLS-only redis-server for the tests (`--port 0 --tls-port <free>`), with a CA and
//! certificates made at test time by rcgen: the server's (for `localhost` and 127.0.0.1), one
//! for the wrong host name, a client certificate for mutual TLS, and a second CA nobody trusts.
//!
//! Included by the test files that need it with `#[path = "common/tls.rs"] mod tls;`.
#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// PEM files in a test's own directory.
#[derive(Debug)]
pub struct Pki {
    pub dir: crate::common::TempDir,
    /// The CA that signed every certificate below.
    pub ca: PathBuf,
    /// A CA that signed nothing here: trusting only it, the server is unknown.
    pub other_ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// Signed by `ca`, but for `wrong.example.invalid` only.
    pub wrong_host_cert: PathBuf,
    pub wrong_host_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Pki {
    /// The files a TLS cluster's nodes use: the server certificate toward clients, the client
    /// certificate toward each other (the cluster bus asks for one), all signed by `ca`.
    pub fn cluster_files(&self) -> ratelockr::embedded_cluster::ClusterTls {
        ratelockr::embedded_cluster::ClusterTls {
            cert: self.server_cert.clone(),
            key: self.server_key.clone(),
            ca: self.ca.clone(),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
        }
    }

    pub fn new(name: &str) -> Pki {
        let dir = crate::common::tempdir(name);
        let write = |file: &str, pem: String| {
            let path = dir.join(file);
            std::fs::write(&path, pem).expect("write a PEM file");
            path
        };
        let (ca_params, ca_key) = ca("RateLockr test CA");
        let ca_pem = ca_params.self_signed(&ca_key).expect("CA").pem();
        let (other_params, other_key) = ca("Nobody's CA");
        let other_pem = other_params.self_signed(&other_key).expect("CA").pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: &[&str], purpose: ExtendedKeyUsagePurpose| {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            let mut params = CertificateParams::new(names).expect("names");
            params
                .distinguished_name
                .push(DnType::CommonName, "RateLockr test");
            params.extended_key_usages = vec![purpose];
            let key = KeyPair::generate().expect("key");
            let cert = params.signed_by(&key, &issuer).expect("signed");
            (cert.pem(), key.serialize_pem())
        };
        let (server, server_key) = leaf(
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (wrong, wrong_key) = leaf(
            &["wrong.example.invalid"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (client, client_key) = leaf(&["client"], ExtendedKeyUsagePurpose::ClientAuth);
        Pki {
            ca: write("ca.pem", ca_pem),
            other_ca: write("other-ca.pem", other_pem),
            server_cert: write("server.pem", server),
            server_key: write("server.key", server_key),
            wrong_host_cert: write("wrong-host.pem", wrong),
            wrong_host_key: write("wrong-host.key", wrong_key),
            client_cert: write("client.pem", client),
            client_key: write("client.key", client_key),
            dir,
        }
    }
}

fn ca(name: &str) -> (CertificateParams, KeyPair) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    (params, KeyPair::generate().expect("CA key"))
}

/// How the TLS server is set up.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsServer {
    /// Require a client certificate signed by the CA (`--tls-auth-clients yes`).
    pub mutual: bool,
    /// Present the certificate for the wrong host name.
    pub wrong_host: bool,
}

/// A redis-server that speaks TLS only, killed on Drop.
#[derive(Debug)]
pub struct TlsRedis {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl TlsRedis {
    pub fn start(pki: &Pki, how: TlsServer) -> TlsRedis {
        let (cert, key) = match how.wrong_host {
            true => (&pki.wrong_host_cert, &pki.wrong_host_key),
            false => (&pki.server_cert, &pki.server_key),
        };
        // A port can be taken between probing and binding; a few tries make that harmless.
        for attempt in 0..5 {
            let port = free_port();
            let dir = pki.dir.join(format!("redis-{port}"));
            std::fs::create_dir_all(&dir).expect("server dir");
            let log = dir.join("redis.log");
            let child = Command::new("redis-server")
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .arg("--tls-cert-file")
                .arg(cert)
                .arg("--tls-key-file")
                .arg(key)
                .arg("--tls-ca-cert-file")
                .arg(&pki.ca)
                .args(["--tls-auth-clients", if how.mutual { "yes" } else { "no" }])
                .arg("--dir")
                .arg(&dir)
                .arg("--logfile")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server (apt-get install redis-server)");
            let mut server = TlsRedis { child, port, log };
            if server.wait_listening() {
                return server;
            }
            eprintln!(
                "TLS redis-server attempt {attempt} failed:\n{}",
                server.log()
            );
        }
        panic!("the TLS redis-server did not start (see the logs above)");
    }

    /// The server listens once a TCP connection to its TLS port succeeds.
    fn wait_listening(&mut self) -> bool {
        let started = Instant::now();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// `rediss://<host>:<port>` (host: `127.0.0.1` or `localhost`, both in the certificate).
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener =
        TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// `path` as a `&str`, for command lines.
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// `url` with these TLS settings, as a test target.
pub fn target(url: &str, options: ratelockr::TlsOptions) -> ratelockr::RedisTarget {
    ratelockr::RedisTarget::parse(url)
        .expect("a valid URL")
        .with_tls(options)
        .expect("usable TLS options")
}

/// TLS settings that trust `ca` alone.
pub fn with_ca(ca: &Path) -> ratelockr::TlsOptions {
    ratelockr::TlsOptions {
        ca: Some(ca.to_path_buf()),
        ..ratelockr::TlsOptions::default()
    }
}
