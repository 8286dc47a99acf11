//! Network rules of `http_request`: which URLs may be fetched.
//!
//! By default only public hosts are reachable: loopback, private, link-local
//! (the cloud metadata service), shared, reserved and multicast addresses are
//! refused, as are the metadata host names. A host listed in
//! `security.allowed_hosts` is reachable whatever it resolves to. Names are
//! resolved here, once, and the connection is pinned to the addresses
//! checked, so a second DNS answer cannot point the request elsewhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;

/// Host names of cloud metadata services, refused unless allowed.
const METADATA_NAMES: [&str; 3] = ["metadata.google.internal", "metadata", "instance-data"];

/// How a refusal ends: what the operator can do about it.
const ALLOW_HINT: &str = "non-public hosts need an entry in security.allowed_hosts";

/// Why an address may not be fetched, or `None` for a public address.
/// IPv6 addresses that carry an IPv4 address (mapped, compatible, NAT64,
/// 6to4) are judged by the IPv4 address inside.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = ip.octets();
    let reason = match (a, b, c) {
        _ if ip.is_unspecified() => "the unspecified address",
        _ if ip.is_broadcast() => "the broadcast address",
        (0, _, _) => "a \"this network\" address (0.0.0.0/8)",
        (127, _, _) => "a loopback address",
        (10, _, _) | (192, 168, _) => "a private address",
        (172, 16..=31, _) => "a private address",
        (169, 254, 169) if d == 254 => "the cloud metadata address (link-local)",
        (169, 254, _) => "a link-local address",
        (100, 64..=127, _) => "a shared address (carrier-grade NAT, 100.64.0.0/10)",
        (192, 0, 0) => "an IETF protocol assignment address (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        (224..=239, _, _) => "a multicast address",
        (240..=255, _, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    };
    Some(reason)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("the unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if let Some(v4) = embedded_v4(ip) {
        return blocked_v4(v4);
    }
    let s = ip.segments();
    let reason = match s[0] {
        0x0100 if s[1..4] == [0, 0, 0] => "a discard-only address (100::/64)",
        0x2001 if s[1] == 0 => "a Teredo tunnel address (2001::/32)",
        0x2001 if s[1] == 0x0db8 => "a documentation address",
        0x3fff if s[1] & 0xf000 == 0 => "a documentation address",
        x if x & 0xfe00 == 0xfc00 => "a private (unique local) address",
        x if x & 0xffc0 == 0xfe80 => "a link-local address",
        x if x & 0xffc0 == 0xfec0 => "a site-local address",
        x if x & 0xff00 == 0xff00 => "a multicast address",
        _ => return None,
    };
    Some(reason)
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) or 6to4 (`2002:aabb:ccdd::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(low()),
        [0x0064, 0xff9b, 0, 0, 0, 0, _, _] => Some(low()),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

/// The URL as shown in messages and status lines: a password in it is
/// replaced by `***`.
pub fn redacted(url: &Url) -> String {
    if url.password().is_none() {
        return url.to_string();
    }
    let mut shown = url.clone();
    // Only fails for URLs that cannot have credentials, which this one has.
    let _ = shown.set_password(Some("***"));
    shown.to_string()
}

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The rules refuse it; the message names the URL and the reason.
    #[error("{0}")]
    Refused(String),
    /// The host name could not be resolved.
    #[error("{0}")]
    Lookup(String),
}

/// One `security.allowed_hosts` entry, normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Ip(IpAddr, Option<u16>),
    Name(String, Option<u16>),
}

impl Entry {
    fn parse(raw: &str) -> Option<Entry> {
        let s = raw.trim();
        if s.is_empty() {
            return None;
        }
        if let Ok(ip) = s.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            return Some(Entry::Ip(ip, None));
        }
        if let Ok(sa) = s.parse::<SocketAddr>() {
            return Some(Entry::Ip(sa.ip(), Some(sa.port())));
        }
        let (name, port) = match s.rsplit_once(':') {
            Some((name, port)) => (name, Some(port.parse::<u16>().ok()?)),
            None => (s, None),
        };
        if let Ok(ip) = name.parse::<Ipv4Addr>() {
            return Some(Entry::Ip(IpAddr::V4(ip), port));
        }
        Some(Entry::Name(normalize_name(name), port))
    }

    fn matches(&self, host: &Target<'_>, port: u16) -> bool {
        let (same_host, want) = match (self, host) {
            (Entry::Ip(ip, want), Target::Ip(h)) => (ip == h, want),
            (Entry::Name(name, want), Target::Name(h)) => (*name == normalize_name(h), want),
            _ => return false,
        };
        same_host && want.is_none_or(|p| p == port)
    }
}

/// The host of a URL: an IP literal (the URL parser has already turned
/// forms like `2130706433` or `0x7f.1` into dotted decimal) or a name.
enum Target<'a> {
    Ip(IpAddr),
    Name(&'a str),
}

impl<'a> Target<'a> {
    fn of(host: &'a str) -> Target<'a> {
        match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => Target::Ip(ip),
            Err(_) => Target::Name(host),
        }
    }
}

fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The rules for one agent, built from `security.allowed_hosts`.
#[derive(Debug, Clone, Default)]
pub struct NetRules {
    allowed_hosts: Vec<String>,
    entries: Vec<Entry>,
}

impl NetRules {
    /// Entries are host names or IP literals (`[::1]` or `::1`), optionally
    /// with a port (`example.org:8080`, `[::1]:8080`); case does not matter.
    /// Entries that cannot be read are ignored.
    pub fn new(allowed_hosts: &[String]) -> Self {
        NetRules {
            allowed_hosts: allowed_hosts.to_vec(),
            entries: allowed_hosts.iter().filter_map(|h| Entry::parse(h)).collect(),
        }
    }

    /// The configured entries, as written.
    pub fn allowed_hosts(&self) -> &[String] {
        &self.allowed_hosts
    }

    /// Checks `url` and returns the addresses the connection must use; the
    /// error is a message for the model.
    pub async fn check(&self, url: &Url) -> Result<Vec<SocketAddr>, String> {
        self.vet(url).await.map_err(|e| e.to_string())
    }

    /// [`NetRules::check`] with a typed error: a refusal, or a name that did
    /// not resolve.
    pub async fn vet(&self, url: &Url) -> Result<Vec<SocketAddr>, NetError> {
        let shown = redacted(url);
        let refuse = |why: String| NetError::Refused(format!("{shown} is refused: {why}"));
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refuse(format!("only http and https URLs can be fetched, not {}", url.scheme())));
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(refuse("the URL has no host".to_string()));
        };
        let target = Target::of(host);
        let allowed = self.entries.iter().any(|e| e.matches(&target, port));
        let name = match target {
            Target::Ip(ip) => return literal(ip, port, allowed).map_err(refuse),
            Target::Name(name) => name,
        };
        if !allowed && METADATA_NAMES.contains(&normalize_name(name).as_str()) {
            return Err(refuse(format!("{name} is a cloud metadata service; {ALLOW_HINT}")));
        }
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| NetError::Lookup(format!("cannot resolve {name}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(NetError::Lookup(format!("cannot resolve {name}: no addresses")));
        }
        if !allowed {
            // The smallest blocked address, so the message does not depend
            // on the order of the DNS answer.
            let blocked = addrs.iter().filter_map(|a| blocked_reason(a.ip()).map(|r| (a.ip(), r))).min();
            if let Some((ip, reason)) = blocked {
                return Err(refuse(format!("{name} resolves to {ip}, {reason}; {ALLOW_HINT}")));
            }
        }
        Ok(addrs)
    }
}

fn literal(ip: IpAddr, port: u16, allowed: bool) -> Result<Vec<SocketAddr>, String> {
    match blocked_reason(ip) {
        Some(reason) if !allowed => Err(format!("{ip} is {reason}; {ALLOW_HINT}")),
        _ => Ok(vec![SocketAddr::new(ip, port)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(ip: &str) -> Option<&'static str> {
        blocked_reason(ip.parse().unwrap())
    }

    #[test]
    fn blocks_every_non_public_ipv4_range() {
        let cases = [
            ("0.0.0.0", "the unspecified address"),
            ("0.1.2.3", "a \"this network\" address (0.0.0.0/8)"),
            ("127.0.0.1", "a loopback address"),
            ("127.255.255.254", "a loopback address"),
            ("10.0.0.1", "a private address"),
            ("10.255.255.255", "a private address"),
            ("172.16.0.1", "a private address"),
            ("172.31.255.255", "a private address"),
            ("192.168.1.1", "a private address"),
            ("169.254.0.1", "a link-local address"),
            ("169.254.169.254", "the cloud metadata address (link-local)"),
            ("100.64.0.1", "a shared address (carrier-grade NAT, 100.64.0.0/10)"),
            ("100.127.255.255", "a shared address (carrier-grade NAT, 100.64.0.0/10)"),
            ("192.0.0.170", "an IETF protocol assignment address (192.0.0.0/24)"),
            ("192.0.2.1", "a documentation address"),
            ("198.51.100.7", "a documentation address"),
            ("203.0.113.9", "a documentation address"),
            ("198.18.0.1", "a benchmarking address"),
            ("198.19.255.255", "a benchmarking address"),
            ("224.0.0.1", "a multicast address"),
            ("239.255.255.250", "a multicast address"),
            ("240.0.0.1", "a reserved address (240.0.0.0/4)"),
            ("255.255.255.255", "the broadcast address"),
        ];
        for (ip, want) in cases {
            assert_eq!(reason(ip), Some(want), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "198.20.0.1"]
        {
            assert_eq!(reason(ip), None, "{ip}");
        }
    }

    #[test]
    fn blocks_every_non_public_ipv6_range_and_judges_embedded_ipv4() {
        let cases = [
            ("::", "the unspecified address"),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("::ffff:10.1.2.3", "a private address"),
            ("::ffff:169.254.169.254", "the cloud metadata address (link-local)"),
            ("::127.0.0.1", "a loopback address"),
            ("64:ff9b::192.168.0.1", "a private address"),
            ("2002:7f00:1::", "a loopback address"),
            ("100::1", "a discard-only address (100::/64)"),
            ("2001:0:4136:e378::1", "a Teredo tunnel address (2001::/32)"),
            ("2001:db8::1", "a documentation address"),
            ("3fff::1", "a documentation address"),
            ("fc00::1", "a private (unique local) address"),
            ("fd12:3456::1", "a private (unique local) address"),
            ("fe80::1", "a link-local address"),
            ("febf::1", "a link-local address"),
            ("fec0::1", "a site-local address"),
            ("ff02::1", "a multicast address"),
        ];
        for (ip, want) in cases {
            assert_eq!(reason(ip), Some(want), "{ip}");
        }
        for ip in
            ["2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "2002:808:808::", "64:ff9b::1.1.1.1"]
        {
            assert_eq!(reason(ip), None, "{ip}");
        }
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn rules(hosts: &[&str]) -> NetRules {
        NetRules::new(&hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    }

    #[tokio::test]
    async fn refuses_literals_schemes_and_metadata_names_with_reasons() {
        let none = rules(&[]);
        let cases = [
            (
                "http://127.0.0.1:8080/",
                "http://127.0.0.1:8080/ is refused: 127.0.0.1 is a loopback address; non-public hosts need an entry in security.allowed_hosts",
            ),
            (
                "http://[::ffff:7f00:1]/",
                "http://[::ffff:7f00:1]/ is refused: ::ffff:127.0.0.1 is a loopback address; non-public hosts need an entry in security.allowed_hosts",
            ),
            (
                "http://0x7f.1/",
                "http://127.0.0.1/ is refused: 127.0.0.1 is a loopback address; non-public hosts need an entry in security.allowed_hosts",
            ),
            (
                "http://Metadata.Google.Internal./x",
                "http://metadata.google.internal./x is refused: metadata.google.internal. is a cloud metadata service; non-public hosts need an entry in security.allowed_hosts",
            ),
            (
                "http://instance-data/",
                "http://instance-data/ is refused: instance-data is a cloud metadata service; non-public hosts need an entry in security.allowed_hosts",
            ),
            ("file:///etc/passwd", "file:///etc/passwd is refused: only http and https URLs can be fetched, not file"),
        ];
        for (u, want) in cases {
            assert_eq!(none.check(&url(u)).await, Err(want.to_string()), "{u}");
        }
        assert_eq!(none.check(&url("https://93.184.215.14/")).await, Ok(vec!["93.184.215.14:443".parse().unwrap()]));
        assert_eq!(none.check(&url("http://[2606:4700::1]/")).await, Ok(vec!["[2606:4700::1]:80".parse().unwrap()]));
    }

    #[tokio::test]
    async fn names_are_refused_when_they_resolve_to_a_blocked_address() {
        let err = rules(&[]).check(&url("http://localhost:9/")).await.unwrap_err();
        assert!(err.starts_with("http://localhost:9/ is refused: localhost resolves to "), "{err}");
        assert!(err.contains(", a loopback address; "), "{err}");
        let addrs = rules(&["LOCALHOST"]).check(&url("http://localhost:9/")).await.unwrap();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 9), "{addrs:?}");
    }

    #[tokio::test]
    async fn allowed_hosts_match_exactly_by_host_and_optional_port() {
        let loopback = |port| Ok(vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)]);
        let v6 = |port| Ok(vec![SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port)]);
        let r = rules(&["127.0.0.1", "[::1]:8080", "10.0.0.5:81", "Localhost.:9", "intranet.example:8443", "bad:port"]);
        assert_eq!(r.check(&url("http://127.0.0.1:1234/")).await, loopback(1234));
        assert_eq!(r.check(&url("http://2130706433/")).await, loopback(80));
        assert_eq!(r.check(&url("http://[::1]:8080/")).await, v6(8080));
        assert!(r.check(&url("http://[::1]:8081/")).await.unwrap_err().contains("::1 is a loopback address"));
        assert!(r.check(&url("http://127.0.0.2/")).await.is_err());
        let ten = "10.0.0.5:81".parse().unwrap();
        assert_eq!(r.check(&url("http://10.0.0.5:81/")).await, Ok(vec![ten]));
        assert!(r.check(&url("http://10.0.0.5/")).await.unwrap_err().contains("10.0.0.5 is a private address"));
        let local = r.check(&url("http://localhost:9/")).await.unwrap();
        assert!(local.iter().all(|a| a.ip().is_loopback() && a.port() == 9), "{local:?}");
        assert!(r.check(&url("http://localhost:10/")).await.unwrap_err().contains("localhost resolves to "));
        assert_eq!(rules(&["::1"]).check(&url("http://[::1]/")).await, v6(80));
        assert_eq!(rules(&["[::1]"]).check(&url("http://[0:0::1]/")).await, v6(80));
        assert_eq!(r.allowed_hosts().len(), 6);
    }
}
