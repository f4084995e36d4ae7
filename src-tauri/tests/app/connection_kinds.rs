//! The connection panel on the Redis that users actually run, over IPC: a real 3-master,
//! 3-replica cluster started by the engine's harness, and a real TLS redis-server with a CA
//! made at test time (the engine's `tests/common/tls.rs`, included by path). The status says
//! which it is on, a cluster lists its topology, a failed handshake lands on the field it
//! concerns, and the TLS settings survive a restart (and a broken CA file after one).

#[path = "../../../tests/common/tls.rs"]
mod tls;

use crate::common::{redis, run_allowed, run_request, Ui};
use ratelockr::embedded_cluster::EmbeddedCluster;
use serde_json::{json, Value};
use tls::{Pki, TlsRedis, TlsServer};

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// A run of 20 requests against a limit of 5 (per hour: nothing refills): Redis decided every
/// one, so exactly 5 were let through and none failed open.
fn assert_a_run_decides(ui: &Ui) {
    ui.ok(
        "rule_save",
        json!({ "original": null, "draft": { "name": "gate", "algorithm": "fixed_window", "limit": 5, "window_ms": 3_600_000 } }),
    );
    let (allowed, summary) = run_allowed(ui, run_request("gate", 20, json!({})));
    assert_eq!(allowed, 5, "{summary}");
    assert_eq!(summary["rows"][0]["fail_open"], 0, "{summary}");
    ui.ok("rule_delete", json!({ "name": "gate" }));
}

#[test]
fn a_cluster_is_shown_as_one_with_its_masters_replicas_and_round_trips() {
    let server = redis();
    let cluster =
        EmbeddedCluster::start(3, 1).expect("a 3-master cluster (redis-server, redis-cli)");
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));

    let single = ui.ok("connection_status", json!({}));
    assert_eq!(single["transport"]["cluster"], false, "{single}");
    let single_topology = ui.ok("connection_topology", json!({}));
    assert_eq!(
        (&single_topology["cluster"], &single_topology["nodes"]),
        (&json!(false), &json!([])),
        "a single Redis has no topology to list: {single_topology}"
    );
    // It names the server it is on, and that it runs scripts.
    assert_eq!(
        single_topology["server"]["scripting"], "available",
        "{single_topology}"
    );
    assert!(
        single_topology["server"]["version"].is_string(),
        "{single_topology}"
    );

    let tested = ui.ok("connection_test", json!({ "url": cluster.url() }));
    assert_eq!(
        (&tested["ok"], &tested["transport"]["cluster"]),
        (&json!(true), &json!(true)),
        "{tested}"
    );
    let status = ui.ok("connection_switch", json!({ "url": cluster.url() }));
    assert_eq!(status["state"], "connected", "{status}");
    assert_eq!(status["transport"]["cluster"], true, "{status}");
    assert_eq!(status["transport"]["tls"], false, "{status}");

    let topology = ui.ok("connection_topology", json!({}));
    assert_eq!(topology["cluster"], true, "{topology}");
    let nodes = topology["nodes"].as_array().expect("nodes");
    let of = |role: &str| -> Vec<&Value> { nodes.iter().filter(|n| n["role"] == role).collect() };
    let (masters, replicas) = (of("master"), of("replica"));
    assert_eq!((masters.len(), replicas.len()), (3, 3), "{topology}");
    let served: u64 = masters
        .iter()
        .flat_map(|m| m["slots"].as_array().expect("slots").iter())
        .map(|r| r[1].as_u64().expect("end") - r[0].as_u64().expect("start") + 1)
        .sum();
    assert_eq!(served, 16384, "the masters serve every slot: {topology}");
    let master_addresses: Vec<&Value> = masters.iter().map(|m| &m["address"]).collect();
    for replica in &replicas {
        assert!(
            master_addresses.contains(&&replica["follows"]),
            "a replica names the master it follows: {replica}"
        );
        assert_eq!(replica["slots"], json!([]), "{replica}");
    }
    for node in nodes {
        assert!(
            node["rtt_ms"].as_f64().is_some_and(|ms| ms >= 0.0) && node["error"].is_null(),
            "every node answered its PING: {node}"
        );
        assert!(
            cluster
                .addresses()
                .contains(&node["address"].as_str().unwrap_or_default().to_string()),
            "{node}"
        );
    }

    // Each simulated server holds its own cluster connection; every decision is made.
    assert_a_run_decides(&ui);

    let err = ui
        .call(
            "connection_test",
            json!({ "url": cluster.url(), "tls": { "insecure": true } }),
        )
        .expect_err("TLS options on a cluster URL are refused, not ignored");
    assert_eq!(
        (&err["code"], &err["field"]),
        (&json!("invalid_tls"), &json!("tls_insecure")),
        "{err}"
    );
}

#[test]
fn tls_is_shown_verified_or_insecure_and_a_failed_handshake_names_its_field() {
    let pki = Pki::new("app-tls");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let plain = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&plain.url()));
    let with_ca = |ca: &std::path::Path| json!({ "url": server.url(), "tls": { "ca": path(ca), "insecure": false } });

    let status = ui.ok("connection_switch", with_ca(&pki.ca));
    assert_eq!(status["state"], "connected", "{status}");
    let transport = &status["transport"];
    assert_eq!(
        (
            &transport["tls"],
            &transport["insecure"],
            &transport["cluster"]
        ),
        (&json!(true), &json!(false), &json!(false)),
        "{status}"
    );
    assert!(
        transport["description"]
            .as_str()
            .is_some_and(|d| d.contains("verified against the CA")),
        "{status}"
    );
    assert_eq!(transport["tls_options"]["ca"], path(&pki.ca), "{status}");
    assert_a_run_decides(&ui);

    // A CA that signed nothing here: the engine's unknown-CA diagnosis, on the CA field.
    let tested = ui.ok("connection_test", with_ca(&pki.other_ca));
    assert_eq!(tested["ok"], false, "{tested}");
    assert_eq!(tested["field"], "tls_ca", "{tested}");
    assert!(
        tested["error"]
            .as_str()
            .is_some_and(|e| e.contains("unknown CA")),
        "{tested}"
    );

    // A plain-TCP Redis behind rediss://: on the URL field.
    let behind = format!("rediss://127.0.0.1:{}", plain.port());
    let tested = ui.ok(
        "connection_test",
        json!({ "url": behind, "tls": { "ca": path(&pki.ca), "insecure": false } }),
    );
    assert_eq!(
        (&tested["ok"], &tested["field"]),
        (&json!(false), &json!("redis_url")),
        "{tested}"
    );
    assert!(
        tested["error"]
            .as_str()
            .is_some_and(|e| e.contains("plain-TCP")),
        "{tested}"
    );

    // A CA file that does not exist is refused before connecting, on its field.
    let err = ui
        .call("connection_switch", with_ca(&pki.dir.join("missing.pem")))
        .expect_err("no such file");
    assert_eq!(
        (&err["code"], &err["field"]),
        (&json!("invalid_tls"), &json!("tls_ca")),
        "{err}"
    );
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing.pem")),
        "{err}"
    );
    assert_eq!(
        ui.ok("connection_status", json!({}))["transport"]["tls"],
        true,
        "a refused switch changes nothing"
    );

    // Insecure: connected, and marked so.
    let status = ui.ok(
        "connection_switch",
        json!({ "url": server.url(), "tls": { "insecure": true } }),
    );
    assert_eq!(status["state"], "connected", "{status}");
    assert_eq!(status["transport"]["insecure"], true, "{status}");
    assert!(
        status["url"]
            .as_str()
            .is_some_and(|u| u.ends_with("#insecure")),
        "{status}"
    );
    assert!(
        status["transport"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("WITHOUT CERTIFICATE VERIFICATION")),
        "{status}"
    );
}

#[test]
fn mutual_tls_wants_a_client_certificate_on_its_field() {
    let pki = Pki::new("app-mtls");
    let server = TlsRedis::start(
        &pki,
        TlsServer {
            mutual: true,
            wrong_host: false,
        },
    );
    let plain = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&plain.url()));
    let tested = ui.ok(
        "connection_test",
        json!({ "url": server.url(), "tls": { "ca": path(&pki.ca), "insecure": false } }),
    );
    assert_eq!(
        (&tested["ok"], &tested["field"]),
        (&json!(false), &json!("tls_cert")),
        "{tested}"
    );
    let err = ui
        .call("connection_test", json!({ "url": server.url(), "tls": { "ca": path(&pki.ca), "cert": path(&pki.client_cert), "insecure": false } }))
        .expect_err("a certificate without its key");
    assert_eq!(err["field"], "tls_key", "{err}");
    // Browse…: the open dialog's answer (here the bypass's) is a path for the field.
    std::env::set_var(ratelockr_app::open_dialog::OPEN_PEM_ENV, &pki.client_key);
    assert_eq!(
        ui.ok("connection_pick_file", json!({ "field": "tls_key" })),
        json!(path(&pki.client_key))
    );
    let err = ui
        .call("connection_pick_file", json!({ "field": "password" }))
        .expect_err("not a TLS file field");
    assert_eq!(err["field"], "field", "{err}");
    let status = ui.ok("connection_switch", json!({ "url": server.url(), "tls": {
        "ca": path(&pki.ca), "cert": path(&pki.client_cert), "key": path(&pki.client_key), "insecure": false } }));
    assert_eq!(status["state"], "connected", "{status}");
    assert!(
        status["transport"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("client certificate")),
        "{status}"
    );
}

#[test]
fn tls_settings_survive_a_restart_and_a_broken_ca_file_loses_nothing() {
    let pki = Pki::new("app-tls-restart");
    let server = TlsRedis::start(&pki, TlsServer::default());
    let plain = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let ui = Ui::open(dir.path(), Some(&plain.url()));
        ui.ok(
            "connection_switch",
            json!({ "url": server.url(), "tls": { "ca": path(&pki.ca), "insecure": false } }),
        );
    }
    {
        let ui = Ui::open(dir.path(), None);
        let status = ui.ok("connection_status", json!({}));
        assert_eq!(
            status["state"], "connected",
            "reconnected the same way: {status}"
        );
        assert_eq!(status["url"], server.url(), "{status}");
        assert_eq!(
            status["transport"]["tls_options"]["ca"],
            path(&pki.ca),
            "{status}"
        );
    }
    // The CA file is damaged while the app is closed.
    std::fs::write(&pki.ca, "not a certificate").expect("damage the CA file");
    let ui = Ui::open(dir.path(), None);
    let warnings = ui.ok("app_info", json!({}))["warnings"].to_string();
    assert!(
        warnings.contains("CA file")
            && warnings.contains(path(&pki.ca))
            && warnings.contains("kept"),
        "a clear message naming the file: {warnings}"
    );
    let status = ui.ok("connection_status", json!({}));
    assert_eq!(
        status["transport"]["tls"], false,
        "on the automatic choice meanwhile: {status}"
    );
    // Saving something else keeps the TLS connection as it was saved.
    ui.ok("rule_save", json!({ "original": null, "draft": { "name": "api", "algorithm": "fixed_window", "limit": 5, "window_ms": 1000 } }));
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("settings.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(saved["redis_url"], server.url(), "{saved}");
    assert_eq!(saved["redis_tls"]["ca"], path(&pki.ca), "{saved}");
}

#[test]
fn a_cluster_over_tls_is_shown_as_both_with_its_masters() {
    let pki = Pki::new("app-tls-cluster");
    let files = pki.cluster_files();
    let cluster = EmbeddedCluster::start_tls(3, 0, &files).expect("a TLS cluster forms");
    let url = cluster.url();
    assert!(url.starts_with("rediss+cluster://"), "{url}");
    let server = redis();
    let dir = tempfile::tempdir().expect("tempdir");
    let ui = Ui::open(dir.path(), Some(&server.url()));

    // Without the CA, the handshake fails on the CA field's account.
    let tested = ui.ok("connection_test", json!({ "url": url }));
    assert_eq!(tested["ok"], false, "{tested}");
    let tls = json!({ "ca": path(&pki.ca) });
    let status = ui.ok("connection_switch", json!({ "url": url, "tls": tls }));
    assert_eq!(status["state"], "connected", "{status}");
    assert_eq!(
        (
            &status["transport"]["cluster"],
            &status["transport"]["tls"],
            &status["transport"]["insecure"]
        ),
        (&json!(true), &json!(true), &json!(false)),
        "{status}"
    );
    let topology = ui.ok("connection_topology", json!({}));
    let nodes = topology["nodes"].as_array().expect("nodes");
    let masters: Vec<&Value> = nodes.iter().filter(|n| n["role"] == "master").collect();
    assert_eq!(masters.len(), 3, "{topology}");
    assert!(
        masters.iter().all(|m| m["rtt_ms"].is_number()),
        "every master answers its PING over TLS: {topology}"
    );
    assert_a_run_decides(&ui);
}
