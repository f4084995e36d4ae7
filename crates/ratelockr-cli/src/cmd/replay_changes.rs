//! `ratelockr replay` with several rules or policies: how each after the first decides the log
//! differently from the first, in words, and which keys.

use ratelockr_lab::replay::{KeyChange, RuleChange};

/// "more" / "fewer" with the size of a difference.
fn delta(n: i64, what: &str) -> String {
    match n {
        0 => format!("as many {what}"),
        n if n > 0 => format!("{n} more {what}"),
        n => format!("{} fewer {what}", -n),
    }
}

fn keys(changes: &[KeyChange], shown: usize) -> String {
    let listed: Vec<String> = changes
        .iter()
        .take(shown)
        .map(|c| format!("{} ({} → {})", c.key, c.base_denied, c.denied))
        .collect();
    let more = changes.len().saturating_sub(shown);
    if more > 0 {
        format!("{}, …", listed.join(", "))
    } else {
        listed.join(", ")
    }
}

pub fn print(changes: &[RuleChange]) {
    for c in changes {
        println!(
            "\n{} beside {}: {} denied, {} denied at least once ({} newly, {} no longer){}",
            c.rule,
            c.base,
            delta(c.denied, "requests"),
            delta(c.keys_denied, "keys"),
            c.newly_denied_keys,
            c.no_longer_denied_keys,
            if c.exact {
                ""
            } else {
                " (estimated: more keys than the tables hold)"
            }
        );
        if !c.more.is_empty() {
            println!("  denied more: {}", keys(&c.more, 5));
        }
        if !c.fewer.is_empty() {
            println!("  denied less: {}", keys(&c.fewer, 5));
        }
    }
}
