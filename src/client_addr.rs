//! Who the client is behind a balancer: [`TrustedProxies`] reads the client
//! address from `Forwarded` (RFC 7239) or `X-Forwarded-For` when, and only
//! when, the TCP peer is a proxy the operator trusts. Pure (an address and a
//! header map, no crate module below it); the standalone service and
//! [`BoardApi::handle`] use it for the rate limit and the access log, and a
//! host may call it for its own.
//!
//! [`BoardApi::handle`]: crate::BoardApi::handle

use http::header::{HeaderMap, FORWARDED};
use std::fmt;
use std::net::IpAddr;

/// One network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or a bare
/// address for a single host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in this network (an IPv4-mapped IPv6 address counts
    /// as its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let network: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an address or a network such as 10.0.0.0/8"))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(Cidr { network, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// The proxies whose forwarding headers are believed (default: none).
///
/// ```
/// use http::HeaderMap;
/// use shared_board_api::TrustedProxies;
///
/// let proxies = TrustedProxies::parse(["10.0.0.0/8"]).expect("valid networks");
/// let mut headers = HeaderMap::new();
/// headers.insert("x-forwarded-for", "203.0.113.7, 10.0.0.3".parse().unwrap());
/// // From the balancer at 10.0.0.2: the right-most address it did not add.
/// assert_eq!(proxies.client("10.0.0.2".parse().unwrap(), &headers), "203.0.113.7".parse::<std::net::IpAddr>().unwrap());
/// // From anyone else, the headers are the client's own words: the peer.
/// assert_eq!(proxies.client("198.51.100.1".parse().unwrap(), &headers), "198.51.100.1".parse::<std::net::IpAddr>().unwrap());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    nets: Vec<Cidr>,
}

impl TrustedProxies {
    /// No proxy trusted: the client is always the TCP peer.
    pub fn none() -> Self {
        TrustedProxies::default()
    }

    /// The networks of `cidrs` (each `addr/len` or a bare address).
    ///
    /// # Errors
    /// The first entry that is not an address or a network, in words.
    pub fn parse<'a>(cidrs: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let nets = cidrs
            .into_iter()
            .map(str::parse)
            .collect::<Result<Vec<Cidr>, String>>()?;
        Ok(TrustedProxies { nets })
    }

    /// True when no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// Whether `ip` is a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(ip))
    }

    /// The client of a request that came from `peer` with `headers`.
    ///
    /// From an untrusted peer: the peer. From a trusted one: the hops of
    /// `Forwarded` (its `for=` values, every header line in order) or, when
    /// it is absent, `X-Forwarded-For`, read from the right; the first hop
    /// that is not a trusted proxy is the client. A hop that is not an
    /// address (`unknown`, an obfuscated name, garbage) ends the walk: the
    /// last address known (the proxy that reported it) is the client. When
    /// every hop is trusted, the left-most is.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let forwarded = headers.get_all(FORWARDED);
        let hops: Vec<&str> = if forwarded.iter().next().is_some() {
            forwarded
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(forwarded_for)
                .collect()
        } else {
            headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .collect()
        };
        let mut client = peer;
        for hop in hops.iter().rev() {
            match node_address(hop) {
                Some(ip) if self.trusts(ip) => client = ip,
                Some(ip) => return ip,
                None => return client,
            }
        }
        client
    }
}

/// The `for=` value of each element of one `Forwarded` line (RFC 7239
/// section 4), quotes removed; an element without one gives `""`.
fn forwarded_for(line: &str) -> impl Iterator<Item = &str> {
    line.split(',').map(|element| {
        element
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
            .map_or("", |(_, value)| value.trim().trim_matches('"'))
    })
}

/// The address of a node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`,
/// `[2001:db8::1]:4711` or a bare IPv6 address; `None` for anything else.
fn node_address(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = node.rsplit_once(':')?;
    port.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[test]
    fn networks() {
        let cases = [
            ("10.0.0.0/8", "10.200.1.1", true),
            ("10.0.0.0/8", "11.0.0.1", false),
            ("10.0.0.0/8", "::ffff:10.1.2.3", true),
            ("192.0.2.7", "192.0.2.7", true),
            ("192.0.2.7", "192.0.2.8", false),
            ("0.0.0.0/0", "198.51.100.1", true),
            ("2001:db8::/32", "2001:db8:1::5", true),
            ("2001:db8::/32", "2001:db9::5", false),
            ("::/0", "10.0.0.1", false),
        ];
        for (net, addr, inside) in cases {
            let net: Cidr = net.parse().expect(net);
            assert_eq!(net.contains(ip(addr)), inside, "{net} {addr}");
        }
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "host.example",
            "10.0.0.0/x",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }

    fn client(trusted: &[&str], peer: &str, headers: &[(&str, &str)]) -> IpAddr {
        let proxies = TrustedProxies::parse(trusted.iter().copied()).expect("networks");
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                HeaderValue::from_str(value).expect("value"),
            );
        }
        proxies.client(ip(peer), &map)
    }

    #[test]
    fn the_client_behind_trusted_proxies() {
        let lb = &["10.0.0.0/8"][..];
        let xff = "x-forwarded-for";
        let fwd = "forwarded";
        // (trusted networks, peer, headers, the client)
        type Case<'a> = (&'a [&'a str], &'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: &[Case] = &[
            // No proxy trusted (the default): the peer, whatever it says.
            (&[], "10.0.0.2", &[(xff, "203.0.113.7")], "10.0.0.2"),
            // An untrusted peer's headers are its own words.
            (lb, "198.51.100.1", &[(xff, "203.0.113.7")], "198.51.100.1"),
            (
                lb,
                "198.51.100.1",
                &[(fwd, "for=203.0.113.7")],
                "198.51.100.1",
            ),
            // A trusted peer: the right-most hop it did not add.
            (lb, "10.0.0.2", &[(xff, "203.0.113.7")], "203.0.113.7"),
            (
                lb,
                "10.0.0.2",
                &[(xff, "1.1.1.1, 203.0.113.7, 10.0.0.9")],
                "203.0.113.7",
            ),
            (
                lb,
                "10.0.0.2",
                &[(xff, "1.1.1.1"), (xff, "203.0.113.7")],
                "203.0.113.7",
            ),
            // A spoofed left-most hop does not move the answer.
            (
                lb,
                "10.0.0.2",
                &[(xff, "6.6.6.6, 203.0.113.7")],
                "203.0.113.7",
            ),
            // Forwarded wins over X-Forwarded-For, ports and quotes removed.
            (
                lb,
                "10.0.0.2",
                &[(fwd, "for=203.0.113.7;proto=https"), (xff, "6.6.6.6")],
                "203.0.113.7",
            ),
            (
                lb,
                "10.0.0.2",
                &[(fwd, "for=\"203.0.113.7:4711\"")],
                "203.0.113.7",
            ),
            (
                lb,
                "10.0.0.2",
                &[(fwd, "for=\"[2001:db8::7]:4711\", for=10.0.0.5")],
                "2001:db8::7",
            ),
            (
                lb,
                "10.0.0.2",
                &[(fwd, "For=192.0.2.60;proto=http;by=203.0.113.43")],
                "192.0.2.60",
            ),
            (
                lb,
                "10.0.0.2",
                &[(fwd, "for=192.0.2.1"), (fwd, "for=192.0.2.2")],
                "192.0.2.2",
            ),
            // Unknown or obfuscated: the proxy that said so.
            (lb, "10.0.0.2", &[(fwd, "for=unknown")], "10.0.0.2"),
            (
                lb,
                "10.0.0.2",
                &[(fwd, "for=_hidden, for=10.0.0.4")],
                "10.0.0.4",
            ),
            (lb, "10.0.0.2", &[(xff, "garbage")], "10.0.0.2"),
            // Every hop trusted: the left-most.
            (lb, "10.0.0.2", &[(xff, "10.0.0.8, 10.0.0.9")], "10.0.0.8"),
            // Nothing forwarded: the peer.
            (lb, "10.0.0.2", &[], "10.0.0.2"),
        ];
        for (trusted, peer, headers, expected) in cases {
            assert_eq!(
                client(trusted, peer, headers),
                ip(expected),
                "{peer} {headers:?}"
            );
        }
    }
}
