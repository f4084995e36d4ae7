//! Override keys: exact keys or globs with `*` (any run, empty included) and `?` (one char).

/// Does `key` match `pattern`? Linear in practice: the classic backtrack to the last `*`.
pub(crate) fn matches(pattern: &str, key: &str) -> bool {
    let (p, k): (Vec<char>, Vec<char>) = (pattern.chars().collect(), key.chars().collect());
    let (mut pi, mut ki) = (0, 0);
    // Where the last `*` was, and the key position it has taken up to.
    let mut star: Option<(usize, usize)> = None;
    while ki < k.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == k[ki])) {
            pi += 1;
            ki += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ki));
            pi += 1;
        } else if let Some((sp, sk)) = star {
            pi = sp + 1;
            ki = sk + 1;
            star = Some((sp, sk + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_as_documented() {
        let cases = [
            ("alice", "alice", true),
            ("alice", "alicia", false),
            ("premium_*", "premium_42", true),
            ("premium_*", "premium_", true),
            ("premium_*", "free_1", false),
            ("*", "", true),
            ("*", "anything", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*x*y", "axbxy", true),
            ("*x*y", "axbx", false),
            ("é?", "éa", true),
            ("a**b", "ab", true),
            ("", "", true),
            ("", "a", false),
        ];
        for (pattern, key, want) in cases {
            assert_eq!(matches(pattern, key), want, "{pattern:?} vs {key:?}");
        }
    }
}
