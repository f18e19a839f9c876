//! Command-line helpers shared by the bench binaries.

/// Parses a comma-separated list for option `flag` (empty items skipped).
pub fn list<T: std::str::FromStr>(flag: &str, v: &str) -> Result<Vec<T>, String> {
    v.split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| format!("{flag}: cannot read `{s}`")))
        .collect()
}
