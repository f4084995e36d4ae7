//! The IPC contract's other half, checked: the command names `ui/src/api.ts` calls are exactly
//! those `generate_handler!` registers (lib.rs's `handler!`) and the window's capability
//! allows. The payload types' TypeScript is generated and drift-checked in
//! [`ratelockr_app_core::bindings`].

use std::collections::BTreeSet;

/// The commands `generate_handler!` registers (`$crate::commands::<name>` in lib.rs).
fn registered() -> BTreeSet<String> {
    include_str!("lib.rs")
        .split("$crate::commands::")
        .skip(1)
        .filter_map(|rest| rest.split([',', ' ', '\n', ']']).next())
        .map(str::to_string)
        .collect()
}

/// The commands ui/src/api.ts invokes: each `call<T>("<name>"`.
fn called_by_the_ui() -> BTreeSet<String> {
    include_str!("../../ui/src/api.ts")
        .split("call<")
        .skip(1)
        .filter_map(|rest| {
            let head = rest.split(')').next()?;
            let name = head.split_once(">(\"")?.1;
            Some(name.split('"').next()?.to_string())
        })
        .collect()
}

/// The commands the window's capability allows (`allow-<name with dashes>`).
fn allowed() -> BTreeSet<String> {
    let capability: serde_json::Value =
        serde_json::from_str(include_str!("../capabilities/main.json")).expect("valid JSON");
    capability["permissions"]
        .as_array()
        .expect("a permissions array")
        .iter()
        .filter_map(|p| p.as_str()?.strip_prefix("allow-"))
        .map(|name| name.replace('-', "_"))
        .collect()
}

#[test]
fn the_ui_calls_exactly_the_registered_and_allowed_commands() {
    let registered = registered();
    assert!(registered.len() >= 16, "{registered:?}");
    assert_eq!(
        called_by_the_ui(),
        registered,
        "ui/src/api.ts and generate_handler! disagree"
    );
    assert_eq!(
        allowed(),
        registered,
        "capabilities/main.json and generate_handler! disagree"
    );
}
