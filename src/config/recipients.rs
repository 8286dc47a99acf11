//! `mail.allowed_recipients`: the addresses a routine made by the agent may mail besides its
//! creator's own recipients (SPEC §13). An entry is one address (`ops@example.com`) or every
//! address at one domain (`*@example.com`; not its subdomains). Addresses compare without
//! regard to case; a display name (`Ops <ops@example.com>`) is not part of the comparison.

/// Why an entry of `mail.allowed_recipients` is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("`{0}` is not an e-mail address or `*@domain`")]
    Unreadable(String),
    #[error("`{0}` has a `*` that is not the whole name before the `@`")]
    Wildcard(String),
}

/// The address of `text` (`Name <a@b.c>` or `a@b.c`), lower case; `None` when it is not one
/// plain address: one `@` with a name before it and a dotted domain after it, no spaces, no
/// list.
pub fn address_of(text: &str) -> Option<String> {
    let text = text.trim();
    let addr = match (text.find('<'), text.rfind('>')) {
        (Some(a), Some(b)) if a < b && b == text.len() - 1 => &text[a + 1..b],
        (None, None) => text,
        _ => return None,
    };
    let (local, domain) = addr.split_once('@')?;
    let plain = |s: &str| !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || "@,;<>\"()[]\\*".contains(c));
    (plain(local) && plain(domain) && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.'))
        .then(|| addr.to_lowercase())
}

/// Checks one entry of `mail.allowed_recipients`.
pub fn check_pattern(pattern: &str) -> Result<(), PatternError> {
    let bad = || PatternError::Unreadable(pattern.to_string());
    match pattern.trim().strip_prefix("*@") {
        Some(domain) => address_of(&format!("x@{domain}")).map(|_| ()).ok_or_else(bad),
        None if pattern.contains('*') => Err(PatternError::Wildcard(pattern.to_string())),
        None => address_of(pattern).map(|_| ()).ok_or_else(bad),
    }
}

/// Whether `address` is one that `patterns` allow.
pub fn allowed(patterns: &[String], address: &str) -> bool {
    let Some(addr) = address_of(address) else { return false };
    patterns.iter().any(|p| match p.trim().strip_prefix("*@") {
        Some(domain) => addr.rsplit_once('@').is_some_and(|(_, d)| d == domain.to_lowercase()),
        None => address_of(p).is_some_and(|p| p == addr),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_domains_match_and_nothing_else() {
        let patterns = vec!["Ops@Example.com".to_string(), "*@team.example.org".to_string()];
        assert!(allowed(&patterns, "ops@example.com"));
        assert!(allowed(&patterns, "The Ops <OPS@example.COM>"));
        assert!(allowed(&patterns, "anyone@team.example.org"));
        assert!(!allowed(&patterns, "dev@example.com"));
        assert!(!allowed(&patterns, "x@sub.team.example.org"), "a domain pattern leaves out subdomains");
        assert!(!allowed(&patterns, "x@evil-team.example.org"));
        assert!(!allowed(&patterns, "ops@example.com, attacker@evil.example"));
        assert!(!allowed(&patterns, "ops@example.com <attacker@evil.example>x"));
        assert!(!allowed(&patterns, "attacker@evil.example (ops@example.com)"));
        assert!(!allowed(&[], "ops@example.com"));
    }

    #[test]
    fn entries_are_addresses_or_a_whole_domain() {
        assert_eq!(check_pattern("ops@example.com"), Ok(()));
        assert_eq!(check_pattern("*@example.com"), Ok(()));
        assert_eq!(check_pattern("ops*@example.com"), Err(PatternError::Wildcard("ops*@example.com".into())));
        assert_eq!(check_pattern("*@*.example.com"), Err(PatternError::Unreadable("*@*.example.com".into())));
        assert_eq!(check_pattern("*"), Err(PatternError::Wildcard("*".into())));
        assert_eq!(check_pattern("example.com"), Err(PatternError::Unreadable("example.com".into())));
    }
}
