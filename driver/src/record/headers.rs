//! Which headers the recording proxy passes on and which it records. Forwarded: all of them,
//! credentials included (authentication passes through), but not the hop-by-hop ones
//! (RFC 9110 §7.6.1, and those that `connection` names), with `host` set to the upstream's
//! and no `accept-encoding` (the proxy reads the bodies it relays). Recorded: only the
//! response headers known to carry no secret ([`is_safe_header`]: an allowlist, so that a
//! credential under a name nobody foresaw is never kept), names lower-case, values as text.

use http::header::{ACCEPT_ENCODING, CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderValue};

/// The response headers known to carry no secret: the content's type and length, dates and
/// caching, the request's id, processing time and API version, retry hints, the model and
/// reasoning headers codex reads, and the rate-limit families (`x-ratelimit-…`,
/// `x-FAMILY-primary-…`, `x-FAMILY-secondary-…`, `x-codex-credits-…`).
pub fn is_safe_header(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "content-type",
        "content-length",
        "content-encoding",
        "date",
        "cache-control",
        "x-request-id",
        "request-id",
        "openai-version",
        "openai-processing-ms",
        "openai-model",
        "retry-after",
        "retry-after-ms",
        "x-models-etag",
        "x-reasoning-included",
    ];
    let name = name.to_ascii_lowercase();
    let rate_limit_family = name
        .strip_prefix("x-")
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(_, rest)| rest.starts_with("primary-") || rest.starts_with("secondary-"));
    NAMES.contains(&name.as_str())
        || name.starts_with("x-ratelimit-")
        || name.starts_with("x-codex-credits-")
        || rate_limit_family
}

/// Headers as recorded: the safe ones only ([`is_safe_header`]), names lower-case, values
/// as text.
pub fn recorded(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| is_safe_header(name.as_str()))
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect()
}

/// The headers of a request sent on to the upstream whose `host` header is `authority`
/// (`content-length` is left to the client, which knows the body it sends).
pub fn forwarded_request(headers: &HeaderMap, authority: &str) -> HeaderMap {
    let mut out = end_to_end(headers);
    out.remove(HOST);
    out.remove(ACCEPT_ENCODING);
    out.remove(CONTENT_LENGTH);
    if let Ok(host) = HeaderValue::from_str(authority) {
        out.insert(HOST, host);
    }
    out
}

/// The headers of a response passed back to codex.
pub fn forwarded_response(headers: &HeaderMap) -> HeaderMap {
    end_to_end(headers)
}

/// `headers` without the hop-by-hop ones.
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named = named_by_connection(headers);
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name_str = name.as_str();
        if !is_hop_by_hop(name_str) && !named.iter().any(|n| n == name_str) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Whether a header is hop-by-hop: for one connection only, never forwarded.
fn is_hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// The header names that the `connection` header lists (lower-case).
fn named_by_connection(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_headers_known_to_be_safe_are_recorded() {
        let headers = map(&[
            ("content-type", "text/event-stream"),
            ("set-cookie", "s=1"),
            ("openai-organization", "org-1"),
            ("x-api_key", "planted-1"),
            ("x-session", "planted-2"),
            ("x-planted-secret", "planted-3"),
            ("x-codex-turn-state", "planted-4"),
            ("authorization", "Bearer planted-5"),
            ("x-codex-primary-used-percent", "42.5"),
            ("x-ratelimit-remaining-requests", "99"),
        ]);
        let names: Vec<String> = recorded(&headers).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "x-codex-primary-used-percent",
                "x-ratelimit-remaining-requests"
            ]
        );
    }

    #[test]
    fn requests_keep_credentials_and_lose_hop_by_hop_headers_and_compression() {
        let headers = map(&[
            ("authorization", "Bearer sk-1"),
            ("host", "127.0.0.1:5000"),
            ("connection", "keep-alive, x-trace"),
            ("x-trace", "1"),
            ("keep-alive", "timeout=5"),
            ("accept-encoding", "gzip, zstd"),
            ("content-encoding", "zstd"),
            ("content-length", "12"),
        ]);
        let out = forwarded_request(&headers, "api.openai.com");
        let names: Vec<&str> = out.keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["authorization", "content-encoding", "host"]);
        assert_eq!(out[HOST], "api.openai.com");
        let response = forwarded_response(&map(&[
            ("transfer-encoding", "chunked"),
            ("content-type", "text/event-stream"),
        ]));
        assert_eq!(response.len(), 1);
    }
}
