//! Lists of names in messages, bounded: a workload of 10,000 tasks must
//! not print 2,000 names on one line.

/// How many items a message lists before "and N more".
pub const LISTED: usize = 12;

/// `items` joined with ", ", the first [`LISTED`] of them, then "and N
/// more" (digits grouped by thousands).
pub fn listing<S: AsRef<str>>(items: &[S]) -> String {
    listing_with(items, ", ")
}

/// [`listing`] with another separator (`"; "` between entries that hold
/// commas themselves).
pub fn listing_with<S: AsRef<str>>(items: &[S], separator: &str) -> String {
    let shown: Vec<&str> = items.iter().take(LISTED).map(AsRef::as_ref).collect();
    let rest = items.len().saturating_sub(LISTED);
    if rest == 0 {
        shown.join(separator)
    } else {
        format!("{} and {} more", shown.join(separator), grouped(rest))
    }
}

/// `n` with a comma between groups of three digits: 2,087.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Core numbers as runs: `0-3,5`; two in a row stay a pair (`0,1`); `-`
/// for none.
pub fn ranges(cores: &[u32]) -> String {
    if cores.is_empty() {
        return "-".into();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(&first) = cores.get(i) {
        let mut j = i;
        while cores
            .get(j + 1)
            .zip(cores.get(j))
            .is_some_and(|(&next, &cur)| cur.checked_add(1) == Some(next))
        {
            j += 1;
        }
        let last = cores.get(j).copied().unwrap_or(first);
        parts.push(match j - i {
            0 => first.to_string(),
            1 => format!("{first},{last}"),
            _ => format!("{first}-{last}"),
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_end_with_how_many_more() {
        assert_eq!(listing(&["a", "b"]), "a, b");
        let many: Vec<String> = (0..2_099).map(|i| format!("t{i}")).collect();
        let s = listing(&many);
        assert!(s.starts_with("t0, t1, "), "{s}");
        assert!(s.ends_with("t11 and 2,087 more"), "{s}");
        assert_eq!(listing::<&str>(&[]), "");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(999), "999");
    }
}
