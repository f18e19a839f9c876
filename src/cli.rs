//! Command-line helpers shared by the bench binaries.

/// Parses a comma-separated list for option `flag` (empty items skipped);
/// an error if an item does not parse or if no item is left (`--threads ,`
/// would otherwise drop every point of a run without a word).
pub fn list<T: std::str::FromStr>(flag: &str, v: &str) -> Result<Vec<T>, String> {
    let items = v
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| format!("{flag}: cannot read `{s}`")))
        .collect::<Result<Vec<T>, String>>()?;
    if items.is_empty() {
        return Err(format!("{flag}: give at least one value"));
    }
    Ok(items)
}

/// Whether a bare command-line word looks like a stray value rather than
/// cargo's benchmark-name filter: `--threads 1,2 4` leaves `4` behind,
/// which a bench would otherwise ignore.
pub fn is_stray_value(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_digit() || c == '.') || word.contains(',')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_reads_items_and_refuses_an_empty_list() {
        assert_eq!(list::<u32>("--threads", "1, 2,,4").unwrap(), vec![1, 2, 4]);
        assert!(
            list::<u32>("--threads", ",")
                .unwrap_err()
                .contains("at least one")
        );
        assert!(list::<u32>("--threads", "").is_err());
        assert!(list::<u32>("--threads", "1,x").unwrap_err().contains("`x`"));
    }

    #[test]
    fn stray_values_are_told_from_filters() {
        assert!(is_stray_value("4"));
        assert!(is_stray_value("0.5"));
        assert!(is_stray_value("parking_lot,pf_q"));
        assert!(!is_stray_value("rcu_read/"));
        assert!(!is_stray_value("rwbench"));
    }
}
